"""Memory per GPU: weights, gradients, optimizer state, activations in flight, and the runtime's own share.

Mixed-precision Adam with Megatron's distributed optimizer: weights as the recipe holds them, BF16 main gradients
(Megatron-core's default grad_reduce_in_fp32=False; FP32 where a run sets it: Recipe.grad_buffer_bytes), FP32
master weights and two FP32 moments (12 B/param) sharded over the data-parallel ranks (including CP ranks, which hold
the same weights). ZeRO-2 also shards gradients, ZeRO-3 (FSDP) weights too. Activations follow Korthikanti et al.
2022 with flash attention (no s^2 term) and sequence parallelism, written out tensor by tensor for GQA and SwiGLU. A
frozen base (LoRA) saves less: see `activation_bytes_per_token`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from perfmodel.inputs.lora import ATTENTION_LAYERS
from perfmodel.inputs.models import ModelSpec
from perfmodel.inputs.precision import BF16_BYTES, FP32_BYTES, Recipe
from perfmodel.physics.algebra import Number, maximum, where
from perfmodel.physics.workload import kv_width

OPTIMIZER_BYTES = 3 * FP32_BYTES
RUNTIME_RESERVED_BYTES = 3e9
"""CUDA context, NCCL channel buffers, cuBLAS/Transformer Engine workspaces."""
FRAGMENTATION = 0.05
"""Share of the peak lost to the caching allocator's fragmentation."""


class MemoryBreakdown(NamedTuple):
    weights: Number
    gradients: Number
    optimizer: Number
    activations: Number
    runtime: Number

    @property
    def total(self) -> Number:
        return self.weights + self.gradients + self.optimizer + self.activations + self.runtime


def activation_bytes_per_token(
    model: ModelSpec,
    recipe: Recipe,
    recompute: str,
    frozen_base: bool = False,
    seq_len: int = 0,
    adapters: frozenset[str] = ATTENTION_LAYERS,
    lora_rank: int = 0,
) -> float:
    """Bytes one layer saves for backward per token, before dividing by tp (SP and TP shard all of it). Q and the
    attention output are q_dim wide (heads x head_dim), which need not be the hidden size (Gemma 3 27B: 4,096 against
    5,376), as the MoE block's accounting had them (moe._attention_saved_per_token).

    Attention without flash attention (`recipe.flash_attention` off: releases before it) also keeps its scores:
    Korthikanti et al. 2022's 5 a s / h term, 5 bytes per score (softmax output, dropout mask and output) for each of
    the `seq_len` keys of each head, which selective recompute re-runs instead of keeping (MODELLING.md, Memory).

    A linear layer y = xW saves its input x only for the weight gradient dW = x^T dy; the input gradient
    dx = dy W^T needs W alone. A frozen base (LoRA, Hu et al. 2021, arXiv 2106.09685, section 4.1: W0 gets no
    gradient) therefore saves no quantised GEMM inputs: a layer without an adapter (the MLP's fc1 and fc2 when only
    the attention is adapted, as in the MLPerf llama2_70b_lora benchmark) keeps nothing, and an adapted layer keeps
    its adapter's BF16 input (the norm output for QKV and fc1; flash attention's output, which it saves anyway, for
    the output projection; the activation's output for fc2, which selective recompute re-runs) and the rank-r
    hidden x A that B's weight gradient reads (`adapters`, `lora_rank`). Autograd and Transformer Engine's linear
    layers save the input only when the weight needs a gradient (PyTorch's generated autograd saves an operand only
    if the other one requires grad; TE's Linear/LayerNormLinear `backward_needs_input = weight.requires_grad`;
    recalled from the public code, not a stored copy).
    """
    h, q, f = model.hidden, model.q_dim, model.ffn
    # torchao's rowwise recipe keeps the BF16 input, which the backward casts again along the token axis (precision
    # .rowwise_recipe); the other recipes keep the quantised copy dW reads.
    quantised = recipe.quantised and recipe.fp8_scaling != "rowwise"
    quantised_input = recipe.element_bytes if quantised else BF16_BYTES
    if recompute == "full":
        return h * BF16_BYTES  # only the layer input is kept
    wgrad_input = 0.0 if frozen_base else quantised_input  # the quantised copy only dW reads

    def kept_input(name: str, width: int, base: float) -> float:  # what the layer's dW, or its adapter's dA, reads
        return width * BF16_BYTES if frozen_base and name in adapters else width * base

    saved = {
        "norm1_input": h * BF16_BYTES,
        "qkv_output": model.qkv_width * BF16_BYTES,
        "attention_output": q * BF16_BYTES + (q * wgrad_input if quantised else 0),
        "norm2_input": h * BF16_BYTES,
        "fc1_output": model.mlp_in_width * BF16_BYTES,
        "qk_norm_input": qk_norm_saved_per_token(model),
    }
    if frozen_base and lora_rank:
        saved["lora_hidden"] = len(adapters & ADAPTED_GQA) * lora_rank * BF16_BYTES
    if recompute == "none":  # selective recompute re-runs the norms and the activation function instead
        saved |= {
            "qkv_input": kept_input("qkv", h, quantised_input),
            "fc1_input": kept_input("fc1", h, wgrad_input),
            "fc2_input": kept_input("fc2", f, wgrad_input),
        }
        if not recipe.flash_attention:
            saved["attention_scores"] = UNFUSED_SCORE_BYTES * model.heads * seq_len
    return sum(_block_shape(model, saved).values())


def _block_shape(model: ModelSpec, saved: dict[str, float]) -> dict[str, float]:
    """What a layer saves as its block shape has it: a parallel block's MLP norm reads the input attention's norm
    kept, and with one shared norm the MLP's input is attention's too; norms beyond two (Gemma's post-norms) keep
    their inputs, the blocks' outputs."""
    if model.parallel_block:
        saved = {k: v for k, v in saved.items() if k != "norm2_input" and (model.layer_norms > 1 or k != "fc1_input")}
    extra_norms = max(model.layer_norms - 2, 0)
    return saved | {"post_norm_inputs": extra_norms * model.hidden * BF16_BYTES} if extra_norms else saved


ADAPTED_GQA = frozenset(("qkv", "proj", "fc1", "fc2"))
"""The linear layers of a GQA layer, whose inputs this accounting follows."""
UNFUSED_SCORE_BYTES = 5.0
"""Bytes an attention layer without flash attention keeps per score for its backward: the softmax output (2), the
dropout mask (1) and the dropout output (2) (Korthikanti et al. 2022, arXiv 2205.05198, section 4.1: 5 a s^2 b)."""


def replicated_bytes_per_token(model: ModelSpec, recipe: Recipe, recompute: str) -> float:
    """Of `activation_bytes_per_token`, what TP without sequence parallelism keeps whole on every TP rank: the layer
    input (all a full recompute keeps), the two norms' inputs, and without recompute their outputs too, which feed
    the column-parallel GEMMs (Korthikanti et al. 2022, section 4.2.2: the 10 s b h of 34 that TP alone does not
    shard, less the dropout masks)."""
    if recipe.sequence_parallel:
        return 0.0
    tensors = {"full": 1, "selective": 2, "none": 4}[recompute]
    return tensors * model.hidden * BF16_BYTES


def replicated_kv_bytes_per_token(model: ModelSpec, tp: Number) -> Number:
    """What a layer keeps beyond `activation_bytes_per_token` when TP exceeds the KV heads, before dividing by tp:
    the replicated K and V heads each rank saves for attention's backward (workload.kv_width), and with per-head QK
    norms the replicated K that the key norm keeps as its input (it normalises the split key, whole heads per rank,
    as workload.qk_norms prices its kernel), 0 otherwise."""
    tensors = 3 if model.qk_norm else 2
    return tensors * (kv_width(model, tp) - model.kv_dim) * BF16_BYTES


def qk_norm_saved_per_token(model: ModelSpec) -> float:
    """What the per-head query and key norms (ModelSpec.qk_norm; workload.qk_norms) keep for their backward beside
    the normalised Q and K that attention keeps: their inputs, the projection's Q and K (0 without the norms), K at
    kv_dim as attention's own (the replicated heads where TP exceeds the KV heads: replicated_kv_bytes_per_token)."""
    return (model.q_dim + model.kv_dim) * BF16_BYTES if model.qk_norm else 0.0


def indexer_bytes_per_token(model: ModelSpec) -> float:
    """What a DSA indexer keeps per token for its backward on every TP rank (it runs on all tokens: workload
    .indexer_forward): its queries, its key and its head weights, in BF16 (a fused kernel recomputes the scores)."""
    if not model.index_topk:
        return 0.0
    return (model.index_heads * model.index_head_dim + model.index_head_dim + model.index_heads) * BF16_BYTES


def layer_saved(
    model: ModelSpec,
    recipe: Recipe,
    mode: str,
    tokens: Number,
    tp: Number,
    frozen_base: bool = False,
    seq_len: int = 0,
    adapters: frozenset[str] = ATTENTION_LAYERS,
    lora_rank: int = 0,
) -> Number:
    """What one layer keeps for its backward on one rank, one micro-batch of `tokens` tokens (sequences of
    `seq_len`: the scores attention without flash attention keeps grow with it), under recompute `mode` (`held`'s
    `per_layer`): `activation_bytes_per_token`, the replicated KV heads (tp shares) and the indexer (whole on every
    TP rank) but under a full recompute, and what TP without sequence parallelism keeps whole."""
    kept = activation_bytes_per_token(model, recipe, mode, frozen_base, seq_len, adapters, lora_rank)
    if mode != "full":
        kept = kept + replicated_kv_bytes_per_token(model, tp) + tp * indexer_bytes_per_token(model)
    return (kept + (tp - 1) * replicated_bytes_per_token(model, recipe, mode)) * tokens / tp


def held(per_layer: Callable[[str], Number], recompute: str, layers_in_flight: Number) -> Number:
    """Activations held by one rank: `layers_in_flight` layer-micro-batches, each keeping `per_layer(recompute)`.
    Full recompute also needs one layer's complete activations (`per_layer("none")`) while it recomputes it.

    `per_layer` depends on the rank's shard alone (not on its pipeline stage or micro-batches), so the memory pass
    works each mode out once for both candidate ranks, and once per distinct shard of a search's arrays
    (physics/step.py `_shard_saved`)."""
    kept = per_layer(recompute) * layers_in_flight
    if recompute == "full":
        kept = kept + per_layer("none")
    return kept * (1 + FRAGMENTATION)


def block_recompute(full_share: Number, none: Number, full: Number, full_working: Number) -> Number:
    """Activations held when a full recompute re-runs only a `full_share` of the layers (Megatron's block method: the
    first k of each pipeline chunk's L layers, share k/L), from what the same layers hold without recompute (`none`)
    and with a full recompute of every layer (`full`, which includes `full_working`, the complete activations of the
    one layer being recomputed): k layers at a full recompute's checkpoint, L - k at none, linear in k.

    No working layer is added: the recomputed layers are the chunk's first, so the backward reaches them after it
    has freed the activations of at least one later, non-recomputed layer of the same micro-batch (as large as the
    working layer). Every layer recomputed (share 1) is `full` itself, working layer included."""
    return full_share * (full - full_working) + (1 - full_share) * none


def model_state(
    params: Number, trainable: Number, recipe: Recipe, zero: Number, shards: Number, units: Number
) -> tuple[Number, Number, Number]:
    """(weights, gradients, optimizer) bytes of a rank holding `params` parameters of which `trainable` train
    (fewer with a frozen base), sharded over `shards` ranks by ZeRO stage.

    ZeRO-3 also holds whole the unit it computes, one of its `units` (layers; DeepSpeed's tensors before 0.6.0),
    and the next one's weights, gathered ahead (FSDP2's and Megatron-FSDP's prefetch; the backward gathers again);
    ZeRO-2 and ZeRO-3 hold a unit's gradients whole until they are reduce-scattered. Sharded alone, Llama 3.1 405B's
    layers of 1.6 B parameters at TP 2 left out 9.6 GB, and the search took ZeRO-3 layouts that need more than the
    GPU has."""
    units = maximum(units, 1.0)  # a stage of the embedding alone holds no layer
    unit = 2 * params / units * recipe.param_gather_bytes
    weights = where(zero >= 3, params * recipe.weight_bytes / shards + unit, params * recipe.weight_bytes)
    whole = trainable * recipe.grad_buffer_bytes
    gradients = where(zero >= 2, whole / shards + whole / units, whole)
    optimizer = where(zero >= 1, trainable * OPTIMIZER_BYTES / shards, trainable * OPTIMIZER_BYTES)
    return weights, gradients, optimizer


def logits_bytes(tokens: Number, vocab_per_rank: Number, fused_cross_entropy: bool = False) -> Number:
    """The last stage's logits in BF16 and their FP32 softmax/gradient for one micro-batch; a fused cross entropy
    (Recipe.fused_cross_entropy) keeps the BF16 logits and writes a BF16 gradient beside them, no FP32 copy."""
    return tokens * vocab_per_rank * (BF16_BYTES + (BF16_BYTES if fused_cross_entropy else FP32_BYTES))


def peak(first: MemoryBreakdown, last: MemoryBreakdown) -> MemoryBreakdown:
    """The rank that needs most: the first holds most activations, the last holds the logits."""
    first_is_peak = first.total >= last.total
    return MemoryBreakdown(*(where(first_is_peak, a, b) for a, b in zip(first, last, strict=True)))


def peak_total(first: MemoryBreakdown, last: MemoryBreakdown) -> Number:
    """`peak(first, last).total`, bit for bit (each element sums the same rank's parts in the same order), without
    choosing each part: what the search's memory-first pass needs, at half the array work."""
    first_total, last_total = first.total, last.total
    return where(first_total >= last_total, first_total, last_total)
