"""The search prices memory first and the step only where layouts fit: it must give what pricing every valid layout
in full gives (the same best layouts, step times, per-point bests, counts and objective values of every fitting
layout, to the bit) on random spaces of dense and MoE models, for every objective the search supports."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.scenario import Scenario
from perfmodel.physics.step import Context, evaluate, memory_need
from perfmodel.planning.predict import context_for
from perfmodel.planning.search import OBJECTIVES, Found, Space, blocks, divisors, objective_scale, search

SCENARIOS = {
    "dense 405b, few fit": {"model": "llama3.1-405b", "gpu": "h100-sxm", "n_gpus": 256, "precision": "fp8"},
    "dense 8b, most fit": {"model": "llama3.1-8b", "gpu": "gb200", "n_gpus": 64, "precision": "nvfp4"},
    "lora": {"model": "llama2-7b", "gpu": "h200-sxm", "n_gpus": 16, "precision": "bf16", "lora_rank": 16},
    "moe with mtp": {"model": "deepseek-v3", "gpu": "gb300", "n_gpus": 256, "precision": "mxfp8"},
    "moe": {"model": "mixtral-8x7b", "gpu": "mi355x", "n_gpus": 64, "precision": "bf16"},
}


def _exhaustive(ctx: Context, space: Space) -> tuple[list[tuple[float, int, Found]], int, int, list[float]]:
    """Every valid layout's step priced in full over its whole block, the way the search did before: (objective,
    order, layout) of every fitting layout, and the valid and fitting counts."""
    found: list[tuple[float, int, Found]] = []
    valid = fitting = 0
    for block, mask in blocks(ctx, space):
        if not mask.any():
            continue
        block, mask = block.trimmed(mask)
        result = evaluate(ctx, block.layout_vars())
        step = np.broadcast_to(result.step_time_s, block.shape).reshape(-1)
        need = np.broadcast_to(result.memory.total, block.shape).reshape(-1)
        fits = mask.reshape(-1) & (need <= ctx.hardware.accelerator.memory_bytes)
        valid, fitting = valid + int(mask.sum()), fitting + int(fits.sum())
        scale = objective_scale("time", block.gbs, ctx.seq_len, block.n_gpus)
        for i in np.flatnonzero(fits):
            lo = block.layout(int(i))
            found.append((float(step[i] * scale), len(found), Found(lo, float(step[i]), float(step[i] * scale))))
    return found, valid, fitting, [f[0] for f in found]


def _per(found: Found, objective: str, ctx: Context) -> float:
    scale = objective_scale(objective, found.layout.gbs, ctx.seq_len, found.layout.n_gpus)
    return found.step_time_s * scale


@pytest.mark.parametrize("name", SCENARIOS)
def test_memory_need_is_evaluates_memory(name: str) -> None:
    ctx = context_for(Scenario.model_validate(SCENARIOS[name]))
    scenario_gpus = SCENARIOS[name]["n_gpus"]
    for block, mask in blocks(ctx, Space(((scenario_gpus, 512),), {})):
        if mask.any():
            lv = block.trimmed(mask)[0].layout_vars()
            assert np.array_equal(memory_need(ctx, lv).total, evaluate(ctx, lv).memory.total)


@pytest.mark.parametrize("name", SCENARIOS)
def test_memory_first_search_is_the_exhaustive_one(name: str) -> None:
    spec = SCENARIOS[name]
    ctx = replace(context_for(Scenario.model_validate(spec)))
    rng = np.random.default_rng(len(name))
    n = int(spec["n_gpus"])
    for _ in range(3):  # random spaces: two GPU counts, random batches, sometimes a fixed dimension
        counts = sorted({n, int(rng.choice(divisors(n)[len(divisors(n)) // 2 :]))})
        points = tuple((c, int(rng.choice([128, 256, 384, 512, 1024]))) for c in counts)
        fixed = {k: v for k, v in (("recompute", "none"), ("mbs", 1), ("zero", 1)) if rng.random() < 0.3}
        space = Space(points, fixed)
        reference, valid, fitting, objectives = _exhaustive(ctx, space)
        if not fitting:
            with pytest.raises(PerfmodelError, match="no layout fits in memory"):
                search(ctx, space)
            continue
        for objective in OBJECTIVES:
            got = search(ctx, space, top=5, objective=objective)
            assert (got.evaluated, got.feasible) == (valid, fitting)
            assert got.priced >= got.feasible
            if objective == "time":
                assert np.array_equal(got.objectives, np.array(objectives))
            ranked = sorted(reference, key=lambda r: (_per(r[2], objective, ctx), r[1]))
            assert [_per(f, objective, ctx) for f in got.top] == [_per(r[2], objective, ctx) for r in ranked[:5]]
            assert got.best.step_time_s == ranked[0][2].step_time_s
            for point, best in got.best_per_point.items():
                mine = [r[2] for r in reference if (r[2].layout.n_gpus, r[2].layout.gbs) == point]
                assert best.step_time_s == min(m.step_time_s for m in mine)
