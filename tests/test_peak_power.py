"""Delivered share of peak across generations: a part's GEMMs follow its board watts per peak FLOP/s."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.hardware import get_accelerator, resolve
from perfmodel.physics.calibration import BUNDLED, Calibration
from perfmodel.physics.compute import CLOCK_POWER_EXPONENT, clock_share, gemm_share, op_time, peak_power_share
from perfmodel.physics.efficiency import DEFAULTS
from perfmodel.physics.workload import Op
from perfmodel.planning.whatif import KNOBS, Setting, apply

H100_W_PER_TFLOPS = 700 / 989.4  # hardware_specs h100-sxm: 700 W, 989.4 dense BF16 TFLOP/s


def test_the_share_is_the_power_law_of_watts_per_peak_flops_against_the_h100() -> None:
    eff = replace(DEFAULTS["ampere"], peak_power_exponent=0.3)
    # A100 SXM: 400 W, 312 TFLOP/s (hardware_specs): 1.28 W per TFLOP/s against the H100's 0.71.
    a100 = get_accelerator("a100-sxm-80gb")
    assert peak_power_share(a100, eff) == pytest.approx((400 / 312 / H100_W_PER_TFLOPS) ** 0.3)
    assert peak_power_share(get_accelerator("h100-sxm"), eff) == 1.0
    # B200 and GB200 read GB300's (1,400 W, 2,500 TFLOP/s): their lower board power is the same-silicon clock_share.
    for part in ("b200", "gb200", "gb300"):
        assert peak_power_share(get_accelerator(part), eff) == pytest.approx((1400 / 2500 / H100_W_PER_TFLOPS) ** 0.3)
    assert peak_power_share(a100, replace(eff, peak_power_exponent=0.0)) == 1.0


def test_at_the_same_silicon_clock_exponent_the_law_is_the_measured_clock_ratio() -> None:
    # The prior's ceiling is the same-silicon clock exponent: AMD ROCm blog "Measuring Max-Achievable FLOPs -
    # Part 2" (rocm-blogs), median BF16 GEMM clocks MI300X (750 W) 1,207 MHz and MI325X (1,000 W) 1,447 MHz. An
    # MI300X priced as a part of its own (no power reference) at that exponent runs at the measured ratio.
    eff = replace(DEFAULTS["cdna3"], peak_power_exponent=CLOCK_POWER_EXPONENT)
    mi300x, mi325x = get_accelerator("mi300x"), get_accelerator("mi325x")
    alone = replace(mi300x, power_reference=None)
    assert peak_power_share(alone, eff) / peak_power_share(mi325x, eff) == pytest.approx(1207 / 1447)
    assert clock_share(mi300x) == pytest.approx(1207 / 1447)  # the same ratio where the pair is declared


def test_a_compute_bound_gemm_takes_the_share_and_nothing_else() -> None:
    # 8192^3 BF16 GEMM: whole waves are not needed; the share divides the rate, so time scales by its inverse. The
    # A100 itself runs at its measured MAMF share (compute.silicon_ratios); an A100 at half its board
    # power moves from it as the law says.
    op = Op("gemm", "gemm", flops=2 * 8192**3, bytes=3 * 2 * 8192**2, m=8192, n=8192, k=8192, fmt="bf16")
    a100 = get_accelerator("a100-sxm-80gb")
    half = apply(resolve("a100-sxm-80gb"), [Setting(KNOBS["power_w"], 0.5, multiplier=True)]).accelerator
    flat, powered = (replace(DEFAULTS["ampere"], peak_power_exponent=x, kernel_overhead_us=0.0) for x in (0.0, 0.3))
    assert op_time(op, a100, flat) == pytest.approx(op_time(op, a100, powered))
    law = peak_power_share(half, powered) / peak_power_share(a100, powered)
    assert law == pytest.approx(0.5**0.3)
    assert op_time(op, half, flat) / op_time(op, half, powered) == pytest.approx(law)


@pytest.mark.parametrize("part", ["h100-sxm", "b200", "a100-sxm-80gb"])
def test_no_board_power_prices_a_gemm_above_its_datasheet_peak(part: str) -> None:
    """A what-if's power_w=x10 raises the power law's share (H100: its measured share x 10^0.3) and a lower-power
    variant's clock (B200 against GB300's 1,400 W: (10,000 / 1,400)^0.63 x 2,500 / 2,250) past the whole peak: the
    GEMM is priced at most at its datasheet peak (compute.clock_share, Rates.of_format)."""
    op = Op("gemm", "gemm", flops=2 * 8192**3, bytes=3 * 2 * 8192**2, m=8192, n=8192, k=8192, fmt="bf16")
    own = resolve(part).accelerator
    eff = replace(DEFAULTS[own.family], peak_power_exponent=0.3, kernel_overhead_us=0.0)
    powered = apply(resolve(part), [Setting(KNOBS["power_w"], 10.0, multiplier=True)]).accelerator
    assert op_time(op, powered, eff) >= op.flops / own.peak_flops("bf16")


def test_each_format_reads_its_own_peak_in_bf16_equivalent_operations() -> None:
    # An FP8 operation is half a BF16 one in power (the rate per clock doubles per halving of the width), so where
    # FP8 = 2x BF16 (H100, GB300) the FP8 share is the BF16 one; GB300's NVFP4 is 15,000 TFLOP/s, 6x its BF16
    # (hardware_specs), so its BF16-equivalent FP4 peak needs 1.5x the power: 1,400 W / 3,750.
    eff = replace(DEFAULTS["blackwell-ultra"], peak_power_exponent=0.3)
    gb300, h100 = get_accelerator("gb300"), get_accelerator("h100-sxm")
    assert peak_power_share(gb300, eff, "fp8") == pytest.approx(peak_power_share(gb300, eff, "bf16"))
    assert peak_power_share(h100, eff, "fp8") == pytest.approx(1.0, abs=1e-4)
    assert peak_power_share(gb300, eff, "fp4") == pytest.approx((1400 / (15000 / 4) / H100_W_PER_TFLOPS) ** 0.3)


def test_a_what_if_peak_in_one_format_leaves_the_others_shares() -> None:
    # Twice the BF16 peak at the same board power delivers 2^(1 - beta) of the BF16 rate and leaves FP8's share.
    eff = replace(DEFAULTS["blackwell"], peak_power_exponent=0.3)
    hw = resolve("b200")
    faster = apply(hw, [Setting(KNOBS["bf16_tflops"], 2.0, multiplier=True)]).accelerator
    before, after = (a.peak_flops("bf16") * peak_power_share(a, eff) for a in (hw.accelerator, faster))
    assert after / before == pytest.approx(2**0.7)
    assert peak_power_share(faster, eff, "fp8") == pytest.approx(peak_power_share(hw.accelerator, eff, "fp8"))


def test_a_calibration_fitted_with_the_power_law_prices_ampere_as_it_was_fitted(tmp_path: Path) -> None:
    """A file written before peak_power_exponent retired (main 816bb2a's: 0.2598, gemm_generation@ampere 0.9632)
    priced A100's GEMMs at its generation factor times the law's (1.28 / 0.71 W per peak TFLOP/s)^beta over H100's
    share; loaded now it prices them so (calibration._carried_ampere), not 7% slower at the measured 1.0825x."""
    document = json.loads(BUNDLED.read_text())
    document["parameters"] |= {"peak_power_exponent": 0.26, "gemm_generation@ampere": 0.96}
    old = tmp_path / "old.json"
    old.write_text(json.dumps(document))
    cal = Calibration.load(old)
    a100, h100 = get_accelerator("a100-sxm-80gb"), get_accelerator("h100-sxm")
    share = gemm_share(a100, cal.efficiency("ampere"), "bf16") / gemm_share(h100, cal.efficiency("hopper"), "bf16")
    assert share == pytest.approx(0.96 * ((400 / 312) / (700 / 989.4)) ** 0.26, rel=1e-9)
    document["parameters"]["peak_power_exponent"] = 0.9
    old.write_text(json.dumps(document))
    with pytest.raises(PerfmodelError, match=r"peak_power_exponent = 0\.9; allowed 0\.01 to 0\.63"):
        Calibration.load(old)
