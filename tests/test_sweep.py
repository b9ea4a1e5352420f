"""`perfmodel sweep`: points of a sweep file, error rows, parallel processes, Ray, and output files."""

import csv
import json
import os
from pathlib import Path

import pytest
from conftest import run_cli

from perfmodel.errors import PerfmodelError
from perfmodel.planning.sweep import load_points, run, run_point

SWEEP = """
[sweep]
models = ["llama3.1-8b"]
gpus = ["h100-sxm", "gb200-nvl72"]
precisions = ["fp8", "nvfp4"]
n_gpus = [8, 16]
whatifs = [{}, { nic_gbps = "x2" }]
[sweep.set]
tokens = 1e12
parallelism = { gbs = 64 }
"""


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(text)
    return path


def test_points_are_the_cross_product(tmp_path: Path) -> None:
    points = load_points(_file(tmp_path, SWEEP))
    assert len(points) == 1 * 2 * 2 * 2 * 2
    assert {(p.gpu, p.system) for p in points} == {("h100-sxm", None), (None, "gb200-nvl72")}
    assert {p.whatif for p in points} == {"datasheet", "nic_gbps=x2"}
    assert all(p.scenario().parallelism.gbs == 64 and p.scenario().tokens == 1e12 for p in points)


def test_a_model_file_is_found_next_to_the_sweep_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As `base` is: the sweep runs the same from any working folder."""
    (tmp_path / "ours.toml").write_text('base = "llama3.1-8b"\nid = "ours-8b"\nlayers = 24\n')
    path = _file(tmp_path, SWEEP.replace('"llama3.1-8b"', '"ours.toml"'))
    monkeypatch.chdir(tmp_path.parent)
    assert {p.scenario().model.layers for p in load_points(path)} == {24}


def test_rows_match_predict_and_errors_become_rows(tmp_path: Path) -> None:
    rows = run(load_points(_file(tmp_path, SWEEP)), jobs=1)
    h100_fp4 = [r for r in rows if r["accelerator"] == "h100-sxm" and r["precision"] == "nvfp4"]
    assert len(h100_fp4) == 4 and all("no tensor-core support for nvfp4" in r["error"] for r in h100_fp4)
    ok = [r for r in rows if not r["error"]]
    assert len(ok) == 12 and all(r["system"] in ("dgx-h100", "gb200-nvl72") for r in ok)
    first = next(r for r in ok if r["system"] == "dgx-h100" and r["n_gpus"] == 8 and r["whatif"] == "datasheet")
    predicted = json.loads(
        run_cli(
            "predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--precision", "fp8",
            "--gbs", "64", "--tokens", "1T", "--format", "json",
        ).out
    )  # fmt: skip
    assert first["step_time_s"] == pytest.approx(predicted["step_time_s"], rel=1e-12)
    faster_nic = next(r for r in ok if r["system"] == "dgx-h100" and r["n_gpus"] == 16 and r["whatif"] != "datasheet")
    slower_nic = next(r for r in ok if r["system"] == "dgx-h100" and r["n_gpus"] == 16 and r["whatif"] == "datasheet")
    assert faster_nic["step_time_s"] <= slower_nic["step_time_s"]


def test_processes_give_the_same_rows(tmp_path: Path) -> None:
    points = load_points(_file(tmp_path, SWEEP))[:4]
    assert run(points, jobs=2) == [run_point(p) for p in points]


def test_ray_executor_runs_a_real_local_cluster(tmp_path: Path) -> None:
    if not os.environ.get("CI"):  # CI installs the ray extra, so there a missing Ray fails the test
        pytest.importorskip("ray")
    points = load_points(_file(tmp_path, SWEEP))[:3]
    assert run(points, executor="ray") == [run_point(p) for p in points]


def test_cli_writes_csv_atomically_and_reports_failed_points(tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    result = run_cli("sweep", str(_file(tmp_path, SWEEP)), "--jobs", "1", "--out", str(out))
    assert result.code == 0 and result.out == ""
    assert "4 of 16 points could not run" in result.err and f"wrote 16 rows to {out}" in result.err
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 16 and rows[0]["model"] == "llama3.1-8b"
    assert {p.name for p in tmp_path.iterdir()} == {"sweep.toml", "rows.csv"}  # no temporary file left
    table = run_cli("sweep", str(_file(tmp_path, SWEEP)), "--jobs", "1", "--quiet")
    assert table.code == 0 and "no tensor-core support" in table.out and "TP" in table.out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[sweep]\nmodels = 'llama3.1-8b'\n", "field 'sweep.models' must be a non-empty list"),
        ("[sweep]\nmodel = ['llama3.1-8b']\n", "'sweep.model': unknown key (did you mean 'models'?); allowed"),
        ("models = ['llama3.1-8b']\n", "a sweep file has one [sweep] table"),
        ("[sweep]\ngpus = ['h900']\n", "unknown accelerator or system 'h900'"),
        ("[sweep]\nwhatifs = [{ nvlnk = 2 }]\n", "unknown hardware parameter 'nvlnk'"),
        ("[sweep]\nmodels = ['gpt9']\n", "unknown model 'gpt9'"),
        ("[sweep]\nn_gpus = [0]\n", "sweep.n_gpus: Input should be greater than or equal to 1 (got 0)"),
        ("[sweep\n", "not valid TOML"),
        ("[sweep]\nset = 3\n", "[sweep.set] a table of scenario keys"),
        ("[sweep]\nbase = 'nope.toml'\n", "no such scenario file"),
        ("[sweep]\n[sweep.set]\nn_gpu = 8\n", "sweep.set.n_gpu: unknown key (did you mean 'n_gpus'?); allowed: name"),
    ],
)
def test_bad_sweep_files_fail_with_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(PerfmodelError, match=str(path)):
        load_points(path)
    result = run_cli("sweep", str(path))
    assert result.code == 2 and message in result.err and result.err.count("\n") == 1


def test_out_must_be_csv_or_json(tmp_path: Path) -> None:
    result = run_cli("sweep", str(_file(tmp_path, SWEEP)), "--out", str(tmp_path / "rows.xlsx"))
    assert result.code == 2 and "unknown format ('.xlsx'); use a .csv or .json file name" in result.err
    assert not (tmp_path / "rows.xlsx").exists()


def test_shipped_example_sweep_is_valid() -> None:
    points = load_points(Path(__file__).parent.parent / "sweeps" / "generations.toml")
    assert len(points) == 2 * 5 * 3 * 2


def test_the_sweep_table_shows_expert_parallelism() -> None:
    """Qwen3-30B-A3B on 64 H100 picks EP16; the sweep's layout column read 'TP1 PP1 VP1 CP1 DP64 MBS1', as if dense."""
    from perfmodel.outputs.plan_report import _sweep_layout

    row = {f"parallelism.{k}": v for k, v in dict(tp=1, pp=1, vp=1, cp=1, dp=64, ep=16, etp=1, mbs=1, gbs=512).items()}
    assert _sweep_layout(row | {"parallelism.zero": 1}) == "TP1 PP1 VP1 CP1 DP64 EP16 MBS1 GBS512 ZeRO-1"
    dense = row | {"parallelism.ep": 1, "parallelism.etp": None, "parallelism.zero": 1}
    assert _sweep_layout(dense) == "TP1 PP1 VP1 CP1 DP64 MBS1 GBS512 ZeRO-1"


def test_the_sweep_table_prints_the_precision_as_predict_does(tmp_path: Path) -> None:
    """The sweep table's precision column read 'fp8' where predict, compare and the campaign tables print 'FP8'."""
    text = "[sweep]\nmodels = ['llama3.1-8b']\ngpus = ['h100-sxm']\nprecisions = ['fp8']\nn_gpus = [8]\n"
    out = run_cli("sweep", "-j", "1", str(_file(tmp_path, text))).out
    row = next(line for line in out.splitlines() if line.startswith("llama3.1-8b"))
    assert row.split()[2] == "FP8", row


def test_the_sweep_table_marks_a_point_beyond_the_measured_runs(tmp_path: Path) -> None:
    """compare, search and plan mark a row beyond the measured runs (*) with a footnote on how its interval widens;
    the sweep printed Llama 3.1 405B on 512 H100 at TP4 PP32 VP4 (a layout class never measured, 1.13x the best
    measured 405B run on Hopper: `explain`) without a mark, beside the rows in the calibration's reach."""
    text = "[sweep]\nmodels = ['llama3.1-405b']\ngpus = ['h100-sxm']\nprecisions = ['fp8']\nn_gpus = [512]\n"
    out = run_cli("sweep", "-j", "1", str(_file(tmp_path, text))).out
    rows = json.loads(run_cli("sweep", "-j", "1", str(_file(tmp_path, text)), "--format", "json").out)
    axes = rows[0]["evidence.beyond"]
    assert axes, rows[0]  # the point priced beyond the measured runs, as the record says
    row = next(line for line in out.splitlines() if line.startswith("llama3.1-405b"))
    assert " * " in row, row
    assert f"* beyond the measured runs the calibration saw ({axes.replace('; ', ', ')})" in out, out
