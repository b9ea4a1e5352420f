"""`perfmodel plan`: the GPUs of each candidate system that meet a deadline (the cheapest count) and/or a budget."""

from __future__ import annotations

from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import (
    FORMATS,
    Command,
    Deadline,
    FilePath,
    PositiveFloat,
    Probability,
    Usd,
    Whole,
    emit,
    progress,
    purchase_read,
    quiet_option,
    scenario_flags,
    scenario_options,
)


def plan_options(command: Command) -> Command:
    """The flags of `perfmodel plan` besides the scenario's (also taken by `export plan`)."""
    options = [
        click.option(
            "--deadline", type=Deadline(), help="Train within this wall time, with failures and losses: 720h, 30d, 4w."
        ),
        click.option(
            "--budget", type=Usd(), help="Spend at most this many USD (40e6, 40M, $40M), failures and losses in."
        ),
        click.option(
            "--confidence",
            type=Probability(),
            default=0.5,
            show_default=True,
            help="Meet the deadline and budget with this probability (0.5: the point estimate; 0.9 or 90%: at P90).",
        ),
        click.option("--max-gpus", type=Whole("GPUs", 1, 1_000_000), help="Largest cluster to consider."),
        click.option(
            "--power-mw",
            type=PositiveFloat(),
            help="Site power, MW at the wall with PUE: no plan draws more (whole systems, board + host + network).",
        ),
        click.option(
            "--fleet",
            "fleet_file",
            type=FilePath(dir_okay=False),
            help="Owned pools and offers (TOML; perfmodel schema fleet): the cheapest mix per system type of it.",
        ),
        quiet_option,
    ]
    for option in reversed(options):
        command = option(command)
    return scenario_options(command, many_systems=True)


def plan_from_flags(
    scenario: str | None, deadline: float | None, budget: float | None, confidence: float, max_gpus: int | None,
    quiet: bool, flags: dict[str, Any], prices_owning: bool = False,
) -> Any:  # fmt: skip
    """The PlanReport `perfmodel plan` makes for these flags (export plan's prices owning beside renting:
    `prices_owning`)."""
    from perfmodel.planning import plan as planning

    targets, power_mw = flags.pop("gpu"), flags.pop("power_mw")
    with progress("Planning", quiet) as update:
        options, origins = scenario_flags(flags)
        goal = planning.Goal(deadline, budget, confidence, power_mw)
        read = purchase_read(prices_owning)
        return planning.plan_request(scenario, options, origins, targets, goal, max_gpus, update,
                                     purchase_read=read)  # fmt: skip


def plan_fleet(
    fleet_file: str, scenario: str | None, deadline: float | None, budget: float | None, confidence: float,
    max_gpus: int | None, quiet: bool, flags: dict[str, Any],
) -> Any:  # fmt: skip
    """The FleetReport of `plan --fleet`: each system type of the fleet (or of --gpu) planned over it; of a fleet
    file with [[job]]s, the SharedReport of its jobs planned together."""
    from perfmodel.planning.fleet_jobs import fleet_request

    targets, power_mw = flags.pop("gpu") or [], flags.pop("power_mw")
    with progress("Planning", quiet):
        options, origins = scenario_flags(flags)
        return fleet_request(fleet_file, scenario, options, origins, targets, (deadline, budget, confidence, power_mw),
                             max_gpus)  # fmt: skip


@cli.command()
@plan_options
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
def plan(
    scenario: str | None,
    deadline: float | None,
    budget: float | None,
    confidence: float,
    max_gpus: int | None,
    fleet_file: str | None,
    fmt: str,
    quiet: bool,
    **flags: Any,
) -> None:
    """The GPUs of each candidate (--gpu ID[:PRECISION[,PRECISION...]][:$PRICE], repeated) meeting the goal.

    Give the work (--tokens or --benchmark) and a goal: --deadline, --budget or both. With a deadline, each
    candidate gets the cheapest GPU count (whole nodes or racks) whose time to train meets it; with a budget alone, the
    fastest plan within it. Times and costs count every real-world loss (failures, checkpoints, stragglers, start-up,
    ...); with --losses none the failures only, with --goodput none as well none. The layout is searched at each
    count tried. Ends with the cheapest and the fastest feasible plans; a goal no count meets says why.
    """
    from perfmodel.outputs import plan_report

    if fleet_file is not None:
        fleet_report = plan_fleet(fleet_file, scenario, deadline, budget, confidence, max_gpus, quiet, flags)
        if fmt == "csv":
            emit(fleet_report.to_records(), fmt)
            return
        table = plan_report.jobs_table if hasattr(fleet_report, "jobs") else plan_report.fleet_table
        emit(fleet_report.to_dict(), fmt, lambda: table(fleet_report))
        return
    report = plan_from_flags(scenario, deadline, budget, confidence, max_gpus, quiet, flags)
    if fmt == "csv":
        emit(report.to_records(), fmt)
        return
    emit(report.to_dict(), fmt, lambda: plan_report.goal_table(report))
