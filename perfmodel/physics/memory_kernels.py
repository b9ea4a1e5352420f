"""HBM streaming share per family, fitted to measured bandwidth-bound kernels rather than to training steps.

compute.op_time prices a memory-bound operation as bytes / (datasheet HBM bandwidth x Efficiency.memory) + the fixed
per-kernel overhead. Before this fit `memory` was a shared share (0.74) times a generation factor per family, both
fitted to whole training steps, which put Blackwell Ultra's memory-bound kernels at 1.13x its datasheet bandwidth; the
best kernel measured on GB300 reaches 0.81 of it.

The rows are perfmodel/data/kernels_memory.csv (inputs.kernels.memory_kernels): the vendors' own norm, add and cast
kernels, and HipKittens' on MI355X. `fit` takes each family's rows of FIT_MIN_BYTES and more (below, a kernel is
latency-bound: a 4 MiB RMSNorm runs in 3 us, less than the model's fixed overhead per kernel, which a training step's
launches also pay) and fits the one share that prices them best, by least squares on log time. efficiency.
KERNEL_MEMORY carries the rounded results; tests/test_memory_kernels.py holds them equal and reports each row's error
and the leave-one-GPU-out error.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import replace

from perfmodel.inputs.hardware import get_accelerator
from perfmodel.inputs.kernels import MemoryKernel
from perfmodel.physics.compute import op_time
from perfmodel.physics.efficiency import DEFAULTS
from perfmodel.physics.workload import Op

FIT_MIN_BYTES = 2**26
"""The smallest kernel fitted (64 MiB: a norm of 8,192 tokens x 4,096 in BF16 moves 128-200 MiB); smaller rows are
priced and reported, not fitted."""
SHARE_BOUNDS = (0.2, 1.0)


def family(row: MemoryKernel) -> str:
    return get_accelerator(row.gpu).family


def predicted_s(row: MemoryKernel, share: float) -> float:
    """The model's time of a measured kernel at an HBM share, on the row's part (kernel overhead as its family's)."""
    acc = get_accelerator(row.gpu)
    eff = replace(DEFAULTS[acc.family], memory=share)
    return float(op_time(Op(row.kernel, "memory", 0.0, row.bytes_moved, as_released=True), acc, eff))


def fitted_rows(rows: Iterable[MemoryKernel]) -> list[MemoryKernel]:
    return [row for row in rows if row.bytes_moved >= FIT_MIN_BYTES]


def fit_share(rows: Sequence[MemoryKernel]) -> float:
    """The share whose prices of `rows` have the least squared log error."""
    from scipy.optimize import minimize_scalar

    def loss(share: float) -> float:
        return sum(math.log(predicted_s(row, share) / row.time_s) ** 2 for row in rows)

    return float(minimize_scalar(loss, bounds=SHARE_BOUNDS, method="bounded", options={"xatol": 1e-5}).x)


def fit(rows: Iterable[MemoryKernel]) -> dict[str, float]:
    """Each measured family's share, fitted to its rows of FIT_MIN_BYTES and more."""
    by_family: dict[str, list[MemoryKernel]] = {}
    for row in fitted_rows(rows):
        by_family.setdefault(family(row), []).append(row)
    return {name: fit_share(chosen) for name, chosen in sorted(by_family.items())}


def errors(rows: Iterable[MemoryKernel], shares: dict[str, float]) -> list[tuple[MemoryKernel, float]]:
    """(row, predicted / measured - 1) for each row, at its family's share."""
    return [(row, predicted_s(row, shares[family(row)]) / row.time_s - 1) for row in rows]


def leave_one_gpu_out(rows: Sequence[MemoryKernel]) -> dict[str, list[float]]:
    """Each GPU's fitted rows priced from the others' rows: at its family's share fitted to its other GPUs where one is
    measured (GB200 from B200, H200 from H100), else at the median of the other families' shares (its datasheet
    bandwidth carries the rest)."""
    found: dict[str, list[float]] = {}
    for gpu in sorted({row.gpu for row in fitted_rows(rows)}):
        others = fit(row for row in rows if row.gpu != gpu)
        held = [row for row in fitted_rows(rows) if row.gpu == gpu]
        share = others.get(family(held[0]), statistics.median(others.values()))
        found[gpu] = [error for _, error in errors(held, {family(held[0]): share})]
    return found
