"""Dense GEMMs' shares and shapes from measured kernels (perfmodel/data/kernels_gemm_shapes.csv, physics.gemm_kernels):
the bundled defaults are the fit of the bundled rows, and the model prices the rows, fitted and held out, within the
errors the fit shows."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from perfmodel.inputs.hardware import get_accelerator
from perfmodel.inputs.kernels import GemmKernel, gemm_kernels
from perfmodel.physics.compute import GEMM_SATURATION, gemm_shape_share, gemm_share, grouped_efficiency, op_time
from perfmodel.physics.efficiency import DEFAULTS, GEMM_KERNELS, GEMM_SILICON, KERNEL_GEMM, Efficiency
from perfmodel.physics.gemm_kernels import (
    Fitted,
    errors,
    family,
    fit,
    fitted_rows,
    kernel_op,
    leave_one_out,
    predicted_s,
)


@pytest.fixture(scope="module")
def fitted() -> dict[str, Fitted]:
    return dict(fit(gemm_kernels()))


def _mape(values: list[float]) -> float:
    return 100 * statistics.fmean(abs(v) for v in values)


def test_the_defaults_are_the_fit_of_the_bundled_kernel_rows(fitted: dict[str, Fitted]) -> None:
    assert set(fitted) == set(GEMM_KERNELS) == {"hopper", "blackwell", "cdna3", "cdna4"}
    assert {*GEMM_KERNELS, *GEMM_SILICON} == KERNEL_GEMM == set(DEFAULTS)  # every family: its kernels or another's
    for name, values in fitted.items():
        bf16, fp8, tiles_half, depth_half = GEMM_KERNELS[name]
        assert (fp8 is None) == (values.fp8 is None), name
        got = [values.bf16, values.fp8 or 0.0, values.tiles_half, values.depth_half]
        assert got == pytest.approx([bf16, fp8 or 0.0, tiles_half, depth_half], rel=2e-3, abs=1e-3), name
        eff = DEFAULTS[name]
        assert (eff.gemm_bf16, eff.gemm_tiles_half, eff.gemm_depth_half) == (bf16, tiles_half, depth_half)
        # FP8 at BF16's share times TransformerEngine's format ratio; OpenXLA's FP8 rows agree within 5.5% (Blackwell
        # 1.052 with GB200's MAMF rows at its measured clock, inputs.kernels.best_shape_ratios; 1.050 before).
        assert eff.gemm_fp8 == bf16 and (fp8 is None or fp8 / bf16 == pytest.approx(1.0, abs=0.055)), name


def test_the_fitted_rows_are_priced_within_the_fits_error(fitted: dict[str, Fitted]) -> None:
    """In-sample: 548 rows (OpenXLA's H100 and B200 tables, the vendor libraries' squares and best shapes), MAPE 7.7%;
    per part and format, H100 BF16 6.6% (126 rows), B200 BF16 8.1% (143: its 1,024-cubed rows spread 164-423 TFLOP/s
    across three sources at one shape), B200 FP8 7.6% (256), MI300X BF16 3.0% (3), MI325X 10.1% (7), MI355X 18.5% (11:
    hipBLASLt's 1,024-cubed GEMM at 57 TFLOP/s through torch.matmul and 168 through hipblaslt-bench, HipKittens'
    analysis JSON; the AMD families' fitted latency sits at its 20 us bound for it, a kernel-stage value the
    training model does not use). The 31 rows of 4,096 and more in every dimension, which training GEMMs are: 5.3%.
    (7.4% and 4.8% before the tail wave, compute.gemm_shape_share, which the training rows need.)"""
    rows = [r for r in fitted_rows(gemm_kernels()) if family(r) in fitted]
    rows = [r for r in rows if r.fmt == "bf16" or fitted[family(r)].fp8 is not None]
    assert len(rows) == 548
    errs = errors(rows, fitted)
    assert _mape(errs) < 8.0
    by: dict[tuple[str, str], list[float]] = {}
    for row, err in zip(rows, errs, strict=True):
        by.setdefault((row.part, row.fmt), []).append(err)
    assert _mape(by["h100-sxm", "bf16"]) < 7.0
    assert _mape(by["b200", "bf16"]) < 8.4
    assert _mape(by["b200", "fp8"]) < 7.9
    assert _mape(by["mi325x", "bf16"]) < 10.4
    large = [err for row, err in zip(rows, errs, strict=True) if min(row.m, row.n, row.k) >= GEMM_SATURATION]
    assert len(large) == 31 and _mape(large) < 5.6


def test_a_family_left_out_is_priced_from_the_others_within_fifteen_percent() -> None:
    """Leave one family out: its rows priced with its vendor's other family's share and shape (AMD's shape is
    NVIDIA's: too few AMD rows to fit one) and its own datasheet peak, SMs and sustained clock. MAPE over all rows
    9.3%; Blackwell 8.6%, Hopper 9.1%, CDNA3 14.6% and CDNA4 23.1% (CDNA3's share of MI355X's doubled peak) on their
    12 and 18 hipBLASLt rows (BF16 and FP8). CDNA3 was 12.2% (CDNA4 24.3%) with FP8 at BF16's share: its two FP8
    rows now run at hipblaslt-bench's 0.90 of it (inputs.kernels.BENCH_FORMAT_SHARES) on CDNA4's BF16 share, which
    prices them 43% slow, as it prices MI300X's BF16 rows slow. Before the tail wave 9.7%: Blackwell 9.0%, Hopper
    10.2%, CDNA3 5.9%."""
    held_out = leave_one_out(gemm_kernels())
    everything = [e for errs in held_out.values() for e in errs]
    assert _mape(everything) < 9.6
    assert _mape(held_out["blackwell"]) < 9.0
    assert _mape(held_out["hopper"]) < 9.5
    assert _mape(held_out["cdna3"]) < 15.0


def test_blackwell_loses_more_than_hopper_at_small_m(fitted: dict[str, Fitted]) -> None:
    """OpenXLA's tables (kernels_gemm_shapes.csv, ROCm/xla@dc6603221683 default_matmul_perf_table.txtpb) at
    n = k = 4,096: H100 BF16 418 TFLOP/s at m = 256 against 780 at 4,096 (0.54), B200 651 against 1,417 (0.46).
    The fitted shapes keep the order (0.58 and 0.51) and each ratio within 0.06."""
    ratios = {}
    for part, measured in (("h100-sxm", 418 / 780), ("b200", 651 / 1417)):
        rows = {r.m: r for r in gemm_kernels() if r.part == part and r.fmt == "bf16" and r.xla and r.n == r.k == 4096}
        own = fitted[get_accelerator(part).family]
        ratios[part] = predicted_s(rows[4096], own) / 16 / predicted_s(rows[256], own)
        assert ratios[part] == pytest.approx(measured, abs=0.06), part
    assert ratios["b200"] < ratios["h100-sxm"] - 0.05


def _own(eff: Efficiency) -> Fitted:
    """The family's bundled GEMM fields as a kernel fit."""
    return Fitted(eff.gemm_bf16, None, eff.gemm_tiles_half, eff.gemm_depth_half, eff.kernel_overhead_us)


def test_a_dimension_not_a_multiple_of_the_tile_pays_for_its_padding() -> None:
    """GPT-OSS's 2,880-wide hidden (../shared/data/gpt_oss_blackwell_notes.md section 3) fills 23 tiles of 128, the
    last with 64 of its 128 rows: 2,880 / 2,944 of the work a 2,944-wide GEMM of the same tiles would do is useful."""
    eff, sms = DEFAULTS["blackwell"], 148.0
    padded = gemm_shape_share(8192, 2880, 8192, eff, sms)
    whole = gemm_shape_share(8192, 2944, 8192, eff, sms)
    assert padded / whole == pytest.approx(2880 / 2944)


def test_large_gemms_run_at_the_familys_share_and_arrays_flow_through() -> None:
    """From GEMM_SATURATION on in every dimension the shape share is the grid's tail wave alone (1,024 output tiles
    on 132 SMs: 0.97); below, it falls with the tiles and with K; numpy arrays give the elementwise values (the
    vectorised layout search)."""
    eff, sms = DEFAULTS["hopper"], 132.0
    for side in (GEMM_SATURATION, 16384):
        tail = grouped_efficiency(side, side, 1, sms)
        assert gemm_shape_share(side, side, side, eff, sms) == pytest.approx(tail)
    assert float(grouped_efficiency(GEMM_SATURATION, GEMM_SATURATION, 1, sms)) == pytest.approx(1024 / 1056)
    sizes = np.array([256.0, 1024.0, 4096.0])
    shares = gemm_shape_share(sizes, sizes, sizes, eff, sms)
    assert list(shares) == pytest.approx([float(gemm_shape_share(s, s, s, eff, sms)) for s in sizes])
    assert shares[0] < shares[1] < shares[2]


def test_blackwell_ultra_runs_blackwells_kernels_at_its_own_peak_and_clock() -> None:
    """TransformerEngine's 5B layer on B300 (kernels_gemm.csv, NVIDIA/TransformerEngine@d0067d0da6cb
    gemm_profiling.rst line 144: four pre-quantised BF16 Fprop GEMMs of M = 15,872, 6.39 TFLOP in 4,250 us, 1,504
    TFLOP/s; Dgrad and Wgrad 1,447-1,500) priced with Blackwell's fitted share and shape on B300's datasheet peak
    and clock (its MAMF best GEMMs' ratio to B200's, inputs.kernels.best_shape_ratios): 1,564, 4% fast (1,669, 11%
    fast, with the clock by the power assumption; its MAMF best shape, 1,769, is faster still)."""
    shapes = ((15872, 12288, 4096), (15872, 4096, 4096), (15872, 16384, 4096), (15872, 4096, 16384))
    acc, eff = get_accelerator("b300"), DEFAULTS["blackwell-ultra"]
    ops = [kernel_op(GemmKernel("b300", "bf16", m, n, k, 1.0, "")) for m, n, k in shapes]
    seconds = sum(float(op_time(op, acc, eff)) for op in ops)
    assert sum(op.flops for op in ops) / seconds / 1e12 == pytest.approx(1504, rel=0.05)


def test_a_kernel_row_is_priced_by_the_models_own_op_time() -> None:
    row = next(r for r in gemm_kernels() if r.part == "h100-sxm" and r.m == r.n == r.k == 4096)
    acc, eff = get_accelerator(row.part), DEFAULTS["hopper"]
    assert predicted_s(row, _own(eff)) == pytest.approx(float(op_time(kernel_op(row), acc, eff)))


def test_ampere_runs_hoppers_kernels_at_its_measured_ratio() -> None:
    """A100's GEMMs at Hopper's fitted share and shape, carried to A100's datasheet by its measured best-GEMM share
    over H100's (compute.silicon_ratios, 1.0825x): its MAMF best shape (kernels_gemm_shapes.csv,
    stas00/ml-engineering@744d01e18b79 compute/accelerator/README.md line 351: 1,024 x 10,240 x 5,120 at 271.2
    TFLOP/s) priced at 266, 2% slow before the training fit's generation factor (parameters `gemm_generation@ampere`);
    the power assumption (A100 1.28 W per peak TFLOP/s against H100's 0.71) had priced it at 291, 7% fast."""
    acc, eff = get_accelerator("a100-sxm-80gb"), DEFAULTS["ampere"]
    (row,) = [r for r in gemm_kernels() if r.part == "a100-sxm-80gb" and (r.m, r.n, r.k) == (1024, 10240, 5120)]
    assert (eff.gemm_bf16, eff.gemm_tiles_half, eff.gemm_depth_half) == (
        DEFAULTS["hopper"].gemm_bf16,
        DEFAULTS["hopper"].gemm_tiles_half,
        DEFAULTS["hopper"].gemm_depth_half,
    )
    assert gemm_share(acc, eff, "bf16") > gemm_share(get_accelerator("h100-sxm"), DEFAULTS["hopper"], "bf16")
    tflops = kernel_op(row).flops / float(op_time(kernel_op(row), acc, eff)) / 1e12
    assert tflops == pytest.approx(271.2, rel=0.03)
