"""Export results for planners: CSV and JSON for programs, an XLSX workbook with live formulas for people.

`check_output` runs before any modelling, so that a bad target fails fast; `export` writes atomically.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.record import given
from perfmodel.outputs.atomic import check_output as check_suffix_and_target
from perfmodel.outputs.atomic import write_atomic
from perfmodel.outputs.cells import csv_rows
from perfmodel.outputs.export.table import DEFAULT_USD_PER_KWH, ExportRow, Line, TotalRow, export_rows, records
from perfmodel.outputs.report import check_finite

FORMATS = (".xlsx", ".csv", ".json")

__all__ = ["FORMATS", "ExportRow", "Line", "TotalRow", "check_output", "export"]


def check_output(path: Path, force: bool, reads: Iterable[str | Path | None] = ()) -> str:
    """The format of `path` (from its suffix) once the target is known to be writable and none of the files
    `reads` names; one-line error otherwise."""
    return check_suffix_and_target(path, force, FORMATS, reads=reads)


def export(
    lines: list[Line],
    path: Path,
    *,
    title: str,
    force: bool = False,
    usd_per_kwh: float | None = None,
) -> None:
    """Write `lines` to `path` in the format its suffix names, all at once or not at all: results, and campaigns'
    total rows under their phases' (in the workbook, live formulas over the phases' cells)."""
    fmt = check_output(path, force)
    lines = told_apart(lines)
    rows = export_rows(lines)
    if not rows:
        raise PerfmodelError("nothing to export: no results")
    usd_per_kwh = electricity_price(rows, usd_per_kwh)
    price = DEFAULT_USD_PER_KWH if usd_per_kwh is None else usd_per_kwh
    table = records(lines, price)
    check_finite(table, "export")
    if fmt == "xlsx":
        from perfmodel.outputs.export.assumptions import assumptions, citations
        from perfmodel.outputs.export.xlsx import write_xlsx

        found = assumptions(rows, price, usd_per_kwh is not None)

        def write(handle: BinaryIO) -> None:
            write_xlsx(handle, lines, table, found, title, citations(found))

    else:
        data = _json(table, rows, price, usd_per_kwh is not None) if fmt == "json" else _csv(table)

        def write(handle: BinaryIO) -> None:
            handle.write(data.encode())

    write_atomic(path, write, force)


def electricity_price(rows: list[ExportRow], usd_per_kwh: float | None) -> float | None:
    """The export's electricity price: `--usd-per-kwh`, else the scenarios' own (`--electricity-usd-per-kwh`,
    `[cost] usd_per_kwh`) where they give one, so that neither is read and then dropped; None: neither gave one.
    Two prices that differ are refused: the export has one."""
    costs = [row.prediction.scenario.cost for row in rows]
    own = sorted({cost.usd_per_kwh for cost in costs if "usd_per_kwh" in given(cost)})
    if len(own) > 1 or (own and usd_per_kwh is not None and own != [usd_per_kwh]):
        prices = " and ".join(f"{price:g}" for price in ([usd_per_kwh] if usd_per_kwh is not None else []) + own)
        raise PerfmodelError(f"--usd-per-kwh: the export prices electricity at one price, given {prices} (by "
                             "--usd-per-kwh, --electricity-usd-per-kwh or [cost] usd_per_kwh): give one")  # fmt: skip
    return usd_per_kwh if usd_per_kwh is not None else (own[0] if own else None)


def told_apart(lines: list[Line]) -> list[Line]:
    """The lines, each result whose label another shares named by the extra text columns that differ between them
    (names such as a sweep's `whatif`, not results such as compare's ratios): a sweep's point on the datasheet and
    with twice the NIC bandwidth had one label, and the Summary two rows alike ('llama3.1-70b on 512 x h100-sxm fp8
    TP1 ...'), now '..., whatif datasheet' and '..., whatif nic_gbps=x2'."""
    from dataclasses import replace

    alike: dict[str, list[ExportRow]] = {}
    for line in lines:
        if isinstance(line, ExportRow):
            alike.setdefault(line.label, []).append(line)
    renamed: dict[int, str] = {}
    for group in (group for group in alike.values() if len(group) > 1):
        keys = sorted({key for row in group for key, value in row.extra.items() if isinstance(value, str)})
        differ = [key for key in keys if len({str(row.extra.get(key)) for row in group}) > 1]
        for row in group:
            named = [f"{key} {row.extra[key]}" for key in differ if row.extra.get(key) is not None]
            renamed[id(row)] = ", ".join([row.label, *named])
    return [replace(line, label=renamed[id(line)]) if id(line) in renamed else line for line in lines]


def _csv(table: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(table[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(csv_rows(table))
    return out.getvalue()


def _json(table: list[dict[str, Any]], rows: list[ExportRow], usd_per_kwh: float, given: bool) -> str:
    from dataclasses import asdict

    from perfmodel.outputs.export.assumptions import assumptions, citations

    found = assumptions(rows, usd_per_kwh, given)
    document = {
        "columns": list(table[0]),
        "rows": table,
        "assumptions": [asdict(a) for a in found],
        "sources": [asdict(c) for c in citations(found)],
    }
    return json.dumps(document, indent=2, allow_nan=False) + "\n"
