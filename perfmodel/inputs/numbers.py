"""The one check for every number read from a file: a finite number (not true/false) within its field's range.

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
