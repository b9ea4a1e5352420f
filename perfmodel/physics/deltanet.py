"""The Gated DeltaNet layer on one GPU (Qwen3-Next's linear attention): its operations with FLOPs and bytes, and
what it saves for the backward.

Megatron-Core's GatedDeltaNet (megatron-core 0.16.1 ssm/gated_delta_net.py): in_proj, a TE
LayerNormColumnParallelLinear (the layer's pre-norm fused), projects to q, k, v, the output gate z, beta and alpha
(L138-158); a causal depthwise conv1d with SiLU runs over q, k and v (L322-336); q and k are L2-normalised and
repeated to the value heads (L343-353); g = -exp(A_log) softplus(alpha + dt_bias) and sigmoid(beta) (L362-364); the
fla kernels' chunk_gated_delta_rule mixes the sequence (L382: Yang, Kautz and Hatamizadeh 2024, arXiv 2412.06464);
a gated RMSNorm (norm(o) x silu(z)) and the row-parallel out_proj follow. TP splits the key and value heads
(transformer_config.py L975-980), so every width below is divided by tp; sequence parallelism gathers the input and
reduce-scatters the output as an attention block does. Context parallelism is not supported (transformer_config.py
L983-986; gated_delta_net.py L219 'TODO: support CP'): parallel.HYBRID_RULES refuses it.
"""

from __future__ import annotations

from perfmodel.inputs.models import ModelSpec
from perfmodel.inputs.precision import BF16_BYTES, FP32_BYTES, Recipe
from perfmodel.physics.algebra import Number
from perfmodel.physics.workload import Op, Shard, _linear_forward, _mem, linear_backward

DELTA_RULE_BWD_PASSES = 3.0
"""The chunked delta rule's backward in forward passes: fla's chunk_gated_delta_rule_bwd keeps neither W, U nor the
chunk states, so it re-runs recompute_w_u and the state passing, then takes two gradient products for each forward
product (the dv, dh, dq/dk/dw and WY kernels), each reading its inputs from HBM again (recalled from the public
code, not a stored copy; mamba.SSD_BWD_PASSES makes the same count of the SSD scan's FLOPs, whose bytes
mamba._scan_backward_bytes counts kernel by kernel)."""


def _shapes(sh: Shard) -> list[tuple[str, Number, Number, bool]]:
    """(name, k_in, n_out, column_parallel) of the mixer's two linear layers on one TP rank."""
    (_, in_width), (value_width, h) = sh.model.gdn_linear_shapes.values()
    return [("in_proj", h, in_width / sh.tp, True), ("out_proj", value_width / sh.tp, h, False)]


def _conv_channels(md: ModelSpec) -> int:
    """Channels of the depthwise conv1d: q, k and v."""
    return 2 * md.gdn_key_width + md.gdn_value_width


def _rule_flops(sh: Shard) -> Number:
    """The delta rule's forward FLOPs on one rank (ModelSpec.gdn_flops_per_token: value heads split over tp)."""
    return sh.tokens * sh.model.gdn_flops_per_token(sh.seq_len) / sh.tp


def _rule_bytes(sh: Shard) -> Number:
    """HBM bytes of the delta rule's forward kernels, each reading its inputs and writing its outputs, per token and
    TP rank, with H value heads, K and V their key and value widths (q and k repeated to every value head), C the
    chunk, BF16 tensors and FP32 gates: the cumulative sum of g (8 H); beta K K^T, which reads k, beta and g and
    writes A in FP32 (2 H K + 6 H + 4 H C); the triangular solve, which reads it and writes its inverse (6 H C);
    W and U, from k, v, beta, g and the inverse (4 H K + 4 H V + 6 H + 2 H C); the state passing, from k, w, u and
    g, writing the new values and each chunk's states (4 H K + 4 H V + 4 H + 2 H K V / C); and the output, from q,
    k, the new values, g and the states (4 H K + 4 H V + 4 H + 2 H K V / C)."""
    md = sh.model
    heads, k, v = md.gdn_value_heads, md.gdn_key_head_dim, md.gdn_value_head_dim
    chunk = min(md.gdn_chunk, sh.seq_len)
    per_token = heads * (14 * k + 12 * v + 28 + 12 * chunk + 4 * k * v / chunk)
    return per_token * sh.tokens / sh.tp


def _rule_op(sh: Shard, name: str, flops: Number, bytes_moved: Number) -> Op:
    """The chunked delta rule as a batched BF16 GEMM (its products are tensor-core matmuls of chunk x head-dim
    tiles): every value head's tokens stacked as rows, value-head-dim columns, a chunk deep."""
    md = sh.model
    rows = sh.tokens * md.gdn_value_heads / sh.tp
    return Op(
        name, "gemm", flops, bytes_moved, "bf16", rows, md.gdn_value_head_dim, k=md.gdn_chunk, measured_bandwidth=True
    )


def _qk_prep(sh: Shard, backward: bool) -> list[Op]:
    """The L2 norm of q and k (reads and writes each; backward reads it, its output and the gradient, writes one),
    their repeat to the value heads when these outnumber the key heads (writes the copies; backward sums them back),
    and g and beta from alpha and beta (reads two per value head, writes g in FP32 and beta)."""
    md, T, t = sh.model, sh.tokens, sh.tp
    suffix = ".bwd" if backward else ""
    ops = [_mem(f"qk_l2norm{suffix}", T * 2 * md.gdn_key_width / t, (3 if backward else 2) * BF16_BYTES)]
    if md.gdn_value_heads != md.gdn_key_heads:
        repeated = T * 2 * md.gdn_value_heads * md.gdn_key_head_dim / t
        ops.append(_mem(f"qk_repeat{suffix}", repeated, 2 * BF16_BYTES))
    gates = T * md.gdn_value_heads / t
    ops.append(_mem(f"g_beta{suffix}", gates, 2 * 2 * BF16_BYTES + FP32_BYTES + BF16_BYTES))
    return ops


def gdn_block_forward(sh: Shard, recipe: Recipe) -> list[Op]:
    """Norm, in_proj, conv1d, q/k preparation, delta rule, gated RMSNorm, out_proj and residual of one 'G' layer."""
    md, T, t = sh.model, sh.tokens, sh.tp
    h = md.hidden
    in_proj, out_proj = (_linear_forward(sh, recipe, *shape) for shape in _shapes(sh))
    return [
        _mem("norm1", sh.norm_tokens * h, 2 * BF16_BYTES),
        *in_proj,
        _mem("conv1d", T * _conv_channels(md) / t, 2 * BF16_BYTES),
        *_qk_prep(sh, backward=False),
        _rule_op(sh, "delta_rule", _rule_flops(sh), _rule_bytes(sh)),
        _mem("gated_norm", T * md.gdn_value_width / t, 3 * BF16_BYTES),
        *out_proj,
        _mem("residual1", sh.norm_tokens * h, 3 * BF16_BYTES),
    ]


def gdn_block_backward(sh: Shard, recipe: Recipe, frozen_weights: bool = False) -> list[Op]:
    """The backward of `gdn_block_forward`: each linear layer's dgrad and wgrad, the gated norm's (reads o, z and
    the gradient, writes two), the delta rule's (DELTA_RULE_BWD_PASSES), the q/k preparation's, the conv's (reads
    input and gradient, writes one)."""
    md, T, t = sh.model, sh.tokens, sh.tp
    h = md.hidden
    in_proj, out_proj = _shapes(sh)
    passes = DELTA_RULE_BWD_PASSES
    return [
        _mem("residual1.bwd", sh.norm_tokens * h, 3 * BF16_BYTES),
        *linear_backward(sh, recipe, out_proj, frozen_weights, T),
        _mem("gated_norm.bwd", T * md.gdn_value_width / t, 5 * BF16_BYTES),
        _rule_op(sh, "delta_rule.bwd", passes * _rule_flops(sh), passes * _rule_bytes(sh)),
        *_qk_prep(sh, backward=True),
        _mem("conv1d.bwd", T * _conv_channels(md) / t, 3 * BF16_BYTES),
        *linear_backward(sh, recipe, in_proj, frozen_weights, T),
        _mem("norm1.bwd", sh.norm_tokens * h, 3 * BF16_BYTES),
    ]


def saved_per_token(md: ModelSpec, recipe: Recipe, recompute: str) -> float:
    """Bytes one 'G' layer keeps for its backward per token, before the TP split (as
    memory.activation_bytes_per_token): the norm input; in_proj's output (q, k, v, z, beta, alpha: the conv's input
    and the gated norm's gate); the L2 norm's outputs and, when repeated, their copies per value head; the conv's
    v; g in FP32; the chunk's inverse (C per value head, which fla's ChunkGatedDeltaRuleFunction saves); the rule's
    output o and the out_proj input (with its quantised copy); without recompute also in_proj's quantised input.
    Selective recompute (Megatron's core attention) does not touch a Gated DeltaNet layer; full recompute keeps the
    layer input."""
    if recompute == "full":
        return md.hidden * BF16_BYTES
    q_in = recipe.element_bytes if recipe.quantised else BF16_BYTES
    heads, value_width = md.gdn_value_heads, md.gdn_value_width
    repeated = 2 * heads * md.gdn_key_head_dim if heads != md.gdn_key_heads else 0
    elements = md.hidden + md.gdn_linear_shapes["in_proj"][1] + 2 * md.gdn_key_width + repeated + value_width
    elements += heads * md.gdn_chunk + 2 * value_width
    saved = elements * BF16_BYTES + heads * FP32_BYTES
    saved += value_width * q_in if recipe.quantised else 0.0
    return saved + (md.hidden * q_in if recompute == "none" else 0.0)
