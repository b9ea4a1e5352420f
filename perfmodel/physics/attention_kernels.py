"""Flash attention's share of peak per family, fitted to measured kernels rather than to training rows.

The model prices an attention call as (MMA time + exponential time) / (share x length / (length + half tokens))
(compute.attention_core_s). For each family with rows in perfmodel/data/kernels_attention.csv (inputs.kernels), the BF16
forward's and backward's (share, half tokens) are the weighted least-squares fit of that form to the rows' times (closed
form: time / core is linear in 1 / length), and the FP8 forward's share a ratio on the BF16 forward's at its half
length, on the rows of head dim 128 without a window (`AttentionKernel.reference`). The rows of other shapes fit two
mechanisms the shares do not carry, each linear in its term: a sliding window's band (`fit_band`: whole tiles along it
and a fixed work per query, one term per pass for every family) and the FP8 backward's quantising of P and dS per score
element (`fit_fp8_backward`, per family and format); the head dim's own cost is the exponentials' (twice as many per
FLOP at 64 as at 128). efficiency.DEFAULTS carries the rounded results; tests/test_attention_kernels.py holds them equal
and reports each row's error. Before this, one attention factor per vendor was fitted to training rows, and it sat at
its bound absorbing costs the rows had and the model lacked.

FlashAttention-2's rows (Hopper) are fitted alike, on their own (`fit_flash_attn_2`): the kernel of Hopper's
context-parallel ring steps up to efficiency.FLASH_ATTN_2_UNTIL. A family's kernels are fitted by release
(`fit_releases`): the newest, every part at its newest release pooled, is efficiency.DEFAULTS; an older release measured
on one of its parts (B200 at NGC 25.06, cuDNN 9.10.2, against 25.09's 9.13.1) carries that part's change to the whole
family, and prices rows of older software (efficiency.released_attention).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import NamedTuple

from perfmodel.inputs.hardware import get_accelerator
from perfmodel.inputs.kernels import AttentionKernel
from perfmodel.physics.compute import attention_core_s
from perfmodel.physics.efficiency import (
    DEFAULTS,
    FLASH_ATTN_2_UNTIL,
    FP8_ATTENTION_BACKWARD,
    Efficiency,
    release_age_years,
)
from perfmodel.physics.workload import ATTENTION_BWD_FLOP_RATIO, Op


class Fitted(NamedTuple):
    """One family's attention as its kernels measure it (the efficiency fields of the same names)."""

    attention_fwd: float
    attention_fwd_half_tokens: float
    attention_bwd: float
    attention_bwd_half_tokens: float
    attention_fp8_ratio: float


def kernel_op(row: AttentionKernel) -> Op:
    """The model's attention operation for a measured call (workload._attention_op's counts for one layer of `heads`
    heads of `head_dim`, `head_dim_v` wide values): causal, each query against half the keys on average; a non-causal
    call against all of them, as a ring's off-diagonal steps; a windowed one against its window's mean keys, along a
    band; a FlashAttention-2 row's is a ring step's, the kernel that ran it."""
    queries = row.batch * row.seq
    keys = row.seq / (2 if row.causal else 1)
    if row.window:
        keys = row.window - row.window * row.window / (2 * row.seq)  # ModelSpec.mean_keys
    exps = queries * keys * row.heads
    flops = exps * 2 * (row.head_dim + row.head_dim_v) * (ATTENTION_BWD_FLOP_RATIO if row.backward else 1.0)
    name, ring = "attention.bwd" if row.backward else "attention", 1.0 if row.flash_attn_2 else 0.0
    diagonal = 1.0 if row.causal else 0.0
    return Op(name, "attention", flops, 0.0, row.fmt, m=keys if row.window else row.seq, exps=exps, ring=ring,
              diagonal=diagonal, off_diagonal_m=row.seq, band=bool(row.window))  # fmt: skip


def _core_s(row: AttentionKernel, eff: Efficiency) -> float:
    """The call's MMA and exponential time at share 1 and no length penalty (priced as a causal kernel's: at share 1
    the two are the same work at the same rate)."""
    whole = replace(eff, attention_fwd=1.0, attention_bwd=1.0, attention_fp8_ratio=1.0, attention_fwd_half_tokens=0.0,
                    attention_bwd_half_tokens=0.0)  # fmt: skip
    return float(attention_core_s(kernel_op(row)._replace(diagonal=1.0), get_accelerator(row.part), whole))


def _linear(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(a, b) minimising the relative error of a + b x against y over (x, y) points, b >= 0: a kernel does not run
    faster for being shorter (FlashAttention-2's non-causal forward measures flat, 356-364 TFLOP/s from 4k to 64k
    tokens, where the free fit's b is slightly negative), so a negative b is fitted as a alone."""
    sxx = sum(x * x / (y * y) for x, y in points)
    sx = sum(x / (y * y) for x, y in points)
    s1 = sum(1 / (y * y) for _, y in points)
    tx = sum(x / y for x, y in points)
    t1 = sum(1 / y for _, y in points)
    det = s1 * sxx - sx * sx
    a, b = (t1 * sxx - tx * sx) / det, (s1 * tx - sx * t1) / det
    return (a, b) if b >= 0 else (t1 / s1, 0.0)


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


def at_release(rows: Iterable[AttentionKernel], release: str | None) -> list[AttentionKernel]:
    """The rows of each part at its newest release at or before `release` (None: its newest), and the rows naming
    no release; a part measured only later is left out."""
    rows = list(rows)
    chosen: dict[str, str] = {}
    for row in rows:
        if row.release is not None and (release is None or row.release <= release):
            chosen[row.part] = max(chosen.get(row.part, row.release), row.release)
    return [row for row in rows if row.release is None or row.release == chosen.get(row.part)]


def fit_releases(rows: Iterable[AttentionKernel], eff: Efficiency) -> dict[str, tuple[tuple[str | None, Fitted], ...]]:
    """Each family's attention by release, oldest first: its newest (every part at its newest release, pooled;
    release None where no part names two) and, before it, each older release of the part measured at several, as
    that part's change to its newest applied to the family's (shares and half-speed lengths each scaled by the
    part's ratio): a library release changes the kernels of every part of the family alike. FlashAttention-2's rows
    are left to `fit_flash_attn_2`, the non-causal ones to `fit_non_causal`."""
    rows = [row for row in rows if row.reference and row.causal and not row.flash_attn_2]
    found: dict[str, tuple[tuple[str | None, Fitted], ...]] = {}
    for family in sorted({get_accelerator(row.part).family for row in rows}):
        own = [row for row in rows if get_accelerator(row.part).family == family]
        newest = fit(at_release(own, None), eff)[family]
        releases = {
            part: sorted({r.release for r in own if r.part == part and r.release}) for part in {r.part for r in own}
        }
        stepped = {part: named for part, named in releases.items() if len(named) > 1}
        if len(stepped) > 1:
            raise ValueError(f"{family}: releases measured on several parts ({', '.join(sorted(stepped))})")
        steps: list[tuple[str | None, Fitted]] = [(None, newest)]
        for part, named in stepped.items():
            on_part = [row for row in own if row.part == part]
            part_newest = fit(at_release(on_part, None), eff)[family]
            older = [fit(at_release(on_part, release), eff)[family] for release in named[:-1]]
            scaled = [Fitted(*(f * o / n for f, o, n in zip(newest, old, part_newest, strict=True))) for old in older]
            steps = [*zip(named[:-1], scaled, strict=True), (named[-1], newest)]
        found[family] = tuple(steps)
    return found


def fit_flash_attn_2(rows: Iterable[AttentionKernel], eff: Efficiency) -> dict[str, Fitted]:
    """FlashAttention-2 per family with rows of it, fitted on its own causal rows: what a context-parallel ring step
    ran up to efficiency.FLASH_ATTN_2_UNTIL (efficiency.RING_FLASH_ATTN_2 carries the result)."""
    return fit([row for row in rows if row.reference and row.flash_attn_2 and row.causal], eff)


def fit_non_causal(rows: Iterable[AttentionKernel], eff: Efficiency) -> tuple[dict[str, Fitted], dict[str, Fitted]]:
    """Non-causal kernels per family with rows of them, the vendor's (efficiency.NON_CAUSAL_ATTENTION) and
    FlashAttention-2's (RING_FLASH_ATTN_2_NON_CAUSAL), each fitted on its own rows: a ring's off-diagonal steps."""
    rows = [row for row in rows if row.reference and not row.causal]
    return fit([r for r in rows if not r.flash_attn_2], eff), fit([r for r in rows if r.flash_attn_2], eff)


def predicted_s(row: AttentionKernel, eff: Efficiency) -> float:
    """The model's time of a measured call with these efficiencies, at the row's own release
    (efficiency.released_attention): a FlashAttention-2 row's is the last that ran it."""
    release = FLASH_ATTN_2_UNTIL if row.flash_attn_2 else row.release
    released = eff if release is None else replace(eff, vintage_years=release_age_years(release))
    return float(attention_core_s(kernel_op(row), get_accelerator(row.part), released))


def _linear_term(rows: list[AttentionKernel], field: str, eff_of: Callable[[AttentionKernel], Efficiency]) -> float:
    """The value of the efficiency `field` on which the model's times of `rows` are linear that minimises their
    squared relative errors (closed form, from each row's time at 0 and at 1)."""
    num = den = 0.0
    for row in rows:
        eff = eff_of(row)
        at_0, at_1 = (predicted_s(row, replace(eff, **{field: value})) for value in (0.0, 1.0))
        a, u = at_0 / row.time_s - 1, (at_1 - at_0) / row.time_s
        num, den = num - a * u, den + u * u
    return num / den


def _family_defaults(row: AttentionKernel) -> Efficiency:
    """The bundled efficiencies of the row's family (its fitted shares)."""
    return DEFAULTS[get_accelerator(row.part).family]


BAND_FIELDS = {False: "attention_band_fwd", True: "attention_band_bwd"}
"""The band's efficiency field by pass (backward or not)."""
FP8_BACKWARD_FIELDS = {"fp8": "attention_fp8_bwd_ps", "mxfp8": "attention_mxfp8_bwd_ps"}
"""The FP8 backward's efficiency field by format."""


def fit_band(rows: Iterable[AttentionKernel]) -> dict[str, float]:
    """The sliding-window kernels' fixed work per query (efficiency.Efficiency.attention_band_*), one per pass for
    every family, fitted to the windowed rows with each family's bundled causal shares."""
    rows = [row for row in rows if row.window]
    return {field: _linear_term([r for r in rows if r.backward == backward], field, _family_defaults)
            for backward, field in BAND_FIELDS.items()}  # fmt: skip


def fit_fp8_backward(rows: Iterable[AttentionKernel]) -> dict[str, tuple[float, float]]:
    """The FP8 backward's time per score element (efficiency.FP8_ATTENTION_BACKWARD), per family and format (0 for a
    format the family has no rows of), fitted to the causal FP8 and MXFP8 backward rows whose values are as wide as
    their keys (head dims 64 and 128). MLA's 192/128 rows are a check: cuDNN's per-tensor FP8 backward there takes
    a path of its own, faster per element than at 64 or 128. Only the families that price the term are fitted
    (efficiency.FP8_ATTENTION_BACKWARD: not Hopper)."""
    rows = [row for row in rows if row.backward and row.causal and not row.window and not row.flash_attn_2]
    rows = [row for row in rows if row.head_dim == row.head_dim_v]
    fitted: dict[str, tuple[float, float]] = {}
    for family in sorted(FP8_ATTENTION_BACKWARD):
        own = [row for row in rows if get_accelerator(row.part).family == family]
        terms = [[r for r in own if r.fmt == fmt] for fmt in FP8_BACKWARD_FIELDS]
        fp8, mxfp8 = (_linear_term(t, f, _family_defaults) if t else 0.0
                      for t, f in zip(terms, FP8_BACKWARD_FIELDS.values(), strict=True))  # fmt: skip
        fitted[family] = (fp8, mxfp8)
    return fitted
