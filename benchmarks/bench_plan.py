"""Speed of `perfmodel plan`: three candidate systems on a 405B workload, in process and end to end.

Run: python benchmarks/bench_plan.py [--repeat N]. Pins itself to one CPU core. Prints medians (wall and CPU time:
on a shared machine the wall time includes waiting for the core) and the searches each candidate needed; not a
test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

CANDIDATES = (("gb300", "nvfp4"), ("h100-sxm", "fp8"), ("b200", "fp8"))
DEADLINES_D = (30, 60, 120)
GOALS = ((None, 0.5), (100e6, 0.5), (100e6, 0.9))
"""Budget and confidence with each deadline: on the point estimate, and at P90 (plan --confidence 0.9)."""


def in_process(repeat: int) -> None:
    from perfmodel.inputs.scenario import load_scenario
    from perfmodel.planning import plan as planning
    from perfmodel.planning.predict import without_layout

    def bases() -> list[tuple[str, object]]:
        flags = {"model": "llama3.1-405b", "tokens": 15e12}
        return [
            (f"{gpu}:{precision}", without_layout(load_scenario(None, flags | {"gpu": gpu, "precision": precision})))
            for gpu, precision in CANDIDATES
        ]

    planning.plan(bases(), planning.Goal(30 * 86400))  # warm: imports, topology tiers
    print(f"{'goal':36s} {'median s':>9s} {'CPU s':>7s}  GPUs (searches) per candidate")
    for days in DEADLINES_D:
        for budget, confidence in GOALS:
            samples, cpu, report = [], [], None
            for _ in range(repeat):
                goal = planning.Goal(days * 86400, budget, confidence)
                start, start_cpu = time.perf_counter(), time.process_time()
                report = planning.plan(bases(), goal)  # type: ignore[arg-type]
                samples.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            assert report is not None
            found = ", ".join(
                f"{c.label} {c.prediction.layout.n_gpus if c.prediction else '-'} ({len(c.tried)})"
                for c in report.plans
            )
            label = f"deadline {days}d" + ("" if budget is None else " + budget $100M")
            label += "" if confidence == 0.5 else f" at P{100 * confidence:.0f}"
            print(f"{label:36s} {statistics.median(samples):9.3f} {statistics.median(cpu):7.3f}  {found}")


def end_to_end(repeat: int) -> None:
    args = [sys.executable, "-m", "perfmodel", "plan", "--model", "llama3.1-405b", "--tokens", "15T",
            "--deadline", "30d", "--format", "json", "--quiet"]  # fmt: skip
    for gpu, precision in CANDIDATES:
        args += ["--gpu", f"{gpu}:{precision}"]
    env = os.environ | {"PERFMODEL_CACHE_DIR": tempfile.mkdtemp()}
    subprocess.run(args, check=True, capture_output=True, env=env)  # fills the topology cache
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True, env=env)
        samples.append(time.perf_counter() - start)
    print(f"{'perfmodel plan, 3 candidates, 405B, 30d (CLI)':45s} {statistics.median(samples):9.3f} s wall")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    in_process(repeat)
    end_to_end(repeat)


if __name__ == "__main__":
    main()
