"""The work of one transformer layer on one GPU: every operation with its FLOPs and bytes moved.

Per micro-batch of `mbs` sequences of `seq_len` tokens, on one rank of a TP x CP group with sequence parallelism:
T = mbs * seq_len / cp tokens go through GEMMs sharded t ways, and the norm/residual region holds T / t tokens.
All sizes are plain arithmetic on (tp, cp, mbs), so they evaluate for floats, numpy arrays and sympy symbols alike.
GEMM FLOPs are 2*m*n*k; a linear layer's backward is a dgrad and a wgrad GEMM of the same size.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from perfmodel.inputs.models import ModelSpec
from perfmodel.inputs.precision import BF16_BYTES, Recipe
from perfmodel.physics.algebra import Number

FP32_BYTES = 4.0
ATTENTION_BWD_FLOP_RATIO = 2.5
"""Flash attention's backward recomputes the scores: 5 matmuls against the forward's 2 (Dao et al. 2022)."""


class Op(NamedTuple):
    name: str
    kind: Literal["gemm", "attention", "memory"]
    flops: Number
    bytes: Number
    fmt: str = "bf16"
    m: Number = 0
    n: Number = 0
    exps: Number = 0


class Shard(NamedTuple):
    """One rank's slice of a micro-batch."""

    model: ModelSpec
    recipe: Recipe
    tp: Number
    cp: Number
    mbs: Number
    seq_len: Number

    @property
    def tokens(self) -> Number:
        return self.mbs * self.seq_len / self.cp


def _gemm(name: str, m: Number, n: Number, k: Number, fmt: str, in_bytes: float) -> Op:
    return Op(name, "gemm", 2 * m * n * k, (m * k + k * n) * in_bytes + m * n * BF16_BYTES, fmt, m, n)


def _linear_shapes(sh: Shard) -> list[tuple[str, Number, Number, bool]]:
    """(name, k_in, n_out, column_parallel) of the four linear layers of one layer on one TP rank."""
    md, t = sh.model, sh.tp
    return [
        ("qkv", md.hidden, (md.hidden + 2 * md.kv_dim) / t, True),
        ("proj", md.hidden / t, md.hidden, False),
        ("fc1", md.hidden, md.mlp_in_width / t, True),
        ("fc2", md.ffn / t, md.hidden, False),
    ]


def _cast(name: str, elements: Number, recipe: Recipe, extra_passes: int = 0) -> Op:
    per_element = (recipe.amax_passes + 1 + extra_passes) * BF16_BYTES + (
        recipe.copies + extra_passes
    ) * recipe.element_bytes
    return Op(name, "memory", 0, elements * per_element)


def _mem(name: str, elements: Number, bytes_per_element: float) -> Op:
    return Op(name, "memory", 0, elements * bytes_per_element)


def _linear_forward(sh: Shard, recipe: Recipe, name: str, k: Number, n: Number, column: bool) -> list[Op]:
    """Cast of the input (quantised recipes) and the forward GEMM of one linear layer."""
    ops = []
    if recipe.quantised:
        # A column-parallel layer's input is cast before the sequence-parallel all-gather when the gather is
        # quantised (T/t rows per rank), after it otherwise (all T rows on every rank).
        gathered_quantised = recipe.tp_gather_bytes < BF16_BYTES
        rows = sh.tokens / sh.tp if (column and gathered_quantised) else sh.tokens
        ops.append(_cast(f"{name}.cast", rows * k, recipe))
    ops.append(_gemm(f"{name}.fprop", sh.tokens, n, k, recipe.gemm_format, recipe.element_bytes))
    return ops


def layer_forward(sh: Shard, recipe: Recipe) -> list[Op]:
    md, t, T = sh.model, sh.tp, sh.tokens
    h = md.hidden
    qkv, proj, fc1, fc2 = (_linear_forward(sh, recipe, *shape) for shape in _linear_shapes(sh))
    act_bytes = 3 * BF16_BYTES if md.mlp == "swiglu" else 2 * BF16_BYTES
    return [
        _mem("norm1", T / t * h, 2 * BF16_BYTES),
        *qkv,
        _mem("rope", T * (h + md.kv_dim) / t, 2 * BF16_BYTES),
        attention_forward(sh),
        *proj,
        _mem("residual1", T / t * h, 3 * BF16_BYTES),
        _mem("norm2", T / t * h, 2 * BF16_BYTES),
        *fc1,
        _mem("activation", T * md.ffn / t, act_bytes),
        *fc2,
        _mem("residual2", T / t * h, 3 * BF16_BYTES),
    ]


def layer_backward(sh: Shard, recipe: Recipe, frozen_weights: bool = False) -> list[Op]:
    """Backward of one layer; `frozen_weights` (LoRA fine-tuning) skips the weight-gradient GEMMs."""
    md, t, T = sh.model, sh.tp, sh.tokens
    h, fmt = md.hidden, recipe.gemm_format
    in_bytes = recipe.element_bytes
    ops = [_mem("residual2.bwd", T / t * h, 3 * BF16_BYTES)]
    act_bytes = 5 * BF16_BYTES if md.mlp == "swiglu" else 3 * BF16_BYTES
    for name, k, n, _column in reversed(_linear_shapes(sh)):
        if recipe.quantised:
            ops.append(_cast(f"{name}.grad_cast", T * n, recipe, extra_passes=int(recipe.hadamard_wgrad)))
            if recipe.hadamard_wgrad and not frozen_weights:
                ops.append(_cast(f"{name}.input_hadamard", T * k, recipe, extra_passes=0))
        ops.append(_gemm(f"{name}.dgrad", T, k, n, fmt, in_bytes))
        if not frozen_weights:
            ops.append(_gemm(f"{name}.wgrad", k, n, T, fmt, in_bytes))
        if name == "fc2":
            ops.append(_mem("activation.bwd", T * md.ffn / t, act_bytes))
        if name == "fc1":
            ops += [_mem("norm2.bwd", T / t * h, 3 * BF16_BYTES), _mem("residual1.bwd", T / t * h, 3 * BF16_BYTES)]
        if name == "proj":
            ops.append(attention_backward(sh))
    ops += [_mem("rope.bwd", T * (h + md.kv_dim) / t, 2 * BF16_BYTES), _mem("norm1.bwd", T / t * h, 3 * BF16_BYTES)]
    return ops


def attention_forward(sh: Shard) -> Op:
    """Causal flash attention on one rank: T queries against on average seq_len/2 keys, heads/t heads.

    `m` carries the sequence length one kernel call sees: the whole sequence, or with context parallelism the
    seq_len / cp tokens (two load-balanced chunks) of each ring step.
    """
    md, t, T = sh.model, sh.tp, sh.tokens
    flops = 2 * T * sh.seq_len * md.hidden / t
    io = T * (2 * md.hidden + 2 * md.kv_dim) / t * BF16_BYTES
    return Op("attention", "attention", flops, io, "bf16", m=sh.seq_len / sh.cp, exps=T * sh.seq_len / 2 * md.heads / t)


def attention_backward(sh: Shard) -> Op:
    fwd = attention_forward(sh)
    flops = ATTENTION_BWD_FLOP_RATIO * fwd.flops
    return Op("attention.bwd", "attention", flops, 2 * fwd.bytes, "bf16", m=fwd.m, exps=fwd.exps)


SELECTIVE_RECOMPUTE = frozenset(("norm1", "norm2", "activation"))
"""Forward operations selective recomputation re-runs: cheap, memory-bound, and their outputs are large."""


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


def head_forward(sh: Shard) -> list[Op]:
    """Final norm, LM head (BF16 in every recipe) and vocab-parallel cross-entropy on the last pipeline stage."""
    md, t, T = sh.model, sh.tp, sh.tokens
    vocab = padded_vocab(md, t) / t
    return [
        _mem("final_norm", T / t * md.hidden, 2 * BF16_BYTES),
        _gemm("lm_head.fprop", T, vocab, md.hidden, "bf16", BF16_BYTES),
        _mem("cross_entropy", T * vocab, BF16_BYTES + 2 * FP32_BYTES),
    ]


def head_backward(sh: Shard, frozen_weights: bool = False) -> list[Op]:
    """Backward of the head; a frozen LM head (LoRA) needs no weight gradient."""
    md, t, T = sh.model, sh.tp, sh.tokens
    vocab = padded_vocab(md, t) / t
    wgrad = [] if frozen_weights else [_gemm("lm_head.wgrad", md.hidden, vocab, T, "bf16", BF16_BYTES)]
    return [
        _mem("cross_entropy.bwd", T * vocab, FP32_BYTES + BF16_BYTES),
        _gemm("lm_head.dgrad", T, md.hidden, vocab, "bf16", BF16_BYTES),
        *wgrad,
        _mem("final_norm.bwd", T / t * md.hidden, 3 * BF16_BYTES),
    ]


def embedding_ops(sh: Shard) -> list[Op]:
    """Token lookup on the first stage and its gradient scatter-add."""
    T, h = sh.tokens, sh.model.hidden
    return [_mem("embedding", T * h / sh.tp, 2 * BF16_BYTES), _mem("embedding.bwd", T * h / sh.tp, 3 * BF16_BYTES)]
