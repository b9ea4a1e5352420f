"""`perfmodel hardware list` and `perfmodel models list`: what the model knows about."""

from __future__ import annotations

from typing import Any

import click

from perfmodel.cli import cli


@cli.group()
def hardware() -> None:
    """The hardware database (hardware_specs/)."""


@hardware.command("list")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def hardware_list(fmt: str) -> None:
    """Accelerators and systems, with their datasheet figures."""
    from tabulate import tabulate

    from perfmodel.inputs.hardware import accelerators, systems

    if fmt == "json":
        from perfmodel.outputs.report import to_json

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
    from perfmodel.inputs.models import ZOO

    records = [{"params": m.params, **m.model_dump()} for m in ZOO.values()]
    if fmt == "json":
        from perfmodel.outputs.report import to_json

        click.echo(to_json([{"id": r.pop("id"), **r} for r in records]))
        return
    from tabulate import tabulate

    rows = [
        [m.id, m.name, f"{m.params:,}", m.layers, m.hidden, m.ffn, m.heads, m.kv_heads, m.vocab] for m in ZOO.values()
    ]
    click.echo(
        tabulate(rows, headers=["model", "name", "parameters", "layers", "hidden", "ffn", "heads", "kv heads", "vocab"])
    )
