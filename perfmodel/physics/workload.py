"""The work of one transformer layer on one GPU: every operation with its FLOPs and bytes moved.

Per micro-batch of `mbs` sequences of `seq_len` tokens, on one rank of a TP x CP group with sequence parallelism:
T = mbs * seq_len / cp tokens go through GEMMs sharded t ways, and the norm/residual region holds T / t tokens.
All sizes are plain arithmetic on (tp, cp, mbs), so they evaluate for floats, numpy arrays and sympy symbols alike.
GEMM FLOPs are 2*m*n*k; a linear layer's backward is a dgrad and a wgrad GEMM of the same size.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from perfmodel.inputs.documents import Packing
from perfmodel.inputs.models import ModelSpec
from perfmodel.inputs.precision import BF16_BYTES, FP32_BYTES, RECIPES, Recipe
from perfmodel.physics.algebra import Number, equal, maximum, where

ATTENTION_BWD_FLOP_RATIO = 2.5
"""Flash attention's backward recomputes the scores: 5 matmuls against the forward's 2 (Dao et al. 2022)."""


class Op(NamedTuple):
    name: str
    kind: Literal["gemm", "grouped_gemm", "attention", "memory"]
    flops: Number
    bytes: Number
    fmt: str = "bf16"
    m: Number = 0
    n: Number = 0
    exps: Number = 0
    groups: Number = 1
    """GEMMs of m x n run by one grouped kernel (the local experts of a MoE layer)."""
    amax_bytes: Number = 0
    """Bytes of `bytes` that a cast spends on its separate amax pass (per-tensor current scaling), which delayed
    scaling does not run (Efficiency.delayed_scaling)."""
    eager_bytes: Number = 0
    """Bytes of `bytes` an eager fallback moves beyond the fused kernel's (YaRN's rotary embedding from
    efficiency.EAGER_YARN_ROPE_RELEASE): a release before the fallback does not move them."""
    as_released: bool = False
    """A kernel written as the release that lacked a feature ran it (attention before FlashAttention): already its
    era's passes, so the fused-kernel trend (Efficiency.fusion_gain_per_year) does not add more."""
    ring: Number = 0.0
    """1 for attention run as context-parallel ring steps (CP > 1 with the 'p2p' exchange): the kernel its release
    ran there (efficiency.FLASH_ATTN_2_UNTIL), else 0."""
    diagonal: Number = 1.0
    """Share of an attention's work in causal kernels of length `m`: all of it, or a context-parallel ring's diagonal
    step (1 / cp); the rest, the ring's off-diagonal steps, runs non-causal kernels of `off_diagonal_m` tokens
    (efficiency.NON_CAUSAL_ATTENTION)."""
    off_diagonal_m: Number = 0
    expert_loop: bool = False
    """A grouped GEMM whose experts run one by one in every release (precision.Recipe.expert_loop): it pays the
    per-expert cost (Efficiency.moe_legacy_group_s) whatever the release, not only before the grouped kernel."""
    band: bool = False
    """A sliding window's attention: its keys lie in a band along the diagonal, `m` keys per query, and the kernel
    computes whole tiles of it (compute.attention_core_s)."""
    k: Number = 0
    """A GEMM's reduction depth (C[m, n] = A[m, k] B[k, n]): its depth ramp (compute.gemm_shape_share)."""
    tile_n: int = 0
    """A grouped kernel whose MMA tile is `tile_n` wide in n (cuDNN's fused grouped MLP: moe.FUSED_MLP_TILE_N); 0: the
    best of compute.TILES."""
    calls: Number = 1
    """Kernel calls the operation makes, each paying the fixed cost of a kernel (Efficiency.kernel_overhead_us): one,
    or one per step of a context-parallel ring (physics.ring)."""
    slowdown: float = 1.0
    """A grouped kernel that a release's library ran this many times slower than its price, as measured against the
    fixed kernel at the same shape (moe.DGLU_DBIAS_REGRESSION); 1: as priced."""
    measured_bandwidth: bool = False
    """Moves its bytes no faster than the share of HBM bandwidth that well-written kernels are measured to reach
    (efficiency.KERNEL_MEMORY), whatever the share fitted to training rows: a kernel no fitted row runs (the
    linear-recurrence scans), so the fitted share, which can pass the datasheet where it absorbs what the fitted
    models' pricing misses (Blackwell Ultra's 1.13), says nothing of it beyond its own bound."""


class Shard(NamedTuple):
    """One rank's slice of a micro-batch; MoE layers also see the expert layout (EP, expert TP) and the load
    imbalance (tokens on the busiest expert rank over the mean)."""

    model: ModelSpec
    recipe: Recipe
    tp: Number
    cp: Number
    mbs: Number
    seq_len: Number
    ep: Number = 1.0
    etp: Number = 1.0
    imbalance: float = 1.0
    packing: Packing | None = None
    """Document masking of packed sequences (inputs/documents.py); None: one causal sequence of seq_len tokens."""
    lora_rank: int = 0
    adapters: frozenset[str] = frozenset()
    """The linear layers that carry rank-`lora_rank` LoRA adapters (inputs/lora.py)."""

    @property
    def tokens(self) -> Number:
        return self.mbs * self.seq_len / self.cp

    @property
    def norm_tokens(self) -> Number:
        """Tokens each TP rank's norms and residuals run on: T / tp with sequence parallelism, all T without."""
        return self.tokens / self.tp if self.recipe.sequence_parallel else self.tokens


def _gemm(name: str, m: Number, n: Number, k: Number, fmt: str, in_bytes: float) -> Op:
    return Op(name, "gemm", 2 * m * n * k, (m * k + k * n) * in_bytes + m * n * BF16_BYTES, fmt, m, n, k=k)


def attention_shapes(sh: Shard) -> list[tuple[str, Number, Number, bool]]:
    """(name, k_in, n_out, column_parallel) of the attention's linear layers on one TP rank.

    MLA (Megatron's MultiLatentAttention): the Q and KV down-projections are duplicated on every TP rank (their
    outputs are small), the up-projections column-parallel, the output projection row-parallel.
    """
    md, t = sh.model, sh.tp
    if md.attention == "mla":
        q_up: list[tuple[str, Number, Number, bool]] = (
            [("q_down", md.hidden, md.q_lora_rank, False), ("q_up", md.q_lora_rank, md.q_dim / t, True)]
            if md.q_lora_rank
            else [("q_proj", md.hidden, md.q_dim / t, True)]
        )
        kv_up = md.heads * (md.qk_nope_dim + md.v_head_dim) / t
        return [
            *q_up,
            ("kv_down", md.hidden, md.kv_lora_rank + md.qk_rope_dim, False),
            ("kv_up", md.kv_lora_rank, kv_up, True),
            ("proj", md.heads * md.v_head_dim / t, md.hidden, False),
        ]
    return [("qkv", md.hidden, md.qkv_width / t, True), ("proj", md.q_dim / t, md.hidden, False)]


def kv_width(md: ModelSpec, tp: Number) -> Number:
    """Width of the K (or V) heads across a TP group, each rank's times tp: kv_dim, or tp x head_dim when TP exceeds
    the KV heads, which Megatron-Core then replicates. Megatron-Core 0.16.1 (megatron/core/transformer/attention.py
    L289-300, L1398-1416): the QKV projection stays split evenly over TP (no weight is replicated), its output is
    all-gathered over TP and each rank keeps its group's slice, one whole K and V head (and heads / tp query heads)
    each; the gather's backward is a reduce-scatter (tensor_parallel/mappings.py L380-397). TP must be a multiple
    or a divisor of the KV heads (transformer_config.py L936-944)."""
    if md.attention == "mla":
        return md.kv_dim
    return maximum(md.kv_heads, tp) * md.head_dim


def attention_io_widths(md: ModelSpec, tp: Number) -> tuple[Number, Number, Number, Number]:
    """Widths across a TP group (each rank's times tp) of what attention reads and writes per token: Q, K, V and its
    output. GQA: q_dim, `kv_width` for K and for V, q_dim. MLA attends over the up-projected heads: keys of
    nope + rope per head (q_dim wide), values and output of heads x v_head_dim (DeepSeek-V3: 24,576, 24,576, 16,384
    and 16,384 against its kv_dim of 7,168, which no tensor of the attention has)."""
    if md.attention == "mla":
        values = md.heads * md.v_head_dim
        return md.q_dim, md.q_dim, values, values
    return md.q_dim, kv_width(md, tp), kv_width(md, tp), md.q_dim


def _mlp_shapes(sh: Shard) -> list[tuple[str, Number, Number, bool]]:
    md, t = sh.model, sh.tp
    return [("fc1", md.hidden, md.mlp_in_width / t, True), ("fc2", md.ffn / t, md.hidden, False)]


NORM_FED = frozenset(("qkv", "q_proj", "q_down", "kv_down", "fc1", "in_proj"))
"""Linear layers whose input is a norm's output: Transformer Engine's LayerNormLinear / LayerNormMLP fuse the cast."""
ACTIVATION_FED = frozenset(("fc2",))
"""Linear layers whose input is the MLP activation: TE's activation kernels emit the quantised copies."""


# NVFP4's random Hadamard transform as Transformer Engine runs it (transformer-engine 2.8.0,
# common/recipe/__init__.py NVFP4BlockScaling; pytorch/module/linear.py): only on the column-wise copies the wgrad GEMM
# reads ("RHT is currently only applied to column-wise usage so that it can be used for wgrad GEMM": the input and the
# output gradient, not the weight), and "when Transformer Engine needs both the tensor and its transpose ... both
# versions are computed from the high precision input". The forward casts its input into both copies
# (input_quantizer.set_usage(rowwise=True, columnwise=backward_needs_input), L183), keeps the column-wise one for the
# backward (L385), and the wgrad reads it as saved (L767): the backward does not cast the input again (so in 2.16:
# linear.py L338, L548; recipe L556). TE's B300 layer profile agrees (tests/test_kernels.py): its Fprop autocast spends
# 678 us over the pre-quantised GEMMs, what the inputs cast into both copies with the transform's pass and the weights
# take, not the 25% less of a row-wise cast.


def _cast(name: str, elements: Number, recipe: Recipe, extra_passes: int = 0, fused: Number = 0.0) -> Op:
    """Quantisation of `elements` BF16 values: amax passes, a read, the quantised copies written. Fused into the
    producing kernel (`fused` = 1; stack_notes.md: TE's norm+cast and activation+cast), one read of the BF16 input
    is saved: with block scaling the producer quantises what it holds, with per-tensor current scaling it computes
    the amax on the way. The producer's own BF16 write is kept (a conservative bound). The amax pass is kept apart
    (`amax_bytes`): a release that runs delayed scaling skips it. Each of `extra_passes` reads the BF16 source once
    more and writes nothing more: NVFP4's Hadamard transform (`Recipe.hadamard_wgrad`) casts the column-wise copy,
    one of the `copies`, from the transformed tensor in a pass of its own (the comment above)."""
    per_element = (recipe.amax_passes + 1 + extra_passes) * BF16_BYTES + recipe.copies * recipe.element_bytes
    skippable = recipe.delayed_scaling_capable and not recipe.current_scaling
    amax_bytes = elements * recipe.amax_passes * BF16_BYTES if skippable else 0.0
    return Op(name, "memory", 0, elements * (per_element - fused * BF16_BYTES), amax_bytes=amax_bytes)


ROWWISE_RESCALE_BYTES = 2 * BF16_BYTES
"""Bytes per output element of the pass that applies rowwise scales to a backward GEMM's BF16 output (a read and a
write): torchao 0.11.0 runs the dgrad and wgrad GEMMs without fast accumulation (Float8LinearConfig
gemm_config_grad_input / gemm_config_grad_weight: use_fast_accum False), and then, since 'the rowwise CUTLASS-based
kernel is so slow without fast-accum', calls the tensorwise cuBLAS kernel with unit scales and multiplies the output
by the outer product of the two operands' inverse scales afterwards (float8_ops.py addmm_float8_unwrapped, 'hoping
Inductor will be able to fuse it': one pointwise kernel under torch.compile)."""


def _rowwise_forward(name: str, k: Number, n: Number, recipe: Recipe) -> list[Op]:
    """torchao's rowwise recipe casts the BF16 weight per GEMM, each micro-batch: no float8 weight comes from FSDP2's
    all-gather (precision.rowwise_recipe)."""
    return [_cast(f"{name}.weight_cast", k * n, recipe)] if recipe.fp8_scaling == "rowwise" else []


def _rowwise_backward(
    name: str, k: Number, n: Number, rows: Number, recipe: Recipe, frozen: bool, rescale_dgrad: bool = True
) -> list[Op]:
    """What torchao's rowwise recipe adds to a linear layer's backward (torchao 0.11.0 float8_linear.py,
    matmul_with_hp_or_float8_args.backward): the weight cast again along its other axis for dgrad; for wgrad the
    output gradient cast again along the token axis and the saved BF16 input likewise (a cast along the row axis
    cannot serve a GEMM that reduces over the rows); each backward GEMM's output rescaled (ROWWISE_RESCALE_BYTES;
    the dgrad's inside the sum of separate layers' input gradients, `rescale_dgrad` False: `_dgrad_sum`).
    Tensorwise casts each tensor once into both layouts (`Recipe.copies` 2) and rescales in the GEMM."""
    if recipe.fp8_scaling != "rowwise":
        return []
    ops = [_cast(f"{name}.weight_recast", k * n, recipe)]
    if rescale_dgrad:
        ops.append(_mem(f"{name}.dgrad_rescale", rows * k, ROWWISE_RESCALE_BYTES))
    if frozen:
        return ops
    return [
        *ops,
        _cast(f"{name}.grad_recast", rows * n, recipe),
        _cast(f"{name}.input_recast", rows * k, recipe),
        _mem(f"{name}.wgrad_rescale", k * n, ROWWISE_RESCALE_BYTES),
    ]


def _mem(name: str, elements: Number, bytes_per_element: float) -> Op:
    return Op(name, "memory", 0, elements * bytes_per_element)


def _era_mem(name: str, elements: Number, bytes_per_element: float) -> Op:
    """A memory-bound kernel of a release that lacked a feature, priced as that release ran it (Op.as_released)."""
    return Op(name, "memory", 0, elements * bytes_per_element, as_released=True)


def separate_widths(sh: Shard, recipe: Recipe, name: str, n: Number) -> tuple[Number, ...]:
    """The output widths of the linear layers that run one of the model's projections on this rank: the one fused
    layer where the stack fuses them (Megatron-Core's linear_qkv and linear_fc1); torchtitan's Llama runs wq, wk, wv
    and w1, w3 as separate nn.Linear modules (torchtitan/models/llama3/model/model.py, Attention and FeedForward;
    torchtitan 0.1.0 sdist), so each GEMM reads the input again, small K and V projections run memory-bound, and
    the backward sums their input gradients (`_dgrad_sum`); precision.Recipe.separate_projections."""
    md = sh.model
    if not recipe.separate_projections:
        return (n,)
    if name == "qkv" and md.attention != "mla" and not md.attention_output_gate:
        queries = md.q_dim / sh.tp
        return (queries, (n - queries) / 2, (n - queries) / 2)
    if name == "fc1" and md.gated_mlp:
        return (n / 2, n / 2)
    return (n,)


def _dgrad_sum(name: str, parts: int, rows: Number, k: Number) -> list[Op]:
    """Autograd's sum of the input gradients of separate linear layers that read one input (`separate_widths`): one
    kernel reads each GEMM's BF16 output and writes their sum (the GEMMs are library calls: Inductor fuses the adds,
    and rowwise FP8's rescales of them, into one pointwise kernel, not into the GEMMs)."""
    return [_mem(f"{name}.dgrad_sum", rows * k, (parts + 1) * BF16_BYTES)] if parts > 1 else []


def _linear_forward(sh: Shard, recipe: Recipe, name: str, k: Number, n: Number, column: bool) -> list[Op]:
    """Cast of the input (quantised recipes) and the forward GEMM of one linear layer."""
    ops = []
    if recipe.quantised:
        # A column-parallel layer's input is cast before the sequence-parallel all-gather when the gather is
        # quantised (T/t rows per rank), after it otherwise (all T rows on every rank).
        gathered_quantised = recipe.tp_gather_bytes < BF16_BYTES
        rows = sh.tokens / sh.tp if (column and gathered_quantised) else sh.tokens
        # The norm runs on this rank's T/t sequence-parallel rows: it can fuse the cast only of those rows.
        fused = 0.0
        if name in ACTIVATION_FED:
            fused = 1.0
        elif name in NORM_FED and recipe.norm_cast_fused:
            fused = 1.0 if column and gathered_quantised else where(equal(sh.tp, 1), 1.0, 0.0)
        hadamard = int(recipe.hadamard_wgrad)  # on the column-wise copy the wgrad reads (the comment above _cast)
        ops.append(_cast(f"{name}.cast", rows * k, recipe, extra_passes=hadamard, fused=fused))
        ops += _rowwise_forward(name, k, n, recipe)
    fmt, in_bytes = recipe.gemm_format, recipe.element_bytes
    ops += [
        _gemm(f"{name}.fprop", sh.tokens, width, k, fmt, in_bytes) for width in separate_widths(sh, recipe, name, n)
    ]
    if name in sh.adapters:
        ops += _adapter_forward(sh, name, k, n)
    return ops


def _adapter_forward(sh: Shard, name: str, k: Number, n: Number) -> list[Op]:
    """A LoRA adapter beside a frozen linear layer, in BF16 (Hu et al. 2021, arXiv 2106.09685): the input down to
    rank r (A), back up to the layer's output (B), sharded as the layer it adapts (k and n as this rank holds
    them). A fused adapter (Recipe.fused_lora) is not priced apart: its FLOPs, r (k + n) / (k n) of the layer's
    (0.35% for Llama 2 70B's QKV at rank 16), ride in the layer's kernels, which move its input and output anyway."""
    if sh.recipe.fused_lora:
        return []
    r = sh.lora_rank
    return [
        _gemm(f"{name}.lora_a.fprop", sh.tokens, r, k, "bf16", BF16_BYTES),
        _gemm(f"{name}.lora_b.fprop", sh.tokens, n, r, "bf16", BF16_BYTES),
    ]


def _adapter_backward(sh: Shard, name: str, k: Number, n: Number, rows: Number) -> list[Op]:
    """The adapter's backward: the gradient through B to the rank-r hidden, B's weight gradient, A's, and the
    gradient through A added to the input's (the frozen base's dgrad is needed all the same); none apart when
    fused."""
    if sh.recipe.fused_lora:
        return []
    r = sh.lora_rank
    return [
        _gemm(f"{name}.lora_b.dgrad", rows, r, n, "bf16", BF16_BYTES),
        _gemm(f"{name}.lora_b.wgrad", r, n, rows, "bf16", BF16_BYTES),
        _gemm(f"{name}.lora_a.dgrad", rows, k, r, "bf16", BF16_BYTES),
        _gemm(f"{name}.lora_a.wgrad", k, r, rows, "bf16", BF16_BYTES),
    ]


YARN_ROPE_PASSES = (12, 10)
"""Passes over Q and K of Megatron-Core's eager rotary embedding (_apply_rotary_pos_emb_bshd, core_v0.18.0 L92-126),
forward and backward: t x cos, a negation and a torch.cat for rotate-half, x sin, an add, the final torch.cat, and
their gradients, each a read or a write of the tensor, against the fused kernel's read and write
(../shared/data/gpt_oss_blackwell_notes.md 2.4: a reading of eager PyTorch autograd, +-30% by its own account)."""


EAGER_ROPE_BYTES = 20.0
"""Bytes per element of Q and K that torchtitan's rotary embedding moves in eager PyTorch, forward and backward
alike (apply_rotary_emb: a BF16 -> FP32 copy, the complex multiply by freqs_cis in FP32 and the FP32 -> BF16 copy,
each a read and a write: 2 + 4, 4 + 4, 4 + 2; recalled from the public code, not a stored copy), against the fused
kernel's 4 (torch.compile fuses the three into one read and one write)."""
EAGER_SWIGLU_BYTES = (10.0, 18.0)
"""Bytes per output element of eager PyTorch's SwiGLU, silu(fc1_gate) * fc1_up, forward and backward: silu reads and
writes (4), the product reads two and writes one (6); backward, the product's two gradients (6 each, the silu output
saved) and silu's (reading the gradient and its input, writing one: 6), against the fused kernel's 6 and 10
(`activation_bytes`)."""


def _rope(sh: Shard, backward: bool) -> list[Op]:
    """Rotary embedding of Q and K: TE's fused kernel reads and writes them once; a YaRN model with an attention
    scaling other than 1 runs Megatron-Core's eager path from efficiency.EAGER_YARN_ROPE_RELEASE (`Op.eager_bytes`);
    torchtitan without torch.compile its eager FP32 complex multiply (EAGER_ROPE_BYTES). None where attention has no
    rotary embedding (learned positions, added once to the embeddings; ModelSpec.rotary False)."""
    if sh.model.learned_positions or not sh.model.rotary:
        return []
    elements = _rope_elements(sh)
    fused = elements * 2 * BF16_BYTES
    eager = elements * (YARN_ROPE_PASSES[backward] - 2) * BF16_BYTES if sh.model.yarn_mscale != 1 else 0.0
    uncompiled = elements * (EAGER_ROPE_BYTES - 2 * BF16_BYTES) if sh.recipe.eager_elementwise else 0.0
    return [Op("rope.bwd" if backward else "rope", "memory", 0, fused + eager + uncompiled, eager_bytes=eager)]


def _rope_elements(sh: Shard) -> Number:
    """Elements rotary embedding touches: Q and K (GQA), the rope part of each query head and the shared rope key
    (MLA). A partial rotary embedding (Megatron's rotary_percent: Qwen3-Next 0.25, Nemotron-4 0.5) moves the same
    bytes: TE's fused kernel reads every head's full width and writes a full-width output, rotating only the first d2
    elements (transformer_engine_torch 2.8.0 sdist, common/include/transformer_engine/fused_rope.h,
    nvte_fused_rope_forward: input and output of width d, freqs of width d2)."""
    md = sh.model
    if md.attention == "mla":
        return sh.tokens * (md.heads * md.qk_rope_dim / sh.tp + md.qk_rope_dim)
    return sh.tokens * (md.q_dim + kv_width(md, sh.tp)) / sh.tp


def _causal_keys(sh: Shard) -> Number:
    """Keys a query sees on average under the causal (and any document) mask."""
    return sh.seq_len / 2 if sh.packing is None else sh.packing.keys


def _sparse_keys(sh: Shard) -> Number:
    """Keys a DSA query attends on average (ModelSpec.sparse_keys), no more than its document holds."""
    keys = sh.model.sparse_keys(sh.seq_len)
    return keys if sh.packing is None else min(keys, sh.packing.keys)


def indexer_forward(sh: Shard) -> list[Op]:
    """DeepSeek Sparse Attention's lightning indexer on one rank (none without it). Megatron-Core gathers its inputs
    from the sequence-parallel region (megatron-core 0.16.1 transformer/experimental_attention_variant/dsa.py
    L557-559), so every TP rank runs it on all T tokens: its three projections, its scores (index_heads queries of
    index_head_dim per token against the one key head of every causal key, ReLU'd and summed over the heads by the
    weights), the top-k over the FP32 logits (written, then read), and the KL loss's target, the main attention's
    scores over the picked keys (dsa.py L796-820; detached, forward only).

    Priced as fused kernels (DeepSeek's fp8_index and sparse FlashMLA), not as Megatron-Core 0.16.1's experimental
    reference, which materialises every head's s x s scores in FP32 (dsa.py L474-516, L638-688): a Megatron-Core
    run of that release is slower than this."""
    md, T = sh.model, sh.tokens
    if not md.index_topk:
        return []
    causal, heads_d = _causal_keys(sh), md.index_heads * md.index_head_dim
    ops = [_gemm(f"{name}.fprop", T, n, k, "bf16", BF16_BYTES) for name, (k, n) in md.indexer_linear_shapes.items()]
    scores_io = (T * heads_d + T * md.index_head_dim) * BF16_BYTES + T * sh.seq_len * FP32_BYTES
    kl_rows, qk = T * md.heads / sh.tp, md.qk_nope_dim + md.qk_rope_dim
    return [
        *ops,
        Op("indexer.scores", "gemm", 2 * T * causal * heads_d, scores_io, m=T * md.index_heads, n=causal,
           k=md.index_head_dim),
        _mem("indexer.topk", T * sh.seq_len, FP32_BYTES),
        Op("indexer.kl", "gemm", 2 * kl_rows * _sparse_keys(sh) * qk, kl_rows * (qk + _sparse_keys(sh)) * BF16_BYTES,
           m=kl_rows, n=_sparse_keys(sh), k=qk),
    ]  # fmt: skip


def indexer_backward(sh: Shard) -> list[Op]:
    """The indexer's backward, from the KL loss alone (its inputs are detached: dsa.py L762-763): the scores' two
    gradients (queries and keys), then its projections' weight gradients; no input gradient reaches the layer."""
    md, T = sh.model, sh.tokens
    if not md.index_topk:
        return []
    scores = next(op for op in indexer_forward(sh) if op.name == "indexer.scores")
    wgrads = [_gemm(f"{name}.wgrad", k, n, T, "bf16", BF16_BYTES) for name, (k, n) in md.indexer_linear_shapes.items()]
    return [scores._replace(name="indexer.scores.bwd", flops=2 * scores.flops, bytes=2 * scores.bytes), *wgrads]


def attention_block_forward(sh: Shard, recipe: Recipe) -> list[Op]:
    """Norm, projections, rotary embedding, any DSA indexer, attention and residual of one layer."""
    T, h = sh.tokens, sh.model.hidden
    *projections, proj = (_linear_forward(sh, recipe, *shape) for shape in attention_shapes(sh))
    latent = sh.model.q_lora_rank + sh.model.kv_lora_rank
    latent_norms = [_mem("latent_norms", T * latent, 2 * BF16_BYTES)] if sh.model.attention == "mla" else []
    return [
        _mem("norm1", sh.norm_tokens * h, 2 * BF16_BYTES),
        *(op for ops in projections for op in ops),
        *latent_norms,
        *qk_norms(sh, backward=False),
        *_rope(sh, backward=False),
        *indexer_forward(sh),
        *attention_forward(sh),
        *_output_gate(sh, backward=False),
        *proj,
        _mem("residual1", sh.norm_tokens * h, 3 * BF16_BYTES),
    ]


def qk_norms(sh: Shard, backward: bool) -> list[Op]:
    """The RMSNorms on each query and key head (ModelSpec.qk_norm: Qwen3, Gemma 3; none without): two kernels of
    their own between the QKV projection and the rotary embedding (Megatron-Core SelfAttention
    get_query_key_value_tensors applies q_layernorm and k_layernorm, TENorm modules, to the split query and key;
    recalled from the public code, not a stored copy), each reading its tensor and writing it normalised (backward:
    reading it and the incoming gradient, writing the gradient), over this rank's query heads and KV heads."""
    if not sh.model.qk_norm:
        return []
    md, suffix = sh.model, ".bwd" if backward else ""
    passes = (3 if backward else 2) * BF16_BYTES
    return [
        _mem(f"q_norm{suffix}", sh.tokens * md.q_dim / sh.tp, passes),
        _mem(f"k_norm{suffix}", sh.tokens * kv_width(md, sh.tp) / sh.tp, passes),
    ]


def _output_gate(sh: Shard, backward: bool) -> list[Op]:
    """Gated attention's output x sigmoid(gate) (attention_output_gate; none without it): reads the output and the
    gate, writes one (backward: reads them and the gradient, writes two)."""
    if not sh.model.attention_output_gate:
        return []
    name, accesses = ("output_gate.bwd", 5) if backward else ("output_gate", 3)
    return [_mem(name, sh.tokens * sh.model.q_dim / sh.tp, accesses * BF16_BYTES)]


def activation_bytes(md: ModelSpec, backward: bool, eager: bool = False) -> float:
    """BF16 bytes an MLP activation moves per output element: SwiGLU reads its two inputs and writes one (backward:
    reads them and the incoming gradient, writes two gradients), or, as `eager` PyTorch runs it, EAGER_SWIGLU_BYTES;
    a plain activation reads one, writes one (backward: three)."""
    if md.gated_mlp:
        return EAGER_SWIGLU_BYTES[backward] if eager else (5 if backward else 3) * BF16_BYTES
    return (3 if backward else 2) * BF16_BYTES


def mlp_block_forward(sh: Shard, recipe: Recipe) -> list[Op]:
    """Norm, dense MLP and residual of one layer."""
    md, t, T = sh.model, sh.tp, sh.tokens
    h = md.hidden
    fc1, fc2 = (_linear_forward(sh, recipe, *shape) for shape in _mlp_shapes(sh))
    act_bytes = activation_bytes(md, False, sh.recipe.eager_elementwise)
    return [
        _mem("norm2", sh.norm_tokens * h, 2 * BF16_BYTES),
        *fc1,
        _mem("activation", T * md.ffn / t, act_bytes),
        *fc2,
        _mem("residual2", sh.norm_tokens * h, 3 * BF16_BYTES),
    ]


def layer_forward(sh: Shard, recipe: Recipe) -> list[Op]:
    return _block_norms(sh, attention_block_forward(sh, recipe) + mlp_block_forward(sh, recipe), backward=False)


def _block_norms(sh: Shard, ops: list[Op], backward: bool) -> list[Op]:
    """A dense layer's norms and residuals as its block shape has them (the usual two pre-norm blocks unchanged).

    A parallel block (`ModelSpec.parallel_block`) adds attention's and the MLP's outputs to the input in one
    residual: no separate first residual, the one left reads one more tensor; with one shared norm
    (`layer_norms` 1) no second norm either. Norms beyond two (Gemma's post-norms on each block's output) are
    passes of their own over the block outputs."""
    md, suffix = sh.model, ".bwd" if backward else ""
    if not md.parallel_block and md.layer_norms == 2:
        return ops
    dropped = {"residual1" if md.parallel_block else "", "norm2" if md.layer_norms == 1 else ""}
    kept = [op for op in ops if op.name.removesuffix(".bwd") not in dropped]
    passes = (3 if backward else 2) * max(md.layer_norms - 2, 0) + (1 if md.parallel_block else 0)
    return [*kept, _mem(f"block_norms{suffix}", sh.norm_tokens * md.hidden, passes * BF16_BYTES)]


def linear_backward(
    sh: Shard, recipe: Recipe, shape: tuple[str, Number, Number, bool], frozen_weights: bool, rows: Number
) -> list[Op]:
    """Casts, dgrad and wgrad GEMMs of one linear layer over `rows` tokens."""
    name, k, n, column = shape
    fmt, in_bytes = recipe.gemm_format, recipe.element_bytes
    ops = []
    if recipe.quantised:
        # A row-parallel layer's output gradient is cast before the all-gather when the gather is quantised (T/t
        # rows per rank), after it otherwise; the wgrad transposes the gathered FP8 operand of all T rows
        # (precision.float8_tp_recipe): the input of a column-parallel layer, the gradient of a row-parallel one.
        gathered_quantised = recipe.tp_grad_gather_bytes < BF16_BYTES
        cast_rows = rows / sh.tp if gathered_quantised and not column else rows
        ops.append(_cast(f"{name}.grad_cast", cast_rows * n, recipe, extra_passes=int(recipe.hadamard_wgrad)))
        if gathered_quantised and not frozen_weights:
            operand, width = ("input", k) if column else ("grad", n)
            transposed = where(equal(sh.tp, 1), 0.0, 2 * recipe.element_bytes)
            ops.append(_mem(f"{name}.{operand}_transpose", rows * width, transposed))
    if frozen_weights and recipe.weight_transposed_in_backward:  # precision.frozen_base_recipe: read and write k x n
        ops.append(_mem(f"{name}.weight_transpose", k * n, 2 * in_bytes))
    widths = separate_widths(sh, recipe, name, n)
    if recipe.quantised:
        ops += _rowwise_backward(name, k, n, rows, recipe, frozen_weights, rescale_dgrad=len(widths) == 1)
    ops += [_gemm(f"{name}.dgrad", rows, k, width, fmt, in_bytes) for width in widths]
    ops += _dgrad_sum(name, len(widths), rows, k)
    if not frozen_weights:
        ops += [_gemm(f"{name}.wgrad", k, width, rows, fmt, in_bytes) for width in widths]
    if name in sh.adapters:
        ops += _adapter_backward(sh, name, k, n, rows)
    return ops


def mlp_block_backward(sh: Shard, recipe: Recipe, frozen_weights: bool = False) -> list[Op]:
    md, t, T = sh.model, sh.tp, sh.tokens
    h = md.hidden
    fc1, fc2 = _mlp_shapes(sh)
    act_bytes = activation_bytes(md, True, sh.recipe.eager_elementwise)
    return [
        _mem("residual2.bwd", sh.norm_tokens * h, 3 * BF16_BYTES),
        *linear_backward(sh, recipe, fc2, frozen_weights, T),
        _mem("activation.bwd", T * md.ffn / t, act_bytes),
        *linear_backward(sh, recipe, fc1, frozen_weights, T),
        _mem("norm2.bwd", sh.norm_tokens * h, 3 * BF16_BYTES),
        _mem("residual1.bwd", sh.norm_tokens * h, 3 * BF16_BYTES),
    ]


def attention_block_backward(sh: Shard, recipe: Recipe, frozen_weights: bool = False) -> list[Op]:
    T, h = sh.tokens, sh.model.hidden
    proj, *projections = reversed(attention_shapes(sh))
    ops = [*linear_backward(sh, recipe, proj, frozen_weights, T), *_output_gate(sh, backward=True)]
    ops += [*attention_backward(sh), *indexer_backward(sh)]
    for shape in projections:
        ops += linear_backward(sh, recipe, shape, frozen_weights, T)
    if sh.model.attention == "mla":
        ops.append(_mem("latent_norms.bwd", T * (sh.model.q_lora_rank + sh.model.kv_lora_rank), 3 * BF16_BYTES))
    ops += [*_rope(sh, backward=True), *qk_norms(sh, backward=True)]
    return [*ops, _mem("norm1.bwd", sh.norm_tokens * h, 3 * BF16_BYTES)]


def layer_backward(sh: Shard, recipe: Recipe, frozen_weights: bool = False) -> list[Op]:
    """Backward of one layer; `frozen_weights` (LoRA fine-tuning) skips the weight-gradient GEMMs."""
    ops = mlp_block_backward(sh, recipe, frozen_weights) + attention_block_backward(sh, recipe, frozen_weights)
    return _block_norms(sh, ops, backward=True)


def _attention_op(
    sh: Shard, name: str, keys: Number, layer_share: float, length: Number, steps: bool = False, band: bool = False
) -> Op:
    """Flash attention over `layer_share` of the layers, each query against `keys` keys on average.

    `steps` (not a sliding window's kernel): as a 'p2p' ring runs it (TransformerEngine's attn_forward_func_with_cp),
    each sequence in 2 x cp chunks, rank r holding chunks r and 2cp-1-r. Step 0, the causal block of its own two
    chunks (kernel length `length`), is 1 / cp of its work; steps 1 to cp-1 meet keys wholly below the diagonal:
    non-causal kernels of equal work, both local query chunks against one chunk of keys or the later query chunk
    against both. The exchange lock-steps the ranks, and in every step some rank runs the first kind, each query
    against length / 2 keys: the length the off-diagonal kernels are priced at, the slower of the two (per-tile work
    amortised over fewer keys)."""
    md, t, T = sh.model, sh.tp, sh.tokens
    flops = 2 * T * keys * md.attention_widths / t * layer_share
    io = T * sum(attention_io_widths(md, t)) / t * BF16_BYTES * layer_share
    fmt, exps = sh.recipe.attention_format, T * keys * md.heads / t * layer_share
    if sh.recipe.cp_comm != "p2p":
        return Op(name, "attention", flops, io, fmt, m=length, exps=exps, band=band)
    ring = where(sh.cp > 1, 1.0, 0.0)
    if not steps:
        return Op(name, "attention", flops, io, fmt, m=length, exps=exps, ring=ring, band=band)
    return Op(name, "attention", flops, io, fmt, m=length, exps=exps, ring=ring, diagonal=1 / sh.cp,
              off_diagonal_m=length / 2, calls=sh.cp)  # fmt: skip


def attention_forward(sh: Shard, band_masked: bool = False) -> list[Op]:
    """Causal flash attention on one rank: T queries against on average seq_len/2 keys, heads/t heads; with packed
    documents (`sh.packing`, document masking) against the keys of their own document.

    `m` carries the sequence length one kernel call sees: the whole sequence (or the typical document, `length`),
    or with context parallelism its 1/cp (two load-balanced chunks of each sequence, of each document in THD) of
    each ring step (the whole again, on heads / cp heads, after Ulysses's all-to-all: Recipe.cp_comm 'a2a'). A model
    with sliding-window layers gets a second kernel for their share of the layers: `mean_keys` keys per query along
    a band (`Op.band`); `band_masked`: a kernel that computes the whole causal square and masks the band instead
    (Recipe.fp8_band_masked, which attention_backward passes). Without flash attention (a release before it), the
    unfused kernels of `unfused_attention_forward`, over the whole square whatever the documents.
    """
    md, packed = sh.model, sh.packing
    if not sh.recipe.flash_attention:
        return unfused_attention_forward(sh)
    keys, length = (sh.seq_len / 2, sh.seq_len) if packed is None else (packed.keys, packed.length)
    split = 1 if sh.recipe.cp_comm == "a2a" else sh.cp  # Ulysses: whole sequences on heads / cp heads
    if md.index_topk:  # DSA: each query against its picked keys (CP refused: parallel.py)
        return [_attention_op(sh, "attention", _sparse_keys(sh), 1.0, min(md.index_topk, sh.seq_len))]
    if not md.sliding_layers:
        return [_attention_op(sh, "attention", keys, 1.0, length / split, steps=True)]
    window_share = md.sliding_layers / md.layers
    window_keys = md.mean_keys(sh.seq_len) if packed is None else packed.window_keys(md.sliding_window)
    window = (
        _attention_op(sh, "attention.window", keys, window_share, length / split)
        if band_masked
        else _attention_op(sh, "attention.window", window_keys, window_share, window_keys, band=True)
    )
    return [_attention_op(sh, "attention", keys, 1 - window_share, length / split, steps=True), window]


def _scores(sh: Shard) -> Number:
    """Attention scores one rank computes per layer and micro-batch without flash attention: every query against
    every key of its sequence (the causal mask is applied to a full square), for heads / tp heads."""
    return sh.tokens * sh.seq_len * sh.model.heads / sh.tp


def unfused_attention_forward(sh: Shard) -> list[Op]:
    """Attention as releases before FlashAttention ran it (Megatron-LM's core attention: Korthikanti et al. 2022,
    Figure 4): a batched QK^T GEMM writing the scores to HBM, one fused scale-mask-softmax kernel reading them and
    writing the probabilities (Megatron's scaled_upper_triang_masked_softmax), and a batched PV GEMM reading those.
    The GEMMs run over the whole s x s square at GEMM efficiency: twice flash attention's causal FLOPs. Per layer on
    one rank, BF16 (the attention format of every recipe then); dropout on the probabilities is not priced."""
    md, t, T = sh.model, sh.tp, sh.tokens
    scores, q = _scores(sh), md.q_dim / t
    rows = T * md.heads / t  # the batched GEMMs' output rows, every head's stacked
    qkv_bytes = T * (q + 2 * kv_width(md, t) / t) * BF16_BYTES
    flops, context_bytes = 2 * T * sh.seq_len * q, scores * BF16_BYTES + 2 * T * q * BF16_BYTES
    return [
        Op("attention.scores", "gemm", flops, qkv_bytes + scores * BF16_BYTES, m=rows, n=sh.seq_len, k=md.head_dim),
        _era_mem("attention.softmax", scores, 2 * BF16_BYTES),
        Op("attention.context", "gemm", flops, context_bytes, m=rows, n=md.head_dim, k=sh.seq_len),
    ]


def unfused_attention_backward(sh: Shard) -> list[Op]:
    """The backward of `unfused_attention_forward`: the PV GEMM's two gradients (reading the probabilities, writing
    their gradient), the softmax backward (reading probabilities and gradient, writing the scores' gradient) and the
    QK^T GEMM's two gradients (each reading it): four GEMMs of the forward's size, none recomputing the scores."""
    md, t, T = sh.model, sh.tp, sh.tokens
    scores, q = _scores(sh), md.q_dim / t
    rows, flops = T * md.heads / t, 4 * T * sh.seq_len * q
    return [
        Op("attention.context.bwd", "gemm", flops, 2 * scores * BF16_BYTES, m=rows, n=sh.seq_len, k=md.head_dim),
        _era_mem("attention.softmax.bwd", scores, 3 * BF16_BYTES),
        Op("attention.scores.bwd", "gemm", flops, 2 * scores * BF16_BYTES, m=rows, n=md.head_dim, k=sh.seq_len),
    ]


def attention_backward(sh: Shard) -> list[Op]:
    """The backward of each forward kernel, in the attention format: an FP8 backward's multiplies run at the FP8 rate
    and it quantises P and dS on the way (compute.attention_core_s), which is why cuDNN's gains only 1.09-1.26x on
    Blackwell at head dim 128, loses on H200, and loses at head dim 64 (kernels/README.md)."""
    if not sh.recipe.flash_attention:
        return unfused_attention_backward(sh)
    flops = ATTENTION_BWD_FLOP_RATIO
    return [
        fwd._replace(name=f"{fwd.name}.bwd", flops=flops * fwd.flops, bytes=2 * fwd.bytes)
        for fwd in attention_forward(sh, sh.recipe.fp8_band_masked)
    ]


SELECTIVE_RECOMPUTE = frozenset(
    ("norm1", "norm2", "activation", "activation.clamp", "latent_norms", "q_up.cast", "q_up.fprop", "kv_up.cast",
     "kv_up.fprop", "attention.scores", "attention.softmax", "attention.context")
)  # fmt: skip
"""Forward operations selective recomputation re-runs: cheap, memory-bound, and their outputs are large; with MLA
also the latent norms and the Q/KV up-projections, so that only the small latents are kept (DeepSeek-V3 report:
"recompute RMSNorm and MLA up-projections", the recompute note of its row in measured_runs.csv); without flash
attention the core attention, whose scores it then need not keep (Korthikanti et al. 2022, section 5); a clamped
GLU's eager clamp with its experts' activation (moe.EAGER_GLU_CLAMP_BYTES)."""


def recompute_forward(sh: Shard, recipe: Recipe, mode: str) -> list[Op]:
    """Forward work re-run during backward: the whole layer (full) or norms and activation (selective)."""
    if mode == "full":
        return layer_forward(sh, recipe)
    if mode == "selective":
        return [op for op in layer_forward(sh, recipe) if op.name in SELECTIVE_RECOMPUTE]
    return []


def padded_vocab(model: ModelSpec, tp: Number) -> Number:
    """Megatron pads the vocabulary to a multiple of 128 x tp; the padded rows are computed like real ones."""
    from perfmodel.physics.algebra import ceil

    return ceil(model.vocab / (128 * tp)) * 128 * tp


def _head_shape(sh: Shard) -> tuple[tuple[str, Number, Number, bool], Recipe]:
    """The LM head as a column-parallel linear layer on one TP rank, and the recipe it runs in: BF16 unless the
    run's recipe quantises it (`Recipe.fp8_output_proj`)."""
    md = sh.model
    head_recipe = sh.recipe if sh.recipe.fp8_output_proj else RECIPES["bf16"]
    return ("lm_head", md.hidden, padded_vocab(md, sh.tp) / sh.tp, True), head_recipe


def head_forward(sh: Shard) -> list[Op]:
    """Final norm, LM head and vocab-parallel cross-entropy on the last pipeline stage."""
    md, T = sh.model, sh.tokens
    shape, recipe = _head_shape(sh)
    return [
        _mem("final_norm", sh.norm_tokens * md.hidden, 2 * BF16_BYTES),
        *_linear_forward(sh, recipe, *shape),
        _mem("cross_entropy", T * shape[2], BF16_BYTES + 2 * FP32_BYTES),
    ]


def head_backward(sh: Shard, frozen_weights: bool = False) -> list[Op]:
    """Backward of the head; a frozen LM head (LoRA) needs no weight gradient."""
    md, T = sh.model, sh.tokens
    shape, recipe = _head_shape(sh)
    return [
        _mem("cross_entropy.bwd", T * shape[2], FP32_BYTES + BF16_BYTES),
        *linear_backward(sh, recipe, shape, frozen_weights, T),
        _mem("final_norm.bwd", sh.norm_tokens * md.hidden, 3 * BF16_BYTES),
    ]


def embedding_ops(sh: Shard) -> list[Op]:
    """Token lookup on the first stage and its gradient scatter-add."""
    T, h = sh.tokens, sh.model.hidden
    return [_mem("embedding", T * h / sh.tp, 2 * BF16_BYTES), _mem("embedding.bwd", T * h / sh.tp, 3 * BF16_BYTES)]


def recomputed(full_share: Number, forward: Number) -> Number:
    """What a full recompute repeats of a layer's `forward` (time or communication) on average over the layers: the
    share of layers it recomputes (`full_share`, 0 to 1) of it."""
    return where(full_share > 0, full_share * forward, 0.0)
