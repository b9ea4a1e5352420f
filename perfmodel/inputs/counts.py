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


def in_digits(text: str) -> str:
    """How to write in plain digits a whole count written with a suffix or separators, which a field or cell of whole
    numbers refuses: '8192 or 8000' for '8k' (a K reads as 1,024, sequence lengths being powers of two, or 1,000),
    '1024' for '1,024'; '' for text that is no such count, or already plain digits."""
    try:
        number = count(text)
    except ValueError:
        return ""
    text = text.strip()
    if number != int(number) or text.isdigit():
        return ""
    binary = round(number * 1.024) if text[-1] in "kK" else None  # from the count: '1,000k' is no float
    return f"{binary} or {int(number)}" if binary not in (None, number) else f"{int(number)}"


def digits_hint(text: str, named: str = "", why: str = "") -> str:
    """The end of an error refusing a whole count written with a suffix or separators (in_digits): ': write it in
    digits (8192 or 8000)', `named` (a flag and a space) before the digits and `why` before the advice; '' for text
    that is no such count. One wording for a flag (cli/options.py) and a measured runs file's cell (fitting/runs.py)."""
    written = in_digits(text)
    return f": {why}write it in digits ({named}{written})" if written else ""
