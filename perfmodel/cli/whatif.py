"""`perfmodel whatif` and `perfmodel sensitivity`: the same run on modified hardware."""

from __future__ import annotations

from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import (
    FORMATS,
    RelativeChange,
    emit,
    load_from_flags,
    progress,
    quiet_option,
    scenario_options,
    table_or_json,
)


@cli.command()
@scenario_options
@click.option(
    "--set",
    "settings",
    multiple=True,
    required=True,
    metavar="NAME=VALUE|NAME=xF",
    help="A hardware parameter, absolute or as a multiplier (repeat). See the list above.",
)
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
def whatif(scenario: str | None, settings: tuple[str, ...], fmt: str, **flags: Any) -> None:
    """Predict the scenario on modified hardware: same layout, and the best layout found again.

    \b
    Settable (absolute in the unit shown, or xF (Fx) for F times the datasheet):
      bf16_tflops, fp8_tflops, fp4_tflops  dense tensor-core peaks, TFLOP/s
      hbm_tbps                             HBM bandwidth, TB/s
      hbm_gb                               HBM capacity, GiB (the datasheet's '80 GB' is 80 GiB)
      nvlink_gbps                          scale-up GB/s per GPU, both directions (900 = H100)
      domain_gpus                          GPUs per NVLink/xGMI domain
      nic_gbps, nics_per_gpu               scale-out Gb/s per NIC, NICs per GPU
      oversubscription                     leaf-to-spine taper (1 = non-blocking)
      scaleup_latency_us, nic_latency_us, switch_latency_us, collective_step_us
      power_w                              board W: energy, and the GEMMs' share of peak (W per peak FLOP/s)
      usd_per_gpu_hour                     cost only
    Each takes values about 100x beyond today's parts either way (domain_gpus up to 576, 64 on a full mesh).
    Example: perfmodel whatif --gpu h100-sxm --gpus 64 --set nvlink_gbps=1800 --set hbm_tbps=x1.5
    """
    from perfmodel.outputs import plan_report
    from perfmodel.planning import whatif as what
    from perfmodel.planning.compare import with_ratios

    parsed = [what.parse_setting(text) for text in settings]
    loaded = load_from_flags(scenario, flags)
    cases = what.cases(loaded, parsed)
    records = with_ratios([p for _, p in cases])
    changes = what.changes(cases[0][1].hardware, parsed)
    for (label, _), record in zip(cases, records, strict=True):
        record["case"] = label
        record["hardware_changes"] = {} if label == "baseline" else changes
    emit(records, fmt, lambda: plan_report.whatif_table(records, cases))


@cli.command()
@scenario_options
@click.option(
    "--step",
    type=RelativeChange(),
    default=0.05,
    show_default=True,
    help="Relative change for the finite differences: 0.05 or 5%.",
)
@table_or_json
@quiet_option
def sensitivity(scenario: str | None, step: float, fmt: str, quiet: bool, **flags: Any) -> None:
    """Elasticity of step time to each hardware parameter (d log T / d log p): what the run is bound by.

    Central differences on a log scale at the scenario's layout and, when the scenario leaves layout dimensions
    open, with the layout searched again at each point.
    """
    from perfmodel.outputs import plan_report
    from perfmodel.planning.request import CLI
    from perfmodel.planning.sensitivity import sensitivity as analyse

    loaded = load_from_flags(scenario, flags)
    with progress("Perturbing", quiet) as update:
        result = analyse(loaded, step, update, CLI)
    emit(result.to_dict(), fmt, lambda: plan_report.sensitivity_table(result))
