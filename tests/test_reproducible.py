"""Reproducible outputs (issue 30, class 6): every file perfmodel writes is byte-identical for identical inputs, and
its one date, if any, is SOURCE_DATE_EPOCH's (reproducible-builds.org), refused with one line when malformed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import run_cli

LAYOUT = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--tp", "1", "--pp", "1", "--cp", "1",
          "--vp", "1", "--mbs", "1", "--gbs", "64", "--recompute", "none", "--zero", "1")  # fmt: skip
RUNS = (Path(__file__).parent / "user_runs.csv").read_text()  # a user calibration fits one parameter per 5 rows
SWEEP = '[sweep]\nmodels = ["llama3.1-8b"]\ngpus = ["h100-sxm", "b200"]\nn_gpus = [8, 16]\n'
SWEEP_LAYOUTS = (
    SWEEP + "[sweep.set]\nparallelism = { pp = 1, cp = 1, vp = 1, mbs = 1, gbs = 64, recompute = 'none', zero = 1 }\n"
    "[sweep.layouts]\ntp = [1, 2]\n"
)
WRITERS = {
    "export.csv": ("export", "predict", *LAYOUT),
    "export.json": ("export", "compare", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpu", "b200"),
    "export.xlsx": ("export", "predict", *LAYOUT),
    "search.json": ("export", "search", "--model", "llama3.1-8b", "--gpus", "64", "--top", "3"),
    "plan.csv": ("export", "plan", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--deadline", "30d"),
    "plot.png": ("plot", "breakdown", *LAYOUT),
    "plot.svg": ("plot", "breakdown", *LAYOUT),
    "plot.pdf": ("plot", "breakdown", *LAYOUT),
    "sweep.csv": ("sweep", "{tmp}/sweep.toml", "--jobs", "1", "--quiet"),
    "sweep.json": ("sweep", "{tmp}/layouts.toml", "--jobs", "1", "--quiet"),
    "calibration.json": ("calibrate", "--data", "{tmp}/runs.csv", "--no-cv", "--quiet"),
}
"""One command per writer and format, each with `--out` appended."""


@pytest.mark.parametrize("name", WRITERS)
def test_every_writer_gives_the_same_bytes_for_the_same_input(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs a second apart (so a clock second in the file would show), SOURCE_DATE_EPOCH set as a
    reproducible build sets it."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    (tmp_path / "runs.csv").write_text(RUNS)
    (tmp_path / "sweep.toml").write_text(SWEEP)
    (tmp_path / "layouts.toml").write_text(SWEEP_LAYOUTS)
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in WRITERS[name]]
    outputs = []
    for run in ("first", "second"):
        out = tmp_path / f"{run}-{name}"
        result = run_cli(*args, "--out", str(out))
        assert result.code == 0, result.err
        outputs.append(out.read_bytes())
        time.sleep(1.05)
    assert outputs[0] == outputs[1]


def test_calibrate_dates_its_file_with_source_date_epoch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    (tmp_path / "runs.csv").write_text(RUNS)
    out = tmp_path / "c.json"
    assert run_cli("calibrate", "--data", str(tmp_path / "runs.csv"), "--no-cv", "--out", str(out)).code == 0
    assert json.loads(out.read_text())["created"] == "2023-11-14T22:13:20Z"


@pytest.mark.parametrize("fmt", ["pdf", "svg"])
def test_a_plot_carries_no_date_but_source_date_epochs(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """matplotlib writes the current time into a PDF (and, unasked, an SVG): perfmodel writes none, or the one
    SOURCE_DATE_EPOCH gives."""
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    assert run_cli("plot", "breakdown", *LAYOUT, "--out", str(tmp_path / f"a.{fmt}")).code == 0
    plain = (tmp_path / f"a.{fmt}").read_bytes()
    assert b"CreationDate" not in plain and b"<dc:date>" not in plain
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert run_cli("plot", "breakdown", *LAYOUT, "--out", str(tmp_path / f"b.{fmt}")).code == 0
    dated = (tmp_path / f"b.{fmt}").read_bytes()
    assert (b"D:20231114221320Z" if fmt == "pdf" else b"<dc:date>2023-11-14T22:13:20Z</dc:date>") in dated


@pytest.mark.parametrize(
    "value, problem",
    [
        ("yesterday", "'yesterday' is not a time"),
        ("1.7e9", "'1.7e9' is not a time"),
        ("-1", "'-1' is not a time"),
        (" 1700000000", "' 1700000000' is not a time"),
        ("\u0661\u0667\u0660\u0660", "is not a time"),  # Arabic-Indic digits: int() takes them, the convention not
        ("253402300800", "253402300800 is past year 9999"),
        ("9" * 5000, "is not a time"),  # longer than Python's 4,300-digit conversion limit
    ],
)
@pytest.mark.parametrize("command", [("export", "predict", "--out", "{tmp}/a.xlsx"),
                                     ("plot", "breakdown", "--out", "{tmp}/a.pdf")])  # fmt: skip
def test_a_malformed_source_date_epoch_is_one_line(
    value: str, problem: str, command: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    result = run_cli(*(arg.replace("{tmp}", str(tmp_path)) for arg in command))
    assert result.code == 2, result.err
    assert result.err.startswith("error: environment variable SOURCE_DATE_EPOCH: ") and problem in result.err
    assert result.err.count("\n") == 1 and "allowed: seconds since 1970-01-01 UTC" in result.err
    assert list(tmp_path.iterdir()) == []
