"""GPT-OSS's own costs, each from its source (../shared/data/gpt_oss_blackwell_notes.md): YaRN's rotary embedding run
eagerly by Megatron-Core from NeMo 26.02, and the experts' bias gradients."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from perfmodel.inputs.hardware import get_accelerator
from perfmodel.inputs.models import get_model
from perfmodel.inputs.precision import RECIPES
from perfmodel.physics.compute import op_time
from perfmodel.physics.efficiency import DEFAULTS, release_age_years
from perfmodel.physics.moe import moe_block_backward
from perfmodel.physics.workload import Op, Shard, attention_block_backward, attention_block_forward

TOKENS = 4 * 4096
"""GPT-OSS-120B's Blackwell micro-batch (Megatron-Bridge performance summary: MBS 4, sequence 4,096)."""


def _shard(model: str) -> Shard:
    return Shard(get_model(model), RECIPES["mxfp8"], 1, 1, 4, 4096, ep=16)


def _op(ops: list[Op], name: str) -> Op:
    return next(op for op in ops if op.name == name)


def test_yarn_rope_runs_eagerly_from_nemo_26_02() -> None:
    """Megatron-Bridge gpt_oss_bridge.py L94-100 (snapshot 067f987df): YaRN factor 32, yarn_mscale None, so Megatron-
    Core's concentration factor is 0.1 ln 32 + 1 = 1.347 (yarn_rotary_pos_embedding.py core_v0.18.0 L252-255), and
    rope_utils.apply_rotary_pos_emb (core_v0.16.0 on, NeMo 26.02 on) runs the eager path for it: about 12 passes over
    Q and K forward and 10 backward against the fused kernel's 2. Q and K of a 16,384-token micro-batch are
    16,384 x (4,096 + 512) elements, 151 MB in BF16: 2.7 GB more per layer. A release before 26.02, and a model
    without YaRN scaling, move the fused kernel's bytes."""
    md = get_model("gpt-oss-120b")
    assert md.yarn_mscale == pytest.approx(0.1 * math.log(32) + 1, abs=1e-3)
    assert get_model("gpt-oss-20b").yarn_mscale == md.yarn_mscale and get_model("qwen3-30b-a3b").yarn_mscale == 1
    sh = _shard("gpt-oss-120b")
    fwd = _op(attention_block_forward(sh, RECIPES["mxfp8"]), "rope")
    bwd = _op(attention_block_backward(sh, RECIPES["mxfp8"]), "rope.bwd")
    elements = TOKENS * (4096 + 512)
    assert (fwd.bytes, fwd.eager_bytes) == pytest.approx((12 * 2 * elements, 10 * 2 * elements))
    assert (bwd.bytes, bwd.eager_bytes) == pytest.approx((10 * 2 * elements, 8 * 2 * elements))
    assert (fwd.eager_bytes + bwd.eager_bytes) / 1e9 == pytest.approx(2.7, abs=0.05)
    gb300, today = get_accelerator("gb300"), DEFAULTS["blackwell-ultra"]
    fused = fwd._replace(bytes=fwd.bytes - fwd.eager_bytes, eager_bytes=0)
    for month, eager in (("2025-11", False), ("2026-02", True), ("2026-08", True)):
        eff = replace(today, vintage_years=release_age_years(month))
        extra_s = float(op_time(fwd, gb300, eff) - op_time(fused, gb300, eff))
        expected = fwd.eager_bytes / (gb300.hbm_bytes_per_s * today.memory) * float(eff.unfused_factor)
        assert extra_s == pytest.approx(expected if eager else 0.0, abs=1e-9), month
    plain = _op(attention_block_forward(_shard("qwen3-30b-a3b"), RECIPES["mxfp8"]), "rope")
    assert plain.eager_bytes == 0


def test_expert_biases_pay_their_gradients() -> None:
    """GPT-OSS's experts have biases (gpt_oss_bridge.py L62-63): fc1's dbias reads fc1's output gradient once (the
    fused dGeGLU's generate_dbias, +12% of that kernel: cudnn-frontend PR #322), fc2's bias scaled by the router
    probabilities reads and writes the rows once more (TransformerEngine grouped_mlp.py L1893-1950). Qwen3's experts
    have none."""
    sh = _shard("gpt-oss-120b")
    ops = moe_block_backward(sh, RECIPES["mxfp8"])
    rows = TOKENS * 4  # top-4, force-balanced
    assert _op(ops, "expert_fc2.dbias").bytes == pytest.approx(rows * 2880 * 4)
    assert _op(ops, "expert_fc1.dbias").bytes == pytest.approx(rows * 2 * 2880 * 2)
    assert not [op for op in moe_block_backward(_shard("qwen3-30b-a3b"), RECIPES["mxfp8"]) if "dbias" in op.name]


def test_the_fp8_mx_recipes_run_the_lm_head_in_mxfp8() -> None:
    """Megatron-Bridge perf_recipes/gpt_oss/common.py L28 (snapshot 067f987df), _apply_gpt_oss_120b_full_iter_fp8mx_
    configs: fp8_output_proj = True, the LM head in MXFP8 (Megatron-Core 0.18 is_mxfp8_output_proj_active); the
    bundled GB300/GB200 FP8-MX rows run it (fitting.moe_recipes). Its GEMMs then run at the FP8 rate with their casts,
    where every other recipe keeps the head in BF16; a BF16 run of the same model has nothing to quantise."""
    from perfmodel.physics.workload import head_backward, head_forward

    md = replace(get_model("gpt-oss-120b"), fp8_output_proj=True)
    for model, recipe, fmt in (
        (md, "mxfp8", "fp8"),
        (get_model("gpt-oss-120b"), "mxfp8", "bf16"),
        (md, "bf16", "bf16"),
    ):
        sh = Shard(model, RECIPES[recipe], 1, 1, 4, 4096, ep=16)
        ops = head_forward(sh) + head_backward(sh)
        gemms = [op for op in ops if op.kind == "gemm"]
        assert [op.name for op in gemms] == ["lm_head.fprop", "lm_head.dgrad", "lm_head.wgrad"]
        assert {op.fmt for op in gemms} == {fmt}
        assert any(op.name == "lm_head.cast" for op in ops) == (fmt == "fp8")
