"""The checks of the Python API's own arguments (those that are no scenario keyword, which the scenario's checks
take): each refuses what it cannot honour with the line the CLI would print, `name=value: what is allowed`, so that a
wrong type, NaN, a negative count, text where a number goes or None where a path goes is a PerfmodelError, never a
TypeError deep inside or a silent fallback to a default."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfmodel.errors import PerfmodelError, shown_value
from perfmodel.inputs.files import check_path

MAX_FIGURE = 1e15
"""The largest deadline (s) or budget (USD) a plan takes: 31 million years, a thousand trillion dollars."""


def refused(name: str, value: object, allowed: str) -> PerfmodelError:
    return PerfmodelError(f"{name}={shown_value(value)}: {allowed}")


def number(
    name: str, value: Any, low: float, high: float, *, whole: bool = False, optional: bool = False, above: bool = False
) -> Any:
    """`value` when it is a number (an int when `whole`; never a bool) from `low` (excluded when `above`) to `high`;
    None only when `optional`."""
    if value is None and optional:
        return None
    kinds = int if whole else int | float
    if isinstance(value, bool) or not isinstance(value, kinds) or not _within(value, low, high, above):
        what = "a whole number" if whole else "a finite number"
        raise refused(name, value, f"allowed {what} {'above' if above else 'from'} {low:g} up to {high:,.0f}")
    return value


def _within(value: float, low: float, high: float, above: bool) -> bool:
    try:
        return math.isfinite(value) and (low < value if above else low <= value) and value <= high
    except OverflowError:  # an int beyond float range
        return False


def flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise refused(name, value, "allowed True or False")
    return value


def text(name: str, value: Any) -> Any:
    """`value` when it is a string (or None)."""
    if value is not None and not isinstance(value, str):
        raise refused(name, value, "allowed a string")
    return value


def path(name: str, value: Any, required: bool = False) -> Any:
    """`value` when it can name a file: a string or a pathlib.Path (None when not `required`)."""
    if value is None and not required:
        return None
    if not isinstance(value, str | Path) or not str(value):
        raise refused(name, value, "allowed a file name (a string or a pathlib.Path)")
    check_path(value, f"{name}={shown_value(value)}")
    return value


def texts(name: str, value: Any) -> list[str]:
    """A string, or a list or tuple of strings, as a list."""
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list | tuple) or not all(isinstance(v, str) for v in values):
        raise refused(name, value, "allowed a string or a list of strings")
    return list(values)


def counts(name: str, value: Any) -> list[int] | None:
    """A whole number or a non-empty list or tuple of them, as a list (None stays None): a generator, which could
    only be read once, or an empty list would leave the count to a default nobody asked for."""
    if value is None:
        return None
    values = [value] if isinstance(value, int) else value
    if not isinstance(values, list | tuple) or not values or not all(_whole(v) for v in values):
        raise refused(name, value, "allowed a whole number of GPUs or a non-empty list of them")
    return list(values)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def paths(name: str, value: Any) -> list[str | Path]:
    """A file or folder name, or a list or tuple of them, as a list (None: none)."""
    if value is None:
        return []
    values = [value] if isinstance(value, str | Path) else value
    if not isinstance(values, list | tuple):
        raise refused(name, value, "allowed a file name or a list of them")
    return [path(name, v, required=True) for v in values]


def one_of(name: str, value: Any, allowed: Sequence[Any]) -> Any:
    if isinstance(value, bool) or not isinstance(value, str | int) or value not in allowed:
        raise refused(name, value, f"allowed {', '.join(map(str, allowed))}")
    return value
