"""Speed of the layout search at 128K tokens per sequence (issue 26: >= 1M layouts/s): Llama 3.1 8B and 70B on 64 to
1,024 H100, every dimension searched (TP x CP x PP x VP x DP x micro-batch x recompute x ZeRO), as layouts priced
per second on one core and as a ratio to bench_search's flat numpy chain measured in the same run.

Run: python benchmarks/bench_long_context.py [--repeat N] [--profile]. Pins itself to one CPU core. Prints medians
(and, with --profile, where the slowest case, the 8B on 1,024 GPUs, spends its time); not a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_search import pinned_chain

SEQ_LEN = 131_072
GBS = 128
"""Sequences per step: 16.8M tokens, Llama 3's long-context stage batch (campaigns.md)."""
CASES = [(model, n) for model in ("llama3.1-8b", "llama3.1-70b") for n in (64, 256, 1024)]


def _context(model: str, n_gpus: int) -> object:
    from perfmodel.inputs.scenario import checked_scenario
    from perfmodel.planning.predict import context_for

    scenario = {"model": model, "gpu": "h100-sxm", "n_gpus": n_gpus, "precision": "fp8"}
    return context_for(checked_scenario(scenario | {"parallelism": {"seq_len": SEQ_LEN}}))


def in_process(repeat: int, chain: float) -> float:
    """Print each case's rate; return the rate over all cases (layouts over seconds)."""
    from perfmodel.planning.search import Space, search

    print(f"{'case (128K tokens, FP8, GBS 128)':40s} {'layouts':>11s} {'fit':>9s} {'median s':>9s} {'layouts/s':>12s}"
          f" {'/chain':>7s}  best")  # fmt: skip
    total_layouts, total_s = 0, 0.0
    for model, n in CASES:
        ctx = _context(model, n)
        space = Space(((n, GBS),), {})
        search(ctx, space)  # type: ignore[arg-type]  # warm: topology tiers, imports
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            found = search(ctx, space, top=10)  # type: ignore[arg-type]
            samples.append(time.perf_counter() - start)
        median = statistics.median(samples)
        rate = found.evaluated / median
        total_layouts, total_s = total_layouts + found.evaluated, total_s + median
        best = found.top[0].layout.describe().split(",")[0] if found.top else "none fits"
        print(f"{f'{model}, {n:,} H100':40s} {found.evaluated:11,d} {found.feasible:9,d} {median:9.3f} {rate:12,.0f}"
              f" {rate / chain:7.2f}  {best}")  # fmt: skip
    overall = total_layouts / total_s
    print(f"{'all cases':40s} {total_layouts:11,d} {'':9s} {total_s:9.3f} {overall:12,.0f} {overall / chain:7.2f}")
    return overall


def profile() -> None:
    import cProfile
    import pstats

    from perfmodel.planning.search import Space, search

    ctx = _context("llama3.1-8b", 1024)
    space = Space(((1024, GBS),), {})
    search(ctx, space)  # type: ignore[arg-type]
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(5):
        search(ctx, space, top=10)  # type: ignore[arg-type]
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="Profile the 8B on 1,024 H100 search.")
    args = parser.parse_args()
    chain = pinned_chain(args.repeat)
    in_process(args.repeat, chain)
    if args.profile:
        profile()


if __name__ == "__main__":
    main()
