"""Speed of `perfmodel plan`: three candidate systems on a 405B workload, in process and end to end, at the point,
at P90 (--confidence 0.9), within a site power cap, with each price drawn from a stated distribution
(--price-range), over a fleet (--fleet) and three jobs sharing it ([[job]]s).

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
from collections.abc import Callable
from typing import Any

CANDIDATES = (("gb300", "nvfp4"), ("h100-sxm", "fp8"), ("b200", "fp8"))
DEADLINES_D = (30, 60, 120)
GOALS = ((None, 0.5, None), (100e6, 0.5, None), (100e6, 0.9, None), (None, 0.9, None), (None, 0.9, 20.0))
"""Budget, confidence and site power (MW) with each deadline: on the point estimate, at P90 (plan --confidence 0.9),
and at P90 within 20 MW (--power-mw 20)."""
PRICE_SPREAD = (0.7, 1.0, 1.5)
"""A stated price distribution's low, mode and high over each candidate's list price (--price-range): the last goal
of each deadline draws it."""
FLEET = """
[[pool]]
name = "hall-a"
system = "dgx-h100"
gpus = 4096
[[pool]]
name = "hall-b"
system = "gb300-nvl72"
gpus = 1024
usd_per_gpu_hour = 4.0
[[offer]]
name = "rent-b200"
system = "dgx-b200"
usd_per_gpu_hour = 5.0
max_gpus = 8192
lead_time_days = 14
[[offer]]
name = "rent-h100"
system = "dgx-h100"
usd_per_gpu_hour = 2.5
max_gpus = 16384
lead_time_days = 7
[[offer]]
name = "buy-gb300"
system = "gb300-nvl72"
usd_per_system = 4.35e6
lead_time_days = 45
"""
"""A fleet of the three systems: owned pools, rentals and a purchase, each with its lead time."""


def timed(label: str, repeat: int, work: Callable[[], Any], found: Callable[[Any], str]) -> None:
    """Run `work` `repeat` times; print the label, median wall and CPU seconds, and what the last answer found. Each
    run starts without the contexts, and so the layouts earlier searches chose (predict.searched_layout keeps them
    on the context), as a fresh process does."""
    from perfmodel.planning import predict as predicting

    samples, cpu, report = [], [], None
    for _ in range(repeat):
        predicting._CONTEXTS.clear()
        predicting._LAST_CONTEXT.clear()
        start, start_cpu = time.perf_counter(), time.process_time()
        report = work()
        samples.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    print(f"{label:48s} {statistics.median(samples):9.3f} {statistics.median(cpu):7.3f}  {found(report)}")


def in_process(repeat: int) -> None:
    from perfmodel.inputs.hardware import get_accelerator
    from perfmodel.inputs.scenario import load_scenario
    from perfmodel.planning import plan as planning
    from perfmodel.planning.predict import without_layout

    def bases(drawn: bool = False) -> list[tuple[str, object]]:
        """The candidates; `drawn`: each with a price distribution stated, PRICE_SPREAD around its list price."""
        flags = {"model": "llama3.1-405b", "tokens": 15e12}
        found = []
        for gpu, precision in CANDIDATES:
            price = {
                "cost.usd_per_gpu_hour_range": tuple(
                    f * get_accelerator(gpu).usd_per_gpu_hour.value for f in PRICE_SPREAD
                )
            }  # type: ignore[union-attr]
            scenario = load_scenario(None, flags | {"gpu": gpu, "precision": precision} | (price if drawn else {}))
            found.append((f"{gpu}:{precision}", without_layout(scenario)))
        return found

    planning.plan(bases(), planning.Goal(30 * 86400))  # warm: imports, topology tiers
    print(f"{'goal':48s} {'median s':>9s} {'CPU s':>7s}  GPUs (searches) per candidate")
    for days in DEADLINES_D:
        for budget, confidence, power_mw in GOALS:
            goal = planning.Goal(days * 86400, budget, confidence, power_mw)
            label = f"deadline {days}d" + ("" if budget is None else " + budget $100M")
            label += "" if confidence == 0.5 else f" at P{100 * confidence:.0f}"
            label += "" if power_mw is None else f" in {power_mw:g} MW"
            timed(label, repeat, lambda goal=goal: planning.plan(bases(), goal), _counts)  # type: ignore[arg-type]
        goal = planning.Goal(days * 86400, 100e6, 0.9)
        label = f"deadline {days}d + budget $100M at P90, price drawn"
        timed(label, repeat, lambda goal=goal: planning.plan(bases(drawn=True), goal), _counts)  # type: ignore[arg-type]
    fleet_plans(repeat)


def _counts(report: Any) -> str:
    """Each candidate's GPUs and the searches it needed."""
    return ", ".join(f"{c.label} {c.prediction.layout.n_gpus if c.prediction else '-'} ({len(c.tried)})"
                     for c in report.plans)  # fmt: skip


def fleet_plans(repeat: int) -> None:
    """plan --fleet: the three system types of FLEET, 60 days at P90."""
    from pathlib import Path

    from perfmodel.inputs.fleet import load_fleet
    from perfmodel.planning import fleet as fleets
    from perfmodel.planning import plan as planning

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "fleet.toml")
        path.write_text(FLEET)
        fleet = load_fleet(path)
    options = {"model": "llama3.1-405b", "tokens": 15e12}
    bases = planning.candidate_bases(None, options, {}, fleets.fleet_systems(fleet))
    goal = planning.Goal(60 * 86400, confidence=0.9)
    timed(
        "fleet, 60d at P90 (3 system types)",
        repeat,
        lambda: fleets.plan_fleet(bases, goal, fleet, None),
        lambda report: ", ".join(f"{p.system} {p.to_dict().get('n_gpus', '-')}" for p in report.plans),
    )
    shared_jobs(repeat, fleet, bases)


JOBS = (("405b-15t", 15e12, 60), ("405b-5t", 5e12, 30), ("405b-2t", 2e12, 45))
"""Three jobs sharing FLEET (name, tokens, deadline in days): 405B at 15T, 5T and 2T tokens."""
MORE_JOBS = (*JOBS, ("405b-8t", 8e12, 90), ("405b-3t", 3e12, 20), ("405b-1t", 1e12, 15))
"""Six jobs: every order of them is tried (720)."""


def shared_jobs(repeat: int, fleet: Any, bases: list[tuple[str, Any]]) -> None:
    """plan --fleet of a file with JOBS (then MORE_JOBS) as [[job]]s, planned together in every order, at P90."""
    from dataclasses import replace

    from perfmodel.planning import fleet_jobs
    from perfmodel.planning import plan as planning

    for listed in (JOBS, MORE_JOBS):
        jobs = [
            fleet_jobs.Job(name, [(label, replace(scenario, tokens=tokens)) for label, scenario in bases],
                           planning.Goal(days * 86400, confidence=0.9))
            for name, tokens, days in listed
        ]  # fmt: skip
        timed(
            f"{len(jobs)} jobs sharing the fleet, at P90",
            repeat,
            lambda jobs=jobs: fleet_jobs.plan_jobs(jobs, fleet, None),  # type: ignore[misc]
            lambda report: (
                f"{report.orders_tried} orders, ${report.cost_usd() / 1e6:,.1f}M (greedy "
                f"${report.greedy_cost_usd / 1e6:,.1f}M): "
                + ", ".join(f"{job.name} {job.chosen.system if job.chosen else '-'}" for job in report.jobs)
            ),
        )


def end_to_end(repeat: int, confidence: float) -> None:
    args = [sys.executable, "-m", "perfmodel", "plan", "--model", "llama3.1-405b", "--tokens", "15T",
            "--deadline", "30d", "--confidence", str(confidence), "--format", "json", "--quiet"]  # fmt: skip
    for gpu, precision in CANDIDATES:
        args += ["--gpu", f"{gpu}:{precision}"]
    env = os.environ | {"PERFMODEL_CACHE_DIR": tempfile.mkdtemp()}
    subprocess.run(args, check=True, capture_output=True, env=env)  # fills the topology cache
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True, env=env)
        samples.append(time.perf_counter() - start)
    label = f"perfmodel plan, 3 candidates, 405B, 30d, --confidence {confidence:g} (CLI)"
    print(f"{label:64s} {statistics.median(samples):9.3f} s wall")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    in_process(repeat)
    for confidence in (0.5, 0.9):
        end_to_end(repeat, confidence)


if __name__ == "__main__":
    main()
