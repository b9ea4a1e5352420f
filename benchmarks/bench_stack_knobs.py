"""`predict()` on the torchtitan stack with its knobs against the same layout on Megatron (the baseline), repeated
(warm contexts) and with the contexts cleared, in process; medians of alternating runs, printed as ratios.

    python benchmarks/bench_stack_knobs.py [--repeat 200]
"""

from __future__ import annotations

import argparse
from typing import Any

from bench_predict import median_us

import perfmodel
from perfmodel.planning import predict as predicting

LAYOUT = {
    "model": "llama3.1-8b", "gpu": "h100-grand-teton", "n_gpus": 64, "seq_len": 8192, "tp": 8, "pp": 1, "cp": 1,
    "mbs": 12, "gbs": 96, "zero": 3, "recompute": "selective", "precision": "fp8",
}  # fmt: skip
CASES: dict[str, dict[str, Any]] = {
    "megatron (baseline)": {"stack": "megatron"},
    "torchtitan defaults": {"stack": "torchtitan"},
    "torchtitan async TP + compile + rowwise": {"stack": "torchtitan", "async_tp": True, "compile": True}
    | {"fp8_recipe": "rowwise"},
}


def _cold(options: dict[str, Any]) -> None:
    predicting._CONTEXTS.clear()
    predicting._LAST_CONTEXT.clear()
    perfmodel.predict(**options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=200)
    repeat = parser.parse_args().repeat
    rows = []
    for name, knobs in CASES.items():
        options = LAYOUT | knobs
        perfmodel.predict(**options)
        rows.append((name, median_us(lambda o=options: perfmodel.predict(**o), repeat) / 1e3,
                     median_us(lambda o=options: _cold(o), max(5, repeat // 10)) / 1e3))  # fmt: skip
    base_warm, base_cold = rows[0][1], rows[0][2]
    print(f"{'case':42} {'warm ms':>9} {'ratio':>6} {'cold ms':>9} {'ratio':>6}")
    for name, warm, cold in rows:
        print(f"{name:42} {warm:9.3f} {warm / base_warm:6.2f} {cold:9.2f} {cold / base_cold:6.2f}")


if __name__ == "__main__":
    main()
