"""The `perfmodel` command line: click commands only, the modelling lives elsewhere.

Every user error ends as one line on stderr and exit code 2, without a traceback.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import click

from perfmodel.errors import PerfmodelError

FORMATS = click.Choice(["table", "json", "csv"])
SUFFIXES = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12, "P": 1e15}


class Count(click.ParamType):
    """A positive finite number, with an optional K/M/B/T suffix: 15T, 2.5e12, 1,000,000."""

    name = "count"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            number = float(value)
        else:
            text = str(value).strip().replace(",", "").replace("_", "")
            scale = SUFFIXES.get(text[-1:].upper(), 1.0) if text else 1.0
            try:
                number = float(text[:-1] if scale != 1.0 else text) * scale
            except ValueError:
                self.fail(f"'{value}' is not a number (examples: 15T, 2.5e12, 1000000)", param, ctx)
        if not math.isfinite(number) or number <= 0:
            self.fail(f"'{value}' must be a positive finite number", param, ctx)
        return number


class PositiveFloat(click.ParamType):
    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"'{value}' is not a number", param, ctx)
        if not math.isfinite(number) or number <= 0:
            self.fail(f"'{value}' must be a positive finite number", param, ctx)
        return number


def _degree(name: str, help_text: str) -> Callable[[Any], Any]:
    return click.option(name, type=click.IntRange(min=1), default=None, help=help_text)


SCENARIO_FLAGS: list[tuple[str, str]] = [
    ("model", "model"),
    ("gpu", "gpu"),
    ("system", "system"),
    ("gpus", "n_gpus"),
    ("precision", "precision"),
    ("tp", "parallelism.tp"),
    ("pp", "parallelism.pp"),
    ("cp", "parallelism.cp"),
    ("vp", "parallelism.vp"),
    ("ep", "parallelism.ep"),
    ("dp", "parallelism.dp"),
    ("mbs", "parallelism.mbs"),
    ("gbs", "parallelism.gbs"),
    ("seq_len", "parallelism.seq_len"),
    ("recompute", "parallelism.recompute"),
    ("zero", "parallelism.zero"),
    ("tokens", "tokens"),
    ("usd_per_gpu_hour", "cost.usd_per_gpu_hour"),
    ("pue", "cost.pue"),
]


def scenario_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The flags shared by every command that takes a scenario; they override the scenario file."""
    options = [
        click.argument("scenario", required=False, type=click.Path(dir_okay=False)),
        click.option("--model", help="Model id (perfmodel models list)."),
        click.option("--gpu", help="Accelerator id (perfmodel hardware list); picks its usual system."),
        click.option("--system", help="System id (perfmodel hardware list)."),
        click.option("--gpus", type=click.IntRange(min=1, max=1_000_000), help="Number of GPUs."),
        click.option("--precision", type=click.Choice(["bf16", "fp8", "mxfp8", "nvfp4", "mxfp4"])),
        _degree("--tp", "Tensor-parallel size (with sequence parallelism)."),
        _degree("--pp", "Pipeline-parallel stages."),
        _degree("--cp", "Context-parallel size."),
        _degree("--vp", "Virtual pipeline stages per rank (interleaving)."),
        _degree("--ep", "Expert-parallel size (MoE models only)."),
        _degree("--dp", "Data-parallel size (derived from the GPU count when left out)."),
        _degree("--mbs", "Micro-batch size in sequences."),
        _degree("--gbs", "Global batch size in sequences."),
        click.option("--seq-len", type=click.IntRange(min=16, max=10_000_000), help="Sequence length in tokens."),
        click.option("--recompute", type=click.Choice(["none", "selective", "full"])),
        click.option(
            "--zero", type=click.IntRange(0, 3), help="0 plain DP, 1 distributed optimizer, 2 +grads, 3 FSDP."
        ),
        click.option("--tokens", type=Count(), help="Tokens to train on (e.g. 15T) for time-to-train and cost."),
        click.option("--usd-per-gpu-hour", type=PositiveFloat(), help="Price; default: the GPU's on-demand price."),
        click.option("--pue", type=PositiveFloat(), help="Facility power usage effectiveness (default 1.2)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def load_from_flags(scenario: str | None, flags: dict[str, Any]) -> Any:
    from perfmodel.scenario import load_scenario

    return load_scenario(scenario, {dotted: flags.pop(flag) for flag, dotted in SCENARIO_FLAGS})


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="perfmodel")
def cli() -> None:
    """Predict how long LLM training takes, and what it costs, on a GPU cluster."""


@cli.command()
@scenario_options
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
def predict(scenario: str | None, fmt: str, **flags: Any) -> None:
    """Predict step time, throughput, memory, time-to-train and cost for one scenario.

    With no arguments it runs scenarios/default.toml. Flags override the file; a parallel dimension left out is
    chosen as the fastest layout that fits.
    """
    from perfmodel import report
    from perfmodel.predict import predict as run_prediction

    result = run_prediction(load_from_flags(scenario, flags))
    if fmt == "json":
        click.echo(report.to_json(result.to_dict()))
    elif fmt == "csv":
        click.echo(report.to_csv([result.to_dict()]), nl=False)
    else:
        click.echo(report.table(result))


@cli.group()
def hardware() -> None:
    """The hardware database (hardware_specs/)."""


@hardware.command("list")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def hardware_list(fmt: str) -> None:
    """Accelerators and systems, with their datasheet figures."""
    from tabulate import tabulate

    from perfmodel.hardware import accelerators, systems

    if fmt == "json":
        from perfmodel.report import to_json

        click.echo(
            to_json(
                {
                    "accelerators": [a.model_dump() for a in accelerators().values()],
                    "systems": [s.model_dump() for s in systems().values()],
                }
            )
        )
        return

    def value(figure: Any, fmt_spec: str = ",.0f") -> str:
        return "-" if figure is None else format(figure.value, fmt_spec)

    acc_rows = [
        [
            a.id,
            a.name,
            value(a.bf16_tflops),
            value(a.fp8_tflops),
            value(a.fp4_tflops),
            value(a.hbm_gb),
            value(a.hbm_tbps, ".2f"),
            value(a.scaleup_gb_per_s_per_direction),
            value(a.scaleup_domain_gpus),
            value(a.nic_gbit_per_s),
            value(a.power_w),
            value(a.usd_per_gpu_hour, ".2f"),
        ]
        for a in accelerators().values()
    ]
    click.echo(
        tabulate(
            acc_rows,
            headers=[
                "accelerator",
                "name",
                "BF16 TF/s",
                "FP8 TF/s",
                "FP4 TF/s",
                "HBM GB",
                "HBM TB/s",
                "scale-up GB/s/dir",
                "domain",
                "NIC Gb/s",
                "W",
                "$/GPU-h",
            ],
        )
    )
    sys_rows = [
        [s.id, s.name, s.accelerator, value(s.gpus_per_node), s.fabric.name, value(s.fabric.oversubscription, ".1f")]
        for s in systems().values()
    ]
    click.echo(
        "\n"
        + tabulate(
            sys_rows, headers=["system", "name", "accelerator", "GPUs/node", "scale-out fabric", "oversubscription"]
        )
    )
    click.echo(
        "\nDense peaks; scale-up GB/s per direction (bidirectional is twice); NIC in Gb/s (bits). "
        "Every figure's source is in hardware_specs/."
    )


@cli.group()
def models() -> None:
    """The model zoo."""


@models.command("list")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def models_list(fmt: str) -> None:
    """Built-in models with their shapes and exact parameter counts."""
    from perfmodel.models import ZOO

    records = [{"params": m.params, **m.model_dump()} for m in ZOO.values()]
    if fmt == "json":
        from perfmodel.report import to_json

        click.echo(to_json([{"id": r.pop("id"), **r} for r in records]))
        return
    from tabulate import tabulate

    rows = [
        [m.id, m.name, f"{m.params:,}", m.layers, m.hidden, m.ffn, m.heads, m.kv_heads, m.vocab] for m in ZOO.values()
    ]
    click.echo(
        tabulate(rows, headers=["model", "name", "parameters", "layers", "hidden", "ffn", "heads", "kv heads", "vocab"])
    )


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
