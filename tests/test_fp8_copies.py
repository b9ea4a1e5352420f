"""Per-tensor FP8 keeps one FP8 copy of each tensor where the tensor cores take either major order (Blackwell, CDNA),
two where they take K-major operands only (Hopper): inputs/precision.NON_TN_FP8_FAMILIES."""

from __future__ import annotations

import pytest

from perfmodel.fitting.runs import bundled_runs
from perfmodel.fitting.validation import prepare
from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.precision import RECIPES, get_recipe
from perfmodel.physics.calibration import UNCALIBRATED
from perfmodel.physics.step import evaluate
from perfmodel.planning.predict import layout_vars


@pytest.mark.parametrize(
    ("gpu", "copies", "weight_bytes"),
    [("h100-sxm", 2, 2.0), ("b200", 1, 1.0), ("gb300", 1, 1.0), ("mi300x", 1, 1.0), ("mi325x", 1, 1.0)],
)
def test_per_tensor_fp8_copies_follow_the_tensor_cores(gpu: str, copies: int, weight_bytes: float) -> None:
    recipe = get_recipe("fp8", resolve(gpu).accelerator)
    assert (recipe.copies, recipe.weight_bytes) == (copies, weight_bytes)


def test_block_scaled_formats_keep_both_copies_on_blackwell() -> None:
    """MXFP8's 32-element scales run along the reduction dimension, which differs between the forward and backward
    GEMMs: a column-wise copy is quantised apart on every family."""
    blackwell = resolve("b200").accelerator
    assert get_recipe("mxfp8", blackwell) is RECIPES["mxfp8"] and RECIPES["mxfp8"].copies == 2
    assert get_recipe("fp8", blackwell) is get_recipe("fp8", blackwell)  # one object: contexts keyed by it are shared


def test_a_frozen_per_tensor_fp8_base_is_held_once_and_transposed_in_the_backward() -> None:
    from perfmodel.inputs.models import get_model
    from perfmodel.inputs.precision import frozen_base_recipe
    from perfmodel.physics.workload import Shard, linear_backward

    hopper = frozen_base_recipe(get_recipe("fp8", resolve("h100-sxm").accelerator))
    assert (hopper.copies, hopper.weight_bytes, hopper.weight_transposed_in_backward) == (1, 1.0, True)
    assert frozen_base_recipe(get_recipe("fp8", resolve("h200-sxm").accelerator)) is hopper  # contexts are shared
    blackwell = get_recipe("fp8", resolve("b200").accelerator)
    assert frozen_base_recipe(blackwell) is blackwell  # already one copy, nothing to transpose
    mxfp8 = frozen_base_recipe(RECIPES["mxfp8"])  # block scales: both weight copies kept, activations cast row-wise
    assert (mxfp8.copies, mxfp8.weight_bytes) == (1, RECIPES["mxfp8"].weight_bytes)
    assert frozen_base_recipe(RECIPES["mxfp8"]) is mxfp8  # contexts are shared
    # The transpose reads and writes each FP8 weight of the rank's shard once per micro-batch: 2 x k x n bytes.
    sh = Shard(get_model("llama2-70b"), hopper, 2, 1, 1, 8192)
    ops = {op.name: op for op in linear_backward(sh, hopper, ("fc2", 14336, 8192, False), True, 8192)}
    assert ops["fc2.weight_transpose"].bytes == 2 * 14336 * 8192 * 1.0
    assert "fc2.wgrad" not in ops
    unfrozen = {op.name for op in linear_backward(sh, RECIPES["fp8"], ("fc2", 14336, 8192, False), False, 8192)}
    assert "fc2.weight_transpose" not in unfrozen


@pytest.mark.parametrize(
    "row",
    [
        # mlperf_training_llm.csv, v4.1 llama2_70b_lora, NVIDIA Nyx (1x NVIDIA DGX B200, 180 GB), FP8, TP1 PP1 CP2
        # DP4 MBS1 (config_DGXB200_1x8x2xtp1pp1cp2.sh): one FP8 copy because Blackwell's tensor cores take either
        # major order (NON_TN_FP8_FAMILIES).
        "mlperf:v4.1/NVIDIA/b200_preview_nemo/llama2_70b_lora",
        # the same benchmark, NVIDIA DGX H200 (141 GB), FP8, TP1 PP1 CP2 DP4 (config_DGXH200_1x8x2xtp1pp1cp2.sh): one
        # FP8 copy because the base is frozen (frozen_base_recipe); held with its transposed copy, it was priced at a
        # block recompute of 76 of 80 layers.
        "mlperf:v4.1/NVIDIA/h200_ngc24.09_nemo/llama2_70b_lora",
    ],
)
def test_nvidias_tp1_lora_rows_fit_unrecomputed_with_one_fp8_copy(row: str) -> None:
    # Recompute is unreported; at the stack default (none) the frozen FP8 base with a transposed copy (2 bytes per
    # parameter, 138 GB) and its activations did not fit. One FP8 copy (69 GB) fits.
    runs, _ = bundled_runs()
    item = prepare(next(r for r in runs if r.id == row), UNCALIBRATED)
    assert item.basis == "stack default" and item.layout.recompute == "none"
    step = evaluate(item.context, layout_vars(item.layout))
    params = item.context.model.params
    assert step.fits and float(step.memory.weights) == pytest.approx(params * 1.0)  # one FP8 byte per frozen weight
    assert float(step.memory.total) + params * 1.0 > step.hbm_bytes  # with the transposed copy it did not fit
