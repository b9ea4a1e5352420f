"""The planner's workbook: a Summary one page wide, Inputs to edit, Results and Breakdown as live formulas, Details,
Assumptions and the Sources they cite.

Sheets:
- Summary: the figures a procurement reader compares, one row per result, linked to Results, and what they rest on
  (batch, goal, price bases); one landscape page wide. How every sheet prints: printing.py.
- Inputs: per result, the GPU count, price per GPU-hour (with its low-high range), tokens to train, PUE and
  electricity price, the goodput model's and the losses' inputs; tokens, PUE, electricity and the losses' inputs
  also have one default cell that every row links to. Every input cell refuses a number out of range (data
  validation).
- Results: the model's per-step results as values, everything derived from them and from the inputs as formulas.
- Breakdown: where the step time goes (the parts the step time is the sum of) and, under them, their shares;
  one page wide.
- Details: the rest of each prediction's record (outputs/record.py), values under their schema names: a row per
  value (its heading in column A, its key in a hidden column), a column per result.
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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from xlsxwriter.utility import xl_cell_to_rowcol, xl_col_to_name
from xlsxwriter.workbook import Workbook
from xlsxwriter.worksheet import Worksheet

from perfmodel.inputs.environment import source_date
from perfmodel.outputs.export import printing
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
SHARES_BELOW = 2
"""Rows between the Breakdown's parts and their shares' first row, less the parts' own: a blank row and the shares'
heading."""
DETAIL_HEADING_CHARS = 60.0
"""The Details' heading column: a 190-character heading on 3-4 lines."""
DETAILS_FIRST = 2
"""The Details sheet's first result column (B): it has a row per key, its heading in A, so that a
prediction's 50-odd details print on 2 pages, not 9 pages across (their 190-character headings and the nearest
measured run's 215-character text wrapped in 28-character columns, 105-120-point rows)."""
HEADING: dict[str, Any] = {"bold": True, "text_wrap": True, "valign": "top"}
"""A heading's look on every sheet (a column's alignment added: `_alignment`)."""
PAGE_SLACK = 0.93
"""Share of a printed page the Assumptions' page breaks fill, and a section's heading with the rows kept with it
(`_keep_with_next`): row heights and the fitted scale are estimates, and a page that held less than counted would
break early, its first rows without their section's name, or the heading alone at its foot. Elsewhere
`_keep_with_next` fills the page: at 93%, a 10-system comparison's Inputs broke at row 15 where LibreOffice fitted
17 (about 95% counted), two of its 6 pages holding a row each (now 4 pages)."""
EDITABLE_FILL = "#FFF2CC"
GPU_COUNT_NOTE = (
    "Editing a GPU count keeps that result's modelled throughput per GPU (more or fewer data-parallel replicas at the "
    "same speed): time-to-train scales inversely, GPU-hours, cost and energy stay. perfmodel itself would re-price "
    "the layout at the new size; for that, export again with --gpus."
)
NOTES = {
    "inputs": "Edit the yellow cells; every other sheet recomputes. " + GPU_COUNT_NOTE,
    "results": "Values in grey italics are the model's per-step results; the rest are live formulas.",
    "breakdown": "The parts the step time is the sum of, in seconds; under them, from 'Share of the step time', "
    "each part's share of it.",
    "details": "The rest of perfmodel's record of each result, as exported: values, not recomputed.",
}
"""The line under a data sheet's title that says what its cells are."""
LONG_TEXT = 80
"""Characters: a text column with a longer text is twice WIDEST_TEXT wide (`_width`)."""
SUMMARY = (
    "n_gpus", "usd_per_gpu_hour", "tokens_to_train", "step_time_s", "tokens_per_s_per_gpu",
    "mfu_of_precision", "fits_in_memory", "time_to_train_days", "time_to_train_with_losses_days", "cost_usd",
    "cost_usd_with_losses", "usd_per_million_tokens", "kwh_per_million_tokens", "speedup_vs_first",
    "perf_per_usd_vs_first", "energy_per_token_vs_first",
)  # fmt: skip
"""The Summary's columns, those of them the export has: what a procurement reader compares, one page wide at
legible type (printing.py), so plain numbers with their units in the headings. The precision and batch are in each
label (the batch under the table too); the time and cost with failures only, and tokens per USD (a million over
the cost per million tokens), are on Results."""
AT_LEAST_ZERO = ("failures_per_million_gpu_hours", "planned_per_million_gpu_hours", "restart_s",
                 "facility_usd_per_kw_month", "straggler_share", "startup_s")  # fmt: skip
"""Inputs that may be zero; every other input must be positive (utilisation at most 1, GPU counts whole)."""
UNITS = (
    ("gco2_per_kwh", " gCO2e/kWh"), ("gco2e_per_gpu_hour", " gCO2e/GPU-h"), ("co2e_t", " tCO2e"),
    ("co2e_embodied_t", " tCO2e"), ("power_mw", " MW"),
    ("per_million_gpu_hours", ""), ("tokens_per_s_per_gpu", " tok/s"), ("tokens_per_s", " tok/s"),
    ("tokens_to_train", " tokens"), ("_kwh", " kWh"),
    ("gpu_hours", " GPU-h"), ("_days", " days"), ("_min", " min"), ("_s", " s"), ("_gib", " GiB"), ("_gb", " GB"),
    ("_tflops", " TFLOP/s"), ("_w_per_gpu", " W"), ("n_gpus", " GPUs"), ("joules_per_token", " J"),
)  # fmt: skip
"""The unit a number format shows after the number, by the column key's ending (the first that matches; a rate
per million GPU-hours says so in its heading)."""


def _letter(index: int) -> str:
    return str(xl_col_to_name(index - 1))


def _index(letter: str) -> int:
    """The column number (A: 1) of a letter."""
    return int(xl_cell_to_rowcol(f"{letter}1")[1]) + 1


class _Sheet(Worksheet):
    """A worksheet that keeps what its page breaks are computed from (`_keep_with_next`): each row's height as
    written, in points (XlsxWriter keeps pixels, privately), and the section under its table as its writer lays it
    out: the row of its heading, the rows kept with it and its last row. The writer knows each table's length, so
    the sheet follows no cell written (XlsxWriter's extent is private; following it took a near-copy of each
    write_*)."""

    def __init__(self) -> None:
        super().__init__()
        self.heights_pt: dict[int, float] = {}
        self.section: int | None = None  # 0-based
        self.kept = 0  # rows under the section's heading that print on its page with it (the Summary's basis)
        self.last = -1  # 0-based: the section's last row; none yet

    def set_row(self, row: int, height: float | None = None, cell_format: Any = None,
                options: dict[str, Any] | None = None) -> int:  # fmt: skip
        hidden = bool((options or {}).get("hidden"))
        self.heights_pt[row] = 0.0 if hidden else printing.LINE_PT if height is None else height
        return int(super().set_row(row, height, cell_format, options))

    def fitted(self, row: int, height_pt: float) -> None:
        """Row `row`, its height left for LibreOffice and Excel to fit to its type, prints `height_pt` tall."""
        self.heights_pt[row] = height_pt

    def rows_pt(self) -> list[float]:
        """Every row's height in points down to the section's last row, or to a row under it given a height (the
        Breakdown's shares keep a campaign's total row's place, empty, as tall as its label), LINE_PT where none was
        set."""
        return [self.heights_pt.get(row, printing.LINE_PT) for row in range(max([self.last, *self.heights_pt]) + 1)]


class _Grid:
    """Where every (line, column key) lives: sheet, column letter and row number."""

    def __init__(self, columns: Sequence[Column], lines: list[Line], defaults: dict[str, int]) -> None:
        self.position: dict[str, tuple[str, str]] = {}
        self.rows: dict[str, int] = {}  # a Details key -> its row: that sheet has a row per key, a column per line
        per_sheet = {sheet: 1 for sheet in SHEETS}  # column A holds the result's label
        for column in columns:
            if column.key == "label":
                self.position[column.key] = (SHEETS["results"], "A")
                continue
            per_sheet[column.sheet] += 1
            self.position[column.key] = (SHEETS[column.sheet], _letter(per_sheet[column.sheet]))
            if column.sheet == "details":
                self.rows[column.key] = HEADER_ROW + per_sheet[column.sheet]
        self.lines = lines
        self.defaults = defaults  # shared-default key -> row of its cell on the Inputs sheet
        self.bases = scaling_bases(lines)  # per line, the line its scaling efficiency is relative to
        self.firsts = firsts(lines)  # per line, the line its ratios are to
        self.phases = {index for line in lines if isinstance(line, TotalRow) for index in line.phases}

    def cell(self, key: str, index: int, from_sheet: str, absolute: bool = False) -> str:
        sheet, letter = self.position[key]
        row = HEADER_ROW + 2 + index
        if key in self.rows:  # Details: line `index` in its own column, right of the headings and keys
            letter, row = _letter(DETAILS_FIRST + index), self.rows[key]
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
        sheet = self.position[key][0]
        first, last = (self.cell(key, index, sheet, absolute=True) for index in (phases.start, phases.stop - 1))
        return f"{first}:{last}" if sheet == from_sheet else f"{sheet}!{first}:{last}"

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
    key = key.removesuffix("_p10").removesuffix("_p50").removesuffix("_p90")
    if key.startswith("memory_gb."):  # a part of the memory (memory_gb.weights): its unit is the group's
        key = "memory_gb"
    if key.endswith("usd_per_gpu_hour"):
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


def _alignment(values: Sequence[Any]) -> dict[str, Any]:
    """A column of numbers and its heading right-aligned: a heading left-aligned over a narrow column's right-aligned
    numbers had each number under the next column's heading (Results read 'TP' empty and 'PP 4' for TP4 PP32). A
    column of Yes/No centred, with its heading: left-aligned, it ran into the right-aligned column before it (the
    Summary's 'MFU (of Fits in its memory' and '41.0% Yes')."""
    shown = [v for v in values if v is not None]
    if shown and all(isinstance(v, bool) for v in shown):
        return {"align": "center"}
    return {"align": "right"} if shown and all(_is_number(v) for v in shown) else {}


def _cached(value: Any) -> Any:
    """A formula's stored result: perfmodel's number, or the empty text its IF gives without an input."""
    return "" if value is None else value


def _number_format(column: Column, values: Sequence[Any], unit: bool = True) -> str:
    """The column's number format, with its unit unless `unit` is false; Yes/No for a column of true/false values;
    without the unit, tokens to train and costs in thousands, millions, ... (15.0T, $69.4M)."""
    flags = [v for v in values if v is not None]
    if flags and all(isinstance(v, bool) for v in flags):
        return printing.YES_NO
    if unit:
        return with_unit(column)
    if column.key == "tokens_to_train":
        return printing.compact()
    return printing.compact('"$"', smallest=0) if column.number_format == "$#,##0" else column.number_format


def _shown(values: Sequence[Any], number_format: str) -> list[str]:
    """The texts the cells of `values` show under `number_format`: formatted once, for the column's width and its
    rows' lines alike."""
    return [printing.shown(v, number_format) for v in values]


def _width(column: Column, texts: Sequence[str]) -> float:
    """Wide enough for the heading's longest word and every text its cells show (`_shown`), never `###`; a long
    text (LONG_TEXT) twice WIDEST_TEXT: the price source, ~130 characters, wrapped on 5 lines in 28 made each of a
    campaign's 11 phases 75 points tall on Inputs (6 pages; now 3 lines)."""
    chars = printing.width(column.header, texts)
    long = column.key != "label" and any(len(text) > LONG_TEXT for text in texts)  # a label heads every page
    return max(chars, 2.0 * printing.WIDEST_TEXT) if long else chars


def _label_column(labels: Sequence[str], bold: Sequence[bool]) -> tuple[float, list[int]]:
    """Column A of every sheet with a row per result (Summary, Inputs, Results, Breakdown): its width in characters
    and the lines each label (`bold`: a total row's, `_bold`) wraps onto there, counted once for all of them."""
    chars = printing.width("Result", labels)
    return chars, _lines(labels, chars, bold)


def _wraps(values: Sequence[Any]) -> dict[str, Any]:
    """A text column's look: wrapped when some text is longer than the column may be wide."""
    return {"text_wrap": True} if any(len(str(v)) > printing.WIDEST_TEXT for v in values) else {}


def _ordered(widths: dict[str, float]) -> list[float]:
    """A sheet's column widths by letter as a list from column A (a column not set: Excel's default width)."""
    return [widths.get(_letter(i), 8.43) for i in range(1, 1 + max(map(_index, widths)))]


def _first_page(widths: Sequence[float]) -> Sequence[float]:
    """The widths of the columns the sheet's first printed page holds, from column A (`widths`: all of them)."""
    return widths[: printing.on_first_page(widths)]


def _note(ws: Any, row: int, text: str, page: Sequence[float], look: Any, first: int = 0,
          size_pt: float = printing.FONT_PT, bold: bool = False) -> None:  # fmt: skip
    """A sentence across the columns of the sheet's first printed page (`page`: `_first_page`) from column `first`
    (row `row`, 0-based), wrapped to fit (its type `size_pt`, `bold`, as `look`'s), its row as tall as that."""
    last = max(len(page) - 1, first)
    if last > first:
        ws.merge_range(row, first, row, last, text, look)
    else:  # one column: XlsxWriter merges no single cell
        ws.write_string(row, first, text, look)
    ws.set_row(row, printing.height_pt(printing.lines(text, sum(page[first : last + 1]), bold, size_pt), size_pt))


TITLE_PT = 13.0
"""A sheet's title's type size."""


def _title(ws: Any, sheet: str, title: str, widths: Sequence[float], style: _Styles, note: str = "") -> None:
    """A data sheet's name alone in column A, which every printed page repeats, its title and `note` from column B
    across the columns of its first printed page (`widths`, from A), wrapped there: the whole title in A1 was cut at
    column A's edge on every page after the first ('Breakdown: DeepSeek-V3 6'), and each page's header carries the
    title whole (printing.set_up). Written in B alone, a note ran on past the sheet's last column (a prediction's
    Details, one result wide) and LibreOffice 7.4 fitted the sheet to a width that took the note in, then printed
    an empty page after it (the default export's 20th of 28)."""
    big: dict[str, Any] = {"bold": True, "font_size": TITLE_PT}
    page = _first_page(widths)
    ws.write_string("A1", sheet, style(**big))
    _note(ws, 0, title, page, style(**big, text_wrap=True, valign="top"), 1, TITLE_PT, bold=True)
    if note:
        _note(ws, 1, note, page, style(text_wrap=True, valign="top"), first=1)


def _keep_with_next(ws: _Sheet, widths: Sequence[float], repeated: int) -> None:
    """A sheet with a section under its table (`_Sheet.section`) breaks its pages where its rows' heights (as
    written) fill a page at the sheet's scale, each page after the first beginning with the rows repeated atop it
    (from `repeated`, 0-based, to the keys'), and never right after the section's heading or within the rows kept
    with it (`_Sheet.kept`): those begin the next page unless they fit in PAGE_SLACK of theirs. Nor does a page
    hold the first or last row of the table or the section alone (a 10-system comparison's Breakdown printed its
    last part's row atop the shares' page). Left to LibreOffice,
    a 60-point sweep's 'Share of the step time' printed at the foot of a page, its shares overleaf; a break before
    the heading only where it missed the first page kept it off that page's foot alone."""
    if ws.section is None:
        return
    heights_pt = ws.rows_pt()
    atop_pt = sum(heights_pt[repeated : HEADER_ROW + 1])
    opening_pt = [atop_pt + height for height in heights_pt]
    last = len(heights_pt) - 1
    # the heading, the rows kept with it and its first row; the table's (its last row 2 above the heading, under
    # it a blank row) and the section's last row but one: a row never prints alone on a page of its own part
    headings = set(range(ws.section, ws.section + ws.kept + 2)) - {last}
    keep = headings | ({ws.section - 3, last - 1} - {*range(HEADER_ROW + 1), last})
    page_pt = _page_room_pt(widths) / PAGE_SLACK
    breaks = printing.page_starts(heights_pt, opening_pt, page_pt, 0.0, keep, _page_room_pt(widths), headings)
    ws.set_h_pagebreaks(breaks)


def _page_room_pt(widths: Sequence[float]) -> float:
    """PAGE_SLACK of the rows' height a printed page takes at the sheet's scale (`widths`, from column A): one
    page wide, else SMALLEST_SCALE across pages (printing.set_up). The Assumptions' columns, at most 158 characters,
    always fit one page at 69%."""
    return PAGE_SLACK * 100 * printing.PRINTABLE_HEIGHT_PT / max(printing.scale(widths), printing.SMALLEST_SCALE)


def _lines(texts: Sequence[Any], chars: float, bold: Sequence[bool]) -> list[int]:
    """Lines each text wraps onto in a column `chars` wide, in bold where `bold` says (`_bold`)."""
    return [printing.lines(str(text), chars, heavy) for text, heavy in zip(texts, bold, strict=True)]


def _bold(lines: Sequence[Line]) -> list[bool]:
    """Which lines print in bold (`_Grid.look`): a campaign's total row, whose wrapped text takes more lines than its
    phases' (the 405B campaign's price source: 3 lines on Inputs in a row counted 2 tall, cut off in print)."""
    return [isinstance(line, TotalRow) for line in lines]


def _heights(ws: Any, lines: Sequence[int], first: int = HEADER_ROW + 1) -> None:
    """Rows from `first` (0-based; the results' by default) as tall as their most wrapped cell: neither LibreOffice
    nor Excel fits them on opening."""
    for index, count in enumerate(lines):
        if count > 1:
            ws.set_row(first + index, printing.height_pt(count))


def _row_height(cells: Iterable[tuple[str, float]], bold: bool = False) -> float:
    """Points for a row whose cells (text, column width) wrap word by word: a heading row (`bold`), an Assumptions
    row."""
    return printing.height_pt(max(printing.lines(text, chars, bold) for text, chars in cells))


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


@dataclass(frozen=True)
class _Cells:
    """Writes a column's cell for every line, on whichever sheet and in whichever layout the grid puts it (a row per
    line, or Details' column per line): a formula, a link to a shared default, a campaign's total or a value."""

    grid: _Grid
    symbols: dict[str, Any]
    values: dict[str, list[Any]]
    defaults: dict[str, Any]
    style: _Styles

    def write(self, ws: Any, column: Column, fmt: str, align: dict[str, Any], **look: Any) -> None:
        """The column's cells in number format `fmt`, aligned `align`, each with `look` too (Details: at the top)."""
        grid, style, values = self.grid, self.style, self.values[column.key]
        looks: dict[str, Any] = {"bg_color": EDITABLE_FILL} if column.editable else {}
        if column.formula is None and not column.editable and column.key != "label":
            looks |= {"italic": True, "font_color": "#808080"}
        cell_style = style(fmt, **looks, **_wraps(values), **align, **look)
        # a total's cell wraps as its phases' do: unwrapped, the nearest measured run (a long text the phases share)
        # ran on past a campaign's Details' last column, off the page
        total_style = style(fmt, bold=True, **_wraps(values), **align, **look)
        numeric = all(_is_number(values[index]) for index in grid.phases)
        for index, (line, value) in enumerate(zip(grid.lines, values, strict=True)):
            ref = grid.cell(column.key, index, grid.position[column.key][0])  # the label's: column A here too
            if isinstance(line, TotalRow):
                blank = column.blank_when_none and value is None
                own = column.total is None and value is not None and all(values[i] is None for i in line.phases)
                # own: the command's value on the total row alone (a plan's mix), not a total of its phases
                formula = None if blank or own else _total_formula(column, self.symbols, grid, index, numeric)
                if formula is None:
                    _put(ws, ref, value, total_style)
                else:
                    ws.write_formula(ref, formula, total_style, _cached(value))
            elif column.total is not None and index in grid.phases:  # a campaign's quantity: on its total row
                _put(ws, ref, None, cell_style)
            elif column.formula is not None and not (column.blank_when_none and value is None):
                ws.write_formula(ref, _formula(column, self.symbols, grid, index), cell_style, _cached(value))
            elif column.shared_default and value == self.defaults[column.key]:
                ws.write_formula(ref, "=" + grid.default_cell(column.key), cell_style, _cached(value))
            else:
                _put(ws, ref, value, cell_style)


def write_xlsx(
    handle: BinaryIO, lines: list[Line], table: list[dict[str, Any]], found: list[Assumption], title: str,
    citations: list[Citation] | None = None,
) -> None:  # fmt: skip
    """The workbook of `lines` (their values: `table`, the export's records); a campaign's total row's cells are
    formulas over its phases' cells (`_total_formula`)."""
    columns = all_columns(lines)
    symbols = _symbols(columns)
    buffer = io.BytesIO()
    options = {"in_memory": True, "strings_to_formulas": False, "strings_to_numbers": False, "strings_to_urls": False}
    wb = Workbook(buffer, options)
    wb.set_properties({"title": title, "created": timestamp()})
    style = _Styles(wb)
    key_style = style(italic=True, font_color="#808080")
    summary = wb.add_worksheet("Summary", _Sheet)
    sheets = {name: wb.add_worksheet(name, _Sheet) for name in SHEETS.values()}
    inputs = sheets["Inputs"]

    # Inputs: the shared defaults under the rows, one per result above.
    shared = [c for c in columns if c.shared_default]
    bold = _bold(lines)
    label_width, labels_tall = _label_column([line["label"] for line in table], bold)
    first = next(values for line, values in zip(lines, table, strict=True) if isinstance(line, ExportRow))
    first_values = {c.key: first[c.key] for c in shared}
    inputs.section = HEADER_ROW + 2 + len(lines)  # 0-based: the defaults' heading
    defaults = {c.key: inputs.section + 2 + offset for offset, c in enumerate(shared)}  # 1-based: a row per default
    inputs.last = max(defaults.values(), default=inputs.section + 1) - 1  # 0-based: the last default's row
    grid = _Grid(columns, lines, defaults)
    note = "Defaults (rows above link here)"  # wrapped in column A, which every page repeats: short, as a campaign's
    inputs.write_string(inputs.section, 0, note, style(bold=True, text_wrap=True))  # is 13 wide
    inputs.set_row(inputs.section, printing.height_pt(printing.lines(note, label_width, bold=True)))
    for column in shared:
        r = defaults[column.key]
        inputs.write_string(f"A{r}", column.header, style(text_wrap=True))
        inputs.set_row(r - 1, printing.height_pt(printing.lines(column.header, label_width)))
        _put(inputs, f"B{r}", first_values[column.key], style(with_unit(column), bg_color=EDITABLE_FILL))
        inputs.data_validation(f"B{r}", _validation(column))
        inputs.write_string(f"C{r}", column.key, key_style)

    values: dict[str, list[Any]] = {c.key: [found_in[c.key] for found_in in table] for c in columns}
    tables = {key: name for key, name in SHEETS.items() if key != "details"}  # a row per line; `_write_details`
    widths: dict[str, dict[str, float]] = {name: {"A": label_width} for name in tables.values()}
    tall = dict.fromkeys(tables.values(), labels_tall)  # each sheet's list is replaced, never changed in place
    shown_defaults = [(c, [first_values[c.key]]) for c in shared]
    widths["Inputs"]["B"] = max((_width(c, _shown(v, _number_format(c, v))) for c, v in shown_defaults), default=0.0)
    cells = _Cells(grid, symbols, values, first_values, style)
    for sheet_key, sheet_name in tables.items():
        ws = sheets[sheet_name]
        here = [c for c in columns if c.key == "label" or c.sheet == sheet_key]
        for column in here:
            _, letter = grid.position[column.key]
            align = _alignment(values[column.key])
            fmt = _number_format(column, values[column.key])
            ws.write_string(f"{letter}{HEADER_ROW}", column.header, style(**HEADING, **align))
            ws.write_string(f"{letter}{HEADER_ROW + 1}", column.key, key_style)
            texts = _shown(values[column.key], fmt)
            widths[sheet_name][letter] = max(widths[sheet_name].get(letter, 0.0), _width(column, texts))
            if _wraps(values[column.key]):
                wrapped = _lines(texts, widths[sheet_name][letter], bold)
                tall[sheet_name] = [max(pair) for pair in zip(tall[sheet_name], wrapped, strict=True)]
            cells.write(ws, column, fmt, align)
            if column.editable:
                for run in grid.results():
                    span = f"{letter}{HEADER_ROW + 2 + run.start}:{letter}{HEADER_ROW + 1 + run.stop}"
                    ws.data_validation(span, _validation(column))
        if sheet_key != "results":  # the label comes from the Results sheet
            _write_labels(ws, grid, values["label"], style)
        headings = [(c.header, widths[sheet_name][grid.position[c.key][1]]) for c in here]
        ws.set_row(HEADER_ROW - 1, _row_height(headings, bold=True))
    _write_details(sheets["Details"], [c for c in columns if c.key in grid.rows], cells, title)

    _write_shares(sheets["Breakdown"], grid, columns, values, style, widths["Breakdown"], tall["Breakdown"])
    for key, name in tables.items():
        _title(sheets[name], name, title, _ordered(widths[name]), style, NOTES.get(key, ""))
        _heights(sheets[name], tall[name])
        _frame(sheets[name], widths[name], title, 0 if key == "breakdown" else HEADER_ROW - 1)
    _write_summary(summary, columns, grid, values, title, style, (label_width, labels_tall))
    _write_assumptions(wb.add_worksheet("Assumptions"), found, title, style)
    _write_sources(wb.add_worksheet("Sources"), citations or [], title, style)
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


def _write_shares(ws: _Sheet, grid: _Grid, columns: Sequence[Column], values: dict[str, list[Any]], style: _Styles,
                  widths: dict[str, float], tall: list[int]) -> None:  # fmt: skip
    """Each part's share of the step time, in a table under the parts, each in its part's column: formulas, so
    they follow edited parts too; its rows as tall as the labels they repeat (`tall`, lines; the columns `widths`,
    by letter). Each share is headed by its part's own heading ('Share: pipeline bubble'): from the key, 'Share: pp
    bubble' and 'Share: other ep comm exposed' ran together and named no part the sheet names. Right of the parts
    (and the memory per GPU's parts, now on Results), the sheet printed 3 pages across. The shares' heading row is
    the sheet's `section`."""
    headers = {c.key: c.header.split(" (")[0] for c in columns}  # its gloss is on the part's
    parts = [key for key, (sheet, _) in grid.position.items() if sheet == "Breakdown" and key.startswith("breakdown.")]
    below, headings = SHARES_BELOW + len(grid.lines), []
    for key in parts:
        letter = grid.position[key][1]
        name = f"Share: {headers[key][0].lower()}{headers[key][1:]}"
        ws.write_string(f"{letter}{HEADER_ROW + below + 1}", name, style(**HEADING, align="right"))
        headings.append((name, widths[letter]))
        for index in (index for run in grid.results() for index in run):
            part, step = values[key][index], values["step_time_s"][index]
            formula = f"={grid.cell(key, index, 'Breakdown')}/{grid.cell('step_time_s', index, 'Breakdown')}"
            ws.write_formula(f"{letter}{HEADER_ROW + 2 + below + index}", formula, style("0.0%"), part / step)
    ws.section = HEADER_ROW + below
    ws.last = ws.section + grid.results()[-1].stop  # the last result's shares
    ws.set_row(ws.section, _row_height([*headings, ("Share of the step time", widths["A"])], bold=True))
    ws.write_string(f"A{HEADER_ROW + below + 1}", "Share of the step time", style(**HEADING))
    _write_labels(ws, grid, values["label"], style, HEADER_ROW + 2 + below, grid.results())
    _heights(ws, tall, HEADER_ROW + 1 + below)


def _write_details(ws: Any, columns: Sequence[Column], cells: _Cells, title: str) -> None:
    """The Details sheet, all of it: a row per key, its heading in column A (wrapped at DETAIL_HEADING_CHARS), each
    line's label heading its column and, right of them, the keys (hidden by a width of 0: for programs, as the
    other sheets' key row); every value at the top of its row beside its heading, in its unit's number format
    (table.py, record_format), the rows as tall as their most wrapped cell. A line's column is as wide as its
    widest value up to WIDEST_TEXT, twice that for one line (the nearest measured run, ~215 characters, on 4
    lines, not 8)."""
    grid, values, style = cells.grid, cells.values, cells.style
    labels = values["label"]
    most = printing.WIDEST_TEXT * (2 if len(labels) == 1 else 1)
    formats = {c.key: _number_format(c, values[c.key]) for c in columns}
    texts = {c.key: _shown(values[c.key], formats[c.key]) for c in columns}
    chars = []
    for index, label in enumerate(labels):
        shown = [texts[c.key][index] for c in columns]
        chars.append(max(printing.width(label, shown), min(most, max(map(len, shown), default=0) + 1)))
    keys = _letter(DETAILS_FIRST + len(labels))
    widths = {"A": DETAIL_HEADING_CHARS} | {_letter(DETAILS_FIRST + i): w for i, w in enumerate(chars)}
    ws.write_string(f"A{HEADER_ROW}", "Detail", style(**HEADING))
    ws.write_string(f"{keys}{HEADER_ROW}", "Key", style(**HEADING))
    look = style(**HEADING, align="right")  # bold, a total's too
    for index, label in enumerate(labels):
        ws.write_formula(f"{_letter(DETAILS_FIRST + index)}{HEADER_ROW}", f"=Results!A{HEADER_ROW + 2 + index}", look,
                         label)  # fmt: skip
    ws.set_row(HEADER_ROW - 1, _row_height(zip(labels, chars, strict=True), bold=True))
    for column in columns:
        row = grid.rows[column.key]
        ws.write_string(f"A{row}", column.header, style(text_wrap=True, valign="top"))
        ws.write_string(f"{keys}{row}", column.key, style(italic=True, font_color="#808080"))
        cells.write(ws, column, formats[column.key], _alignment(values[column.key]), valign="top")
        count = printing.lines(column.header, DETAIL_HEADING_CHARS)
        if _wraps(values[column.key]):  # a total's column in bold (`_bold`)
            cells_of_row = zip(texts[column.key], chars, _bold(grid.lines), strict=True)
            count = max(count, *(printing.lines(text, width, heavy) for text, width, heavy in cells_of_row))
        ws.set_row(row - 1, printing.height_pt(count))
    _title(ws, "Details", title, _ordered(widths), style, NOTES["details"])
    _frame(ws, widths, title)
    ws.set_column(f"{keys}:{keys}", 0.0, None, {"hidden": True})


def _frame(ws: _Sheet, widths: dict[str, float], title: str, repeated: int = HEADER_ROW - 1) -> None:
    """What every table sheet (Inputs, Results, Breakdown, Details, Summary) has around its cells: panes frozen under
    the headings and right of the labels, the key row hidden (for programs, not printed), its columns `widths` wide
    (by letter) and its pages set up (printing.set_up), the rows from `repeated` (0-based; the headings') to the
    keys' repeated atop each. The Breakdown repeats its name, title and note too, which say that its second table
    holds the parts' shares: with the headings alone, a 60-point sweep's Breakdown printed 6 pages of shares under
    the parts' names (the page header names the sheet and the title on every page). A section under the table:
    its rows' page breaks (`_keep_with_next`; every row's height set by then)."""
    ws.freeze_panes(HEADER_ROW + 1, 1)
    ws.set_row(HEADER_ROW, None, None, {"hidden": True})
    for letter, chars in widths.items():
        ws.set_column(f"{letter}:{letter}", chars)
    printing.set_up(ws, _ordered(widths), title, (repeated, HEADER_ROW))
    _keep_with_next(ws, _ordered(widths), repeated)


def _write_labels(ws: Any, grid: _Grid, labels: list[str], style: _Styles, first: int = HEADER_ROW + 2,
                  runs: Sequence[range] | None = None) -> None:  # fmt: skip
    """Column A of a sheet other than Results, from row `first` (1-based; a table's first line): each line's label
    (of the `runs` of lines only, when given: the Breakdown's shares have no total row), linked to the Results
    sheet's."""
    wrap = _wraps(labels)
    for index in range(len(labels)) if runs is None else [index for run in runs for index in run]:
        look = grid.look(index) | wrap
        ws.write_formula(f"A{first + index}", f"=Results!A{HEADER_ROW + 2 + index}", style(**look) if look else None,
                         labels[index])  # fmt: skip


def _write_summary(ws: _Sheet, columns: Sequence[Column], grid: _Grid, values: dict[str, list[Any]], title: str,
                   style: _Styles, labels: tuple[float, list[int]]) -> None:  # fmt: skip
    """The figures to compare, each a link to its cell (so it follows every edit), one landscape page wide; a
    campaign's total row under its phases'; under them, the basis a reader needs to sign them (`_basis`). Column A:
    `labels` (`_label_column`)."""
    by_key = {c.key: c for c in columns}
    shown = [by_key[key] for key in SUMMARY if key in by_key]
    heading = style(**HEADING)
    ws.write_string("A1", f"Summary: {title}", style(bold=True, font_size=TITLE_PT))
    ws.fitted(0, printing.height_pt(1, TITLE_PT))
    ws.write_string("A2", "Links to the Results and Inputs sheets: edit the yellow cells there, these follow.")
    ws.write_string(f"A{HEADER_ROW}", "Result", heading)
    label_width, tall = labels
    widths = [label_width]
    for offset, column in enumerate(shown, start=2):
        letter = _letter(offset)
        fmt = _number_format(column, values[column.key], unit=False)
        align = _alignment(values[column.key])
        ws.write_string(f"{letter}{HEADER_ROW}", column.header, style(**HEADING, **align))
        ws.write_string(f"{letter}{HEADER_ROW + 1}", column.key, style(italic=True, font_color="#808080"))
        said = ["no price"] if column.key == "usd_per_gpu_hour" else []
        widths.append(_width(column, _shown([*values[column.key], *said], fmt)))
        for index, value in enumerate(values[column.key]):
            ref = grid.cell(column.key, index, "Summary")
            if column.total is not None and index in grid.phases:  # a campaign's quantity: on its total row only
                continue
            if fmt == printing.YES_NO:  # as text: Excel shows a true/false cell TRUE whatever its format
                link, cached = f'=IF(ISBLANK({ref}),"",IF({ref},"Yes","No"))', printing.shown(value)
            elif column.formula is None or value is None:  # a link to an empty cell reads 0: say what is missing
                # (a formula column's cell is left empty where the row has no value: MI355X, with no price, had its
                # cost with losses read "$0" beside an empty cost)
                missing = "no price" if column.key == "usd_per_gpu_hour" else ""
                link, cached = f'=IF(ISBLANK({ref}),"{missing}",{ref})', missing if value is None else value
            else:
                link, cached = "=" + ref, _cached(value)
            ws.write_formula(f"{letter}{HEADER_ROW + 2 + index}", link, style(fmt, **grid.look(index), **align), cached)
    _write_labels(ws, grid, values["label"], style)
    _heights(ws, tall)
    headings = [("Result", widths[0])] + [(c.header, w) for c, w in zip(shown, widths[1:], strict=True)]
    ws.set_row(HEADER_ROW - 1, _row_height(headings, bold=True))
    ws.section = HEADER_ROW + 1 + len(grid.lines) + 1  # 0-based: a blank row under the results
    ws.write_string(ws.section, 0, "Basis of these figures", style(bold=True))
    look, page = style(text_wrap=True, valign="top"), _first_page(widths)
    basis = _basis(values)
    for offset, text in enumerate(basis, start=1):
        _note(ws, ws.section + offset, text, page, look)
    ws.kept = len(basis)  # printed together: a 15-point sweep's last price basis printed alone overleaf
    ws.last = ws.section + len(basis)
    _frame(ws, {_letter(col): chars for col, chars in enumerate(widths, start=1)}, title)


def _basis(values: dict[str, list[Any]]) -> list[str]:
    """What the Summary's figures rest on, one sentence each: the batch, the plan's goal and every price basis."""
    sentences = []
    batches = {(gbs, seq) for gbs, seq in zip(values["parallelism.gbs"], values["parallelism.seq_len"], strict=True)
               if gbs is not None}  # fmt: skip
    if len(batches) == 1:
        ((gbs, seq),) = batches
        sentences.append(f"Batch: {gbs:,} sequences of {seq:,} tokens ({gbs * seq:,} tokens per step), every result.")
    else:
        sentences.append("Batch: each result's own, on Results (global batch, sequence length, tokens per step).")
    deadline, budget = _one(values.get("deadline_days")), _one(values.get("budget_usd"))
    if deadline is not None or budget is not None:
        within = [
            f"{deadline:g} days" if deadline is not None else "",
            f"USD {budget:,.0f}" if budget is not None else "",
        ]
        basis = _one(values.get("goal_basis")) or "as planned"
        sentences.append(
            f"Goal: each candidate's GPU count that trains within {' and '.join(w for w in within if w)} ({basis})."
        )
        sentences.append(
            "p_deadline and p_budget are values, not formulas: 20,001 seeded draws of the time, the 80% interval "
            "read as a two-piece log-normal around the point, times run-to-run variability measured between MLPerf "
            "runs and the interruptions as a Poisson count, median the point (perfmodel planning/confidence.py); "
            "P10/P50/P90 on Results are live: the failure-free quantity times its P10 and P90 factors, values "
            "(quantile_factor_p10/p90: the interval and run-to-run variability combined, no interruptions; the "
            "cost's cost_quantile_factor_p10/p50/p90, which draw the price too where a distribution of it is stated)."
        )
    if "mix_cost_usd" in values:
        sentences.append(
            "Fleet: each system type's cheapest mix of owned pools and offers meeting the goal (planning/fleet.py); "
            "a source's cost is its GPUs x the time on the goal's basis x its rate, live; the mix's cost at the "
            "confidence is a value: its cost times the time's factor at the confidence (planning/confidence.py)."
        )
    prices = dict.fromkeys(zip(values["system"], values["price_source"], strict=True))
    for system, source in prices:
        if system is not None and source:
            sentences.append(f"Price, {system}: {source}")
    return sentences


def _one(column: list[Any] | None) -> Any:
    """The value every line of a column shares (None when the column is missing or they differ)."""
    found = {value for value in column or [] if value is not None}
    return found.pop() if len(found) == 1 else None


VALUE_CHARS = 12
"""The Assumptions' Value column's most characters (a General number shows fewer decimals in a narrower one)."""


SIGNIFICANT_DIGITS = 4
"""The Assumptions' fractional figures print to this many digits: in General, a fitted parameter printed all the
column held (0.9899101242, 16.566974982 GPU-hours); the calibration file keeps every digit."""


def _figure_format(value: Any) -> str:
    """A whole number of five digits or more with thousands separators (3,450,000 USD per system, not 3450000), in
    millions, billions or trillions where they would not fit VALUE_CHARS (15T tokens printed `###`); a fraction to
    SIGNIFICANT_DIGITS (in scientific notation below 0.0001); text and other whole numbers as General shows them."""
    if not _is_number(value) or (value == int(value) and abs(value) < 10_000):
        return "General"
    if value == int(value):
        return "#,##0" if len(f"{value:,.0f}") < VALUE_CHARS else printing.compact()
    if abs(value) < 1e-4:
        return "0.000E+00"
    return printing.significant(value, SIGNIFICANT_DIGITS)


def _write_assumptions(ws: Any, found: list[Assumption], title: str, style: _Styles) -> None:
    ws.write_string("A1", f"Assumptions: {title}", style(bold=True, font_size=13))
    ws.write_string("A2", "Every figure the results rest on, with its source; keys such as S1: the Sources sheet.")
    heads = ("Section", "Name", "Value", "Unit", "Source")
    cells = [[(v, _figure_format(v)) for v in (a.section, a.name, a.value, a.unit, a.source)] for a in found]
    texts = [[printing.shown(value, fmt) for value, fmt in row] for row in cells]
    # At most 24, 26, VALUE_CHARS and 16 characters, then the sources, wrapped at 80: one page wide at legible type.
    widths = [min(printing.width(head, [row[col] for row in texts]), most)
              for col, (head, most) in enumerate(zip(heads, (24, 26, VALUE_CHARS, 16, 0), strict=True))]  # fmt: skip
    widths[-1] = 80.0
    for col, (head, chars) in enumerate(zip(heads, widths, strict=True)):
        ws.write_string(HEADER_ROW - 1, col, head, style(bold=True))
        ws.set_column(col, col, chars)

    # A section's name prints on its first row and atop each page only (a run's is ~120 characters, six lines in
    # its column on each of its ~30 rows: a 3-system comparison's Assumptions took 24 pages); its other rows keep
    # it for filters and programs, hidden by the number format whose text section is empty. The page breaks are
    # set where the rows' heights put them, less PAGE_SLACK, so that the rows known to begin a page do.
    shown_pt = [_row_height(zip(row, widths, strict=True)) for row in texts]
    hidden_pt = [_row_height(zip(["", *row[1:]], widths, strict=True)) for row in texts]
    first = [index == 0 or a.section != found[index - 1].section for index, a in enumerate(found)]
    room = _page_room_pt(widths) - printing.LINE_PT
    starts = printing.page_starts([s if f else h for s, h, f in zip(shown_pt, hidden_pt, first, strict=True)],
                                  shown_pt, room, (HEADER_ROW + 1) * printing.LINE_PT)  # fmt: skip
    shows = [f or index in starts for index, f in enumerate(first)]
    for index, row in enumerate(cells):
        for col, (value, fmt) in enumerate(row):
            hidden = col == 0 and not shows[index]
            look = style(";;;" if hidden else fmt, text_wrap=True, valign="top")
            _put(ws, f"{_letter(col + 1)}{HEADER_ROW + 1 + index}", value, look)
    for index, show in enumerate(shows):
        ws.set_row(HEADER_ROW + index, shown_pt[index] if show else hidden_pt[index])
    ws.set_h_pagebreaks([HEADER_ROW + index for index in starts])
    ws.freeze_panes(HEADER_ROW, 0)
    printing.set_up(ws, widths, title, (HEADER_ROW - 1, HEADER_ROW - 1))


def _write_sources(ws: Any, citations: list[Citation], title: str, style: _Styles) -> None:
    """The public documents behind the keys the Assumptions cite."""
    ws.write_string("A1", "Sources: the public documents the Assumptions cite", style(bold=True, font_size=13))
    widths = (6.0, 3 * printing.WIDEST_TEXT)
    for col, (head, chars) in enumerate(zip(("Key", "Document"), widths, strict=True)):
        ws.write_string(HEADER_ROW - 1, col, head, style(bold=True))
        ws.set_column(col, col, chars)
    wrapped = style(text_wrap=True, valign="top")
    for index, citation in enumerate(citations):
        ws.write_string(HEADER_ROW + index, 0, citation.key, wrapped)
        ws.write_string(HEADER_ROW + index, 1, citation.document, wrapped)
    _heights(ws, [printing.lines(c.document, widths[1]) for c in citations], first=HEADER_ROW)
    printing.set_up(ws, widths, title, (HEADER_ROW - 1, HEADER_ROW - 1))
