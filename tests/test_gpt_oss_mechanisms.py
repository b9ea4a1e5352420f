"""GPT-OSS's own costs, each from its source (../shared/data/gpt_oss_blackwell_notes.md): YaRN's rotary embedding run
eagerly by Megatron-Core from NeMo 26.02, and the experts' bias gradients."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import run_cli

from perfmodel.inputs.hardware import get_accelerator
from perfmodel.inputs.models import get_model
from perfmodel.inputs.precision import RECIPES
from perfmodel.physics.compute import grouped_efficiency, op_time
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
    assert _op(ops, "expert_fc2.dbias").bytes == pytest.approx(rows * 2880 * 2 * 6)  # the eager loop (below)
    assert _op(ops, "expert_fc1.dbias").bytes == pytest.approx(rows * 2 * 2880 * 2)
    assert not [op for op in moe_block_backward(_shard("qwen3-30b-a3b"), RECIPES["mxfp8"]) if "dbias" in op.name]


def test_the_fp8_mx_recipes_run_the_lm_head_in_mxfp8() -> None:
    """Megatron-Bridge perf_recipes/gpt_oss/common.py L28 (snapshot 067f987df), _apply_gpt_oss_120b_full_iter_fp8mx_
    configs: fp8_output_proj = True, the LM head in MXFP8 (Megatron-Core 0.18 is_mxfp8_output_proj_active); the
    bundled GB300/GB200 FP8-MX rows run it (fitting.recipes). Its GEMMs then run at the FP8 rate with their casts,
    where every other recipe keeps the head in BF16; a BF16 run of the same model has nothing to quantise."""
    from perfmodel.inputs.precision import bridge_recipe
    from perfmodel.physics.workload import head_backward, head_forward

    md = get_model("gpt-oss-120b")
    for recipe, fmt in (
        (bridge_recipe(RECIPES["mxfp8"], fp8_output_proj=True), "fp8"),
        (RECIPES["mxfp8"], "bf16"),
        (bridge_recipe(RECIPES["bf16"], fp8_output_proj=True), "bf16"),
    ):
        sh = Shard(md, recipe, 1, 1, 4, 4096, ep=16)
        ops = head_forward(sh) + head_backward(sh)
        gemms = [op for op in ops if op.kind == "gemm"]
        assert [op.name for op in gemms] == ["lm_head.fprop", "lm_head.dgrad", "lm_head.wgrad"]
        assert {op.fmt for op in gemms} == {fmt}
        assert any(op.name == "lm_head.cast" for op in ops) == (fmt == "fp8")


def test_the_fused_grouped_mlp_pads_every_grouped_gemm_to_256_wide_tiles() -> None:
    """cudnn-frontend grouped_gemm_glu/api.py L124, L506-507 and grouped_gemm_dglu/api.py L130, L541-542 fix the MMA
    n tile at 256 (m at 128 or 256): GPT-OSS-120B's fc2 output width 2,880 pads to 12 tiles, 3,072 columns, where
    128-wide tiles need 23, 2,944 columns. At EP16 a rank's 8 local experts take its 16,384 x 4 routed copies,
    8,192 rows each, so the useful share is the n padding times the last wave's fill over the 152 SMs of a GB300,
    best with 128-row tiles: 8 x 64 x 12 = 6,144 tiles in 41 waves of 152 (6,232 slots; 256-row tiles: 3,072 tiles
    in 21 waves, 3,192 slots)."""
    from perfmodel.inputs.precision import bridge_recipe
    from perfmodel.physics.moe import moe_block_forward

    recipe = bridge_recipe(RECIPES["mxfp8"], fused_grouped_mlp=True)
    fused = Shard(get_model("gpt-oss-120b"), recipe, 1, 1, 4, 4096, ep=16)
    fc2 = _op(moe_block_forward(fused, recipe), "expert_fc2.fprop")
    plain = _op(moe_block_forward(_shard("gpt-oss-120b"), RECIPES["mxfp8"]), "expert_fc2.fprop")
    assert (fc2.tile_n, plain.tile_n, fc2.n, fc2.m) == (256, 0, 2880, 8192)
    gb300 = get_accelerator("gb300")
    assert gb300.sms.value == 152
    assert float(grouped_efficiency(fc2.m, fc2.n, fc2.groups, 152, fc2.tile_n)) == pytest.approx(
        2880 / 3072 * 6144 / (41 * 152)
    )
    assert op_time(fc2, gb300, DEFAULTS["blackwell-ultra"]) > op_time(plain, gb300, DEFAULTS["blackwell-ultra"])
    bf16 = bridge_recipe(RECIPES["bf16"], fused_grouped_mlp=True)  # cuDNN's fused MLP is MXFP8 alone
    assert bf16 is RECIPES["bf16"]
    assert _op(moe_block_forward(fused._replace(recipe=bf16), bf16), "expert_fc2.fprop").tile_n == 0


def test_the_eager_expert_bias_loop_outside_the_fused_mlp() -> None:
    """Megatron-Core's experts.py _apply_bias (core_v0.17.0 L251-267, core_v0.18.0 L296-313) adds each expert's fc2
    bias times its router probability in an eager loop, torch.cat([t + b * p, ...]): 6 passes over the routed rows x
    hidden forward, 6 backward where the fused MLP's scaled-bias pass makes 2 (TransformerEngine grouped_mlp.py
    L1893-1950). GPT-OSS-120B's 65,536 routed rows x 2,880 in BF16 are 377 MB a pass: 4.5 GB for the loop's 12, the
    notes' figure (../shared/data/gpt_oss_blackwell_notes.md 2.7). Qwen3's experts have no bias."""
    from perfmodel.inputs.precision import bridge_recipe
    from perfmodel.physics.moe import moe_block_forward

    pass_bytes = TOKENS * 4 * 2880 * 2
    eager = _shard("gpt-oss-120b")
    recipe = RECIPES["mxfp8"]
    fused_recipe = bridge_recipe(recipe, fused_grouped_mlp=True)
    fused = eager._replace(recipe=fused_recipe)
    assert _op(moe_block_forward(eager, recipe), "expert_fc2.bias").bytes == pytest.approx(6 * pass_bytes)
    assert _op(moe_block_backward(eager, recipe), "expert_fc2.dbias").bytes == pytest.approx(6 * pass_bytes)
    assert (6 + 6) * pass_bytes / 1e9 == pytest.approx(4.5, abs=0.05)
    assert not [op for op in moe_block_forward(fused, fused_recipe) if op.name == "expert_fc2.bias"]
    assert _op(moe_block_backward(fused, fused_recipe), "expert_fc2.dbias").bytes == pytest.approx(2 * pass_bytes)
    qwen = moe_block_forward(_shard("qwen3-30b-a3b"), recipe)
    assert not [op for op in qwen if "bias" in op.name]


def test_fp8_attention_runs_in_the_recipes_format() -> None:
    """Megatron-Bridge's fp8_dot_product_attention (gpt_oss/common.py L44, qwen/common.py L55): TransformerEngine 2.16
    runs MXFP8 attention under the MXFP8 recipe on sm100 (../shared/data/gpt_oss_blackwell_notes.md 2.1), per-tensor
    FP8 under FP8; a BF16 run has nothing to quantise, and a run without the setting keeps BF16 attention."""
    from perfmodel.inputs.precision import bridge_recipe

    assert bridge_recipe(RECIPES["mxfp8"], True).attention_format == "mxfp8"
    assert bridge_recipe(RECIPES["fp8"], True).attention_format == "fp8"
    assert bridge_recipe(RECIPES["bf16"], True) is RECIPES["bf16"]
    assert bridge_recipe(RECIPES["mxfp8"], False) is RECIPES["mxfp8"]
    assert bridge_recipe(RECIPES["mxfp8"], True) is bridge_recipe(RECIPES["mxfp8"], True)  # shared


def test_gpt_oss_mxfp8_attention_backward_against_cudnn() -> None:
    """cudnn-frontend benchmark/sdpa_benchmark_training/results/gpt_oss/gb300/gpt_oss_20260424_100022.csv line 36 and
    gb200/gpt_oss_20260424_100011.csv (perfmodel/data/kernels_attention.csv): GPT-OSS's preset (batch 2 x 128 heads,
    d 64: one 16,384-token micro-batch's 64 query heads x 4) at 4,096 tokens, MXFP8 backward 1,871 us on GB300 and
    2,080 us on GB200, a full causal backward (the driver drops the window: kernels.BAND_DROPPED). The recipe's
    full-attention layers (half of them: `attention.bwd` is their mean over the layers) price within 10% of it, and
    slower than the BF16 backward they were priced at before fp8_attention; the forward runs faster."""
    from perfmodel.inputs.scenario import checked_scenario
    from perfmodel.planning.predict import context_for

    for gpu, measured_us in (("gb300", 1871), ("gb200", 2080)):
        parallelism = {"seq_len": 4096, "gbs": 1280, "mbs": 4, "ep": 16}
        ctx = context_for(checked_scenario({"model": "gpt-oss-120b", "gpu": gpu, "n_gpus": 64, "precision": "mxfp8",
                                            "parallelism": parallelism, "fp8_attention": True,
                                            "fused_grouped_mlp": True}))  # fmt: skip
        assert ctx.recipe.attention_format == "mxfp8"
        acc, eff = ctx.hardware.accelerator, ctx.efficiency
        sh = Shard(ctx.model, ctx.recipe, 1, 1, 4, 4096, ep=16)
        bwd = _op(attention_block_backward(sh, ctx.recipe), "attention.bwd")
        fwd = _op(attention_block_forward(sh, ctx.recipe), "attention")
        full_layer_us = 2 * float(op_time(bwd, acc, eff)) * 1e6
        assert full_layer_us == pytest.approx(measured_us, rel=0.10), gpu
        assert op_time(bwd, acc, eff) > op_time(bwd._replace(fmt="bf16"), acc, eff)
        assert op_time(fwd, acc, eff) < op_time(fwd._replace(fmt="bf16"), acc, eff)


def test_a_masked_fp8_window_backward_costs_the_causal_one() -> None:
    """../shared/data/gpt_oss_blackwell_notes.md 2.3: whether cuDNN's FP8/MXFP8 backward skips a window's out-of-band
    tiles or only masks the band (TransformerEngine 2.16 fused_attn_fp8.cu L806-811 passes the band; cudnn-frontend's
    benchmark drops it from those runs, so no measurement tells). `fp8_attention_band = "masked"` prices the second:
    each window layer's backward is a full causal backward, which cuDNN measures at 1,871 us on GB300 and 2,080 us on
    GB200 (gpt_oss_20260424_100022.csv, gpt_oss_20260424_100011.csv; GPT-OSS's 16,384-token micro-batch): the
    window's backward then costs what the full layers' does, within 10% of those, its forward keeps the band, and
    'skipped' (the default) or a BF16 attention are untouched by the key."""
    from perfmodel.inputs.scenario import checked_scenario
    from perfmodel.planning.predict import context_for

    def layer_us(gpu: str, band: str, fp8_attention: bool = True) -> dict[str, float]:
        parallelism = {"seq_len": 4096, "gbs": 1280, "mbs": 4, "ep": 16}
        ctx = context_for(checked_scenario({"model": "gpt-oss-120b", "gpu": gpu, "n_gpus": 64, "precision": "mxfp8",
                                            "parallelism": parallelism, "fp8_attention": fp8_attention,
                                            "fp8_attention_band": band}))  # fmt: skip
        sh = Shard(ctx.model, ctx.recipe, 1, 1, 4, 4096, ep=16)
        ops = attention_block_forward(sh, ctx.recipe) + attention_block_backward(sh, ctx.recipe)
        acc, eff = ctx.hardware.accelerator, ctx.efficiency
        return {op.name: 2e6 * float(op_time(op, acc, eff)) for op in ops if op.name.startswith("attention")}

    for gpu, measured_us in (("gb300", 1871), ("gb200", 2080)):
        skipped, masked = layer_us(gpu, "skipped"), layer_us(gpu, "masked")
        assert masked["attention.window.bwd"] == pytest.approx(masked["attention.bwd"], rel=1e-9)
        assert masked["attention.window.bwd"] == pytest.approx(measured_us, rel=0.10), gpu
        assert skipped["attention.window.bwd"] < measured_us / 3
        assert masked["attention.window"] == skipped["attention.window"]
        assert {name: t for name, t in masked.items() if name != "attention.window.bwd"} == {
            name: t for name, t in skipped.items() if name != "attention.window.bwd"
        }


def test_a_recipe_with_the_op_fuser_off_keeps_the_per_expert_loop() -> None:
    """megatron-bridge 0.6.2 perf_recipes/_common.py _benchmark_common L65-66 turns use_transformer_engine_op_fuser
    off, and gpt_oss/b300/gpt_oss.py gpt_oss_120b_pretrain_64gpu_b300_fp8mx_config neither turns it back on nor sets
    NVTE_CUTEDSL_FUSED_GROUPED_MLP: its experts run Megatron-Core's TEGroupedMLP, the path of the releases before the
    grouped kernel, so each grouped GEMM pays the fitted cost per local expert (moe_legacy_group_s) at NeMo 26.06 as
    Hopper's rows do; the same recipe's GB300 sibling, with the fused grouped MLP, pays none. Closed form: the loop adds
    exactly local experts x moe_legacy_group_s to each grouped GEMM, and nothing elsewhere."""
    from perfmodel.inputs.scenario import checked_scenario
    from perfmodel.planning.predict import context_for

    def grouped_times(gpu: str, precision: str = "mxfp8", **settings: bool) -> tuple[dict[str, float], float]:
        parallelism = {"seq_len": 4096, "gbs": 1280, "mbs": 4, "ep": 8}
        scenario = {"model": "gpt-oss-120b", "gpu": gpu, "n_gpus": 64, "precision": precision}
        ctx = context_for(checked_scenario(scenario | {"parallelism": parallelism} | settings))
        sh = Shard(ctx.model, ctx.recipe, 1, 1, 4, 4096, ep=8)
        ops = moe_block_backward(sh, ctx.recipe)
        acc, eff = ctx.hardware.accelerator, ctx.efficiency
        return {op.name: float(op_time(op, acc, eff)) for op in ops}, float(eff.moe_legacy_group_s)

    looped, per_expert_s = grouped_times("b300", expert_loop=True)
    plain, _ = grouped_times("b300")
    assert per_expert_s > 0
    for name, seconds in looped.items():
        extra = 16 * per_expert_s if name.endswith(("dgrad", "wgrad")) and name.startswith("expert_") else 0.0
        assert seconds == pytest.approx(plain[name] + extra, rel=1e-9, abs=1e-12), name
    hopper_looped, _ = grouped_times("h100-sxm", "bf16", expert_loop=True)
    assert hopper_looped == grouped_times("h100-sxm", "bf16")[0]  # Hopper loops over its experts in every release


def test_the_regressed_dgeglu_dbias_kernel_costs_its_measured_slowdown() -> None:
    """cudnn-frontend PR #322 (2026-06-23, 'dbias reduction DSL 4.5 regression'): the fused grouped MLP's dGeGLU +
    dbias kernel took 1,362.8 us with generate_dbias in cudnn-frontend 1.24-1.25 (issue #256) against 155.6 us fixed
    at the same shape. With `dglu_dbias_regression` that kernel, the experts' fc2 data gradient of a model whose
    experts have biases (GPT-OSS), costs 1,362.8 / 155.6 times its fixed roofline time and nothing else moves; Qwen3's
    experts (no bias) run the kernel without dbias and a run without the fused grouped MLP never runs it."""
    from perfmodel.inputs.scenario import checked_scenario
    from perfmodel.physics.moe import DGLU_DBIAS_REGRESSION
    from perfmodel.planning.predict import context_for

    def backward_s(model: str, **settings: bool) -> dict[str, float]:
        parallelism = {"seq_len": 4096, "gbs": 1280, "mbs": 4, "ep": 16}
        scenario = {"model": model, "gpu": "gb300", "n_gpus": 64, "precision": "mxfp8", "parallelism": parallelism}
        ctx = context_for(checked_scenario(scenario | {"fused_grouped_mlp": True} | settings))
        sh = Shard(ctx.model, ctx.recipe, 1, 1, 4, 4096, ep=16)
        acc, eff = ctx.hardware.accelerator, ctx.efficiency
        times = {op.name: float(op_time(op, acc, eff)) for op in moe_block_backward(sh, ctx.recipe)}
        return times | {"kappa": eff.kernel_overhead_us * 1e-6}

    fixed, regressed = backward_s("gpt-oss-120b"), backward_s("gpt-oss-120b", dglu_dbias_regression=True)
    kappa_s = regressed.pop("kappa")
    assert DGLU_DBIAS_REGRESSION == 1362.8 / 155.6
    for name, seconds in regressed.items():
        slowdown = DGLU_DBIAS_REGRESSION if name == "expert_fc2.dgrad" else 1.0
        assert seconds - kappa_s == pytest.approx((fixed[name] - kappa_s) * slowdown, rel=1e-9), name
    assert regressed["expert_fc2.dgrad"] - fixed["expert_fc2.dgrad"] > 2e-3  # ms per layer: notes 2.6 size ~2.8
    assert backward_s("qwen3-30b-a3b", dglu_dbias_regression=True) == backward_s("qwen3-30b-a3b")


@pytest.mark.parametrize(
    ("key", "needed", "message"),
    [
        ('fp8_attention_band = "masked"', "fp8_attention = true", "fp8_attention_band 'masked' needs fp8_attention"),
        ("dglu_dbias_regression = true", "fused_grouped_mlp = true", "dglu_dbias_regression needs fused_grouped_mlp"),
    ],
)
def test_a_setting_without_what_it_prices_is_refused(tmp_path: Path, key: str, needed: str, message: str) -> None:
    """`fp8_attention_band = "masked"` prices FP8 attention's backward only, `dglu_dbias_regression` the fused grouped
    MLP's kernel only: without `fp8_attention` or `fused_grouped_mlp` either would price nothing and say nothing, so the
    file is refused in one line naming the field, exit 2."""
    path = tmp_path / "scenario.toml"
    path.write_text(f'model = "gpt-oss-120b"\ngpu = "gb300"\nn_gpus = 64\nprecision = "mxfp8"\n{key}\n')
    result = run_cli("predict", str(path))
    assert result.code == 2 and not result.out
    assert result.err.count("\n") == 1 and message in result.err
    path.write_text(path.read_text() + needed + "\n")
    assert run_cli("predict", str(path)).code == 0


def test_explain_shows_the_regressed_kernel_and_its_bound(tmp_path: Path) -> None:
    """`perfmodel explain` writes the regressed kernel's formula with its slowdown as a symbol (s_regressed, 1,362.8 /
    155.6 from cudnn-frontend PR #322) and keeps its bound: GPT-OSS-120B's fc2 data gradient at EP16 on GB300 is
    compute-bound (1,087 GFLOP over 641 MB), slowed or not."""
    path = tmp_path / "regressed.toml"
    settings = "fused_grouped_mlp = true\ndglu_dbias_regression = true\n"
    layout = "[parallelism]\nseq_len = 4096\nmbs = 4\ngbs = 1280\nep = 16\n"
    path.write_text(f'model = "gpt-oss-120b"\ngpu = "gb300"\nn_gpus = 64\nprecision = "mxfp8"\n{settings}{layout}')
    out = run_cli("explain", str(path)).out
    assert "grouped GEMM in FP8, regressed  t = kappa + s_regressed*Max(" in out
    assert "s_regressed = 8.758" in out
    row = next(line.split() for line in out.splitlines() if line.startswith("MoE backward  expert_fc2.dgrad"))
    assert row[-1] == "compute"


def _measured_all_to_all_s(system: str, ranks: int, size_bytes: float) -> float:
    """A measured all-to-all of `size_bytes` per rank, geometric between the two bundled rows that bracket it."""
    from perfmodel.inputs.kernels import collective_kernels

    rows = [r for r in collective_kernels() if (r.op, r.system, r.ranks) == ("all_to_all", system, ranks)]
    low = max((r for r in rows if r.message_bytes <= size_bytes), key=lambda r: r.message_bytes)
    high = min((r for r in rows if r.message_bytes >= size_bytes), key=lambda r: r.message_bytes)
    share = math.log(size_bytes / low.message_bytes) / math.log(high.message_bytes / low.message_bytes)
    return low.time_s ** (1 - share) * high.time_s**share


def test_the_nvl72_expert_exchange_is_priced_no_faster_than_nccl_measures_it() -> None:
    """Issue 27: is the newest rows' missing ~3 ms per layer and micro-batch an underpriced EP exchange? NeMo 26.08's
    GPT-OSS-120B rows (measured_runs.csv:6 GB300 at EP16, :7 GB200 at EP64; the flex dispatcher inside one NVL72
    domain) send each rank's 16,384 tokens x top-4 x 2,880 x 2 B, 377 MB, per dispatch or combine. XLA's NCCL
    all-to-all tables (ROCm/xla@dc6603221683 default_collective_perf_table.txtpb, in kernels_collectives.csv)
    measure 268 and 537 MB per rank at 427.1 and 809.1 us on GB300 over 16 ranks (lines 57661, 57681) and 473.8 and
    868.5 us on GB200 over 64 (lines 18331, 18351): at 377 MB about 585 and 638 us. The model's exchange of those
    rows is 6% (GB300) and 12% (GB200) slower than that, so it is not where the missing time lies."""
    from perfmodel.fitting import validation
    from perfmodel.fitting.runs import bundled_runs
    from perfmodel.physics import calibration, moe
    from perfmodel.physics.collectives import group_links

    runs = {run.id: run for run in bundled_runs()[0]}
    cases = (("measured_runs.csv:6", "gb300-nvl72", 1.06), ("measured_runs.csv:7", "gb200-nvl72", 1.12))
    for row, system, ratio in cases:
        prepared = validation.prepare(runs[row], calibration.resolve(None))
        ctx, layout = prepared.context, prepared.layout
        md = ctx.model
        assert (md.hidden, md.top_k, md.dispatcher, ctx.hardware.system.id) == (2880, 4, "flex", system)
        ep = float(layout.ep)
        links = group_links(ctx.tiers, ctx.efficiency, ep, 1.0)
        assert float(links.domains) == 1
        sh = ctx.shard(1.0, 1.0, float(layout.mbs), ep, 1.0)
        size_bytes = sh.tokens * md.hidden * 2 * md.top_k
        assert size_bytes / 1e6 == pytest.approx(377.5, abs=0.1)
        forward, _ = moe.expert_comm(sh, links, group_links(ctx.tiers, ctx.efficiency, 1.0, 1.0), 0.0)
        measured = _measured_all_to_all_s(system, int(ep), size_bytes)
        assert float(forward) / 2 / measured == pytest.approx(ratio, abs=0.02), row


def test_the_clamped_glu_clamps_eagerly_outside_the_fused_grouped_mlp() -> None:
    """Megatron-Bridge 0.6.2 gpt_oss_bridge.py L73 and L83: bias_activation_fusion on, activation_func_clamp_value 7.0.
    TEGroupedMLP then calls fused_bias_geglu.weighted_bias_quick_geglu_impl (experts.py core_v0.17.0 L292-299), whose
    clamp runs eagerly before the fused weighted GeGLU (core_v0.15.0 to core_v0.18.0 L424-432: chunk, two clamps, cat):
    16 bytes per element of the activation's output forward (8 BF16 passes), 30 backward (PyTorch's clamp_backward
    masks in BOOL, and the chunk's gradients concatenated), the forward again in moe_act's recompute. At EP16 a rank
    has 16,384 x 4 routed rows of 2,880: 3.0 GB forward, 5.7 GB backward. The fused grouped MLP (cuDNN's clamped
    GeGLU) and an unclamped model (Qwen3) pay none."""
    from perfmodel.inputs.precision import bridge_recipe
    from perfmodel.physics.moe import moe_block_forward
    from perfmodel.physics.workload import SELECTIVE_RECOMPUTE

    sh, recipe = _shard("gpt-oss-120b"), RECIPES["mxfp8"]
    fwd = _op(moe_block_forward(sh, recipe), "activation.clamp")
    bwd = _op(moe_block_backward(sh, recipe), "activation.clamp.bwd")
    elements = TOKENS * 4 * 2880
    assert (fwd.bytes, bwd.bytes) == pytest.approx((16 * elements, (8 + 14 + 8) * elements))
    assert (fwd.bytes / 1e9, bwd.bytes / 1e9) == pytest.approx((3.0, 5.7), abs=0.05)
    assert "activation.clamp" in SELECTIVE_RECOMPUTE
    fused = bridge_recipe(recipe, fused_grouped_mlp=True)
    qwen = _shard("qwen3-30b-a3b")
    for shard, run in ((sh._replace(recipe=fused), fused), (qwen, recipe)):
        ops = moe_block_forward(shard, run) + moe_block_backward(shard, run)
        assert not [op for op in ops if "clamp" in op.name]


def test_the_eager_clamp_keeps_its_concatenation_for_backward_without_recompute() -> None:
    """Without recompute, autograd keeps the eager clamp's concatenation of the clamped halves (core_v0.15.0 to
    core_v0.18.0 L424-432), the fused weighted GeGLU's input, beside fc1's output: at EP16 a rank's 16,384 x 4 routed
    rows x 5,760 in BF16, 0.75 GB more per MoE layer. moe_act's recompute re-runs the clamp and keeps only fc1's
    output; the fused grouped MLP clamps inside its kernel; an unclamped model keeps neither."""
    from perfmodel.inputs.precision import bridge_recipe
    from perfmodel.inputs.record import replaced
    from perfmodel.physics.moe import _block_saved

    sh, recipe = _shard("gpt-oss-120b"), RECIPES["mxfp8"]
    unclamped = sh._replace(model=replaced(sh.model, expert_glu_clamp=False))

    def extra_bytes(mode: str, run: object = recipe) -> float:
        return float(_block_saved(sh, run, mode) - _block_saved(unclamped, run, mode))  # type: ignore[arg-type]

    assert extra_bytes("none") == pytest.approx(TOKENS * 4 * 2 * 2880 * 2)
    assert extra_bytes("none") / 1e9 == pytest.approx(0.75, abs=0.01)
    assert extra_bytes("selective") == 0
    assert extra_bytes("none", bridge_recipe(recipe, fused_grouped_mlp=True)) == 0
