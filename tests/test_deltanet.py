"""Gated DeltaNet layers and Qwen3-Next-80B-A3B (issue 32): parameter counts against the published config, the
chunked delta rule's FLOPs against the algorithm counted step by step, memory, gated attention, refusals, and a
searched prediction on 64 H100."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from conftest import run_cli

import perfmodel
from perfmodel.errors import FieldError
from perfmodel.inputs import hybrid
from perfmodel.inputs.models import ZOO, ModelSpec
from perfmodel.inputs.precision import RECIPES
from perfmodel.physics import deltanet, memory, moe
from perfmodel.physics.workload import Shard, attention_block_backward, attention_block_forward


def _qwen3_next_counts() -> tuple[int, int]:
    """(total, active) parameters of Qwen3-Next-80B-A3B, module by module as transformers 5.25's
    modeling_qwen3_next.py builds them from Qwen3NextConfig's defaults (configuration_qwen3_next.py L88-118: the
    docstring's checkpoint Qwen/Qwen3-Next-80B-A3B-Instruct, L23): hidden 2048, vocab 151936 untied, 48 layers, every
    fourth full attention (L123-129); Qwen3NextGatedDeltaNet (L643-685: in_proj_qkvz h -> 2 x 16 x 128 + 2 x 32 x
    128, in_proj_ba h -> 2 x 32, conv1d over q, k, v of kernel 4 without bias, dt_bias and A_log per value head,
    RMSNormGated over one value head of 128, out_proj); Qwen3NextAttention (L229-256: q_proj h -> 16 x 256 x 2 with
    its output gate, k_proj and v_proj h -> 2 x 256, o_proj, q_norm and k_norm of 256); Qwen3NextSparseMoeBlock
    (L936-942: router 512 x h, 512 experts of 512 with gate_up and down, a shared expert of 512, its gate h -> 1);
    two RMSNorms per layer and a final one."""
    h, vocab, layers = 2048, 151936, 48
    key, value, value_heads = 16 * 128, 32 * 128, 32
    gdn = h * (2 * key + 2 * value) + h * 2 * value_heads + (2 * key + value) * 4 + 2 * value_heads + 128
    gdn += value * h
    attention = h * 16 * 256 * 2 + 2 * h * 2 * 256 + 16 * 256 * h + 2 * 256
    expert = 3 * h * 512
    moe_block = 512 * h + 512 * expert + expert + h
    mixers = sum(attention if (i + 1) % 4 == 0 else gdn for i in range(layers))
    total = mixers + layers * (moe_block + 2 * h) + h + 2 * vocab * h
    return total, total - layers * (512 - 10) * expert


def test_qwen3_next_parameter_counts_match_the_published_config() -> None:
    md = ZOO["qwen3-next-80b-a3b"]
    assert (md.params, md.active_params) == _qwen3_next_counts() == (79_674_391_296, 3_874_929_408)
    # "80B-A3B" (Megatron-Bridge 0.3.1 Qwen3NextModelProvider80B_A3B, qwen_provider.py L470): 80B in all, 3B active
    # without the embedding and the LM head
    assert round(md.params / 1e9) == 80
    assert round((md.active_params - md.embedding_params - md.lm_head_params) / 1e9) == 3
    assert hybrid.counts(md.hybrid_pattern) == {"M": 0, "G": 36, "*": 12, "-": 0, "E": 48}


def _chunked_delta_rule_flops(seq_len: int, chunk: int, heads: int, key: int, value: int) -> float:
    """Forward FLOPs of the chunked gated delta rule counted kernel by kernel over the chunks (Yang, Kautz and
    Hatamizadeh 2024, arXiv 2412.06464, section 3.3; fla's chunk_gated_delta_rule_fwd), per value head: beta K K^T
    over the chunk's causal half (C^2 / 2 entries of K multiply-adds), the inverse of the unit lower-triangular
    I + A (C^3 / 6 multiply-adds), W = T K and U = T V over T's causal half, the state passing (U - W S: C x K x V
    multiply-adds; S + K^T V_new: the same), the output Q S (C x K x V) and the masked Q K^T (C^2 / 2 entries of K)
    with its product with the new values (C^2 / 2 entries of V)."""
    half = chunk * chunk / 2
    kkt, inverse = 2 * half * key, 2 * chunk**3 / 6
    wy = 2 * half * key + 2 * half * value
    states = 2 * (2 * chunk * key * value)
    output = 2 * chunk * key * value + 2 * half * key + 2 * half * value
    return seq_len // chunk * heads * (kkt + inverse + wy + states + output)


def test_the_delta_rule_flops_follow_the_chunked_algorithm() -> None:
    md, seq = ZOO["qwen3-next-80b-a3b"], 8192
    expected = _chunked_delta_rule_flops(seq, 64, 32, 128, 128)
    assert md.gdn_flops_per_token(seq) * seq == pytest.approx(expected, rel=1e-12)
    # the workload's op on a TP-2 rank does half of one layer's work for its two sequences; backward 3 passes
    recipe = RECIPES["bf16"]
    sh = Shard(md, recipe, tp=2.0, cp=1.0, mbs=2.0, seq_len=seq)
    rule = next(op for op in deltanet.gdn_block_forward(sh, recipe) if op.name == "delta_rule")
    assert rule.flops == pytest.approx(2 * expected / 2)
    backward = next(op for op in deltanet.gdn_block_backward(sh, recipe) if op.name == "delta_rule.bwd")
    assert backward.flops == pytest.approx(deltanet.DELTA_RULE_BWD_PASSES * rule.flops)
    # linear in the sequence: per token the same at 4k and 64k tokens, unlike attention's
    assert md.gdn_flops_per_token(65536) == md.gdn_flops_per_token(4096)


def test_model_flops_count_gemms_attention_and_the_delta_rule_by_layer_kind() -> None:
    """6 x the GEMM weights a token goes through (in_proj, out_proj, gated QKV, router and shared-expert gate,
    active experts, LM head), 3 x the causal attention of the '*' layers and 3 x the delta rule of the 'G' layers."""
    md, seq = ZOO["qwen3-next-80b-a3b"], 4096
    h = md.hidden
    gdn = h * (2 * 2048 + 2 * 4096 + 64) + 4096 * h
    attention = h * (2 * 4096 + 2 * 512) + 4096 * h
    moe_layer = 512 * h + h + 11 * 3 * h * 512
    matmul = 36 * gdn + 12 * attention + 48 * moe_layer + md.vocab * h
    scores = 12 * 3 * seq * 2 * 4096
    rule = 36 * 3 * md.gdn_flops_per_token(seq)
    assert md.model_flops_per_token(seq) == pytest.approx(6 * matmul + scores + rule)


def _small_gdn(**change: object) -> ModelSpec:
    shapes: dict[str, object] = {
        "layers": 8, "hidden": 1024, "ffn": 4096, "heads": 8, "kv_heads": 2, "head_size": 128, "vocab": 32000,
        "hybrid_pattern": "G-G-G-*-", "gdn_key_heads": 4, "gdn_value_heads": 8, "attention_output_gate": True,
    }  # fmt: skip
    return ModelSpec(**(shapes | change))  # type: ignore[arg-type]


def test_a_gdn_layer_keeps_its_activations_and_the_mean_layer_weighs_them_by_share() -> None:
    md, recipe = _small_gdn(), RECIPES["bf16"]
    h, key, value, heads = 1024, 4 * 128, 8 * 128, 8
    in_width = 2 * key + 2 * value + 2 * heads
    # norm input, in_proj output, L2-normed q and k, their copies per value head, v, the chunk inverse, o, out_proj
    # input (BF16), g (FP32), in_proj's input
    gdn_layer = (h + in_width + 2 * key + 2 * heads * 128 + value + heads * 64 + 2 * value + h) * 2 + heads * 4
    assert deltanet.saved_per_token(md, recipe, "none") == gdn_layer
    assert deltanet.saved_per_token(md, recipe, "full") == h * 2
    attention_layer = (h + 2 * 1024 + 2 * 256 + 1024 + h) * 2  # gated QKV (the gate with it), output, proj input
    mlp_layer = (h + 2 * 4096 + h + 4096) * 2  # SwiGLU: norm input, gate and up, fc1 and fc2 inputs
    mean = (3 * gdn_layer + attention_layer + 4 * mlp_layer) / 8
    sh = Shard(md, recipe, tp=1.0, cp=1.0, mbs=1.0, seq_len=4096)
    held = memory.held(partial(moe.mean_layer_saved, sh, recipe), "none", 10.0)
    assert held == pytest.approx(mean * 4096 * 10 * 1.05)


def test_gated_attention_widens_the_qkv_projection_and_gates_the_output() -> None:
    recipe = RECIPES["bf16"]
    gated, plain = _small_gdn(), _small_gdn(attention_output_gate=False)
    assert gated.qkv_width - plain.qkv_width == gated.q_dim == 1024
    assert gated.attention_params_per_layer - plain.attention_params_per_layer == 1024 * 1024
    sh = Shard(gated, recipe, tp=2.0, cp=1.0, mbs=1.0, seq_len=4096)
    names = [op.name for op in attention_block_forward(sh, recipe)]
    assert names.index("output_gate") < names.index("proj.fprop")
    backward = {op.name: op for op in attention_block_backward(sh, recipe)}
    assert backward["output_gate.bwd"].bytes == 4096 * 1024 / 2 * 5 * 2
    plain_sh = Shard(plain, recipe, tp=2.0, cp=1.0, mbs=1.0, seq_len=4096)
    assert not [op for op in attention_block_forward(plain_sh, recipe) if "gate" in op.name]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"gdn_value_heads": 0}, "gdn_value_heads"),
        ({"gdn_key_heads": 3}, "gdn_key_heads"),
        ({"gdn_key_heads": 0}, "gdn_key_heads"),
        ({"hybrid_pattern": "M-M-M-*-"}, "mamba_heads"),
        ({"hybrid_pattern": "", "layers": 8}, "gdn_value_heads"),
    ],
)
def test_a_gdn_model_the_physics_cannot_price_is_refused_by_field(change: dict[str, object], field: str) -> None:
    with pytest.raises(FieldError) as caught:
        _small_gdn(**change)
    assert caught.value.field == field


def test_a_shared_expert_gate_needs_a_shared_expert() -> None:
    with pytest.raises(FieldError) as caught:
        ModelSpec(**{**ZOO["qwen3-30b-a3b"].__dict__, "shared_expert_gate": True})
    assert caught.value.field == "shared_expert_gate"


def test_layouts_megatron_cannot_run_with_gated_deltanet_are_refused_in_one_line() -> None:
    """megatron-core 0.16.1 transformer_config.py L975-986: TP divides the key and value heads, CP is 1."""
    base = {"model": "qwen3-next-80b-a3b", "gpu": "h100-sxm", "n_gpus": 64, "precision": "bf16", "gbs": 64, "mbs": 1}
    twelve = {"model": {"base": "qwen3-next-80b-a3b", "gdn_key_heads": 12, "gdn_value_heads": 24}, "tp": 8}
    for layout, words in (({"cp": 2}, "context parallelism"), (twelve, "Gated DeltaNet key heads")):
        with pytest.raises(perfmodel.PerfmodelError) as caught:
            perfmodel.predict(**(base | layout))
        message = str(caught.value)
        assert words in message and "transformer_config.py" in message and "\n" not in message


def test_a_gated_deltanet_hybrid_interleaves_as_the_gpt_model_it_is() -> None:
    """Qwen3-Next is a GPT model whose block spec slices its layers by virtual stage (megatron-core 0.19.2
    models/gpt/experimental_attention_variant_module_specs.py L273-323), unlike a Mamba hybrid: VP shrinks the
    bubble, and the compute stays that of the same layers."""
    base = {"model": "qwen3-next-80b-a3b", "gpu": "h100-sxm", "n_gpus": 64, "precision": "bf16", "gbs": 256}
    layout = {"mbs": 1, "tp": 2, "pp": 4, "cp": 1, "ep": 8, "seq_len": 4096}
    plain, interleaved = (perfmodel.predict(**base, **layout, vp=vp).to_dict()["breakdown"] for vp in (1, 2))
    assert interleaved["pp_bubble_s"] < 0.6 * plain["pp_bubble_s"]
    assert interleaved["compute_s"] == pytest.approx(plain["compute_s"], rel=0.03)
    with pytest.raises(perfmodel.PerfmodelError, match="Mamba hybrid without interleaving"):
        perfmodel.predict(**(base | layout | {"model": "nemotron-3-nano-30b-a3b", "tp": 1}), vp=2)


def test_a_bad_gdn_model_file_is_one_line_with_exit_code_2(tmp_path: Path) -> None:
    model = tmp_path / "next.toml"
    model.write_text('base = "qwen3-next-80b-a3b"\ngdn_key_heads = 5\n')
    result = run_cli("predict", "--model", str(model), "--gpu", "h100-sxm", "--gpus", "64")
    assert (result.code, result.out) == (2, "")
    assert result.err.count("\n") == 1 and "gdn_key_heads" in result.err


def test_qwen3_next_on_64_h100_is_searched_to_a_layout_megatron_runs() -> None:
    found = perfmodel.predict(model="qwen3-next-80b-a3b", gpu="h100-sxm", n_gpus=64).to_dict()
    lo = found["parallelism"]
    assert found["fits_in_memory"] and found["layouts_searched"] > 1000
    assert lo["cp"] == 1 and 16 % lo["tp"] == 0
    # 3.9B active of 80B: a step far from the dense peak, as the measured Qwen3-30B-A3B rows (MFU 10-25%)
    assert 0.05 < found["mfu_bf16"] < 0.6


def test_linear_attention_outruns_full_attention_at_long_context() -> None:
    """Replacing the 'G' layers by gated full attention makes a long-context step dearer: the delta rule's work per
    token does not grow with the sequence, attention's does."""
    base = {"gpu": "h100-sxm", "n_gpus": 64, "precision": "bf16", "gbs": 64, "mbs": 1, "tp": 2, "pp": 1, "cp": 1}
    base |= {"ep": 32, "seq_len": 32768, "recompute": "full"}
    linear = perfmodel.predict(model="qwen3-next-80b-a3b", **base).to_dict()
    full_pattern = ZOO["qwen3-next-80b-a3b"].hybrid_pattern.replace("G", "*")
    spec = {"base": "qwen3-next-80b-a3b", "hybrid_pattern": full_pattern, "gdn_key_heads": 0, "gdn_value_heads": 0}
    full = perfmodel.predict(model=spec, **base).to_dict()
    assert full["step_time_s"] > 1.1 * linear["step_time_s"]
