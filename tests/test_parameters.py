"""The named parameter table: shared entries resolve the same for every family, factors multiply, files keep it."""

import json
import math
from pathlib import Path

import pytest

from perfmodel.errors import PerfmodelError
from perfmodel.fitting import calibrate as fitting
from perfmodel.inputs.stacks import FA2_SPEEDS
from perfmodel.physics import calibration as cal
from perfmodel.physics import parameters as table
from perfmodel.physics.efficiency import DEFAULTS, KERNEL_GEMM
from perfmodel.physics.parameters import Profile


def test_a_shared_entry_sets_every_family_and_a_vendor_entry_only_its_own() -> None:
    """Every family's GEMMs are kernel-measured (its own, or efficiency.GEMM_SILICON's): they take their kernels'
    shares, scaled by the one shared `gemm_sustained`, and an older file's vendor share prices none of them."""
    values = {"scaleout": 0.61, "gemm_bf16@nvidia": 0.5, "gemm_sustained": 0.8}
    assert set(DEFAULTS) == KERNEL_GEMM
    for family in DEFAULTS:
        eff = table.efficiency(values, Profile(family))
        assert eff.scaleout == 0.61
        assert eff.gemm_bf16 == pytest.approx(DEFAULTS[family].gemm_bf16 * 0.8), family


def test_generation_and_stack_factors_multiply_the_base() -> None:
    values = {"gemm_bf16@nvidia": 0.6, "gemm_generation@ampere": 1.1, "attention@nvidia": 0.8}
    ampere = table.efficiency(values, Profile("ampere"))  # Hopper's kernels, its own generation factor
    assert ampere.gemm_bf16 == pytest.approx(DEFAULTS["ampere"].gemm_bf16 * 1.1)
    assert ampere.gemm_fp8 == pytest.approx(DEFAULTS["ampere"].gemm_fp8 * 1.1)  # one factor for every format
    assert table.efficiency(values, Profile("blackwell")).gemm_bf16 == DEFAULTS["blackwell"].gemm_bf16  # kernels
    hopper = table.efficiency(values, Profile("hopper"))
    composer = table.efficiency(values, Profile("hopper", "composer"))
    fa2 = table.STACKS["composer"].attention_speeds("hopper")  # FlashAttention-2 against Hopper's cuDNN
    assert fa2 is not None and table.STACKS["megatron"].attention_speeds("hopper") is None
    speed = fa2[0] * table.STACKS["composer"].attention_code.value
    assert composer.attention_fwd == pytest.approx(hopper.attention_fwd * speed)


def test_a_fitted_hbm_share_is_held_at_the_datasheet_bandwidth() -> None:
    """The shared share times a generation factor may not pass MEMORY_SHARE_MAX; under it the two multiply."""
    values = {"memory": 0.7, "memory_generation@blackwell-ultra": 1.5, "memory_generation@hopper": 1.2}
    assert table.efficiency(values, Profile("blackwell-ultra")).memory == table.MEMORY_SHARE_MAX
    assert table.efficiency(values, Profile("hopper")).memory == pytest.approx(0.84)


def test_a_lower_precision_format_runs_at_bf16s_fitted_share_times_its_ratio() -> None:
    # FORMAT_SHARE: same clock per format (MI300X FP8/BF16 GEMM clocks 1,230/1,207 MHz), so FP8 = BF16 x ratio.
    values = {"gemm_bf16@nvidia": 0.6, "gemm_format_fp8@nvidia": 0.9, "gemm_generation@ampere": 0.8}
    ampere, bf16 = table.efficiency(values, Profile("ampere")), DEFAULTS["ampere"].gemm_bf16
    assert ampere.gemm_fp8 == pytest.approx(bf16 * 0.9 * 0.8)
    assert ampere.gemm_fp4 == pytest.approx(bf16 * 1.0 * 0.8)  # its ratio at the prior centre, 1
    # A family whose kernels measure BF16 alone: the ratio multiplies the kernels' BF16 share.
    cdna3 = table.efficiency({"gemm_format_fp8@amd": 0.9}, Profile("cdna3"))
    assert cdna3.gemm_fp8 == pytest.approx(DEFAULTS["cdna3"].gemm_bf16 * 0.9)
    assert cdna3.gemm_bf16 == DEFAULTS["cdna3"].gemm_bf16
    # Blackwell's kernels measure FP8 too, a check: FP8 is priced on BF16's share there as well (one basis).
    blackwell = table.efficiency(values, Profile("blackwell"))
    assert blackwell.gemm_fp8 == pytest.approx(DEFAULTS["blackwell"].gemm_bf16 * 0.9)


def test_the_vendor_attention_factor_skips_ampere_whose_best_kernel_is_flashattention_2() -> None:
    # FlashAttention-3's gain needs Hopper-only features (Shah et al. 2024, section 3); FA2 reaches 50-73% of A100
    # peak (Dao 2023): Ampere keeps its FA2 defaults, the factor describes cuDNN/FA3 on a family no kernel rows
    # measure (CDNA3); Hopper's shares come from its kernels (physics.attention_kernels), no factor acts on them.
    values = {"attention@nvidia": 1.6, "attention@amd": 1.6, "attention_generation@ampere": 0.8}
    ampere = table.efficiency(values, Profile("ampere"))
    assert ampere.attention_fwd == pytest.approx(DEFAULTS["ampere"].attention_fwd * 0.8)
    cdna3 = table.efficiency(values, Profile("cdna3"))
    assert cdna3.attention_bwd == pytest.approx(DEFAULTS["cdna3"].attention_bwd * 1.6)
    assert table.efficiency(values, Profile("hopper")).attention_bwd == DEFAULTS["hopper"].attention_bwd


def test_the_mlperf_timed_overhead_is_a_fixed_part_plus_slow_first_steps() -> None:
    values = {"run_overhead_s@mlperf-gpt3": 5.0, "first_steps": 2.0}
    eff = table.efficiency(values, Profile("blackwell", benchmark="mlperf-gpt3"))
    assert eff.timed_overhead_s(10.0) == pytest.approx(5.0 + 2.0 * 10.0)
    # The fixed part is the benchmark's own: another benchmark keeps its default.
    other = table.efficiency(values, Profile("blackwell", benchmark="mlperf-llama31-405b"))
    assert other.run_overhead_s == DEFAULTS["blackwell"].run_overhead_s


def test_empty_table_is_the_physical_defaults() -> None:
    for family, defaults in DEFAULTS.items():
        assert table.efficiency({}, Profile(family)) == defaults


def test_at_bound_and_describe() -> None:
    values = {"memory": 0.9, "overlap_tp": 0.5}
    assert fitting.at_bound(values) == ["memory"]
    records = {r["key"]: r for r in fitting.describe(values)}
    assert records["memory"]["at_bound"] and not records["overlap_tp"]["at_bound"]
    assert records["overlap_tp"]["scope"] == "shared" and records["memory"]["bounds"] == (0.5, 0.9)


def test_v2_files_round_trip_and_v1_files_still_read(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(cal.Calibration({"gemm_format_fp8@nvidia": 0.9}, {"created": "now"}).to_json())
    loaded = cal.Calibration.load(path)
    assert json.loads(path.read_text())["format"] == "perfmodel-calibration/2"
    assert loaded.efficiency("hopper").gemm_fp8 == pytest.approx(0.9 * DEFAULTS["hopper"].gemm_fp8)
    assert loaded.efficiency("cdna3").gemm_fp8 == DEFAULTS["cdna3"].gemm_fp8
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": "perfmodel-calibration/1", "parameters": {"hopper": {"gemm_fp8": 0.5}}}))
    assert cal.Calibration.load(old).efficiency("hopper").gemm_fp8 == 0.5


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"speed": 1}, "unknown 'speed'"),
        ({"scaleout@nvidia": 0.9}, "unknown 'scaleout@nvidia'"),  # a shared parameter has no scope
        ({"gemm_bf16": 0.5}, "unknown 'gemm_bf16'"),  # a vendor parameter needs one
        ({"gemm_format_fp8@nvidia": 1.7}, "allowed 0.6 to 1.4"),
    ],
)
def test_bad_v2_parameters(tmp_path: Path, parameters: dict, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": cal.FORMAT, "parameters": parameters}))
    with pytest.raises(PerfmodelError, match=message):
        cal.Calibration.load(path)


def test_graph_captured_lora_runs_have_no_timed_overhead() -> None:
    # NVIDIA's MLPerf LoRA configs (training_results_v5.0: MCORE_CUDA_GRAPH=1, warm-up before run_start; timed
    # region minus steps and evaluations -0.4 to +0.3 s); AMD's LoRA submissions are not graph-captured.
    values = {"run_overhead_s@mlperf-llama2-70b-lora": 6.0, "first_steps": 1.0}
    nvidia = table.efficiency(values, Profile("blackwell", benchmark="mlperf-llama2-70b-lora"))
    amd = table.efficiency(values, Profile("cdna3", benchmark="mlperf-llama2-70b-lora"))
    assert nvidia.timed_overhead_s(2.0) == 0.0
    assert amd.timed_overhead_s(2.0) == pytest.approx(6.0 + 2.0)


def test_the_stack_kernel_speed_skips_families_where_its_kernel_is_the_best() -> None:
    # FlashAttention-2 reaches 50-73% of A100 peak (Dao 2023, arXiv 2307.08691) and ~35% of H100's, where
    # FlashAttention-3 reaches 75% (Shah et al. 2024, arXiv 2407.08608): composer's kernel slows Hopper, not Ampere,
    # at its measured speed per family and pass (inputs/stacks.py FA2_SPEEDS), and the families without FA2 rows
    # (CDNA) at the H100 figure.
    code = table.STACKS["composer"].attention_code.value
    for family, (fwd, bwd) in (("ampere", (1.0, 1.0)), ("cdna3", (0.5, 0.5)), *FA2_SPEEDS.items()):
        megatron = table.efficiency({}, Profile(family))
        composer = table.efficiency({}, Profile(family, "composer"))
        assert composer.attention_fwd == pytest.approx(megatron.attention_fwd * fwd * code), family
        assert composer.attention_bwd == pytest.approx(megatron.attention_bwd * bwd * code), family


def test_the_stacks_attention_code_factor_acts_on_every_family_from_a_sourced_prior() -> None:
    # llm-foundry 0.4.0 runs MPT's ALiBi attention in FlashAttention's Triton port, which FlashAttention-2 outruns
    # 1.3-2.5x (Dao 2023, arXiv 2307.08691, section 4.1): the stack profile's figure for its attention code on every
    # family, the prior centre of its fitted factor, so a fold that holds the stack's rows out prices it at the
    # figure, not at 1. FA2 against cuDNN on Hopper is the other figure (measured: inputs/stacks.py FA2_SPEEDS, from
    # cudnn-frontend's H200 rows), not fitted.
    code = table.STACKS["composer"].attention_code.value
    assert code == pytest.approx(1 / math.sqrt(1.3 * 2.5), abs=5e-4)
    for family, kernel in (("ampere", 1.0), ("hopper", FA2_SPEEDS["hopper"][1])):
        megatron = table.efficiency({}, Profile(family))
        composer = table.efficiency({}, Profile(family, "composer"))
        assert composer.attention_bwd == pytest.approx(megatron.attention_bwd * kernel * code)
    entries = {e.key: e for e in table.entries_for(Profile("hopper", "composer"))}
    assert entries["attention_impl@composer"].fittable
    assert entries["attention_impl@composer"].default == code
    assert all(s.attention_code.value == 1.0 for name, s in table.STACKS.items() if name != "composer")
    megatron = {e.key: e for e in table.entries_for(Profile("hopper"))}
    assert not megatron["attention_impl@megatron"].fittable  # Megatron's rows run cuDNN's kernel as measured
