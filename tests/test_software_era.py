"""An older run is priced as it ran: its stack and release decide which layouts exist and which kernels it runs
(inputs/features.py)."""

from __future__ import annotations

import json

import pytest

import perfmodel
from perfmodel.inputs.features import FEATURES, era_recipe, missing_features
from perfmodel.inputs.precision import RECIPES
from perfmodel.inputs.stacks import STACKS
from perfmodel.physics.workload import Shard, attention_backward, attention_forward
from tests.conftest import run_cli

BLOOM = {"model": "bloom-176b", "gpu": "a100-sxm-80gb", "n_gpus": 384, "precision": "bf16", "gbs": 2048}
"""BLOOM-176B's run (whole_runs.csv; campaigns.md section 12: Megatron-DeepSpeed, TP 4, PP 12, 2022-03)."""


def _search(**scenario: object) -> list[dict[str, object]]:
    report = perfmodel.search(**scenario, seq_len=2048, top=50)
    return [p.to_dict()["parallelism"] for p in report.results]


def test_a_2022_deepspeed_run_searched_gets_no_interleaving_nor_sharded_pipeline() -> None:
    layouts = _search(**BLOOM, stack="deepspeed", vintage="2022-03")
    assert layouts and all(lo["vp"] == 1 for lo in layouts)
    assert all(lo["zero"] < 2 for lo in layouts if lo["pp"] > 1)  # DeepSpeed's pipeline engine runs ZeRO-1 only
    assert all(lo["recompute"] != "selective" for lo in layouts)
    today = _search(**BLOOM)  # Megatron today: interleaving is among the best layouts
    assert any(lo["vp"] > 1 for lo in today)


def test_a_layout_asking_for_a_missing_feature_is_refused_in_one_line() -> None:
    args = ("predict", "--model", "bloom-176b", "--gpu", "a100-sxm-80gb", "--gpus", "384", "--precision", "bf16",
            "--seq-len", "2048", "--gbs", "2048", "--stack", "deepspeed", "--vintage", "2022-03", "--tp", "4",
            "--pp", "12", "--cp", "1", "--mbs", "1", "--recompute", "full", "--zero", "1")  # fmt: skip
    refused = run_cli(*args, "--vp", "2")
    assert refused.code == 2 and refused.out == "" and len(refused.err.strip().splitlines()) == 1
    assert "--vp: invalid layout" in refused.err
    assert "the deepspeed stack has no interleaved 1F1B pipeline schedule" in refused.err
    accepted = run_cli(*args, "--vp", "1")
    assert accepted.code == 0, accepted.err


def test_megatron_features_arrive_with_their_releases() -> None:
    # Korthikanti et al. 2022 (May 2022): sequence parallelism and selective recompute; Narayanan et al. 2021:
    # interleaving; NeMo 24.03: context parallelism; NeMo 25.04: Megatron-FSDP; FlashAttention May 2022.
    before, after = missing_features("megatron", "2022-04"), missing_features("megatron", "2022-06")
    assert {"sequence_parallel", "selective_recompute", "flash_attention"} <= before
    assert not {"sequence_parallel", "selective_recompute", "flash_attention"} & after
    assert "interleaved_pipeline" in missing_features("megatron", "2021-01")
    assert "context_parallel" in missing_features("megatron", "2023-12")
    assert "fsdp" in missing_features("megatron", "2024-12") and "fsdp" not in missing_features("megatron", "2025-04")
    assert missing_features("megatron", None) == frozenset()  # today's Megatron has every feature
    assert {"tensor_parallel", "pipeline"} <= missing_features("composer", None)  # FSDP alone, in any release


def test_every_feature_is_sourced_and_names_known_stacks() -> None:
    for feature in FEATURES:
        assert feature.source and feature.what
        assert set(feature.since) <= set(STACKS)


def test_a_2022_megatron_search_has_no_context_parallelism_no_fsdp_and_no_selective_recompute_before_it() -> None:
    llama = {"model": "llama1-65b", "gpu": "a100-sxm-80gb", "n_gpus": 2048, "precision": "bf16", "gbs": 2048}
    layouts = _search(**llama, vintage="2022-03")
    assert all(lo["cp"] == 1 and lo["zero"] in (0, 1) and lo["recompute"] != "selective" for lo in layouts)
    assert any(lo["zero"] == 3 for lo in _search(**llama))  # today's Megatron runs FSDP among the best


def test_attention_before_flash_attention_writes_its_scores_and_keeps_them() -> None:
    model = perfmodel.load_scenario(model="bloom-176b").model_spec()
    bf16 = RECIPES["bf16"]
    unfused = era_recipe(bf16, missing_features("deepspeed", "2022-03"))
    assert not unfused.flash_attention and not unfused.sequence_parallel and not unfused.tp_comm_overlap
    fused_ops = attention_forward(Shard(model, bf16, 4, 1, 1, 2048))
    unfused_ops = attention_forward(Shard(model, unfused, 4, 1, 1, 2048))
    # The unfused GEMMs compute the whole s x s square: twice flash attention's causal FLOPs, forward ...
    assert sum(op.flops for op in unfused_ops) == pytest.approx(2 * sum(op.flops for op in fused_ops))
    scores = 2048 * 2048 * model.heads / 4
    assert sum(op.bytes for op in unfused_ops) > 4 * scores  # ... and the scores go through HBM
    fused_bwd = attention_backward(Shard(model, bf16, 4, 1, 1, 2048))
    unfused_bwd = attention_backward(Shard(model, unfused, 4, 1, 1, 2048))
    assert sum(op.flops for op in unfused_bwd) == pytest.approx(2 * 2 * sum(op.flops for op in fused_ops))
    assert sum(op.flops for op in fused_bwd) == pytest.approx(2.5 * sum(op.flops for op in fused_ops))


def test_a_2022_release_needs_more_memory_and_time_for_the_same_layout() -> None:
    layout = {"tp": 4, "pp": 12, "cp": 1, "vp": 1, "mbs": 1, "recompute": "none", "zero": 1, "seq_len": 2048}
    old = perfmodel.predict(**BLOOM, **layout, stack="deepspeed", vintage="2022-03").to_dict()
    new = perfmodel.predict(**BLOOM, **layout, stack="deepspeed", vintage="2023-06").to_dict()
    # Korthikanti's 5 a s / h bytes of scores per token, and TP's replicated norms without sequence parallelism.
    assert old["memory_gb"]["activations"] > 2 * new["memory_gb"]["activations"]
    assert old["step_time_s"] > new["step_time_s"]


def test_without_a_vintage_nothing_changes() -> None:
    today = json.loads(run_cli("predict", "--format", "json").out)
    assert today["parallelism"]["vp"] == 5  # the default scenario's interleaved layout still runs


def test_megatron_deepspeed_runs_megatrons_kernels_of_its_release_in_deepspeeds_pipeline() -> None:
    # BLOOM's stack (campaigns.md section 12): no interleaving, ZeRO-1 with PP, and Megatron-LM's release trend.
    layouts = _search(**BLOOM, stack="megatron-deepspeed", vintage="2022-03")
    assert layouts and all(lo["vp"] == 1 and (lo["pp"] == 1 or lo["zero"] < 2) for lo in layouts)
    layout = {"tp": 4, "pp": 12, "cp": 1, "vp": 1, "mbs": 1, "recompute": "full", "zero": 1, "seq_len": 2048}
    old = {stack: perfmodel.predict(**BLOOM, **layout, stack=stack, vintage="2022-03").step_time_s
           for stack in ("deepspeed", "megatron-deepspeed")}  # fmt: skip
    assert old["megatron-deepspeed"] > old["deepspeed"]  # Megatron's fitted trend prices its 2022 kernels


def test_the_fused_kernel_trend_does_not_reprice_kernels_written_as_their_release_ran_them() -> None:
    # The unfused softmax is already the 2022 kernel: the trend of fewer fused passes in older releases (fitted on
    # today's op list) must not scale it again.
    from dataclasses import replace

    from perfmodel.inputs.hardware import get_accelerator
    from perfmodel.physics.compute import op_time
    from perfmodel.physics.efficiency import DEFAULTS

    model = perfmodel.load_scenario(model="bloom-176b").model_spec()
    unfused = era_recipe(RECIPES["bf16"], missing_features("megatron-deepspeed", "2022-03"))
    softmax = next(op for op in attention_forward(Shard(model, unfused, 4, 1, 1, 2048)) if op.kind == "memory")
    assert softmax.as_released
    acc, eff = get_accelerator("a100-sxm-80gb"), DEFAULTS["ampere"]
    older = replace(eff, fusion_gain_per_year=1.3, vintage_years=4.0)
    assert op_time(softmax, acc, older) == pytest.approx(op_time(softmax, acc, eff))
    norm = softmax._replace(as_released=False)
    assert op_time(norm, acc, older) > op_time(norm, acc, eff)


def test_a_release_after_the_calibrations_newest_is_refused_not_extrapolated() -> None:
    """The fitted software trend says how past releases sped up; a future vintage would extrapolate it (a 70B step
    3x faster at 2099-12), so it is one line naming the newest release fitted."""
    refused = run_cli("predict", "--vintage", "2099-12")
    assert refused.code == 2 and refused.out == "" and len(refused.err.strip().splitlines()) == 1
    assert "vintage 2099-12: after the newest release this calibration fitted" in refused.err
    assert run_cli("predict", "--vintage", "2024-07").code == 0
