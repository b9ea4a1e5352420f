"""A MoE prediction's table says which expert layout, dispatcher and overlap it assumed, on a line of its own after
the layout; a dense prediction's table has no such line."""

from __future__ import annotations

import json

from conftest import run_cli

from perfmodel.inputs.scenario import load_scenario
from perfmodel.planning.predict import context_for

_GIVEN = ("--tp", "1", "--pp", "1", "--cp", "1", "--vp", "1", "--mbs", "1", "--recompute", "none", "--zero", "1")


def _lines(*args: str) -> list[str]:
    result = run_cli("predict", *args, *_GIVEN)
    assert result.code == 0, result.err
    return result.out.splitlines()


def _overlap_pct(model: str, gpu: str, name: str) -> str:
    efficiency = context_for(load_scenario(None, {"model": model, "gpu": gpu})).efficiency
    return f"{getattr(efficiency, name):.0%}"


def test_deepseek_v3_inside_one_nvl72_rack() -> None:
    """DeepSeek-V3: 256 routed experts top-8 + 1 shared, first 3 of 61 layers dense; EP8 on 64 GB300 of one rack:
    expert DP = 64 / 8, 256 / 8 experts per rank, the flex dispatcher (Megatron-Bridge 0.3.1 recipe)."""
    lines = _lines("--model", "deepseek-v3", "--gpu", "gb300", "--gpus", "64", "--ep", "8", "--gbs", "64")
    assert lines[1].startswith("Layout: TP1 PP1 VP1 CP1 DP64 EP8,")
    assert lines[2] == (
        "Experts: 256 routed, top-8 + 1 shared, in 58 of 61 layers; EP8 x ETP1 x expert DP8, 32 experts per EP "
        "rank; 'flex' dispatcher, all-to-all inside one scale-up domain, hidden behind the layer's compute up to "
        f"{_overlap_pct('deepseek-v3', 'gb300', 'overlap_ep')} (overlap_ep; the flex dispatcher)"
    )
    assert lines[3] == "Inputs:"


def test_an_ep_group_across_dgx_nodes_names_the_scale_out_share() -> None:
    """EP32 x ETP2 on 8-GPU DGX H100 nodes: 4 ranks of the group per node (stride ETP 2), so 8 nodes."""
    lines = _lines("--model", "deepseek-v3", "--gpu", "h100-sxm", "--gpus", "64", "--ep", "32", "--etp", "2",
                   "--gbs", "64")  # fmt: skip
    assert "EP32 x ETP2 x expert DP1, 8 experts per EP rank;" in lines[2]
    pct = _overlap_pct("deepseek-v3", "h100-sxm", "overlap_dp")
    assert lines[2].endswith(f"all-to-all across 8 scale-up domains (NICs), hidden behind the layer's compute up "
                             f"to {pct} (overlap_dp; the flex dispatcher)")  # fmt: skip


def test_gpt_oss_alltoall_dispatcher_without_shared_experts_hides_nothing() -> None:
    lines = _lines("--model", "gpt-oss-120b", "--gpu", "gb200", "--gpus", "8", "--ep", "8", "--gbs", "64")
    assert lines[2].startswith("Experts: 128 routed, top-4, in 36 of 36 layers; EP8 x ETP1 x expert DP1,")
    assert lines[2].endswith("'alltoall' dispatcher, all-to-all inside one scale-up domain, not hidden (the "
                             "'alltoall' dispatcher overlaps shared experts only; this model has none)")  # fmt: skip


def test_an_alltoall_recipe_with_the_micro_batch_overlap_hides_behind_the_layer(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Megatron-Bridge 0.6.2's GB200 BF16 GPT-OSS-120B recipe keeps 'alltoall' and sets
    overlap_moe_expert_parallel_comm (model key ep_microbatch_overlap): the exchange hides behind the layer, and the
    line says why (moe.exchange_beside)."""
    scenario = tmp_path / "s.toml"
    scenario.write_text('gpu = "gb200"\nn_gpus = 8\n[model]\nbase = "gpt-oss-120b"\nep_microbatch_overlap = true\n')
    lines = _lines(str(scenario), "--ep", "8", "--gbs", "64")
    pct = _overlap_pct("gpt-oss-120b", "gb200", "overlap_ep")
    hidden = f"hidden behind the layer's compute up to {pct} (overlap_ep; the EP overlap of two micro-batches)"
    assert lines[2].endswith(f"'alltoall' dispatcher, all-to-all inside one scale-up domain, {hidden}")


def test_a_dense_model_has_no_experts_line() -> None:
    lines = _lines("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--gbs", "64")
    assert lines[2] == "Inputs:"
    assert not any(line.startswith("Experts: ") for line in lines)


def test_one_expert_per_rank_is_singular() -> None:
    """Mixtral 8x7B: 8 experts over EP8."""
    lines = _lines("--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--gpus", "8", "--ep", "8", "--gbs", "64")
    assert "EP8 x ETP1 x expert DP1, 1 expert per EP rank;" in lines[2]


def test_explain_shows_the_same_line_and_its_json_the_sentence() -> None:
    args = ("--model", "gpt-oss-120b", "--gpu", "gb200", "--gpus", "8", "--ep", "8", "--gbs", "64", *_GIVEN)
    predict = run_cli("predict", *args).out.splitlines()
    explain = run_cli("explain", *args).out.splitlines()
    assert explain[2] == predict[2] and explain[2].startswith("Experts: ")
    document = json.loads(run_cli("explain", *args, "--format", "json").out)
    assert document["experts"] == predict[2].removeprefix("Experts: ")
    dense = json.loads(run_cli("explain", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--gbs",
                               "64", *_GIVEN, "--format", "json").out)  # fmt: skip
    assert "experts" not in dense


def test_a_flex_recipe_with_neither_overlap_says_nothing_hides_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Megatron-Bridge 0.6.2's H100 FP8-CS Qwen3-30B-A3B recipe (perf_recipes/qwen/h100/qwen3_moe.py L88-92) runs flex
    without the EP overlap of two micro-batches, and Qwen3-30B-A3B has no shared experts (model key
    ep_exchange_exposed): the line says the exchange is not hidden, not the zoo entry's flex share."""
    scenario = tmp_path / "s.toml"
    scenario.write_text('gpu = "h100-sxm"\nn_gpus = 16\n[model]\nbase = "qwen3-30b-a3b"\nep_exchange_exposed = true\n')
    lines = _lines(str(scenario), "--ep", "16", "--gbs", "1024")
    assert lines[2].endswith(
        "'flex' dispatcher, all-to-all across 2 scale-up domains (NICs), not hidden (the recipe overlaps neither two "
        "micro-batches' exchanges nor the shared experts)"
    )
