"""Where NVIDIA's submitted MLPerf Training v5.0 Llama 3.1 405B layouts rank in perfmodel's search.

For each scenario (the submitted layout, from mlperf_training_llm.csv), the whole layout space at the same GPU count,
global batch and sequence length is searched; the submitted layout's predicted step time is ranked among every
layout that fits, once over the full space and once with MBS, recompute and ZeRO held at the submitted values
(only the TP/PP/VP/CP/DP split free).

Run: python benchmarks/mlperf_layout_rank.py [SCENARIO.toml ...]. Not a test: it reports what the model says.
"""

from __future__ import annotations

import sys

from perfmodel.inputs.scenario import LAYOUT_KEYS, Scenario, load_scenario
from perfmodel.planning.predict import context_for, predict
from perfmodel.planning.search import Space, objective_scale, search

SCENARIOS = ("scenarios/mlperf-405b-h100-512.toml", "scenarios/mlperf-405b-gb200-512.toml")


def rank(path: str) -> None:
    scenario: Scenario = load_scenario(path)
    submitted = predict(scenario)
    layout = submitted.layout
    ctx = context_for(scenario)
    objective = submitted.step_time_s * objective_scale("time", layout.gbs, layout.seq_len, layout.n_gpus)
    print(f"{path}: submitted {layout.describe()}, predicted step {submitted.step_time_s:.2f} s")
    held = {"mbs": layout.mbs, "recompute": layout.recompute, "zero": layout.zero}
    for label, fixed in (("whole space", {}), ("split only (MBS, recompute, ZeRO as submitted)", held)):
        fixed_all = dict.fromkeys(k for k in LAYOUT_KEYS if k not in ("gbs",)) | fixed
        found = search(ctx, Space(((layout.n_gpus, layout.gbs),), fixed_all), top=3, every=True)
        best = found.best
        gap = submitted.step_time_s / best.step_time_s - 1
        print(
            f"  {label}: rank {found.rank(objective):,} of {found.feasible:,} layouts that fit "
            f"({found.evaluated:,} valid); best {best.layout.describe()} at {best.step_time_s:.2f} s; "
            f"submitted is {gap:+.1%} slower"
        )


def main() -> None:
    for path in sys.argv[1:] or SCENARIOS:
        rank(path)


if __name__ == "__main__":
    main()
