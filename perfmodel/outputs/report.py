"""Render predictions for people (tables) and programs (JSON, CSV)."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable
from typing import Any

from perfmodel.errors import PerfmodelError, counted, visible
from perfmodel.inputs.grids import DEFAULT as DEFAULT_GRID
from perfmodel.inputs.hardware import Accelerator
from perfmodel.inputs.numbers import plain
from perfmodel.inputs.precision import RECIPES
from perfmodel.inputs.record import given
from perfmodel.inputs.scenario import TOKENS_PER_STEP_PUBLISHED, Scenario, flatten, from_default
from perfmodel.outputs import columns
from perfmodel.outputs.cells import csv_rows
from perfmodel.planning.confidence import PRICED
from perfmodel.planning.losses import expected
from perfmodel.planning.predict import Prediction
from perfmodel.planning.views import count_text, usd_text

LISTED_EXCLUSIONS = 10
"""Up to this many excluded rows (your own CSV's) are listed one by one with their id and whole reason, which names
the rule a row breaks; more (the bundled data's) are counted per kind of reason."""
BREAKDOWN_LABELS = {
    "compute_s": "compute (GEMMs, attention, elementwise)",
    "tp_comm_exposed_s": "tensor-parallel communication, exposed",
    "cp_comm_exposed_s": "context-parallel communication, exposed",
    "pp_bubble_s": "pipeline bubble",
    "pp_comm_exposed_s": "pipeline sends, exposed",
    "dp_comm_exposed_s": "data-parallel communication, exposed",
    "optimizer_s": "optimizer step",
    "other_s": "other (data loading, logging, syncs; activation offload if set)",
    "ep_comm_exposed_s": "expert-parallel all-to-all, exposed",
}


def _usd(value: float | None) -> str:
    return "n/a" if value is None else usd_text(value)


DURATION_UNITS = {"days": 86400.0, "hours": 3600.0, "min": 60.0}


def duration_unit(seconds: float) -> str:
    """The unit a duration reads best in: days from two days, hours from two hours, else minutes."""
    return "days" if seconds >= 2 * 86400 else "hours" if seconds >= 2 * 3600 else "min"


def column_unit(seconds: Iterable[float | None]) -> str | None:
    """One unit for a table's durations (no '3.7 hours' above '107.1 min'): the longest one's, so that no figure
    runs to six digits; None when there is none."""
    known = [s for s in seconds if s is not None]
    return duration_unit(max(known)) if known else None


def _duration(seconds: float, unit: str | None = None) -> str:
    """A duration in `unit` (default: the one it reads best in); below 1 to two significant digits, not 0.0."""
    unit = unit or duration_unit(seconds)
    value = seconds / DURATION_UNITS[unit]
    return f"{value:,.1f} {unit}" if value >= 1 or value == 0 else f"{plain(value, 2)} {unit}"


def inputs_lines(p: Prediction) -> list[str]:
    """The work, batch, price, PUE, software stack and release a prediction used, each marked where perfmodel chose
    it rather than the user: a planner must see the assumptions a number rests on."""
    s = p.scenario
    tokens_per_step = p.layout.gbs * p.layout.seq_len
    work = (
        f"{s.benchmark} (work set by the benchmark)"
        if s.benchmark
        else tokens_text(s)
        if s.tokens is not None
        else "no token budget (no time-to-train)"
    )
    batch = f"GBS {p.layout.gbs:,} x {p.layout.seq_len:,} = {count_text(tokens_per_step)} tokens per step"
    attention = _attention_inputs(p)
    return labelled_inputs([
        ("work", work), ("batch", batch + ("" if s.parallelism.gbs else f" (default: {s.default_batch()[1]})")),
        *([("attention", ", ".join(attention))] if attention else []),
        *([("sharding", f"hybrid: ZeRO-3 within groups of {p.shard_group} DP ranks")] if p.shard_group else []),
        *run_assumptions(p),
    ])  # fmt: skip


def labelled_inputs(inputs: list[tuple[str, str]]) -> list[str]:
    """'Inputs:' and one short line per input under it, labels aligned: the single line they were read ~330
    characters and wrapped mid-word in an 80-column terminal."""
    width = max(len(label) for label, _ in inputs)
    return ["Inputs:", *(f"  {label:<{width}}  {text}" for label, text in inputs)]


def bf16_ratio(mfu_bf16: float) -> str:
    """The other MFU convention, named and as a ratio: model FLOP/s over the dense BF16 peak, which NVIDIA's and the
    Llama 3 paper's MFU divide by; below BF16 it exceeds 1 (GB300 NVFP4 1.77x), so it is never a percentage."""
    return f"model FLOP/s {mfu_bf16:.2f}x the dense BF16 peak, the MFU basis of NVIDIA and the Llama 3 paper"


def tokens_text(s: Scenario) -> str:
    """A scenario's token budget, marked "(default)" where the default scenario gave it, not the user."""
    assert s.tokens is not None
    return f"{count_text(s.tokens)} tokens" + (" (default)" if "tokens" in from_default(s) else "")


def _attention_inputs(p: Prediction) -> list[str]:
    """What priced the attention where it is not whole sequences on one rank: packed documents, CP's exchange."""
    s, found = p.scenario, []
    if s.documents.histogram is not None:
        found.append(f"over {s.documents.label}")
    if p.layout.cp > 1:
        found.append(f"CP exchange {s.cp_exchange}" + ("" if s.parallelism.cp_comm else " (the stack's)"))
    return found


def run_assumptions(p: Prediction) -> list[tuple[str, str]]:
    """The price, PUE, grid, software stack and release of `inputs_lines`, labelled, each marked where perfmodel
    chose it."""
    s = p.scenario
    price = f"${p.price.usd_per_gpu_hour:,.2f}/GPU-h" if p.price.usd_per_gpu_hour is not None else "no price"
    price_note = (
        " (owned, see Owning)"
        if s.cost.mode == "buy"
        else f" ({p.price.source})"
        if p.price.usd_per_gpu_hour is None
        else f" ({p.price.basis_line})"
        if s.cost.usd_per_gpu_hour or s.cost.usd_per_gpu_hour_range
        else f" ({p.price.basis_line}; the GPU's default)"
    )
    pue = f"PUE {s.cost.pue:g}" + ("" if "pue" in given(s.cost) else " (default)")
    grid = f"grid {s.cost.grid_gco2_per_kwh:,.0f} gCO2e/kWh" + (
        "" if "grid_gco2_per_kwh" in given(s.cost) else f" (default: {DEFAULT_GRID})"
    )
    return [
        ("price", price + price_note),
        ("energy", f"{pue}, {grid}"),
        ("stack", s.stack + ("" if "stack" in given(s) else " (default)") + _knobs(s)),
        ("software", f"release {s.vintage}" if s.vintage else "the newest release fitted (default)"),
        ("fitted", _calibration_text(s.calibration)),
    ]


def _calibration_text(calibration: str | None) -> str:
    """Which calibration priced the run: a `calibrate --data` file changes every figure, so the output names it."""
    if calibration is None:
        return "the bundled calibration (default)"
    if calibration.lower() == "none":
        return "no calibration: the physical defaults, no interval"
    return f"calibration {visible(calibration)}"


def _knobs(s: Scenario) -> str:
    """The stack's knobs as run, each marked where it is the stack's default: ' (vanilla TP, eager (default))'."""
    knobs, chosen = s.knobs, given(s)
    words = {
        "async_tp": "async TP" if knobs.async_tp else "vanilla TP",
        "compile": "torch.compile" if knobs.compile else "eager",
        "fp8_recipe": f"FP8 {knobs.fp8_recipe}" if s.precision == "fp8" else None,
    }
    shown = [w + ("" if name in chosen else " (default)") for name, w in words.items()
             if w is not None and getattr(knobs, name) is not None]  # fmt: skip
    return f" ({', '.join(shown)})" if shown else ""


def _wall_power(p: Prediction) -> str:
    """'1,365 W per GPU at the wall (board 700, host 575, network 90)': what the energy counts."""
    s = p.hardware.system
    parts = f"board {p.hardware.accelerator.power_w.value:,.0f}, host {s.host_w_per_gpu.value:,.0f}, network " + (
        f"{s.network_w_per_gpu.value:,.0f}"
    )
    return f"{p.hardware.it_power_w_per_gpu:,.0f} W per GPU at the wall ({parts})"


def tonnes(co2e_t: float) -> str:
    """tCO2e to two decimals below 10 t, one below 100 t, whole tonnes above."""
    return f"{co2e_t:,.2f}" if co2e_t < 10 else f"{co2e_t:,.1f}" if co2e_t < 100 else f"{co2e_t:,.0f}"


def carbon_text(d: dict[str, Any]) -> str:
    """'1.07 tCO2e operational at 367 gCO2e/kWh + 0.02 t embodied (estimate)': a run's carbon, one line."""
    return (
        f"{tonnes(d['co2e_t'])} tCO2e operational at {d['grid_gco2_per_kwh']:,.0f} gCO2e/kWh"
        f" + {tonnes(d['co2e_embodied_t'])} t embodied (estimate; README, Power and carbon)"
    )


def _energy(kwh: float) -> str:
    """Energy in MWh, or in kWh below one MWh: an MLPerf-sized run (28.7 kWh on 72 GB300s) read '0.0 MWh'."""
    return f"{kwh / 1000:,.1f} MWh" if kwh >= 1000 else f"{kwh:,.1f} kWh"


def price_range(d: dict[str, Any]) -> str:
    """A record's cost at its low and high price, with those prices (' (range $7.92M to $18.23M at $2.99 to
    $6.88)'); '' for a price without a range."""
    if d["cost_usd_at_min_price"] == d["cost_usd_at_max_price"]:
        return ""
    return (
        f" (range {_usd(d['cost_usd_at_min_price'])} to {_usd(d['cost_usd_at_max_price'])}"
        f" at ${d['min_usd_per_gpu_hour']:,.2f} to ${d['max_usd_per_gpu_hour']:,.2f})"
    )


def _usable(acc: Accelerator) -> str:
    """Where a job gets less than the HBM the datasheet (and `hardware list`) prints, say so: 279 of GB300's 288."""
    if acc.hbm_usable_gb is None or acc.hbm_usable_gb.value == acc.hbm_gb.value:
        return ""
    return f" usable ({acc.hbm_gb.value:g} GiB HBM)"


def dense_imbalance_note(imbalances: list[float], dense: list[str]) -> str:
    """moe_imbalance given where dense models run: it is accepted (one scenario or sweep serves dense and MoE models
    alike) and ignored for them, which the output says rather than leaving silent."""
    given = ", ".join(f"{v:g}" for v in imbalances)
    return (
        f"Note: moe_imbalance {given} does not apply to {', '.join(dense)}: a dense model routes no tokens to experts "
        "(it counts for mixture-of-experts models only)."
    )


def headline(p: Prediction, system: bool = True) -> str:
    """A prediction as predict's table, explain and a workbook's title head it, the model and accelerator by name:
    'Llama 3.1 405B on 1,024 x NVIDIA H100 SXM 80GB (dgx-h100), FP8' (`system` False: without the system id)."""
    where = f" ({p.hardware.system.id})" if system else ""
    accelerator = visible(p.hardware.accelerator.name)
    return f"{p.model.name} on {p.layout.n_gpus:,} x {accelerator}{where}, {p.scenario.precision.upper()}"


def layout_chosen(searched: int) -> str:
    """How a prediction's layout was chosen, from its `layouts_searched`: given (1), or by the search; predict's
    table and a workbook's Assumptions say it alike."""
    return "given" if searched == 1 else f"fastest that fits of {searched:,} valid layouts"


def table(p: Prediction) -> str:
    d = p.to_dict()
    acc = p.hardware.accelerator
    gemm_fmt = RECIPES[p.scenario.precision].gemm_format.upper()
    chosen = layout_chosen(p.layouts_searched)
    fits = "fits" if d["fits_in_memory"] else "DOES NOT FIT"
    lines = [
        headline(p),
        f"Layout: {p.layout.describe()} ({chosen})",
    ]
    if p.model.is_moe:  # imported here: a dense predict does not load it
        from perfmodel.outputs.experts import experts_text

        lines.append(f"Experts: {experts_text(p)}")
    lines += [*inputs_lines(p), ""]
    band = "step_time_s_low" in d

    widened = ", widened (below)" if p.evidence is not None and p.evidence.widened_by else ""

    def interval(key: str, show: Any) -> str:
        source = f", {d['interval_protocol']} residuals{widened}" if band else ""
        return f" (80% interval P10 {show(d[key + '_low'])} to P90 {show(d[key + '_high'])}{source})" if band else ""

    def quantiles(key: str, show: Any) -> str:
        """A run figure's P10 and P90: the interval and the run-to-run variability combined (confidence.py)."""
        if not band:
            return ""
        runs = f", run-to-run {p.spread.run_sd:.2%}" if p.spread.run_sd else ""
        drawn = key in PRICED and p.spread.price is not None
        price = f", price {p.price.note.removesuffix(' given for this run')}" if drawn else ""
        sources = f"{d['interval_protocol']} residuals{widened}{runs}{price}"
        return f" (P10 {show(d[key + '_p10'])} to P90 {show(d[key + '_p90'])}: {sources})"

    rows = [
        ["Step time", f"{d['step_time_s']:,.3f} s" + interval("step_time_s", lambda v: f"{v:,.2f} s")],
        ["Throughput", f"{d['tokens_per_s']:,.0f} tokens/s ({d['tokens_per_s_per_gpu']:,.0f} per GPU)"],
        ["Model TFLOP/s per GPU", f"{d['model_tflops_per_gpu']:,.1f}"],
        [
            "MFU",
            f"{d['mfu_of_precision']:.1%} of dense {gemm_fmt} peak"
            + ("" if gemm_fmt == "BF16" else f" ({bf16_ratio(d['mfu_bf16'])})"),
        ],
        [
            "Memory per GPU",
            f"{d['memory_per_gpu_gib']:,.1f} GiB of {d['memory_capacity_gib']:,.1f} GiB{_usable(acc)} ({fits})",
        ],
    ]
    if p.run is not None:
        price = d["usd_per_gpu_hour"]
        cost = _usd(d["cost_usd"])
        if price is not None:
            cost += f" at ${price:,.2f}/GPU-h {p.price.basis}" + quantiles("cost_usd", _usd) + price_range(d)
        else:
            cost += f" ({p.price.source})"
        if p.mlperf is not None:
            rows.append(
                [
                    "MLPerf benchmark",
                    f"{d['benchmark']}: {d['samples_to_converge']:,.0f} samples to converge (RCP mean at GBS "
                    f"{p.layout.gbs}), {d['evaluations']:.1f} evaluations ({d['eval_time_s'] / 60:,.1f} min)",
                ]
            )
        marked = " (default)" if "tokens" in from_default(p.scenario) else ""
        rows += [
            ["Tokens to train", count_text(d["tokens_to_train"]) + marked],
            ["Time to train", _duration(d["time_to_train_s"]) + quantiles("time_to_train_s", _duration)],
            ["GPU-hours", expected(d["gpu_hours"]) + quantiles("gpu_hours", expected)],
            ["Cost", cost],
            *_cost_rows(d),
            [
                "Energy",
                f"{_energy(d['energy_kwh'])} ({_wall_power(p)} x PUE {d['pue']})" + quantiles("energy_kwh", _energy),
            ],
            ["Carbon", carbon_text(d)],
        ]
    if p.goodput is not None:
        rows += goodput_rows(p)
    if p.losses is not None:
        rows += loss_rows(p)
    lines.append(columns.table(rows))
    step = d["step_time_s"]
    parts = [[BREAKDOWN_LABELS[k], f"{v:,.3f}", f"{v / step:.1%}"] for k, v in d["breakdown"].items()]
    lines += [
        "",
        "Where the step time goes:",
        columns.table(parts, headers=["part", "seconds", "share"], colalign=("left", "right", "right")),
    ]
    if p.model.is_moe:
        from perfmodel.physics.calibration import MOE_PROTOCOL

        lines += [
            "",
            "Note: a mixture-of-experts prediction uses MoE parameters fitted on the Megatron-Bridge MoE rows of "
            "every container (docs/moe_validation.md: its error per model and container); the 80% interval above "
            + (
                "comes from MoE models each predicted by a MoE fit without it."
                if d.get("interval_protocol") == MOE_PROTOCOL
                else "comes from dense rows and is too narrow for this model."
            ),
        ]
        if p.measured is not None:
            lines.append(p.measured.note())
    if p.evidence is not None:
        lines += ["", p.evidence.note(), *p.evidence.warning()]
    if not p.model.is_moe and p.scenario.moe_imbalance != 1.0:
        lines += ["", dense_imbalance_note([p.scenario.moe_imbalance], [p.model.id])]
    if not d["fits_in_memory"]:
        lines += [
            "",
            f"Warning: this layout needs {d['memory_per_gpu_gib']:,.1f} GiB per GPU but the GPU has "
            f"{d['memory_capacity_gib']:,.1f} GiB; try more PP/TP, recompute, or a higher ZeRO stage.",
        ]
    tokens_per_step = p.layout.gbs * p.layout.seq_len
    if tokens_per_step > TOKENS_PER_STEP_PUBLISHED:
        lines += [
            "",
            f"Warning: {count_text(tokens_per_step)} tokens per step is beyond any published convergence data we "
            f"know (MLPerf's Llama 3.1 405B reference points reach {count_text(TOKENS_PER_STEP_PUBLISHED)}; Llama 3 "
            "pre-trained at 16M at most): more tokens may be needed to reach the same loss.",
        ]
    return "\n".join(lines + quote_warning(p))


QUOTE_FACTOR = 3.0
"""A quoted price above this many times the accelerator's highest bundled price per GPU-hour is warned of: the bundled
quotes of one GPU span at most 4x (MI300X $1.50-$6.00), so 3x their top is no market's, while a node's price per
hour (8 GPUs' worth: a DGX H100 node at CoreWeave's $49.24, the source of h100-sxm's $6.16) is a unit easily slipped."""


def quote_warning(p: Prediction) -> list[str]:
    """The lines warning of a quoted price per GPU-hour far above any public one (QUOTE_FACTOR): a node's price?"""
    acc, quote = p.hardware.accelerator, p.price.usd_per_gpu_hour
    top = acc.usd_per_gpu_hour_high or acc.usd_per_gpu_hour
    if p.price.basis != "quoted" or quote is None or top is None or quote <= QUOTE_FACTOR * top.value:
        return []
    node = int(p.hardware.system.gpus_per_node.value)
    return [
        "",
        f"Warning: the quoted ${quote:,.2f}/GPU-h is {quote / top.value:.1f}x the highest public price of {acc.id} "
        f"(${top.value:,.2f}): a node's price? The price is per GPU and hour; a node of {node} GPUs at ${quote:,.2f} "
        f"an hour is ${quote / node:,.2f} per GPU-hour.",
    ]


def check_finite(value: Any, where: str = "result") -> None:
    """Outputs never hold a NaN or infinity: one line naming the field rather than a file JSON parsers reject."""
    if isinstance(value, dict):
        for key, item in value.items():
            check_finite(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            check_finite(item, f"{where}[{index}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise PerfmodelError(f"{where} is {value}: not written (no output holds a non-finite number)")


def _cost_rows(d: dict[str, Any]) -> list[list[str]]:
    """When buying, what owning costs per GPU-hour; in both modes, the cost per million tokens."""
    rows = []
    if "tco" in d:
        t = d["tco"]
        rows.append(
            [
                "Owning",
                f"{_usd(t['usd_per_system'])} per system ({_usd(t['min_usd_per_system'])} to "
                f"{_usd(t['max_usd_per_system'])}) / {t['gpus_per_system']} GPUs over {t['amortisation_years']:g} "
                f"years at {t['utilisation']:.0%}: ${t['capex_usd_per_gpu_hour']:,.2f} + power "
                f"${t['power_usd_per_gpu_hour']:,.2f} + facility ${t['facility_usd_per_gpu_hour']:,.2f} per GPU-h",
            ]
        )
    if "usd_per_million_tokens" in d:
        rows.append(["Cost per 1M tokens", f"${d['usd_per_million_tokens']:,.3f}"])
    return rows


NEVER_FINISHES = "never finishes: interruptions come faster than the job recovers"


def goodput_rows(p: Prediction) -> list[list[str]]:
    """Goodput and, with a run, the run as it is expected to go with failures."""
    g, d = p.goodput, p.to_dict()
    assert g is not None
    detail = d["reliability"]
    mtbf = "no failures" if detail["job_mtbf_h"] is None else f"job MTBF {detail['job_mtbf_h']:,.1f} h"
    rows = [
        [
            "Goodput",
            f"{g.goodput:.1%} of wall time trains ({mtbf}; checkpoint {detail['checkpoint_gb']:,.0f} GB written in "
            f"{g.write_s:,.1f} s every {_duration(g.interval_s)}; restart {g.restart_s / 60:,.0f} min + load)",
        ]
    ]
    if p.run is None:
        return rows
    if d["time_to_train_with_failures_s"] is None:
        return [*rows, ["With failures", NEVER_FINISHES]]
    summary = (
        f"{_duration(d['time_to_train_with_failures_s'])}, {expected(d['expected_interruptions'])} interruptions "
        f"({expected(d['expected_unexpected_interruptions'])} unexpected), {_usd(d['cost_usd_with_failures'])}, "
        f"{_energy(d['energy_kwh_with_failures'])}"
    )
    return [*rows, ["With failures", summary]]


def loss_rows(p: Prediction) -> list[list[str]]:
    """One line per real-world loss (planning/losses.py), then the run with all of them."""
    lost, run = p.losses, p.run_with_losses
    assert lost is not None
    base = lost.run.gpu_hours
    rows = [
        [f"Loss: {loss.name}", f"{expected(loss.gpu_hours)} GPU-h (+{loss.gpu_hours / base:.1%}): {loss.detail}"]
        for loss in lost.items
    ]
    if run is None:
        return [*rows, ["With losses", NEVER_FINISHES]]
    summary = f"{_duration(run.time_s)}, {expected(run.gpu_hours)} GPU-hours (+{lost.gpu_hours / base:.1%})"
    if run.cost_usd is not None:
        summary += f", {_usd(run.cost_usd)}"
    return [*rows, ["With losses", f"{summary}, {_energy(run.energy_kwh)}"]]


def to_json(records: Any) -> str:
    """Strict JSON: a NaN or infinity fails with one line rather than printing what JSON parsers reject (the field
    is looked for only then: walking validate's 600 rows first cost a tenth of its JSON's time)."""
    try:
        return json.dumps(records, indent=2, allow_nan=False)
    except ValueError:
        check_finite(records)
        raise


def to_csv(records: list[dict[str, Any]]) -> str:
    import csv  # here: a table or JSON output need not import it at start-up

    check_finite(records)
    flat = [flatten(r) for r in records]
    # every row's columns, the first row's order first: a row with a price has cost columns that a row without one
    # (mi355x) lacks, and such a column is empty in the other rows rather than a crash of the writer
    keys = list(dict.fromkeys(key for row in flat for key in row))
    rows = csv_rows([{key: row.get(key) for key in keys} for row in flat])
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=keys, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _measure(value: float) -> str:
    """A measured or predicted figure to four significant digits, without an exponent (33,020 tokens/s, not
    3.302e+04): whole numbers with thousands separators from 1,000 up."""
    return f"{value:,.0f}" if abs(value) >= 1000 else plain(value, 4)


def _basis(record: dict[str, Any]) -> str:
    """How a validated row's layout was set: reported, searched, or the dimensions its stack set (and the range)."""
    if not record["layout_assumed"]:
        return str(record["layout_basis"])
    low, high = record["min_predicted"], record["max_predicted"]
    return f"{'/'.join(record['layout_assumed'])} at {record['layout_basis']} ({_measure(low)}..{_measure(high)})"


def validation_table(result: Any, before: Any = None) -> str:
    """Per-row measured vs predicted, MAPE per group, overall and held out, and what was excluded; with `before`
    (the bundled calibration's report, when another is given), each row's error and the MAPE before it."""
    from perfmodel.outputs.columns import tabulated

    earlier = {row.prepared.run.id: row.error_pct for row in before.rows} if before else {}
    rows = [
        [r["source"], r["detail"][:28], r["model"], r["accelerator"], f"{r['n_gpus']:,}", r["precision"], r["metric"],
         _measure(r['measured']), _measure(r['predicted']), f"{r['error_pct']:+.1f}%",
         "" if r["held_out_error_pct"] is None else f"{r['held_out_error_pct']:+.1f}%", _basis(r)]
        + ([f"{earlier[r['id']]:+.1f}%" if r["id"] in earlier else ""] if before else [])
        for r in (row.to_dict() for row in result.rows)
    ]  # fmt: skip
    headers = ["source", "detail", "model", "GPU", "n", "precision", "metric", "measured", "predicted", "error",
               "held out", "layout"] + (["error before"] if before else [])  # fmt: skip
    numbers = ("n", "measured", "predicted", "error", "held out", "error before")  # right-aligned, as they compare
    align = ["right" if h in numbers else "left" for h in headers]
    lines = [tabulated(rows, headers=headers, disable_numparse=True, colalign=align), ""]
    for grouping, groups in result.groups().items():
        table = [
            [name, g["rows"], f"{g['mape_pct']:.1f}%", "" if g["cv_mape_pct"] is None else f"{g['cv_mape_pct']:.1f}%"]
            for name, g in groups.items()
        ]
        group_headers = [grouping, "rows", "MAPE", "held-out MAPE"]
        group_align = ("left", "right", "right", "right")
        lines += [tabulated(table, headers=group_headers, disable_numparse=True, colalign=group_align), ""]
    cv = result.cv_mape_pct
    whole = all(row.prepared.run.metric == "gpu_hours" for row in result.rows)
    held = "leave one whole run out of the loss fit" if whole else "leave one accelerator x precision out"
    held = "each of your rows left out of its fit" if "user" in result.calibration.provenance else held
    lines.append(
        f"MAPE {result.mape_pct:.1f}% over {counted(len(result.rows), 'run')} "
        f"(calibration: {result.calibration.source})" + ("" if cv is None else f"; held out ({held}) {cv:.1f}%")
    )
    if before:
        lines.append(f"Before it (calibration: {before.calibration.source}): MAPE {before.mape_pct:.1f}% over "
                     f"{counted(len(before.rows), 'run')}")  # fmt: skip
    lines += [f"{run.id}: {run.assumptions[0]}" for run in (row.prepared.run for row in result.rows)
              if run.id.startswith("log:") and run.assumptions]  # training logs: the steps used  # fmt: skip
    lines += _exclusions(result.excluded, "--format json lists each with its reason")
    over = [(row.prepared.run.id, gib) for row in result.rows if (gib := row.prepared.over_memory_gib)]
    if over:
        lines.append(
            f"Warning: {len(over)} rows' layouts exceed the memory estimate, which a run that ran cannot (check their "
            "layout columns and measured value): "
            + "; ".join(f"{run_id} needs {need:,.1f} of {held:,.1f} GiB per GPU" for run_id, (need, held) in over)
        )
    return "\n".join(lines)


REASON_KIND_CHARS = 100
"""A reason's first clause up to this long is its kind in the counted list; a longer one is cut to its head."""


def reason_kind(reason: str) -> str:
    """What a counted exclusion says: the reason's first clause ('Kimi-K2: trained with the Muon optimizer', not
    'Kimi-K2' alone, which says nothing of why), or for a long one its head before the colon ('DeepSpeed
    implementation'), at most 70 characters."""
    kind = reason.split(";")[0]
    return kind if len(kind) <= REASON_KIND_CHARS else kind.split(":")[0][:70]


def _exclusions(excluded: list[dict[str, str]], where: str) -> list[str]:
    """The rows left out: each with its id and whole reason when there are few, else counted per kind of reason."""
    if 0 < len(excluded) <= LISTED_EXCLUSIONS:
        return [f"Excluded {len(excluded)} rows:"] + [f"  {e['id']}: {e['reason']}" for e in excluded]
    reasons: dict[str, int] = {}
    for e in excluded:
        short = reason_kind(e["reason"])
        reasons[short] = reasons.get(short, 0) + 1
    counted = [f"  {count:4d}  {reason}" for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1])]
    return [f"Excluded {len(excluded)} rows ({where}):", *counted] if excluded else []


def protocol_table(result: Any) -> str:
    """An out-of-sample protocol for people: every held-out row, MAPE per fold, and overall."""
    from perfmodel.outputs.columns import tabulated

    record = result.to_dict()
    rows = [
        [r["fold"], r["source"], r["detail"][:24], r["model"], r["accelerator"], r["n_gpus"], r["format"],
         r["metric"], _measure(r['measured']), _measure(r['predicted']), f"{r['error_pct']:+.1f}%"]
        for r in record["rows"]
    ]  # fmt: skip
    headers = ["fold", "source", "detail", "model", "GPU", "n", "format", "metric", "measured", "predicted", "error"]
    folds = [
        [f["name"], f["train_rows"], f["test_rows"], f"{f['mape_pct']:.1f}%", ", ".join(f["test_families_at_defaults"])]
        for f in record["folds"]
    ]
    return "\n".join([
        tabulated(rows, headers=headers, disable_numparse=True), "",
        tabulated(folds, headers=["fold", "train rows", "test rows", "MAPE", "held-out families at defaults"],
                 disable_numparse=True), "",
        f"Protocol {record['protocol']} ({record['definition']}): MAPE {record['mape_pct']:.1f}% over "
        f"{len(record['rows'])} rows, each predicted by a fit that never saw it",
    ])  # fmt: skip


def whole_runs_table(result: Any) -> str:
    """The whole-runs protocol for people: each published run predicted by a loss fit that never saw it."""
    from perfmodel.outputs.columns import tabulated

    record = result.to_dict()
    rows = [
        [r["id"], r["detail"][:28], r["basis"], f"{r['measured']:,.0f}", f"{r['predicted']:,.0f}",
         f"{r['error_pct']:+.1f}%", f"{r['held_out_straggler_share']:.3f}", r["layout"]]
        for r in record["rows"]
    ]  # fmt: skip
    headers = ["run", "source", "basis", "GPU-h published", "GPU-h predicted", "error", "straggler share", "layout"]
    return "\n".join([
        tabulated(rows, headers=headers, disable_numparse=True), "",
        f"Protocol {record['protocol']} ({record['definition']}): MAPE {record['mape_pct']:.1f}%, mean error "
        f"{record['mean_error_pct']:+.1f}% over {len(rows)} runs (in sample: {record['in_sample_mape_pct']:.1f}%, "
        f"{record['in_sample_mean_error_pct']:+.1f}% at a straggler share of {record['straggler_share']:.3f}).",
        record["not_identified"],
    ])  # fmt: skip


def parameter_figure(value: float) -> str:
    """A parameter value: three decimals, or three significant figures for the small ones (seconds per expert)."""
    return f"{value:.3f}" if abs(value) >= 0.01 else plain(value, 3)


def calibration_table(fitted: Any) -> str:
    """Fitted parameters against the physical defaults, and the fit's in-sample and held-out error."""
    from perfmodel.fitting.calibrate import describe
    from perfmodel.outputs.columns import tabulated

    records = describe(fitted.parameters)
    rows = [
        [r["key"], r["scope"], parameter_figure(r["default"]), parameter_figure(r["fitted"]),
         "{}-{}".format(*r["bounds"]), "at bound" if r["at_bound"] else ""]
        for r in records
    ]  # fmt: skip
    fit = fitted.provenance["fit"]
    headers = ["parameter", "scope", "default", "fitted", "range", ""]
    lines = [tabulated(rows, headers=headers, disable_numparse=True), ""]
    bound = [r["key"] for r in records if r["at_bound"]]
    lines.append(f"{len(records)} parameters; at a bound: {', '.join(bound) or 'none'}")
    lines.append(f"in-sample MAPE {fit['in_sample_mape_pct']:.1f}% over {fit['rows']} runs")
    if fit.get("cv_mape_pct") is not None:
        band = fitted.provenance["interval"]
        lines.append(
            f"held-out MAPE {fit['cv_mape_pct']:.1f}% (leave one accelerator x precision group out); "
            f"80% interval on a predicted time: x{band['time_factor_low']:.3f} to x{band['time_factor_high']:.3f}"
        )
    validated = fitted.provenance.get("validation")
    if validated:
        lines.append(
            f"validation MAPE {validated['mape_pct']:.1f}% over {validated['rows']} runs, as `perfmodel validate` "
            "scores them; kept per group and per row for the accuracy gate (tests/test_accuracy_gate.py)"
        )
    for name, result in fitted.provenance.get("protocols", {}).items():
        band = result["interval"]
        lines.append(
            f"protocol {name}: MAPE {result['mape_pct']:.1f}% over {result['rows']} held-out runs; "
            f"80% interval x{band['time_factor_low']:.3f} to x{band['time_factor_high']:.3f}"
        )
    lines.append(
        "(errors of the predicted time, which the fit minimises; `perfmodel validate` scores each row in its own "
        "metric, so a throughput row's error there is 1/(1+e)-1 of its time error e)"
    )
    lines += _exclusions(fitted.provenance["data"]["excluded"], "the calibration file's data.excluded lists each")
    return "\n".join(lines)
