"""Which fitted values carry a protocol fold's error (issue 25: the stack protocol's one-signed folds).

A calibration file stores each protocol fold's fitted values (`protocols.P.folds[].parameters`) beside the full fit's
(`parameters`). For each fold asked for, its held-out rows are priced with the fold's values, then with one value
at a time set to the full fit's (an entry the fold's fit leaves at its default takes the full fit's, and the other
way), and the other way round: the full fit with one value set to the fold's. A value whose swap moves the fold's
mean signed error most carries its bias; the groups below swap several at once. The MoE stage's values are left
out: they act on no dense fold's rows. No refit: about half a minute.

Signed errors are in the metric's units with + meaning predicted faster than measured (optimistic), whatever the
metric; MAPE is the protocol's (protocols.HeldOut.error_pct).

Run: python scripts/protocol_blame.py [--protocol stack] [--by accelerator|year] [--calibration FILE] [FOLD ...]
(default: every fold of the stack protocol, rows split by accelerator and format).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from perfmodel.fitting import protocols
from perfmodel.fitting.runs import collect_runs
from perfmodel.fitting.validation import PreparedRun
from perfmodel.physics import parameters as table
from perfmodel.physics.calibration import BUNDLED

_GEMM = ("gemm_bf16", "gemm_sustained", "gemm_generation", "gemm_format_fp8", "gemm_format_fp4")
_HBM = ("memory", "memory_generation")
GROUPS = {
    "stack values": ("attention_impl", "step_overhead_s", "overlap_dp"),
    "release trends": ("software_gain_per_year", "fusion_gain_per_year"),
    "GEMM": _GEMM,
    "HBM": _HBM,
    "shared hardware values": (*_GEMM, *_HBM, "straggler_cv", "scaleout", "overlap_tp"),
}
"""Parameters (by name, every scope) swapped together: the values a held-out stack cannot fit, the release trends
only Megatron's rows measure, and the shared hardware shares every stack's rows pull."""


def score(fold: protocols.Fold, values: dict[str, float]) -> tuple[float, float, list[float]]:
    """MAPE, mean signed error (+: too fast) and each row's signed error of the fold's test rows under `values`."""
    result = protocols.held_out(fold, values)
    signed = [-row.error_pct if row.item.time_sign > 0 else row.error_pct for row in result.rows]
    return result.mape_pct, sum(signed) / len(signed), signed


def swapped(values: dict[str, float], source: dict[str, float], keys: Sequence[str]) -> dict[str, float]:
    """`values` with `keys` as `source` has them (absent there: at the entry's default)."""
    out = {k: v for k, v in values.items() if k not in keys}
    return out | {k: source[k] for k in keys if k in source}


ROW_GROUPS: dict[str, Callable[[PreparedRun], str]] = {
    "accelerator": lambda item: f"{item.run.accelerator}/{item.run.format}",
    "year": lambda item: (item.run.released or "undated")[:4],
}
"""How the fold's rows are split for their mean signed errors: by accelerator and number format, or by release year
(the software age a release trend prices)."""


def by_group(test: Sequence[PreparedRun], signed: Sequence[float], key: Callable[[PreparedRun], str]) -> str:
    """Mean signed error per group of rows (rows)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for item, error in zip(test, signed, strict=True):
        groups[key(item)].append(error)
    return "  ".join(f"{k} {sum(v) / len(v):+.1f} ({len(v)})" for k, v in sorted(groups.items()))


def blame(
    fold: protocols.Fold, fold_values: dict[str, float], full: dict[str, float], by: str = "accelerator"
) -> list[str]:
    """The fold's table: its error under each fit, then each differing value and group swapped both ways."""
    mape0, signed0, rows0 = score(fold, fold_values)
    mape1, signed1, rows1 = score(fold, full)
    lines = [
        f"## {fold.name}: {len(fold.train)} rows fitted, {len(fold.test)} predicted",
        f"fold's fit  MAPE {mape0:5.2f}%  signed {signed0:+6.2f}%   {by_group(fold.test, rows0, ROW_GROUPS[by])}",
        f"full fit    MAPE {mape1:5.2f}%  signed {signed1:+6.2f}%   {by_group(fold.test, rows1, ROW_GROUPS[by])}",
        f"{'value':40s} {'fold':>9s} {'full':>9s} | fold's fit, this value full's | full fit, this value fold's",
    ]
    differing = [
        k
        for k in dict.fromkeys([*full, *fold_values])
        if fold_values.get(k) != full.get(k) and table.stage_of(k) != "moe"
    ]
    swaps = [(k, [k]) for k in differing] + [
        (f"[{label}]", [k for k in differing if k.partition("@")[0] in names]) for label, names in GROUPS.items()
    ]
    for label, keys in swaps:
        if not keys:
            continue
        mape_a, signed_a, _ = score(fold, swapped(fold_values, full, keys))
        mape_b, signed_b, _ = score(fold, swapped(full, fold_values, keys))
        shown = [f"{v:.4g}" if (v := d.get(label)) is not None else "default" for d in (fold_values, full)]
        if label.startswith("["):
            shown = ["", ""]
        lines.append(
            f"{label:40s} {shown[0]:>9s} {shown[1]:>9s} | {mape_a:5.2f} {signed_a:+6.2f} ({signed_a - signed0:+5.2f}) "
            f"| {mape_b:5.2f} {signed_b:+6.2f} ({signed_b - signed1:+5.2f})"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folds", nargs="*", help="fold names (default: every fold of the protocol)")
    parser.add_argument("--protocol", default="stack", choices=protocols.PROTOCOLS)
    parser.add_argument("--by", default="accelerator", choices=ROW_GROUPS, help="split the rows' signed error by")
    parser.add_argument("--calibration", type=Path, default=BUNDLED, help="calibration file (default: bundled)")
    args = parser.parse_args()
    stored = json.loads(args.calibration.read_text())
    fold_values = {f["name"]: f["parameters"] for f in stored["protocols"][args.protocol]["folds"]}
    runs, excluded = collect_runs(None)
    items = protocols.with_tested(args.protocol, protocols.fitted_items(runs, excluded), runs, [])
    for fold in protocols.folds(args.protocol, items):
        if not args.folds or fold.name in args.folds:
            print("\n".join(blame(fold, fold_values[fold.name], stored["parameters"], args.by)), end="\n\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
