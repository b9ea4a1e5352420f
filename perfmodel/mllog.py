"""MLPerf result logs (`:::MLLOG` lines) as measured runs, read with mlperf-logging's own parser.

A log gives the benchmark, the global batch, the wall clock between run_start and run_stop, the samples trained
and the evaluations made. It does not say which accelerators ran it or how they were laid out: that comes from the
caller (the `validate` flags), as a scenario.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfmodel.errors import PerfmodelError
from perfmodel.mlperf import BENCHMARKS, get_benchmark
from perfmodel.runs import MeasuredRun

PARSER_RULESET = "5.0.0"
"""The `:::MLLOG` line format is the same from v4.0 on; the round's rules come from the benchmark id."""
NAMES = {bench.name: bench_id for bench_id, rounds in BENCHMARKS.items() for bench in rounds.values()}


def read_log(path: str | Path, hardware: dict[str, Any], round_name: str | None = None) -> MeasuredRun:
    """One result log as a run; `hardware` is the scenario part the log lacks (gpu/system, n_gpus, precision,
    parallelism). A log that is not a complete, successful MLPerf run is one line naming the file and the line."""
    from mlperf_logging.compliance_checker.mlp_parser import parse_file

    path = Path(path)
    try:
        lines, errors = parse_file(str(path), ruleset=PARSER_RULESET)
    except FileNotFoundError:
        raise PerfmodelError(f"{path}: no such log file") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PerfmodelError(f"{path}: not an MLPerf result log ({type(exc).__name__}: {exc})") from None
    if errors:
        text, message = errors[0]
        raise PerfmodelError(f"{path}: unparsable :::MLLOG line '{text[:60]}' ({message})")
    events: dict[str, list[Any]] = {}
    for line in lines:
        events.setdefault(line.key, []).append(line)

    def one(key: str) -> Any:
        if key not in events:
            raise PerfmodelError(f"{path}: no '{key}' event; a complete MLPerf result log has one")
        return events[key][0]

    name = str(one("submission_benchmark").value["value"])
    if name not in NAMES:
        raise PerfmodelError(f"{path}: benchmark '{name}' is not modelled; valid: {', '.join(NAMES)}")
    bench = get_benchmark(NAMES[name] + (f"@{round_name}" if round_name else ""))
    stop = one("run_stop")
    status = (stop.value.get("metadata") or {}).get("status")
    if status != "success":
        raise PerfmodelError(f"{path}: line {stop.lineno}: run_stop status is '{status}', not a converged run")
    minutes = (stop.timestamp - one("run_start").timestamp) / 60_000
    evaluations = events.get("eval_accuracy", [])
    if not evaluations or minutes <= 0:
        raise PerfmodelError(f"{path}: no eval_accuracy event or no time between run_start and run_stop")
    last = evaluations[-1].value.get("metadata") or {}
    if "samples_count" in last:
        samples = float(last["samples_count"])
    elif "epoch_num" in last:  # GPT-3 logs count tokens
        samples = float(last["epoch_num"]) / (bench.seq_len if bench.rcp_tokens else 1)
    else:
        raise PerfmodelError(f"{path}: line {evaluations[-1].lineno}: eval_accuracy has no samples_count/epoch_num")
    gbs = int(one("global_batch_size").value["value"])
    parallelism = dict(hardware.get("parallelism") or {}) | {"gbs": gbs}
    scenario = {k: v for k, v in hardware.items() if k != "parallelism"} | {
        "benchmark": f"{bench.id}@{bench.round}",
        "parallelism": parallelism,
    }
    return MeasuredRun(
        f"log:{path.name}", f"MLPerf log {bench.round}", scenario, "time_to_train_min", minutes, (), str(path),
        samples, float(len(evaluations)),
    )  # fmt: skip
