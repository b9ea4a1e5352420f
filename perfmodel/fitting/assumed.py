"""Layout dimensions a measured row does not report: the setting its stack would pick, and the range over the others.

A row that leaves recompute, ZeRO sharding or the micro-batch open ran at a setting its stack picked, not
necessarily at the model's fastest (issue 10: such a row is never predicted at the best layout). The stack profile
(inputs/stacks.py) gives each dimension's default and plausible settings with their sources. A recipe recomputes and
shards only as much as it must to fit: AMD's MLPerf v5.0 LoRA configs recompute 21 of Llama-2-70B's 80 layers on
the 192 GB MI300X and none on the 256 GB MI325X (stack_notes.md). So the row's point is

- the stack default, when it fits in memory ('stack default');
- else the stack's choice ('stack choice'): the first setting that fits in MEMORY_ORDER, which keeps the stack's
  sharding and raises recompute first (none < selective < a full recompute of the fewest leading layers of each
  pipeline chunk < every layer), and raises the ZeRO stage only where no recompute fits at the default sharding.
  That order is a stated assumption: a recipe's optimizer sharding is a code path (Megatron's distributed optimizer
  against Megatron-FSDP), recompute the per-model memory knob that NeMo/Megatron-Bridge recipes and AMD's configs
  set; selective before a partial block because it re-runs only norms and activations (a few % of a forward);
- a range ('range') where a dimension has no sourced default (the micro-batch) or nothing fits.

Every row also carries the range over all plausible settings that fit (min_predicted, max_predicted), for honesty; a
range-only row is fitted on its distance to the range and scored at its geometric middle.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any

from perfmodel.errors import InfeasibleLayout
from perfmodel.inputs.record import replaced
from perfmodel.inputs.scenario import Scenario
from perfmodel.inputs.stacks import BLOCK_RECOMPUTE, get_stack
from perfmodel.physics.parallel import Layout
from perfmodel.physics.schedule import stage_layers
from perfmodel.physics.step import Context, memory_need
from perfmodel.planning.predict import choose_layout, given_degree, layout_vars

PARALLEL_DEGREES = ("tp", "pp", "cp", "vp")
"""Layout dimensions without a stack default: where a row (a user's CSV) leaves one open, it is searched."""
OPEN_DIMENSIONS = ("recompute", "zero", "mbs")
"""Dimensions a row may leave to its stack."""
MEMORY_ORDER: dict[str, tuple[Any, ...]] = {
    "zero": (0, 1, 2, 3),
    "recompute": ("none", "selective", BLOCK_RECOMPUTE, "full"),
}
"""Each settled dimension's settings from the least memory saved to the most (ZeRO shards more state per stage;
recompute keeps fewer activations). The stack's choice is the first that fits with the dimensions in this dict's
order, ZeRO outer, each from the stack's default on (a stage below the default saves less: never needed)."""


@dataclass(frozen=True)
class Settled:
    point: Layout
    """The layout the row is priced at: the stack default, or the stack's choice; for a range-only row the first
    plausible member (for its description)."""
    members: tuple[Layout, ...]
    """Every plausible combination of the open dimensions that fits in memory (the range)."""
    assumed: tuple[str, ...]
    """The dimensions taken from the stack profile."""
    basis: str
    """'stack default', 'stack choice' (the default does not fit: the least memory-saving setting that does) or
    'range' (the row is scored on its range)."""
    note: str

    @property
    def range_only(self) -> bool:
        return self.basis == "range"


def settle(scenario: Scenario, ctx: Context) -> Settled | None:
    """The row's layouts at its stack's settings; None when it reports every open dimension or leaves a parallel
    degree open (a search)."""
    par = scenario.parallelism
    open_ = tuple(d for d in OPEN_DIMENSIONS if getattr(par, d) is None)
    if not open_ or not all(given_degree(par, d) for d in PARALLEL_DEGREES):
        return None
    stack = get_stack(scenario.stack)
    rules = [stack.layout_default(d) for d in open_]
    if any(r is None for r in rules):
        return None  # a profile without the dimension's entry: searched
    defaults = tuple(r.default for r in rules if r)
    priced: dict[tuple[Any, ...], tuple[Layout, bool]] = {}
    capacity = ctx.hardware.accelerator.memory_bytes
    for combo in itertools.product(*(r.plausible for r in rules if r)):
        settings = dict(zip(open_, combo, strict=True))
        unrecomputed = tuple((settings | {"recompute": "none"}).values())  # its combination: priced before it
        found = _priced(scenario, ctx, settings, capacity, priced.get(unrecomputed, (None, False))[1])
        if found is not None:
            priced[combo] = found
    if not priced:
        raise InfeasibleLayout(f"no plausible {', '.join(open_)} of stack '{stack.name}' gives a valid layout")
    fitting = tuple(lo for lo, fits in priced.values() if fits)
    members = fitting or tuple(lo for lo, _ in priced.values())
    default = priced.get(defaults)
    choice = _stack_choice(open_, defaults, {c: lo for c, (lo, fits) in priced.items() if fits})
    said = ", ".join(f"{r.dimension}={r.default if r.default is not None else 'none sourced'}" for r in rules if r)
    if default is not None and (default[1] or not fitting):
        point, basis = default[0], "stack default"
        how = (
            f"priced at the default, range over the {len(members)} plausible settings that fit"
            if fitting
            else "no plausible setting fits the memory estimate: priced at the default"
        )
    elif choice is not None:
        point, basis = choice, "stack choice"
        how = (
            f"the default does not fit: priced at the least memory-saving setting that does ({_described(choice)}; "
            f"fitting.assumed.MEMORY_ORDER), range over the {len(members)} plausible settings that fit"
        )
    else:
        point, basis = members[0], "range"
        why = "does not fit" if default is not None else "is not sourced"
        which = "fit" if fitting else "are valid (none fits)"
        how = f"the default {why}: scored on the range over the {len(members)} plausible settings that {which}"
    note = f"{', '.join(open_)} not reported: stack '{stack.name}' default {said} (inputs/stacks.py); {how}"
    return Settled(point, members, open_, basis, note)


def _priced(
    scenario: Scenario, ctx: Context, settings: dict[str, Any], capacity: float, unrecomputed_fits: bool
) -> tuple[Layout, bool] | None:
    """The layout at these settings and whether it fits; None when the rules refuse it. A block recompute is the
    fewest leading layers per pipeline chunk that fit (all but one, when none does: it does not fit either); one
    layer when the same settings without recompute fit (memory falls with the layers recomputed), unpriced."""
    block = settings.get("recompute") == BLOCK_RECOMPUTE
    variant = replaced(scenario.parallelism, **settings | ({"recompute": "full"} if block else {}))
    try:
        layout, _ = choose_layout(replaced(scenario, parallelism=variant), ctx)
    except InfeasibleLayout:
        return None
    if block:
        partial = _fewest_layers(ctx, layout, capacity, unrecomputed_fits)
        if partial is None:
            return None
        layout = partial
    return layout, bool(memory_need(ctx, layout_vars(layout)) <= capacity)  # evaluate(...).fits


def _fewest_layers(ctx: Context, layout: Layout, capacity: float, unrecomputed_fits: bool) -> Layout | None:
    """`layout` (full recompute) recomputing only the fewest leading layers k of each pipeline chunk that fit,
    1 <= k < the chunk's layers, found in one array pricing of every k (memory falls with k), or 1 where no
    recompute fits already; the chunk's last layers but one when none fits; None for a one-layer chunk (block is
    full recompute there)."""
    import numpy as np

    per_chunk = int(
        np.ceil(float(stage_layers(ctx.model.layers, layout.pp, layout.vp, ctx.model.mtp_layers).per_chunk))
    )
    if per_chunk < 2:
        return None
    if unrecomputed_fits:
        return replace(layout, recompute_layers=1)
    ks = np.arange(1, per_chunk, dtype=float)
    need = np.broadcast_to(memory_need(ctx, layout_vars(layout)._replace(recompute_layers=ks)), ks.shape)
    fits = np.flatnonzero(need <= capacity)
    return replace(layout, recompute_layers=int(ks[fits[0]] if fits.size else ks[-1]))


def _stack_choice(
    open_: tuple[str, ...], defaults: tuple[Any, ...], fitting: dict[tuple[Any, ...], Layout]
) -> Layout | None:
    """The first fitting combination in MEMORY_ORDER (ZeRO outer, recompute inner), each settled dimension from the
    stack's default on; None when a dimension without a default is open (the micro-batch: the row stays a range)
    or none fits."""
    if any(d not in MEMORY_ORDER for d in open_) or any(v is None for v in defaults):
        return None
    start = dict(zip(open_, defaults, strict=True))

    def rank(combo: tuple[Any, ...]) -> tuple[int, ...] | None:
        setting = dict(zip(open_, combo, strict=True))
        ranks = tuple(
            MEMORY_ORDER[d].index(setting[d]) - MEMORY_ORDER[d].index(start[d]) for d in MEMORY_ORDER if d in setting
        )
        return None if any(r < 0 for r in ranks) else ranks

    ranked = [(r, lo) for combo, lo in fitting.items() if (r := rank(combo)) is not None]
    return min(ranked, key=lambda item: item[0])[1] if ranked else None


def _described(layout: Layout) -> str:
    recompute = (
        f"recompute full, first {layout.recompute_layers} layers per chunk"
        if layout.recompute_layers
        else f"recompute {layout.recompute}"
    )
    return f"{recompute}, ZeRO-{layout.zero}"
