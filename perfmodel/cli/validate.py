"""`perfmodel validate` and `perfmodel calibrate`: predicted against measured, and refitting on measured runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from perfmodel.cli import cli
from perfmodel.cli.options import (
    FORMATS,
    PRECISION,
    Choice,
    Command,
    FilePath,
    Whole,
    _degree,
    calibration_option,
    complete_ids,
    emit,
    hardware_option,
    say,
    shows_progress,
    table_or_json,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from perfmodel.fitting.runs import Exclusion, MeasuredRun


def _log_hardware(
    gpu: str | None, system: str | None, gpus: int | None, precision: str | None, layout: dict[str, Any], kind: str
) -> dict[str, Any]:
    """The hardware and layout flags of logs: MLPerf logs say none of it; training logs may say the GPU count, the
    precision and the layout (Megatron-LM's printed arguments), never the accelerator."""
    from perfmodel.errors import PerfmodelError

    if (gpu is None and system is None) or (gpus is None and kind == "MLPerf"):
        need = "--gpu (or --system)" + (" and --gpus" if kind == "MLPerf" else "")
        raise PerfmodelError(f"{kind} logs do not say what ran them: pass {need}")
    hardware: dict[str, Any] = {"parallelism": {k: v for k, v in layout.items() if v}}
    hardware |= {"n_gpus": gpus} if gpus else {}
    hardware |= {"precision": precision or "fp8"} if precision or kind == "MLPerf" else {}
    return hardware | ({"gpu": gpu} if gpu else {}) | ({"system": system} if system else {})


def _runs(
    data: str | None,
    logs: tuple[str, ...],
    log_flags: dict[str, Any],
    only: str | None,
    bundled: bool,
    step_logs: tuple[str, ...] = (),
) -> tuple[list[MeasuredRun], list[Exclusion]]:
    """The runs asked for (a CSV, MLPerf logs, training logs, the bundled rows) and the bundled exclusions when those
    are used; the CSV's ignored columns are noted on stderr."""
    from perfmodel.fitting.runs import collect_runs

    return collect_runs(data or None, _read_logs(logs, step_logs, log_flags), only, bundled, _note)


def _note(message: str) -> None:
    """A line on stderr that the output does not hold (a runs CSV's ignored columns), whatever --format and
    wherever stderr goes: unlike `_progress`, it is about the data."""
    say(f"note: {message}", err=True)


def _progress(quiet: bool = False) -> Callable[[str], None]:
    """Where a long fit says how far it is: stderr where `shows_progress`, else nowhere (a log or a pipe keeps only
    the output and the notes, `_note`)."""
    return (lambda m: say(m, err=True)) if shows_progress(quiet) else (lambda _: None)


def _read_logs(logs: tuple[str, ...], step_logs: tuple[str, ...], log_flags: dict[str, Any]) -> list[MeasuredRun]:
    """MLPerf result logs and training logs as runs, on the hardware and layout the flags give."""
    from perfmodel.fitting.mllog import read_log

    if not logs and not step_logs:
        return []
    round_name, step = log_flags.pop("round"), log_flags.pop("step")
    hardware = _log_hardware(**log_flags, kind="MLPerf" if logs else "training")
    return [read_log(path, hardware, round_name) for path in logs] + _step_runs(step_logs, hardware, step)


def _step_runs(paths: tuple[str, ...], hardware: dict[str, Any], step: dict[str, Any]) -> list[MeasuredRun]:
    """Training logs (--logs) as runs of `step["model"]` on the hardware and layout the flags give."""
    from perfmodel.errors import PerfmodelError
    from perfmodel.fitting.steplog import read_step_log

    if paths and step["model"] is None:
        raise PerfmodelError("--logs: training logs do not say which model ran: pass --model")
    parallelism = hardware.get("parallelism", {}) | {k: v for k, v in step["layout"].items() if v is not None}
    scenario = hardware | {"model": step["model"], "parallelism": parallelism}
    return [read_step_log(path, scenario, step["warmup_steps"]) for path in paths]


def _log_options(command: Command) -> Command:
    options = [
        click.option(
            "--gpu",
            help="For MLPerf logs: the accelerator that ran them.",
            shell_complete=complete_ids(("accelerators",)),
        ),
        click.option(
            "--system", help="For MLPerf logs: the system that ran them.", shell_complete=complete_ids(("systems",))
        ),
        click.option("--gpus", type=Whole("GPUs", min=1), help="For MLPerf logs: the number of accelerators."),
        click.option(
            "--precision", type=PRECISION, help="The precision (default: what a training log says, else fp8)."
        ),
        _degree("--tp", "GPUs", "For MLPerf logs: tensor-parallel size (else searched)."),
        _degree("--pp", "stages", "For MLPerf logs: pipeline stages (else searched)."),
        _degree("--cp", "GPUs", "For MLPerf logs: context-parallel size (else searched)."),
        _degree("--vp", "stages", "For MLPerf logs: virtual stages (else searched)."),
        _degree("--mbs", "sequences", "For MLPerf logs: micro-batch size (else searched)."),
        click.option("--round", "round_", help="For MLPerf logs: the round whose rules apply (default: the latest)."),
        click.option(
            "--logs",
            "step_logs",
            multiple=True,
            type=FilePath(),
            help="A Megatron(-Bridge) or torchtitan training log (iteration/step lines), or a folder of one run's "
            "per-rank logs (merged: the slowest rank per step); repeatable, a run each. With --model, --gpu/--system, "
            "--gpus and the layout flags (--gbs: Megatron logs give it).",
        ),
        click.option("--model", help="For --logs: the model that ran (perfmodel models list)."),
        _degree("--gbs", "sequences", "For --logs: global batch size in sequences."),
        click.option("--seq-len", type=Whole("tokens", min=16), help="For --logs: sequence length (default 8192)."),
        _degree("--ep", "GPUs", "For --logs: expert-parallel size (else searched)."),
        click.option("--recompute", type=Choice(["none", "selective", "full"]), help="For --logs."),
        click.option("--zero", type=Whole("stages", 0, 3), help="For --logs: sharding (else searched)."),
        click.option(
            "--warmup-steps",
            type=Whole("steps", min=0),
            help="For --logs: skip logged steps up to this one (default: the first tenth of those logged).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _split_log_flags(flags: dict[str, Any]) -> dict[str, Any]:
    layout = {k: flags.pop(k) for k in ("tp", "pp", "cp", "vp", "mbs")}
    step = {
        "model": flags.pop("model"),
        "warmup_steps": flags.pop("warmup_steps"),
        "layout": {k: flags.pop(k) for k in ("gbs", "seq_len", "ep", "recompute", "zero")},
    }
    return {
        "gpu": flags.pop("gpu"), "system": flags.pop("system"), "gpus": flags.pop("gpus"),
        "precision": flags.pop("precision"), "layout": layout, "round": flags.pop("round_"), "step": step,
    }  # fmt: skip


ONLY_HELP = (
    "Only runs whose id, source or accelerator/precision group contains this text, and the excluded rows whose id "
    "or reason does."
)


@cli.command()
@click.argument("logs", nargs=-1, type=FilePath(dir_okay=False))
@hardware_option
@click.option("--data", type=FilePath(dir_okay=False), help="CSV of measured runs (README: 'Measured runs CSV').")
@click.option("--only", help=ONLY_HELP)
@calibration_option
@click.option(
    "--protocol",
    type=Choice(["forward", "generation", "precision", "scale", "length", "stack", "whole-runs"]),
    help="Out-of-sample protocol on the bundled fitted rows: refit per fold, predict rows the fit never saw "
    "(length: leave one sequence length of the long-sequence table out; stack: leave one software stack out; "
    "whole-runs: leave one published whole run out of the loss fit; it takes --data and --calibration).",
)
@_log_options
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
def validate(
    logs: tuple[str, ...],
    data: str | None,
    only: str | None,
    calibration: str | None,
    protocol: str | None,
    fmt: str,
    **flags: Any,
) -> None:
    """Predict measured runs and report the error per row, per group and overall (MAPE).

    With no arguments: every bundled measured row (MLPerf Training v4.0-v5.1 results, NVIDIA's Megatron-Bridge/NeMo
    and DGX Cloud tables, NeMo's long-sequence table, the Megatron-LM papers, llm-foundry, NVIDIA's MaxText table).
    --data adds a CSV in the documented column set; MLPerf result logs (:::MLLOG) need --gpu/--system and --gpus
    since logs do not record the hardware.
    --protocol forward|generation|precision|scale|length|stack predicts each row from a fit that never saw it
    (docs/validation.md).
    """
    from perfmodel.fitting.validation import validate as run_validation
    from perfmodel.outputs import report
    from perfmodel.physics import calibration as calibrations

    if protocol:
        _validate_protocol(protocol, logs + flags["step_logs"], data, only, calibration, fmt)
        return
    step_logs = flags.pop("step_logs")
    runs, excluded = _runs(data, logs, _split_log_flags(flags), only, bundled=False, step_logs=step_logs)
    result = run_validation(runs, calibrations.resolve(calibration), excluded)
    given = calibration is not None and calibration.lower() != "none"
    before = run_validation(runs, calibrations.bundled(), excluded) if given else None
    full = _with_before(result.to_dict(), before)
    records = full if fmt == "json" else full["rows"]
    emit(records, fmt, lambda: report.validation_table(result, before))


def _with_before(records: dict[str, Any], before: Any) -> dict[str, Any]:
    """A validation's JSON with each row's error under the bundled calibration (`before`: its report, None when the
    bundled calibration is the one validated)."""
    if before is None:
        return records
    earlier = {row.prepared.run.id: row.error_pct for row in before.rows}
    rows = [r | {"error_before_pct": earlier.get(r["id"])} for r in records["rows"]]
    return records | {"rows": rows, "mape_before_pct": before.mape_pct, "calibration_before": before.calibration.source}


def _validate_protocol(
    protocol: str, logs: tuple[str, ...], data: str | None, only: str | None, calibration: str | None, fmt: str
) -> None:
    from perfmodel.errors import PerfmodelError
    from perfmodel.fitting.protocols import run
    from perfmodel.outputs import report

    progress = _progress()
    if protocol == "whole-runs":
        from perfmodel.fitting import whole_runs
        from perfmodel.physics import calibration as calibrations

        if logs:
            raise PerfmodelError("--protocol whole-runs takes whole runs (--data or the bundled ones): drop LOGS")
        chosen, _ = _runs(data, (), {}, only, bundled=False)
        held = whole_runs.protocol(chosen, calibrations.resolve(calibration), progress)
        emit(held.to_dict() if fmt == "json" else held.to_dict()["rows"], fmt, lambda: report.whole_runs_table(held))
        return
    if logs or data or calibration:
        flag = "LOGS" if logs else "--data" if data else "--calibration"
        raise PerfmodelError(f"--protocol refits on the bundled rows (their release dates and formats): drop {flag}")
    runs, excluded = _runs(None, (), {}, only, bundled=True)
    result = run(protocol, runs, excluded, progress)
    records = result.to_dict() if fmt == "json" else result.to_dict()["rows"]
    emit(records, fmt, lambda: report.protocol_table(result))


@cli.command()
@click.argument("logs", nargs=-1, type=FilePath(dir_okay=False))
@hardware_option
@click.option("--data", type=FilePath(dir_okay=False), help="CSV of measured runs to fit on (default: bundled).")
@click.option(
    "--with-bundled",
    is_flag=True,
    help="With --data: fit on the bundled rows of your rows' accelerator families as well, each of your rows "
    "weighing as much as all the bundled rows of its family together.",
)
@click.option(
    "--everywhere",
    is_flag=True,
    help="With --data: apply the fitted values to every accelerator family, not only to your rows' families.",
)
@click.option("--only", help=ONLY_HELP)
@click.option("--out", required=True, type=FilePath(dir_okay=False), help="Where to write the calibration JSON.")
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
@click.option(
    "--cv/--no-cv",
    default=True,
    show_default=True,
    help="Held-out error: leave-one-group-out cross-validation and the four out-of-sample protocols (intervals).",
)
@click.option("--quiet", is_flag=True, help="No progress messages.")
@_log_options
@table_or_json
def calibrate(
    logs: tuple[str, ...],
    data: str | None,
    with_bundled: bool,
    everywhere: bool,
    only: str | None,
    out: str,
    force: bool,
    cv: bool,
    quiet: bool,
    fmt: str,
    **flags: Any,
) -> None:
    """Fit the efficiency parameters to measured runs; report in-sample and held-out (cross-validated) error.

    With --data, training logs (--logs) or MLPerf result logs: the bundled calibration, with only the parameters
    your runs identify refitted on them, for your runs' accelerator families only (README: "Your own measured
    runs"). Logs need --gpu/--system and --gpus, and --model for training logs, as in `validate`.
    """
    from pathlib import Path

    from perfmodel.fitting.user import calibration_from
    from perfmodel.outputs.atomic import check_target, write_atomic

    step_logs = flags.pop("step_logs")
    check_target(Path(out), force, (data, *logs, *step_logs))
    read = _read_logs(logs, step_logs, _split_log_flags(flags))
    fitted = calibration_from(data or None, only, with_bundled, everywhere, cv, _progress(quiet), read, _note)
    write_atomic(Path(out), lambda handle: handle.write(fitted.to_json().encode()), force)
    if "user" in fitted.provenance:
        from perfmodel.outputs.user_calibration import user_calibration_table

        emit(fitted.provenance["user"], fmt, lambda: user_calibration_table(fitted))
        return
    from perfmodel.outputs import report

    emit(fitted.provenance, fmt, lambda: report.calibration_table(fitted))
