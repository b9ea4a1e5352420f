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

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, TypeGuard

from perfmodel.efficiency import DEFAULTS, Efficiency
from perfmodel.errors import PerfmodelError

FORMAT = "perfmodel-calibration/1"
BUNDLED = Path(__file__).resolve().parent / "data" / "calibration.json"
FITTED = ("gemm_bf16", "gemm_fp8", "gemm_fp4", "attention", "memory", "scaleout", "overlap_tp", "run_overhead_s")
"""Names of the fitted parameters; `attention` scales the forward and backward attention efficiencies together.
NVLink bus-bandwidth efficiency (nccl-tests: ~0.8) is not fitted: on the data it trades off one for one with the
TP overlap share, and the overlap is the less known of the two."""
BOUNDS = {
    "gemm_bf16": (0.35, 0.85), "gemm_fp8": (0.25, 0.80), "gemm_fp4": (0.2, 0.75), "attention": (0.5, 1.5),
    "memory": (0.5, 0.9), "scaleup": (0.4, 0.9), "scaleout": (0.5, 0.95), "overlap_tp": (0.1, 0.95),
    "run_overhead_s": (1.0, 300.0),
}  # fmt: skip
"""Physically plausible ranges: no GEMM sustains more than ~85% (BF16) / 80% (FP8) / 75% (FP4) of the dense peak
under a training power cap, no memory-bound kernel more than 90% of HBM bandwidth, no collective more than ~90% of
NVLink or 95% of NIC bandwidth. A fit that hits a bound shows a structural error rather than hiding it."""
PRIOR_SIGMA = 0.3
"""Spread of the prior on log(parameter / default): a parameter moves freely within ~30% when the data ask."""
INTERVAL_COVERAGE = 0.8


def apply(base: Efficiency, values: dict[str, float]) -> Efficiency:
    """`base` with fitted values in place (attention as a scale of the forward and backward defaults)."""
    changes = {k: v for k, v in values.items() if k != "attention"}
    if "attention" in values:
        changes |= {
            "attention_fwd": base.attention_fwd * values["attention"],
            "attention_bwd": base.attention_bwd * values["attention"],
        }
    return replace(base, **changes)


def default_value(family: str, name: str) -> float:
    return 1.0 if name == "attention" else float(getattr(DEFAULTS[family], name))


@dataclass(frozen=True)
class Calibration:
    """Fitted parameters per family, with provenance and the fit's residuals."""

    parameters: dict[str, dict[str, float]]
    provenance: dict[str, Any]
    source: str = "bundled"

    def efficiency(self, family: str) -> Efficiency:
        return apply(DEFAULTS[family], self.parameters.get(family, {}))

    @property
    def interval(self) -> tuple[float, float] | None:
        """Factors (low, high) on a predicted time giving the 80% interval of the measured one, or None."""
        band = self.provenance.get("interval")
        return (band["time_factor_low"], band["time_factor_high"]) if band else None

    def to_json(self) -> str:
        document = {"format": FORMAT, "parameters": self.parameters, **self.provenance}
        return json.dumps(document, indent=1, allow_nan=False)

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        path = Path(path)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PerfmodelError(f"{path}: no such calibration file") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PerfmodelError(f"{path}: not a calibration JSON file ({exc})") from None
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise PerfmodelError(f"{path}: field 'format' must be '{FORMAT}' (write one with perfmodel calibrate)")
        parameters = raw.get("parameters")
        if not isinstance(parameters, dict):
            raise PerfmodelError(f"{path}: field 'parameters' must map families to parameter values")
        for family, values in parameters.items():
            if family not in DEFAULTS:
                raise PerfmodelError(f"{path}: unknown family '{family}'; valid: {', '.join(DEFAULTS)}")
            if not isinstance(values, dict):
                raise PerfmodelError(f"{path}: field 'parameters.{family}' must map parameter names to numbers")
            for name, value in values.items():
                if name not in BOUNDS:
                    raise PerfmodelError(f"{path}: parameters.{family}: unknown '{name}'; valid: {', '.join(FITTED)}")
                low, high = BOUNDS[name]
                if not _is_number(value) or not low <= value <= high:
                    raise PerfmodelError(f"{path}: parameters.{family}.{name} = {value!r}; allowed {low} to {high}")
        _check_provenance(path, raw)
        provenance = {k: v for k, v in raw.items() if k not in ("format", "parameters")}
        return cls(parameters, provenance, str(path))


def _is_number(value: object) -> TypeGuard[float]:
    """A finite JSON number (true/false are not numbers, though Python counts them as ints)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_provenance(path: Path, raw: dict[str, Any]) -> None:
    """The parts of a calibration's provenance that predictions and reports read: the interval on a predicted time
    and the fit's summary and held-out residuals."""
    band = raw.get("interval")
    if band is not None:
        low, high = (band.get(k) if isinstance(band, dict) else None for k in ("time_factor_low", "time_factor_high"))
        if not (_is_number(low) and _is_number(high) and 0 < low <= high):
            raise PerfmodelError(
                f"{path}: field 'interval' must hold positive numbers time_factor_low <= time_factor_high"
            )
    fit = raw.get("fit")
    if fit is None:
        return
    if not isinstance(fit, dict):
        raise PerfmodelError(f"{path}: field 'fit' must be a table (rows, in_sample_mape_pct, residuals)")
    for key in ("rows", "in_sample_mape_pct"):
        if key in fit and not (_is_number(fit[key]) and fit[key] >= 0):
            raise PerfmodelError(f"{path}: field 'fit.{key}' must be a number >= 0")
    residuals = fit.get("residuals", [])
    if not isinstance(residuals, list):
        raise PerfmodelError(f"{path}: field 'fit.residuals' must be a list")
    for index, residual in enumerate(residuals):
        held = residual.get("held_out_error_pct") if isinstance(residual, dict) else None
        if (
            not isinstance(residual, dict)
            or not isinstance(residual.get("id"), str)
            or not (held is None or _is_number(held))
        ):
            raise PerfmodelError(
                f"{path}: field 'fit.residuals[{index}]' must have a string 'id' and a number or null "
                "'held_out_error_pct'"
            )


UNCALIBRATED = Calibration({}, {"note": "physical defaults of efficiency.py, not fitted"}, "none")


@cache
def bundled() -> Calibration:
    return Calibration.load(BUNDLED) if BUNDLED.exists() else UNCALIBRATED


def resolve(spec: str | None) -> Calibration:
    """`None`: the bundled calibration; 'none': the uncalibrated defaults; otherwise a calibration file."""
    if spec is None:
        return bundled()
    if spec.lower() == "none":
        return UNCALIBRATED
    try:
        stamp = Path(spec).stat().st_mtime_ns
    except OSError:
        return Calibration.load(spec)  # says what is wrong with the path
    return _load_once(spec, stamp)


@cache
def _load_once(spec: str, stamp: int) -> Calibration:
    """A calibration file is read once per version of it: a prediction resolves it for its context and again for
    its interval, and a search or sweep makes many predictions."""
    return Calibration.load(spec)


# ----------------------------------------------------------------------------------------------------------------
# Fitting
# ----------------------------------------------------------------------------------------------------------------


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
