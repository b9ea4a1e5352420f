"""Counts as people write them, `15T`, `2.5e12`, `1,000,000`, `20B`: the one reading of the CLI's flags, the Python
API's keywords and scenario files."""

from __future__ import annotations

SUFFIXES = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12, "P": 1e15}
EXAMPLES = "15T, 2.5e12, 1,000,000"
PATTERN = r"^\s*[0-9][0-9,_]*(\.[0-9]*)?([eE][+-]?[0-9]+)?\s*[KkMmBbGgTtPp]?\s*$"
"""The text of a count as a JSON Schema pattern (what `count` reads, less the spellings of infinity and NaN)."""


def count(text: str) -> float:
    """The number `text` writes, with an optional K/M/B/G/T/P suffix and `,` or `_` between digits; ValueError when
    it writes none (the range is the caller's to check)."""
    cleaned = text.strip().replace(",", "").replace("_", "")
    scale = SUFFIXES.get(cleaned[-1:].upper(), 1.0) if cleaned else 1.0
    return float(cleaned[:-1] if scale != 1.0 else cleaned) * scale
