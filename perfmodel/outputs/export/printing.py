"""How the workbook prints: column widths from what the cells show (never `###`, never a cut heading word), and
each sheet's page setup, at a scale whose type stays legible on paper.

A sheet narrow enough to fit one landscape A4 page wide at SMALLEST_SCALE or more is fitted to one page wide (as
many tall as its rows need); a wider one (Results has about 90 columns) prints at SMALLEST_SCALE across as many
pages as it needs, left to right, each with the results' labels (column A) and the headings repeated, so that every
page reads on its own, the columns split evenly across them (page_columns). Every page carries the workbook's
title, the sheet, the date printed and its page number.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Sequence
from typing import Any

A4 = 9
"""XlsxWriter's paper code for A4."""
A4_LANDSCAPE_WIDTH_PT = 841.89
SIDE_MARGIN_IN = 0.4
PRINTABLE_WIDTH_PT = A4_LANDSCAPE_WIDTH_PT - 2 * 72 * SIDE_MARGIN_IN
TOP_MARGIN_IN, BOTTOM_MARGIN_IN = 0.75, 0.6
PRINTABLE_HEIGHT_PT = 595.28 - 72 * (TOP_MARGIN_IN + BOTTOM_MARGIN_IN)
"""A4 landscape's height less the margins (the header and footer print inside them)."""
SMALLEST_SCALE = 65
"""Percent: the default 11-pt type prints at 7.2 pt, the smallest a procurement reader is asked to read."""
YES_NO = '"Yes";"Yes";"No"'
"""A true/false cell's number format: it prints Yes or No (LibreOffice; Excel shows TRUE/FALSE), never 1 or 0."""
WIDEST_TEXT = 28
"""Characters: a longer text column wraps its cells at this width."""
FONT_PT = 11.0
"""The workbook's default type size (Calibri 11)."""
LINE_PT = 15
"""Height of a row of one line of the default 11-pt type."""
NEXT_LINE_PT = 13.5
"""Each further line of a wrapped row: Calibri's line spacing, 1.2207 em of 11 pt (13.4; DejaVu Sans, which
LibreOffice prints in without it, 1.164 em: 12.8). At 15 a line, a 4-line label's row printed 4.7 lines tall."""


def shown(value: Any, number_format: str = "General") -> str:
    """The text a cell shows for `value` under `number_format`: the currency or unit text quoted before and after
    the digits, thousands separators, fixed decimals, a `%`, each comma after the digits a thousand, or scientific
    notation (`0.000E+00`; a General or other format: the number's shortest form, as wide)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if not isinstance(value, int | float):
        return str(value)
    section = _section(value, number_format)
    scientific = re.fullmatch(r"0\.(0+)E\+00", section)
    if scientific:
        return f"{value:.{len(scientific.group(1))}E}"
    parts = NUMBER_FORMAT.fullmatch(section)
    if parts is None:
        return f"{value:.10g}"
    before, digits, after = (part.replace('"', "") for part in parts.groups())
    scaled = digits.rstrip(",")
    value /= 1000 ** (len(digits) - len(scaled))
    percent = scaled.endswith("%")
    fraction = scaled.split(".", 1)[1] if "." in scaled else ""
    fixed, most = fraction.count("0"), len(fraction.rstrip("%"))  # a '#' decimal shows only where it is not 0
    number = value * 100 if percent else value
    text = f"{number:{',' if ',' in scaled else ''}.{most}f}"
    if most > fixed:
        text = text[: len(text) - (most - fixed)] + text[len(text) - (most - fixed) :].rstrip("0")
    return f"{before}{text}{'%' if percent else ''}{after}"


NUMBER_FORMAT = re.compile(r'((?:"[^"]*"|\$)*)([#0,.%]+)((?:"[^"]*")*)')
"""A number format as workbooks here write them: quoted text or `$`, the digits' placeholders, quoted text."""


def _section(value: float, number_format: str) -> str:
    """The section of a conditional number format (`[>=1000]...;...`) that shows `value`, its condition dropped."""
    for section in number_format.split(";"):
        condition = re.match(r"\[>=([0-9.eE+]+)\]", section)
        if condition is None:
            return section
        if value >= float(condition.group(1)):
            return section[condition.end() :]
    return number_format


def width(header: str, texts: Iterable[str], narrowest: float = 6.0) -> float:
    """Characters wide enough for every text (up to WIDEST_TEXT, then it wraps) and for the heading's longest word,
    the heading wrapping on up to six lines (on four, a Details column under a 190-character heading was 49
    characters wide, and a 3-system comparison's Details printed on 10 pages, now 8)."""
    longest = max((len(text) for text in texts), default=0)
    word = max((len(part) for part in header.split()), default=0)
    return max(narrowest, min(float(longest), WIDEST_TEXT) + 1, word + 1, len(header) / 6 + 1)


def lines(text: str, chars: float, bold: bool = False, size_pt: float = FONT_PT) -> int:
    """Lines that `text` wraps onto in a column `chars` wide as LibreOffice prints it: word by word, and after a
    hyphen before a letter (`GPU-` / `hour`), each line at most the column's points less WIDTH_SLACK and
    CELL_PADDING_PT wide in DejaVu Sans (text_pt). Counting 1.2 characters a character of width less two, a
    56-character Inputs heading in a 14-wide column A counted 5 lines where LibreOffice wrapped 4. Type of
    `size_pt` (a title's) is that much wider."""
    room = (1 - WIDTH_SLACK) * points(chars) - CELL_PADDING_PT
    count, used, space = 1, 0.0, text_pt(" ", bold, size_pt)
    for word in text.split():
        for index, piece in enumerate(re.split(r"(?<=-)(?=[A-Za-z])", word)):
            wide = text_pt(piece, bold, size_pt)
            gap = space if used and index == 0 else 0.0
            if used and used + gap + wide > room:
                count, used = count + 1, 0.0
                gap = 0.0
            count += max(0, math.ceil(wide / room) - 1)  # a piece wider than the column breaks within itself
            used = used + gap + wide if wide <= room else wide % room
    return count


def text_pt(text: str, bold: bool = False, size_pt: float = FONT_PT) -> float:
    """Points `text` takes in DejaVu Sans of `size_pt`, the font LibreOffice prints Calibri in where Calibri and
    Carlito are missing (as here): wider than either, so a row tall enough for it holds the text in Excel too. Other
    characters count as wide as `@`, the widest."""
    units = sum(DEJAVU_SANS_UNITS.get(char, 2048) for char in text)
    return units / 2048 * size_pt * (BOLD_WIDER if bold else 1.0)


_WIDTHS = (
    ("'", 563), ("ijl", 569), ("IJ", 604), (" ,.", 651), ("/:;\\|", 690), ("f", 721), ("-", 739),
    ("()[]", 799), ("t", 803), ("!", 821), ("r", 842), ('"', 942), ("*_`", 1024), ("s", 1067), ("z", 1075),
    ("?", 1087), ("c", 1126), ("L", 1141), ("F", 1178), ("k", 1186), ("vxy", 1212), ("P", 1235), ("TY", 1251),
    ("o", 1253), ("a", 1255), ("e", 1260), ("E", 1294), ("hnu", 1298), ("Sbdgpq", 1300),
    ("$0123456789{}", 1303), ("K", 1343), ("AV", 1401), ("XZ", 1403), ("B", 1405), ("R", 1423), ("C", 1430),
    ("U", 1499), ("N", 1532), ("H", 1540), ("D", 1577), ("G", 1587), ("&", 1597), ("OQ", 1612), ("w", 1675),
    ("#+<=>^~", 1716), ("M", 1767), ("%", 1946), ("m", 1995), ("W", 2025), ("@", 2048),
)  # fmt: skip
DEJAVU_SANS_UNITS = {char: units for chars, units in _WIDTHS for char in chars}
"""Advance widths (of 2048 units an em) of the printable ASCII characters in DejaVu Sans 2.37 (its `hmtx` table:
/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf, the copy matplotlib bundles is the same)."""
BOLD_WIDER = 1.13
"""DejaVu Sans Bold over Book, in the workbook's headings' text (1.125; 1.12 over the printable ASCII characters)."""
CELL_PADDING_PT = 3.0
"""Points of a column LibreOffice keeps clear of text, 0 to 3.3: in a 208-pt column (29 characters) it wrapped a
12-point sweep's labels after lines of up to 204.7 pt and broke lines that would have been 208.1; in a 103-pt one
(14) it printed `see Assumptions)`, 97.5 pt, on one line."""
WIDTH_SLACK = 0.02
"""Share of a column a line leaves unused as text_pt measures it (sums of advance widths; LibreOffice kerns pairs):
in the 565-pt Source column of the Assumptions a line of 562.8 pt printed whole while one of 560.4 broke before its
last word (`hardware).`, then cut off in its row)."""


def height_pt(count: int, size_pt: float = FONT_PT) -> float:
    """Points for a row of `count` lines of the default type, or of type `size_pt` (its lines that much taller)."""
    return (LINE_PT + (count - 1) * NEXT_LINE_PT) * size_pt / FONT_PT


def points(chars: float) -> float:
    """A column's printed width in points: the pixels XlsxWriter gives a column `chars` wide for the default font
    (xlsxwriter/worksheet.py, Worksheet.set_column, 3.3: `int(width * 7 + 0.5) + 5`, under one character
    `int(width * 12 + 0.5)`; the workbook stores those pixels), which LibreOffice prints a point each (Excel prints
    them at 96 dpi, narrower: LibreOffice's is the wider page). Truncating `chars * 7 + 5` counted a pixel short
    wherever `chars * 7` ends in .5 or more (6.5 characters: 50 points for XlsxWriter's 51)."""
    if chars < 1:
        return float(int(chars * 12 + 0.5))
    return float(int(chars * 7 + 0.5) + 5)


def on_first_page(widths: Sequence[float]) -> int:
    """How many columns, from A, the first printed page holds (at least one)."""
    starts = page_columns(widths)
    return starts[0] if starts else len(widths)


ACROSS_SLACK = 0.005
"""Share of a page printed across that its columns leave unused: LibreOffice 7.4 broke a campaign's Results page
of 10 columns counted 1,206 of its 1,206.6 points before the last column, which printed alone on a page, and
printed a plan's of 1,200 whole; at 1%, that plan's Results took 14 pages across where 13 hold them."""


def page_columns(widths: Sequence[float]) -> list[int]:
    """The columns (0-based) that begin each printed page after the first of a sheet too wide for one page at
    SMALLEST_SCALE (none for one that fits), which prints across pages at that scale, column A repeated on each: as
    few pages as the columns need, their widths as even as they can be (the least sum of squared widths). Left to
    fill each page in turn, the last held what was left: DeepSeek-V3's Results printed 11 full pages and a 12th of
    3 columns."""
    if scale(widths) >= SMALLEST_SCALE:
        return []
    room = (1 - ACROSS_SLACK) * 100 * PRINTABLE_WIDTH_PT / SMALLEST_SCALE - points(widths[0])
    wide = [points(chars) for chars in widths[1:]]
    ends = [0.0]
    for width in wide:
        ends.append(ends[-1] + width)
    # best[i]: (pages, sum of squared widths, the first column of the last page) for the first i columns after A
    best: list[tuple[float, float, int]] = [(0, 0.0, 0)] + [(math.inf, math.inf, 0)] * len(wide)
    for end in range(1, len(wide) + 1):
        start = end - 1
        while (start >= 0 and ends[end] - ends[start] <= room) or start == end - 1:
            pages, squares, _ = best[start]
            best[end] = min(best[end], (pages + 1, squares + (ends[end] - ends[start]) ** 2, start))
            start -= 1
    starts, end = [], len(wide)
    while end > 0:
        end = best[end][2]
        starts.append(end + 1)  # its index among all columns, A the 0th
    return sorted(starts)[1:]


def scale(widths: Sequence[float]) -> float:
    """Percent at which the columns (`widths`, in characters) fit one page wide (at most 100)."""
    return min(100.0, 100 * PRINTABLE_WIDTH_PT / sum(points(w) for w in widths))


def page_starts(heights_pt: Sequence[float], opening_pt: Sequence[float], room_pt: float, used_pt: float,
                keep: Collection[int] = (), kept_room_pt: float = math.inf,
                headings: Collection[int] = ()) -> list[int]:  # fmt: skip
    """The rows (indices) that begin a printed page of `room_pt`, the first page with `used_pt` taken already: each
    row `heights_pt` tall, or `opening_pt` where it begins a page (with the rows repeated atop it, or repeating
    what the rows above said). A row in `keep` (a section's heading, or a run of rows to print together) is never
    the last on a page that holds more: where the row under it would begin a page, the page begins at the first of
    the run of kept rows above instead (a run longer than a page breaks where it fills one). A row under one of
    `headings` (a section's heading and the rows printed with it) must fit in `kept_room_pt` too, a page less the
    slack of the estimated heights: elsewhere a page is filled whole, and only a heading moves on early."""
    starts: list[int] = []
    for index, height in enumerate(heights_pt):
        room = min(room_pt, kept_room_pt) if index - 1 in headings else room_pt
        if used_pt + height > room and used_pt > 0:
            first = starts[-1] if starts else 0
            start = index
            while start - 1 in keep and start - 1 > first:
                start -= 1
            if start == first + 1 and first in keep:  # the page holds the kept run alone: too long for a page
                start = index
            starts.append(start)
            used_pt = opening_pt[start] + sum(heights_pt[start + 1 : index + 1])
        else:
            used_pt += height
    return starts


def set_up(ws: Any, widths: Sequence[float], title: str, heading_rows: tuple[int, int] | None) -> None:
    """Landscape A4; one page wide when the columns (`widths`, in characters, column A first) fit at SMALLEST_SCALE
    or more, else SMALLEST_SCALE across pages with column A repeated; `heading_rows` (first, last; 0-based)
    repeated on every page; the title, sheet, date printed and page number in the header and footer."""
    ws.set_landscape()
    ws.set_paper(A4)
    ws.set_margins(left=SIDE_MARGIN_IN, right=SIDE_MARGIN_IN, top=TOP_MARGIN_IN, bottom=BOTTOM_MARGIN_IN)
    ws.set_header(f"&L&B{_field(title)}&R&A", {"margin": 0.3})
    ws.set_footer("&LPrinted &D&Rpage &P of &N", {"margin": 0.3})
    if heading_rows is not None:
        ws.repeat_rows(*heading_rows)
    if scale(widths) >= SMALLEST_SCALE:
        ws.fit_to_pages(1, 0)
    else:
        ws.set_print_scale(SMALLEST_SCALE)
        ws.repeat_columns(0, 0)
        ws.print_across()
        ws.set_v_pagebreaks(page_columns(widths))


def _field(text: str) -> str:
    """Text for a header or footer: `&` doubled (a single one starts a code), within the 255 characters allowed."""
    return text.replace("&", "&&")[:200]


def significant(value: float, digits: int, most: int | None = None) -> str:
    """A number format showing `value` (not 0) to `digits` significant digits, with thousands separators and at
    most `most` decimals when given: 0.1234 as `#,##0.0000` at 4 digits, 16.57 as `#,##0.00`."""
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    decimals = decimals if most is None else min(most, decimals)
    return f"#,##0{'.' + '0' * decimals if decimals else ''}"


def compact(prefix: str = "", smallest: int = 2) -> str:
    """A number format that shows each cell's count in the largest of three units it reaches, the last a power
    `smallest` of a thousand: trillions, billions or millions by default (15.6T, 252.0M), millions, thousands or
    whole for 0 (with prefix `"$"`: $55.2M, $2.2K, $604). Two conditions: the most a number format holds."""
    letters = {4: "T", 3: "B", 2: "M", 1: "K", 0: ""}
    sections = []
    for power in range(smallest + 2, smallest - 1, -1):
        fmt = f'{prefix}#,##0{".0" if power else ""}{"," * power}"{letters[power]}"'.replace('""', "")
        sections.append(f"[>={1000**power}]{fmt}" if power > smallest else fmt)
    return ";".join(sections)
