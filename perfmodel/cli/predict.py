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
    question = load_from_flags(scenario, flags)
    if question.phase:  # the campaign modules only for a campaign: they are most of what a plain start imports anew
        from perfmodel.outputs.campaign_report import campaign_table
        from perfmodel.planning.campaign import predict_campaign

        campaign = predict_campaign(question)
        emit(campaign.to_records() if fmt == "csv" else campaign.to_dict(), fmt, lambda: campaign_table(campaign))
        return
    from perfmodel.outputs import report
    from perfmodel.planning.predict import predict as run_prediction

    result = run_prediction(question)
    emit(result.to_dict(), fmt, lambda: report.table(result))
