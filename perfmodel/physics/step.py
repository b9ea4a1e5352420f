"""One training step on the busiest GPU: compute, exposed communication, pipeline bubble, optimizer and memory.

`evaluate` is written with branch-free arithmetic on the layout variables, so the same code prices one layout
(Python floats, for `predict`) or a whole search space at once (numpy arrays, for `search`).
"""

from __future__ import annotations

import itertools
import math
import operator
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple, TypeVar

from perfmodel.inputs import hybrid
from perfmodel.inputs.documents import Packing
from perfmodel.inputs.hardware import Hardware
from perfmodel.inputs.lora import adapted_layers
from perfmodel.inputs.models import ModelSpec
from perfmodel.inputs.precision import BF16_BYTES, FP32_BYTES, RECIPES, Recipe
from perfmodel.inputs.record import replaced
from perfmodel.physics import deltanet, mamba, memory, moe
from perfmodel.physics.algebra import PLAIN, Number, ceil, equal, log2, lookup, maximum, minimum, sqrt, where
from perfmodel.physics.bounded import Bounded
from perfmodel.physics.collectives import (
    GroupLinks,
    all_gather,
    all_reduce,
    all_to_all,
    group_links,
    reduce_scatter,
    send_recv,
)
from perfmodel.physics.compute import Batched, Rates, batched, times_by
from perfmodel.physics.efficiency import WARM_START_RELEASE, Efficiency
from perfmodel.physics.offload import OFFLOAD_RULE, offload_s
from perfmodel.physics.parallel import HEAD_SPLIT_RULE, Rule, feature_rules
from perfmodel.physics.ring import RingHops, ring_exposed
from perfmodel.physics.schedule import (
    UNEVEN_EXTRA_UNITS,
    StageLayers,
    bubble_fraction,
    chunk_sync_window,
    chunks_in_flight,
    exposed,
    stage_layers,
)
from perfmodel.physics.topology import Tiers, tiers
from perfmodel.physics.trace import Untraceable, compile_traced
from perfmodel.physics.workload import (
    SELECTIVE_RECOMPUTE,
    Op,
    Shard,
    attention_block_backward,
    attention_block_forward,
    attention_io_widths,
    embedding_ops,
    head_backward,
    head_forward,
    layer_backward,
    layer_forward,
    mlp_block_backward,
    mlp_block_forward,
    padded_vocab,
    recomputed,
)

T = TypeVar("T")

OPTIMIZER_BYTES_PER_PARAM = 4 * FP32_BYTES + 4 * FP32_BYTES + 2 * BF16_BYTES + BF16_BYTES
"""Adam step per parameter under Megatron's distributed optimizer, 38 bytes: read master, m, v and the FP32 main
gradient (16), write master, m, v and that main gradient, cast from the BF16 one (16), read the BF16 gradient for the
cast and for the grad norm (4), write the BF16 weight (2). The gradients kept between steps are BF16 (memory.py); the
FP32 main gradient is the optimizer's own copy (`_copy_model_grads_to_main_grads`, recalled from the public code,
not a stored copy: labelled)."""
OPTIMIZER_KERNELS = 8
"""Multi-tensor-apply launches of the optimizer step, grad-norm and zeroing."""
COMPILE_AFTER = 64
"""Plain-number layouts a context prices through the formulas before it compiles them: tracing and compiling cost
~20 ms, about 100 warm evaluations, so a context asked a few times (a what-if, one prediction) never pays for it, and
one asked thousands of times (a loop over layouts through the Python API) prices each in about 60 us."""
BREAKDOWN = (
    "compute_s",
    "tp_comm_exposed_s",
    "cp_comm_exposed_s",
    "pp_bubble_s",
    "pp_comm_exposed_s",
    "dp_comm_exposed_s",
    "optimizer_s",
    "other_s",
)
_BREAKDOWN_OF = operator.attrgetter(*BREAKDOWN)
"""The breakdown of a StepResult as a tuple, fetched in one call (a prediction asks for its step time often)."""


@dataclass(frozen=True)
class Context:
    """Everything about a prediction that does not depend on the parallel layout."""

    model: ModelSpec
    hardware: Hardware
    recipe: Recipe
    efficiency: Efficiency
    seq_len: int
    lora_rank: int = 0
    """0: full training. r > 0: the base model is frozen and only rank-r LoRA adapters on the `lora_modules`
    linear layers train (no weight-gradient GEMMs, gradients or optimizer state for the base weights)."""
    imbalance: float = 1.0
    """MoE: tokens on the busiest expert rank over the mean (1.0: balanced, as the published rows force)."""
    stack: str = "megatron"
    """The software stack (inputs/stacks.py) whose fitted parameters `efficiency` holds."""
    vintage: str | None = None
    """The stack's release (YYYY-MM; None: today's): which layouts it can run (inputs/features.py)."""
    lora_modules: str = "attention"
    """The linear layers LoRA adapts (inputs/lora.py)."""
    packing: Packing | None = None
    """Document masking of packed sequences at `seq_len` (inputs/documents.py); None: one causal sequence."""

    @property
    def adapters(self) -> frozenset[str]:
        """The linear layers carrying LoRA adapters: none in full training."""
        return adapted_layers(self.lora_modules) if self.lora_rank else frozenset()

    def shard(self, tp: Number, cp: Number, mbs: Number, ep: Number = 1.0, etp: Number = 1.0) -> Shard:
        """One rank's slice of a micro-batch in this context."""
        extra = (self.packing, self.lora_rank, self.adapters)
        return Shard(self.model, self.recipe, tp, cp, mbs, self.seq_len, ep, etp, self.imbalance, *extra)

    @property
    def rules(self) -> tuple[Rule, ...]:
        """The layout rules, with those of the features the stack's release lacks (parallel.feature_rules), activation
        offload's (PP 1, no recompute) and, for Ulysses's all-to-all, its head split."""
        rules = feature_rules(self.stack, self.vintage)
        rules = (*rules, OFFLOAD_RULE) if self.recipe.offload_layers else rules
        return (*rules, HEAD_SPLIT_RULE) if self.recipe.cp_comm == "a2a" else rules

    @cached_property
    def tiers(self) -> Tiers:
        return tiers(self.hardware)

    @cached_property
    def memo(self) -> dict[tuple[Any, ...], Any]:
        """What this context has worked out once: for plain-number layouts, each group's links, by what they depend
        on; the compiled step and the count of layouts priced before it (`program`); and planning's searched layouts
        (predict.searched_layout). Shards' compute is in `shards`."""
        return {}

    @cached_property
    def shards(self) -> dict[tuple[Any, ...], Any]:
        """Each shard's compute, by what it depends on (for plain numbers; for arrays the table of shards priced):
        shared by every context with the same model, accelerator, efficiencies, recipe, sequence, LoRA rank and
        imbalance, whatever its system and its accelerator's links and prices (a sweep's what-if on the network,
        validation's rows on other clusters)."""
        compute_part = replaced(self.hardware.accelerator, **_NOT_COMPUTE)
        key = (self.model, compute_part, self.efficiency, self.recipe, self.seq_len, self.lora_rank, self.imbalance,
               self.lora_modules, self.packing)  # fmt: skip
        try:
            found = _SHARDS.get(key)
        except TypeError:  # efficiencies with array fields (a fit's variants): this context's own
            return {}
        if found is None:
            found = _SHARDS.put(key, {})
        return found

    @property
    def frozen_base(self) -> bool:
        return self.lora_rank > 0

    def program(self) -> Callable[..., StepResult] | None:
        """The compiled step once this context has priced COMPILE_AFTER layouts of floats, else None."""
        memo = self.memo
        if ("compiled",) in memo:  # compiled already (or refused: None)
            compiled: Callable[..., StepResult] | None = memo[("compiled",)]
            return compiled
        seen = memo.get(("plain layouts",), 0)
        if seen < COMPILE_AFTER:
            memo[("plain layouts",)] = seen + 1
            return None
        return self.compiled()

    def compiled(self) -> Callable[..., StepResult] | None:
        """`evaluate` on this context compiled for plain numbers (physics/trace.py), or None when the formulas
        branch on a layout value."""
        memo = self.memo
        if ("compiled",) not in memo:
            try:
                memo[("compiled",)] = compile_traced(lambda *lv: _evaluate(self, LayoutVars(*lv)), LAYOUT_VARS)
            except (Untraceable, TypeError, ValueError):  # a branch on a layout value, or a helper traced values
                memo[("compiled",)] = None  # cannot pass through yet: the formulas as they are (tests flag it)
        compiled: Callable[..., StepResult] | None = memo[("compiled",)]
        return compiled


_NOT_COMPUTE = dict.fromkeys(
    (
        "scaleup_name",
        "scaleup_gb_per_s_per_direction",
        "scaleup_peer_gb_per_s_per_direction",
        "scaleup_domain_gpus",
        "nic_gbit_per_s",
        "usd_per_gpu_hour",
        "usd_per_gpu_hour_low",
        "usd_per_gpu_hour_high",
    )
)
"""Accelerator fields that no shard's compute reads (its links and its prices): blanked in `Context.shards`'s key.
A field missing here only shares less; a listed one that the compute reads fails tests/test_shared_shards.py."""
SHARDS_KEPT = 256
"""Shard memos (`Context.shards`) kept, oldest dropped first: validation's rows have about 90 distinct."""
_SHARDS: Bounded[tuple[Any, ...], dict[tuple[Any, ...], Any]] = Bounded(SHARDS_KEPT)


class LayoutVars(NamedTuple):
    """Layout as numbers (floats or arrays): recompute 0/1/2 = none/selective/full, zero 0-3; recompute_layers k > 0
    with full recompute recomputes only the first k layers of each pipeline chunk (0: every layer)."""

    tp: Number
    pp: Number
    cp: Number
    dp: Number
    vp: Number
    mbs: Number
    gbs: Number
    recompute: Number
    zero: Number
    ep: Number = 1.0
    etp: Number = 1.0
    recompute_layers: Number = 0.0


class StepResult(NamedTuple):
    compute_s: Number
    tp_comm_exposed_s: Number
    cp_comm_exposed_s: Number
    pp_bubble_s: Number
    pp_comm_exposed_s: Number
    dp_comm_exposed_s: Number
    optimizer_s: Number
    other_s: Number
    forward_only_s: Number
    """A forward pass over one global batch with this layout (evaluation), no backward or optimizer."""
    memory: memory.MemoryBreakdown
    hbm_bytes: float
    ep_comm_exposed_s: Number = 0.0
    """MoE models: expert-parallel dispatch/combine (and expert-TP) communication not hidden behind compute."""

    @property
    def step_time_s(self) -> Number:
        return sum(_BREAKDOWN_OF(self)) + self.ep_comm_exposed_s  # the parts in BREAKDOWN's order, as before

    @property
    def fits(self) -> Number:
        return self.memory.total <= self.hbm_bytes


class _LayerTimes(NamedTuple):
    forward: Number
    backward: Number
    selective: Number
    forward_gemm: Number
    backward_gemm: Number
    wgrad_gemm: Number
    forward_attention: Number
    attention: Number
    shared_forward: Number = 0.0
    """A MoE layer's shared experts, forward: per MoE layer, not blended with the dense layers (the window of an
    exchange that cannot hide behind the whole layer: the 'alltoall' dispatcher's without the EP overlap of two
    micro-batches, `moe.exchange_windows`)."""
    shared_backward: Number = 0.0
    """Their backward, per MoE layer."""
    qkv_fprop: Number = 0.0
    """The GEMMs of a dense layer's TP blocks (DECOMPOSED_BLOCKS), each under which async TP decomposes a collective
    (`_decomposed_hiding`): the column-parallel layers' fprop, dgrad and wgrad, the row-parallel ones' fprop and
    dgrad."""
    qkv_dgrad: Number = 0.0
    qkv_wgrad: Number = 0.0
    proj_fprop: Number = 0.0
    proj_dgrad: Number = 0.0
    fc1_fprop: Number = 0.0
    fc1_dgrad: Number = 0.0
    fc1_wgrad: Number = 0.0
    fc2_fprop: Number = 0.0
    fc2_dgrad: Number = 0.0


def _is_gemm(op: Op) -> bool:
    return op.kind in ("gemm", "grouped_gemm")


def _is_attention(op: Op) -> bool:
    return op.kind == "attention"


def _is_wgrad(op: Op) -> bool:
    return op.name.endswith(".wgrad")


def _is_shared_expert(op: Op) -> bool:
    return op.name.startswith("shared_")


def _recomputed_selectively(op: Op) -> bool:
    return op.name in SELECTIVE_RECOMPUTE


def _layer_times(ctx: Context, sh: Shard, recipe: Recipe, rates: Rates) -> _LayerTimes:
    """One layer's times; for a MoE model the mean over its dense and MoE layers: their attention once, then the
    dense MLP and the MoE block by their shares (every field is a sum over operations, so the mean is exact)."""
    md = ctx.model
    if md.hybrid_pattern:
        return _hybrid_layer_times(ctx, sh, recipe, rates)
    if not md.is_moe:
        return _times_of(rates, _ops(layer_forward, sh, recipe), _ops(layer_backward, sh, recipe, ctx.frozen_base))
    attention = _times_of(
        rates, _ops(attention_block_forward, sh, recipe), _ops(attention_block_backward, sh, recipe, ctx.frozen_base)
    )
    block = _times_of(rates, _ops(moe.moe_block_forward, sh, recipe), _ops(moe.moe_block_backward, sh, recipe))
    if md.dense_layer_count:
        share = md.moe_layers / md.layers
        mlp = _times_of(
            rates, _ops(mlp_block_forward, sh, recipe), _ops(mlp_block_backward, sh, recipe, ctx.frozen_base)
        )
        mean = _LayerTimes(*((1 - share) * d + share * m for d, m in zip(mlp, block, strict=True)))
        block = mean._replace(shared_forward=block.shared_forward, shared_backward=block.shared_backward)
    return _LayerTimes(*(a + b for a, b in zip(attention, block, strict=True)))


def _hybrid_layer_times(ctx: Context, sh: Shard, recipe: Recipe, rates: Rates) -> _LayerTimes:
    """The mean layer of a hybrid pattern: each kind's block (its norm, mixer or MLP, residual) by its share of the
    layers; a MoE layer's shared experts stay per MoE layer (`_LayerTimes.shared_forward`)."""
    return _pattern_times(ctx, sh, recipe, rates, ctx.model.hybrid_pattern, ctx.model.layers)


def _pattern_times(ctx: Context, sh: Shard, recipe: Recipe, rates: Rates, pattern: str, divisor: int) -> _LayerTimes:
    """A pattern's blocks summed over its positions, over `divisor` (the layers, for the mean layer; 1 for an MTP
    module's whole pattern); a MoE layer's shared experts stay per MoE layer."""
    frozen = ctx.frozen_base
    blocks: dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = {  # (builder, its arguments after the recipe)
        "M": ((mamba.mamba_block_forward,), (mamba.mamba_block_backward, frozen)),
        "G": ((deltanet.gdn_block_forward,), (deltanet.gdn_block_backward, frozen)),
        "*": ((attention_block_forward,), (attention_block_backward, frozen)),
        "-": ((mlp_block_forward,), (mlp_block_backward, frozen)),
        "E": ((moe.moe_block_forward,), (moe.moe_block_backward,)),
    }
    summed: list[Number] = [0.0] * len(_LayerTimes._fields)
    shared: tuple[Number, Number] = (0.0, 0.0)
    for kind, count in hybrid.counts(pattern).items():
        if count:
            (forward, *forward_args), (backward, *backward_args) = blocks[kind]
            times = _times_of(
                rates, _ops(forward, sh, recipe, *forward_args), _ops(backward, sh, recipe, *backward_args)
            )
            summed = [m + count / divisor * x for m, x in zip(summed, times, strict=True)]
            shared = (times.shared_forward, times.shared_backward) if kind == "E" else shared
    return _LayerTimes(*summed)._replace(shared_forward=shared[0], shared_backward=shared[1])


DECOMPOSED_BLOCKS = (("qkv", "proj"), ("fc1", "fc2"))
"""A dense layer's TP blocks as (column-parallel, row-parallel) linear layers: the GEMMs async TP decomposes each
block's collectives under."""
_DECOMPOSED_FORWARD = frozenset(f"{linear}.fprop" for block in DECOMPOSED_BLOCKS for linear in block)
_DECOMPOSED_BACKWARD = frozenset(
    f"{linear}.{gemm}" for column, row in DECOMPOSED_BLOCKS for linear, gemm in
    ((column, "dgrad"), (column, "wgrad"), (row, "dgrad"))
)  # fmt: skip


def _times_of(rates: Rates, forward: Batched, backward: Batched) -> _LayerTimes:
    fwd = times_by(
        forward,
        rates,
        _DECOMPOSED_FORWARD,
        gemm=_is_gemm,
        attention=_is_attention,
        selective=_recomputed_selectively,
        shared=_is_shared_expert,
    )
    bwd = times_by(
        backward, rates, _DECOMPOSED_BACKWARD, gemm=_is_gemm, wgrad=_is_wgrad, attention=_is_attention,
        shared=_is_shared_expert,
    )  # fmt: skip
    return _LayerTimes(
        forward=fwd["total"],
        backward=bwd["total"],
        selective=fwd["selective"],
        forward_gemm=fwd["gemm"],
        backward_gemm=bwd["gemm"],
        wgrad_gemm=bwd["wgrad"],
        forward_attention=fwd["attention"],
        attention=fwd["attention"] + bwd["attention"],
        shared_forward=fwd["shared"],
        shared_backward=bwd["shared"],
        **{name.replace(".", "_"): fwd[name] for name in _DECOMPOSED_FORWARD},
        **{name.replace(".", "_"): bwd[name] for name in _DECOMPOSED_BACKWARD},
    )


def _mixed_layer_times(ctx: Context, sh: Shard, rates: Rates) -> _LayerTimes:
    """Average layer of the recipe: the share it keeps in BF16 (NVFP4's first and last layers) runs at BF16 speed."""
    quantised = _layer_times(ctx, sh, ctx.recipe, rates)
    bf16_share = _bf16_share(ctx.recipe, ctx.model)
    if bf16_share == 0:
        return quantised
    bf16 = _layer_times(ctx, sh, RECIPES["bf16"], rates)
    return _LayerTimes(*((1 - bf16_share) * q + bf16_share * b for q, b in zip(quantised, bf16, strict=True)))


def _bf16_share(recipe: Recipe, md: ModelSpec) -> float:
    """Share of the layers a quantised recipe keeps in BF16: its own first and last layers (NVFP4's), or the
    model's where it keeps more (ModelSpec.bf16_edge_layers)."""
    edges = md.bf16_edge_layers
    if not edges or not recipe.quantised:
        return recipe.bf16_layer_fraction(md.layers)
    return min(1.0, (max(recipe.bf16_first_layers, edges) + max(recipe.bf16_last_layers, edges)) / md.layers)


class ShardCompute(NamedTuple):
    """Compute of one shard: the mean layer, the LM head forward and backward, the embedding, one MTP module's
    layers."""

    layer: _LayerTimes
    head_forward: dict[str, Number]
    head_backward: dict[str, Number]
    embedding: Number
    mtp: _LayerTimes


def _shard_compute(ctx: Context, sh: Shard) -> ShardCompute:
    rates = Rates(ctx.hardware.accelerator, ctx.efficiency)  # once for the shard's passes
    layer = _mixed_layer_times(ctx, sh, rates)
    return ShardCompute(
        layer=layer,
        head_forward=times_by(_ops(head_forward, sh), rates, gemm=_is_gemm),
        head_backward=times_by(_ops(head_backward, sh, ctx.frozen_base), rates, gemm=_is_gemm),
        embedding=times_by(_ops(embedding_ops, sh), rates)["total"],
        mtp=_mtp_times(ctx, sh, rates, layer),
    )


def _mtp_times(ctx: Context, sh: Shard, rates: Rates, layer: _LayerTimes) -> _LayerTimes:
    """One MTP module's layers (its 2h -> h projection left out): a hybrid's MTP pattern summed by kind, else one
    mean layer (`layer`); in BF16 under a quantised recipe where the model keeps them so (`ModelSpec.mtp_bf16`)."""
    md = ctx.model
    recipe = RECIPES["bf16"] if md.mtp_bf16 and ctx.recipe.quantised else ctx.recipe
    if md.mtp_pattern:
        return _pattern_times(ctx, sh, recipe, rates, md.mtp_pattern, 1)
    return layer if recipe is ctx.recipe else _layer_times(ctx, sh, recipe, rates)


OPS_KEPT = 8192
"""Batched operations (`_ops`) kept, oldest dropped first: a fit's rows have ~2,000 passes, each fold's a few more."""
_OPS: Bounded[tuple[Any, ...], Batched] = Bounded(OPS_KEPT)


def _ops(build: Callable[..., list[Op]], sh: Shard, *args: Any) -> Batched:
    """`build(sh, *args)`'s operations, batched for pricing (compute.batched); where the shard's dimensions are
    numpy arrays, remembered by their values: the operations and their stacking depend on the shard alone, not on
    the efficiencies, and a fit prices each row's shard under new efficiencies ~400 times. Plain numbers have the
    shard memo (`Context.shards`); symbols and traced values are built every time."""
    dims = (sh.tp, sh.cp, sh.mbs, sh.ep, sh.etp)
    if not any(type(x).__module__ == "numpy" for x in dims):
        return batched(build(sh, *args))
    values = [(x.shape, x.dtype.str, x.tobytes()) if type(x).__module__ == "numpy" else x for x in dims]
    key = (build, args, sh._replace(tp=values[0], cp=values[1], mbs=values[2], ep=values[3], etp=values[4]))
    found = _OPS.get(key)
    return found if found is not None else _OPS.put(key, batched(build(sh, *args)))


def _distinct_shards(ctx: Context, sh: Shard, key: tuple[Number, ...]) -> ShardCompute:
    """`_shard_compute`, for arrays priced once per distinct (TP, CP, micro-batch, EP, ETP) and gathered back: a
    search block has thousands of rows (TP, CP, PP, DP, VP) but a few dozen shards, and the shard's ~500 operations
    are most of the array work. Element-wise formulas give each element the same number either way. Plain numbers
    read the table when a search on this context priced their shard already: the prediction after a search asks
    for its best layout's, which it would price again as floats (bench_campaign.py's six cold searched phases:
    their final predictions 4.1 ms before, 2.4 ms reading the table)."""
    # under a fit's variants no table: their arrays' distinct shards are not looked for; plain numbers have none
    found = None if _has_variants(ctx.efficiency) else _distinct(sh)
    if found is not None:
        columns, index = found
        shards = list(zip(*(c.tolist() for c in columns), strict=True))
        return _shard_table(ctx, sh).gather(shards, index)
    table: _ShardTable | None = ctx.shards.get(SHARD_TABLE)  # arrays under a fit's variants, or empty, miss it
    at = None if table is None or not all(type(x) in PLAIN for x in key) else table.position.get(key)
    return _shard_compute(ctx, sh) if table is None or at is None else table.one(at)


def _distinct(sh: Shard) -> tuple[list[Any], Any] | None:
    """The distinct (TP, CP, micro-batch, EP, ETP) shards among the elements of a shard's dimensions (numpy arrays
    and plain numbers, broadcast together), as one array per dimension with a value per shard, and each element's
    shard: what the compute (`_distinct_shards`) and the memory pass (`_shard_saved`) price once each. None where
    no dimension is a numpy array (plain numbers, symbols, traced values: one shard already) or there is no element."""
    dims = (sh.tp, sh.cp, sh.mbs, sh.ep, sh.etp)
    if not any(type(x).__module__ == "numpy" for x in dims):
        return None
    import numpy as np

    values, codes = [], np.zeros((), dtype=np.int64)
    for x in dims:  # each dimension's distinct values on its own (small) axes, then one code per element
        if type(x).__module__ != "numpy":  # a plain number (EP and ETP of a dense model): one value, code 0
            values.append(np.array([x], dtype=float))
            continue
        array = np.asarray(x, dtype=float)
        found, inverse = np.unique(array, return_inverse=True)
        values.append(found)
        codes = codes * len(found) + inverse.reshape(array.shape)
    if not codes.size:
        return None
    combinations = math.prod(len(v) for v in values)
    if combinations <= codes.size:  # a flag per combination: linear
        present = np.zeros(combinations, dtype=bool)
        present[codes.reshape(-1)] = True
        index, used = (np.cumsum(present) - 1)[codes], np.flatnonzero(present)
    else:  # a sub-block of a few rows across many TP, CP and micro-batches: sort the codes instead (the same shards)
        used, inverse = np.unique(codes, return_inverse=True)
        index = inverse.reshape(codes.shape)
    digits = np.unravel_index(used, [len(v) for v in values])
    return [v[d] for v, d in zip(values, digits, strict=True)], index


@dataclass
class _ShardTable:
    """Shards priced on one context, each once: a search prices the same (TP, CP, micro-batch, EP, ETP) in its
    floors, in its sub-blocks and in both of its blocks. Each batch of new shards is priced as arrays, as before;
    element-wise formulas give a shard the same numbers whatever else is in its batch."""

    shard: Shard
    context: Context
    position: dict[tuple[float, ...], int]
    template: ShardCompute | None = None
    plain: list[Any] = field(default_factory=list)
    """Per ShardCompute field (the layer's, the head's forward and backward, the embedding, the MTP module's): its
    number where no shard dimension reaches it, else None."""
    varying: Any = None
    """The other fields' values, a row per field and a column per shard: a gather takes every field's in one index
    (a search gathers ~60 fields some 20 times, each index of its own a numpy call)."""

    def add(self, shards: list[tuple[float, ...]]) -> None:
        """Price the shards not in the table yet, as one batch of arrays."""
        import numpy as np

        new = list(itertools.filterfalse(self.position.__contains__, shards))
        if new:
            tp, cp, mbs, ep, etp = (np.array(c) for c in zip(*new, strict=True))
            priced = _shard_compute(self.context, self.shard._replace(tp=tp, cp=cp, mbs=mbs, ep=ep, etp=etp))
            flat = [
                *priced.layer, *priced.head_forward.values(), *priced.head_backward.values(), priced.embedding,
                *priced.mtp,
            ]  # fmt: skip
            if self.template is None:  # a field that no shard dimension reaches stays a plain number
                self.template = priced
                self.plain = [None if isinstance(v, np.ndarray) and v.shape == tp.shape else v for v in flat]
            columns = np.stack([v for v, plain in zip(flat, self.plain, strict=True) if plain is None])
            self.varying = columns if self.varying is None else np.concatenate([self.varying, columns], axis=1)
            for s in new:
                self.position[s] = len(self.position)

    def one(self, at: int) -> ShardCompute:
        """The compute of the shard at position `at`, as plain floats."""
        picked = iter(self.varying[:, at].tolist())
        return self._compute([next(picked) if plain is None else plain for plain in self.plain])

    def gather(self, shards: list[tuple[float, ...]], index: Any) -> ShardCompute:
        """The compute of each element, `index` giving each element's place in `shards`."""
        import numpy as np

        self.add(shards)
        at = np.fromiter(map(self.position.__getitem__, shards), np.int64, len(shards))[index]  # C-level lookups
        picked = iter(self.varying[:, at])
        return self._compute([next(picked) if plain is None else plain for plain in self.plain])

    def _compute(self, values: list[Any]) -> ShardCompute:
        template = self.template
        assert template is not None
        layers, forward, backward = len(template.layer), len(template.head_forward), len(template.head_backward)
        return ShardCompute(
            _LayerTimes(*values[:layers]),
            dict(zip(template.head_forward, values[layers : layers + forward], strict=True)),
            dict(zip(template.head_backward, values[layers + forward : layers + forward + backward], strict=True)),
            values[layers + forward + backward],
            _LayerTimes(*values[layers + forward + backward + 1 :]),
        )


def price_shards(ctx: Context, shards: list[tuple[float, ...]]) -> None:
    """Price these (TP, CP, micro-batch, EP, ETP) shards into the context's table in one batch, ahead of the arrays
    that will gather them (a search's blocks, each of which would otherwise price its new shards as a batch of its
    own: the ~500 operations' fixed cost once per batch). The same numbers either way (`_ShardTable`)."""
    if shards and not _has_variants(ctx.efficiency):
        _shard_table(ctx, ctx.shard(1.0, 1.0, 1.0)).add(shards)


def _has_variants(eff: Efficiency) -> bool:
    """Whether the efficiencies are arrays (a fit's variants): another axis, which a shard table does not keep."""
    numpy = sys.modules.get("numpy")  # not imported: no efficiency is an array (and a prediction never imports it)
    return numpy is not None and any(isinstance(v, numpy.ndarray) for v in vars(eff).values())


SHARD_TABLE = ("shard table",)
"""The key of a context's `_ShardTable` among its shards (`Context.shards`)."""


def _shard_table(ctx: Context, sh: Shard) -> _ShardTable:
    memo = ctx.shards
    table: _ShardTable | None = memo.get(SHARD_TABLE)
    if table is None:
        table = memo[SHARD_TABLE] = _ShardTable(sh, ctx, {})
    return table


def _memoised(memo: dict[tuple[Any, ...], Any], part: str, key: tuple[Number, ...], compute: Callable[[], T]) -> T:
    """`compute()`, remembered in `memo` (a context's) under (part, key) when the key is plain numbers (arrays and
    symbols are priced every time)."""
    if not all(type(x) in PLAIN for x in key):
        return compute()
    found = memo.get((part, key))
    if found is None:
        found = memo[(part, key)] = compute()
    return found


def _links(ctx: Context, size: Number, stride: Number) -> GroupLinks:
    return _memoised(ctx.memo, "links", (size, stride), lambda: group_links(ctx.tiers, ctx.efficiency, size, stride))


class _Windows(NamedTuple):
    """Compute of one layer that each pass's TP and CP communication can hide behind."""

    tp_forward: Number
    tp_backward: Number
    cp_forward: Number
    cp_backward: Number


class _Comm(NamedTuple):
    """Communication of one layer on one rank: forward only, and the whole step's share (forward + backward)."""

    forward: Number
    layer: Number
    async_backward: Number = 0.0
    """The part of the backward that async TP overlaps without userbuffers: input all-gathers, dgrad reduce-scatters."""
    exposed_forward: Number = 0.0
    """Forward communication beside `forward` that no compute hides: the KV-head regrouping when TP exceeds the KV
    heads (`kv_regroup`), a Mamba layer's CP all-to-alls (its conv and scan wait for them)."""
    exposed_layer: Number = 0.0
    """The same beside `layer`: the step's share, forward and backward."""
    copies_forward: Number = 0.0
    """HBM copies the collectives make on the compute stream in the forward (`_tp_copies`): exposed whole."""
    copies_layer: Number = 0.0
    """The same for the step's share, forward and backward."""


def _tensor_parallel(
    ctx: Context, sh: Shard, links: GroupLinks, full_share: Number, selective: Number = 0.0
) -> tuple[_Comm, Number]:
    """TP with sequence parallelism: per TP block (attention, dense MLP) 1 all-gather + 1 reduce-scatter forward,
    2 all-gathers (input again for Wgrad, where the stack re-gathers it: Recipe.tp_wgrad_regather; output gradient)
    + 1 reduce-scatter backward, the forward's again in the layers a full recompute re-runs, and the forward's
    all-gathers again under per-op selective checkpointing
    (`selective` 1; its policy saves reduce-scatters, not all-gathers: precision.Recipe.per_op_sac); a MoE layer's
    experts have their own exchange (moe.tp_blocks_per_layer). Also returns one all-gather + reduce-scatter pair in
    BF16, what the LM head needs. The copies the stack's collectives make on the compute stream ride with them
    (`_tp_copies`)."""
    gather_in, gather, scatter = _tp_collectives(ctx, sh, links)
    forward, layer = _tp_layer(ctx, (gather_in, scatter, gather, scatter), full_share, selective)
    comm = _Comm(forward, layer, forward, 0.0, 0.0, *_tp_copies(ctx, sh, full_share, selective))
    if not _may_exceed(sh.tp, ctx.model.kv_heads):
        return comm, gather + scatter
    regroup_forward = kv_regroup(ctx.model, sh.tokens, sh.tp, links)
    regroup = 2 * regroup_forward + recomputed(full_share, regroup_forward)
    return comm._replace(exposed_forward=regroup_forward, exposed_layer=regroup), gather + scatter


def _tp_collectives(ctx: Context, sh: Shard, links: GroupLinks) -> tuple[Number, Number, Number]:
    """One TP block's collectives over a token x hidden activation: the all-gather feeding a column-parallel layer
    (in the recipe's gather format), the all-gather of an output gradient (in its gradient gather format: BF16 but
    under torchao's float8 TP) and a BF16 reduce-scatter."""
    activation = sh.tokens * ctx.model.hidden
    gather_in = all_gather(activation * ctx.recipe.tp_gather_bytes, links)
    gather = all_gather(activation * ctx.recipe.tp_grad_gather_bytes, links)
    scatter = reduce_scatter(activation * BF16_BYTES, links)
    return gather_in, gather, scatter


def _tp_copies(ctx: Context, sh: Shard, full_share: Number, selective: Number) -> tuple[Number, Number]:
    """The HBM copies DTensor's TP makes beside its collectives on the compute stream (precision.Recipe
    .tp_layout_copies), forward and whole layer, in the collectives' order (`_tensor_parallel`): vanilla TP reads
    and writes each gathered output and each scattered input whole (chunk and cat); async TP copies its shard into
    the symmetric-memory buffer per all-gather (1/TP of it) and reads the TP stacked partials of a reduce-scatter
    to write their sum (1 + 1/TP)."""
    rec = ctx.recipe
    if not rec.tp_layout_copies:
        return 0.0, 0.0
    activation = sh.tokens * ctx.model.hidden
    gather_in, gather = activation * rec.tp_gather_bytes, activation * rec.tp_grad_gather_bytes
    activation = activation * BF16_BYTES
    vanilla = (2 * gather_in, 2 * activation, 2 * gather, 2 * activation)
    gathered = (4 * gather_in / sh.tp, 4 * gather / sh.tp) if gathers_fuse(rec) else (vanilla[0], vanilla[2])
    fused = (gathered[0], activation * (1 + 1 / sh.tp), gathered[1], vanilla[3])
    forward, layer = _tp_layer(ctx, fused if decomposes(ctx) else vanilla, full_share, selective)
    rate = ctx.hardware.accelerator.hbm_bytes_per_s * ctx.efficiency.memory
    return forward / rate, layer / rate


def _tp_layer(
    ctx: Context, block: tuple[Number, Number, Number, Number], full_share: Number, selective: Number
) -> tuple[Number, Number]:
    """One layer's forward and whole-step share of a per-collective quantity (`block`, of one TP block: the input
    all-gather's, the output's reduce-scatter's, the output gradient's all-gather's and the input gradient's
    reduce-scatter's), counted as `_tensor_parallel` says."""
    gather_in, scatter, gather, scatter_back = block
    blocks = moe.tp_blocks_per_layer(ctx.model)
    forward = blocks * (gather_in + scatter)
    regather = gather_in if ctx.recipe.tp_wgrad_regather else 0.0
    layer = forward + blocks * (regather + gather + scatter_back) + recomputed(full_share, forward)
    if ctx.recipe.per_op_sac:
        layer = layer + selective * blocks * gather_in
    return forward, layer


def delayed_scaling(ctx: Context) -> float:
    """1 where the run's FP8 is priced with delayed scaling (no amax pass), else 0: the release's rule
    (Efficiency.delayed_scaling) unless the recipe fixes the scaling (inputs/stacks.py stack_recipe): 0 under current
    scaling and where the format has no per-tensor amax pass to skip (block scales, BF16), 1 where the stack took it
    away. explain's d_delayed and stack note; launch configures the recipe it says."""
    recipe = ctx.recipe
    if recipe.current_scaling or not recipe.delayed_scaling_capable:
        return 0.0
    if not recipe.amax_passes:
        return 1.0
    return float(ctx.efficiency.delayed_scaling)


def pp_sends_hidden(ctx: Context) -> float:
    """Share of the steady-state pipeline sends hidden behind compute: the shared `overlap_pp`, none where the release
    sends blocking (Recipe.pp_send_overlap off: inputs/features.py). The step and explain's eta_PP."""
    return ctx.efficiency.overlap_pp if ctx.recipe.pp_send_overlap else 0.0


def decomposes(ctx: Context) -> bool:
    """Whether TP's collectives hide behind their own GEMMs (precision.Recipe.tp_decomposed): a dense GQA layer's;
    other layers keep the whole pass as their window."""
    md = ctx.model
    return ctx.recipe.tp_decomposed and not (md.is_moe or md.hybrid_pattern or md.attention == "mla")


def gathers_fuse(recipe: Recipe) -> bool:
    """Whether async TP fuses an all-gather into the GEMM it feeds: the pass fuses only matmuls that consume the
    gathered tensor itself (micro_pipeline_tp._find_consumer_matmuls: an mm or a _scaled_mm, or one behind a
    reshape; torch 2.7.1 wheel). A quantised recipe that gathers BF16 (torchao's rowwise FP8: its float8 TP is
    tensorwise-only, precision.rowwise_recipe) casts the gathered tensor first, so the gather feeds casts and stays
    vanilla; its output gradient's all-gather alike. Its reduce-scatters are still fused: a _scaled_mm produces
    their input."""
    return not (recipe.quantised and recipe.tp_gather_bytes >= BF16_BYTES)


def _decomposed_hiding(
    ctx: Context, sh: Shard, links: GroupLinks, lt: _LayerTimes, full_share: Number, selective: Number
) -> tuple[Number, Number]:
    """The communication async TP's decomposition can hide in one layer, forward and backward: each collective up to
    the time of the GEMMs it runs under, sum of min(c, g) (`exposed` takes the overlap share of it). Per TP block:
    forward, the input all-gather under the column-parallel fprop and the reduce-scatter under the row-parallel
    one; backward, the output gradient's all-gather under the row-parallel dgrad and, where the stack re-gathers
    it, the input under its wgrad; a full recompute's forward again; per-op selective recompute's all-gather under
    the matmuls it re-runs. The input gradient's reduce-scatter hides behind nothing: it reduces the sum of the
    block's dgrads (torchtitan's Llama has wq, wk, wv and w1, w3 as separate linears), and the pass fuses a
    reduce-scatter only into the one matmul that produces its input (micro_pipeline_tp._find_producer_matmul:
    an mm, or an mm between reshapes; torch 2.7.1 wheel)."""
    gather_in, gather, scatter = _tp_collectives(ctx, sh, links)
    if not gathers_fuse(ctx.recipe):
        gather_in, gather = 0.0 * gather_in, 0.0 * gather
    regather = gather_in if ctx.recipe.tp_wgrad_regather else 0.0 * gather_in
    rerun = sac_recomputed_gemm_share(ctx.model, ctx.recipe, sh.tp) if ctx.recipe.per_op_sac else 0.0
    forward, backward = 0.0 * sh.tp, 0.0 * sh.tp
    for column, row in DECOMPOSED_BLOCKS:
        g = {name: getattr(lt, f"{linear}_{name}") for linear, name in
             ((column, "fprop"), (column, "dgrad"), (column, "wgrad"))}  # fmt: skip
        row_fprop, row_dgrad = getattr(lt, f"{row}_fprop"), getattr(lt, f"{row}_dgrad")
        block_forward = minimum(gather_in, g["fprop"]) + minimum(scatter, row_fprop)
        forward = forward + block_forward
        backward = (
            backward + minimum(gather, row_dgrad) + minimum(regather, g["wgrad"])
            + recomputed(full_share, block_forward) + selective * minimum(gather_in, rerun * g["fprop"])
        )  # fmt: skip
    return forward, backward


def _may_exceed(tp: Number, kv_heads: int) -> bool:
    """Whether some TP size of these layouts (a number, an array, or a symbol or traced value: unknown) exceeds the
    KV heads: the search's spaces of models whose KV heads no TP candidate exceeds skip the regrouping's arrays."""
    if isinstance(tp, float | int):
        return tp > kv_heads
    import numpy as np

    return bool((tp > kv_heads).any()) if isinstance(tp, np.ndarray) else True  # none for an empty array


def kv_regroup(md: ModelSpec, tokens: Number, tp: Number, links: GroupLinks) -> Number:
    """The all-gather of the QKV projection's output over TP (its backward a reduce-scatter of the same size) that
    Megatron-Core runs when TP exceeds the KV heads, so that each rank can take its group's query heads and its
    replicated K and V head (workload.kv_width): a plain NCCL collective in the attention module, which waits for
    it, not a userbuffers overlap. None (0) when TP divides the KV heads."""
    qkv = tokens * md.qkv_width * BF16_BYTES
    return where(tp > md.kv_heads, all_gather(qkv, links), 0.0)


def _exposed_comm(
    comm: _Comm, forward_window: Number, backward_window: Number, overlap: Number
) -> tuple[Number, Number]:
    """A layer's communication left exposed, forward and backward: what its windows of compute do not hide, and
    what nothing hides (`_Comm.exposed_forward`, `exposed_layer`)."""
    forward = exposed(comm.forward, forward_window, overlap) + comm.exposed_forward + comm.copies_forward
    backward = exposed(comm.layer - comm.forward, backward_window, overlap) + comm.exposed_layer - comm.exposed_forward
    return forward, backward + comm.copies_layer - comm.copies_forward


def _context_parallel(ctx: Context, sh: Shard, links: GroupLinks, full_share: Number) -> _Comm:
    """CP's exchange per layer (Recipe.cp_comm), the forward's again in the layers a full recompute re-runs.

    Ring ('p2p'): its hops (physics.ring) summed with nothing hidden; the step hides them one by one (`_ring_hops`).
    'all_gather': the whole sequence's K and V gathered forward, gathered again backward and their gradients
    reduce-scattered (the same bytes per rank as the ring, in collectives). 'a2a' (Ulysses): Q, K and V all-to-all'd
    from a sequence split to a head split and the output back, forward; their gradients the same way backward.

    A hybrid pattern's mean layer: the attention layers' exchange by their share, and each Mamba layer's all-to-alls
    (mamba.context_parallel_bytes; forward, and the same again for the gradients backward) by theirs, which no
    compute hides (`_Comm.exposed_forward`); MLP and MoE layers exchange nothing over CP."""
    forward, backward = _attention_exchange(ctx, sh, links)
    md = ctx.model
    if md.hybrid_pattern:
        kinds = hybrid.counts(md.hybrid_pattern)
        a2a = all_to_all(mamba.context_parallel_bytes(sh), links)
        share, blocking = kinds["*"] / md.layers, kinds["M"] / md.layers * a2a
        forward, backward = share * forward, share * backward
        layer = forward + backward + recomputed(full_share, forward)
        return _Comm(forward, layer, 0.0, blocking, 2 * blocking + recomputed(full_share, blocking))
    return _Comm(forward, forward + backward + recomputed(full_share, forward))


def _attention_exchange(ctx: Context, sh: Shard, links: GroupLinks) -> tuple[Number, Number]:
    """One attention layer's CP exchange, forward and backward (`_context_parallel`); the ring's is its hops' sum
    with nothing hiding them (physics.ring)."""
    md = ctx.model
    kv = _kv_block_bytes(md, sh)
    if ctx.recipe.cp_comm == "all_gather":  # a reduce-scatter costs what the all-gather of its output does
        gathered = all_gather(kv * sh.cp, links)
        return gathered, 2 * gathered
    if ctx.recipe.cp_comm == "a2a":
        swapped = all_to_all(sh.tokens * sum(attention_io_widths(md, sh.tp)) / sh.tp * BF16_BYTES, links)
        return swapped, swapped
    return ring_exposed(_kv_hops(kv, links), sh.cp, 0.0, 0.0)


def _kv_block_bytes(md: ModelSpec, sh: Shard) -> Number:
    """One rank's K and V of one attention layer: the block a ring passes on, the share of a gather it adds (MLA's
    up-projected keys and values, as TransformerEngine's attention receives them)."""
    _, keys, values, _ = attention_io_widths(md, sh.tp)
    return sh.tokens * (keys + values) / sh.tp * BF16_BYTES


def _kv_hops(kv_bytes: Number, links: GroupLinks) -> RingHops:
    """One attention layer's ring hop: a K, V block, and the block with its gradients in one call (physics.ring)."""
    return RingHops(send_recv(kv_bytes, links), send_recv(2 * kv_bytes, links))


def _ring_hops(ctx: Context, sh: Shard, links: GroupLinks) -> RingHops:
    """One hop of the CP ring in the mean layer (physics.ring): by the attention layers' share in a hybrid pattern."""
    md = ctx.model
    hops = _kv_hops(_kv_block_bytes(md, sh), links)
    share = hybrid.counts(md.hybrid_pattern)["*"] / md.layers if md.hybrid_pattern else 1.0
    return RingHops(share * hops.kv_s, share * hops.kv_and_grad_s)


class _RankParams(NamedTuple):
    """Parameters held by the first, last and busiest interior pipeline rank (all on one rank without PP)."""

    first: Number
    last: Number
    most: Number


def _rank_params(md: ModelSpec, tp: Number, pp: Number, stages: StageLayers) -> _RankParams:
    layer = (md.mean_layer_dense_params if md.hybrid_pattern else md.params_per_layer) / tp
    vocab_rows = padded_vocab(md, tp) / tp * md.hidden
    single = md.layers * layer + vocab_rows * (1 if md.tied_embeddings else 2) + md.norm_params
    first = where(equal(pp, 1), single, stages.first * layer + vocab_rows)
    last = where(equal(pp, 1), single, stages.last * layer + vocab_rows + md.norm_params)
    return _RankParams(first, last, maximum(maximum(first, last), stages.interior * layer))


def _moe_rank_params(md: ModelSpec, lv: LayoutVars, stages: StageLayers) -> tuple[_RankParams, _RankParams]:
    """A MoE model's parameters per rank (all, and the routed experts among them, sharded over EP x ETP): the mean
    layer's, the embedding and head, and on the last stage the MTP modules."""
    tp, pp = lv.tp, lv.pp
    share = md.moe_layers / md.layers
    experts = share * moe.expert_params_per_layer(md, lv.ep, lv.etp)
    dense = (1 - share) * md.params_per_layer + share * md.moe_layer_dense_params
    layer = (md.mean_layer_dense_params if md.hybrid_pattern else dense) / tp + experts
    mtp_moe = md.mtp_weight_sets * md.mtp_module_moe_layers  # MoE layers of the MTP modules' own weights
    mtp_experts = mtp_moe * moe.expert_params_per_layer(md, lv.ep, lv.etp)
    mtp = (md.mtp_params - mtp_moe * md.routed_expert_params_per_layer) / tp + mtp_experts
    vocab_rows = padded_vocab(md, tp) / tp * md.hidden
    single = md.layers * layer + vocab_rows * (1 if md.tied_embeddings else 2) + md.norm_params + mtp
    first = where(equal(pp, 1), single, stages.first * layer + vocab_rows)
    last = where(equal(pp, 1), single, stages.last * layer + vocab_rows + md.norm_params + mtp)
    held = _RankParams(first, last, maximum(maximum(first, last), stages.interior * layer))
    first_e = where(equal(pp, 1), md.layers * experts + mtp_experts, stages.first * experts)
    last_e = where(equal(pp, 1), md.layers * experts + mtp_experts, stages.last * experts + mtp_experts)
    most_e = where(equal(held.most, first), first_e, where(equal(held.most, last), last_e, stages.interior * experts))
    return held, _RankParams(first_e, last_e, most_e)


def _shards(recipe: Recipe, lv: LayoutVars) -> Number:
    """The DP x CP ranks over which a rank's ZeRO shards are spread: all of them, or with hybrid sharding
    (`Recipe.shard_group`, ZeRO-3 only) the group's, never more than there are."""
    if not recipe.shard_group:
        return lv.dp * lv.cp
    return where(lv.zero >= 3, minimum(recipe.shard_group, lv.dp * lv.cp), lv.dp * lv.cp)


def _expert_dp(lv: LayoutVars) -> Number:
    """Expert data-parallel ranks: the stage's TP x CP x DP ranks refolded as ETP x EP x EDP."""
    return lv.tp * lv.cp * lv.dp / (lv.ep * lv.etp)


def _trainable(ctx: Context, params: Number, layers: Number, tp: Number) -> Number:
    """Parameters that get gradients and optimizer state: all of them, or only the LoRA adapters."""
    if not ctx.frozen_base:
        return params
    return layers * ctx.model.lora_params_per_layer(ctx.lora_rank, ctx.lora_modules) / tp


class DpTerms(NamedTuple):
    """One group's DP collectives as `zero_exposed` hides them (seconds over the group's links, before overlap), and
    the counts they are issued in: what the step traces (`dp_terms`) and `perfmodel explain` names, in the order its
    listing gives them (the collectives, then their counts)."""

    reduce: Number
    """ZeRO-0's all-reduce of the gradients, bucket by bucket."""
    scatter: Number
    """The reduce-scatter of the gradients, bucket by bucket (ZeRO-1 and 2)."""
    gather_updates: Number
    """The all-gather of the updated parameters, bucket by bucket (ZeRO-1 and 2)."""
    unit_gathers: Number
    """ZeRO-3's all-gather of the rank's weights, unit by unit (0 where it runs tensor by tensor)."""
    unit_scatters: Number
    """ZeRO-3's reduce-scatter of the gradients, unit by unit (0 where it runs tensor by tensor)."""
    per_tensor: Number
    """One micro-batch's ZeRO-3 collectives tensor by tensor (`zero3_per_tensor_s`; 0 where it runs by unit)."""
    copies: Number
    """FSDP2's copies on the compute stream per micro-batch (`fsdp_copies_s`)."""
    replicas: Number
    """Hybrid sharding's all-reduce of the gradient shards across the groups, once a step."""
    units: Number
    """The units ZeRO-3 gathers and reduce-scatters a call each (the rank's layers)."""
    buckets: Number
    """Megatron DDP buckets (`dp_buckets`)."""


class DpWindows(NamedTuple):
    """The compute DP collectives hide behind (seconds), shared by every group of a step, and the share used; in the
    order `perfmodel explain` lists them, after the collectives (DpTerms)."""

    microbatches: Number
    mb_forward: Number
    """The elapsed forward of one micro-batch on the busiest rank."""
    sync_forward: Number
    """The forward a once-a-step parameter all-gather hides behind (`schedule.chunk_sync_window`)."""
    mb_backward: Number
    sync_backward: Number
    half_bubble: Number
    """Half the pipeline bubble: the once-a-step syncs use it too."""
    overlap: Number
    """The share of a window really used (Efficiency.overlap_dp)."""


def dp_terms(
    ctx: Context,
    links: GroupLinks,
    weights: Number,
    trainable: Number,
    replicas_s: Number = 0.0,
    gathers: Number = 2.0,
    units: Number = 1.0,
) -> DpTerms:
    """One group's DP collectives over `links` (the ranks a shard spans) for `zero_exposed`: a rank's `weights` and
    its `trainable` parameters' gradients; hybrid sharding's `replicas_s`; `gathers`: weight gathers per micro-batch
    of a ZeRO-3 run tensor by tensor (`zero3_gathers`); `units`: the layers ZeRO-3 gathers one call each."""
    recipe = ctx.recipe
    buckets = dp_buckets(trainable, links.size)
    grads = trainable * recipe.grad_reduce_bytes
    scatter = buckets * reduce_scatter(grads / buckets, links)
    gather_updates = buckets * all_gather(trainable * recipe.param_gather_bytes / buckets, links)
    reduce = buckets * all_reduce(grads / buckets, links, ctx.tiers)
    unit_gathers: Number = 0.0
    unit_scatters: Number = 0.0
    per_tensor: Number = 0.0
    if recipe.zero3_per_tensor:
        per_tensor = zero3_per_tensor_s(ctx, links, weights, trainable, gathers)
    else:
        unit_gathers = units * all_gather(weights * recipe.param_gather_bytes / units, links)
        unit_scatters = units * reduce_scatter(grads / units, links)
    copies = fsdp_copies_s(ctx, weights, trainable)
    return DpTerms(
        reduce, scatter, gather_updates, unit_gathers, unit_scatters, per_tensor, copies, replicas_s, units, buckets
    )


def zero_exposed(recipe: Recipe, t: DpTerms, w: DpWindows) -> tuple[Number, Number, Number, Number]:
    """Exposed DP communication of one group for ZeRO stages 0 to 3: the step prices its stage from these, and
    `perfmodel explain` prints its stage's formula by calling this with symbols (one source, so the two cannot
    drift apart).

    ZeRO-0 all-reduces the gradients; ZeRO-1 (distributed optimizer) reduce-scatters them and all-gathers the
    updated parameters once a step, behind the last backward and first forward micro-batch (plus half the bubble),
    in Megatron's buckets: each bucket pays its own collective latency, and the last gradient bucket and first
    parameter bucket have nothing to hide behind (`bucketed_exposed`); with an interleaved schedule each model
    chunk syncs as soon as its passes end, so the windows `sync_forward`/`sync_backward` span min(pp, m) micro-batch
    passes of the other chunks (`schedule.chunk_sync_window`);
    ZeRO-2 reduce-scatters after every micro-batch; ZeRO-3 also gathers the weights for every forward and backward,
    one wrapped unit (`units`: the rank's layers) at a time, each gather and gradient reduce-scatter its own call with
    its ring's latency, prefetched behind the unit before it, so the first gather and the last reduce-scatter are
    exposed (`bucketed_exposed`): FSDP2 (torch fully_shard per transformer block), Megatron-FSDP and MaxText's FSDP
    (a scan over layers) gather per layer, not the rank's weights in one call; FSDP2 adds its copies
    (`fsdp_copies_s`).
    Hybrid sharding (ZeRO-3 within a group of the links' size, replicated across groups) also all-reduces each
    rank's gradient shard across the replicas once a step (`replicas`), behind the last backward like ZeRO-0's.
    A recipe that runs ZeRO-3 tensor by tensor (DeepSpeed before 0.6.0) exposes its weight gathers per micro-batch
    and its reduce-scatters whole instead (`zero3_per_tensor_s`).
    """
    step_forward, step_backward = w.sync_forward + w.half_bubble, w.sync_backward + w.half_bubble
    zero0 = bucketed_exposed(t.reduce, t.buckets, step_backward, w.overlap)
    gather_first = bucketed_exposed(t.gather_updates, t.buckets, step_forward, w.overlap)
    zero1 = bucketed_exposed(t.scatter, t.buckets, step_backward, w.overlap) + gather_first
    zero2 = w.microbatches * bucketed_exposed(t.scatter, t.buckets, w.mb_backward, w.overlap) + gather_first
    if recipe.zero3_per_tensor:
        passes = t.per_tensor
    else:
        passes = bucketed_exposed(t.unit_gathers, t.units, w.mb_forward, w.overlap) + bucketed_exposed(
            t.unit_gathers + t.unit_scatters, t.units, w.mb_backward, w.overlap
        )
    if recipe.fsdp_copies:  # the terms are 0 without it; checked so explain's formula names no zero term
        passes = passes + t.copies
    zero3 = w.microbatches * passes
    if recipe.shard_group:
        zero3 = zero3 + bucketed_exposed(t.replicas, t.buckets, step_backward, w.overlap)
    return zero0, zero1, zero2, zero3


def _data_parallel(recipe: Recipe, zero: Number, t: DpTerms, w: DpWindows) -> Number:
    """Exposed DP communication of one group at the layout's ZeRO stage (`zero_exposed`)."""
    zero0, zero1, zero2, zero3 = zero_exposed(recipe, t, w)
    return where(equal(zero, 0), zero0, where(equal(zero, 1), zero1, where(equal(zero, 2), zero2, zero3)))


ZERO3_REUSE_DISTANCE_PARAMS = 1e9
"""DeepSpeed's stage3_max_reuse_distance default (runtime/zero/constants.py, 0.3.13-0.5.0 sdists): a gathered
parameter is kept when it is used again within this many parameters' worth of modules, else released and gathered
anew."""


def zero3_gathers(recompute: Number, layer_params: int) -> Number:
    """Weight gathers per micro-batch of DeepSpeed's ZeRO-3 (precision.Recipe.zero3_per_tensor): one for the forward
    and one for the backward (the rest of the model runs in between: released). A full recompute gathers each layer
    again for its re-run forward, and its backward then needs a third gather where the layer holds more than
    ZERO3_REUSE_DISTANCE_PARAMS (a smaller layer stays gathered from its re-run to its backward). Per layer, where
    DeepSpeed measures the distance per module: an approximation for layers near the distance."""
    third = 1.0 if layer_params > ZERO3_REUSE_DISTANCE_PARAMS else 0.0
    return 2.0 + where(equal(recompute, 2), third, 0.0)


def zero3_per_tensor_s(ctx: Context, links: GroupLinks, weights: Number, trainable: Number, gathers: Number) -> Number:
    """One micro-batch's ZeRO-3 collectives as DeepSpeed ran them before 0.6.0 (precision.Recipe.zero3_per_tensor;
    deepspeed 0.3.13 runtime/zero/partition_parameters.py Init._allgather_param and _reduce_scatter_gradient,
    stage3.py PartitionedParameterCoordinator.fetch_sub_module): `gathers` all-gathers and one reduce-scatter of
    every parameter tensor, a call each, all exposed. Each gather runs after a `torch.cuda.synchronize()` and each
    module's fetch ends with another, which waits for the compute and the gradient reduce-scatters in flight too, so
    nothing overlaps. The gathers name a list of per-rank output tensors and the reduce-scatters a list of inputs, so
    torch.distributed (ProcessGroupNCCL::allgather and ::reduce_scatter of PyTorch 1.8, recalled from the public
    code, not a stored copy) copies between them and one flat buffer with a copy kernel per rank: each call pays
    the group's size in kernels (at the fitted fixed cost per kernel) and reads and writes its tensor once more,
    besides its ring's latency and data (collectives.reduce_scatter). At hundreds of ranks the kernels and
    latencies outweigh the data. The rank's tensors (ModelSpec.tensors_per_layer per layer's worth of weights) are
    priced as equal calls."""
    tensors = maximum(1.0, weights / ctx.model.params_per_layer * ctx.model.tensors_per_layer)
    gathered, reduced = weights * ctx.recipe.param_gather_bytes, trainable * ctx.recipe.grad_reduce_bytes
    copy_kernels = links.size * ctx.efficiency.kernel_overhead_us * 1e-6
    copies = 2 * (gathers * gathered + reduced) / (ctx.hardware.accelerator.hbm_bytes_per_s * ctx.efficiency.memory)
    calls = gathers * all_gather(gathered / tensors, links) + reduce_scatter(reduced / tensors, links)
    return tensors * (calls + (gathers + 1) * copy_kernels) + copies


def fsdp_copies_s(ctx: Context, weights: Number, trainable: Number) -> Number:
    """FSDP2's copies on the compute stream per micro-batch (precision.Recipe.fsdp_copies), exposed whole: the
    forward's and the backward's all-gathered weights each read and written into the parameters, and the gradients
    read (as the rank holds them) and written into the reduce-scatter's input in the reduction's dtype."""
    if not ctx.recipe.fsdp_copies:
        return 0.0
    moved = 2 * 2 * weights * ctx.recipe.param_gather_bytes + trainable * (
        ctx.recipe.grad_buffer_bytes + ctx.recipe.grad_reduce_bytes
    )
    return moved / (ctx.hardware.accelerator.hbm_bytes_per_s * ctx.efficiency.memory)


DP_BUCKET_PARAMS = 40e6
DP_BUCKET_PARAMS_PER_RANK = 1e6
"""Megatron-Core DDP's default gradient bucket: max(40M, 1M x DP ranks) parameters
(megatron/core/distributed/distributed_data_parallel.py, `bucket_size` when overlap_grad_reduce is on)."""


def dp_buckets(params: Number, ranks: Number) -> Number:
    """Gradient (and parameter all-gather) buckets of a rank's `params` over `ranks` DP ranks: at least one."""
    return maximum(1.0, ceil(params / maximum(DP_BUCKET_PARAMS, DP_BUCKET_PARAMS_PER_RANK * ranks)))


def straggler_s(cv: float, ranks: Number, compute_s: Number) -> Number:
    """Expected wait for the slowest of `ranks` lock-step ranks whose compute time `compute_s` varies with
    coefficient of variation `cv`: the maximum of N normal draws exceeds their mean by ~cv x sqrt(2 ln N) x mean
    (0 for one rank, growing without bound but ever more slowly with N)."""
    return cv * sqrt(2 * math.log(2) * log2(maximum(ranks, 1.0))) * compute_s


def bucketed_exposed(comm_s: Number, buckets: Number, window_s: Number, overlap: float) -> Number:
    """Exposed time of a collective issued in `buckets` equal buckets behind `window_s` of compute: the part the
    window cannot hide, but never less than one bucket, the one that only starts when the window ends (the last
    gradient bucket after the backward, the first parameter bucket before the forward). One bucket is fully exposed.
    """
    return maximum(exposed(comm_s, window_s, overlap), comm_s / buckets)


LAYOUT_VARS = LayoutVars._fields
_FLOATS = frozenset((float,))
"""The compiled step takes floats (what `predict` passes); a layout of ints runs through the formulas."""


def evaluate(ctx: Context, lv: LayoutVars, trace: dict[str, Any] | None = None) -> StepResult:
    """Price one layout (floats) or many (arrays). `trace`, when given, receives the intermediate quantities by
    name, for `perfmodel explain`; it changes nothing in the result. Plain-number layouts run through the
    context's compiled program once it has one (`Context.program`): the same operations in the same order, without
    the Python calls."""
    if trace is None and _FLOATS.issuperset(map(type, lv)):  # one C-level pass: this runs once per prediction
        program = ctx.program()
        if program is not None:
            return program(*lv)
    return _evaluate(ctx, lv, trace)


def evaluate_times(ctx: Context, lv: LayoutVars) -> StepResult:
    """`evaluate` less the memory, which is left unpriced (NaN): for callers that priced it already or need none
    (the search after its memory-first pass, the batch pricing of measured rows). A quarter less array work."""
    return _evaluate(ctx, lv, memory_too=False)


_UNPRICED = memory.MemoryBreakdown(*(math.nan,) * len(memory.MemoryBreakdown._fields))


def _evaluate(ctx: Context, lv: LayoutVars, trace: dict[str, Any] | None = None, memory_too: bool = True) -> StepResult:
    """`evaluate` itself: the step's formulas, for floats, arrays, symbols and traced values alike."""
    md, rec, eff, acc = ctx.model, ctx.recipe, ctx.efficiency, ctx.hardware.accelerator
    tp, pp, cp, dp, vp, zero = *lv[:5], lv.zero
    sh, microbatches, stages = _per_rank(ctx, lv)
    compute, full, recompute_s, layer_compute = _shard_layer(ctx, sh, lv, stages)
    lt = compute.layer

    tp_links, cp_links = _links(ctx, tp, 1), _links(ctx, cp, tp)
    tp_comm, head_tp = _tensor_parallel(ctx, sh, tp_links, full, equal(lv.recompute, 1))
    cp_comm = _context_parallel(ctx, sh, cp_links, full)
    # Each pass's collectives hide behind that pass's kernels: TP behind the GEMMs, CP behind attention, forward
    # behind forward and backward (with a full recompute's forward) behind backward. A recipe without userbuffers
    # overlap exposes its forward TP collectives; in its backward only the async ones hide, behind the Wgrad GEMMs
    # (a window of min(async, Wgrad) hides exactly what exposed(async, Wgrad) would, and keeps one formula); a
    # recipe without that backward overlap either (torchtitan's vanilla TP) exposes them all.
    # Only the ring's hops hide behind attention, each behind its own step's (the recomputed forward's hops as the
    # forward's): a gather or an all-to-all must finish before the attention it feeds.
    userbuffers, ring = rec.tp_comm_overlap, rec.cp_comm == "p2p"
    windows = _Windows(
        tp_forward=lt.forward_gemm if userbuffers else 0.0 * tp,
        tp_backward=lt.backward_gemm + recomputed(full, lt.forward_gemm)
        if userbuffers
        else minimum(tp_comm.async_backward, lt.wgrad_gemm)
        if rec.tp_backward_overlap
        else 0.0 * tp,
        cp_forward=lt.forward_attention if ring else 0.0 * cp,
        cp_backward=lt.attention - lt.forward_attention if ring else 0.0 * cp,
    )
    tp_fwd, tp_bwd = _exposed_comm(tp_comm, windows.tp_forward, windows.tp_backward, eff.overlap_tp)
    tp_hidden = None
    if decomposes(ctx):  # async TP: each collective behind its own GEMMs, not the pass's
        tp_hidden = _decomposed_hiding(ctx, sh, tp_links, lt, full, equal(lv.recompute, 1))
        tp_fwd = tp_comm.forward - eff.overlap_tp * tp_hidden[0] + tp_comm.exposed_forward + tp_comm.copies_forward
        tp_bwd = tp_comm.layer - tp_comm.forward - eff.overlap_tp * tp_hidden[1] + tp_comm.exposed_layer
        tp_bwd = tp_bwd - tp_comm.exposed_forward + tp_comm.copies_layer - tp_comm.copies_forward
    cp_hops = _ring_hops(ctx, sh, cp_links) if ring else None
    if cp_hops is not None:  # each hop behind its own step's attention (physics.ring), the recomputed forward's again
        by_step = ring_exposed(cp_hops, cp, windows.cp_forward, windows.cp_backward)
        cp_fwd = by_step.forward_s + cp_comm.exposed_forward
        cp_bwd = (
            by_step.backward_s + recomputed(full, by_step.forward_s) + cp_comm.exposed_layer - cp_comm.exposed_forward
        )
    else:
        cp_fwd, cp_bwd = _exposed_comm(cp_comm, 0.0, 0.0, 0.0)
    tp_exposed, cp_exposed = tp_fwd + tp_bwd, cp_fwd + cp_bwd
    ep_fwd, ep_exposed = _expert_parallel(ctx, sh, lv, lt, recompute_s, full)

    # LM head and loss on the last stage (with its TP all-gather/reduce-scatter), embedding on the first.
    head_fwd, head_bwd, embed_compute = compute.head_forward, compute.head_backward, compute.embedding
    head_compute = _head_compute(ctx, compute, lv, full)
    head_comm = exposed(head_tp, head_fwd["gemm"] + head_bwd["gemm"], eff.overlap_tp)

    # The busiest rank sets the pace of the pipeline.

    # Each MTP depth, on the last stage: its module's layers, each exchanging over TP (and a hybrid's over CP) as the
    # mean layer does, and one more pass through the LM head.
    positions = len(md.mtp_pattern) or 1
    if md.mtp_layers:
        head_comm = head_comm + md.mtp_layers * (positions * tp_exposed + head_comm)
    mtp_cp = md.mtp_layers * positions * cp_exposed if md.mtp_pattern else 0.0

    # The MTP modules' MoE layers exchange tokens too: the mean layer's EP time counts only MoE layers' share.
    mtp_moe = md.mtp_layers * md.mtp_module_moe_layers
    mtp_ep = mtp_moe * ep_exposed * md.layers / md.moe_layers if mtp_moe else 0.0

    def rank(
        layers: Number, extra_compute: Number, extra_tp: Number, extra_ep: Number = 0.0, extra_cp: Number = 0.0
    ) -> tuple[Number, ...]:
        compute_part = _rank_compute(layers, layer_compute, extra_compute)
        parts = (compute_part, layers * tp_exposed + extra_tp, layers * cp_exposed + extra_cp)
        return (*parts, layers * ep_exposed + extra_ep) if md.is_moe else parts

    single = rank(md.layers, head_compute + embed_compute, head_comm, mtp_ep, mtp_cp)
    pipelined = _busiest(
        rank(stages.interior, 0.0, 0.0),
        rank(stages.first, embed_compute, 0.0),
        rank(stages.last, head_compute, head_comm, mtp_ep, mtp_cp),
    )
    mb_compute, mb_tp, mb_cp, *mb_ep = (where(equal(pp, 1), s, p) for s, p in zip(single, pipelined, strict=True))
    ep_mb = mb_ep[0] if mb_ep else 0.0  # a MoE model's exposed EP communication per micro-batch
    busiest_layers = where(equal(pp, 1), md.layers, stages.interior)
    # DP communication hides behind the elapsed forward and backward of a micro-batch: the compute and the TP/CP
    # communication exposed in that pass (the NICs are free then). Crediting the compute alone let TP, CP and DP all
    # hide behind the same kernels, so that faster compute could expose more communication than it saved.
    fwd_layer = lt.forward + tp_fwd + cp_fwd
    bwd_layer = lt.backward + recompute_s + tp_bwd + cp_bwd
    if md.is_moe:
        fwd_layer, bwd_layer = fwd_layer + ep_fwd, bwd_layer + ep_exposed - ep_fwd
    mb_forward = busiest_layers * fwd_layer
    mb_backward = busiest_layers * bwd_layer
    offload, offloaded_bytes = 0.0 * tp, 0.0 * tp
    if rec.offload_layers:  # PP 1 (OFFLOAD_RULE): every layer on this rank, the pass's elapsed time the window
        host_link = ctx.hardware.system.host_link_gb_per_s_per_direction
        # inputs/scenario.check_offload refuses a system without
        link_bytes_per_s = 1e9 * host_link.value if host_link else math.nan
        layer_bytes = _saved(ctx, sh, "none", 1.0)
        offloaded_bytes = rec.offload_layers * layer_bytes
        offload = offload_s(
            layer_bytes, rec.offload_layers, md.layers, link_bytes_per_s, acc.hbm_bytes_per_s * eff.memory,
            fwd_layer, bwd_layer,
        )  # fmt: skip
    pp_bubble = bubble_fraction(pp, vp, microbatches) * microbatches * (mb_compute + mb_tp + mb_cp + sum(mb_ep))

    # Pipeline sends: activations forward and gradients backward at every chunk boundary; the warm-up and
    # cool-down ones are on the critical path, the steady-state ones mostly overlap.
    pp_links = _links(ctx, pp, tp * cp * dp)
    p2p = send_recv(sh.tokens * md.hidden / tp * BF16_BYTES, pp_links)
    hidden = pp_sends_hidden(ctx)
    pp_comm = where(pp > 1, 2 * (pp - 1) * p2p + (1 - hidden) * 2 * microbatches * vp * p2p, 0.0)

    params, experts = _held_params(md, lv, stages)
    weights = params.most - (0.0 if experts is None else experts.most)  # the dense group's: routed experts apart
    trainable = _trainable(ctx, weights, busiest_layers, tp)
    shards = _shards(rec, lv)
    dp_links = _links(ctx, shards, tp)
    sync_forward, sync_backward = (chunk_sync_window(mb, pp, vp, microbatches) for mb in (mb_forward, mb_backward))
    windows_dp = DpWindows(
        microbatches, mb_forward, sync_forward, mb_backward, sync_backward, pp_bubble / 2, eff.overlap_dp
    )
    replicas_s: Number = 0.0
    if rec.shard_group:  # hybrid sharding: the gradient shards all-reduce across the groups
        replicas_s = all_reduce(trainable * rec.grad_reduce_bytes / shards, _links(ctx, dp * cp / shards, tp * shards),
                                ctx.tiers)  # fmt: skip
    gathers = zero3_gathers(lv.recompute, md.params_per_layer)
    terms = dp_terms(ctx, dp_links, weights, trainable, replicas_s, gathers, busiest_layers)
    dp_comm = _data_parallel(rec, zero, terms, windows_dp)

    # Optimizer step on this rank's shard, and the re-quantisation of the updated weights.
    step_params = where(zero >= 1, trainable / shards, trainable)
    if experts is not None:  # routed-expert gradients reduce over expert DP, at a stride of EP x ETP
        expert_trainable = 0.0 if ctx.frozen_base else experts.most
        edp_links = _links(ctx, _expert_dp(lv), lv.ep * lv.etp)
        # ZeRO-3 runs at PP 1 (RULES): every MoE layer on the rank, its experts a unit each
        expert_terms = dp_terms(ctx, edp_links, experts.most, expert_trainable, units=md.moe_layers)
        dp_comm = dp_comm + _data_parallel(rec, zero, expert_terms, windows_dp)
        step_params = step_params + where(zero >= 1, expert_trainable / _expert_dp(lv), expert_trainable)
    cast_bytes = FP32_BYTES + rec.weight_bytes if rec.quantised else 0.0
    optimizer = step_params * (OPTIMIZER_BYTES_PER_PARAM + cast_bytes) / (acc.hbm_bytes_per_s * eff.memory)

    # Evaluation: the forward pass of every micro-batch through the pipeline (its fill included), no optimizer.
    mb_forward_only = busiest_layers * fwd_layer + where(equal(pp, 1), head_fwd["total"] + embed_compute, 0.0)
    forward_only = (microbatches + (pp - 1) / vp) * mb_forward_only + where(pp > 1, (pp - 1) * p2p, 0.0)
    if trace is not None:
        trace.update(
            shard=sh, microbatches=microbatches, layer=lt, recompute_s=recompute_s, recompute_share=full, stages=stages,
            tp_links=tp_links, tp_comm=tp_comm, windows=windows, tp_hidden=tp_hidden, tp_exposed=tp_exposed,
            cp_links=cp_links, cp_comm=cp_comm, cp_hops=cp_hops, head_compute=head_compute,
            head_comm=head_comm, embed_compute=embed_compute, mb_compute=mb_compute, mb_tp=mb_tp, mb_cp=mb_cp,
            mb_ep=ep_mb, pp_links=pp_links, p2p=p2p, dp_links=dp_links, dp_windows=windows_dp,
            dp_terms=terms, replicas_s=replicas_s, gathers=gathers, params=params, weights=weights, trainable=trainable,
            step_params=step_params, mtp_cp=mtp_cp, offload_s=offload, offloaded_bytes=offloaded_bytes,
            optimizer_bytes_per_param=OPTIMIZER_BYTES_PER_PARAM + cast_bytes,
        )  # fmt: skip
        if experts is not None:
            trace.update(experts=experts, edp_links=edp_links, edp_terms=expert_terms,
                         expert_trainable=expert_trainable, mtp_ep=mtp_ep)  # fmt: skip

    slower = eff.vintage_factor  # a software release older than the reference vintage: every part takes longer
    peak_memory = _UNPRICED
    if memory_too:
        peak_memory = memory.peak(*_rank_memory(ctx, lv, stages, sh, microbatches, params, experts))
    compute_s = microbatches * mb_compute
    other = host_overhead_s(ctx) + straggler_s(eff.straggler_cv, tp * pp * cp * dp, compute_s) + microbatches * offload
    return StepResult(
        compute_s=slower * compute_s,
        tp_comm_exposed_s=slower * microbatches * mb_tp,
        cp_comm_exposed_s=slower * microbatches * mb_cp,
        pp_bubble_s=slower * pp_bubble,
        pp_comm_exposed_s=slower * pp_comm,
        dp_comm_exposed_s=slower * dp_comm,
        optimizer_s=slower * (optimizer + OPTIMIZER_KERNELS * eff.kernel_overhead_us * 1e-6),
        other_s=slower * other,
        forward_only_s=slower * forward_only,
        memory=peak_memory,
        hbm_bytes=acc.memory_bytes,
        ep_comm_exposed_s=slower * microbatches * ep_mb if mb_ep else 0.0,
    )


def host_overhead_s(ctx: Context) -> Number:
    """The per-step work outside the model that the host runs (data loader, loss and grad-norm reductions, logging,
    launches): `step_overhead_s`, none where the recipe replays the whole iteration as one CUDA graph, from the
    release whose configs do (efficiency.WARM_START_RELEASE, NVIDIA's v5.0 LoRA configs: stack_notes.md)."""
    eff = ctx.efficiency
    if not ctx.recipe.graph_captured:
        return eff.step_overhead_s
    return where(eff.released_before(WARM_START_RELEASE), eff.step_overhead_s, 0.0)


def _per_rank(ctx: Context, lv: LayoutVars) -> tuple[Shard, Number, StageLayers]:
    """What every entry point (`evaluate`, `step_floor`, `memory_need`) prices a rank from: its shard of each layer,
    its micro-batches per step and its pipeline stage's layers."""
    sh = ctx.shard(lv.tp, lv.cp, lv.mbs, lv.ep, lv.etp)
    return sh, lv.gbs / (lv.mbs * lv.dp), _stages(ctx, lv.pp, lv.vp)


def _stages(ctx: Context, pp: Number, vp: Number) -> StageLayers:
    """The pipeline ranks' layers; a hybrid pattern's in mean-layer units, its stages holding chunks of consecutive
    positions of kinds that cost unequally (hybrid.stage_layer_equivalents, weighed by each kind's forward FLOPs per
    token; only a hybrid without Mamba layers interleaves: the VP rule)."""
    md = ctx.model
    stages = stage_layers(md.layers, pp, vp, md.mtp_layers)
    if not md.hybrid_pattern:
        return stages
    weights = md.hybrid_kind_flops_per_token(ctx.seq_len)
    most = md.layers + UNEVEN_EXTRA_UNITS
    first, last, interior = hybrid.stage_layer_equivalents(md.hybrid_pattern, weights, most)
    at = hybrid.stage_index(pp, vp, most)
    return stages._replace(first=lookup(first, at), last=lookup(last, at), interior=lookup(interior, at))


def full_recompute_share(lv: LayoutVars, stages: StageLayers) -> Number:
    """Share of the layers a full recompute re-runs: 1 for every layer; with Megatron's block method
    (`recompute_method=block`, `recompute_num_layers=k`: the first k layers of each pipeline chunk recompute in
    full, the others keep their activations; megatron/core/transformer/transformer_block.py `_checkpointed_forward`,
    recalled from the public code, not a stored copy) k over the chunk's layers, at most 1; 0 without full recompute.
    """
    k = lv.recompute_layers
    share = 1.0 if every_layer(k) else where(k > 0, minimum(k / stages.per_chunk, 1.0), 1.0)
    return where(equal(lv.recompute, 2), share, 0.0)


def every_layer(recompute_layers: Number) -> bool:
    """Whether a layout's `recompute_layers` is the plain default 0 (a full recompute re-runs every layer). The
    block formulas are then folded away: they give the same numbers, but every layout of a search would pay their
    array operations (about a fifth of its memory pass). Arrays of k, and traced or symbolic values, take them."""
    return type(recompute_layers) in PLAIN and recompute_layers == 0


def _shard_layer(
    ctx: Context, sh: Shard, lv: LayoutVars, stages: StageLayers
) -> tuple[ShardCompute, Number, Number, Number]:
    """Compute of one layer and one micro-batch, recomputation included in the backward pass: the shard's compute
    (priced once per distinct shard), the share of layers fully recomputed, the recomputed part of the mean layer
    and the layer's total."""
    full, selective = full_recompute_share(lv, stages), equal(lv.recompute, 1)
    shard_key = (lv.tp, lv.cp, lv.mbs, lv.ep, lv.etp)
    compute = _memoised(ctx.shards, "shard", shard_key, lambda: _distinct_shards(ctx, sh, shard_key))
    lt = compute.layer
    recompute_s = _recompute_s(ctx, lt, full, selective, lv.tp)
    return compute, full, recompute_s, lt.forward + lt.backward + recompute_s


def _recompute_s(ctx: Context, lt: _LayerTimes, full: Number, selective: Number, tp: Number) -> Number:
    """What the backward re-runs of these layers: selective recompute's part, or the fully recomputed share's
    forward."""
    return where(selective, _selective_s(ctx, lt, tp), recomputed(full, lt.forward))


def sac_recomputed_gemm_share(md: ModelSpec, recipe: Recipe, tp: Number) -> Number:
    """Share of a dense layer's forward GEMM FLOPs that per-op selective checkpointing re-runs (precision.Recipe
    .per_op_sac; torchtitan 0.1.0 models/llama3/infra/parallelize.py `_save_list`, `_custom_policy`). Its policy
    saves every second `aten.mm` output of the seven in order (wq, wk, wv, wo, w1, w3, w2: the odd ones) and marks
    every other op to recompute, which torch.compile's partitioner always does where the backward reads the value
    (torch 2.7.1 _functorch/partitioners.py `must_recompute`). A quantised recipe's torchao linears run
    `aten._scaled_mm`, which the list does not name: none is saved. The backward reads q, k and v (attention's
    inputs), w1's and w3's outputs (SwiGLU's), and wo's to rebuild the residual the MLP's norm reads, unless TP
    leaves wo's output behind a reduce-scatter, which the list saves; it never reads w2's. So BF16 re-runs wk and
    w3 under TP (Llama 3.1 8B: 28.8%), wo too without; a quantised recipe wq, wk, wv, w1 and w3 (65.4%), wo too
    without TP."""
    h, kv, ffn = md.hidden, md.kv_dim, md.ffn
    wo = where(tp > 1, 0.0, h)
    rerun = (h + 2 * kv + 2 * ffn) if recipe.quantised else (kv + ffn)
    return (rerun + wo) / (2 * h + 2 * kv + 3 * ffn)


def _selective_s(ctx: Context, lt: _LayerTimes, tp: Number) -> Number:
    """The backward's recompute under selective recompute: Megatron's attention core (`_LayerTimes.selective`),
    or per-op SAC's forward less what its policy saves (attention and the matmuls it keeps)."""
    if not ctx.recipe.per_op_sac:
        return lt.selective
    saved_gemm = (1 - sac_recomputed_gemm_share(ctx.model, ctx.recipe, tp)) * lt.forward_gemm
    return lt.forward - lt.forward_attention - saved_gemm


def _head_compute(ctx: Context, compute: ShardCompute, lv: LayoutVars, full: Number) -> Number:
    """LM head and loss, forward and backward; each MTP depth adds its module's layers (recomputed as the others
    are: `full`, the share `_shard_layer` found fully recomputed) and one more pass through it."""
    head = compute.head_forward["total"] + compute.head_backward["total"]
    if not ctx.model.mtp_layers:
        return head
    mtp = compute.mtp
    recompute_s = _recompute_s(ctx, mtp, full, equal(lv.recompute, 1), lv.tp)
    return head + ctx.model.mtp_layers * (mtp.forward + mtp.backward + recompute_s + head)


def _rank_compute(layers: Number, layer_compute: Number, extra_compute: Number) -> Number:
    """A pipeline rank's compute per micro-batch: its layers and what else it runs (embedding, head)."""
    return layers * layer_compute + extra_compute


def step_floor(ctx: Context, lv: LayoutVars, links: bool = False, own_stage: bool = False) -> Number:
    """A lower bound on `evaluate(ctx, lv).step_time_s`, for a search that skips layouts it can prove are not the
    best. It does not depend on the ZeRO stage (but with `own_stage`), and costs the shard's compute.

    Why it holds: the step time is the sum, in BREAKDOWN's order then EP, of compute_s and parts that are each >= 0
    when the efficiencies are physical (`floor_holds`): exposed TP/CP/EP communication (`exposed` leaves
    comm x (1 - overlap) >= 0 of a comm >= 0), the bubble ((pp - 1) / (vp m) >= 0 times the busiest rank's sum),
    PP sends (0 or sends >= 0), DP communication (a maximum with a bucket >= 0), the optimizer (bytes / bandwidth and
    kernel launches) and other (step overhead >= 0 plus a straggler wait cv x sqrt(2 ln N) x compute >= 0).
    `_busiest` paces the pipeline by the rank whose compute plus exposed TP/CP/EP sums highest, so that sum is at
    least every rank's, and at least the largest rank compute (`most`; without PP the one rank's): compute_s and
    the exposed TP/CP/EP parts, m x the busiest's parts, add up to >= m x most, and the bubble, (pp - 1) / (vp m) x
    m x the busiest's sum, is >= the same factors times most. A pipeline's ranks differ by the LM head and the
    embedding and by uneven stages (Llama 3.1 70B at PP 8 and 8K tokens: the last rank's 10 layers and head are ~18%
    over the first's 10 layers; at PP 32 the busiest holds 3 layers, the ends 2): taking the largest, not the least
    as this did before, rules out at their floor every pipelined layout of bench_campaign.py's six phases but those
    at PP 2 and 4. The straggler wait is a multiple of compute_s, m x the busiest's compute, which is >= the least rank
    compute: this adds it at m x that least (for every N the wait would otherwise slip through the floor: at cv
    0.04 it is ~13% at 512). That is exact arithmetic; the step's parts are rounded one by one, so the floor keeps
    FLOOR_MARGIN under it. Every step of it grows with a layer's compute (sums, products by numbers >= 0, minima,
    maxima, selections by PP), so the floor of a layout without recompute (0.0) is under that of the same layout
    with any recompute mode, which only adds a recomputed part >= 0 to the layer's compute.

    `links`: the communication too, over the context's links, so floors kept across network what-ifs
    (search._prepared) leave it out. In the ranks' sums each layer's exposed TP, CP and EP communication at its
    least (`_layer_comm_least_s`: TP's grows with recompute, CP's and EP's are bounds of every mode); beside them the
    pipeline's sends (`_pp_least_s`, the step's own) and DP's exposed communication at its least (`_dp_least_s`: of
    every ZeRO stage, or with `own_stage` of the layout's), parts of the step that the sum above counts as >= 0.
    The exposed TP in bench_campaign.py's phases left the pipelined layouts' own floors 93-252 layouts a phase to
    price for memory instead of 231-1,119. GPT-OSS's were loose by what its experts' exchange exposes (nothing
    hides it: no shared experts, no EP overlap in its recipe), its ring's hops beside attention at head dim 64 and
    a 128-token window, and DP's gradient buckets: with them its search on 1,024 B200 prices 104,562 layouts in full
    instead of 1,748,083 (bench_search.py)."""
    sh, microbatches, stages = _per_rank(ctx, lv)
    compute, full, _, layer_compute = _shard_layer(ctx, sh, lv, stages)
    head_compute, embed_compute = _head_compute(ctx, compute, lv, full), compute.embedding
    eff = ctx.efficiency
    least, most = _rank_bounds(ctx, lv.pp, stages, layer_compute, head_compute, embed_compute)
    comm_s: Number = 0.0
    if links:  # the ranks' sums with each layer's least exposed communication; the pipeline's and DP's
        layer_comm = _layer_comm_least_s(ctx, sh, lv, compute.layer, full)
        _, most = _rank_bounds(ctx, lv.pp, stages, layer_compute + layer_comm, head_compute, embed_compute)
        comm_s = _pp_least_s(ctx, sh, lv, microbatches) + _dp_least_s(ctx, lv, stages, microbatches, own_stage)
    bubble = bubble_fraction(lv.pp, lv.vp, microbatches)
    wait_s = straggler_s(eff.straggler_cv, lv.tp * lv.pp * lv.cp * lv.dp, microbatches * least)
    return (
        eff.vintage_factor
        * ((microbatches + bubble * microbatches) * most + host_overhead_s(ctx) + wait_s + comm_s)
        * (1 - FLOOR_MARGIN)
    )


def _rank_bounds(
    ctx: Context, pp: Number, stages: StageLayers, layer: Number, head: Number, embed: Number
) -> tuple[Number, Number]:
    """The least and the largest of the pipeline ranks' `layer` per layer they hold, the head on the last rank and
    the embedding on the first (all of it on the one rank without PP), as `_busiest` weighs them."""
    single = _rank_compute(ctx.model.layers, layer, head + embed)
    interior = _rank_compute(stages.interior, layer, 0.0)
    first = _rank_compute(stages.first, layer, embed)
    last = _rank_compute(stages.last, layer, head)
    least = where(equal(pp, 1), single, minimum(interior, minimum(first, last)))
    return least, where(equal(pp, 1), single, maximum(interior, maximum(first, last)))


def _tp_least_s(ctx: Context, sh: Shard, tp: Number, full: Number, selective: Number) -> Number:
    """A lower bound on a layer's exposed TP communication (`_evaluate`'s tp_exposed): what `exposed` leaves of its
    collectives whatever their windows, (1 - overlap_tp) of them, and what nothing hides (`_Comm.exposed_layer`,
    `copies_layer`); 0 under async TP's decomposition (`decomposes`), whose hiding this does not bound. It grows
    with the recompute share and with selective recompute (they only add collectives)."""
    if decomposes(ctx):
        return 0.0
    comm, _ = _tensor_parallel(ctx, sh, _links(ctx, tp, 1), full, selective)
    return (1 - ctx.efficiency.overlap_tp) * comm.layer + comm.exposed_layer + comm.copies_layer


def _layer_comm_least_s(ctx: Context, sh: Shard, lv: LayoutVars, lt: _LayerTimes, full: Number) -> Number:
    """A lower bound on a layer's exposed TP, CP and EP communication, which the step adds to the layer's compute in
    each pipeline rank's sum (`_busiest`); it grows with recompute (the TP part) or does not read it."""
    tp = _tp_least_s(ctx, sh, lv.tp, full, equal(lv.recompute, 1))
    return tp + _cp_least_s(ctx, sh, lv, lt) + _ep_least_s(ctx, sh, lv, lt)


def _cp_least_s(ctx: Context, sh: Shard, lv: LayoutVars, lt: _LayerTimes) -> Number:
    """A lower bound on a layer's exposed CP communication (`_evaluate`'s cp_exposed) whatever the recompute mode:
    the ring's hops less their steps' attention (`ring_exposed` with the step's windows, which no recompute
    changes) and what nothing hides (a hybrid's Mamba all-to-alls), or a gather's or Ulysses's exchange whole; the
    step adds the recomputed forward's share (>= 0) to each."""
    links = _links(ctx, lv.cp, lv.tp)
    comm = _context_parallel(ctx, sh, links, 0.0)
    if ctx.recipe.cp_comm != "p2p":
        return comm.layer + comm.exposed_layer
    backward_attention = lt.attention - lt.forward_attention
    by_step = ring_exposed(_ring_hops(ctx, sh, links), lv.cp, lt.forward_attention, backward_attention)
    return by_step.forward_s + by_step.backward_s + comm.exposed_layer


def _ep_least_s(ctx: Context, sh: Shard, lv: LayoutVars, lt: _LayerTimes) -> Number:
    """A lower bound on the mean layer's exposed EP communication (`_expert_parallel`'s whole step) whatever the
    recompute mode: the forward exchange behind its window, and the backward's at its least (the forward's bytes:
    a full recompute only adds its share) behind the widest window any mode gives it (the backward with the larger
    of selective recompute's part and the whole forward; the shared experts' forward recomputed whole). `exposed`
    grows with the communication and shrinks with the window, so each part is under the step's."""
    md = ctx.model
    if not md.is_moe:
        return 0.0
    ep_links = _links(ctx, lv.ep, lv.etp)
    forward, _ = moe.expert_comm(sh, ep_links, _links(ctx, lv.etp, 1), 0.0)
    widest = lt.backward + maximum(_selective_s(ctx, lt, lv.tp), lt.forward)
    shared = (lt.shared_forward, lt.shared_backward)
    window_fwd, window_bwd = moe.exchange_windows(md, (lt.forward, widest), shared, 1.0)
    eta = moe.ep_overlap(ctx.efficiency, ep_links)
    return md.moe_layers / md.layers * (exposed(forward, window_fwd, eta) + exposed(forward, window_bwd, eta))


def _pp_least_s(ctx: Context, sh: Shard, lv: LayoutVars, microbatches: Number) -> Number:
    """The step's pipeline sends (`_evaluate`'s pp_comm), which read neither the recompute mode nor the ZeRO stage."""
    p2p = send_recv(sh.tokens * ctx.model.hidden / lv.tp * BF16_BYTES, _links(ctx, lv.pp, lv.tp * lv.cp * lv.dp))
    sends = 2 * (lv.pp - 1) * p2p + (1 - pp_sends_hidden(ctx)) * 2 * microbatches * lv.vp * p2p
    return where(lv.pp > 1, sends, 0.0)


def _dp_least_s(ctx: Context, lv: LayoutVars, stages: StageLayers, microbatches: Number, own_stage: bool) -> Number:
    """A lower bound on the step's exposed DP communication (`_evaluate`'s dp_comm, the dense group's and the routed
    experts') whatever the ZeRO stage and recompute mode: the least over the stages of `_zero_least_s`, the groups'
    collectives priced as the step prices them (`dp_terms`; ZeRO-3 tensor by tensor at its two gathers, the
    fewest any mode makes)."""
    md = ctx.model
    params, experts = _held_params(md, lv, stages)
    busiest_layers = where(equal(lv.pp, 1), md.layers, stages.interior)
    weights = params.most - (0.0 if experts is None else experts.most)
    trainable = _trainable(ctx, weights, busiest_layers, lv.tp)
    terms = dp_terms(ctx, _links(ctx, lv.dp * lv.cp, lv.tp), weights, trainable, units=busiest_layers)
    stages_s = _zero_least_s(ctx, terms, microbatches)
    if experts is not None:
        expert_trainable = 0.0 if ctx.frozen_base else experts.most
        edp_links = _links(ctx, _expert_dp(lv), lv.ep * lv.etp)
        expert_terms = dp_terms(ctx, edp_links, experts.most, expert_trainable, units=md.moe_layers)
        stages_s = tuple(a + b for a, b in zip(stages_s, _zero_least_s(ctx, expert_terms, microbatches), strict=True))
    zero0, zero1, zero2, zero3 = stages_s
    if own_stage:
        zero = lv.zero
        return where(equal(zero, 0), zero0, where(equal(zero, 1), zero1, where(equal(zero, 2), zero2, zero3)))
    return minimum(minimum(zero0, zero1), minimum(zero2, zero3))


def _zero_least_s(ctx: Context, t: DpTerms, microbatches: Number) -> tuple[Number, Number, Number, Number]:
    """Lower bounds on `zero_exposed`'s four stages whatever their windows: each bucketed collective leaves at least
    (1 - overlap_dp) of itself and one bucket (`bucketed_exposed`), ZeRO-3 tensor by tensor and FSDP2's copies are
    window-free; hybrid sharding's ZeRO-3 (another group's links, and the replicas' all-reduce) is bounded by 0."""
    rec, overlap = ctx.recipe, ctx.efficiency.overlap_dp

    def least(comm_s: Number, buckets: Number) -> Number:
        return maximum((1 - overlap) * comm_s, comm_s / buckets)

    gather_first = least(t.gather_updates, t.buckets)
    zero0 = least(t.reduce, t.buckets)
    zero1 = least(t.scatter, t.buckets) + gather_first
    zero2 = microbatches * least(t.scatter, t.buckets) + gather_first
    if rec.zero3_per_tensor:
        passes = t.per_tensor
    else:
        passes = least(t.unit_gathers, t.units) + least(t.unit_gathers + t.unit_scatters, t.units)
    if rec.fsdp_copies:
        passes = passes + t.copies
    return zero0, zero1, zero2, 0.0 * zero0 if rec.shard_group else microbatches * passes


FLOOR_MARGIN = 1e-6
"""Relative slack `step_floor` leaves under the step (and `least_floor`, twice it, under step_floor): far more than
the rounding of either side (a few dozen operations, each within 1e-16 relative), far less than what tells layouts
apart."""


def least_floor(ctx: Context, lv: LayoutVars, mbs: Any, links: bool = False) -> Any:
    """A lower bound, per layout of `lv` (one axis; its micro-batch and recompute are not read), on `step_floor`
    without recompute (0.0) at every micro-batch size in `mbs`, for a search to drop the layouts it rules out before
    it prices their floors: the compute per sequence of each distinct shard's layer, head and embedding, then a few
    operations per layout.

    Why it holds: step_floor is vf x compute + vf x bubble + vf x (host + wait), with compute the m = gbs / (mbs x
    dp) micro-batches' largest rank compute. A rank's compute is its layers x layer plus its head or embedding (all
    three without PP), each >= mbs x its least per sequence over `mbs` (q, h, e), so the largest is >= mbs x
    `most`, the largest of the ranks' L x q (+ h, + e), and compute >= gbs / dp x most; the bubble is (pp - 1) / (vp
    x m) x m x that largest >= (pp - 1) / vp x most (mbs >= 1); host is the step overhead (`host_overhead_s`: none
    for a graph-captured step), the wait a multiple >= 0 of m x the least rank compute >= gbs / dp x `fewest`
    (`straggler_s`). That is exact arithmetic; step_floor keeps FLOOR_MARGIN under its own, and this twice that
    under this, so that it stays under step_floor as floating point computes both.

    `links`: under step_floor with `links`. Each layer's least exposed communication per sequence joins its compute
    in `most` (the same argument: step_floor adds it to the layer in the ranks' sums, and each shard's is priced at
    every micro-batch in `mbs`; the wait keeps the compute alone), and DP's least (`_dp_least_s`, of every ZeRO
    stage) at the fewest micro-batches of any size in `mbs`, under step_floor's: its ZeRO-2 and ZeRO-3 bounds grow
    with the micro-batches, the others do not read them. The pipeline's sends are left out (a few percent)."""
    import numpy as np

    eff = ctx.efficiency
    tp, pp, cp, dp, vp, ep, etp = np.broadcast_arrays(lv.tp, lv.pp, lv.cp, lv.dp, lv.vp, lv.ep, lv.etp)
    shards = np.stack([tp, cp, ep, etp]).astype(np.int64)  # whole numbers: a few distinct shards in many layouts
    codes = np.ravel_multi_index(shards, shards.max(axis=1) + 1)
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    each = shards[:, first].astype(float)[:, :, None]
    sizes = np.asarray(mbs, dtype=float)[None, :]
    grid = LayoutVars(each[0], 1.0, each[1], 1.0, 1.0, sizes, lv.gbs, 0.0, 0.0, each[2], each[3])
    sh, _, stages = _per_rank(ctx, grid)
    compute, full, _, layer_compute = _shard_layer(ctx, sh, grid, stages)
    head, embed = _head_compute(ctx, compute, grid, full), compute.embedding
    at = inverse.reshape(tp.shape)
    layer, head, embed = (np.min(x / sizes, axis=1)[at] for x in (layer_compute, head, embed))
    row_stages = _stages(ctx, pp, vp)
    fewest, most = _rank_bounds(ctx, pp, row_stages, layer, head, embed)
    comm_s: Any = 0.0
    if links:  # the layer with its least exposed communication; DP's at the fewest micro-batches (it grows with them)
        layer_comm_s = _layer_comm_least_s(ctx, sh, grid, compute.layer, full)
        layer_with_comm = np.min((layer_compute + layer_comm_s) / sizes, axis=1)[at]  # seconds per sequence, as `layer`
        _, most = _rank_bounds(ctx, pp, row_stages, layer_with_comm, head, embed)
        largest = float(np.max(sizes))
        rows = LayoutVars(tp, pp, cp, dp, vp, largest, lv.gbs, 0.0, 0.0, ep, etp)
        comm_s = _dp_least_s(ctx, rows, row_stages, lv.gbs / (largest * dp), False)
    wait = straggler_s(eff.straggler_cv, tp * pp * cp * dp, lv.gbs / dp * fewest)
    bound = (lv.gbs / dp + (pp - 1) / vp) * most + host_overhead_s(ctx) + wait + comm_s
    return eff.vintage_factor * bound * (1 - 2 * FLOOR_MARGIN)


def floor_holds(eff: Efficiency) -> bool:
    """Whether `step_floor` is a bound for these efficiencies: overlaps are shares of a window, overheads and the
    straggler spread are >= 0 (a calibration's bounds keep them so; a hand-made Efficiency may not)."""
    overlaps = (eff.overlap_tp, eff.overlap_dp, eff.overlap_pp, eff.overlap_ep)
    overheads = (eff.step_overhead_s, eff.straggler_cv, eff.kernel_overhead_us, eff.memory, eff.scaleup, eff.scaleout)
    plain = all(isinstance(v, float | int) for v in (*overlaps, *overheads, eff.vintage_factor))
    return plain and all(0 <= o <= 1 for o in overlaps) and all(v >= 0 for v in overheads) and eff.vintage_factor > 0


def _held_params(md: ModelSpec, lv: LayoutVars, stages: StageLayers) -> tuple[_RankParams, _RankParams | None]:
    """Parameters per rank, and (MoE models) the routed experts among them."""
    return _moe_rank_params(md, lv, stages) if md.is_moe else (_rank_params(md, lv.tp, lv.pp, stages), None)


def memory_need(ctx: Context, lv: LayoutVars) -> Number:
    """The memory total that `evaluate` prices for these layouts (`evaluate(ctx, lv).memory.total`), alone: the
    same functions on the same inputs, so the same numbers element by element, at a fifth of the work. The search
    uses it to drop the layouts that do not fit before it prices the rest in full (most of a large model's valid
    layouts do not fit). A plain-number layout's is kept on the context: validation's rows on one context try the
    same plausible layouts (1,750 asked, 817 distinct)."""
    return _memoised(ctx.memo, "memory need", lv, lambda: _memory_need(ctx, lv))


def _memory_need(ctx: Context, lv: LayoutVars) -> Number:
    """`memory_need` itself."""
    sh, microbatches, stages = _per_rank(ctx, lv)
    return memory.peak_total(*_rank_memory(ctx, lv, stages, sh, microbatches, *_held_params(ctx.model, lv, stages)))


def _saved(ctx: Context, sh: Shard, mode: str, layers: Number) -> Number:
    """The activations `layers` layers save for their backward, one micro-batch, under recompute `mode`: what
    activation offload copies to the host (the memory estimate holds the same, worked out per shard: _shard_saved)."""
    return memory.held(_layer_saved(ctx, sh), mode, layers)


def _layer_saved(ctx: Context, sh: Shard) -> Callable[[str], Number]:
    """What one (mean) layer of this shard keeps per recompute mode (`memory.held`'s `per_layer`)."""
    md, recipe = ctx.model, ctx.recipe
    if md.is_moe or md.hybrid_pattern:
        return lambda mode: moe.mean_layer_saved(sh, recipe, mode)
    extra = (ctx.frozen_base, ctx.seq_len, ctx.adapters, ctx.lora_rank)
    return lambda mode: memory.layer_saved(md, recipe, mode, sh.tokens, sh.tp, *extra)


def _shard_saved(ctx: Context, sh: Shard) -> Callable[[str], Number]:
    """`_layer_saved`, each mode worked out once: the memory pass asks for a mode's once per candidate rank (first
    and last) and again for a full recompute's working layer. For arrays, once per distinct (TP, CP, micro-batch, EP,
    ETP) and gathered back, as `_distinct_shards` prices compute: DeepSeek-V3's memory slices on 4,096 GB300 have
    a median 116,500 (row, micro-batch) cells but 3,200 shards, and its mean layer, priced six times over every
    cell, was 40% of the memory pass. Element-wise formulas give each element the same number either way."""
    found = _distinct(sh)
    if found is None:
        per_layer, index = _layer_saved(ctx, sh), None
    else:
        (tp, cp, mbs, ep, etp), index = found
        per_layer = _layer_saved(ctx, sh._replace(tp=tp, cp=cp, mbs=mbs, ep=ep, etp=etp))
    modes: dict[str, Number] = {}

    def saved(mode: str) -> Number:
        if mode not in modes:
            value = per_layer(mode)
            modes[mode] = value if index is None or isinstance(value, int | float) else value[index]
        return modes[mode]

    return saved


def _expert_parallel(
    ctx: Context, sh: Shard, lv: LayoutVars, lt: _LayerTimes, recompute_s: Number, full_share: Number
) -> tuple[Number, Number]:
    """Exposed EP (and expert-TP) communication of the mean layer: (forward, whole step); zero for dense models.

    Each pass's all-to-alls hide behind the compute that can run beside them (`moe.exchange_windows`: the pass's
    compute for the flex dispatcher or the EP overlap of two micro-batches, else the shared experts'), up to the
    `overlap_ep` share, or `overlap_dp` for an EP group across scale-up domains (`moe.ep_overlap`)."""
    md = ctx.model
    if not md.is_moe:
        return 0.0, 0.0
    ep_links = _links(ctx, lv.ep, lv.etp)
    etp_links = _links(ctx, lv.etp, 1)
    forward, layer = moe.expert_comm(sh, ep_links, etp_links, full_share)
    share, eta = md.moe_layers / md.layers, moe.ep_overlap(ctx.efficiency, ep_links)
    layer_s, shared_s = (lt.forward, lt.backward + recompute_s), (lt.shared_forward, lt.shared_backward)
    window_fwd, window_bwd = moe.exchange_windows(md, layer_s, shared_s, full_share)
    exposed_fwd = share * exposed(forward, window_fwd, eta)
    exposed_bwd = share * exposed(layer - forward, window_bwd, eta)
    return exposed_fwd, exposed_fwd + exposed_bwd


def _busiest(*ranks: tuple[Number, ...]) -> tuple[Number, ...]:
    """The candidate rank whose parts sum highest (element-wise for arrays)."""
    best = ranks[0]
    for other in ranks[1:]:
        take = sum(other) > sum(best)
        best = tuple(where(take, o, b) for o, b in zip(other, best, strict=True))
    return best


def _rank_memory(
    ctx: Context,
    lv: LayoutVars,
    stages: StageLayers,
    sh: Shard,
    microbatches: Number,
    params: _RankParams,
    experts: _RankParams | None,
) -> tuple[memory.MemoryBreakdown, memory.MemoryBreakdown]:
    """Memory of the first rank (most activations in flight) and of the last (the logits); the larger one counts
    (`memory.peak`, `memory.peak_total`).

    A MoE model's routed-expert weights, gradients and optimizer state shard over expert DP, the rest over DP x CP.
    """
    md, rec, tp, pp, vp, tokens = ctx.model, ctx.recipe, lv.tp, lv.pp, lv.vp, sh.tokens
    single_rank = equal(pp, 1)
    kept = md.layers - rec.offload_layers  # the offloaded layers' activations wait in host memory (physics/offload.py)
    in_flight_first = where(single_rank, kept, chunks_in_flight(pp, vp, microbatches) * stages.per_chunk)
    in_flight_last = where(single_rank, kept, where(vp > 1, (vp - 1) * pp + 1, 1) * stages.per_chunk)

    block_share = None if every_layer(lv.recompute_layers) else full_recompute_share(lv, stages)

    saved = _shard_saved(ctx, sh)

    def activations(layers: Number) -> Number:
        none, selective, full = (memory.held(saved, mode, layers) for mode in ("none", "selective", "full"))
        if block_share is not None:
            edge = memory.held(saved, "full", 0.0)
            full = where(block_share < 1, memory.block_recompute(block_share, none, full, edge), full)
        return where(equal(lv.recompute, 2), full, where(equal(lv.recompute, 1), selective, none))

    def breakdown(held: Number, rank_layers: Number, acts: Number, expert: Number = 0.0) -> memory.MemoryBreakdown:
        dense = held - expert if md.is_moe else held
        trainable = _trainable(ctx, dense, rank_layers, tp)
        per_layer = md.tensors_per_layer if rec.zero3_per_tensor else 1  # ZeRO-3's units: layers, or tensors
        state = memory.model_state(dense, trainable, rec, lv.zero, _shards(rec, lv), rank_layers * per_layer)
        if md.is_moe:
            trained = 0.0 * expert if ctx.frozen_base else expert
            units = rank_layers * md.moe_layers / md.layers * per_layer  # the rank's MoE layers, in mean-layer units
            shards = memory.model_state(expert, trained, rec, lv.zero, _expert_dp(lv), units)
            state = tuple(a + b for a, b in zip(state, shards, strict=True))
        return memory.MemoryBreakdown(*state, acts, memory.RUNTIME_RESERVED_BYTES + 0.0 * tp)

    # The last rank's MTP depths keep their module's layers (in mean-layer units) and their own logits, each depth's
    # loss saving its softmax for the backward as the main head's does.
    logits = memory.logits_bytes(tokens, padded_vocab(md, tp) / tp, rec.fused_cross_entropy)
    mtp_layers, mtp_logits = md.mtp_layers * (len(md.mtp_pattern) or 1), md.mtp_layers * logits
    first_layers = where(single_rank, md.layers, stages.first)
    last_layers = where(single_rank, md.layers, stages.last)
    first_e, last_e = (0.0, 0.0) if experts is None else (experts.first, experts.last)
    first_acts = activations(in_flight_first + where(single_rank, mtp_layers, 0.0))
    first_acts = first_acts + where(single_rank, logits + mtp_logits, 0.0)
    first = breakdown(params.first, first_layers, first_acts, first_e)
    last = breakdown(params.last, last_layers, activations(in_flight_last + mtp_layers) + logits + mtp_logits, last_e)
    return first, last
