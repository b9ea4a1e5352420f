"""Speed of one prediction: in-process model time, and the wall time of the `perfmodel predict` command, of
`perfmodel --help` and of `import perfmodel` (the Python API is lazy: importing the package must stay cheap), each
also as a ratio to `python -c pass` measured in the same run, beside the floor that click sets.

Run: python benchmarks/bench_predict.py [--repeat N]. Prints medians; not a test.
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


def median_us(fn: Callable[[], object], repeat: int) -> float:
    """Median time of `repeat` calls of `fn`, in microseconds."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def in_process(repeat: int) -> dict[str, float]:
    from perfmodel.inputs.scenario import load_scenario
    from perfmodel.physics.step import COMPILE_AFTER, evaluate
    from perfmodel.planning.predict import choose_layout, context_for, layout_vars, predict

    scenario = load_scenario()
    ctx = context_for(scenario)
    layout, _ = choose_layout(scenario, ctx)
    lv = layout_vars(layout)
    predict(scenario)  # warm the caches (hardware files, topology tiers)
    for _ in range(COMPILE_AFTER):  # a context priced this often runs its compiled step: time that, whatever --repeat
        evaluate(ctx, lv)

    def first_of_its_shard() -> None:
        ctx.memo.clear()  # what a layout pays when no layout with its TP, CP, MBS, EP and ETP was priced before
        ctx.shards.clear()
        evaluate(ctx, lv)

    moe_steps = {}  # Qwen3-30B-A3B on 8 B200s as the zoo runs it and with token dropping, padded to capacity 1.0
    for name, model in (
        ("dropless", "qwen3-30b-a3b"),
        ("padded to capacity", {"base": "qwen3-30b-a3b", "dispatcher": "alltoall", "capacity_factor": 1.0,
                                "pad_to_capacity": True}),
    ):  # fmt: skip
        moe = load_scenario(None, {"model": model, "gpu": "b200", "n_gpus": 8, "precision": "fp8"})
        moe_ctx = context_for(moe)
        moe_steps[name] = (moe_ctx, layout_vars(choose_layout(moe, moe_ctx)[0]))
        for _ in range(COMPILE_AFTER + 1):
            evaluate(*moe_steps[name])
    timings = {
        "step model (evaluate), us": median_us(lambda: evaluate(ctx, lv), repeat),
        "evaluate, context memo cleared first, us": median_us(first_of_its_shard, repeat),
        "predict() incl. layout check and run cost, us": median_us(lambda: predict(scenario), repeat),
        **{
            f"step model (evaluate), Qwen3-30B-A3B {name}, us": median_us(lambda step=step: evaluate(*step), repeat)
            for name, step in moe_steps.items()
        },
    }
    for name, model in HYBRIDS.items():
        hybrid = load_scenario(None, {"model": model, "gpu": "gb300", "n_gpus": 8, "precision": "mxfp8"})
        hybrid_ctx = context_for(hybrid)
        hybrid_lv = layout_vars(choose_layout(hybrid, hybrid_ctx)[0])
        for _ in range(COMPILE_AFTER + 1):
            evaluate(hybrid_ctx, hybrid_lv)
        timings[f"step model (evaluate), hybrid {name}, us"] = median_us(
            lambda c=hybrid_ctx, v=hybrid_lv: evaluate(c, v), repeat
        )
        timings[f"predict(), hybrid {name}, us"] = median_us(lambda s=hybrid: predict(s), repeat)
    return timings


HYBRIDS = {
    "Nemotron 3 Nano": "nemotron-3-nano-30b-a3b",
    "Nemotron 3.5 Lightning (MTP)": "nemotron-3.5-lightning-30b-a3b",
}
"""Hybrid models timed beside the dense default: Mamba-2, attention and MoE layers, and two MTP depths of a pattern."""


def wall(repeat: int, command: list[str], cache_dir: str) -> float:
    """Median wall time of a command, in seconds."""
    env = os.environ | {"PERFMODEL_CACHE_DIR": cache_dir}
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=env)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


FLOORS = {"floor: import click": "import click"}
"""What `perfmodel predict` cannot start faster than while its CLI is click (its inputs come from the cache of
checked bundled files, without pydantic: inputs/validated.py)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    for name, value in in_process(args.repeat * 20).items():
        print(f"{name:50s} {value:10.1f}")
    package = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "perfmodel")
    subprocess.run([sys.executable, "-m", "compileall", "-q", package], check=True)  # bytecode current, as installed
    cli = [sys.executable, "-m", "perfmodel", "predict"]
    with tempfile.TemporaryDirectory() as cache:
        baseline = wall(args.repeat, [sys.executable, "-c", "pass"], cache)
        cold = wall(1, cli, cache)
        warm = wall(args.repeat, cli, cache)
        json_warm = wall(args.repeat, [*cli, "--format", "json"], cache)
        bundled = wall(args.repeat, [*cli, "mlperf-405b-h100-512"], cache)
        layout = "--gpu h100-sxm --gpus 512 --gbs 1152 --tp 8 --pp 8 --cp 2 --vp 8 --mbs 1 --recompute none --zero 1"
        tokens_wall = wall(args.repeat, [*cli, "--model", "llama3.1-405b", *layout.split(), "--tokens", "1T"], cache)
        mlperf_wall = wall(args.repeat, [*cli, "--benchmark", "mlperf-llama31-405b@v5.0", *layout.split()], cache)
        help_wall = wall(args.repeat, [sys.executable, "-m", "perfmodel", "--help"], cache)
        import_wall = wall(args.repeat, [sys.executable, "-c", "import perfmodel"], cache)
        floors = {name: wall(args.repeat, [sys.executable, "-c", code], cache) for name, code in FLOORS.items()}
    print(f"{'python -c pass (interpreter start), s':50s} {baseline:10.3f}")
    print(f"{'perfmodel predict, first run (derives topology), s':50s} {cold:10.3f}")
    print(f"{'perfmodel predict, table, median, s':50s} {warm:10.3f}")
    print(f"{'perfmodel predict --format json, median, s':50s} {json_warm:10.3f}")
    print(f"{'perfmodel predict mlperf-405b-h100-512 (bundled), s':50s} {bundled:10.3f}  ({bundled / baseline:.1f}x)")
    print(f"{'predict 405B on 512 H100, given layout, 1T tokens, s':50s} {tokens_wall:10.3f}")
    ratio = mlperf_wall / tokens_wall
    print(f"{'the same as --benchmark mlperf-llama31-405b, s':50s} {mlperf_wall:10.3f}  ({ratio:.2f}x the line above)")
    print(f"{'perfmodel --help, median, s':50s} {help_wall:10.3f}  ({help_wall / baseline:.1f}x python -c pass)")
    print(f"{'import perfmodel, median, s':50s} {import_wall:10.3f}  ({import_wall / baseline:.1f}x python -c pass)")
    print(f"{'perfmodel predict / python -c pass':50s} {warm / baseline:10.1f}x  (JSON: {json_warm / baseline:.1f}x)")
    for name, seconds in floors.items():
        print(f"{name + ', median, s':50s} {seconds:10.3f}  ({seconds / baseline:.1f}x python -c pass)")


if __name__ == "__main__":
    main()
