"""The `perfmodel` command line: click commands only, the modelling lives elsewhere.

One module per command (group); each imports its heavy dependencies inside the command so that the CLI starts
fast. Every user error ends as one line on stderr and exit code 2, without a traceback.
"""

from __future__ import annotations

import sys

import click

from perfmodel.errors import PerfmodelError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="perfmodel")
def cli() -> None:
    """Predict how long LLM training takes, and what it costs, on a GPU cluster."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning every user error into one line on stderr and exit code 2."""
    try:
        code = cli.main(args=argv, prog_name="perfmodel", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        message = " ".join(exc.format_message().split())
        click.echo(f"error: {message}", err=True)
        sys.exit(2)
    except PerfmodelError as exc:
        click.echo(f"error: {' '.join(str(exc).split())}", err=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


from perfmodel.cli import (  # noqa: E402  (commands register themselves on `cli`)
    catalog,
    compare,
    explain,
    export,
    plan,
    plot,
    predict,
    search,
    sweep,
    validate,
    whatif,
)

__all__ = [
    "catalog", "cli", "compare", "explain", "export", "main", "plan", "plot", "predict", "search", "sweep", "validate",
    "whatif",
]  # fmt: skip
