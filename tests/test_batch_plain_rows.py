"""Small row groups priced one row at a time as plain numbers give the array path's numbers to the last bit."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from perfmodel.fitting.runs import bundled_runs
from perfmodel.fitting.validation import RunBatch, prepare_all
from perfmodel.physics.calibration import resolve
from perfmodel.physics.efficiency import Efficiency
from perfmodel.physics.step import Context
from perfmodel.planning import batch


@pytest.fixture(scope="module")
def sampled() -> RunBatch:
    """Every eighth bundled row (dense and MoE, BF16, FP8 and NVFP4, rows at many releases), with its ranges."""
    runs, _ = bundled_runs()
    return RunBatch(prepare_all(runs[::8], resolve(None), []), every_range=True)


def _numpy_rounds_like_libm() -> bool:
    """Whether numpy's float64 pow and log2 (the step's functions of a layout or release) give the math module's
    numbers on this machine: so without AVX-512, where numpy has loops of its own (SVML) that may round apart."""
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.5, 4096.0, 2000), rng.uniform(-3.0, 3.0, 2000)
    powers = np.power(x, y).tolist() == [a**b for a, b in zip(x.tolist(), y.tolist(), strict=True)]
    return powers and np.log2(x).tolist() == [math.log2(a) for a in x.tolist()]


def test_plain_rows_equal_the_array_path_bit_for_bit(sampled: RunBatch, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bit for bit where numpy rounds as libm does (the machine validate's JSON is compared on); elsewhere to the
    last few bits, as the compiled step is held to the array path (tests/test_fast_path.py)."""
    assert any(len(g.rows) == 1 for g in sampled._batch.groups)  # groups both paths would take
    assert len({float(y) for y in np.concatenate([g.vintage_years for g in sampled._batch.groups])}) > 3
    monkeypatch.setattr(batch, "PLAIN_ROWS_UP_TO", 0)
    arrays = sampled._batch.price()
    monkeypatch.setattr(batch, "PLAIN_ROWS_UP_TO", 10**9)
    plain = sampled._batch.price()
    if _numpy_rounds_like_libm():
        assert np.array_equal(arrays.step_time_s, plain.step_time_s)
        assert np.array_equal(arrays.forward_only_s, plain.forward_only_s)
    else:
        np.testing.assert_allclose(plain.step_time_s, arrays.step_time_s, rtol=1e-12, atol=0.0)
        np.testing.assert_allclose(plain.forward_only_s, arrays.forward_only_s, rtol=1e-12, atol=0.0)


def test_variants_and_array_efficiencies_keep_the_array_path(sampled: RunBatch) -> None:
    """A fit's variants (efficiency fields of shape (V,)) come back with one time per variant, small groups too."""

    def doubled(ctx: Context) -> Efficiency:
        eff = ctx.efficiency
        return replace(eff, gemm_bf16=np.array([eff.gemm_bf16, eff.gemm_bf16 / 2]))

    priced = sampled._batch.price(doubled, variants=True)
    assert priced.step_time_s.shape == (sampled._batch.size, 2)
    assert (priced.step_time_s[:, 1] >= priced.step_time_s[:, 0]).all()
