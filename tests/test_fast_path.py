"""sympy numbers as layout values price like floats: the step's conditions compare values, not structure."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

from perfmodel.inputs.scenario import Scenario
from perfmodel.physics import algebra
from perfmodel.physics.step import BREAKDOWN, Context, LayoutVars, evaluate
from perfmodel.planning.predict import context_for, layout_vars
from perfmodel.planning.search import Space, blocks

SAME = 1e-12
"""Relative tolerance against the array path (numpy may fuse or reorder nothing, but its rounding is its own)."""
SCENARIOS = {
    "dense fp8": {"model": "llama3.1-70b", "gpu": "h100-sxm", "n_gpus": 256, "precision": "fp8"},
    "nvfp4 with bf16 ends": {"model": "llama3.1-8b", "gpu": "gb200", "n_gpus": 64, "precision": "nvfp4"},
    "lora": {"model": "llama2-7b", "gpu": "h200-sxm", "n_gpus": 16, "precision": "bf16", "lora_rank": 16},
    "moe with mtp": {"model": "deepseek-v3", "gpu": "gb300", "n_gpus": 256, "precision": "mxfp8"},
    "moe unbalanced": {"model": "mixtral-8x7b", "gpu": "mi355x", "n_gpus": 64, "precision": "bf16", "moe_imbalance": 2},
}


def _fresh(scenario: Scenario) -> Context:
    return context_for(scenario)


def _random_layouts(ctx: Context, scenario: Scenario, count: int, seed: int) -> tuple[LayoutVars, list[LayoutVars]]:
    """Valid layouts of the scenario's search space: the array path's values over them, and each as floats."""
    rng = np.random.default_rng(seed)
    gbs = scenario.default_gbs()
    for block, mask in blocks(ctx, Space(((scenario.n_gpus, gbs),), {})):
        if mask.any():
            block, mask = block.trimmed(mask)
            chosen = rng.choice(np.flatnonzero(mask.reshape(-1)), size=min(count, int(mask.sum())), replace=False)
            lvs = [layout_vars(block.layout(int(i))) for i in chosen]
            return LayoutVars(*(np.array(column) for column in zip(*lvs, strict=True))), lvs
    raise AssertionError("no valid layout")


@pytest.mark.parametrize("name", ["dense fp8", "moe with mtp"])
def test_sympy_numbers_price_like_floats(name: str) -> None:
    """sympy compares numbers by structure (Float(1.0) == 1 is False): the step's conditions must not, or a
    symbolic layout silently takes another ZeRO stage, recompute mode or pipeline branch."""
    scenario = Scenario.model_validate(SCENARIOS[name] | {"tokens": 1e12})
    ctx = _fresh(scenario)
    _, layouts = _random_layouts(ctx, scenario, 12, seed=7)
    for lv in layouts:
        floats = evaluate(ctx, lv)
        symbolic = evaluate(ctx, LayoutVars(*(sympy.Float(x) for x in lv)))
        for key in (*BREAKDOWN, "forward_only_s"):
            assert float(getattr(symbolic, key)) == pytest.approx(getattr(floats, key), rel=SAME, abs=1e-300), key
        assert float(symbolic.memory.total) == pytest.approx(floats.memory.total, rel=SAME)


def test_equal_is_a_condition_for_every_kind() -> None:
    x = sympy.Symbol("x")
    assert algebra.equal(sympy.Float(1.0), 1) == sympy.true
    assert isinstance(algebra.equal(x, 1), sympy.Eq)
    assert algebra.equal(2.0, 2) is True
    assert list(algebra.equal(np.array([1.0, 2.0]), 1)) == [True, False]
