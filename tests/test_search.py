"""The vectorised search agrees with pricing each layout one by one, and its rules are the scalar rules."""

import dataclasses
import itertools

import numpy as np
import pytest

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.scenario import OPTION_FIELDS, Scenario
from perfmodel.physics.parallel import RECOMPUTE_MODES, RULES, ZERO_STAGES, Layout, divisors, violations
from perfmodel.physics.step import evaluate
from perfmodel.planning.predict import context_for, layout_vars
from perfmodel.planning.request import _weakest_at_one
from perfmodel.planning.search import Space, _smallest, blocks, gbs_choices, search


def _one_by_one(ctx, n_gpus: int, gbs: int) -> list[tuple[Layout, float, bool]]:
    """Every layout of the space built with plain loops, checked with the scalar rules and priced with floats."""
    md = ctx.model
    priced = []
    for tp, cp, pp in itertools.product(divisors(n_gpus), repeat=3):
        if n_gpus % (tp * cp * pp) or tp > ctx.hardware.ranks_per_domain:
            continue
        dp = n_gpus // (tp * cp * pp)
        for vp, mbs, rc, zero in itertools.product(
            range(1, 2 * md.layers), divisors(gbs), RECOMPUTE_MODES, ZERO_STAGES
        ):
            layout = Layout(tp, pp, cp, dp, vp, 1, mbs, gbs, ctx.seq_len, rc, zero)
            if not violations(layout, md, n_gpus):
                step = evaluate(ctx, layout_vars(layout))
                priced.append((layout, float(step.step_time_s), bool(step.fits)))
    return priced


def test_search_best_equals_best_of_one_by_one_predictions() -> None:
    scenario = Scenario(model="llama3.1-8b", gpu="h100-sxm", n_gpus=8, precision="fp8")
    ctx = context_for(scenario)
    found = search(ctx, Space(((8, 32),), {}), top=5)
    priced = _one_by_one(ctx, 8, 32)
    feasible = sorted((t, lo.describe()) for lo, t, fits in priced if fits)
    assert found.evaluated == len(priced) > 1000
    assert found.feasible == len(feasible)
    assert found.best.step_time_s == pytest.approx(feasible[0][0], rel=1e-12)
    assert found.best.layout.describe() in [d for t, d in feasible if t == feasible[0][0]]
    np.testing.assert_allclose([f.step_time_s for f in found.top], [t for t, _ in feasible[:5]], rtol=1e-12)


def test_vectorised_rules_equal_scalar_rules() -> None:
    """Every candidate of every block: the broadcast mask says valid exactly when `violations` is empty."""
    scenario = Scenario(model="llama3.1-70b", gpu="h100-sxm", n_gpus=24, precision="bf16")
    ctx = context_for(scenario)
    checked = 0
    for block, mask in blocks(ctx, Space(((24, 48), (24, 36)), {})):
        for flat in range(mask.size):
            layout = block.layout(flat)
            assert bool(mask.flat[flat]) == (not violations(layout, ctx.model, 24)), layout
            checked += 1
    assert checked > 500


def test_fixed_dimensions_are_respected() -> None:
    scenario = Scenario(model="llama3.1-70b", gpu="h100-sxm", n_gpus=64, precision="fp8")
    ctx = context_for(scenario)
    found = search(ctx, Space(((64, 128),), {"tp": 4, "recompute": "none"}), top=20)
    assert all(f.layout.tp == 4 and f.layout.recompute == "none" for f in found.top)


def test_nothing_fits_names_the_smallest_memory_need() -> None:
    """In GiB, as predict's memory line and the HBM figures are: the "80 GB" H100 has 80 GiB, not 85.9 (GB)."""
    ctx = context_for(Scenario(model="llama3.1-405b", gpu="h100-sxm", n_gpus=8, precision="bf16"))
    needs = r"no layout fits in memory: .* smallest needs [\d,.]+ GiB .* has 80.0 GiB"
    with pytest.raises(PerfmodelError, match=needs):
        search(ctx, Space(((8, 8),), {}))


def test_no_valid_layout_names_the_rule() -> None:
    ctx = context_for(Scenario(model="llama3.1-70b", gpu="h100-sxm", n_gpus=8, precision="bf16"))
    with pytest.raises(PerfmodelError, match=r"GBS 12 must be divisible by MBS 1 x DP 8"):
        search(ctx, Space(((8, 12),), {"dp": 8}))


def test_a_partly_given_layout_is_held_to_the_divisibility_rules_by_their_open_degrees() -> None:
    """The rules say which divisor degrees the search may leave open (Rule.open_dims), so that request reads them
    from the rule: a renamed dimension (here `n_gpus` as `gpus`) keeps the check, where a table keyed by the rules'
    dims silently dropped it."""
    divisible = [rule for rule in RULES if rule.open_dims]
    assert [rule.open_dims for rule in divisible] == [("tp", "pp", "cp"), ("mbs",)]
    renamed = dataclasses.replace(divisible[0], dims=("tp", "pp", "cp", "gpus"))
    assert _weakest_at_one(renamed, {"tp", "gpus"})
    assert not _weakest_at_one(renamed, {"tp"})  # the GPU count open: the search may pick it


def test_pareto_front_over_gpu_counts() -> None:
    ctx = context_for(Scenario(model="llama3.1-8b", gpu="h100-sxm", n_gpus=8, precision="fp8"))
    found = search(ctx, Space(((8, 64), (16, 64), (32, 64)), {}), objective="cost")
    front = found.pareto()
    assert front[0].layout.n_gpus == 8
    assert [f.step_time_s for f in front] == sorted((f.step_time_s for f in front), reverse=True)
    assert found.best.objective == min(f.objective for f in found.best_per_point.values())


def test_gbs_choices() -> None:
    assert gbs_choices(512) == (128, 192, 256, 384, 512)
    assert gbs_choices(1000) == (256, 384, 512, 768, 1000)


def test_smallest_breaks_ties_in_index_order() -> None:
    """`_smallest` is the first k of a stable sort: of equal values the lowest index wins, on any CPU or numpy
    build. [1, 2, 0, 0, 1] with k=2 and [2, 2, 0, 0, 2, 1, 0, 0, 0, 1] with k=1 are cases where numpy 2.4's
    `argpartition`, which `_smallest` used alone before, kept index 3 before index 2."""
    assert _smallest(np.array([1.0, 2, 0, 0, 1]), 2).tolist() == [2, 3]
    assert _smallest(np.array([2.0, 2, 0, 0, 2, 1, 0, 0, 0, 1]), 1).tolist() == [2]
    rng = np.random.default_rng(15)
    for _ in range(2000):
        values = rng.integers(0, 4, int(rng.integers(1, 40))).astype(float)
        values[rng.random(len(values)) < 0.1] = np.nan  # NaN, never a step time, still sorts last
        k = int(rng.integers(1, len(values) + 2))
        assert _smallest(values, k).tolist() == np.argsort(values, kind="stable")[:k].tolist()


def test_tied_layouts_rank_in_enumeration_order() -> None:
    """Without data parallelism the ZeRO stages shard nothing: all four price the same, and rank in stage order."""
    ctx = context_for(Scenario(model="llama3.1-8b", gpu="h100-sxm", n_gpus=8, precision="fp8"))
    fixed = {"tp": 8, "pp": 1, "cp": 1, "vp": 1, "mbs": 1, "recompute": "none"}
    found = search(ctx, Space(((8, 8),), fixed), top=3)
    assert len({f.step_time_s for f in found.top}) == 1
    assert [f.layout.zero for f in found.top] == [0, 1, 2]


def test_every_layout_rule_names_the_options_it_constrains() -> None:
    """A broken rule's error points at a flag or file field (planning.request.check_given_layout) through `dims`:
    each rule names at least one scenario option, and only options a scenario has."""
    for rule in RULES:
        assert rule.dims
        assert set(rule.dims) <= set(OPTION_FIELDS), rule.dims
