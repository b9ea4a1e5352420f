"""The one check for every number read from a file: a finite number (not true/false) within its field's range; and
the one way a small or large figure is written for people (plain).

Finite is not enough: a measured step time of 1e308 or of a subnormal 5e-324 is finite, yet its ratio to a
prediction is infinite and ends as `inf` in JSON. Each field states the range of values that mean something.
"""

from __future__ import annotations

import math
from typing import TypeGuard


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
