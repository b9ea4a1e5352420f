"""The search's lower bounds with the communication they bound (`step.step_floor` with `links`, `step.least_floor`
with `links`) never exceed what they bound, on random valid layouts of dense, MoE (GPT-OSS's exchange with nothing
beside it, DeepSeek-V3's behind the layer), hybrid and LoRA models, under random physical efficiencies: a layout's
own floor (its recompute mode and ZeRO stage) is under its step; the floor of its (row, micro-batch) cell (no
recompute, every ZeRO stage) is under its step too; and a row's bound is under the floor of each of its cells. A
floor over its step would let the search drop the best layout."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel.inputs.scenario import checked_scenario
from perfmodel.physics.step import Context, LayoutVars, evaluate_times, floor_holds, least_floor, step_floor
from perfmodel.planning.predict import context_for
from perfmodel.planning.search import Block, Space, blocks

SCENARIOS = {
    "gpt-oss-120b b200 mxfp8": {"model": "gpt-oss-120b", "gpu": "b200", "n_gpus": 256, "precision": "mxfp8"},
    "deepseek-v3 gb300 mxfp8": {"model": "deepseek-v3", "gpu": "gb300", "n_gpus": 512, "precision": "mxfp8"},
    "llama3.1-405b h100 fp8": {"model": "llama3.1-405b", "gpu": "h100-sxm", "n_gpus": 1024, "precision": "fp8"},
    "mixtral-8x7b mi355x bf16": {"model": "mixtral-8x7b", "gpu": "mi355x", "n_gpus": 64, "precision": "bf16"},
    "nemotron-h-56b h100 fp8": {"model": "nemotron-h-56b", "gpu": "h100-sxm", "n_gpus": 128, "precision": "fp8"},
    "lora llama2-7b h200": {
        "model": "llama2-7b", "gpu": "h200-sxm", "n_gpus": 16, "precision": "bf16", "lora_rank": 16,
    },
    "torchtitan llama3.1-8b h100": {
        "model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 64, "precision": "bf16", "stack": "torchtitan",
    },
    "deepspeed zero-3 tensor by tensor": {
        "model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 64, "precision": "bf16", "stack": "deepspeed",
        "vintage": "2021-06",
    },
    "maxtext hybrid sharding": {
        "model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 64, "precision": "bf16", "stack": "maxtext",
        "parallelism": {"shard_group": 8},
    },
    "ulysses qwen3-30b-a3b": {
        "model": "qwen3-30b-a3b", "gpu": "h100-sxm", "n_gpus": 64, "precision": "fp8",
        "parallelism": {"cp_comm": "a2a"},
    },
}  # fmt: skip
BATCHES = (128, 512, 1536)
LAYOUTS_PER_EXAMPLE = 400
EXAMPLES_PER_PAIR = 3


@cache
def _space(name: str, gbs: int) -> tuple[Context, tuple[tuple[Block, Any], ...]]:
    """The scenario's context and its trimmed blocks with valid layouts at this global batch."""
    spec = SCENARIOS[name]
    ctx = context_for(checked_scenario(spec))
    found = tuple(block.trimmed(mask) for block, mask in blocks(ctx, Space(((int(spec["n_gpus"]), gbs),), {})))
    return ctx, tuple((block, mask) for block, mask in found if mask.any())


shares = st.floats(0.0, 1.0)


# Every (scenario, batch) pair runs, under the CI profile's derandomized draws too: hypothesis draws only the
# efficiencies and the layouts, a few examples a pair.
@pytest.mark.parametrize("gbs", BATCHES)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
@settings(max_examples=EXAMPLES_PER_PAIR, deadline=None)
@given(overlaps=st.tuples(shares, shares, shares, shares), seed=st.integers(0, 2**32 - 1))
def test_floors_with_links_are_under_what_they_bound(
    name: str, gbs: int, overlaps: tuple[float, float, float, float], seed: int
) -> None:
    base, found = _space(name, gbs)
    assert found, f"{name} at {gbs}: no valid layout to bound"
    overlap_tp, overlap_dp, overlap_pp, overlap_ep = overlaps
    eff = replace(base.efficiency, overlap_tp=overlap_tp, overlap_dp=overlap_dp, overlap_pp=overlap_pp,
                  overlap_ep=overlap_ep)  # fmt: skip
    ctx = replace(base, efficiency=eff)
    assert floor_holds(eff)
    rng = np.random.default_rng(seed)
    for block, mask in found:
        valid = np.flatnonzero(mask.reshape(-1))
        index = np.sort(rng.choice(valid, size=min(LAYOUTS_PER_EXAMPLE, len(valid)), replace=False))
        lv = block.picked_vars(index)
        step = np.broadcast_to(evaluate_times(ctx, lv).step_time_s, index.shape)
        own = np.broadcast_to(step_floor(ctx, lv, links=True, own_stage=True), index.shape)
        cell = np.broadcast_to(step_floor(ctx, lv._replace(recompute=0.0), links=True), index.shape)
        assert (own <= step).all(), _worst(block, index, own, step)
        assert (cell <= step).all(), _worst(block, index, cell, step)
        rows = np.unravel_index(index, block.shape)[0]
        tp, cp, pp, dp, vp, ep, etp = block.rows[rows].T.astype(float)
        row_lv = LayoutVars(tp, pp, cp, dp, vp, 1.0, float(block.gbs), 0.0, 0.0, ep, etp)
        bound = least_floor(ctx, row_lv, block.mbs, links=True)  # under the floor at every micro-batch of the block
        assert (bound <= cell).all(), _worst(block, index, bound, cell)
        assert np.isfinite(own).all() and np.isfinite(bound).all()


def _worst(block: Block, index: Any, floor: Any, step: Any) -> str:
    """The layout whose floor exceeds what it bounds by the most, for the failure message."""
    at = int(np.argmax(floor - step))
    return f"{block.layout(int(index[at])).describe()}: floor {floor[at]!r} > {step[at]!r}"
