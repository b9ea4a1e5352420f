"""`perfmodel compare`: the same workload on several systems, precisions and cluster sizes."""

from __future__ import annotations

from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import FORMATS, emit, load_from_flags, progress, quiet_option, scenario_options

relayout_option = click.option(
    "--relayout",
    is_flag=True,
    help="Ignore the scenario file's layout (keep its GBS and sequence length): each system gets its best layout.",
)


def compare_from_flags(scenario: str | None, relayout: bool, quiet: bool, flags: dict[str, Any]) -> list[Any]:
    """The predictions `perfmodel compare` makes for these flags (also used by export compare and plot)."""
    from perfmodel.planning import compare as comparing

    counts = flags.pop("gpus")
    comparing.check_size(len(flags["gpu"]), len(counts or []))
    targets = [comparing.parse_target(spec) for spec in flags.pop("gpu")]
    first = targets[0] if targets else None
    flags |= {"gpu": first and first.gpu, "gpus": counts[0] if counts else None}
    flags["system"] = flags["system"] or (first and first.system)
    base = load_from_flags(scenario, flags, relayout)
    items = comparing.scenarios(base, targets, counts)
    with progress("Predicting", quiet) as update:
        return comparing.run(items, update)


@cli.command()
@scenario_options(many_gpus=True, many_systems=True)
@relayout_option
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
@quiet_option
def compare(scenario: str | None, relayout: bool, fmt: str, quiet: bool, **flags: Any) -> None:
    """Compare systems (--gpu ID[:PRECISION], repeated) and cluster sizes (--gpus 256,512,1024) on one workload.

    Each row is a full prediction; layout dimensions the scenario leaves open are searched per row. Ratios are to
    the first row: speedup (throughput), perf per dollar (tokens per USD, at on-demand and at low/high prices) and
    energy per token; with several sizes, scaling efficiency (tokens/s per GPU over the system's smallest size).
    """
    from perfmodel.outputs import plan_report
    from perfmodel.planning import compare as comparing

    predictions = compare_from_flags(scenario, relayout, quiet, flags)
    records = comparing.with_ratios(predictions)
    emit(records, fmt, lambda: plan_report.compare_table(records, predictions))
