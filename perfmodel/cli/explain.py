"""`perfmodel explain`: the formulas behind a prediction, with its numbers substituted."""

from __future__ import annotations

from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import load_from_flags, scenario_options


@cli.command()
@scenario_options
@click.option("--format", "fmt", type=click.Choice(["text", "latex", "json"]), default="text", show_default=True)
@click.option("--ops/--no-ops", default=True, show_default=True, help="List the operations of one layer (text).")
def explain(scenario: str | None, fmt: str, ops: bool, **flags: Any) -> None:
    """Explain a prediction: step time as the sum of its parts, each part's formula with the numbers substituted,
    the operations of one layer with their roofline times, and the bound that dominates.

    Takes the same scenario and flags as `perfmodel predict`.
    """
    from perfmodel.outputs import explain_report
    from perfmodel.outputs.explain import explain as build
    from perfmodel.planning.predict import predict

    explanation = build(predict(load_from_flags(scenario, flags)))
    if fmt == "json":
        click.echo(explain_report.to_json(explanation))
    elif fmt == "latex":
        click.echo(explain_report.latex(explanation))
    else:
        click.echo(explain_report.text(explanation, ops))
