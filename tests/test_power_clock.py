"""Sustained clock under the power cap: delivered tensor-core throughput follows board power, not the peak alone."""

from dataclasses import replace

import pytest

from perfmodel.inputs.hardware import get_accelerator, resolve
from perfmodel.physics.compute import CLOCK_POWER_EXPONENT, clock_share
from perfmodel.planning.whatif import KNOBS, Setting, apply


def test_mi300x_runs_gemms_at_its_measured_clock_share_of_the_mi325x() -> None:
    # AMD ROCm blog "Measuring Max-Achievable FLOPs - Part 2": median dense BF16 GEMM clocks 1,207 MHz (MI300X, 750 W)
    # and 1,447 MHz (MI325X, 1,000 W, same silicon and datasheet peak).
    assert clock_share(get_accelerator("mi300x")) == pytest.approx(1207 / 1447)
    assert clock_share(get_accelerator("mi325x")) == 1.0


def test_the_clock_power_law_reproduces_the_measured_fp8_clocks() -> None:
    # The exponent comes from the BF16 clocks; the same blog's FP8 clocks (1,230 MHz at 750 W, 1,464 MHz at 1,000 W)
    # are a figure it was not fitted to.
    assert pytest.approx(1230 / 1464, rel=0.01) == (750 / 1000) ** CLOCK_POWER_EXPONENT


def test_lower_power_nvidia_variants_are_power_limited() -> None:
    # B200 (1,000 W), GB200 (1,200 W), B300 (1,100 W) and GB300 (1,400 W) share the BF16/FP8 tensor cores
    # (stack_notes.md; GB200 and GB300 both 2.5 PF = 152 SMs x 8,192 flop/clk x 2.008 GHz); the datasheet quotes the
    # HGX parts at 0.9 of that peak. The labelled assumption for B200: delivered = GB300 peak x (P/1400)^0.63; GB200
    # and B300 at their MAMF best GEMMs' ratio to B200's, the geometric mean of BF16's and FP8's (ml-engineering's
    # MAMF table, kernels_gemm_shapes.csv: GB200 1,822.0 and 3,615.6 TFLOP/s, B300 1,769.0 and 3,353.3, B200 1,745.0
    # and 3,432.5; tests/test_kernels.py), 1.0487 and 0.9952.
    b200 = 2500 * (1000 / 1400) ** CLOCK_POWER_EXPONENT
    gb200 = b200 * ((1822.0 / 1745.0) * (3615.6 / 3432.5)) ** 0.5
    b300 = b200 * ((1769.0 / 1745.0) * (3353.3 / 3432.5)) ** 0.5
    for part, delivered in (("b200", b200), ("gb200", gb200), ("b300", b300)):
        acc = get_accelerator(part)
        assert acc.bf16_tflops.value * clock_share(acc) == pytest.approx(delivered)
    assert clock_share(get_accelerator("b300")) < clock_share(get_accelerator("b200")) < 1.0
    for top in ("gb300", "h100-sxm"):
        assert clock_share(get_accelerator(top)) == 1.0


def test_a_what_if_bf16_peak_keeps_a_power_limited_parts_clock_share() -> None:
    # Twice the BF16 peak on a B200 is a faster part at the same sustained-clock share, not a higher datasheet clock
    # its power cannot sustain (which would halve its FP8 rate: delivered FP8 = FP8 peak x clock share).
    for part in ("b200", "gb200", "b300"):  # the power law's part and the two priced by their measured ratio
        hw = resolve(part)
        faster = apply(hw, [Setting(KNOBS["bf16_tflops"], 2.0, multiplier=True)])
        assert clock_share(faster.accelerator) == pytest.approx(clock_share(hw.accelerator))


def test_a_measured_part_at_another_power_moves_from_its_measured_share() -> None:
    """GB200 and B300 run at their MAMF ratios to B200 (test above). A what-if's board power moves their clock from
    there by the power assumption, (P / P_datasheet)^0.63: at 1,000 W a GB200 is B200's power and runs
    (1000/1200)^0.63 of its measured clock, where the ratio keyed by its id had priced every power the same. A user's
    copy under its own id with the same silicon, power and peak is the same part."""
    for part, watts in (("gb200", 1200), ("b300", 1100)):
        hw = resolve(part)
        lower = apply(hw, [Setting(KNOBS["power_w"], 1000, multiplier=False)]).accelerator
        expected = clock_share(hw.accelerator) * (1000 / watts) ** CLOCK_POWER_EXPONENT
        assert clock_share(lower) == pytest.approx(expected)
        assert clock_share(replace(hw.accelerator, id=f"my-{part}")) == clock_share(hw.accelerator)


def test_a_measured_clock_at_another_power_moves_by_the_power_assumption() -> None:
    """MI300X's 1,207 MHz (test above) was measured at its 750 W: a what-if at 1,000 W, MI325X's power on the same
    silicon, runs (1000/750)^0.63 of it, 1.199x, near the 1.199x MI325X measures (1,447 / 1,207 MHz)."""
    hw = resolve("mi300x")
    raised = apply(hw, [Setting(KNOBS["power_w"], 1000, multiplier=False)]).accelerator
    assert clock_share(raised) == pytest.approx(1207 / 1447 * (1000 / 750) ** CLOCK_POWER_EXPONENT)
    assert clock_share(raised) == pytest.approx(1.0, rel=0.01)
