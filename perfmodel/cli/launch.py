"""`perfmodel launch`: the training stack's own configuration for a predicted layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import Choice, FilePath, Whole, load_from_flags, read_results, say, scenario_options

STACKS = ("megatron-lm", "megatron-bridge", "nemo", "torchtitan")
target_stack = click.option(
    "--stack",
    type=Choice(STACKS),
    required=True,
    help="The stack to launch with: megatron-lm (pretrain_gpt.py arguments), megatron-bridge (recipe overrides), "
    "nemo (NeMo 2 recipe overrides) or torchtitan (a job TOML).",
)


@cli.command()
@scenario_options(stack=target_stack)
@click.option("--out", type=FilePath(dir_okay=False), help="Write the config to this file instead of printing it.")
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
@click.option(
    "--from",
    "source",
    type=FilePath(dir_okay=False),
    help="Launch a saved prediction: the JSON of predict, search, compare, plan or export (its question and layout).",
)
@click.option("--row", type=Whole("rows", min=1), default=1, show_default=True, help="With --from: which result.")
def launch(scenario: str | None, out: str | None, force: bool, source: str | None, row: int, **flags: Any) -> None:
    """Print the stack's own config for the predicted layout (where not given, the fastest the stack can run).

    The prediction is made for the stack (its profile: attention kernel, TP overlap, FP8 support); a layout or
    precision the stack cannot run is refused with one line naming the setting.
    """
    from perfmodel.outputs.atomic import check_target, write_atomic
    from perfmodel.outputs.launch import PROFILES, for_scenario

    stack = flags.pop("stack")
    if out:
        check_target(Path(out), force, (scenario, source))
    if source is None:
        config = for_scenario(load_from_flags(scenario, flags | {"stack": PROFILES[stack]}), stack)
    else:
        config = _saved(Path(source), row, stack, scenario, flags)
    if out:
        write_atomic(Path(out), lambda handle: handle.write(config.text.encode()), force)
    else:
        say(config.text.rstrip("\n"))


def _saved(source: Path, row: int, stack: str, scenario: str | None, flags: dict[str, Any]) -> Any:
    """The config of a saved prediction's question and layout, priced again with the stack's profile; a scenario or
    flag beside --from is refused, not silently merged."""
    from perfmodel.errors import PerfmodelError
    from perfmodel.inputs.scenario import with_overrides
    from perfmodel.outputs.launch import PROFILES, for_scenario, saved_question
    from perfmodel.planning.request import load_request

    given = next((name for name, value in flags.items() if value not in (None, (), False)), None)
    if scenario is not None or given is not None:
        beside = "SCENARIO" if scenario is not None else f"--{given.replace('_', '-')}"  # type: ignore[union-attr]
        raise PerfmodelError(f"--from {source}: the saved prediction gives the question and layout; drop {beside}")
    question, settings, unrecorded = saved_question(read_results(source), str(source), row)
    if unrecorded:
        say(
            f"warning: --from {source}: result {row} was saved before perfmodel's records carried their run "
            f"settings ({', '.join(unrecorded)}): priced and configured at their defaults; predict and save it again "
            "to keep those it set",
            err=True,
        )
    if question.setdefault("stack", PROFILES[stack]) != PROFILES[stack]:
        raise PerfmodelError(
            f"--from {source}: result {row} was predicted for the {question['stack']} stack; {stack} launches "
            f"{PROFILES[stack]}'s predictions (predict again with --stack {PROFILES[stack]})"
        )
    origin = f"--from {source} (result {row})"
    asked = load_request(None, question, dict.fromkeys(question, origin))
    return for_scenario(with_overrides(asked, settings, dict.fromkeys(settings, origin)), stack)
