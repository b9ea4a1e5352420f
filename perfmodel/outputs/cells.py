"""Spreadsheet cells that hold text: never a formula, whatever the text (OWASP's CSV-injection guidance).

A CSV cell or XLSX string beginning with `=`, `+`, `-`, `@`, a tab or a carriage return is taken for a formula by
Excel, LibreOffice and Google Sheets (a model id `=cmd|'/C calc'!A0` would run a DDE command). CSV text cells that
begin so get a leading single quote, which spreadsheets show as text; XLSX cells are typed as strings (see xlsx.py).
Numbers are not text and stay numbers.
"""

from __future__ import annotations

from typing import Any

from perfmodel.errors import visible

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """`value` as a CSV cell: text `visible` (a CSV printed on a terminal cannot drive it) and, formula-like,
    quoted with a leading "'"; anything else as it is."""
    if not isinstance(value, str):
        return value
    text = visible(value)
    return "'" + text if value.startswith(FORMULA_PREFIXES) else text


def csv_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: csv_cell(value) for key, value in row.items()} for row in rows]
