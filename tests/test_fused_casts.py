"""Quantisation casts as explicit kernels, fused where Transformer Engine fuses them (stack_notes.md: LayerNormLinear
/ LayerNormMLP norm+cast, activation+cast): bytes against the recipe's closed form."""

import pytest

from perfmodel.inputs.models import get_model
from perfmodel.inputs.precision import BF16_BYTES, RECIPES
from perfmodel.physics.workload import Shard, layer_forward

MODEL = get_model("llama3.1-70b")
SEQ = 8192


def _cast_bytes(recipe_id: str, tp: int) -> dict[str, float]:
    recipe = RECIPES[recipe_id]
    ops = layer_forward(Shard(MODEL, recipe, tp, 1, 1, SEQ), recipe)
    return {op.name: op.bytes for op in ops if op.name.endswith(".cast")}


def _per_element(recipe_id: str, fused: bool) -> float:
    """Bytes per element of an input cast: the amax passes, a read (unless fused) and NVFP4's Hadamard read of the
    column-wise copy (workload._cast), the quantised copies written."""
    r = RECIPES[recipe_id]
    return (r.amax_passes + 1 + r.hadamard_wgrad - fused) * BF16_BYTES + r.copies * r.element_bytes


def test_fp8_casts_fuse_into_norm_and_activation_but_not_after_attention() -> None:
    """FP8 (current scaling) gathers quantised inputs, so the norm on T/t rows can cast them; proj's input comes
    from the attention kernel, a separate cast."""
    tp, m = 8, MODEL
    got = _cast_bytes("fp8", tp)
    assert got["qkv.cast"] == pytest.approx(SEQ / tp * m.hidden * _per_element("fp8", True))
    assert got["fc1.cast"] == pytest.approx(SEQ / tp * m.hidden * _per_element("fp8", True))
    assert got["fc2.cast"] == pytest.approx(SEQ * m.ffn / tp * _per_element("fp8", True))
    assert got["proj.cast"] == pytest.approx(SEQ * m.q_dim / tp * _per_element("fp8", False))


def test_nvfp4_gathers_bf16_so_the_norm_cannot_cast_all_rows_under_tp() -> None:
    m = MODEL
    assert _cast_bytes("nvfp4", 4)["qkv.cast"] == pytest.approx(SEQ * m.hidden * _per_element("nvfp4", False))
    assert _cast_bytes("nvfp4", 1)["qkv.cast"] == pytest.approx(SEQ * m.hidden * _per_element("nvfp4", True))
    assert _cast_bytes("bf16", 1) == {}


@pytest.mark.parametrize("tp", [1, 4])
def test_mxfp8_norm_fed_casts_read_the_norms_bf16_output_again_but_activation_casts_fuse(tp: int) -> None:
    """TransformerEngine's norm kernels take an MXFP8 quantizer unfused (norm in BF16, then a quantize kernel:
    transformer_engine_torch 2.9.0/2.12.0 csrc/extensions/normalization.cpp, Impl::UNFUSED without
    NVTE_NORM_FWD_USE_CUDNN), while its activation kernels emit MXFP8 directly (activation.cpp, Impl::FULLY_FUSED):
    qkv and fc1 pay the read whatever the TP, fc2 does not. MXFP8 gathers quantised rows, so each rank casts T/t."""
    m = MODEL
    got = _cast_bytes("mxfp8", tp)
    assert got["qkv.cast"] == pytest.approx(SEQ / tp * m.hidden * _per_element("mxfp8", False))
    assert got["fc1.cast"] == pytest.approx(SEQ / tp * m.hidden * _per_element("mxfp8", False))
    assert got["fc2.cast"] == pytest.approx(SEQ * m.ffn / tp * _per_element("mxfp8", True))
