"""Write docs/validation.md and docs/validation.png from the current model and calibration.

Never edit those files by hand: run `python scripts/validation_report.py` (needs the `plot` extra for the figure).
Every number in them is computed here, from the bundled measured runs and the bundled calibration.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

from tabulate import tabulate

from perfmodel.fitting import protocols, whole_runs
from perfmodel.fitting.calibrate import describe, interval
from perfmodel.fitting.runs import MOE_SOURCE, bundled_runs
from perfmodel.fitting.validation import Report, Row, validate
from perfmodel.inputs.resources import data_dir
from perfmodel.inputs.scenario import load_scenario
from perfmodel.inputs.stacks import STACKS
from perfmodel.outputs.report import parameter_figure
from perfmodel.physics import calibration as cal
from perfmodel.planning.predict import predict

DOCS = Path(__file__).resolve().parent.parent / "docs"
MLPERF_TARGETS = [
    # (scenario, measured score in minutes, mlperf_training_llm.csv row)
    ("mlperf-405b-h100-512.toml", 269.122, "v5.0 NVIDIA Eos-dfw (64x NVIDIA HGX H100)"),
    ("mlperf-405b-gb200-512.toml", 121.757, "v5.0 NVIDIA Tyche (8x NVIDIA GB200 NVL72)"),
]


def _mape(rows: list) -> float:
    return sum(abs(r.error_pct) for r in rows) / max(len(rows), 1)


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:+.1f}%"


def _mlperf_section() -> list[str]:
    rows, scores = [], []
    for scenario, measured, source in MLPERF_TARGETS:
        predicted = predict(load_scenario(data_dir("scenarios") / scenario)).to_dict()["time_to_train_min"]
        scores.append((predicted, measured))
        rows.append([source, f"{measured:.2f}", f"{predicted:.2f}", _pct((predicted / measured - 1) * 100)])
    (h100, h100_measured), (gb200, gb200_measured) = scores
    ratio, ratio_measured = h100 / gb200, h100_measured / gb200_measured
    rows.append(["GB200 speed-up over H100", f"{ratio_measured:.2f}x", f"{ratio:.2f}x",
                 _pct((ratio / ratio_measured - 1) * 100)])  # fmt: skip
    return [
        "## MLPerf Training v5.0, Llama 3.1 405B at 512 GPUs",
        "",
        "The submitted layouts (scenarios/mlperf-405b-*-512.toml); the score is predicted at the RCP mean "
        "convergence, with evaluations, as the result summarizer reports it.",
        "",
        tabulate(rows, headers=["submission", "measured (min)", "predicted (min)", "error"], tablefmt="github"),
        "",
    ]


def _time_error_pct(row: Row) -> float:
    """The row's error on a time (a throughput's inverted): + is too slow."""
    return ((row.predicted / row.prepared.run.measured) ** row.prepared.time_sign - 1) * 100


def _range_error(rows: list[Row]) -> str:
    ranged = [r.range_error_pct for r in rows if r.range_error_pct is not None]
    return f"{sum(abs(e) for e in ranged) / len(ranged):.1f}%" if ranged else ""


def _unreported_section(dense: list[Row]) -> list[str]:
    """Rows whose layout the source leaves partly open are predicted at their stack's settings (fitting.assumed):
    their error is reported apart, with its sign, and with their range over the stack's plausible settings."""
    by_dims: dict[tuple[str, tuple[str, ...]], list[Row]] = {}
    for row in dense:
        assumed = row.prepared.settled.assumed if row.prepared.settled else ()
        by_dims.setdefault((row.prepared.basis, assumed), []).append(row)
    table = [
        [", ".join(dims) or "(none: every dimension reported)", basis, len(rows), f"{_mape(rows):.1f}%",
         _pct(sum(_time_error_pct(r) for r in rows) / len(rows)),
         sum(1 for r in rows if r.range_error_pct == 0) if dims else "", _range_error(rows)]
        for (basis, dims), rows in sorted(by_dims.items(), key=lambda kv: (len(kv[0][1]), kv[0][1], kv[0][0]))
    ]  # fmt: skip
    return [
        "## Dense rows with unreported layout dimensions",
        "",
        "A dimension the source does not report (recompute, ZeRO sharding, micro-batch) is set as the row's stack "
        "runs it (perfmodel/inputs/stacks.py, each default with its source): the row is priced at every plausible "
        "setting of its stack that fits in memory. 'stack default': the point is the stack's default and the fit "
        "uses it. 'stack choice': the default does not fit, so the point is what the recipe would set, the least "
        "memory-saving setting that fits (fitting/assumed.py MEMORY_ORDER: the stack's sharding kept, then none < "
        "selective < a full recompute of the fewest leading layers per pipeline chunk < every layer; ZeRO raised "
        "only where no recompute fits), and the fit uses it. 'range': a dimension has no sourced default (the "
        "micro-batch) or nothing fits, so the fit uses the distance to the range (0 inside it) and the MAPE here "
        "and everywhere else scores the range's geometric middle. Never the model's best layout. Signed error: "
        "time-like metrics, + is too slow.",
        "",
        tabulate(
            table,
            headers=[
                "dimensions assumed",
                "scored on",
                "rows",
                "MAPE",
                "mean signed error",
                "measured in range",
                "error to range",
            ],
            tablefmt="github",
        ),
        "",
        "The stacks' settings (a blank default: none can be sourced, the row is scored on its range):",
        "",
        tabulate(
            [
                [
                    s.name,
                    d.dimension,
                    "" if d.default is None else d.default,
                    ", ".join(map(str, d.plausible)),
                    d.source,
                ]
                for s in STACKS.values()
                for d in s.layout_defaults
            ],
            headers=["stack", "dimension", "default", "plausible", "source"],
            tablefmt="github",
        ),
        "",
    ]


def _groups_section(report: Report) -> list[str]:
    lines = []
    for grouping, groups in report.groups().items():
        table = [
            [name, g["rows"], f"{g['mape_pct']:.1f}%", "" if g["cv_mape_pct"] is None else f"{g['cv_mape_pct']:.1f}%"]
            for name, g in groups.items()
        ]
        lines += [f"### By {grouping}", "", tabulate(table, headers=[grouping, "rows", "MAPE", "held-out MAPE"],
                                                       tablefmt="github"), ""]  # fmt: skip
    return lines


def _parameters_section(calibration: cal.Calibration) -> list[str]:
    records = describe(calibration.parameters)
    rows = [
        [r["key"], r["scope"], parameter_figure(r["default"]), parameter_figure(r["fitted"]),
         "{}-{}".format(*r["bounds"]), "at bound" if r["at_bound"] else "", r["informed_by"]]
        for r in records
    ]  # fmt: skip
    bound = [r["key"] for r in records if r["at_bound"]]
    return [
        "## Fitted parameters",
        "",
        "The named parameter table (perfmodel/physics/parameters.py): shared across families wherever the mechanism "
        "is the same, per vendor library, per family as a generation factor with a tight prior, per stack or MLPerf "
        "benchmark. 'default' is the prior centre (physical defaults, perfmodel/physics/efficiency.py). A value at a "
        "bound of its physical range marks structure the model lacks rather than a measured efficiency. "
        f"{len(records)} parameters; at a bound: {', '.join(bound) or 'none'}.",
        "",
        tabulate(rows, headers=["parameter", "scope", "default", "fitted", "range", "", "informed by"],
                 tablefmt="github"),
        "",
    ]  # fmt: skip


def _protocols_section(results: list[protocols.ProtocolResult]) -> list[str]:
    summary = []
    for r in results:
        band = interval(r.residuals)
        summary.append([r.protocol, r.to_dict()["definition"], len(r.folds), len(r.rows), f"{r.mape_pct:.1f}%",
                        f"x{band['time_factor_low']:.3f} to x{band['time_factor_high']:.3f}"])  # fmt: skip
    folds = [
        [r.protocol, f["name"], f["train_rows"], f["test_rows"], f"{f['mape_pct']:.1f}%",
         ", ".join(f["test_families_at_defaults"])]
        for r in results for f in r.to_dict()["folds"]
    ]  # fmt: skip
    return [
        "## Out-of-sample protocols",
        "",
        "`perfmodel validate --protocol P` (definitions in the design notes): every row below is predicted by a fit "
        "that never saw it, started from the physical defaults; layouts the data leave open are chosen with the "
        "defaults too. Errors are on the reported metric. A held-out family 'without own factors' got no generation "
        "factor from its fold, so its rows are predicted with its vendor's shared values and datasheet facts. The "
        "per-row errors are in the protocol columns of 'Every row'. A prediction's 80% interval comes from the "
        "residuals of the protocol matching its question (`interval_protocol` in its JSON): a family the fit has no "
        "row of is a new generation, a format without rows on that family a new precision, more GPUs than any of the "
        "family's rows a new scale, anything else the next run on covered ground (forward).",
        "",
        tabulate(summary, headers=["protocol", "definition", "folds", "rows", "MAPE", "80% interval on a time"],
                 tablefmt="github"),
        "",
        tabulate(folds, headers=["protocol", "fold", "train rows", "test rows", "MAPE", "families without own factors"],
                 tablefmt="github"),
        "",
    ]  # fmt: skip


def _rows_section(report: Report, results: list[protocols.ProtocolResult]) -> list[str]:
    held = {r.protocol: {row.item.run.id: row.error_pct for row in r.rows} for r in results}
    rows = [
        [r["id"], r["source"], r["detail"][:40], r["model"], r["accelerator"], r["n_gpus"], r["precision"],
         r["metric"], f"{r['measured']:.4g}", f"{r['predicted']:.4g}", _pct(r["error_pct"]),
         _pct(r["held_out_error_pct"]), *(_pct(held[p].get(r["id"])) for p in held)]
        for r in (row.to_dict() for row in report.rows)
    ]  # fmt: skip
    headers = ["id", "source", "detail", "model", "GPU", "n", "precision", "metric", "measured", "predicted", "error",
               "held out", *held]  # fmt: skip
    return [
        "## Every row",
        "",
        "'held out': leave one accelerator x precision group out; the protocol columns: the row's error when its "
        "protocol fold held it out (blank where no fold predicts it).",
        "",
        tabulate(rows, headers=headers, tablefmt="github"),
        "",
    ]


def _whole_runs_section(result: whole_runs.Result) -> list[str]:
    """Published whole runs against the run with failures and losses; the loss stage and what it cannot separate."""
    rows = []
    for priced, row in zip(result.rows, result.residuals(), strict=True):
        lost = priced.prediction.losses.to_dict() if priced.prediction.losses else {}
        base = priced.prediction.to_dict()["gpu_hours"]
        parts = ", ".join(f"{k.removesuffix('_gpu_hours')} {v / base:+.1%}" for k, v in lost.items()
                          if k != "total_gpu_hours" and v >= 0.0005 * base)  # fmt: skip
        rows.append([row["id"].removesuffix("-gpu-hours"), row["detail"][:32], row["basis"], f"{row['measured']:,.0f}",
                     f"{base:,.0f}", f"{row['predicted']:,.0f}", _pct(row["error_pct"]),
                     _pct(row["held_out_error_pct"]), parts, row["layout"]])  # fmt: skip
    headers = ["run", "source", "basis", "published GPU-h", "failure-free GPU-h", "predicted GPU-h", "error",
               "left out", "losses (share of failure-free, at share 0)", "layout searched"]  # fmt: skip
    return [
        "## Whole runs: published GPU-hours",
        "",
        "The published GPU-hours of ten whole pre-training runs (`perfmodel/data/whole_runs.csv`, from the data notes' "
        "`whole_runs.csv`: LLaMA Table 15, Llama 2 Table 2, BLOOM section 3.4.1, the Falcon-180B and MPT-7B blogs), "
        "each predicted as `perfmodel predict` answers it: its layout searched among what its stack's release could "
        "run (inputs/features.py), its kernels of that release, its sourced settings (the row's `settings` and "
        "`perfmodel_notes`), failures and every loss (planning/losses.py). A `wall` row is compared with "
        "`gpu_hours_with_losses`; the `steady` one (LLaMA 65B: tokens over 380 tokens/s/GPU) with `gpu_hours` and the "
        "stragglers. The straggler share is the one number fitted (the calibration's `losses` stage: "
        f"{result.share:.3f} at 128 GPUs; prior 0.104, ByteDance's); 'left out' refits it without the row "
        "(`perfmodel validate --protocol whole-runs`).",
        "",
        f"MAPE {result.mape_pct():.1f}% (mean {result.mean_error_pct():+.1f}%); leave one run out "
        f"{result.mape_pct(held_out=True):.1f}% (mean {result.mean_error_pct(held_out=True):+.1f}%), over "
        f"{len(result.rows)} runs.",
        "",
        tabulate(rows, headers=headers, tablefmt="github"),
        "",
        whole_runs.NOT_IDENTIFIED,
        "",
    ]


def _excluded_section(report: Report) -> list[str]:
    reasons: dict[str, list[str]] = {}
    for e in report.excluded:
        reasons.setdefault(e["reason"], []).append(e["id"])
    rows = [[len(ids), reason, ", ".join(ids[:4]) + (" ..." if len(ids) > 4 else "")] for reason, ids in
            sorted(reasons.items(), key=lambda kv: -len(kv[1]))]  # fmt: skip
    return ["## Excluded rows", "", tabulate(rows, headers=["rows", "reason", "ids"], tablefmt="github"), ""]


def _plot(report: Report, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, axes = plt.subplots(1, 3, figsize=(16, 5.2))
    units = {"tokens_per_s_per_gpu": "tokens/s per GPU", "step_time_s": "step time (s)",
             "time_to_train_min": "MLPerf time to train (min)"}  # fmt: skip
    sources = sorted({r.prepared.run.source for r in report.rows})
    colours = {s: plt.cm.tab10(i % 10) for i, s in enumerate(sources)}
    for axis, (metric, label) in zip(axes, units.items(), strict=True):
        rows = [r for r in report.rows if r.prepared.run.metric == metric]
        for source in sources:
            points = [r for r in rows if r.prepared.run.source == source]
            if points:
                axis.scatter([r.prepared.run.measured for r in points], [r.predicted for r in points], s=14,
                             color=colours[source], label=source, alpha=0.8)  # fmt: skip
        values = [r.prepared.run.measured for r in rows] + [r.predicted for r in rows]
        low, high = min(values) * 0.8, max(values) * 1.25
        axis.plot([low, high], [low, high], color="black", linewidth=1)
        for factor in (0.9, 1.1):
            axis.plot([low, high], [low * factor, high * factor], color="grey", linewidth=0.6, linestyle="--")
        axis.set(xscale="log", yscale="log", xlim=(low, high), ylim=(low, high), xlabel=f"measured {label}",
                 ylabel=f"predicted {label}", title=f"{label}: {len(rows)} runs")  # fmt: skip
        axis.grid(True, which="both", alpha=0.2)
    handles, labels = axes[0].get_legend_handles_labels()
    for axis in axes[1:]:
        more = axis.get_legend_handles_labels()
        handles += [h for h, lab in zip(*more, strict=True) if lab not in labels]
        labels += [lab for lab in more[1] if lab not in labels]
    figure.legend(handles, labels, loc="lower center", ncol=min(len(labels), 6), fontsize=8)
    figure.suptitle("perfmodel: predicted vs measured (bundled calibration); dashed lines +-10%")
    figure.tight_layout(rect=(0, 0.1, 1, 0.95))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def main() -> None:
    DOCS.mkdir(exist_ok=True)
    calibration = cal.bundled()
    runs, excluded = bundled_runs()
    report = validate(runs, calibration, excluded)
    items = protocols.fitted_items(runs, excluded)
    results = [protocols.evaluate(name, items) for name in protocols.PROTOCOLS]
    fit = calibration.provenance.get("fit", {})
    fitted_ids = set(calibration.provenance.get("data", {}).get("rows", []))
    fitted = [r for r in report.rows if r.prepared.run.id in fitted_ids]
    not_fitted = [r for r in report.rows if r.prepared.run.id not in fitted_ids]
    moe = [r for r in not_fitted if r.prepared.run.source.startswith(MOE_SOURCE)]
    steps = [r for r in report.rows if not whole_runs.is_whole_run(r.prepared.run)]
    composer = [r for r in steps if r.prepared.context.stack == "composer"]
    dense = [r for r in steps if not r.prepared.run.source.startswith(MOE_SOURCE)]
    whole = whole_runs.stage(whole_runs.bundled_whole_runs(), calibration)
    plotted = _plot(report, DOCS / "validation.png")
    band = calibration.provenance.get("interval", {})
    lines = [
        "# Validation: perfmodel against measured training runs",
        "",
        f"Generated by `scripts/validation_report.py` on {datetime.now(UTC):%Y-%m-%d} from the current model and the "
        f"bundled calibration (fitted {calibration.provenance.get('created', '?')}). Do not edit by hand.",
        "",
        "## Summary",
        "",
        f"- Rows predicted: {len(report.rows)}; excluded: {len(report.excluded)} (reasons at the end).",
        f"- Fitted rows: {len(fitted)}; in-sample MAPE {_mape(fitted):.1f}%.",
        f"- Held-out MAPE (leave one accelerator x precision group out, refit, predict it): "
        f"{fit.get('cv_mape_pct', float('nan')):.1f}% over {fit.get('rows', 0)} rows.",
        f"- llm-foundry (the composer stack, fitted with its own attention, FSDP-overlap and step-overhead "
        f"parameters): {len(composer)} rows, MAPE {_mape(composer):.1f}%.",
        f"- Mixture-of-experts rows, not in the dense fit (per model below, under 'By source'; every container's "
        f"rows but GPT-OSS-120B's fit the calibration's MoE stage, docs/moe_validation.md): {len(moe)} rows, MAPE "
        f"{_mape(moe):.1f}%.",
        f"- All dense rows: MAPE {_mape(dense):.1f}%; all predicted rows: MAPE {report.mape_pct:.1f}%.",
        f"- Published whole runs (GPU-hours with failures and losses, below): {len(whole.rows)} runs, leave one run "
        f"out MAPE {whole.mape_pct(held_out=True):.1f}%, mean error {whole.mean_error_pct(held_out=True):+.1f}%.",
        "- Out of sample (each row predicted by a fit that never saw it): "
        + "; ".join(f"{r.protocol} {r.mape_pct:.1f}% over {len(r.rows)} rows" for r in results)
        + ".",
        f"- 80% interval on a predicted time, from the leave-one-group-out residuals: "
        f"x{band.get('time_factor_low', 1):.3f} to x{band.get('time_factor_high', 1):.3f}; from each protocol's, in "
        "the protocols table (predictions use the one matching their question).",
        "",
        *_mlperf_section(),
        *(["![predicted vs measured](validation.png)", ""] if plotted else []),
        *_protocols_section(results),
        *_whole_runs_section(whole),
        "## Error by group",
        "",
        *_groups_section(report),
        *_unreported_section(dense),
        *_parameters_section(calibration),
        *_rows_section(report, results),
        *_excluded_section(report),
    ]
    (DOCS / "validation.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {DOCS / 'validation.md'}" + (f" and {DOCS / 'validation.png'}" if plotted else ""), file=sys.stderr)


if __name__ == "__main__":
    main()
