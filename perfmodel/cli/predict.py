"""`perfmodel predict`: one scenario, one answer."""

from __future__ import annotations

from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import FORMATS, emit, load_from_flags, scenario_options


@cli.command()
@scenario_options
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
def predict(scenario: str | None, fmt: str, **flags: Any) -> None:
    """Predict step time, throughput, memory, time-to-train and cost for one scenario.

    With no arguments it runs scenarios/default.toml. Flags override the file; a parallel dimension left out is
    chosen as the fastest layout that fits.
    """
    from perfmodel.outputs import report
    from perfmodel.planning.campaign import Campaign, predict_any

    result = predict_any(load_from_flags(scenario, flags))
    if isinstance(result, Campaign):
        from perfmodel.outputs.campaign_report import campaign_table

        emit(result.to_records() if fmt == "csv" else result.to_dict(), fmt, lambda: campaign_table(result))
        return
    emit(result.to_dict(), fmt, lambda: report.table(result))
