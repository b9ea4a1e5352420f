"""Whole-iteration CUDA graphs (precision.Recipe.graph_captured): NVIDIA's MLPerf LoRA configs replay forward,
backward, optimizer and gradient clipping as one graph (MCORE_CUDA_GRAPH=1, ON_DEVICE_CLIP_GRAD=1;
stack_notes.md), so their steps pay no per-step host work (`step_overhead_s`). The recipe carries the fact, so a
prediction and the fit's pricing of a bundled row (fitting.validation) see the same step."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from perfmodel.fitting.runs import bundled_runs, vintage_years
from perfmodel.fitting.validation import prepare
from perfmodel.inputs.scenario import checked_scenario, load_scenario
from perfmodel.outputs.explain import explain
from perfmodel.physics.calibration import bundled
from perfmodel.physics.step import evaluate, host_overhead_s, straggler_s
from perfmodel.planning.predict import context_for, layout_vars, predict

LAYOUT = {"tp": 1, "pp": 1, "cp": 8, "vp": 1, "mbs": 1, "gbs": 9, "recompute": "none", "zero": 1}


def _lora(gpu: str, n_gpus: int = 72, cp: int = 8) -> dict[str, Any]:
    keys = {"benchmark": "mlperf-llama2-70b-lora@v5.1", "gpu": gpu, "n_gpus": n_gpus, "precision": "fp8"}
    return keys | {f"parallelism.{k}": v for k, v in (LAYOUT | {"cp": cp, "gbs": n_gpus // cp}).items()}


@pytest.mark.parametrize(("gpu", "captured"), [("gb200", True), ("h100-sxm", True), ("mi325x", False)])
def test_only_the_vendor_whose_lora_configs_capture_the_iteration_skips_host_work(gpu: str, captured: bool) -> None:
    ctx = context_for(load_scenario(None, _lora(gpu, 8, 1)))
    assert ctx.recipe.graph_captured is captured and ctx.efficiency.step_overhead_s > 0
    assert host_overhead_s(ctx) == (0.0 if captured else ctx.efficiency.step_overhead_s)


def test_a_graph_captured_step_is_its_parts_plus_the_straggler_wait_alone() -> None:
    scenario = load_scenario(None, _lora("gb200"))
    prediction = predict(scenario)
    ctx, lo = context_for(scenario), prediction.layout
    step = evaluate(ctx, layout_vars(lo))
    ranks = lo.tp * lo.pp * lo.cp * lo.dp
    assert step.other_s == pytest.approx(straggler_s(ctx.efficiency.straggler_cv, ranks, step.compute_s))
    pretrain = context_for(load_scenario(None, {"model": "llama3.1-8b", "gpu": "gb200", "n_gpus": 8}))
    assert not pretrain.recipe.graph_captured and host_overhead_s(pretrain) == pretrain.efficiency.step_overhead_s


def test_predict_and_the_fit_price_a_bundled_graph_captured_row_alike() -> None:
    # mlperf_training_llm.csv: MLPerf Training v5.1 NVIDIA Tyche, 72 GB200, LoRA, TP1 PP1 CP8, GBS 9: 1.414 min.
    (run,) = [r for r in bundled_runs()[0] if r.id == "mlperf:v5.1/NVIDIA/tyche_ngpu72_ngc25.09_nemo/llama2_70b_lora"]
    item = prepare(run, bundled())
    assert item.context.recipe.graph_captured
    released = replace(item.context.efficiency, vintage_years=vintage_years(run))
    fitted = evaluate(replace(item.context, efficiency=released), layout_vars(item.layout))
    lo = item.layout
    fixed = {k: getattr(lo, k) for k in ("tp", "pp", "cp", "vp", "mbs", "recompute", "zero")}
    as_run = run.scenario | {"vintage": run.released, "parallelism": run.scenario["parallelism"] | fixed}
    as_predicted = predict(checked_scenario(as_run))
    assert as_predicted.layout == item.layout
    assert as_predicted.step_time_s == pytest.approx(float(fitted.step_time_s), rel=1e-12)


def test_explain_says_why_a_captured_step_has_no_host_work() -> None:
    part = next(p for p in explain(predict(load_scenario(None, _lora("gb200")))).parts if p.key == "other_s")
    (t_step,) = [q for q in part.quantities if str(q.symbol) == "t_step"]
    assert t_step.value == 0.0 and "one CUDA graph" in t_step.meaning


def test_releases_before_the_v50_configs_pay_the_host_work() -> None:
    """The whole-iteration graph is sourced from NVIDIA's v5.0 LoRA configs (NeMo 25.04, efficiency
    .WARM_START_RELEASE); the v4.x runs' minutes grow with their samples run by run (mlperf_training_llm_runs.csv:
    v4.1 NVIDIA Eos_n128's 10 runs, 12.8 min per 100k samples, intercept -15 s), as a per-step cost does."""
    from perfmodel.physics.efficiency import WARM_START_RELEASE, release_age_years

    ctx = context_for(load_scenario(None, _lora("h100-sxm", 8, 1)))
    older = replace(ctx, efficiency=replace(ctx.efficiency, vintage_years=release_age_years(WARM_START_RELEASE) + 0.5))
    at_release = replace(ctx, efficiency=replace(ctx.efficiency, vintage_years=release_age_years(WARM_START_RELEASE)))
    assert float(host_overhead_s(older)) == ctx.efficiency.step_overhead_s > 0
    assert float(host_overhead_s(at_release)) == 0.0


GPT_OSS_GB300 = {"model": "gpt-oss-120b", "gpu": "gb300", "n_gpus": 64, "precision": "mxfp8"} | {
    f"parallelism.{k}": v for k, v in {"tp": 1, "pp": 1, "ep": 16, "mbs": 4, "gbs": 1280, "seq_len": 4096}.items()
}
"""megatron-bridge 0.6.2 perf_recipes/gpt_oss/gb300/gpt_oss.py gpt_oss_120b_pretrain_64gpu_gb300_fp8mx_config's layout
(EP16 MBS4 GBS1280), whose common.py _apply_gpt_oss_120b_full_iter_fp8mx_configs sets cuda_graph_impl
'full_iteration' (L55)."""


def test_a_full_iteration_recipe_drops_exactly_the_host_work() -> None:
    """`full_iteration_graph = true` (Megatron-Bridge's cuda_graph_impl 'full_iteration') prices the same step less
    `step_overhead_s`, nothing else: the same layout, the same compute, communication and straggler wait."""
    eager, captured = (predict(load_scenario(None, GPT_OSS_GB300 | {"full_iteration_graph": g})) for g in (False, True))
    ctx = context_for(load_scenario(None, GPT_OSS_GB300 | {"full_iteration_graph": True}))
    assert ctx.recipe.graph_captured and host_overhead_s(ctx) == 0.0
    assert captured.layout == eager.layout
    assert eager.step_time_s - captured.step_time_s == pytest.approx(ctx.efficiency.step_overhead_s, rel=1e-9)


@pytest.mark.parametrize("row", ["measured_runs.csv:2", "measured_runs.csv:6", "measured_runs.csv:8"])
def test_bundled_full_iteration_rows_are_priced_without_host_work(row: str) -> None:
    """Megatron-Bridge performance summary, NeMo 26.08, MXFP8 on GB300: DeepSeek-V3 (row 2), GPT-OSS-120B (row 6) and
    Qwen3-30B-A3B (row 8), whose 0.6.2 recipes capture the whole iteration (deepseek/common.py L59,
    gpt_oss/common.py L55, qwen/common.py L39: fitting.recipes)."""
    (run,) = [r for r in bundled_runs()[0] if r.id == row]
    item = prepare(run, bundled())
    assert item.context.recipe.graph_captured and float(host_overhead_s(item.context)) == 0.0
