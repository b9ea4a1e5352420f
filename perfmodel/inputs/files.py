"""Reading the user's input files: regular files only, of bounded size and nesting, and remembered.

A FIFO given as a scenario would block forever, /dev/zero would fill the memory, a symlink loop or an over-long
name would end in a traceback, and a JSON or TOML file nested thousands deep in RecursionError. Every input file
(scenario and sweep TOML, measured-runs CSV, MLPerf logs, calibration JSON, `plot --from` JSON) is read here: stat'ed
before it is opened (nothing but a regular file is opened), checked again on the open descriptor, read up to its
kind's size cap, and its nesting checked before any parser sees it. Each file read is remembered by device and inode,
so that a write (outputs/atomic.py) never replaces a file the same command read, whatever path or link names it.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfmodel.errors import PerfmodelError, shown

MIB = 2**20
SIZE_LIMITS = {
    "scenario": 1 * MIB,
    "sweep": 1 * MIB,
    "model": 1 * MIB,
    "hardware": 1 * MIB,
    "fleet": 1 * MIB,
    "calibration": 16 * MIB,
    "runs CSV": 16 * MIB,
    "log": 64 * MIB,
    "results JSON": 64 * MIB,
}
"""Bytes per kind of input: about 100x the largest real one (a scenario is 1 kB, the bundled calibration 170 kB, an
MLPerf Llama 3.1 405B result log a few MB)."""
MAX_DEPTH = 32
"""Nesting of tables/arrays (TOML) and objects/arrays (JSON): perfmodel's own files nest at most 5 deep."""
TOO_LONG_INTEGER = "an integer of more than 4,300 digits; a number must be at most 1e308"
"""What a file holding an integer Python refuses to read (sys.get_int_max_str_digits) is told."""
MAX_PATH_CHARS = 4096

_READ: dict[tuple[int, int], str] = {}
"""(st_dev, st_ino) of every input file read by the current command -> the path it was read as."""

_REASONS = {
    errno.ELOOP: "too many levels of symbolic links: a loop?",
    errno.ENAMETOOLONG: "file name too long",
    errno.EACCES: "permission denied",
    errno.ENOTDIR: "a part of the path is not a folder",
}


def forget_reads() -> None:
    """Start a new command: no input file read yet."""
    _READ.clear()


def remember(path: str | Path) -> None:
    """Note `path` as an input of the current command (for a file whose content is cached, so not read again)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return
    _READ[(st.st_dev, st.st_ino)] = str(path)


def read_by_this_command(path: str | Path) -> str | None:
    """The name an input file of the current command was read as, when `path` is (or links to) that file."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return _READ.get((st.st_dev, st.st_ino))


def check_path(path: str | Path, label: str) -> str:
    """`path` as text, when it can name a file at all: no NUL byte or control character, not absurdly long."""
    text = str(path)
    if "\x00" in text:
        raise PerfmodelError(f"{label}: a file name cannot contain a NUL byte")
    if len(text) > MAX_PATH_CHARS:
        raise PerfmodelError(f"{label}: a file name of {len(text):,} characters; at most {MAX_PATH_CHARS:,}")
    if not text.isprintable():
        raise PerfmodelError(f"{label}: the file name contains a control character")
    return text


def beside(source: str | Path, named: str) -> str:
    """A path that the file `source` names, as the working folder reaches it: a relative one is relative to the file's
    own folder, so that the file answers the same from any folder (a scenario's calibration, a sweep's base)."""
    return named if Path(named).is_absolute() else str(Path(source).parent / named)


def read_bytes(path: str | Path, kind: str, label: str | None = None, user: bool = True) -> bytes:
    """The content of the `kind` input file at `path` (a key of SIZE_LIMITS), or one line saying why it cannot be
    read: missing, not a regular file, too big, unreadable. `label` names the file in errors (default: the path);
    `user`: the user's file, remembered as an input of this command (perfmodel's own bundled files are not)."""
    where = label or shown(path, 200)
    text = check_path(path, where)
    limit = SIZE_LIMITS[kind]
    try:
        before = os.stat(text)
        if stat.S_ISDIR(before.st_mode):
            raise PerfmodelError(f"{where}: is a folder, not a {kind} file")
        if not stat.S_ISREG(before.st_mode):
            raise PerfmodelError(f"{where}: not a regular file (a FIFO, device or socket); give a {kind} file")
        fd = os.open(text, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise PerfmodelError(f"{where}: no such {kind} file") from None
    except OSError as exc:
        reason = _REASONS.get(exc.errno or 0, exc.strerror or str(exc))
        raise PerfmodelError(f"{where}: cannot read {kind} file ({reason})") from None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise PerfmodelError(f"{where}: changed while it was opened; give a regular {kind} file")
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise PerfmodelError(f"{where}: cannot read {kind} file ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise PerfmodelError(f"{where}: more than {limit // MIB} MiB; a {kind} file is at most {limit // MIB} MiB")
    if user:
        _READ[(st.st_dev, st.st_ino)] = text
    return data


def read_text(path: str | Path, kind: str, label: str | None = None, encoding: str = "utf-8", user: bool = True) -> str:
    """`read_bytes` decoded; text that is not `encoding` is one line naming the file."""
    data = read_bytes(path, kind, label, user)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        where = label or shown(path, 200)
        raise PerfmodelError(f"{where}: cannot read {kind} file (not {encoding} text: {exc.reason})") from None


_NOT_BRACKETS = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|\'[^\'\n]*\'|#[^\n]*|[^\[\]{}"\'#]+')
"""Strings (JSON and TOML basic, TOML literal), TOML comments, and runs of characters that are none of brackets,
quotes or `#`: what is left once they are removed is the brackets that open and close a level (and stray quotes).
A basic string is written as runs between escapes (`"[^"\\]*(?:\\.[^"\\]*)*"`, the same strings as one alternation per
character, which the regular-expression engine runs about 3x slower)."""


def nesting_depth(text: str) -> int:
    """How deep tables/objects and arrays nest in TOML or JSON text, brackets in strings and comments ignored.

    Cheap and before parsing: the parsers recurse once per level, and a file nested thousands deep would end in
    RecursionError. A TOML table header `[a.b]` counts as one level, as its `[` and `]` balance. The strings and
    comments are removed in one regular-expression pass, so that only the brackets are looked at one by one (the
    bundled calibration file holds thousands of strings)."""
    depth = deepest = 0
    for char in _NOT_BRACKETS.sub("", text):
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(0, depth - 1)
    return deepest


def check_depth(text: str, where: str) -> None:
    """One line naming `where` when `text` nests deeper than MAX_DEPTH."""
    if nesting_depth(text) > MAX_DEPTH:
        raise PerfmodelError(f"{where}: nested more than {MAX_DEPTH} levels deep; at most {MAX_DEPTH}")


UNQUOTED = re.compile(r"\s*([\w.-]+)\s*=\s*(\d[\d.,_]*\s*[a-zA-Z]+|[a-zA-Z][\w.:-]*)\s*(?:#.*)?")
"""A line `tokens = 15T`, `seq_len = 8k` or `model = llama3.1-8b`: a suffixed number or a word left unquoted,
which TOML reads as no value at all."""


def _unquoted(text: str, error: str) -> str:
    """What to write instead where the line tomllib stopped at (its message says '(at line N, column M)') leaves a
    suffixed number or a word unquoted; '' otherwise."""
    at = re.search(r"\(at line (\d+), column \d+\)", error)
    lines = text.splitlines()
    line = lines[int(at.group(1)) - 1] if at and int(at.group(1)) <= len(lines) else ""
    found = UNQUOTED.fullmatch(line)
    if found is None or found.group(2) in ("true", "false", "inf", "nan"):
        return ""
    key, value = shown(found.group(1)), shown(found.group(2))
    if value.lower() in ("true", "false"):
        return f"; {key} = {value}: TOML's true and false are lower case: {key} = {value.lower()}"
    if value[0].isdigit():
        return (
            f'; {key} = {value}: TOML takes a number with a suffix as text only in quotes (tokens = "15T"), where '
            "the field takes one; else write the number (seq_len = 8192)"
        )
    return f'; {key} = {value}: TOML takes text in quotes: {key} = "{value}"'


def _other_syntax(text: str, error: str) -> str:
    """What the file holds instead, where tomllib's message says less: JSON ('Invalid statement' at line 1: a
    results file, or a scenario written as the HTTP API's JSON), or a key set twice ('Cannot overwrite a value':
    `model = ...` beside a [model] table); '' otherwise."""
    if text.lstrip("\ufeff \t\r\n").startswith("{"):
        return (
            "; this is JSON: an input file is TOML, key = value lines (perfmodel schema scenario|fleet|model|hardware "
            "lists the keys)"
        )
    if error.startswith("Cannot overwrite a value"):
        return "; a key is set twice, or beside a table of its name (model = ... and a [model] table): keep one"
    return ""


def _sourced(tables: dict[str, Any]) -> bool:
    """Whether tables hold a hardware figure, a {value, source} pair (hardware_specs' format)."""
    return any(isinstance(v, dict) and ("source" in v or _sourced(v)) for v in tables.values())


FILE_KINDS: tuple[tuple[str, Callable[[dict[str, Any]], bool], str], ...] = (
    ("sweep", lambda t: "sweep" in t, "a sweep file: run it with perfmodel sweep FILE"),
    ("model", lambda t: bool({"layers", "hidden", "heads"} & set(t)), "a model file: pass it with --model FILE"),
    (
        "hardware",
        lambda t: "id" in t and (_sourced(t) or bool({"vendor", "accelerator", "fabric", "latency"} & set(t))),
        "a hardware file: pass it with --hardware FILE, and its id with --gpu or --system",
    ),
    (
        "scenario",
        lambda t: bool({"model", "gpu", "system", "n_gpus", "parallelism", "phase", "tokens"} & set(t)),
        "a scenario file: give it as the command's SCENARIO argument",
    ),
)
"""What tells the input TOML files apart by their top-level keys, and where each kind goes: a file given to the
wrong option (`predict ours.toml` for `--hardware ours.toml`) is told so, not only that its keys are unknown."""


def other_kind(tables: Any, expected: str) -> str:
    """' (this looks like a hardware file: pass it with --hardware FILE, ...)' for a file given where an `expected`
    kind goes (scenario, sweep, model, hardware) whose keys are another kind's; '' otherwise."""
    if not isinstance(tables, dict):
        return ""
    found = next((what for kind, test, what in FILE_KINDS if kind != expected and test(tables)), None)
    return f" (this looks like {found})" if found else ""


def parse_toml(source: Path, text: str) -> dict[str, Any]:
    """The tables of a TOML file's text, or one line naming the file (tomllib imported here: a bundled file's checked
    tables usually come from the cache, unparsed)."""
    import tomllib

    check_depth(text, str(source))
    try:  # a byte-order mark, which Windows editors write and tomllib takes for a statement, is no content
        return tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        hint = _unquoted(text, str(exc)) or _other_syntax(text, str(exc))
        raise PerfmodelError(f"{source}: not valid TOML: {exc}{hint}") from None
    except ValueError:  # Python reads no integer of more than 4,300 digits (sys.get_int_max_str_digits)
        raise PerfmodelError(f"{source}: {TOO_LONG_INTEGER}") from None
