"""`perfmodel export COMMAND ... --out FILE.{xlsx,csv,json}`: a command's results as a file for planners.

Each sub-command takes the flags of the command it exports; the output file is checked before any modelling runs, so
that a bad path fails at once, and written atomically, so that a failure leaves nothing behind. Every export prices
owning beside renting (the workbook's and columns' ownership alternative), so each sub-command asks its question
reading the purchase flags without --buy (`prices_owning`; a fleet plan reads what its offers to buy read).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.compare import compare_from_flags, relayout_option
from perfmodel.cli.options import (
    Choice,
    Command,
    FilePath,
    PositiveFloat,
    Whole,
    complete_ids,
    load_from_flags,
    quiet_option,
    say,
    scenario_options,
)
from perfmodel.cli.plan import plan_fleet, plan_from_flags, plan_options
from perfmodel.errors import PerfmodelError


def export_options(command: Command) -> Command:
    """--out, --force and --usd-per-kwh, shared by every export sub-command."""
    options = [
        click.option(
            "--out",
            "out",
            required=True,
            type=FilePath(dir_okay=True, path_type=Path),
            help="Output file; its suffix picks the format: .xlsx (workbook with live formulas), .csv or .json.",
        ),
        click.option("--force", is_flag=True, help="Overwrite the output file if it exists."),
        click.option(
            "--usd-per-kwh",
            type=PositiveFloat(),
            default=None,
            help="Electricity price for the energy cost (default the scenario's --electricity-usd-per-kwh or [cost] "
            "usd_per_kwh, else 0.08, about the US industrial average).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@cli.group()
def export() -> None:
    """Write a command's results to FILE.xlsx (live formulas), FILE.csv or FILE.json."""


def prediction_label(prediction: Any) -> str:
    """A short name for one result: model, GPUs (a campaign's: the most its phases run on), accelerator,
    precision (a campaign's: its top level's)."""
    from perfmodel.planning.compare import gpu_count

    return (
        f"{prediction.model.id} on {gpu_count(prediction):,} x {prediction.hardware.accelerator.id} "
        f"{prediction.scenario.precision}"
    )


@export.command("predict")
@scenario_options
@export_options
def export_predict(scenario: str | None, out: Path, force: bool, usd_per_kwh: float | None, **flags: Any) -> None:
    """One prediction (the flags of `perfmodel predict`); a campaign's: a row per phase and its total row."""
    from perfmodel.outputs.export import check_output
    from perfmodel.planning.campaign import predict_any

    check_output(out, force, (scenario, flags["calibration"]))
    loaded = load_from_flags(scenario, flags, prices_owning=True)
    say(write_prediction(predict_any(loaded), out, force, usd_per_kwh))


def write_prediction(result: Any, out: Path, force: bool, usd_per_kwh: float | None) -> str:
    """Write one prediction's export (a campaign's: a row per phase and its total row); returns what was written."""
    from perfmodel.errors import counted, visible
    from perfmodel.outputs.export import ExportRow
    from perfmodel.outputs.export import export as write
    from perfmodel.outputs.export.table import campaign_lines
    from perfmodel.outputs.report import headline
    from perfmodel.planning.campaign import Campaign

    if isinstance(result, Campaign):
        phases = counted(len(result.phases), "phase")
        title = f"{result.model.name} campaign of {phases} on {visible(result.hardware.accelerator.name)}"
        write(campaign_lines(result), out, title=title, force=force, usd_per_kwh=usd_per_kwh)
        return f"wrote {out}"
    label = prediction_label(result)
    # the title atop every page names the model and accelerator, as the tables do; the row's label keeps the ids
    title = headline(result, system=False)
    write([ExportRow(label, result)], out, title=title, force=force, usd_per_kwh=usd_per_kwh)
    return f"wrote {out}"


@export.command("compare")
@scenario_options(many_gpus=True, many_systems=True)
@relayout_option
@quiet_option
@export_options
def export_compare(
    scenario: str | None, relayout: bool, quiet: bool, out: Path, force: bool, usd_per_kwh: float | None, **flags: Any
) -> None:
    """Several systems and GPU counts (the flags of `perfmodel compare`), with the ratios to the first; a campaign's:
    a row per system and phase, and per system a total row that carries the ratios of the campaigns' totals."""
    from perfmodel.outputs.export import check_output

    check_output(out, force, (scenario, flags["calibration"]))
    predictions = compare_from_flags(scenario, relayout, quiet, flags, prices_owning=True)
    say(write_comparison(predictions, out, force, usd_per_kwh))


def write_comparison(predictions: list[Any], out: Path, force: bool, usd_per_kwh: float | None) -> str:
    """Write a comparison's export: each row with its ratios to the first; returns what was written."""
    from perfmodel.planning.compare import with_ratios

    ratios = [{k: v for k, v in r.items() if k not in predictions[0].to_dict()} for r in with_ratios(predictions)]
    return _write(predictions, ratios, out, force, usd_per_kwh, "comparison")


@export.command("search")
@scenario_options(many_gpus=True)
@click.option("--top", type=Whole("layouts", 1, 10_000), default=10, show_default=True, help="Layouts to export.")
@click.option("--objective", type=Choice(["time", "cost"]), default="time", show_default=True)
@quiet_option
@export_options
def export_search(
    scenario: str | None,
    top: int,
    objective: str,
    quiet: bool,
    out: Path,
    force: bool,
    usd_per_kwh: float | None,
    **flags: Any,
) -> None:
    """The best layouts of one model on one system (the flags of `perfmodel search`), best first."""
    from perfmodel.cli.options import progress
    from perfmodel.outputs.export import check_output
    from perfmodel.planning.predict import search_scenario

    check_output(out, force, (scenario, flags["calibration"]))
    counts = flags.pop("gpus")
    flags["gpus"] = counts[0] if counts else None
    with progress("Pricing layouts", quiet) as update:
        loaded = load_from_flags(scenario, flags, own_count=False, prices_owning=True)
        report = search_scenario(loaded, counts, top, objective, update)
    say(_write(report.results, report.ranks(), out, force, usd_per_kwh, f"best layouts by {objective}"))


@export.command("plan")
@plan_options
@export_options
def export_plan(
    scenario: str | None,
    deadline: float | None,
    budget: float | None,
    confidence: float,
    max_gpus: int | None,
    fleet_file: str | None,
    quiet: bool,
    out: Path,
    force: bool,
    usd_per_kwh: float | None,
    **flags: Any,
) -> None:
    """The plan of each candidate for a goal (the flags of `perfmodel plan`); candidates with no plan are left out
    and said so. A campaign's plan: a row per phase, then its total row, which carries the verdict. With --fleet,
    each system type's cheapest mix: its GPUs per pool and offer, start and cost split (live in the workbook)."""
    from perfmodel.outputs.export import check_output

    check_output(out, force)
    if fleet_file is not None:  # reads the purchase flags its offers to buy read (fleet_request), not every one
        fleet_report = plan_fleet(fleet_file, scenario, deadline, budget, confidence, max_gpus, quiet, flags)
        say(write_fleet_plan(fleet_report, out, force, usd_per_kwh))
        return
    report = plan_from_flags(scenario, deadline, budget, confidence, max_gpus, quiet, flags, prices_owning=True)
    say(write_plan(report, out, force, usd_per_kwh))


def write_plan(report: Any, out: Path, force: bool, usd_per_kwh: float | None) -> str:
    """Write the plan of each candidate that has one (with its verdict); returns what was written, and the
    candidates left out with their reasons."""
    planned = [c for c in report.plans if c.prediction is not None]
    if not planned:
        raise PerfmodelError(f"no candidate has a plan: {'; '.join(f'{c.label}: {c.reason}' for c in report.plans)}")
    keys = (
        "candidate",
        "feasible",
        "binds",
        "reason",
        "goal_basis",
        "deadline_share",
        "budget_share",
        "p_meet_deadline",
        "p_within_budget",
        "p_deadline",
        "p_budget",
        "power_mw",
    )
    extras = [{key: c.to_dict()[key] for key in keys} | report.goal.to_dict() for c in planned]
    written = _write([c.prediction for c in planned], extras, out, force, usd_per_kwh, "plan")
    if len(planned) < len(report.plans):
        left = [f"{c.label} ({c.reason})" for c in report.plans if c.prediction is None]
        written += f"\nno plan, not in {out}: {'; '.join(left)}"
    return written


def write_fleet_plan(report: Any, out: Path, force: bool, usd_per_kwh: float | None) -> str:
    """Write each system type's cheapest mix over the fleet (its plan's prediction with the mix as `mix.*`
    columns), or of a fleet file with [[job]]s each job's chosen mix (with its `job`); returns what was written,
    and what has no mix with its reasons."""
    from perfmodel.outputs.export.table import mix_extra

    if hasattr(report, "jobs"):  # jobs sharing the fleet: each job's chosen mix
        rows = [({"job": job.name}, job.chosen or _no_mix(job.report), job.report.goal) for job in report.jobs]
    else:
        rows = [({}, plan, report.goal) for plan in report.plans]
    planned = [(own, plan, goal) for own, plan, goal in rows if plan.feasible]
    left = [f"{own.get('job', plan.system)} ({plan.reason})" for own, plan, _ in rows if not plan.feasible]
    if not planned:
        raise PerfmodelError(f"no plan meets the goal: {'; '.join(left)}")
    extras = [own | mix_extra(plan.to_dict()) | goal.to_dict() for own, plan, goal in planned]
    written = _write([plan.candidate.prediction for _, plan, _ in planned], extras, out, force, usd_per_kwh,
                     "fleet plan")  # fmt: skip
    return written + (f"\nno plan, not in {out}: {'; '.join(left)}" if left else "")


def _no_mix(report: Any) -> Any:
    """A job's infeasible plan that says why: its system types' reasons together."""
    from dataclasses import replace

    reasons = "; ".join(f"{plan.system}: {plan.reason}" for plan in report.plans)
    return replace(report.plans[0], candidate=None, reason=reasons)


@export.command("sweep")
@click.argument("sweep_file", type=FilePath(dir_okay=False), shell_complete=complete_ids(("sweeps",), files=True))
@quiet_option
@export_options
def export_sweep(sweep_file: str, quiet: bool, out: Path, force: bool, usd_per_kwh: float | None) -> None:
    """Every point of a sweep file (see `perfmodel sweep --help`), in the sweep's order.

    Points that cannot run (the model does not fit, the GPU lacks the precision) are left out of the file and
    counted; `perfmodel sweep` lists each with its reason.
    """
    from perfmodel.cli.options import progress
    from perfmodel.outputs.export import check_output
    from perfmodel.planning import sweep as sweeping
    from perfmodel.planning.request import EXPORT_READ

    check_output(out, force, (sweep_file,))
    points = sweeping.load_points(sweep_file, EXPORT_READ)
    predictions, extras, failed = [], [], 0
    with progress("Predicting", quiet) as update:
        for done, point in enumerate(points, start=1):
            try:
                predictions.append(sweeping.predict_point(point))
                extras.append({"whatif": point.whatif})
            except PerfmodelError:
                failed += 1
            update(done, len(points))
    if not predictions:
        raise PerfmodelError(f"{sweep_file}: no point of the sweep can run (perfmodel sweep says why for each)")
    say(_write(predictions, extras, out, force, usd_per_kwh, "sweep"))
    if failed:
        say(f"{failed} of {len(points)} points could not run and are not in {out}; perfmodel sweep says why")


EVERY_LINE = ("candidate",)
"""Extra columns that name a campaign's group: on each of its lines (its phases' rows too), the others on its total."""


def _write(predictions: list[Any], extras: list[dict[str, Any]], out: Path, force: bool, usd_per_kwh: float | None,
           what: str) -> str:  # fmt: skip
    """One line per prediction, or a campaign's phases and total, with the command's `extras` (a campaign's on its
    total row, but for the columns in EVERY_LINE); returns what was written."""
    from perfmodel.outputs.export import ExportRow, Line
    from perfmodel.outputs.export import export as write
    from perfmodel.outputs.export.table import campaign_lines
    from perfmodel.planning.campaign import Campaign

    lines: list[Line] = []
    for p, extra in zip(predictions, extras, strict=True):
        if isinstance(p, Campaign):
            every = {key: value for key, value in extra.items() if key in EVERY_LINE}
            lines += campaign_lines(p, len(lines), prediction_label(p), extra, every)
        else:
            lines.append(ExportRow(f"{prediction_label(p)} {p.layout.describe()}", p, extra))
    write(lines, out, title=f"{predictions[0].model.name}: {what}", force=force, usd_per_kwh=usd_per_kwh)
    return f"wrote {len(predictions)} result{'s' * (len(predictions) != 1)} to {out}"
