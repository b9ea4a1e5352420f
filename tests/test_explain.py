"""`perfmodel explain`: every part's formula, evaluated with its substituted numbers, gives the model's own number."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from perfmodel.inputs.scenario import load_scenario
from perfmodel.outputs.explain import explain
from perfmodel.physics.step import BREAKDOWN
from perfmodel.planning.predict import predict


def _layout(**kw: Any) -> dict[str, Any]:
    base = {"parallelism.recompute": "none", "parallelism.zero": 1, "parallelism.mbs": 1, "parallelism.cp": 1}
    top = ("model", "gpu", "n_gpus", "precision", "stack", "async_tp", "compile", "fp8_recipe", "vintage")
    return base | {k if "." in k or k in top else f"parallelism.{k}": v
                   for k, v in kw.items()}  # fmt: skip


QWEN3_235B_H100_RECIPE = {"base": "qwen3-235b-a22b", "dispatcher": "alltoall", "ep_microbatch_overlap": True}
"""megatron-bridge 0.6.2 perf_recipes/qwen/h100/qwen3_moe.py, qwen3_235b_a22b_pretrain_256gpu_h100_fp8cs_config: the
'alltoall' dispatcher with the EP overlap of two micro-batches (its layout, below, puts EP32 across four nodes)."""

CASES = {
    "70b-h100-fp8-interleaved": _layout(
        model="llama3.1-70b", gpu="h100-sxm", n_gpus=64, precision="fp8", tp=4, pp=8, vp=5, gbs=128
    ),
    "70b-h100-release-2023-01": _layout(  # an older release: every part slowed by the vintage factor
        model="llama3.1-70b", gpu="h100-sxm", n_gpus=64, vintage="2023-01", tp=4, pp=4, vp=2, gbs=128
    ),
    "8b-no-pipeline-zero0": _layout(model="llama3.1-8b", gpu="h100-sxm", n_gpus=16, tp=2, pp=1, vp=1, zero=0, gbs=64),
    "8b-zero2-selective": _layout(
        model="llama3.1-8b", gpu="h100-sxm", n_gpus=16, tp=1, pp=1, vp=1, zero=2, recompute="selective", mbs=2, gbs=64
    ),
    "8b-fsdp-full-recompute": _layout(
        model="llama3.1-8b",
        gpu="a100-sxm-80gb",
        n_gpus=16,
        precision="bf16",
        tp=1,
        pp=1,
        vp=1,
        zero=3,
        recompute="full",
        gbs=32,
    ),
    "405b-context-parallel": _layout(
        model="llama3.1-405b", gpu="h100-sxm", n_gpus=512, precision="fp8", tp=8, pp=8, vp=8, cp=2, gbs=1152
    ),
    "70b-b200-nvfp4-uneven": _layout(
        model="llama3.1-70b", gpu="b200", n_gpus=96, precision="nvfp4", tp=2, pp=6, vp=1, gbs=96
    ),
    "70b-mi300x-mesh": _layout(model="llama3.1-70b", gpu="mi300x", n_gpus=64, tp=8, pp=2, vp=1, gbs=64),
    "deepseek-v3-gb300-ep32-mtp": _layout(
        model="deepseek-v3", gpu="gb300", n_gpus=256, precision="mxfp8", tp=1, pp=2, vp=8, ep=32, gbs=4096
    ),
    "deepseek-v3-h100-tp2-ep64-selective": _layout(
        model="deepseek-v3",
        gpu="h100-sxm",
        n_gpus=1024,
        precision="fp8",
        tp=2,
        pp=8,
        vp=4,
        ep=64,
        gbs=8192,
        recompute="selective",
    ),
    "qwen3-30b-etp2-full-zero0": _layout(
        model="qwen3-30b-a3b",
        gpu="b200",
        n_gpus=16,
        tp=2,
        pp=1,
        vp=1,
        ep=4,
        etp=2,
        gbs=64,
        zero=0,
        recompute="full",
    ),
    "qwen3-235b-h100-alltoall-ep-overlap": _layout(
        model=QWEN3_235B_H100_RECIPE, gpu="h100-sxm", n_gpus=256, precision="fp8", tp=2, pp=8, vp=4, ep=32, gbs=8192
    ),
    "lightning-mtp-cp2": _layout(  # a hybrid's MTP depths: their layers' CP, EP and compute on the only rank
        model="nemotron-3.5-lightning-30b-a3b",
        gpu="gb200",
        n_gpus=8,
        precision="mxfp8",
        tp=1,
        pp=1,
        vp=1,
        cp=2,
        ep=8,
        gbs=512,
    ),
    "gpt-oss-120b-zero3": _layout(
        model="gpt-oss-120b", gpu="h100-sxm", n_gpus=32, tp=1, pp=1, vp=1, ep=8, gbs=64, zero=3, mbs=2
    ),
    "torchtitan-70b-async-tp-rowwise": _layout(
        model="llama3.1-70b",
        gpu="h100-grand-teton",
        n_gpus=256,
        precision="fp8",
        tp=8,
        pp=1,
        vp=1,
        gbs=512,
        mbs=16,
        zero=3,
        recompute="full",
        stack="torchtitan",
        async_tp=True,
        compile=True,
        fp8_recipe="rowwise",
    ),
    "maxtext-70b-hybrid-fsdp": _layout(  # ZeRO-3 in groups of 128, the gradient shards all-reduced across them
        model="llama2-70b",
        gpu="h100-sxm",
        n_gpus=512,
        precision="bf16",
        stack="maxtext",
        tp=1,
        pp=1,
        vp=1,
        mbs=2,
        seq_len=4096,
        zero=3,
        recompute="full",
        gbs=1024,
        shard_group=128,
    ),
    "gpt3-175b-deepspeed-zero3-per-tensor": _layout(  # DeepSpeed before 0.6.0: ZeRO-3 tensor by tensor
        model="gpt3-175b",
        gpu="a100-sxm-80gb",
        n_gpus=1536,
        precision="bf16",
        stack="megatron-deepspeed",
        vintage="2021-04",
        tp=1,
        pp=1,
        vp=1,
        seq_len=2048,
        zero=3,
        recompute="full",
        gbs=1536,
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_each_part_formula_gives_the_model_number(case: str) -> None:
    p = predict(load_scenario(None, CASES[case]))
    e = explain(p)
    assert [part.key for part in e.parts] == list(BREAKDOWN) + (["ep_comm_exposed_s"] if p.model.is_moe else [])
    for part in e.parts:
        model = float(getattr(p.step, part.key))
        assert part.value == model
        assert part.evaluated() == pytest.approx(model, rel=1e-9, abs=1e-15), part.key
    assert sum(part.value for part in e.parts) == pytest.approx(p.step_time_s, rel=1e-12)
    assert sum(e.bounds.values()) == pytest.approx(p.step_time_s, rel=1e-9)
    assert all(seconds >= -1e-12 for seconds in e.bounds.values())


def test_operations_add_up_to_the_layer_time() -> None:
    """The per-layer operations table is the model's own list: forward ops sum to the layer's forward time."""
    from perfmodel.physics.step import evaluate
    from perfmodel.planning.predict import context_for, layout_vars

    p = predict(load_scenario(None, CASES["70b-h100-fp8-interleaved"]))
    trace: dict[str, Any] = {}
    evaluate(context_for(p.scenario), layout_vars(p.layout), trace)
    e = explain(p)
    forward = sum(r.time_s for r in e.ops if r.phase == "forward")
    backward = sum(r.time_s for r in e.ops if r.phase == "backward")
    assert forward == pytest.approx(trace["layer"].forward, rel=1e-12)
    assert backward == pytest.approx(trace["layer"].backward, rel=1e-12)
    assert {r.bound for r in e.ops if r.kind == "memory"} == {"memory"}
    # 8k-token FP8 GEMMs on H100 are compute-bound at the physical defaults (the roofline, not the fit: the bundled
    # fit's Hopper HBM share, memory x memory_generation@hopper, is a fitted value that moves with the rows).
    physical = explain(predict(load_scenario(None, CASES["70b-h100-fp8-interleaved"] | {"calibration": "none"})))
    gemms = [r for r in physical.ops if r.kind == "gemm"]
    assert gemms and all(r.bound == "compute" for r in gemms)


def test_moe_operations_are_the_moe_layer() -> None:
    """Qwen3-30B-A3B (every layer MoE): the MoE forward and backward rows sum to the layer times the step used, and
    its expert GEMMs are grouped GEMMs with their tile efficiency."""
    from perfmodel.physics.step import evaluate
    from perfmodel.planning.predict import context_for, layout_vars

    p = predict(load_scenario(None, CASES["qwen3-30b-etp2-full-zero0"]))
    trace: dict[str, Any] = {}
    evaluate(context_for(p.scenario), layout_vars(p.layout), trace)
    e = explain(p)
    assert sum(r.time_s for r in e.ops if r.phase == "MoE forward") == pytest.approx(trace["layer"].forward)
    assert sum(r.time_s for r in e.ops if r.phase == "MoE backward") == pytest.approx(trace["layer"].backward)
    grouped = [r for r in e.ops if r.kind == "grouped_gemm"]
    assert grouped and all(0 < r.wave <= 1 for r in grouped) and "grouped GEMM in FP8" in e.op_formulas


def test_dominant_bound_follows_the_layout() -> None:
    """70B with one short micro-batch per GPU and DP over 400 Gb/s NICs is bound by the scale-out network; the
    interleaved MLPerf-style layout is bound by compute."""
    compute = explain(predict(load_scenario(None, CASES["70b-h100-fp8-interleaved"])))
    assert compute.dominant == "compute"
    network = _layout(model="llama3.1-70b", gpu="h100-sxm", n_gpus=64, tp=8, pp=1, vp=1, gbs=8, seq_len=2048)
    assert explain(predict(load_scenario(None, network))).dominant == "scale-out"


def test_cli_text_latex_json() -> None:
    args = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--tp", "1", "--pp", "1", "--cp", "1")
    args += ("--vp", "1", "--mbs", "1", "--recompute", "none", "--zero", "1")
    text = run_cli("explain", *args)
    assert text.code == 0, text.err
    assert "Bound by " in text.out and "T_step = T_compute + T_TP" in text.out and "qkv.fprop" in text.out
    # The 8B's GEMMs are all from compute.GEMM_SATURATION on (8,192 tokens x 4,096 and more): shape share w is
    # their tail wave alone; the share at most the whole peak (compute.Rates.of_format).
    assert "Max(B/(BW_mem*eta_mem), F/(P_fp8*w*Min(1, eta_fp8)))" in text.out
    latex = run_cli("explain", *args, "--format", "latex")
    assert latex.code == 0 and latex.out.count(r"\begin{align*}") == 2 and r"\min\left(" in latex.out
    as_json = json.loads(run_cli("explain", *args, "--format", "json").out)
    assert [part["key"] for part in as_json["parts"]] == list(BREAKDOWN)
    assert as_json["dominant_bound"] in as_json["bounds_s"]
    assert sum(as_json["bounds_s"].values()) == pytest.approx(as_json["step_time_s"], rel=1e-9)


def test_bad_input_is_one_line() -> None:
    result = run_cli("explain", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--tp", "3")
    assert result.code == 2 and result.err.count("\n") == 1 and result.err.startswith("error:")


def test_no_user_text_reaches_sympy_parsing() -> None:
    """sympify/parse_expr evaluate code; the explanation builds expressions from Symbols only."""
    root = Path(__file__).resolve().parents[1] / "perfmodel" / "outputs"
    for name in ("explain.py", "explain_report.py", "symbolic.py", "export/excel.py", "export/table.py"):
        source = (root / name).read_text()
        for forbidden in ("sympify", "parse_expr", "eval(", "exec("):
            assert forbidden not in source, f"{name} uses {forbidden}"


def test_the_heading_is_predicts() -> None:
    """explain headed its text 'fp8' where predict prints 'FP8' for the same scenario."""
    assert run_cli("explain").out.splitlines()[0] == run_cli("predict").out.splitlines()[0]


def test_the_ep_window_says_why_an_alltoall_exchange_hides_behind_the_layer() -> None:
    """With the 'alltoall' dispatcher the window is the layer's only through the EP overlap of two micro-batches
    (`moe.exchange_beside`); the explanation names it, so it does not read as the flex dispatcher's."""
    windows = {}
    for case in ("qwen3-235b-h100-alltoall-ep-overlap", "gpt-oss-120b-zero3", "deepseek-v3-gb300-ep32-mtp"):
        part = next(p for p in explain(predict(load_scenario(None, CASES[case]))).parts if p.key == "ep_comm_exposed_s")
        windows[case] = next(q.meaning for q in part.quantities if str(q.symbol) == "w_EP_fwd")
    assert windows == {
        "qwen3-235b-h100-alltoall-ep-overlap": "the layer's (EP overlap of two micro-batches) forward compute they can "
        "hide behind",
        "gpt-oss-120b-zero3": "the shared experts' ('alltoall' dispatcher) forward compute they can hide behind",
        "deepseek-v3-gb300-ep32-mtp": "the layer's forward compute they can hide behind",
    }


@pytest.mark.parametrize("fmt", ["text", "latex"])
def test_a_formulas_constants_print_at_four_digits(fmt: str) -> None:
    """The straggler wait read '1.17741002251547*sigma_rank' (sqrt(2 ln 2)) and attention
    '1.1148681640625*(E/R_exp + F/P_bf16)' beside values at four digits (symbolic.number: none needs 7 decimals)."""
    out = run_cli("explain", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--format", fmt).out
    assert "1.177" in out and not re.findall(r"\d\.\d{7,}", out)
