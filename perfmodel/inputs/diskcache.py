"""perfmodel's cache folder: entries read only when they can be trusted, written whole or not at all.

The topology tiers (physics/topology.py) and the checked form of bundled input files (inputs/validated.py) are kept
under ~/.cache/perfmodel ($XDG_CACHE_HOME; PERFMODEL_CACHE_DIR overrides, PERFMODEL_CACHE_DIR=off disables). An
entry is an input like any other: one that cannot be trusted is ignored, derived again and rewritten.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import stat
from functools import cache
from pathlib import Path
from typing import Any

from perfmodel.inputs.resources import user_folder

MAC_KEY_FILE = "mac-key"
"""The file of the folder's own key, with which every entry's digest is worked out (digest)."""


def cache_dir() -> Path | None:
    """The cache folder, or None when caching is off."""
    override = os.environ.get("PERFMODEL_CACHE_DIR")
    folder = Path(override) if override else user_folder("cache")
    return None if str(folder) == "off" else folder


def read_private(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of the entry at `path` when they can be trusted, else None: a regular file (never a FIFO, device or
    symbolic link: those are not even opened) owned by this user, not writable by others, of at most `max_bytes`."""
    try:
        before = os.lstat(path)
        if not stat.S_ISREG(before.st_mode) or not _private(before) or before.st_size > max_bytes:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino) or not _private(st):
                return None
            data = handle.read(max_bytes + 1)
    except OSError:
        return None
    return data if len(data) <= max_bytes else None


def digest(directory: Path, key: str, payload: Any) -> str:
    """What an entry stores beside its `payload` and checks on read: a hash of the payload bound to the entry's key,
    keyed by the folder's own secret (an HMAC), so that an edited figure (a peak scaled, a count rewritten, a number
    turned to text) is caught even when the edit's digest was worked out again from the entry's format."""
    text = f"{key}:{json.dumps(payload, sort_keys=True)}".encode()
    return hmac.new(_mac_key(directory), text, hashlib.sha256).hexdigest()


@cache
def _mac_key(directory: Path) -> bytes:
    """The cache folder's key: 32 random bytes kept in it (private, as every entry), made on first use. Two processes
    that make one at once each write entries the other then derives again: a cost once, never a wrong answer."""
    path = directory / MAC_KEY_FILE
    found = read_private(path, 64)
    if found is not None and re.fullmatch(rb"[0-9a-f]{64}", found):
        return bytes.fromhex(found.decode())
    fresh = os.urandom(32)
    write_atomic(directory, path, fresh.hex())
    return fresh


def _private(st: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else: a file others can edit would let them change predictions."""
    return st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def write_atomic(directory: Path, path: Path, text: str) -> None:
    """Write the entry through a fresh temporary file (`tempfile`: a random name, created exclusively, so never
    through a planted link), then rename it into place; a cache that cannot be written is no error. tempfile is
    imported here: with shutil, random and the compression modules it pulls in, it is ~4 ms of a start that reads
    the cache and never writes it."""
    import tempfile

    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, name = tempfile.mkstemp(dir=directory, prefix=f"{path.stem}-", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(name, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(name)
