"""`perfmodel export COMMAND ... --out FILE.{xlsx,csv,json}`: a command's results as a file for planners.

Each sub-command takes the flags of the command it exports; the output file is checked before any modelling runs, so
that a bad path fails at once, and written atomically, so that a failure leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import PositiveFloat, load_from_flags, scenario_options


def export_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--out, --force and --usd-per-kwh, shared by every export sub-command."""
    options = [
        click.option(
            "--out",
            "out",
            required=True,
            type=click.Path(dir_okay=True, path_type=Path),
            help="Output file; its suffix picks the format: .xlsx (workbook with live formulas), .csv or .json.",
        ),
        click.option("--force", is_flag=True, help="Overwrite the output file if it exists."),
        click.option(
            "--usd-per-kwh",
            type=PositiveFloat(),
            default=None,
            help="Electricity price for the energy cost (default 0.08, about the US industrial average).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@cli.group()
def export() -> None:
    """Write a command's results to FILE.xlsx (live formulas), FILE.csv or FILE.json."""


def prediction_label(prediction: Any) -> str:
    """A short name for one result: model, GPUs, accelerator, precision."""
    return (
        f"{prediction.model.id} on {prediction.layout.n_gpus:,} x {prediction.hardware.accelerator.id} "
        f"{prediction.scenario.precision}"
    )


@export.command("predict")
@scenario_options
@export_options
def export_predict(scenario: str | None, out: Path, force: bool, usd_per_kwh: float | None, **flags: Any) -> None:
    """One prediction (the flags of `perfmodel predict`)."""
    from perfmodel.export import ExportRow, check_output
    from perfmodel.export import export as write
    from perfmodel.predict import predict

    check_output(out, force)
    result = predict(load_from_flags(scenario, flags))
    label = prediction_label(result)
    write([ExportRow(label, result)], out, title=label, force=force, usd_per_kwh=usd_per_kwh)
    click.echo(f"wrote {out}")
