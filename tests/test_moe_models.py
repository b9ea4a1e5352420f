"""Mixture-of-experts models of the zoo: exact parameter counts against the published figures, model FLOPs per token
against the published tables, and inline MoE models in scenario files."""

from __future__ import annotations

import pytest
from conftest import run_cli

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.models import ZOO, ModelSpec
from perfmodel.inputs.record import replaced
from perfmodel.inputs.scenario import load_scenario

B = 1e9

# (model, published total, published active, how the publisher counts "active", the unit of the figures' last digit).
# Publishers round (or truncate) to that digit, so the exact count must lie within one unit of the figure.
PUBLISHED = [
    # DeepSeek-V3 Technical Report (arXiv:2412.19437), abstract: "671B total parameters with 37B activated for each
    # token" (the main model; the MTP module is counted apart). Active excludes the input embedding lookup.
    ("deepseek-v3", 671, 37, "no_embedding", 1),
    # Kimi K2 model card (moonshotai/Kimi-K2-Instruct): "1 trillion total parameters", "32 billion activated".
    ("kimi-k2", 1000, 32, "no_embedding", 100),
    # Qwen3-30B-A3B model card (Qwen/Qwen3-30B-A3B): "30.5B in total and 3.3B activated".
    ("qwen3-30b-a3b", 30.5, 3.3, "all", 0.1),
    # Qwen3-235B-A22B model card (Qwen/Qwen3-235B-A22B): "235B in total and 22B activated".
    ("qwen3-235b-a22b", 235, 22, "all", 1),
    # gpt-oss model card (OpenAI, arXiv:2508.10925), Table 1: 20.91B total, 3.61B active; 116.83B and 5.13B.
    ("gpt-oss-20b", 20.91, 3.61, "no_embedding", 0.01),
    ("gpt-oss-120b", 116.83, 5.13, "no_embedding", 0.01),
    # Mistral AI, "Mixtral of experts" (mistral.ai/news/mixtral-of-experts, 2023-12-11): "46.7B total parameters
    # but only uses 12.9B parameters per token".
    ("mixtral-8x7b", 46.7, 12.9, "all", 0.1),
    # Mistral AI, "Cheaper, Better, Faster, Stronger" (mistral.ai/news/mixtral-8x22b, 2024-04-17): "141B parameters",
    # "only 39B active parameters".
    ("mixtral-8x22b", 141, 39, "all", 1),
]


@pytest.mark.parametrize(("model_id", "total_b", "active_b", "convention", "unit_b"), PUBLISHED)
def test_parameter_counts_match_the_published_figures(
    model_id: str, total_b: float, active_b: float, convention: str, unit_b: float
) -> None:
    md = ZOO[model_id]
    active = md.active_params - (md.embedding_params if convention == "no_embedding" else 0)
    assert abs(md.main_params / B - total_b) < unit_b
    assert abs(active / B - active_b) < min(unit_b, 1.0)


def test_exact_counts_are_the_checkpoints_tensors_summed() -> None:
    """The exact integers, summed here tensor by tensor from each model's shapes as the zoo cites them (models.py
    MOE_MODELS: Megatron-Bridge 0.3.1 providers and transformers' configs), independently of the count formulas, so
    that a change to any of them is seen. DeepSeek-V3 (MLA, 3 dense then 58 MoE layers of 256 + 1 experts; the router's
    256-entry score-correction bias is not counted) and its MTP module sharing the embedding and LM head: enorm,
    hnorm, the 2h x h eh_proj, one MoE layer and the shared head's norm. GPT-OSS-120B: biased Q/K/V/O with a sink per
    head, 128 biased experts of 2 x 2880 up / 2880 down, a biased router. Qwen3-30B-A3B: GQA with QK norms, 128
    experts of 768. Mixtral 8x22B: bias-free GQA, 8 experts, untied embeddings."""
    h, v = 7168, 129280
    mla = h * 1536 + 1536 + 1536 * 128 * (128 + 64) + h * (512 + 64) + 512 + 512 * 128 * (128 + 128) + 128 * 128 * h
    moe = 256 * h + (256 + 1) * 3 * h * 2048
    ds_layer, ds_main = mla + 2 * h, 61 * (mla + 2 * h) + 3 * 3 * h * 18432 + 58 * moe + 2 * v * h + h
    ds = ZOO["deepseek-v3"]
    assert (ds.main_params, ds.mtp_params) == (ds_main, ds_layer + moe + 2 * h + 2 * h * h + h)
    assert ds.params == ds.main_params + ds.mtp_params and round(ds.main_params / B) == 671
    h, v, f = 2880, 201088, 2880
    attention = h * 4096 + 4096 + 2 * (h * 512 + 512) + 4096 * h + h + 64 + 2 * h
    experts = h * 128 + 128 + 128 * (h * 2 * f + 2 * f + f * h + h)
    assert ZOO["gpt-oss-120b"].main_params == 36 * (attention + experts) + 2 * v * h + h
    h, v = 2048, 151936
    attention = h * 4096 + 2 * h * 512 + 4096 * h + 2 * 128 + 2 * h
    assert ZOO["qwen3-30b-a3b"].main_params == 48 * (attention + h * 128 + 128 * 3 * h * 768) + 2 * v * h + h
    h, v, f = 6144, 32768, 16384  # Mixtral 8x22B: GQA of 48 heads and 8 groups of 128, 8 SwiGLU experts, no biases
    attention = h * h + 2 * h * 1024 + h * h + 2 * h
    assert ZOO["mixtral-8x22b"].main_params == 56 * (attention + h * 8 + 8 * 3 * h * f) + 2 * v * h + h


def test_mixtral_8x22b_is_listed_and_predicts_a_layout_that_fits() -> None:
    """The architecture's fixed model ids include mixtral-8x22b: it once exited 2, unknown to the zoo."""
    assert any(line.split()[:1] == ["mixtral-8x22b"] for line in run_cli("models", "list").out.splitlines())
    predicted = run_cli("predict", "--model", "mixtral-8x22b", "--gpu", "h100-sxm", "--gpus", "256")
    assert predicted.code == 0, predicted.err
    assert predicted.out.startswith("Mixtral 8x22B on 256 x NVIDIA H100") and "\nLayout: TP" in predicted.out
    assert " GiB of 80.0 GiB (fits)" in predicted.out


def test_qwen3_non_embedding_counts() -> None:
    """Qwen3 model cards: "Number of Parameters (Non-Embedding)" 29.9B (30B-A3B) and 234B (235B-A22B), counting
    neither the embedding nor the LM head."""
    for model_id, published in (("qwen3-30b-a3b", 29.9), ("qwen3-235b-a22b", 234)):
        md = ZOO[model_id]
        non_embedding = md.main_params - md.embedding_params - md.lm_head_params
        assert round(non_embedding / B, 1 if published < 100 else 0) == published


# Megatron-Bridge docs/performance-summary.md (commit 067f987df), NeMo 26.08 GB300 rows of measured_runs.csv: Model
# TFLOP/s/GPU over tokens/s/GPU is the model FLOPs per token of Megatron-Bridge's flop_utils (causal attention,
# active parameters, MTP included, padded vocabulary): DeepSeek-V3 1635/6288, Qwen3-30B-A3B 1029/44544,
# Qwen3-235B-A22B 1306/8816, GPT-OSS-120B 1077/33024 (all at sequence 4096).
FLOPS_ROWS = [
    ("deepseek-v3", 1635e12 / 6288),
    ("qwen3-30b-a3b", 1029e12 / 44544),
    ("qwen3-235b-a22b", 1306e12 / 8816),
    ("gpt-oss-120b", 1077e12 / 33024),
]


@pytest.mark.parametrize(("model_id", "published"), FLOPS_ROWS)
def test_model_flops_per_token_match_megatron_bridge(model_id: str, published: float) -> None:
    """Within 0.5%: the tables round TFLOP/s to an integer and pad the vocabulary."""
    assert ZOO[model_id].model_flops_per_token(4096) == pytest.approx(published, rel=0.005)


def test_mtp_and_sliding_window_change_the_flops() -> None:
    ds = ZOO["deepseek-v3"]
    without_mtp = replaced(ds, mtp_layers=0)
    assert ds.model_flops_per_token(4096) > without_mtp.model_flops_per_token(4096) * 1.03
    oss = ZOO["gpt-oss-120b"]
    full = replaced(oss, sliding_window=0, sliding_layers=0)
    saved = full.model_flops_per_token(4096) - oss.model_flops_per_token(4096)
    # 18 layers attend W - W^2/2s = 126 keys instead of s/2 = 2048, at 6 x 2 x 4096 FLOPs per key
    assert saved == pytest.approx(18 * 6 * (2048 - (128 - 128**2 / 8192)) * 2 * 4096)


def test_dense_model_has_no_experts() -> None:
    md = ZOO["llama3.1-70b"]
    assert not md.is_moe and md.active_params == md.params == md.main_params


def test_inline_moe_model_in_a_scenario(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "moe.toml"
    path.write_text(
        'n_gpus = 8\ngpu = "h100-sxm"\n[model]\nid = "tiny-moe"\nlayers = 4\nhidden = 1024\nffn = 4096\nheads = 8\n'
        "kv_heads = 8\nvocab = 32000\nexperts = 16\ntop_k = 2\nmoe_ffn = 512\nshared_experts = 1\ndense_layers = 1\n"
    )
    md = load_scenario(path).model_spec()
    assert md.is_moe and md.moe_layers == 3
    assert md.main_params == md.params_per_layer + 3 * md.moe_layer_params + 2 * 32000 * 1024 + 1024


@pytest.mark.parametrize(
    ("update", "says"),
    [
        ({"experts": 16, "top_k": 0, "moe_ffn": 512}, "top_k"),
        ({"top_k": 2}, "experts > 0"),
        ({"attention": "mla"}, "kv_lora_rank"),
        ({"sliding_window": 128}, "sliding_layers"),
    ],
)
def test_inconsistent_moe_shapes_are_refused(update: dict[str, object], says: str) -> None:
    base = {"layers": 4, "hidden": 1024, "ffn": 4096, "heads": 8, "kv_heads": 8, "vocab": 32000}
    with pytest.raises(ValueError, match=says):
        ModelSpec(**base | update)  # type: ignore[arg-type]


def test_bad_inline_moe_field_names_the_field(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "bad.toml"
    path.write_text('[model]\nbase = "mixtral-8x7b"\ntop_k = 9\n')
    with pytest.raises(PerfmodelError, match=r"model.*top_k"):
        load_scenario(path)


def test_moe_imbalance_is_a_scenario_key(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from perfmodel.planning.predict import context_for

    path = tmp_path / "skew.toml"
    path.write_text('model = "mixtral-8x7b"\ngpu = "h100-sxm"\nn_gpus = 8\nmoe_imbalance = 1.5\n')
    assert context_for(load_scenario(path)).imbalance == 1.5
    path.write_text('model = "mixtral-8x7b"\nmoe_imbalance = 0.5\n')
    with pytest.raises(PerfmodelError, match=r"field 'moe_imbalance'.*greater than or equal to 1"):
        load_scenario(path)
