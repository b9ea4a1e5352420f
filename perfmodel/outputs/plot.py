"""Plots for planning decks: scaling curves, step-time breakdowns, system comparisons, predicted vs measured.

Every plot takes records in perfmodel's JSON contract (the objects `predict`/`compare --format json` print, or
`validate --format json`'s {rows, mape_pct}), so it can be drawn from a live run or from a saved JSON file alike.
matplotlib is an optional extra: pip install 'perfmodel[plot]'.
"""

from __future__ import annotations

import io
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.environment import source_date
from perfmodel.outputs.atomic import check_output as check_suffix_and_target
from perfmodel.outputs.atomic import write_atomic
from perfmodel.outputs.record import PRICE_MARKS, price_basis
from perfmodel.planning.views import count_text

KINDS = ("scaling", "breakdown", "compare", "validation")
FORMATS = (".png", ".svg", ".pdf")
PART_LABELS = {
    "compute_s": "compute",
    "tp_comm_exposed_s": "TP comm (exposed)",
    "cp_comm_exposed_s": "CP comm (exposed)",
    "pp_bubble_s": "pipeline bubble",
    "pp_comm_exposed_s": "PP sends (exposed)",
    "dp_comm_exposed_s": "DP comm (exposed)",
    "optimizer_s": "optimizer",
    "other_s": "other",
    "ep_comm_exposed_s": "EP all-to-all (exposed)",
}
"""The step-time parts a record's breakdown sums to (physics.step's BREAKDOWN, then a mixture-of-experts model's
exposed expert all-to-all, which a dense model's record lacks), as the breakdown plot's legend names them."""
Record = Mapping[str, Any]


NOT_PLOTTED = (
    (("rows", "mape_pct"), "validate's JSON (or a protocol's): draw it with `perfmodel plot validation`"),
    (("step_formula",), "explain's JSON (one prediction's formulas): plot the prediction from predict's JSON"),
    (("runs", "ratios"), "ratios' JSON (published ratios against predicted ones): it holds no prediction records"),
)
"""JSON perfmodel writes that holds no predictions to draw, by keys it has, with what to do instead."""
ACCEPTED = (
    "the JSON of predict, compare, search, plan, sweep or sensitivity (--format json; sensitivity: its baseline), or "
    "of export predict|compare|search|sweep (FILE.json)"
)


def prediction_records(data: Any, source: Path | None) -> list[dict[str, Any]]:
    """Prediction records from any JSON perfmodel writes of predictions (ACCEPTED), each checked to have the fields
    the plots read, with the right types; one line naming the result and the field otherwise, and for JSON that holds
    no predictions (NOT_PLOTTED, a campaign's) what to do instead."""
    if isinstance(data, dict):
        advice = next((text for keys, text in NOT_PLOTTED if set(keys) <= set(data)), None)
        if advice:
            raise PerfmodelError(f"--from {source}: this is {advice}")
        data = records_of(data, source)
    if not isinstance(data, list) or not data or not all(isinstance(r, dict) for r in data):
        raise PerfmodelError(f"--from {source}: expected {ACCEPTED}")
    if any("phases" in r for r in data):
        raise PerfmodelError(
            f"--from {source}: a campaign's totals have no one step to draw: plot a phase's scenario, or compare "
            "campaigns with `perfmodel compare`"
        )
    data = [nested_record(r) for r in data]
    for index, record in enumerate(data, 1):
        _checked(_PredictionRecord, record, f"--from {source}: result {index}")
    return data


def records_of(document: dict[str, Any], source: Path | None) -> Any:
    """The predictions a JSON object holds: a plan's feasible candidates' plans, sensitivity's baseline, a search's
    results, an export's rows (dotted columns: `nested_record`), or the object itself (predict's)."""
    if "candidates" in document:
        plans = [c["plan"] for c in document["candidates"] if isinstance(c, dict) and c.get("plan")]
        if not plans:
            raise PerfmodelError(f"--from {source}: this plan has no feasible candidate")
        return plans
    if "baseline" in document:
        return [document["baseline"]]
    return document.get("results", document.get("rows", [document]))


def nested_record(record: dict[str, Any]) -> dict[str, Any]:
    """A flat record's dotted columns ('breakdown.compute_s', as export and sweep write them) nested again; one whose
    keys clash ('a' and 'a.b') as it is, for its check to name the field."""
    from perfmodel.planning.campaign import nested

    try:
        return nested(record)
    except (AttributeError, TypeError):
        return record


def validation_report(data: Any, source: Path | None) -> dict[str, Any]:
    """The JSON of `perfmodel validate --format json`, checked to have rows with positive measured and predicted
    values; one line naming the row and the field otherwise."""
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise PerfmodelError(
            f"--from {source}: expected the JSON of perfmodel validate --format json ({{rows: [...]}})"
        )
    _checked(_ValidationReport, data, f"--from {source}")
    return data


def _checked(model: type[BaseModel], record: dict[str, Any], where: str) -> None:
    from pydantic import ValidationError

    from perfmodel.inputs.scenario_check import describe_error

    try:
        model.model_validate(record)
    except ValidationError as exc:
        raise PerfmodelError(f"{where}: {describe_error(exc, model)}") from None


MAX_VALUE = 1e30
"""Above any time, throughput or cost a plot can mean (and far below where arithmetic on it overflows)."""
Positive = Annotated[float, Field(gt=0, le=MAX_VALUE, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, le=MAX_VALUE, allow_inf_nan=False)]


class _Read(BaseModel):
    """What a plot reads from a record; other fields are kept as they are."""

    model_config = ConfigDict(extra="allow", strict=True, defer_build=True)


class _Breakdown(_Read):
    compute_s: NonNegative
    tp_comm_exposed_s: NonNegative
    cp_comm_exposed_s: NonNegative
    pp_bubble_s: NonNegative
    pp_comm_exposed_s: NonNegative
    dp_comm_exposed_s: NonNegative
    optimizer_s: NonNegative
    other_s: NonNegative
    ep_comm_exposed_s: NonNegative = 0.0


class _PredictionRecord(_Read):
    model: str
    accelerator: str
    precision: str
    n_gpus: Annotated[int, Field(ge=1)]
    tokens_per_s: Positive
    tokens_per_s_per_gpu: Positive
    breakdown: _Breakdown
    tokens_to_train: Positive | None = None
    time_to_train_days: Positive | None = None
    cost_usd: NonNegative | None = None
    cost_usd_at_min_price: NonNegative | None = None
    cost_usd_at_max_price: NonNegative | None = None


class _ValidationRow(_Read):
    measured: Positive
    predicted: Positive


class _ValidationReport(_Read):
    rows: Annotated[list[_ValidationRow], Field(min_length=1)]
    mape_pct: NonNegative | None = None


def check_output(path: Path, force: bool, reads: Iterable[str | Path | None] = ()) -> str:
    """The image format of `path` once the target is known to be writable and none of the files `reads` names;
    one-line error otherwise."""
    return check_suffix_and_target(path, force, FORMATS, "image format", reads)


def series_label(r: Record) -> str:
    """One accelerator and precision by name: 'NVIDIA H100 SXM 80GB FP8' (the id where the catalogue lacks it)."""
    return f"{accelerator_name(r['accelerator'])} {r['precision'].upper()}"


def accelerator_name(accelerator: str) -> str:
    from perfmodel.inputs.hardware import get_accelerator

    try:
        return get_accelerator(accelerator).name
    except PerfmodelError:  # a file of the user's not loaded now (--from a saved result)
        return accelerator


def model_name(model: str) -> str:
    from perfmodel.inputs.models import get_model

    try:
        return get_model(model).name
    except PerfmodelError:  # the user's own model
        return model


BAR_LABEL_CHARS = 14
"""Characters per line of a bar's label: a bar's slot (BAR_SLOT_IN) holds about this many at the tick font size."""
BAR_SLOT_IN = 1.6
"""Inches of figure width per bar of a breakdown (per bar and panel of a compare plot: 2 x 1.2)."""
TITLE_CHAR_IN = 0.1
"""Inches of figure width per character of a 12-point title, with room to spare: a breakdown of one or two bars is
narrower than its title, which the figure then cut at both ends."""


def bar_label(r: Record, many_sizes: bool) -> str:
    """The accelerator's name, wrapped to the bar's width, over its precision (and GPU count): 'NVIDIA H100\nSXM
    80GB\nFP8'."""
    import textwrap

    lines = [*textwrap.wrap(accelerator_name(r["accelerator"]), BAR_LABEL_CHARS), r["precision"].upper()]
    return "\n".join(lines + ([f"{r['n_gpus']:,} GPUs"] if many_sizes else []))


PLAIN_TEXT: dict[Any, Any] = {"text.parse_math": False, "text.usetex": False}
"""Labels are plain text: a `$` in a model id or a price, or TeX in a name, is drawn as typed, never parsed as
mathtext (an unknown macro stops the plot) or passed to LaTeX, whatever a user's matplotlibrc says."""


def _figure(width: float = 10.0, height: float = 5.5, columns: int = 1, rows: int = 1) -> tuple[Any, Any]:
    # matplotlib logs a warning to stderr, at import, when its config folder cannot be made (HOME a file, a
    # read-only home): it falls back to a temporary one, so the warning says nothing a perfmodel user can act on.
    logging.getLogger("matplotlib").setLevel(logging.ERROR)
    try:
        import matplotlib
    except ImportError:
        raise PerfmodelError("plots need matplotlib: pip install 'perfmodel[plot]'") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(PLAIN_TEXT)

    fig, axes = plt.subplots(rows, columns, figsize=(width, height), layout="constrained", squeeze=rows == 1)
    return fig, axes


def _model_title(records: Sequence[Record]) -> str:
    """The models, the GPU count where every result has the one (bars name a count only where they differ: a
    breakdown or comparison at one size said nowhere how many GPUs its times were for) and the token budget."""
    models = sorted({model_name(r["model"]) for r in records})
    counts = {r["n_gpus"] for r in records}
    size = f" on {next(iter(counts)):,} GPUs" if len(counts) == 1 else ""
    tokens = {r.get("tokens_to_train") for r in records}
    only = next(iter(tokens)) if len(tokens) == 1 else None
    budget = f", {count_text(only)} tokens" if only is not None else ""
    if budget and all(r.get("tokens_from_default") for r in records):
        budget += " (default)"
    return ", ".join(models) + size + budget


def scaling(records: Sequence[Record]) -> Any:
    """Time-to-train (or throughput without a token budget) and scaling efficiency against GPU count, one line per
    system and precision (and model, and a sweep's what-if, where there are several). Efficiency is throughput per
    GPU relative to the line's smallest GPU count."""
    groups: dict[str, list[Record]] = {}
    many_models = len({r["model"] for r in records}) > 1
    # A sweep's hardware what-ifs (sweep.py's `whatif`: 'datasheet', 'nic_gbps=x2'), each a line style of its own:
    # as one line, sweeps/generations.toml's points were refused, two results at each GPU count.
    whatifs = sorted({str(r["whatif"]) for r in records if r.get("whatif") is not None})
    styles = {w: LINE_STYLES[i % len(LINE_STYLES)] for i, w in enumerate(whatifs)} if len(whatifs) > 1 else {}
    colours: dict[str, Any] = {}  # by system
    looks: dict[str, dict[str, Any]] = {}  # by line
    for r in records:
        system = f"{model_name(r['model'])}, {series_label(r)}" if many_models else series_label(r)
        colours.setdefault(system, _palette(PALETTE_SIZE)[len(colours) % PALETTE_SIZE])
        label = f"{system}, {r['whatif']}" if styles else system
        looks.setdefault(
            label, {"marker": "o", "color": colours[system], "linestyle": styles.get(str(r.get("whatif")), "-")}
        )
        groups.setdefault(label, []).append(r)
    for label, group in groups.items():
        if len({r["n_gpus"] for r in group}) < len(group):
            raise PerfmodelError(
                f"a scaling plot draws one result per GPU count on a line; {label} has several at one count (other "
                "settings differ): plot a subset"
            )
    if all(len({r["n_gpus"] for r in group}) < 2 for group in groups.values()):
        raise PerfmodelError("a scaling plot needs at least two GPU counts: pass --gpus as a list (256,512,1024)")
    with_time = all(r.get("time_to_train_days") is not None for r in records)
    beside = len(groups) > LEGEND_IN_PANEL  # the legend right of the panels, the figure widened to hold it
    end = f": 100.0% at {max(r['n_gpus'] for r in records):,}"  # the widest end value a legend entry adds
    legend_in = max(len(label + end) for label in groups) / LEGEND_CHARS_PER_IN + 0.6 if beside else 0.0
    fig, (left, right) = _figure(12 + legend_in, 5, columns=2)
    for label, group in groups.items():
        group = sorted(group, key=lambda r: r["n_gpus"])
        counts = [r["n_gpus"] for r in group]
        values = [r["time_to_train_days"] if with_time else r["tokens_per_s"] for r in group]
        left.plot(counts, values, label=label, **looks[label])
        base = group[0]["tokens_per_s_per_gpu"]
        efficiency = [100 * r["tokens_per_s_per_gpu"] / base for r in group]
        # The end value in the legend: labels beside lines that end close together print over each other.
        right.plot(counts, efficiency, label=f"{label}: {efficiency[-1]:.1f}% at {counts[-1]:,}", **looks[label])
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GPUs")
        ax.set_xticks(
            sorted({r["n_gpus"] for r in records}), [f"{n:,}" for n in sorted({r["n_gpus"] for r in records})]
        )
        ax.grid(True, which="both", alpha=0.3)
    left.set_yscale("log")
    _plain_log_ticks(left)
    left.set_ylabel("time to train (days)" if with_time else "throughput (tokens/s)")
    left.set_title("Time to train" if with_time else "Cluster throughput")
    right.set_ylabel("scaling efficiency (%)")
    right.set_title("Throughput per GPU vs the smallest cluster")
    right.axhline(100, color="grey", linewidth=0.8)
    # From 0: a 1.4% dip on a 98.6-100% axis reads like a cliff; super-linear scaling (memory) still shows.
    right.set_ylim(0, max(105.0, *(line.get_ydata().max() * 1.05 for line in right.get_lines()[:-1])))
    if beside:  # inside, a sweep's 20 lines covered the efficiency panel
        right.legend(title="at the most GPUs", fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    else:
        right.legend(title="at the most GPUs", fontsize="small")
    fig.suptitle(f"Scaling: {_model_title(records)}")
    return fig


def breakdown(records: Sequence[Record]) -> Any:
    """Stacked bars of where the step time goes, one bar per result."""
    _check_bars(records, "breakdown")
    many_sizes = len({r["n_gpus"] for r in records}) > 1
    title = f"Where the step time goes: {_model_title(records)}"
    fig, ax = _figure(max(6.0, BAR_SLOT_IN * len(records) + 4, TITLE_CHAR_IN * len(title)), 5.5)
    labels = [bar_label(r, many_sizes) for r in records]
    bottoms = [0.0] * len(records)
    colors = _palette(len(PART_LABELS))
    for (part, label), color in zip(PART_LABELS.items(), colors, strict=True):
        heights = [r["breakdown"].get(part, 0.0) for r in records]
        if not any(heights):
            continue
        ax.bar(range(len(records)), heights, bottom=bottoms, label=label, color=color)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    for x, total in enumerate(bottoms):
        ax.annotate(f"{total:.2f} s", (x, total), ha="center", va="bottom", fontsize=9)
    _bar_ticks(ax, labels)
    ax.set_ylabel("step time (s)")
    ax.set_ylim(0, max(bottoms) * 1.12)
    ax.legend(title="part of the step", loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.suptitle(title)
    return fig


def compare(records: Sequence[Record]) -> Any:
    """Time-to-train and cost (with the low-high price range) per system, with the speedup over the first."""
    if any(r.get("time_to_train_days") is None for r in records):
        raise PerfmodelError("a compare plot needs a token budget: pass --tokens (e.g. 15T) or use a scenario with one")
    _check_bars(records, "compare")
    many_sizes = len({r["n_gpus"] for r in records}) > 1
    names = [bar_label(r, many_sizes) for r in records]
    fig, (left, right) = _figure(max(10.0, 1.5 * BAR_SLOT_IN * len(records) + 4), 5.5, columns=2)
    days = [r["time_to_train_days"] for r in records]
    bars = left.bar(range(len(records)), days, color=_palette(len(records)))
    first = records[0]["tokens_per_s"]
    for bar, r in zip(bars, records, strict=True):
        speedup = r["tokens_per_s"] / first
        left.annotate(f"{r['time_to_train_days']:,.1f} d\n{speedup:.2f}x", (bar.get_x() + bar.get_width() / 2,
                      bar.get_height()), ha="center", va="bottom", fontsize=9)  # fmt: skip
    left.set_ylabel("time to train (days)")
    left.set_ylim(0, max(days) * 1.2)
    left.set_title("Time to train (speedup vs the first)")
    priced = [r for r in records if r.get("cost_usd") is not None]
    costs = [r["cost_usd"] / 1e6 if r.get("cost_usd") is not None else 0.0 for r in records]
    low = [
        max(0.0, c - (r.get("cost_usd_at_min_price") or r.get("cost_usd") or 0) / 1e6)
        for c, r in zip(costs, records, strict=True)
    ]
    high = [
        max(0.0, (r.get("cost_usd_at_max_price") or r.get("cost_usd") or 0) / 1e6 - c)
        for c, r in zip(costs, records, strict=True)
    ]
    bars = right.bar(range(len(records)), costs, yerr=[low, high], capsize=6, color=_palette(len(records)))
    labels = []
    for bar, r, c in zip(bars, records, costs, strict=True):
        text = "no price" if r.get("cost_usd") is None else f"{_millions(c)}\n{_price_label(r)}"
        labels.append(right.annotate(text, (bar.get_x() + bar.get_width() / 2, 0), xytext=(0, 4),
                                     textcoords="offset points", ha="center", va="bottom", fontsize=9,
                                     color="white" if c else "black"))  # fmt: skip
    right.set_ylabel("cost (million USD)")
    right.set_title(f"Cost {price_basis(records)}\n(bars: the low-high price range)")
    if not priced:
        right.text(0.5, 0.5, "no prices known", transform=right.transAxes, ha="center")
    for ax in (left, right):
        _bar_ticks(ax, names)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"Comparison: {_model_title(records)}")
    _lift_short_bars_labels(fig, right, list(bars), labels, [c + h for c, h in zip(costs, high, strict=True)])
    return fig


def _lift_short_bars_labels(fig: Any, ax: Any, bars: list[Any], labels: list[Any], tops: list[float]) -> None:
    """A cost label taller than its bar goes above the bar's price range, in black: white, it ran over the bar's
    top onto the white above it ($0.2M at $0.80/GPU-h beside $1.0M at $13.13); the axis grows to hold it."""
    fig.draw_without_rendering()  # laid out for the extents, not rasterised: the save draws it once
    renderer = fig.canvas.get_renderer()
    short = [(label, top) for bar, label, top in zip(bars, labels, tops, strict=True)
             if label.get_window_extent(renderer).y1 > bar.get_window_extent(renderer).y1]  # fmt: skip
    for label, top in short:
        label.xy = (label.xy[0], top)
        label.set_color("black")
    if short:
        fig.draw_without_rendering()
        highest = max(label.get_window_extent(renderer).y1 for label, _ in short)
        ax.set_ylim(0, max(ax.get_ylim()[1], 1.05 * ax.transData.inverted().transform((0, highest))[1]))


def _check_bars(records: Sequence[Record], kind: str) -> None:
    if len(records) > MAX_BARS:
        raise PerfmodelError(
            f"a {kind} plot draws at most {MAX_BARS} results side by side ({len(records)} given): a sweep's are drawn "
            "by `perfmodel plot scaling`, or draw fewer results"
        )


def _bar_ticks(ax: Any, labels: Sequence[str]) -> None:
    """One tick per bar at its position: bars placed by their labels would stack two results of one label."""
    ax.set_xticks(range(len(labels)), labels)


VALIDATION_COLUMNS = 2
"""Panels in a row of the validation plot (a panel is 6 in square)."""
LEGEND_CHARS_PER_IN = 14
"""Characters of an 8-point legend entry per inch of width, with room to spare (the widest are about 16)."""
MAX_BARS = 12
"""Bars a compare plot draws legibly side by side (labels of two lines each)."""


def _millions(usd_m: float) -> str:
    """A cost given in millions of USD as its bar names it: '$65.7M', and below a million in thousands ('$98k'),
    where one decimal of a million read '$0.1M' for $110k and $76k alike. In millions from what rounds to $1,000k,
    which is $1.0M."""
    return f"${usd_m:,.1f}M" if round(usd_m * 1e3) >= 1000 else f"${usd_m * 1e3:,.0f}k"


def _price_label(r: Record) -> str:
    """A row's price and its basis, as its cost bar names them ('$13.13/GPU-h\nest.'): the basis on a line of its
    own, or the label is wider than its bar and its white ends vanish on the white beside it ('$10.50/GPU-h lis')."""
    return f"${r['usd_per_gpu_hour']:,.2f}/GPU-h\n{PRICE_MARKS.get(str(r.get('price_basis')), '')}".rstrip()


METRIC_LABELS = {
    "tokens_per_s_per_gpu": "tokens/s per GPU",
    "step_time_s": "step time (s)",
    "time_to_train_min": "MLPerf time to train (min)",
    "gpu_hours": "whole-run GPU-hours",
}


def validation(report: Record) -> Any:
    """Predicted against measured, one panel per metric (each has its own unit), one point per run, with the ideal
    line, a +-10% band and the panel's MAPE."""
    rows = report["rows"]
    by_metric: dict[str, list[Record]] = {}
    for row in rows:
        by_metric.setdefault(str(row.get("metric") or row.get("unit") or "as measured"), []).append(row)
    group_key = next((k for k in ("accelerator", "source", "group") if all(k in row for row in rows)), None)
    labels = sorted({str(row[group_key]) if group_key else "runs" for row in rows})
    colours = dict(zip(labels, _palette(len(labels)), strict=True))
    markers = {label: MARKERS[i // PALETTE_SIZE % len(MARKERS)] for i, label in enumerate(labels)}
    # At most VALIDATION_COLUMNS panels a row: validate's four side by side made a figure 25.5 in wide, its type
    # a quarter size on a page or slide.
    columns = min(len(by_metric), VALIDATION_COLUMNS)
    rows_of_panels = math.ceil(len(by_metric) / columns)
    fig, axes = _figure(6.0 * columns + 1.5, 6.0 * rows_of_panels, columns=columns, rows=rows_of_panels)
    panels = [axes] if len(by_metric) == 1 else list(axes.flat)
    for unused in panels[len(by_metric) :]:
        fig.delaxes(unused)
    for ax, (metric, metric_rows) in zip(panels, by_metric.items(), strict=False):
        groups: dict[str, list[Record]] = {}
        for row in metric_rows:
            groups.setdefault(str(row[group_key]) if group_key else "runs", []).append(row)
        for label, group in sorted(groups.items()):
            measured, predicted = [r["measured"] for r in group], [r["predicted"] for r in group]
            ax.scatter(measured, predicted, label=label, s=24, color=colours[label], marker=markers[label])
        values = [v for row in metric_rows for v in (row["measured"], row["predicted"])]
        lo, hi = min(values) / 1.3, max(values) * 1.3
        ax.plot([lo, hi], [lo, hi], color="black", linewidth=1, label="predicted = measured")
        ax.fill_between([lo, hi], [lo * 0.9, hi * 0.9], [lo * 1.1, hi * 1.1], color="grey", alpha=0.2, label="+-10%")
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), aspect="equal")
        _readable_log_ticks(ax)
        unit = METRIC_LABELS.get(metric, metric)
        ax.set_xlabel(f"measured {unit}")
        ax.set_ylabel(f"predicted {unit}")
        mape = sum(abs(r["predicted"] / r["measured"] - 1) for r in metric_rows) / len(metric_rows) * 100
        ax.set_title(f"{unit}: {len(metric_rows)} runs, MAPE {mape:.1f}%")
        ax.grid(True, which="major", alpha=0.3)
    legend: dict[str, Any] = {}
    for ax in fig.axes:
        legend |= {name: handle for handle, name in zip(*ax.get_legend_handles_labels(), strict=True)}
    names = [n for n in labels if n in legend] + [n for n in legend if n not in labels]  # runs first, then lines
    shown = [accelerator_name(n) if group_key == "accelerator" and n in labels else n for n in names]
    # Below the panels: beside them, the legend ran into the figure's title.
    column_in = max(map(len, shown)) / LEGEND_CHARS_PER_IN + 0.6  # the text and its marker
    columns = max(1, min(len(names), int(fig.get_figwidth() / column_in)))
    fig.legend([legend[n] for n in names], shown, title=group_key, loc="outside lower center", fontsize=8,
               ncols=columns)  # fmt: skip
    mape = report.get("mape_pct")
    overall = f", MAPE {mape:.1f}% overall" if mape is not None else ""
    fig.suptitle(f"Predicted vs measured: {len(rows)} runs{overall}", fontsize="x-large")
    return fig


def _readable_log_ticks(ax: Any) -> None:
    """At most ~6 plain-number ticks per log axis: minor tick labels on a wide range overlap."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    plain = FuncFormatter(lambda value, _pos: f"{value:,.0f}" if value >= 10 else f"{value:g}")
    for axis in (ax.xaxis, ax.yaxis):
        low, high = axis.get_view_interval()
        decades = math.log10(high / low)
        axis.set_major_locator(LogLocator(subs=(1.0,) if decades > 2 else (1.0, 2.0, 5.0)))
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(NullFormatter())


def _plain_log_ticks(ax: Any) -> None:
    """Log-scale ticks as plain numbers (90, 200) rather than powers of ten (9 x 10^1)."""
    from matplotlib.ticker import FuncFormatter

    plain = FuncFormatter(lambda value, _pos: f"{value:,.0f}" if value >= 10 else f"{value:g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)


LINE_STYLES = ("-", "--", ":", "-.")
"""A scaling plot's line styles, one per sweep what-if (the colour names the system)."""
LEGEND_IN_PANEL = 6
"""Lines whose legend a scaling plot's efficiency panel holds (in its lower half: the lines are near 100%)."""
PALETTE_SIZE = 10
"""The colours of matplotlib's tab10, which `_palette` repeats past the tenth."""
MARKERS = "os^D"
"""The validation plot's markers: a group past the tenth takes the next one, so that no two groups look alike (the
bundled runs span 13 accelerators: MI325X's points were A100 40GB's blue dots, MI355X's A100 80GB's orange)."""


def _palette(n: int) -> list[Any]:
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return [cmap(i % PALETTE_SIZE) for i in range(n)]


DRAW: dict[str, Callable[[Any], Any]] = {
    "scaling": scaling,
    "breakdown": breakdown,
    "compare": compare,
    "validation": validation,
}


def _metadata(fmt: str) -> dict[str, Any] | None:
    """The image's date: SOURCE_DATE_EPOCH's, or none (matplotlib would write the current time into a PDF or SVG),
    so that the same plot gives the same bytes. PNG carries no date."""
    date = source_date()
    if fmt == "pdf":
        return {"CreationDate": date}
    if fmt == "svg":
        return {"Date": date.strftime("%Y-%m-%dT%H:%M:%SZ") if date else None}
    return None


def save(figure: Any, path: Path, force: bool) -> None:
    """Write the figure atomically in the format the suffix names."""
    fmt = check_output(path, force)
    metadata = _metadata(fmt)

    def write(handle: BinaryIO) -> None:
        import matplotlib

        image = io.BytesIO()  # drawn in memory: a full disk fails in one plain write, not inside matplotlib
        with matplotlib.rc_context({"svg.hashsalt": "perfmodel"}):  # fixed SVG ids: the same plot, the same bytes
            figure.savefig(image, format=fmt, dpi=150, metadata=metadata)
        handle.write(image.getvalue())

    try:
        write_atomic(path, write, force)
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)
