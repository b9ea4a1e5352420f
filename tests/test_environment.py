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


LAYOUT = ("--gpus", "8", "--tp", "1", "--pp", "1", "--cp", "1", "--vp", "1", "--mbs", "1", "--gbs", "64")


def test_home_a_file_gives_no_matplotlib_warnings(tmp_path: Path) -> None:
    """matplotlib cannot make ~/.config/matplotlib under a HOME that is a file: it works in a temporary folder and
    says so on stderr, which perfmodel's user can do nothing about."""
    home = tmp_path / "home"
    home.write_text("not a folder")
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    out = tmp_path / "p.png"
    proc = subprocess.run(
        [sys.executable, "-m", "perfmodel", "plot", "breakdown", "--model", "llama3.1-8b", *LAYOUT, "--out", str(out)],
        capture_output=True, text=True, timeout=300, env=env | {"HOME": str(home)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and proc.stdout == f"wrote {out}\n"


def _dollar_scenario(tmp_path: Path, model_id: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(f"gpu = 'h100-sxm'\n[model]\nbase = 'llama3.1-8b'\nid = '{model_id}'\n")
    return path


def test_dollars_and_tex_in_labels_are_drawn_as_typed(tmp_path: Path) -> None:
    """A model id with `$...$` reaches the plot's title: matplotlib would parse it as mathtext (an unknown macro is
    a traceback) or, under a matplotlibrc with text.usetex, hand it to LaTeX."""
    config = tmp_path / "mpl"
    config.mkdir()
    (config / "matplotlibrc").write_text("text.usetex: True\n")
    for model_id in (r"cost $\undefinedmacro{1}$ x", "price $5 vs $6", r"$\input{/etc/passwd}$"):
        scenario = _dollar_scenario(tmp_path, model_id)
        out = tmp_path / "p.svg"
        proc = _perfmodel("plot", "breakdown", str(scenario), *LAYOUT, "--out", str(out), "--force",
                          MPLCONFIGDIR=str(config))  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        assert f"Where the step time goes: {model_id}".encode() in out.read_bytes()  # the SVG's text, as typed
