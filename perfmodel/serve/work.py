"""One request's work, in a worker process (workers.py): its uploads written where the server chooses, its bounds
checked, the Python API asked, and the answer made as the CLI makes it (the `--format json` text, or the file of
`perfmodel export`); an error is the CLI's one line with the keyword it names.

A worker answers one request at a time, and the hardware catalogue is the process's (README 'Your own hardware'), so
each request sees only its own uploaded hardware.
"""

from __future__ import annotations

import re
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from perfmodel import api
from perfmodel.cli.export import write_comparison, write_plan, write_prediction
from perfmodel.errors import PerfmodelError, did_you_mean, shown
from perfmodel.inputs import arguments, catalogue
from perfmodel.inputs.resources import bundled_names, bundled_path
from perfmodel.outputs.report import to_json
from perfmodel.planning.plan import TooManyCandidates

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
"""Wall time of one request's work: past it the worker is stopped (workers.py)."""

UPLOADS = ("model_file", "hardware_files", "scenario_file")
"""The keywords that carry files (schemas.Upload)."""
UPLOAD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\.toml")


class Refused(Exception):
    """A request the server does not answer: the HTTP status, the one-line message and the keyword at fault."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.field = status, message, field


QUESTIONS: dict[str, Callable[..., Any]] = {
    "predict": api.predict,
    "compare": api.compare,
    "plan": lambda scenario, **given: api.plan(scenario, **given, max_candidates=MAX_CANDIDATES),
}
"""The Python API's function of each question; a plan's candidates are counted as plan() reads its targets (one per
precision of `ID:PRECISION,PRECISION[:$PRICE]`, an uploaded system's among them), so that the bound cannot drift
from the plan."""
DOCUMENTS: dict[str, Callable[[Any], Any]] = {
    "predict": lambda result: result.to_dict(),
    "compare": lambda comparison: comparison.rows,
    "plan": lambda report: report.to_dict(),
}
"""What `perfmodel QUESTION --format json` prints of the Python API's result."""
EXPORTS: dict[str, Callable[[Any, Path], str]] = {
    "predict": lambda result, out: write_prediction(result, out, False, None),
    "compare": lambda comparison, out: write_comparison(comparison.predictions, out, False, None),
    "plan": lambda report, out: write_plan(report, out, False, None),
}
"""What `perfmodel export QUESTION --out FILE` writes of the result."""

Reply = tuple[Any, ...]
"""A worker's reply: ("answer", text or bytes), ("refused", status, message, field) or ("failed", traceback)."""


def reply(question: str, keywords: dict[str, Any], fmt: str | None) -> Reply:
    """The reply to a request (`fmt`: the export's format, None for the JSON document), in plain values that pass
    between processes."""
    try:
        return ("answer", answer(question, keywords, fmt))
    except Refused as refusal:
        return ("refused", refusal.status, refusal.message, refusal.field)
    except Exception:  # a bug, not the user's mistake: the server answers 500 with it in its log
        return ("failed", traceback.format_exc())


def answer(question: str, keywords: dict[str, Any], fmt: str | None) -> str | bytes:
    """The Python API's `question` asked with `keywords` (a request body, uploads included): its `--format json`
    text, or its export as `fmt`; every refusal is a `Refused`."""
    given = {key: value for key, value in keywords.items() if value is not None}
    model_file, hardware_files = given.pop("model_file", None), given.pop("hardware_files", [])
    scenario_file = given.pop("scenario_file", None)
    _check_no_paths(given)
    scenario = given.pop("scenario", None)
    _check_scenario(scenario, scenario_file)
    _check_bounds(hardware_files)
    if model_file is not None and "model" in given:
        raise Refused(422, "model and model_file: give one (a zoo id, or a model file)", "model_file")
    _check_uploads(model_file, hardware_files, scenario_file)
    with tempfile.TemporaryDirectory(prefix="perfmodel-serve-") as folder:
        catalogue.clear()  # this request sees the bundled hardware, the server's own ($PERFMODEL_PATH), its uploads
        saved: dict[str, tuple[str, str]] = {}  # path written -> (the upload's name, its field)
        if model_file is not None:
            given["model"] = _saved(Path(folder) / "model", model_file, "model_file", saved)
        if hardware_files:
            given["hardware"] = [_saved(Path(folder) / "hardware", f, "hardware_files", saved) for f in hardware_files]
        if scenario_file is not None:
            scenario = _saved(Path(folder) / "scenario", scenario_file, "scenario_file", saved)
        elif isinstance(scenario, str):  # the bundled file itself, not one of that name in the worker's folder
            path = str(bundled_path("scenarios", scenario))
            scenario, saved[path] = path, (scenario, "scenario")  # an error names it as the request did
        try:
            if question == "compare":
                _check_rows(given)
            result = QUESTIONS[question](scenario, **given)
            if fmt is None:
                return to_json(DOCUMENTS[question](result))
            out = Path(folder) / f"perfmodel-{question}.{fmt}"
            EXPORTS[question](result, out)
            return out.read_bytes()
        except TooManyCandidates as exc:
            raise Refused(
                422, f"gpu: {exc.count} candidates; this server plans at most {MAX_CANDIDATES} (systems x "
                "precisions) in one request", "gpu",
            ) from None  # fmt: skip
        except PerfmodelError as exc:
            raise _refused(str(exc), saved) from None
        finally:
            catalogue.clear()


def _check_no_paths(given: dict[str, Any]) -> None:
    """No keyword names a file on the server: a file comes as an upload."""
    for key, value in given.items():
        for text in value if isinstance(value, list) else [value]:
            if _a_path(text):
                raise Refused(
                    422, f"{key}={shown(text)!r}: a path; the server takes no paths: upload the file instead", key
                )


def _a_path(value: Any) -> bool:
    return isinstance(value, str) and ("/" in value or "\\" in value or value.lower().endswith(".toml"))


def _check_scenario(scenario: Any, scenario_file: Any) -> None:
    """A scenario by name is a bundled one's (the API reads a bare name that is none as a file of the worker's
    folder: inputs/resources.bundled_file); given by name and uploaded, it is refused, as model and model_file are."""
    if scenario is not None and scenario_file is not None:
        raise Refused(422, "scenario and scenario_file: give one (a bundled scenario's name, or a scenario file)",
                      "scenario_file")  # fmt: skip
    if isinstance(scenario, str) and scenario not in (names := bundled_names("scenarios")):
        raise Refused(
            422, f"scenario={shown(scenario)!r}: not a bundled scenario{did_you_mean(scenario, names)}; bundled: "
            f"{', '.join(names)} (your own: upload it as scenario_file)", "scenario",
        )  # fmt: skip


FREE_TEXT = ("name", "description")
"""A scenario's keys that hold words, never a file: a phase named 'ramp 4k/8k' is no path."""


def _check_no_named_files(upload: dict[str, Any]) -> None:
    """An uploaded scenario names no file on the server: its model file and calibration are read relative to it
    (inputs/scenario.py scenario_from), so `model = "../../x.toml"` would read outside the request's folder. Text
    that is not TOML is left to the scenario's own checks, which refuse it with the CLI's line."""
    import tomllib

    try:
        tables = tomllib.loads(upload["text"])
    except tomllib.TOMLDecodeError:
        return
    for key, value in _values(tables):
        if _a_path(value):
            raise Refused(
                422, f"scenario_file: {upload['name']}: field '{key}' = {shown(value)!r}: a path; the server reads "
                "no file a scenario names (a model file: upload it as model_file)", "scenario_file",
            )  # fmt: skip


def _values(tables: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """The values of TOML tables by dotted key (an array's items under its own key), free text left out."""
    if isinstance(tables, dict):
        for name, value in tables.items():
            if name not in FREE_TEXT:
                yield from _values(value, f"{key}.{name}" if key else name)
    elif isinstance(tables, list):
        for value in tables:
            yield from _values(value, key)
    else:
        yield key, tables


def _check_bounds(hardware_files: list[Any]) -> None:
    """The work one request may ask for: refused at once past a bound, naming it (a plan's candidates: as plan()
    reads its targets, QUESTIONS; a comparison's rows: as compare() counts them, _check_rows)."""
    if len(hardware_files) > MAX_HARDWARE_FILES:
        raise Refused(
            422, f"hardware_files: {len(hardware_files)} files; this server takes at most {MAX_HARDWARE_FILES}",
            "hardware_files",
        )  # fmt: skip


def _check_rows(given: dict[str, Any]) -> None:
    """A comparison's rows past this server's bound refused before any is predicted: counted by compare()'s own
    check (planning.compare.check_size: `b200@32` one row, an n_gpus no row uses refused) on its targets and GPU
    counts read as the API reads them (an out-of-range count refused as such, not for its rows), the uploaded
    hardware known (the API adds it again: once); the refusal names the keyword at fault (compare.TooLarge.field),
    which the page highlights, and this server's bound beside the CLI's."""
    from perfmodel.inputs.hardware import add_catalogue
    from perfmodel.planning import compare
    from perfmodel.planning.request import API

    for path in given.get("hardware", []):
        add_catalogue(path, origin="hardware=")
    targets = compare.parse_targets(arguments.texts("gpu", given.get("gpu", [])), API)
    counts = api.gpu_counts_given(given.get("n_gpus")) or []
    try:
        compare.check_size(targets, len(counts), API, max_rows=MAX_ROWS)
    except compare.TooLarge as exc:
        bound = f"; this server compares at most {MAX_ROWS} in one request (the CLI up to {compare.MAX_ROWS})"
        raise Refused(422, exc.rows + bound if exc.rows else str(exc), exc.field) from None


def _check_uploads(model_file: Any, hardware_files: list[Any], scenario_file: Any) -> None:
    """Every upload checked before any is written: a plain file name, a size within the bound, no two hardware files
    of one name, and an uploaded scenario that names no file on the server."""
    uploads = [
        (model_file, "model_file"),
        *((f, "hardware_files") for f in hardware_files),
        (scenario_file, "scenario_file"),
    ]
    for upload, field in uploads:
        if upload is not None:
            _check_upload(upload, field)
    names = [f["name"] for f in hardware_files]
    if twice := next((name for name in names if names.count(name) > 1), None):
        raise Refused(422, f"hardware_files: two files named {twice}", "hardware_files")
    if scenario_file is not None:
        _check_no_named_files(scenario_file)


def _check_upload(upload: dict[str, Any], field: str) -> None:
    name = upload["name"]
    if not UPLOAD_NAME.fullmatch(name):
        raise Refused(
            422, f"{field}: file name {shown(name)!r}: allowed letters, digits, '.', '_' and '-', ending in .toml",
            field,
        )  # fmt: skip
    size = len(upload["text"].encode())
    if size > MAX_UPLOAD_BYTES:
        raise Refused(
            413, f"{field}: {name} is {size:,} bytes; this server takes files up to {MAX_UPLOAD_BYTES:,}", field
        )


def _saved(folder: Path, upload: dict[str, Any], field: str, saved: dict[str, tuple[str, str]]) -> str:
    """An upload (checked: _check_uploads) written under the request's own folder."""
    path = folder / upload["name"]
    folder.mkdir(exist_ok=True)
    path.write_text(upload["text"], encoding="utf-8")
    saved[str(path)] = (upload["name"], field)
    return str(path)


FLAG_KEYWORDS = {"gpus": "n_gpus", "deadline": "deadline_s", "budget": "budget_usd"}
"""Flags the API's messages name (`--gpu zzz: unknown ...`) and their keywords."""


def _refused(message: str, saved: dict[str, tuple[str, str]]) -> Refused:
    """The API's error as the server's: the keyword it names, or the upload (or bundled scenario), by the name the
    request gave it: the server's folders are not shown."""
    found = re.match(r"(\w+)=", message) or re.match(r"--([\w-]+)", message)
    field = found and found.group(1).replace("-", "_")
    field = FLAG_KEYWORDS.get(field, field) if field else None
    for path, (name, upload) in saved.items():
        if path in message:
            message, field = message.replace(path, name), upload
    return Refused(422, message, field)
