"""What-if hardware: settings, modified copies flowing through the topology, and the whatif/sensitivity commands."""

import json
import math

import pytest
from conftest import run_cli

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.scenario import Scenario
from perfmodel.physics.calibration import bundled
from perfmodel.physics.topology import tiers
from perfmodel.planning.predict import for_layout, predict
from perfmodel.planning.sensitivity import sensitivity
from perfmodel.planning.whatif import KNOBS, apply, current, parse_setting

SMALL = ["--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "16", "--precision", "fp8", "--gbs", "64"]


def test_nvlink_and_nic_settings_flow_through_the_network_graph() -> None:
    h100 = resolve("h100-sxm")
    faster = apply(h100, [parse_setting("nvlink_gbps=1800"), parse_setting("nic_gbps=x2")])
    assert faster.accelerator.scaleup_gb_per_s_per_direction.value == 900  # 1,800 GB/s both directions
    assert "what-if" in faster.accelerator.nic_gbit_per_s.source
    before, after = tiers(h100), tiers(faster)
    assert after.scaleup_bytes_per_s(8) == pytest.approx(2 * before.scaleup_bytes_per_s(8))
    assert after.across_spine.bytes_per_s == pytest.approx(2 * before.across_spine.bytes_per_s)
    assert h100.accelerator.scaleup_gb_per_s_per_direction.value == 450  # the original is untouched


def test_settings_that_touch_related_figures() -> None:
    gb200 = resolve("gb200")
    bigger = apply(gb200, [parse_setting("domain_gpus=144"), parse_setting("hbm_gb=x2")])
    assert bigger.domain_gpus == 144 and bigger.ranks_per_domain == 128
    assert bigger.accelerator.memory_bytes == pytest.approx(2 * gb200.accelerator.memory_bytes)
    mesh = apply(resolve("mi300x"), [parse_setting("nvlink_gbps=x2")])
    assert mesh.accelerator.scaleup_peer_gb_per_s_per_direction.value == 128
    fp4 = apply(resolve("h100-sxm"), [parse_setting("fp4_tflops=4000")])
    assert "nvfp4" in fp4.accelerator.precisions
    cheap = apply(gb200, [parse_setting("usd_per_gpu_hour=x0.5")])
    assert cheap.accelerator.usd_per_gpu_hour_low.value == pytest.approx(
        gb200.accelerator.usd_per_gpu_hour_low.value / 2
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nvlnk_gbps=1800", "unknown hardware parameter 'nvlnk_gbps'"),  # the hint and the list: test_bad_inputs
        ("hbm_tbps=fast", "the value must be a positive number in TB/s or a multiplier xF"),
        ("hbm_tbps=-1", "the value must be a positive number"),
        ("hbm_tbps=xnan", "the value must be a positive number"),
        ("hbm_tbps", "the value must be a positive number"),
        ("hbm_tbps=x", "the value must be a positive number"),
        ("hbm_tbps=x2x", "the value must be a positive number"),
        ("domain_gpus=7.5", "domain_gpus takes a whole number of GPUs"),
    ],
)
def test_bad_settings_say_what_is_allowed(text: str, message: str) -> None:
    with pytest.raises(PerfmodelError, match=message):
        parse_setting(text)
    result = run_cli("whatif", *SMALL, "--set", text)
    assert result.code == 2 and message in result.err and result.err.count("\n") == 1


def test_multiplying_a_missing_figure_is_refused() -> None:
    with pytest.raises(PerfmodelError, match="h100-sxm has no fp4_tflops figure to multiply"):
        apply(resolve("h100-sxm"), [parse_setting("fp4_tflops=x2")])


def test_whatif_command_baseline_same_layout_and_best_layout() -> None:
    result = run_cli("whatif", *SMALL, "--set", "fp8_tflops=x2", "--set", "bf16_tflops=x2", "--format", "json")
    assert result.code == 0, result.err
    base, same, best = json.loads(result.out)
    assert [r["case"] for r in (base, same, best)] == ["baseline", "what-if, same layout", "what-if, best layout"]
    assert same["parallelism"] == base["parallelism"]
    assert same["hardware_changes"]["fp8_tflops"] == {"from": 1978.9, "to": 2 * 1978.9}
    assert 1 < same["speedup_vs_first"] <= best["speedup_vs_first"] < 2
    assert best["step_time_s"] <= same["step_time_s"] < base["step_time_s"]
    table = run_cli("whatif", *SMALL, "--set", "nic_gbps=800")
    assert table.code == 0 and "nic_gbps 400 -> 800" in table.out


def test_elasticities_match_direct_finite_differences() -> None:
    scenario = Scenario(model="llama3.1-8b", gpu="h100-sxm", n_gpus=16, precision="fp8")
    result = sensitivity(scenario, step=0.1)
    by_name = {e.knob.name: e for e in result.elasticities}
    assert set(by_name) >= {"bf16_tflops", "fp8_tflops", "hbm_tbps", "nvlink_gbps", "nic_gbps"}
    assert "fp4_tflops" not in by_name  # the FP8 recipe does not use the FP4 peak
    hw = resolve("h100-sxm")
    fixed = for_layout(scenario, result.baseline.layout)
    up = predict(fixed, hardware=apply(hw, [parse_setting("hbm_tbps=x1.1")])).step_time_s
    down = predict(fixed, hardware=apply(hw, [parse_setting(f"hbm_tbps=x{1 / 1.1!r}")])).step_time_s
    assert by_name["hbm_tbps"].fixed_layout == pytest.approx(math.log(up / down) / (2 * math.log(1.1)))
    compute = by_name["fp8_tflops"].fixed_layout + by_name["bf16_tflops"].fixed_layout
    # An 8B model on 16 H100s is mostly bound by its GEMMs and attention; a higher peak at the same board power
    # delivers peak^(1 - beta) on GEMMs (compute.peak_power_share), so "mostly" is half of that.
    beta = bundled().efficiency("hopper").peak_power_exponent
    assert -1 < compute < -0.5 * (1 - beta)
    assert by_name["collective_step_us"].fixed_layout >= 0  # more latency never speeds a step up
    # Board power sets the GEMMs' share of peak (W per peak FLOP/s)^beta: more watts, a shorter step.
    assert -beta < by_name["power_w"].fixed_layout < -0.5 * beta
    assert "usd_per_gpu_hour" not in by_name
    magnitudes = [max(abs(e.fixed_layout), abs(e.best_layout or 0)) for e in result.elasticities]
    assert magnitudes == sorted(magnitudes, reverse=True)


def test_sensitivity_command_json() -> None:
    result = run_cli("sensitivity", *SMALL, "--format", "json")
    assert result.code == 0, result.err
    d = json.loads(result.out)
    assert d["step"] == 0.05 and d["baseline"]["n_gpus"] == 16
    assert {p["parameter"] for p in d["parameters"]} <= set(KNOBS)
    assert all(p["value"] == current(resolve("h100-sxm"), KNOBS[p["parameter"]]) for p in d["parameters"])
    assert run_cli("sensitivity", *SMALL, "--step", "2").code == 2


def test_a_bad_step_in_python_names_the_keyword() -> None:
    """The Python API's error named the CLI's flag (`--step 1.5`) to a caller who gave `step=1.5`."""
    scenario = Scenario(model="llama3.1-8b", gpu="h100-sxm", n_gpus=16, precision="fp8")
    for step, named in [(1.5, "step=1.5"), (-0.1, "step=-0.1"), (1e-300, "step=1e-300")]:
        with pytest.raises(PerfmodelError) as raised:
            sensitivity(scenario, step=step)
        assert str(raised.value).startswith(f"{named}: must be from 0.0001 to below 1 "), str(raised.value)


def test_hbm_capacity_is_labelled_in_the_unit_predict_prints() -> None:
    """hbm_gb is the datasheet's '80 GB', which is 80 GiB (Accelerator.memory_bytes): sensitivity and whatif label it
    GiB, the unit predict prints the GPU's memory in, and the figures agree."""
    sens = json.loads(run_cli("sensitivity", *SMALL, "--format", "json").out)
    hbm = next(p for p in sens["parameters"] if p["parameter"] == "hbm_gb")
    predicted = json.loads(run_cli("predict", *SMALL, "--format", "json").out)
    assert (hbm["unit"], hbm["value"]) == ("GiB", predicted["memory_capacity_gib"]) == ("GiB", 80.0)
    assert "80 GiB" in run_cli("sensitivity", *SMALL).out


def test_whatif_names_each_settings_unit_and_hbm_gb_says_it_is_binary() -> None:
    """A planner read 'hbm_gb ... 80 GiB' as a GB figure with a GiB unit: the row says the datasheet's GB are GiB,
    and whatif's change line, which printed bare numbers ('hbm_gb 80 -> 160'), names each setting's unit."""
    out = run_cli("whatif", *SMALL, "--set", "hbm_gb=x2", "--set", "nvlink_gbps=1800").out
    assert "What if: hbm_gb 80 -> 160 GiB, nvlink_gbps 900 -> 1,800 GB/s" in out
    row = next(line for line in run_cli("sensitivity", *SMALL).out.splitlines() if line.startswith("hbm_gb"))
    assert "80 GiB" in row and "the datasheet's '80 GB' is 80 GiB" in row


def test_whatif_marks_a_case_beyond_the_measured_runs() -> None:
    """compare, search and plan mark a row beyond the measured runs (*) with a footnote on how its interval widens;
    whatif printed 405B on 512 GB300 at TP2 ZeRO-3 (a layout class never measured for it: `explain`) unmarked. The
    8B on 16 H100 at its measured layout class takes no mark and no footnote."""
    out = run_cli("whatif", "--model", "llama3.1-405b", "--gpu", "gb300", "--gpus", "512", "--precision", "nvfp4",
                  "--tokens", "15.6T", "--set", "nvlink_gbps=x2").out  # fmt: skip
    baseline = next(line for line in out.splitlines() if line.startswith("baseline"))
    assert " ZeRO-3 * " in baseline, out
    assert "* beyond the measured runs the calibration saw (layout class" in out, out
    within = run_cli("whatif", *SMALL, "--set", "nvlink_gbps=x2").out
    assert " * " not in within and "beyond the measured runs" not in within, within
    assert within.rstrip().splitlines()[-1].startswith("what-if, best layout"), within  # the table is whole


def test_twice_is_written_either_way() -> None:
    """`--set nvlink_gbps=2x` (how a planner writes "NVLink twice as fast") was refused: only x2 read as a factor."""
    assert parse_setting("nvlink_gbps=2x") == parse_setting("nvlink_gbps=x2")
    assert parse_setting("nic_gbps=1.5X").text == "nic_gbps=x1.5"
