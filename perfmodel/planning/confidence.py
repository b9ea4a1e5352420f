"""A prediction's time to train as a distribution, read from its 80% interval: quantiles and the probability of
finishing by a deadline.

The calibration keeps, per out-of-sample protocol, the 10% and 90% quantiles of its held-out residuals as factors on
a predicted time (fitting/calibrate.py `interval`), widened beyond the evidence (planning/evidence.py); not the
residuals themselves. Between and beyond them the measured time is read as a two-piece log-normal with its median at
the point: log(measured / predicted) is normal with the spread log(high) / z(0.9) above the point and
-log(low) / z(0.9) below it, so the 10% and 90% quantiles are the interval's ends exactly, the median is the point,
and an interval that does not reach beyond 1 on a side says nothing is measured there. Without an interval (an
uncalibrated prediction) the time is the point. Failures enter at their expected count (the goal's basis,
planning/plan.py `goal_basis`): their Poisson spread, left out, is a few tenths of a percent of a long run's time
(README, "Plans at a confidence"). Cost is proportional to time at the plan's price (the
price is chosen, not drawn: its range is shown, not a probability).
"""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING

from perfmodel.errors import PerfmodelError
from perfmodel.physics.calibration import Interval

if TYPE_CHECKING:
    from statistics import NormalDist

MEDIAN = 0.5
"""The default confidence: the point estimate, as plans were checked before confidences."""


@cache
def _normal() -> tuple[NormalDist, float]:
    """The standard normal and its quantile at the 80% interval's high end (the low end is at minus it); statistics
    is imported here: a prediction's P10/P50/P90 need it not, and `perfmodel predict` starts without it."""
    from statistics import NormalDist

    normal = NormalDist()
    return normal, normal.inv_cdf(0.9)


def check(confidence: float, where: str = "--confidence") -> float:
    """`confidence` if it is a probability strictly between 0 and 1 (0 and 1 would need no or infinite GPUs)."""
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 < confidence < 1:
        raise PerfmodelError(f"{where} {confidence!r}: allowed a probability strictly between 0 and 1 (e.g. 0.9)")
    return float(confidence)


def at(confidence: float) -> str:
    """How a time or cost at `confidence` is named after its figure: '' at the median, else ' at P90'."""
    return "" if confidence == MEDIAN else f" at P{100 * confidence:.4g}"


def quantiles(interval: Interval | None, figures: dict[str, float | None]) -> dict[str, float | None]:
    """`NAME_p10`, `NAME_p50`, `NAME_p90` of each figure proportional to a run's time (GPU-hours, cost at a price,
    energy, carbon): the figure times the interval's low end, itself (exactly), times its high end, which are the
    distribution's 10%, 50% and 90% quantiles (`time_factor` at 0.1, 0.5, 0.9); all three the figure without one."""
    low, high = (1.0, 1.0) if interval is None else (interval.low, interval.high)
    return {f"{name}_{key}": None if value is None else value * factor for name, value in figures.items()
            for key, factor in (("p10", low), ("p50", 1.0), ("p90", high))}  # fmt: skip


def time_factor(interval: Interval | None, confidence: float) -> float:
    """The factor on a predicted time that the measured one stays under with probability `confidence`."""
    if interval is None or confidence == MEDIAN:
        return 1.0
    normal, z_end = _normal()
    z = normal.inv_cdf(confidence) / z_end
    return interval.high**z if z > 0 else interval.low ** (-z)


def probability_within(interval: Interval | None, ratio: float) -> float:
    """The probability that the measured time is at most `ratio` times the predicted one (a deadline over the
    predicted time): 0.9 at the interval's high end, 0.5 at the point."""
    if ratio <= 0:
        return 0.0
    if math.isinf(ratio):
        return 1.0
    end = 1.0 if interval is None else interval.high if ratio >= 1 else interval.low
    if end == 1.0:
        return 1.0 if ratio >= 1 else 0.0
    normal, z_end = _normal()
    return normal.cdf(z_end * math.log(ratio) / abs(math.log(end)))
