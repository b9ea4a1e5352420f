"""Tables for people of a campaign: a line per phase and the total, then the run's totals as a prediction's summary
reads; and a comparison of systems that each run the whole campaign."""

from __future__ import annotations

from typing import Any

from perfmodel.errors import visible
from perfmodel.inputs.precision import RECIPES
from perfmodel.inputs.scenario import TOKENS_PER_STEP_PUBLISHED, TOTAL
from perfmodel.outputs import columns
from perfmodel.outputs.plan_report import (
    LOSS_HEADERS,
    LOSSES_NOTE,
    PRECISION_LABEL,
    beyond_mark,
    beyond_note,
    full_layout,
    loss_cells,
    predictions,
    price_notes,
    table_unit,
    with_losses,
)
from perfmodel.outputs.record import price_basis
from perfmodel.outputs.report import (
    _duration,
    _energy,
    _usd,
    bf16_ratio,
    carbon_text,
    counted,
    labelled_inputs,
    price_range,
    run_assumptions,
    tonnes,
)
from perfmodel.planning.campaign import Campaign
from perfmodel.planning.evidence import DOC
from perfmodel.planning.losses import expected
from perfmodel.planning.views import count_text

LONG_CONTEXT = 32_768
"""Sequence length from which a phase runs where the only measured rows are an older release's (NeMo's long-sequence
table, perfmodel/data/long_sequence.csv: 32K-1M tokens with CP, NeMo 24.03)."""
PHASE_HEADERS = ["phase", "GPUs", "prec.", "layout", "seq", "batch (tokens)", "tokens", "step s", "days",
                 "GPU-hours", "cost"]  # fmt: skip
BEYOND_PHASE = " [e]"
"""The mark of a phase beyond the measured runs the calibration saw (planning/evidence.py); `*` marks a searched
layout here."""
NEVER_FINISHES = "never finishes: a phase's interruptions come faster than it recovers"
RIGHT = ("GPUs", "seq", "batch (tokens)", "tokens", "step s", "days", "GPU-hours", "cost")


def phase_rows(c: Campaign) -> list[list[str]]:
    """A line per phase (its layout starred where it was searched) and the total line."""
    rows = []
    for name, p in c.phases.items():
        lo, run = p.layout, p.run
        assert run is not None  # every phase has its tokens
        rows.append([
            name + (BEYOND_PHASE if p.evidence is not None and p.evidence.beyond else ""), f"{lo.n_gpus:,}",
            PRECISION_LABEL[p.scenario.precision],
            full_layout(p, batch=False) + (" *" if p.layouts_searched > 1 else "") + ("" if p.step.fits else " (!)"),
            f"{lo.seq_len:,}", f"{lo.gbs:,} ({count_text(lo.gbs * lo.seq_len)})", count_text(run.tokens),
            f"{p.step_time_s:,.3f}",
            f"{run.time_s / 86400:,.1f}", f"{run.gpu_hours:,.0f}", _usd(run.cost_usd),
        ])  # fmt: skip
    run = c.run
    rows.append([TOTAL, f"{c.n_gpus:,}", "", "", "", "", count_text(run.tokens), "", f"{run.time_s / 86400:,.1f}",
                 f"{run.gpu_hours:,.0f}", _usd(run.cost_usd)])  # fmt: skip
    return rows


def _quantiles(c: Campaign, key: str, show: Any) -> str:
    """A total's P10 and P90 (the phases' intervals and run-to-run variability combined: the model's error shared
    by the phases, the variability each phase's own), where the phases have an interval."""
    d = c.record
    if d.get(f"{key}_p10") is None or d.get("time_to_train_s_low") is None:
        return ""
    protocol = d.get("interval_protocol") or "per-phase"
    runs = f", run-to-run {c.first.spread.run_sd:.2%}" if c.first.spread.run_sd else ""
    shared = ", model error shared by the phases" if len(c.phases) > 1 else ""
    return f" (P10 {show(d[key + '_p10'])} to P90 {show(d[key + '_p90'])}: {protocol} residuals{runs}{shared})"


def summary_rows(c: Campaign) -> list[list[str]]:
    """The campaign's totals, as a prediction's summary shows a run's."""
    d = c.record
    cost = _usd(d["cost_usd"])
    if d["usd_per_gpu_hour"] is not None:
        cost += f" at ${d['usd_per_gpu_hour']:,.2f}/GPU-h {c.price.basis}" + _quantiles(c, "cost_usd", _usd)
        cost += price_range(d)
    else:
        cost += f" ({c.price.source})"
    precision = d["precision"]
    gemm = RECIPES[precision].gemm_format.upper() if precision is not None else None
    peak = "each phase's dense GEMM peak" if gemm is None else f"dense {gemm} peak"
    mfu = f"{d['mfu_of_precision']:.1%} of {peak}"
    if gemm != "BF16":
        mfu += f" ({bf16_ratio(d['mfu_bf16'])})"
    rows = [
        ["Tokens to train", count_text(d["tokens_to_train"])],
        ["Time to train", _duration(d["time_to_train_s"]) + _quantiles(c, "time_to_train_s", _duration)],
        ["GPU-hours", expected(d["gpu_hours"]) + _quantiles(c, "gpu_hours", expected)],
        ["Cost", cost],
    ]
    if d.get("usd_per_million_tokens") is not None:
        rows.append(["Cost per 1M tokens", f"${d['usd_per_million_tokens']:,.3f}"])
    rows += [
        ["Energy", _energy(d["energy_kwh"]) + _quantiles(c, "energy_kwh", _energy)],
        ["Carbon", carbon_text(d)],
        ["Throughput", f"{d['tokens_per_s']:,.0f} tokens/s ({d['tokens_per_s_per_gpu']:,.0f} per GPU), whole run"],
        ["Model TFLOP/s per GPU", f"{d['model_tflops_per_gpu']:,.1f} (model FLOPs over GPU time)"],
        ["MFU", mfu + ", over the campaign's GPU time"],
    ]
    if d.get("goodput") is not None:
        low, high = (f"{f(p.goodput.goodput for p in c.phases.values() if p.goodput):.1%}" for f in (min, max))
        spread = "" if low == high else f" (phases {low} to {high})"
        rows.append(["Goodput", f"{d['goodput']:.1%} of wall time trains{spread}"])
        failing = c.run_with_failures
        if failing is None:
            rows.append(["With failures", NEVER_FINISHES])
        else:
            rows.append([
                "With failures",
                f"{_duration(failing.time_s)}, {expected(d['expected_interruptions'])} interruptions "
                f"({expected(d['expected_unexpected_interruptions'])} unexpected), "
                f"{expected(failing.gpu_hours)} GPU-hours, {_usd(failing.cost_usd)}, "
                f"{_energy(failing.energy_kwh)}",
            ])  # fmt: skip
    return rows + loss_rows(c)


def loss_rows(c: Campaign) -> list[list[str]]:
    """The real-world losses summed over the phases, one line each as a prediction prints them, then the campaign
    with all of them; none when the phases price no losses (`--losses none`)."""
    d = c.record
    lost = {k.removeprefix("losses."): v for k, v in d.items() if k.startswith("losses.") and v is not None}
    if not lost:
        return []
    base = d["gpu_hours"]
    rows = []
    for key, hours in lost.items():
        if key == "total_gpu_hours":
            continue
        name = key.removesuffix("_gpu_hours")
        phases = [n for n, p in c.phases.items() if p.losses and any(x.name == name for x in p.losses.items)]
        where = "every phase" if len(phases) == len(c.phases) else ", ".join(phases)
        rows.append([f"Loss: {name}", f"{expected(hours)} GPU-h (+{hours / base:.1%}), summed over {where}"])
    if d.get("gpu_hours_with_losses") is None:  # a phase never finishes
        return [*rows, ["With losses", NEVER_FINISHES]]
    summary = f"{_duration(d['time_to_train_with_losses_s'])}, {expected(d['gpu_hours_with_losses'])} GPU-hours "
    summary += f"(+{lost['total_gpu_hours'] / base:.1%})"
    if d.get("cost_usd_with_losses") is not None:
        summary += f", {_usd(d['cost_usd_with_losses'])}"
    return [*rows, ["With losses", f"{summary}, {_energy(d['energy_kwh_with_losses'])}"]]


def notes(c: Campaign) -> list[str]:
    """What a planner must know about some phases: searched layouts, memory, batches and sequences beyond the data."""
    lines = []
    if any(p.layouts_searched > 1 for p in c.phases.values()):
        lines.append("* searched: the fastest layout that fits the phase's GPUs, batch and sequence length.")
    for name, p in c.phases.items():
        if not p.step.fits:
            lines.append(
                f"(!) {name}: this layout needs {float(p.step.memory.total) / 2**30:,.1f} GiB per GPU of "
                f"{p.step.hbm_bytes / 2**30:,.1f} GiB; try more PP/TP/CP, recompute, or a higher ZeRO stage."
            )
    big = [name for name, p in c.phases.items() if p.layout.gbs * p.layout.seq_len > TOKENS_PER_STEP_PUBLISHED]
    if big:
        lines.append(
            f"Warning: {', '.join(big)}: more tokens per step than any published convergence data we know "
            f"({count_text(TOKENS_PER_STEP_PUBLISHED)}); more tokens may be needed to reach the same loss."
        )
    long = [name for name, p in c.phases.items() if p.layout.seq_len >= LONG_CONTEXT]
    if long:
        lines.append(
            f"Note: {', '.join(long)}: sequences of {LONG_CONTEXT:,} tokens and more: the only measured runs there "
            "(NeMo 24.03's long-sequence table, Llama 2 7B, 32K-1M tokens with CP) are priced 2-7% slow; none "
            "measures today's releases at these lengths."
        )
    return lines + evidence_notes(c)


def evidence_notes(c: Campaign) -> list[str]:
    """The phases beyond the measured runs the calibration saw: a line naming the axes in planning/evidence.py's
    words and how much wider that made the interval, shared by the phases it is true of."""
    found: dict[str, list[str]] = {}
    for name, p in c.phases.items():
        e = p.evidence
        if e is not None and e.beyond:
            text = "; ".join(e.axis_text(axis) for axis in e.beyond)
            text += f" (80% interval {e.widening:.2f}x as wide)" if e.widened_by else ""
            found.setdefault(text, []).append(name)
    if not found:
        return []
    head = (
        f"{BEYOND_PHASE.strip()} beyond the measured runs the calibration saw ({DOC}; explain --phase NAME shows it):"
    )
    return [head, *(f"  {', '.join(names)}: {text}" for text, names in found.items())]


def campaign_table(c: Campaign) -> str:
    """`perfmodel predict` of a campaign."""
    acc, precisions = c.hardware.accelerator, {p.scenario.precision for p in c.phases.values()}
    shown = ", ".join(PRECISION_LABEL[p] for p in sorted(precisions))
    lines = [
        f"{c.model.name} campaign of {counted(len(c.phases), 'phase')} on up to {c.n_gpus:,} x {visible(acc.name)} "
        f"({c.hardware.system.id}), {shown}",
        *labelled_inputs([("work", f"{count_text(c.run.tokens)} tokens"), *run_assumptions(c.first)]),
        "",
        columns.table(phase_rows(c), PHASE_HEADERS, [("right" if h in RIGHT else "left") for h in PHASE_HEADERS]),
        "",
        columns.table(summary_rows(c)),
    ]
    found = notes(c)
    return "\n".join(lines + (["", *found] if found else []))


def compare_table(records: list[dict[str, Any]], results: list[Campaign]) -> str:
    """`perfmodel compare` of a campaign: each system runs the whole campaign; totals per row, ratios to the first."""
    first = results[0]
    with_goodput, lossy = first.goodput is not None, with_losses(records)
    unit = table_unit(records)
    rows = []
    for record, c in zip(records, results, strict=True):
        failing = c.run_with_failures
        rows.append(
            [c.hardware.system.id + beyond_mark(c), PRECISION_LABEL[c.scenario.precision], f"{c.n_gpus:,}",
             f"{c.tokens_per_s_per_gpu:,.0f}", f"{record['mfu_of_precision']:.1%}", _duration(c.run.time_s, unit),
             f"{c.run.gpu_hours:,.0f}", _usd(c.run.cost_usd), f"{c.run.energy_kwh / 1000:,.1f}",
             tonnes(record["co2e_t"])]
            + ([f"{c.goodput:.1%} ({'never' if failing is None else _duration(failing.time_s, unit)})"] if with_goodput
               else [])
            + (loss_cells(record, unit) if lossy else [])
            + [f"{record['speedup_vs_first']:,.2f}x", _ratio(record["perf_per_usd_vs_first"])]
        )  # fmt: skip
    headers = (["system", "prec.", "GPUs", "tok/s/GPU", "MFU", "time to train", "GPU-hours", "cost", "MWh", "tCO2e"]
               + (["goodput (time with failures)"] if with_goodput else []) + (LOSS_HEADERS if lossy else [])
               + ["speedup", "perf/$"])  # fmt: skip
    align = ["left", "left"] + ["right"] * (len(headers) - 2)
    note = (
        f"Each row runs the whole campaign ({counted(len(first.phases), 'phase')}; phases with a GPU count of their "
        "own keep it). "
        "tok/s/GPU and MFU: over the campaign's GPU time (MFU of each phase's own precision). speedup: campaign "
        f"throughput over the first row's; perf/$: tokens per dollar over the first row's, cost {price_basis(records)}."
    ) + (LOSSES_NOTE if lossy else "")
    lines = [f"{first.model.name} campaign", "", columns.table(rows, headers, align), "", note, *price_notes(results)]
    return "\n".join(lines + beyond_note(predictions(results)))


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.2f}x"
