"""`perfmodel sweep`: many scenarios from one sweep file, on all cores or on a Ray cluster."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import (
    FORMATS,
    Choice,
    FilePath,
    Whole,
    complete_ids,
    emit,
    hardware_option,
    progress,
    quiet_option,
    say,
)


@cli.command()
@click.argument("sweep_file", type=FilePath(dir_okay=False), shell_complete=complete_ids(("sweeps",), files=True))
@click.option(
    "--jobs", "-j", type=Whole("processes", 1, 1024), default=None, help="Worker processes (default: every core)."
)
@click.option("--executor", type=Choice(["local", "ray"]), default="local", show_default=True)
@click.option("--ray-address", default=None, help="Ray cluster to join (default: start a local one).")
@click.option("--out", type=FilePath(dir_okay=False), help="Write the rows to FILE.csv or FILE.json instead.")
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
@hardware_option
@quiet_option
def sweep(
    sweep_file: str,
    jobs: int | None,
    executor: str,
    ray_address: str | None,
    out: str | None,
    force: bool,
    fmt: str,
    quiet: bool,
) -> None:
    """Predict the cross product of models x systems x precisions x GPU counts x what-ifs in SWEEP_FILE.

    \b
    [sweep]
    base = "my-scenario.toml"              # optional, relative to the sweep file
    models = ["llama3.1-70b", "ours.toml"] # zoo ids or model files (relative to the sweep file)
    gpus = ["h100-sxm", "gb200"]           # accelerator or system ids
    precisions = ["fp8", "bf16"]
    n_gpus = [512, 1024]
    whatifs = [{}, {nvlink_gbps = "x2"}]   # settings as for perfmodel whatif
    [sweep.set]                            # scenario keys for every point
    tokens = 15e12
    [sweep.layouts]                        # optional: given layouts, priced as arrays
    tp = [1, 2, 4, 8]                      # also pp, cp, dp, vp, ep, etp, mbs, gbs, recompute, zero

    One row per point, in the columns of `perfmodel predict --format csv` with `whatif` and `error` after them; a point
    that cannot run (does not fit, unsupported precision) has only its identity and its error. With [sweep.layouts]
    every point is crossed with every listed layout (up to 1,000,000 points, written as they are priced); its rows
    have the prediction's columns up to the run's cost, and an invalid layout says which rules it breaks.
    """
    from perfmodel.outputs import plan_report, record
    from perfmodel.outputs.atomic import check_output, write_atomic
    from perfmodel.planning import sweep as sweeping

    target = Path(out) if out else None
    suffix = check_output(target, force, (".csv", ".json"), reads=(sweep_file,)) if target else None  # before work
    points = sweeping.load(sweep_file)
    if not isinstance(points, list):
        _layouts(points, jobs or os.cpu_count() or 1, executor, ray_address, target, suffix or fmt, force, quiet)
        return
    with progress(f"{len(points)} points", quiet) as update:
        rows = record.table(sweeping.run(points, jobs or os.cpu_count() or 1, executor, ray_address, update))
    if target:
        from perfmodel.outputs import report

        text = report.to_json(rows) + "\n" if suffix == "json" else report.to_csv(rows)
        write_atomic(target, lambda handle: handle.write(text.encode()), force)
    failed = sum(1 for r in rows if r["error"])
    if failed:
        say(f"{failed} of {len(rows)} points could not run (see the error column)", err=True)
    if target:
        say(f"wrote {len(rows)} rows to {out}", err=True)
        return
    emit(rows, fmt, lambda: plan_report.sweep_table(rows))


def _layouts(
    sweep: Any, jobs: int, executor: str, address: str | None, target: Path | None, fmt: str, force: bool, quiet: bool
) -> None:
    """A layouts sweep: chunks of rows written as they are priced (CSV, JSON), or a table of at most 10,000 rows."""
    from perfmodel.errors import PerfmodelError
    from perfmodel.outputs import plan_report
    from perfmodel.outputs.atomic import write_atomic
    from perfmodel.planning import layout_sweep
    from perfmodel.planning.sweep import MAX_POINTS

    if fmt == "table" and sweep.size > MAX_POINTS:
        raise PerfmodelError(
            f"{sweep.path}: field 'sweep.layouts': {sweep.size:,} points are too many for a table (at most "
            f"{MAX_POINTS:,}): use --format csv or json, or --out FILE.csv"
        )
    failed = 0

    def write_rows(handle: Any) -> None:
        nonlocal failed
        with progress(f"{sweep.size:,} points", quiet) as update:
            for text, errors in _texts(layout_sweep.run(sweep, jobs, executor, address, update), fmt):
                handle.write(text.encode() if target else text)
                failed += errors

    if target:
        write_atomic(target, write_rows, force)
    elif fmt == "table":
        rows = [row for columns in layout_sweep.run(sweep, jobs, executor, address) for row in _rows(columns)]
        failed = sum(1 for r in rows if r["error"])
        say(plan_report.sweep_table(rows))
    else:
        write_rows(sys.stdout)
    if failed:
        say(f"{failed:,} of {sweep.size:,} points could not run or do not fit (see the error column)", err=True)
    if target:
        say(f"wrote {sweep.size:,} rows to {target}", err=True)


def _rows(columns: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """A chunk's columns as rows, in the prediction record's column order."""
    from perfmodel.outputs import record

    names = record.header([dict.fromkeys(columns)])
    return [dict(zip(names, values, strict=True)) for values in zip(*(columns[k] for k in names), strict=True)]


def _texts(chunks: Iterator[dict[str, list[Any]]], fmt: str) -> Iterator[tuple[str, int]]:
    """Each chunk as the text of `fmt` (csv or json: the text report.to_csv/to_json give for all the rows at once),
    built column by column (a million rows in seconds, not minutes), and its rows with an error. The figures were
    checked finite when priced (layout_sweep.price_chunk)."""
    import csv
    import io

    from perfmodel.outputs import record

    first = True
    for columns in chunks:
        names = record.header([dict.fromkeys(columns)])
        out = io.StringIO()
        if fmt == "json":
            keys = [f'    "{name}": ' for name in names]
            cells = [_json_column(columns[name]) for name in names]
            out.write("[\n" if first else ",\n")
            out.write(
                ",\n".join(
                    "  {\n" + ",\n".join(map(str.__add__, keys, row)) + "\n  }" for row in zip(*cells, strict=True)
                )
            )
        else:
            writer = csv.writer(out, lineterminator="\n")
            if first:
                writer.writerow(names)
            writer.writerows(zip(*(_csv_column(columns[name]) for name in names), strict=True))
        first = False
        yield out.getvalue(), len(columns["error"]) - columns["error"].count(None)
    if fmt == "json":
        yield "\n]\n", 0


def _json_column(values: list[Any]) -> list[str]:
    """A column's values as json.dumps writes them: numbers as their repr, anything else encoded once per distinct
    value (a column of ids, flags or layout degrees has a handful)."""
    if all(v is None or type(v) is float for v in values):
        return ["null" if v is None else repr(v) for v in values]
    text = {key: _json_cell(key[1]) for key in {(type(v), v) for v in values}}  # by type: True == 1 == 1.0
    return [text[type(v), v] for v in values]


def _json_cell(value: Any) -> str:
    """One value as json.dumps writes it."""
    from json.encoder import encode_basestring_ascii

    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    return repr(value)


def _csv_column(values: list[Any]) -> list[Any]:
    """A column's cells (outputs.cells.csv_cell), looked at once per distinct text."""
    from perfmodel.outputs.cells import csv_cell

    if not any(isinstance(v, str) and csv_cell(v) != v for v in set(values)):
        return values
    return [csv_cell(v) for v in values]
