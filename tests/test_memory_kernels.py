"""HBM streaming shares from measured kernels (perfmodel/data/kernels_memory.csv, physics.memory_kernels): the bundled
shares are the fit of the bundled rows, and each row is priced near its measured time, also for a GPU left out of the
fit."""

from __future__ import annotations

import statistics
from collections import defaultdict

import pytest

from perfmodel.inputs.kernels import memory_kernels
from perfmodel.physics.efficiency import KERNEL_MEMORY
from perfmodel.physics.memory_kernels import FIT_MIN_BYTES, errors, fit, fitted_rows, leave_one_gpu_out


def _mape(values: list[float]) -> float:
    return 100 * statistics.mean(abs(v) for v in values)


def _by_gpu(rows: object) -> dict[str, list[float]]:
    found: dict[str, list[float]] = defaultdict(list)
    for row, error in errors(rows, KERNEL_MEMORY):  # type: ignore[arg-type]
        found[row.gpu].append(error)
    return found


def test_the_bundled_shares_are_the_fit_of_the_bundled_rows() -> None:
    found = fit(memory_kernels())
    assert set(found) == set(KERNEL_MEMORY)
    for name, share in found.items():
        assert KERNEL_MEMORY[name] == pytest.approx(share, abs=1e-3), name


def test_every_row_names_its_source_and_each_gpu_is_priced_within_its_measured_error() -> None:
    """Rows of 64 MiB and more (92): MAPE 8.6%; per GPU H100 4.0%, B200 5.7%, H200 5.6%, MI355X 7.8%, GB200 12.7%
    and GB300 12.3% (cuDNN's RMSNorm at hidden 128 runs 20% slower than the share prices, its backward at hidden 4,096
    20% faster). Smaller rows (26, not fitted): 29.6%, latency-bound (a 4 MiB norm runs in 3 us, under the model's 4 us
    fixed cost per kernel)."""
    rows = memory_kernels()
    assert all(("@" in row.where or "github.com/" in row.where) and row.time_s > 0 < row.bytes_moved for row in rows)
    chosen = fitted_rows(rows)
    assert len(chosen) == 92
    limits = {"h100-sxm": 4.5, "b200": 6.0, "h200-sxm": 6.0, "mi355x": 8.5, "gb200": 13.0, "gb300": 13.0}
    for gpu, values in _by_gpu(chosen).items():
        assert _mape(values) <= limits[gpu], (gpu, _mape(values))
    assert _mape([e for gpu in _by_gpu(chosen).values() for e in gpu]) <= 9.0  # 8.6%
    small = [row for row in rows if row.bytes_moved < FIT_MIN_BYTES]
    assert _mape([e for gpu in _by_gpu(small).values() for e in gpu]) <= 31.0


def test_each_gpu_left_out_is_priced_from_the_others() -> None:
    """A GPU whose family has another GPU measured is priced from it within 6% (B200 from GB200, GB200 and GB300 from
    each other's Blackwell silicon only where the family holds both: GB300 alone is Blackwell Ultra, priced at the
    other families' median, 12.5%; H100 and H200 from each other, 5.8% and 5.7%). MI355X, the one AMD part, priced at
    NVIDIA's median share reads 38% fast: AMD's kernels stream at a lower share (HipKittens' minimum traffic)."""
    found = {gpu: _mape(values) for gpu, values in leave_one_gpu_out(memory_kernels()).items()}
    limits = {"b200": 6.0, "gb200": 13.0, "gb300": 13.0, "h100-sxm": 6.5, "h200-sxm": 6.5, "mi355x": 40.0}
    assert set(found) == set(limits)
    for gpu, value in found.items():
        assert value <= limits[gpu], (gpu, value)
