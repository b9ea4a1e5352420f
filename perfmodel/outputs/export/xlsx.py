"""The planner's workbook: Inputs to edit, Results and Breakdown as live formulas, Assumptions with sources.

Sheets:
- Inputs: per result, the GPU count, price per GPU-hour (with its low-high range), tokens to train, PUE and
  electricity price; tokens, PUE and electricity also have one default cell that every row links to.
- Results: the model's per-step results as values, everything derived from them and from the inputs as formulas.
- Breakdown: where the step time goes (the parts the step time is the sum of) and memory per GPU.
- Details: the rest of each prediction's record (outputs/record.py), values under their schema names.
- Assumptions: every hardware figure with its source, the efficiency parameters, the run's own assumptions.
"""

from __future__ import annotations

import datetime
import io
import os
from collections.abc import Sequence
from typing import Any, BinaryIO

from perfmodel.outputs.export.assumptions import Assumption
from perfmodel.outputs.export.excel import excel_formula
from perfmodel.outputs.export.table import OPTIONAL_INPUTS, Column, ExportRow, all_columns

SHEETS = {"inputs": "Inputs", "results": "Results", "breakdown": "Breakdown", "details": "Details"}
HEADER_ROW = 4
"""Headings on this row, the CSV/JSON column names under it, results from two rows below."""
EDITABLE_FILL = "FFF2CC"
GPU_COUNT_NOTE = (
    "Editing a GPU count keeps that result's modelled throughput per GPU (more or fewer data-parallel replicas at the "
    "same speed): time-to-train scales inversely, GPU-hours, cost and energy stay. perfmodel itself would re-price "
    "the layout at the new size; for that, export again with --gpus."
)


def _letter(index: int) -> str:
    from openpyxl.utils import get_column_letter

    return get_column_letter(index)


class _Grid:
    """Where every (row, column key) lives: sheet, column letter and row number."""

    def __init__(self, columns: Sequence[Column], n_rows: int, defaults: dict[str, int]) -> None:
        self.position: dict[str, tuple[str, str]] = {}
        per_sheet = {sheet: 1 for sheet in SHEETS}  # column A holds the result's label
        for column in columns:
            if column.key == "label":
                self.position[column.key] = (SHEETS["results"], "A")
                continue
            per_sheet[column.sheet] += 1
            self.position[column.key] = (SHEETS[column.sheet], _letter(per_sheet[column.sheet]))
        self.n_rows = n_rows
        self.defaults = defaults  # shared-default key -> row of its cell on the Inputs sheet

    def cell(self, key: str, index: int, from_sheet: str) -> str:
        sheet, letter = self.position[key]
        ref = f"{letter}{HEADER_ROW + 2 + index}"
        return ref if sheet == from_sheet else f"{sheet}!{ref}"

    def default_cell(self, key: str) -> str:
        return f"$B${self.defaults[key]}"


def _symbols(columns: Sequence[Column]) -> dict[str, Any]:
    import sympy

    return {c.key: sympy.Symbol(c.key, positive=True) for c in columns}


def _formula(column: Column, symbols: dict[str, Any], grid: _Grid, index: int) -> str:
    """The column's live formula for one row, blank when an input it needs (tokens, price) is missing."""
    assert column.formula is not None
    expr = column.formula(symbols)
    sheet = SHEETS[column.sheet]
    cells = {key: grid.cell(key, index, sheet) for key in grid.position}
    text = excel_formula(expr, cells)[1:]
    optional = sorted(s.name for s in expr.free_symbols if s.name in OPTIONAL_INPUTS)
    if optional:
        checks = ",".join(f"N({cells[key]})>0" for key in optional)
        text = f'IF(AND({checks}),{text},"")'
    return "=" + text


def write_xlsx(
    handle: BinaryIO, rows: list[ExportRow], usd_per_kwh: float, found: list[Assumption], title: str
) -> None:
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font, PatternFill

    columns = all_columns(rows)
    symbols = _symbols(columns)
    bold, grey = Font(bold=True), Font(italic=True, color="808080")
    editable = PatternFill("solid", fgColor=EDITABLE_FILL)

    wb = Workbook()
    default_sheet = wb.active
    sheets = {name: wb.create_sheet(name) for name in (*SHEETS.values(), "Assumptions")}
    if default_sheet is not None:
        wb.remove(default_sheet)
    inputs = sheets["Inputs"]

    # Inputs: the shared defaults on top, then one row per result.
    inputs["A1"] = f"Inputs: {title}"
    inputs["A1"].font = Font(bold=True, size=13)
    inputs["A2"] = "Edit the yellow cells; Results and Breakdown recompute. " + GPU_COUNT_NOTE
    inputs["A2"].alignment = Alignment(wrap_text=False)
    shared = [c for c in columns if c.shared_default]
    first_values = {c.key: c.value(rows[0], usd_per_kwh) for c in shared}
    defaults = {}
    for offset, column in enumerate(shared):
        r = HEADER_ROW + 2 + len(rows) + 2 + offset
        defaults[column.key] = r
    grid = _Grid(columns, len(rows), defaults)
    inputs.cell(
        HEADER_ROW + 2 + len(rows) + 1, 1, "Defaults: each result's cell above links here unless it differs"
    ).font = bold
    for column in shared:
        r = defaults[column.key]
        inputs.cell(r, 1, column.header)
        cell = inputs.cell(r, 2, first_values[column.key])
        cell.fill, cell.number_format = editable, column.number_format
        inputs.cell(r, 3, column.key).font = grey

    for sheet_key, sheet_name in SHEETS.items():
        ws = sheets[sheet_name]
        here = [c for c in columns if c.key == "label" or c.sheet == sheet_key]
        if sheet_key != "inputs":
            ws["A1"] = f"{sheet_name}: {title}"
            ws["A1"].font = Font(bold=True, size=13)
        if sheet_key == "results":
            ws["A2"] = "Values in grey italics are the model's per-step results; the others are live formulas."
        if sheet_key == "details":
            ws["A2"] = "The rest of perfmodel's record of each result, as exported: values, not recomputed from Inputs."
        for column in here:
            _, letter = grid.position[column.key]
            ws[f"{letter}{HEADER_ROW}"] = column.header
            ws[f"{letter}{HEADER_ROW}"].font = bold
            ws[f"{letter}{HEADER_ROW}"].alignment = Alignment(wrap_text=True, vertical="top")
            ws[f"{letter}{HEADER_ROW + 1}"] = column.key
            ws[f"{letter}{HEADER_ROW + 1}"].font = grey
            ws.column_dimensions[letter].width = max(11, min(28, len(column.header) * 0.75 + 2))
            for index, row in enumerate(rows):
                ref = f"{letter}{HEADER_ROW + 2 + index}"
                value = column.value(row, usd_per_kwh)
                if column.formula is not None:
                    ws[ref] = _formula(column, symbols, grid, index)
                elif column.shared_default and value == first_values[column.key]:
                    ws[ref] = "=" + grid.default_cell(column.key)
                else:
                    _plain(ws[ref], value)
                    if column.key != "label" and not column.editable:
                        ws[ref].font = grey
                ws[ref].number_format = column.number_format
                if column.editable:
                    ws[ref].fill = editable
        ws.column_dimensions["A"].width = 34
        ws.freeze_panes = f"B{HEADER_ROW + 2}"
        if sheet_key != "results":  # the label comes from the Results sheet
            for index in range(len(rows)):
                ws[f"A{HEADER_ROW + 2 + index}"] = f"=Results!A{HEADER_ROW + 2 + index}"
        ws.row_dimensions[HEADER_ROW].height = 45

    _write_shares(sheets["Breakdown"], grid, len(rows))
    _write_assumptions(sheets["Assumptions"], found, title)
    handle.write(_saved(wb))


DEFAULT_TIMESTAMP = datetime.datetime(2000, 1, 1)
"""The workbook's created/modified time and its zip members' times when SOURCE_DATE_EPOCH is not set: the same
input gives the same bytes (reproducible-builds.org's SOURCE_DATE_EPOCH sets another fixed time)."""


def timestamp() -> datetime.datetime:
    """SOURCE_DATE_EPOCH (seconds since 1970, UTC) when set and valid, else DEFAULT_TIMESTAMP; never before 1980,
    the first time a zip member can carry."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not epoch.isdigit():
        return DEFAULT_TIMESTAMP
    utc = datetime.datetime.fromtimestamp(min(int(epoch), 253402300799), tz=datetime.UTC)
    return max(utc.replace(tzinfo=None), datetime.datetime(1980, 1, 1))


def _saved(wb: Any) -> bytes:
    """The workbook's bytes, built in memory (a full disk then fails in one plain write, not inside zipfile) with
    fixed timestamps, so that the same results give the same file."""
    import zipfile

    from openpyxl.writer.excel import ExcelWriter

    stamp = timestamp()
    wb.properties.created = wb.properties.modified = stamp
    first = io.BytesIO()
    ExcelWriter(wb, zipfile.ZipFile(first, "w", zipfile.ZIP_DEFLATED, allowZip64=True)).save()
    fixed = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(first.getvalue())) as source, zipfile.ZipFile(fixed, "w") as target:
        for member in source.infolist():  # openpyxl stamps each member with the time it was written
            info = zipfile.ZipInfo(member.filename, date_time=stamp.timetuple()[:6])
            info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, member.external_attr
            target.writestr(info, source.read(member))
    return fixed.getvalue()


def _plain(cell: Any, value: Any) -> None:
    """A value, never a formula: text is typed as a string even when it begins with '=' (cells.py)."""
    cell.value = value
    if isinstance(value, str):
        cell.data_type = "s"


def _write_shares(ws: Any, grid: _Grid, n_rows: int) -> None:
    """Each part's share of the step time, next to the parts: formulas, so they follow edited parts too."""
    from openpyxl.styles import Font

    parts = [key for key, (sheet, _) in grid.position.items() if sheet == "Breakdown" and key.startswith("breakdown.")]
    start = ws.max_column + 2
    for offset, key in enumerate(parts):
        letter = _letter(start + offset)
        ws[f"{letter}{HEADER_ROW}"] = "Share: " + key.removeprefix("breakdown.").removesuffix("_s").replace("_", " ")
        ws[f"{letter}{HEADER_ROW}"].font = Font(bold=True)
        ws.column_dimensions[letter].width = 12
        for index in range(n_rows):
            ref = f"{letter}{HEADER_ROW + 2 + index}"
            ws[ref] = f"={grid.cell(key, index, 'Breakdown')}/{grid.cell('step_time_s', index, 'Breakdown')}"
            ws[ref].number_format = "0.0%"


def _write_assumptions(ws: Any, found: list[Assumption], title: str) -> None:
    from openpyxl.styles import Alignment, Font

    ws["A1"] = f"Assumptions: {title}"
    ws["A1"].font = Font(bold=True, size=13)
    ws["A2"] = (
        "Every figure the results rest on, with its source (hardware_specs/*.toml, perfmodel/physics/efficiency.py)."
    )
    for col, (head, width) in enumerate(
        (("Section", 28), ("Name", 32), ("Value", 16), ("Unit", 18), ("Source", 100)), start=1
    ):
        ws.cell(HEADER_ROW, col, head).font = Font(bold=True)
        ws.column_dimensions[_letter(col)].width = width
    for index, a in enumerate(found):
        r = HEADER_ROW + 1 + index
        for col, value in enumerate((a.section, a.name, a.value, a.unit, a.source), start=1):
            _plain(ws.cell(r, col), value)
        ws.cell(r, 5).alignment = Alignment(wrap_text=False)
    ws.freeze_panes = f"A{HEADER_ROW + 1}"
