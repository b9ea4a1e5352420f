"""The search prices memory first and the step only where layouts fit (and, unless asked for every one, only where
their floor does not rule them out): it must give what pricing every valid layout in full gives (the same best
layouts, step times, per-point bests, counts and objective values of every fitting layout, to the bit) on random
spaces of dense and MoE models, for every objective the search supports."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.scenario import checked_scenario
from perfmodel.physics.step import Context, LayoutVars, evaluate, floor_holds, least_floor, memory_need, step_floor
from perfmodel.planning import search as search_module
from perfmodel.planning.predict import context_for, layout_vars
from perfmodel.planning.search import (
    OBJECTIVES,
    Block,
    SearchResult,
    Space,
    best_layout,
    blocks,
    divisors,
    objective_scale,
    search,
)

SCENARIOS = {
    "dense 405b, few fit": {"model": "llama3.1-405b", "gpu": "h100-sxm", "n_gpus": 256, "precision": "fp8"},
    "dense 8b, most fit": {"model": "llama3.1-8b", "gpu": "gb200", "n_gpus": 64, "precision": "nvfp4"},
    "lora": {"model": "llama2-7b", "gpu": "h200-sxm", "n_gpus": 16, "precision": "bf16", "lora_rank": 16},
    "graph-captured lora": {"benchmark": "mlperf-llama2-70b-lora", "gpu": "gb200", "n_gpus": 72, "precision": "fp8"},
    "moe with mtp": {"model": "deepseek-v3", "gpu": "gb300", "n_gpus": 64, "precision": "mxfp8"},
    "moe": {"model": "mixtral-8x7b", "gpu": "mi355x", "n_gpus": 64, "precision": "bf16"},
    "hybrid mamba": {"model": "nemotron-h-56b", "gpu": "h100-sxm", "n_gpus": 128, "precision": "fp8"},
}


def _exhaustive(ctx: Context, space: Space) -> tuple[int, int, list[tuple[tuple[int, int], float, Any]]]:
    """Every valid layout's step priced in full over its whole block, the way the search did before: the valid and
    fitting counts, and per block its point, its objective scale and the step times of its fitting layouts."""
    valid, fitting, priced = 0, 0, []
    for block, mask in blocks(ctx, space):
        if not mask.any():
            continue
        block, mask = block.trimmed(mask)
        result = evaluate(ctx, block.layout_vars())
        step = np.broadcast_to(result.step_time_s, block.shape).reshape(-1)
        need = np.broadcast_to(result.memory.total, block.shape).reshape(-1)
        fits = mask.reshape(-1) & (need <= ctx.hardware.accelerator.memory_bytes)
        valid, fitting = valid + int(mask.sum()), fitting + int(fits.sum())
        priced.append(((block.n_gpus, block.gbs), block.gbs * ctx.seq_len, step[fits]))
    return valid, fitting, priced


@pytest.mark.parametrize("name", SCENARIOS)
def test_memory_need_is_evaluates_memory(name: str) -> None:
    ctx = context_for(checked_scenario(SCENARIOS[name]))
    scenario_gpus = SCENARIOS[name]["n_gpus"]
    for block, mask in blocks(ctx, Space(((scenario_gpus, 512),), {})):
        if mask.any():
            lv = block.trimmed(mask)[0].layout_vars()
            assert np.array_equal(memory_need(ctx, lv), evaluate(ctx, lv).memory.total)


@pytest.mark.parametrize("name", ["moe with mtp", "moe", "hybrid mamba", "lora"])
def test_memory_need_of_a_block_is_each_layouts_own(name: str) -> None:
    """A block's memory works what a layer saves out once per distinct (TP, CP, micro-batch, EP, ETP) shard and
    gathers it back (step._shard_saved): each layout gets, to the bit, the need it has priced alone as plain numbers,
    which no gather reaches."""
    ctx = context_for(checked_scenario(SCENARIOS[name]))
    rng = np.random.default_rng(0)
    for block, mask in blocks(ctx, Space(((SCENARIOS[name]["n_gpus"], 512),), {})):
        if not mask.any():
            continue
        block, mask = block.trimmed(mask)
        need = np.broadcast_to(memory_need(ctx, block.layout_vars()), block.shape).reshape(-1)
        valid = np.flatnonzero(mask.reshape(-1))
        for at in rng.choice(valid, size=min(25, len(valid)), replace=False).tolist():
            assert need[at] == memory_need(ctx, layout_vars(block.layout(at))), block.layout(at)


@pytest.mark.parametrize("name", SCENARIOS)
def test_memory_first_search_is_the_exhaustive_one(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_module, "FILTER_FROM", 0)  # filter every block, however small
    spec = SCENARIOS[name]
    ctx = replace(context_for(checked_scenario(spec)))
    rng = np.random.default_rng(len(name))
    n = int(spec["n_gpus"])
    for _ in range(3):  # random spaces: two GPU counts, random batches, sometimes a fixed dimension
        counts = sorted({n, int(rng.choice(divisors(n)[len(divisors(n)) // 2 :]))})
        points = tuple((c, int(rng.choice([128, 256, 384, 512, 1024]))) for c in counts)
        fixed = {k: v for k, v in (("recompute", "none"), ("mbs", 1), ("zero", 1)) if rng.random() < 0.3}
        space = Space(points, fixed)
        valid, fitting, priced = _exhaustive(ctx, space)
        if not fitting:
            with pytest.raises(PerfmodelError, match="no layout fits in memory"):
                search(ctx, space)
            continue
        for objective in OBJECTIVES:
            got = search(ctx, space, top=5, objective=objective, every=True)
            assert (got.evaluated, got.feasible) == (valid, fitting)
            assert got.priced >= got.feasible
            scaled = [s * objective_scale(objective, p[1], ctx.seq_len, p[0]) for p, _, s in priced]
            assert np.array_equal(got.objectives, np.concatenate(scaled))  # every fitting layout, in order
            assert [f.objective for f in got.top] == sorted(np.concatenate(scaled).tolist())[:5]
            for point, best in got.best_per_point.items():
                assert best.step_time_s == min(s.min() for p, _, s in priced if p == point)


def _scenario(name: str, seed: int) -> tuple[Context, np.random.Generator, int]:
    """The scenario's context, a random generator seeded by the test and the name, and its GPU count."""
    spec = SCENARIOS[name]
    return replace(context_for(checked_scenario(spec))), np.random.default_rng(seed + len(name)), int(spec["n_gpus"])


_EVERY_PRICED: dict[tuple[str, str, str, int], SearchResult | str] = {}


def _every_priced(name: str, ctx: Context, space: Space, objective: str, top: int) -> SearchResult | str:
    """The search that prices every fitting layout (at the module's own slice sizes), or its error: the reference
    of each bounded search of `space` in scenario `name`, priced once for the parametrizations that share it (a
    third of the module's time went to pricing it again, a few rows at a time)."""
    key = (name, repr(space), objective, top)
    if key not in _EVERY_PRICED:
        try:
            _EVERY_PRICED[key] = search(ctx, space, top=top, objective=objective, every=True)
        except PerfmodelError as exhaustive_error:
            _EVERY_PRICED[key] = str(exhaustive_error)
    return _EVERY_PRICED[key]


@pytest.mark.parametrize(("first", "bound_from"), [(1, 0), (256, 0), (256, 10**9)])
@pytest.mark.parametrize("name", SCENARIOS)
def test_bounded_search_is_the_exhaustive_one(
    name: str, first: int, bound_from: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search that prices only the layouts its floors leave (search._price_bounded) against the one that prices
    every fitting layout: the same top layouts with their step times and objectives (ties in enumeration order),
    best per point and counts, on random spaces of several points, top 1 and 7, in one pass or passes from 1/256th
    of the rows, memory and floors priced a few rows at a time (ragged slices); it never prices more steps, and
    prices the same grids where they are too small to bound (BOUND_FROM)."""
    monkeypatch.setattr(search_module, "FILTER_FROM", 0)  # past the exhaustive search, however small
    ctx, rng, n = _scenario(name, 11)
    spaces = []
    for _ in range(3):
        counts = sorted({n, int(rng.choice(divisors(n)[len(divisors(n)) // 2 :]))})
        points = tuple((c, int(g)) for c in counts for g in rng.choice([128, 256, 384, 512, 1024], 2, replace=False))
        fixed = {k: v for k, v in (("recompute", "none"), ("mbs", 1), ("zero", 1)) if rng.random() < 0.3}
        spaces.append(Space(points, fixed))
    cases = [(space, objective, top) for space in spaces for objective, top in zip(OBJECTIVES, (1, 7), strict=True)]
    expected = [_every_priced(name, ctx, *case) for case in cases]
    monkeypatch.setattr(search_module, "BOUND_FROM", bound_from)
    monkeypatch.setattr(search_module, "BOUNDED_FIRST", first)
    monkeypatch.setattr(search_module, "ROWS_AT_ONCE", 997)
    monkeypatch.setattr(search_module, "FLOOR_CELLS_AT_ONCE", 61)
    for (space, objective, top), every in zip(cases, expected, strict=True):
        if isinstance(every, str):
            with pytest.raises(PerfmodelError, match=re.escape(every)):
                search(ctx, space, top=top, objective=objective)
            continue
        got = search(ctx, space, top=top, objective=objective)
        assert got.top == every.top and got.best_per_point == every.best_per_point
        assert (got.evaluated, got.feasible) == (every.evaluated, every.feasible)
        assert got.priced <= every.priced and got.objectives is None
        assert got.priced == every.priced or bound_from == 0


@pytest.mark.parametrize("filter_from", [0, 2_000])
@pytest.mark.parametrize("name", SCENARIOS)
def test_bounded_best_layout_is_the_exhaustive_one(
    name: str, filter_from: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """best_layout (branch and bound on step.step_floor) against search, which prices every fitting layout: the same
    layout (ties included) and count, on random spaces, every block bounded (0) or the small ones priced whole first,
    whose best lets step.least_floor rule rows out (cell floors priced a few rows at a time with the latter); the
    floor (with the exposed TP or not) is under every valid layout's step, and least_floor under the floor of every
    cell of its row."""
    monkeypatch.setattr(search_module, "FILTER_FROM", filter_from)
    monkeypatch.setattr(search_module, "FLOOR_CELLS_AT_ONCE", 61 if filter_from else search_module.FLOOR_CELLS_AT_ONCE)
    ctx, rng, n = _scenario(name, 7)
    for _ in range(6):
        count = int(rng.choice(divisors(n)[len(divisors(n)) // 2 :]))
        fixed = {k: v for k, v in (("recompute", "none"), ("mbs", 1), ("zero", 1), ("tp", 2)) if rng.random() < 0.25}
        space = Space(((count, int(rng.choice([64, 128, 256, 512, 1536]))),), fixed)
        candidates = list(blocks(ctx, space))
        try:
            found = search(ctx, space, candidates=candidates, every=True)
        except PerfmodelError as exhaustive_error:
            with pytest.raises(PerfmodelError, match=str(exhaustive_error)[:40]):
                best_layout(ctx, space, candidates)
            continue
        assert best_layout(ctx, space, candidates) == (found.best.layout, found.evaluated)
        if not filter_from:  # the floors are physics.step's, the same spaces at either threshold: checked once
            _assert_floors_hold(ctx, candidates)


def _assert_floors_hold(ctx: Context, candidates: list[tuple[Block, Any]]) -> None:
    """The floor (with the exposed TP, `_price_best`'s, or without) is under every valid layout's step, the search's
    floor of every mode (without recompute) too, and least_floor under the floor of every cell of its row; the same
    with the communication over the links (a layout's own floor at its ZeRO stage, and `_price_bounded`'s floors of
    a cell and a row, of every stage)."""
    for block, mask in candidates:
        if mask.any():
            block, mask = block.trimmed(mask)
            lv = block.layout_vars()
            step = np.broadcast_to(evaluate(ctx, lv).step_time_s, block.shape)
            assert (np.broadcast_to(step_floor(ctx, lv), block.shape)[mask] <= step[mask]).all()
            assert (np.broadcast_to(step_floor(ctx, lv, links=True), block.shape)[mask] <= step[mask]).all()
            without_recompute = step_floor(ctx, lv._replace(recompute=0.0))  # the search's floor of every mode
            assert (np.broadcast_to(without_recompute, block.shape)[mask] <= step[mask]).all()
            tp, cp, pp, dp, vp, ep, etp = block.rows.T.astype(float)
            rows = LayoutVars(tp, pp, cp, dp, vp, 1.0, float(block.gbs), 0.0, 0.0, ep, etp)
            least = least_floor(ctx, rows, block.mbs).reshape(-1, 1, 1, 1)
            assert (least <= np.broadcast_to(without_recompute, block.shape)).all()
            own = step_floor(ctx, lv, links=True, own_stage=True)  # with its links and its ZeRO stage
            assert (np.broadcast_to(own, block.shape)[mask] <= step[mask]).all()
            every = step_floor(ctx, lv._replace(recompute=0.0), links=True)  # _price_bounded's floor of a cell
            assert (np.broadcast_to(every, block.shape)[mask] <= step[mask]).all()
            least = least_floor(ctx, rows, block.mbs, links=True).reshape(-1, 1, 1, 1)
            assert (least <= np.broadcast_to(every, block.shape)).all()


@pytest.mark.parametrize("async_tp", [True, False])
def test_floors_hold_where_tp_hides_otherwise(async_tp: bool) -> None:
    """torchtitan's TP: async (each collective behind its own GEMMs, `step.decomposes`, whose hiding the floor with
    the exposed TP does not bound) or vanilla (no window at all): the bounded search finds the exhaustive one's best
    and the floors hold."""
    spec = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 64, "precision": "bf16", "stack": "torchtitan"}
    ctx = context_for(checked_scenario(spec | {"async_tp": async_tp}))
    space = Space(((64, 256),), {"zero": 3})  # FSDP2: torchtitan has no ZeRO-1 or 2
    candidates = list(blocks(ctx, space))
    found = search(ctx, space, candidates=candidates, every=True)
    assert best_layout(ctx, space, candidates) == (found.best.layout, found.evaluated)
    _assert_floors_hold(ctx, candidates)


def test_tied_layouts_break_as_the_exhaustive_search_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without DP (8 GPUs, TP x PP = 8) the ZeRO stages price the same step: best_layout must pick search's."""
    monkeypatch.setattr(search_module, "FILTER_FROM", 0)
    ctx = context_for(checked_scenario({"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8}))
    space = Space(((8, 64),), {"tp": 8, "cp": 1, "pp": 1, "dp": 1, "recompute": "none", "mbs": 1})
    candidates = list(blocks(ctx, space))
    found = search(ctx, space, top=4, candidates=candidates, every=True)
    assert found.top[0].step_time_s == found.top[1].step_time_s  # a tie to break
    assert best_layout(ctx, space, candidates) == (found.best.layout, found.evaluated)


def test_unphysical_efficiencies_price_every_layout() -> None:
    """An overlap above 1 could make exposed communication negative, and the floor no bound: search in full."""
    ctx = context_for(checked_scenario(SCENARIOS["dense 8b, most fit"]))
    assert floor_holds(ctx.efficiency)
    assert not floor_holds(replace(ctx.efficiency, overlap_tp=1.5))
    assert not floor_holds(replace(ctx.efficiency, step_overhead_s=-1.0))


@pytest.mark.parametrize("seq_len", [4096, 16384, 65536])
def test_bounded_best_layout_at_its_own_thresholds_is_the_exhaustive_one(
    seq_len: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the search's own thresholds, on a long-context campaign's phases (70B on 1,024 H100 in FP8, 4M tokens per
    step): the small block (no PP) is priced whole, its best leaves few layouts under it, and the pipelined block's
    rows under that best are priced in one pass; the layout is still the exhaustive search's."""
    spec = {"model": "llama3.1-70b", "gpu": "h100-sxm", "n_gpus": 1024, "precision": "fp8"}
    ctx = context_for(checked_scenario(spec | {"parallelism": {"seq_len": seq_len}}))
    space = Space(((1024, 2**22 // seq_len),), {})
    candidates = list(blocks(ctx, space))
    passes: list[int] = []
    price_best = search_module._price_best
    monkeypatch.setattr(search_module, "_price_best", lambda *a: passes.append(1) or price_best(*a))
    wholes: list[int] = []
    price_whole = search_module._price_whole
    monkeypatch.setattr(search_module, "_price_whole", lambda *a: wholes.append(1) or price_whole(*a))
    monkeypatch.setattr(search_module, "_FLOORS", search_module.Bounded(search_module.FLOORS_KEPT))
    found = search(ctx, space, candidates=candidates, every=True)
    assert found.evaluated >= search_module.FILTER_FROM
    assert best_layout(ctx, space, candidates) == (found.best.layout, found.evaluated)
    assert (len(wholes), len(passes)) == (1, 1)
