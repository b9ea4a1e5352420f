"""`perfmodel predict`: one scenario, one answer."""

from __future__ import annotations

from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import FORMATS, Deadline, Usd, emit, load_from_flags, scenario_options


@cli.command()
@scenario_options
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
@click.option(
    "--deadline", type=Deadline(), help="Also give the probability of training within this wall time: 720h, 30d, 4w."
)
@click.option(
    "--budget", type=Usd(), help="Also give the probability of costing at most this many USD (40e6, 40M, $40M)."
)
def predict(scenario: str | None, fmt: str, deadline: float | None, budget: float | None, **flags: Any) -> None:
    """Predict step time, throughput, memory, time-to-train and cost for one scenario.

    With no arguments it runs scenarios/default.toml. Flags override the file; a parallel dimension left out is
    chosen as the fastest layout that fits.
    """
    question = load_from_flags(scenario, flags)
    if question.phase:  # the campaign modules only for a campaign: they are most of what a plain start imports anew
        from perfmodel.outputs.campaign_report import campaign_table
        from perfmodel.planning.campaign import predict_campaign

        campaign = predict_campaign(question)
        if (deadline is not None or budget is not None) and fmt != "table":
            raise click.UsageError(
                "--deadline or --budget on a campaign: only with --format table (its JSON and CSV are per phase)"
            )
        emit(campaign.to_records() if fmt == "csv" else campaign.to_dict(), fmt,
             lambda: campaign_table(campaign) + _goal_text(campaign, deadline, budget))  # fmt: skip
        return
    from perfmodel.outputs import report
    from perfmodel.planning.predict import predict as run_prediction

    result = run_prediction(question)
    record = result.to_dict() | ({} if deadline is None else deadline_record(result, deadline))
    record |= {} if budget is None else budget_record(result, budget)
    emit(record, fmt, lambda: report.table(result) + _goal_text(result, deadline, budget))


def deadline_record(result: Any, deadline_s: float) -> dict[str, Any]:
    """The keys `predict --deadline` adds: the deadline and the probability of training within it."""
    from perfmodel.planning.plan import goal_basis, p_within

    return {"deadline_days": deadline_s / 86400, "deadline_basis": goal_basis(result),
            "p_finish_within_deadline": p_within(result, deadline_s)}  # fmt: skip


def budget_record(result: Any, budget_usd: float) -> dict[str, Any]:
    """The keys `predict --budget` adds: the budget and the probability of costing at most it (None: no price)."""
    from perfmodel.planning.plan import goal_basis, p_affordable

    return {"budget_usd": budget_usd, "budget_basis": goal_basis(result),
            "p_cost_within_budget": p_affordable(result, budget_usd)}  # fmt: skip


def _goal_text(result: Any, deadline_s: float | None, budget_usd: float | None) -> str:
    """The lines under the table: 'P(finish within 60.0 days, with losses): 0.93 ...', and the budget's twin."""
    if deadline_s is None and budget_usd is None:  # plan's modules only when asked: a plain start imports neither
        return ""
    from perfmodel.outputs.plan_report import budget_line, deadline_line

    lines = [] if deadline_s is None else [deadline_line(deadline_record(result, deadline_s))]
    lines += [] if budget_usd is None else [budget_line(budget_record(result, budget_usd), result.price)]
    return "".join(f"\n\n{line}" for line in lines)
