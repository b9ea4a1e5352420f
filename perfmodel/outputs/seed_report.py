"""The table of `perfmodel ratios`: the seed's MLPerf headline, measured against predicted."""

from __future__ import annotations

from typing import Any


def seed_ratios_table(result: Any) -> str:
    """The four 512-GPU runs (measured, predicted, source row) and the seed's ratios (its figure, measured,
    predicted)."""
    from perfmodel.outputs.columns import tabulated
    from perfmodel.outputs.record import price_cell

    runs = [
        [r["run"], r["layout"], f"{r['measured_min']:.2f}", f"{r['predicted_min']:.2f}", f"{r['error_pct']:+.1f}%",
         price_cell(r["usd_per_gpu_hour"], r["price_basis"]), r["source_row"]]
        for r in (run.to_dict() for run in result.runs)
    ]  # fmt: skip
    ratios = [
        [r["ratio"], r["seed"], f"{r['measured']:.2f}x", f"{r['predicted']:.2f}x", f"{r['error_pct']:+.1f}%"]
        for r in (ratio.to_dict() for ratio in result.ratios)
    ]
    heads = ["run (512 GPUs)", "layout", "measured min", "predicted min", "error", "$/GPU-h", "measured: source row"]
    return "\n".join(
        [
            "MLPerf Training Llama 3.1 405B on 512 GPUs: each result priced at its published layout and batch, the "
            "work its score stands for and its own release",
            tabulated(runs, headers=heads, disable_numparse=True),
            "",
            tabulated(ratios, headers=["ratio", "seed", "measured", "predicted", "error"], disable_numparse=True),
            "",
            "Per dollar: the speed ratio times the ratio of the accelerators' bundled prices per GPU-hour (`perfmodel "
            "hardware show ID`): H100's a list price, GB300's an estimate (GB200's list price x 1.25).",
            f"Calibration: {result.calibration}. Scenarios with these layouts: scenarios/mlperf-405b-*.toml.",
        ]
    )
