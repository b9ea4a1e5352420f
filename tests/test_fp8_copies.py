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


def test_nvidias_b200_lora_row_fits_at_its_stacks_default() -> None:
    # mlperf_training_llm.csv, v4.1 llama2_70b_lora, NVIDIA Nyx (1x NVIDIA DGX B200), FP8, TP1 PP1 CP2 DP4 MBS1
    # (config_DGXB200_1x8x2xtp1pp1cp2.sh). Recompute is unreported; at the stack default (none) the frozen FP8 base
    # with a transposed copy (2 bytes per parameter, 138 GB) and its activations needed more than the B200's 180 GB.
    # One FP8 copy (69 GB) fits.
    runs, _ = bundled_runs()
    run = next(r for r in runs if r.id == "mlperf:v4.1/NVIDIA/b200_preview_nemo")
    item = prepare(run, UNCALIBRATED)
    assert item.basis == "stack default" and item.layout.recompute == "none"
    step = evaluate(item.context, layout_vars(item.layout))
    assert step.fits
    params = item.context.model.params
    assert float(step.memory.weights) == pytest.approx(params * 1.0)  # one FP8 byte per frozen weight
    assert float(step.memory.total) + params * 1.0 > step.hbm_bytes  # with the transposed copy it did not fit
