"""The compiled scalar step (physics/trace.py) against the formulas it is traced from: the same numbers, to the bit.

The array path (numpy, one call per search block) and the symbolic path (sympy numbers) are the other two ways of
pricing a layout; all three must agree on many random valid layouts of dense and MoE models, LoRA and NVFP4.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import replace

import numpy as np
import pytest
import sympy

from perfmodel.inputs.record import replaced
from perfmodel.inputs.scenario import Scenario, checked_scenario
from perfmodel.physics import algebra
from perfmodel.physics.step import BREAKDOWN, COMPILE_AFTER, Context, LayoutVars, _evaluate, evaluate
from perfmodel.physics.trace import Untraceable, compile_traced
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
    return replace(context_for(scenario))  # a new context: empty memo, no compiled program yet


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


@pytest.mark.parametrize("name", SCENARIOS)
def test_compiled_scalar_path_matches_formulas_and_arrays(name: str) -> None:
    scenario = checked_scenario(SCENARIOS[name] | {"tokens": 1e12})
    ctx = _fresh(scenario)
    columns, layouts = _random_layouts(ctx, scenario, 60, seed=len(name))
    compiled = ctx.compiled()
    assert compiled is not None, "the step formulas branch on a layout value: the compiled path is off"
    array = evaluate(ctx, columns)
    for i, lv in enumerate(layouts):
        fast, slow = compiled(*lv), _evaluate(_fresh(scenario), lv)
        assert repr(fast) == repr(slow)  # bit for bit, and type for type: the same operations in the same order
        for key in (*BREAKDOWN, "forward_only_s", "ep_comm_exposed_s"):
            expected = np.broadcast_to(getattr(array, key), (len(layouts),))[i]
            assert getattr(fast, key) == pytest.approx(expected, rel=SAME, abs=1e-300), key
        assert np.allclose(np.asarray(fast.memory), [np.broadcast_to(m, (len(layouts),))[i] for m in array.memory],
                           rtol=SAME, atol=0.0)  # fmt: skip


@pytest.mark.parametrize("name", ["dense fp8", "moe with mtp"])
def test_sympy_numbers_price_like_floats(name: str) -> None:
    """sympy compares numbers by structure (Float(1.0) == 1 is False): the step's conditions must not, or a
    symbolic layout silently takes another ZeRO stage, recompute mode or pipeline branch."""
    scenario = checked_scenario(SCENARIOS[name] | {"tokens": 1e12})
    ctx = _fresh(scenario)
    _, layouts = _random_layouts(ctx, scenario, 12, seed=7)
    for lv in layouts:
        floats = _evaluate(ctx, lv)
        symbolic = _evaluate(ctx, LayoutVars(*(sympy.Float(x) for x in lv)))
        for key in (*BREAKDOWN, "forward_only_s"):
            assert float(getattr(symbolic, key)) == pytest.approx(getattr(floats, key), rel=SAME, abs=1e-300), key
        assert float(symbolic.memory.total) == pytest.approx(floats.memory.total, rel=SAME)


def test_a_context_compiles_after_many_plain_layouts() -> None:
    scenario = checked_scenario(SCENARIOS["dense fp8"] | {"tokens": 1e12})
    ctx = _fresh(scenario)
    _, (lv, *_) = _random_layouts(ctx, scenario, 1, seed=1)
    first = evaluate(ctx, lv)
    for _ in range(COMPILE_AFTER):
        assert evaluate(ctx, lv) == first
    assert ("compiled",) in ctx.memo and ctx.program() is not None


def test_equal_is_a_condition_for_every_kind() -> None:
    x = sympy.Symbol("x")
    assert algebra.equal(sympy.Float(1.0), 1) == sympy.true
    assert isinstance(algebra.equal(x, 1), sympy.Eq)
    assert algebra.equal(2.0, 2) is True
    assert list(algebra.equal(np.array([1.0, 2.0]), 1)) == [True, False]


def test_tracing_replays_operations_and_refuses_branches() -> None:
    def formula(a: float, b: float) -> tuple[float, float]:
        shared = a * 3.0 + 0.1
        return algebra.where(a > b, shared / b, algebra.maximum(shared, b)), algebra.ceil(shared) - 2 ** (-a)

    compiled = compile_traced(formula, ("a", "b"))
    for a, b in ((1.0, 2.0), (5.0, 0.5), (0.3, 0.3), (-1.5, 7.0)):
        assert compiled(a, b) == formula(a, b)
    assert compiled.source.count("a * (3.0)") == 1  # a repeated subexpression is computed once

    assert compiled.source.count(" = ") == 1  # the value used more than once is the one variable left

    def chain(a: float) -> float:
        total = a
        for k in range(1, 600):  # far deeper than Python's parser nests parentheses: inlining must stop in time
            total = total * 1.0001 + k / a
        return total

    assert compile_traced(chain, ("a",))(0.7) == chain(0.7)

    def mixed(a: float) -> tuple[float, ...]:
        """Ints meeting floats, and ints that stay ints (a flag times an int, a branch's int)."""
        return a * 3 + 7, 2**60 * a, (a > 1) * 3, algebra.where(a > 1, 2, a), algebra.maximum(a, 1), a // 2 % 5

    widened = compile_traced(mixed, ("a",))
    for a in (0.5, 2.0, 17.25):
        assert repr(widened(a)) == repr(mixed(a))  # same numbers, same types
    assert "(3.0)" in widened.source and str(2**60) in widened.source  # an inexact int stays an int

    class Doubled(namedtuple("Doubled", "a b")):  # a __new__ of its own (typing.NamedTuple forbids one)
        def __new__(cls, a: float, b: float) -> Doubled:
            return super().__new__(cls, 2 * a, b)

    rebuilt = compile_traced(lambda a: Doubled(a, a + 1.0), ("a",))(1.0)
    assert type(rebuilt) is Doubled and rebuilt == (2.0, 2.0)  # the tuple returned, not its __new__ run twice

    def branching(a: float) -> float:
        return a if a > 1 else 2 * a

    with pytest.raises(Untraceable, match="branch"):
        compile_traced(branching, ("a",))
    with pytest.raises(Untraceable, match="float"):
        compile_traced(lambda a: float(a), ("a",))


def test_the_program_skips_operations_that_leave_a_float_unchanged_and_no_other() -> None:
    def formula(a: float) -> tuple[float, ...]:
        """Neutral: a - 0.0, a * 1.0, 1.0 * a, a / 1.0, a - 0. Not: a + 0.0 and a - -0.0 (-0.0 becomes 0.0), a bool
        times 1.0 (a float, not the bool), 0.0 - a, 1.0 - a."""
        return (a - 0.0) * 1.0 / 1.0 - 0, 1.0 * a, a + 0.0, a - -0.0, (a > 1) * 1.0, 0.0 - a, 1.0 - a

    compiled = compile_traced(formula, ("a",))
    for a in (-0.0, 0.0, 1.5, -2.25, float("inf"), float("-inf")):
        assert repr(compiled(a)) == repr(formula(a))
    source = compiled.source
    assert "return (a, a, (a + (0.0)), (a - (-0.0)), ((a > (1.0)) * (1.0)), ((0.0) - a), ((1.0) - a),)" in source


def test_contexts_are_shared_by_equal_inputs_only() -> None:
    """Repeated predictions share a context (its tiers, memo and compiled step); any input that differs does not."""
    s = checked_scenario(SCENARIOS["dense fp8"] | {"tokens": 1e12})
    ctx = context_for(s)
    assert context_for(s) is ctx
    assert context_for(replaced(s, precision="bf16")) is not ctx
    assert context_for(s, replace(ctx.efficiency, gemm_bf16=0.5)) is not ctx
    variants = replace(ctx.efficiency, gemm_bf16=np.array([0.5, 0.6]))  # a fit's variants: not kept
    assert context_for(s, variants) is not context_for(s, variants)


def test_an_open_layout_is_searched_once_per_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """Equal scenarios on one context (validation rows, repeated API calls) reuse the layout the first one chose."""
    from perfmodel.planning import predict as predicting
    from perfmodel.planning import search as searching

    s = checked_scenario(SCENARIOS["dense fp8"] | {"tokens": 1e12, "parallelism": {"tp": 4, "cp": 1}})
    ctx = _fresh(s)
    first = predicting.choose_layout(s, ctx)
    monkeypatch.setattr(searching, "best_layout", lambda *a, **k: pytest.fail("searched again"))
    assert predicting.choose_layout(s, ctx) == first
    other = replaced(s, parallelism=replaced(s.parallelism, tp=8))
    with pytest.raises(pytest.fail.Exception, match="searched again"):
        predicting.choose_layout(other, ctx)


def test_a_given_layout_is_priced_without_numpy() -> None:
    """The default scenario gives its layout: its prediction needs no array (numpy's import is a third of the
    command's start-up), so the scalar path must not import it."""
    import subprocess
    import sys

    code = "import sys; from perfmodel.api import load_scenario, predict; predict(load_scenario())"
    check = f"{code}; assert 'numpy' not in sys.modules, 'numpy imported'"
    subprocess.run([sys.executable, "-c", check], check=True)


def test_a_formula_the_tracer_cannot_follow_keeps_the_formulas(monkeypatch: pytest.MonkeyPatch) -> None:
    """A helper added without tracing support (TypeError, ValueError) or a branch (Untraceable): no compiled step,
    and evaluate prices through the formulas as they are."""
    from perfmodel.physics import step

    scenario = checked_scenario(SCENARIOS["lora"] | {"tokens": 1e12})
    _, (lv, *_) = _random_layouts(_fresh(scenario), scenario, 1, seed=3)
    expected = _evaluate(_fresh(scenario), lv)
    for error in (Untraceable, TypeError, ValueError):

        def refuse(*_: object, error: type[Exception] = error) -> None:
            raise error("cannot follow")

        monkeypatch.setattr(step, "compile_traced", refuse)
        ctx = _fresh(scenario)
        assert ctx.compiled() is None
        assert all(evaluate(ctx, lv) == expected for _ in range(COMPILE_AFTER + 2))
