"""Tensor parallelism's collectives per layer against Megatron's counts, with and without sequence parallelism."""

from __future__ import annotations

import pytest

from perfmodel.inputs.features import era_recipe
from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.models import get_model
from perfmodel.inputs.precision import get_recipe
from perfmodel.physics.collectives import NCCL_CALL_LATENCY_S, GroupLinks
from perfmodel.physics.efficiency import DEFAULTS
from perfmodel.physics.step import Context, _tensor_parallel

GB_PER_S = 1e9


def _tp_comm(sequence_parallel: bool) -> tuple[float, float]:
    """(forward, whole layer) seconds of Llama 2 7B's TP collectives at TP 4, one 4,096-token sequence, over links of
    1 GB/s with no per-step latency and no message-size ramp: each call pays NCCL's fixed latency alone. The recipe
    is a release's with or without sequence parallelism (era_recipe)."""
    hw, md = resolve("h100-sxm"), get_model("llama2-7b")
    recipe = era_recipe(
        get_recipe("bf16", hw.accelerator), frozenset(() if sequence_parallel else ("sequence_parallel",))
    )
    ctx = Context(md, hw, recipe, DEFAULTS["hopper"], 4096)
    links = GroupLinks(4, 4, 1, GB_PER_S, GB_PER_S, 0.0, GB_PER_S, 0.0, half_bandwidth_s=0.0)
    comm, _ = _tensor_parallel(ctx, ctx.shard(4.0, 1.0, 1.0), links, 0.0)
    return float(comm.forward), float(comm.layer)


# One all-gather or reduce-scatter of the 4,096 x 4,096 BF16 activation (33.6 MB) over 4 ranks: 3/4 of it per link.
HALF = 0.75 * 4096 * 4096 * 2 / GB_PER_S + NCCL_CALL_LATENCY_S


def test_sequence_parallel_counts() -> None:
    """Korthikanti et al. 2022 (arXiv 2205.05198) section 4.2.2: per TP block an all-gather and a reduce-scatter
    forward, a reduce-scatter and an all-gather backward, and Megatron-Core all-gathers the block's input again for
    its weight gradient (it frees the gathered input after the forward): two blocks a layer."""
    assert _tp_comm(True) == pytest.approx((2 * 2 * HALF, 2 * 2 * HALF + 2 * 3 * HALF))


def test_without_sequence_parallel_one_all_reduce_each_way() -> None:
    """Shoeybi et al. 2019 (arXiv 1909.08053) Figure 3: each TP block all-reduces once forward (g) and once backward
    (f), its reduce-scatter and all-gather halves; every rank keeps the whole input, so nothing is gathered again."""
    assert _tp_comm(False) == pytest.approx((2 * 2 * HALF, 4 * 2 * HALF))
