"""Properties of the model over random valid scenarios (hypothesis): what must hold for any input, not one example.

A scenario is drawn constructively so that it is valid by construction (and checked to break no layout rule):
a model of the zoo, an accelerator with its usual system, a precision it supports, a full layout (TP, CP, PP, VP,
DP, micro-batch, global batch, sequence length, recompute, ZeRO), a token budget, a price and a calibration. The
layout is given, not searched, so that a property compares the same layout under two inputs.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from conftest import json_numbers, run_cli
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.hardware import accelerators, resolve
from perfmodel.inputs.models import get_model
from perfmodel.inputs.record import replaced
from perfmodel.inputs.scenario import Scenario, checked_scenario
from perfmodel.outputs.explain import explain
from perfmodel.physics.parallel import Layout, violations
from perfmodel.physics.step import BREAKDOWN, LayoutVars, evaluate
from perfmodel.planning.predict import Prediction, context_for, layout_vars, predict
from perfmodel.planning.search import Space, blocks, search
from perfmodel.planning.whatif import KNOBS, Setting, apply, current

MODELS = ("llama3.1-8b", "llama3.1-70b", "llama2-7b", "gpt3-5b")
ACCELERATORS = tuple(accelerators())
REL = 1e-9
"""Relative tolerance of the exact-scaling properties (float rounding only)."""
MONOTONE_SLACK = 1e-12
"""Relative slack of the monotonicity properties: float rounding, nothing the model could hide in."""

EXAMPLES = int(os.environ.get("PERFMODEL_PROPERTY_EXAMPLES", "40"))
"""Examples per property (CI's default keeps the suite well under its time budget; raise it for a deeper run)."""
COMMON = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """A valid scenario with its whole layout given."""
    model_id = draw(st.sampled_from(MODELS))
    model = get_model(model_id)
    gpu = draw(st.sampled_from(ACCELERATORS))
    precision = draw(st.sampled_from(accelerators()[gpu].precisions))
    tp = draw(st.sampled_from([t for t in (1, 2, 4, 8) if model.kv_heads % t == 0 and model.ffn % t == 0]))
    cp = draw(st.sampled_from((1, 2, 4)))
    pp = draw(st.sampled_from([p for p in (1, 2, 4, 8) if p <= model.layers]))
    vp = 1 if pp == 1 else draw(st.integers(1, min(4, (model.layers + 2) // pp)))
    dp = draw(st.integers(1, 16))
    mbs = draw(st.sampled_from((1, 2, 4)))
    gbs = mbs * dp * draw(st.integers(pp if vp > 1 else 1, 16))  # interleaving needs PP micro-batches (RULES)
    zero = draw(st.integers(0, 3 if pp == 1 else 2))
    parallelism = {
        "tp": tp, "cp": cp, "pp": pp, "vp": vp, "dp": dp, "mbs": mbs, "gbs": gbs, "zero": zero,
        "seq_len": draw(st.sampled_from((2048, 4096, 8192))),
        "recompute": draw(st.sampled_from(("none", "selective", "full"))),
    }  # fmt: skip
    raw = {
        "model": model_id, "gpu": gpu, "n_gpus": tp * cp * pp * dp, "precision": precision,
        "tokens": draw(st.floats(1e9, 1e13)), "parallelism": parallelism,
        "calibration": draw(st.sampled_from((None, "none"))),
        "cost": {"usd_per_gpu_hour": draw(st.one_of(st.none(), st.floats(0.5, 20.0)))},
    }  # fmt: skip
    scenario = checked_scenario(raw)
    assert violations(_layout(scenario), model, scenario.n_gpus) == []
    return scenario


def _layout(s: Scenario) -> Layout:
    p = s.parallelism
    return Layout(p.tp, p.pp, p.cp, p.dp, p.vp, 1, p.mbs, p.gbs, p.seq_len, p.recompute, p.zero)


def _with(s: Scenario, **changes: Any) -> Scenario:
    cost = {k.removeprefix("cost_"): v for k, v in changes.items() if k.startswith("cost_")}
    plain = {k: v for k, v in changes.items() if not k.startswith("cost_")}
    return replaced(s, **plain | ({"cost": replaced(s.cost, **cost)} if cost else {}))


# ---- every output finite and positive --------------------------------------------------------------------------


@COMMON
@given(scenarios())
def test_every_output_is_finite_and_positive(s: Scenario) -> None:
    p = predict(s)
    d = p.to_dict()
    assert all(math.isfinite(n) for n in json_numbers(d))
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    for key in ("step_time_s", "tokens_per_s", "model_tflops_per_gpu", "mfu", "memory_per_gpu_gb",
                "time_to_train_s", "gpu_hours", "energy_kwh", "tokens_to_train"):  # fmt: skip
        assert d[key] > 0, key
    assert all(v >= 0 for v in d["breakdown"].values()) and d["breakdown"]["compute_s"] > 0
    assert all(v >= 0 for v in d["memory_gb"].values())
    assert sum(d["breakdown"].values()) == pytest.approx(d["step_time_s"], rel=REL)
    assert d["cost_usd"] is None or d["cost_usd"] > 0


# ---- more hardware never makes a step slower -----------------------------------------------------------------

FASTER = ("bf16_tflops", "fp8_tflops", "fp4_tflops", "hbm_tbps", "nvlink_gbps", "nic_gbps")


@COMMON
@given(scenarios(), st.sampled_from(FASTER), st.floats(1.0, 4.0))
def test_more_flops_or_bandwidth_never_makes_a_step_slower(s: Scenario, knob: str, factor: float) -> None:
    base = predict(s)
    hw = base.hardware
    assume(current(hw, KNOBS[knob]) is not None)
    faster = predict(s, hardware=apply(hw, [Setting(KNOBS[knob], factor, multiplier=True)]))
    assert faster.step_time_s <= base.step_time_s * (1 + MONOTONE_SLACK)
    assert faster.step.forward_only_s <= base.step.forward_only_s * (1 + MONOTONE_SLACK)


# ---- exact scaling of the run with tokens and price ------------------------------------------------------------


@COMMON
@given(scenarios())
def test_doubling_tokens_doubles_time_to_train_cost_and_energy(s: Scenario) -> None:
    assume(s.tokens is not None and s.tokens * 2 <= 1e18)
    one, two = predict(s).to_dict(), predict(_with(s, tokens=2 * s.tokens)).to_dict()
    assert one["step_time_s"] == two["step_time_s"]
    for key in ("time_to_train_s", "gpu_hours", "energy_kwh", "cost_usd", "cost_usd_at_min_price",
                "cost_usd_at_max_price"):  # fmt: skip
        if one[key] is not None:
            assert two[key] == pytest.approx(2 * one[key], rel=REL), key


@COMMON
@given(scenarios(), st.floats(0.5, 20.0))
def test_doubling_the_price_doubles_the_cost_and_nothing_else(s: Scenario, price: float) -> None:
    one, two = predict(_with(s, cost_usd_per_gpu_hour=price)), predict(_with(s, cost_usd_per_gpu_hour=2 * price))
    a, b = one.to_dict(), two.to_dict()
    for key in ("cost_usd", "cost_usd_at_min_price", "cost_usd_at_max_price"):
        assert b[key] == pytest.approx(2 * a[key], rel=REL), key
    unchanged = {k: v for k, v in a.items() if "usd" not in k}
    assert unchanged == {k: v for k, v in b.items() if "usd" not in k}


# ---- memory grows with the micro-batch ---------------------------------------------------------------------------


@COMMON
@given(scenarios(), st.data())
def test_memory_grows_with_the_micro_batch(s: Scenario, data: st.DataObject) -> None:
    """Same layout and global batch, a micro-batch that many times larger (a divisor of the micro-batches per
    pipeline): every rank holds at least as much. Fewer micro-batches in flight can never outweigh the larger ones,
    since in-flight sequences are min(warm-up chunks x MBS, GBS / DP x VP) per chunk, which does not fall as MBS
    grows."""
    p = s.parallelism
    per_pipeline = p.gbs // (p.mbs * p.dp)
    assume(per_pipeline > 1)
    fewer = [t for t in range(2, per_pipeline + 1) if per_pipeline % t == 0 and (p.vp == 1 or per_pipeline >= t * p.pp)]
    assume(fewer)  # interleaving keeps at least PP micro-batches (RULES)
    times = data.draw(st.sampled_from(fewer))
    small = predict(s)
    large = predict(_with(s, parallelism=replaced(p, mbs=p.mbs * times)))
    assert float(large.step.memory.total) >= float(small.step.memory.total) * (1 - MONOTONE_SLACK)
    assert float(large.step.memory.activations) >= float(small.step.memory.activations) * (1 - MONOTONE_SLACK)


# ---- the search's best is no worse than any layout it enumerates ---------------------------------------------


@st.composite
def search_cases(draw: st.DrawFn) -> tuple[Scenario, list[int]]:
    model_id = draw(st.sampled_from(("llama3.1-8b", "llama2-7b", "gpt3-5b")))
    gpu = draw(st.sampled_from(ACCELERATORS))
    n_gpus = draw(st.sampled_from((8, 16, 24, 32, 64)))
    raw = {
        "model": model_id, "gpu": gpu, "n_gpus": n_gpus,
        "precision": draw(st.sampled_from(accelerators()[gpu].precisions)),
        "parallelism": {"gbs": n_gpus * draw(st.sampled_from((4, 8, 16))), "seq_len": 4096},
    }  # fmt: skip
    picks = draw(st.lists(st.integers(0, 2**31), min_size=8, max_size=8))
    return checked_scenario(raw), picks


@settings(COMMON, max_examples=max(10, EXAMPLES // 2))
@given(search_cases())
def test_the_search_best_is_no_worse_than_any_layout_it_enumerates(case: tuple[Scenario, list[int]]) -> None:
    """Layouts drawn from the search's own enumeration (valid, fitting ones), priced one at a time through the
    scalar path, are never faster than the search's best; the two paths agree on the best layout itself."""
    s, picks = case
    ctx = context_for(s)
    space = Space(((s.n_gpus, s.parallelism.gbs),), {})
    try:
        found = search(ctx, space)
    except PerfmodelError as exc:  # the one acceptable outcome besides a best layout
        assert "no layout fits in memory" in str(exc)
        return
    best = float(evaluate(ctx, layout_vars(found.best.layout)).step_time_s)
    assert best == pytest.approx(found.best.step_time_s, rel=REL)
    candidates = [(b, m.reshape(-1).nonzero()[0]) for b, m in blocks(ctx, space)]
    candidates = [(b, valid) for b, valid in candidates if len(valid)]
    for pick in picks:
        block, valid = candidates[pick % len(candidates)]
        layout = block.layout(int(valid[(pick // len(candidates)) % len(valid)]))
        step = evaluate(ctx, layout_vars(layout))
        if bool(step.fits):
            assert float(step.step_time_s) >= best * (1 - MONOTONE_SLACK), layout.describe()


# ---- the same input gives byte-identical JSON -------------------------------------------------------------------


def _whole_nodes(s: Scenario) -> bool:
    """Whether the CLI takes the scenario's GPU count: part of one node, or whole nodes (request.check_whole_nodes)."""
    node = int(resolve(s.gpu).system.gpus_per_node.value)
    return s.n_gpus <= node or s.n_gpus % node == 0


def _flags(s: Scenario) -> list[str]:
    p = s.parallelism
    flags = ["--model", str(s.model), "--gpu", str(s.gpu), "--gpus", str(s.n_gpus), "--precision", s.precision,
             "--tokens", repr(s.tokens), "--calibration", s.calibration or "none"]  # fmt: skip
    for name in ("tp", "pp", "cp", "vp", "dp", "mbs", "gbs", "seq_len", "recompute", "zero"):
        flags += [f"--{name.replace('_', '-')}", str(getattr(p, name))]
    if s.cost.usd_per_gpu_hour is not None:
        flags += ["--usd-per-gpu-hour", repr(s.cost.usd_per_gpu_hour)]
    return flags


@COMMON
@given(scenarios(), st.sampled_from(("predict", "explain", "compare", "whatif")))
def test_the_same_input_gives_byte_identical_json(s: Scenario, command: str) -> None:
    assume(_whole_nodes(s))
    extra = {"whatif": ["--set", "nvlink_gbps=x2"], "compare": ["--gpu", str(s.gpu)]}.get(command, [])
    args = [command, *_flags(s), *extra, "--format", "json"]
    if command == "compare":  # compare takes the GPU only as a target
        args.remove("--gpu")
        args.remove(str(s.gpu))
    first, second = run_cli(*args), run_cli(*args)
    assert first.code == 0, first.err
    assert first.out == second.out


@settings(COMMON, max_examples=3)
@given(scenarios())
def test_json_is_identical_across_processes_and_hash_seeds(s: Scenario) -> None:
    """Two fresh interpreters with different hash seeds (set and dict-of-set orders differ between them) print
    the same bytes, for predict and for search; search's elapsed_s is wall-clock time and is the one field that
    is not compared."""
    assume(_whole_nodes(s))
    outputs = []
    for seed in ("1", "2"):
        env = os.environ | {"PYTHONHASHSEED": seed}
        runs = []
        for command in ("predict", "search"):
            args = [sys.executable, "-m", "perfmodel", command, *_flags(s), "--format", "json"]
            if command == "search":
                args += ["--top", "3", "--relayout"]
            proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
            out = proc.stdout
            if command == "search" and proc.returncode == 0:
                record = json.loads(out)
                record.pop("elapsed_s")
                out = json.dumps(record, indent=2)
            runs.append((proc.returncode, out, proc.stderr))
        outputs.append(runs)
    assert outputs[0] == outputs[1]


def test_property_helpers_check_what_they_claim() -> None:
    """The strategies really draw valid scenarios of every model, and `_with` really changes what it names."""
    example = checked_scenario(
        {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8, "tokens": 1e12, "parallelism": {"tp": 8}}
    )
    assert _with(example, tokens=2e12).tokens == 2e12
    assert _with(example, cost_usd_per_gpu_hour=3.0).cost.usd_per_gpu_hour == 3.0
    assert isinstance(predict(example), Prediction)


# ---- one formula source: the memoised scalar path, the array path and the symbolic formulas agree -------------

SAME = 1e-12
"""Relative tolerance between the ways of pricing one layout: float rounding of the numpy and sympy evaluations."""


@COMMON
@given(scenarios())
def test_scalar_array_and_symbolic_paths_agree(s: Scenario) -> None:
    ctx, lv = replace(context_for(s)), layout_vars(_layout(s))  # replace: a new context, nothing memoised yet
    cold = evaluate(ctx, lv)
    array = evaluate(ctx, LayoutVars(*(np.array([x, x]) for x in lv)))
    symbolic = {part.key: part.evaluated() for part in explain(predict(s)).parts}
    for key in (*BREAKDOWN, "forward_only_s"):
        value = getattr(cold, key)
        assert np.allclose(getattr(array, key), value, rtol=SAME, atol=0.0), key
        if key in symbolic:
            assert symbolic[key] == pytest.approx(value, rel=SAME, abs=1e-300), key
    assert np.allclose(np.asarray(array.memory), np.asarray(cold.memory)[:, None], rtol=SAME, atol=0.0)
    for dimension in ("tp", "pp", "cp", "dp", "vp", "mbs", "gbs", "ep", "etp"):  # a layout priced after a neighbour
        warmed = replace(ctx)  # whose memo entry it would wrongly reuse if a key missed that dimension
        evaluate(warmed, lv._replace(**{dimension: 2 * getattr(lv, dimension)}))
        evaluate(warmed, lv._replace(recompute=(lv.recompute + 1) % 3, zero=(lv.zero + 1) % 3))
        assert evaluate(warmed, lv) == cold, dimension
