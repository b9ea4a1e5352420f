"""Tables for people of the planning commands: search, compare, whatif, sensitivity, sweep."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from perfmodel.errors import visible
from perfmodel.inputs.numbers import plain
from perfmodel.outputs.record import price_basis, price_cell
from perfmodel.outputs.report import (
    _duration,
    _usd,
    column_unit,
    counted,
    dense_imbalance_note,
    tokens_text,
    tonnes,
)
from perfmodel.planning.campaign import Campaign, Result
from perfmodel.planning.confidence import MEDIAN
from perfmodel.planning.losses import expected
from perfmodel.planning.plan import FAILURE_FREE, WITH_FAILURES, WITH_LOSSES
from perfmodel.planning.predict import Prediction, SearchReport, search_objective
from perfmodel.planning.training import Price
from perfmodel.planning.views import count_text
from perfmodel.planning.whatif import KNOBS

LEFT_ALIGNED = frozenset(("layout", "system", "recompute", "case", "parameter", "what", "model", "what-if", "error"))
PRECISION_LABEL = {"bf16": "BF16", "fp8": "FP8", "mxfp8": "MXFP8", "nvfp4": "NVFP4", "mxfp4": "MXFP4"}


def _tabulate(rows: list[list[str]], headers: list[str]) -> str:
    from perfmodel.outputs.columns import tabulated

    align = ["left" if h in LEFT_ALIGNED else "right" for h in headers]
    return tabulated(rows, headers=headers, tablefmt="simple", colalign=align, disable_numparse=True)


def layout_label(p: Prediction) -> str:
    lo = p.layout
    experts = (f" EP{lo.ep}" if lo.ep > 1 else "") + (f" ETP{lo.etp}" if lo.etp > 1 else "")
    return f"TP{lo.tp} PP{lo.pp} VP{lo.vp} CP{lo.cp} DP{lo.dp}{experts}"


def full_layout(p: Prediction, batch: bool = True) -> str:
    """The layout with what a planner needs to run it again: micro- (and global) batch, ZeRO stage and recompute
    (405B on 2,048 GB300 at TP2 PP1 fits only with ZeRO-3)."""
    return _layout_words(vars(p.layout), batch)


def _layout_words(dims: dict[str, Any], batch: bool = True) -> str:
    """`layout_label`'s degrees, then MBS, GBS (with `batch`), ZeRO stage and recompute, from the layout's fields by
    name: a Layout's, or a sweep row's `parallelism.*` columns."""
    experts = "".join(f" {dim.upper()}{dims[dim]}" for dim in ("ep", "etp") if (dims.get(dim) or 1) > 1)
    text = f"TP{dims['tp']} PP{dims['pp']} VP{dims['vp']} CP{dims['cp']} DP{dims['dp']}{experts} MBS{dims['mbs']}"
    text += (f" GBS{dims['gbs']}" if batch else "") + f" ZeRO-{dims['zero']}"
    recompute, layers = dims.get("recompute"), dims.get("recompute_layers")
    if recompute in (None, "none"):
        return text
    return f"{text} recompute-{recompute}" + (f" (first {layers} layers)" if layers else "")


BEYOND = " *"
"""The mark of a row beyond the measured runs the calibration saw (planning/evidence.py)."""


def predictions(results: Iterable[Result]) -> list[Prediction]:
    """Each result's predictions: itself, or a campaign's phases."""
    return [q for p in results for q in (p.phases.values() if isinstance(p, Campaign) else (p,))]


def beyond_mark(p: Result) -> str:
    """The mark of a row beyond the measured runs: a prediction's, or a campaign's of which a phase is."""
    return BEYOND if any(q.evidence is not None and q.evidence.beyond for q in predictions([p])) else ""


def beyond_note(predictions: list[Prediction]) -> list[str]:
    """The footnote of the rows marked beyond the measured runs: on which axes, and where to read more."""
    return beyond_axes_note(a for p in predictions if p.evidence is not None for a in p.evidence.beyond)


def beyond_axes_note(axes: Iterable[str]) -> list[str]:
    """beyond_note of the axes the marked rows lie beyond (a record's `evidence.beyond` joins a row's with '; ')."""
    axes = dict.fromkeys(axes)
    if not axes:
        return []
    return [
        f"{BEYOND.strip()} beyond the measured runs the calibration saw ({', '.join(axes)}): its 80% interval is "
        "widened where that widens it; perfmodel predict with the row's settings says how."
    ]


def price_notes(results: Iterable[Result]) -> list[str]:
    """The footnote of a table's prices: each GPU's price basis in one line (a verdict may rest on an estimate)."""
    return _price_footnote(
        (p.hardware.accelerator.id, p.price.basis_line) for p in results if p.price.usd_per_gpu_hour is not None
    )


def drawn_price_note(results: Iterable[Result]) -> list[str]:
    """Where a price distribution is stated: that the cost's quantiles and P(within budget) draw it."""
    drawn = sorted({p.hardware.accelerator.id for p in results if p.price.distribution is not None})
    if not drawn:
        return []
    return [f"Costs of {', '.join(drawn)} drawn over the stated price distribution too (independent of the time): "
            "cost P10/P90, cost at a confidence and P(within budget); the cost column is at the mode."]  # fmt: skip


def _price_footnote(bases: Iterable[tuple[str, str]]) -> list[str]:
    lines = dict.fromkeys(f"{gpu}: {line}" for gpu, line in bases)
    return [f"$/GPU-h: {'; '.join(lines)}."] if lines else []


def _price(p: Result) -> str:
    return price_cell(p.price.usd_per_gpu_hour, p.price.basis)


def _run_cells(p: Prediction, unit: str | None = None) -> list[str]:
    d = p.to_dict()
    if p.run is None:
        return []
    return [
        _duration(d["time_to_train_s"], unit),
        _usd(d["cost_usd"]),
        _mega(d["energy_kwh"] / 1000),
        tonnes(d["co2e_t"]),
    ]


TIME_KEYS = ("time_to_train_s", "time_to_train_with_failures_s", "time_to_train_with_losses_s")
"""The durations a row of a table of runs shows, all in the table's one unit (`column_unit`)."""


def table_unit(records: Iterable[dict[str, Any]]) -> str | None:
    """The one unit of the durations of a table's rows."""
    return column_unit(r.get(key) for r in records for key in TIME_KEYS)


def _mega(value: float) -> str:
    """A cell of a MWh or MW column: to 0.1, or to two significant digits where that would read 0.0 (an MLPerf
    GPT-OSS-20B plan on 64 GB300s uses about 29 kWh; a plan of 8 H100s draws about 0.01 MW)."""
    return f"{value:,.1f}" if value >= 0.05 else plain(value, 2)


RUN_HEADERS = ["time to train", "cost", "MWh", "tCO2e"]


def heading(p: Prediction, n_gpus: str | None = None) -> str:
    count = n_gpus or f"{p.layout.n_gpus:,}"
    return (
        f"{p.model.name} on {count} x {visible(p.hardware.accelerator.name)} ({p.hardware.system.id}), "
        f"{PRECISION_LABEL[p.scenario.precision]}, seq {p.layout.seq_len:,}{work_suffix(p)}"
    )


def work_suffix(p: Result) -> str:
    """', 15.00T tokens' (marked where a default) or ', mlperf-...' for a table's heading; '' without work."""
    s = p.scenario
    return f", {s.benchmark}" if s.benchmark else f", {tokens_text(s)}" if s.tokens is not None else ""


def search_table(report: SearchReport, with_pareto: bool) -> str:
    found, best = report.found, report.results[0]
    counts = sorted({p.layout.n_gpus for p in report.results} | {p.layout.n_gpus for p in report.pareto})
    many = len({n for n, _ in found.best_per_point}) > 1
    per = "token" if len({p.layout.gbs for p in report.results}) > 1 else "step"
    ranking = f"{found.objective} to train (MLPerf)" if best.mlperf else f"{found.objective} per {per}"
    lines = [
        heading(best, ", ".join(f"{n:,}" for n in counts) if many else None),
        f"{counted(found.evaluated, 'valid layout')} in {found.elapsed_s:.2f} s, {found.feasible:,} "
        f"{'fits' if found.feasible == 1 else 'fit'} in memory; steps priced on {counted(found.priced, 'grid cell')}, "
        "memory alone for the other layouts; "
        f"best {len(report.results)} by {ranking}:",
        "",
        _search_rows(report.results, best, many, found.objective),
    ]
    if with_pareto:
        lines += [
            "",
            "Pareto front (no other layout is faster, cheaper and on fewer GPUs at once):",
            _search_rows(report.pareto, best, True, found.objective),
        ]
    note = (price_notes([best]) if best.run is not None else []) + beyond_note(
        [*report.results, *(report.pareto if with_pareto else [])]
    )
    return "\n".join(lines + (["", *note] if note else []))


def _search_rows(predictions: list[Prediction], best: Prediction, many: bool, objective: str) -> str:
    with_run = best.run is not None
    unit = table_unit(p.to_dict() for p in predictions)
    rows = []
    for i, p in enumerate(predictions, 1):
        d = p.to_dict()
        slower = search_objective(p, objective) / search_objective(best, objective) - 1
        rows.append(
            [str(i)]
            + ([f"{p.layout.n_gpus:,}"] if many else [])
            + [
                layout_label(p) + beyond_mark(p),
                str(p.layout.mbs),
                f"{p.layout.gbs:,}",
                p.layout.recompute,
                str(p.layout.zero),
                f"{d['step_time_s']:,.3f}",
                f"{d['tokens_per_s_per_gpu']:,.0f}",
                f"{d['mfu_of_precision']:.1%}",
                f"{d['memory_per_gpu_gib']:,.1f}",
                "best" if i == 1 and p is best else f"{slower:+.1%}",
            ]
            + (_run_cells(p, unit) if with_run else [])
        )
    headers = (
        ["#"]
        + (["GPUs"] if many else [])
        + ["layout", "MBS", "GBS", "recompute", "ZeRO", "step s", "tok/s/GPU", MFU_OF_PRECISION, "mem GiB"]
        + [f"{objective} vs best"]
        + (RUN_HEADERS if with_run else [])
    )
    return _tabulate(rows, headers)


def _share(value: float | None) -> str:
    """A share, or '-' for a row it does not apply to (a system at one GPU count has no scaling efficiency)."""
    return "-" if value is None else f"{value:.1%}"


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.2f}x"


def _price_range(low: float | None, high: float | None) -> str:
    """The perf/$ ratio's range with each system's price anywhere in its low-high range, when its ends differ as
    printed (two systems at one quoted price each give one ratio: "(1.01-1.01)" said nothing)."""
    if low is None or high is None or f"{low:,.2f}" == f"{high:,.2f}":
        return ""
    return f" ({low:,.2f}-{high:,.2f})"


def compare_table(records: list[dict[str, Any]], predictions: list[Prediction]) -> str:
    """One row per system (and GPU count): layout, speed, time-to-train, cost, energy and ratios to the first."""
    first = predictions[0]
    with_run = first.run is not None
    scaling = any(r["scaling_efficiency"] is not None for r in records)  # a system at several counts
    with_goodput, lossy = first.goodput is not None, with_losses(records)
    unit = table_unit(records)
    rows = []
    for record, p in zip(records, predictions, strict=True):
        low, high = record["perf_per_usd_vs_first_min"], record["perf_per_usd_vs_first_max"]
        rows.append(
            [
                p.hardware.system.id,
                PRECISION_LABEL[p.scenario.precision],
                f"{p.layout.n_gpus:,}",
                full_layout(p) + beyond_mark(p),
                f"{record['step_time_s']:,.3f}",
                f"{record['tokens_per_s_per_gpu']:,.0f}",
                f"{record['mfu_of_precision']:.1%}",
                _price(p),
            ]
            + (_run_cells(p, unit) if with_run else [])
            + ([_goodput_cell(record, unit)] if with_goodput else [])
            + (loss_cells(record, unit) if lossy else [])
            + ([_share(record["scaling_efficiency"])] if scaling else [])
            + [
                _ratio(record["speedup_vs_first"]),
                _ratio(record["perf_per_usd_vs_first"]) + _price_range(low, high),
            ]
        )
    headers = (
        ["system", "prec.", "GPUs", "layout", "step s", "tok/s/GPU", "MFU", "$/GPU-h"]
        + (RUN_HEADERS if with_run else [])
        + (["goodput (time with failures)" if with_run else "goodput"] if with_goodput else [])
        + (LOSS_HEADERS if lossy else [])
        + (["scaling eff."] if scaling else [])
        + ["speedup", "perf/$ (range)"]
    )
    note = (
        "MFU: model FLOP/s over the dense peak of each row's own precision. speedup: throughput over the first row's; "
        f"perf/$: tokens per dollar over the first row's, cost {price_basis(records)} (in brackets: its range with "
        "each price anywhere between its low and high quote)."
    )
    if scaling:
        note += " Scaling efficiency: tokens/s per GPU over the same system's smallest count."
    note += LOSSES_NOTE if lossy else ""
    heading_line = f"{first.model.name}, seq {first.layout.seq_len:,}{work_suffix(first)}"
    lines = [heading_line, "", _tabulate(rows, headers), "", note, *price_notes(predictions)]
    return "\n".join(lines + beyond_note(predictions))


def _goodput_cell(record: dict[str, Any], unit: str | None = None) -> str:
    """The goodput and the time to train with failures in the unit of the time-to-train column (an MLPerf run's
    four hours read '(0.2)' days)."""
    seconds = record.get("time_to_train_with_failures_s")
    return f"{record['goodput']:.1%}" + ("" if seconds is None else f" ({_duration(seconds, unit)})")


LOSS_HEADERS = ["time with losses", "cost with losses"]
LOSSES_NOTE = (
    " With losses: the run with failures, checkpoints, stragglers, start-up and any other loss set (perfmodel "
    "predict lists each); perf/$ is of the failure-free runs."
)


def with_losses(records: list[dict[str, Any]]) -> bool:
    """Whether a comparison's rows price real-world losses (the losses model on, a token budget)."""
    return any("time_to_train_with_losses_s" in r for r in records)


def loss_cells(record: dict[str, Any], unit: str | None = None) -> list[str]:
    """A comparison row's time and cost with losses ('never' when failures stop it from finishing)."""
    if "time_to_train_with_losses_s" not in record:
        return ["n/a", "n/a"]
    seconds = record["time_to_train_with_losses_s"]
    return ["never", "-"] if seconds is None else [_duration(seconds, unit), _usd(record["cost_usd_with_losses"])]


def whatif_table(records: list[dict[str, Any]], cases: list[tuple[str, Prediction]]) -> str:
    base = cases[0][1]
    changed = records[1]["hardware_changes"]
    change_text = ", ".join(
        f"{name} {'-' if c['from'] is None else format(c['from'], ',g')} -> {c['to']:,g} {KNOBS[name].unit}"
        for name, c in changed.items()
    )
    with_run = base.run is not None
    unit = table_unit(records)
    rows = [
        [
            label,
            full_layout(p, batch=False) + beyond_mark(p),
            f"{r['step_time_s']:,.3f}",
            f"{r['tokens_per_s_per_gpu']:,.0f}",
        ]
        + [f"{r['mfu_of_precision']:.1%}", f"{r['memory_per_gpu_gib']:,.1f}" + ("" if r["fits_in_memory"] else " (!)")]
        + (_run_cells(p, unit) if with_run else [])
        + [_ratio(r["speedup_vs_first"])]
        for (label, p), r in zip(cases, records, strict=True)
    ]
    headers = ["case", "layout", "step s", "tok/s/GPU", MFU_OF_PRECISION, "mem GiB"] + (RUN_HEADERS if with_run else [])
    return "\n".join(
        [heading(base), f"What if: {change_text}", "", _tabulate(rows, [*headers, "speedup"])]
        + (["", "(!) does not fit in memory"] if any(not r["fits_in_memory"] for r in records) else [])
        + (["", *note] if (note := beyond_note([p for _, p in cases])) else [])
    )


def sensitivity_table(result: Any) -> str:
    """Elasticities, largest first, with what they mean for a planner."""
    researched = any(e.best_layout is not None for e in result.elasticities)
    rows = []
    for e in result.elasticities:
        rows.append(
            [e.knob.name, f"{e.value:,g} {e.knob.unit}", f"{e.fixed_layout:+.3f}"]
            + ([f"{e.best_layout:+.3f}"] if researched else [])
            + [e.knob.description]
        )
    headers = ["parameter", "value", "fixed layout"] + (["best layout"] if researched else []) + ["what"]
    base = result.baseline
    return "\n".join(
        [
            heading(base),
            f"Layout: {base.layout.describe()}, step {base.step_time_s:,.3f} s",
            "",
            "Elasticity of step time, d log T / d log p: -0.6 means 1% more of the parameter, 0.6% less time "
            f"(-1: bound by it; 0: does not matter). Central differences at x(1 +/- {result.step:g}).",
            _tabulate(rows, headers),
        ]
        + (
            ["", "best layout: the layout searched again at each perturbed point (a re-planned run)."]
            if researched
            else []
        )
    )


def _sweep_layout(r: dict[str, Any]) -> str:
    """A sweep row's layout, or '-' for a point that has none (it failed before a layout was chosen); a row of a
    layouts sweep always has its own, which is what tells its rows apart, recompute included."""
    if r.get("parallelism.tp") is None:
        return "-"
    prefix = "parallelism."
    return _layout_words({key.removeprefix(prefix): value for key, value in r.items() if key.startswith(prefix)})


def sweep_table(rows: list[dict[str, Any]]) -> str:
    out = []
    for r in rows:
        head = [
            r["model"],
            r["system"] or r["accelerator"] or "-",
            PRECISION_LABEL.get(r["precision"], r["precision"]),
            f"{r['n_gpus']:,}",
            r["whatif"],
        ]
        layout = _sweep_layout(r)
        if r["error"]:
            out.append([*head, layout, "-", "-", "-", "-", "-", "-", "-", r["error"]])
            continue
        days = "n/a" if r["time_to_train_days"] is None else f"{r['time_to_train_days']:,.1f}"
        out.append(
            [
                *head,
                layout + (BEYOND if r.get("evidence.beyond") else ""),
                f"{r['step_time_s']:,.3f}",
                f"{r['tokens_per_s_per_gpu']:,.0f}",
                f"{r['mfu_of_precision']:.1%}",
                f"{r['mfu_bf16']:.2f}x",
                days,
                price_cell(r["usd_per_gpu_hour"], r.get("price_basis")),
                "no price" if r["usd_per_gpu_hour"] is None else _usd(r["cost_usd"]),
                "",
            ]
        )
    headers = [
        "model",
        "system",
        "prec.",
        "GPUs",
        "what-if",
        "layout",
        "step s",
        "tok/s/GPU",
        "MFU",
        "x BF16 peak",
        "days",
    ]
    headers += ["$/GPU-h", "cost"]
    priced = [r for r in rows if not r["error"] and r.get("usd_per_gpu_hour") is not None]
    notes = [
        SWEEP_MFU_NOTE,
        *_price_footnote((r["accelerator"], f"{r['price_basis']}: {r['price_note']}") for r in priced),
        *beyond_axes_note(a for r in rows if r.get("evidence.beyond") for a in r["evidence.beyond"].split("; ")),
    ]
    return _tabulate(out, [*headers, "error"]) + "\n\n" + "\n".join(notes) + _imbalance_note(rows)


MFU_OF_PRECISION = "MFU (own prec.)"
"""The heading of an MFU column whose table has no note to say its basis: of the dense peak of the row's precision."""

SWEEP_MFU_NOTE = (
    "MFU: model FLOP/s over the dense peak of each row's GEMM format; x BF16 peak: model FLOP/s over the dense BF16 "
    "peak (the MFU basis of NVIDIA and the Llama 3 paper, above 1 below BF16)."
)


def _imbalance_note(rows: list[dict[str, Any]]) -> str:
    """Under a sweep whose MoE rows price a moe_imbalance other than 1: the dense models it does not apply to (a
    dense row records no imbalance; a sweep of dense models only has no row that shows the setting)."""
    imbalances = sorted({r["moe.imbalance"] for r in rows if r.get("moe.imbalance") not in (None, 1.0)})
    dense = list(dict.fromkeys(r["model"] for r in rows if not r["error"] and r.get("moe.dispatcher") is None))
    if not imbalances or not dense:
        return ""
    return "\n\n" + dense_imbalance_note(imbalances, dense)


def candidate_label(label: str) -> str:
    """A plan candidate's label (planning.plan._label: `dgx-h100:fp8`) with its precision as predict, compare and
    the campaign tables print it (`dgx-h100:FP8`); `--gpu` takes either spelling."""
    system, _, precision = label.rpartition(":")
    return f"{system}:{PRECISION_LABEL.get(precision, precision)}" if system else label


def goal_table(report: Any) -> str:
    """`perfmodel plan`: per candidate the plan meeting the goal (or why none does), then the cheapest and fastest."""
    goal = report.goal.to_dict()
    wanted = []
    if goal["deadline_s"] is not None:
        wanted.append(f"within {_duration(goal['deadline_s'])}")
    if goal["budget_usd"] is not None:
        wanted.append(f"for at most {_usd(goal['budget_usd'])}")
    if goal["power_cap_mw"] is not None:
        wanted.append(f"in at most {plain(goal['power_cap_mw'], 4)} MW at the wall")
    p0 = next(p for c in report.plans for p in (c.prediction, *c.tried.values()) if p is not None)
    work = f"{p0.model.name}, {_tokens(p0)}"
    planned_days = [c.to_dict()["time_to_train_days"] for c in report.plans if c.prediction is not None]
    unit = column_unit(days * 86400 for days in planned_days)
    chances = [key for key in ("p_meet_deadline", "p_within_budget") if goal[GOAL_OF[key]] is not None]
    quantile = [] if goal["confidence"] == MEDIAN else ["time_to_train_days_at_confidence", "cost_usd_at_confidence"]
    rows, notes = [], []
    for c in report.plans:
        d, label = c.to_dict(), candidate_label(c.label)
        if c.prediction is None:
            rows.append([label, *["-"] * (10 + len(quantile + chances)), "infeasible"])
            notes.append(f"{label}: {c.reason}")
            continue
        p = c.prediction
        if isinstance(p, Campaign):
            notes.append(f"{label} on {d['n_gpus']:,} GPUs, per phase: {_phase_layouts(p)}")
        goodput = "n/a" if d["goodput"] is None else f"{d['goodput']:.1%}"
        low, high = (_duration(d[f"time_to_train_days_{end}"] * 86400, unit) for end in ("p10", "p90"))
        interval = f"{low} to {high}"
        rows.append(
            [
                label,
                f"{d['n_gpus']:,}",
                (f"{counted(len(p.phases), 'phase')} (below)" if isinstance(p, Campaign) else full_layout(p))
                + beyond_mark(p),
                f"{_duration(d['time_to_train_days'] * 86400, unit)} ({interval})",
                _price(p),
                _usd(d["cost_usd"]),
                _mega(d["energy_kwh"] / 1000),
                _mega(d["power_mw"]),
                tonnes(d["co2e_t"]),
                goodput,
                *(_at_confidence(d, key, unit) for key in quantile),
                *("n/a" if d[key] is None else f"{d[key]:.2f}" for key in chances),
                str(len(d["counts_tried"])),
                d["binds"] if c.feasible else "over budget",
            ]
        )
        if not c.feasible:
            notes.append(f"{label}: {c.reason}")
        elif d["neighbour"] is not None:  # why not one count more or fewer
            notes.append(f"{label} on {d['n_gpus']:,} GPUs: {d['neighbour']['why']}")
    headers = [
        "system",
        "GPUs",
        "layout",
        "time to train P50 (P10 to P90)",
        "$/GPU-h",
        "cost",
        "MWh",
        "MW",
        "tCO2e",
        "goodput",
        *(f"{'time' if key.startswith('time') else 'cost'} at P{100 * goal['confidence']:.4g}" for key in quantile),
        *(_chance_header(goal, key) for key in chances),
        "counts tried",
        "binds",
    ]
    bases = {c.goal_basis for c in report.plans} - {None}
    basis = GOAL_BASES[bases.pop()] if len(bases) == 1 else "times and costs on each candidate's basis (goal_basis)"
    lines = [f"{work}, {' and '.join(wanted)}{_confidence(goal['confidence'])}; {basis}", ""]
    lines.append(_tabulate(rows, headers))
    cheapest, fastest = report.cheapest(), report.fastest()
    lines.append("")
    if fastest is None:
        lines.append("No candidate meets the goal.")
    else:
        verdict = "n/a (no plan has a price)" if cheapest is None else _summary(cheapest) + _estimated(report)
        lines.append(f"Cheapest: {verdict}")
        lines.append(f"Fastest:  {_summary(fastest)}")
    planned = [c.prediction for c in report.plans if c.prediction is not None]
    notes += price_notes(planned) + drawn_price_note(planned) + beyond_note(predictions(planned))
    lines += [*(["", *notes] if notes else []), "", f"Planned in {report.elapsed_s:.2f} s."]
    return "\n".join(lines)


GOAL_OF = {"p_meet_deadline": "deadline_s", "p_within_budget": "budget_usd"}
"""The goal each probability column is of."""


def _confidence(confidence: float) -> str:
    """How the goal is checked: on the point (the median), or at a confidence."""
    if confidence == MEDIAN:
        return " on the point estimate (probability 0.5 each; --confidence to ask more)"
    return f", each with probability at least {confidence:.4g}"


def deadline_line(record: dict[str, Any]) -> str:
    """`predict --deadline`'s line: the probability of training within the deadline, and how it is read."""
    within = f"{_duration(record['deadline_days'] * 86400)}, {record['deadline_basis']}"
    return (
        f"P(finish within {within}): {record['p_finish_within_deadline']:.2f} (the 80% interval, run-to-run "
        "variability and random failures around the point; README, 'Plans at a confidence')"
    )


def budget_line(record: dict[str, Any], price: Price) -> str:
    """`predict --budget`'s line: the probability of costing at most the budget, and how it is read."""
    within = f"{_usd(record['budget_usd'])}, {record['budget_basis']}"
    if record["p_cost_within_budget"] is None:
        return f"P(cost within {within}): n/a ({price.source})"
    drawn = (
        f" at ${price.usd_per_gpu_hour:,.2f}/GPU-h" if price.distribution is None else ", the stated price distribution"
    )
    return (
        f"P(cost within {within}): {record['p_cost_within_budget']:.2f} (the 80% interval, run-to-run variability "
        f"and random failures around the point{drawn}; README, 'Plans at a confidence')"
    )


def _chance_header(goal: dict[str, Any], key: str) -> str:
    """'P(meet 60.0 days)', 'P(within $60.00M)'."""
    return (
        f"P(meet {_duration(goal['deadline_s'])})"
        if key == "p_meet_deadline"
        else f"P(within {_usd(goal['budget_usd'])})"
    )


def _at_confidence(d: dict[str, Any], key: str, unit: str | None) -> str:
    """A plan's time or cost at the goal's confidence, as its table cell."""
    if d[key] is None:
        return "n/a"
    return _duration(d[key] * 86400, unit) if key.startswith("time") else _usd(d[key])


GOAL_BASES = {
    WITH_LOSSES: "times and costs with losses (failures, checkpoints, stragglers, start-up and any other set: "
    "perfmodel predict lists each)",
    WITH_FAILURES: "times and costs include expected failures",
    FAILURE_FREE: "times and costs failure-free (goodput model off)",
}
"""What a plan's times and costs are, by its goal basis (planning/plan.py, goal_basis)."""


def _tokens(p: Result) -> str:
    assert p.run is not None
    if isinstance(p, Campaign):
        return f"a campaign of {counted(len(p.phases), 'phase')}, {count_text(p.run.tokens)} tokens"
    return f"{count_text(p.run.tokens)} tokens ({p.scenario.benchmark})" if p.mlperf else tokens_text(p.scenario)


def _phase_layouts(c: Campaign) -> str:
    """Each phase's GPU count and layout, on one line."""
    return "; ".join(f"{name} {p.layout.n_gpus:,} GPUs {full_layout(p)}" for name, p in c.phases.items())


def _estimated(report: Any) -> str:
    """The caveat of a cheapest verdict that rests on an estimated price: which feasible plans' prices are."""
    estimated = report.estimated()
    if not estimated:
        return ""
    named = ", ".join(
        f"{candidate_label(c.label)} ${c.prediction.price.usd_per_gpu_hour:,.2f}/GPU-h" for c in estimated
    )
    return f" (rests on an estimated price: {named}; quote it with --gpu 'ID:$PRICE')"


def _summary(c: Any) -> str:
    """'gb300-nvl72:NVFP4 on 3,584 GPUs, 45.3 days, $50.80M, P(meet 53.0 days) 0.99'."""
    d, goal = c.to_dict(), c.goal.to_dict()
    chances = "".join(f", {_chance_header(goal, key)} {d[key]:.2f}" for key in GOAL_OF if d[key] is not None)
    days = _duration(d["time_to_train_days"] * 86400)
    what = f"{candidate_label(c.label)} on {d['n_gpus']:,} GPUs, {days}, {_usd(d['cost_usd'])}"
    return what + chances


def _on_demand(source: dict[str, Any]) -> str:
    """An on-demand offer's note in a fleet table: its GPUs are its most, held per phase for its GPU-hours."""
    if source["billing"] != "on_demand":
        return ""
    return f" on demand, {expected(source['gpu_hours'])} GPU-h"


def fleet_table(report: Any, timed: bool = True) -> str:
    """`perfmodel plan --fleet`: per system type the cheapest mix of owned pools and offers meeting the goal
    (`timed`: ending with the time planning took)."""
    goal = report.goal.to_dict()
    rows, notes = [], []
    for plan in report.plans:
        if not plan.feasible:
            rows.append([plan.system, *["-"] * 9])
            notes.append(f"{plan.system}: {plan.reason}")
            continue
        d = plan.to_dict()
        owned = ", ".join(f"{s['gpus']:,} {s['name']}" + (f" ({s['site']})" if s["site"] else "")
                          for s in d["sources"] if s["kind"] == "owned")  # fmt: skip
        offered = ", ".join(f"{s['gpus']:,} {s['name']} ({s['kind']}{_on_demand(s)}, {s['lead_time_days']:g} d)"
                            for s in d["sources"] if s["kind"] != "owned")  # fmt: skip
        days = [_duration(d[f"time_to_train_days_{q}"] * 86400) for q in ("p50", "p10", "p90")]
        rows.append(
            [
                plan.system,
                f"{d['n_gpus']:,}",
                owned or "-",
                offered or "-",
                f"{plain(d['start_after_days'], 3)} days",
                f"{days[0]} ({days[1]} to {days[2]})",
                f"{d['p_deadline']:.2f}",
                _usd(d["cost_usd_owned"]),
                _usd(d["cost_usd_rented"] + d["cost_usd_bought"]),
                _usd(d["cost_usd"]),
            ]
        )
    headers = ["system", "GPUs", "owned used", "rent / buy", "starts after", "time to train P50 (P10 to P90)",
               f"P(meet {_duration(goal['deadline_s'])})", "cost owned", "cost rent/buy", "cost"]  # fmt: skip
    wanted = f"within {_duration(goal['deadline_s'])}"
    if goal["budget_usd"] is not None:
        wanted += f" for at most {_usd(goal['budget_usd'])}"
    head = f"Fleet plan: the cheapest mix per system type {wanted}{_confidence(goal['confidence'])}"
    lines = [f"{head}; times with losses (failures, checkpoints, stragglers, start-up); an offer's lead time delays "
             "the start", ""]  # fmt: skip
    lines.append(_tabulate(rows, headers))
    cheapest = report.cheapest()
    lines += ["", "No system type meets the goal." if cheapest is None else f"Cheapest: {cheapest.system}, "
              f"{_usd(cheapest.cost_usd())}"]  # fmt: skip
    timing = ["", f"Planned in {report.elapsed_s:.2f} s."] if timed else []
    return "\n".join(lines + (["", *notes] if notes else []) + timing)


PEAK_NOTE = ("Each job's column is its peak; 'left' is what remains at the busiest moment (jobs that do not run at "
             "once may add up to more than the total).")  # fmt: skip
"""Under the fleet's use tables: a job's column is its most at any moment, not what it holds beside the others."""


def jobs_table(report: Any) -> str:
    """`perfmodel plan --fleet` of a file with [[job]]s: each job's mixes over what the jobs planned before it
    left, then the fleet's use per pool and offer."""
    jobs = f"{len(report.jobs)} jobs" if len(report.jobs) > 1 else "1 job"
    parts = [f"{jobs} sharing the fleet, each over what the jobs planned before it left, in {report.order}"]
    if report.orders_tried > 1:
        parts[0] += (f" ({report.orders_tried} orders: {_usd(report.cost_usd())} in all; the tightest deadline first "
                     f"would cost {_usd(report.greedy_cost_usd)})")  # fmt: skip
    for job in report.jobs:
        parts += ["", f"Job {job.name} (planned {_ordinal(job.turn)}): " + fleet_table(job.report, timed=False)]
    names = [job.name for job in report.jobs]
    rows = [[u["name"], u["kind"], u["system"], u["site"] or "-", f"{u['gpus']:,}",
             *(f"{u['used'][n]:,}" if n in u["used"] else "-" for n in names), f"{u['left']:,}"]
            for u in report.use()]  # fmt: skip
    parts += ["", "Fleet use (GPUs):", _tabulate(rows, ["pool or offer", "kind", "system", "site", "GPUs", *names,
                                                        "left"]), PEAK_NOTE]  # fmt: skip
    if power := report.power_use():
        rows = [[u["site"] or "-", f"{u['cap_mw']:g}", *(f"{u['used_mw'][n]:,.2f}" if n in u["used_mw"] else "-"
                 for n in names), f"{u['left_mw']:,.2f}"] for u in power]  # fmt: skip
        parts += ["", "Site power (MW at the wall; the jobs at a site share its cap):",
                  _tabulate(rows, ["site", "cap", *names, "left"]), PEAK_NOTE]  # fmt: skip
    return "\n".join([*parts, "", f"Planned in {report.elapsed_s:.2f} s."])


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 < 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
