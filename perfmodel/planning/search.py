"""Layout search: every valid layout of a scenario, priced at once with numpy through the same `step.evaluate`.

The space is enumerated as blocks of broadcasting axes, one block per GPU count, global batch and "pipelined or
not": (TP, CP, PP, DP, VP) rows x micro-batch x recompute x ZeRO. numpy then computes each term of the step model only
over the axes it depends on (a layer's compute over rows x micro-batch, not over recompute x ZeRO), which is what
makes a million layouts a second possible. The validity rules (`parallel.RULES`, the ones `predict` explains) mask
each block (a micro-batch that does not divide GBS / DP, ZeRO-3 with PP, ...) and trim the axis values no valid
layout uses; memory is priced with the rest and masks what does not fit.

Search-space choices (not validity rules): TP stays inside one scale-up domain (a TP group across NICs is never
faster than PP or DP there); every divisor of the GPU count is tried for TP, CP and PP, every VP up to the stages the
rules allow, every micro-batch size that divides GBS / DP, every recompute mode and ZeRO stage. When the global batch
is free, the batches tried are of the form 2^k and 3 x 2^k between a quarter of the default batch and the default
(about 4M tokens per step, capped at 16M), plus the default; layouts are then ranked by time per token.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.models import ModelSpec
from perfmodel.physics.bounded import Bounded
from perfmodel.physics.parallel import (
    RECOMPUTE_MODES,
    ZERO_STAGES,
    Layout,
    LayoutNumbers,
    Rule,
    all_hold,
    divisors,
    most_broken,
)
from perfmodel.physics.schedule import UNEVEN_EXTRA_UNITS
from perfmodel.physics.step import (
    Context,
    LayoutVars,
    evaluate,
    evaluate_times,
    floor_holds,
    least_floor,
    memory_need,
    price_shards,
    step_floor,
)

T = TypeVar("T")
OBJECTIVES = ("time", "cost")
"""time: seconds per token (the step time at a fixed batch; time-to-train for a token budget).
cost: GPU-seconds per token (cost and energy are proportional to it on one system)."""


@dataclass(frozen=True)
class Space:
    """What to enumerate: (GPU count, global batch) pairs, and the dimensions the user fixed (None: search it)."""

    points: tuple[tuple[int, int], ...]
    fixed: Mapping[str, Any]

    def choices(self, name: str, default: list[Any]) -> list[Any]:
        given = self.fixed.get(name)
        return [given] if given is not None else default


def gbs_choices(default_gbs: int) -> tuple[int, ...]:
    """Global batches to try when the user fixes none: 2^k and 3 x 2^k in [default / 4, default], and the default."""
    low = default_gbs / 4
    grid = {m * 2**k for m in (1, 3) for k in range(default_gbs.bit_length() + 1)}
    return tuple(sorted({g for g in grid if low <= g <= default_gbs} | {default_gbs}))


@dataclass(frozen=True)
class Block:
    """A grid of layouts: rows of (tp, cp, pp, dp, vp, ep, etp) x micro-batches x recompute modes x ZeRO stages."""

    n_gpus: int
    gbs: int
    seq_len: int
    rows: Any  # int array (S, 7): tp, cp, pp, dp, vp, ep, etp
    mbs: Any  # int array (M,)
    recompute: Any  # int array (R,)
    zero: Any  # int array (Z,)

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return (len(self.rows), len(self.mbs), len(self.recompute), len(self.zero))

    def _columns(self, dtype: Any) -> tuple[Any, ...]:
        """The axes as arrays that broadcast to `shape`."""
        import numpy as np

        rows = self.rows.astype(dtype)
        tp, cp, pp, dp, vp, ep, etp = (rows[:, i].reshape(-1, 1, 1, 1) for i in range(7))
        mbs = self.mbs.astype(dtype).reshape(1, -1, 1, 1)
        rc = self.recompute.astype(dtype).reshape(1, 1, -1, 1)
        zero = self.zero.astype(dtype).reshape(1, 1, 1, -1)
        return tp, cp, pp, dp, vp, ep, etp, mbs, rc, zero, np.full((1, 1, 1, 1), self.gbs, dtype=dtype)

    def numbers(self) -> LayoutNumbers:
        import numpy as np

        tp, cp, pp, dp, vp, ep, etp, mbs, rc, zero, gbs = self._columns(np.int64)
        return LayoutNumbers(tp, pp, cp, dp, vp, ep, mbs, gbs, self.seq_len, rc, zero, etp)

    def layout_vars(self) -> LayoutVars:
        """The axes as arrays, except that a dimension with one value in the whole block is a plain float: the
        terms that depend only on such dimensions (a shard's compute when TP, CP and the micro-batch are fixed) are
        then priced once as numbers, and memoised on the context, instead of as one-element arrays."""
        import numpy as np

        return _vars(*self._columns(np.float64))

    def picked_vars(self, flat_index: Any) -> LayoutVars:
        """The layouts at these flat indices of the block, as one axis (a dimension with one value among them a
        plain float, as in `layout_vars`, which the smallest grid around them would give too): a sparse mask's
        layouts priced alone, not the grid around them (a pipelined block's fitting layouts are a fifth to a third
        of the grid their axis values span: micro-batches that do not divide GBS / DP, modes that do not fit)."""
        import numpy as np

        s, m, r, z = np.unravel_index(flat_index, self.shape)
        rows = self.rows[s].astype(np.float64)
        tp, cp, pp, dp, vp, ep, etp = rows.T
        at = (self.mbs[m], self.recompute[r], self.zero[z])
        mbs, rc, zero = (c.astype(np.float64) for c in at)
        return _vars(tp, cp, pp, dp, vp, ep, etp, mbs, rc, zero, np.full(1, self.gbs, dtype=np.float64))

    def trimmed(self, mask: Any) -> tuple[Block, Any]:
        """The block without the axis values that no valid layout uses, and its mask."""
        import numpy as np

        rest = mask.any(axis=0)  # two passes over the full mask instead of four
        keep = [mask.any(axis=(1, 2, 3)), rest.any(axis=(1, 2)), rest.any(axis=(0, 2)), rest.any(axis=(0, 1))]
        if all(k.all() for k in keep):
            return self, mask
        block = Block(
            self.n_gpus,
            self.gbs,
            self.seq_len,
            self.rows[keep[0]],
            self.mbs[keep[1]],
            self.recompute[keep[2]],
            self.zero[keep[3]],
        )
        for axis, kept in enumerate(keep):  # one axis at a time, only those that lose values: numpy's compress
            if not kept.all():  # copies a 700,000-layout mask in ~1 ms, its fancy index np.ix_ in ~12 ms
                mask = np.compress(kept, mask, axis=axis)
        return block, mask

    def shards(self) -> set[tuple[float, ...]]:
        """The block's distinct (TP, CP, micro-batch, EP, ETP) shards, as `step.price_shards` takes them."""
        import numpy as np

        columns = self.rows[:, [0, 1, 5, 6]]  # tp, cp, ep, etp: a few distinct ones in thousands of rows
        codes = np.ravel_multi_index(columns.T, columns.max(axis=0) + 1)
        rows = columns[np.unique(codes, return_index=True)[1]].astype(float).tolist()
        return {(tp, cp, mbs, ep, etp) for tp, cp, ep, etp in rows for mbs in self.mbs.astype(float).tolist()}

    def layout(self, flat_index: int) -> Layout:
        import numpy as np

        s, m, r, z = np.unravel_index(flat_index, self.shape)
        tp, cp, pp, dp, vp, ep, etp = (int(x) for x in self.rows[s])
        mode = RECOMPUTE_MODES[int(self.recompute[r])]
        mbs, zero = int(self.mbs[m]), int(self.zero[z])
        return Layout(tp, pp, cp, dp, vp, ep, mbs, self.gbs, self.seq_len, mode, zero, etp)


def _vars(*columns: Any) -> LayoutVars:
    """LayoutVars of (tp, cp, pp, dp, vp, ep, etp, mbs, recompute, zero, gbs) arrays, a dimension with one value a
    plain float (`Block.layout_vars`)."""
    tp, cp, pp, dp, vp, ep, etp, mbs, rc, zero, gbs = (
        float(c.reshape(-1)[0]) if c.size == 1 or (c == c.reshape(-1)[0]).all() else c for c in columns
    )
    return LayoutVars(tp, pp, cp, dp, vp, mbs, gbs, rc, zero, ep, etp)


def _shapes(ctx: Context, n_gpus: int, space: Space) -> Any:
    """(tp, cp, pp, dp, vp, ep, etp) rows whose product of the first four is the GPU count (all of them when the
    fixed choices allow none, so that the rules can say why)."""
    import numpy as np

    n_div = divisors(n_gpus)
    tps = space.choices("tp", [d for d in n_div if d <= ctx.hardware.ranks_per_domain])
    stages = ctx.model.layers + UNEVEN_EXTRA_UNITS  # the embedding and the loss may take a stage each
    pps = space.choices("pp", [d for d in n_div if d <= stages])
    grid = np.array(np.meshgrid(tps, space.choices("cp", n_div), pps, indexing="ij"), dtype=np.int64).reshape(3, -1)
    model_parallel = grid[0] * grid[1] * grid[2]
    dp = np.maximum(n_gpus // model_parallel, 1)
    if space.fixed.get("dp") is not None:
        dp = np.full_like(model_parallel, space.fixed["dp"])
    whole = model_parallel * dp == n_gpus
    if whole.any():
        grid, dp = grid[:, whole], dp[whole]
    pp = grid[2]
    if space.fixed.get("vp") is not None:
        counts, first_vp = np.ones_like(pp), space.fixed["vp"]
    else:
        counts, first_vp = np.where(pp == 1, 1, np.maximum(stages // pp, 1)), 1
    starts = np.cumsum(counts) - counts
    vp = np.arange(counts.sum()) - np.repeat(starts, counts) + first_vp
    rows = np.stack([grid[0], grid[1], pp, dp], axis=1)
    rows = np.concatenate([np.repeat(rows, counts, axis=0), vp[:, None]], axis=1)
    experts = _expert_choices(ctx, n_gpus, space)
    pairs = np.repeat(experts[None, :, :], len(rows), axis=0).reshape(-1, 2)
    return np.concatenate([np.repeat(rows, len(experts), axis=0), pairs], axis=1)


def _expert_choices(ctx: Context, n_gpus: int, space: Space) -> Any:
    """(ep, etp) pairs to try: (1, 1) for a dense model; for a MoE model every EP dividing the experts and every
    expert TP inside a scale-up domain dividing the expert width (the folding rule keeps those that fit a stage)."""
    import numpy as np

    md = ctx.model
    if not md.is_moe:
        eps, etps = space.choices("ep", [1]), space.choices("etp", [1])
    else:
        eps = space.choices("ep", [d for d in divisors(md.experts) if d <= n_gpus])
        domain = ctx.hardware.ranks_per_domain
        etps = space.choices("etp", [d for d in divisors(md.moe_ffn) if d <= domain and n_gpus % d == 0])
    return np.array(np.meshgrid(eps, etps, indexing="ij"), dtype=np.int64).reshape(2, -1).T


def blocks(ctx: Context, space: Space) -> list[tuple[Block, Any]]:
    """Every block of candidate layouts with its validity mask, untrimmed (invalid ones included).

    Kept for the last BLOCKS_KEPT spaces by what they depend on (the model, the scale-up domain, the sequence, the
    space): a sweep's points on other GPUs of the same domain, or with a what-if on the network, search the same
    blocks, and enumerating them and their rules is a fifth of a point's work. Blocks and masks are read-only."""
    fixed = tuple(sorted(space.fixed.items()))
    key = (ctx.model, ctx.hardware.ranks_per_domain, ctx.seq_len, space.points, fixed, ctx.stack, ctx.vintage)
    found = _BLOCKS.get(key)
    if found is None:
        found = _BLOCKS.put(key, tuple(_enumerated(ctx, space)))
    return list(found)


BLOCKS_KEPT = 32
"""Spaces whose blocks `blocks` keeps, oldest dropped first (the 60-point generations sweep has 12 distinct)."""
_BLOCKS: Bounded[tuple[Any, ...], tuple[tuple[Block, Any], ...]] = Bounded(BLOCKS_KEPT)


def _enumerated(ctx: Context, space: Space) -> Iterator[tuple[Block, Any]]:
    """`blocks` itself."""
    import numpy as np

    recompute = space.choices("recompute", list(RECOMPUTE_MODES))
    rc = np.array([RECOMPUTE_MODES.index(m) for m in recompute], dtype=np.int64)
    zero = np.array(space.choices("zero", list(ZERO_STAGES)), dtype=np.int64)
    shapes_of: dict[int, Any] = {}  # the shapes depend on the GPU count, not on the batch: once per count
    for n_gpus, gbs in space.points:
        shapes = shapes_of.get(n_gpus)
        if shapes is None:
            shapes = shapes_of[n_gpus] = _shapes(ctx, n_gpus, space)
        pipelined = shapes[:, 2] > 1
        mbs = np.array(space.choices("mbs", divisors(gbs)), dtype=np.int64)
        for rows in (shapes[~pipelined], shapes[pipelined]):
            if not len(rows):
                continue
            block = Block(n_gpus, gbs, ctx.seq_len, rows, mbs, rc, zero)
            possible, held = _possible_rows(block, ctx.model, ctx.rules)
            if not len(possible):  # every candidate breaks a rule: keep them all, so that the rules can say why
                yield block, np.broadcast_to(np.False_, block.shape)
                continue
            block = replace(block, rows=rows[possible])
            yield block, np.broadcast_to(all_hold(held), block.shape)


def _possible_rows(block: Block, model: ModelSpec, rules: tuple[Rule, ...]) -> tuple[Any, list[Any]]:
    """Indices of the rows (tp, cp, pp, dp, vp, ep, etp) for which every rule holds for some micro-batch, recompute
    mode and ZeRO stage, and each rule's results on those rows (`Rule.holds`: what `valid` ands on them).

    Each rule is evaluated over only the axes it depends on, and only on the rows the rules before it left, so this
    costs little; dropping the other rows before the full mask is built keeps a highly divisible GPU count
    (720,720) from building a mask of billions. Each rule is evaluated once: its results are then taken at the
    rows that the rules after it left (element-wise rules give a row the same result on any set of rows).
    """
    import numpy as np

    kept = np.arange(len(block.rows))
    numbers = block.numbers()
    held: list[tuple[Any, Any]] = []  # each rule's results, with the rows it was evaluated on
    for rule in rules:
        holds = np.asarray(rule.holds(numbers, model, block.n_gpus), bool)
        held.append((kept, holds))
        if holds.ndim:
            left = kept[np.broadcast_to(holds.any(axis=tuple(range(1, holds.ndim))).reshape(-1), kept.shape)]
        else:
            left = kept if holds else kept[:0]
        if len(left) < len(kept):
            kept, numbers = left, replace(block, rows=block.rows[left]).numbers()
    return kept, [_at_rows(holds, rows, kept) for rows, holds in held]


def _at_rows(holds: Any, rows: Any, kept: Any) -> Any:
    """A rule's results on `rows` (sorted row indices; one row or every row along its first axis), at the rows
    `kept` (a subset of them)."""
    if holds.ndim == 0 or holds.shape[0] == 1 or len(kept) == len(rows):
        return holds
    return holds[rows.searchsorted(kept)]


@dataclass(frozen=True)
class Found:
    layout: Layout
    step_time_s: float
    objective: float


@dataclass(frozen=True)
class SearchResult:
    top: list[Found]
    """The best layouts, best first."""
    best_per_point: dict[tuple[int, int], Found]
    """The best layout of each (GPU count, global batch)."""
    evaluated: int
    """Valid layouts considered: each one's memory priced."""
    feasible: int
    """Of those, the ones that fit in memory."""
    priced: int
    """Layouts whose step was priced in full: the sub-grids of the axis values that fitting layouts use (every
    fitting layout and the non-fitting ones that share their grid; invalid ones included, masked out)."""
    elapsed_s: float
    objective: str
    objectives: Any
    """Objective values of every feasible layout, for `rank` (None where the search priced only those its floors
    did not rule out: `search(..., every=True)` prices them all)."""

    @property
    def best(self) -> Found:
        return self.top[0]

    def pareto(self) -> list[Found]:
        """Layouts no other beats on time per token, cost per token and GPU count together."""
        best = list(self.best_per_point.values())
        return pareto_front(best, time=_time_per_token, cost=lambda f: _time_per_token(f) * f.layout.n_gpus, gpus=_gpus)

    def rank(self, objective_value: float) -> int:
        """1 + the number of feasible layouts strictly better than this objective value."""
        if self.objectives is None:
            raise ValueError("rank needs every fitting layout priced: search(..., every=True)")
        return 1 + int((self.objectives < objective_value).sum())


def _time_per_token(found: Found) -> float:
    return found.step_time_s / (found.layout.gbs * found.layout.seq_len)


def _gpus(found: Found) -> int:
    return found.layout.n_gpus


def pareto_front(
    items: Sequence[T], time: Callable[[T], float], cost: Callable[[T], float], gpus: Callable[[T], int]
) -> list[T]:
    """The items no other beats on time, cost and GPU count together, by GPU count then time.

    On one system cost is time x GPUs x price, so the front is the fastest of each GPU count that is faster than
    every smaller count; with several systems or batch-dependent work it is the general non-dominated set.
    """
    keys = [(time(i), cost(i), gpus(i)) for i in items]

    def dominated(k: tuple[float, float, int]) -> bool:
        return any(o != k and all(a <= b for a, b in zip(o, k, strict=True)) for o in keys)

    front = [(k, i) for k, i in zip(keys, items, strict=True) if not dominated(k)]
    return [i for _, i in sorted(front, key=lambda pair: (pair[0][2], pair[0][0]))]


def objective_scale(objective: str, layout_gbs: int, seq_len: int, n_gpus: int) -> float:
    """Factor turning a step time into the objective: seconds per token, or GPU-seconds per token."""
    per_token = 1.0 / (layout_gbs * seq_len)
    return per_token * n_gpus if objective == "cost" else per_token


@dataclass(frozen=True)
class _Priced:
    """One block after pricing: its counts, the objective of every layout that fits, its best few, and (when none
    fits) the smallest memory need among its valid layouts."""

    evaluated: int
    feasible: int
    priced: int
    objectives: Any
    top: list[Found]
    smallest: tuple[float, Layout] | None


FILTER_FROM = 20_000
"""Layouts from which the search filters before it prices in full (memory first in a block, floors first in
`best_layout`): under it, each extra pass's fixed cost (a few hundred numpy calls) exceeds what it saves
(validation's small searches)."""


def _price(ctx: Context, block: Block, mask: Any, top: int, objective: str) -> _Priced:
    """Memory first, over the whole (trimmed) block a slice of rows at a time (`_fitting`, as `_price_bounded`
    prices it); then the step in full over the sub-block of the axis values that some fitting layout uses (a block
    under FILTER_FROM layouts: both at once, over the whole block). A layout that does not fit is never a result, so
    every output is that of pricing the whole block: the fitting layouts' step times are the same numbers
    (element-wise formulas), in the same order (the sub-block keeps the block's order), and the memory mask is the
    block's own."""
    import numpy as np

    valid = int(np.count_nonzero(mask))
    if math.prod(block.shape) < FILTER_FROM:
        result = evaluate(ctx, block.layout_vars())
        need = np.broadcast_to(result.memory.total, block.shape)
        fits = mask & (need <= ctx.hardware.accelerator.memory_bytes)
        if not fits.any():
            smallest = int(np.argmin(np.where(mask, need, np.inf).reshape(-1)))
            return _unfit(block, valid, float(need.reshape(-1)[smallest]), smallest, math.prod(block.shape))
        return _ranked(ctx, block, fits, result.step_time_s, valid, top, objective)
    fits, least, at = _fitting(ctx, block, mask)
    if not fits.any():
        return _unfit(block, valid, least, at, 0)
    block, fits = block.trimmed(fits)
    return _ranked(ctx, block, fits, evaluate_times(ctx, block.layout_vars()).step_time_s, valid, top, objective)


def _ranked(ctx: Context, block: Block, fits: Any, step: Any, valid: int, top: int, objective: str) -> _Priced:
    """A block's `_Priced` from the step times of its grid (`step`, broadcasting to it) and the layouts that fit."""
    import numpy as np

    step = np.broadcast_to(step, block.shape).reshape(-1)
    index = np.flatnonzero(fits.reshape(-1))
    values = step[index] * objective_scale(objective, block.gbs, ctx.seq_len, block.n_gpus)
    best = [Found(block.layout(int(index[i])), float(step[index[i]]), float(values[i])) for i in _smallest(values, top)]
    return _Priced(valid, len(index), step.size, values, best, None)


def _unfit(block: Block, valid: int, need: float, at: int, priced: int) -> _Priced:
    """A block none of whose `valid` layouts fits: its count and the smallest memory need, of the layout at flat
    index `at`."""
    import numpy as np

    return _Priced(valid, 0, priced, np.empty(0), [], (need, block.layout(at)))


ROWS_AT_ONCE = 2**20
"""Layouts whose memory `_fitting` prices at once: a block's arrays a slice of rows at a time stay under glibc's
mmap threshold (32 MiB at most) and mostly in cache, where a whole block's (tens of millions of layouts, hundreds
of MB an array) page-faults every one afresh. DeepSeek-V3's largest block on 4,096 GB300 (14.5 million layouts):
1.7 s of CPU whole, 0.42 s at 16,384 rows (1.5 million layouts)."""


FLOOR_CELLS_AT_ONCE = 2**15
"""(Row, micro-batch) cells whose floor `_cell_floors` prices at once: the shard table's gather (`step._ShardTable`)
makes a copy of its ~60 fields for each, 16 MB at this size (a whole block's 3.4 million cells took 1.6 GB)."""


def _fitting(ctx: Context, block: Block, mask: Any) -> tuple[Any, float, int]:
    """The layouts of `mask` that fit in memory (`step.memory_need`), priced a slice of rows at a time
    (`_row_slices`), and, while none fits, the smallest need among those of `mask` with its flat index (the first
    where several tie: what the error says when none fits anywhere)."""
    import numpy as np

    cells = math.prod(block.shape[1:])
    cap = ctx.hardware.accelerator.memory_bytes
    fits = np.empty(block.shape, dtype=bool)
    smallest, at, fitted = math.inf, 0, False
    for rows, part in _row_slices(block, ROWS_AT_ONCE // cells):
        valid = mask[rows]
        need = np.broadcast_to(memory_need(ctx, part), valid.shape)
        fits[rows] = valid & (need <= cap)
        fitted = fitted or bool(fits[rows].any())
        if fitted:
            continue
        least = float(np.min(need, where=valid, initial=np.inf))
        if least < smallest:
            smallest, at = least, rows.start * cells + int(np.flatnonzero(valid & (need == least))[0])
    return fits, smallest, at


def _row_slices(block: Block, rows_at_once: int) -> Iterator[tuple[slice, LayoutVars]]:
    """The block's `layout_vars` a slice of `rows_at_once` rows (at least one) at a time: its own arrays sliced,
    not a block of those rows, so that each layout gets the number the whole block gives it (a dimension stays an
    array where the block's is one)."""
    import numpy as np

    lv, size, step = block.layout_vars(), len(block.rows), max(1, rows_at_once)
    for start in range(0, size, step):
        rows = slice(start, start + step)
        yield rows, LayoutVars(*(x[rows] if isinstance(x, np.ndarray) and x.shape[0] == size else x for x in lv))


@dataclass
class _Open:
    """A block in `_price_bounded` with layouts that fit (`fits`, trimmed to them): its valid count, objective
    scale and each row's bound (`_row_bounds`, once the search bounds), and the flat indices and step times of the
    layouts priced so far."""

    block: Block
    fits: Any
    valid: int
    scale: float
    bound: Any = None
    index: list[Any] = field(default_factory=list)
    step: list[Any] = field(default_factory=list)

    def priced(self, top: int) -> _Priced:
        """The block's `_Priced`: its best among the layouts priced, in index order as `_price` ranks them."""
        import numpy as np

        index, step = np.concatenate(self.index or [[]]).astype(np.int64), np.concatenate(self.step or [[]])
        order = np.argsort(index)
        index, step = index[order], step[order]
        values = step * self.scale
        best = [
            Found(self.block.layout(int(index[i])), float(step[i]), float(values[i])) for i in _smallest(values, top)
        ]
        return _Priced(self.valid, int(np.count_nonzero(self.fits)), len(index), values, best, None)


BOUND_FROM = 175_000
"""Layouts in the grids of fitting layouts (the blocks trimmed to them) from which `_price_bounded` bounds the
step: under it, pricing the grids whole, as `search` did before, costs less than the floors' passes (bench_search.py's
cases, CPU medians in one process, 2026-12-07: Llama 3.1 70B on 64 H100, grids of 62,136, 8.8 ms whole against 15.3
ms bounded; MLPerf 405B on 512 H100, 154,671, 44 and 55 ms; Qwen3-Next-80B-A3B on 64 H100, 200,142, 72 and 46 ms;
MLPerf 405B on 512 GB200, 556,896, 90 and 36 ms)."""
BOUNDED_FIRST = 256
"""`_price_bounded` prices the rows with the lowest bounds first, 1 / BOUNDED_FIRST of them, then four times as many
rows each pass: the first passes set the thresholds that rule most of the rest out."""


def _price_bounded(
    ctx: Context,
    candidates: Sequence[tuple[Block, Any]],
    top: int,
    objective: str,
    progress: Callable[[int, int], None] | None,
) -> list[tuple[tuple[int, int], _Priced]]:
    """Each block's `_Priced` as `search` ranks them, pricing the step only of layouts that may be among the `top`
    best or the best of their point (GPU count, batch); memory, and so the counts, over every valid layout.

    A layout is priced unless its floor (`step.step_floor`, a lower bound on its step: the row's bound, then its
    (row, micro-batch) cell's, then its own, as `best_layout` prices them) in objective units exceeds its point's
    threshold: the larger of the `top`-th best value and the point's best priced so far. Thresholds only fall, so a
    layout left out is worse than `top` layouts priced and than its point's best: every layout at or under the final
    ones is priced, and `_smallest`'s stable order over them (by flat index) picks the exhaustive search's layouts,
    ties included. Rows go in order of their bound, in passes that grow fourfold (BOUNDED_FIRST). Where the grids
    of fitting layouts hold fewer than BOUND_FROM layouts, they are priced whole instead (`_price`'s step).

    Unlike `best_layout`'s, these bounds are priced for this search alone, so each reads the context's links: the
    exposed communication at its least (`step.step_floor` with `links`), which in a MoE model's search is most of
    what the step adds to compute (GPT-OSS-120B on 1,024 B200: 104,562 layouts priced in full instead of 1,748,083,
    CPU 8.88 s -> 2.20 s, benchmarks/README.md's bench_search table)."""
    import numpy as np

    entries: list[_Open | _Priced] = []
    points: list[tuple[int, int]] = []
    for done, (block, mask) in enumerate(candidates, 1):
        if mask.any():
            block, mask = block.trimmed(mask)
            fits, smallest, smallest_at = _fitting(ctx, block, mask)
            points.append((block.n_gpus, block.gbs))
            valid = int(np.count_nonzero(mask))
            if not fits.any():
                entries.append(_unfit(block, valid, smallest, smallest_at, 0))
            else:
                block, fits = block.trimmed(fits)
                scale = objective_scale(objective, block.gbs, ctx.seq_len, block.n_gpus)
                entries.append(_Open(block, fits, valid, scale))
        if progress is not None:
            progress(done, len(candidates))
    opened = [(i, e) for i, e in enumerate(entries) if isinstance(e, _Open)]
    if sum(math.prod(e.block.shape) for _, e in opened) < BOUND_FROM:  # every grid whole, as `_price` prices it
        for index, e in opened:
            step = evaluate_times(ctx, e.block.layout_vars()).step_time_s
            entries[index] = _ranked(ctx, e.block, e.fits, step, e.valid, top, objective)
    elif opened:
        for _, e in opened:
            e.bound = _row_bounds(ctx, e.block, e.scale, links=True)
        bound = np.concatenate([e.bound for _, e in opened])
        owner = np.repeat(np.arange(len(opened)), [len(e.bound) for _, e in opened])
        at = np.concatenate([np.arange(len(e.bound)) for _, e in opened])
        order = np.argsort(bound, kind="stable")
        best = {points[index]: math.inf for index, _ in opened}  # each point's best value priced so far
        kept = np.empty(0)  # the `top` best values priced so far
        start, size = 0, max(1, len(order) // BOUNDED_FIRST)
        while start < len(order) and bound[order[start]] <= max(max(best.values()), _kth(kept, top)):
            batch = order[start : start + size]
            start, size = start + size, 4 * size
            for slot, (index, entry) in enumerate(opened):
                threshold = max(best[points[index]], _kth(kept, top))
                rows = np.sort(at[batch[owner[batch] == slot]])
                rows = rows[entry.bound[rows] <= threshold]
                if not len(rows):
                    continue
                values = _price_rows(ctx, entry, rows, threshold)
                if len(values):
                    best[points[index]] = min(best[points[index]], float(values.min()))
                    kept = np.sort(np.concatenate([kept, values]))[:top]
    return [(point, e.priced(top) if isinstance(e, _Open) else e) for point, e in zip(points, entries, strict=True)]


def _kth(kept: Any, top: int) -> float:
    """The `top`-th best value priced so far (`kept`, sorted), infinite before `top` are."""
    return float(kept[top - 1]) if len(kept) >= top else math.inf


def _price_rows(ctx: Context, entry: _Open, rows: Any, threshold: float) -> Any:
    """Price the fitting layouts of these rows of `entry` whose cell floor and own floor do not exceed `threshold`,
    record their flat indices and step times on it, and return their objective values."""

    block = replace(entry.block, rows=entry.block.rows[rows])
    fits = entry.fits[rows]
    floor, _ = _cell_floors(ctx, block, fits, entry.scale, links=True)
    index, step = _priced_under(ctx, block, fits & (floor <= threshold), threshold, entry.scale, fitted=True)
    cells = math.prod(block.shape[1:])
    entry.index.append(rows[index // cells] * cells + index % cells)
    entry.step.append(step)
    return step * entry.scale


MAX_SHAPES = 4_000_000
"""(GPU count, global batch, TP, CP, PP) combinations one search may enumerate: about 10 s of work on one core (Llama
3.1 405B on 720,720 GB200s is 2.6 million). Counted from the divisors alone, before any layout is built."""


def check_size(ctx: Context, space: Space) -> None:
    """Refuse, before any work, a search whose candidate shapes exceed MAX_SHAPES (many highly divisible counts)."""
    stages = ctx.model.layers + UNEVEN_EXTRA_UNITS
    shapes = 0
    for n_gpus, _gbs in space.points:
        n_div = divisors(n_gpus)
        tps = space.choices("tp", [d for d in n_div if d <= ctx.hardware.ranks_per_domain])
        pps = space.choices("pp", [d for d in n_div if d <= stages])
        shapes += len(tps) * len(space.choices("cp", n_div)) * len(pps)
    if shapes > MAX_SHAPES:
        counts = len({n for n, _ in space.points})
        raise PerfmodelError(
            f"--gpus: {counts} GPU count(s) give {shapes:,} layout shapes (GPU counts x global batches x TP x CP x PP) "
            f"to search; at most {MAX_SHAPES:,}: give fewer or less divisible counts, or fix some of TP, CP, PP, GBS"
        )


def search(
    ctx: Context,
    space: Space,
    top: int = 1,
    objective: str = "time",
    progress: Callable[[int, int], None] | None = None,
    sized: bool = False,
    candidates: Sequence[tuple[Block, Any]] | None = None,
    every: bool = False,
) -> SearchResult:
    """Price every valid layout of `space` (its memory, then the step of those that fit, or of those whose floor
    does not rule them out: `_price_bounded`); keep the `top` best by `objective` and the best of each GPU count.

    `progress(done, total)` is called after each block of layouts; `sized`: the caller ran `check_size` already;
    `candidates`: the space's `blocks`, when the caller enumerated them already (predict.open_batch_space);
    `every`: price the step of every fitting layout, for `SearchResult.rank`.
    Raises PerfmodelError naming why nothing qualifies: the rule most candidates break, or the smallest memory need.
    """
    import numpy as np

    if objective not in OBJECTIVES:
        raise PerfmodelError(f"unknown objective '{objective}'; valid: {', '.join(OBJECTIVES)}")
    start = time.perf_counter()
    if not sized:
        check_size(ctx, space)
    candidates = blocks(ctx, space) if candidates is None else candidates
    bounded = not every and floor_holds(ctx.efficiency)
    bounded = bounded and sum(int(np.count_nonzero(mask)) for _, mask in candidates) >= FILTER_FROM
    priced: list[tuple[tuple[int, int], _Priced]] = []
    if bounded:
        priced = _price_bounded(ctx, candidates, top, objective, progress)
    else:
        for done, (block, mask) in enumerate(candidates, 1):
            if mask.any():
                priced.append(((block.n_gpus, block.gbs), _price(ctx, *block.trimmed(mask), top, objective)))
            if progress is not None:
                progress(done, len(candidates))
    evaluated = sum(p.evaluated for _, p in priced)
    feasible = sum(p.feasible for _, p in priced)
    priced_in_full = sum(p.priced for _, p in priced)
    if evaluated == 0:
        raise PerfmodelError(_no_valid_layout(ctx, candidates))
    if feasible == 0:
        need, layout = min((p.smallest for _, p in priced if p.smallest), key=lambda s: s[0])
        acc = ctx.hardware.accelerator
        raise PerfmodelError(
            "no layout fits in memory: "
            + ("the only valid layout" if evaluated == 1 else f"of {evaluated:,} valid layouts the smallest")
            + f" needs {need / 2**30:,.1f} GiB "
            f"per GPU ({layout.describe()}) but the {acc.id} has {acc.memory_bytes / 2**30:,.1f} GiB; "
            "use more GPUs, a smaller micro-batch or sequence, or a GPU with more memory"
        )
    per_point: dict[tuple[int, int], Found] = {}
    for point, p in priced:
        if p.top and (point not in per_point or p.top[0].objective < per_point[point].objective):
            per_point[point] = p.top[0]
    return SearchResult(
        top=sorted((f for _, p in priced for f in p.top), key=lambda f: f.objective)[:top],
        best_per_point=per_point,
        evaluated=evaluated,
        feasible=feasible,
        priced=priced_in_full,
        elapsed_s=time.perf_counter() - start,
        objective=objective,
        objectives=None if bounded else np.concatenate([p.objectives for _, p in priced]),
    )


FIRST_SHARE = 0.05
"""Share of a space's valid layouts (those with the lowest floors) that `best_layout` prices first, for a good best
so far; the rest is priced in one more pass, less what that best rules out."""


@dataclass
class _Best:
    """The best layout `best_layout` has priced in one block: its objective, how many fitting layouts reach it."""

    value: float = math.inf
    ties: int = 0
    layout: Layout | None = None


def best_layout(ctx: Context, space: Space, candidates: Sequence[tuple[Block, Any]]) -> tuple[Layout, int]:
    """`search(ctx, space, candidates=candidates)`'s best layout by time and its count of valid layouts, pricing in
    full only the layouts whose lower bound (`step.step_floor`) does not exceed the best found so far.

    A block of fewer than FILTER_FROM layouts is priced whole (as `search` does), first. In the others the floor is
    priced per (row, micro-batch) cell of the rows a cheaper bound per row (`step.least_floor`) does not put above
    that best (every row, without one); the rows with the lowest floors are priced first (memory, then the step of
    those that fit), then every row with a cell at or under that best (in one pass when the blocks priced whole leave
    fewer than FILTER_FROM layouts in cells at or under their best); the best bounds each block as the blocks priced
    before it in the pass leave it. A layout left out has objective >= its floor >
    the best, so every layout at the best is priced; when the first block to reach it has one such layout, it is the
    exhaustive search's answer, and when it has several (ties: e.g. ZeRO stages without DP), that block is priced in
    full to break the tie exactly as `search` does.
    """
    import numpy as np

    evaluated = sum(int(np.count_nonzero(mask)) for _, mask in candidates)  # trimming drops no valid layout
    if not floor_holds(ctx.efficiency) or evaluated < FILTER_FROM:
        found = search(ctx, space, sized=True, candidates=candidates)
        return found.best.layout, found.evaluated
    prepared = _prepared(ctx, candidates)
    blocks_ = prepared.blocks
    best = [_Best() for _ in blocks_]
    bounded = [math.prod(block.shape) >= FILTER_FROM for block, _ in blocks_]
    for index, (block, mask) in enumerate(blocks_):
        if not bounded[index]:  # a small block: priced whole, at once (its floors would cost more than they save)
            _price_whole(ctx, block, mask, best[index])
    incumbent = min(b.value for b in best)
    bounds = [_bounds(ctx, prepared, index, incumbent, on) for index, on in enumerate(bounded)]
    rows, floors, row_floors = zip(*bounds, strict=True)
    row_floor = np.concatenate(row_floors)
    owner = np.repeat(np.arange(len(rows)), [len(r) for r in rows])
    at = np.concatenate([np.arange(len(r)) for r in rows])
    order = np.argsort(row_floor, kind="stable")
    first = max(1, int(FIRST_SHARE * sum(len(b.rows) for (b, _), on in zip(blocks_, bounded, strict=True) if on)))
    cells = zip(blocks_, floors, strict=True)
    under = sum(np.count_nonzero(f <= incumbent) * b.shape[2] * b.shape[3] for (b, _), f in cells)
    for batch in (order,) if under < FILTER_FROM else (order[:first], order[first:]):
        for index, (block, mask) in enumerate(blocks_):
            incumbent = min(b.value for b in best)  # the best so far, a block priced before this one's included
            mine = batch[owner[batch] == index]
            places = np.sort(at[mine[row_floor[mine] <= incumbent]])
            if len(places):
                picked = rows[index][places]
                within = mask[picked] & (floors[index][places] <= incumbent)
                _price_best(ctx, replace(block, rows=block.rows[picked]), within, best[index], incumbent)
    value = min(b.value for b in best)
    if value == math.inf:  # nothing fits: the exhaustive search says why
        search(ctx, space, sized=True, candidates=candidates)
    index = next(i for i, b in enumerate(best) if b.value == value)
    if best[index].ties > 1:
        tied = _price(ctx, *blocks_[index], 1, "time")
        return tied.top[0].layout, evaluated
    layout = best[index].layout
    assert layout is not None
    return layout, evaluated


@dataclass
class _Prepared:
    """A search's trimmed blocks that have valid layouts (their shards priced), and what the searches on them have
    priced of their floors: per block index, each row's bound (`step.least_floor`), and the floors of the rows
    priced so far (NaN for the others)."""

    blocks: list[tuple[Block, Any]]
    bounds: dict[int, Any] = field(default_factory=dict)
    floors: dict[int, tuple[Any, Any]] = field(default_factory=dict)


def _prepared(ctx: Context, candidates: Sequence[tuple[Block, Any]]) -> _Prepared:
    """The candidates trimmed, every block's shards priced first, in one batch (`step.price_shards`).

    The bounds and floors kept with them read no link figure, so they are kept for the last FLOORS_KEPT searches by
    the context's shard memo (`Context.shards`: equal model, compute figures, efficiencies, recipe, sequence) and the
    blocks searched (by identity: `blocks` hands out the same objects for the same space): a sweep's what-ifs on the
    network share them."""
    key = (id(ctx.shards), *map(id, (block for block, _ in candidates)))
    kept = _FLOORS.get(key)
    if kept is not None and kept[0] is ctx.shards and all(a is b for a, b in zip(kept[1], candidates, strict=True)):
        prepared: _Prepared = kept[2]
        return prepared
    prepared = _Prepared([block.trimmed(mask) for block, mask in candidates if mask.any()])
    price_shards(ctx, list(set().union(*(block.shards() for block, _ in prepared.blocks))))
    _FLOORS.put(key, (ctx.shards, list(candidates), prepared))
    return prepared


def _bounds(ctx: Context, prepared: _Prepared, index: int, incumbent: float, bounded: bool) -> tuple[Any, Any, Any]:
    """The rows of block `index` that may hold a layout at or under `incumbent` (every row without one; none of a
    block priced whole), the floor of each of their (row, micro-batch) cells and each row's least floor over its
    valid cells, in objective units.

    A cheap bound per row (`step.least_floor`) rules out rows before their floors are priced. The floor is the
    step's compute with the overheads that grow with it (`step.step_floor`), priced without recompute, which makes
    it the floor of every recompute mode (the floor grows with a layer's compute, which recompute only adds to) at a
    third of the cells."""
    import numpy as np

    block, mask = prepared.blocks[index]
    if not bounded:
        return np.empty(0, dtype=np.int64), np.empty((0, 1, 1, 1)), np.empty(0)
    scale = objective_scale("time", block.gbs, ctx.seq_len, block.n_gpus)
    rows = np.arange(len(block.rows))
    if math.isfinite(incumbent):
        if index not in prepared.bounds:
            prepared.bounds[index] = _row_bounds(ctx, block, scale)
        rows = rows[prepared.bounds[index] <= incumbent]
    if index not in prepared.floors:  # priced row by row, as the searches on these blocks need them
        size = len(block.rows)
        prepared.floors[index] = np.full((size, len(block.mbs), 1, 1), np.nan), np.full(size, np.nan)
    floor, row_floor = prepared.floors[index]
    missing = rows[np.isnan(row_floor[rows])]
    if len(missing) and not np.isnan(row_floor).all():  # a second search that needs more: every row left, at once
        missing = np.flatnonzero(np.isnan(row_floor))
    if len(missing):
        some = replace(block, rows=block.rows[missing])
        floor[missing], row_floor[missing] = _cell_floors(ctx, some, mask[missing], scale)
    return rows, floor[rows], row_floor[rows]


def _row_bounds(ctx: Context, block: Block, scale: float, links: bool = False) -> Any:
    """Each row's bound (`step.least_floor`: under the floor of its every cell), in objective units; `links`: with
    the communication it bounds over the context's links."""
    tp, cp, pp, dp, vp, ep, etp = block.rows.T.astype(float)
    layouts = LayoutVars(tp, pp, cp, dp, vp, 1.0, float(block.gbs), 0.0, 0.0, ep, etp)
    return least_floor(ctx, layouts, block.mbs, links=links) * scale


def _cell_floors(ctx: Context, block: Block, mask: Any, scale: float, links: bool = False) -> tuple[Any, Any]:
    """The floor of each (row, micro-batch) cell of `block`, in objective units, and each row's least over its valid
    cells; `links`: with the communication the floor bounds over the context's links (`step.step_floor`)."""
    import numpy as np

    cells = (len(block.rows), len(block.mbs), 1, 1)
    floor = np.empty(cells)
    for rows, lv in _row_slices(block, FLOOR_CELLS_AT_ONCE // len(block.mbs)):
        lv = lv._replace(recompute=0.0)  # no recompute: the least compute, so every mode's floor
        count = len(floor[rows])
        cell = step_floor(ctx, lv, links=links) * scale
        floor[rows] = np.broadcast_to(cell, (count, *block.shape[1:]))[..., :1, :1]
    return floor, floor.min(axis=(1, 2, 3), where=_any_cell(mask), initial=np.inf)


def _any_cell(mask: Any) -> Any:
    """`mask.any(axis=(2, 3), keepdims=True)`: whether a (row, micro-batch) cell has a valid layout, as an or of its
    few (recompute, ZeRO) slices (numpy reduces short trailing axes some ten times slower)."""
    import numpy as np

    _, _, modes, stages = mask.shape
    slices = (mask[:, :, r : r + 1, z : z + 1] for r in range(modes) for z in range(stages))
    return functools.reduce(np.logical_or, slices)


FLOORS_KEPT = 4
"""Searches whose prepared blocks and floors `_prepared` keeps, oldest dropped first (a sweep's what-ifs of one
point come together)."""
_FLOORS: Bounded[tuple[int, ...], tuple[Any, list[tuple[Block, Any]], _Prepared]] = Bounded(FLOORS_KEPT)


def _price_whole(ctx: Context, block: Block, mask: Any, best: _Best) -> None:
    """Price every layout of `mask` as `search` does (`_price`) and fold the best, with its ties, into `best`."""
    priced = _price(ctx, block, mask, 1, "time")
    if priced.top:
        best.value, best.layout = priced.top[0].objective, priced.top[0].layout
        best.ties = int((priced.objectives == best.value).sum())


def _price_best(ctx: Context, block: Block, mask: Any, best: _Best, incumbent: float) -> None:
    """Price the layouts of `mask` whose floor with their own recompute mode does not exceed `incumbent` (memory,
    then the step of those that fit), each alone (`Block.picked_vars`: the same numbers as in a grid, in the grid's
    order), and fold the best into `best`.

    The cells' floors are priced without recompute (`_cell_floors`) and without the exposed communication, which
    is the floor of every mode and every network; a layout's own (`step.step_floor` of the layout as it is, with
    its links and ZeRO stage) is higher by what it recomputes and what it exposes, and rules out most of the layouts
    they leave (the 70B on 1,024 H100, bench_campaign.py's phases: 82-87% of those at PP 2 and 4)."""
    import numpy as np

    scale = objective_scale("time", block.gbs, ctx.seq_len, block.n_gpus)
    index, step = _priced_under(ctx, block, mask, incumbent, scale, fitted=False)
    if not len(index):
        return
    values = step * scale
    low = float(values.min())
    if low < best.value:
        best.value, best.ties, best.layout = low, 0, block.layout(int(index[int(np.argmin(values))]))
    if low == best.value:
        best.ties += int((values == low).sum())


def _priced_under(
    ctx: Context, block: Block, mask: Any, threshold: float, scale: float, fitted: bool
) -> tuple[Any, Any]:
    """The flat indices of the layouts of `mask` whose own floor (`step.step_floor` with its recompute mode, its
    ZeRO stage and its links) times `scale` does not exceed `threshold` and that fit in memory (known already where
    `fitted`), in index order, and their step times, each layout priced alone (`Block.picked_vars`)."""
    import numpy as np

    index = np.flatnonzero(mask.reshape(-1))
    if len(index):
        own = step_floor(ctx, block.picked_vars(index), links=True, own_stage=True)
        floor = np.broadcast_to(own, index.shape) * scale
        index = index[floor <= threshold]
    if len(index) and not fitted:
        need = np.broadcast_to(memory_need(ctx, block.picked_vars(index)), index.shape)
        index = index[need <= ctx.hardware.accelerator.memory_bytes]
    if not len(index):
        return index, np.empty(0)
    return index, np.broadcast_to(evaluate_times(ctx, block.picked_vars(index)).step_time_s, index.shape)


def _smallest(values: Any, k: int) -> Any:
    """Indices of the k smallest values, smallest first, equal values in index order: the first k of a stable sort.

    A tie (e.g. ZeRO 1 and ZeRO 2 without data parallelism) goes to the layout enumerated first, the same on every
    CPU and numpy build; `np.argpartition`, which this used alone, leaves open which of the values equal to the k-th
    it keeps. Only the values at or under the k-th smallest (and NaNs, sorted last) are sorted, in index order."""
    import numpy as np

    if k < len(values):
        kth = np.partition(values, k - 1)[k - 1]
        part = np.flatnonzero(~(values > kth))
        return part[np.argsort(values[part], kind="stable")[:k]]
    return np.argsort(values, kind="stable")


def _no_valid_layout(ctx: Context, candidates: Sequence[tuple[Block, Any]]) -> str:
    """Why no candidate is valid: the rule the largest block breaks most, on an example."""
    block = max((b for b, _ in candidates), key=lambda b: b.shape[0] * b.shape[1] * b.shape[2] * b.shape[3])
    reason, share = most_broken(block.numbers(), ctx.model, block.n_gpus, block.shape, ctx.rules)
    total = sum(b.shape[0] * b.shape[1] * b.shape[2] * b.shape[3] for b, _ in candidates)
    return (
        f"no valid layout of {ctx.model.id} on {block.n_gpus:,} GPUs: all {total:,} candidates break a layout rule; "
        f"e.g. {reason} ({share:.0%} of them)"
    )
