"""`perfmodel plot`: each kind draws the numbers it is given, with titles, units and legends, as PNG or SVG."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from perfmodel.inputs.scenario import load_scenario
from perfmodel.outputs import plot
from perfmodel.planning.predict import predict

SYSTEMS = (("h100-sxm", "fp8"), ("b200", "fp8"))
COUNTS = (64, 128, 256)


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    """The same 8B workload on two systems at three sizes, predicted by perfmodel."""
    return [
        predict(
            load_scenario(None, {"model": "llama3.1-8b", "gpu": gpu, "precision": precision, "n_gpus": n,
                                 "tokens": 1e12, "parallelism.gbs": 512})
        ).to_dict()
        for gpu, precision in SYSTEMS
        for n in COUNTS
    ]  # fmt: skip


def _legend(ax: Any) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_scaling_draws_time_and_efficiency_per_system(records: list[dict[str, Any]]) -> None:
    fig = plot.scaling(records)
    time_ax, eff_ax = fig.axes
    assert time_ax.get_ylabel() == "time to train (days)" and time_ax.get_xlabel() == "GPUs"
    assert eff_ax.get_ylabel() == "scaling efficiency (%)"
    assert _legend(eff_ax) == ["h100-sxm fp8", "b200 fp8"]
    h100 = [r for r in records if r["accelerator"] == "h100-sxm"]
    line = time_ax.get_lines()[0]
    assert list(line.get_xdata()) == list(COUNTS)
    assert list(line.get_ydata()) == pytest.approx([r["time_to_train_days"] for r in h100])
    efficiency = eff_ax.get_lines()[0].get_ydata()
    assert efficiency[0] == pytest.approx(100)  # float rounding of t0 x n0 / (t x n)
    assert efficiency[2] == pytest.approx(100 * h100[2]["tokens_per_s_per_gpu"] / h100[0]["tokens_per_s_per_gpu"])
    assert "llama3.1-8b" in fig.get_suptitle()


def test_breakdown_stacks_the_parts_to_the_step_time(records: list[dict[str, Any]]) -> None:
    fig = plot.breakdown(records[:3])
    ax = fig.axes[0]
    assert ax.get_ylabel() == "step time (s)"
    tops = {}
    for patch in ax.patches:
        x = round(patch.get_x() + patch.get_width() / 2, 6)
        tops[x] = max(tops.get(x, 0.0), patch.get_y() + patch.get_height())
    assert sorted(tops.values()) == pytest.approx(sorted(r["step_time_s"] for r in records[:3]), rel=1e-9)
    assert "compute" in _legend(ax)


def test_compare_shows_time_cost_and_speedup(records: list[dict[str, Any]]) -> None:
    pair = [r for r in records if r["n_gpus"] == 128]
    fig = plot.compare(pair)
    time_ax, cost_ax = fig.axes
    assert [p.get_height() for p in time_ax.patches] == pytest.approx([r["time_to_train_days"] for r in pair])
    assert [p.get_height() for p in cost_ax.patches] == pytest.approx([r["cost_usd"] / 1e6 for r in pair])
    speedup = pair[1]["tokens_per_s"] / pair[0]["tokens_per_s"]
    assert f"{speedup:.2f}x" in " ".join(t.get_text() for t in time_ax.texts)
    assert cost_ax.get_ylabel() == "cost (million USD)"


@pytest.mark.parametrize(("cost", "basis"), [({}, "at on-demand list price"), ({"cost.mode": "buy"}, "of owning")])
def test_the_cost_panel_names_its_price_and_fits_in_the_figure(cost: dict[str, str], basis: str) -> None:
    """The cost title said 'on-demand' for the cost of owning too, and ran past the image's right edge."""
    pair = [
        predict(load_scenario(None, {"model": "llama3.1-8b", "gpu": gpu, "precision": "fp8", "n_gpus": 64,
                                     "tokens": 1e12, **cost})).to_dict()
        for gpu in ("h100-sxm", "b200")
    ]  # fmt: skip
    fig = plot.compare(pair)
    fig.canvas.draw()
    title = fig.axes[1].title
    assert title.get_text().startswith(f"Cost {basis}\n")
    assert title.get_window_extent().x1 <= fig.bbox.x1


def test_validation_plots_one_panel_per_metric() -> None:
    report = {
        "rows": [  # synthetic rows in validate's JSON shape; the plot must place each point where the row says
            {"accelerator": "h100-sxm", "metric": "tokens_per_s_per_gpu", "measured": 1602.0, "predicted": 1572.0},
            {"accelerator": "b200", "metric": "tokens_per_s_per_gpu", "measured": 300.0, "predicted": 330.0},
            {"accelerator": "h100-sxm", "metric": "step_time_s", "measured": 54.9, "predicted": 53.8},
        ],
        "mape_pct": 4.6,
    }
    fig = plot.validation(report)
    throughput, step = fig.axes
    assert "MAPE 4.6% overall" in fig.get_suptitle() and "3 runs" in fig.get_suptitle()
    assert throughput.get_xlabel() == "measured tokens/s per GPU" and step.get_ylabel() == "predicted step time (s)"
    mape = (abs(1572 / 1602 - 1) + abs(330 / 300 - 1)) / 2 * 100
    assert f"2 runs, MAPE {mape:.1f}%" in throughput.get_title() and "1 runs" in step.get_title()
    points = [tuple(xy) for c in throughput.collections for xy in c.get_offsets()]
    assert (1602.0, 1572.0) in points and (300.0, 330.0) in points and (54.9, 53.8) not in points
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[:2] == ["b200", "h100-sxm"] and "predicted = measured" in legend


def test_scaling_efficiency_axis_starts_at_zero(records: list[dict[str, Any]]) -> None:
    """A 1.4% dip on a 98.6-100% axis reads like a cliff."""
    low, high = plot.scaling(records).axes[1].get_ylim()
    assert low == 0 and high >= 100


def test_without_matplotlib_a_plot_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    result = run_cli("plot", "breakdown", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8",
                     "--out", "never.png")  # fmt: skip
    assert result.code == 2 and result.err == "error: plots need matplotlib: pip install 'perfmodel[plot]'\n"


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_cli_writes_images(tmp_path: Path, records: list[dict[str, Any]], suffix: str) -> None:
    source = tmp_path / "compare.json"
    source.write_text(json.dumps(records))
    for kind in ("scaling", "breakdown", "compare"):
        out = tmp_path / f"{kind}{suffix}"
        result = run_cli("plot", kind, "--from", str(source), "--out", str(out))
        assert result.code == 0, result.err
        content = out.read_bytes()
        assert content.startswith({".png": b"\x89PNG", ".svg": b"<?xml", ".pdf": b"%PDF"}[suffix])
    direct = run_cli("plot", "breakdown", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8",
                     "--out", str(tmp_path / f"one{suffix}"))  # fmt: skip
    assert direct.code == 0, direct.err


def test_bad_input(tmp_path: Path) -> None:
    def error(*args: str) -> str:
        result = run_cli("plot", *args)
        assert result.code == 2 and result.err.count("\n") == 1, result.err
        return result.err

    assert "unknown image format ('.jpg')" in error("breakdown", "--out", str(tmp_path / "a.jpg"))
    (tmp_path / "exists.png").write_bytes(b"keep")
    assert "pass --force" in error("breakdown", "--out", str(tmp_path / "exists.png"))
    assert (tmp_path / "exists.png").read_bytes() == b"keep"
    (tmp_path / "bad.json").write_text("{not json")
    assert "not valid JSON" in error("scaling", "--from", str(tmp_path / "bad.json"), "--out", str(tmp_path / "s.png"))
    one = predict(load_scenario(None, {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8})).to_dict()
    (tmp_path / "one.json").write_text(json.dumps(one))
    assert "at least two GPU counts" in error("scaling", "--from", str(tmp_path / "one.json"), "--out",
                                              str(tmp_path / "s.png"))  # fmt: skip
    assert "needs --from" in error("validation", "--out", str(tmp_path / "v.png"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "exists.png", "one.json"]
