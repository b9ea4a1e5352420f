"""Speed of the layout search: layouts priced per second on one core, and `perfmodel search` end to end, each as a
ratio to a flat numpy chain of CHAIN_OPS element operations per layout measured in the same run (the issue's "numpy
limit": what the step model's ~190 full-size operations per layout would cost with no Python around them).

Run: python benchmarks/bench_search.py [--repeat N]. Pins itself to one CPU core. Prints medians; not a test.
`--against OTHER` (a checkout: git archive REV | tar -x -C /tmp/base) instead searches each case with both trees in
fresh processes, asserts the same ten best layouts and step times, and prints the layouts each prices in full and
the median CPU seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, NamedTuple


class Case(NamedTuple):
    """One search to time: what it searches, by name."""

    model: str
    gpu: str
    n_gpus: int
    """The GPU count the scenario is checked at (the first of `counts` where it has them)."""
    precision: str
    gbs: int | None = None
    """The global batch (None: the batches `search` tries)."""
    vocab: int | None = None
    """The model's vocabulary in place of its own (None: its own)."""
    trained_as: str | None = None
    """The bundled scenario whose sequence length the case trains at (None: the default scenario's 8K;
    DeepSeek-V3's campaign: its 4K)."""
    counts: tuple[int, ...] = ()
    """The GPU counts one search prices together, each at `gbs` (empty: `n_gpus` alone)."""


CASES = {
    "Llama 3.1 70B, 64 H100, FP8, GBS 128": Case("llama3.1-70b", "h100-sxm", 64, "fp8", gbs=128),
    "Llama 3.1 405B (MLPerf), 512 H100, FP8, GBS 1152": Case(
        "llama3.1-405b", "h100-sxm", 512, "fp8", gbs=1152, vocab=32000,
    ),
    "Llama 3.1 405B (MLPerf), 512 GB200, FP8, GBS 896": Case(
        "llama3.1-405b", "gb200", 512, "fp8", gbs=896, vocab=32000,
    ),
    "Llama 3.1 8B, 8-1,024 H100 (8 counts), BF16, GBS 1024": Case(
        "llama3.1-8b", "h100-sxm", 8, "bf16", gbs=1024, counts=tuple(8 * 2**k for k in range(8)),
    ),
    "Falcon-180B (parallel block), 256 H100, BF16, GBS 2048": Case("falcon-180b", "h100-sxm", 256, "bf16", gbs=2048),
    "DeepSeek-V3 (TP x PP x VP x EP x ETP x ...), 256 GB300, MXFP8, GBS 4096": Case(
        "deepseek-v3", "gb300", 256, "mxfp8", gbs=4096, trained_as="campaign-deepseek-v3",
    ),
    "Nemotron-H 56B (hybrid Mamba), 512 H100, FP8, GBS 1024": Case("nemotron-h-56b", "h100-sxm", 512, "fp8", gbs=1024),
    "Nemotron 3 Nano (hybrid Mamba MoE), 64 GB300, MXFP8, GBS 512": Case(
        "nemotron-3-nano-30b-a3b", "gb300", 64, "mxfp8", gbs=512,
    ),
    "Nemotron 3.5 Lightning (hybrid MoE, 2 MTP depths), 64 GB300, MXFP8, GBS 512": Case(
        "nemotron-3.5-lightning-30b-a3b", "gb300", 64, "mxfp8", gbs=512,
    ),
    "Qwen3-Next-80B-A3B (Gated DeltaNet MoE), 64 H100, FP8, GBS 512": Case(
        "qwen3-next-80b-a3b", "h100-sxm", 64, "fp8", gbs=512,
    ),
    "DeepSeek-V3, 16,384 GB300, FP8, every dimension and the GBS open": Case("deepseek-v3", "gb300", 16384, "fp8"),
    "GPT-OSS-120B, 64 B200, MXFP8, every dimension and the GBS open": Case("gpt-oss-120b", "b200", 64, "mxfp8"),
    "GPT-OSS-120B, 512 B200, MXFP8, every dimension and the GBS open": Case("gpt-oss-120b", "b200", 512, "mxfp8"),
    "GPT-OSS-120B, 1,024 B200 (the CLI's default), MXFP8, every dimension and the GBS open": Case(
        "gpt-oss-120b", "b200", 1024, "mxfp8",
    ),
    "GPT-OSS-120B, 4,096 B200, MXFP8, every dimension and the GBS open": Case("gpt-oss-120b", "b200", 4096, "mxfp8"),
    "Llama 3.1 405B, 1,024 H100 (the CLI's default), FP8, every dimension and the GBS open": Case(
        "llama3.1-405b", "h100-sxm", 1024, "fp8",
    ),
}  # fmt: skip
"""Each case by the label it prints."""
CLI = [
    *("search", "--model", "llama3.1-70b", "--gpu", "h100-sxm", "--gpus", "64", "--precision", "fp8"),
    *("--gbs", "128", "--format", "json"),
]
CLI_405B = [
    *("search", "--model", "llama3.1-405b", "--gpu", "h100-sxm", "--gpus", "512", "--precision", "fp8"),
    *("--gbs", "1152", "--format", "json"),
]
CHAIN_OPS = 190
CHAIN_LAYOUTS = 455_076
"""The flat chain's size: the 405B on 512 H100 space."""


def numpy_chain(repeat: int) -> float:
    """Layouts per second of CHAIN_OPS element-wise operations (multiply, add, maximum, where in turn) on arrays of
    CHAIN_LAYOUTS float64: the rate a search would reach if each layout cost that many operations and nothing else."""
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = rng.random(CHAIN_LAYOUTS), rng.random(CHAIN_LAYOUTS)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        x = a
        for i in range(CHAIN_OPS):
            step = i % 4
            x = x * b if step == 0 else x + a if step == 1 else np.maximum(x, b) if step == 2 else np.where(x > a, x, b)
        samples.append(time.perf_counter() - start)
    return CHAIN_LAYOUTS / statistics.median(samples)


def case_scenario(case: Case) -> Any:
    """The scenario a case searches (a model, GPU or scenario name it misspells: check_cases says it, before any
    timing)."""
    from perfmodel.inputs.scenario import checked_scenario, load_scenario

    spec = {"base": case.model, "vocab": case.vocab} if case.vocab else case.model
    trained_as = case.trained_as
    seq_len = {"parallelism": {"seq_len": load_scenario(trained_as).parallelism.seq_len}} if trained_as else {}
    return checked_scenario(
        {"model": spec, "gpu": case.gpu, "n_gpus": case.n_gpus, "precision": case.precision} | seq_len
    )


def case_space(label: str) -> tuple[Any, Any]:
    """The context and the space a case searches."""
    from perfmodel.planning.predict import context_for, search_space
    from perfmodel.planning.search import Space

    case = CASES[label]
    scenario = case_scenario(case)
    counts = case.counts or (case.n_gpus,)
    space = Space(tuple((c, case.gbs) for c in counts), {}) if case.gbs else search_space(scenario)
    return context_for(scenario), space


def case_figures(label: str, repeat: int) -> dict[str, Any]:
    """A case's search, warm (topology tiers, imports, blocks), `repeat` times: its counts, its ten best layouts
    with their step times, and the median wall and CPU seconds."""
    from perfmodel.planning.search import search

    ctx, space = case_space(label)
    search(ctx, space)
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        found = search(ctx, space, top=10)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return {
        "evaluated": found.evaluated,
        "feasible": found.feasible,
        "priced": found.priced,
        "top": [(f.layout.describe(), f.step_time_s) for f in found.top],
        "wall_s": statistics.median(walls),
        "cpu_s": statistics.median(cpus),
    }


def in_process(repeat: int, chain: float) -> None:
    head = f"{'layouts':>11s} {'fit':>11s} {'priced':>9s} {'median s':>9s} {'layouts/s':>12s} {'/chain':>7s}"
    print(f"{'case':55s} {head}")
    for label in CASES:
        figures = case_figures(label, repeat)
        rate = figures["evaluated"] / figures["wall_s"]
        counts = f"{figures['evaluated']:11,d} {figures['feasible']:11,d} {figures['priced']:9,d}"
        print(f"{label[:55]:55s} {counts} {figures['wall_s']:9.3f} {rate:12,.0f} {rate / chain:7.2f}")


OTHER_TREE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import bench_search
print(json.dumps(bench_search.case_figures(sys.argv[2], int(sys.argv[3]))))
"""
"""A case's figures in a fresh process, on whichever perfmodel comes first on its PYTHONPATH."""


def against(other: str, repeat: int, rounds: int) -> None:
    """Each case searched by this tree and by `other` (a checkout), alternating in fresh processes `rounds` times:
    the same ten best layouts with the same step times (asserted: a floor that only prunes changes no answer), the
    layouts each prices in full, and the median CPU seconds (the machine is shared: wall time moves with the load)."""
    import json

    here = os.path.dirname(os.path.abspath(__file__))
    trees = {"this": os.path.dirname(here), "other": os.path.abspath(other)}
    neutral = tempfile.gettempdir()  # run from a folder where neither tree shadows the other
    print(f"{'case':55s} {'layouts':>11s} {'priced':>9s} {'other':>9s} {'CPU s':>7s} {'other':>7s} {'ratio':>6s}")
    for label in CASES:
        runs: dict[str, list[dict[str, Any]]] = {"this": [], "other": []}
        for _ in range(rounds):
            for name, tree in trees.items():
                env = os.environ | {"PYTHONPATH": tree}
                command = [sys.executable, "-c", OTHER_TREE, here, label, str(repeat)]
                out = subprocess.run(command, check=True, capture_output=True, text=True, env=env, cwd=neutral)
                runs[name].append(json.loads(out.stdout))
        this, base = runs["this"][0], runs["other"][0]
        assert this["top"] == base["top"], f"{label}: the best layouts differ: {this['top'][0]}, {base['top'][0]}"
        assert (this["evaluated"], this["feasible"]) == (base["evaluated"], base["feasible"]), label
        cpu, cpu_base = (statistics.median(r["cpu_s"] for r in runs[name]) for name in ("this", "other"))
        priced = f"{this['priced']:9,d} {base['priced']:9,d}"
        print(f"{label[:55]:55s} {this['evaluated']:11,d} {priced} {cpu:7.2f} {cpu_base:7.2f} {cpu / cpu_base:6.2f}")


def end_to_end(repeat: int, chain: float) -> None:
    import json

    with tempfile.TemporaryDirectory() as cache:
        env = os.environ | {"PERFMODEL_CACHE_DIR": cache}
        command = [sys.executable, "-m", "perfmodel", *CLI]
        samples = []
        for i in range(repeat + 1):
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True, env=env)
            samples.append(time.perf_counter() - start)
            if i == 0:
                print(f"{'perfmodel search (70B/64 H100), first run, s':55s} {samples.pop():9.3f}")
        print(f"{'perfmodel search (70B/64 H100), median, s':55s} {statistics.median(samples):9.3f}")
        rates, walls = [], []
        for _ in range(repeat):
            start = time.perf_counter()
            command = [sys.executable, "-m", "perfmodel", *CLI_405B]
            out = subprocess.run(command, check=True, capture_output=True, env=env)
            walls.append(time.perf_counter() - start)
            found = json.loads(out.stdout)
            rates.append(found["layouts_evaluated"] / found["elapsed_s"])
    rate, wall = statistics.median(rates), statistics.median(walls)
    print(f"{'perfmodel search 405B/512 H100: layouts / elapsed_s':55s} {rate:12,.0f} ({rate / chain:.2f} of chain)")
    print(f"{'perfmodel search 405B/512 H100: wall incl. start, s':55s} {wall:9.3f}")


def pinned_chain(repeat: int) -> float:
    """Pin this process to one core and print and return the yardstick: the flat numpy chain's layouts/s."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    chain = numpy_chain(repeat)
    print(f"{f'flat numpy chain, {CHAIN_OPS} ops per layout, layouts/s':55s} {chain:12,.0f}")
    return chain


def check_cases() -> None:
    """Every case's scenario, before any timing: a misspelt model, GPU or scenario name ends the run in one line
    instead of a traceback minutes in, after the cases before it were timed."""
    from perfmodel.errors import PerfmodelError
    from perfmodel.inputs.hardware import resolve

    for label, case in CASES.items():
        try:
            scenario = case_scenario(case)
            scenario.model_spec()  # the names checked_scenario does not look up
            resolve(scenario.gpu, scenario.system)
        except PerfmodelError as error:
            raise SystemExit(f"bench_search: case {label!r}: {error}") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--against", metavar="OTHER", help="a checkout to compare each case with (git archive REV)")
    parser.add_argument("--rounds", type=int, default=2, help="with --against: fresh processes per tree and case")
    args = parser.parse_args()
    check_cases()
    if args.against:
        against(args.against, args.repeat, args.rounds)
        return
    chain = pinned_chain(args.repeat)
    in_process(args.repeat, chain)
    end_to_end(args.repeat, chain)


if __name__ == "__main__":
    main()
