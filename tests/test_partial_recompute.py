"""Partial (block) recompute as a layout value, and unreported recompute settled as the stack would set it.

Megatron's recompute_granularity=full, recompute_method=block, recompute_num_layers=k recomputes the first k layers
of each pipeline chunk in full and keeps the others' activations: k/L of a full recompute's extra forward, k layers
at a full recompute's checkpoint and L - k at none (physics/step.full_recompute_share, physics/memory.block_recompute).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perfmodel.fitting.assumed import MEMORY_ORDER
from perfmodel.fitting.runs import MeasuredRun, bundled_runs
from perfmodel.fitting.validation import prepare
from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.scenario import checked_scenario
from perfmodel.physics.calibration import UNCALIBRATED
from perfmodel.physics.memory import logits_bytes
from perfmodel.physics.parallel import Layout
from perfmodel.physics.step import Context, evaluate, memory_need
from perfmodel.physics.workload import padded_vocab
from perfmodel.planning.predict import choose_layout, context_for, layout_vars

LORA_MI300X = {
    "benchmark": "mlperf-llama2-70b-lora@v5.0",
    "gpu": "mi300x",
    "n_gpus": 8,
    "precision": "fp8",
    "parallelism": {"tp": 1, "pp": 1, "cp": 1, "vp": 1, "mbs": 1, "gbs": 8, "zero": 1},
}
"""AMD's MLPerf v5.0 Llama-2-70B LoRA config on 8 MI300X (config_MI300X_1x8x1.sh: TP1 PP1 CP1, FP8; stack_notes.md:
ACG=full ACM=block ACL=21, a full recompute of 21 of the 80 layers)."""


def _at(raw: dict[str, Any], **parallelism: Any) -> tuple[Context, Layout]:
    scenario = checked_scenario(raw | {"parallelism": raw["parallelism"] | parallelism})
    family = resolve(raw["gpu"]).accelerator.family
    ctx = context_for(scenario, UNCALIBRATED.efficiency(family, scenario.stack))
    return ctx, choose_layout(scenario, ctx)[0]


def _partial(layout: Layout, k: int) -> Layout:
    return replace(layout, recompute="full", recompute_layers=k)


def test_block_recompute_time_is_k_over_l_of_a_full_recomputes_forward() -> None:
    ctx, none = _at(LORA_MI300X, recompute="none")
    full = _partial(none, 80)
    every = replace(none, recompute="full")
    traces = {}
    for k in (1, 21, 40, 79):
        trace: dict[str, Any] = {}
        evaluate(ctx, layout_vars(_partial(none, k)), trace)
        traces[k] = trace
        assert float(trace["recompute_s"]) == pytest.approx(k / 80 * float(trace["layer"].forward), rel=1e-12)
    assert evaluate(ctx, layout_vars(full)) == evaluate(ctx, layout_vars(every))  # k = L is a full recompute
    step = {k: float(evaluate(ctx, layout_vars(_partial(none, k))).compute_s) for k in (20, 40, 60)}
    assert step[40] - step[20] == pytest.approx(step[60] - step[40], rel=1e-9)  # compute linear in k
    t_none = float(evaluate(ctx, layout_vars(none)).compute_s)
    assert t_none < step[20] < step[60] < float(evaluate(ctx, layout_vars(every)).compute_s)


def test_block_recompute_memory_is_k_layers_at_full_and_the_rest_at_none() -> None:
    ctx, none = _at(LORA_MI300X, recompute="none")
    every = replace(none, recompute="full")
    acts = {k: float(evaluate(ctx, layout_vars(_partial(none, k))).memory.activations) for k in (10, 30, 50, 79)}
    slope = (acts[50] - acts[10]) / 40
    assert acts[30] == pytest.approx(acts[10] + 20 * slope, rel=1e-12)  # linear in k
    assert acts[79] == pytest.approx(acts[10] + 69 * slope, rel=1e-12)
    a_none = float(evaluate(ctx, layout_vars(none)).memory.activations)
    a_full = float(evaluate(ctx, layout_vars(every)).memory.activations)
    assert acts[10] - 10 * slope == pytest.approx(a_none, rel=1e-12)  # k -> 0: no recompute
    # k = L: every layer at the checkpoint (80 x the slope's per-layer saving below none) plus the working layer;
    # the only rank (PP1) also holds the logits
    per_layer_none = (a_none - logits_bytes(8192, padded_vocab(ctx.model, 1))) / 80
    assert a_full == pytest.approx(a_none + 80 * slope + per_layer_none, rel=1e-12)
    assert float(evaluate(ctx, layout_vars(_partial(none, 80))).memory.activations) == a_full


def test_amds_mi300x_lora_config_fits_with_21_of_80_layers_recomputed() -> None:
    # stack_notes.md (AMD's MLPerf v5.0 LoRA configs): the MI300X (192 GB) config recomputes 21 of 80 layers
    # (ACG=full ACM=block ACL=21) at TP1 PP1 CP1; the MI325X (256 GB) one none (tests/test_memory_fits.py).
    ctx, none = _at(LORA_MI300X, recompute="none")
    assert not evaluate(ctx, layout_vars(none)).fits  # without recompute it does not fit on 192 GB
    step = evaluate(ctx, layout_vars(_partial(none, 21)))
    assert step.fits and step.hbm_bytes == 192 * 2**30
    ctx325, mi325x = _at(LORA_MI300X | {"gpu": "mi325x"}, recompute="none")
    assert evaluate(ctx325, layout_vars(mi325x)).fits


def _row(parallelism: dict[str, Any]) -> MeasuredRun:
    scenario = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8, "precision": "bf16", "stack": "megatron",
                "parallelism": {"tp": 1, "pp": 1, "cp": 1, "vp": 1, "zero": 1, "gbs": 64} | parallelism}  # fmt: skip
    return MeasuredRun("test:1", "test", scenario, "step_time_s", 1.0)


def _fits(item: Any, layout: Layout) -> bool:
    return bool(memory_need(item.context, layout_vars(layout)) <= item.context.hardware.accelerator.memory_bytes)


def test_settle_takes_selective_where_none_does_not_fit_but_selective_does() -> None:
    """Llama 3.1 8B on 8 H100s, TP1, one 8k sequence per micro-batch, BF16: no recompute needs more than 80 GiB,
    selective recompute fits; the stack's choice is selective, not a range and not the fastest of the range."""
    item = prepare(_row({"mbs": 1, "seq_len": 8192}), UNCALIBRATED)
    assert not _fits(item, replace(item.layout, recompute="none"))
    assert item.basis == "stack choice" and not item.range_only
    assert (item.layout.recompute, item.layout.recompute_layers) == ("selective", None)
    assert MEMORY_ORDER["recompute"].index("selective") == 1  # the first setting after none


def test_settle_takes_the_fewest_block_layers_that_fit() -> None:
    """Two 8k sequences per micro-batch: selective does not fit either; the choice is a full recompute of the
    fewest leading layers k that fit (k - 1 does not), never every layer."""
    item = prepare(_row({"mbs": 2, "seq_len": 8192}), UNCALIBRATED)
    lo = item.layout
    assert item.basis == "stack choice" and lo.recompute == "full" and lo.recompute_layers
    assert not _fits(item, replace(lo, recompute="selective", recompute_layers=None))
    assert _fits(item, lo) and not _fits(item, replace(lo, recompute_layers=lo.recompute_layers - 1))
    assert 1 < lo.recompute_layers < item.context.model.layers
    times = sorted(float(evaluate(item.context, layout_vars(m)).step_time_s) for m in item.members)
    assert len(times) >= 2 and times[0] <= float(evaluate(item.context, layout_vars(lo)).step_time_s) <= times[-1]


def test_amds_mi325x_row_is_priced_at_the_default_and_mi300x_at_a_stack_choice() -> None:
    # mlperf_training_llm.csv, v5.0 llama2_70b_lora, AMD MI325X_EPYC_9575F_pytorch, and v5.1 Krai
    # PowerEdge-XE9680-MI300X-192GB_n1_v5.1 (8 GPUs, FP8, TP1 PP1 CP1, recompute and sharding unreported): the MI325X
    # recomputes none (stack_notes.md); on the MI300X no recompute does not fit, so the row is priced at the stack's
    # least memory-saving setting that fits, with ZeRO-1 kept. AMD's own MI300X row runs its config's recompute
    # (21 of 80 layers, ACL=21: runs.CONFIG_RECOMPUTE), with only the sharding left to the stack.
    runs = {r.id: r for r in bundled_runs()[0]}
    mi325x = prepare(runs["mlperf:v5.0/AMD/MI325X_EPYC_9575F_pytorch/llama2_70b_lora"], UNCALIBRATED)
    mi300x = prepare(runs["mlperf:v5.1/Krai/PowerEdge-XE9680-MI300X-192GB_n1_v5.1/llama2_70b_lora"], UNCALIBRATED)
    amd_mi300x = prepare(runs["mlperf:v5.0/AMD/MI300X_EPYC_9575F_pytorch/llama2_70b_lora"], UNCALIBRATED)
    assert (mi325x.basis, mi325x.layout.recompute, mi325x.layout.zero) == ("stack default", "none", 1)
    assert mi300x.basis == "stack choice" and mi300x.layout.recompute != "none" and mi300x.layout.zero == 1
    assert (amd_mi300x.layout.recompute, amd_mi300x.layout.recompute_layers, amd_mi300x.layout.zero) == ("full", 21, 1)


def test_recompute_layers_round_trips_through_cli_json_and_scenario_toml(cli: Any, tmp_path: Path) -> None:
    flags = ["--benchmark", "mlperf-llama2-70b-lora@v5.0", "--gpu", "mi300x", "--gpus", "8", "--precision", "fp8"]
    flags += ["--tp", "1", "--pp", "1", "--cp", "1", "--vp", "1", "--mbs", "1", "--gbs", "8", "--zero", "1"]
    result = cli("predict", *flags, "--recompute-layers", "21", "--format", "json")
    assert result.code == 0, result.err
    out = json.loads(result.out)
    assert (out["parallelism"]["recompute"], out["parallelism"]["recompute_layers"]) == ("full", 21)
    par = {k: v for k, v in out["parallelism"].items() if k not in ("dp", "ep")}
    body = "\n".join(f"{k} = {json.dumps(v)}" for k, v in par.items())
    path = tmp_path / "partial.toml"
    head = 'benchmark = "mlperf-llama2-70b-lora@v5.0"\ngpu = "mi300x"\nn_gpus = 8\nprecision = "fp8"\n'
    path.write_text(f"{head}[parallelism]\n{body}\n")
    again = cli("predict", str(path), "--format", "json")
    assert again.code == 0, again.err
    assert json.loads(again.out)["step_time_s"] == out["step_time_s"]
    every = json.loads(cli("predict", *flags, "--recompute", "full", "--format", "json").out)
    assert "recompute_layers" not in every["parallelism"] and every["step_time_s"] > out["step_time_s"]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["predict", "--recompute", "selective", "--recompute-layers", "4"], "recompute_layers needs recompute 'full'"),
        (["predict", "--recompute-layers", "4", "--model", "llama3.1-8b", "--gpus", "8"], "search does not enumerate"),
        (["search", "--recompute-layers", "4", "--model", "llama3.1-8b", "--gpus", "8"], "search does not enumerate"),
    ],
)
def test_bad_recompute_layers_is_one_line_and_exit_2(cli: Any, extra: list[str], says: str) -> None:
    result = cli(*extra)
    assert result.code == 2 and says in result.err and "Traceback" not in result.err


def test_settle_keeps_the_stacks_sharding_before_raising_it() -> None:
    # mlperf_training_llm.csv, v5.0 llama2_70b_lora, NVIDIA nyx_n1_ngc25.04_nemo: 8 B200, FP8, TP1 PP1 CP1, recompute
    # and sharding unreported. No recompute at ZeRO-3 fits (the frozen base sharded 8 ways), but Megatron's recipe
    # keeps its distributed optimizer (ZeRO-1) and raises recompute first (fitting.assumed.MEMORY_ORDER).
    runs = {r.id: r for r in bundled_runs()[0]}
    item = prepare(runs["mlperf:v5.0/NVIDIA/nyx_n1_ngc25.04_nemo/llama2_70b_lora"], UNCALIBRATED)
    assert item.basis == "stack choice" and item.layout.zero == 1 and item.layout.recompute == "full"
    assert any(m.zero == 3 and m.recompute == "none" for m in item.members)  # the order decided, not the fit
    assert not _fits(item, replace(item.layout, recompute="selective", recompute_layers=None))
