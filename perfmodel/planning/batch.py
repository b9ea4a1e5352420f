"""Price many (context, layout) rows with one array call of the step model per distinct context.

`step.evaluate` is branch-free, so every row that shares a context (model, hardware, recipe, efficiencies, sequence
length) is priced at once with its layout variables as numpy arrays. Validation and calibration price hundreds of
measured rows this way, and a fit prices each row under several efficiency sets at once (a finite-difference
Jacobian): give efficiencies whose fields are arrays of shape (V,) and `variants=True`, and every row comes back
with V times, one per efficiency set. Rows may differ in software release (`vintage_years`): each is priced at its
own through the efficiencies' `vintage_years`, as a single prediction is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from perfmodel.physics.efficiency import Efficiency
from perfmodel.physics.parallel import Layout
from perfmodel.physics.step import Context, LayoutVars, StepResult, evaluate, evaluate_times
from perfmodel.planning.predict import layout_vars


class Priced(NamedTuple):
    """Per row (and per efficiency variant): the step time and the forward pass over one global batch."""

    step_time_s: Any  # array (rows,) or (rows, V)
    forward_only_s: Any


@dataclass(frozen=True)
class _Group:
    context: Context
    rows: Any  # int array: the positions of this group's rows in the batch
    layouts: LayoutVars  # arrays of shape (n,)
    vintage_years: Any  # array (n,): years each row's release is older than the reference vintage, or None


def _columns(layouts: Sequence[Layout]) -> LayoutVars:
    """Layouts as LayoutVars of arrays, one entry per layout."""
    import numpy as np

    return LayoutVars(*np.array([layout_vars(lo) for lo in layouts], dtype=float).T)


class Batch:
    """(context, layout) rows grouped by context once, so that pricing them again costs one call per group."""

    def __init__(self, rows: Sequence[tuple[Context, Layout]], vintage_years: Sequence[float] | None = None) -> None:
        import numpy as np

        by_object: dict[int, list[int]] = {}  # rows share context objects (context_for): hash each object once
        for index, (context, _) in enumerate(rows):
            by_object.setdefault(id(context), []).append(index)
        positions: dict[Context, list[int]] = {}
        for members in by_object.values():
            positions.setdefault(rows[members[0]][0], []).extend(members)
        for members in positions.values():
            members.sort()  # equal contexts of distinct objects: their rows in order, as one group
        self.size = len(rows)
        years = None if vintage_years is None else np.asarray(vintage_years, dtype=float)
        self.groups = [_Group(context, np.array(members), _columns([rows[i][1] for i in members]),
                              None if years is None else years[members])
                       for context, members in positions.items()]  # fmt: skip

    def price(self, efficiency_for: Callable[[Context], Efficiency] | None = None, variants: bool = False) -> Priced:
        """Price every row with the efficiencies `efficiency_for` gives its context (default: the context's own).

        With `variants`, the efficiencies' fields may be arrays of shape (V,) and the result has shape (rows, V).
        """
        import numpy as np

        priced = []
        for group in self.groups:
            ctx = group.context
            if efficiency_for is not None:
                ctx = replace(ctx, efficiency=efficiency_for(ctx))
            if not variants and len(group.rows) <= PLAIN_ROWS_UP_TO and not _has_arrays(ctx.efficiency):
                priced.append((group.rows, *_plain_rows(ctx, group)))
                continue
            lv = LayoutVars(*(v[:, None] for v in group.layouts)) if variants else group.layouts
            if group.vintage_years is not None:  # each row at its own release (Efficiency.vintage_factor)
                years = group.vintage_years[:, None] if variants else group.vintage_years
                ctx = replace(ctx, efficiency=replace(ctx.efficiency, vintage_years=years))
            result = evaluate_times(ctx, lv)
            priced.append((group.rows, result.step_time_s, result.forward_only_s))
        trailing = np.broadcast_shapes(*(np.shape(times)[1:] for _, times, _ in priced)) if priced else ()
        step, forward = np.empty((self.size, *trailing)), np.empty((self.size, *trailing))
        for rows, times, fwd in priced:
            step[rows], forward[rows] = times, fwd
        return Priced(step, forward)


PLAIN_ROWS_UP_TO = 8
"""A group of at most this many rows is priced one row at a time as plain numbers: an array call of the step costs
about 4 ms of numpy calls whatever its size, a plain one under 1 ms (validate has 96 groups of one row, 41 of two to
five). The formulas do the same float operations either way, so each row gets the same numbers to the last bit
wherever numpy's float64 pow and log2 round as libm's do (tests/test_batch_plain_rows.py)."""


def _has_arrays(efficiency: Efficiency) -> bool:
    import numpy as np

    return any(isinstance(v, np.ndarray) for v in vars(efficiency).values())


def _plain_rows(ctx: Context, group: _Group) -> tuple[Any, Any]:
    """Step times and forward passes of a group's rows, each priced with plain numbers at its own release."""
    import numpy as np

    step, forward = np.empty(len(group.rows)), np.empty(len(group.rows))
    at_release: dict[float, Context] = {}  # rows at one release share a context, and with it their shards' compute
    for k in range(len(group.rows)):
        row_ctx = ctx
        if group.vintage_years is not None:
            years = float(group.vintage_years[k])
            row_ctx = at_release.get(years) or replace(ctx, efficiency=replace(ctx.efficiency, vintage_years=years))
            at_release[years] = row_ctx
        result = evaluate_times(row_ctx, LayoutVars(*(float(v[k]) for v in group.layouts)))
        step[k], forward[k] = result.step_time_s, result.forward_only_s
    return step, forward


def price_layouts(ctx: Context, layouts: LayoutVars, size: int) -> StepResult:
    """Price `size` layouts of one context (LayoutVars of arrays of shape (size,)) with one array call of the step
    model, every figure returned as an array of shape (size,), memory too (a layouts sweep, planning.layout_sweep).

    A dimension with one value across the layouts is passed as a plain number, as the search does (Block.layout_vars),
    so that the terms that depend only on such dimensions are priced once."""
    import numpy as np

    def plain(values: Any) -> Any:
        values = np.asarray(values, dtype=float)
        return float(values[0]) if len(values) and (values == values[0]).all() else values

    result = evaluate(ctx, LayoutVars(*(plain(v) for v in layouts)))

    def full(value: Any) -> Any:
        return np.broadcast_to(np.asarray(value, dtype=float), (size,))

    memory = type(result.memory)(*(full(part) for part in result.memory))
    times = {name: full(getattr(result, name)) for name in StepResult._fields if name not in ("memory", "hbm_bytes")}
    return result._replace(memory=memory, **times)
