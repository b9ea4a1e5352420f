"""One training step on the busiest GPU: compute, exposed communication, pipeline bubble, optimizer and memory.

`evaluate` is written with branch-free arithmetic on the layout variables, so the same code prices one layout
(Python floats, for `predict`) or a whole search space at once (numpy arrays, for `search`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from perfmodel import memory
from perfmodel.algebra import Number, maximum, where
from perfmodel.collectives import all_gather, all_reduce, group_links, reduce_scatter, send_recv
from perfmodel.compute import ops_time, times_by
from perfmodel.efficiency import Efficiency
from perfmodel.hardware import Hardware
from perfmodel.models import ModelSpec
from perfmodel.precision import BF16_BYTES, RECIPES, Recipe
from perfmodel.schedule import bubble_fraction, chunks_in_flight, exposed, stage_layers
from perfmodel.topology import Tiers, tiers
from perfmodel.workload import (
    FP32_BYTES,
    SELECTIVE_RECOMPUTE,
    Op,
    Shard,
    embedding_ops,
    head_backward,
    head_forward,
    layer_backward,
    layer_forward,
    padded_vocab,
)

OPTIMIZER_BYTES_PER_PARAM = 5 * FP32_BYTES + 3 * FP32_BYTES + BF16_BYTES + 2 * BF16_BYTES
"""Adam step per parameter: read master, m, v (FP32), write them back, read the BF16 gradient twice (norm, step),
write the BF16 weight."""
OPTIMIZER_KERNELS = 8
"""Multi-tensor-apply launches of the optimizer step, grad-norm and zeroing."""


@dataclass(frozen=True)
class Context:
    """Everything about a prediction that does not depend on the parallel layout."""

    model: ModelSpec
    hardware: Hardware
    recipe: Recipe
    efficiency: Efficiency
    seq_len: int

    @cached_property
    def tiers(self) -> Tiers:
        return tiers(self.hardware)


class LayoutVars(NamedTuple):
    """Layout as numbers (floats or arrays): recompute 0/1/2 = none/selective/full, zero 0-3."""

    tp: Number
    pp: Number
    cp: Number
    dp: Number
    vp: Number
    mbs: Number
    gbs: Number
    recompute: Number
    zero: Number


class StepResult(NamedTuple):
    compute_s: Number
    tp_comm_exposed_s: Number
    cp_comm_exposed_s: Number
    pp_bubble_s: Number
    pp_comm_exposed_s: Number
    dp_comm_exposed_s: Number
    optimizer_s: Number
    other_s: Number
    memory: memory.MemoryBreakdown
    hbm_bytes: float

    @property
    def step_time_s(self) -> Number:
        return (
            self.compute_s
            + self.tp_comm_exposed_s
            + self.cp_comm_exposed_s
            + self.pp_bubble_s
            + self.pp_comm_exposed_s
            + self.dp_comm_exposed_s
            + self.optimizer_s
            + self.other_s
        )

    @property
    def fits(self) -> Number:
        return self.memory.total <= self.hbm_bytes


class _LayerTimes(NamedTuple):
    forward: Number
    backward: Number
    selective: Number
    forward_gemm: Number
    backward_gemm: Number
    attention: Number


def _is_gemm(op: Op) -> bool:
    return op.kind == "gemm"


def _is_attention(op: Op) -> bool:
    return op.kind == "attention"


def _recomputed_selectively(op: Op) -> bool:
    return op.name in SELECTIVE_RECOMPUTE


def _layer_times(ctx: Context, sh: Shard, recipe: Recipe) -> _LayerTimes:
    acc, eff = ctx.hardware.accelerator, ctx.efficiency
    fwd = times_by(
        layer_forward(sh, recipe), acc, eff, gemm=_is_gemm, attention=_is_attention, selective=_recomputed_selectively
    )
    bwd = times_by(layer_backward(sh, recipe), acc, eff, gemm=_is_gemm, attention=_is_attention)
    return _LayerTimes(
        forward=fwd["total"],
        backward=bwd["total"],
        selective=fwd["selective"],
        forward_gemm=fwd["gemm"],
        backward_gemm=bwd["gemm"],
        attention=fwd["attention"] + bwd["attention"],
    )


def _mixed_layer_times(ctx: Context, sh: Shard) -> _LayerTimes:
    """Average layer of the recipe: the share it keeps in BF16 (NVFP4's first and last layers) runs at BF16 speed."""
    quantised = _layer_times(ctx, sh, ctx.recipe)
    bf16_share = ctx.recipe.bf16_layer_fraction(ctx.model.layers)
    if bf16_share == 0:
        return quantised
    bf16 = _layer_times(ctx, sh, RECIPES["bf16"])
    return _LayerTimes(*((1 - bf16_share) * q + bf16_share * b for q, b in zip(quantised, bf16, strict=True)))


def _busiest(*ranks: tuple[Number, ...]) -> tuple[Number, ...]:
    """The candidate rank whose parts sum highest (element-wise for arrays)."""
    best = ranks[0]
    for other in ranks[1:]:
        take = sum(other) > sum(best)
        best = tuple(where(take, o, b) for o, b in zip(other, best, strict=True))
    return best


def evaluate(ctx: Context, lv: LayoutVars) -> StepResult:
    md, rec, eff, acc = ctx.model, ctx.recipe, ctx.efficiency, ctx.hardware.accelerator
    tp, pp, cp, dp, vp, mbs, gbs, rc, zero = lv
    sh = Shard(md, rec, tp, cp, mbs, ctx.seq_len)
    tokens, hidden = sh.tokens, md.hidden
    microbatches = gbs / (mbs * dp)
    full, selective = rc == 2, rc == 1

    # Compute of one layer and one micro-batch, recomputation included in the backward pass.
    lt = _mixed_layer_times(ctx, sh)
    recompute_s = where(full, lt.forward, where(selective, lt.selective, 0.0))
    layer_compute = lt.forward + lt.backward + recompute_s

    # Tensor parallelism with sequence parallelism: per layer 2 all-gathers + 2 reduce-scatters forward,
    # 4 all-gathers (inputs again for Wgrad, output gradients) + 2 reduce-scatters backward.
    tp_links = group_links(ctx.tiers, eff, tp, 1)
    activation = tokens * hidden
    gather_in = all_gather(activation * rec.tp_gather_bytes, tp_links)
    gather = all_gather(activation * BF16_BYTES, tp_links)
    scatter = reduce_scatter(activation * BF16_BYTES, tp_links)
    tp_forward = 2 * gather_in + 2 * scatter
    tp_layer = tp_forward + 2 * gather_in + 2 * gather + 2 * scatter + where(full, tp_forward, 0.0)
    gemm_window = lt.forward_gemm + lt.backward_gemm + where(full, lt.forward_gemm, 0.0)
    tp_exposed = exposed(tp_layer, gemm_window, eff.overlap_tp)

    # Context parallelism: cp-1 ring steps of this rank's K and V forward, K, V and their gradients backward.
    cp_links = group_links(ctx.tiers, eff, cp, tp)
    kv_step = send_recv(tokens * 2 * md.kv_dim / tp * BF16_BYTES, cp_links)
    cp_forward = (cp - 1) * kv_step
    cp_layer = cp_forward + 2 * cp_forward + where(full, cp_forward, 0.0)
    cp_exposed = exposed(cp_layer, lt.attention, eff.overlap_cp)

    # LM head and loss on the last stage (its TP all-gather/reduce-scatter too), embedding on the first.
    head = times_by(head_forward(sh) + head_backward(sh), acc, eff, gemm=_is_gemm)
    head_compute = head["total"]
    head_comm = exposed(gather + scatter, head["gemm"], eff.overlap_tp)
    embed_compute = ops_time(embedding_ops(sh), acc, eff)

    # The busiest rank sets the pace of the pipeline.
    stages = stage_layers(md.layers, pp, vp)

    def rank(layers: Number, extra_compute: Number, extra_tp: Number) -> tuple[Number, Number, Number]:
        return (layers * layer_compute + extra_compute, layers * tp_exposed + extra_tp, layers * cp_exposed)

    single = rank(md.layers, head_compute + embed_compute, head_comm)
    pipelined = _busiest(
        rank(stages.interior, 0.0, 0.0),
        rank(stages.first, embed_compute, 0.0),
        rank(stages.last, head_compute, head_comm),
    )
    mb_compute, mb_tp, mb_cp = (where(pp == 1, s, p) for s, p in zip(single, pipelined, strict=True))
    busiest_layers = where(pp == 1, md.layers, stages.interior)
    mb_forward = busiest_layers * lt.forward
    mb_backward = busiest_layers * (lt.backward + recompute_s)

    pp_bubble = bubble_fraction(pp, vp, microbatches) * microbatches * (mb_compute + mb_tp + mb_cp)

    # Pipeline sends: activations forward and gradients backward at every chunk boundary; the warm-up and
    # cool-down ones are on the critical path, the steady-state ones mostly overlap.
    pp_links = group_links(ctx.tiers, eff, pp, tp * cp * dp)
    p2p = send_recv(tokens * hidden / tp * BF16_BYTES, pp_links)
    pp_comm = where(pp > 1, 2 * (pp - 1) * p2p + (1 - eff.overlap_pp) * 2 * microbatches * vp * p2p, 0.0)

    # Data parallelism over DP x CP ranks, by ZeRO stage.
    layer_params = md.params_per_layer / tp
    vocab_rows = padded_vocab(md, tp) / tp * hidden
    params_single = md.layers * layer_params + (vocab_rows * (1 if md.tied_embeddings else 2) + md.norm_params)
    params_first = stages.first * layer_params + vocab_rows
    params_last = stages.last * layer_params + vocab_rows + md.norm_params
    params_interior = stages.interior * layer_params
    rank_params = where(pp == 1, params_single, maximum(maximum(params_first, params_last), params_interior))
    shards = dp * cp
    dp_links = group_links(ctx.tiers, eff, shards, tp)
    grads = rank_params * memory.GRAD_BYTES
    scatter_grads = reduce_scatter(grads, dp_links)
    gather_params = all_gather(rank_params * rec.param_gather_bytes, dp_links)
    bwd_window, fwd_window = mb_backward + pp_bubble / 2, mb_forward + pp_bubble / 2
    dp_comm = where(
        zero == 0,
        exposed(all_reduce(grads, dp_links, ctx.tiers), bwd_window, eff.overlap_dp),
        where(
            zero == 1,
            exposed(scatter_grads, bwd_window, eff.overlap_dp) + exposed(gather_params, fwd_window, eff.overlap_dp),
            where(
                zero == 2,
                microbatches * exposed(scatter_grads, mb_backward, eff.overlap_dp)
                + exposed(gather_params, fwd_window, eff.overlap_dp),
                microbatches
                * (
                    exposed(gather_params, mb_forward, eff.overlap_dp)
                    + exposed(gather_params + scatter_grads, mb_backward, eff.overlap_dp)
                ),
            ),
        ),
    )

    # Optimizer step on this rank's shard, and the re-quantisation of the updated weights.
    step_params = where(zero >= 1, rank_params / shards, rank_params)
    cast_bytes = FP32_BYTES + rec.weight_bytes if rec.quantised else 0.0
    optimizer = step_params * (OPTIMIZER_BYTES_PER_PARAM + cast_bytes) / (acc.hbm_bytes_per_s * eff.memory)
    optimizer = optimizer + OPTIMIZER_KERNELS * eff.kernel_overhead_us * 1e-6

    return StepResult(
        compute_s=microbatches * mb_compute,
        tp_comm_exposed_s=microbatches * mb_tp,
        cp_comm_exposed_s=microbatches * mb_cp,
        pp_bubble_s=pp_bubble,
        pp_comm_exposed_s=pp_comm,
        dp_comm_exposed_s=dp_comm,
        optimizer_s=optimizer,
        other_s=eff.step_overhead_s + 0.0 * tp,
        memory=_memory(ctx, lv, stages, tokens, microbatches, params_first, params_last, params_single),
        hbm_bytes=acc.memory_bytes,
    )


def _memory(
    ctx: Context,
    lv: LayoutVars,
    stages: object,
    tokens: Number,
    microbatches: Number,
    params_first: Number,
    params_last: Number,
    params_single: Number,
) -> memory.MemoryBreakdown:
    md, rec = ctx.model, ctx.recipe
    tp, pp, cp, dp, vp = lv.tp, lv.pp, lv.cp, lv.dp, lv.vp
    st = stages  # StageLayers
    single_rank = pp == 1
    in_flight_first = chunks_in_flight(pp, vp, microbatches) * st.per_chunk  # type: ignore[attr-defined]
    in_flight_last = where(vp > 1, (vp - 1) * pp + 1, 1) * st.per_chunk  # type: ignore[attr-defined]
    in_flight_first = where(single_rank, md.layers, in_flight_first)
    in_flight_last = where(single_rank, md.layers, in_flight_last)

    def acts(layers: Number) -> Number:
        by_mode = [memory.activations(md, rec, mode, tokens, tp, layers) for mode in ("none", "selective", "full")]
        return where(lv.recompute == 2, by_mode[2], where(lv.recompute == 1, by_mode[1], by_mode[0]))

    logits = memory.logits_bytes(tokens, padded_vocab(md, tp) / tp)
    shards = dp * cp

    def breakdown(params: Number, activations: Number) -> memory.MemoryBreakdown:
        return memory.MemoryBreakdown(
            *memory.model_state(params, rec, lv.zero, shards), activations, memory.RUNTIME_RESERVED_BYTES + 0.0 * tp
        )

    first = breakdown(
        where(single_rank, params_single, params_first), acts(in_flight_first) + where(single_rank, logits, 0.0)
    )
    last = breakdown(where(single_rank, params_single, params_last), acts(in_flight_last) + logits)
    return memory.peak(first, last)
