"""Operations priced stacked (compute.batched) give each operation the numbers it gets priced alone, to the last bit:
for array shards and for a fit's efficiency variants, on dense, MoE, hybrid (Mamba-2) and NVFP4 passes. A field
`op_time` comes to read that `batched` neither stacks nor groups by would fail here."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.fitting.calibrate import _stack
from perfmodel.inputs.precision import RECIPES
from perfmodel.inputs.scenario import checked_scenario
from perfmodel.physics import mamba, moe, step, workload
from perfmodel.physics.compute import Rates, batched, op_time, times_by
from perfmodel.physics.parameters import Profile, efficiency
from perfmodel.physics.workload import Shard
from perfmodel.planning.predict import context_for

SPECS = [
    {"model": "llama3.1-70b", "gpu": "h100-sxm", "n_gpus": 256, "precision": "fp8"},
    {"model": "llama3.1-405b", "gpu": "gb300", "n_gpus": 512, "precision": "nvfp4"},
    {"model": "qwen3-30b-a3b", "gpu": "b200", "n_gpus": 64, "precision": "mxfp8"},
    {"model": "nemotron-3-nano-30b-a3b", "gpu": "gb300", "n_gpus": 64, "precision": "fp8"},  # Mamba-2 blocks
]


def _passes(ctx: step.Context, sh: Shard) -> list[list[workload.Op]]:
    recipe, frozen = ctx.recipe, ctx.frozen_base
    found = [workload.head_forward(sh), workload.head_backward(sh, frozen), workload.embedding_ops(sh)]
    for rec in (recipe, RECIPES["bf16"]):
        found += [workload.layer_forward(sh, rec), workload.layer_backward(sh, rec, frozen)]
        if ctx.model.is_moe:
            found += [moe.moe_block_forward(sh, rec), moe.moe_block_backward(sh, rec)]
        if ctx.model.hybrid_pattern:
            found += [mamba.mamba_block_forward(sh, rec), mamba.mamba_block_backward(sh, rec, frozen)]
    return found


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s['model']}-{s['precision']}")
@pytest.mark.parametrize("variants", [False, True], ids=["arrays", "variants"])
def test_a_stacked_pass_prices_every_operation_as_alone(spec: dict[str, object], variants: bool) -> None:
    ctx = context_for(checked_scenario(spec))
    tp, cp, mbs = np.array([1.0, 2.0, 4.0, 8.0]), np.array([1.0, 1.0, 2.0, 1.0]), np.array([1.0, 2.0, 1.0, 4.0])
    eff = ctx.efficiency
    if variants:  # a fit's Jacobian: efficiencies of shape (V,), layouts of shape (n, 1)
        tp, cp, mbs = tp[:, None], cp[:, None], mbs[:, None]
        family = ctx.hardware.accelerator.family
        eff = _stack([efficiency({"memory": m, "gemm_sustained": 0.9}, Profile(family)) for m in (0.6, 0.7, 0.8)])
    sh = Shard(ctx.model, ctx.recipe, tp, cp, mbs, ctx.seq_len, 1.0, 1.0, ctx.imbalance)
    rates = Rates(ctx.hardware.accelerator, eff)
    for ops in _passes(ctx, sh):
        plan = batched(ops)
        assert len(plan.priced) < len(ops)  # something was stacked
        alone: object = 0.0
        for op in ops:
            alone = alone + op_time(op, ctx.hardware.accelerator, eff, rates)
        assert np.array_equal(times_by(plan, rates)["total"], alone)
