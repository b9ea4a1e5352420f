"""Flash attention's share of peak per family, fitted to measured kernels rather than to training rows.

The model prices an attention call as (MMA time + exponential time) / (share x length / (length + half tokens))
(compute.attention_core_s). For each family with rows in perfmodel/data/kernels_attention.csv (inputs.kernels), the
BF16 forward's and backward's (share, half tokens) are the weighted least-squares fit of that form to the rows'
times (closed form: time / core is linear in 1 / length), and the FP8 forward's share a ratio on the BF16 forward's
at its half length. The FP8 backward is priced at BF16's rate and share (workload.attention_backward): its rows are
a check, not a fit. efficiency.DEFAULTS carries the rounded results; tests/test_attention_kernels.py holds them
equal and reports each row's error. Before this, one attention factor per vendor was fitted to training rows, and it
sat at its bound absorbing costs the rows had and the model lacked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import NamedTuple

from perfmodel.inputs.hardware import get_accelerator
from perfmodel.inputs.kernels import AttentionKernel
from perfmodel.physics.compute import attention_core_s
from perfmodel.physics.efficiency import Efficiency
from perfmodel.physics.workload import ATTENTION_BWD_FLOP_RATIO, Op


class Fitted(NamedTuple):
    """One family's attention as its kernels measure it (the efficiency fields of the same names)."""

    attention_fwd: float
    attention_fwd_half_tokens: float
    attention_bwd: float
    attention_bwd_half_tokens: float
    attention_fp8_ratio: float


def kernel_op(row: AttentionKernel) -> Op:
    """The model's attention operation for a measured call: causal, each query against half the keys on average
    (workload._attention_op's counts for one layer of `heads` heads of `head_dim`)."""
    queries = row.batch * row.seq
    exps = queries * row.seq / 2 * row.heads
    flops = exps * 4 * row.head_dim * (ATTENTION_BWD_FLOP_RATIO if row.backward else 1.0)
    fmt = "bf16" if row.backward else row.fmt
    return Op("attention.bwd" if row.backward else "attention", "attention", flops, 0.0, fmt, m=row.seq, exps=exps)


def _core_s(row: AttentionKernel, eff: Efficiency) -> float:
    """The call's MMA and exponential time at share 1 and no length penalty."""
    whole = replace(eff, attention_fwd=1.0, attention_bwd=1.0, attention_fp8_ratio=1.0, attention_fwd_half_tokens=0.0,
                    attention_bwd_half_tokens=0.0)  # fmt: skip
    return float(attention_core_s(kernel_op(row), get_accelerator(row.part), whole))


def _linear(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(a, b) minimising the relative error of a + b x against y over (x, y) points."""
    sxx = sum(x * x / (y * y) for x, y in points)
    sx = sum(x / (y * y) for x, y in points)
    s1 = sum(1 / (y * y) for _, y in points)
    tx = sum(x / y for x, y in points)
    t1 = sum(1 / y for _, y in points)
    det = s1 * sxx - sx * sx
    return (t1 * sxx - tx * sx) / det, (s1 * tx - sx * t1) / det


def fit(rows: Iterable[AttentionKernel], eff: Efficiency) -> dict[str, Fitted]:
    """Each family's attention fitted to its rows: time / core = (1 + half / length) / share."""
    by: dict[tuple[str, bool, str], list[tuple[float, float]]] = {}
    for row in rows:
        key = (get_accelerator(row.part).family, row.backward, row.fmt)
        by.setdefault(key, []).append((1 / row.seq, row.time_s / _core_s(row, eff)))
    fitted: dict[str, Fitted] = {}
    for family in sorted({key[0] for key in by}):
        (a_fwd, b_fwd), (a_bwd, b_bwd) = _linear(by[family, False, "bf16"]), _linear(by[family, True, "bf16"])
        fwd_half = b_fwd / a_fwd
        fp8 = by.get((family, False, "fp8"))
        ratio = 1.0
        if fp8:  # y = (1 + half x) / share_fp8: the share alone, at the BF16 forward's half length
            z = [(1 + fwd_half * x, y) for x, y in fp8]
            inverse = sum(zi / y for zi, y in z) / sum(zi * zi / (y * y) for zi, y in z)
            ratio = (1 / inverse) / (1 / a_fwd)
        fitted[family] = Fitted(1 / a_fwd, fwd_half, 1 / a_bwd, b_bwd / a_bwd, ratio)
    return fitted


def predicted_s(row: AttentionKernel, eff: Efficiency) -> float:
    """The model's time of a measured call with these efficiencies."""
    return float(attention_core_s(kernel_op(row), get_accelerator(row.part), eff))
