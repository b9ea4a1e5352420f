"""Where hardware entries come from: the bundled hardware_specs/, and the user's own catalogues.

A planner's cluster is rarely a bundled one: a 2:1 tapered fabric, fewer NICs, a GPU perfmodel does not ship. Their
TOML files (the bundled files' format, documented in README "Your own hardware") are found, in this order, in
`$PERFMODEL_PATH` (folders or files, separated by the OS path separator), in the user config folder
(`$XDG_CONFIG_HOME/perfmodel/hardware`, by default ~/.config/perfmodel/hardware, as the topology cache follows
`$XDG_CACHE_HOME`) and in each `--hardware
FILE|DIR` a command is given. A file holds one accelerator or system; `base = "dgx-h100"` starts from a bundled (or
earlier) entry and replaces the fields the file gives, a `{value, source}` figure as a whole so that every figure
keeps a source. This module only finds and merges the raw tables; inputs/hardware.py validates them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from perfmodel.errors import PerfmodelError, did_you_mean, shown
from perfmodel.inputs.files import other_kind, parse_toml, read_text
from perfmodel.inputs.resources import data_dir, user_folder
from perfmodel.inputs.text import text_problem

KINDS = ("accelerators", "systems")
PATH_VARIABLE = "PERFMODEL_PATH"
MAX_FILES = 1000
"""A catalogue folder of more files than this is a wrong folder (a home directory), not a catalogue."""

_ID_FLAGS = (("accelerators", "--gpu"), ("systems", "--system"))
"""The flag that takes an id of each kind: where a --hardware path is really an id, the error says which to use."""

_added: list[Path] = []
"""Catalogues given to this process with --hardware (or the API's hardware= keyword), in order."""


@dataclass(frozen=True)
class Entry:
    kind: str
    id: str
    path: Path
    raw: dict[str, Any]
    bundled: bool


def add(path: str | Path, origin: str = "--hardware") -> None:
    """Use the entries of a catalogue file or folder from now on in this process (checked at once)."""
    location = Path(path).expanduser()
    if not location.exists():
        known = entries()
        hint = next((f" ({flag} {path} names it)" for kind, flag in _ID_FLAGS if str(path) in known[kind]), "")
        raise PerfmodelError(f"{origin} {path}: no such hardware file or folder{hint}")
    if location.resolve() not in [p.resolve() for p in _added]:
        _added.append(location)
        try:
            entries()
        except PerfmodelError:
            _added.pop()
            raise


def added() -> tuple[str, ...]:
    """The catalogues added in this process, for another process to add (a sweep's workers: a spawned or forkserver
    worker starts without them)."""
    return tuple(map(str, _added))


def clear() -> None:
    """Forget the catalogues added in this process (a notebook moving to another cluster; tests)."""
    _added.clear()


def version() -> tuple[str, ...]:
    """What the entries depend on, as a cache key: the user catalogues in force. The user config folder enters by
    what it is derived from (resources.user_folder: $XDG_CONFIG_HOME, else ~ from $HOME), which is cheaper to read
    than the folder is to build, and changes whenever it does."""
    environ = os.environ
    folder = (environ.get("XDG_CONFIG_HOME", ""), environ.get("HOME", ""))
    return (environ.get(PATH_VARIABLE, ""), *folder, *map(str, _added))


def entries() -> dict[str, dict[str, Entry]]:
    """Every entry by kind and id: the bundled ones, then the user's (whose ids must be new)."""
    return _entries(version())


@cache
def _entries(key: tuple[str, ...]) -> dict[str, dict[str, Entry]]:
    found: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}
    for kind in KINDS:
        for path in sorted((data_dir("hardware_specs") / kind).glob("*.toml")):
            found[kind][path.stem] = Entry(kind, path.stem, path, {}, bundled=True)
    for path in _user_files():
        entry = _user_entry(path, found)
        for kind in KINDS:
            if entry.id in found[kind]:
                raise PerfmodelError(
                    f"{path}: id '{entry.id}' is already defined by {found[kind][entry.id].path}; give this entry its "
                    f"own id (base = '{entry.id}' starts from it)"
                )
        found[entry.kind][entry.id] = entry
    return found


def raw_tables(entry: Entry) -> dict[str, Any]:
    """An entry's tables: read from its file for a bundled one (lazily: a prediction reads two files)."""
    return _read(entry.path, user=False) if entry.bundled else entry.raw


SHIPPED_USER_FILES = "examples"
"""hardware_specs/examples/: user-format files (`base =` a bundled entry) that perfmodel ships and always reads,
for hardware its bundled measured rows ran on (Meta's Grand Teton H100 at 500 W: torchtitan's rows)."""


def _user_files() -> list[Path]:
    config = _user_config_folder()
    listed = [Path(p) for p in os.environ.get(PATH_VARIABLE, "").split(os.pathsep) if p]
    files: list[Path] = sorted((data_dir("hardware_specs") / SHIPPED_USER_FILES).glob("*.toml"))
    for location in [*listed, *([config] if config.is_dir() else []), *_added]:
        if location.is_dir():
            found = sorted(location.glob("*.toml")) + sorted(location.glob("*/*.toml"))
            if len(found) > MAX_FILES:
                raise PerfmodelError(
                    f"{location}: {len(found)} TOML files; a hardware catalogue holds at most {MAX_FILES}"
                )
            files += found
        elif location.is_file():
            files.append(location)
        elif location in listed:
            raise PerfmodelError(f"{PATH_VARIABLE} entry {location}: no such hardware file or folder")
    unique: dict[Path, Path] = {}
    for file in files:  # a file named twice, however spelled (`--hardware hardware_specs/examples`, shipped), is one
        unique.setdefault(file.resolve(), file)
    return list(unique.values())


def _user_config_folder() -> Path:
    return user_folder("config") / "hardware"


PRICED = ("usd_per_gpu_hour", "usd_per_system")
"""Prices a hardware file gives with a `_low`/`_high` range around them."""


def _user_entry(path: Path, known: dict[str, dict[str, Entry]]) -> Entry:
    raw = _read(path, user=True)
    entry_id = raw.get("id")
    if not isinstance(entry_id, str) or not entry_id:
        raise PerfmodelError(
            f"{path}: field 'id' is required: the name commands use for this entry (--gpu, --system)"
            + other_kind(raw, "hardware")
        )
    problem = text_problem(entry_id)
    if problem is not None:
        raise PerfmodelError(f"{path}: field 'id' {problem} (got '{shown(entry_id)}')")
    base_id = raw.pop("base", None)
    if base_id is None:
        return Entry("systems" if "accelerator" in raw else "accelerators", entry_id, path, raw, bundled=False)
    base = next((known[kind][base_id] for kind in KINDS if isinstance(base_id, str) and base_id in known[kind]), None)
    if base is None:
        ids = sorted(i for kind in KINDS for i in known[kind])
        hint = did_you_mean(base_id, ids) if isinstance(base_id, str) else ""
        raise PerfmodelError(
            f"{path}: field 'base': unknown accelerator or system {base_id!r}{hint}; valid: {', '.join(ids)}"
        )
    tables = merged(raw_tables(base), raw)
    ends = [f"{price}_{end}" for price in PRICED if price in raw for end in ("low", "high")]
    for end in ends:  # the base's range bounds the base's price, not the file's: a price alone is its own range
        if end not in raw:
            tables.pop(end, None)
    return Entry(base.kind, entry_id, path, tables, bundled=False)


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`base` with `changes` in place; tables merge key by key, but a `{value, source}` figure is replaced whole."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and "value" not in value:
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def read_bundled(entry: Entry) -> str:
    """A bundled entry's text (its checked form is cached under a digest of it: inputs/validated.py)."""
    return read_text(entry.path, "hardware", user=False)


def _read(path: Path, user: bool) -> dict[str, Any]:
    """A hardware file's tables: a regular file within its size cap and nesting depth, like every input."""
    return parse_toml(path, read_text(path, "hardware", user=user))
