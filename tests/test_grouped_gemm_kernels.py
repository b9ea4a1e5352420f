"""Grouped expert GEMMs against measured kernels (perfmodel/data/kernels_grouped_gemm.csv, gemm_kernels.
grouped_predicted_s): the model prices a grouped GEMM from its family's dense share and the groups' tiles in shared
waves, times the MoE stage's `grouped_gemm`, which training rows fit (prior 1). The kernels say what that factor is
at kernel level, and where the shape-free price misses.

Measured (time per call; m x n x k per expert, groups): DeepGEMM's contiguous FP8 on H800 (deepseek-ai/DeepGEMM
@327ec92f6977 README.md lines 65-68: 1,346 and 1,214 TFLOP/s), DeepGEMM through torchao on H100 (pytorch/ao@36027d82d1ad
benchmarks/prototype/blockwise_fp8_training/README.md lines 65, 68, 71: 779, 779, 2,105 us), torch._scaled_grouped_mm's
MXFP8 CUTLASS kernels on B200 (pytorch/ao@36027d82d1ad torchao/prototype/moe_training/README.md lines 177, 182, 187:
1,671, 1,683, 2,103 us)."""

from __future__ import annotations

from statistics import geometric_mean

import pytest

from perfmodel.inputs.kernels import GroupedGemmKernel, grouped_gemm_kernels
from perfmodel.physics.gemm_kernels import grouped_predicted_s


def _errors(rows: tuple[GroupedGemmKernel, ...]) -> dict[str, float]:
    return {f"{row.where} ({row.part})": grouped_predicted_s(row) / row.time_s - 1 for row in rows}


def test_the_rows_are_read_per_expert() -> None:
    """A row whose M is the total over its experts is split evenly (B200: 131,072 tokens over 8; H100: 32,768 over 8),
    a weight gradient reduces over each expert's tokens, and every row keeps its published rate."""
    rows = grouped_gemm_kernels()
    assert len(rows) == 10 and {row.part for row in rows} == {"h800", "h100-sxm", "b200"}
    shapes = {(row.part, row.m, row.n, row.k, row.groups) for row in rows}
    assert ("b200", 16384, 2048, 7168, 8) in shapes and ("b200", 2048, 7168, 16384, 8) in shapes
    assert ("h100-sxm", 4096, 2048, 7168, 8) in shapes and ("h100-sxm", 2048, 7168, 4096, 8) in shapes
    assert ("h800", 8192, 4096, 7168, 4) in shapes
    b200_forward = next(row for row in rows if row.part == "b200" and row.n == 2048)
    assert 2 * 16384 * 2048 * 7168 * 8 / b200_forward.time_s / 1e12 == pytest.approx(2303)
    assert b200_forward.time_s == pytest.approx(1671.2e-6, rel=1e-3)


def test_forward_and_data_gradient_rows_run_a_fifth_below_the_models_grouped_price() -> None:
    """At the prior (grouped_gemm 1), the eight forward and data-gradient rows read 14-23% fast on all three parts
    (Hopper and Blackwell alike: geometric mean of predicted over measured 0.80), the share the kernels give
    `grouped_gemm`; the training rows fit 0.95. Fixed at 0.80 in the MoE stage (tried for issue 27): GPT-OSS-120B
    37.1% -> 32.4% (newest rows 25.4% -> 21.1%), DeepSeek-V3 left out 8.3% -> 7.7%, but Mixtral 8x7B 4.3% -> 9.8% and
    Qwen3-235B-A22B 10.5% -> 10.9%, so it stays a check, not a price. A mutation of the grouped rate by 10% either way
    takes a row out of its band."""
    rows = tuple(row for row in grouped_gemm_kernels() if not row.weight_gradient)
    errors = _errors(rows)
    assert len(errors) == 8
    assert all(-0.25 < error < -0.10 for error in errors.values()), errors
    ratio = geometric_mean(grouped_predicted_s(row) / row.time_s for row in rows)
    assert ratio == pytest.approx(0.80, abs=0.02)


def test_weight_gradients_are_the_models_known_miss() -> None:
    """A K-grouped weight gradient is priced as its forward (no depth or output-tile term for a grouped GEMM), while
    both libraries run it slower: B200's at 1,830 TFLOP/s against the forward's 2,303 (38% fast as priced), H100's
    DeepGEMM at 457 against 1,234 (71% fast). Priced at B200's 1.25x its forward (tried for issue 27), the refitted
    MoE stage takes it back: on every grouped weight gradient grouped_gemm goes 0.976 -> 1.038 and GPT-OSS-120B's
    NeMo 26.08 rows move 0.4 points (+32.1/+20.5% -> +31.7/+20.1% on GB300/GB200); on the fused grouped MLP's alone
    (cuDNN's K-grouped wgrad kernel, TransformerEngine 2.16 backward_grouped_mlp.py L277-287) 0.976 -> 1.004, the
    five newest rows 25.0% -> 23.7% but all 31 30.4% -> 30.7%: a check still, not a price."""
    errors = _errors(tuple(row for row in grouped_gemm_kernels() if row.weight_gradient))
    assert len(errors) == 2
    assert all(-0.75 < error < -0.30 for error in errors.values()), errors
