"""One request's work: its uploads written where the server chooses, its bounds checked, the Python API asked, and
its errors turned into the CLI's one line with the keyword it names.

The hardware catalogue is the process's (README 'Your own hardware'), so requests take turns at the model (ENGINE):
one request's uploaded hardware is never seen by another, and the model is CPU-bound under the GIL anyway.
"""

from __future__ import annotations

import re
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from perfmodel import api
from perfmodel.errors import PerfmodelError, shown
from perfmodel.inputs import catalogue

MAX_UPLOAD_BYTES = 64 * 1024
"""One uploaded file (the bundled model and hardware files are under 8 KiB)."""
MAX_HARDWARE_FILES = 8
MAX_BODY_BYTES = 1024 * 1024
"""A whole request body: the uploads at their limit and the keywords."""
MAX_ROWS = 16
"""Rows of one comparison: systems x GPU counts."""
MAX_CANDIDATES = 8
"""Candidates of one plan: systems x precisions."""
MAX_REQUEST_S = 30.0
"""Wall time of one comparison or plan, checked between its rows and the counts it tries."""

UPLOAD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\.toml")
ENGINE = threading.Lock()


class Refused(Exception):
    """A request the server does not answer: the HTTP status, the one-line message and the keyword at fault."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.field = status, message, field


QUESTIONS: dict[str, Callable[..., Any]] = {"predict": api.predict, "compare": api.compare, "plan": api.plan}


def answer(question: str, keywords: dict[str, Any], use: Callable[[Any], Any]) -> Any:
    """`use(result)` of the Python API's `question` asked with `keywords` (a request body, uploads included), within
    the server's bounds; every refusal is a `Refused`."""
    given = {key: value for key, value in keywords.items() if value is not None}
    model_file, hardware_files = given.pop("model_file", None), given.pop("hardware_files", [])
    _check_no_paths(given)
    _check_bounds(question, given, hardware_files)
    uploads = model_file is not None or bool(hardware_files)
    with ENGINE, ExitStack() as stack:
        catalogue.clear()  # this request sees the bundled hardware, the server's own ($PERFMODEL_PATH), its uploads
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="perfmodel-serve-")) if uploads else ""
        saved: dict[str, tuple[str, str]] = {}  # path written -> (the upload's name, its field)
        if model_file is not None:
            if "model" in given:
                raise Refused(422, "model and model_file: give one (a zoo id, or a model file)", "model_file")
            given["model"] = _saved(Path(folder) / "model", model_file, "model_file", saved)
        if hardware_files:
            given["hardware"] = [_saved(Path(folder) / "hardware", f, "hardware_files", saved) for f in hardware_files]
        if question != "predict":
            given["progress"] = _clock(time.monotonic() + MAX_REQUEST_S)
        try:
            return use(QUESTIONS[question](**given))
        except PerfmodelError as exc:
            raise _refused(str(exc), saved) from None
        finally:
            catalogue.clear()


def _check_no_paths(given: dict[str, Any]) -> None:
    """No keyword names a file on the server: a file comes as an upload."""
    for key, value in given.items():
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str) and ("/" in text or "\\" in text or text.lower().endswith(".toml")):
                raise Refused(
                    422, f"{key}={shown(text)!r}: a path; the server takes no paths: upload the file instead", key
                )


def _check_bounds(question: str, given: dict[str, Any], hardware_files: list[Any]) -> None:
    """The work one request may ask for: refused at once past a bound, naming it."""
    if len(hardware_files) > MAX_HARDWARE_FILES:
        raise Refused(
            422, f"hardware_files: {len(hardware_files)} files; this server takes at most {MAX_HARDWARE_FILES}",
            "hardware_files",
        )  # fmt: skip
    targets = given.get("gpu")
    targets = [targets] if isinstance(targets, str) else targets if isinstance(targets, list) else []
    if question == "compare":
        counts = given.get("n_gpus")
        rows = len(targets) * (len(counts) if isinstance(counts, list) else 1)
        if rows > MAX_ROWS:
            raise Refused(
                422, f"gpu x n_gpus: {rows} rows; this server compares at most {MAX_ROWS} (systems x GPU counts) in "
                "one request", "gpu",
            )  # fmt: skip
    if question == "plan":
        candidates = sum(len(str(t).split(":")[1].split(",")) if ":" in str(t) else 1 for t in targets)
        if candidates > MAX_CANDIDATES:
            raise Refused(
                422, f"gpu: {candidates} candidates; this server plans at most {MAX_CANDIDATES} (systems x precisions) "
                "in one request", "gpu",
            )  # fmt: skip


def _saved(folder: Path, upload: dict[str, Any], field: str, saved: dict[str, tuple[str, str]]) -> str:
    """An upload written under the request's own folder, by a name checked to be a plain file name."""
    name, text = upload["name"], upload["text"]
    if not UPLOAD_NAME.fullmatch(name):
        raise Refused(
            422, f"{field}: file name {shown(name)!r}: allowed letters, digits, '.', '_' and '-', ending in .toml",
            field,
        )  # fmt: skip
    size = len(text.encode())
    if size > MAX_UPLOAD_BYTES:
        raise Refused(
            413, f"{field}: {name} is {size:,} bytes; this server takes files up to {MAX_UPLOAD_BYTES:,}", field
        )
    path = folder / name
    if path.exists():
        raise Refused(422, f"{field}: two files named {name}", field)
    folder.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    saved[str(path)] = (name, field)
    return str(path)


def _clock(deadline: float) -> Callable[[int, int], None]:
    """A progress callback that stops the work past `deadline` (time.monotonic)."""

    def check(done: int, total: int) -> None:
        if time.monotonic() > deadline:
            raise Refused(
                422, f"stopped after {MAX_REQUEST_S:g} s, this server's bound on one request ({done} of {total} done): "
                "ask for fewer systems, counts or precisions, or run the CLI",
            )  # fmt: skip

    return check


FLAG_KEYWORDS = {"gpus": "n_gpus", "deadline": "deadline_s", "budget": "budget_usd"}
"""Flags the API's messages name (`--gpu zzz: unknown ...`) and their keywords."""


def _refused(message: str, saved: dict[str, tuple[str, str]]) -> Refused:
    """The API's error as the server's: the keyword it names, or the upload, by the upload's own name."""
    found = re.match(r"(\w+)=", message) or re.match(r"--([\w-]+)", message)
    field = found and found.group(1).replace("-", "_")
    field = FLAG_KEYWORDS.get(field, field) if field else None
    for path, (name, upload) in saved.items():
        if path in message:
            message, field = message.replace(path, name), upload
    return Refused(422, message, field)
