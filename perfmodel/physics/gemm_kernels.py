"""Dense GEMMs' share of peak and shape per family, fitted to measured kernels rather than to training rows.

The model prices a GEMM as FLOPs / (peak at the sustained clock x share x shape share) + the kernel overhead
(compute.op_time, compute.gemm_shape_share: tile padding, tiles / (tiles + tiles_half x SMs), K / (K + depth_half)).
For each family with rows in perfmodel/data/kernels_gemm_shapes.csv (inputs.kernels.gemm_kernels), the BF16 and FP8
shares and the two half-speed points are the least-squares fit of that form, on log time, to the rows (every part of
the family at its own datasheet peak and sustained clock, compute.clock_share). efficiency.GEMM_KERNELS carries the
rounded results; tests/test_gemm_kernels.py holds them equal and reports each row's error.

Leave-one-family-out (`leave_one_out`) prices a family's rows from its datasheet and the other families' fits: the
share and shape of its vendor's other measured families (their geometric mean), the way the model prices a family
without rows (efficiency.GEMM_SILICON).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from statistics import geometric_mean
from typing import NamedTuple

import numpy as np
from scipy.optimize import least_squares

from perfmodel.inputs.hardware import get_accelerator
from perfmodel.inputs.kernels import GemmKernel, GroupedGemmKernel
from perfmodel.inputs.precision import BF16_BYTES
from perfmodel.physics.compute import op_time
from perfmodel.physics.efficiency import DEFAULTS, GEMM_MIN_ROWS, Efficiency
from perfmodel.physics.parameters import VENDORS
from perfmodel.physics.workload import Op

SHARE_BOUNDS = (0.2, 1.2)
"""Bounds of a fitted share of the peak at the sustained clock (above 1: a part whose sustained clock the
datasheet understates; MI300X's 1,207 MHz GEMM clock sets its rate base)."""
TILES_HALF_BOUNDS = (0.0, 4.0)
DEPTH_HALF_BOUNDS = (0.0, 4096.0)
LATENCY_US_BOUNDS = (0.0, 20.0)
SHAPE_ROWS = 50
"""Fewest rows of a family that fit its shape (the half-speed points and latency) with its shares."""


class Fitted(NamedTuple):
    """One family's dense GEMMs as its kernels measure them (efficiency.GEMM_KERNELS's fields)."""

    bf16: float
    fp8: float | None
    tiles_half: float
    depth_half: float
    latency_us: float
    """The kernel's fixed device time (pipeline fill and drain, the last tile's epilogue), in the model's fixed
    per-kernel overhead (Efficiency.kernel_overhead_us, which a training step's launches also pay)."""


def kernel_op(row: GemmKernel) -> Op:
    """The model's operation for a measured GEMM (workload._gemm's counts: inputs read once, output written once)."""
    in_bytes = 1.0 if row.fmt == "fp8" else BF16_BYTES
    size = (row.m * row.k + row.k * row.n) * in_bytes + row.m * row.n * BF16_BYTES
    return Op("gemm", "gemm", 2 * row.m * row.n * row.k, size, row.fmt, row.m, row.n, k=row.k)


def grouped_predicted_s(row: GroupedGemmKernel) -> float:
    """The model's time of a measured grouped GEMM on the row's part (compute.op_time's grouped branch: the family's
    dense share, the groups' tiles in shared waves, at the prior `grouped_gemm` of 1; no per-expert loop cost, which a
    training step's releases add, not the kernel)."""
    acc = get_accelerator(row.part)
    eff = replace(DEFAULTS[acc.family], grouped_gemm=1.0, moe_legacy_group_s=0.0)
    in_bytes = 1.0 if row.fmt == "fp8" else BF16_BYTES
    size = ((row.m * row.k + row.k * row.n) * in_bytes + row.m * row.n * BF16_BYTES) * row.groups
    flops = 2 * row.m * row.n * row.k * row.groups
    op = Op("grouped_gemm", "grouped_gemm", flops, size, row.fmt, row.m, row.n, groups=row.groups, k=row.k)
    return float(op_time(op, acc, eff))


def family(row: GemmKernel) -> str:
    return get_accelerator(row.part).family


def _with(eff: Efficiency, fitted: Fitted) -> Efficiency:
    return replace(
        eff,
        gemm_bf16=fitted.bf16,
        gemm_fp8=fitted.fp8 or fitted.bf16,
        gemm_tiles_half=fitted.tiles_half,
        gemm_depth_half=fitted.depth_half,
        kernel_overhead_us=fitted.latency_us,
    )


def predicted_s(row: GemmKernel, fitted: Fitted, eff: Efficiency | None = None) -> float:
    """The model's time of a measured GEMM with a family's fit, on the row's part (kernel overhead and HBM as the
    family's defaults)."""
    acc = get_accelerator(row.part)
    base = DEFAULTS[acc.family] if eff is None else eff
    return float(op_time(kernel_op(row), acc, _with(base, fitted)))


def _batched_s(rows: Sequence[GemmKernel], fitted: Fitted) -> np.ndarray:
    """`predicted_s` of many rows at once: one op_time per part and format, over arrays of shapes."""
    times = np.empty(len(rows))
    groups: dict[tuple[str, str], list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault((row.part, row.fmt), []).append(i)
    for (part, fmt), index in groups.items():
        acc = get_accelerator(part)
        m, n, k = (np.array([float(getattr(rows[i], d)) for i in index]) for d in "mnk")
        in_bytes = 1.0 if fmt == "fp8" else BF16_BYTES
        op = Op("gemm", "gemm", 2 * m * n * k, (m * k + k * n) * in_bytes + m * n * BF16_BYTES, fmt, m, n, k=k)
        times[index] = op_time(op, acc, _with(DEFAULTS[acc.family], fitted))
    return times


def fit_family(rows: Sequence[GemmKernel], shape: Fitted | None = None) -> Fitted:
    """One family's shares (FP8's only with GEMM_MIN_ROWS rows) and, unless `shape` gives them, its half-speed points
    and latency, minimising the squared log error of the predicted times."""
    has_fp8 = sum(row.fmt == "fp8" for row in rows) >= GEMM_MIN_ROWS
    used = [row for row in rows if row.fmt == "bf16" or has_fp8]
    measured = np.log([row.time_s for row in used])
    fixed = [] if shape is None else [shape.tiles_half, shape.depth_half]

    def fitted_of(x: np.ndarray) -> Fitted:
        values = [*x[:2], *fixed, *x[2:]] if fixed else list(x)
        return Fitted(values[0], values[1] if has_fp8 else None, values[2], values[3], values[4])

    def residuals(x: np.ndarray) -> np.ndarray:
        return np.log(_batched_s(used, fitted_of(x))) - measured

    bounds = [SHARE_BOUNDS, SHARE_BOUNDS, TILES_HALF_BOUNDS, DEPTH_HALF_BOUNDS, LATENCY_US_BOUNDS]
    start, scale = [0.7, 0.7, 0.3, 300.0, 4.0], [0.1, 0.1, 0.1, 100.0, 1.0]
    free = [0, 1, 4] if fixed else [0, 1, 2, 3, 4]
    lower, upper = zip(*(bounds[i] for i in free), strict=True)
    x0, x_scale = [start[i] for i in free], [scale[i] for i in free]
    return fitted_of(least_squares(residuals, x0, bounds=(lower, upper), x_scale=x_scale).x)


def fitted_rows(rows: Iterable[GemmKernel]) -> list[GemmKernel]:
    """The rows the fit reads: all but OpenXLA's tables on AMD parts, XLA's own lowering on ROCm (its autotuner
    picks Triton or hipBLASLt), which measures 13-25% below hipBLASLt at the same shapes (gfx950 4,096 cubed 1,240
    TFLOP/s against hipblaslt-bench's 1,433; gfx942's best 583 against MI300X's 668-709) and falls where a larger
    GEMM should rise (gfx942 512 x 4,096 x 4,096 at 297 against 512 x 2,048 x 4,096 at 487): not the library a
    training stack calls. They stay a reported check (tests/test_gemm_kernels.py)."""
    return [row for row in rows if not (row.xla and VENDORS[family(row)] == "amd")]


def fit(rows: Iterable[GemmKernel]) -> dict[str, Fitted]:
    """Each family with GEMM_MIN_ROWS BF16 rows among `fitted_rows`: one with SHAPE_ROWS rows fits its shape (half
    speed points, latency) with its shares; one with fewer (AMD's hipBLASLt squares and best shapes, which cannot
    tell occupancy from depth) fits its shares at the shape of the others (`peer_fit`)."""
    by: dict[str, list[GemmKernel]] = {}
    for row in fitted_rows(rows):
        by.setdefault(family(row), []).append(row)
    fittable = {f: r for f, r in by.items() if sum(row.fmt == "bf16" for row in r) >= GEMM_MIN_ROWS}
    shaped = {f: fit_family(r) for f, r in sorted(fittable.items()) if len(r) >= SHAPE_ROWS}
    rest = {f: fit_family(r, peer_fit(shaped, f)) for f, r in sorted(fittable.items()) if f not in shaped}
    return dict(sorted((shaped | rest).items()))


def peer_fit(fits: dict[str, Fitted], held_out: str) -> Fitted:
    """A family's GEMMs from the other families' fits: its vendor's others (all others where it has none), each
    field their geometric mean (FP8 where any measures it; the half-speed points floored at 1 to take the log)."""
    vendor = VENDORS[held_out]
    peers = [f for name, f in fits.items() if name != held_out and VENDORS[name] == vendor]
    peers = peers or [f for name, f in fits.items() if name != held_out]
    fp8 = [p.fp8 for p in peers if p.fp8 is not None]
    return Fitted(
        geometric_mean(p.bf16 for p in peers),
        geometric_mean(fp8) if fp8 else None,
        geometric_mean(max(p.tiles_half, 1e-3) for p in peers),
        geometric_mean(max(p.depth_half, 1.0) for p in peers),
        geometric_mean(max(p.latency_us, 0.1) for p in peers),
    )


def errors(rows: Sequence[GemmKernel], fits: dict[str, Fitted]) -> list[float]:
    """Each row's predicted over measured time, minus 1, with its family's fit (a format without a fitted share at
    BF16's share)."""
    return [predicted_s(row, fits[family(row)]) / row.time_s - 1 for row in rows]


def leave_one_out(rows: Sequence[GemmKernel]) -> dict[str, list[float]]:
    """Per fitted family, its rows' errors when the family is left out of the fit and priced by `peer_fit`."""
    rows = fitted_rows(rows)
    found: dict[str, list[float]] = {}
    for held_out in fit(rows):
        others = fit(row for row in rows if family(row) != held_out)
        own = [row for row in rows if family(row) == held_out]
        found[held_out] = errors(own, {held_out: peer_fit(others, held_out)})
    return found
