"""Speed of calibration: preparing the bundled rows, one fit on all of them, and `validate` over every row.

Run: python benchmarks/bench_fit.py [--protocols] [--calibrate]. Prints wall and CPU seconds (the CPU of the worker
processes a step forks counted in); not a test. With --protocols it also times each out-of-sample protocol of
`perfmodel validate --protocol P` in process; with --calibrate, the whole of `perfmodel calibrate` (the fit,
cross-validation, the MoE and loss stages, validation and the protocols), its file not written.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Callable
from typing import Any


def timed(label: str, work: Callable[[], Any]) -> Any:
    """Run `work`, print its wall and CPU seconds (on a shared machine the CPU time is the steadier figure)."""
    start, cpu = time.perf_counter(), _cpu_s()
    result = work()
    print(f"{label:55s} {time.perf_counter() - start:8.2f} s wall {_cpu_s() - cpu:8.2f} s CPU", flush=True)
    return result


def _cpu_s() -> float:
    """CPU seconds of this process and of the worker processes it has ended (calibration forks one per processor)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--protocols", action="store_true", help="Also time every out-of-sample protocol.")
    parser.add_argument("--calibrate", action="store_true", help="Also time the whole of `perfmodel calibrate`.")
    args = parser.parse_args()

    from perfmodel.fitting import calibrate as cal
    from perfmodel.fitting import validation as val
    from perfmodel.fitting.runs import bundled_runs
    from perfmodel.physics.calibration import UNCALIBRATED, bundled

    runs, excluded = bundled_runs()
    fitted_runs = [r for r in runs if r.source not in val.NOT_FITTED]
    items = timed(
        f"prepare {len(fitted_runs)} rows (layouts, contexts)", lambda: val.prepare_all(fitted_runs, UNCALIBRATED, [])
    )
    timed("one fit on all fitted rows", lambda: cal.fit(items, val.RunBatch, val._profile, val._formats))
    timed(f"validate all {len(runs)} bundled rows", lambda: val.validate(runs, bundled(), excluded))
    if args.protocols:
        from perfmodel.fitting import protocols

        for name in protocols.PROTOCOLS:
            timed(f"validate --protocol {name}", lambda name=name: protocols.run(name, runs, excluded))
    if args.calibrate:
        timed("perfmodel calibrate (every stage, file not written)", lambda: val.fit_calibration(runs, excluded))


if __name__ == "__main__":
    main()
