"""Memory checks that cannot lie: a measured run ran, so the memory model must say that it fits.

A row that reports every layout dimension (parallel degrees, micro-batch, recompute, ZeRO stage) was run at exactly
that layout on that hardware; if perfmodel's memory need exceeds the capacity, the memory model over-counts.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from perfmodel.fitting.runs import bundled_runs
from perfmodel.fitting.validation import REPORTED_DIMENSIONS, prepare, prepare_all
from perfmodel.inputs.models import get_model
from perfmodel.inputs.precision import RECIPES
from perfmodel.physics import memory
from perfmodel.physics.calibration import UNCALIBRATED
from perfmodel.physics.step import evaluate
from perfmodel.physics.workload import padded_vocab
from perfmodel.planning.predict import layout_vars

KNOWN_OVERFLOWS: dict[str, str] = {}
"""Reported-layout rows the memory model says do not fit, with why (none today). Pinned: one more fails the test."""


def test_every_row_with_a_reported_layout_fits_in_memory() -> None:
    runs, _ = bundled_runs()
    reported = [r for r in runs if all(d in r.scenario.get("parallelism", {}) for d in REPORTED_DIMENSIONS)]
    items = prepare_all(reported, UNCALIBRATED, [])
    # measured_runs.csv's fully reported rows (260 on 2026-12-06, llm-foundry's 78 A100-40GB rows among them)
    assert len(items) == len(reported) >= 260
    overflows = {}
    for item in items:
        step = evaluate(item.context, layout_vars(item.layout))
        if not step.fits:
            overflows[item.run.id] = f"needs {float(step.memory.total) / 1e9:.1f} of {step.hbm_bytes / 1e9:.1f} GB"
    assert set(overflows) == set(KNOWN_OVERFLOWS), overflows


def test_llm_foundrys_fused_cross_entropy_keeps_bf16_logits_and_a_bf16_gradient() -> None:
    # measured_runs.csv:466, llm-foundry's benchmark table (README last changed 2024-01-06), A100 80GB: MPT-350M on 8
    # GPUs, seq 2048, MBS 32, no recompute, FSDP FULL_SHARD. llm-foundry 0.4.0's default loss, flash-attn's fused
    # cross entropy, keeps the BF16 logits and writes a BF16 gradient (inputs/stacks.py 'composer'): 4 bytes a logit,
    # not the 6 of Megatron's FP32 softmax beside them.
    runs, _ = bundled_runs()
    item = prepare(next(r for r in runs if r.id == "measured_runs.csv:466"), UNCALIBRATED)
    assert item.context.stack == "composer" and item.context.recipe.fused_cross_entropy
    logits = 32 * 2048 * padded_vocab(item.context.model, 1)
    fused = evaluate(item.context, layout_vars(item.layout))
    unfused_context = replace(item.context, recipe=replace(item.context.recipe, fused_cross_entropy=False))
    unfused = evaluate(unfused_context, layout_vars(item.layout))
    assert float(unfused.memory.activations - fused.memory.activations) == pytest.approx(logits * 2.0)


def test_llm_foundrys_a100_40gb_rows_fit_with_their_fused_cross_entropy() -> None:
    # measured_runs.csv:516-518 and 538-541, llm-foundry's benchmark table (README last changed 2024-01-06), A100 40GB
    # (40 GiB): MPT-1B at MBS 10 on 32-128 GPUs and MPT-350M at MBS 18 on 16-128 GPUs, seq 2048, no recompute, FSDP
    # FULL_SHARD. They ran; priced with an FP32 softmax beside the BF16 logits they needed 43.1-45.0 GB of 42.9.
    runs, _ = bundled_runs()
    ids = {f"measured_runs.csv:{n}" for n in (516, 517, 518, 538, 539, 540, 541)}
    items = prepare_all([r for r in runs if r.id in ids], UNCALIBRATED, [])
    assert len(items) == 7 and {i.context.hardware.accelerator.id for i in items} == {"a100-40gb"}
    for item in items:
        fused = evaluate(item.context, layout_vars(item.layout))
        unfused_context = replace(item.context, recipe=replace(item.context.recipe, fused_cross_entropy=False))
        unfused = evaluate(unfused_context, layout_vars(item.layout))
        assert fused.hbm_bytes == 40 * 2**30
        assert float(fused.memory.total) < fused.hbm_bytes < float(unfused.memory.total), item.run.id


def _per_token(precision: str, recompute: str, frozen: bool) -> float:
    return memory.activation_bytes_per_token(get_model("llama2-70b"), RECIPES[precision], recompute, frozen)


def test_a_frozen_base_saves_no_weight_gradient_inputs() -> None:
    # Llama 2 70B: h 8192, kv 1024 (8 KV heads x 128), SwiGLU ffn 28672. Bytes per token per layer, no recompute.
    h, kv, f = 8192, 1024, 28672
    # FP8, full fine-tuning: norm inputs 2 x 2h, QKV input 2h + h (FP8 copy for dW), Q/K/V 2(h + 2kv), attention
    # output 2h + h (FP8 copy for the output projection's dW), SwiGLU input 2 x 2f, fc1/fc2 FP8 inputs h + f.
    assert _per_token("fp8", "none", False) == 11 * h + 4 * kv + 5 * f
    # Frozen base (LoRA on QKV and output projection): no FP8 dW inputs; the QKV adapter keeps its BF16 input (2h).
    assert _per_token("fp8", "none", True) == 10 * h + 4 * kv + 4 * f
    # BF16: the dW inputs are the BF16 tensors themselves (qkv 2h, proj: the saved output, fc1 2h, fc2 2f).
    assert _per_token("bf16", "none", False) == 12 * h + 4 * kv + 6 * f
    assert _per_token("bf16", "none", True) == 10 * h + 4 * kv + 4 * f
    # Selective recompute re-runs the norms and the activation: only the output projection's FP8 copy is dropped.
    assert _per_token("fp8", "selective", False) - _per_token("fp8", "selective", True) == h
    assert _per_token("fp8", "full", True) == _per_token("fp8", "full", False) == 2 * h


def test_nvidias_h200_lora_row_fits_at_its_stacks_default() -> None:
    # mlperf_training_llm.csv, v4.0 llama2_70b_lora, NVIDIA H200 (8x H200-SXM-141GB), NeMo 24.04, FP8, TP2 PP1 CP1
    # DP4 MBS1 (config_DGXH200_1x8x2xtp2pp1cp1.sh). Recompute and sharding are unreported: the stack default (none,
    # distributed optimizer) priced full-rank activations at more than the 141 GB it ran in; it fits now.
    runs, _ = bundled_runs()
    run = next(r for r in runs if r.id == "mlperf:v4.0/NVIDIA/h200_ngc24.04_nemo/llama2_70b_lora")
    item = prepare(run, UNCALIBRATED)
    assert item.basis == "stack default"
    assert (item.layout.tp, item.layout.cp, item.layout.recompute, item.layout.zero) == (2, 1, "none", 1)
    step = evaluate(item.context, layout_vars(item.layout))
    tokens, layers, params = 8192, 80, item.context.model.params
    logits = tokens * 32000 / 2 * (2 + 4)  # the vocabulary split over TP 2
    adapters = layers * 16 * (4 * 8192 + 2 * 1024) / 2  # r = 16 on QKV and output projection, over TP 2
    adapter_state = adapters * (2 + 12 / 4)  # adapter gradients, Adam over DP 4
    state = params * 1.0 / 2 + adapter_state  # one FP8 copy of the frozen weights (precision.frozen_base_recipe)
    frozen = _per_token("fp8", "none", True) * tokens * layers / 2 * 1.05 + logits
    assert float(step.memory.total) == pytest.approx(state + frozen + 3e9, rel=1e-3)
    assert step.hbm_bytes == 141 * 2**30 and step.fits  # H200: 141 GiB of HBM3e
    full_rank = _per_token("fp8", "none", False) * tokens * layers / 2 * 1.05 + logits
    held_transposed = params * 2.0 / 2 + adapter_state  # weights with a transposed copy held
    assert held_transposed + full_rank + 3e9 > step.hbm_bytes  # what the memory model said before


def test_amds_mi325x_lora_row_can_run_without_recompute() -> None:
    # stack_notes.md (AMD's MLPerf v5.0 LoRA configurations): the MI325X config (256 GB) recomputes no layer.
    # mlperf_training_llm.csv, v5.0 llama2_70b_lora, AMD MI325X_EPYC_9575F_pytorch, 8 GPUs, FP8. Its recompute and
    # sharding are unreported: the stack default (no recompute, ZeRO-1) fits, with one FP8 copy of the frozen base
    # on CDNA3 (69 GB; with a transposed copy, 138 GB, and 140 GB of activations it was 6 GB over).
    runs, _ = bundled_runs()
    run = next(r for r in runs if r.id == "mlperf:v5.0/AMD/MI325X_EPYC_9575F_pytorch/llama2_70b_lora")
    item = prepare(run, UNCALIBRATED)
    assert item.basis == "stack default" and (item.layout.recompute, item.layout.zero) == ("none", 1)
    no_recompute = [m for m in item.members if m.recompute == "none"]
    assert no_recompute and all(evaluate(item.context, layout_vars(m)).fits for m in no_recompute)
