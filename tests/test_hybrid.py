"""Hybrid Mamba-2 models (issue 32): parameter counts against the published configs, the SSD scan's FLOPs against
the chunked algorithm's closed form, memory, layer-kind pricing, pipeline stages of unequal cost, and refusals."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from conftest import run_cli

from perfmodel.errors import FieldError
from perfmodel.inputs import hybrid
from perfmodel.inputs.models import ZOO, ModelSpec
from perfmodel.inputs.precision import RECIPES
from perfmodel.physics import mamba, memory, moe
from perfmodel.physics.workload import Shard


def _count_from_config(
    pattern: str,
    hidden: int,
    vocab: int,
    mamba: tuple[int, int, int, int, int],
    attention: tuple[int, int, int],
    mlp: int = 0,
    moe_shape: tuple[int, int, int, int] = (0, 0, 0, 0),
) -> tuple[int, int]:
    """(total, active) parameters of a NemotronH checkpoint, module by module as transformers 5.25's
    modeling_nemotron_h.py builds them: NemotronHMamba2Mixer (in_proj h -> 2 inner + 2 G N + H, conv1d over
    inner + 2 G N channels with bias, dt_bias, A_log and D per head, gated RMSNorm over inner, out_proj), attention
    (q, k, v, o without bias), MLP (up, down: relu2), MoE (router weight E x h, its e_score_correction_bias a
    buffer; experts' up and down; the shared expert's up and down), one RMSNorm per block, the final norm, untied
    embedding and LM head."""
    heads, head_dim, groups, state, conv = mamba
    q_heads, kv_heads, qk_dim = attention
    experts, top_k, expert_ffn, shared_ffn = moe_shape
    inner = heads * head_dim
    in_proj = hidden * (2 * inner + 2 * groups * state + heads)
    conv1d = (inner + 2 * groups * state) * conv + (inner + 2 * groups * state)
    mixer = in_proj + conv1d + 3 * heads + inner + inner * hidden
    attn = hidden * q_heads * qk_dim + 2 * hidden * kv_heads * qk_dim + q_heads * qk_dim * hidden
    expert = 2 * hidden * expert_ffn
    blocks = {
        "M": mixer,
        "*": attn,
        "-": 2 * hidden * mlp,
        "E": experts * hidden + experts * expert + 2 * hidden * shared_ffn,
    }
    total = sum(blocks[c] + hidden for c in pattern) + hidden + 2 * vocab * hidden
    return total, total - pattern.count("E") * (experts - top_k) * expert


# Megatron-Bridge 0.3.1 models/nemotronh/nemotron_h_provider.py: NemotronHModelProvider (mamba_num_groups 8,
# mamba_head_dim 64, num_query_groups 8), NemotronHModelProvider8B and 56B (patterns, widths, heads, state sizes);
# transformers 5.25 NemotronHConfig (vocab_size 131072, conv_kernel 4, head_dim 128).
NEMOTRON_H_8B = _count_from_config(
    ZOO["nemotron-h-8b"].hybrid_pattern, 4096, 131072, (128, 64, 8, 128, 4), (32, 8, 128), mlp=21504
)
NEMOTRON_H_56B = _count_from_config(
    ZOO["nemotron-h-56b"].hybrid_pattern, 8192, 131072, (256, 64, 8, 256, 4), (64, 8, 128), mlp=32768
)
# Nemotron3NanoProvider: 2688 wide, 32 heads of 128 in 2 query groups, Mamba-2 64 heads of 64, 128 experts of 1856
# top-6, a shared expert of 3712.
NEMOTRON_3_NANO = _count_from_config(
    ZOO["nemotron-3-nano-30b-a3b"].hybrid_pattern,
    2688,
    131072,
    (64, 64, 8, 128, 4),
    (32, 2, 128),
    moe_shape=(128, 6, 1856, 3712),
)


@pytest.mark.parametrize(
    ("model_id", "counts", "published_b"),
    [
        ("nemotron-h-8b", NEMOTRON_H_8B, (8.1, None)),
        ("nemotron-h-56b", NEMOTRON_H_56B, (56.3, None)),
        # 31.6B: the params_b column of Megatron-Bridge's performance summary rows (measured_runs.csv, Nemotron-3-
        # Nano-30B-A3B); "~3B active" (its notes) is the active count without the embedding and LM head.
        ("nemotron-3-nano-30b-a3b", NEMOTRON_3_NANO, (31.6, 3.6)),
    ],
)
def test_hybrid_parameter_counts_match_the_published_configs(
    model_id: str, counts: tuple[int, int], published_b: tuple[float, float | None]
) -> None:
    md = ZOO[model_id]
    assert (md.params, md.active_params) == counts
    total_b, active_b = published_b
    assert round(md.params / 1e9, 1) == total_b
    if active_b is not None:
        assert round(md.active_params / 1e9, 1) == active_b
        without_vocab = md.active_params - md.embedding_params - md.lm_head_params
        assert 2.5e9 < without_vocab < 3.5e9


def _chunked_scan_flops(seq_len: int, chunk: int, heads: int, head_dim: int, groups: int, state: int) -> float:
    """Forward FLOPs of the SSD chunked algorithm counted step by step (Dao and Gu 2024, arXiv 2405.21060,
    section 6, Listing 1 `ssd_minimal_discrete`): per chunk, C B^T per group over its causal half (Q^2 / 2
    entries of N multiply-adds), the masked product with x per head (Q^2 / 2 entries of P), the chunk states
    B^T x per head (Q x N x P) and the output from the states, C h, per head (Q x N x P)."""
    chunks, half = seq_len // chunk, chunk * chunk / 2
    per_chunk = 2 * half * state * groups + 2 * half * head_dim * heads + 2 * 2 * chunk * state * head_dim * heads
    return chunks * per_chunk


def test_the_ssd_scan_flops_follow_the_chunked_algorithm() -> None:
    md = ZOO["nemotron-3-nano-30b-a3b"]
    seq = 8192
    expected = _chunked_scan_flops(seq, md.mamba_chunk, md.mamba_heads, md.mamba_head_dim, md.mamba_groups, 128)
    assert md.ssd_flops_per_token(seq) * seq == pytest.approx(expected, rel=1e-12)
    # the workload's scan op on a TP-2 rank does half of one layer's work for its micro-batch
    sh = Shard(md, RECIPES["bf16"], tp=2.0, cp=1.0, mbs=2.0, seq_len=seq)
    scan = next(op for op in mamba.mamba_block_forward(sh, RECIPES["bf16"]) if op.name == "ssd_scan")
    assert scan.flops == pytest.approx(2 * expected / 2)
    backward = next(op for op in mamba.mamba_block_backward(sh, RECIPES["bf16"]) if op.name == "ssd_scan.bwd")
    assert backward.flops == pytest.approx(mamba.SSD_BWD_PASSES * scan.flops)


def test_a_batch_of_several_sequences_pays_the_scan_layout_copies() -> None:
    """Megatron-Core lays activations out [sequence, batch, width] and the scan [batch, sequence, width]: with more
    than one sequence in the micro-batch, in_proj's output is copied into the scan's order and the scan's output back
    (megatron-core 0.16.1 ssm/mamba_mixer.py L642, L678), and in the backward TransformerEngine copies in_proj's
    permuted output gradient (2.9.0 pytorch/module/base.py L1143-1144); each copy reads and writes BF16. A batch of one
    is contiguous in either order, and copies nothing."""
    md, seq, tp = ZOO["nemotron-3-nano-30b-a3b"], 8192, 2.0
    in_width = 2 * md.mamba_inner + 2 * md.mamba_groups * md.mamba_state + md.mamba_heads
    for mbs in (1.0, 2.0, 4.0):
        sh = Shard(md, RECIPES["bf16"], tp=tp, cp=1.0, mbs=mbs, seq_len=seq)
        ops = {op.name: op for op in mamba.mamba_block_forward(sh, RECIPES["bf16"])}
        ops |= {op.name: op for op in mamba.mamba_block_backward(sh, RECIPES["bf16"])}
        copied = 0.0 if mbs == 1 else mbs * seq / tp * 2 * 2  # elements per width on this rank, read and write
        assert ops["scan_input_layout"].bytes == pytest.approx(copied * in_width)
        assert ops["scan_output_layout"].bytes == pytest.approx(copied * md.mamba_inner)
        assert ops["in_proj.grad_layout"].bytes == pytest.approx(copied * in_width)


def test_the_scan_gates_its_output_and_a_plain_norm_follows() -> None:
    """Megatron-Core hands the gate to the scan (no rmsnorm_weight: megatron-core 0.16.1 mamba_mixer.py L659-675), so
    mamba_ssm's last forward kernel reads z and writes the ungated output beside the gated one (ssd_chunk_scan.py
    L1276-1278) and the norm after it reads one tensor and writes one (L681-682); the backward's
    _chunk_scan_bwd_dz reads the gradient, the ungated output, z and x and writes two (L406-419), the norm's reads
    two and writes one. Over the inner width in BF16, per token: 4 passes forward and 9 backward."""
    md, seq = ZOO["nemotron-3-nano-30b-a3b"], 8192
    sh = Shard(md, RECIPES["bf16"], tp=1.0, cp=1.0, mbs=1.0, seq_len=seq)
    forward = {op.name: op for op in mamba.mamba_block_forward(sh, RECIPES["bf16"])}
    backward = {op.name: op for op in mamba.mamba_block_backward(sh, RECIPES["bf16"])}
    pass_bytes = seq * md.mamba_inner * 2
    gate = forward["ssd_scan"].bytes - mamba._scan_bytes(sh)
    assert (gate + forward["scan_norm"].bytes) / pass_bytes == pytest.approx(4)
    assert (backward["scan_gate.bwd"].bytes + backward["scan_norm.bwd"].bytes) / pass_bytes == pytest.approx(9)


def test_the_scan_backward_moves_each_kernels_tensors() -> None:
    """The backward's bytes tensor by tensor, per token, as mamba_ssm 2.3.2's _mamba_chunk_scan_combined_bwd
    (ssd_combined.py L396-513) reads and writes them: x, the output gradient and dx are I wide (BF16), B and C G N,
    dt and dA H (dt BF16 as it comes, FP32 after the cumsum), C B^T G Q (FP32), the chunk states I N / Q (FP32, or
    BF16 after _state_passing_bwd)."""
    md, seq = ZOO["nemotron-3-nano-30b-a3b"], 8192
    i, gn, h = md.mamba_inner, md.mamba_groups * md.mamba_state, md.mamba_heads
    gq, states = md.mamba_groups * md.mamba_chunk, md.mamba_inner * md.mamba_state / md.mamba_chunk
    x, dout, bc, dt, fp32_h, cb, s32, s16 = 2 * i, 2 * i, 2 * gn, 2 * h, 4 * h, 4 * gq, 4 * states, 2 * states
    kernels = {  # bytes read + written per token
        "dt.clone": dt + dt,
        "_chunk_cumsum_fwd": dt + 2 * fp32_h,
        "_bmm_chunk_fwd": 2 * bc + cb,
        "_chunk_state_fwd": bc + x + 2 * fp32_h + s32,
        "_state_passing_fwd": s32 + s32,
        "_chunk_scan_bwd_dstates": bc + fp32_h + dout + s32,
        "_state_passing_bwd": 2 * s32 + 2 * s16,
        "_chunk_scan_chunk_state_bwd_dx": x + 2 * fp32_h + bc + cb + dout + s16 + x + fp32_h,
        "_chunk_state_bwd_db": x + 2 * fp32_h + s16 + bc + 2 * bc + fp32_h,
        "_chunk_scan_bwd_dC": dout + fp32_h + s16 + bc + 2 * bc + fp32_h,
        "_chunk_scan_bwd_dcb": x + dout + 2 * fp32_h + cb,
        "_bmm_chunk_bwd (dB)": bc + cb + 2 * bc + bc,
        "_bmm_chunk_bwd (dC)": bc + cb + 2 * bc + bc,
        "_chunk_scan_bwd_ddAcs_stable": x + dout + 2 * fp32_h + cb + fp32_h,
        "ddA sums, reversed cumsum, _chunk_cumsum_bwd": 13 * fp32_h,
    }
    sh = Shard(md, RECIPES["bf16"], tp=2.0, cp=1.0, mbs=1.0, seq_len=seq)
    backward = next(op for op in mamba.mamba_block_backward(sh, RECIPES["bf16"]) if op.name == "ssd_scan.bwd")
    assert backward.bytes == pytest.approx(sum(kernels.values()) * seq / 2)


def test_model_flops_count_gemms_attention_and_the_scan_by_layer_kind() -> None:
    """6 x the GEMM weights a token goes through (in_proj, out_proj, attention, MLP, LM head), 3 x the causal
    attention of the '*' layers (2 x 2 x s x q_dim / 2 forward) and 3 x the SSD scan of the 'M' layers."""
    md, seq = ZOO["nemotron-h-8b"], 4096
    h, inner = md.hidden, md.mamba_inner
    in_width = 2 * inner + 2 * md.mamba_groups * md.mamba_state + md.mamba_heads
    gemms = {"M": h * in_width + inner * h, "*": h * (md.q_dim + 2 * md.kv_dim) + md.q_dim * h, "-": 2 * h * md.ffn}
    matmul = sum(gemms[c] for c in md.hybrid_pattern) + md.vocab * h
    attention = md.hybrid_pattern.count("*") * 3 * seq * 2 * md.q_dim
    scan = md.hybrid_pattern.count("M") * 3 * md.ssd_flops_per_token(seq)
    assert md.model_flops_per_token(seq) == pytest.approx(6 * matmul + attention + scan)


def test_a_hybrid_mean_layer_keeps_each_kinds_activations_by_its_share() -> None:
    md, recipe = ZOO["nemotron-h-8b"], RECIPES["bf16"]
    sh = Shard(md, recipe, tp=1.0, cp=1.0, mbs=1.0, seq_len=4096)
    tokens = 4096
    h, inner = md.hidden, md.mamba_inner
    in_width = 2 * inner + 2 * md.mamba_groups * md.mamba_state + md.mamba_heads
    mamba_layer = (h + in_width + 2 * inner + h) * 2  # norm input, z x B C dt, y, out_proj input, in_proj input
    attention_layer = (h + md.q_dim + 2 * md.kv_dim + md.q_dim + h) * 2
    mlp_layer = (h + md.ffn + h + md.ffn) * 2
    kinds = hybrid.counts(md.hybrid_pattern)
    mean = (kinds["M"] * mamba_layer + kinds["*"] * attention_layer + kinds["-"] * mlp_layer) / md.layers
    saved = partial(moe.mean_layer_saved, sh, recipe)
    held = memory.held(saved, "none", 10.0)
    assert held == pytest.approx(mean * tokens * 10 * 1.05)  # memory.FRAGMENTATION
    assert memory.held(saved, "full", 10.0) < held / 5


def test_pipeline_stages_of_a_pattern_cost_what_their_kinds_cost() -> None:
    """Megatron gives each stage consecutive pattern positions; a stage of dearer kinds counts for more layers."""
    first, last, interior = hybrid.stage_layer_equivalents("MMMM****", {"M": 1.0, "*": 3.0}, 4)
    assert (first[1], last[1]) == (8.0, 8.0)
    assert (first[2], last[2], interior[2]) == (2.0, 6.0, 6.0)  # mean cost 2: stages of 4 and 12
    assert (first[4], last[4], interior[4]) == (1.0, 3.0, 3.0)
    # interleaved: 2 ranks of 2 chunks of 2 positions each, rank 0 the chunks 0 and 2 (1 + 3), rank 1 the others
    at = hybrid.stage_index(2, 2, 4)
    assert (first[at], last[at], interior[at]) == (4.0, 4.0, 4.0)


def test_a_pipelined_hybrid_prices_its_slowest_stage() -> None:
    """Nemotron 3 Nano's 52 positions on 4 stages of 13: the mix of Mamba, attention and MoE layers differs by
    stage, so the step's stages, FLOP-weighed, are not 13 layers each, and the busiest interior one is dearer."""
    import perfmodel
    from perfmodel.physics import step
    from perfmodel.planning.predict import context_for

    md = ZOO["nemotron-3-nano-30b-a3b"]
    scenario = perfmodel.load_scenario(model=md.id, gpu="gb300", n_gpus=64, precision="mxfp8", seq_len=8192)
    stages = step._stages(context_for(scenario), 4.0, 1.0)
    assert stages.first < md.layers / 4 < stages.interior
    assert stages.first + stages.last < md.layers / 2 < 2 * stages.interior
    weights = md.hybrid_kind_flops_per_token(8192)
    mean = sum(weights[c] for c in md.hybrid_pattern) / md.layers
    assert stages.first == pytest.approx(sum(weights[c] for c in md.hybrid_pattern[:13]) / mean)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"hybrid_pattern": "M-X" + "M-" * 25}, "hybrid_pattern"),
        ({"hybrid_pattern": "M-" * 25}, "hybrid_pattern"),
        ({"mamba_heads": 0}, "mamba_heads"),
        ({"mamba_groups": 3}, "mamba_groups"),
        ({"hybrid_pattern": "ME" * 26}, "experts"),
        ({"mtp_layers": 1}, "mtp_pattern"),  # a hybrid model's MTP module is a pattern (test_hybrid_mtp.py)
        ({"parallel_block": True}, "parallel_block"),  # issue 32's other block features: priced on models
        ({"layer_norms": 4}, "layer_norms"),  # without a pattern only
    ],
)
def test_a_hybrid_model_the_physics_cannot_price_is_refused_by_field(change: dict[str, object], field: str) -> None:
    shapes = {f: getattr(ZOO["nemotron-h-8b"], f) for f in ("layers", "hidden", "ffn", "heads", "kv_heads", "vocab")}
    shapes |= {"hybrid_pattern": ZOO["nemotron-h-8b"].hybrid_pattern, "mamba_heads": 128, "mlp": "squared_relu"}
    with pytest.raises(FieldError) as caught:
        ModelSpec(**(shapes | change))  # type: ignore[arg-type]
    assert caught.value.field == field


def test_layouts_megatron_cannot_run_on_a_hybrid_are_refused_in_one_line() -> None:
    import perfmodel

    base = {"gpu": "h100-sxm", "n_gpus": 64, "precision": "bf16", "gbs": 64, "mbs": 1}
    cases = (
        ({"model": "nemotron-h-8b", "tp": 1, "pp": 4, "vp": 2, "cp": 1}, "without interleaving"),
        ({"model": {"base": "nemotron-h-8b", "mamba_heads": 24}, "tp": 2, "pp": 1, "cp": 8}, "Mamba heads"),
    )
    for layout, words in cases:
        with pytest.raises(perfmodel.PerfmodelError) as caught:
            perfmodel.predict(**base, **layout)
        assert words in str(caught.value) and "\n" not in str(caught.value)


def test_context_parallel_on_a_hybrid_prices_the_mamba_all_to_alls() -> None:
    import perfmodel

    base = {"model": "nemotron-h-8b", "gpu": "h100-sxm", "n_gpus": 16, "precision": "bf16", "gbs": 32, "mbs": 1}
    one = perfmodel.predict(**base, tp=2, pp=1, cp=1, seq_len=32768).to_dict()["breakdown"]
    two = perfmodel.predict(**base, tp=2, pp=1, cp=2, seq_len=32768).to_dict()["breakdown"]
    assert one["cp_comm_exposed_s"] == 0
    assert two["cp_comm_exposed_s"] > 0
    # the Mamba layers' all-to-alls are exposed whole: at least their share of the step's exchange
    from perfmodel.inputs.models import ZOO as zoo
    from perfmodel.physics import step
    from perfmodel.planning.predict import context_for

    md = zoo["nemotron-h-8b"]
    ctx = context_for(perfmodel.load_scenario(**base, tp=2, pp=1, cp=2, seq_len=32768))
    sh = ctx.shard(2.0, 2.0, 1.0)
    comm = step._context_parallel(ctx, sh, step._links(ctx, 2.0, 2.0), 0.0)
    a2a = (
        md.hybrid_pattern.count("M")
        / md.layers
        * step.all_to_all(mamba.context_parallel_bytes(sh), step._links(ctx, 2.0, 2.0))
    )
    assert comm.exposed_forward == pytest.approx(a2a) and comm.exposed_layer == pytest.approx(2 * a2a)
    microbatches = 32 / (16 / (2 * 2))  # GBS over DP 4
    assert two["cp_comm_exposed_s"] >= microbatches * md.layers * 2 * a2a * 0.999  # forward and backward


def test_a_bad_pattern_in_a_model_file_is_one_line_with_exit_code_2(tmp_path: Path) -> None:
    model = tmp_path / "hybrid.toml"
    model.write_text('base = "nemotron-h-8b"\nhybrid_pattern = "M-M-Q"\n')
    result = run_cli("predict", "--model", str(model), "--gpu", "h100-sxm", "--gpus", "8")
    assert (result.code, result.out) == (2, "")
    assert result.err.count("\n") == 1 and "hybrid_pattern" in result.err and "'Q'" in result.err


def test_nemotron_keeps_its_first_and_last_layer_in_bf16_under_fp8() -> None:
    """NemotronHModelProvider sets first_last_layers_bf16 (megatron-bridge 0.3.1), one layer at each end by
    TransformerConfig's defaults: 2 of Nemotron 3 Nano's 52 layers run at BF16 speed in an FP8 recipe."""
    import perfmodel
    from perfmodel.physics import step
    from perfmodel.physics.compute import Rates
    from perfmodel.planning.predict import context_for

    md = ZOO["nemotron-3-nano-30b-a3b"]
    assert md.bf16_edge_layers == 1
    ctx = context_for(perfmodel.load_scenario(model=md.id, gpu="h100-sxm", n_gpus=8, precision="fp8", seq_len=8192))
    sh, rates = ctx.shard(1.0, 1.0, 1.0, 8.0, 1.0), Rates(ctx.hardware.accelerator, ctx.efficiency)
    quantised = step._layer_times(ctx, sh, ctx.recipe, rates)
    bf16 = step._layer_times(ctx, sh, RECIPES["bf16"], rates)
    mixed = step._mixed_layer_times(ctx, sh, rates)
    assert mixed.forward == pytest.approx(50 / 52 * quantised.forward + 2 / 52 * bf16.forward)
    assert bf16.forward > quantised.forward


def test_the_ssd_scan_moves_its_bytes_no_faster_than_measured_kernels() -> None:
    """No fitted row runs the scan, so its bytes move at the fitted HBM share only up to what well-written kernels are
    measured to reach on the family (efficiency.KERNEL_MEMORY: cuDNN's RMSNorm at 0.758 of GB300's datasheet), not at
    the 1.13 the fit gives Blackwell Ultra; a fitted share below the measured one prices it as it does the rest."""
    from dataclasses import replace

    from perfmodel.inputs.hardware import resolve
    from perfmodel.physics.compute import op_time
    from perfmodel.physics.efficiency import DEFAULTS, KERNEL_MEMORY

    acc = resolve("gb300").accelerator
    sh = Shard(ZOO["nemotron-3-nano-30b-a3b"], RECIPES["bf16"], tp=1.0, cp=1.0, mbs=4.0, seq_len=8192)
    scan = next(op for op in mamba.mamba_block_forward(sh, RECIPES["bf16"]) if op.name == "ssd_scan")
    bytes_only = scan._replace(flops=0.0)
    for fitted, share in ((1.13, KERNEL_MEMORY["blackwell-ultra"]), (0.5, 0.5)):
        eff = replace(DEFAULTS["blackwell-ultra"], memory=fitted)
        overhead_s = eff.kernel_overhead_us * 1e-6
        assert op_time(bytes_only, acc, eff) == pytest.approx(scan.bytes / (acc.hbm_bytes_per_s * share) + overhead_s)
