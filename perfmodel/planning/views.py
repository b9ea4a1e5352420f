"""Short views of results for notebooks and the REPL: `repr` a line per result, `_repr_html_` (what Jupyter shows)
a table, both read from the flat records `to_records()` gives, so that they say what `--format csv` says. The
whole object stays one attribute away (`.to_dict()`, `.scenario`, `.phases`)."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from typing import Any

Reads = Callable[[Any], str]
"""How a figure reads (its value as text)."""


def _days(value: float) -> str:
    if value >= 1:
        return f"{value:,.1f} days"
    return f"{value * 24:,.1f} hours" if value * 24 >= 1 else f"{value * 1440:,.1f} min"


PREFIXES = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"))
"""The thousands prefixes the tables print figures with, largest first."""


def _si(value: float) -> str:
    """A figure to two decimals of its thousands prefix: '117.37k', '16.83M'."""
    for scale, suffix in PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:,.2f}{suffix}"
    return f"{value:,.2f}"


def usd_text(value: float) -> str:
    """Money as the tables and the planner's reasons print it, so that a reason's budget reads as the table's cost
    ('$117.37k' in both; a reason said '$0.12M')."""
    return "$" + _si(value).replace("B", "bn")


def count_text(value: float) -> str:
    """A token count to three significant figures, trailing zeros kept, so that a column reads alike: '800B' beside
    '2.87T' and '15.0T' (two decimals read '800.00B' beside '2.87T')."""
    rounded = float(f"{value:.3g}")
    scale, suffix = next(((size, letter) for size, letter in PREFIXES if rounded >= size), (1.0, ""))
    shown = rounded / scale
    decimals = max(0, 2 - math.floor(math.log10(shown))) if shown > 0 else 0
    return f"{shown:,.{decimals}f}{suffix}"


FIGURES: tuple[tuple[str, str, Reads], ...] = (
    ("tokens_to_train", "tokens", count_text),
    ("step_time_s", "step", lambda v: f"{v:.3f} s"),
    ("tokens_per_s_per_gpu", "tokens/s/GPU", lambda v: f"{v:,.0f}"),
    ("mfu_of_precision", "MFU", lambda v: f"{v:.1%}"),
    ("fits_in_memory", "fits", lambda v: "yes" if v else "NO"),
    ("time_to_train_days", "time", _days),
    ("cost_usd", "cost", usd_text),
    ("speedup_vs_first", "speedup", lambda v: f"{v:.2f}x"),
    ("perf_per_usd_vs_first", "perf/USD", lambda v: f"{v:.2f}x"),
)
"""The figures a view shows, those a record has (key, name, how it reads); MFU is of the precision's own peak."""
LAYOUT = ("tp", "pp", "cp", "vp", "ep", "dp")
"""The layout's dimensions a label names (EP only above 1: a dense model has none)."""


def label(record: dict[str, Any]) -> str:
    """What a result is: `phase: model on N x accelerator (system) precision, TP2 PP1 ..., MBS 1, GBS 512, ZeRO 3`
    (and the recompute when there is one)."""
    layout = " ".join(
        f"{dim.upper()}{record[key]}"
        for dim in LAYOUT
        if record.get(key := f"parallelism.{dim}") and (dim != "ep" or record[key] > 1)
    )
    batch = ", ".join(
        f"{name} {record[key]}"
        for name, key in (("MBS", "parallelism.mbs"), ("GBS", "parallelism.gbs"), ("ZeRO", "parallelism.zero"))
        if record.get(key) is not None
    )
    if record.get("parallelism.recompute") not in (None, "none"):
        batch += f", recompute {record['parallelism.recompute']}"
    phase = f"{record['phase']}: " if record.get("phase") else ""
    hardware = f"{record['accelerator']} ({record['system']})" if record.get("system") else str(record["accelerator"])
    return f"{phase}{record['model']} on {record['n_gpus']:,} x {hardware} {record['precision']}, {layout}, {batch}"


def _figures(record: dict[str, Any]) -> list[tuple[str, str]]:
    """The figures a record has, as they read; tokens the question did not give (the default scenario's 15T) are
    marked "(default)", as the CLI's tables mark them."""
    shown = [(name, show(record[key])) for key, name, show in FIGURES if record.get(key) is not None]
    if record.get("tokens_from_default"):
        shown = [(name, f"{value} (default)" if name == "tokens" else value) for name, value in shown]
    return shown


def text(kind: str, records: Sequence[dict[str, Any]]) -> str:
    """`<Kind label: figure value, ...>` for one record; a heading and a line per record for more."""
    lines = [f"{label(r)}: " + ", ".join(f"{name} {value}" for name, value in _figures(r)) for r in records]
    if len(lines) == 1:
        return f"<{kind} {lines[0]}>"
    return f"<{kind} of {len(lines)} results\n" + "\n".join(f"  {line}" for line in lines) + ">"


class Shown:
    """A result that shows itself short: `repr` and `print` a line per record of `_shown()`, Jupyter a table (the
    dataclasses that inherit this say `repr=False`, so that theirs is not the field dump)."""

    def _shown(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return text(type(self).__name__, self._shown())

    def _repr_html_(self) -> str:
        return table(type(self).__name__, self._shown())


def table(kind: str, records: Sequence[dict[str, Any]]) -> str:
    """An HTML table, a row per record and a column per figure any of them has."""
    names = [name for key, name, _ in FIGURES if any(r.get(key) is not None for r in records)]
    head = "".join(f"<th>{html.escape(name)}</th>" for name in ["result", *names])
    rows = []
    for r in records:
        found = dict(_figures(r))
        cells = [label(r), *(found.get(name, "") for name in names)]
        rows.append("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in cells) + "</tr>")
    caption = f"<caption>perfmodel {html.escape(kind)}</caption>"
    return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
