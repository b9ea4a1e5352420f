"""Run-to-run variability: how much one run of the same job on the same system differs from the next, measured.

MLPerf Training submits several runs of each result (one `result_N.txt` each; mlperf_training_llm_runs.csv, a copy of
../shared/data with its source column `file`), the same code, system and batch on each. Their throughput, the
samples a run trained over its minutes, differs from run to run by what no model of the step sees: the nodes a run
was given, their clocks, the network's other traffic. The spread used is measured there, not chosen.
"""

from __future__ import annotations

import math
from collections import defaultdict
from functools import cache
from pathlib import Path

RUN_LOGS = Path(__file__).resolve().parents[1] / "data" / "mlperf_training_llm_runs.csv"
MIN_RUNS = 3
"""Runs of one result needed for its spread to count (two give a spread of one degree of freedom)."""
MEASURED_SD = 0.00787
"""`run_to_run_sd()` of the bundled file, to three figures (tests/test_spread.py recomputes it): a prediction's
quantiles use it without reading the file (`perfmodel predict` starts without csv)."""
SOURCE = (
    "pooled between the runs of one MLPerf Training submission, 234 results with 3+ runs "
    "(mlperf_training_llm_runs.csv; planning/variability.py): in P10/P90 and probabilities"
)


def run_sd(given: float | None) -> float:
    """The run-to-run spread a scenario sets (`losses.run_to_run_sd`; 0: none), else the measured MEASURED_SD."""
    return MEASURED_SD if given is None else given


@cache
def run_to_run_sd(path: Path = RUN_LOGS) -> float:
    """The standard deviation of log(throughput) between runs of one submission: every result folder (round,
    submitter, system, benchmark: the `file` column's folder) with at least MIN_RUNS converged runs (`status`
    success, `minutes` and `stop_samples` given), each run's throughput `stop_samples` / `minutes`; the within-folder
    variances of its log pooled over all folders, weighted by their degrees of freedom (runs - 1). On the bundled
    file: 234 folders, 1,950 degrees of freedom, 0.0079 (0.79%; the median folder's 0.38%, the widest 5.2%): the
    pooled figure, so the wide folders count. A run's minutes include its evaluations, whose count follows its
    samples, so this is a little wider than the steps' own spread. `path`: another file of the same columns."""
    import csv

    runs: dict[str, list[float]] = defaultdict(list)
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["status"] == "success" and row["minutes"] and row["stop_samples"]:
                folder = row["file"].rsplit("/", 1)[0]
                runs[folder].append(math.log(float(row["stop_samples"]) / float(row["minutes"])))
    squares = freedom = 0.0
    for logs in runs.values():
        if len(logs) >= MIN_RUNS:
            mean = sum(logs) / len(logs)
            squares += sum((x - mean) ** 2 for x in logs)
            freedom += len(logs) - 1
    return math.sqrt(squares / freedom)
