"""User-facing errors: one line, naming the file/field/flag and what is allowed. The CLI prints them and exits 2."""

import difflib
import math
from collections.abc import Iterable, Sequence


class PerfmodelError(ValueError):
    """A problem with the user's input or request, explained in one line."""


class InfeasibleLayout(PerfmodelError):
    """A parallel layout that breaks a validity rule (the message names the rule)."""


def visible(text: str, keep: str = "") -> str:
    """`text` with every non-printable character but those in `keep` written as Python writes it in a string
    literal (ESC as \\x1b, a newline as \\n, U+2028 as \\u2028): user text (a hardware name, a log's system, a file
    name) never retitles or clears the terminal, nor starts a line of its own in a table or an error. Every text
    output goes through it: errors (`shown`), table cells (outputs/columns.py), the text the CLI prints."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else repr(c)[1:-1] for c in text)


def shown(text: object, limit: int = 40) -> str:
    """User text as an error line shows it: `visible`, and at most `limit` characters, so that a 10 MB id is not
    echoed whole."""
    value = str(text)
    return visible(value if len(value) <= limit else f"{value[: limit - 3]}... ({len(value):,} characters)")


def shown_value(value: object) -> str:
    """A value as an error line shows it (`n_gpus=...`): its repr, clipped to 60 characters (errors.shown), and an
    integer too long to print (Python refuses more than 4,300 digits) by its size alone."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"<an integer of about {math.floor(value.bit_length() * math.log10(2)) + 1:,} digits>"
    try:
        return shown(repr(value), 60)
    except ValueError:  # such an integer inside a list
        return f"<a {type(value).__name__}>"


def did_you_mean(word: str, valid: Iterable[str], cutoff: float = 0.8) -> str:
    """The hint for a mistyped id or key, " (did you mean 'h100-sxm'?)": the valid ones equal to it but for case,
    else those that begin with it or that it begins with ('h100', 'b200-sxm'), else those it is with two neighbouring
    characters swapped ('mian'), else the one difflib finds nearest if `cutoff` alike ('llama-3.1-405b'); '' where
    none is that near ('h300' would be a guess). At most three."""
    options, low = list(valid), word.lower()
    near = (
        [v for v in options if v.lower() == low]
        or [v for v in options if low and (v.lower().startswith(low) or low.startswith(v.lower()))]
        or [v for v in options if _swapped(low, v.lower())]
        or difflib.get_close_matches(low, options, n=1, cutoff=cutoff)
    )
    return f" (did you mean {' or '.join(repr(v) for v in near[:3])}?)" if near else ""


def unknown_key(key: str, allowed: Sequence[str]) -> str:
    """What a file's misspelt key is told, the one wording of every input file (scenario, fleet, sweep): "unknown
    key (did you mean 'gpus'?); allowed: name, system, gpus"."""
    return f"unknown key{did_you_mean(key, allowed)}; allowed: {', '.join(allowed)}"


def _swapped(typed: str, valid: str) -> bool:
    """Whether `typed` is `valid` with two neighbouring characters swapped ('mian' for 'main'), the typo difflib
    finds too far on a short word (0.75 alike)."""
    if len(typed) != len(valid) or typed == valid:
        return False
    at = [i for i, (a, b) in enumerate(zip(typed, valid, strict=True)) if a != b]
    return len(at) == 2 and at[1] == at[0] + 1 and typed[at[0]] == valid[at[1]] and typed[at[1]] == valid[at[0]]


class FieldError(PerfmodelError):
    """A value of one field that its table's other fields rule out: `field` names it (dotted, as in a scenario),
    `detail` says what is wrong and what is allowed, so that a caller can put the file or flag in front."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"field '{field}': {detail}")
        self.field = field
        self.detail = detail


def counted(count: int, noun: str) -> str:
    """'1 phase', '3 phases', '1 run', '2 grid cells' (a searched space can be one given layout): a count as the
    tables and the errors write it (here, below every stage, so that planning's errors use it too)."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
