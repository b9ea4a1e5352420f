"""Spreadsheet cells that hold text: never a formula, whatever the text (OWASP's CSV-injection guidance).

A CSV cell or XLSX string beginning with `=`, `+`, `-`, `@`, a tab or a carriage return is taken for a formula by
Excel, LibreOffice and Google Sheets (a model id `=cmd|'/C calc'!A0` would run a DDE command). CSV text cells that
begin so get a leading single quote, which spreadsheets show as text; XLSX cells are typed as strings (see xlsx.py).
Numbers are not text and stay numbers.
"""

from __future__ import annotations

from typing import Any

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """`value` as a CSV cell: formula-like text quoted with a leading "'", anything else as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def csv_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: csv_cell(value) for key, value in row.items()} for row in rows]
