"""Packed documents (document masking) and LoRA target modules: closed forms against hand counts, defaults that keep
today's numbers, and bad input as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from perfmodel.inputs.documents import Documents, packing
from perfmodel.inputs.models import get_model
from perfmodel.inputs.precision import RECIPES
from perfmodel.physics.workload import Shard, attention_forward, layer_backward, layer_forward


def _attention(shard: Shard) -> dict[str, tuple[float, float, float]]:
    return {op.name: (op.flops, op.exps, op.m) for op in attention_forward(shard)}


def test_documents_of_one_length_attend_their_own_keys() -> None:
    """8,192-token sequences of 1,024-token documents: each query sees 1,024/2 keys, not 8,192/2 (hand count:
    8 documents x 1,024^2/2 pairs over 8,192 tokens = 512), and the kernel works on 1,024-token documents."""
    md = get_model("llama3.1-8b")
    plain = Shard(md, RECIPES["bf16"], 1.0, 1.0, 1.0, 8192)
    packed = plain._replace(packing=packing(Documents(length=1024), 8192))
    (flops, exps, m), (flops_d, exps_d, m_d) = _attention(plain)["attention"], _attention(packed)["attention"]
    assert flops == 2 * 8192 * 4096 * 2 * 4096  # 2 T keys (2 q_dim) with keys = s/2
    assert flops_d == 2 * 8192 * 512 * 2 * 4096
    assert exps_d / exps == flops_d / flops == 1 / 8
    assert (m, m_d) == (8192, 1024)


def test_a_long_packed_sequence_of_short_documents_costs_what_short_sequences_cost() -> None:
    """128K tokens of 4K documents: attention per token as for 4K sequences (the issue's check)."""
    md = get_model("llama3.1-8b")
    long = Shard(md, RECIPES["bf16"], 1.0, 1.0, 1.0, 131072, packing=packing(Documents(length=4096), 131072))
    short = Shard(md, RECIPES["bf16"], 1.0, 1.0, 32.0, 4096)
    assert _attention(long) == _attention(short)


def test_documents_longer_than_the_sequence_are_split_at_its_boundary() -> None:
    """A histogram: half the documents 1,024 tokens, half 20,000 (= 2 x 8,192 + 3,616) at seq 8,192. Hand count:
    pairs per mean document (2 x 8,192^2/2 + 3,616^2/2 + 1,024^2/2) / 2 over (20,000 + 1,024) / 2 tokens."""
    found = packing(Documents(lengths=(1024, 20000), shares=(0.5, 0.5)), 8192)
    assert found is not None
    pairs = (2 * 8192**2 / 2 + 3616**2 / 2 + 1024**2 / 2) / 2
    assert found.keys == pytest.approx(pairs / ((20000 + 1024) / 2))
    assert found.length == pytest.approx(2 * found.keys)
    assert packing(Documents(), 8192) is None and packing(Documents(profile="pretrain"), 8192) is None


def test_documents_compose_with_a_sliding_window_and_context_parallelism() -> None:
    """gpt-oss's 128-token window over 1,024-token documents: a document of l > W tokens costs W l - W^2/2 pairs
    (hand count: (128 x 1,024 - 128^2/2) / 1,024 = 120 keys per query); CP splits each document's tokens and the
    causal kernel's length over the ranks, keys per query unchanged; the window's kernel is a band of 120 keys per
    query either way (Op.band)."""
    md = get_model("gpt-oss-20b")
    packed = packing(Documents(length=1024), 8192)
    assert packed is not None and packed.window_keys(128) == 120.0
    one = Shard(md, RECIPES["bf16"], 1.0, 1.0, 1.0, 8192, packing=packed)
    four = one._replace(cp=4.0)
    window_share = md.sliding_layers / md.layers
    (flops_w, _, m_w), (flops_4, _, m_4) = _attention(one)["attention.window"], _attention(four)["attention.window"]
    assert flops_w == pytest.approx(2 * 8192 * 120 * md.attention_widths * window_share)
    assert flops_4 == pytest.approx(flops_w / 4)
    assert (m_w, _attention(four)["attention"][2]) == (120, 1024 / 4) and m_4 == 120


@pytest.mark.parametrize(
    ("model", "attention", "mlp"),
    [
        # r (h + q + 2 kv) + r (q + h) and r (h + 2 f) + r (f + h), r = 16
        ("llama3.1-8b", 16 * (4096 + 4096 + 2048) + 16 * (4096 + 4096), 16 * (4096 + 2 * 14336) + 16 * (14336 + 4096)),
        ("llama3.1-70b", 16 * (8192 + 8192 + 2048) + 16 * (8192 + 8192), 16 * (8192 + 2 * 28672) + 16 * (28672 + 8192)),
    ],
)
def test_adapter_parameters_against_a_hand_count(model: str, attention: int, mlp: int) -> None:
    md = get_model(model)
    assert md.lora_params_per_layer(16) == md.lora_params_per_layer(16, "attention") == attention
    assert md.lora_params_per_layer(16, "mlp") == mlp
    assert md.lora_params_per_layer(16, "all-linear") == attention + mlp


def test_adapters_add_their_gemms_and_nothing_else() -> None:
    """Each adapted layer: two rank-r GEMMs forward, four backward (B's and A's input and weight gradients), in BF16;
    2 T r (k + n) FLOPs forward, twice that backward. No adapter: the ops of today."""
    md, recipe = get_model("llama3.1-8b"), RECIPES["fp8"]
    base = Shard(md, recipe, 1.0, 1.0, 1.0, 8192)
    adapted = base._replace(lora_rank=16, adapters=frozenset(("qkv", "proj", "fc1", "fc2")))
    names = {op.name for op in layer_forward(base, recipe)}
    extra_fwd = [op for op in layer_forward(adapted, recipe) if op.name not in names]
    bwd_names = {op.name for op in layer_backward(base, recipe, True)}
    extra_bwd = [op for op in layer_backward(adapted, recipe, True) if op.name not in bwd_names]
    assert len(extra_fwd) == 8 and len(extra_bwd) == 16 and all(op.fmt == "bf16" for op in extra_fwd + extra_bwd)
    per_token = 2 * md.lora_params_per_layer(16, "all-linear")  # 2 r (k + n) summed over the four layers
    assert sum(op.flops for op in extra_fwd) == 8192 * per_token
    assert sum(op.flops for op in extra_bwd) == 2 * 8192 * per_token


def _predict(*flags: str) -> dict:
    import json

    result = run_cli("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--tp", "1", "--pp", "1",
                     "--cp", "1", "--mbs", "1", "--gbs", "64", "--recompute", "none", "--zero", "1", "--format",
                     "json", *flags)  # fmt: skip
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_short_documents_are_faster_by_the_attention_share_and_say_so() -> None:
    plain, docs = _predict("--seq-len", "8192"), _predict("--seq-len", "8192", "--doc-len", "1024")
    assert docs["step_time_s"] < plain["step_time_s"]
    assert (plain["attention_keys_per_query"], docs["attention_keys_per_query"]) == (4096, 512)
    assert (plain["documents"], docs["documents"]) == ("pretrain", "documents of 1,024 tokens")
    assert docs["mfu"] <= 1


def test_all_linear_lora_trains_more_and_holds_more_than_attention_only() -> None:
    attention = _predict("--lora-rank", "16")
    everything = _predict("--lora-rank", "16", "--lora-modules", "all-linear")
    assert (attention["lora_modules"], everything["lora_modules"]) == ("attention", "all-linear")
    assert everything["step_time_s"] > attention["step_time_s"]
    assert everything["memory_gb"]["optimizer"] > attention["memory_gb"]["optimizer"]
    assert everything["memory_gb"]["activations"] > attention["memory_gb"]["activations"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--seq-len", "8192", "--doc-len", "16384"), "--doc-len: documents of 16,384 tokens do not fit"),
        (("--model", "llama3.1-8b", "--lora-rank", "8192"), "--lora-rank: rank 8,192 is above the layer width (4,096)"),
        (("--lora-rank", "16", "--lora-modules", "mlp", "--model", "mixtral-8x7b"), "--lora-modules: LoRA on a MoE"),
        (("--lora-modules", "qkv"), "'qkv' is not one of 'attention', 'mlp', 'all-linear'"),
        (("--benchmark", "mlperf-llama2-70b-lora", "--lora-modules", "all-linear"), "adapts the attention projections"),
    ],
)
def test_bad_documents_and_lora_flags_get_one_line(flags: tuple[str, ...], message: str) -> None:
    result = run_cli("predict", "--gpu", "h100-sxm", "--gpus", "8", *flags)
    assert result.code == 2 and message in result.err and "Traceback" not in result.err, result.err


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("lengths = [1024, 4096]\nshares = [0.5, 0.4]", "the shares of documents must sum to 1 (they sum to 0.9)"),
        ("lengths = [0]\nshares = [1.0]", "every document length must be a positive number of tokens"),
        ('profile = "sft"', "unknown profile 'sft'; known: pretrain"),
        ("lengths = [1024]\nshares = [0.5, 0.5]", "lengths has 1 values and shares 2"),
        ('profile = "pretrain"\nlength = 512', "profile and length both give the documents"),
    ],
)
def test_bad_document_tables_name_the_file_and_field(tmp_path: Path, table: str, message: str) -> None:
    path = tmp_path / "docs.toml"
    path.write_text(f'model = "llama3.1-8b"\ngpu = "h100-sxm"\n\n[documents]\n{table}\n')
    result = run_cli("predict", str(path))
    assert result.code == 2 and str(path) in result.err and "documents" in result.err, result.err
    assert message in result.err and len(result.err.strip().splitlines()) == 1


def test_lora_model_flops_count_no_weight_gradients_of_the_frozen_base() -> None:
    """mlperf_benchmarks.md, llama2_70b_lora: "training FLOPs here are forward+backward through the frozen 70B model
    (no weight-gradient GEMMs for frozen weights); a 6·N·D model over-counts by roughly 1/3". Llama 2 70B at 8,192
    tokens: 4 FLOPs per matmul parameter plus the attention and 6 per adapter parameter, so MFU stays a share of the
    work done (6·N put NVIDIA's 8 x H100 LoRA run at 131% of the dense BF16 peak)."""
    from perfmodel import load_scenario
    from perfmodel.planning.predict import model_flops_per_token

    md = get_model("llama2-70b")
    full = load_scenario(None, model="llama2-70b", seq_len=8192)
    lora = load_scenario(None, model="llama2-70b", seq_len=8192, lora_rank=16)
    adapters = md.layers * md.lora_params_per_layer(16)
    dropped = model_flops_per_token(md, full, 8192) - model_flops_per_token(md, lora, 8192)
    assert dropped == 2 * md.matmul_params - 6 * adapters
    assert dropped / model_flops_per_token(md, full, 8192) == pytest.approx(0.30, abs=0.02)
    result = run_cli("predict", "--benchmark", "mlperf-llama2-70b-lora", "--gpu", "h100-sxm", "--gpus", "8", "--format",
                     "json")  # fmt: skip
    assert result.code == 0, result.err
    assert 0.5 < json.loads(result.out)["mfu_bf16"] < 1.0
