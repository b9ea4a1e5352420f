"""Issue 32's architecture features against closed forms: KV heads replicated when TP exceeds them, squared-ReLU and
gated-GELU MLPs, parallel attention + MLP blocks, pre- and post-norms, MoE capacity factors, the zoo models that use
them (exact parameter counts from the cited configs), and the feature combinations that are refused."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import run_cli

from perfmodel.errors import FieldError
from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.models import ZOO, ModelSpec
from perfmodel.inputs.precision import BF16_BYTES, RECIPES
from perfmodel.inputs.record import replaced
from perfmodel.physics import memory, moe
from perfmodel.physics.collectives import all_gather, all_to_all, group_links, reduce_scatter
from perfmodel.physics.efficiency import DEFAULTS
from perfmodel.physics.parallel import Layout, violations
from perfmodel.physics.step import Context, evaluate, kv_regroup
from perfmodel.physics.workload import Shard, attention_forward, kv_width, layer_backward, layer_forward
from perfmodel.planning.predict import layout_vars

BF16 = RECIPES["bf16"]
# StarCoder-style grouped-query attention with fewer KV heads than a TP group: 48 heads of 128, 2 KV heads.
FEW_KV = ModelSpec(id="few-kv", layers=4, hidden=6144, ffn=24576, heads=48, kv_heads=2, vocab=49152, mlp="gelu")


def _ctx(model: ModelSpec) -> Context:
    hw = resolve(None, "dgx-h100")
    return Context(model, hw, BF16, DEFAULTS[hw.accelerator.family], 4096, 0, 1.0)


def _layout(tp: int, recompute: str = "none") -> Layout:
    return Layout(tp=tp, pp=1, cp=1, dp=8 // tp, vp=1, ep=1, mbs=1, gbs=64, seq_len=4096, recompute=recompute, zero=1)


def test_tp_may_be_a_multiple_of_the_kv_heads_but_not_neither() -> None:
    """Megatron-Core 0.16.1 transformer_config.py L936-944: num_query_groups a multiple or a divisor of TP."""
    assert violations(_layout(8), FEW_KV, 8) == []
    odd = replaced(FEW_KV, heads=48, kv_heads=12, head_size=128)
    assert violations(_layout(8), odd, 8) == [
        "TP 8 must divide the 12 KV heads (query groups) or be a multiple of them (Megatron-Core then replicates "
        "each KV head over TP / 12 ranks)"
    ]


def test_a_model_without_mamba_layers_is_not_held_to_their_rules() -> None:
    """The Mamba rules (heads and groups split over TP) concern Mamba layers only: Llama 3.1 8B at TP 16 (a multiple
    of its 8 KV heads) and Llama 2 7B at TP 16 (its 32 heads) are valid, as Megatron-Core runs them."""
    wide = Layout(tp=16, pp=1, cp=1, dp=4, vp=1, ep=1, mbs=1, gbs=64, seq_len=4096, recompute="none", zero=1)
    assert violations(wide, ZOO["llama3.1-8b"], 64) == []
    assert violations(wide, ZOO["llama2-7b"], 64) == []


def test_multi_query_attention_at_tp_4_is_predicted_and_explained(tmp_path: Path) -> None:
    """Issue 32's example, refused before ("TP 4 must divide the 1 KV heads"): one KV head at TP 4 is priced, and
    explain names the regrouping."""
    model = tmp_path / "mqa.toml"
    model.write_text("base = 'llama3.1-8b'\nkv_heads = 1\n", encoding="utf-8")
    flags = ("--model", str(model), "--gpu", "h100-sxm", "--gpus", "8", "--tp", "4", "--pp", "1", "--cp", "1")
    flags += ("--vp", "1", "--mbs", "1", "--gbs", "64", "--recompute", "none", "--zero", "1")
    predicted = run_cli("predict", *flags)
    assert predicted.code == 0 and "Layout: TP4 PP1" in predicted.out
    explained = run_cli("explain", *flags)
    assert explained.code == 0 and "c_TP_kv" in explained.out and "TP 4 exceeds the 1 KV heads" in explained.out


def test_replicated_kv_heads_cost_attention_io_and_memory_not_gemm_flops() -> None:
    """Each TP rank holds one whole K and V head (workload.kv_width): flash attention reads 2 x head_dim of K and V
    per token, not 2 x kv_dim / tp; the QKV GEMM stays split evenly (no weight replicated): 2 T h (q + 2 kv) / tp."""
    T, t, hd = 4096, 8, 128
    sh = Shard(FEW_KV, BF16, t, 1, 1, T)
    assert kv_width(FEW_KV, t) == t * hd and kv_width(FEW_KV, 2) == FEW_KV.kv_dim
    (op,) = attention_forward(sh)
    assert op.bytes == pytest.approx(T * (2 * FEW_KV.q_dim / t + 2 * hd) * BF16_BYTES)
    qkv = next(o for o in layer_forward(sh, BF16) if o.name == "qkv.fprop")
    assert qkv.flops == 2 * T * FEW_KV.hidden * (FEW_KV.q_dim + 2 * FEW_KV.kv_dim) / t
    # memory: the replicated K and V heads each rank keeps beyond its kv_dim / tp share
    extra = memory.replicated_kv_bytes_per_token(FEW_KV, t)
    assert extra == 2 * (t * hd - FEW_KV.kv_dim) * BF16_BYTES
    kept = memory.layer_saved(FEW_KV, BF16, "none", T, t)
    assert kept == pytest.approx((memory.activation_bytes_per_token(FEW_KV, BF16, "none") + extra) * T / t)
    assert memory.replicated_kv_bytes_per_token(FEW_KV, 2) == 0


def test_replicated_kv_heads_add_the_qkv_regroup_to_tp_communication() -> None:
    """The QKV output's all-gather over TP (Megatron-Core attention.py L1398-1416) forward, its reduce-scatter
    backward: exposed in full; none when TP divides the KV heads (Llama 3.1 8B at TP 8 unchanged)."""
    ctx = _ctx(FEW_KV)
    links = group_links(ctx.tiers, ctx.efficiency, 8.0, 1.0)
    T = 4096.0
    gather = all_gather(T * (FEW_KV.q_dim + 2 * FEW_KV.kv_dim) * BF16_BYTES, links)
    assert kv_regroup(FEW_KV, T, 8.0, links) == gather > 0
    assert kv_regroup(ZOO["llama3.1-8b"], T, 8.0, links) == 0
    trace: dict = {}
    evaluate(ctx, layout_vars(_layout(8)), trace)
    assert trace["tp_comm"].exposed_layer == pytest.approx(2 * gather)
    assert trace["tp_comm"].exposed_forward == pytest.approx(gather)
    with_regroup = evaluate(ctx, layout_vars(_layout(8))).tp_comm_exposed_s
    without = evaluate(_ctx(replaced(FEW_KV, kv_heads=8)), layout_vars(_layout(8))).tp_comm_exposed_s
    assert with_regroup > without


def test_squared_relu_is_a_two_matrix_mlp_priced_as_one_fused_elementwise_pass() -> None:
    """Nemotron-4's relu(x)^2 (Megatron-Core activations.py L8-11, jit-fused): fc1 and fc2 of h x ffn each; the
    activation reads fc1's output and writes its own (backward: reads the gradient and the input, writes one)."""
    relu2 = ZOO["nemotron4-15b"]
    assert relu2.mlp_in_width == relu2.ffn and relu2.mlp_params_per_layer == 2 * relu2.hidden * relu2.ffn
    T = 4096
    sh = Shard(relu2, BF16, 1, 1, 1, T)
    act = next(o for o in layer_forward(sh, BF16) if o.name == "activation")
    act_bwd = next(o for o in layer_backward(sh, BF16) if o.name == "activation.bwd")
    assert (act.bytes, act_bwd.bytes) == (T * relu2.ffn * 2 * BF16_BYTES, T * relu2.ffn * 3 * BF16_BYTES)
    # 6 x matmul parameters + causal attention (Megatron-Bridge flop_utils convention), per token
    h, L, s = relu2.hidden, relu2.layers, 4096
    matmul = L * (h * (relu2.q_dim + 2 * relu2.kv_dim) + relu2.q_dim * h + 2 * h * relu2.ffn) + relu2.vocab * h
    assert relu2.model_flops_per_token(s) == 6 * matmul + 3 * L * s * 2 * relu2.q_dim


def test_gated_gelu_has_swiglus_matrices() -> None:
    gemma = ZOO["gemma3-27b"]
    assert gemma.mlp_in_width == 2 * gemma.ffn
    assert gemma.mlp_params_per_layer == replaced(gemma, mlp="swiglu").mlp_params_per_layer


def test_parallel_block_halves_the_tp_collectives_and_its_norm_passes() -> None:
    """Falcon's parallel block: one all-gather in and one reduce-scatter out per layer (forward), not two each;
    the first residual gone, its MLP norm reading the input attention's norm kept."""
    falcon = ZOO["falcon-180b"]
    sequential = replaced(falcon, parallel_block=False)
    assert moe.tp_blocks_per_layer(falcon) == 1 and moe.tp_blocks_per_layer(sequential) == 2
    layout = Layout(tp=8, pp=1, cp=1, dp=1, vp=1, ep=1, mbs=1, gbs=8, seq_len=2048, recompute="none", zero=1)
    traces: list[dict] = [{}, {}]
    for model, trace in zip((falcon, sequential), traces, strict=True):
        evaluate(_ctx(model), layout_vars(layout), trace)
    assert traces[0]["tp_comm"].forward == pytest.approx(traces[1]["tp_comm"].forward / 2)
    assert traces[0]["tp_comm"].layer == pytest.approx(traces[1]["tp_comm"].layer / 2)
    h = falcon.hidden
    saved = [memory.activation_bytes_per_token(m, BF16, "none") for m in (falcon, sequential)]
    assert saved[1] - saved[0] == h * BF16_BYTES  # norm2's input is norm1's
    shared = replaced(falcon, layer_norms=1)
    assert saved[0] - memory.activation_bytes_per_token(shared, BF16, "none") == h * BF16_BYTES  # fc1's input too
    T = 2048
    names = [[o.name for o in layer_forward(Shard(m, BF16, 1, 1, 1, T), BF16)] for m in (falcon, shared)]
    assert "residual1" not in names[0] and "norm2" in names[0] and "norm2" not in names[1]
    norms = next(o for o in layer_forward(Shard(falcon, BF16, 1, 1, 1, T), BF16) if o.name == "block_norms")
    assert norms.bytes == T * h * BF16_BYTES  # the one residual reads one more tensor


def test_post_norms_keep_their_inputs() -> None:
    """Gemma 3's four norms per layer: two more passes forward (three backward), two more hidden-wide tensors kept."""
    gemma = ZOO["gemma3-27b"]
    two = replaced(gemma, layer_norms=2)
    h = gemma.hidden
    assert gemma.params_per_layer - two.params_per_layer == 2 * h
    kept = [memory.activation_bytes_per_token(m, BF16, "selective") for m in (gemma, two)]
    assert kept[0] - kept[1] == 2 * h * BF16_BYTES
    T = 4096
    (norms,) = [o for o in layer_backward(Shard(gemma, BF16, 1, 1, 1, T), BF16) if o.name == "block_norms.bwd"]
    assert norms.bytes == T * h * 2 * 3 * BF16_BYTES


def test_capacity_factor_caps_or_pads_the_expert_load() -> None:
    """Megatron-Bridge training/utils/moe_token_drop.py L25-72 (capacity 1.0, padded, 'alltoall' only): the busiest
    expert rank's copies are capacity_factor x the balanced load when padded, min(imbalance, capacity) otherwise."""
    base = replaced(ZOO["qwen3-30b-a3b"], dispatcher="alltoall")
    T, copies = 4096, 4096 * 8
    for model, imbalance, load in (
        (base, 1.3, 1.3),
        (replaced(base, capacity_factor=1.0), 1.3, 1.0),
        (replaced(base, capacity_factor=1.5), 1.3, 1.3),
        (replaced(base, capacity_factor=1.0, pad_to_capacity=True), 1.0, 1.0),
        (replaced(base, capacity_factor=1.25, pad_to_capacity=True), 1.0, 1.25),
    ):
        sh = Shard(model, BF16, 1, 1, 1, T, imbalance=imbalance)
        assert moe.routed_tokens(sh) == pytest.approx(copies * load)


PADDED = replaced(ZOO["qwen3-30b-a3b"], dispatcher="alltoall", capacity_factor=1.1, pad_to_capacity=True)
"""Qwen3-30B-A3B (128 experts, top-8, hidden 2048, expert width 768 gated) padded to a capacity factor of 1.1."""


def test_capacity_is_megatrons_ceiling_per_sending_rank() -> None:
    """megatron-core 0.16.1 moe_utils.get_capacity: ceil(tokens x top_k / experts x capacity_factor) from each rank's
    router input (4,100 tokens over TP 2: 2,050), and MoEAlltoAllTokenDispatcher.preprocess L494-499: every local
    expert then runs capacity x tp_size x ep_size rows (the dispatcher's expert TP 2 and EP 4)."""
    sh = Shard(PADDED, BF16, 2, 1, 1, 4100, ep=4, etp=2)
    assert moe.capacity(sh) == math.ceil(2050 * 8 / 128 * 1.1) == 141
    assert moe.tokens_per_expert(sh) == 141 * 2 * 4
    assert moe.routed_tokens(sh) == 141 * 2 * 4 * 32  # 32 local experts
    dropping = replaced(PADDED, pad_to_capacity=False)  # not padded: the busiest expert up to the capacity
    assert moe.tokens_per_expert(Shard(dropping, BF16, 2, 1, 1, 4100, 4, 2, imbalance=1.5)) == 141 * 2 * 4
    assert moe.tokens_per_expert(Shard(dropping, BF16, 2, 1, 1, 4100, 4, 2)) == pytest.approx(2050 * 8 / 128 * 8)


def test_padded_experts_run_their_gemms_and_keep_their_inputs_at_the_capacity() -> None:
    """The grouped GEMMs' M, FLOPs and the permuted buffers kept for backward at the padded rows: TP 1, EP 8, 4,096
    tokens, capacity ceil(4096 x 8 / 128 x 1.1) = 282, 16 local experts of 282 x 8 = 2,256 rows each."""
    sh = Shard(PADDED, BF16, 1, 1, 1, 4096, ep=8)
    rows = 282 * 8
    ops = {o.name: o for o in moe.moe_block_forward(sh, BF16)}
    fc1, fc2 = ops["expert_fc1.fprop"], ops["expert_fc2.fprop"]
    assert (fc1.m, fc1.groups) == (rows, 16)
    assert fc1.flops == 2 * 16 * rows * 2048 * 2 * 768
    assert fc2.flops == 2 * 16 * rows * 768 * 2048
    dropless = Shard(replaced(PADDED, capacity_factor=0.0, pad_to_capacity=False), BF16, 1, 1, 1, 4096, ep=8)
    saved = [moe._block_saved(s, BF16, "selective") for s in (sh, dropless)]
    per_row = 2048 * BF16_BYTES + 2 * 768 * BF16_BYTES + 2048 * BF16_BYTES  # input, fc1 output, expert output
    assert saved[0] - saved[1] == pytest.approx(16 * (rows - 4096 * 8 / 16) * per_row)


def test_padded_all_to_all_moves_capacity_times_experts_rows() -> None:
    """The dispatcher's num_out_tokens = capacity x experts rows of the hidden state in BF16 (preprocess L493),
    dispatched and combined, and gathered and scattered over expert TP: capacity 282 at TP 1, EP 8."""
    ctx = _ctx(PADDED)
    ep, etp = group_links(ctx.tiers, ctx.efficiency, 8.0, 1.0), group_links(ctx.tiers, ctx.efficiency, 1.0, 1.0)
    volume = 282 * 128 * 2048 * BF16_BYTES
    forward, _ = moe.expert_comm(Shard(PADDED, BF16, 1, 1, 1, 4096, ep=8), ep, etp, 0.0)
    assert forward == pytest.approx(2 * all_to_all(volume, ep) + all_gather(volume, etp) + reduce_scatter(volume, etp))


@pytest.mark.parametrize("value", ["nan", "-1.0", "inf", "-0.5"])
def test_a_bad_capacity_factor_in_a_model_file_is_a_one_line_error(tmp_path: Path, value: str) -> None:
    model = tmp_path / "dropping.toml"
    model.write_text(f'base = "qwen3-30b-a3b"\ndispatcher = "alltoall"\ncapacity_factor = {value}\n')
    result = run_cli("predict", "--model", str(model), "--gpu", "b200", "--gpus", "8")
    assert result.code == 2 and result.out == ""
    assert result.err.count("\n") == 1 and "capacity_factor" in result.err and str(model) in result.err


def test_zoo_parameter_counts_from_the_cited_configs() -> None:
    """Counts written out from the configs cited at the zoo entries (perfmodel/inputs/models.py)."""
    # Nemotron-4 15B: per layer Q, K, V, O (6144 x 6144, 2 x 6144 x 1024, 6144 x 6144), fc1 and fc2 (6144 x 24576
    # each), two LayerNorms (weight and bias); untied 256000 x 6144 embedding and head; final LayerNorm. The
    # Nemotron-4 15B report (arXiv 2402.16819, section 2; recalled, not a stored copy): "3.2 billion embedding
    # parameters and 12.5 billion non-embedding parameters".
    layer = 2 * 6144 * 6144 + 2 * 6144 * 1024 + 2 * 6144 * 24576 + 4 * 6144
    nemotron = ZOO["nemotron4-15b"]
    assert nemotron.params == 32 * layer + 2 * 256000 * 6144 + 2 * 6144 == 15_628_775_424
    assert round((nemotron.params - 2 * 256000 * 6144) / 1e9, 1) == 12.5  # the embedding's 3.146B: the report's 3.2
    # Nemotron-4 340B: 96 heads of 192, 8 query groups, fc of 73728.
    layer = 2 * 18432 * 18432 + 2 * 18432 * 1536 + 2 * 18432 * 73728 + 4 * 18432
    assert ZOO["nemotron4-340b"].params == 96 * layer + 2 * 256000 * 18432 + 2 * 18432 == 341_029_195_776
    # Falcon-180B: Q and O of 14848 x 14848 (232 heads of 64), K and V of 14848 x 512, fc of 59392, two LayerNorms
    # (ln_attn, ln_mlp), tied 65024-row embedding, final LayerNorm.
    layer = 2 * 14848 * 14848 + 2 * 14848 * 512 + 2 * 14848 * 59392 + 4 * 14848
    assert ZOO["falcon-180b"].params == 80 * layer + 65024 * 14848 + 2 * 14848 == 178_557_088_768
    # Gemma 3 27B's language model: Q and O of 5376 x 4096 (32 heads of 128), K and V of 5376 x 2048, gated GELU of
    # three 5376 x 21504, four RMSNorms and two QK norms of 128, tied 262208-row embedding, final norm.
    layer = 2 * 5376 * 4096 + 2 * 5376 * 2048 + 3 * 5376 * 21504 + 4 * 5376 + 2 * 128
    assert ZOO["gemma3-27b"].params == 62 * layer + 262208 * 5376 + 5376 == 27_009_346_304
    for model_id in ("nemotron4-15b", "nemotron4-340b", "falcon-180b", "gemma3-27b"):
        assert ZOO[model_id].active_params == ZOO[model_id].params  # dense


@pytest.mark.parametrize(
    ("model_id", "tflops_per_gpu", "tokens_per_s_per_gpu"), [("nemotron3-8b", 643, 12507), ("nemotron3-22b", 562, 4312)]
)
def test_nemotron3_shapes_give_the_flops_nemo_published(
    model_id: str, tflops_per_gpu: float, tokens_per_s_per_gpu: float
) -> None:
    """NVIDIA/NeMo docs/source/performance/performance_summary.md (commit 8e3d65dcfe, "24.07 perf numbers"), rows
    Nemotron-8B and Nemotron-22B on 64 H100 (measured_runs.csv rows 281-282): model TFLOP/s over tokens/s, with NeMo's
    full (non-causal) attention term, is the FLOPs a token of the zoo's shapes and a 256,000-token vocabulary."""
    model, seq = ZOO[model_id], 4096
    full_attention = model.model_flops_per_token(seq) + 3 * model.layers * seq * model.attention_widths
    assert full_attention == pytest.approx(tflops_per_gpu * 1e12 / tokens_per_s_per_gpu, rel=0.005)


@pytest.mark.parametrize(
    ("shapes", "field", "allowed"),
    [
        ({"parallel_block": True}, "parallel_block", "dense models only"),
        ({"layer_norms": 4}, "layer_norms", "dense models only"),
        ({"capacity_factor": 1.0}, "capacity_factor", "dispatcher 'alltoall' only"),
        ({"dispatcher": "alltoall", "pad_to_capacity": True}, "pad_to_capacity", "needs capacity_factor > 0"),
    ],
)
def test_moe_feature_combinations_the_physics_does_not_price_are_refused(
    shapes: dict[str, object], field: str, allowed: str
) -> None:
    with pytest.raises(FieldError) as caught:
        replaced(ZOO["qwen3-30b-a3b"], **shapes)
    assert caught.value.field == field and allowed in caught.value.detail


@pytest.mark.parametrize(
    ("shapes", "field"),
    [({"layer_norms": 1}, "layer_norms"), ({"capacity_factor": 1.0}, "capacity_factor")],
)
def test_dense_feature_combinations_are_refused(shapes: dict[str, object], field: str) -> None:
    with pytest.raises(FieldError) as caught:
        replaced(ZOO["llama3.1-8b"], **shapes)
    assert caught.value.field == field


def test_deepseek_v32_counts_the_indexer_of_each_layer() -> None:
    """transformers 5.25 DeepseekV32Config and DeepseekV32Indexer (modeling_deepseek_v32.py L171-174): wq_b
    (1536 x 64 x 128), wk (7168 x 128), weights_proj (7168 x 64) and the key's LayerNorm (128, with bias) on each of
    the 61 layers, over DeepSeek-V3's 671,026,404,352 main parameters (its model card; tests/test_moe_models.py)."""
    indexer = 1536 * 64 * 128 + 7168 * 128 + 7168 * 64 + 2 * 128
    v32, v3 = ZOO["deepseek-v3.2"], ZOO["deepseek-v3"]
    assert v32.main_params == 671_026_404_352 + 61 * indexer == 671_877_929_216
    assert v32.active_params - v3.active_params == 61 * indexer


def test_sparse_attention_flops_against_the_closed_form() -> None:
    """Per token and layer: attention over min(position, k) keys, k - k^2 / 2s on average (s >= k), at MLA's
    2 x (q + v) widths; the indexer's scores over every causal key, 2 x heads x dim x s / 2; three times both for
    forward and backward, and 6 x the indexer's weights (Megatron-Bridge flop_utils' convention for the rest)."""
    v32, v3 = ZOO["deepseek-v3.2"], ZOO["deepseek-v3"]
    s, k = 4096, 2048
    layers = v32.layers + v32.mtp_layers
    keys = k - k * k / (2 * s)
    attention = 3 * layers * (2 * keys * v32.attention_widths + 2 * 64 * 128 * s / 2)
    indexer = (1536 * 64 * 128 + 7168 * 128 + 7168 * 64) * layers
    dense_attention = 3 * layers * s * v3.attention_widths
    expected = v3.model_flops_per_token(s) - dense_attention + 6 * indexer + attention
    assert v32.model_flops_per_token(s) == pytest.approx(expected, rel=1e-12)
    assert v32.sparse_keys(1024) == 1024 / 2  # shorter than k: every causal key


def test_sparse_attention_ops_on_one_rank() -> None:
    """The indexer runs on all T tokens of every TP rank (dsa.py L557-559 gathers its inputs); the attention kernel
    sees sparse_keys keys per query on heads / tp heads."""
    v32 = ZOO["deepseek-v3.2"]
    T, t = 4096, 2
    sh = Shard(v32, BF16, t, 1, 1, T)
    ops = {op.name: op for op in layer_forward(sh, BF16)}
    assert ops["indexer.scores"].flops == 2 * T * (T / 2) * 64 * 128
    assert ops["index_q.fprop"].flops == 2 * T * 1536 * 64 * 128
    assert ops["attention"].flops == pytest.approx(2 * T * v32.sparse_keys(T) * v32.attention_widths / t)
    assert memory.indexer_bytes_per_token(v32) == (64 * 128 + 128 + 64) * BF16_BYTES
    backward = {op.name: op for op in layer_backward(sh, BF16)}
    assert backward["indexer.scores.bwd"].flops == 2 * ops["indexer.scores"].flops
    assert "index_q.dgrad" not in backward  # its inputs are detached


def test_sparse_attention_is_refused_where_it_is_not_priced() -> None:
    v32 = ZOO["deepseek-v3.2"]
    layout = Layout(tp=1, pp=1, cp=2, dp=4, vp=1, ep=8, mbs=1, gbs=64, seq_len=4096, recompute="none", zero=1)
    assert "CP 2 is not priced with sparse attention (the model's index_topk 2048)" in violations(layout, v32, 8)
    for shapes, field in (
        ({"attention": "gqa"}, "index_topk"),
        ({"index_heads": 0}, "index_heads"),
        ({"sliding_window": 128, "sliding_layers": 2}, "index_topk"),
    ):
        with pytest.raises(FieldError) as caught:
            replaced(v32, **shapes)
        assert caught.value.field == field


def test_llama4_counts_from_megatron_bridge_providers() -> None:
    """Megatron-Bridge 0.3.1 Llama4Experts16ModelProvider / Llama4Experts128ModelProvider (llama_provider.py
    L323-383). Per MoE layer: Q and O of 5120 x 5120, K and V of 5120 x 1024, a router of E x 5120, E routed and one
    shared SwiGLU expert of 3 x 5120 x 8192, two RMSNorms; Maverick's other 24 layers a dense SwiGLU of 16384;
    untied 202048-row embedding and head. Meta's model cards give 17B active for both and 400B total for Maverick
    (Scout's 109B total is not reached by its language model's 107.77B: not confirmed from a reachable source)."""
    attention, expert, norms, embeddings = (
        2 * 5120 * 5120 + 2 * 5120 * 1024,
        3 * 5120 * 8192,
        2 * 5120,
        2 * 202048 * 5120,
    )
    scout, maverick = ZOO["llama4-scout"], ZOO["llama4-maverick"]
    assert scout.params == 48 * (attention + 16 * 5120 + 17 * expert + norms) + embeddings + 5120 == 107_769_861_120
    moe_layer = attention + 128 * 5120 + 129 * expert + norms
    dense_layer = attention + 3 * 5120 * 16384 + norms
    assert maverick.params == 24 * (moe_layer + dense_layer) + embeddings + 5120 == 400_711_848_960
    assert (maverick.moe_layers, maverick.dense_layer_count) == (24, 24)
    assert (
        round(maverick.params / 1e9) == 401
        and round(scout.active_params / 1e9) == round(maverick.active_params / 1e9) == 17
    )


def test_interleaved_moe_layers_are_priced_by_their_share() -> None:
    """Maverick's mean layer is half a dense MLP and half a MoE block: its TP blocks per layer (attention, then the
    dense MLP or the shared expert: two either way) and its model FLOPs (6 x the active matmul weights)."""
    maverick = ZOO["llama4-maverick"]
    assert moe.tp_blocks_per_layer(maverick) == 2.0
    attention = 2 * 5120 * 5120 + 2 * 5120 * 1024
    matmul = 24 * (attention + 128 * 5120 + 2 * 3 * 5120 * 8192) + 24 * (attention + 3 * 5120 * 16384)
    s = 8192
    assert maverick.model_flops_per_token(s) == 6 * (matmul + 202048 * 5120) + 3 * 48 * s * maverick.attention_widths
    with pytest.raises(FieldError) as caught:
        replaced(maverick, moe_layer_interval=49)
    assert caught.value.field == "moe_layer_interval"
    with pytest.raises(FieldError) as caught:
        replaced(ZOO["llama3.1-8b"], moe_layer_interval=2)
    assert caught.value.field == "moe_layer_interval"
