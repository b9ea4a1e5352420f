"""A hostile environment (issue 30, class 5): each is one line on stderr and exit code 2, or no trace at all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _perfmodel(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfmodel", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd, env=os.environ | env,
    )  # fmt: skip


def test_standard_output_closed_is_one_line() -> None:
    """`perfmodel predict >&-`: the answer cannot be printed, which is an error, not a traceback."""
    command = f"exec {sys.executable} -m perfmodel predict >&-"
    proc = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "error: cannot write the output (standard output is closed)\n"


def test_a_deleted_working_folder_is_one_line(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    code = (
        f"import os, runpy, sys\nos.chdir({str(gone)!r})\nos.rmdir({str(gone)!r})\n"
        "sys.argv = ['perfmodel', 'predict', 'scenario.toml']\nrunpy.run_module('perfmodel')"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "error: the working folder no longer exists (deleted?); cd to a folder that exists\n"
