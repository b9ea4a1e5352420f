"""A prediction's time to train as a distribution: quantiles and the probability of finishing by a deadline.

The model's own error is read from the prediction's 80% interval. The calibration keeps, per out-of-sample protocol,
the 10% and 90% quantiles of its held-out residuals as factors on a predicted time (fitting/calibrate.py
`interval`), widened beyond the evidence (planning/evidence.py); not the residuals themselves. Between and beyond
them the measured time is read as a two-piece log-normal with its median at the point: log(measured / predicted) is
normal with the spread log(high) / z(0.9) above the point and -log(low) / z(0.9) below it, so the 10% and 90%
quantiles are the interval's ends exactly, the median is the point, and an interval that does not reach beyond 1 on
a side says nothing is measured there (`time_factor`, `probability_within`, `quantiles`: the closed form). Without
an interval (an uncalibrated prediction) that error is nil.

A plan's time (`Spread`) adds two sources the interval does not hold: run-to-run variability (a log-normal of the
spread measured between MLPerf runs of one submission, planning/variability.py) and the random count of
interruptions (the goodput model's expected count as a Poisson count, each costing the mean of what the goodput
model's loss of lost work, restarts and checkpoint reads gives one). Without interruptions (a failure-free run:
predict's own quantiles) the interval and the variability add in log time in closed form up to one integral
(planning/two_piece.py, pure Python: no draws, no numpy), centred on their median as the draws are. With
interruptions they are combined by Monte-Carlo:
SAMPLES draws from a fixed seed, the same draws for every prediction (so a probability moves smoothly with the GPUs
and the deadline, and every answer is reproducible), the interruptions drawn by inverting their Poisson
distribution; the sampled factors are divided by their median, so the P50 is the point exactly, as the interval's
reading has it (centring moves the draws by the gap between the interruptions' median count and their mean, less
than one interruption's cost: beside a run of days, a fraction of a percent). With
neither source the closed form answers. Cost is proportional to time at the plan's price: a chosen quote, its range
shown, not drawn (no source gives a distribution over quotes, and a cost at a quote must not move with an invented
one). Where the user states one (`Spread.price`: a triangular low/mode/high over the quote), the price is drawn too,
independent of the time, from its own seeded uniforms (the time's draws unchanged), by inverting the triangle's
distribution: the cost's quantiles and P(cost within budget) are then those of time x price, their P50 that of the
product, not the cost at the quote.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from perfmodel.errors import PerfmodelError
from perfmodel.physics.calibration import Interval
from perfmodel.planning import two_piece

if TYPE_CHECKING:
    from statistics import NormalDist

    import numpy as np

    from perfmodel.planning.request import Spelling

SAMPLES = 20_001
"""Monte-Carlo draws per prediction (odd: the median is one draw, so the P50 is the point exactly)."""
SEED = 31
MEDIAN = 0.5
"""The default confidence: the point estimate, as plans were checked before confidences."""
Z_END = 1.2815515655446004
"""The standard normal's quantile at 0.9, where the 80% interval's high end lies (NormalDist().inv_cdf(0.9) to
1e-15: a test checks), written out so that the quantiles a prediction shows need no statistics."""


@cache
def _normal() -> NormalDist:
    """The standard normal; statistics is imported here: a prediction's P10/P50/P90 need it not, and
    `perfmodel predict` starts without it."""
    from statistics import NormalDist

    return NormalDist()


def check(confidence: float, spelling: Spelling) -> float:
    """`confidence` if it is a probability strictly between 0 and 1 (0 and 1 would need no or infinite GPUs); the
    error names the option as `spelling` does: the flag (`--confidence 2`, request.CLI) or, for the Python API, the
    keyword (`confidence=2`, request.API)."""
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 < confidence < 1:
        given = spelling.given("confidence", confidence)
        raise PerfmodelError(f"{given}: allowed a probability strictly between 0 and 1 (e.g. 0.9)")
    return float(confidence)


def at(confidence: float) -> str:
    """How a time or cost at `confidence` is named after its figure: '' at the median, else ' at P90'."""
    return "" if confidence == MEDIAN else f" at P{100 * confidence:.4g}"


def quantiles(interval: Interval | None, figures: dict[str, float | None]) -> dict[str, float | None]:
    """`NAME_p10`, `NAME_p50`, `NAME_p90` of each figure proportional to a run's time (GPU-hours, cost at a price,
    energy, carbon): the figure times the interval's low end, itself (exactly), times its high end, which are the
    distribution's 10%, 50% and 90% quantiles (`time_factor` at 0.1, 0.5, 0.9: an end within `NEGLIGIBLE_SPREAD` of
    the point is the point); all three the figure without one."""
    low, high = (1.0, 1.0) if interval is None else (_end(interval.low), _end(interval.high))
    return {f"{name}_{key}": None if value is None else value * factor for name, value in figures.items()
            for key, factor in (("p10", low), ("p50", 1.0), ("p90", high))}  # fmt: skip


NEGLIGIBLE_SPREAD = 1e-4
"""A log spread (an interval end's distance from the point, a run-to-run standard deviation) under which the time is
read as not spreading that way (0.01% of it; measured spreads are near 1%, intervals 5-20%): narrower, a quantile
and its probability stop agreeing at double precision (exp and log of a factor round-trip to about 1e-16, a
probability error of about 1e-16 / spread), so a plan at a confidence could fall short of it (hypothesis found a
run-to-run spread of 2.4e-231, whose P75 factor rounds to 1, of probability 0.5)."""


def _spread_of(end: float) -> float:
    """How far an interval end lies from the point in log time; 0 within `NEGLIGIBLE_SPREAD`."""
    gap = abs(math.log(end))
    return gap if gap >= NEGLIGIBLE_SPREAD else 0.0


def _end(end: float) -> float:
    """An interval end as priced: the point itself within `NEGLIGIBLE_SPREAD` of it."""
    return end if _spread_of(end) else 1.0


def time_factor(interval: Interval | None, confidence: float) -> float:
    """The factor on a predicted time that the measured one stays under with probability `confidence`."""
    if interval is None or confidence == MEDIAN:
        return 1.0
    z = _normal().inv_cdf(confidence) / Z_END
    return _end(interval.high) ** z if z > 0 else _end(interval.low) ** (-z)


def probability_within(interval: Interval | None, ratio: float) -> float:
    """The probability that the measured time is at most `ratio` times the predicted one (a deadline over the
    predicted time): 0.9 at the interval's high end, 0.5 at the point."""
    if ratio <= 0:
        return 0.0
    if math.isinf(ratio):
        return 1.0
    end = 1.0 if interval is None else interval.high if ratio >= 1 else interval.low
    spread = _spread_of(end)
    if not spread:
        return 1.0 if ratio >= 1 else 0.0
    return _normal().cdf(Z_END * math.log(ratio) / spread)


@dataclass(frozen=True)
class Spread:
    """What a run's time to train varies by, as factors on its point: the model's error (its 80% interval), the
    run-to-run variability (a log standard deviation) and the interruptions (their expected count, and what each
    costs as a share of the point's time)."""

    interval: Interval | None = None
    run_sd: float = 0.0
    interruptions: float = 0.0
    interruption_share: float = 0.0
    price: tuple[float, float, float] | None = None
    """A price distribution the user states: a triangle's low, mode and high as factors on the quoted price (None:
    the quote, not drawn). Time is independent of it."""

    @property
    def closed(self) -> bool:
        """Whether the interval alone spreads the time (the closed form answers): no interruptions, and a
        run-to-run spread under `NEGLIGIBLE_SPREAD`."""
        return self.run_sd < NEGLIGIBLE_SPREAD and not self.drawn

    @property
    def drawn(self) -> bool:
        """Whether interruptions spread the time (Monte-Carlo answers; else two_piece.py)."""
        return self.interruptions > 0 and self.interruption_share > 0

    @property
    def sides(self) -> tuple[float, float]:
        """The model's error as a two-piece normal in log time: its spread above the point and below it."""
        low, high = (1.0, 1.0) if self.interval is None else (self.interval.low, self.interval.high)
        return _spread_of(high) / Z_END, _spread_of(low) / Z_END

    def log_quantile(self, q: float) -> float:
        """Without interruptions: log of the factor at `q`, before centring (two_piece.py)."""
        return two_piece.quantile(q, *self.sides, self.run_sd)


NORMAL_COUNT = 20.0
"""Expected interruptions from which their Poisson count is read as a normal (its skew 1 / sqrt(count) at most
0.22): `poisson_as_normal`."""


def poisson_as_normal(spread: Spread) -> Spread:
    """`spread` with its interruptions, where they are NORMAL_COUNT or more, read as a normal of the same variance
    in log time (the count's variance, its mean, times each one's share squared) beside the run-to-run
    variability, so that two_piece.py answers without draws: predict's record of a long run (its `_with_losses`
    quantiles) stays pure Python, as `perfmodel predict` starts without numpy. Fewer, rarer interruptions are
    drawn as they are (a rare one that costs much is no normal: read as one, it would widen the P90 of a short run
    by a percent). tests/test_predict_quantiles.py holds the reading to the draws."""
    if not spread.drawn or spread.interruptions < NORMAL_COUNT:
        return spread
    sd = math.sqrt(spread.run_sd**2 + spread.interruptions * spread.interruption_share**2)
    return Spread(spread.interval, sd, price=spread.price)


@cache
def _draws() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fixed draws every spread is sampled from: a standard normal for the model's error and one for run-to-run
    variability, a uniform for the interruptions. numpy is imported here: a prediction of a given layout is priced
    without it (tests/test_fast_path.py)."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    return rng.standard_normal(SAMPLES), rng.standard_normal(SAMPLES), rng.random(SAMPLES)


def _poisson(mean: float, uniform: np.ndarray) -> np.ndarray:
    """Poisson counts of `mean` at the quantiles `uniform` (the inverse of its distribution, to 12 standard
    deviations above the mean)."""
    import numpy as np

    top = int(mean + 12 * math.sqrt(mean) + 12)
    k = np.arange(top + 1, dtype=float)
    log_factorial = np.concatenate(([0.0], np.cumsum(np.log(k[1:]))))
    cdf = np.cumsum(np.exp(k * math.log(mean) - mean - log_factorial))
    return np.minimum(np.searchsorted(cdf, uniform, side="right"), top).astype(float)


@lru_cache(maxsize=256)
def _factors(spread: Spread) -> np.ndarray:
    """The sampled factors on the point, sorted, their median 1."""
    import numpy as np

    return np.sort(_time_draws(spread))


def _time_draws(spread: Spread) -> np.ndarray:
    """The sampled factors on the point in the order of the draws (so that a price drawn beside them pairs with
    each), their median 1."""
    return _centred(spread, *_draws())


def _centred(spread: Spread, z_model: np.ndarray, z_run: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """The factors on the point `spread` gives at these draws of the model's error, the run-to-run variability and
    the interruptions, divided by their median."""
    import numpy as np

    above, below = spread.sides
    log_factor = z_model * np.where(z_model > 0, above, below)
    factors = np.exp(log_factor + spread.run_sd * z_run)
    if spread.interruptions > 0:
        counts = _poisson(spread.interruptions, uniform)
        factors *= 1 + spread.interruption_share * (counts - spread.interruptions)
    return factors / np.partition(factors, SAMPLES // 2)[SAMPLES // 2]


@cache
def _price_uniforms() -> np.ndarray:
    """The uniforms a stated price is drawn from: a stream of their own, so that every time draw stays as it is."""
    import numpy as np

    return np.random.default_rng((SEED, 1)).random(SAMPLES)


def triangle(low: float, mode: float, high: float, uniform: np.ndarray) -> np.ndarray:
    """The triangular distribution's quantiles at `uniform` (its inverse distribution function)."""
    import numpy as np

    width = high - low
    if width == 0:
        return np.full_like(uniform, mode)
    split = (mode - low) / width
    below = low + np.sqrt(uniform * width * (mode - low))
    above = high - np.sqrt((1 - uniform) * width * (high - mode))
    return np.where(uniform < split, below, above)


@lru_cache(maxsize=256)
def _cost_factors(spread: Spread) -> np.ndarray:
    """The sampled factors on the cost at the quote: the time's (median 1) times the drawn price's, sorted."""
    import numpy as np

    assert spread.price is not None
    return np.sort(_time_draws(spread) * triangle(*spread.price, _price_uniforms()))


@cache
def _strata() -> np.ndarray:
    """The model's error for a campaign: the standard normal's quantiles at k / (SAMPLES - 1), one per draw (the
    ends at half a step), so that a campaign whose phases draw nothing of their own has exactly the phases'
    quantiles summed (P10, P50 and P90 fall on k / (SAMPLES - 1) = 0.1, 0.5 and 0.9)."""
    import numpy as np

    steps = SAMPLES - 1
    normal = _normal()
    return np.array([normal.inv_cdf(min(max(k, 0.5), steps - 0.5) / steps) for k in range(SAMPLES)])


@cache
def _phase_draws(index: int) -> tuple[np.ndarray, np.ndarray]:
    """A campaign phase's own run-to-run and interruption draws: the strata of each in a seeded order of the
    phase's own (Latin hypercube sampling: each marginal exact, the pairing random), so that the noise of the draws
    does not widen a sum the exact parts would not."""
    import numpy as np

    rng = np.random.default_rng((SEED, 2, index))
    return _strata()[rng.permutation(SAMPLES)], (rng.permutation(SAMPLES) + 0.5) / SAMPLES


def campaign_quantiles(
    phases: Sequence[tuple[Spread, dict[str, float | None]]], priced: frozenset[str] = frozenset()
) -> dict[str, float | None]:
    """`NAME_p10`, `NAME_p50`, `NAME_p90` of each figure summed over a campaign's phases, each phase's figure
    proportional to its time under its spread. Which sources are shared across phases follows what they are: the
    model's out-of-sample error is the same model, stack and calibration on every phase (its residuals are mostly
    systematic: a model that is 8% slow on the main phase is slow on the long-context one), so one draw serves every
    phase; run-to-run variability and interruptions are each phase's own job's (a draw per phase, independent); a
    stated price is one quote (one draw). Hence a campaign's P10-P90 is no wider than its phases' summed (which
    would take every source as shared) and narrower where the independent sources weigh. The shared draw is
    stratified (`_strata`), so that with nothing independent the quantiles are the phases' summed, as they are for
    perfectly correlated parts; each phase's factors are centred on its own median, as its own quantiles are. A
    figure empty in any phase is empty."""
    import numpy as np

    z_model = _strata()
    factors = [_centred(spread, z_model, *_phase_draws(i)) for i, (spread, _) in enumerate(phases)]
    price = phases[0][0].price
    drawn_price = None if price is None else triangle(*price, _price_uniforms())
    out: dict[str, float | None] = {}
    for name in phases[0][1]:
        values = [figures.get(name) for _, figures in phases]
        total = None
        if all(v is not None for v in values):
            total = np.sort(sum(v * f for v, f in zip(values, factors, strict=True)) * (
                drawn_price if name in priced and drawn_price is not None else 1.0))  # fmt: skip
        out |= {f"{name}_{key}": None if total is None else float(total[_index(q)]) for key, q in LEVELS}
    return out


def _index(confidence: float) -> int:
    """The sorted draw at `confidence`."""
    return min(int(confidence * SAMPLES), SAMPLES - 1)


def _share_at_most(sorted_draws: np.ndarray, ratio: float) -> float:
    """The share of the sorted draws at most `ratio`: the drawn distribution's probability of staying within it."""
    import numpy as np

    return float(np.searchsorted(sorted_draws, ratio, side="right")) / SAMPLES


def spread_factor(spread: Spread, confidence: float) -> float:
    """The factor on a predicted time that the measured one stays under with probability `confidence`."""
    if confidence == MEDIAN or spread.closed:
        return time_factor(spread.interval, confidence)
    if not spread.drawn:
        return math.exp(spread.log_quantile(confidence) - spread.log_quantile(MEDIAN))
    return float(_factors(spread)[_index(confidence)])


def spread_within(spread: Spread, ratio: float) -> float:
    """The probability that the measured time is at most `ratio` times the predicted one."""
    if spread.closed or ratio <= 0 or math.isinf(ratio):
        return probability_within(spread.interval, ratio)
    if not spread.drawn:
        return two_piece.cdf_pdf(math.log(ratio) + spread.log_quantile(MEDIAN), *spread.sides, spread.run_sd)[0]
    return _share_at_most(_factors(spread), ratio)


def cost_factor(spread: Spread, confidence: float) -> float:
    """The factor on the cost at the quote that the cost stays under with probability `confidence`: the time's,
    unless a price distribution is stated."""
    if spread.price is None:
        return spread_factor(spread, confidence)
    return float(_cost_factors(spread)[_index(confidence)])


def cost_within(spread: Spread, ratio: float) -> float:
    """The probability that the cost is at most `ratio` times the cost at the quote."""
    if spread.price is None:
        return spread_within(spread, ratio)
    return _share_at_most(_cost_factors(spread), ratio)


LEVELS = (("p10", 0.1), ("p50", MEDIAN), ("p90", 0.9))
PRICED = frozenset(("cost_usd", "cost_usd_with_losses"))
"""The quantile figures that are costs at the quote: a stated price distribution spreads them."""
PRICE_DRAWN_IN = "cost_usd_p10/p50/p90, cost at confidence and P(cost within budget); time does not draw it"
"""Where a stated price distribution is drawn, as outputs say."""


def spread_quantiles(
    spread: Spread, figures: dict[str, float | None], priced: frozenset[str] = frozenset()
) -> dict[str, float | None]:
    """`NAME_p10`, `NAME_p50`, `NAME_p90` of each figure proportional to a run's time under `spread` (the P50 the
    figure itself); the figures named in `priced` are costs at the quote, their quantiles `cost_factor`'s."""
    drawn_price = spread.price is not None and bool(priced & figures.keys())
    if spread.closed and not drawn_price:
        return quantiles(spread.interval, figures)
    factors = {key: spread_factor(spread, q) for key, q in LEVELS}
    costs = {key: cost_factor(spread, q) for key, q in LEVELS} if drawn_price else factors
    return {f"{name}_{key}": None if value is None else value * (costs if name in priced else factors)[key]
            for name, value in figures.items() for key in factors}  # fmt: skip
