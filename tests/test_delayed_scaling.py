"""FP8 as the rows ran it: delayed scaling (no separate amax pass) before Megatron-Bridge 25.09 and on Composer,
per-tensor current scaling since (efficiency.CURRENT_SCALING_RELEASE): cast bytes against the recipe's closed form."""

from dataclasses import replace

import pytest

from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.models import get_model
from perfmodel.inputs.precision import BF16_BYTES, RECIPES
from perfmodel.inputs.stacks import STACKS, stack_recipe
from perfmodel.physics.compute import op_time
from perfmodel.physics.efficiency import CURRENT_SCALING_RELEASE, DEFAULTS, release_age_years
from perfmodel.physics.workload import Shard, layer_forward

MODEL = get_model("llama3.1-70b")
SEQ = 8192


def _casts(recipe_id: str) -> list:
    recipe = RECIPES[recipe_id]
    return [op for op in layer_forward(Shard(MODEL, recipe, 1, 1, 1, SEQ), recipe) if op.name.endswith(".cast")]


def test_an_fp8_cast_before_current_scaling_skips_exactly_its_amax_read() -> None:
    """Delayed scaling saves one BF16 read of each cast tensor (the amax pass), nothing else; from the current-scaling
    release on the full cast is paid."""
    acc = resolve("h100-sxm").accelerator
    base = DEFAULTS["hopper"]
    newest, older = (replace(base, vintage_years=y) for y in (release_age_years(CURRENT_SCALING_RELEASE), 2.0))
    proj = next(op for op in _casts("fp8") if op.name == "proj.cast")
    elements = SEQ * MODEL.q_dim
    assert proj.amax_bytes == pytest.approx(elements * BF16_BYTES)
    saved = op_time(proj, acc, newest) - op_time(proj, acc, older)
    assert saved == pytest.approx(elements * BF16_BYTES / (acc.hbm_bytes_per_s * base.memory))


def test_only_per_tensor_fp8_has_an_amax_pass_delayed_scaling_replaces() -> None:
    """MXFP8 takes its block scales from the block being cast; NVFP4's FP32 tensor scale is computed from the current
    amax in NVIDIA's recipes: neither changes with the release."""
    for recipe_id in ("mxfp8", "nvfp4"):
        assert all(op.amax_bytes == 0 for op in _casts(recipe_id))
    assert all(op.amax_bytes > 0 for op in _casts("fp8"))


def test_composer_runs_fp8_with_delayed_scaling_and_megatron_keeps_the_amax_pass() -> None:
    fp8 = RECIPES["fp8"]
    assert stack_recipe(fp8, STACKS["composer"]).amax_passes == 0
    assert stack_recipe(fp8, STACKS["megatron"]).amax_passes == fp8.amax_passes == 1
    assert stack_recipe(RECIPES["nvfp4"], STACKS["composer"]).amax_passes == RECIPES["nvfp4"].amax_passes


def test_mlperf_configs_run_fp8_with_delayed_scaling_in_every_release() -> None:
    """NVIDIA's MLPerf configurations set FP8_AMAX_HISTORY / FP8_AMAX_ALGO in every round and their v5.1 NVFP4 LoRA
    config heals to FP8_DS (stack_notes.md): a benchmark run's FP8 casts have no amax pass, even from NeMo 25.09 on,
    where Megatron-Bridge's FP8 is current scaling; NVFP4's tensor scale keeps its amax pass."""
    from perfmodel.inputs.mlperf import benchmark_recipe
    from perfmodel.inputs.scenario import checked_scenario
    from perfmodel.planning.predict import context_for

    fp8 = RECIPES["fp8"]
    assert benchmark_recipe(fp8).amax_passes == 0 and benchmark_recipe(fp8) is benchmark_recipe(fp8)
    assert benchmark_recipe(RECIPES["nvfp4"]) is RECIPES["nvfp4"]
    flags = {"gpu": "b200", "n_gpus": 8, "precision": "fp8", "parallelism": {"gbs": 16}}
    mlperf = context_for(checked_scenario(flags | {"benchmark": "mlperf-llama31-8b@v5.1"}))
    plain = context_for(checked_scenario(flags | {"model": "llama3.1-8b"}))
    assert mlperf.recipe.amax_passes == 0 and plain.recipe.amax_passes == 1


def test_mlperf_recipes_follow_their_configs() -> None:
    """stack_notes.md: NVIDIA's Llama 3.1 405B FP4 config disables the Hadamard transform (NVTE_NVFP4_DISABLE_RHT=1);
    NVIDIA's LoRA configs run FP8 attention (FP8_DPA=1, NVTE_FP8_DPA_BWD=1), AMD's do not (FP8_DPA=0)."""
    from perfmodel.inputs.scenario import checked_scenario
    from perfmodel.planning.predict import context_for

    def recipe(benchmark: str, gpu: str, precision: str):  # type: ignore[no-untyped-def]
        scenario = {"benchmark": benchmark, "gpu": gpu, "n_gpus": 8, "precision": precision}
        return context_for(checked_scenario(scenario | {"parallelism": {"gbs": 8}})).recipe

    assert not recipe("mlperf-llama31-405b@v5.1", "gb300", "nvfp4").hadamard_wgrad
    assert recipe("mlperf-llama31-8b@v5.1", "gb300", "nvfp4").hadamard_wgrad
    assert recipe("mlperf-llama2-70b-lora@v5.1", "b200", "fp8").attention_format == "fp8"
    assert recipe("mlperf-llama2-70b-lora@v5.1", "mi325x", "fp8").attention_format == "bf16"
    assert recipe("mlperf-llama2-70b-lora@v5.1", "b200", "bf16").attention_format == "bf16"
    assert recipe("mlperf-llama31-405b@v5.1", "gb200", "fp8").attention_format == "bf16"
