"""Before/after in one run: the scalar prediction, the search, the CLI start and the longer commands (compare, sweep,
validate) of this tree against another checkout.

Run: git archive REV | tar -x -C /tmp/base && python benchmarks/bench_against.py /tmp/base [--rounds N]
[--python EXE]. Each figure
is measured in subprocesses alternating between the two trees (each tree first on PYTHONPATH, run from a neutral
folder so that neither shadows the other), so that both see the same machine load; in-process figures and the long
commands are CPU time (the machine is shared: wall time moves 2-3x with the load), the start-up ratios both. Prints
medians and the ratio this tree / the other. Both trees' bytecode is compiled first, as `pip install` does: where
PYTHONDONTWRITEBYTECODE is set, a module edited since its last .pyc would otherwise be compiled at every start (about
15 ms for a large one), which is no figure of the code. `--python` runs every figure with another interpreter: the
start-up ratios depend on the interpreter's own start, and a development machine's often runs site hooks (a `.pth`
importing certifi takes this one's `python -c pass` from ~15 to 50-60 ms), so measure them also in a bare virtual
environment with perfmodel's dependencies (`python -m venv /tmp/bare && /tmp/bare/bin/pip install -e .`; each tree
still comes first on the path). Not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SCALAR = """
import statistics, time, timeit
from perfmodel.inputs.scenario import load_scenario
from perfmodel.physics.step import evaluate
from perfmodel.planning.predict import choose_layout, context_for, layout_vars, predict
s = load_scenario(); ctx = context_for(s); layout, _ = choose_layout(s, ctx); lv = layout_vars(layout)
evaluate(ctx, lv); predict(s)
def cleared():
    getattr(ctx, "memo", {}).clear()
    getattr(ctx, "shards", {}).clear()  # where a tree keeps the shards apart from the memo
    evaluate(ctx, lv)
for fn, n in ((lambda: evaluate(ctx, lv), 2000), (cleared, 500), (lambda: predict(s), 300)):
    print(statistics.median(t / n * 1e6 for t in timeit.Timer(fn, timer=time.process_time).repeat(7, n)))
"""
CHECKED = """
try:
    from perfmodel.inputs.scenario import checked_scenario
except ImportError:  # a tree whose Scenario is a pydantic model
    from perfmodel.inputs.scenario import Scenario
    checked_scenario = Scenario.model_validate
"""
"""A scenario from a dict, checked, in either kind of tree."""
SEARCH = (
    CHECKED
    + """
import statistics, time
from perfmodel.planning.predict import context_for
from perfmodel.planning import search as searching
from perfmodel.planning.search import Space, search
spec = {"model": {"base": "llama3.1-405b", "vocab": 32000}, "gpu": "h100-sxm", "n_gpus": 512, "precision": "fp8"}
ctx = context_for(checked_scenario(spec)); space = Space(((512, 1152),), {}); search(ctx, space)
seconds = []
for _ in range(5):
    getattr(searching, "_BLOCKS", {}).clear()  # where a tree keeps the blocks of a space: each search enumerates
    start = time.process_time(); found = search(ctx, space, top=10); seconds.append(time.process_time() - start)
print(found.evaluated / statistics.median(seconds))
"""
)
CLI = """
import resource, statistics, subprocess, sys, time
def cost(command):
    walls, cpus = [], []
    for _ in range(5):
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter(); subprocess.run(command, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime)
    return statistics.median(walls), statistics.median(cpus)
base_wall, base_cpu = cost([sys.executable, "-c", "pass"])
for command in (["-m", "perfmodel", "predict"], ["-m", "perfmodel", "--help"], ["-c", "import click"]):
    wall, cpu = cost([sys.executable, *command])
    print(wall / base_wall, cpu / base_cpu)
print(base_wall * 1e3)
"""
SEARCH_CLI = """
import json, resource, statistics, subprocess, sys
command = [sys.executable, "-m", "perfmodel", "search", "--model", "llama3.1-405b", "--gpu", "h100-sxm",
           "--gpus", "512", "--precision", "fp8", "--gbs", "1152", "--format", "json"]
rates, priced, cpus = [], [], []
for _ in range(3):
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    found = json.loads(subprocess.run(command, check=True, capture_output=True).stdout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rates.append(found["layouts_evaluated"] / found["elapsed_s"])
    priced.append(found.get("layouts_priced_in_full", found["layouts_evaluated"]) / found["elapsed_s"])
    cpus.append(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime)
print(statistics.median(rates), statistics.median(priced), statistics.median(cpus))
"""
SEARCH_DEFAULT = (
    f"CHECKED = {CHECKED!r}\n"
    + r"""
import json, statistics, subprocess, sys, time
command = [sys.executable, "-m", "perfmodel", "search", "--model", "llama3.1-405b", "--gpu", "h100-sxm",
           "--gpus", "512", "--precision", "fp8", "--format", "json"]
first = CHECKED + (
    "import time\n"
    "from perfmodel.planning.predict import search_scenario\n"
    "s = checked_scenario({'model': 'llama3.1-405b', 'gpu': 'h100-sxm', 'n_gpus': 512, 'precision': 'fp8'})\n"
    "start = time.perf_counter(); found = search_scenario(s).found\n"
    "print(found.evaluated / (time.perf_counter() - start))\n"
)
rates, walls, fresh = [], [], []
for _ in range(3):
    start = time.perf_counter()
    found = json.loads(subprocess.run(command, check=True, capture_output=True).stdout)
    walls.append(time.perf_counter() - start)
    rates.append(found["layouts_evaluated"] / found["elapsed_s"])
    out = subprocess.run([sys.executable, "-c", first], check=True, capture_output=True, text=True).stdout
    fresh.append(float(out.split()[0]))
print(statistics.median(rates), statistics.median(fresh), statistics.median(walls))
"""
)
COMMANDS = """
import resource, subprocess, sys, time
for args in (["compare", "--gpu", "h100-sxm", "--gpu", "gb200:fp8", "--gpus", "256,512"],
             ["sweep", "generations", "--jobs", "1"], ["sweep", "generations"], ["validate", "--format", "json"]):
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "perfmodel", *args], check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime)
print(wall)  # validate's, the last
"""
THIS_TREE = str(Path(__file__).resolve().parents[1])
FIGURES = (
    ("scalar", SCALAR, ("evaluate, warm context, us", "evaluate, memo cleared, us", "predict(), us")),
    ("search", SEARCH, ("search 405B on 512 H100, layouts/s",)),
    (
        "cli",
        CLI,
        (
            "predict / python -c pass, wall",
            "predict / python -c pass, CPU",
            "--help / -c pass, wall",
            "--help / -c pass, CPU",
            "import click / -c pass, wall (the floor)",
            "import click / -c pass, CPU",
            "python -c pass, wall ms",
        ),
    ),
    (
        "search_cli",
        SEARCH_CLI,
        (
            "perfmodel search 405B, valid layouts/elapsed_s",
            "the same, layouts priced in full/elapsed_s (a tree without the count: valid layouts)",
            "perfmodel search 405B/512 H100, CPU s",
        ),
    ),
    (
        "search_default",
        SEARCH_DEFAULT,
        (
            "perfmodel search 405B/512 H100 (CLI default space), valid layouts/elapsed_s",
            "the same, first search_scenario in a fresh process (numpy's import inside), layouts/s",
            "the same perfmodel search, wall s",
        ),
    ),
    (
        "commands",
        COMMANDS,
        (
            "compare 2 GPUs x 2 counts, CPU s",
            "sweep generations -j 1, CPU s",
            "sweep generations, CPU s",
            "validate, CPU s",
            "validate, wall s",
        ),
    ),
)


def run(code: str, tree: str, python: str) -> list[float]:
    """The figures `code` prints, run by `python` with `tree`'s perfmodel first on the path (from outside both
    trees)."""
    env = os.environ | {"PYTHONPATH": tree}
    command = [python, "-c", code]
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir()).stdout
    return [float(line) for line in out.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("other", help="the other checkout (its root, holding perfmodel/)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", default=sys.executable, help="interpreter to run the figures (default: this one)")
    groups = [group for group, _, _ in FIGURES]
    parser.add_argument("--only", choices=groups, action="append", help="these groups of figures (default: all)")
    args = parser.parse_args()
    for tree in (args.other, THIS_TREE):  # as pip installs them: bytecode current, whatever PYTHONDONTWRITEBYTECODE
        subprocess.run([args.python, "-m", "compileall", "-q", str(Path(tree) / "perfmodel")], check=True)
    print(f"{'figure':40s} {'other':>12s} {'this tree':>12s} {'this/other':>10s}")
    for group, code, names in FIGURES:
        if args.only and group not in args.only:
            continue
        samples: dict[str, list[list[float]]] = {"other": [], "this": []}
        for _ in range(args.rounds):
            samples["other"].append(run(code, args.other, args.python))
            samples["this"].append(run(code, THIS_TREE, args.python))
        for i, name in enumerate(names):
            other = statistics.median(s[i] for s in samples["other"])
            this = statistics.median(s[i] for s in samples["this"])
            print(f"{name:40s} {other:12,.1f} {this:12,.1f} {this / other:10.2f}")


if __name__ == "__main__":
    main()
