"""Render predictions for people (tables) and programs (JSON, CSV)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from perfmodel.inputs.precision import RECIPES
from perfmodel.inputs.scenario import flatten
from perfmodel.planning.predict import Prediction

BREAKDOWN_LABELS = {
    "compute_s": "compute (GEMMs, attention, elementwise)",
    "tp_comm_exposed_s": "tensor-parallel communication, exposed",
    "cp_comm_exposed_s": "context-parallel communication, exposed",
    "pp_bubble_s": "pipeline bubble",
    "pp_comm_exposed_s": "pipeline sends, exposed",
    "dp_comm_exposed_s": "data-parallel communication, exposed",
    "optimizer_s": "optimizer step",
    "other_s": "other (data loading, logging, syncs)",
    "ep_comm_exposed_s": "expert-parallel all-to-all, exposed",
}


def _si(value: float, unit: str = "") -> str:
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:,.2f}{suffix}{unit}"
    return f"{value:,.2f}{unit}"


def _usd(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "$" + _si(value).replace("B", "bn")


def _duration(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:,.1f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:,.1f} hours"
    return f"{seconds / 60:,.1f} min"


def table(p: Prediction) -> str:
    from tabulate import tabulate  # imported here: JSON and CSV output do not pay for it

    d = p.to_dict()
    acc = p.hardware.accelerator
    fmt = "BF16" if p.scenario.precision == "bf16" else p.scenario.precision.upper()
    gemm_fmt = RECIPES[p.scenario.precision].gemm_format.upper()
    chosen = "given" if p.layouts_searched == 1 else f"fastest that fits of {p.layouts_searched:,} valid layouts"
    fits = "fits" if d["fits_in_memory"] else "DOES NOT FIT"
    lines = [
        f"{p.model.name} on {p.layout.n_gpus:,} x {acc.name} ({p.hardware.system.id}), {fmt}",
        f"Layout: {p.layout.describe()} ({chosen})",
        "",
    ]
    band = "step_time_s_low" in d

    def interval(key: str, show: Any) -> str:
        return f" (80% interval {show(d[key + '_low'])} to {show(d[key + '_high'])})" if band else ""

    rows = [
        ["Step time", f"{d['step_time_s']:,.3f} s" + interval("step_time_s", lambda v: f"{v:,.2f} s")],
        ["Throughput", f"{d['tokens_per_s']:,.0f} tokens/s ({d['tokens_per_s_per_gpu']:,.0f} per GPU)"],
        ["Model TFLOP/s per GPU", f"{d['model_tflops_per_gpu']:,.1f}"],
        [
            "MFU",
            f"{d['mfu']:.1%} of dense BF16 peak"
            + ("" if gemm_fmt == "BF16" else f" ({d['mfu_of_precision']:.1%} of dense {gemm_fmt} peak)"),
        ],
        ["Memory per GPU", f"{d['memory_per_gpu_gb']:,.1f} GB of {d['memory_capacity_gb']:,.1f} GB ({fits})"],
    ]
    if p.run is not None:
        price = d["usd_per_gpu_hour"]
        cost = _usd(d["cost_usd"])
        if price is not None:
            cost += f" at ${price:,.2f}/GPU-h"
            if d["cost_usd_low"] != d["cost_usd_high"]:
                cost += (
                    f" (range {_usd(d['cost_usd_low'])} to {_usd(d['cost_usd_high'])}"
                    f" at ${d['usd_per_gpu_hour_low']:,.2f} to ${d['usd_per_gpu_hour_high']:,.2f})"
                )
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
        rows += [
            ["Tokens to train", _si(d["tokens_to_train"])],
            ["Time to train", _duration(d["time_to_train_s"]) + interval("time_to_train_s", _duration)],
            ["GPU-hours", f"{d['gpu_hours']:,.0f}"],
            ["Cost", cost],
            ["Energy", f"{d['energy_kwh'] / 1000:,.1f} MWh ({acc.power_w.value:,.0f} W per GPU x PUE {d['pue']})"],
        ]
    lines.append(tabulate(rows, tablefmt="plain", disable_numparse=True))
    step = d["step_time_s"]
    parts = [[BREAKDOWN_LABELS[k], f"{v:,.3f}", f"{v / step:.1%}"] for k, v in d["breakdown"].items()]
    lines += [
        "",
        "Where the step time goes:",
        tabulate(
            parts,
            headers=["part", "seconds", "share"],
            tablefmt="simple",
            colalign=("left", "right", "right"),
            disable_numparse=True,
        ),
    ]
    if not d["fits_in_memory"]:
        lines += [
            "",
            f"Warning: this layout needs {d['memory_per_gpu_gb']:,.1f} GB per GPU but the GPU has "
            f"{d['memory_capacity_gb']:,.1f} GB; try more PP/TP, recompute, or a higher ZeRO stage.",
        ]
    return "\n".join(lines)


def to_json(records: Any) -> str:
    """Strict JSON: a NaN or infinity (a model bug) fails loudly rather than printing what JSON parsers reject."""
    return json.dumps(records, indent=2, allow_nan=False)


def to_csv(records: list[dict[str, Any]]) -> str:
    rows = [flatten(r) for r in records]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def validation_table(result: Any) -> str:
    """Per-row measured vs predicted, MAPE per group, overall and held out, and what was excluded."""
    from tabulate import tabulate

    rows = [
        [r["source"], r["detail"][:28], r["model"], r["accelerator"], r["n_gpus"], r["precision"], r["metric"],
         f"{r['measured']:,.4g}", f"{r['predicted']:,.4g}", f"{r['error_pct']:+.1f}%",
         "" if r["held_out_error_pct"] is None else f"{r['held_out_error_pct']:+.1f}%"]
        for r in (row.to_dict() for row in result.rows)
    ]  # fmt: skip
    headers = ["source", "detail", "model", "GPU", "n", "precision", "metric", "measured", "predicted", "error",
               "held out"]  # fmt: skip
    lines = [tabulate(rows, headers=headers, disable_numparse=True), ""]
    for grouping, groups in result.groups().items():
        table = [
            [name, g["rows"], f"{g['mape_pct']:.1f}%", "" if g["cv_mape_pct"] is None else f"{g['cv_mape_pct']:.1f}%"]
            for name, g in groups.items()
        ]
        lines += [tabulate(table, headers=[grouping, "rows", "MAPE", "held-out MAPE"], disable_numparse=True), ""]
    cv = result.cv_mape_pct
    lines.append(
        f"MAPE {result.mape_pct:.1f}% over {len(result.rows)} runs (calibration: {result.calibration.source})"
        + ("" if cv is None else f"; held out (leave one accelerator x precision out) {cv:.1f}%")
    )
    if result.excluded:
        reasons: dict[str, int] = {}
        for e in result.excluded:
            short = e["reason"].split(":")[0][:70]
            reasons[short] = reasons.get(short, 0) + 1
        lines.append(f"Excluded {len(result.excluded)} rows (--format json lists each with its reason):")
        lines += [f"  {count:4d}  {reason}" for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1])]
    return "\n".join(lines)


def calibration_table(fitted: Any, baseline: Any) -> str:
    """Fitted parameters against the physical defaults, and the fit's in-sample and held-out error."""
    from tabulate import tabulate

    from perfmodel.physics.calibration import default_value

    rows = [
        [family, name, f"{default_value(family, name):.3f}", f"{value:.3f}"]
        for family, values in sorted(fitted.parameters.items())
        for name, value in values.items()
    ]
    fit = fitted.provenance["fit"]
    lines = [tabulate(rows, headers=["family", "parameter", "default", "fitted"], disable_numparse=True), ""]
    lines.append(f"in-sample MAPE {fit['in_sample_mape_pct']:.1f}% over {fit['rows']} runs")
    if fit.get("cv_mape_pct") is not None:
        band = fitted.provenance["interval"]
        lines.append(
            f"held-out MAPE {fit['cv_mape_pct']:.1f}% (leave one accelerator x precision group out); "
            f"80% interval on a predicted time: x{band['time_factor_low']:.3f} to x{band['time_factor_high']:.3f}"
        )
    return "\n".join(lines)
