"""The Mamba-2 (SSD) layer on one GPU: its operations with FLOPs and bytes, what it saves for the backward, and
what context parallelism exchanges for it.

Megatron-Core's MambaMixer (megatron-core 0.16.1 ssm/mamba_mixer.py): in_proj, a TE LayerNormColumnParallelLinear
(the layer's pre-norm fused), projects to z, x, B, C and dt; a causal depthwise conv1d runs over x, B and C; the
chunked SSD scan (Dao and Gu 2024, arXiv 2405.21060, section 6; mamba_ssm's mamba_split_conv1d_scan_combined,
mamba_mixer.py L659) mixes the sequence and gates its output, y x silu(z), in its last kernel (`_GATE_PASSES`); an
RMSNorm over each group's channels (L681-682, no z: the gate ran already) and the row-parallel out_proj follow.
TP splits heads and groups (L247-259: `nheads % tp == 0`, `ngroups % tp == 0`), so every width below is divided by
tp; sequence parallelism gathers the input and reduce-scatters the output as an attention block does. CP runs
all-to-alls from a sequence split to a head split before the conv and the scan and back after them
(ssm/mamba_context_parallel.py L133-204).
"""

from __future__ import annotations

from perfmodel.inputs.models import ModelSpec
from perfmodel.inputs.precision import BF16_BYTES, Recipe
from perfmodel.physics.algebra import Number, equal, where
from perfmodel.physics.workload import Op, Shard, _linear_forward, _mem, linear_backward

SSD_BWD_PASSES = 3.0
"""The SSD backward's FLOPs in forward scans: it keeps neither the chunk states nor C B^T, so it re-runs the forward's
kernels (cumsum, chunk states, state passing, C B^T), then takes two gradient products for each forward product
(mamba_ssm 2.3.2 ssd_combined.py _mamba_chunk_scan_combined_bwd, L396-513); its bytes kernel by kernel in
`_scan_backward_bytes`."""


def _shapes(sh: Shard) -> list[tuple[str, Number, Number, bool]]:
    """(name, k_in, n_out, column_parallel) of the mixer's two linear layers on one TP rank."""
    (_, in_width), (inner, h) = sh.model.mamba_linear_shapes.values()
    return [("in_proj", h, in_width / sh.tp, True), ("out_proj", inner / sh.tp, h, False)]


_GATE_PASSES = (2.0, 6.0)
"""BF16 passes over the inner width of the gate that the scan applies, forward and backward, beyond the scan's own
kernels: megatron-core 0.16.1 passes no rmsnorm_weight to mamba_split_conv1d_scan_combined (mamba_mixer.py
L659-675), so mamba_ssm 2.3.2 hands z to the scan (ssd_combined.py L850), whose _chunk_scan_fwd reads it and writes
the ungated output beside the gated one for the backward (ssd_chunk_scan.py L1276-1278, HAS_Z); the backward's
_chunk_scan_bwd_dz reads the output gradient, the ungated output, z and x (for D) and writes dz and the ungated
output's gradient (ssd_chunk_scan.py L1363-1412, L406-419)."""


def _scan_flops(sh: Shard) -> Number:
    """The SSD scan's forward FLOPs on one rank (ModelSpec.ssd_flops_per_token: heads and groups split over tp)."""
    return sh.tokens * sh.model.ssd_flops_per_token(sh.seq_len) / sh.tp


def _scan_bytes(sh: Shard) -> Number:
    """HBM bytes of the scan's forward kernels, each reading its inputs and writing its outputs (mamba_ssm 2.3.2
    ssd_combined.py _mamba_chunk_scan_combined_fwd, L343-394; the gate's `_GATE_PASSES` apart), per token and TP
    rank, with I the inner width, G N the groups' state, H heads, Q the chunk:
    _chunk_cumsum_fwd reads dt, writes dA's cumulative sum and dt in FP32 (10 H); _chunk_state_fwd reads B, x, dt
    and dA, writes the chunk states in FP32 (2 G N + 2 I + 8 H + 4 I N / Q); _state_passing_fwd reads them, writes
    BF16 (6 I N / Q); _bmm_chunk_fwd reads C and B, writes C B^T in FP32 (4 G N + 4 G Q); _chunk_scan_fwd reads
    C B^T, x, dt, dA, C and the states, writes y (4 G Q + 4 I + 8 H + 2 G N + 2 I N / Q)."""
    md, T, t = sh.model, sh.tokens, sh.tp
    inner, heads, chunk = md.mamba_inner, md.mamba_heads, md.mamba_chunk
    group_state, group_chunk = md.mamba_groups * md.mamba_state, md.mamba_groups * min(chunk, sh.seq_len)
    per_token = 26 * heads + 8 * group_state + 6 * inner + 8 * group_chunk + 12 * inner * md.mamba_state / chunk
    return per_token * T / t


def _scan_backward_bytes(sh: Shard) -> Number:
    """HBM bytes of the scan's backward kernels (mamba_ssm 2.3.2 ssd_combined.py _mamba_chunk_scan_combined_bwd,
    L396-513; the gate's `_GATE_PASSES` apart), each reading its inputs and writing its outputs, per token and TP rank,
    in `_scan_bytes`'s symbols. The forward's cumsum, C B^T (FP32), chunk states (FP32) and state passing, now
    writing FP32 (out_dtype None: ssd_state_passing.py L206), run again (10 H, 4 G N + 4 G Q, 2 G N + 2 I + 8 H
    + 4 I N / Q, 8 I N / Q; dt cloned first, 4 H); _chunk_scan_bwd_dstates reads C, dA and the gradient, writes the
    states' gradients in FP32 (2 G N + 4 H + 2 I + 4 I N / Q); _state_passing_bwd reads both FP32, writes both BF16
    (12 I N / Q); _chunk_scan_chunk_state_bwd_dx reads x, dt, dA, B, C B^T, the gradient and the states' gradients,
    writes dx and ddt (6 I + 12 H + 2 G N + 4 G Q + 2 I N / Q); _chunk_state_bwd_db reads x, dt, dA, the states'
    gradients and B, writes dB in FP32 and a dA partial (2 I + 12 H + 6 G N + 2 I N / Q); _chunk_scan_bwd_dC reads the
    gradient, dA, the states and C, writes dC in FP32 and a dA partial (2 I + 8 H + 6 G N + 2 I N / Q);
    _chunk_scan_bwd_dcb reads x, the gradient, dt and dA, writes dC B^T in
    FP32 (4 I + 8 H + 4 G Q); two _bmm_chunk_bwd read C or B, it and the FP32 partial, write BF16 (8 G N + 4 G Q
    each); _chunk_scan_bwd_ddAcs_stable reads x, the gradient, dt, dA and C B^T, writes ddA (4 I + 12 H + 4 G Q);
    the ddA sums, reversed cumsum and _chunk_cumsum_bwd pass over per-head FP32 terms (52 H)."""
    md, T, t = sh.model, sh.tokens, sh.tp
    inner, heads, chunk = md.mamba_inner, md.mamba_heads, md.mamba_chunk
    group_state, group_chunk = md.mamba_groups * md.mamba_state, md.mamba_groups * min(chunk, sh.seq_len)
    per_token = 130 * heads + 38 * group_state + 22 * inner + 24 * group_chunk + 34 * inner * md.mamba_state / chunk
    return per_token * T / t


def _layout_copy(sh: Shard, name: str, width: Number) -> Op:
    """A copy between Megatron's [sequence, batch, width] order and the scan's [batch, sequence, width] (read and
    write, BF16), which a micro-batch of one sequence does not pay: the permuted view of a batch of one is contiguous
    already. megatron-core 0.16.1 (and 0.15.0) ssm/mamba_mixer.py _ssm_training: `rearrange(zxBCdt, "l b d -> b l
    d").contiguous()` before the scan (L642) and `rearrange(y, "b l d -> l b d").contiguous()` after it (L678); in
    the backward in_proj's output gradient comes back as the permuted view of the scan's, which TransformerEngine
    copies (2.9.0 pytorch/module/base.py grad_output_preprocess, L1143-1144: reshape, contiguous)."""
    return _mem(name, sh.tokens * width / sh.tp, where(equal(sh.mbs, 1), 0.0, 2 * BF16_BYTES))


def _scan_op(sh: Shard, name: str, flops: Number, bytes_moved: Number) -> Op:
    """The chunked scan as a batched BF16 GEMM (its products are tensor-core matmuls of chunk x head-dim tiles):
    every head's tokens stacked as rows, head-dim columns, a chunk deep."""
    md = sh.model
    rows = sh.tokens * md.mamba_heads / sh.tp
    return Op(
        name, "gemm", flops, bytes_moved, "bf16", rows, md.mamba_head_dim, k=md.mamba_chunk, measured_bandwidth=True
    )


def mamba_block_forward(sh: Shard, recipe: Recipe) -> list[Op]:
    """Norm, in_proj, conv1d, the SSD scan and its gate, RMSNorm, out_proj and residual of one 'M' layer, with the
    scan's layout copies (`_layout_copy`)."""
    md, T, t = sh.model, sh.tokens, sh.tp
    h, conv_channels, inner_rows = md.hidden, (md.mamba_inner + md.mamba_bc_width) / t, T * md.mamba_inner / t
    in_proj, out_proj = (_linear_forward(sh, recipe, *shape) for shape in _shapes(sh))
    return [
        _mem("norm1", sh.norm_tokens * h, 2 * BF16_BYTES),
        *in_proj,
        _layout_copy(sh, "scan_input_layout", md.mamba_linear_shapes["in_proj"][1]),
        _mem("conv1d", T * conv_channels, 2 * BF16_BYTES),
        _scan_op(sh, "ssd_scan", _scan_flops(sh), _scan_bytes(sh) + inner_rows * _GATE_PASSES[0] * BF16_BYTES),
        _layout_copy(sh, "scan_output_layout", md.mamba_inner),
        _mem("scan_norm", inner_rows, 2 * BF16_BYTES),
        *out_proj,
        _mem("residual1", sh.norm_tokens * h, 3 * BF16_BYTES),
    ]


def mamba_block_backward(sh: Shard, recipe: Recipe, frozen_weights: bool = False) -> list[Op]:
    """The backward of `mamba_block_forward`: each linear layer's dgrad and wgrad, the norm's (reads y and the
    gradient, writes one), the gate's (`_GATE_PASSES`), the scan's (`_scan_backward_bytes`), the conv's (run again
    first: ssd_combined.py L912-917 recompute x, B and C, reading and writing them, then reads input and gradient,
    writes one), and in_proj's output gradient laid out back (`_layout_copy`)."""
    md, T, t = sh.model, sh.tokens, sh.tp
    h, conv_channels, inner_rows = md.hidden, (md.mamba_inner + md.mamba_bc_width) / t, T * md.mamba_inner / t
    in_proj, out_proj = _shapes(sh)
    return [
        _mem("residual1.bwd", sh.norm_tokens * h, 3 * BF16_BYTES),
        *linear_backward(sh, recipe, out_proj, frozen_weights, T),
        _mem("scan_norm.bwd", inner_rows, 3 * BF16_BYTES),
        _mem("scan_gate.bwd", inner_rows, _GATE_PASSES[1] * BF16_BYTES),
        _scan_op(sh, "ssd_scan.bwd", SSD_BWD_PASSES * _scan_flops(sh), _scan_backward_bytes(sh)),
        _mem("conv1d.bwd", T * conv_channels, 5 * BF16_BYTES),
        _layout_copy(sh, "in_proj.grad_layout", md.mamba_linear_shapes["in_proj"][1]),
        *linear_backward(sh, recipe, in_proj, frozen_weights, T),
        _mem("norm1.bwd", sh.norm_tokens * h, 3 * BF16_BYTES),
    ]


def saved_per_token(md: ModelSpec, recipe: Recipe, recompute: str) -> float:
    """Bytes one 'M' layer keeps for its backward per token, before the TP split (as
    memory.activation_bytes_per_token): the norm input, in_proj's output (z, x, B, C, dt, which the fused scan
    kernel saves and recomputes the conv from), the scan output y and the out_proj input (with its quantised copy);
    without recompute also in_proj's quantised input. Selective recompute (Megatron's core attention) does not touch
    a Mamba layer; full recompute keeps the layer input."""
    if recompute == "full":
        return md.hidden * BF16_BYTES
    q_in = recipe.element_bytes if recipe.quantised else BF16_BYTES
    in_width = md.mamba_linear_shapes["in_proj"][1]
    saved = (md.hidden + in_width + 2 * md.mamba_inner) * BF16_BYTES
    saved += md.mamba_inner * q_in if recipe.quantised else 0.0
    return saved + (md.hidden * q_in if recompute == "none" else 0.0)


def context_parallel_bytes(sh: Shard) -> Number:
    """Bytes one rank sends through the all-to-alls of one 'M' layer's forward under CP: z, x, B, C and dt from the
    sequence split to the head split, y back (mamba_context_parallel.py pre_conv_ssm / post_conv_ssm, L133-204)."""
    md = sh.model
    in_width = md.mamba_linear_shapes["in_proj"][1]
    return sh.tokens * (in_width + md.mamba_inner) / sh.tp * BF16_BYTES
