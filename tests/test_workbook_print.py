"""The workbook prints (issue 29, item 4): every sheet landscape A4 with the headings and the title, sheet, date and
page on every page, type at least 7 pt on paper, no `###`, Yes/No for true/false, the key row hidden, and a Summary
one page wide that states the tokens, the batch, the plan's goal and every price basis. LibreOffice prints it to PDF
and `pdftotext -bbox` measures the type (skipped, and said so, where either is missing)."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import openpyxl
import pytest
from conftest import run_cli
from openpyxl.workbook.workbook import Workbook
from openpyxl.worksheet.worksheet import Worksheet
from test_campaign import CAMPAIGN as PHASES_8B
from workbook import libreoffice, run_soffice

from perfmodel.outputs.export import printing, xlsx

PLAN = ("export", "plan", "--model", "llama3.1-405b", "--gpu", "gb300", "--gpu", "b300", "--deadline", "60d")
COMPARE = ("export", "compare", "--model", "llama3.1-405b", "--gpu", "h100-sxm", "--gpu", "gb300", "--gpu", "b200")
CAMPAIGN = ("export", "predict", "campaign-llama3.1-405b")
"""Phases of 40M to 6T tokens and costs of hundreds of dollars to tens of millions, in one Summary."""
PREDICT = ("export", "predict")
"""The default export: one result, so its Details are two columns wide."""
DEEPSEEK = ("export", "predict", "--model", "deepseek-v3", "--gpu", "gb300", "--gpus", "256")
"""Results about 12 pages wide, the last of them 3 columns when each page was filled in turn."""
SMALLEST_PT = 7.0
"""The smallest type a procurement reader is asked to read on paper."""
PAGES = {"plan": 32, "compare": 42, "campaign": 49, "predict": 28}
"""Pages each prints on at most: 33, 45 and 50 with rows 15 points a line and lines counted 1.2 characters a
character of width less two (LibreOffice 7.4, DejaVu Sans)."""
DATA_SHEETS = ("Summary", "Inputs", "Results", "Breakdown", "Details")


def _counting(counted: dict[str, int]) -> Callable[[xlsx._Sheet, list[float], int], None]:
    """`xlsx._keep_with_next`, recording in `counted` the rows each sheet with a section computes its page breaks
    from (`_Sheet.rows_pt`), by sheet name."""
    keep = xlsx._keep_with_next

    def counting(ws: xlsx._Sheet, widths: list[float], repeated: int) -> None:
        if ws.section is not None:
            counted[ws.name] = len(ws.rows_pt())
        keep(ws, widths, repeated)

    return counting


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], dict[str, dict[str, int]]]:
    """The books every test here reads, and per book the rows each section sheet computed its page breaks from."""
    folder = tmp_path_factory.mktemp("print")
    found, counted = {}, {}
    cases = (("plan", PLAN), ("compare", COMPARE), ("campaign", CAMPAIGN), ("predict", PREDICT), ("deepseek", DEEPSEEK))
    for name, args in cases:
        found[name], counted[name] = folder / f"{name}.xlsx", {}
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(xlsx, "_keep_with_next", _counting(counted[name]))
            result = run_cli(*args, "--out", str(found[name]))
        assert result.code == 0, result.err
    return found, counted


@pytest.fixture(scope="module")
def books(built: tuple[dict[str, Path], dict[str, dict[str, int]]]) -> dict[str, Path]:
    return built[0]


@pytest.fixture(scope="module")
def parsed(books: dict[str, Path]) -> dict[str, Workbook]:
    """Each book as openpyxl reads it (formulas, not their values), once for every test here: none changes them.
    Parsed per test, the books took 18 parses (the plan's, compare's, campaign's, default's and DeepSeek-V3's)."""
    return {name: openpyxl.load_workbook(path) for name, path in books.items()}


def test_every_sheet_is_set_up_to_print(parsed: dict[str, Workbook]) -> None:
    book = parsed["compare"]
    for ws in book:
        assert ws.page_setup.orientation == "landscape" and ws.page_setup.paperSize == 9, ws.title
        header, footer = ws.oddHeader, ws.oddFooter
        assert "Llama 3.1 405B: comparison" in str(header.left.text), ws.title  # names, as the plots print
        assert header.right.text == "&A" and "&D" in str(footer.left.text) and "&P of &N" in str(footer.right.text)
        # on every page: the headings (and keys, hidden); the Breakdown's name, title and note too (its note says
        # that its second table holds the shares, under the parts' headings)
        repeated = {"Breakdown": "$1:$5", "Assumptions": "$4:$4", "Sources": "$4:$4"}
        assert ws.print_title_rows == repeated.get(ws.title, "$4:$5"), ws.title
    for name in DATA_SHEETS:
        assert book[name].row_dimensions[5].hidden, name  # the keys: for programs, not printed


def test_a_sheet_printed_across_pages_names_itself_in_column_a(parsed: dict[str, Workbook]) -> None:
    """Column A repeats on every page of a sheet too wide for one: the whole title there was cut at its edge on the
    second page on ('Breakdown: DeepSeek-V3 6'). Column A holds the sheet's name alone, the title and its note start
    in column B (the page header carries the title on every page)."""
    book = parsed["compare"]
    for name in ("Inputs", "Results", "Breakdown", "Details"):
        ws = book[name]
        assert ws["A1"].value == name and "Llama 3.1 405B: comparison" in ws["B1"].value, name
        assert ws["A2"].value is None, name  # the note under the title: from column B too
    assert book["Results"].print_title_cols == "$A:$A"  # the sheet that prints across pages (about 90 columns)


def test_no_text_runs_on_past_its_sheets_last_column(parsed: dict[str, Workbook]) -> None:
    """LibreOffice 7.4 fits a sheet to the width its text takes, past its last column too: the default export's
    Details (one result wide) had its note run on past the result's column, printed at 86%, not the 94% its columns
    fit at, and then an empty page (the 20th of 28). A text wider than the columns from its own to the last wraps."""
    for name, book in parsed.items():
        for ws in book:
            pixels = _pixels(ws)
            for row in ws.iter_rows():
                for cell in row:
                    text, hidden = cell.value, ws.row_dimensions[cell.row].hidden or pixels[cell.column] == 0
                    if not isinstance(text, str) or text.startswith("=") or hidden or cell.alignment.wrap_text:
                        continue  # a formula's text is a link's, a label's (wrapped where long)
                    room = sum(pixels[c] for c in range(cell.column, ws.max_column + 1))
                    wide = printing.text_pt(text, bool(cell.font.b), cell.font.sz or printing.FONT_PT)
                    assert wide <= room, f"{name} {ws.title}!{cell.coordinate}: {wide:.0f} pt in {room:.0f}"


def test_a_sheet_printed_across_pages_fills_them_evenly(parsed: dict[str, Workbook]) -> None:
    """A sheet too wide for one page at the smallest scale has its columns split across pages by set breaks, each
    page (column A repeated on it) within the page's width and none under half as wide as the widest: filled in
    turn, DeepSeek-V3's Results printed 11 full pages and a 12th of 3 columns."""
    room = 100 * printing.PRINTABLE_WIDTH_PT / printing.SMALLEST_SCALE
    across = 0
    for name, book in parsed.items():
        for ws in book:
            if ws.print_title_cols is None:
                continue
            across += 1
            pixels = _pixels(ws)
            starts = [brk.id + 1 for brk in ws.col_breaks.brk]  # the columns (1-based) that begin a page
            bounds = [2, *starts, ws.max_column + 1]
            pages = [pixels[1] + sum(pixels[c] for c in range(a, b)) for a, b in itertools.pairwise(bounds)]
            assert starts and max(pages) <= room and min(pages) >= max(pages) / 2, (name, ws.title, pages)
    assert across >= 8  # Inputs and Results of each


SWEEP = (
    '[sweep]\nmodels = ["llama3.1-70b"]\ngpus = ["h100-sxm", "h200-sxm", "b200", "gb200", "mi355x"]\n'
    'precisions = ["fp8"]\nn_gpus = [512, 1024, 2048]\n[sweep.set]\ntokens = 15e12\n'
    "parallelism = { gbs = 1024, seq_len = 8192 }\n"
)
"""15 results, each label on 4 lines: the Summary's, Inputs' and Breakdown's sections under their tables print on
the second page."""
SECTIONS = {"Summary": "Basis of these figures", "Inputs": "Defaults (rows above link here)",
            "Breakdown": "Share of the step time"}  # fmt: skip


def test_page_starts_keep_a_heading_with_the_row_under_it() -> None:
    """Rows 10 points tall on pages of 50, each page after the first opening with 5 points of repeated rows: the
    sixth row begins the second page; a heading there (the fifth row) takes it over with it; a heading elsewhere
    moves no break; a heading alone on its page (its first row) stays there."""
    tens = [10.0] * 12
    opening = [15.0] * 12
    assert printing.page_starts(tens, opening, 50.0, 0.0) == [5, 9]  # 5 rows, then 5 + 4 x 10 (the 10th: 55)
    assert printing.page_starts(tens, opening, 50.0, 0.0, keep={4}) == [4, 8]
    assert printing.page_starts(tens, opening, 50.0, 0.0, keep={5}) == [5, 9]
    assert printing.page_starts([30.0, 30.0], [30.0, 30.0], 50.0, 0.0, keep={0}) == [1]
    assert printing.page_starts([40.0, 20.0, 45.0], [40.0, 20.0, 45.0], 50.0, 0.0, keep={1}) == [1, 2]


def test_page_starts_keep_a_run_of_rows_together() -> None:
    """A heading and the rows under it kept together (the Summary's basis) begin the page the row under them would:
    moved back one row only, keep={3, 4} broke after row 3, which ended its page alone. Never back past the page's
    own first row: a run longer than a page breaks where it fills one."""
    tens, opening = [10.0] * 12, [15.0] * 12
    assert printing.page_starts(tens, opening, 50.0, 0.0, keep={3, 4}) == [3, 7, 11]
    assert printing.page_starts(tens, opening, 50.0, 0.0, keep={2, 3, 4}) == [2, 6, 10]
    assert printing.page_starts(tens, opening, 50.0, 0.0, keep=set(range(12))) == [5, 9]


def test_page_starts_leave_the_slack_only_under_a_heading() -> None:
    """A page is filled whole (5 rows of 10 on a page of 50) but for a heading and the row under it, which must fit in
    the slack room (40): the heading on the 4th row moves to the next page, one on the 2nd moves nothing."""
    tens, opening = [10.0] * 12, [15.0] * 12
    assert printing.page_starts(tens, opening, 50.0, 0.0, {3}, 40.0, {3}) == [3, 7, 11]
    assert printing.page_starts(tens, opening, 50.0, 0.0, {1}, 40.0, {1}) == [5, 9]
    assert printing.page_starts(tens, opening, 50.0, 0.0, {3}) == [5, 9]


def test_a_section_heading_is_never_the_last_row_on_a_printed_page(tmp_path: Path,
                                                                   parsed: dict[str, Workbook]) -> None:  # fmt: skip
    """Left to the page breaks LibreOffice puts, a 60-point sweep's 'Share of the step time' printed at the foot of
    a page (103 of 270), its shares overleaf. A sheet with a section under its table (the Summary's basis, the
    Inputs' defaults, the Breakdown's shares) has its row breaks set where the rows' heights fill a page at its
    scale (the rows repeated atop each page after the first counted), each break where the next row would not fit,
    and never right after the section's heading: there the heading begins the next page, where it and its first
    row (the Summary: its whole basis) would not fit in PAGE_SLACK of the page. At PAGE_SLACK everywhere, a
    10-system comparison's Inputs broke at row 15 of 17 that fitted: 6 printed pages, two holding a row each."""
    (tmp_path / "sweep.toml").write_text(SWEEP)
    result = run_cli("export", "sweep", str(tmp_path / "sweep.toml"), "--out", str(tmp_path / "sweep.xlsx"))
    assert result.code == 0, result.err
    broken = 0
    for name, book in [*parsed.items(), ("sweep", openpyxl.load_workbook(tmp_path / "sweep.xlsx"))]:
        for sheet, heading in SECTIONS.items():
            ws = book[sheet]
            section = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == heading)
            heights = _heights_pt(ws)
            zoom = ws.page_setup.scale or min(100.0, 100 * printing.PRINTABLE_WIDTH_PT / sum(_pixels(ws).values()))
            room = 100 * printing.PRINTABLE_HEIGHT_PT / max(zoom, printing.SMALLEST_SCALE)
            first, last = (int(row) for row in re.findall(r"\d+", ws.print_title_rows))
            atop = sum(heights[first - 1 : last])
            starts = [brk.id + 1 for brk in ws.row_breaks.brk]  # the rows (1-based) that begin a page
            assert section + 1 not in starts, (name, sheet)
            if sheet == "Summary":  # the basis rows print on one page
                assert not [row for row in starts if section < row <= len(heights)], (name, starts)
            bounds = [1, *starts, len(heights) + 1]
            for page, (top, bottom) in enumerate(itertools.pairwise(bounds)):
                used = (atop if page else 0.0) + sum(heights[top - 1 : bottom - 1])
                rounding = 0.375 * (bottom - top + 2)  # XlsxWriter writes each height in whole pixels (3/4 pt)
                assert used <= room + rounding, (name, sheet, page, used, room)
                if bottom <= len(heights):  # the next row (and the heading's first row) would not have fitted
                    kept = {section - 2, section, section + 1, len(heights) - 1}  # the rows never last on a page
                    if sheet == "Summary":  # the basis prints together
                        kept |= set(range(section, len(heights)))
                    if bottom not in kept:  # else the break may step back to where a kept run begins
                        assert used + heights[bottom - 1] > room - rounding, (name, sheet, page, used, room)
            broken += bool(starts)
    assert broken >= 3  # the sweep's three sheets at least
    assert not parsed["campaign"]["Summary"].row_breaks.brk  # one page: 12 rows


def test_a_long_text_has_a_wide_column(parsed: dict[str, Workbook]) -> None:
    """The price source (~130 characters, the same on every phase) wrapped on 5 lines in 28 characters: a campaign's
    phases were 60-75 points tall each on Inputs, which printed on 6 pages (now 4). Twice as wide, 2 lines."""
    ws = parsed["campaign"]["Inputs"]
    column = next(c.column_letter for c in ws[5] if c.value == "price_source")
    assert len(ws[f"{column}6"].value) > 100 and ws.column_dimensions[column].width >= 2 * printing.WIDEST_TEXT
    assert all(ws.row_dimensions[row].height <= 2 * printing.LINE_PT for row in range(6, 17))
    assert ws.row_dimensions[17].height == printing.height_pt(3)  # the total row's, in bold: one line more


def test_every_wrapped_cell_is_as_tall_as_its_lines(books: dict[str, Path], tmp_path: Path) -> None:
    """A row is as tall as each wrapped cell's lines (its text as shown, in its type, bold or not, in its column or
    merged columns): the 405B campaign's total row, 2 lines tall, printed its bold price source cut off on Inputs
    (3 lines), as its Details' column did its nearest measured run. Every sheet of the default, 405B campaign and
    DeepSeek-V3 campaign books."""
    deepseek = tmp_path / "deepseek-campaign.xlsx"
    assert run_cli("export", "predict", "campaign-deepseek-v3", "--out", str(deepseek)).code == 0
    for path in (books["predict"], books["campaign"], deepseek):
        shown = openpyxl.load_workbook(path, data_only=True)  # a formula's text: its cached value
        for ws in openpyxl.load_workbook(path):
            chars = _chars(ws)
            spans = {(r.min_row, r.min_col): range(r.min_col, r.max_col + 1) for r in ws.merged_cells.ranges}
            for cell in (cell for row in ws.iter_rows() for cell in row if cell.alignment.wrap_text):
                value = shown[ws.title][cell.coordinate].value
                if value is None or cell.number_format == ";;;" or ws.row_dimensions[cell.row].hidden:
                    continue  # ';;;': an Assumptions section's name, hidden below its first row
                width = sum(chars[c] for c in spans.get((cell.row, cell.column), [cell.column]))
                if width == 0:  # a hidden column: the keys
                    continue
                size_pt = cell.font.sz or printing.FONT_PT
                text = printing.shown(value, cell.number_format)
                tall_pt = printing.height_pt(printing.lines(text, width, bool(cell.font.b), size_pt), size_pt)
                height_pt = ws.row_dimensions[cell.row].height or printing.LINE_PT
                assert height_pt >= tall_pt - 1e-9, f"{path.name} {ws.title}!{cell.coordinate}: {height_pt} < {tall_pt}"


def _chars(ws: Worksheet) -> dict[int, float]:
    """Each column's width in characters (1-based), 0 when hidden, Excel's default where none is set: the width the
    workbook asked for, whose pixels (printing.points) XlsxWriter stores, padding included, as pixels / 7 (read as
    characters, a column counted 5 points wider than it prints)."""
    found = dict.fromkeys(range(1, ws.max_column + 1), 8.43)
    for dimension in ws.column_dimensions.values():
        for column in range(dimension.min, dimension.max + 1):
            found[column] = 0.0 if dimension.hidden else (round(dimension.width * 7) - 5) / 7
    return found


def test_a_label_row_is_as_tall_as_libreoffice_wraps_it(parsed: dict[str, Workbook]) -> None:
    """LibreOffice 7.4 (DejaVu Sans for Calibri) wraps the campaign's embodied-carbon default on 4 lines in the
    Inputs' column A (14 characters) and a comparison's labels (~110 characters) on 4 in 29: counting 1.2
    characters a character of width less two, and 15 points a line, their rows were 75 and 60 points tall, 5.9
    and 4.7 of its 12.8-point lines."""
    inputs = parsed["campaign"]["Inputs"]
    row = next(r for r in range(6, inputs.max_row + 1) if str(inputs.cell(r, 1).value).startswith("Embodied carbon"))
    assert inputs.row_dimensions[row].height == printing.height_pt(4) == 55.5
    results = parsed["compare"]["Results"]
    assert [results.row_dimensions[r].height for r in (6, 7, 8)] == [printing.height_pt(4)] * 3


def test_lines_wrap_where_libreoffice_wraps() -> None:
    """Wraps LibreOffice 7.4 printed (pdftotext -bbox): a 12-point sweep's Summary label in 29 characters
    ('llama3.1-70b on 512 x h100-sxm fp8' / 'TP1 PP1 VP1 CP2 DP256, MBS 1, GBS' / '1024, seq 8192, recompute' /
    'selective, ZeRO-3'), the campaign's Inputs defaults in 14 (after the hyphen: 'GPU-' / 'hour;'), the bold
    note there on 3."""
    label = "llama3.1-70b on 512 x h100-sxm fp8 TP1 PP1 VP1 CP2 DP256, MBS 1, GBS 1024, seq 8192, recompute selective, "
    label += "ZeRO-3"
    assert printing.lines(label, 29.0) == 4
    assert printing.lines("Embodied carbon (gCO2e per GPU-hour; estimate, see Assumptions)", 14.0) == 4
    assert printing.lines("Grid carbon intensity (gCO2e/kWh)", 14.0) == 3
    assert printing.lines("Electricity (USD/kWh)", 14.0) == 2 and printing.lines("Tokens to train", 14.0) == 1
    assert printing.lines("Defaults (rows above link here)", 14.0, bold=True) == 3
    assert printing.lines("x" * 100, 10.0) == 10  # wider than its column (10 x to a line): broken within itself


def test_a_columns_points_are_the_pixels_xlsxwriter_writes(tmp_path: Path) -> None:
    """printing.points counts the pixels XlsxWriter gives a column (Worksheet.set_column: rounded, plus 5): it
    truncated, a pixel short wherever the width's sevenths end in a half or more (6.5 characters: 50, not 51). The
    workbook stores width = pixels / 7 (to 1/256), so the pixels read back are the width times 7, rounded."""
    import xlsxwriter

    widths = [0.0, 0.3, 0.5, 0.96, *(k / 28 for k in range(28, 28 * 61)), 8.43, 13.4285714, 84.0]
    path = tmp_path / "widths.xlsx"
    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet()
    for column, chars in enumerate(widths):
        ws.set_column(column, column, chars)
    wb.close()
    pixels = _pixels(openpyxl.load_workbook(path).active)  # XlsxWriter writes equal neighbours as one range
    for column, chars in enumerate(widths, start=1):
        assert printing.points(chars) == pixels[column], chars
    assert printing.points(6.5) == 51 and printing.points(8.43) == 64


def test_every_ratio_to_the_first_row_reads_as_one(parsed: dict[str, Workbook]) -> None:
    """Compare's perf per USD range (its own columns) printed in General, 0.6077105222493.23243943433 across two
    columns: every `_vs_first` ratio, 1.00x."""
    ws = parsed["compare"]["Results"]
    ratios = [c.column for c in ws[5] if isinstance(c.value, str) and "_vs_first" in c.value]
    assert len(ratios) >= 6  # speedup, perf per USD (3), energy per token and the range's two ends
    for column in ratios:
        cell = ws.cell(7, column)
        assert cell.number_format == '0.00"x"', ws.cell(5, column).value


def test_an_assumptions_section_prints_its_name_on_its_first_row_and_atop_each_page(
    parsed: dict[str, Workbook],
) -> None:
    """A run's section name (~120 characters) wrapped to six lines on each of its ~30 rows: the compare workbook's
    Assumptions printed on 24 pages (22 now). Its first row and the first on each page (the page breaks are set)
    show it; the others keep it for filters, hidden by the format."""
    ws = parsed["compare"]["Assumptions"]
    cells = [row[0] for row in ws.iter_rows(min_row=5) if row[0].value]
    pages = {brk.id + 1 for brk in ws.row_breaks.brk}  # the rows (1-based) that begin a page
    assert len(pages) >= 10
    for before, cell in itertools.pairwise(cells):
        shown = cell.value != before.value or cell.row in pages
        assert (cell.number_format != ";;;") == shown, cell.coordinate
    first = next(cell for cell in cells if cell.value.startswith("run: "))
    assert ws.row_dimensions[first.row].height >= printing.height_pt(5)
    assert sum(1 for cell in cells if cell.number_format == ";;;") > len(cells) / 2


def test_an_assumption_too_long_for_its_column_prints_in_its_unit(parsed: dict[str, Workbook]) -> None:
    """15,000,000,000,000 tokens printed `###` in the 12-character Value column: 15.0T."""
    ws = parsed["compare"]["Assumptions"]
    tokens = next(row[2] for row in ws.iter_rows(min_row=5) if row[1].value == "tokens_to_train")
    assert tokens.value == 15e12 and printing.shown(tokens.value, tokens.number_format) == "15.0T"
    price = next(row[2] for row in ws.iter_rows(min_row=5) if row[1].value == "usd_per_system")
    assert price.number_format == "#,##0"


def test_a_fractional_assumption_prints_four_significant_digits(parsed: dict[str, Workbook]) -> None:
    """In General the fitted parameters printed all their column held (0.9899101242 for grouped_gemm, 16.566974982
    GPU-hours lost to failures in a campaign's phase): four significant digits, the value itself kept whole."""
    ws = parsed["campaign"]["Assumptions"]
    figures = [row[2] for row in ws.iter_rows(min_row=5) if isinstance(row[2].value, float)]
    fractional = [cell for cell in figures if cell.value != int(cell.value)]
    assert len(fractional) > 20
    for cell in fractional:
        shown = printing.shown(cell.value, cell.number_format)
        assert float(shown.replace(",", "")) == pytest.approx(cell.value, rel=1e-3)
        assert len(re.sub(r"\D", "", shown.split("E")[0]).lstrip("0")) <= 4 or cell.value >= 1e4, shown


def test_the_summary_states_what_its_figures_rest_on(parsed: dict[str, Workbook]) -> None:
    """Tokens, batch, the plan's goal and each price's basis (the Inputs sheet's price source, per system)."""
    plan = parsed["plan"]
    summary = plan["Summary"]
    keys = [c.value for c in summary[5]]
    assert "tokens_to_train" in keys
    texts = [str(c.value) for row in summary.iter_rows(min_row=6) for c in row if isinstance(c.value, str)]
    assert any(t.startswith("Batch: 2,048 sequences of 8,192 tokens") for t in texts), texts
    assert any(t.startswith("Goal: ") and "60 days" in t for t in texts), texts
    sources = dict(zip(_column(plan["Results"], "system"), _column(plan["Inputs"], "price_source"), strict=True))
    for system in ("gb300-nvl72", "dgx-b300"):
        said = next(t for t in texts if t.startswith(f"Price, {system}: "))
        assert said.removeprefix(f"Price, {system}: ") == sources[system]


def test_true_and_false_print_as_yes_and_no(books: dict[str, Path], parsed: dict[str, Workbook]) -> None:
    """On Results a Yes/No number format (LibreOffice honours it; Excel shows TRUE), on the Summary the words."""
    book, values = parsed["compare"], openpyxl.load_workbook(books["compare"], data_only=True)
    results = next(c.column for c in book["Results"][5] if c.value == "fits_in_memory")
    assert book["Results"].cell(6, results).number_format == printing.YES_NO
    summary = next(c.column for c in book["Summary"][5] if c.value == "fits_in_memory")
    assert '"Yes","No"' in book["Summary"].cell(6, summary).value and values["Summary"].cell(6, summary).value == "Yes"


def test_every_details_number_prints_rounded_in_its_unit(parsed: dict[str, Workbook]) -> None:
    """Details printed in General, 17 digits and no unit (10438424.9266801 beside 'Time_to_train_with_losses_s,
    P50', 0.0543981481481482 interruptions per day): each row's number format comes from its schema unit
    (outputs/record.py), a campaign's total column too, every value at the top of its row beside its heading."""
    ws = parsed["campaign"]["Details"]
    keys = next(c.column for c in ws[4] if c.value == "Key")
    rows = {ws.cell(row, keys).value: row for row in range(6, ws.max_row + 1)}
    numbers = 0
    for key, row in rows.items():
        cells = [ws.cell(row, column) for column in range(2, keys)]
        assert all(cell.alignment.vertical == "top" for cell in cells), key
        assert len({cell.number_format for cell in cells}) == 1, key  # the phases' and the total's alike
        for cell in cells:
            if isinstance(cell.value, int | float) and not isinstance(cell.value, bool):
                numbers += 1
                shown = printing.shown(cell.value, cell.number_format)
                digits = re.sub(r"\D", "", shown)
                assert cell.number_format != "General" and not re.search(r"\.\d{5}", shown) and len(digits) <= 10, shown
    assert numbers > 300  # 12 lines (11 phases and the total) of ~30 numbers
    total = ws.cell(rows["time_to_train_with_losses_s_p50"], keys - 1)  # the campaign's total: a live sum
    assert str(total.value).startswith("=") and total.font.b
    shown = {key: printing.shown(ws.cell(rows[key], 2).value, ws.cell(rows[key], 2).number_format) for key in rows}
    assert shown["time_to_train_with_losses_s_p50"] == "1,247.5 s"
    assert shown["cost_usd_with_losses_p50"] == "$17,486" and shown["reliability.planned_per_day"] == "0.435/day"
    assert shown["power_w_per_gpu_at_wall"] == "1,365 W" and shown["evidence.ratio_to_best_measured"] == "0.856x"


def test_every_fractional_number_prints_in_a_format(parsed: dict[str, Workbook]) -> None:
    """No number prints as General, Excel's '1.07414137139229': a campaign's P90 cost factor did (workbook2's
    report), as did the interval's and the quantiles' factors."""
    for name, book in parsed.items():
        for ws in book:
            cells = (c for row in ws.iter_rows() for c in row if isinstance(c.value, float))
            general = [c.coordinate for c in cells if not c.value.is_integer() and c.number_format == "General"]
            assert not general, f"{name} {ws.title}: {general[:5]}"


def test_the_breakdown_fits_one_page_wide_its_shares_under_their_parts(parsed: dict[str, Workbook]) -> None:
    """The step time's parts, their shares and the memory's parts side by side printed 3 pages across at the
    smallest legible scale: the memory's parts are on Results (beside their sum), each share under its part (its
    formula that part over the step time), and the sheet is fitted to one page wide."""
    for name, book in parsed.items():
        ws = book["Breakdown"]
        assert ws.sheet_properties.pageSetUpPr.fitToPage and ws.page_setup.fitToHeight == 0, name
        assert ws.page_setup.fitToWidth in (None, 1) and ws.print_title_cols is None, name
        keys = {cell.value: cell.column_letter for cell in ws[5] if cell.value}
        assert not [key for key in keys if key.startswith("memory_gb.")], name
        assert {"memory_gb.weights", "memory_per_gpu_gb"} <= {cell.value for cell in book["Results"][5]}, name
        row = next(r for r in range(6, ws.max_row + 1) if ws.cell(r, 1).value == "Share of the step time") + 1
        compute = keys["breakdown.compute_s"]
        assert ws[f"{compute}{row}"].value.startswith(f"={compute}6/Results!"), name


def test_widths_come_from_the_text_a_cell_shows() -> None:
    """A column is as wide as its widest value as its number format shows it (no `###`): units, separators and each
    cell's own thousands, millions, ... in the Summary's counts."""
    tokens, usd = printing.compact(), printing.compact('"$"', smallest=0)
    assert [printing.shown(v, tokens) for v in (15.6e12, 2.87e12, 252e6, 133.3e9)] == [
        "15.6T",
        "2.9T",
        "252.0M",
        "133.3B",
    ]
    assert [printing.shown(v, usd) for v in (55.2e6, 2234, 604)] == ["$55.2M", "$2.2K", "$604"]
    assert printing.shown(13.13, '"$"0.00"/GPU-h"') == "$13.13/GPU-h" and printing.shown(0.294, "0.0%") == "29.4%"
    assert printing.shown(15e12, '#,##0" tokens"') == "15,000,000,000,000 tokens"
    assert printing.width("Tokens to train", ["15,000,000,000,000 tokens"]) >= len("15,000,000,000,000 tokens")
    assert printing.width("Price source", ["x" * 200]) == printing.WIDEST_TEXT + 1  # a longer text wraps


def _pixels(ws: Worksheet) -> dict[int, int]:
    """Each column's printed width (1-based, up to the last used): its pixels, which LibreOffice prints a point
    each (printing.points), 0 when hidden, Excel's default width where none is set."""
    found = dict.fromkeys(range(1, ws.max_column + 1), printing.points(8.43))
    for dimension in ws.column_dimensions.values():
        for column in range(dimension.min, dimension.max + 1):
            found[column] = 0 if dimension.hidden else round(dimension.width * 7)
    return found


def _heights_pt(ws: Worksheet) -> list[float]:
    """Each row's height in points (0-based, to the last used): as written, 0 when hidden, else one line of its
    largest type (a title's 13 pt: 17.7)."""
    found = []
    for row in range(1, ws.max_row + 1):
        dimension = ws.row_dimensions[row]
        size = max((cell.font.sz or printing.FONT_PT for cell in ws[row] if cell.value is not None), default=11.0)
        found.append(0.0 if dimension.hidden else dimension.height or printing.height_pt(1, size))
    return found


def _column(ws: Worksheet, key: str) -> list[object]:
    """The results' values (row 6 down to the first row without a label) in the column whose key (row 5) is `key`."""
    column, row, found = next(c.column for c in ws[5] if c.value == key), 6, []
    while ws.cell(row, 1).value:
        found.append(ws.cell(row, column).value)
        row += 1
    return found


def _pdf_words(pdf: Path) -> list[list[tuple[str, float]]]:
    """Each page's words with their heights in points, as `pdftotext -bbox` measures them."""
    text = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    pattern = re.compile(r'yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">([^<]*)</word>')
    return [
        [(word, float(y1) - float(y0)) for y0, y1, word in pattern.findall(page)] for page in text.split("<page ")[1:]
    ]


def _sheet(words: list[tuple[str, float]]) -> str:
    """The sheet a printed page belongs to: the last word of its header line (`&A`), before the page's first row."""
    return next(word for word, _ in words if word in (*DATA_SHEETS, "Assumptions", "Sources"))


def _reference(folder: Path) -> Path:
    """A workbook of 11-pt type printed at 100%: its word height is what 11 pt measures (fonts differ by machine)."""
    import xlsxwriter

    path = folder / "reference.xlsx"
    wb = xlsxwriter.Workbook(str(path))
    wb.add_worksheet().write_string("A1", "Reference")
    wb.close()
    return path


@pytest.mark.skipif(
    libreoffice() is None or shutil.which("pdftotext") is None, reason="LibreOffice or pdftotext missing"
)
def test_printed_type_is_legible_and_nothing_is_cut(books: dict[str, Path], tmp_path: Path) -> None:
    checked = (("plan", 2, 2), ("compare", 3, 3), ("campaign", 12, 1), ("predict", 1, 1))
    sources = [_reference(tmp_path), *(books[name] for name, _, _ in checked)]  # DeepSeek-V3's book is not read here
    run_soffice("--convert-to", "pdf", "--outdir", str(tmp_path), *map(str, sources), timeout_s=300)
    per_point = _pdf_words(tmp_path / "reference.pdf")[0][0][1] / 11
    for name, rows, systems in checked:
        pages = _pdf_words(tmp_path / f"{name}.pdf")
        for number, words in enumerate(pages, start=1):
            assert words, f"{name}.pdf page {number}: empty"
            smallest = min(height for _, height in words) / per_point
            assert smallest >= SMALLEST_PT, f"{name}.pdf page {number}: {smallest:.1f} pt"
            assert not [word for word, _ in words if "###" in word], f"{name}.pdf page {number}: ###"
        sheets = [_sheet(words) for words in pages]
        summary = pages[: sheets.index("Inputs")]  # the first sheet's pages, before the one that begins the Inputs
        if systems == rows:  # one line per system: the Details of three results print on 3 pages (9 a row each)
            assert sheets.count("Details") <= 3, f"{name}: the Details print on {sheets.count('Details')} pages"
        assert len(summary) == 1, f"{name}: the Summary prints on {len(summary)} pages"
        assert sheets.count("Breakdown") == 1, f"{name}: the Breakdown prints on {sheets.count('Breakdown')} pages"
        printed = [word for word, _ in summary[0]]
        assert "fits_in_memory" not in printed and "usd_per_gpu_hour" not in printed  # the key row is hidden
        assert printed.count("Yes") == rows  # fits in memory: Yes, not 1
        assert "Batch:" in printed and printed.count("Price,") == systems
        assert len(pages) <= PAGES[name], f"{name}: {len(pages)} pages"
    campaign = [word for word, _ in _pdf_words(tmp_path / "campaign.pdf")[0]]
    assert {"252.0M", "2.9T", "133.3B", "40.0M", "15.6T"} <= set(campaign)  # each phase's tokens in its own unit
    assert "0.0T" not in campaign and "$0.0M" not in campaign


TEN_SYSTEMS = ("export", "compare", "--model", "llama3.1-405b", *(
    part for gpu in ("h100-sxm", "h200-sxm", "b200", "gb200", "b300", "gb300", "mi300x", "mi355x",
                     "a100-sxm-80gb:bf16", "mi325x") for part in ("--gpu", gpu)))  # fmt: skip
"""Ten results, each label on 4 lines: the Summary, Inputs and Breakdown each print on more than one page down."""
SPLIT_PAGES = {"sweep": (5, 90, {"Summary": 2, "Inputs": 6, "Breakdown": 4}),
               "ten": (10, 84, {"Summary": 3, "Inputs": 4, "Breakdown": 3})}  # fmt: skip
"""Systems priced, and the pages each prints on at most, in all and on the sheets with a section under their table:
at PAGE_SLACK of every page, 91 and 86, the sweep's Summary on 3 (its last price basis alone) and the comparison's
Inputs on 6."""


@pytest.mark.skipif(
    libreoffice() is None or shutil.which("pdftotext") is None, reason="LibreOffice or pdftotext missing"
)
def test_printed_pages_never_end_on_a_heading_nor_hold_a_lone_row(tmp_path: Path) -> None:
    """The page breaks as LibreOffice prints them, of books whose tables run over pages (a 15-point sweep, a
    10-system comparison): no page ends on a section's heading, none holds one result alone (of the table or of
    the section under it), the Summary's basis prints whole with its heading, and each sheet within its pages."""
    (tmp_path / "sweep.toml").write_text(SWEEP)
    cases = {"sweep": ("export", "sweep", str(tmp_path / "sweep.toml")), "ten": TEN_SYSTEMS}
    for name, args in cases.items():
        assert run_cli(*args, "--out", str(tmp_path / f"{name}.xlsx")).code == 0
    sources = [str(tmp_path / f"{name}.xlsx") for name in cases]
    run_soffice("--convert-to", "pdf", "--outdir", str(tmp_path), *sources, timeout_s=300)
    for name, (systems, most, per_sheet) in SPLIT_PAGES.items():
        text = subprocess.run(["pdftotext", "-layout", str(tmp_path / f"{name}.pdf"), "-"],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
        pages = [[line.strip() for line in page.splitlines() if line.strip()] for page in text.split("\f")[:-1]]
        assert len(pages) <= most, f"{name}: {len(pages)} pages"
        counted = dict.fromkeys(per_sheet, 0)
        for number, lines in enumerate(pages, start=1):
            sheet = lines[0].split()[-1]  # the header's right: the sheet's name
            if sheet not in per_sheet:
                continue
            counted[sheet] += 1
            body = lines[1:-1]  # less the header and the footer
            heading = SECTIONS[sheet]
            assert not body[-1].startswith(heading), f"{name}.pdf page {number}: ends on '{heading}'"
            at = next((index for index, line in enumerate(body) if line.startswith(heading)), len(body))
            for part in (body[:at], body[at:]):
                results = sum(line.startswith("llama3.1-") for line in part)
                assert results != 1, f"{name}.pdf page {number} ({sheet}): one result alone"
            prices = sum(line.startswith("Price, ") for line in body)
            if sheet == "Summary" and prices:
                assert at < len(body) and prices == systems, f"{name}.pdf page {number}: the basis split"
        assert all(count <= per_sheet[sheet] for sheet, count in counted.items()), (name, counted)


def test_a_sheet_counts_its_rows_down_to_its_sections_last(tmp_path: Path) -> None:
    """`_Sheet.rows_pt` (what its page breaks are computed from) reaches the section's last row as its writer lays
    it out (`_Sheet.last`), or a row under it given a height, whichever is lower."""
    import xlsxwriter

    wb = xlsxwriter.Workbook(str(tmp_path / "rows.xlsx"))
    ws = wb.add_worksheet("Rows", xlsx._Sheet)
    ws.section, ws.last = 1, 2
    ws.set_row(1, 40.0)
    assert ws.rows_pt() == [printing.LINE_PT, 40.0, printing.LINE_PT]
    ws.set_row(4, 30.0)
    assert ws.rows_pt() == [printing.LINE_PT, 40.0, printing.LINE_PT, printing.LINE_PT, 30.0]
    wb.close()


def _extents(path: Path) -> dict[str, int]:
    """Each section sheet's extent as the workbook states it (read only: max_row is its dimension)."""
    book = openpyxl.load_workbook(path, read_only=True)
    extents = {name: book[name].max_row for name in SECTIONS}
    book.close()
    return extents


TWO_POINTS = '[sweep]\nmodels = ["llama3.1-8b"]\ngpus = ["h100-sxm", "b200"]\nprecisions = ["bf16"]\nn_gpus = [8]\n'
"""Two points: the smallest sweep a workbook is written of."""


@pytest.mark.parametrize("args", [("predict", "campaign-deepseek-v3"), ("compare", "phases.toml", "--gpu", "h100-sxm",
                                                                        "--gpu", "gb200:fp8"),
                                  ("search", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8"),
                                  ("sweep", "sweep.toml", "-q")])  # fmt: skip
def test_a_section_sheet_counts_every_row_it_holds(args: tuple[str, ...], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The rows each sheet with a section under its table computes its page breaks from (`_Sheet.rows_pt`) are all
    it holds, down to its extent as the workbook states it: the DeepSeek-V3 campaign's Breakdown ends on its last
    phase's shares, the 8B campaign comparison's on its total row's place, empty (a total has no shares) but as tall
    as its bold label; a search's and a sweep's on their last result's shares (the other kinds: the next test)."""
    counted: dict[str, int] = {}
    monkeypatch.setattr(xlsx, "_keep_with_next", _counting(counted))
    (tmp_path / "phases.toml").write_text(PHASES_8B)
    (tmp_path / "sweep.toml").write_text(TWO_POINTS)
    path = tmp_path / "book.xlsx"
    args = tuple(str(tmp_path / arg) if arg.endswith(".toml") else arg for arg in args)
    assert run_cli("export", *args, "--out", str(path)).code == 0
    assert counted == _extents(path)


def test_every_books_section_sheets_count_every_row_they_hold(
    built: tuple[dict[str, Path], dict[str, dict[str, int]]],
) -> None:
    """As above, for the books the other tests read: a plan, a comparison, a campaign, the default prediction and
    DeepSeek-V3's (every export kind, with the search and the sweep above), at no cost of their own."""
    paths, counted = built
    for name, path in paths.items():
        assert counted[name] == _extents(path), name
