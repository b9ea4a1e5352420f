"""Enumerate the valid layouts of a scenario and price them all at once with numpy.

The same `step.evaluate` that prices one layout in `predict` takes arrays here: one numpy pass over every candidate.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from perfmodel.errors import PerfmodelError
from perfmodel.models import ModelSpec
from perfmodel.parallel import RECOMPUTE_MODES, ZERO_STAGES, Layout, violations
from perfmodel.step import Context, LayoutVars, StepResult, evaluate

MICRO_BATCHES = (1, 2, 4, 8)
MAX_CP = 32
MAX_VP = 16


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def candidate_layouts(
    model: ModelSpec, n_gpus: int, seq_len: int, gbs: int, ranks_per_domain: int, fixed: dict[str, Any]
) -> list[Layout]:
    """Every layout that agrees with the `fixed` choices and breaks no validity rule.

    TP stays inside one scale-up domain: a TP group across NICs is never faster than PP or DP there.
    """

    def choices(name: str, default: list[Any]) -> list[Any]:
        return [fixed[name]] if fixed.get(name) is not None else default

    tps = choices("tp", [d for d in _divisors(n_gpus) if d <= ranks_per_domain])
    cps = choices("cp", [c for c in _divisors(n_gpus) if c <= MAX_CP and (c & (c - 1)) == 0])
    layouts = []
    for tp, cp in itertools.product(tps, cps):
        if n_gpus % (tp * cp):
            continue
        for pp in choices("pp", [p for p in _divisors(n_gpus // (tp * cp)) if p <= model.layers]):
            if n_gpus % (tp * cp * pp):
                continue
            dp = n_gpus // (tp * cp * pp)
            if fixed.get("dp") not in (None, dp):
                continue
            vps = choices("vp", [1] if pp == 1 else [v for v in range(1, MAX_VP + 1) if pp * v <= model.layers])
            for vp, mbs, recompute, zero in itertools.product(
                vps,
                choices("mbs", list(MICRO_BATCHES)),
                choices("recompute", list(RECOMPUTE_MODES)),
                choices("zero", list(ZERO_STAGES)),
            ):
                layout = Layout(tp, pp, cp, dp, vp, fixed.get("ep") or 1, mbs, gbs, seq_len, recompute, zero)
                if not violations(layout, model, n_gpus):
                    layouts.append(layout)
    return layouts


def as_arrays(layouts: list[Layout]) -> LayoutVars:
    import numpy as np

    def column(get: Any) -> Any:
        return np.array([get(lo) for lo in layouts], dtype=float)

    return LayoutVars(
        tp=column(lambda lo: lo.tp),
        pp=column(lambda lo: lo.pp),
        cp=column(lambda lo: lo.cp),
        dp=column(lambda lo: lo.dp),
        vp=column(lambda lo: lo.vp),
        mbs=column(lambda lo: lo.mbs),
        gbs=column(lambda lo: lo.gbs),
        recompute=column(lambda lo: RECOMPUTE_MODES.index(lo.recompute)),
        zero=column(lambda lo: lo.zero),
    )


@dataclass(frozen=True)
class SearchResult:
    layouts: list[Layout]
    step_time_s: Any
    fits: Any
    memory_bytes: Any

    @property
    def best(self) -> Layout:
        import numpy as np

        if not self.fits.any():
            need = float(self.memory_bytes.min()) / 1e9
            raise PerfmodelError(
                f"no layout of the {len(self.layouts)} valid ones fits in memory: "
                f"the smallest needs {need:.1f} GB per GPU"
            )
        times = np.where(self.fits, self.step_time_s, np.inf)
        return self.layouts[int(np.argmin(times))]


def search(ctx: Context, layouts: list[Layout]) -> SearchResult:
    if not layouts:
        raise PerfmodelError("no valid layout: no combination of TP/PP/CP/DP obeys the layout rules for this request")
    result: StepResult = evaluate(ctx, as_arrays(layouts))
    return SearchResult(layouts, result.step_time_s, result.fits, result.memory.total)
