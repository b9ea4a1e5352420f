"""Pipeline schedules (1F1B and interleaved) and the overlap of communication with compute."""

from __future__ import annotations

from typing import NamedTuple

from perfmodel.physics.algebra import Number, ceil, equal, floor, maximum, minimum, where

UNEVEN_EXTRA_UNITS = 2
"""With uneven stages the embedding and the loss each count as one layer when splitting (Megatron's
account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split)."""


class StageLayers(NamedTuple):
    """Transformer layers held by the busiest interior rank, the first rank and the last rank, and per chunk."""

    interior: Number
    first: Number
    last: Number
    per_chunk: Number


MTP_UNITS = 2
"""Layers' worth of work each multi-token-prediction module takes from the last rank's share in an uneven split:
its transformer layer and its pass through the LM head and loss. An assumption, not checked against a recipe file:
Megatron-Bridge's DeepSeek-V3 pipeline layouts are recalled as putting one decoder layer with the MTP module and the
loss in the last chunk, four in every other chunk."""


def stage_layers(layers: int, pp: Number, vp: Number, mtp_layers: int = 0) -> StageLayers:
    """Even split when pp * vp divides the layers; otherwise uneven, with embedding and loss counted as layers and
    each MTP module (on the last rank) as MTP_UNITS layers."""
    chunks = pp * vp
    even = equal(layers - floor(layers / chunks) * chunks, 0)
    per_chunk = where(even, layers / chunks, ceil((layers + UNEVEN_EXTRA_UNITS) / chunks))
    busiest = vp * per_chunk
    ends = where(even, busiest, busiest - 1)
    last = where(even, busiest, maximum(busiest - 1 - MTP_UNITS * mtp_layers, 1.0)) if mtp_layers else ends
    return StageLayers(interior=busiest, first=ends, last=last, per_chunk=per_chunk)


def bubble_fraction(pp: Number, vp: Number, microbatches: Number) -> Number:
    """Idle share of the ideal step: (pp - 1) / (vp * m) (Narayanan et al. 2021)."""
    return (pp - 1) / (vp * microbatches)


def chunks_in_flight(pp: Number, vp: Number, microbatches: Number) -> Number:
    """Forward chunks whose activations the first rank holds at once.

    1F1B: pp micro-batches. Interleaved: Megatron's warm-up of 2(pp-1) + (vp-1)pp chunks plus the one in flight.
    Never more than the step has.
    """
    interleaved = 2 * (pp - 1) + (vp - 1) * pp + 1
    return minimum(where(vp > 1, interleaved, pp), microbatches * vp)


def chunk_sync_window(mb_s: Number, pp: Number, vp: Number, microbatches: Number) -> Number:
    """Compute a step's DP gradient reduce-scatter (or the next step's parameter all-gather) can hide behind, given
    `mb_s`, one micro-batch's backward (or forward) on a rank.

    1F1B: the last micro-batch's backward, in which the layers' gradients become ready one after another. Interleaved
    (vp > 1): Megatron-Core's schedule launches each model chunk's gradient sync as soon as that chunk's last
    micro-batch backward ends (`grad_sync_func` per chunk; `param_sync_func` gathers the next chunk's parameters
    during the first forwards; megatron/core/pipeline_parallel/schedules.py,
    forward_backward_pipelining_with_interleaving). The backward runs the chunks in turn, min(pp, m) micro-batches
    each, so the first chunk is done (vp - 1) x min(pp, m) chunk-passes before the end: a window of
    mb_s / vp x (1 + (vp - 1) x min(pp, m)), which is mb_s at vp = 1.
    """
    group = minimum(pp, microbatches)
    return mb_s / vp * (1 + (vp - 1) * group)


def exposed(comm_s: Number, window_s: Number, overlap: float) -> Number:
    """Communication left on the critical path when it can hide behind `window_s` of compute.

    `overlap` is the share of the window really used (kernels contend for SMs and memory bandwidth).
    """
    return comm_s - overlap * minimum(comm_s, maximum(window_s, 0.0))
