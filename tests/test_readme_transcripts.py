"""The README's commands and its seed-ratios transcript against what the code does today: a planner who runs a
command the README shows, and gets an error or another number, stops trusting the tool."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
from conftest import run_cli

from perfmodel.cli import cli

ROOT = Path(__file__).parent.parent
# The README and the docs pages its modelling, calibration, MoE, hybrid, recipe, planning and speed text moved to:
# their commands are the planner's as much as the README's.
PAGES = (
    "README.md",
    *(f"docs/{name}.md" for name in ("recipes", "planning", "model", "calibration", "moe", "hybrid", "speed")),
)
README = "\n".join((ROOT / page).read_text(encoding="utf-8") for page in PAGES)
FENCED = re.compile(r"^ *```[a-z]*\n(.*?)^ *```", re.S | re.M)
SHELL_ENDS = {">", ">>", "|", "&&", ";"}


def _first_block(text: str) -> str:
    """The first fenced block of a README section, without its fences."""
    found = FENCED.search(text)
    assert found is not None, text[:200]
    return found.group(1)


def _readme_commands() -> list[list[str]]:
    """Every `perfmodel ...` line of the README's fenced blocks as words, continuation lines joined, comments and
    shell redirections cut; lines with a placeholder (`...`, `[flags of predict]`, `scaling|breakdown`) left out."""
    commands = []
    for block in FENCED.findall(README):
        for line in block.replace("\\\n", " ").splitlines():
            start = line.find("perfmodel ")
            if start < 0:
                continue
            words = shlex.split(line[start:], comments=True)
            cut = next((i for i, word in enumerate(words) if word in SHELL_ENDS), len(words))
            words = words[:cut]
            if not any("..." in word or "[" in word or "|" in word for word in words):
                commands.append(words)
    return commands


def _parse(words: list[str]) -> None:
    """Parse a command line as `perfmodel` would, down to its (sub)command's options, without running it."""
    command: click.Command = cli
    name, args, ctx = "perfmodel", words[1:], None
    while isinstance(command, click.Group):
        ctx = click.Context(command, info_name=name, parent=ctx)
        found, sub, args = command.resolve_command(ctx, args)
        assert found is not None and sub is not None, f"no command in {words}"
        name, command = found, sub
    command.make_context(name, args, parent=ctx)


def test_every_command_the_readme_shows_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Option names, choices and values as the CLI takes them today. `ours.toml` is the README's own "Your own
    hardware" example file, written where the command runs, so that block is checked too."""
    hardware = README.split("### Your own hardware", 1)[1]
    (tmp_path / "ours.toml").write_text(_first_block(hardware))
    monkeypatch.chdir(tmp_path)
    commands = _readme_commands()
    assert len(commands) >= 54, len(commands)
    for words in commands:
        try:
            _parse(words)
        except click.ClickException as exc:
            pytest.fail(f"README: {shlex.join(words)}: {exc.format_message()}")


def test_the_readme_seed_ratios_are_what_perfmodel_ratios_prints() -> None:
    """docs/calibration.md (moved from README "Calibration and validation"), the seed's headline block: each line is
    the start of a line that `perfmodel ratios` prints with the bundled calibration (its price and source columns
    cut). After a refit that moves a figure, paste the command's lines in."""
    section = README.split("- The seed's headline, Llama 3.1 405B on 512 GPUs", 1)[1]
    block = [line.strip() for line in _first_block(section).splitlines() if line.strip()]
    result = run_cli("ratios")
    assert result.code == 0, result.err
    printed = [line.rstrip() for line in result.out.splitlines()]
    assert len(block) == 11, block
    for line in block:
        assert any(out.startswith(line) for out in printed), f"README line no longer printed: {line!r}"
