"""The planner's workbook: a one-page Summary, Inputs to edit, Results and Breakdown as live formulas, Details,
Assumptions and the Sources they cite.

Sheets:
- Summary: the figures a procurement reader compares, one row per result, linked to Results; one landscape page.
- Inputs: per result, the GPU count, price per GPU-hour (with its low-high range), tokens to train, PUE and
  electricity price, the goodput model's and the losses' inputs; tokens, PUE, electricity and the losses' inputs
  also have one default cell that every row links to. Every input cell refuses a number out of range (data
  validation).
- Results: the model's per-step results as values, everything derived from them and from the inputs as formulas.
- Breakdown: where the step time goes (the parts the step time is the sum of) and memory per GPU.
- Details: the rest of each prediction's record (outputs/record.py), values under their schema names.
- Assumptions: every hardware figure with its source, the efficiency parameters, the run's own assumptions.
- Sources: the public documents the Assumptions cite by key (S1, S2, ...).

Written with XlsxWriter, which stores each formula with its computed value (perfmodel's own number, equal to what
the formula gives): a reader without a formula engine (pandas, openpyxl's data_only) sees the numbers, and Excel or
LibreOffice recompute them on an edit.
"""

from __future__ import annotations

import datetime
import io
import zipfile
from collections.abc import Sequence
from typing import Any, BinaryIO

from perfmodel.inputs.environment import source_date
from perfmodel.outputs.export.assumptions import Assumption, Citation
from perfmodel.outputs.export.excel import excel_formula
from perfmodel.outputs.export.table import (
    OPTIONAL_INPUTS,
    Column,
    ExportRow,
    Line,
    TotalRow,
    all_columns,
    firsts,
    scaling_bases,
)
from perfmodel.planning.campaign import incurred, total_rule

SHEETS = {"inputs": "Inputs", "results": "Results", "breakdown": "Breakdown", "details": "Details"}
HEADER_ROW = 4
"""Headings on this row, the CSV/JSON column names under it, results from two rows below."""
EDITABLE_FILL = "#FFF2CC"
GPU_COUNT_NOTE = (
    "Editing a GPU count keeps that result's modelled throughput per GPU (more or fewer data-parallel replicas at the "
    "same speed): time-to-train scales inversely, GPU-hours, cost and energy stay. perfmodel itself would re-price "
    "the layout at the new size; for that, export again with --gpus."
)
SUMMARY = (
    "n_gpus", "usd_per_gpu_hour", "price_basis", "precision", "step_time_s", "tokens_per_s_per_gpu", "mfu_of_precision",
    "fits_in_memory",
    "time_to_train_days", "time_to_train_with_failures_days", "time_to_train_with_losses_days", "cost_usd",
    "cost_usd_with_losses", "usd_per_million_tokens", "tokens_per_usd",
    "kwh_per_million_tokens", "speedup_vs_first", "perf_per_usd_vs_first", "energy_per_token_vs_first",
)  # fmt: skip
"""The Summary's columns, those of them the export has."""
AT_LEAST_ZERO = ("failures_per_million_gpu_hours", "planned_per_million_gpu_hours", "restart_s",
                 "facility_usd_per_kw_month", "straggler_share", "startup_s")  # fmt: skip
"""Inputs that may be zero; every other input must be positive (utilisation at most 1, GPU counts whole)."""
UNITS = (
    ("per_million_gpu_hours", ""), ("tokens_per_s_per_gpu", " tok/s"), ("tokens_per_s", " tok/s"),
    ("tokens_to_train", " tokens"), ("_kwh", " kWh"),
    ("gpu_hours", " GPU-h"), ("_days", " days"), ("_min", " min"), ("_s", " s"), ("_gib", " GiB"), ("_gb", " GB"),
    ("_tflops", " TFLOP/s"), ("_w_per_gpu", " W"), ("n_gpus", " GPUs"), ("joules_per_token", " J"),
)  # fmt: skip
"""The unit a number format shows after the number, by the column key's ending (the first that matches; a rate
per million GPU-hours says so in its heading)."""


def _letter(index: int) -> str:
    from xlsxwriter.utility import xl_col_to_name

    return str(xl_col_to_name(index - 1))


class _Grid:
    """Where every (line, column key) lives: sheet, column letter and row number."""

    def __init__(self, columns: Sequence[Column], lines: list[Line], defaults: dict[str, int]) -> None:
        self.position: dict[str, tuple[str, str]] = {}
        per_sheet = {sheet: 1 for sheet in SHEETS}  # column A holds the result's label
        for column in columns:
            if column.key == "label":
                self.position[column.key] = (SHEETS["results"], "A")
                continue
            per_sheet[column.sheet] += 1
            self.position[column.key] = (SHEETS[column.sheet], _letter(per_sheet[column.sheet]))
        self.lines = lines
        self.defaults = defaults  # shared-default key -> row of its cell on the Inputs sheet
        self.bases = scaling_bases(lines)  # per line, the line its scaling efficiency is relative to
        self.firsts = firsts(lines)  # per line, the line its ratios are to
        self.phases = {index for line in lines if isinstance(line, TotalRow) for index in line.phases}

    def cell(self, key: str, index: int, from_sheet: str, absolute: bool = False) -> str:
        sheet, letter = self.position[key]
        row = HEADER_ROW + 2 + index
        ref = f"${letter}${row}" if absolute else f"{letter}{row}"
        return ref if sheet == from_sheet else f"{sheet}!{ref}"

    def cells(self, index: int, from_sheet: str) -> dict[str, str]:
        """Each symbol's cell for row `index`: its own row, `first.KEY` the first result's, `base.KEY` the row its
        scaling efficiency is relative to."""
        found = {}
        for key in self.position:
            found[key] = self.cell(key, index, from_sheet)
            found[f"first.{key}"] = self.cell(key, self.firsts[index], from_sheet, absolute=True)
            found[f"base.{key}"] = self.cell(key, self.bases[index], from_sheet, absolute=True)
        return found

    def default_cell(self, key: str) -> str:
        return f"$B${self.defaults[key]}"

    def span(self, key: str, phases: range, from_sheet: str) -> str:
        """The cells of column `key` of a campaign's phases (the lines `phases`, above its total row)."""
        sheet, letter = self.position[key]
        cells = f"${letter}${HEADER_ROW + 2 + phases.start}:${letter}${HEADER_ROW + 1 + phases.stop}"
        return cells if sheet == from_sheet else f"{sheet}!{cells}"

    def look(self, index: int) -> dict[str, Any]:
        """How line `index` stands out: a campaign's total row in bold."""
        return {"bold": True} if isinstance(self.lines[index], TotalRow) else {}

    def results(self) -> list[range]:
        """The runs of consecutive result lines (every line but a campaign's total row), as ranges of lines."""
        runs: list[range] = []
        for index, line in enumerate(self.lines):
            if isinstance(line, TotalRow):
                continue
            if runs and runs[-1].stop == index:
                runs[-1] = range(runs[-1].start, index + 1)
            else:
                runs.append(range(index, index + 1))
        return runs


def _symbols(columns: Sequence[Column]) -> dict[str, Any]:
    import sympy

    return {
        name: sympy.Symbol(name, positive=True) for c in columns for name in (c.key, f"first.{c.key}", f"base.{c.key}")
    }


def _formula(column: Column, symbols: dict[str, Any], grid: _Grid, index: int) -> str:
    """The column's live formula for one row, blank when an input it needs (tokens, price) is missing."""
    assert column.formula is not None
    expr = column.formula(symbols)
    cells = grid.cells(index, SHEETS[column.sheet])
    text = excel_formula(expr, cells)[1:]
    optional = sorted(
        s.name for s in expr.free_symbols if s.name.removeprefix("first.").removeprefix("base.") in OPTIONAL_INPUTS
    )
    if optional:
        checks = ",".join(f"N({cells[key]})>0" for key in optional)
        text = f'IF(AND({checks}),{text},"")'
    return "=" + text


class _Styles:
    """XlsxWriter formats, one per combination of number format and look, made once each."""

    def __init__(self, wb: Any) -> None:
        self._wb = wb
        self._made: dict[tuple[Any, ...], Any] = {}

    def __call__(self, number_format: str = "General", **look: Any) -> Any:
        key = (number_format, *sorted(look.items()))
        if key not in self._made:
            self._made[key] = self._wb.add_format({"num_format": number_format, **look})
        return self._made[key]


def with_unit(column: Column) -> str:
    """The column's number format with its unit after the number (`0.000" s"`), so that a cell reads whole."""
    fmt, key = column.number_format, column.key.removesuffix("_low").removesuffix("_high")
    if key.endswith("per_gpu_hour"):
        return f'"$"{fmt}"/GPU-h"'
    if key == "usd_per_kwh":
        return f'"$"{fmt}"/kWh"'
    if fmt == "General" or "%" in fmt or "$" in fmt or '"' in fmt:
        return fmt
    unit = next((unit for ending, unit in UNITS if key.endswith(ending)), "")
    return f'{fmt}"{unit}"' if unit else fmt


def _put(ws: Any, ref: str, value: Any, style: Any) -> None:
    """A value, never a formula: text is written as a string even when it begins with '=' (cells.py)."""
    if value is None:
        ws.write_blank(ref, None, style)
    elif isinstance(value, bool):
        ws.write_boolean(ref, value, style)
    elif isinstance(value, int | float):
        ws.write_number(ref, value, style)
    else:
        ws.write_string(ref, str(value), style)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _cached(value: Any) -> Any:
    """A formula's stored result: perfmodel's number, or the empty text its IF gives without an input."""
    return "" if value is None else value


def _width(column: Column, values: Sequence[Any]) -> float:
    """Wide enough for the heading (wrapped on up to three lines) and every number as formatted, never `###`."""
    longest = max((len(f"{v:,.2f}") for v in values if isinstance(v, int | float) and not isinstance(v, bool)),
                  default=0)  # fmt: skip
    unit = len(with_unit(column)) - len(column.number_format)
    return max(11.0, min(28.0, len(column.header) * 0.4 + 2), longest + unit + 2)


def _validation(column: Column) -> dict[str, Any]:
    """What an input cell accepts: positive numbers (zero where zero means 'none'), whole GPU counts, shares."""
    rule: dict[str, Any] = {"validate": "decimal", "criteria": ">", "value": 0}
    if column.key == "n_gpus":
        rule = {"validate": "integer", "criteria": ">=", "value": 1}
    elif column.key == "utilisation":
        rule = {"validate": "decimal", "criteria": "between", "minimum": 0.01, "maximum": 1}
    elif column.key in AT_LEAST_ZERO:
        rule["criteria"] = ">="
    message = {">": "a positive number", ">=": f"a number of at least {rule.get('value')}", "between": "0 to 1"}
    return rule | {"error_title": column.header[:32], "error_message": f"Enter {message[rule['criteria']]}."}


def _page(ws: Any, one_page: bool = False) -> None:
    """Landscape A4, one page wide (and tall, for the Summary), the headings repeated on each page."""
    ws.set_landscape()
    ws.set_paper(9)
    ws.fit_to_pages(1, 1 if one_page else 0)
    ws.repeat_rows(HEADER_ROW - 1, HEADER_ROW)


def _total_formula(column: Column, symbols: dict[str, Any], grid: _Grid, index: int, numeric: bool) -> str | None:
    """A campaign's total of a column (its total row is line `index`) as a live formula: a quantity of the whole
    campaign (`Column.total`, compare's ratios) on the total row's own cells; else over its phases' cells, by the
    campaign's rule (planning/campaign.py, total_rule): a sum, a weighted mean, the largest, all true, or the value
    every phase has (`numeric` ones: empty where they differ, so that an edited price shows); empty when a cell it
    needs is (a cost without a price). None: no formula (a text the phases share, or none where they differ)."""
    here = SHEETS[column.sheet]
    if column.total is not None:
        expr = column.total(symbols)
        own = grid.cells(index, here)
        checks = ",".join(f"N({own[name]})>0" for name in sorted(s.name for s in expr.free_symbols))
        return f'=IF(AND({checks}),{excel_formula(expr, own)[1:]},"")'
    line = grid.lines[index]
    assert isinstance(line, TotalRow)
    rule, weight = total_rule(column.key)
    cells, n = grid.span(column.key, line.phases, here), len(line.phases)
    complete = f"COUNT({cells})={n}"
    if rule == "sum" and incurred(column.key):  # a phase's empty loss cell: a loss it does not incur
        return f"=SUM({cells})"
    if rule == "sum":
        return f'=IF({complete},SUM({cells}),"")'
    if rule == "max":
        return f'=IF({complete},MAX({cells}),"")'
    if rule == "all":
        return f"=AND({cells})"
    if rule == "mean" and weight in grid.position:
        weights = grid.span(weight, line.phases, here)
        return f'=IF(AND({complete},COUNT({weights})={n}),SUMPRODUCT({cells},{weights})/SUM({weights}),"")'
    if rule == "same" and numeric:
        return f'=IF(AND({complete},MIN({cells})=MAX({cells})),MIN({cells}),"")'
    return None


def write_xlsx(
    handle: BinaryIO, lines: list[Line], table: list[dict[str, Any]], found: list[Assumption], title: str,
    citations: list[Citation] | None = None,
) -> None:  # fmt: skip
    """The workbook of `lines` (their values: `table`, the export's records); a campaign's total row's cells are
    formulas over its phases' cells (`_total_formula`)."""
    import xlsxwriter

    columns = all_columns(lines)
    symbols = _symbols(columns)
    buffer = io.BytesIO()
    options = {"in_memory": True, "strings_to_formulas": False, "strings_to_numbers": False, "strings_to_urls": False}
    wb = xlsxwriter.Workbook(buffer, options)
    wb.set_properties({"title": title, "created": timestamp()})
    style = _Styles(wb)
    heading = style(bold=True, text_wrap=True, valign="top")
    key_style, big = style(italic=True, font_color="#808080"), style(bold=True, font_size=13)
    summary = wb.add_worksheet("Summary")
    sheets = {name: wb.add_worksheet(name) for name in SHEETS.values()}
    inputs = sheets["Inputs"]

    # Inputs: the shared defaults under the rows, one per result above.
    inputs.write_string("A1", f"Inputs: {title}", big)
    inputs.write_string("A2", "Edit the yellow cells; every other sheet recomputes. " + GPU_COUNT_NOTE)
    shared = [c for c in columns if c.shared_default]
    first = next(values for line, values in zip(lines, table, strict=True) if isinstance(line, ExportRow))
    first_values = {c.key: first[c.key] for c in shared}
    defaults = {c.key: HEADER_ROW + 2 + len(lines) + 2 + offset for offset, c in enumerate(shared)}
    grid = _Grid(columns, lines, defaults)
    note = "Defaults: each result's cell above links here unless it differs"
    inputs.write_string(HEADER_ROW + 2 + len(lines), 0, note, style(bold=True))
    for column in shared:
        r = defaults[column.key]
        inputs.write_string(f"A{r}", column.header)
        _put(inputs, f"B{r}", first_values[column.key], style(with_unit(column), bg_color=EDITABLE_FILL))
        inputs.data_validation(f"B{r}", _validation(column))
        inputs.write_string(f"C{r}", column.key, key_style)

    values: dict[str, list[Any]] = {c.key: [found_in[c.key] for found_in in table] for c in columns}
    phases = grid.phases
    for sheet_key, sheet_name in SHEETS.items():
        ws = sheets[sheet_name]
        here = [c for c in columns if c.key == "label" or c.sheet == sheet_key]
        if sheet_key != "inputs":
            ws.write_string("A1", f"{sheet_name}: {title}", big)
        if sheet_key == "results":
            ws.write_string(
                "A2", "Values in grey italics are the model's per-step results; the rest are live formulas."
            )
        if sheet_key == "details":
            ws.write_string("A2", "The rest of perfmodel's record of each result, as exported: values, not recomputed.")
        for column in here:
            _, letter = grid.position[column.key]
            ws.write_string(f"{letter}{HEADER_ROW}", column.header, heading)
            ws.write_string(f"{letter}{HEADER_ROW + 1}", column.key, key_style)
            ws.set_column(f"{letter}:{letter}", _width(column, values[column.key]))
            looks: dict[str, Any] = {"bg_color": EDITABLE_FILL} if column.editable else {}
            if column.formula is None and not column.editable and column.key != "label":
                looks |= {"italic": True, "font_color": "#808080"}
            cell_style = style(with_unit(column), **looks)
            numeric = all(_is_number(values[column.key][index]) for index in phases)
            for index, (line, value) in enumerate(zip(lines, values[column.key], strict=True)):
                ref = f"{letter}{HEADER_ROW + 2 + index}"
                if isinstance(line, TotalRow):
                    blank = column.blank_when_none and value is None
                    formula = None if blank else _total_formula(column, symbols, grid, index, numeric)
                    if formula is None:
                        _put(ws, ref, value, style(with_unit(column), bold=True))
                    else:
                        ws.write_formula(ref, formula, style(with_unit(column), bold=True), _cached(value))
                elif column.total is not None and index in phases:  # a campaign's quantity: on its total row
                    _put(ws, ref, None, cell_style)
                elif column.formula is not None and not (column.blank_when_none and value is None):
                    ws.write_formula(ref, _formula(column, symbols, grid, index), cell_style, _cached(value))
                elif column.shared_default and value == first_values[column.key]:
                    ws.write_formula(ref, "=" + grid.default_cell(column.key), cell_style, _cached(value))
                else:
                    _put(ws, ref, value, cell_style)
            if column.editable:
                for run in grid.results():
                    span = f"{letter}{HEADER_ROW + 2 + run.start}:{letter}{HEADER_ROW + 1 + run.stop}"
                    ws.data_validation(span, _validation(column))
        ws.set_column("A:A", 34)
        ws.freeze_panes(HEADER_ROW + 1, 1)
        if sheet_key != "results":  # the label comes from the Results sheet
            _write_labels(ws, grid, values["label"], style)
        ws.set_row(HEADER_ROW - 1, 45)
        _page(ws)

    _write_shares(sheets["Breakdown"], grid, values, style)
    _write_summary(summary, columns, grid, values, title, style)
    _write_assumptions(wb.add_worksheet("Assumptions"), found, title, style)
    _write_sources(wb.add_worksheet("Sources"), citations or [], style)
    wb.close()
    handle.write(_restamped(buffer.getvalue()))


DEFAULT_TIMESTAMP = datetime.datetime(2000, 1, 1)
"""The workbook's created/modified time and its zip members' times when SOURCE_DATE_EPOCH is not set: the same
input gives the same bytes (reproducible-builds.org's SOURCE_DATE_EPOCH sets another fixed time)."""


def timestamp() -> datetime.datetime:
    """SOURCE_DATE_EPOCH (inputs/environment.py) when set, else DEFAULT_TIMESTAMP; never before 1980, the first
    time a zip member can carry."""
    stamp = source_date()
    if stamp is None:
        return DEFAULT_TIMESTAMP
    return max(stamp.replace(tzinfo=None), datetime.datetime(1980, 1, 1))


def _restamped(book: bytes) -> bytes:
    """The workbook with its zip members dated `timestamp()` too (XlsxWriter dates them 1980-01-01), so that one
    time, fixed or SOURCE_DATE_EPOCH's, is the file's only date."""
    stamp = timestamp().timetuple()[:6]
    fixed = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(book)) as source, zipfile.ZipFile(fixed, "w") as target:
        for member in source.infolist():
            info = zipfile.ZipInfo(member.filename, date_time=stamp)
            info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, member.external_attr
            target.writestr(info, source.read(member))
    return fixed.getvalue()


def _write_shares(ws: Any, grid: _Grid, values: dict[str, list[Any]], style: _Styles) -> None:
    """Each part's share of the step time, right of the parts: formulas, so they follow edited parts too."""
    parts = [key for key, (sheet, _) in grid.position.items() if sheet == "Breakdown" and key.startswith("breakdown.")]
    start = 1 + sum(1 for sheet, _ in grid.position.values() if sheet == "Breakdown") + 2
    for offset, key in enumerate(parts):
        letter = _letter(start + offset)
        name = "Share: " + key.removeprefix("breakdown.").removesuffix("_s").replace("_", " ")
        ws.write_string(f"{letter}{HEADER_ROW}", name, style(bold=True, text_wrap=True, valign="top"))
        ws.set_column(f"{letter}:{letter}", 12)
        for index in (index for run in grid.results() for index in run):
            part, step = values[key][index], values["step_time_s"][index]
            formula = f"={grid.cell(key, index, 'Breakdown')}/{grid.cell('step_time_s', index, 'Breakdown')}"
            ws.write_formula(f"{letter}{HEADER_ROW + 2 + index}", formula, style("0.0%"), part / step)


def _write_labels(ws: Any, grid: _Grid, labels: list[str], style: _Styles) -> None:
    """Column A of a sheet other than Results: each line's label, linked to the Results sheet's."""
    for index, label in enumerate(labels):
        look = grid.look(index)
        ref = f"A{HEADER_ROW + 2 + index}"
        ws.write_formula(ref, f"=Results!A{HEADER_ROW + 2 + index}", style(**look) if look else None, label)


def _write_summary(ws: Any, columns: Sequence[Column], grid: _Grid, values: dict[str, list[Any]], title: str,
                   style: _Styles) -> None:  # fmt: skip
    """The figures to compare, each a link to its cell (so it follows every edit), on one landscape page; a
    campaign's total row under its phases'."""
    by_key = {c.key: c for c in columns}
    shown = [by_key[key] for key in SUMMARY if key in by_key]
    ws.write_string("A1", f"Summary: {title}", style(bold=True, font_size=13))
    ws.write_string("A2", "Links to the Results and Inputs sheets: edit the yellow cells there, these follow.")
    ws.write_string(f"A{HEADER_ROW}", "Result", style(bold=True, text_wrap=True, valign="top"))
    ws.set_column("A:A", 40)
    for offset, column in enumerate(shown, start=2):
        letter = _letter(offset)
        ws.write_string(f"{letter}{HEADER_ROW}", column.header, style(bold=True, text_wrap=True, valign="top"))
        ws.write_string(f"{letter}{HEADER_ROW + 1}", column.key, style(italic=True, font_color="#808080"))
        ws.set_column(f"{letter}:{letter}", min(16.0, _width(column, values[column.key])))
        for index, value in enumerate(values[column.key]):
            ref = grid.cell(column.key, index, "Summary")
            if column.total is not None and index in grid.phases:  # a campaign's quantity: on its total row only
                continue
            if column.formula is None:  # a link to an empty cell reads 0: say what is missing instead
                missing = "no price" if column.key == "usd_per_gpu_hour" else ""
                link, cached = f'=IF(ISBLANK({ref}),"{missing}",{ref})', missing if value is None else value
            else:
                link, cached = "=" + ref, _cached(value)
            ws.write_formula(
                f"{letter}{HEADER_ROW + 2 + index}", link, style(with_unit(column), **grid.look(index)), cached
            )
    _write_labels(ws, grid, values["label"], style)
    ws.set_row(HEADER_ROW - 1, 60)
    ws.freeze_panes(HEADER_ROW + 1, 1)
    _page(ws, one_page=True)


def _write_assumptions(ws: Any, found: list[Assumption], title: str, style: _Styles) -> None:
    ws.write_string("A1", f"Assumptions: {title}", style(bold=True, font_size=13))
    ws.write_string("A2", "Every figure the results rest on, with its source; keys such as S1: the Sources sheet.")
    for col, (head, width) in enumerate((("Section", 28), ("Name", 32), ("Value", 16), ("Unit", 18), ("Source", 100))):
        ws.write_string(HEADER_ROW - 1, col, head, style(bold=True))
        ws.set_column(col, col, width)
    for index, a in enumerate(found):
        for col, value in enumerate((a.section, a.name, a.value, a.unit, a.source)):
            _put(ws, f"{_letter(col + 1)}{HEADER_ROW + 1 + index}", value, None)
    ws.freeze_panes(HEADER_ROW, 0)
    _page(ws)


def _write_sources(ws: Any, citations: list[Citation], style: _Styles) -> None:
    """The public documents behind the keys the Assumptions cite."""
    ws.write_string("A1", "Sources: the public documents the Assumptions cite", style(bold=True, font_size=13))
    for col, (head, width) in enumerate((("Key", 8), ("Document", 150))):
        ws.write_string(HEADER_ROW - 1, col, head, style(bold=True))
        ws.set_column(col, col, width)
    for index, citation in enumerate(citations):
        ws.write_string(HEADER_ROW + index, 0, citation.key)
        ws.write_string(HEADER_ROW + index, 1, citation.document)
    _page(ws)
