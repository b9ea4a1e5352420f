"""`perfmodel plot`: each kind draws the numbers it is given, with titles, units and legends, as PNG or SVG."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.scenario import load_scenario
from perfmodel.outputs import plot
from perfmodel.physics.step import BREAKDOWN
from perfmodel.planning.predict import predict

SYSTEMS = (("h100-sxm", "fp8"), ("b200", "fp8"))
COUNTS = (64, 128, 256)


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    """A figure drawn and not saved (`plot.save` closes its own) stays open in pyplot: close them after each test."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


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
    legend = _legend(eff_ax)
    assert [t.split(":")[0] for t in legend] == ["NVIDIA H100 SXM 80GB FP8", "NVIDIA B200 (HGX B200) FP8"]
    h100 = [r for r in records if r["accelerator"] == "h100-sxm"]
    line = time_ax.get_lines()[0]
    assert list(line.get_xdata()) == list(COUNTS)
    assert list(line.get_ydata()) == pytest.approx([r["time_to_train_days"] for r in h100])
    efficiency = eff_ax.get_lines()[0].get_ydata()
    assert efficiency[0] == pytest.approx(100)  # float rounding of t0 x n0 / (t x n)
    assert efficiency[2] == pytest.approx(100 * h100[2]["tokens_per_s_per_gpu"] / h100[0]["tokens_per_s_per_gpu"])
    assert "Llama 3.1 8B" in fig.get_suptitle()  # names, not ids
    assert legend[0].endswith(f"{efficiency[2]:.1f}% at 256")


def _labels_fit(fig: Any) -> None:
    """No two of the figure's texts overlap, and each lies inside the figure, as drawn (tick labels of ticks inside
    their axis's view: matplotlib keeps the others, undrawn)."""
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ticks, drawn = set(), []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks |= {id(tick.label1), id(tick.label2)}
                drawn += [tick.label1, tick.label2] if low <= tick.get_loc() <= high else []
    texts = drawn + [t for t in fig.findobj(Text) if id(t) not in ticks]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts if t.get_visible() and t.get_text().strip()]
    assert not [(a, b) for k, (a, one) in enumerate(boxes) for b, other in boxes[k + 1 :] if one.overlaps(other)]
    edge = fig.bbox
    assert not [t for t, b in boxes if b.x0 < edge.x0 or b.x1 > edge.x1 or b.y0 < edge.y0 or b.y1 > edge.y1]


@pytest.mark.parametrize("kind", ["scaling", "breakdown", "compare"])
def test_no_two_labels_overlap(records: list[dict[str, Any]], kind: str) -> None:
    """Two lines ending at the same efficiency (BF16 relabelled as a copy of FP8) once printed their end labels on
    top of each other; bars named by their accelerators' names, GB300's "NVIDIA GB300 (GB300 NVL72)" among them, must
    not print theirs into one another."""
    twins = records + [r | {"precision": "bf16"} for r in records if r["accelerator"] == "h100-sxm"]
    if kind != "scaling":
        twins = [r | {"accelerator": gpu} for r, gpu in zip(twins, ["gb300", "h100-sxm", "mi355x"] * 3, strict=False)]
    _labels_fit(plot.DRAW[kind](twins))


def test_the_validation_plots_labels_neither_overlap_nor_leave_the_figure() -> None:
    """Its legend beside the panel ran into the figure's title; names as long as GB200's must fit below it."""
    rows = [{"accelerator": gpu, "metric": "time_to_train_min", "measured": m, "predicted": m * 1.05}
            for gpu in ("b200", "gb200", "h100-sxm", "h200-sxm", "mi300x", "mi325x") for m in (2.0, 20.0)]  # fmt: skip
    fig = plot.validation({"rows": rows, "mape_pct": 5.0})
    _labels_fit(fig)
    assert "NVIDIA GB200 (GB200 NVL72)" in [t.get_text() for t in fig.legends[0].get_texts()]


def test_no_two_validation_groups_look_alike() -> None:
    """The bundled runs span 13 accelerators, three more than tab10's colours: each group's (colour, marker) differs,
    in the legend as on the panel."""
    gpus = ("a100-40gb", "a100-sxm-80gb", "b200", "b300", "gb200", "gb300", "h100-grand-teton", "h100-sxm", "h200-sxm",
            "h800", "mi300x", "mi325x", "mi355x")  # fmt: skip
    rows = [{"accelerator": gpu, "metric": "step_time_s", "measured": 10.0, "predicted": 10.5} for gpu in gpus]
    fig = plot.validation({"rows": rows, "mape_pct": 5.0})
    looks = {
        (tuple(c.get_facecolor()[0]), c.get_paths()[0].vertices.tobytes()) for c in fig.axes[0].collections[: len(gpus)]
    }
    assert len(looks) == len(gpus)


@pytest.mark.parametrize("command", ["compare", "search", "plan", "sweep", "export", "whatif", "sensitivity"])
def test_from_takes_every_json_the_tool_writes(tmp_path: Path, command: str) -> None:
    flags = {"compare": ["compare", "--gpu", "h100-sxm", "--gpu", "b200", "--model", "llama3.1-8b", "--gpus", "64"],
             "search": ["search", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "64"],
             "plan": ["plan", "--gpu", "h100-sxm", "--gpu", "b200", "--model", "llama3.1-8b", "--tokens", "1T",
                      "--deadline", "30d"],
             "sweep": ["sweep", str(Path(__file__).parents[1] / "sweeps" / "generations.toml")],
             "export": ["export", "compare", "--gpu", "h100-sxm", "--gpu", "b200", "--model", "llama3.1-8b", "--gpus",
                        "64", "--out", str(tmp_path / "e.json")],
             "whatif": ["whatif", "--model", "llama3.1-8b", "--gpus", "64", "--set", "nic_gbps=x2"],
             "sensitivity": ["sensitivity", "--model", "llama3.1-8b", "--gpus", "64"]}[command]  # fmt: skip
    result = run_cli(*flags, *([] if command == "export" else ["--format", "json"]))
    assert result.code == 0, result.err
    saved = tmp_path / "e.json"
    if command != "export":
        saved.write_text(result.out)
    kind = "scaling" if command == "sweep" else "breakdown"
    drawn = run_cli("plot", kind, "--from", str(saved), "--out", str(tmp_path / "p.png"))
    assert drawn.code == 0, drawn.err  # the sweep's two what-ifs too, each a line of its own


def test_a_sweeps_what_ifs_are_lines_of_their_own(records: list[dict[str, Any]]) -> None:
    """sweeps/generations.toml's points (datasheet and nic_gbps=x2 at each count) were refused as two results at
    one GPU count on a line: now a line per what-if, its system's colour in a style of its own; results at one count
    that differ otherwise are still refused."""
    swept = [r | {"whatif": whatif} for r in records for whatif in ("datasheet", "nic_gbps=x2")]
    fig = plot.scaling(swept)
    time_ax, eff_ax = fig.axes
    lines = {line.get_label(): line for line in time_ax.get_lines()}
    assert list(lines) == [f"{name}, {whatif}" for name in ("NVIDIA H100 SXM 80GB FP8", "NVIDIA B200 (HGX B200) FP8")
                           for whatif in ("datasheet", "nic_gbps=x2")]  # fmt: skip
    h100, h100_x2, b200, _ = lines.values()
    assert h100.get_color() == h100_x2.get_color() != b200.get_color()
    assert h100.get_linestyle() != h100_x2.get_linestyle() and h100.get_linestyle() == b200.get_linestyle()
    assert len(_legend(eff_ax)) == 4
    _labels_fit(fig)
    with pytest.raises(PerfmodelError, match="several at one count"):
        plot.scaling([*records, records[0] | {"tokens_per_s": 1.0}])


def test_a_sweeps_many_lines_keep_their_legend_off_the_panels(records: list[dict[str, Any]]) -> None:
    """20 lines (2 models x 5 systems x 2 what-ifs): a legend inside the efficiency panel covered its lines."""
    gpus = ("a100-40gb", "a100-sxm-80gb", "b200", "b300", "gb200", "gb300", "h100-sxm", "h200-sxm", "mi300x", "mi355x")
    many = [r | {"accelerator": gpu, "whatif": whatif} for r in records[: len(COUNTS)] for gpu in gpus
            for whatif in ("datasheet", "nic_gbps=x2")]  # fmt: skip
    fig = plot.scaling(many)
    eff_ax = fig.axes[1]
    _labels_fit(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert eff_ax.get_legend().get_window_extent(renderer).x0 >= eff_ax.get_window_extent(renderer).x1


@pytest.mark.parametrize(
    ("command", "advice"),
    [
        (["validate", "--only", "Training v5.0"], "validate's JSON (or a protocol's): draw it with `perfmodel plot"),
        (["explain", "--model", "llama3.1-8b", "--gpus", "8"], "explain's JSON (one prediction's formulas): plot"),
        (["predict", "campaign-llama3.1-405b"], "a campaign's totals have no one step to draw"),
    ],
)  # fmt: skip
def test_from_json_without_predictions_says_what_to_do(tmp_path: Path, command: list[str], advice: str) -> None:
    saved = tmp_path / "saved.json"
    saved.write_text(run_cli(*command, "--format", "json").out)
    drawn = run_cli("plot", "breakdown", "--from", str(saved), "--out", str(tmp_path / "p.png"))
    assert drawn.code == 2 and advice in drawn.err


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


def test_a_mixture_of_experts_breakdown_stacks_its_expert_all_to_all_too() -> None:
    """A MoE record's step time also holds its exposed expert all-to-all (breakdown.ep_comm_exposed_s): left out,
    DeepSeek-V3 on 1,024 H100 drew 4.52 s for a 4.86 s step."""
    record = predict(
        load_scenario(None, {"model": "mixtral-8x7b", "gpu": "h100-sxm", "precision": "bf16", "n_gpus": 64,
                             "tokens": 1e12, "parallelism.gbs": 256, "parallelism.ep": 8, "parallelism.tp": 1,
                             "parallelism.pp": 1})
    ).to_dict()  # fmt: skip
    assert record["breakdown"]["ep_comm_exposed_s"] > 0
    assert list(plot.PART_LABELS) == [*BREAKDOWN, "ep_comm_exposed_s"] == list(record["breakdown"])
    ax = plot.breakdown([record]).axes[0]
    assert max(p.get_y() + p.get_height() for p in ax.patches) == pytest.approx(record["step_time_s"], rel=1e-9)
    assert "EP all-to-all (exposed)" in _legend(ax)


def test_compare_shows_time_cost_and_speedup(records: list[dict[str, Any]]) -> None:
    pair = [r for r in records if r["n_gpus"] == 128]
    fig = plot.compare(pair)
    time_ax, cost_ax = fig.axes
    assert [p.get_height() for p in time_ax.patches] == pytest.approx([r["time_to_train_days"] for r in pair])
    assert [p.get_height() for p in cost_ax.patches] == pytest.approx([r["cost_usd"] / 1e6 for r in pair])
    speedup = pair[1]["tokens_per_s"] / pair[0]["tokens_per_s"]
    assert f"{speedup:.2f}x" in " ".join(t.get_text() for t in time_ax.texts)
    assert cost_ax.get_ylabel() == "cost (million USD)"


def _cost_labels(fig: Any) -> list[tuple[Any, Any, Any]]:
    """Each cost bar's extent, its label's and the label's colour, as drawn."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    cost_ax = fig.axes[1]
    return [(bar.get_window_extent(renderer), t.get_window_extent(renderer), t.get_color())
            for bar, t in zip(cost_ax.patches, cost_ax.texts, strict=True)]  # fmt: skip


def test_each_cost_label_lies_on_its_bar(records: list[dict[str, Any]]) -> None:
    """The white price labels were wider than their bars: nine bars at $10.50 and $13.13 (`perfmodel compare
    --model llama3.1-405b --gpu h100-sxm:fp8 --gpu gb200:fp8 --gpu gb300:nvfp4 --gpus 512,1024,2048`) printed
    '$10.50/GPU-h lis' and '13.13/GPU-h es', their ends white on the white between the bars."""
    prices = [(6.16, "list"), (10.50, "list"), (13.13, "estimate")]
    nine = [r | {"usd_per_gpu_hour": price, "price_basis": basis, "accelerator": gpu}
            for gpu, (price, basis) in zip(("h100-sxm", "gb200", "gb300"), prices, strict=True)
            for r in records[:3]]  # fmt: skip
    drawn = _cost_labels(plot.compare(nine))
    assert len(drawn) == 9
    assert not [k for k, (bar, label, _) in enumerate(drawn)
                if label.x0 < bar.x0 or label.x1 > bar.x1 or label.y1 > bar.y1]  # fmt: skip


def test_a_cost_below_a_million_reads_in_thousands(records: list[dict[str, Any]]) -> None:
    """8B on 1T tokens on 64 H100 and 64 B200 cost $110k and $76k: both bars read '$0.1M'."""
    pair = [records[0], records[3]]
    shown = [t.get_text().splitlines()[0] for t in plot.compare(pair).axes[1].texts]
    assert shown == [f"${r['cost_usd'] / 1e3:,.0f}k" for r in pair] and shown[0] != shown[1]
    assert all(r["cost_usd"] < 1e6 for r in pair)


@pytest.mark.parametrize(("usd_m", "label"), [(0.9996, "$1.0M"), (0.9994, "$999k"), (1.04, "$1.0M")])
def test_a_cost_near_a_million_reads_once(usd_m: float, label: str) -> None:
    """$999,600 rounds to a thousand thousands: it reads '$1.0M', not '$1,000k'."""
    assert plot._millions(usd_m) == label


def test_a_label_taller_than_its_bar_goes_above_it_in_black(records: list[dict[str, Any]]) -> None:
    """A cheap row's white label ran over its short bar's top ($0.2M at $0.80/GPU-h beside $1.0M at $13.13)."""
    scale = 0.25 / records[0]["usd_per_gpu_hour"]
    costs = {k: records[0][k] * scale for k in ("cost_usd", "cost_usd_at_min_price", "cost_usd_at_max_price")}
    cheap = records[0] | {"usd_per_gpu_hour": 0.25, "price_basis": "quoted", **costs}
    fig = plot.compare([records[3], cheap])
    (bar, label, colour), (short, lifted, black) = _cost_labels(fig)
    assert bar.y0 < label.y0 and label.y1 < bar.y1 and colour == "white"
    assert lifted.y0 > short.y1 and black == "black"
    assert lifted.y1 < fig.axes[1].get_window_extent().y1  # the axis grew to hold it
    _labels_fit(fig)


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
    assert legend[:2] == ["NVIDIA B200 (HGX B200)", "NVIDIA H100 SXM 80GB"] and "predicted = measured" in legend


@pytest.mark.parametrize("metrics", [3, 4])
def test_validation_panels_go_two_a_row(metrics: int) -> None:
    """validate's four metrics side by side drew a figure 25.5 in wide: on a page or slide, its type a quarter size.
    Two a row; three metrics leave no empty fourth panel."""
    names = ["tokens_per_s_per_gpu", "step_time_s", "time_to_train_min", "gpu_hours"][:metrics]
    rows = [{"accelerator": gpu, "metric": metric, "measured": m, "predicted": m * 1.05}
            for metric in names for gpu in ("gb200", "h100-grand-teton", "mi355x") for m in (2.0, 20.0)]  # fmt: skip
    fig = plot.validation({"rows": rows, "mape_pct": 5.0})
    assert len(fig.axes) == metrics and fig.get_figwidth() <= 14
    columns = {round(ax.get_position().x0, 3) for ax in fig.axes}
    assert len(columns) == 2 and len({round(ax.get_position().y0, 3) for ax in fig.axes}) == 2
    assert [ax.get_title().split(":")[0] for ax in fig.axes] == [plot.METRIC_LABELS[m] for m in names]
    _labels_fit(fig)


def test_a_plot_at_one_size_names_its_gpu_count(records: list[dict[str, Any]]) -> None:
    """A breakdown or comparison of results at one size named no GPU count anywhere (its bars name one only where
    they differ): "Comparison: Llama 3.1 70B, 15T tokens" for 168.5 days on 512 H100."""
    one_size = [r for r in records if r["n_gpus"] == COUNTS[0]]
    for kind in ("breakdown", "compare"):
        assert f"Llama 3.1 8B on {COUNTS[0]:,} GPUs, 1.00T tokens" in plot.DRAW[kind](one_size).get_suptitle(), kind
    assert " GPUs" not in plot.DRAW["compare"](records).get_suptitle()  # the bars name each count
    assert " GPUs" not in plot.scaling(records).get_suptitle()  # the x-axis does


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
