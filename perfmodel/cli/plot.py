"""`perfmodel plot KIND ... --out FILE.png|svg`: scaling curves, breakdowns, comparisons, predicted vs measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.compare import compare_from_flags, relayout_option
from perfmodel.cli.options import Choice, FilePath, quiet_option, read_results, say, scenario_options
from perfmodel.errors import PerfmodelError

KINDS = ("scaling", "breakdown", "compare", "validation")


@cli.command()
@click.argument("kind", type=Choice(KINDS))
@scenario_options(many_gpus=True, many_systems=True)
@relayout_option
@quiet_option
@click.option(
    "--from",
    "source",
    type=FilePath(dir_okay=False, path_type=Path),
    help="Plot saved results: the JSON of predict/compare/search/plan/sweep/whatif/sensitivity or of export "
    "(FILE.json), or of validate for a validation plot.",
)
@click.option("--out", required=True, type=FilePath(path_type=Path), help="Image file: .png or .svg.")
@click.option("--force", is_flag=True, help="Overwrite the image if it exists.")
def plot(
    kind: str,
    scenario: str | None,
    relayout: bool,
    quiet: bool,
    source: Path | None,
    out: Path,
    force: bool,
    **flags: Any,
) -> None:
    """Draw KIND: scaling (time-to-train and efficiency vs GPU count), breakdown (stacked step-time parts),
    compare (time and cost per system) or validation (predicted vs measured).

    Without --from, the flags are predicted now, as `perfmodel compare` does (repeated --gpu ID[:PRECISION],
    --gpus as a list).
    """
    from perfmodel.outputs import plot as plotting

    plotting.check_output(out, force, (source, scenario, flags.get("calibration")))
    if source is not None:
        given = [f"--{k.replace('_', '-')}" for k, v in flags.items() if v not in (None, ())]
        given += (["a scenario file"] if scenario else []) + (["--relayout"] if relayout else [])
        if given:
            raise PerfmodelError(
                f"--from {source}: plots saved results as they are; {', '.join(given)} would be ignored: drop "
                "them, or drop --from to predict with them"
            )
        data = read_results(source)
    elif kind == "validation":
        raise PerfmodelError(
            "a validation plot needs --from FILE.json (the output of perfmodel validate --format json)"
        )
    else:
        from perfmodel.planning.campaign import refuse_campaigns

        results = compare_from_flags(scenario, relayout, quiet, flags)
        refuse_campaigns(results, "plot", "a campaign's totals per system are `perfmodel compare --format json`")
        data = [p.to_dict() for p in results]
    checked = (
        plotting.validation_report(data, source) if kind == "validation" else plotting.prediction_records(data, source)
    )
    figure = plotting.DRAW[kind](checked)
    plotting.save(figure, out, force)
    say(f"wrote {out}")
