"""Free text from users (a scenario's name, an inline model's id, a measured run's id and source): printable
characters only, and not too long.

Such text ends in tables, CSV and XLSX cells, LaTeX and error lines. A control character there (a NUL, a newline that
starts a new LaTeX line after a comment, an escape sequence) is refused where it enters, with one line naming the
field and the rule; the outputs escape what is left (formula-like cells, LaTeX specials) themselves.
"""

from __future__ import annotations

import unicodedata

MAX_NAME_CHARS = 200
"""Names and ids: a model name, a scenario name, a run id."""
MAX_TEXT_CHARS = 2000
"""Longer free text: a scenario's description, a run's source."""
NOT_BLANK = r"\S"
"""The pattern of a name that must hold more than spaces (a model's id and name: every row and heading shows it)."""
ALLOWED = "printable characters (letters, digits, punctuation, symbols, spaces; no control characters)"


def text_problem(value: str, limit: int = MAX_NAME_CHARS) -> str | None:
    """What is wrong with `value` as free text, or None: each character printable or a plain space, at most
    `limit` characters."""
    if len(value) > limit:
        return f"is {len(value):,} characters long; at most {limit:,}"
    bad = next((c for c in value if not c.isprintable()), None)
    if bad is not None:
        name = unicodedata.name(bad, "a control character")
        return f"contains U+{ord(bad):04X} ({name.lower()}); allowed: {ALLOWED}"
    return None


def check_text(value: str, limit: int = MAX_NAME_CHARS) -> str:
    """`value` when it is acceptable free text; ValueError (as pydantic validators raise) otherwise."""
    problem = text_problem(value, limit)
    if problem is not None:
        raise ValueError(problem)
    return value
