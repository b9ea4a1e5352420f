"""Write a file all at once or not at all: a temporary file in the same folder, then a rename.

A reader (or a planner's spreadsheet program) never sees half a file, a failed export leaves nothing behind, and an
existing file is only replaced when the caller says so.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from perfmodel.errors import PerfmodelError


def check_target(path: Path, force: bool) -> None:
    """Refuse early, before any work is done, a target that exists (without `force`) or whose folder is unusable."""
    if path.is_dir():
        raise PerfmodelError(f"--out {path}: is a folder; give a file name")
    if path.exists() and not force:
        raise PerfmodelError(f"--out {path}: file exists; pass --force to overwrite it")
    folder = path.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise PerfmodelError(f"--out {path}: {folder} {what}")
    try:  # a real write, not os.access: root passes access checks on read-only file systems (/proc, /sys)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise PerfmodelError(f"--out {path}: folder {folder} is not writable ({exc.strerror or exc})") from None


def check_output(path: Path, force: bool, suffixes: tuple[str, ...], kind: str = "format") -> str:
    """The format `path`'s suffix names (one of `suffixes`, e.g. '.xlsx'), once the target is known to be
    writable; a one-line error otherwise."""
    suffix = path.suffix.lower()
    if suffix not in suffixes:
        shown = f"'{path.suffix}'" if path.suffix else "no suffix"
        allowed = ", ".join(suffixes[:-1]) + f" or {suffixes[-1]}"
        raise PerfmodelError(f"--out {path}: unknown {kind} ({shown}); use a {allowed} file name")
    check_target(path, force)
    return suffix[1:]


def write_atomic(path: Path, write: Callable[[BinaryIO], object], force: bool = False) -> None:
    """Call `write` on a temporary file next to `path`, then move it into place.

    Without `force` the final step is a hard link, which fails if `path` appeared in the meantime, so an existing
    file is never replaced. On any error the temporary file is removed and nothing is left behind.
    """
    check_target(path, force)
    try:
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise PerfmodelError(f"--out {path}: cannot write in {path.parent} ({exc.strerror})") from None
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o666 & ~umask)  # the permissions a plain open() would give, not mkstemp's 0600
        if force:
            tmp.replace(path)
        else:
            _link_without_replacing(tmp, path)
    except FileExistsError:
        raise PerfmodelError(f"--out {path}: file exists; pass --force to overwrite it") from None
    except OSError as exc:
        raise PerfmodelError(f"--out {path}: cannot write ({exc.strerror or exc})") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _link_without_replacing(tmp: Path, path: Path) -> None:
    """Give `tmp` the name `path` unless that name exists; a file system without hard links falls back to a
    rename after a fresh existence check."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:
        if path.exists():
            raise FileExistsError(path) from None
        tmp.replace(path)
