"""What an MLPerf result's run logs say its timed region holds beside its steps, against what perfmodel prices.

A result's runs (perfmodel/data/mlperf_training_llm_runs.csv: minutes, samples at stop and evaluations of each
result_*.txt) train different sample counts with one setup, so their minutes against their samples separate what
grows with samples from what does not. A run of S samples at global batch B holds S / B steps and n = S / I - k
evaluations (one every I samples, the first k skipped: ../shared/data/mlperf_benchmarks.md), so its time is

    t = F + S / B * step + n * E,

a line in S of slope (I / B) * step + E and intercept F - k * E. At perfmodel's step the slope gives the logs' time
per evaluation E and the intercept the fixed part F; perfmodel prices E as the evaluation set's forward passes
(inputs.mlperf.score) and F as efficiency.Efficiency.timed_overhead_s.

`--group SUBSTR ...` fits the results whose ids hold a substring together: their steps perfmodel's times one factor
c, one fixed part F, and each evaluation e0 + m * b, with m = ceil(eval samples / (DP x MBS)) the micro-batches of the
busiest rank. Results of one layout per model replica at different batches (NVIDIA's Eos at 64 and 1,024 H100s in
v4.1: one sample per TP4 x CP2 group) separate F from E, which one result alone cannot.

Run: python scripts/mlperf_timed_parts.py [--benchmark llama2_70b_lora] [--group SUBSTR ...] (a few seconds).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from statistics import linear_regression

import numpy as np

from perfmodel.fitting.runs import bundled_runs
from perfmodel.fitting.scored import logged_runs
from perfmodel.fitting.validation import prepare
from perfmodel.physics import calibration


@dataclass(frozen=True)
class Result:
    """One bundled result as perfmodel prices it at its release, with its converged runs."""

    id: str
    n_gpus: int
    gbs: int
    step_s: float
    microbatch_forward_s: float
    eval_s: float
    """The evaluation perfmodel prices: eval samples / GBS forward passes of a global batch."""
    eval_microbatches: int
    """Micro-batches the busiest rank runs in one evaluation."""
    interval_samples: float
    skipped: int
    fixed_s: float
    """The timed region's fixed part perfmodel prices (timed_overhead_s)."""
    runs: tuple[tuple[float, float, float], ...]
    """Each converged run's seconds, samples and evaluations."""


def results(benchmark: str) -> list[Result]:
    cal = calibration.bundled()
    found = []
    for run in bundled_runs()[0]:
        if not run.id.endswith(f"/{benchmark}") or run.metric != "time_to_train_min":
            continue
        prepared = prepare(run, cal)
        layout, bench = prepared.layout, prepared.benchmark
        assert bench is not None
        step, eff = prepared.released_step(prepared.context.efficiency)
        step_s, forward_s = float(step.step_time_s), float(step.forward_only_s)
        rnd, submitter, system = run.id.removeprefix("mlperf:").split("/")[:3]
        folder = f"mlcommons/training_results_{rnd}:{submitter}/results/{system}/{benchmark}/"
        ranks = layout.dp * layout.mbs
        ev = bench.evaluation
        found.append(
            Result(
                run.id, layout.n_gpus, layout.gbs, step_s, forward_s * ranks / layout.gbs,
                ev.samples / layout.gbs * forward_s, math.ceil(ev.samples / ranks), ev.interval_samples(layout.gbs),
                ev.skipped(layout.gbs), float(eff.timed_overhead_s(step_s)),
                tuple((r.minutes * 60, r.samples, r.evaluations) for r in logged_runs().get(folder, ()) if r.samples),
            )
        )  # fmt: skip
    return found


def per_result(found: list[Result]) -> None:
    print(f"{'result':62s} {'GPUs':>5s} {'GBS':>4s} {'step':>6s}   evaluation s     fixed s")
    print(f"{'':62s} {'':>5s} {'':>4s} {'s':>6s}   priced  logs   priced  logs")
    for r in found:
        samples = [s for _, s, _ in r.runs]
        if len(set(samples)) < 2:
            continue
        slope, intercept = linear_regression(samples, [t for t, _, _ in r.runs])
        eval_s = slope * r.interval_samples - r.interval_samples / r.gbs * r.step_s
        fixed_s = intercept + r.skipped * eval_s
        print(
            f"{r.id.removeprefix('mlperf:')[:62]:62s} {r.n_gpus:5d} {r.gbs:4d} {r.step_s:6.3f}   {r.eval_s:6.2f} "
            f"{eval_s:6.2f}   {r.fixed_s:6.1f} {fixed_s:6.1f}"
        )


GROUP_TERMS = ("step factor c", "fixed part F (s)", "per evaluation e0 (s)", "per micro-batch b (s)")


def group_fit(chosen: list[Result]) -> tuple[dict[str, tuple[float, float]], float]:
    """Each of GROUP_TERMS' value and standard error, least squares over the results' runs, and the residual rms (s).
    ValueError where the runs cannot separate the terms (one result, one batch size, or none)."""
    rows = [
        ([s / r.gbs * r.step_s, 1.0, n, n * r.eval_microbatches], t) for r in chosen for t, s, n in r.runs
    ]  # fmt: skip
    x = np.array([row for row, _ in rows])
    y = np.array([t for _, t in rows])
    coef, _, rank, _ = np.linalg.lstsq(x, y, rcond=None)
    if rank < len(GROUP_TERMS) or len(y) <= rank:
        raise ValueError(f"{len(chosen)} results, {len(y)} runs do not separate the {len(GROUP_TERMS)} terms")
    residual = y - x @ coef
    variance = float(residual @ residual) / (len(y) - rank)
    errors = np.sqrt(np.diag(variance * np.linalg.pinv(x.T @ x)))
    terms = {name: (float(v), float(e)) for name, v, e in zip(GROUP_TERMS, coef, errors, strict=True)}
    return terms, math.sqrt(variance)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", default="llama2_70b_lora", help="mlperf-logging benchmark name")
    parser.add_argument("--group", nargs="+", help="fit the results whose ids hold one of these together")
    args = parser.parse_args()
    found = results(args.benchmark)
    if args.group:
        chosen = [r for r in found if any(s in r.id for s in args.group)]
        if not chosen:
            parser.error(f"--group: no {args.benchmark} result id holds {', '.join(args.group)}")
        for r in chosen:
            forward_s = r.microbatch_forward_s
            print(f"  {r.id.removeprefix('mlperf:')}: {len(r.runs)} runs, micro-batch forward {forward_s:.3f} s")
        try:
            terms, rms_s = group_fit(chosen)
        except ValueError as exc:
            parser.error(f"--group: {exc} (fit results of at least two batch sizes together)")
        for name, (value, error) in terms.items():
            print(f"  {name:24s} {value:8.3f} +- {error:.3f}")
        print(f"  residual rms {rms_s:.2f} s over {sum(len(r.runs) for r in chosen)} runs")
    else:
        per_result(found)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
