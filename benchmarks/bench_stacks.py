"""Speed of a prediction on another stack's profile: MaxText's hybrid FSDP (ZeRO-3 in groups of 128 of 512 DP ranks)
against the same layout fully sharded, and DeepSpeed's per-tensor ZeRO-3 of 2021 (GPT-3 175B on 1,536 A100s, as
Narayanan et al. 2021's Table 2 ran it), and torchtitan's FlashAttention-2 on B200, against the default scenario, in
the same run (ratios to the default).

Run: python benchmarks/bench_stacks.py [--repeat N]. Prints medians; not a test.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench_predict import median_us

from perfmodel import load_scenario
from perfmodel.physics.step import COMPILE_AFTER, evaluate
from perfmodel.planning.predict import choose_layout, context_for, layout_vars, predict

MAXTEXT = {
    "model": "llama2-70b", "gpu": "h100-sxm", "n_gpus": 512, "precision": "fp8", "stack": "maxtext", "tp": 1,
    "pp": 1, "cp": 1, "mbs": 2, "gbs": 1024, "seq_len": 4096, "zero": 3, "recompute": "full",
}  # fmt: skip
DEEPSPEED_2021 = {
    "model": "gpt3-175b", "gpu": "a100-sxm-80gb", "n_gpus": 1536, "precision": "bf16", "stack": "megatron-deepspeed",
    "vintage": "2021-04", "tp": 1, "pp": 1, "mbs": 1, "gbs": 1536, "seq_len": 2048, "zero": 3, "recompute": "full",
}  # fmt: skip

TORCHTITAN_B200 = {
    "model": "llama3.1-8b", "gpu": "b200", "n_gpus": 64, "precision": "bf16", "stack": "torchtitan", "tp": 1,
    "pp": 1, "cp": 1, "mbs": 1, "gbs": 512, "zero": 3, "recompute": "none",
}  # fmt: skip
"""FlashAttention-2 on Blackwell, priced at its measured speed per family and pass (inputs/stacks.py FA2_SPEEDS)."""


def timings(repeat: int, **options: Any) -> tuple[float, float]:
    """Median microseconds of the compiled step and of a whole `predict`, for a scenario of these options."""
    scenario = load_scenario(None, **options)
    ctx = context_for(scenario)
    lv = layout_vars(choose_layout(scenario, ctx)[0])
    predict(scenario)
    for _ in range(COMPILE_AFTER):
        evaluate(ctx, lv)
    return median_us(lambda: evaluate(ctx, lv), repeat), median_us(lambda: predict(scenario), repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=300)
    repeat = parser.parse_args().repeat
    base_step, base_predict = timings(repeat)
    hybrid = MAXTEXT | {"shard_group": 128}
    cases: dict[str, dict[str, Any]] = {
        "default": {},
        "maxtext, full FSDP": MAXTEXT,
        "maxtext, hybrid 128": hybrid,
        "deepspeed ZeRO-3, 2021": DEEPSPEED_2021,
        "torchtitan FA2 on B200": TORCHTITAN_B200,
    }
    print(f"{'case':24s} {'evaluate us':>12s} {'ratio':>6s} {'predict us':>11s} {'ratio':>6s}")
    for name, options in cases.items():
        step, whole = timings(repeat, **options)
        print(f"{name:24s} {step:12.1f} {step / base_step:6.2f} {whole:11.1f} {whole / base_predict:6.2f}")


if __name__ == "__main__":
    main()
