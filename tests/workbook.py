"""Recompute an exported workbook with real formula engines: the `formulas` package, and LibreOffice when present."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

Cell = tuple[str, str]  # (sheet name, "B6")


def cells_by_key(
    path: Path, sheets: tuple[str, ...] = ("Inputs", "Results", "Breakdown", "Details")
) -> dict[tuple[str, int], Cell]:
    """(column key, line index) -> (sheet, cell), from the key row under the `sheets`' headings."""
    import openpyxl

    book = openpyxl.load_workbook(path)
    lines = book["Results"].max_row - 5  # a row per line there; under the other sheets' lines: defaults, shares
    found = {}
    for sheet in sheets:
        ws = book[sheet]
        if sheet == "Details":  # a row per key, its key in the last column (headed "Key"), a column per line
            keys = next(cell.column for cell in ws[4] if cell.value == "Key")
            for row in range(6, ws.max_row + 1):
                for index in range(keys - 2):
                    found[(ws.cell(row, keys).value, index)] = (sheet, f"{ws.cell(row, 2 + index).column_letter}{row}")
            continue
        for cell in ws[5]:
            if isinstance(cell.value, str) and cell.column > 1:
                for index in range(lines):
                    found[(cell.value, index)] = (sheet, f"{cell.column_letter}{6 + index}")
    return found


class Recalculator:
    """A workbook loaded into the `formulas` engine once, recomputed for any set of changed input cells."""

    def __init__(self, path: Path) -> None:
        import formulas

        self._book = path.name
        self._model = formulas.ExcelModel().loads(str(path)).finish()

    def __call__(self, changes: dict[Cell, Any] | None = None) -> dict[Cell, Any]:
        """Every cell's value after recomputing with `changes` applied."""
        inputs = {f"'[{self._book}]{sheet.upper()}'!{ref}": value for (sheet, ref), value in (changes or {}).items()}
        solution = self._model.calculate(inputs=inputs)
        values: dict[Cell, Any] = {}
        for key, ranges in solution.items():
            sheet_part, ref = key.rsplit("!", 1)
            if ":" in ref:
                continue
            sheet = sheet_part.split("]", 1)[1].rstrip("'")
            value = ranges.value[0][0] if hasattr(ranges, "value") else ranges  # inputs come back as given
            values[(sheet.capitalize(), ref)] = _plain(value)
        return values


def _plain(value: Any) -> Any:
    if str(value) == "empty":
        return None
    if hasattr(value, "item"):
        return value.item()
    return value


def libreoffice() -> str | None:
    return shutil.which("soffice") or shutil.which("libreoffice")


def run_soffice(*args: str, timeout_s: float) -> None:
    """LibreOffice headless with `args`, in a user profile of its own: the test files run in parallel workers
    (pytest-xdist), and soffice processes sharing the default profile collide (one exits 1, or 0 without its
    output file)."""
    soffice = libreoffice()
    assert soffice is not None
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([soffice, f"-env:UserInstallation={Path(profile).as_uri()}", "--headless", *args],
                       check=True, capture_output=True, timeout=timeout_s)  # fmt: skip


def recompute_libreoffice(path: Path, changes: dict[Cell, Any] | None = None) -> dict[Cell, Any]:
    """Every cell's value after LibreOffice (headless) opens, recalculates and saves the workbook with `changes`
    applied. The workbook goes through openpyxl first, which keeps the formulas and drops their stored values, so
    that every number read back is one LibreOffice computed."""
    import openpyxl

    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as edited:
        book = openpyxl.load_workbook(path)
        for (sheet, ref), value in (changes or {}).items():
            book[sheet][ref] = value
        book.save(Path(edited) / path.name)
        run_soffice("--calc", "--convert-to", "xlsx", "--outdir", out, str(Path(edited) / path.name), timeout_s=120)
        book = openpyxl.load_workbook(Path(out) / path.name, data_only=True)
        return {(ws.title, c.coordinate): c.value for ws in book for row in ws.iter_rows() for c in row}
