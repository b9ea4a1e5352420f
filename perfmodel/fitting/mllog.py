"""MLPerf result logs (`:::MLLOG` lines) as measured runs, read with mlperf-logging's own parser.

A log gives the benchmark, the global batch, the wall clock between run_start and run_stop, the samples trained
and the evaluations made. It does not say which accelerators ran it or how they were laid out: that comes from the
caller (the `validate` flags), as a scenario. A value of the wrong type or sign is one line naming the file and the
line (counted from 1; mlperf-logging's `lineno` counts from 0).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfmodel.errors import PerfmodelError, shown
from perfmodel.fitting.runs import MeasuredRun, check_scenario
from perfmodel.inputs.files import check_depth, read_text
from perfmodel.inputs.mlperf import BENCHMARKS, get_benchmark
from perfmodel.inputs.numbers import allowed, in_range

TOKEN = ":::MLLOG "  # noqa: S105 (a log marker, not a password)
"""The `:::MLLOG` line format is the same from v4.0 on (mlperf-logging's ruleset 5.0.0 parser reads it); the
round's rules come from the benchmark id."""
MINUTES_RANGE = (1e-3, 1e7)
"""A timed region from a tenth of a second to 19 years (MLPerf runs take minutes to hours)."""
COUNT_MAX = 1e18
"""Samples, epochs and batch sizes: far beyond any run, below where float arithmetic loses whole numbers' meaning."""
MAX_LINE_CHARS = 16_384
"""Real result-log lines are under 1 kB (the longest, hyperparameter lists, about 600 characters)."""
NAMES = {bench.name: bench_id for bench_id, rounds in BENCHMARKS.items() for bench in rounds.values()}


def read_log(path: str | Path, hardware: dict[str, Any], round_name: str | None = None) -> MeasuredRun:
    """One result log as a run; `hardware` is the scenario part the log lacks (gpu/system, n_gpus, precision,
    parallelism). A log that is not a complete, successful MLPerf run is one line naming the file and the line."""
    from mlperf_logging.compliance_checker.mlp_parser.ruleset_500 import parse_generator

    path = Path(path)
    text = read_text(path, "log", encoding="latin-1")  # as mlperf-logging's parse_file reads it
    checked = _checked_lines(path, text)
    try:
        lines, errors = parse_generator(checked)
    except (ValueError, KeyError, TypeError, OverflowError) as exc:  # OverflowError: a time beyond float range
        raise PerfmodelError(f"{path}: not an MLPerf result log ({type(exc).__name__}: {exc})") from None
    if errors:
        text, message = errors[0]
        raise PerfmodelError(f"{path}: unparsable :::MLLOG line '{text[:60]}' ({message})")
    events: dict[str, list[Any]] = {}
    for line in lines:
        if not isinstance(line.key, str):
            raise PerfmodelError(
                f"{path}: line {line.lineno + 1}: the event's key is {shown(repr(line.key))}; it must be text"
            )
        events.setdefault(line.key, []).append(line)

    def one(key: str) -> Any:
        if key not in events:
            raise PerfmodelError(f"{path}: no '{key}' event; a complete MLPerf result log has one")
        return events[key][0]

    name = _value(one("submission_benchmark"))
    if not isinstance(name, str) or name not in NAMES:
        raise PerfmodelError(f"{path}: benchmark {name!r} is not modelled; valid: {', '.join(NAMES)}")
    bench = get_benchmark(NAMES[name] + (f"@{round_name}" if round_name else ""))
    stop = one("run_stop")
    status = _metadata(stop).get("status")
    if status != "success":
        raise PerfmodelError(f"{path}: line {stop.lineno + 1}: run_stop status is '{status}', not a converged run")
    minutes = (stop.timestamp - one("run_start").timestamp) / 60_000
    evaluations = events.get("eval_accuracy", [])
    if not evaluations:
        raise PerfmodelError(f"{path}: no eval_accuracy event; a complete MLPerf result log has one")
    if not in_range(minutes, *MINUTES_RANGE):  # NaN timestamps pass a `minutes <= 0` check
        raise PerfmodelError(
            f"{path}: line {stop.lineno + 1}: run_start to run_stop is {minutes!r} minutes; it must be "
            f"{allowed(*MINUTES_RANGE)}"
        )
    last_eval = evaluations[-1]
    last = _metadata(last_eval)
    if "samples_count" in last:
        samples = _positive(path, last_eval, "samples_count", last["samples_count"])
    elif "epoch_num" in last:  # GPT-3 logs count tokens
        samples = _positive(path, last_eval, "epoch_num", last["epoch_num"]) / (
            bench.seq_len if bench.rcp_tokens else 1
        )
    else:
        raise PerfmodelError(f"{path}: line {last_eval.lineno + 1}: eval_accuracy has no samples_count/epoch_num")
    gbs_event = one("global_batch_size")
    gbs = int(_positive(path, gbs_event, "global_batch_size", _value(gbs_event), whole=True))
    parallelism = dict(hardware.get("parallelism") or {}) | {"gbs": gbs}
    scenario = {k: v for k, v in hardware.items() if k != "parallelism"} | {
        "benchmark": f"{bench.id}@{bench.round}",
        "parallelism": parallelism,
    }
    run = MeasuredRun(
        f"log:{path.name}", f"MLPerf log {bench.round}", scenario, "time_to_train_min", minutes, (), str(path),
        samples, float(len(evaluations)),
    )  # fmt: skip
    check_scenario(run, str(path))
    return run


def _checked_lines(path: Path, text: str) -> list[str]:
    """The log's lines, each `:::MLLOG` line within MAX_LINE_CHARS and MAX_DEPTH before mlperf-logging's parser
    sees it: its line regex takes time quadratic in the line's length, and its JSON decoder recurses per level."""
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if TOKEN not in line:
            continue
        if len(line) > MAX_LINE_CHARS:
            raise PerfmodelError(
                f"{path}: line {number}: an :::MLLOG line of {len(line):,} characters; at most {MAX_LINE_CHARS:,}"
            )
        check_depth(line, f"{path}: line {number}")
    return lines


def _value(event: Any) -> Any:
    """An event's value (None when the line has none)."""
    return event.value.get("value") if isinstance(event.value, dict) else None


def _metadata(event: Any) -> dict[str, Any]:
    """An event's metadata table (empty when the line has none, or something else than a table)."""
    metadata = event.value.get("metadata") if isinstance(event.value, dict) else None
    return metadata if isinstance(metadata, dict) else {}


def _positive(path: Path, event: Any, name: str, value: Any, whole: bool = False) -> float:
    """A positive finite number (whole when `whole`) from a log line, or one line naming the line and the key."""
    if not in_range(value, 0, COUNT_MAX) or value <= 0 or (whole and value != int(value)):
        kind = "a positive whole number" if whole else "a positive number"
        raise PerfmodelError(
            f"{path}: line {event.lineno + 1}: {name} is {shown(repr(value))}; it must be {kind} up to {COUNT_MAX:g}"
        )
    return float(value)
