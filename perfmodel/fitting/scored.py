"""The work an MLPerf score stands for: the samples and evaluations of the runs its olympic mean keeps.

A result's score is the olympic mean of its runs' times (the fastest and the slowest run dropped; a run that did not
converge counts as the slowest) times its RCP scaling factor (mlperf_benchmarks.md). Its `samples_to_converge`
column is the mean over all runs, which is not the work behind that time: v5.1 NVIDIA's 512-GPU GB300 405B score,
64.605 min, is its median run at 331,776 samples, while the mean of its three runs is 325,632. The run logs
(perfmodel/data/mlperf_training_llm_runs.csv, a copy of ../shared/data, one row per result_*.txt) give each run's
minutes, samples at stop and evaluations; the kept runs' means are what a row is priced at.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import NamedTuple

DATA = Path(__file__).resolve().parents[1] / "data"
RUN_LOGS = "mlperf_training_llm_runs.csv"


class Work(NamedTuple):
    """Mean samples and evaluations of the runs a score averages, before its RCP scaling factor."""

    samples: float
    evaluations: float


class Run(NamedTuple):
    minutes: float
    """math.inf for a run that did not converge (the olympic mean drops it as the slowest)."""
    samples: float
    evaluations: float


def olympic(runs: Iterable[Run]) -> Work | None:
    """The mean work of the runs the olympic mean keeps (all of them below three runs); None when fewer than one
    converged run is kept."""
    ordered = sorted(runs, key=lambda run: run.minutes)
    kept = ordered[1:-1] if len(ordered) >= 3 else ordered
    if not kept or any(math.isinf(run.minutes) for run in kept):
        return None
    return Work(sum(r.samples for r in kept) / len(kept), sum(r.evaluations for r in kept) / len(kept))


@cache
def logged_runs() -> dict[str, tuple[Run, ...]]:
    """Every bundled result's runs, by its result folder ('mlcommons/training_results_v5.1:
    NVIDIA/results/theia_ngpu512_ngc25.09_nemo/llama31_405b/', the start of the results CSV's `source`)."""
    by_result: dict[str, list[Run]] = {}
    with (DATA / RUN_LOGS).open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            folder = row["file"].rsplit("/", 1)[0] + "/"
            converged = row["status"] == "success" and row["minutes"] and row["stop_samples"]
            run = (
                Run(float(row["minutes"]), float(row["stop_samples"]), float(row["n_evals"] or 0))
                if converged
                else Run(math.inf, 0.0, 0.0)
            )
            by_result.setdefault(folder, []).append(run)
    return {folder: tuple(runs) for folder, runs in by_result.items()}


@cache
def logged_work() -> dict[str, Work]:
    """The kept runs' work of every bundled result, by its result folder (logged_runs)."""
    return {folder: work for folder, runs in logged_runs().items() if (work := olympic(runs)) is not None}


def result_folder(source: str) -> str:
    """The result folder a results-CSV `source` names first."""
    return source.split(" ")[0]
