"""Speed of a campaign: a six-phase run (batch ramp, main phase, three long-context stages, annealing) predicted in
process with every layout given and with every layout searched, cold (each phase's context memo and shard table and
the search's blocks and floors cleared first) and repeated, each as a ratio to one `predict()` of the same model and
hardware and to its six phases predicted one by one, both measured in the same run; the first prediction of the
searched campaign in a fresh interpreter (its imports, hardware and calibration loaded first: what a new process pays
on top of the cold figure is its heap's first pages); and `perfmodel predict` of the bundled campaigns, wall, as a
ratio to `python -c pass`.

Run: python benchmarks/bench_campaign.py [--repeat N]. Prints medians; not a test. Target (issue 25): a six-phase
campaign in at most 50 ms.
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
from pathlib import Path

TOP = """
model = "llama3.1-70b"
gpu = "h100-sxm"
n_gpus = 1024
precision = "fp8"
tokens = 15e12
[parallelism]
seq_len = 8192
gbs = 1024
"""
PHASES = (  # name, seq_len, gbs, tokens, the layout when given (tp, pp, vp, cp)
    ("ramp", 4096, 1024, 0.25e12, (4, 8, 5, 1)),
    ("main", 8192, 1024, None, (4, 8, 5, 1)),
    ("context-16k", 16384, 512, 0.2e12, (4, 8, 5, 2)),
    ("context-32k", 32768, 256, 0.2e12, (4, 8, 5, 4)),
    ("context-64k", 65536, 128, 0.2e12, (8, 8, 5, 4)),
    ("anneal", 8192, 1024, 0.05e12, (4, 8, 5, 1)),
)


def campaign_text(given: bool) -> str:
    """The six-phase campaign's TOML, its layouts given in full or left to the search."""
    text = TOP
    for name, seq_len, gbs, tokens, (tp, pp, vp, cp) in PHASES:
        text += f'[[phase]]\nname = "{name}"\nseq_len = {seq_len}\ngbs = {gbs}\n'
        text += "" if tokens is None else f"tokens = {tokens}\n"
        if given:
            text += (f"parallelism = {{ tp = {tp}, pp = {pp}, vp = {vp}, cp = {cp}, mbs = 1, recompute = 'none', "
                     "zero = 1 }\n")  # fmt: skip
    return text


def median_ms(fn: Callable[[], object], repeat: int, before: Callable[[], object] = lambda: None) -> float:
    samples = []
    for _ in range(repeat):
        before()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3


def in_process(repeat: int, folder: Path) -> None:
    from perfmodel.inputs.scenario import load_scenario
    from perfmodel.planning import evidence, search
    from perfmodel.planning.campaign import phase_scenarios, predict_campaign
    from perfmodel.planning.predict import context_for, predict

    single = load_scenario(None)  # the default scenario: 70B on 1,024 H100 in FP8, layout given
    predict(single)
    baseline = median_ms(lambda: predict(single), repeat * 20)
    print(f"{'baseline: one predict() of the default scenario, layout given':66s} {baseline:9.3f} ms")
    for given in (True, False):
        path = folder / f"campaign-{'given' if given else 'searched'}.toml"
        path.write_text(campaign_text(given))
        scenario = load_scenario(path)
        result = predict_campaign(scenario)  # warm: imports, hardware, topology tiers
        searched = sum(p.layouts_searched for p in result.phases.values())

        def cold(scenario: object = scenario) -> None:
            for _, phase in phase_scenarios(scenario):  # type: ignore[arg-type]
                ctx = context_for(phase)
                ctx.memo.clear()
                ctx.shards.clear()
            search._BLOCKS.clear()
            search._FLOORS.clear()
            evidence.GROUNDS.clear()

        phases = [phase for _, phase in phase_scenarios(scenario)]

        def one_by_one(phases: list[object] = phases) -> None:
            for phase in phases:
                predict(phase)  # type: ignore[arg-type]

        label = "given layouts" if given else f"searched layouts ({searched:,} priced)"
        for how, before in (("cold", cold), ("repeated", lambda: None)):
            alone = median_ms(one_by_one, repeat, before)
            ms = median_ms(lambda scenario=scenario: predict_campaign(scenario), repeat, before)
            print(f"{f'six-phase campaign, {label}, {how}':66s} {ms:9.3f} ms {ms / baseline:8.1f}x baseline, "
                  f"{ms / alone:5.2f}x its phases predicted one by one ({alone:.3f} ms)")  # fmt: skip


def first_prediction(path: Path) -> None:
    """Print the milliseconds of the first prediction of the campaign `path` in this (fresh) interpreter, once the
    imports a search needs, the hardware and the calibration are loaded."""
    import numpy  # noqa: F401  (imported by the first search otherwise)

    import perfmodel.planning.search  # noqa: F401
    from perfmodel.inputs.scenario import load_scenario
    from perfmodel.planning.campaign import predict_campaign
    from perfmodel.planning.predict import predict

    predict(load_scenario(None))
    scenario = load_scenario(path)
    start = time.perf_counter()
    predict_campaign(scenario)
    print((time.perf_counter() - start) * 1e3)


def fresh_process(repeat: int, folder: Path) -> None:
    path = folder / "campaign-searched.toml"
    path.write_text(campaign_text(False))
    command = [sys.executable, __file__, "--first", str(path)]
    samples = [float(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
               for _ in range(repeat)]  # fmt: skip
    label = "six-phase campaign, searched layouts, first in a fresh process"
    print(f"{label:66s} {statistics.median(samples):9.3f} ms")


def end_to_end(repeat: int) -> None:
    from bench_predict import wall  # this folder is the script's: its first import path

    cache = tempfile.mkdtemp()
    env = os.environ | {"PERFMODEL_CACHE_DIR": cache}
    baseline = wall(repeat, [sys.executable, "-c", "pass"], cache)
    print(f"{'baseline: python -c pass, wall':66s} {baseline * 1e3:9.1f} ms")
    for name in ("default", "campaign-deepseek-v3", "campaign-llama3.1-405b"):
        command = [sys.executable, "-m", "perfmodel", "predict", name]
        subprocess.run(command, check=True, capture_output=True, env=env)  # fills the caches of checked files
        seconds = wall(repeat, command, cache)
        print(f"{f'perfmodel predict {name}, wall':66s} {seconds * 1e3:9.1f} ms {seconds / baseline:8.1f}x baseline")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--first", type=Path, help=argparse.SUPPRESS)  # one fresh process's first prediction
    args = parser.parse_args()
    if args.first:
        first_prediction(args.first)
        return
    with tempfile.TemporaryDirectory() as folder:
        in_process(args.repeat, Path(folder))
        fresh_process(args.repeat, Path(folder))
    end_to_end(max(3, args.repeat // 3))


if __name__ == "__main__":
    main()
