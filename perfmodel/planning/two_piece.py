"""The model's error and the run-to-run variability added, in log time: a two-piece normal plus a normal.

log(measured / predicted) is the model's error, a two-piece normal of median 0 (its spread `above` the point and
`below` it: planning/confidence.py), plus the run-to-run variability, a normal of spread `sd` (planning/
variability.py). Their sum has no closed form, but its distribution is one integral over the run-to-run draw w:
P(X <= x) = E[G(x - sd w)], G the two-piece's distribution. G has a kink at 0 (w = x / sd), so the integral is
split there, and where a side turns sharply near it or the draw's density bends, and each smooth piece taken by
Gauss-Legendre quadrature (NODES nodes; a quantile within 2e-10 of the largest spread of 40 nodes' and of the exact
normal where the sides are equal, from spreads of 1e-4 to 0.5), in pure Python: `perfmodel predict` shows these
quantiles and starts without numpy. Quantiles are found by Newton's method inside a bracket (3 in about 0.7 ms:
benchmarks/bench_quantiles.py).
"""

from __future__ import annotations

import itertools
import math
from functools import cache, lru_cache

NODES = 12
"""Gauss-Legendre nodes on each side of the kink."""
SPAN = 9.0
"""Standard deviations of the run-to-run draw integrated over (beyond them: under 1e-18 of the probability)."""
CUTS = (-4.5, -1.5, 1.5, 4.5)
"""Where the run-to-run draw's density is cut into pieces its nodes integrate closely."""
_ROOT_2PI = math.sqrt(2 * math.pi)


@cache
def _legendre() -> tuple[tuple[float, float], ...]:
    """Gauss-Legendre nodes and weights on [-1, 1]: Newton's method on the Legendre polynomial of degree NODES."""
    rule = []
    for i in range(1, NODES + 1):
        x = math.cos(math.pi * (i - 0.25) / (NODES + 0.5))
        while True:
            before, value = 1.0, x
            for k in range(2, NODES + 1):
                before, value = value, ((2 * k - 1) * x * value - (k - 1) * before) / k
            slope = NODES * (x * value - before) / (x * x - 1)
            step = value / slope
            x -= step
            if abs(step) < 1e-15:
                break
        rule.append((x, 2 / ((1 - x * x) * slope * slope)))
    return tuple(rule)


def _side(y: float, scale: float) -> tuple[float, float]:
    """One side of the two-piece normal at y: its distribution Phi(y / scale) and density (a step without spread)."""
    if scale <= 0:
        return (1.0 if y > 0 else 0.0), 0.0
    u = y / scale
    return 0.5 * math.erfc(-u / math.sqrt(2)), math.exp(-u * u / 2) / (_ROOT_2PI * scale)


def _pieces(kink: float, edge: float, width: float) -> list[tuple[float, float]]:
    """The stretch from `kink` to `edge`, cut where the run-to-run draw's density bends (CUTS) and at 1, 4 and 16
    `width`s from the kink (a side narrower than the run-to-run spread turns within `width` of it), so that each
    piece is smooth for its nodes."""
    inside = [c for c in (*CUTS, *(kink + math.copysign(m * width, edge - kink) for m in (1, 4, 16)))
              if 0 < (c - kink) / (edge - kink) < 1]  # fmt: skip
    points = sorted({kink, edge, *inside}, reverse=edge < kink)
    return list(itertools.pairwise(points))


def cdf_pdf(x: float, above: float, below: float, sd: float) -> tuple[float, float]:
    """P(X <= x) and X's density at x, X the two-piece normal (spreads `above`, `below`) plus a normal of `sd` > 0."""
    kink = min(max(x / sd, -SPAN), SPAN)
    cdf = pdf = 0.0
    for edge, scale in ((-SPAN, above), (SPAN, below)):
        if edge == kink:
            continue
        for start, end in _pieces(kink, edge, scale / sd):
            half, middle = abs(end - start) / 2, (end + start) / 2
            for node, weight in _legendre():
                w = middle + half * node
                weight_w = weight * half * math.exp(-w * w / 2) / _ROOT_2PI
                side_cdf, side_pdf = _side(x - sd * w, scale)
                cdf, pdf = cdf + weight_w * side_cdf, pdf + weight_w * side_pdf
    if -SPAN < kink < SPAN:  # a step side moves the kink's mass with x (0 where both sides spread: G is continuous)
        jump = (0.5 if above > 0 else 1.0) - (0.5 if below > 0 else 0.0)
        pdf += jump * math.exp(-kink * kink / 2) / (_ROOT_2PI * sd)
    return cdf, pdf


@lru_cache(maxsize=1024)
def quantile(q: float, above: float, below: float, sd: float) -> float:
    """The x with P(X <= x) = q, by Newton's method, bisecting where a step would leave the bracket."""
    low, high = -12 * (below + sd), 12 * (above + sd)
    x = 0.0
    for _ in range(200):
        cdf, pdf = cdf_pdf(x, above, below, sd)
        if cdf < q:
            low = x
        else:
            high = x
        following = x - (cdf - q) / pdf if pdf > 0 else math.nan
        if abs(following - x) < 1e-13:
            return following
        if not low < following < high:
            following = (low + high) / 2
        x = following
    return x
