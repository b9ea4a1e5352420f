"""The `perfmodel` command line: click commands only, the modelling lives elsewhere.

One module per command (group); each imports its heavy dependencies inside the command so that the CLI starts
fast. Every user error ends as one line on stderr and exit code 2, without a traceback.
"""

from __future__ import annotations

import errno
import importlib
import io
import os
import sys

import click

from perfmodel.errors import PerfmodelError, shown

COMMANDS = {
    "calibrate": "validate", "compare": "compare", "explain": "explain", "export": "export", "hardware": "catalog",
    "launch": "launch", "models": "catalog", "plan": "plan", "plot": "plot", "predict": "predict", "ratios": "ratios",
    "scenarios": "catalog",
    "schema": "schema", "search": "search", "sensitivity": "whatif", "serve": "serve", "sweep": "sweep",
    "validate": "validate", "whatif": "whatif",
}  # fmt: skip
"""Each command and the module of perfmodel.cli that defines it (and registers it on `cli` when imported)."""


class Commands(click.Group):
    """A click group that imports a command's module only when that command is run or listed (click's documented
    lazy loading), so that `perfmodel predict` does not pay for importing every other command."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(f"perfmodel.cli.{COMMANDS[cmd_name]}")
        return self.commands.get(cmd_name)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="perfmodel")
def cli() -> None:
    """Predict how long LLM training takes, and what it costs, on a GPU cluster."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning every user error into one line on stderr and exit code 2."""
    from perfmodel.inputs.files import forget_reads
    from perfmodel.outputs.signals import exit_on_signals

    forget_reads()
    if sys.stdout is None:  # started with standard output closed: printing is an error, writing --out is not
        sys.stdout = ClosedOutput()
    try:
        _check_working_folder()
        with exit_on_signals():
            code = cli.main(args=argv, prog_name="perfmodel", standalone_mode=False)
            sys.stdout.flush()  # here, so that a full disk or closed pipe on stdout is an error like any other
    except OSError as exc:
        if exc.errno not in OUTPUT_ERRORS:
            raise
        _silence_stdout()
        click.echo(f"error: cannot write the output ({exc.strerror or exc})", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        sys.exit(1)
    except click.exceptions.NoArgsIsHelpError as exc:  # `perfmodel`, `perfmodel hardware`: no command, as click has it
        click.echo(exc.format_message(), err=True)  # the help as it prints, not run into one line after 'error:'
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(f"error: {_one_line(exc.format_message())}", err=True)
        sys.exit(2)
    except PerfmodelError as exc:
        click.echo(f"error: {_one_line(str(exc))}", err=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


MAX_ERROR_CHARS = 2000
OUTPUT_ERRORS = frozenset((errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EPIPE, errno.EBADF))
"""Errors of writing the output (stdout on a full disk, a closed pipe or closed): one line, not a traceback."""


class ClosedOutput(io.TextIOBase):
    """Standard output when the process started without one (`perfmodel predict >&-`): writing is an error."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


def _check_working_folder() -> None:
    """One line when the working folder has been deleted, before a relative path fails somewhere deep."""
    try:
        os.getcwd()
    except FileNotFoundError:
        raise PerfmodelError("the working folder no longer exists (deleted?); cd to a folder that exists") from None


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush of what could not be written fails no more."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):  # not a real file (tests capture stdout in memory)
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)


def _one_line(message: str) -> str:
    """An error message as one line of printable text, at most MAX_ERROR_CHARS long, whatever user text it holds."""
    return shown(" ".join(message.split()), MAX_ERROR_CHARS)
