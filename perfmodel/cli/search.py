"""`perfmodel search`: the best layouts of one model on one system."""

from __future__ import annotations

from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import (
    FORMATS,
    Choice,
    Whole,
    emit,
    load_from_flags,
    progress,
    quiet_option,
    scenario_options,
)


@cli.command()
@scenario_options(many_gpus=True)
@click.option("--top", type=Whole("layouts", 1, 10_000), default=10, show_default=True, help="Layouts to show.")
@click.option(
    "--objective",
    type=Choice(["time", "cost"]),
    default="time",
    show_default=True,
    help="time: fastest per token; cost: fewest GPU-hours per token (differs from time across GPU counts).",
)
@click.option("--pareto", is_flag=True, help="Also show the Pareto front of time, cost and GPU count.")
@click.option("--relayout", is_flag=True, help="Ignore the scenario file's layout (keep its GBS and sequence length).")
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
@quiet_option
def search(
    scenario: str | None,
    top: int,
    objective: str,
    pareto: bool,
    relayout: bool,
    fmt: str,
    quiet: bool,
    **flags: Any,
) -> None:
    """Price every valid layout and show the best ones.

    Every TP, PP, VP, CP and DP split, micro-batch size, recompute mode and ZeRO stage is tried unless given as a
    flag or in the scenario; so is the global batch when neither sets it (ranked per token then). --gpus takes a
    list (64,128,256) to search several cluster sizes at once, which is where --objective cost and --pareto matter.
    A scenario file's layout is kept (use --relayout to search it); flags given here always fix their dimension.
    """
    from perfmodel.outputs import plan_report
    from perfmodel.planning.predict import search_scenario

    counts = flags.pop("gpus")
    flags["gpus"] = counts[0] if counts else None
    loaded = load_from_flags(scenario, flags, relayout, own_count=False)  # searched at --gpus: checked per count
    with progress("Pricing layouts", quiet) as update:
        report = search_scenario(loaded, counts, top, objective, update)
    if fmt == "csv":  # a row each, best first, with its rank after the schema's columns, as export search writes
        emit([p.to_dict() | rank for p, rank in zip(report.results, report.ranks(), strict=True)], fmt)
        return
    emit(report.to_dict(with_pareto=pareto), fmt, lambda: plan_report.search_table(report, pareto))
