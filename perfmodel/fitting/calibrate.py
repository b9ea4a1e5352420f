"""Fit the model's named efficiency parameters to measured runs, and report the error honestly.

The fitted set is small and physical, per accelerator family (efficiency.py): the fraction of peak that GEMMs reach
in each number format, flash attention's share of the BF16 peak, the HBM share of memory-bound kernels, the bus
bandwidth NCCL reaches on the scale-up and scale-out tiers, and how much TP communication hides behind GEMMs.
`fit` minimises robust least squares of log(predicted / measured) with scipy, with a weak prior pulling each
parameter towards its physical default (so a parameter the data cannot see stays where physics put it).
Cross-validation leaves one accelerator x precision group out at a time; its held-out residuals give the error a
planner should expect on hardware it was not fitted on, and an 80% prediction interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from perfmodel.errors import PerfmodelError
from perfmodel.physics.calibration import BOUNDS, FITTED, UNCALIBRATED, Calibration, apply, default_value
from perfmodel.physics.efficiency import DEFAULTS, Efficiency

PRIOR_SIGMA = 0.3
"""Spread of the prior on log(parameter / default): a parameter moves freely within ~30% when the data ask."""
INTERVAL_COVERAGE = 0.8


@dataclass(frozen=True)
class Residual:
    run_id: str
    group: str
    family: str
    log_time_ratio: float
    """log(predicted time / measured time): positive when perfmodel is too slow (throughputs are inverted)."""

    @property
    def error_pct(self) -> float:
        return (math.exp(self.log_time_ratio) - 1) * 100


Predictor = Callable[[Any, Callable[[str], Efficiency]], float]
"""(prepared run, efficiency per family) -> log(predicted time / measured time)."""


@dataclass(frozen=True)
class FitResult:
    parameters: dict[str, dict[str, float]]
    residuals: list[Residual]


def _free_parameters(
    items: Sequence[Any], family_of: Callable[[Any], str], formats_of: Callable[[Any], set[str]]
) -> list[tuple[str, str]]:
    """(family, name) pairs the data can inform: GEMM formats where a run uses them, the MLPerf run overhead where
    a run is an MLPerf result."""
    pairs = []
    for family in sorted({family_of(i) for i in items}):
        members = [i for i in items if family_of(i) == family]
        seen = set().union(*(formats_of(i) for i in members)) | (
            {"run_overhead_s"} if any(getattr(i, "benchmark", None) for i in members) else set()
        )
        for name in FITTED:
            informed = name.removeprefix("gemm_") in seen if name.startswith("gemm_") else name in seen
            if informed or not (name.startswith("gemm_") or name == "run_overhead_s"):
                pairs.append((family, name))
    return pairs


def fit(
    items: Sequence[Any],
    predict: Predictor,
    family_of: Callable[[Any], str],
    formats_of: Callable[[Any], set[str]],
    start: Calibration | None = None,
    prior_sigma: float = PRIOR_SIGMA,
) -> FitResult:
    """Fit the free parameters of every family present in `items` (robust least squares on log error)."""
    import numpy as np
    from scipy.optimize import least_squares

    pairs = _free_parameters(items, family_of, formats_of)
    if not pairs:
        raise PerfmodelError("nothing to calibrate: no runs")
    start = start or UNCALIBRATED
    x0 = np.array([math.log(start.parameters.get(f, {}).get(n, default_value(f, n))) for f, n in pairs])
    lower = np.array([math.log(max(BOUNDS[n][0], 1e-3)) for _, n in pairs])
    upper = np.array([math.log(BOUNDS[n][1]) for _, n in pairs])
    x0 = np.clip(x0, lower + 1e-9, upper - 1e-9)
    prior = np.array([math.log(default_value(f, n)) for f, n in pairs])

    def parameters(x: Any) -> dict[str, dict[str, float]]:
        table: dict[str, dict[str, float]] = {}
        for (family, name), value in zip(pairs, x, strict=True):
            table.setdefault(family, {})[name] = float(math.exp(value))
        return table

    def efficiencies(x: Any) -> Callable[[str], Efficiency]:
        table = parameters(x)
        return lambda family: apply(DEFAULTS[family], table.get(family, {}))

    def residuals(x: Any) -> Any:
        eff = efficiencies(x)
        data = [predict(item, eff) for item in items]
        return np.concatenate([np.array(data), (x - prior) / prior_sigma / math.sqrt(max(len(items), 1))])

    # A run depends only on its own family's parameters: tell the solver, so it perturbs families together.
    sparsity = np.zeros((len(items) + len(pairs), len(pairs)))
    for row, item in enumerate(items):
        for col, (family, _) in enumerate(pairs):
            sparsity[row, col] = family_of(item) == family
    sparsity[len(items) :, :] = np.eye(len(pairs))
    solution = least_squares(
        residuals, x0, bounds=(lower, upper), loss="soft_l1", f_scale=0.1, jac_sparsity=sparsity, x_scale=1.0,
        diff_step=np.full(len(pairs), 1e-3), max_nfev=100,
    )  # fmt: skip
    eff = efficiencies(solution.x)
    fitted = [predict(item, eff) for item in items]
    return FitResult(
        parameters(solution.x),
        [Residual(item.run.id, item.run.group, family_of(item), r) for item, r in zip(items, fitted, strict=True)],
    )


def cross_validate(
    items: Sequence[Any],
    predict: Predictor,
    family_of: Callable[[Any], str],
    formats_of: Callable[[Any], set[str]],
    group_of: Callable[[Any], str],
    progress: Callable[[str], None] = lambda _: None,
    start: Calibration | None = None,
) -> list[Residual]:
    """Leave one group (accelerator x precision) out: refit without it, predict it. Returns held-out residuals."""
    held_out: list[Residual] = []
    groups = sorted({group_of(i) for i in items})
    for number, group in enumerate(groups, start=1):
        progress(f"cross-validation {number}/{len(groups)}: holding out {group}")
        train = [i for i in items if group_of(i) != group]
        test = [i for i in items if group_of(i) == group]
        table = fit(train, predict, family_of, formats_of, start).parameters if train else {}

        def eff(family: str, table: dict[str, dict[str, float]] = table) -> Efficiency:
            return apply(DEFAULTS[family], table.get(family, {}))

        held_out += [Residual(i.run.id, group, family_of(i), predict(i, eff)) for i in test]
    return held_out


def interval(held_out: Sequence[Residual]) -> dict[str, float]:
    """Factors on a predicted time that cover the measured one with 80% probability, from held-out residuals."""
    import numpy as np

    ratios = np.array([r.log_time_ratio for r in held_out])
    tail = (1 - INTERVAL_COVERAGE) / 2 * 100
    low_q, high_q = np.percentile(ratios, [tail, 100 - tail])
    # measured = predicted * exp(-r): the largest residuals bound the measured time from below.
    return {
        "coverage": INTERVAL_COVERAGE,
        "time_factor_low": float(math.exp(-high_q)),
        "time_factor_high": float(math.exp(-low_q)),
    }


def mape(residuals: Sequence[Residual]) -> float:
    return sum(abs(r.error_pct) for r in residuals) / len(residuals) if residuals else float("nan")


def build(fit_result: FitResult, held_out: Sequence[Residual], data: dict[str, Any]) -> Calibration:
    """A Calibration with its provenance: the data, the date, in-sample and held-out residuals, the interval."""
    held = {r.run_id: r for r in held_out}
    provenance = {
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "data": data,
        "fit": {
            "method": "scipy.optimize.least_squares, soft-L1 loss on log(predicted/measured), prior sigma "
            f"{PRIOR_SIGMA} on log(parameter/default); cross-validation leaves one accelerator x precision out",
            "rows": len(fit_result.residuals),
            "in_sample_mape_pct": mape(fit_result.residuals),
            "cv_mape_pct": mape(held_out) if held_out else None,
            "residuals": [
                {
                    "id": r.run_id,
                    "group": r.group,
                    "error_pct": round(r.error_pct, 3),
                    "held_out_error_pct": round(held[r.run_id].error_pct, 3) if r.run_id in held else None,
                }
                for r in fit_result.residuals
            ],
        },
    }
    if held_out:
        provenance["interval"] = interval(held_out)
    return Calibration(fit_result.parameters, provenance, "fitted")
