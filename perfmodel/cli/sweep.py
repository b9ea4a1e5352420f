"""`perfmodel sweep`: many scenarios from one sweep file, on all cores or on a Ray cluster."""

from __future__ import annotations

import os
from pathlib import Path

import click

from perfmodel.cli import cli
from perfmodel.cli.options import FORMATS, FilePath, emit, progress, quiet_option


@cli.command()
@click.argument("sweep_file", type=FilePath(dir_okay=False))
@click.option(
    "--jobs", "-j", type=click.IntRange(1, 1024), default=None, help="Worker processes (default: every core)."
)
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option("--ray-address", default=None, help="Ray cluster to join (default: start a local one).")
@click.option("--out", type=FilePath(dir_okay=False), help="Write the rows to FILE.csv or FILE.json instead.")
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
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
    models = ["llama3.1-70b", "llama3.1-405b"]
    gpus = ["h100-sxm", "gb200"]           # accelerator or system ids
    precisions = ["fp8", "bf16"]
    n_gpus = [512, 1024]
    whatifs = [{}, {nvlink_gbps = "x2"}]   # settings as for perfmodel whatif
    [sweep.set]                            # scenario keys for every point
    tokens = 15e12

    One row per point, in the columns of `perfmodel predict --format csv` with `whatif` and `error` after them; a point
    that cannot run (does not fit, unsupported precision) has only its identity and its error.
    """
    from perfmodel.outputs import plan_report, record
    from perfmodel.outputs.atomic import check_output, write_atomic
    from perfmodel.planning import sweep as sweeping

    target = Path(out) if out else None
    suffix = check_output(target, force, (".csv", ".json"), reads=(sweep_file,)) if target else None  # before work
    points = sweeping.load_points(sweep_file)
    with progress(f"{len(points)} points", quiet) as update:
        rows = record.table(sweeping.run(points, jobs or os.cpu_count() or 1, executor, ray_address, update))
    if target:
        from perfmodel.outputs import report

        text = report.to_json(rows) + "\n" if suffix == "json" else report.to_csv(rows)
        write_atomic(target, lambda handle: handle.write(text.encode()), force)
    failed = sum(1 for r in rows if r["error"])
    if failed:
        click.echo(f"{failed} of {len(rows)} points could not run (see the error column)", err=True)
    if target:
        click.echo(f"wrote {len(rows)} rows to {out}", err=True)
        return
    emit(rows, fmt, lambda: plan_report.sweep_table(rows))
