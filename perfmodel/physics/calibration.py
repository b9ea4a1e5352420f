"""The efficiency parameters in force: the physical defaults, overridden by a calibration file.

A calibration file (format perfmodel-calibration/2, written by `perfmodel calibrate`) holds fitted values of the
named parameter table (parameters.py: shared, per-vendor, per-family, per-stack and per-benchmark entries, keyed
'name' or 'name@scope'), with their provenance: the data, the date and the fit's in-sample and held-out residuals,
and the 80% intervals those give on a predicted time: one per out-of-sample protocol (optional fields 'protocols'
and 'coverage'; files without them use the leave-one-group-out 'interval'). The MoE stage's values are table entries
too (stage 'moe'), and its fit's residuals sit in the 'moe' section; files written before kept the values in
'moe.parameters', which are still read. Format /1 files (one free parameter set per family) are still read, as they
were meant: per-family values on the Megatron stack's defaults.
This module reads and checks such files; fitting one is perfmodel.fitting.calibrate's job.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from perfmodel.errors import PerfmodelError, shown_value
from perfmodel.inputs.files import TOO_LONG_INTEGER, check_depth, read_text, remember
from perfmodel.inputs.numbers import allowed, in_range
from perfmodel.inputs.scenario import RELEASE_MONTH
from perfmodel.physics import parameters as table
from perfmodel.physics.efficiency import DEFAULTS, Efficiency, years_between

FORMAT = "perfmodel-calibration/2"
FORMAT_V1 = "perfmodel-calibration/1"
BUNDLED = Path(__file__).resolve().parents[1] / "data" / "calibration.json"
V1_BOUNDS = {
    "gemm_bf16": (0.35, 0.85), "gemm_fp8": (0.25, 0.80), "gemm_fp4": (0.2, 0.75), "attention": (0.5, 1.5),
    "memory": (0.5, 0.9), "scaleup": (0.4, 0.9), "scaleout": (0.5, 0.95), "overlap_tp": (0.1, 0.95),
    "run_overhead_s": (1.0, 300.0),
}  # fmt: skip
"""The per-family parameters of format /1 files and their ranges."""


FALLBACK_PROTOCOL = "leave-one-group-out"
USER_PROTOCOL = "leave-one-of-your-rows-out"
"""Where the interval of a family a user calibration fitted comes from: each of the user's rows predicted by a fit
without it (fitting/user.py)."""
MOE_PROTOCOL = "leave-one-moe-model-out"
"""Where a MoE model's interval comes from: the MoE stage's residuals of each model predicted by a stage fitted
without it (and of the models it does not fit, predicted by the whole stage)."""
"""Where an interval comes from when a calibration holds no protocol residuals: leave one accelerator x precision
group out (every calibration file before the protocols)."""


class Interval(NamedTuple):
    """Factors on a predicted time bounding the measured one with 80% probability, and the held-out residuals they
    come from (an out-of-sample protocol, or leave-one-group-out)."""

    low: float
    high: float
    protocol: str


def number_format(precision: str) -> str:
    """The number format a precision recipe runs (FP8 is per-tensor scaling; blockwise is a measured-run detail)."""
    return "fp8-tensor" if precision == "fp8" else precision


@dataclass(frozen=True)
class Calibration:
    """Fitted parameter-table values by key, with provenance and the fit's residuals."""

    parameters: dict[str, float]
    provenance: dict[str, Any]
    source: str = "bundled"
    by_family: dict[str, dict[str, float]] = field(default_factory=dict)
    """A format /1 file's per-family values (empty for /2 files)."""
    scoped: dict[str, dict[str, float]] = field(default_factory=dict)
    """Values that hold for some accelerator families only, over `parameters` (a user calibration's: fitting/user.py
    fits a user's rows for their own families and leaves every other family's predictions as they were)."""

    def efficiency(
        self, family: str, stack: str = "megatron", benchmark: str | None = None, vintage: str | None = None
    ) -> Efficiency:
        """The efficiencies of a family on a software stack (and an MLPerf benchmark), for a software release
        (YYYY-MM; default: the reference vintage, the newest release in the fitted data)."""
        if self.by_family:
            return table.apply(DEFAULTS[family], self.by_family.get(family, {}) | self.parameters)
        values = self.parameters | self.scoped[family] if family in self.scoped else self.parameters
        eff = table.efficiency(values, table.Profile(family, stack, benchmark))
        reference = self.provenance.get("data", {}).get("vintage", {}).get("reference")
        if vintage is None or reference is None:
            return eff
        if vintage > reference:  # the fitted trend says how releases sped up, not how future ones will
            raise PerfmodelError(
                f"vintage {vintage}: after the newest release this calibration fitted ({reference}); software gains "
                "are not extrapolated forward: leave vintage out to price the newest release"
            )
        return replace(eff, vintage_years=years_between(vintage, reference))

    @property
    def interval(self) -> tuple[float, float] | None:
        """Factors (low, high) on a predicted time giving the 80% interval of the measured one (leave one group
        out), or None."""
        band = self.provenance.get("interval")
        return (band["time_factor_low"], band["time_factor_high"]) if band else None

    def protocol_for(self, family: str, precision: str, n_gpus: int) -> str | None:
        """The out-of-sample protocol that matches a question, from what the fit saw: a family without rows is a new
        generation, a format without rows on that family a new precision, more GPUs than any of its rows a new
        scale; otherwise the question is the next run on covered ground (forward). None without protocol data."""
        seen = self.provenance.get("coverage")
        if not seen or not self.provenance.get("protocols"):
            return None
        if family not in seen["formats"]:
            return "generation"
        if number_format(precision) not in seen["formats"][family]:
            return "precision"
        if n_gpus > seen["max_gpus"][family]:
            return "scale"
        return "forward"

    def interval_for(self, family: str, precision: str, n_gpus: int, moe: bool = False) -> Interval | None:
        """The 80% interval for a question, from the residuals of its protocol (protocol_for), else of
        leave-one-group-out; for a MoE model, from the MoE stage's leave-one-model-out residuals where the file has
        them (dense rows' residuals are too narrow for it); on a family a user calibration fitted, from its rows
        each predicted by a fit without it (USER_PROTOCOL); None when uncalibrated. Always around the point."""
        band = self.provenance.get("moe", {}).get("fit", {}).get("interval") if moe else None
        if band:
            return around_point(band, MOE_PROTOCOL)
        user = self.provenance.get("user", {})
        if family in self.scoped or (user.get("applied_to") == "every family" and family in user.get("families", [])):
            return around_point(user["interval"], USER_PROTOCOL)
        protocol = self.protocol_for(family, precision, n_gpus)
        band = self.provenance.get("protocols", {}).get(protocol, {}).get("interval") if protocol else None
        if band:
            return around_point(band, str(protocol))
        band = self.provenance.get("interval")
        return around_point(band, FALLBACK_PROTOCOL) if band else None

    def to_json(self) -> str:
        scoped = {"scoped": self.scoped} if self.scoped else {}
        return dumps({"format": FORMAT, "parameters": self.parameters, **scoped, **self.provenance})

    @classmethod
    def load(cls, path: str | Path, user: bool = True) -> Calibration:
        """A calibration file, checked; `user`: the user's file (an input of the command), not the bundled one."""
        path = Path(path)
        text = read_text(path, "calibration", user=user)
        if user:  # the bundled file is written by `perfmodel calibrate`: its depth is known (6 ms of every command)
            check_depth(text, str(path))
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PerfmodelError(f"{path}: not a calibration JSON file ({exc})") from None
        except ValueError:  # an integer Python will not read
            raise PerfmodelError(f"{path}: {TOO_LONG_INTEGER}") from None
        if not isinstance(raw, dict) or raw.get("format") not in (FORMAT, FORMAT_V1):
            raise PerfmodelError(f"{path}: field 'format' must be '{FORMAT}' (write one with perfmodel calibrate)")
        parameters = raw.get("parameters")
        if not isinstance(parameters, dict):
            raise PerfmodelError(f"{path}: field 'parameters' must map parameter names to values")
        values, by_family = {}, {}
        if raw["format"] == FORMAT_V1:
            by_family = _v1_parameters(path, parameters)
        else:
            values = _v2_parameters(path, parameters)
        scoped = _scoped(path, raw.get("scoped", {}))
        if raw["format"] == FORMAT and "peak_power_exponent" in parameters:
            values, scoped = _carried_ampere(path, parameters["peak_power_exponent"], values, scoped)
        _check_provenance(path, raw)
        values = _legacy_moe(path, raw.get("moe")) | values
        _check_sections(path, raw)
        provenance = {k: v for k, v in raw.items() if k not in ("format", "parameters", "scoped")}
        return cls(values, provenance, str(path), by_family, scoped)


def around_point(band: dict[str, float], protocol: str) -> Interval:
    """An interval's factors, widened to hold 1: residuals all on one side say the point is biased there, and an
    interval that leaves out its own point reads as a contradiction (it once did, on a calibration whose interval came
    from another fit's residuals: issue 29)."""
    return Interval(min(band["time_factor_low"], 1.0), max(band["time_factor_high"], 1.0), protocol)


def _scoped(path: Path, scoped: object) -> dict[str, dict[str, float]]:
    """Field 'scoped': family -> table values for that family only, each a known entry within its bounds."""
    if not isinstance(scoped, dict) or not all(isinstance(v, dict) for v in scoped.values()):
        raise PerfmodelError(f"{path}: field 'scoped' must map accelerator families to parameter values")
    for family, values in scoped.items():
        if family not in DEFAULTS:
            raise PerfmodelError(f"{path}: field 'scoped': unknown family '{family}'; valid: {', '.join(DEFAULTS)}")
        _v2_parameters(path, values)
    return scoped


RETIRED = {
    "overlap_ep_scaleout": "an EP group across scale-up domains hides at overlap_dp (moe.ep_overlap)",
    "peak_power_exponent": "no bundled row's GEMMs follow the power law: Ampere's run at A100's measured best-GEMM "
    "share over H100's (physics.compute.silicon_ratios), an older file's generation factor carried to it "
    "(_carried_ampere); a what-if part takes Efficiency's prior",
}
"""Entries of files written before the table dropped them, and what prices their share now: read and left out, so an
older calibration file still loads."""


OLD_POWER_EXPONENT = (0.01, 0.63)
"""The bounds `peak_power_exponent` was fitted within before it retired (physics/parameters.py at 816bb2a)."""


def _carried_ampere(
    path: Path, beta: object, values: dict[str, float], scoped: dict[str, dict[str, float]]
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """A file fitted before peak_power_exponent retired priced Ampere's GEMMs at the power law's share over H100's
    at its beta (compute.gemm_share at 816bb2a), its gemm_generation@ampere fitted on top of that: the factor is
    carried to the measured ratio now in its place (compute.silicon_ratios), so that the file prices
    A100 as it was fitted to (read as it stood, its A100 rows would move by 1.17 / 1.0825 at beta 0.26)."""
    from perfmodel.inputs.hardware import get_accelerator
    from perfmodel.physics.compute import peak_power_share, silicon_ratios

    low, high = OLD_POWER_EXPONENT
    if not in_range(beta, low, high):
        raise PerfmodelError(f"{path}: parameters.peak_power_exponent = {shown_value(beta)}; allowed {low} to {high}")
    measured, key = silicon_ratios()["ampere"], "gemm_generation@ampere"
    eff = replace(DEFAULTS["ampere"], peak_power_exponent=float(beta))
    part, reference = get_accelerator(measured.part), get_accelerator(measured.reference)
    law = peak_power_share(part, eff) / peak_power_share(reference, eff)
    carry = float(law) / measured.ratio
    default = table.entry(key).default  # type: ignore[union-attr]
    values = values | {key: values.get(key, default) * carry}
    scoped = {family: own | ({key: own[key] * carry} if key in own else {}) for family, own in scoped.items()}
    return values, scoped


def _v2_parameters(path: Path, parameters: dict[str, Any]) -> dict[str, float]:
    parameters = {k: v for k, v in parameters.items() if k not in RETIRED}
    for key, value in parameters.items():
        item = table.entry(key)
        if item is None:
            names = ", ".join(p.name for p in table.TABLE)
            raise PerfmodelError(
                f"{path}: parameters: unknown '{key}'; valid: NAME or NAME@SCOPE with NAME one of {names}"
            )
        low, high = item.parameter.bounds
        if not in_range(value, low, high):
            raise PerfmodelError(f"{path}: parameters.{key} = {shown_value(value)}; allowed {low} to {high}")
    return dict(parameters)


def _v1_parameters(path: Path, parameters: dict[str, Any]) -> dict[str, dict[str, float]]:
    for family, values in parameters.items():
        if family not in DEFAULTS:
            raise PerfmodelError(f"{path}: unknown family '{family}'; valid: {', '.join(DEFAULTS)}")
        if not isinstance(values, dict):
            raise PerfmodelError(f"{path}: field 'parameters.{family}' must map parameter names to numbers")
        _check_values(path, f"parameters.{family}", values, V1_BOUNDS, tuple(V1_BOUNDS))
    return parameters


def _check_band(path: Path, field: str, band: object) -> None:
    low, high = (band.get(k) if isinstance(band, dict) else None for k in ("time_factor_low", "time_factor_high"))
    if not (in_range(low, *INTERVAL_FACTORS) and in_range(high, *INTERVAL_FACTORS) and low <= high):
        raise PerfmodelError(
            f"{path}: field '{field}' must hold positive numbers time_factor_low <= time_factor_high, each "
            f"{allowed(*INTERVAL_FACTORS)}"
        )


def _check_protocols(path: Path, raw: dict[str, Any]) -> None:
    """Protocol intervals and the coverage that picks one: what `interval_for` reads."""
    protocols = raw.get("protocols")
    if protocols is None:
        return
    if not isinstance(protocols, dict):
        raise PerfmodelError(f"{path}: field 'protocols' must map protocol names to their results")
    for name, result in protocols.items():
        band = result.get("interval") if isinstance(result, dict) else None
        _check_band(path, f"protocols.{name}.interval", band)
    seen = raw.get("coverage")
    formats = seen.get("formats") if isinstance(seen, dict) else None
    max_gpus = seen.get("max_gpus") if isinstance(seen, dict) else None
    if not (
        isinstance(formats, dict)
        and isinstance(max_gpus, dict)
        and all(isinstance(v, list) for v in formats.values())
        and set(formats) <= set(max_gpus)
        and all(in_range(v, 1, 1e9) for v in max_gpus.values())
    ):
        raise PerfmodelError(
            f"{path}: field 'coverage' must map families to their fitted formats ('formats') and largest GPU count "
            "('max_gpus') when 'protocols' is present"
        )


def _check_provenance(path: Path, raw: dict[str, Any]) -> None:
    """The parts of a calibration's provenance that predictions and reports read: the intervals on a predicted time
    and the fit's summary and held-out residuals."""
    if raw.get("interval") is not None:
        _check_band(path, "interval", raw["interval"])
    user = raw.get("user")
    if isinstance(user, dict) or raw.get("scoped"):
        _check_band(path, "user.interval", user.get("interval") if isinstance(user, dict) else None)
        families = user.get("families") if isinstance(user, dict) else None
        if not (isinstance(families, list) and all(isinstance(f, str) for f in families)):
            raise PerfmodelError(f"{path}: field 'user.families' must list the accelerator families the fit covers")
    _check_protocols(path, raw)
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


SECTIONS = (
    "data", "data.vintage", "fit", "interval", "moe", "moe.fit", "losses", "losses.parameters", "losses.fit",
    "validation", "protocols", "coverage", "evidence", "user",
)  # fmt: skip
"""The provenance sections predictions and reports read into: each a table when present."""


def _check_sections(path: Path, raw: dict[str, Any]) -> None:
    """Each section a table, and the figures read from them of their kind: the reference release a YYYY-MM month,
    the fitted straggler share a fraction."""
    for dotted in SECTIONS:
        *parents, name = dotted.split(".")
        table = raw
        for parent in parents:
            table = table.get(parent) or {}
        if table.get(name) is not None and not isinstance(table[name], dict):
            raise PerfmodelError(f"{path}: field '{dotted}' must be a table")
    reference = raw.get("data", {}).get("vintage", {}).get("reference")
    if reference is not None and not (isinstance(reference, str) and re.fullmatch(RELEASE_MONTH, reference)):
        raise PerfmodelError(f"{path}: field 'data.vintage.reference' must be a release month, YYYY-MM")
    share = raw.get("losses", {}).get("parameters", {}).get("straggler_share")
    if share is not None and not in_range(share, 0.0, 1.0):
        raise PerfmodelError(f"{path}: field 'losses.parameters.straggler_share' must be {allowed(0.0, 1.0)}")


def _legacy_moe(path: Path, moe: object) -> dict[str, float]:
    """The MoE stage's values of a file written before they were table entries (field 'moe.parameters'), checked
    against the table; {} for newer files. (They carry no scope, like the shared entries they now are.)"""
    if isinstance(moe, dict) and isinstance(moe.get("fit"), dict) and moe["fit"].get("interval") is not None:
        _check_band(path, "moe.fit.interval", moe["fit"]["interval"])
    if moe is None or (isinstance(moe, dict) and "parameters" not in moe):
        return {}
    values = moe.get("parameters") if isinstance(moe, dict) else None
    if not isinstance(values, dict):
        raise PerfmodelError(f"{path}: field 'moe.parameters' must map MoE parameter names to numbers")
    names = tuple(p.name for p in table.TABLE if p.stage == "moe" and p.scope == "shared")
    _check_values(path, "moe.parameters", values, {n: table.BY_NAME[n].bounds for n in names}, names)
    return dict(values)


def _check_values(
    path: Path, field: str, values: dict[str, Any], bounds: dict[str, tuple[float, float]], names: tuple[str, ...]
) -> None:
    """Every value a known parameter, within its bounds."""
    for name, value in values.items():
        if name not in bounds:
            raise PerfmodelError(f"{path}: {field}: unknown '{name}'; valid: {', '.join(names)}")
        low, high = bounds[name]
        if not in_range(value, low, high):
            raise PerfmodelError(f"{path}: {field}.{name} = {shown_value(value)}; allowed {low} to {high}")


TABLES = ("rows", "held_out")
"""The evidence section's tables: one list per row, written one row per line."""


def dumps(document: dict[str, Any]) -> str:
    """A calibration document as its file's JSON: indented one space a level, the rows of the evidence section's
    tables one per line (hundreds of rows of some twenty values: a line a row, not a line a value)."""
    section = document.get("evidence")
    if not isinstance(section, dict):
        return json.dumps(document, indent=1, allow_nan=False)
    rows: dict[str, str] = {}

    def marked(table: list[Any]) -> list[str]:
        keys = [f"\0{len(rows) + k}" for k in range(len(table))]
        rows.update({json.dumps(k): json.dumps(r, allow_nan=False) for k, r in zip(keys, table, strict=True)})
        return keys

    tables = {name: marked(section[name]) for name in TABLES if isinstance(section.get(name), list)}
    text = json.dumps(document | {"evidence": section | tables}, indent=1, allow_nan=False)
    return re.sub(r'"\\u0000\d+"', lambda m: rows.get(m.group(0), m.group(0)), text)


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
