"""Per-layer operations: FLOPs against closed forms, and how TP/CP/recompute/recipes change the work."""

import pytest

from perfmodel.inputs.hardware import get_accelerator
from perfmodel.inputs.models import get_model
from perfmodel.inputs.precision import RECIPES, cp_comm_recipe, frozen_base_recipe, get_recipe
from perfmodel.physics.compute import op_time
from perfmodel.physics.efficiency import DEFAULTS
from perfmodel.physics.workload import (
    Shard,
    attention_backward,
    attention_forward,
    head_forward,
    layer_backward,
    layer_forward,
    padded_vocab,
    recompute_forward,
)

MODEL = get_model("llama3.1-70b")
SEQ = 8192


def _flops(ops, kind):
    return sum(op.flops for op in ops if op.kind == kind)


def _linear_params(m):
    return m.hidden * (2 * m.hidden + 2 * m.kv_dim) + m.hidden * (m.mlp_in_width + m.ffn)


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_gemm_flops_are_6_x_params_x_tokens_split_over_tp(tp: int) -> None:
    sh = Shard(MODEL, RECIPES["bf16"], tp, 1, 1, SEQ)
    gemm = _flops(layer_forward(sh, RECIPES["bf16"]), "gemm") + _flops(layer_backward(sh, RECIPES["bf16"]), "gemm")
    assert gemm == pytest.approx(6 * _linear_params(MODEL) * SEQ / tp, rel=1e-12)


@pytest.mark.parametrize(("tp", "cp"), [(1, 1), (8, 1), (4, 2), (2, 8)])
def test_causal_attention_flops(tp: int, cp: int) -> None:
    # Forward: QK^T and PV, 2 x 2 x s x s x d_model per sequence, halved by the causal mask; backward 2.5x.
    sh = Shard(MODEL, RECIPES["bf16"], tp, cp, 1, SEQ)
    forward = _flops(layer_forward(sh, RECIPES["bf16"]), "attention")
    backward = _flops(layer_backward(sh, RECIPES["bf16"]), "attention")
    assert forward == pytest.approx(4 * SEQ * SEQ * MODEL.hidden / 2 / (tp * cp))
    assert backward == pytest.approx(2.5 * forward)


@pytest.mark.parametrize("cp", [2, 4, 16])
def test_a_ring_splits_its_attention_into_the_diagonal_and_off_diagonal_steps_with_the_same_work(cp: int) -> None:
    """A 'p2p' ring's attention: 1 / cp of the work in the causal diagonal step at seq / cp tokens, the rest in
    non-causal steps priced at seq / (2 cp); FLOPs, exponentials and bytes exactly those of the causal kernel that
    all-gather CP runs. At 32k tokens Hopper's off-diagonal steps run the faster non-causal kernel (at 32k-token
    chunks cuDNN 9.19's two kernels run alike: kernels_attention.csv); Blackwell, without non-causal rows, prices
    the ring as before."""
    p2p, gather = (cp_comm_recipe(RECIPES["bf16"], comm) for comm in ("p2p", "all_gather"))
    for ops in (attention_forward, attention_backward):
        (ring,), (whole,) = ops(Shard(MODEL, p2p, 2, cp, 1, SEQ * 4)), ops(Shard(MODEL, gather, 2, cp, 1, SEQ * 4))
        assert (ring.flops, ring.exps, ring.bytes, ring.m) == (whole.flops, whole.exps, whole.bytes, whole.m)
        assert (ring.diagonal, ring.off_diagonal_m, ring.ring) == (1 / cp, SEQ * 4 / cp / 2, 1.0)
        assert (whole.diagonal, whole.ring) == (1.0, 0.0)
        causal = ring._replace(diagonal=1.0)
        h100, b200 = get_accelerator("h100-sxm"), get_accelerator("b200")
        assert op_time(ring, h100, DEFAULTS["hopper"]) < op_time(causal, h100, DEFAULTS["hopper"])
        assert op_time(ring, b200, DEFAULTS["blackwell"]) == pytest.approx(op_time(causal, b200, DEFAULTS["blackwell"]))
    (single,) = attention_forward(Shard(MODEL, p2p, 2, 1, 1, SEQ))
    assert (single.diagonal, single.ring) == (1.0, 0.0)


def test_frozen_weights_skip_weight_gradients() -> None:
    sh = Shard(MODEL, RECIPES["bf16"], 1, 1, 1, SEQ)
    frozen = _flops(layer_backward(sh, RECIPES["bf16"], frozen_weights=True), "gemm")
    assert frozen == pytest.approx(2 * _linear_params(MODEL) * SEQ)


def test_recompute_adds_forward_work() -> None:
    sh = Shard(MODEL, RECIPES["bf16"], 1, 1, 1, SEQ)
    assert recompute_forward(sh, RECIPES["bf16"], "none") == []
    assert recompute_forward(sh, RECIPES["bf16"], "full") == layer_forward(sh, RECIPES["bf16"])
    selective = {op.name for op in recompute_forward(sh, RECIPES["bf16"], "selective")}
    assert selective == {"norm1", "norm2", "activation"}


def test_quantised_recipes_run_gemms_in_their_format_and_pay_casts() -> None:
    h100, gb300 = get_accelerator("h100-sxm"), get_accelerator("gb300")
    sh = Shard(MODEL, RECIPES["fp8"], 4, 1, 1, SEQ)
    fp8_ops = layer_forward(sh, get_recipe("fp8", h100))
    assert {op.fmt for op in fp8_ops if op.kind == "gemm"} == {"fp8"}
    assert {op.fmt for op in fp8_ops if op.kind == "attention"} == {"bf16"}
    assert any(op.name.endswith(".cast") for op in fp8_ops)
    nvfp4 = get_recipe("nvfp4", gb300)
    bwd = layer_backward(Shard(MODEL, nvfp4, 4, 1, 1, SEQ), nvfp4)
    assert {op.fmt for op in bwd if op.kind == "gemm"} == {"fp4"}


def test_nvfp4_casts_each_wgrad_operand_once_with_the_hadamard_pass_and_writes_two_copies() -> None:
    """Transformer Engine 2.8 (workload._cast): the forward casts a linear layer's input into its row-wise
    and its Hadamard-transformed column-wise copy, and the backward's wgrad reads the saved column-wise copy: per
    input element, three BF16 reads (amax, row-wise cast, transformed column-wise cast) and two NVFP4 copies (0.5625
    B each), nothing in the backward. The output gradient likewise in the backward. A frozen base (LoRA) takes no
    weight gradient: one row-wise copy of each, no transform pass (precision.frozen_base_recipe; linear.py L135/L183,
    L582-587)."""
    nvfp4 = get_recipe("nvfp4", get_accelerator("gb200"))
    sh = Shard(MODEL, nvfp4, 2, 1, 1, SEQ)  # TP 2: the norm-fed casts run on the gathered rows, unfused
    fwd, bwd = layer_forward(sh, nvfp4), layer_backward(sh, nvfp4)
    qkv_cast = next(op for op in fwd if op.name == "qkv.cast")
    assert qkv_cast.bytes == pytest.approx(SEQ * MODEL.hidden * (3 * 2 + 2 * 0.5625), rel=1e-12)
    fc2_grad = next(op for op in bwd if op.name == "fc2.grad_cast")
    assert fc2_grad.bytes == pytest.approx(SEQ * MODEL.hidden * (3 * 2 + 2 * 0.5625), rel=1e-12)
    assert not [op.name for op in bwd if op.kind == "memory" and op.name.split(".")[-1].startswith("input")]
    base = frozen_base_recipe(nvfp4)
    frozen = Shard(MODEL, base, 2, 1, 1, SEQ, lora_rank=16)
    casts = {op.name: op.bytes for op in layer_forward(frozen, base) + layer_backward(frozen, base, True)}
    assert casts["qkv.cast"] == pytest.approx(SEQ * MODEL.hidden * (2 * 2 + 0.5625), rel=1e-12)
    assert casts["fc2.grad_cast"] == pytest.approx(SEQ * MODEL.hidden * (2 * 2 + 0.5625), rel=1e-12)
    assert base.weight_bytes == nvfp4.weight_bytes


def test_lm_head_uses_the_padded_vocabulary() -> None:
    # Megatron pads the vocabulary to a multiple of 128 x tp: 128256 is 1002 x 128, padded to 128512 at tp 8.
    assert padded_vocab(MODEL, 1) == 128256
    assert padded_vocab(MODEL, 8) == 128 * 8 * 126
    head = head_forward(Shard(MODEL, RECIPES["bf16"], 8, 1, 1, SEQ))
    assert _flops(head, "gemm") == pytest.approx(2 * SEQ * MODEL.hidden * 128 * 8 * 126 / 8)


def test_nvfp4_as_run_keeps_no_bf16_layers_and_no_userbuffers_overlap() -> None:
    # Megatron-Bridge perf recipes (llama31.py/llama3.py for gb200/gb300, commit 067f987df) and NVIDIA's MLPerf FP4
    # config: first_last_layers_bf16 = False and tp_comm_overlap = False (stack_notes.md, "NVFP4 as run").
    from dataclasses import replace

    from perfmodel.inputs.scenario import Scenario
    from perfmodel.physics.parallel import Layout
    from perfmodel.physics.schedule import exposed
    from perfmodel.physics.step import evaluate
    from perfmodel.planning.predict import context_for, layout_vars

    nvfp4 = RECIPES["nvfp4"]
    assert nvfp4.bf16_layer_fraction(MODEL.layers) == 0 and not nvfp4.tp_comm_overlap
    assert all(r.tp_comm_overlap for r in RECIPES.values() if r.id != "nvfp4")
    ctx = context_for(Scenario(model="llama3.1-70b", gpu="gb200", n_gpus=64, precision="nvfp4"))
    layout = layout_vars(Layout(4, 4, 1, 4, 5, 1, 1, 256, SEQ, "none", 1))
    trace: dict = {}
    evaluate(ctx, layout, trace)
    comm, windows, layer = trace["tp_comm"], trace["windows"], trace["layer"]
    assert windows.tp_forward == 0  # every forward TP collective is exposed
    assert 0 < windows.tp_backward == min(comm.async_backward, layer.wgrad_gemm) < layer.backward_gemm
    backward = comm.layer - comm.forward
    overlap = ctx.efficiency.overlap_tp
    hidden_async = comm.async_backward - exposed(comm.async_backward, layer.wgrad_gemm, overlap)
    assert exposed(backward, windows.tp_backward, overlap) == pytest.approx(backward - hidden_async)
    with_userbuffers = replace(ctx, recipe=replace(nvfp4, tp_comm_overlap=True))
    assert float(evaluate(with_userbuffers, layout).tp_comm_exposed_s) < float(evaluate(ctx, layout).tp_comm_exposed_s)


@pytest.mark.parametrize(
    ("model_id", "rotated"),
    [("llama3.1-70b", True), ("nemotron-h-8b", False), ("nemotron-3-nano-30b-a3b", False), ("gpt3-175b", False)],
)
def test_rotary_embedding_only_where_attention_rotates_queries_and_keys(model_id: str, rotated: bool) -> None:
    """Nemotron-H's attention has no position embedding (Megatron-Bridge 0.3.1 MambaModelProvider
    position_embedding_type "none", mamba_provider.py L102); GPT-3's positions are learned, added to the embeddings."""
    sh = Shard(get_model(model_id), RECIPES["bf16"], 1, 1, 1, 2048)
    ops = layer_forward(sh, RECIPES["bf16"]) + layer_backward(sh, RECIPES["bf16"])
    assert sorted(op.name for op in ops if op.name.startswith("rope")) == (["rope", "rope.bwd"] if rotated else [])
