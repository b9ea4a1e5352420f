"""The one check for every number read from a file: a finite number (not true/false) within its field's range; and
the one way a small or large figure is written for people (plain); and what a number field given text takes
(unquoted).

Finite is not enough: a measured step time of 1e308 or of a subnormal 5e-324 is finite, yet its ratio to a
prediction is infinite and ends as `inf` in JSON. Each field states the range of values that mean something.
"""

from __future__ import annotations

import math
from typing import TypeGuard

from perfmodel.errors import shown


def in_range(value: object, low: float, high: float) -> TypeGuard[float]:
    """`value` is a finite int or float (a JSON/CSV/TOML number; booleans excluded) with low <= value <= high."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value) and low <= value <= high
    except OverflowError:  # an integer beyond float range (a JSON number of 400 digits)
        return False


def allowed(low: float, high: float) -> str:
    """The range as an error line states it."""
    return f"a finite number from {low:g} to {high:g}"


def plain(value: float, digits: int = 2, floor: float = 0.0) -> str:
    """`value` to `digits` significant digits in plain decimals, never in scientific notation, which a planner
    misreads ('3.5e-05 interruptions' reads as 3.5): '0.000035', '1,230', trailing zeros dropped as `g` drops them.
    A magnitude below `floor` reads as less than it ('<0.001 interruptions'): a count too small to plan for."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if abs(value) < floor:
        return f"{'>-' if value < 0 else '<'}{plain(floor, 1)}"
    rounded = float(f"{value:.{digits}g}")
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    text = f"{rounded:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


NAMED_UNITS = (
    ("_per_gpu_hour", "US dollars per GPU-hour"),
    ("usd_per_kwh", "US dollars per kWh"),
    ("gco2_per_kwh", "grams CO2e per kWh"),
    ("_per_s", "units per second"),
    ("_s", "seconds"),
    ("_h", "hours"),
    ("_days", "days"),
    ("_years", "years"),
    ("_usd", "US dollars"),
    ("_gbps", "GB/s"),
    ("_gb", "GB"),
    ("_mw", "megawatts"),
)
"""A number field's unit by its name's ending, as a file names them (restart_s, lead_time_days, power_mw), the
longer ending first (tokens_per_s is no count of seconds)."""
TEXT_FOR_NUMBER = frozenset(("float_type", "int_type", "float_parsing", "int_parsing"))
"""pydantic's errors of text given where a number is (strict: *_type; lax: *_parsing)."""


def unquoted(field: str, kind: str, value: object) -> str | None:
    """What a number field given text takes (`restart_s = "10min"`, `lead_time_days = "2w"`, `gpus = "64 GPUs"`),
    for pydantic's error `kind`: TOML reads a quoted value as text, and the unit is the field name's; None when the
    error is another."""
    if kind not in TEXT_FOR_NUMBER or not isinstance(value, str):
        return None
    leaf = field.rpartition(".")[2]
    unit = next((f" of {words} (the {end} in its name)" for end, words in NAMED_UNITS if leaf.endswith(end)), "")
    number = "a whole number" if kind.startswith("int") else "a number"
    return f"must be {number}{unit}, unquoted and without a unit, not {shown(repr(value), 40)}"
