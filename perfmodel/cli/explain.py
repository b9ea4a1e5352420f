"""`perfmodel explain`: the formulas behind a prediction, with its numbers substituted."""

from __future__ import annotations

from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import Choice, load_from_flags, say, scenario_options


@cli.command()
@scenario_options
@click.option("--format", "fmt", type=Choice(["text", "latex", "json"]), default="text", show_default=True)
@click.option("--ops/--no-ops", default=True, show_default=True, help="List the operations of one layer (text).")
@click.option("--phase", metavar="NAME", help="A campaign's phase to explain (default: every phase, in turn).")
def explain(scenario: str | None, fmt: str, ops: bool, phase: str | None, **flags: Any) -> None:
    """Explain a prediction: step time as the sum of its parts, each part's formula with the numbers substituted,
    the operations of one layer with their roofline times, and the bound that dominates.

    Takes the same scenario and flags as `perfmodel predict`. A campaign's phases are explained one after the
    other (JSON: `{phases: [{phase, ...}]}`), or only the one --phase names.
    """
    from perfmodel.outputs import explain_report
    from perfmodel.outputs.explain import explain as build
    from perfmodel.planning.campaign import Campaign, chosen_phases, predict_any

    result = predict_any(load_from_flags(scenario, flags))
    if not isinstance(result, Campaign):
        if phase is not None:
            raise click.UsageError(f"--phase {phase}: the scenario has no [[phase]] tables (it is no campaign)")
        explanation = build(result)
        if fmt == "json":
            click.echo(explain_report.to_json(explanation))
        elif fmt == "latex":
            say(explain_report.latex(explanation))
        else:
            say(explain_report.text(explanation, ops))
        return
    explained = {name: build(p) for name, p in chosen_phases(result, phase).items()}
    if fmt == "json":
        documents = [{"phase": name} | explain_report.document(e) for name, e in explained.items()]
        click.echo(explain_report.dumps({"phases": documents}))
        return
    marker = "%" if fmt == "latex" else "=="
    show = explain_report.latex if fmt == "latex" else lambda e: explain_report.text(e, ops)
    say("\n\n".join(f"{marker} phase {name}\n{show(e)}" for name, e in explained.items()))
