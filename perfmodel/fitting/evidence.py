"""The calibration's 'evidence' section: the rows its fits saw, and how much wider an interval is beyond them.

- `rows`: every row the dense fit is fitted on, every dense steady-step row validated but not fitted
  (validation.validated_steadily) and every MoE row the MoE stage prices, one compact list each (planning/evidence.py
  COLUMNS), what a prediction compares itself with.
- `held_out`: every row the forward, precision and scale protocols predict, with the axes on which it was beyond
  the rows its own fold's fit saw (planning.evidence.ground against them, as a prediction is against all rows) and
  its ratio to the best of them. The generation protocol's rows are not: a family without rows is its own
  protocol's question, and beyond it every axis is.
- `widening`: per axis that widens (planning.evidence.WIDENED), the powers on the interval's log-widths that bring
  90% of the held-out rows beyond on that axis within each end of their protocol's interval (none below 1), with
  those rows' count, MAPE and coverage before and after. An axis with fewer than MIN_ROWS such rows is not sized
  (and does not widen).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perfmodel.fitting import calibrate as cal
from perfmodel.fitting.protocols import ProtocolResult
from perfmodel.fitting.validation import PreparedRun
from perfmodel.physics.calibration import Interval
from perfmodel.planning import evidence as ev

PROTOCOLS = ("forward", "precision", "scale")
"""The protocols whose held-out rows size the widening (generation's: see the module's docstring)."""
MIN_ROWS = 10
"""Held-out rows beyond on an axis below which its powers are not sized: a 90th percentile of fewer says little."""
HELD_OUT_COLUMNS = ("protocol", "fold", "id", "time_error_pct", "beyond", "ratio_to_best_measured")


def row(item: PreparedRun) -> list[Any]:
    """A prepared run as an evidence row (planning.evidence.COLUMNS): as predicted, with its measured metric and,
    for a steady-step metric, its throughput and model TFLOP/s per GPU."""
    run, lo, ctx = item.run, item.layout, item.context
    tokens = {"tokens_per_s_per_gpu": run.measured,
              "step_time_s": lo.gbs * lo.seq_len / run.measured / lo.n_gpus}.get(run.metric)  # fmt: skip
    tflops = tokens * ctx.model.model_flops_per_token(lo.seq_len) / 1e12 if tokens is not None else None
    values = {
        "id": run.id, "model": ctx.model.id, "name": ctx.model.name, "moe": ctx.model.is_moe,
        "lora": run.checked.lora_rank > 0, "params_b": round(ctx.model.params / 1e9, 3),
        "accelerator": ctx.hardware.accelerator.name, "family": item.family, "format": run.format,
        "n_gpus": lo.n_gpus, "tp": lo.tp, "pp": lo.pp, "cp": lo.cp, "vp": lo.vp, "ep": lo.ep, "zero": lo.zero,
        "recompute": lo.recompute, "seq_len": lo.seq_len, "stack": ctx.stack,
        "source": f"{run.source}, {run.detail}" if run.detail else run.source, "released": run.released,
        "metric": run.metric, "measured": run.measured,
        "tokens_per_s_per_gpu": None if tokens is None else round(tokens, 1),
        "model_tflops_per_gpu": None if tflops is None else round(tflops, 1),
    }  # fmt: skip
    return [values[name] for name in ev.COLUMNS]


def _rows(items: Sequence[PreparedRun]) -> tuple[ev.Row, ...]:
    return tuple(ev.Row(*row(i)) for i in items)


@dataclass(frozen=True)
class Held:
    """A held-out row of a protocol with its fold's evidence: what the widening is sized on."""

    protocol: str
    fold: str
    id: str
    log_time_ratio: float
    """log(predicted / measured time), as the protocol's residual."""
    interval: Interval
    """Its protocol's 80% interval."""
    beyond: tuple[str, ...]
    ratio: float | None

    @property
    def widens(self) -> bool:
        """Whether the row was beyond its fold's rows on an axis that widens an interval (not only on its family or
        format, which its protocol's interval answers)."""
        return any(axis in self.beyond for axis in (*ev.WIDENED, ev.ABOVE))

    @property
    def measured_factor(self) -> float:
        """The measured time over the predicted: what an interval's time factors must bound."""
        return math.exp(-self.log_time_ratio)

    def within(self, interval: Interval) -> bool:
        return interval.low <= self.measured_factor <= interval.high

    def widened(self, powers: Mapping[str, ev.Widening]) -> Interval:
        return ev.widen(self.interval, self.beyond, self.ratio, dict(powers))

    def to_list(self) -> list[Any]:
        error = (math.exp(self.log_time_ratio) - 1) * 100
        ratio = None if self.ratio is None else round(self.ratio, 4)
        return [self.protocol, self.fold, self.id, round(error, 3), "; ".join(self.beyond), ratio]


def held_out(results: Mapping[str, ProtocolResult]) -> list[Held]:
    """The rows of PROTOCOLS' folds, each with the evidence its fold's training rows give (no widening yet)."""
    found = []
    for name in PROTOCOLS:
        if name not in results:
            continue
        result = results[name]
        band = cal.interval(result.residuals)
        interval = Interval(band["time_factor_low"], band["time_factor_high"], name)
        for fold in result.folds:
            index = ev.make_index(_rows(fold.fold.train), {})
            for held in fold.rows:
                item, log_ratio = held.item, held.residual.log_time_ratio
                measured = ev.Row(*row(item))
                model = item.context.model
                ground = ev.ground(index, model.id, model.params / 1e9, model.is_moe, measured.lora,
                                   measured.accelerator, item.family, item.run.format, item.layout.n_gpus)  # fmt: skip
                predicted = measured.model_tflops_per_gpu
                tflops = predicted * math.exp(-log_ratio) if predicted is not None else None
                evidence = ground.at(item.layout, tflops, interval)
                found.append(Held(name, fold.fold.name, item.run.id, log_ratio, interval, evidence.beyond,
                                  evidence.ratio))  # fmt: skip
    return found


def powers(rows: Sequence[Held]) -> dict[str, ev.Widening]:
    """Per widened axis with MIN_ROWS held-out rows beyond on it: the smallest powers (at least 1) on the log-widths
    of their intervals that put 90% of them within each end."""
    import numpy as np

    found = {}
    for axis in ev.WIDENED:
        mine = [r for r in rows if axis in r.beyond]
        if len(mine) < MIN_ROWS:
            continue
        logs = np.array([math.log(r.measured_factor) for r in mine])
        low = logs / np.log([r.interval.low for r in mine])
        high = logs / np.log([r.interval.high for r in mine])
        tail = (1 + cal.INTERVAL_COVERAGE) / 2 * 100
        found[axis] = ev.Widening(max(1.0, float(np.percentile(low, tail))), max(1.0, float(np.percentile(high, tail))))
    return found


def summary(rows: Sequence[Held], widening: Mapping[str, ev.Widening]) -> dict[str, Any]:
    """Count, MAPE (on a time), mean signed error and coverage of the protocol's and of the widened interval."""
    if not rows:
        return {"rows": 0}
    errors = [(math.exp(r.log_time_ratio) - 1) * 100 for r in rows]
    return {
        "rows": len(rows),
        "mape_pct": sum(map(abs, errors)) / len(rows),
        "mean_error_pct": sum(errors) / len(rows),
        "coverage": sum(r.within(r.interval) for r in rows) / len(rows),
        "coverage_widened": sum(r.within(r.widened(widening)) for r in rows) / len(rows),
    }


def section(
    items: Sequence[PreparedRun], moe_items: Sequence[PreparedRun], results: Mapping[str, ProtocolResult]
) -> dict[str, Any]:
    """The calibration file's 'evidence' section (planning/evidence.py reads it)."""
    held = held_out(results)
    widening = powers(held)
    return {
        "method": "rows: what the dense fit and the MoE stage saw and the dense rows validated, not fitted, as "
        "predicted; held_out: the rows of the forward, precision and scale protocols with the axes on which they "
        "were beyond their fold's rows; widening: per axis, the powers on an interval's log-widths that put 90% of "
        "the held-out rows beyond on it within each end of their protocol's interval (fitting/evidence.py)",
        "columns": list(ev.COLUMNS),
        "rows": [row(i) for i in [*items, *moe_items]],
        "widening": {
            axis: {"low_power": w.low, "high_power": w.high} | summary([r for r in held if axis in r.beyond], widening)
            for axis, w in widening.items()
        },
        "summary": {
            "within": summary([r for r in held if not r.widens], widening),
            "beyond": summary([r for r in held if r.widens], widening),
        },
        "held_out_columns": list(HELD_OUT_COLUMNS),
        "held_out": [r.to_list() for r in held],
    }
