"""`perfmodel launch`: the training stack's own configuration for a predicted layout."""

from __future__ import annotations

from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import FilePath, load_from_flags, say, scenario_options

STACKS = ("megatron-lm", "megatron-bridge", "nemo", "torchtitan")
target_stack = click.option(
    "--stack",
    type=click.Choice(STACKS),
    required=True,
    help="The stack to launch with: megatron-lm (pretrain_gpt.py arguments), megatron-bridge (recipe overrides), "
    "nemo (NeMo 2 recipe overrides) or torchtitan (a job TOML).",
)


@cli.command()
@scenario_options(stack=target_stack)
@click.option("--out", type=FilePath(dir_okay=False), help="Write the config to this file instead of printing it.")
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
def launch(scenario: str | None, out: str | None, force: bool, **flags: Any) -> None:
    """Print the stack's own config for the predicted layout (where not given, the fastest the stack can run).

    The prediction is made for the stack (its profile: attention kernel, TP overlap, FP8 support); a layout or
    precision the stack cannot run is refused with one line naming the setting.
    """
    from pathlib import Path

    from perfmodel.outputs.atomic import check_target, write_atomic
    from perfmodel.outputs.launch import PROFILES, for_scenario

    stack = flags["stack"]
    if out:
        check_target(Path(out), force, (scenario,))
    flags["stack"] = PROFILES[stack]
    config = for_scenario(load_from_flags(scenario, flags), stack)
    if out:
        write_atomic(Path(out), lambda handle: handle.write(config.text.encode()), force)
    else:
        say(config.text.rstrip("\n"))
