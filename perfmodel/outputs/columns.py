"""Plain-text tables as tabulate prints them (its 'plain' format, or 'simple' with headers; text cells), without
importing tabulate where every cell is printable ASCII, whose display width is its length.

tabulate and the wcwidth it measures wide characters with take ~25 ms to import: an eighth of `perfmodel predict`.
A cell of other text (a user's hardware source in CJK, say) is left to tabulate itself, so the output is the same.
Every table of text perfmodel prints is made here (`table`, or `tabulated` for tabulate's other options), so that
each cell and header is `visible`: a control character in user text is shown escaped, never sent to the terminal,
and a newline in a name never starts a forged row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfmodel.errors import visible

SEPARATOR = "  "
HEADER_PADDING = 2
"""tabulate's MIN_PADDING: a column is at least two characters wider than its header."""


def table(rows: Sequence[Sequence[str]], headers: Sequence[str] = (), colalign: Sequence[str] = ()) -> str:
    """`tabulate(rows, headers, tablefmt='simple' if headers else 'plain', colalign=colalign,
    disable_numparse=True)`, for `headers` naming every column (none, or one per column of the longest row);
    columns are left-aligned unless `colalign` says 'right'."""
    if not all(_ascii(cell) for row in (*rows, headers) for cell in row):
        fmt = "simple" if headers else "plain"
        return tabulated(rows, headers=headers, tablefmt=fmt, colalign=colalign or None, disable_numparse=True)
    count = max([len(headers), *(len(row) for row in rows)])
    cells = [[cell.strip() for cell in row] + [""] * (count - len(row)) for row in rows]
    titles = list(headers)  # tabulate strips the cells, not the headers
    widths = [max([len(row[i]) for row in cells] or [0]) for i in range(count)]
    if titles:
        widths = [max(width, len(title) + HEADER_PADDING) for width, title in zip(widths, titles, strict=True)]
    right = [i < len(colalign) and colalign[i] == "right" for i in range(count)]

    def line(row: Sequence[str]) -> str:
        padded = (cell.rjust(w) if r else cell.ljust(w) for cell, w, r in zip(row, widths, right, strict=True))
        return SEPARATOR.join(padded).rstrip()

    head = [line(titles), SEPARATOR.join("-" * w for w in widths)] if titles else []
    return "\n".join([*head, *map(line, cells)])


def tabulated(rows: Sequence[Sequence[Any]], headers: Sequence[str] = (), **options: Any) -> str:
    """`tabulate(rows, headers, **options)` with every text cell and header `visible`."""
    from tabulate import tabulate

    cells = [[visible(cell) if isinstance(cell, str) else cell for cell in row] for row in rows]
    return tabulate(cells, headers=[visible(h) for h in headers], **options)


def _ascii(cell: str) -> bool:
    return cell.isascii() and cell.isprintable()
