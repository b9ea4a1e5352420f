"""Memory per GPU against a case computed by hand, and the directions it must move in."""

from dataclasses import replace

import pytest

from perfmodel.inputs.models import ZOO
from perfmodel.inputs.precision import RECIPES
from perfmodel.inputs.scenario import Scenario
from perfmodel.physics import memory
from perfmodel.physics.compute import Rates, times_by
from perfmodel.physics.parallel import Layout
from perfmodel.physics.step import evaluate
from perfmodel.physics.workload import Shard, head_backward, layer_backward, layer_forward
from perfmodel.planning.predict import context_for, layout_vars


def _memory(layout: Layout, precision: str = "bf16", model: str = "llama3.1-8b", gpu: str = "h100-sxm"):
    scenario = Scenario(model=model, gpu=gpu, n_gpus=layout.n_gpus, precision=precision)
    return evaluate(context_for(scenario), layout_vars(layout)).memory


def _layout(**kw) -> Layout:
    base = dict(tp=1, pp=1, cp=1, dp=8, vp=1, ep=1, mbs=1, gbs=64, seq_len=8192, recompute="full", zero=1)
    return Layout(**(base | kw))


def test_hand_computed_llama3_8b_bf16_full_recompute() -> None:
    h, kv, f, vocab, layers, tokens = 4096, 1024, 14336, 128256, 32, 8192
    params = 8_030_261_248
    mem = _memory(_layout())
    assert mem.weights == params * 2  # BF16 weights
    assert mem.gradients == params * 2  # BF16 main gradients
    assert mem.optimizer == pytest.approx(params * 12 / 8)  # FP32 master + Adam m, v over 8 DP ranks
    kept_inputs = layers * h * 2 * tokens  # full recompute keeps each layer's input
    one_layer = 2 * (6 * h + 2 * kv + 3 * f) * tokens  # the layer being recomputed, all its saved tensors
    logits = tokens * vocab * (2 + 4)  # BF16 logits + FP32 softmax/gradient
    assert mem.activations == pytest.approx((kept_inputs + one_layer) * 1.05 + logits)
    assert mem.runtime == 3e9


def test_korthikanti_per_layer_activations() -> None:
    """Korthikanti et al. 2022 (arXiv 2205.05198) Table 2: a layer keeps 34 s b h bytes with flash attention (no
    5 a s^2 b term) and sequence parallelism; less the two dropout masks (s b h each: these models train without
    dropout) that is 32 h bytes a token, for GPT-3 175B (h 12,288, MHA, FFN 4h, GeLU)."""
    bf16 = RECIPES["bf16"]
    assert memory.activation_bytes_per_token(ZOO["gpt3-175b"], bf16, "none") == 32 * 12288


def test_queries_and_attention_output_are_q_dim_wide() -> None:
    """Gemma 3 27B's queries are 32 heads of 128 (4,096), not its hidden 5,376: QKV output 4,096 + 2 x 2,048, the
    attention output 4,096, the QK norms' inputs 4,096 + 2,048; the norm inputs and outputs are hidden-wide (four
    norms: two post-norm inputs more) and its GeGLU keeps fc1's 2 x 21,504 outputs and fc2's 21,504 input."""
    h, q, kv, f = 5376, 4096, 2048, 21504
    kept = (h + (q + 2 * kv) + q + h + 2 * f) + (q + kv) + (h + h + f) + 2 * h
    assert memory.activation_bytes_per_token(ZOO["gemma3-27b"], RECIPES["bf16"], "none") == 2 * kept


def test_memory_moves_the_right_way() -> None:
    base = _memory(_layout(recompute="none")).total
    assert _memory(_layout(recompute="none", mbs=2)).total > base
    assert _memory(_layout(recompute="selective")).total < base
    assert _memory(_layout(recompute="full")).total < _memory(_layout(recompute="selective")).total
    assert _memory(_layout(recompute="none", zero=0)).total > base
    assert _memory(_layout(recompute="none", zero=3)).total < _memory(_layout(recompute="none", zero=2)).total < base
    assert _memory(_layout(recompute="none", tp=2, dp=4)).total < base


def test_interleaving_holds_more_activations_than_1f1b() -> None:
    one_f_one_b = _memory(_layout(pp=8, dp=1, recompute="none"), model="llama3.1-70b")
    interleaved = _memory(_layout(pp=8, vp=5, dp=1, recompute="none"), model="llama3.1-70b")
    assert interleaved.activations > one_f_one_b.activations


def test_lora_keeps_only_adapter_gradients_and_optimizer_state() -> None:
    # mlperf_benchmarks.md, llama2_70b_lora: frozen base, LoRA r=16 on the attention projections.
    layout = _layout(tp=8, dp=1, gbs=8, recompute="none")
    scenario = Scenario(model="llama2-70b", gpu="h100-sxm", n_gpus=8, precision="fp8", lora_rank=16)
    lora_ctx = context_for(scenario)
    full_ctx = replace(lora_ctx, lora_rank=0)
    lora, full = (evaluate(ctx, layout_vars(layout)) for ctx in (lora_ctx, full_ctx))
    adapters = 80 * 16 * (4 * 8192 + 2 * 1024) / 8  # 80 layers, r (4h + 2 kv) parameters per layer, over TP 8
    assert lora.memory.gradients == pytest.approx(adapters * 2)
    assert lora.memory.optimizer == pytest.approx(adapters * 12)
    assert lora.memory.weights == full.memory.weights  # the same recipe: the frozen base's (test_fp8_copies.py)
    # The compute saved is exactly the weight-gradient GEMMs of every layer and of the LM head, 8 micro-batches, less
    # the transposes of the frozen FP8 weights that dgrad reads on Hopper.
    rates = Rates(full_ctx.hardware.accelerator, full_ctx.efficiency)
    sh = Shard(full_ctx.model, full_ctx.recipe, 8, 1, 1, 8192)
    wgrad = [op for op in layer_backward(sh, full_ctx.recipe) + head_backward(sh) if op.name.endswith("wgrad")]
    head = times_by(wgrad, rates, lm_head=lambda op: op.name.startswith("lm_head"))
    per_microbatch = (head["total"] - head["lm_head"]) * 80 + head["lm_head"]
    transposes = [op for op in layer_backward(sh, full_ctx.recipe, True) if op.name.endswith("weight_transpose")]
    assert len(transposes) == 4  # qkv, proj, fc1, fc2
    per_microbatch -= times_by(transposes, rates)["total"] * 80
    # ... and less the adapters' own GEMMs (two forward, four backward per adapted layer, BF16).
    adapted = sh._replace(lora_rank=16, adapters=lora_ctx.adapters)
    ops = layer_forward(adapted, lora_ctx.recipe) + layer_backward(adapted, lora_ctx.recipe, True)
    adapter_ops = [op for op in ops if ".lora_" in op.name]
    assert len(adapter_ops) == 12  # qkv and proj
    per_microbatch -= times_by(adapter_ops, rates)["total"] * 80
    assert full.compute_s - lora.compute_s == pytest.approx(8 * per_microbatch, rel=1e-9)


def test_zero3_holds_two_gathered_layers_and_one_layers_gradients_beside_its_shards() -> None:
    """FSDP computes one layer gathered whole while the next one's gather is in flight, and holds the layer's whole
    gradients until their reduce-scatter: Llama 3.1 405B's 126 layers at TP 2 on 64 shards, BF16 (2 B weights and
    gradients). ZeRO-2 gathers no weights but holds a layer's gradients whole as ZeRO-3 does; ZeRO-1 neither."""
    recipe, params, layers, shards = RECIPES["bf16"], 405e9 / 2, 126, 64
    weights, gradients, optimizer = memory.model_state(params, params, recipe, 3, shards, layers)
    layer = params / layers
    assert weights == pytest.approx(params * 2 / shards + 2 * layer * 2)
    assert gradients == pytest.approx(params * 2 / shards + layer * 2)
    assert 2 * layer * 2 + layer * 2 > 9.6e9  # what sharding alone left out
    zero2 = memory.model_state(params, params, recipe, 2, shards, layers)
    assert zero2[0] == params * 2 and zero2[1] == pytest.approx(params * 2 / shards + layer * 2)
    assert memory.model_state(params, params, recipe, 1, shards, layers)[1:] == (params * 2, optimizer)
