"""Fit the model's named efficiency parameters to measured runs, and report the error honestly.

The fitted set is small and physical, per accelerator family (efficiency.py): the fraction of peak that GEMMs reach
in each number format, flash attention's share of the BF16 peak, the HBM share of memory-bound kernels, the bus
bandwidth NCCL reaches on the scale-up and scale-out tiers, and how much TP communication hides behind GEMMs.
`fit` minimises robust least squares of log(predicted / measured) with scipy, pricing all runs as one batch, with
a weak prior pulling each parameter towards its physical default (so a parameter the data cannot see stays where
physics put it).
Cross-validation leaves one accelerator x precision group out at a time; its held-out residuals give the error a
planner should expect on hardware it was not fitted on, and an 80% prediction interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from perfmodel.errors import PerfmodelError
from perfmodel.physics.calibration import (
    BOUNDS,
    FITTED,
    MOE_BOUNDS,
    UNCALIBRATED,
    Calibration,
    apply,
    default_value,
)
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


class PricedRuns(Protocol):
    """Prepared runs priced together (validation.RunBatch)."""

    def log_time_ratios(self, efficiency_for: Callable[[str], Efficiency], variants: bool = False) -> Any:
        """log(predicted time / measured time) per run, for the efficiencies of each family; with `variants`, the
        efficiencies' fields are arrays of shape (V,) and the result is (runs, V)."""
        ...


Pricer = Callable[[Sequence[Any]], PricedRuns]
"""Prepared runs -> the same runs, batched for pricing."""

DIFF_STEP = 1e-3
"""Finite-difference step on log(parameter), relative to max(1, |log value|)."""


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


def _stack(variants: Sequence[Efficiency]) -> Efficiency:
    """One Efficiency whose fields are arrays over `variants` (what RunBatch prices in one call)."""
    import numpy as np

    columns: dict[str, Any] = {f.name: np.array([getattr(v, f.name) for v in variants]) for f in fields(Efficiency)}
    return Efficiency(**columns)


def fit(
    items: Sequence[Any],
    pricer: Pricer,
    family_of: Callable[[Any], str],
    formats_of: Callable[[Any], set[str]],
    start: Calibration | None = None,
    prior_sigma: float = PRIOR_SIGMA,
) -> FitResult:
    """Fit the free parameters of every family present in `items` (robust least squares on log error).

    The runs are priced as one batch (one array call per context) that also yields the Jacobian: a run depends only
    on its own family's parameters, so variant k of every family perturbs that family's k-th parameter, and the same
    call prices every run under its family's base and perturbed efficiencies (forward differences on log
    parameters). The trust-region steps are solved with LSMR, not an SVD: on a busy 2-core machine multithreaded
    BLAS made the SVD of this small Jacobian cost more than pricing the runs."""
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
    batch = pricer(items)
    run_family = np.array([family_of(i) for i in items])
    columns: dict[str, list[int]] = {}
    for col, (family, _) in enumerate(pairs):
        columns.setdefault(family, []).append(col)
    prior_scale = prior_sigma * math.sqrt(max(len(items), 1))

    def parameters(x: Any) -> dict[str, dict[str, float]]:
        table: dict[str, dict[str, float]] = {}
        for (family, name), value in zip(pairs, x, strict=True):
            table.setdefault(family, {})[name] = float(math.exp(value))
        return table

    def efficiencies(x: Any) -> Callable[[str], Efficiency]:
        return efficiencies_of(parameters(x))

    def priced(x: Any) -> tuple[Any, Any]:
        """Residuals and Jacobian at x from one batched call: every run under its family's base efficiencies
        (variant 0) and with each of its family's parameters moved by a finite-difference step (variant k)."""
        step = DIFF_STEP * np.maximum(1.0, np.abs(x))
        step = np.where(x + step > upper, -step, step)
        width = 1 + max(len(cols) for cols in columns.values())
        stacked = {}
        for family, cols in columns.items():
            variants = []
            for col in [None, *cols] + [None] * (width - 1 - len(cols)):
                moved = x.copy()
                if col is not None:
                    moved[col] += step[col]
                variants.append(efficiencies(moved)(family))
            stacked[family] = _stack(variants)
        ratios = batch.log_time_ratios(stacked.__getitem__, variants=True)
        jac = np.zeros((len(items) + len(pairs), len(pairs)))
        for family, cols in columns.items():
            mine = run_family == family
            for k, col in enumerate(cols, start=1):
                jac[: len(items)][mine, col] = (ratios[mine, k] - ratios[mine, 0]) / step[col]
        jac[len(items) :] = np.eye(len(pairs)) / prior_scale
        return np.concatenate([ratios[:, 0], (x - prior) / prior_scale]), jac

    # The solver asks for the residuals at a point, then (if it accepts it) the Jacobian there: a variant pass
    # costs about what a plain one does (numpy's per-call overhead dominates), so both come from one.
    last: dict[bytes, tuple[Any, Any]] = {}

    def at(x: Any) -> tuple[Any, Any]:
        key = x.tobytes()
        if key not in last:
            last.clear()
            last[key] = priced(x)
        return last[key]

    def residuals(x: Any) -> Any:
        return at(x)[0]

    def jacobian(x: Any) -> Any:
        return at(x)[1]

    solution = least_squares(
        residuals,
        x0,
        jac=jacobian,
        bounds=(lower, upper),
        loss="soft_l1",
        f_scale=0.1,
        x_scale=1.0,
        max_nfev=100,
        tr_solver="lsmr",
    )
    fitted = batch.log_time_ratios(efficiencies(solution.x))
    return FitResult(
        parameters(solution.x),
        [
            Residual(item.run.id, item.run.group, family_of(item), float(r))
            for item, r in zip(items, fitted, strict=True)
        ],
    )


MOE_PRIORS = {"overlap_ep": 0.5, "grouped_gemm": 1.0}
"""The MoE stage's parameters and their priors: Megatron's EP-communication overlap hides about half of the
all-to-all (assumed before any fit), and a grouped GEMM starts as efficient as a dense one of the same tiles. Their
bounds (physics.calibration.MOE_BOUNDS): no all-to-all hides completely behind compute or not at all; a grouped GEMM
between half and 1.2x a dense GEMM's share of peak (above 1: the dense `gemm_*` fit absorbed something grouped
kernels do not pay)."""


@dataclass(frozen=True)
class MoeFit:
    parameters: dict[str, float]
    residuals: list[Residual]


def fit_moe(items: Sequence[Any], pricer: Pricer, start: Calibration, prior_sigma: float = PRIOR_SIGMA) -> MoeFit:
    """The MoE stage: fit the MoE parameters (MOE_PRIORS) on MoE runs with every dense parameter held at `start`'s
    values, so that no dense prediction can change. Robust least squares on log(predicted / measured), a prior of
    `prior_sigma` on log(parameter / prior), one value for every family (the MoE rows are too few to fit per
    family)."""
    import numpy as np
    from scipy.optimize import least_squares

    if not items:
        raise PerfmodelError("nothing to calibrate: no MoE runs")
    names = list(MOE_PRIORS)
    lower = np.log([MOE_BOUNDS[n][0] for n in names])
    upper = np.log([MOE_BOUNDS[n][1] for n in names])
    prior = np.log([MOE_PRIORS[n] for n in names])
    batch = pricer(items)
    prior_scale = prior_sigma * math.sqrt(len(items))

    def efficiencies(x: Any) -> Callable[[str], Efficiency]:
        return _moe_efficiencies(start, dict(zip(names, np.exp(x), strict=True)))

    def residuals(x: Any) -> Any:
        return np.concatenate([batch.log_time_ratios(efficiencies(x)), (x - prior) / prior_scale])

    solution = least_squares(
        residuals, np.clip(prior, lower + 1e-9, upper - 1e-9), bounds=(lower, upper), loss="soft_l1", f_scale=0.1
    )
    fitted = batch.log_time_ratios(efficiencies(solution.x))
    return MoeFit(
        {n: float(math.exp(v)) for n, v in zip(names, solution.x, strict=True)},
        [Residual(i.run.id, i.run.group, i.family, float(r)) for i, r in zip(items, fitted, strict=True)],
    )


def moe_stage(
    items: Sequence[Any], pricer: Pricer, start: Calibration, model_of: Callable[[Any], str]
) -> dict[str, Any]:
    """The calibration file's 'moe' section: the MoE stage fitted on `items` over `start`'s dense parameters, with
    its in-sample residuals and leave-one-model-out ones (refit without a model, predict it)."""
    fitted = fit_moe(items, pricer, start)
    held: dict[str, Residual] = {}
    models = sorted({model_of(i) for i in items})
    for model in models:
        train = [i for i in items if model_of(i) != model]
        test = [i for i in items if model_of(i) == model]
        values = fit_moe(train, pricer, start).parameters if train else dict(MOE_PRIORS)
        ratios = pricer(test).log_time_ratios(_moe_efficiencies(start, values))
        held |= {i.run.id: Residual(i.run.id, model, i.family, float(r)) for i, r in zip(test, ratios, strict=True)}

    def by_model(residuals: Sequence[Residual]) -> dict[str, float]:
        return {m: mape([r for r in residuals if model_of_id[r.run_id] == m]) for m in models}

    model_of_id = {i.run.id: model_of(i) for i in items}
    return {
        "parameters": fitted.parameters,
        "fit": {
            "method": "scipy.optimize.least_squares, soft-L1 loss on log(predicted/measured) of the MoE rows, dense "
            f"parameters held fixed, prior sigma {PRIOR_SIGMA} on log(parameter/prior) around {MOE_PRIORS}",
            "rows": len(items),
            "in_sample_mape_pct": mape(fitted.residuals),
            "in_sample_mape_pct_by_model": by_model(fitted.residuals),
            "leave_one_model_out_mape_pct": by_model(list(held.values())),
            "residuals": [
                {
                    "id": r.run_id,
                    "model": model_of_id[r.run_id],
                    "error_pct": round(r.error_pct, 3),
                    "held_out_error_pct": round(held[r.run_id].error_pct, 3),
                }
                for r in fitted.residuals
            ],
        },
    }


def _moe_efficiencies(start: Calibration, values: dict[str, float]) -> Callable[[str], Efficiency]:
    return lambda family: with_moe(start.efficiency(family), values)


def with_moe(base: Efficiency, values: dict[str, float]) -> Efficiency:
    """`base` with the MoE stage's values in place."""
    return replace(base, **{k: v for k, v in values.items() if k in MOE_PRIORS})


def efficiencies_of(table: dict[str, dict[str, float]]) -> Callable[[str], Efficiency]:
    """Efficiency per family: the physical defaults with a fit's parameters in place."""
    return lambda family: apply(DEFAULTS[family], table.get(family, {}))


def predict(
    table: dict[str, dict[str, float]],
    test: Sequence[Any],
    pricer: Pricer,
    family_of: Callable[[Any], str],
    group_of: Callable[[Any], str],
) -> list[Residual]:
    """Residuals of `test` under a fit's parameters (the held-out ones when the fit never saw them)."""
    if not test:
        return []
    ratios = pricer(test).log_time_ratios(efficiencies_of(table))
    return [Residual(i.run.id, group_of(i), family_of(i), float(r)) for i, r in zip(test, ratios, strict=True)]


def cross_validate(
    items: Sequence[Any],
    pricer: Pricer,
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
        table = fit(train, pricer, family_of, formats_of, start).parameters if train else {}
        held_out += predict(table, test, pricer, family_of, group_of)
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
