"""Write a file all at once or not at all: a temporary file in the same folder, then a rename.

A reader (or a planner's spreadsheet program) never sees half a file, a failed export leaves nothing behind, and an
existing file is only replaced when the caller says so, and never when it is a file the same command reads (its
scenario, calibration, measured runs or --from results), whatever path, symbolic link or hard link names it.
The temporary file comes from `tempfile` (a random name, created exclusively, so never through a planted link) and
is removed on SIGTERM and SIGHUP as on Ctrl-C (outputs/signals.py).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.files import check_path, read_by_this_command
from perfmodel.outputs.signals import exit_on_signals


def check_target(
    path: Path,
    force: bool,
    reads: Iterable[str | Path | None] = (),
    named: str | None = None,
    force_flag: str = "--force",
) -> None:
    """Refuse early, before any work is done, a target that exists (without `force`), that is one of the files
    `reads` names or the command has read, or whose folder is unusable. An error starts with `named` (default
    `--out PATH`) and says to pass `force_flag`: the API names its keywords (out=..., force=True) instead."""
    named = named or f"--out {path}"
    check_path(path, named)
    try:
        if path.is_dir():
            raise PerfmodelError(f"{named}: is a folder; give a file name")
        exists = path.exists()
    except OSError as exc:
        raise PerfmodelError(f"{named}: cannot write ({exc.strerror or exc})") from None
    if exists and not force:
        raise PerfmodelError(f"{named}: file exists; pass {force_flag} to overwrite it")
    if exists:
        _not_an_input(path, reads, named)
    folder = path.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise PerfmodelError(f"{named}: {folder} {what}")
    try:  # a real write, not os.access: root passes access checks on read-only file systems (/proc, /sys)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise PerfmodelError(f"{named}: folder {folder} is not writable ({exc.strerror or exc})") from None


def _not_an_input(path: Path, reads: Iterable[str | Path | None], named: str) -> None:
    """One line when `path` is (through any link) a file this command reads: --force never replaces an input."""
    target = _identity(path)
    for given in reads:
        if given is not None and target is not None and _identity(given) == target:
            raise PerfmodelError(f"{named}: is {given}, an input of this command; write the output elsewhere")
    read_as = read_by_this_command(path)
    if read_as is not None:
        raise PerfmodelError(f"{named}: is {read_as}, an input of this command; write the output elsewhere")


def _identity(path: str | Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def check_output(
    path: Path, force: bool, suffixes: tuple[str, ...], kind: str = "format", reads: Iterable[str | Path | None] = ()
) -> str:
    """The format `path`'s suffix names (one of `suffixes`, e.g. '.xlsx'), once the target is known to be
    writable; a one-line error otherwise."""
    suffix = path.suffix.lower()
    if suffix not in suffixes:
        shown = f"'{path.suffix}'" if path.suffix else "no suffix"
        allowed = ", ".join(suffixes[:-1]) + f" or {suffixes[-1]}"
        raise PerfmodelError(f"--out {path}: unknown {kind} ({shown}); use a {allowed} file name")
    check_target(path, force, reads)
    return suffix[1:]


def write_atomic(path: Path, write: Callable[[BinaryIO], object], force: bool = False) -> None:
    """Call `write` on a temporary file next to `path`, then move it into place.

    Without `force` the final step is a hard link, which fails if `path` appeared in the meantime, so an existing
    file is never replaced. On any error, and on SIGTERM, SIGHUP or Ctrl-C, the temporary file is removed and
    nothing is left behind.
    """
    check_target(path, force)
    with exit_on_signals():
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
