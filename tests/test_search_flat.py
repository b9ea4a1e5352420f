"""The search's shortcuts change no number: each validity rule evaluated once per block (`search._possible_rows`)
gives the mask `parallel.valid` gives on the rows kept, and layouts picked out of a block as one axis
(`Block.picked_vars`, `search._price_best`) price as they do in the block's grid."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from perfmodel.inputs.scenario import checked_scenario
from perfmodel.physics import step
from perfmodel.physics.parallel import valid
from perfmodel.planning.predict import context_for
from perfmodel.planning.search import Space, blocks

CASES: dict[str, tuple[dict[str, Any], int, int]] = {  # spec, GPUs, batch: each with a block whose rules drop rows
    "70B at 64K": ({"model": "llama3.1-70b", "parallelism": {"seq_len": 65536}}, 1024, 128),
    "hybrid Mamba": ({"model": "nemotron-h-56b"}, 512, 1024),
    "DeltaNet MoE": ({"model": "qwen3-next-80b-a3b"}, 64, 512),
}


@pytest.mark.parametrize("case", CASES)
def test_block_masks_are_the_rules_on_their_rows(case: str) -> None:
    spec, n_gpus, gbs = CASES[case]
    ctx = context_for(checked_scenario({"gpu": "h100-sxm", "n_gpus": n_gpus, "precision": "fp8"} | spec))
    found = blocks(ctx, Space(((n_gpus, gbs),), {}))
    assert any(mask.any() for _, mask in found)
    for block, mask in found:
        expected = np.broadcast_to(valid(block.numbers(), ctx.model, n_gpus, ctx.rules), block.shape)
        assert mask.shape == block.shape and np.array_equal(mask, expected)


def test_picked_layouts_price_as_in_their_grid() -> None:
    """The six-phase campaign's main phase (70B on 1,024 H100, 8K, GBS 1024; bench_campaign.py): its pipelined
    block's valid layouts, picked as one axis, get their grid's memory, floor and step, bit for bit."""
    spec = {"model": "llama3.1-70b", "gpu": "h100-sxm", "n_gpus": 1024, "precision": "fp8"}
    ctx = context_for(checked_scenario(spec | {"parallelism": {"seq_len": 8192}}))
    block, mask = max(blocks(ctx, Space(((1024, 1024),), {})), key=lambda found: found[0].shape[0])
    block, mask = block.trimmed(mask)
    sample = np.zeros((len(block.rows), 1, 1, 1), dtype=bool)
    sample[::15] = True  # every 15th row keeps the grid small
    block, mask = block.trimmed(mask & sample)
    index = np.flatnonzero(mask.reshape(-1))
    grid, picked = block.layout_vars(), block.picked_vars(index)
    assert isinstance(picked.tp, np.ndarray) and picked.tp.shape == index.shape
    for price in (step.memory_need, step.step_floor, lambda c, lv: step.evaluate_times(c, lv).step_time_s):
        whole = np.broadcast_to(price(ctx, grid), block.shape).reshape(-1)[index]
        assert np.array_equal(np.broadcast_to(price(ctx, picked), index.shape), whole)
