"""Layout dimensions a measured row does not report: the stack's default, or a range over its plausible settings.

A row that leaves recompute, ZeRO sharding or the micro-batch open ran at a setting its stack picked, not
necessarily at the model's fastest (issue 10: such a row is never predicted at the best layout). The stack profile
(inputs/stacks.py) gives each dimension's default and plausible settings with their sources. The row is priced at
every plausible combination that fits in memory: its point is the default combination when that fits, its range
min..max over all of them. A row whose default does not fit, or whose stack has no default, is range-only.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from perfmodel.errors import InfeasibleLayout
from perfmodel.inputs.scenario import Scenario
from perfmodel.inputs.stacks import get_stack
from perfmodel.physics.parallel import Layout
from perfmodel.physics.step import Context, memory_need
from perfmodel.planning.predict import choose_layout, layout_vars

OPEN_DIMENSIONS = ("recompute", "zero", "mbs")
"""Dimensions a row may leave to its stack; the parallel degrees (tp, pp, cp, vp) have no stack default and stay
searched where a row (a user's CSV) leaves them open."""


@dataclass(frozen=True)
class Settled:
    point: Layout
    """The stack default's layout; for a range-only row the first plausible member (for its description)."""
    members: tuple[Layout, ...]
    """Every plausible combination of the open dimensions that fits in memory (the range)."""
    assumed: tuple[str, ...]
    """The dimensions taken from the stack profile."""
    at_default: bool
    """Whether `point` is the stack default (False: the row is scored on its range)."""
    note: str

    @property
    def basis(self) -> str:
        return "stack default" if self.at_default else "range"


def settle(scenario: Scenario, ctx: Context) -> Settled | None:
    """The row's layouts at its stack's settings; None when it reports every open dimension or leaves a parallel
    degree open (a search)."""
    par = scenario.parallelism
    open_ = tuple(d for d in OPEN_DIMENSIONS if getattr(par, d) is None)
    if not open_ or not (par.tp and par.pp and par.cp and par.vp):
        return None
    stack = get_stack(scenario.stack)
    rules = [stack.layout_default(d) for d in open_]
    if any(r is None for r in rules):
        return None  # a profile without the dimension's entry: searched
    valid: list[tuple[Layout, bool]] = []
    default: Layout | None = None
    capacity = ctx.hardware.accelerator.memory_bytes
    for combo in itertools.product(*(r.plausible for r in rules if r)):
        variant = par.model_copy(update=dict(zip(open_, combo, strict=True)))
        try:
            layout, _ = choose_layout(scenario.model_copy(update={"parallelism": variant}), ctx)
        except InfeasibleLayout:
            continue
        valid.append((layout, bool(memory_need(ctx, layout_vars(layout)) <= capacity)))  # evaluate(...).fits
        if all(r is not None and c == r.default for c, r in zip(combo, rules, strict=True)):
            default = layout
    if not valid:
        raise InfeasibleLayout(f"no plausible {', '.join(open_)} of stack '{stack.name}' gives a valid layout")
    fitting = tuple(lo for lo, fits in valid if fits)
    members = fitting or tuple(lo for lo, _ in valid)
    at_default = default is not None and (default in fitting or not fitting)
    said = ", ".join(f"{r.dimension}={r.default if r.default is not None else 'none sourced'}" for r in rules if r)
    if at_default and fitting:
        how = f"priced at the default, range over the {len(members)} plausible settings that fit"
    elif at_default:
        how = "no plausible setting fits the memory estimate: priced at the default"
    else:
        why = "does not fit" if default is not None else "is not sourced"
        which = "fit" if fitting else "are valid (none fits)"
        how = f"the default {why}: scored on the range over the {len(members)} plausible settings that {which}"
    note = f"{', '.join(open_)} not reported: stack '{stack.name}' default {said} (inputs/stacks.py); {how}"
    return Settled(default if at_default and default else members[0], members, open_, at_default, note)
