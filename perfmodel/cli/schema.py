"""`perfmodel schema KIND`: the JSON Schema of an input file kind, for editors and CI checks of user files."""

from __future__ import annotations

import click

from perfmodel.cli import cli
from perfmodel.cli.options import Choice

KINDS = ("scenario", "hardware", "model", "runs", "fleet")


@cli.command()
@click.argument("kind", type=Choice(KINDS))
def schema(kind: str) -> None:
    """Print the JSON Schema of a scenario, hardware, model, measured-runs (one CSV row) or fleet file.

    The repository ships them in schemas/ (e.g. for the Even Better TOML editor extension:
    `#:schema ./schemas/scenario.schema.json` as a scenario file's first line).
    """
    from perfmodel.outputs.report import to_json
    from perfmodel.outputs.schemas import schema as build

    click.echo(to_json(build(kind)))
