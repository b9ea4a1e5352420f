"""The checked form of perfmodel's own input files, kept on disk, so that running them needs no pydantic.

A bundled hardware or scenario file is checked by pydantic the first time it is read (importing pydantic costs more
than a prediction), and its checked tables are written to the cache folder (inputs/diskcache.py) under a digest of
the file's text and of the code that defines and checks records (every module of perfmodel/inputs): a changed file
or a changed check is a new key, checked again. The entry holds that whole digest and one of its tables bound to it,
both verified on read: an edited entry (a peak scaled, `n_gpus` rewritten, a figure turned to text or removed), like
one that cannot be trusted or read, is ignored, checked again and rewritten, so that the cache never changes an
answer.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from perfmodel.inputs.diskcache import cache_dir, digest, read_private, write_atomic
from perfmodel.inputs.record import GIVEN, as_dict, from_dict

R = TypeVar("R")

MAX_ENTRY_BYTES = 1024 * 1024
"""A checked hardware or scenario file is a few kB: a bigger entry is not one perfmodel wrote."""


def cached(kind: str, text: str, cls: type[R], check: Callable[[], R]) -> R:
    """The checked record (of class `cls`) of a bundled `kind` file (accelerators, systems, scenario) whose content
    is `text`: read back from the cache, else `check()`'s own record (and its tables cached)."""
    directory = cache_dir()
    if directory is None:
        return check()
    key = hashlib.sha256(f"{code_version()}:{kind}:{text}".encode()).hexdigest()
    path = directory / f"checked-{key[:32]}.json"
    found = _read(path, key, cls)
    if found is not None:
        return found
    checked = check()
    checked_tables = tables(checked)
    write_atomic(
        directory,
        path,
        json.dumps({"key": key, "digest": digest(directory, key, checked_tables), "tables": checked_tables}),
    )
    return checked


def tables(item: Any) -> dict[str, Any]:
    """A checked record as the cache keeps it, for `from_dict` to read back: the fields its input gave where the
    record remembers them (a scenario's "(default)" markers depend on it), else every field."""
    return as_dict(item, exclude_unset=hasattr(type(item), GIVEN))


def _read(path: Path, key: str, cls: type[R]) -> R | None:
    """The record of the entry at `path` when it is the one written for `key` (the input's text and the code's
    version) and its tables are the ones written (their digest), else None."""
    data = read_private(path, MAX_ENTRY_BYTES)
    if data is None:
        return None
    try:
        entry = json.loads(data)
        if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("tables"), dict):
            return None
        if entry.get("digest") != digest(path.parent, key, entry["tables"]):
            return None
        return from_dict(cls, entry["tables"])
    except (ValueError, TypeError, KeyError, RecursionError):  # not JSON, or tables this code did not write
        return None


@cache
def code_version() -> str:
    """A digest of the code that checks: the modules that define the records and their checks (perfmodel/inputs/
    *.py) and pydantic's version file (found, not imported: an upgrade may accept other input)."""
    digest = hashlib.sha256()
    for module in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(module.read_bytes())
    spec = importlib.util.find_spec("pydantic")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        digest.update((Path(folder) / "version.py").read_bytes())
    return digest.hexdigest()
