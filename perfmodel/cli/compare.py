"""`perfmodel compare`: the same workload on several systems, precisions and cluster sizes."""

from __future__ import annotations

from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import FORMATS, emit, progress, purchase_read, quiet_option, scenario_flags, scenario_options

relayout_option = click.option(
    "--relayout",
    is_flag=True,
    help="Ignore the scenario file's layout (keep its GBS and sequence length): each system gets its best layout.",
)


def compare_from_flags(
    scenario: str | None, relayout: bool, quiet: bool, flags: dict[str, Any], prices_owning: bool = False
) -> list[Any]:
    """The predictions `perfmodel compare` makes for these flags (also used by export compare, which prices owning
    beside renting: `prices_owning`, and plot)."""
    from perfmodel.planning import compare as comparing

    targets, counts = flags.pop("gpu"), flags.pop("gpus")
    options, origins = scenario_flags(flags)
    read = purchase_read(prices_owning)
    items = comparing.compare_request(scenario, options, origins, targets, counts, relayout, purchase_read=read)
    with progress("Predicting", quiet) as update:
        return comparing.run(items, update)


@cli.command()
@scenario_options(many_gpus=True, many_systems=True)
@relayout_option
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
@quiet_option
def compare(scenario: str | None, relayout: bool, fmt: str, quiet: bool, **flags: Any) -> None:
    """Compare systems (--gpu ID[:PRECISION][@N][:$PRICE], repeated) and cluster sizes (--gpus 256,512,1024).

    Each row is a full prediction; layout dimensions the scenario leaves open are searched per row. Ratios are to
    the first row: speedup (throughput), perf per dollar (tokens per USD at each row's price, in brackets its range) and
    energy per token; with several sizes, scaling efficiency (tokens/s per GPU over the system's smallest size).
    """
    from perfmodel.outputs import plan_report
    from perfmodel.planning import compare as comparing
    from perfmodel.planning.campaign import Campaign

    predictions = compare_from_flags(scenario, relayout, quiet, flags)
    records = comparing.with_ratios(predictions)
    if isinstance(predictions[0], Campaign):  # each row runs the whole campaign: its totals, its phases in JSON
        from perfmodel.outputs.campaign_report import compare_table

        rows = [flat for r in records for flat in comparing.flat_rows(r)] if fmt == "csv" else records
        emit(rows, fmt, lambda: compare_table(records, predictions))
        return
    emit(records, fmt, lambda: plan_report.compare_table(records, predictions))
