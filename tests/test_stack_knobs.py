"""A stack's knobs (inputs/stacks.py stack_knobs): torchtitan's async TP, torch.compile and torchao FP8 recipe, each
at the stack's shipped default, what each changes counted by hand, and the refusals where a stack has no such knob."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import inputs_of, run_cli

import perfmodel
from perfmodel.errors import PerfmodelError
from perfmodel.fitting.runs import read_runs_csv
from perfmodel.inputs.precision import BF16_BYTES, get_recipe
from perfmodel.inputs.stacks import get_stack, stack_knobs, stack_recipe
from perfmodel.physics.collectives import all_gather, reduce_scatter
from perfmodel.physics.compute import Rates, batched, op_times
from perfmodel.physics.memory import activation_bytes_per_token
from perfmodel.physics.step import evaluate, fsdp_copies_s
from perfmodel.physics.workload import (
    EAGER_ROPE_BYTES,
    EAGER_SWIGLU_BYTES,
    Op,
    Shard,
    layer_backward,
    layer_forward,
)
from perfmodel.planning.predict import context_for, layout_vars

TITAN_8B = {
    "model": "llama3.1-8b", "gpu": "h100-grand-teton", "n_gpus": 64, "seq_len": 8192, "tp": 8, "pp": 1, "cp": 1,
    "mbs": 12, "gbs": 96, "zero": 3, "recompute": "selective", "stack": "torchtitan", "calibration": "none",
    "precision": "bf16",
}  # fmt: skip
"""torchtitan's Llama 3.1 8B layout (torchtitan_runs.csv rows 8-13: TP 8, FSDP2 over 8, local batch 12)."""


def _predict(**options: Any) -> perfmodel.Prediction:
    found = perfmodel.predict(**(TITAN_8B | options))
    assert isinstance(found, perfmodel.Prediction)
    return found


def _trace(prediction: perfmodel.Prediction) -> dict[str, Any]:
    trace: dict[str, Any] = {}
    evaluate(context_for(prediction.scenario), layout_vars(prediction.layout), trace)
    return trace


def _gemm_times(ops: list[Op], rates: Rates) -> dict[str, float]:
    """Seconds of the GEMMs by name, summed over the separate linear layers that share one (wq, wk, wv: qkv)."""
    times: dict[str, float] = {}
    for op, seconds in zip(ops, op_times(batched(ops), rates), strict=True):
        if op.kind == "gemm":
            times[op.name] = times.get(op.name, 0.0) + float(seconds)
    return times


def test_vanilla_tp_exposes_what_async_tp_hides_behind_each_collectives_own_gemms() -> None:
    """Vanilla TP (torchtitan's default) hides nothing: each layer's exposed TP time is all of its collectives and
    their layout copies. Async TP decomposes each collective under the GEMMs it feeds or drains, up to their time:
    exposed = c - eta sum min(c_i, g_i) + copies, by hand for Llama 3.1 8B's two TP blocks (QKV/proj, fc1/fc2)
    under per-op selective recompute, whose re-gathered inputs hide under the matmuls it re-runs (wk, w3: 28.8% of
    the forward GEMM FLOPs, priced as that share of the column-parallel fprop). Autograd keeps the gathered input for
    the wgrad (no backward re-gather), and the input gradient's reduce-scatter, a sum of the block's dgrads, is not
    fused (hides behind nothing). Same compute either way."""
    vanilla, overlapped = _predict(async_tp=False), _predict(async_tp=True)
    assert vanilla.scenario.knobs.async_tp is False and overlapped.scenario.knobs.async_tp is True
    t_vanilla, t_async = _trace(vanilla), _trace(overlapped)
    comm, sh, links = t_async["tp_comm"], t_async["shard"], t_async["tp_links"]
    ctx = context_for(overlapped.scenario)
    rates = Rates(ctx.hardware.accelerator, ctx.efficiency)
    ops = [*layer_forward(sh, ctx.recipe), *layer_backward(sh, ctx.recipe)]
    g = _gemm_times(ops, rates)
    activation = sh.tokens * perfmodel.predict(**TITAN_8B).model.hidden * BF16_BYTES
    gather, scatter = float(all_gather(activation, links)), float(reduce_scatter(activation, links))
    assert float(comm.forward) == pytest.approx(2 * (gather + scatter))
    assert float(comm.layer) == pytest.approx(2 * (gather + scatter) * 2 + 2 * gather)  # forward, backward, SAC
    copy_s = activation / (ctx.hardware.accelerator.hbm_bytes_per_s * ctx.efficiency.memory)  # one pass
    # vanilla, per block: each of the 5 collectives' chunk-and-cat reads and writes the activation
    assert float(t_vanilla["tp_comm"].copies_layer) == pytest.approx(2 * 5 * 2 * copy_s)
    assert float(t_vanilla["tp_exposed"]) == pytest.approx(float(comm.layer) + 20 * copy_s)
    # async, per block: 3 fused all-gathers copy 1/8 twice (read and write), the fused reduce-scatter sums 8
    # partials (reads 1, writes 1/8), the unfused input-gradient reduce-scatter chunk-and-cats (2)
    async_copies = 2 * (3 * 4 / 8 + (1 + 1 / 8) + 2) * copy_s
    assert float(comm.copies_layer) == pytest.approx(async_copies)
    hidden = 0.0
    for column, row in (("qkv", "proj"), ("fc1", "fc2")):
        hidden += min(gather, g[f"{column}.fprop"]) + min(scatter, g[f"{row}.fprop"])  # forward
        hidden += min(gather, g[f"{row}.dgrad"])  # the output gradient's all-gather
        hidden += min(gather, 15360 / 53248 * g[f"{column}.fprop"])  # SAC's input again
    eta = ctx.efficiency.overlap_tp
    expected = float(comm.layer) - eta * hidden + async_copies
    assert float(t_async["tp_exposed"]) == pytest.approx(expected, rel=2e-3)
    assert float(t_async["tp_exposed"]) < float(t_vanilla["tp_exposed"])
    assert overlapped.step.compute_s == vanilla.step.compute_s


def test_megatron_tp_has_no_dtensor_copies_and_regathers_its_input() -> None:
    """Megatron's [seq, batch, hidden] layout gathers along the first dimension (no copy), and it re-gathers the
    column-parallel input for the wgrad: one more all-gather per block in the backward than torchtitan's."""
    megatron = _trace(_predict(stack="megatron", precision="bf16"))
    comm = megatron["tp_comm"]
    gather = float(all_gather(megatron["shard"].tokens * 4096 * BF16_BYTES, megatron["tp_links"]))
    scatter = float(reduce_scatter(megatron["shard"].tokens * 4096 * BF16_BYTES, megatron["tp_links"]))
    assert float(comm.copies_layer) == 0.0
    assert float(comm.layer) - float(comm.forward) == pytest.approx(2 * (2 * gather + scatter))


def test_eager_pays_the_rope_and_swiglu_passes_that_compile_fuses() -> None:
    """Without torch.compile, one layer's forward moves 16 more bytes per element of Q and K (EAGER_ROPE_BYTES 20
    against the fused kernel's 4) and 4 more per SwiGLU output (10 against 6)."""
    acc = perfmodel.predict(**TITAN_8B).hardware.accelerator
    stack, recipe = get_stack("torchtitan"), get_recipe("bf16", acc)
    md = perfmodel.predict(**TITAN_8B).model

    def forward_bytes(compile: bool) -> float:
        rec = stack_recipe(recipe, stack, stack_knobs(stack, compile=compile))
        shard = Shard(md, rec, 8, 1, 12, 8192)
        return sum(float(op.bytes) for op in layer_forward(shard, rec) if op.kind == "memory")

    tokens = 12 * 8192
    rope = tokens * (md.q_dim + md.kv_dim) / 8 * (EAGER_ROPE_BYTES - 2 * BF16_BYTES)
    swiglu = tokens * md.ffn / 8 * (EAGER_SWIGLU_BYTES[0] - 3 * BF16_BYTES)
    assert forward_bytes(False) - forward_bytes(True) == pytest.approx(rope + swiglu)
    assert _predict(compile=False).step.compute_s > _predict(compile=True).step.compute_s


def test_rowwise_fp8_gathers_bf16_weights_where_tensorwise_gathers_fp8() -> None:
    """torchao's float8 all-gather of FSDP2 weights is tensorwise-only: rowwise gathers 2 bytes per parameter."""
    acc = perfmodel.predict(**TITAN_8B).hardware.accelerator
    stack, fp8 = get_stack("torchtitan"), get_recipe("fp8", acc)
    tensorwise = stack_recipe(fp8, stack, stack_knobs(stack, fp8_recipe="tensorwise"))
    rowwise = stack_recipe(fp8, stack, stack_knobs(stack, fp8_recipe="rowwise"))
    assert (tensorwise.param_gather_bytes, rowwise.param_gather_bytes) == (1.0, BF16_BYTES)
    assert rowwise.fp8_scaling == "rowwise" and tensorwise.fp8_scaling == "tensorwise"


def _linear_ops(recipe_name: str, name: str) -> dict[str, float]:
    """Bytes of each memory operation of one linear layer of Llama 3.1 8B at TP 8, one sequence of 8,192 tokens, on
    the torchtitan stack with this FP8 recipe: forward and backward."""
    acc = perfmodel.predict(**TITAN_8B).hardware.accelerator
    stack = get_stack("torchtitan")
    rec = stack_recipe(get_recipe("fp8", acc), stack, stack_knobs(stack, fp8_recipe=recipe_name))
    shard = Shard(perfmodel.predict(**TITAN_8B).model, rec, 8, 1, 1, 8192)
    ops = [*layer_forward(shard, rec), *layer_backward(shard, rec)]
    return {op.name: float(op.bytes) for op in ops if op.name.startswith(f"{name}.") and op.kind == "memory"}


def test_rowwise_fp8_casts_each_operand_along_both_axes_from_bf16_gathered_rows() -> None:
    """torchao 0.11.0's rowwise recipe on torchtitan's regular (BF16) TP, by hand for the QKV projection of Llama 3.1
    8B at TP 8 (k = 4,096 in, n = (4,096 + 2 x 1,024) / 8 = 768 out, T = 8,192 tokens): a cast is an amax read
    (2 B), a read (2 B) and one FP8 copy (1 B), 5 B per element, on all T gathered rows; the backward casts the
    weight, the output gradient and the saved input again along the other axis and rescales each GEMM's BF16
    output (a read and a write, 4 B), the dgrads' inside the sum of wq's, wk's and wv's input gradients (three reads
    and a write, 8 B, either recipe). Tensorwise casts T / 8 rows before its FP8 gather, fused into the norm (an
    amax read and two copies: 4 B), transposes the gathered FP8 input for the wgrad (a read and a write, 2 B), and
    casts the gradient once into both copies (6 B); the output projection (row-parallel, k = 512 in, n = 4,096 out)
    casts its gradient on T / 8 rows before the FP8 all-gather and transposes the gathered gradient (2 B)."""
    tokens, k, n = 8192, 4096, 768
    assert _linear_ops("rowwise", "qkv") == pytest.approx(
        {
            "qkv.cast": tokens * k * 5,
            "qkv.weight_cast": k * n * 5,
            "qkv.grad_cast": tokens * n * 5,
            "qkv.weight_recast": k * n * 5,
            "qkv.dgrad_sum": tokens * k * 8,
            "qkv.grad_recast": tokens * n * 5,
            "qkv.input_recast": tokens * k * 5,
            "qkv.wgrad_rescale": k * n * 4,
        }
    )
    assert _linear_ops("tensorwise", "qkv") == pytest.approx(
        {
            "qkv.cast": tokens / 8 * k * 4,
            "qkv.grad_cast": tokens * n * 6,
            "qkv.input_transpose": tokens * k * 2,
            "qkv.dgrad_sum": tokens * k * 8,
        }
    )
    proj_k, proj_n = 512, 4096
    assert _linear_ops("tensorwise", "proj") == pytest.approx(
        {
            "proj.cast": tokens * proj_k * 6,
            "proj.grad_cast": tokens / 8 * proj_n * 6,
            "proj.grad_transpose": tokens * proj_n * 2,
        }
    )


def test_torchtitans_llama_runs_q_k_v_and_gate_up_as_separate_linears() -> None:
    """torchtitan's Llama has wq, wk, wv and w1, w3 as separate nn.Linear modules (torchtitan/models/llama3/model/
    model.py), Megatron-Core one linear_qkv and one linear_fc1: on Llama 3.1 8B at TP 8 (T = 8,192 tokens), QKV's
    fprop, dgrad and wgrad are three GEMMs of 512, 128 and 128 columns, fc1's two of 1,792, the fused ones' FLOPs
    between them; each reads its input, and the backward sums their BF16 input gradients (parts + 1 passes of 2 B)."""
    acc = perfmodel.predict(**TITAN_8B).hardware.accelerator
    model, tokens, hidden = perfmodel.predict(**TITAN_8B).model, 8192, 4096
    layers = {}
    for name in ("torchtitan", "megatron"):
        stack = get_stack(name)
        rec = stack_recipe(get_recipe("bf16", acc), stack, stack_knobs(stack))
        shard = Shard(model, rec, 8, 1, 1, tokens)
        layers[name] = [*layer_forward(shard, rec), *layer_backward(shard, rec)]
    for gemm in ("fprop", "dgrad", "wgrad"):
        qkv, fc1 = ([op for op in layers["torchtitan"] if op.name == f"{linear}.{gemm}"] for linear in ("qkv", "fc1"))
        width = "k" if gemm == "dgrad" else "n"  # workload._gemm's m x n x k: dgrad reduces over the outputs
        assert [getattr(op, width) for op in qkv] == [512, 128, 128]
        assert [getattr(op, width) for op in fc1] == [1792, 1792]
        fused = {op.name: op.flops for op in layers["megatron"] if op.name.endswith(gemm)}
        assert sum(op.flops for op in qkv) == pytest.approx(fused[f"qkv.{gemm}"])
    sums = {op.name: op.bytes for op in layers["torchtitan"] if op.name.endswith(".dgrad_sum")}
    assert sums == pytest.approx({"qkv.dgrad_sum": tokens * hidden * 4 * 2, "fc1.dgrad_sum": tokens * hidden * 3 * 2})
    assert not any(op.name.endswith(".dgrad_sum") for op in layers["megatron"])


def test_rowwise_fp8_keeps_the_bf16_inputs_its_backward_casts_again() -> None:
    """Per token, without recompute, a tensorwise layer keeps the FP8 copies (1 B) of the QKV, fc1 and fc2 inputs and
    of the attention output beside its BF16 one; a rowwise layer keeps the BF16 inputs (2 B), the attention output
    once: h + ffn bytes more (Llama 3.1 8B: 4,096 + 14,336)."""
    acc = perfmodel.predict(**TITAN_8B).hardware.accelerator
    md, stack, fp8 = perfmodel.predict(**TITAN_8B).model, get_stack("torchtitan"), get_recipe("fp8", acc)
    kept = [
        activation_bytes_per_token(md, stack_recipe(fp8, stack, stack_knobs(stack, fp8_recipe=r)), "none")
        for r in ("tensorwise", "rowwise")
    ]
    assert kept[1] - kept[0] == pytest.approx(md.hidden + md.ffn)


def test_rowwise_fp8_gathers_bf16_activations_over_tp() -> None:
    """torchtitan runs its float8 TP (activations and output gradients gathered in FP8) for tensorwise only: rowwise
    gathers BF16, so each layer's exposed TP time (vanilla TP: all of it) grows by the all-gathers' second byte."""
    acc = perfmodel.predict(**TITAN_8B).hardware.accelerator
    stack, fp8 = get_stack("torchtitan"), get_recipe("fp8", acc)
    recipes = [stack_recipe(fp8, stack, stack_knobs(stack, fp8_recipe=r)) for r in ("tensorwise", "rowwise")]
    assert [r.tp_gather_bytes for r in recipes] == [1.0, BF16_BYTES]
    # and the output gradients: Float8RowwiseParallel casts them before the backward's all-gather
    assert [r.tp_grad_gather_bytes for r in recipes] == [1.0, BF16_BYTES]
    tensorwise, rowwise = (_trace(_predict(precision="fp8", fp8_recipe=r)) for r in ("tensorwise", "rowwise"))
    assert float(rowwise["tp_exposed"]) > float(tensorwise["tp_exposed"])


def test_async_tp_cannot_fuse_the_bf16_gathers_rowwise_fp8_casts() -> None:
    """The micro-pipeline pass fuses an all-gather only into a matmul that consumes the gathered tensor
    (micro_pipeline_tp._find_consumer_matmuls; torch 2.7.1 wheel): rowwise FP8 casts its BF16 gathers first, so async
    TP hides only its forward reduce-scatters, each under the row-parallel fprop that produces it, and the
    unfused all-gathers pay vanilla TP's chunk-and-cat. Hand-counted on Llama 3.1 8B's two TP blocks."""
    row = _predict(precision="fp8", fp8_recipe="rowwise", async_tp=True)
    trace = _trace(row)
    comm, sh, links = trace["tp_comm"], trace["shard"], trace["tp_links"]
    ctx = context_for(row.scenario)
    rates = Rates(ctx.hardware.accelerator, ctx.efficiency)
    ops = [*layer_forward(sh, ctx.recipe), *layer_backward(sh, ctx.recipe)]
    g = _gemm_times(ops, rates)
    activation = sh.tokens * row.model.hidden * BF16_BYTES
    scatter = float(reduce_scatter(activation, links))
    hidden = sum(min(scatter, g[f"{linear}.fprop"]) for linear in ("proj", "fc2"))
    copy_s = activation / (ctx.hardware.accelerator.hbm_bytes_per_s * ctx.efficiency.memory)
    # per block: 3 unfused BF16 all-gathers and the input-gradient reduce-scatter chunk-and-cat (2 each), the fused
    # forward reduce-scatter sums 8 partials (1 + 1/8)
    copies = 2 * (3 * 2 + 2 + (1 + 1 / 8)) * copy_s
    assert float(comm.copies_layer) == pytest.approx(copies)
    expected = float(comm.layer) - ctx.efficiency.overlap_tp * hidden + copies
    assert float(trace["tp_exposed"]) == pytest.approx(expected, rel=2e-3)


def test_torchao_pays_the_amax_pass_in_every_release() -> None:
    """torchao's float8 has dynamic scaling alone (a max(abs(x)) before each cast): no bytes of a torchtitan cast
    are an amax pass that a release before Megatron's switch from delayed scaling (efficiency
    .CURRENT_SCALING_RELEASE, 2025-09) skips, where Megatron's are, so a torchtitan row of 2025-06 computes as long
    as today's (the stack has no release trend)."""
    acc = perfmodel.predict(**TITAN_8B).hardware.accelerator
    md, fp8 = perfmodel.predict(**TITAN_8B).model, get_recipe("fp8", acc)

    def amax_bytes(stack_name: str) -> float:
        stack = get_stack(stack_name)
        rec = stack_recipe(fp8, stack, stack_knobs(stack))
        return sum(float(op.amax_bytes) for op in layer_forward(Shard(md, rec, 8, 1, 1, 8192), rec))

    # Megatron's forward casts, 2 B of amax read per element: the QKV and fc1 inputs' T / 8 rows before the FP8
    # gather (h wide), the output projection's and fc2's inputs on all T rows (q_dim / 8 and ffn / 8 wide).
    tokens, h = 8192, md.hidden
    assert amax_bytes("megatron") == pytest.approx(tokens * (2 * h + md.q_dim + md.ffn) / 8 * 2)
    assert amax_bytes("torchtitan") == 0.0
    titan = [_predict(precision="fp8", vintage=v, calibration=None).step.compute_s for v in ("2025-06", "2026-08")]
    assert titan[0] == pytest.approx(titan[1])


def test_each_knob_defaults_to_the_stacks_shipped_setting() -> None:
    """torchtitan's JobConfig: async TP off, compile off, tensorwise FP8; Megatron has none of these knobs."""
    assert _predict(precision="fp8").to_dict()["stack_knobs"] == {"async_tp": False, "compile": False,
                                                                  "fp8_recipe": "tensorwise"}  # fmt: skip
    assert _predict().to_dict()["stack_knobs"]["fp8_recipe"] is None  # BF16: no FP8 recipe
    megatron = perfmodel.predict(model="llama3.1-8b", gpu="h100-sxm", n_gpus=8, calibration="none", tp=1, pp=1)
    assert isinstance(megatron, perfmodel.Prediction)
    assert megatron.to_dict()["stack_knobs"] == {"async_tp": None, "compile": None, "fp8_recipe": None}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--async-tp"], "--async-tp: stack 'megatron' has no such knob; stacks that have it: torchtitan"),
        (["--no-compile", "--stack", "composer"], "--compile: stack 'composer' has no such knob"),
        (["--fp8-recipe", "rowwise", "--stack", "megatron"], "--fp8-recipe: stack 'megatron' has no FP8 recipe"),
        (["--stack", "torchtitan", "--precision", "bf16", "--fp8-recipe", "rowwise"], "it needs --precision fp8"),
    ],
)
def test_a_knob_the_stack_cannot_run_is_a_one_line_error(flags: list[str], message: str) -> None:
    result = run_cli("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", *flags)
    assert result.code == 2 and result.out == ""
    assert message in result.err
    assert "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1


def test_a_scenario_file_names_itself_and_the_key(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text('model = "llama3.1-8b"\nstack = "composer"\nasync_tp = false\n')
    result = run_cli("predict", str(path))
    assert result.code == 2
    assert result.err.strip() == (
        f"error: {path}: field 'async_tp': stack 'composer' has no such knob; stacks that have it: torchtitan "
        "(got False)"
    )


def test_the_api_refuses_too() -> None:
    with pytest.raises(PerfmodelError, match="stack 'megatron' has no such knob"):
        perfmodel.predict(model="llama3.1-8b", gpu="h100-sxm", n_gpus=8, async_tp=True)


def test_explain_names_the_stack_mechanism_behind_the_tp_term() -> None:
    vanilla = run_cli("explain", "--model", "llama3.1-8b", "--gpu", "h100-grand-teton", "--gpus", "64", "--tp", "8",
                      "--pp", "1", "--cp", "1", "--mbs", "12", "--gbs", "96", "--zero", "3", "--stack", "torchtitan",
                      "--precision", "bf16", "--recompute", "selective")  # fmt: skip
    assert vanilla.code == 0, vanilla.err
    assert "torchtitan's vanilla TP (--no-async-tp)" in vanilla.out
    assert "per-op selective: the forward but attention and the matmuls kept, 28.8% of its GEMM FLOPs" in vanilla.out


def test_explain_names_torchaos_dynamic_scaling() -> None:
    tensorwise = run_cli("explain", "--model", "llama3.1-8b", "--gpu", "h100-grand-teton", "--gpus", "64", "--tp",
                         "8", "--pp", "1", "--cp", "1", "--mbs", "12", "--gbs", "96", "--zero", "3", "--stack",
                         "torchtitan", "--precision", "fp8", "--recompute", "selective")  # fmt: skip
    assert tensorwise.code == 0, tensorwise.err
    assert "(FP8 scaled from each tensor's current amax in every release (torchao's dynamic scaling))" in tensorwise.out


def test_explain_names_torchaos_fp8_mechanisms_and_shows_their_operations() -> None:
    rowwise = run_cli("explain", "--model", "llama3.1-8b", "--gpu", "h100-grand-teton", "--gpus", "64", "--tp", "8",
                      "--pp", "1", "--cp", "1", "--mbs", "12", "--gbs", "96", "--zero", "3", "--stack", "torchtitan",
                      "--precision", "fp8", "--recompute", "selective", "--fp8-recipe", "rowwise")  # fmt: skip
    assert rowwise.code == 0, rowwise.err
    assert "each operand cast again along its other axis in the backward" in rowwise.out
    assert "activations gathered in BF16 (torchao's float8 TP is tensorwise-only)" in rowwise.out
    overlapped = run_cli("explain", "--model", "llama3.1-8b", "--gpu", "h100-grand-teton", "--gpus", "64", "--tp", "8",
                         "--pp", "1", "--cp", "1", "--mbs", "12", "--gbs", "96", "--zero", "3", "--stack", "torchtitan",
                         "--precision", "fp8", "--recompute", "selective", "--async-tp")  # fmt: skip
    assert "(torchtitan stack: TP collectives with async TP: each collective decomposed under the GEMMs it feeds" in (
        overlapped.out
    )
    assert "h_TP_fwd" in overlapped.out and "h_TP_bwd" in overlapped.out
    for op in ("fc2.weight_cast", "fc2.grad_recast", "fc2.input_recast", "fc2.dgrad_rescale", "fc2.wgrad_rescale"):
        assert f"backward   {op}" in rowwise.out or f"forward    {op}" in rowwise.out


def test_torchtitans_selective_recompute_reruns_every_second_matmul_and_its_all_gathers() -> None:
    """Per-op SAC (precision.Recipe.per_op_sac) re-runs the layer's forward but for attention and the matmuls its
    policy keeps (torchtitan 0.1.0 `_save_list`: every second `aten.mm`, the reduce-scatters). Under TP, BF16
    re-runs wk and w3, (1,024 + 14,336) / (2 x 4,096 + 2 x 1,024 + 3 x 14,336) = 28.8% of Llama 3.1 8B's forward
    GEMM FLOPs, wo too without TP (36.5%); and the forward's two all-gathers again."""
    from perfmodel.physics.step import sac_recomputed_gemm_share

    titan = _predict(async_tp=False)
    trace = _trace(titan)
    layer = trace["layer"]
    assert sac_recomputed_gemm_share(titan.model, context_for(titan.scenario).recipe, 8) == pytest.approx(15360 / 53248)
    assert sac_recomputed_gemm_share(titan.model, context_for(titan.scenario).recipe, 1) == pytest.approx(19456 / 53248)
    by_hand = layer.forward - layer.forward_attention - (1 - 15360 / 53248) * layer.forward_gemm
    assert float(trace["recompute_s"]) == pytest.approx(float(by_hand))
    assert 0 < float(by_hand) < float(layer.forward)
    full = _trace(_predict(async_tp=False, recompute="full"))
    assert float(full["recompute_s"]) == pytest.approx(float(layer.forward))
    none = _trace(_predict(async_tp=False, recompute="none"))
    gather_in = all_gather(trace["shard"].tokens * titan.model.hidden * BF16_BYTES, trace["tp_links"])
    assert float(trace["tp_comm"].layer - none["tp_comm"].layer) == pytest.approx(2 * float(gather_in))


def test_torchtitans_selective_recompute_saves_no_float8_matmul() -> None:
    """torchao's float8 linears run `aten._scaled_mm`, which torchtitan 0.1.0's save list does not name, and
    torch.compile recomputes every op its policy does not save (torch 2.7.1 partitioners.must_recompute): under
    TP the backward re-runs wq, wk, wv, w1 and w3, (4,096 + 2 x 1,024 + 2 x 14,336) / 53,248 = 65.4% of Llama 3.1
    8B's forward GEMM FLOPs, wo too without TP; the step is slower than BF16's policy would make it."""
    from perfmodel.physics.step import sac_recomputed_gemm_share

    fp8 = _predict(async_tp=False, precision="fp8")
    assert sac_recomputed_gemm_share(fp8.model, context_for(fp8.scenario).recipe, 8) == pytest.approx(34816 / 53248)
    assert sac_recomputed_gemm_share(fp8.model, context_for(fp8.scenario).recipe, 1) == pytest.approx(38912 / 53248)
    layer = _trace(fp8)["layer"]
    assert float(_trace(fp8)["recompute_s"]) == pytest.approx(
        float(layer.forward - layer.forward_attention - (1 - 34816 / 53248) * layer.forward_gemm)
    )


def test_the_inputs_line_names_the_knobs_as_run() -> None:
    result = run_cli("predict", "--model", "llama3.1-8b", "--gpu", "h100-grand-teton", "--gpus", "64", "--tp", "8",
                     "--pp", "1", "--cp", "1", "--mbs", "12", "--gbs", "96", "--stack", "torchtitan", "--precision",
                     "fp8", "--compile", "--calibration", "none")  # fmt: skip
    assert result.code == 0, result.err
    assert (
        inputs_of(result.out)["stack"] == "torchtitan (vanilla TP (default), torch.compile, FP8 tensorwise (default))"
    )


def test_a_runs_csv_row_names_the_knobs_it_ran_with(tmp_path: Path) -> None:
    """A user's runs CSV carries async_tp, compile and fp8_recipe: the row is priced at them, and a bad value or a
    knob its stack lacks is one line naming the file, row and column."""
    header = "model,gpu,n_gpus,precision,seq_len,tp,pp,cp,mbs,gbs,zero,recompute,metric,measured,stack,async_tp,compile"
    row = "llama3.1-8b,h100-grand-teton,64,bf16,8192,8,1,1,12,96,3,selective,tokens_per_s_per_gpu,4809.4,torchtitan"
    path = tmp_path / "runs.csv"
    path.write_text(f"{header}\n{row},true,True\n{row},false,true\n")
    async_row, vanilla_row = (r.scenario for r in read_runs_csv(path))
    assert (async_row["async_tp"], async_row["compile"], vanilla_row["async_tp"]) == (True, True, False)
    path.write_text(f"{header}\n{row},yes,true\n")
    with pytest.raises(PerfmodelError, match=r"row 2: column 'async_tp' is 'yes'; it must be true or false"):
        read_runs_csv(path)
    path.write_text(f"{header}\n{row.replace('torchtitan', 'megatron')},true,\n")
    with pytest.raises(PerfmodelError, match=r"row 2: field 'async_tp': stack 'megatron' has no such knob"):
        read_runs_csv(path)


def test_fsdp2_reduces_in_fp32_and_pays_its_copies_on_the_compute_stream() -> None:
    """torchtitan's FSDP2 reduce-scatters FP32 gradients (mixed_precision_reduce 'float32'), and per micro-batch
    copies the forward's and the backward's gathered BF16 weights into the parameters (read and write, 2 x 2 x 2
    bytes per weight) and the BF16 gradients into the FP32 reduce-scatter input (2 + 4 bytes): counted by hand for
    Llama 3.1 8B's busiest rank. Megatron's distributed optimizer has neither."""
    prediction = _predict()
    ctx = context_for(prediction.scenario)
    trace = _trace(prediction)
    weights, trainable = float(trace["params"].most), float(trace["trainable"])
    assert ctx.recipe.fsdp_copies and (ctx.recipe.grad_reduce_bytes, ctx.recipe.grad_buffer_bytes) == (4, 2)
    rate = ctx.hardware.accelerator.hbm_bytes_per_s * ctx.efficiency.memory
    expected = (2 * 2 * 2 * weights + (2 + 4) * trainable) / rate
    assert float(fsdp_copies_s(ctx, weights, trainable)) == pytest.approx(expected)
    megatron = context_for(_predict(stack="megatron").scenario)
    assert float(fsdp_copies_s(megatron, weights, trainable)) == 0.0 and megatron.recipe.grad_reduce_bytes == 2
