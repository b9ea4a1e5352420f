"""Layouts sweeps ([sweep.layouts]): array prices against single predictions, limits, errors, chunks on Ray."""

import json
import os
import random
from pathlib import Path

import pytest
from conftest import run_cli

from perfmodel.errors import PerfmodelError
from perfmodel.outputs import report
from perfmodel.planning import layout_sweep
from perfmodel.planning.sweep import MAX_POINTS, Point, load, load_points, run_point

SWEEP = """
[sweep]
models = ["llama3.1-8b", "mixtral-8x7b"]
gpus = ["h100-sxm", "gb200-nvl72"]
precisions = ["fp8"]
n_gpus = [16]
whatifs = [{}, { nic_gbps = "x2" }]
[sweep.set]
tokens = 1e12
parallelism = { gbs = 64, seq_len = 4096 }
[sweep.layouts]
tp = [1, 2, 4, 8]
pp = [1, 2, 4]
cp = [1, 2]
vp = [1, 2]
ep = [1, 8]
mbs = [1, 2, 4]
recompute = ["none", "selective", "full"]
zero = [0, 1, 3]
"""
NOT_COMPARED = {"whatif", "error", "price_source", "cost_mode"}


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "layouts.toml"
    path.write_text(text)
    return path


def _rows(sweep: layout_sweep.LayoutSweep, **options: object) -> list[dict[str, object]]:
    from perfmodel.cli.sweep import _rows as rows_of

    return [row for columns in layout_sweep.run(sweep, **options) for row in rows_of(columns)]  # type: ignore[arg-type]


def _single(sweep: layout_sweep.LayoutSweep, row: int) -> dict[str, object]:
    """The row of a points sweep's point that gives the same layout explicitly: one `predict`, no arrays."""
    point = sweep.points[row // sweep.layouts]
    chosen = layout_sweep._axis_columns(
        layout_sweep.Chunk(point, sweep.axes, row % sweep.layouts, row % sweep.layouts + 1)
    )
    from perfmodel.physics.parallel import RECOMPUTE_MODES

    given = {
        f"parallelism.{k}": (RECOMPUTE_MODES[int(v[0])] if k == "recompute" else int(v[0])) for k, v in chosen.items()
    }
    single = Point(point.base, {**point.overrides, **given}, point.gpu, point.system, point.settings, point.origins)
    return run_point(single)


def test_array_prices_agree_with_single_predictions(tmp_path: Path) -> None:
    sweep = load(_file(tmp_path, SWEEP))
    assert isinstance(sweep, layout_sweep.LayoutSweep) and sweep.size == 8 * 4 * 3 * 2 * 2 * 2 * 3 * 3 * 3
    rows = _rows(sweep, size=1000)
    assert len(rows) == sweep.size
    valid = [i for i, r in enumerate(rows) if not r["error"] or "does not fit" in str(r["error"])]
    invalid = [i for i, r in enumerate(rows) if r["error"] and "invalid layout" in str(r["error"])]
    fits = [i for i in valid if rows[i]["fits_in_memory"]]
    assert len(fits) > 100 and len(invalid) > 100 and len(valid) > len(fits)  # all three kinds are drawn from
    assert {r["model"] for r in (rows[i] for i in fits)} == {"llama3.1-8b", "mixtral-8x7b"}
    draw = random.Random(15)  # noqa: S311 (reproducible draws, not cryptography)
    for i in draw.sample(fits, 25) + draw.sample(valid, 10):
        single, array = _single(sweep, i), rows[i]
        assert single["error"] is None
        for key, value in array.items():
            if key in NOT_COMPARED or value is None:
                assert key in NOT_COMPARED or single[key] is None, key
            elif isinstance(value, float):
                assert value == pytest.approx(single[key], rel=1e-12, abs=0), key
            else:
                assert value == single[key], key
        assert ("does not fit" in str(array["error"])) == (not single["fits_in_memory"])
    for i in draw.sample(invalid, 10):
        assert rows[i]["error"] == _single(sweep, i)["error"]  # the rules broken, in predict's words
        assert rows[i]["step_time_s"] is None and rows[i]["parallelism.tp"] is not None


def test_streamed_csv_and_json_are_the_whole_table_written_at_once(tmp_path: Path) -> None:
    from perfmodel.cli.sweep import _texts

    smaller = (
        SWEEP.replace('"mixtral-8x7b"', "").replace(', { nic_gbps = "x2" }', "").replace("cp = [1, 2]", "cp = [1]")
    )
    sweep = load(_file(tmp_path, smaller.replace("zero = [0, 1, 3]", "zero = [1]")))
    rows = _rows(sweep)
    for fmt, whole in (("csv", report.to_csv(rows)), ("json", report.to_json(rows) + "\n")):
        streamed = "".join(text for text, _ in _texts(layout_sweep.run(sweep, size=97), fmt))
        assert streamed == whole
    out = tmp_path / "rows.json"
    result = run_cli("sweep", str(sweep.path), "--out", str(out), "--jobs", "1")
    assert result.code == 0 and f"wrote {sweep.size:,} rows" in result.err
    assert json.loads(out.read_text()) == json.loads(report.to_json(rows))


def test_chunks_on_ray_and_processes_equal_the_in_process_result(tmp_path: Path) -> None:
    if not os.environ.get("CI"):  # CI installs the ray extra, so there a missing Ray fails the test
        pytest.importorskip("ray")
    sweep = load(_file(tmp_path, SWEEP.replace("tp = [1, 2, 4, 8]", "tp = [2]").replace('"gb200-nvl72"', "")))
    here = list(layout_sweep.run(sweep, size=300))
    assert len(sweep.chunks(300)) > 2
    assert list(layout_sweep.run(sweep, executor="ray", size=300)) == here
    assert list(layout_sweep.run(sweep, jobs=2, size=300)) == here


def test_limits(tmp_path: Path) -> None:
    million = "[sweep]\n[sweep.layouts]\ntp = [{}]\npp = [1]\ncp = [1]\nvp = [1]\nmbs = [1]\n"
    million += "recompute = ['none']\nzero = [0]\n"
    at_limit = load(
        _file(
            tmp_path, million.format(", ".join(["1"] * 1000)).replace("pp = [1]", f"pp = [{', '.join(['1'] * 1000)}]")
        )
    )
    assert at_limit.size == layout_sweep.MAX_LAYOUT_POINTS
    over = million.format(", ".join(["1"] * 1000)).replace("pp = [1]", f"pp = [{', '.join(['1'] * 1001)}]")
    with pytest.raises(PerfmodelError, match=r"field 'sweep.layouts': 1,001,000 points .* at most 1,000,000 per sweep"):
        load(_file(tmp_path, over))
    points = "[sweep]\nn_gpus = [{}]\n".format(", ".join(str(8 * (i + 1)) for i in range(MAX_POINTS + 1)))
    with pytest.raises(
        PerfmodelError, match=r"field 'sweep': 10,001 points .* at most 10,000 per sweep file \(or 1,000,000"
    ):
        load(_file(tmp_path, points))
    with pytest.raises(PerfmodelError, match=r"field 'sweep': 10,001 points .* to cross with \[sweep.layouts\]"):
        load(_file(tmp_path, points + million.removeprefix("[sweep]\n").format("1")))
    result = run_cli("sweep", str(_file(tmp_path, million.format(", ".join(["1"] * 10_001)))))
    assert result.code == 2 and "10,001 points are too many for a table (at most 10,000)" in result.err


@pytest.mark.parametrize(
    ("layouts", "message"),
    [
        ("tq = [1]", "field 'sweep.layouts.tq': unknown layout dimension; allowed: tp, pp, cp, dp, vp"),
        ("tp = 2", "field 'sweep.layouts.tp' must be a non-empty list"),
        ("tp = [0, 2]", "field 'sweep.layouts.tp': each value must be whole numbers >= 1 (got [0, 2])"),
        ("zero = [4]", "field 'sweep.layouts.zero': each value must be ZeRO stages 0, 1, 2 or 3"),
        ("recompute = ['most']", "field 'sweep.layouts.recompute': each value must be one of none, selective, full"),
        ("tp = [1, 2]", "field 'sweep.layouts': a layouts sweep prices given layouts; give pp (a list here, or"),
    ],
)
def test_bad_layout_tables_fail_with_one_line(tmp_path: Path, layouts: str, message: str) -> None:
    (tmp_path / "open.toml").write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\n')  # layout left open
    path = _file(tmp_path, f"[sweep]\nbase = 'open.toml'\n[sweep.layouts]\n{layouts}\n")
    result = run_cli("sweep", str(path))
    assert result.code == 2 and message in result.err and str(path) in result.err and result.err.count("\n") == 1


def test_benchmarks_and_points_only_commands_refuse_a_layouts_sweep(tmp_path: Path) -> None:
    given = "tp = [8]\npp = [1]\ncp = [1]\nvp = [1]\nmbs = [1]\nrecompute = ['none']\nzero = [1]\n"
    path = _file(tmp_path, f"[sweep]\n[sweep.set]\nbenchmark = 'mlperf-llama31-8b'\n[sweep.layouts]\n{given}")
    with pytest.raises(PerfmodelError, match="prices token budgets, not MLPerf benchmarks"):
        load(path)
    with pytest.raises(PerfmodelError, match="this command takes a sweep of points"):
        load_points(_file(tmp_path, f"[sweep]\n[sweep.layouts]\n{given}"))


def test_shipped_layouts_example_is_valid() -> None:
    sweep = load(Path(__file__).parent.parent / "sweeps" / "70b-layouts.toml")
    assert isinstance(sweep, layout_sweep.LayoutSweep) and sweep.size == 2 * 4 * 5 * 2 * 4 * 2 * 3 * 4


def test_the_table_names_every_rows_layout_failed_or_not(tmp_path: Path) -> None:
    """A layouts sweep's rows differ only in their layout: the table shows it on rows that break a rule or do not
    fit too, recompute included, so a reader can tell which layout each error belongs to."""
    text = """
[sweep]
models = ["llama3.1-70b"]
gpus = ["h100-sxm"]
n_gpus = [64]
[sweep.set]
parallelism = { gbs = 64, seq_len = 8192 }
[sweep.layouts]
tp = [1, 8]
pp = [8]
cp = [1]
vp = [1]
mbs = [1]
zero = [1]
recompute = ["none", "full"]
"""
    result = run_cli("sweep", str(_file(tmp_path, text)))
    assert result.code == 0, result.err
    rows = [line for line in result.out.splitlines() if line.startswith("llama3.1-70b")]
    assert len(rows) == 4
    assert "TP1 PP8 VP1 CP1 DP8 MBS1 GBS64 ZeRO-1" in rows[0] and "does not fit in memory" in rows[0]
    assert "TP1 PP8 VP1 CP1 DP8 MBS1 GBS64 ZeRO-1 recompute-full" in rows[1]
    assert "TP8 PP8 VP1 CP1 DP1 MBS1 GBS64 ZeRO-1 recompute-full" in rows[3] and "does not fit" not in rows[3]
