"""The efficiency parameters in force: the physical defaults, overridden per family by a calibration file.

A calibration file (format perfmodel-calibration/1, written by `perfmodel calibrate`) holds fitted values of a small,
named set of parameters per accelerator family (efficiency.py), with their provenance: the data, the date and the
fit's in-sample and held-out residuals, and the 80% interval those give on a predicted time. This module reads and
checks such files; fitting one is perfmodel.fitting.calibrate's job.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.files import check_depth, read_text, remember
from perfmodel.inputs.numbers import allowed, in_range
from perfmodel.physics.efficiency import DEFAULTS, Efficiency

FORMAT = "perfmodel-calibration/1"
BUNDLED = Path(__file__).resolve().parents[1] / "data" / "calibration.json"
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
    def load(cls, path: str | Path, user: bool = True) -> Calibration:
        """A calibration file, checked; `user`: the user's file (an input of the command), not the bundled one."""
        path = Path(path)
        text = read_text(path, "calibration", user=user)
        check_depth(text, str(path))
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
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
                if not in_range(value, low, high):
                    raise PerfmodelError(f"{path}: parameters.{family}.{name} = {value!r}; allowed {low} to {high}")
        _check_provenance(path, raw)
        provenance = {k: v for k, v in raw.items() if k not in ("format", "parameters")}
        return cls(parameters, provenance, str(path))


def _check_provenance(path: Path, raw: dict[str, Any]) -> None:
    """The parts of a calibration's provenance that predictions and reports read: the interval on a predicted time
    and the fit's summary and held-out residuals."""
    band = raw.get("interval")
    if band is not None:
        low, high = (band.get(k) if isinstance(band, dict) else None for k in ("time_factor_low", "time_factor_high"))
        if not (in_range(low, *INTERVAL_FACTORS) and in_range(high, *INTERVAL_FACTORS) and low <= high):
            raise PerfmodelError(
                f"{path}: field 'interval' must hold positive numbers time_factor_low <= time_factor_high, each "
                f"{allowed(*INTERVAL_FACTORS)}"
            )
    fit = raw.get("fit")
    if fit is None:
        return
    if not isinstance(fit, dict):
        raise PerfmodelError(f"{path}: field 'fit' must be a table (rows, in_sample_mape_pct, residuals)")
    for key in ("rows", "in_sample_mape_pct"):
        if key in fit and not in_range(fit[key], *SUMMARY_RANGE):
            raise PerfmodelError(f"{path}: field 'fit.{key}' must be {allowed(*SUMMARY_RANGE)}")
    residuals = fit.get("residuals", [])
    if not isinstance(residuals, list):
        raise PerfmodelError(f"{path}: field 'fit.residuals' must be a list")
    for index, residual in enumerate(residuals):
        held = residual.get("held_out_error_pct") if isinstance(residual, dict) else None
        if (
            not isinstance(residual, dict)
            or not isinstance(residual.get("id"), str)
            or not (held is None or in_range(held, -SUMMARY_RANGE[1], SUMMARY_RANGE[1]))
        ):
            raise PerfmodelError(
                f"{path}: field 'fit.residuals[{index}]' must have a string 'id' and a number or null "
                "'held_out_error_pct'"
            )


INTERVAL_FACTORS = (0.01, 100.0)
"""Factors on a predicted time: an 80% interval wider than 100x either way says nothing (the fit gives ~0.9-1.1)."""
SUMMARY_RANGE = (0.0, 1e9)
"""Row counts and error percentages of the fit's summary."""

UNCALIBRATED = Calibration({}, {"note": "physical defaults of efficiency.py, not fitted"}, "none")


@cache
def bundled() -> Calibration:
    return Calibration.load(BUNDLED, user=False) if BUNDLED.exists() else UNCALIBRATED


def resolve(spec: str | None) -> Calibration:
    """`None`: the bundled calibration; 'none': the uncalibrated defaults; otherwise a calibration file."""
    if spec is None:
        return bundled()
    if spec.lower() == "none":
        return UNCALIBRATED
    try:
        stamp = Path(spec).stat().st_mtime_ns
    except (OSError, ValueError):
        return Calibration.load(spec)  # says what is wrong with the path
    loaded = _load_once(spec, stamp)
    remember(spec)  # an input of this command even when its content comes from the cache
    return loaded


@cache
def _load_once(spec: str, stamp: int) -> Calibration:
    """A calibration file is read once per version of it: a prediction resolves it for its context and again for
    its interval, and a search or sweep makes many predictions."""
    return Calibration.load(spec)
