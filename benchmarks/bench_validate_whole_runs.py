"""Speed of validating the published whole runs, the target being under 5 s: as commands (wall time) `perfmodel
validate --only "Whole runs"`, `perfmodel validate --protocol whole-runs` and `perfmodel validate` (every bundled row),
and in process (CPU), each beside `python -c pass` and `perfmodel validate --only "MLPerf Training v5.0"` measured in
the same run, so that a loaded machine reads as ratios. A whole run is a full prediction (its layout searched among
what its release could run, with failures and losses); the protocol prices each run once and refits one number per
held-out run.

Run: python benchmarks/bench_validate_whole_runs.py [--repeat N]. Prints medians; not a test.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

import bench_predict  # the same folder: a script's own folder is on sys.path


def wall(repeat: int, command: list[str], cache_dir: str) -> float:
    """Median wall time of a command, in seconds, after a first run that fills the cache."""
    subprocess.run(command, check=True, capture_output=True, env=os.environ | {"PERFMODEL_CACHE_DIR": cache_dir})
    return bench_predict.wall(repeat, command, cache_dir)


def in_process_cpu_s() -> dict[str, float]:
    """CPU seconds of validating the whole runs and of their protocol in one fresh process each."""
    code = (
        "import time; from perfmodel.fitting import whole_runs; from perfmodel.fitting.runs import collect_runs; "
        "from perfmodel.fitting.validation import validate; from perfmodel.physics import calibration; "
        "cal = calibration.bundled(); runs, excluded = collect_runs(None, only='Whole runs'); "
        "start = time.process_time(); validate(runs, cal, excluded); mid = time.process_time(); "
        "whole_runs.protocol(runs, cal); print(mid - start, time.process_time() - mid)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    return {"validate (whole runs), CPU s": float(out[0]), "protocol whole-runs, CPU s": float(out[1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    perfmodel = [sys.executable, "-m", "perfmodel"]
    with tempfile.TemporaryDirectory() as cache:
        baseline = wall(repeat, [sys.executable, "-c", "pass"], cache)
        reference = wall(repeat, [*perfmodel, "validate", "--only", "MLPerf Training v5.0"], cache)
        commands = {
            'perfmodel validate --only "Whole runs"': ["validate", "--only", "Whole runs"],
            "perfmodel validate --protocol whole-runs": ["validate", "--protocol", "whole-runs"],
            "perfmodel validate (every bundled row)": ["validate"],
        }
        timings = {name: wall(repeat, [*perfmodel, *args], cache) for name, args in commands.items()}
    print(f"python -c pass: {baseline:.3f} s; perfmodel validate --only 'MLPerf Training v5.0': {reference:.3f} s")
    for name, seconds in timings.items():
        print(f"{name}: {seconds:.3f} s wall ({seconds / baseline:.1f}x python -c pass, "
              f"{seconds / reference:.2f}x the v5.0 validation){'' if seconds < 5 else '  OVER 5 s'}")  # fmt: skip
    for name, seconds in in_process_cpu_s().items():
        print(f"{name}: {seconds:.3f}")


if __name__ == "__main__":
    main()
