"""Software-stack profiles and the software-vintage axis: what a stack and a release change in a prediction."""

from dataclasses import replace

import pytest
from conftest import inputs_of, run_cli

import perfmodel
from perfmodel.errors import PerfmodelError
from perfmodel.fitting.runs import (
    DEEPSPEED_SOURCE,
    FOUNDRY_40GB_SOURCE,
    MAXTEXT_SOURCE,
    bundled_runs,
    reference_vintage,
    vintage_years,
)
from perfmodel.inputs.hardware import get_accelerator
from perfmodel.inputs.precision import RECIPES
from perfmodel.inputs.scenario import load_scenario
from perfmodel.inputs.stacks import FA2_SPEEDS, STACKS, get_stack, stack_recipe
from perfmodel.physics import calibration as cal
from perfmodel.physics.compute import attention_core_s, op_time
from perfmodel.physics.efficiency import (
    DEFAULTS,
    REFERENCE_VINTAGE,
    attention_unaged,
    release_age_years,
    years_between,
)
from perfmodel.physics.step import evaluate
from perfmodel.physics.workload import Op
from perfmodel.planning.predict import context_for, layout_vars
from perfmodel.planning.predict import predict as planned


def test_llm_foundry_rows_run_on_the_composer_stack() -> None:
    runs, _ = bundled_runs()
    stacks = {r.source: r.scenario.get("stack", "megatron") for r in runs if r.metric != "gpu_hours"}
    assert stacks["llm-foundry"] == stacks[FOUNDRY_40GB_SOURCE] == "composer" and stacks[MAXTEXT_SOURCE] == "maxtext"
    assert stacks["torchtitan"] == "torchtitan" and stacks[DEEPSPEED_SOURCE] == "megatron-deepspeed"
    own = ("llm-foundry", FOUNDRY_40GB_SOURCE, MAXTEXT_SOURCE, "torchtitan", DEEPSPEED_SOURCE)
    assert {s for source, s in stacks.items() if source not in own} == {"megatron"}


def test_a_stack_without_tp_overlap_or_fp8_changes_the_recipe() -> None:
    assert not stack_recipe(RECIPES["fp8"], get_stack("composer")).tp_comm_overlap
    assert stack_recipe(RECIPES["fp8"], get_stack("megatron")).tp_comm_overlap
    with pytest.raises(PerfmodelError, match="stack 'deepspeed' has no fp8 training"):
        stack_recipe(RECIPES["fp8"], get_stack("deepspeed"))
    with pytest.raises(PerfmodelError, match="unknown stack 'jax'; valid: megatron, composer"):
        get_stack("jax")


def test_a_slower_attention_kernel_makes_a_slower_step() -> None:
    # FlashAttention-2 on H100 (composer's kernel) against cuDNN/FlashAttention-3 (Megatron's), same layout.
    layout = {"tp": 1, "pp": 1, "cp": 1, "dp": 8, "mbs": 1, "gbs": 64, "recompute": "none", "zero": 3}
    megatron = perfmodel.predict(model="llama3.1-8b", gpu="h100-sxm", n_gpus=8, **layout)
    composer = perfmodel.predict(model="llama3.1-8b", gpu="h100-sxm", n_gpus=8, stack="composer", **layout)
    assert STACKS["composer"].attention_speed.value < 1.0
    assert composer.step.compute_s > megatron.step.compute_s


def test_years_between_release_months() -> None:
    assert years_between("2025-06", "2026-06") == 1.0
    assert years_between("2026-02", "2026-08") == pytest.approx(0.5)


def test_the_physics_reference_vintage_is_the_newest_bundled_release() -> None:
    """The release switches' ages (efficiency.release_age_years) count from REFERENCE_VINTAGE: it must be the
    release the fitted rows' `vintage_years` count from."""
    assert reference_vintage() == REFERENCE_VINTAGE


def test_rows_older_than_the_reference_vintage_count_their_years() -> None:
    runs, _ = bundled_runs()
    newest = reference_vintage()
    assert all(r.released is None or r.released <= newest for r in runs)
    dated = next(r for r in runs if r.released == "2024-06")
    assert vintage_years(dated) == pytest.approx(years_between("2024-06", newest))


def test_an_older_vintage_is_slower_by_the_fitted_trend() -> None:
    calibration = cal.bundled()
    gain = calibration.efficiency("hopper").software_gain_per_year
    reference = calibration.provenance["data"]["vintage"]["reference"]
    # BF16: an FP8 run of 2024-06 also ran delayed scaling (test_delayed_scaling.py), more than the trend alone.
    scenario = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8, "precision": "bf16"}
    scenario |= {"tp": 1, "pp": 1, "cp": 1, "mbs": 1, "gbs": 64}
    now = perfmodel.predict(**scenario)
    assert perfmodel.predict(**scenario, vintage=reference).step.step_time_s == pytest.approx(now.step.step_time_s)
    # With no fusion trend the whole step scales by gain**years; with one, its memory-bound kernels slow further. The
    # attention kernels of its release (Hopper's NGC 24.12 cuDNN: tests/test_attention_kernels.py) stay today's.
    years = years_between("2024-06", reference)
    older = replace(calibration.efficiency("hopper", vintage="2024-06"), fusion_gain_per_year=1.0, kernel_releases=0.0)
    at = perfmodel.load_scenario(**scenario)
    step = {g: planned(at, replace(older, fusion_gain_per_year=g)).step.step_time_s for g in (1.0, 1.2)}
    today = planned(at, replace(older, vintage_years=0.0)).step.step_time_s
    assert step[1.0] == pytest.approx(today * gain**years, rel=1e-9)
    assert step[1.2] > step[1.0] * 1.001


def test_an_older_release_moves_more_bytes_in_its_memory_bound_kernels() -> None:
    # compute.op_time: a memory-bound kernel of a release y years old takes fusion_gain_per_year**y of today's
    # streaming time (plus its fixed overhead); a GEMM's time does not move.
    acc = get_accelerator("h100-sxm")
    eff = replace(DEFAULTS["hopper"], fusion_gain_per_year=1.3, vintage_years=2.0)
    norm = Op("norm", "memory", 0, 1e9)
    streaming = 1e9 / (acc.hbm_bytes_per_s * eff.memory)
    assert op_time(norm, acc, eff) == pytest.approx(streaming * 1.3**2 + eff.kernel_overhead_us * 1e-6)
    gemm = Op("fc1", "gemm", 2 * 8192**3, 3 * 8192**2 * 2, "bf16", 8192, 8192, k=8192)
    assert op_time(gemm, acc, eff) == op_time(gemm, acc, replace(eff, vintage_years=0.0))


def test_an_attention_kernel_priced_at_its_release_is_not_aged_again_by_the_trend() -> None:
    """efficiency.attention_unaged: the step multiplies every part by the software trend (physics.step), so an
    attention op priced at the kernel its release measurably ran takes the trend back. Hopper: a ring step up to
    NeMo 24.03 (FlashAttention-2's measured rates) and cuDNN from its oldest measured release (NGC 24.12) on; not a
    release before 24.12 held at that kernel, nor a stack with a kernel of its own, nor Ampere (fitted shares)."""
    acc = get_accelerator("h100-sxm")
    hopper = replace(DEFAULTS["hopper"], software_gain_per_year=1.05)
    at = {m: replace(hopper, vintage_years=release_age_years(m)) for m in ("2024-03", "2024-06", "2025-06")}
    trend = {m: 1 / eff.vintage_factor for m, eff in at.items()}
    assert trend["2024-03"] < trend["2024-06"] < trend["2025-06"] < 1
    assert attention_unaged(at["2024-03"], "hopper", ring=1.0) == pytest.approx(trend["2024-03"])
    assert attention_unaged(at["2024-03"], "hopper") == attention_unaged(at["2024-06"], "hopper", ring=1.0) == 1.0
    assert attention_unaged(at["2025-06"], "hopper") == pytest.approx(trend["2025-06"])
    assert attention_unaged(at["2025-06"], "hopper", ring=1.0) == pytest.approx(trend["2025-06"])
    assert attention_unaged(replace(at["2025-06"], kernel_releases=0.0), "hopper") == 1.0
    assert attention_unaged(replace(DEFAULTS["ampere"], vintage_years=2.0, software_gain_per_year=1.05), "ampere") == 1
    ring = Op("attention", "attention", 1e12, 1e8, m=16384.0, exps=1e9, ring=1.0, diagonal=0.5, off_diagonal_m=8192.0)
    overhead_s = hopper.kernel_overhead_us * 1e-6
    core_s = attention_core_s(ring, acc, at["2024-03"])
    assert op_time(ring, acc, at["2024-03"]) == pytest.approx(core_s * trend["2024-03"] + overhead_s, rel=1e-12)


def test_mlperf_rows_without_a_layout_take_the_nearest_published_one() -> None:
    # mlperf_training_llm.csv: v4.1 Dell 2xXE9680 (16 H100, LoRA) publishes no layout; HPE's 16-GPU H100 LoRA
    # submission (v4.0) publishes TP4 PP1 CP2, the only published H100 LoRA layout at 16 GPUs.
    runs, _ = bundled_runs()
    dell = next(r for r in runs if r.id == "mlperf:v4.1/Dell/2xXE9680x8H100-SXM-80GB/llama2_70b_lora")
    par = dell.scenario["parallelism"]
    assert (par["tp"], par["pp"], par["cp"]) == (4, 1, 2)
    assert any("nearest published layout" in a for a in dell.assumptions)
    published = [r for r in runs if r.source.startswith("MLPerf") and not any("layout not" in a for a in r.assumptions)]
    assert all("tp" in r.scenario["parallelism"] for r in published)


def test_the_report_names_the_stack_and_release_it_assumed() -> None:
    default = run_cli("predict")
    inputs = inputs_of(default.out)
    assert (inputs["stack"], inputs["software"]) == ("megatron (default)", "the newest release fitted (default)")
    fsdp = ("--tp", "1", "--pp", "1", "--vp", "1", "--zero", "3")  # composer's layouts (inputs/features.py)
    chosen = run_cli("predict", "--stack", "composer", "--precision", "bf16", "--vintage", "2025-06", *fsdp)
    assert (inputs_of(chosen.out)["stack"], inputs_of(chosen.out)["software"]) == ("composer", "release 2025-06")


def test_a_bad_release_month_is_one_line_saying_the_form() -> None:
    result = run_cli("predict", "--vintage", "2030-13")
    assert result.code == 2 and result.out == ""
    assert result.err == "error: --vintage: a software release month YYYY-MM, e.g. 2025-06 (got '2030-13')\n"


def test_a_dated_row_is_priced_at_its_release_as_a_prediction_for_that_vintage_is() -> None:
    """One vintage mechanism: validation's batched pricing of a dated row (each row's `vintage_years` in the batched
    efficiencies) gives what a prediction of the row's scenario with `vintage` = its release gives, and the
    single-row path agrees with both. The prediction is of the scenario at the layout validation settled on (the
    row's unreported dimensions at its stack's settings, fitting.assumed), not at predict's search."""
    from perfmodel.fitting.validation import RunBatch, prepare_all
    from perfmodel.inputs.scenario import checked_scenario
    from perfmodel.planning.predict import predict

    runs, _ = bundled_runs()
    dated = [r for r in runs if r.released and r.released < "2026" and r.source == "Megatron-Bridge"]
    calibration = cal.bundled()
    items = [i for i in prepare_all(dated, calibration, []) if not i.range_only][:3]  # a point, not a range's middle
    batched = RunBatch(items).predicted()
    for item, value in zip(items, batched, strict=True):
        assert item.run.metric == "tokens_per_s_per_gpu" and vintage_years(item.run) > 0
        assumed = {d: getattr(item.layout, d) for d in (item.settled.assumed if item.settled else ())}
        scenario = item.run.scenario | {"parallelism": item.run.scenario["parallelism"] | assumed}
        released = predict(checked_scenario(scenario | {"vintage": item.run.released}))
        assert float(value) == pytest.approx(released.tokens_per_s_per_gpu, rel=1e-12)
        assert item.predicted(item.context.efficiency) == pytest.approx(float(value), rel=1e-12)
        now = predict(checked_scenario(scenario))
        assert released.tokens_per_s_per_gpu < now.tokens_per_s_per_gpu


def test_llm_foundry_rows_are_dated_by_their_tables_last_change() -> None:
    """measured_runs_sources.md: llm-foundry's benchmarking README was last changed 2024-01-06 (its rows' own date
    column says only '2023-2024'): the rows are of software no newer than 2024-01, public since then, so the forward
    protocol's folds (v4.1, v5.0) train on them."""
    from perfmodel.fitting.protocols import _known

    foundry = [r for r in bundled_runs()[0] if r.source in ("llm-foundry", FOUNDRY_40GB_SOURCE)]
    assert foundry and {r.released for r in foundry} == {"2024-01"}
    assert {_known(r) for r in foundry} == {"2024-01"}


def test_the_release_trend_prices_only_a_stack_with_a_release_series() -> None:
    """Megatron's releases are a series the trend is fitted on; a composer prediction at an older release is the
    same step as at the newest (no trend measured for it), a Megatron one is slower by gain**years. Megatron-DeepSpeed
    runs Megatron-LM's kernels of its release, so Megatron's trend prices them too."""
    calibration = cal.bundled()
    assert [name for name, stack in STACKS.items() if stack.release_trend] == ["megatron", "megatron-deepspeed"]
    assert calibration.efficiency("hopper", "composer").software_gain_per_year == 1.0
    gain = calibration.efficiency("hopper").software_gain_per_year
    assert gain > 1.0
    scenario = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8, "precision": "bf16"}
    scenario |= {"tp": 1, "pp": 1, "cp": 1, "mbs": 1, "gbs": 64}
    older, now = (perfmodel.predict(**scenario, stack="composer", vintage=v) for v in ("2024-01", REFERENCE_VINTAGE))
    assert older.step.step_time_s == now.step.step_time_s
    megatron_older = perfmodel.predict(**scenario, vintage="2024-01")
    assert megatron_older.step.step_time_s > perfmodel.predict(**scenario).step.step_time_s


@pytest.mark.parametrize("stack", ["torchtitan", "deepspeed"])
def test_fa2_stacks_on_blackwell_pay_fa2s_measured_speed_on_their_attention_time(stack: str) -> None:
    """FlashAttention-2 runs at 0.28 (forward) and 0.29 (backward) of cuDNN's speed on Blackwell (inputs/stacks.py
    FA2_SPEEDS, from cudnn-frontend's B200 and GB200 rows), not at the 0.5 measured on Hopper that priced it on every
    family before: the step is slower by exactly the attention time that ratio adds."""
    parallelism = {"tp": 1, "pp": 1, "cp": 1, "dp": 64, "mbs": 1, "gbs": 512, "recompute": "none", "zero": 3}
    scenario = load_scenario(None, {"model": "llama3.1-8b", "gpu": "b200", "n_gpus": 64, "stack": stack,
                                    "precision": "bf16", "parallelism": parallelism})  # fmt: skip
    ctx = context_for(scenario)
    fused = cal.bundled().efficiency("blackwell", "megatron")
    forward, backward = FA2_SPEEDS["blackwell"]
    assert ctx.efficiency.attention_fwd == pytest.approx(fused.attention_fwd * forward)
    assert ctx.efficiency.attention_bwd == pytest.approx(fused.attention_bwd * backward)

    def compute_s(fwd_speed: float, bwd_speed: float) -> float:
        eff = replace(ctx.efficiency, attention_fwd=fused.attention_fwd * fwd_speed,
                      attention_bwd=fused.attention_bwd * bwd_speed)  # fmt: skip
        return float(evaluate(replace(ctx, efficiency=eff), layout_vars(planned(scenario).layout)).compute_s)

    before = compute_s(0.5, 0.5)  # the H100 figure on every family
    forward_s, backward_s = compute_s(0.25, 0.5) - before, compute_s(0.5, 0.25) - before  # attention at 0.5
    after = compute_s(forward, backward)
    assert after == pytest.approx(before + forward_s * (0.5 / forward - 1) + backward_s * (0.5 / backward - 1))
    assert after > before * 1.05


def test_explain_names_the_fa2_speed_the_stack_runs_at_on_the_family() -> None:
    out = run_cli("explain", "--model", "llama3.1-8b", "--gpu", "b200", "--gpus", "8", "--stack", "torchtitan")
    forward, backward = FA2_SPEEDS["blackwell"]
    assert f"at {forward:.2f} (forward) and {backward:.2f} (backward) of blackwell's fused attention speed" in out.out
    assert "Hopper's measured ratio" not in out.out
    megatron = run_cli("explain", "--model", "llama3.1-8b", "--gpu", "b200", "--gpus", "8")
    assert "fused attention speed" not in megatron.out
    cdna = run_cli("explain", "--model", "llama3.1-8b", "--gpu", "mi300x", "--gpus", "8", "--stack", "torchtitan")
    assert "cdna3" not in FA2_SPEEDS  # no FA2 rows on CDNA: the family borrows Hopper's figure, and says so
    assert "(Hopper's measured ratio: no FlashAttention-2 kernel rows on cdna3)" in cdna.out
