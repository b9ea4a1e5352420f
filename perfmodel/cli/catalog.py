"""`perfmodel hardware list|show` and `perfmodel models list|show`: what the model knows about."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import complete_ids, hardware_option, say, table_or_json

if TYPE_CHECKING:
    from perfmodel.inputs.models import ModelSpec


@cli.group()
def hardware() -> None:
    """The hardware database (hardware_specs/ and your own files: README 'Your own hardware')."""


@hardware.command("show")
@click.argument("entry_id", metavar="ID", shell_complete=complete_ids(("accelerators", "systems")))
@hardware_option
@table_or_json
def hardware_show(entry_id: str, fmt: str) -> None:
    """One accelerator or system with every figure and its source."""
    from perfmodel.errors import PerfmodelError, did_you_mean
    from perfmodel.inputs.hardware import accelerators, get_accelerator, get_system, systems
    from perfmodel.inputs.record import as_dict
    from perfmodel.outputs.report import to_json

    if entry_id in accelerators():
        entry: Any = get_accelerator(entry_id)
    elif entry_id in systems():
        entry = get_system(entry_id)
    else:
        known = [*accelerators(), *systems()]
        hint = did_you_mean(entry_id, known)
        raise PerfmodelError(
            f"hardware show: unknown accelerator or system '{entry_id}'{hint}; valid: {', '.join(known)}"
        )
    record = as_dict(entry)
    if fmt == "json":
        click.echo(to_json(record))
        return
    from perfmodel.inputs.scenario import flatten
    from perfmodel.outputs.columns import tabulated

    rows: dict[str, list[str]] = {}
    for key, figure in flatten(record).items():
        # 8 GPUs per node, not 8.0 (no 375,000: tabulate's wrapping casts a number with separators to int, and fails)
        value = int(figure) if isinstance(figure, float) and figure.is_integer() else figure
        field, _, part = key.rpartition(".")
        if part in ("value", "source") and field:
            rows.setdefault(field, ["", ""])[part == "source"] = _cell(value)
        else:
            rows[key] = [_cell(value), ""]
    table = [[k, *v] for k, v in rows.items()]
    say(tabulated(table, headers=["field", "value", "source"], maxcolwidths=[None, 40, 70]))


def _cell(value: Any) -> str:
    """A `show` table's value in TOML spelling (true, not True: tabulate would read the strings "True"/"False" as
    booleans), '-' where there is none (None, or a model's empty pattern)."""
    return "-" if value in (None, "") else str(value).lower() if isinstance(value, bool) else str(value)


@hardware.command("list")
@hardware_option
@table_or_json
def hardware_list(fmt: str) -> None:
    """Accelerators and systems, with their datasheet figures."""
    from perfmodel.inputs.hardware import accelerators, systems
    from perfmodel.inputs.record import as_dict
    from perfmodel.outputs.columns import tabulated
    from perfmodel.outputs.record import price_cell

    if fmt == "json":
        from perfmodel.outputs.report import to_json

        click.echo(
            to_json(
                {
                    "accelerators": [as_dict(a) for a in accelerators().values()],
                    "systems": [as_dict(s) for s in systems().values()],
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
            f"{2 * a.scaleup_gb_per_s_per_direction.value:,.0f}",
            value(a.scaleup_domain_gpus),
            value(a.nic_gbit_per_s),
            value(a.power_w),
            "-" if a.usd_per_gpu_hour is None else price_cell(a.usd_per_gpu_hour.value, a.usd_per_gpu_hour.basis),
        ]
        for a in accelerators().values()
    ]
    say(
        tabulated(
            acc_rows,
            headers=[
                "accelerator",
                "name",
                "BF16 TF/s",
                "FP8 TF/s",
                "FP4 TF/s",
                "HBM GiB",
                "HBM TB/s",
                "scale-up GB/s",
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
    say(
        "\n"
        + tabulated(
            sys_rows, headers=["system", "name", "accelerator", "GPUs/node", "scale-out fabric", "oversubscription"]
        )
    )
    say(
        "\nDense peaks; HBM in GiB (binary, as vendors' '80 GB' means); scale-up GB/s per GPU in both directions, as "
        "datasheets and whatif's nvlink_gbps quote it (the files hold one direction); NIC in Gb/s (bits). "
        "perfmodel hardware show ID gives every figure's source."
    )


@cli.group()
def models() -> None:
    """The model zoo."""


@models.command("list")
@table_or_json
def models_list(fmt: str) -> None:
    """Built-in models with their shapes and exact parameter counts."""
    from perfmodel.inputs.models import ZOO
    from perfmodel.inputs.record import as_dict

    records = [
        {"params": m.params, "main_params": m.main_params, "active_params": m.active_params, **as_dict(m)}
        for m in ZOO.values()
    ]
    if fmt == "json":
        from perfmodel.outputs.report import to_json

        click.echo(to_json([{"id": r.pop("id"), **r} for r in records]))
        return
    from perfmodel.outputs.columns import tabulated

    rows = [
        [m.id, m.name, f"{m.params:,}", m.layers, m.hidden, m.ffn, m.heads, m.kv_heads, m.vocab] for m in ZOO.values()
    ]
    say(
        tabulated(
            rows, headers=["model", "name", "parameters", "layers", "hidden", "ffn", "heads", "kv heads", "vocab"]
        )
    )
    experts = [
        [m.id, f"{m.main_params:,}", f"{m.active_params:,}", m.experts, m.top_k, m.shared_experts, m.moe_ffn,
         m.dense_layers, _mtp(m), f"{m.attention}+dsa" if m.index_topk else m.attention, m.dispatcher]
        for m in ZOO.values()
        if m.is_moe
    ]  # fmt: skip
    headers = ["model", "main parameters", "active per token", "experts", "top-k", "shared", "expert ffn",
               "dense layers", "MTP", "attention", "dispatcher"]  # fmt: skip
    say(
        "\nMixture-of-experts models (parameters above include MTP modules; main: without them; active: what one "
        "token touches in the main model, embedding and LM head included):\n" + tabulated(experts, headers=headers)
    )


@models.command("show")
@click.argument("model_id", metavar="ID", shell_complete=complete_ids(("models",)))
@table_or_json
def models_show(model_id: str, fmt: str) -> None:
    """One zoo model, or a model FILE.toml as --model reads it: every shape, its parameters (total, main model,
    active per token) and its shapes' source."""
    from perfmodel.errors import PerfmodelError
    from perfmodel.inputs.models import get_model
    from perfmodel.inputs.record import as_dict
    from perfmodel.inputs.scenario import model_file, table_spec

    try:
        model = table_spec(model_file(Path(model_id))) if model_id.endswith(".toml") else get_model(model_id)
    except PerfmodelError as exc:
        raise PerfmodelError(f"models show: {exc}") from None
    counts = {"params": model.params, "main_params": model.main_params, "active_params": model.active_params}
    record = {"id": model.id, **counts, **as_dict(model)}
    if fmt == "json":
        from perfmodel.outputs.report import to_json

        click.echo(to_json(record))
        return
    from textwrap import wrap

    from perfmodel.outputs.columns import tabulated

    rows = []
    for key, value in record.items():
        text = f"{value:,}" if key in counts else _cell(value)
        lines = wrap(text, 100) if key == "source" else [text]  # the source's prose wraps, one row a line
        rows += [[key if n == 0 else "", line] for n, line in enumerate(lines)]
    say(tabulated(rows, headers=["field", "value"], disable_numparse=True))


def _mtp(model: ModelSpec) -> str:
    """The MTP depths, and a hybrid's module pattern with whether the depths share its weights ('2x*E shared')."""
    if not model.mtp_pattern:
        return str(model.mtp_layers)
    return f"{model.mtp_layers}x{model.mtp_pattern}" + (" shared" if model.mtp_shared_weights else "")


@cli.group()
def scenarios() -> None:
    """The ready-made scenarios and sweeps (run one by name: perfmodel predict mlperf-405b-h100-512)."""


@scenarios.command("list")
@table_or_json
def scenarios_list(fmt: str) -> None:
    """Bundled scenario and sweep files, by the name commands take, with their descriptions."""
    from perfmodel.inputs.resources import bundled_descriptions

    records = [
        {"kind": folder[:-1], "name": name, "description": description}
        for folder in ("scenarios", "sweeps")
        for name, description in bundled_descriptions(folder).items()
    ]
    if fmt == "json":
        from perfmodel.outputs.report import to_json

        click.echo(to_json(records))
        return
    from perfmodel.outputs.columns import tabulated

    rows = [[r["kind"], r["name"], r["description"]] for r in records]
    say(tabulated(rows, headers=["kind", "name", "description"], maxcolwidths=[None, None, 90]))
