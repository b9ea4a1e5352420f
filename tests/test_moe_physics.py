"""MoE physics: the expert all-to-all against its closed form, memory of a hand-computed EP case, grouped GEMMs that
lose efficiency with few tokens per expert, validity rules, imbalance, and the step on floats, arrays and symbols."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import sympy

from perfmodel.errors import InfeasibleLayout
from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.models import ZOO, ModelSpec
from perfmodel.inputs.precision import RECIPES
from perfmodel.inputs.record import replaced
from perfmodel.physics import memory, moe
from perfmodel.physics.collectives import HALF_BANDWIDTH_S, RAMP_EXPONENT, all_to_all, group_links
from perfmodel.physics.compute import grouped_efficiency, op_time
from perfmodel.physics.efficiency import DEFAULTS
from perfmodel.physics.parallel import Layout, check
from perfmodel.physics.step import Context, LayoutVars, evaluate
from perfmodel.physics.topology import tiers
from perfmodel.physics.workload import Op, Shard
from perfmodel.planning.predict import layout_vars

TINY = ModelSpec(
    id="tiny-moe", layers=2, hidden=1024, ffn=4096, heads=8, kv_heads=8, vocab=32000, experts=8, top_k=2, moe_ffn=1024
)


def _ramped(data_s: float) -> float:
    """A call's data time at full bus bandwidth stretched by its ramp (collectives.HALF_BANDWIDTH_S)."""
    return data_s * (1 + (HALF_BANDWIDTH_S / data_s) ** RAMP_EXPONENT)


def _ctx(model: ModelSpec, system: str = "dgx-h100", precision: str = "bf16", imbalance: float = 1.0) -> Context:
    hw = resolve(None, system)
    eff = DEFAULTS[hw.accelerator.family]
    return Context(model, hw, RECIPES[precision], eff, 4096, 0, imbalance)


def test_all_to_all_inside_an_nvlink_domain_is_its_closed_form() -> None:
    """EP 8 on one DGX H100: (n-1) latency steps + (n-1)/n of the bytes through each rank's NVLink."""
    ctx = _ctx(TINY)
    links = group_links(ctx.tiers, ctx.efficiency, 8.0, 1.0)
    size = 64e6
    expected = links.call_latency_s + 7 * links.intra_latency_s + _ramped(7 / 8 * size / links.intra_bytes_per_s)
    assert links.domains == 1
    assert all_to_all(size, links) == pytest.approx(expected)


def test_all_to_all_across_nics_is_bound_by_the_share_leaving_the_node() -> None:
    """EP 16 over two DGX H100 nodes: half of each rank's bytes leave through its NIC, 7/16 stay on NVLink; the
    slower of the two phases sets the time."""
    ctx = _ctx(TINY)
    links = group_links(ctx.tiers, ctx.efficiency, 16.0, 1.0)
    size = 64e6
    intra = 7 / 16 * size / links.intra_bytes_per_s
    inter = 8 / 16 * size / links.inter_bytes_per_s
    latency = 15 * min(links.intra_latency_s, links.inter_latency_s)
    assert links.domains == 2 and inter > intra
    assert all_to_all(size, links) == pytest.approx(links.call_latency_s + latency + _ramped(max(intra, inter)))


def test_dispatch_moves_bf16_hidden_states_whatever_the_recipe() -> None:
    """Dispatch and combine each send T/tp x top_k x hidden BF16 elements (megatron-core's token dispatchers
    all-to-all the layer's BF16 hidden states; the expert GEMM casts its routed rows after the exchange), so an MXFP8
    run exchanges what a BF16 run does; the backward sends the gradients the same way, and without expert TP there
    is nothing to gather."""
    sent = 2 * 4096 * 2 * 1024 * 2.0
    for precision in ("bf16", "mxfp8"):
        ctx = _ctx(TINY, "dgx-b200", precision)
        sh = Shard(TINY, ctx.recipe, 1.0, 1.0, 2.0, 4096, 8.0, 1.0)
        ep_links, etp_links = (
            group_links(ctx.tiers, ctx.efficiency, 8.0, 1.0),
            group_links(ctx.tiers, ctx.efficiency, 1.0, 1.0),
        )
        forward, step = moe.expert_comm(sh, ep_links, etp_links, 0.0)
        assert forward == pytest.approx(2 * all_to_all(sent, ep_links))
        assert step == pytest.approx(2 * forward)
        assert any(op.name == "expert_fc1.cast" for op in moe.moe_block_forward(sh, ctx.recipe)) == (
            precision == "mxfp8"
        )


def test_memory_of_a_hand_computed_ep_case() -> None:
    """TINY on 8 H100s, TP1 PP1 DP8 EP8, BF16, ZeRO-1.

    Per layer: attention 1024 x 3072 + 1024 x 1024 = 4,194,304, two norms 2,048, router 8 x 1024 = 8,192; one
    expert 1024 x 2048 + 1024 x 1024 = 3,145,728, eight of them 25,165,824. Each rank holds every non-expert weight,
    2 x 4,204,544 + embedding and head 2 x 32,000 x 1,024 + final norm 1,024 = 73,946,112, and 1/8 of the experts,
    2 x 25,165,824 / 8 = 6,291,456. Weights and BF16 gradients 2 bytes each: 2 x 80,237,568 = 160,475,136 bytes.
    Adam's 12 bytes shard over DP 8 for the dense part and over expert DP = 8 / 8 = 1 for the experts:
    12 x (73,946,112 / 8 + 6,291,456) = 186,416,640 bytes.
    """
    ctx = _ctx(TINY)
    step = evaluate(ctx, LayoutVars(1.0, 1.0, 1.0, 8.0, 1.0, 1.0, 64.0, 0.0, 1.0, 8.0, 1.0))
    assert step.memory.weights == pytest.approx(160_475_136)
    assert step.memory.gradients == pytest.approx(160_475_136)
    assert step.memory.optimizer == pytest.approx(186_416_640)


def test_expert_weights_shard_over_ep_and_activations_grow_with_routed_tokens() -> None:
    ctx = _ctx(ZOO["qwen3-30b-a3b"], "dgx-h100", "fp8")
    ep8 = evaluate(ctx, LayoutVars(1.0, 1.0, 1.0, 8.0, 1.0, 1.0, 64.0, 2.0, 1.0, 8.0, 1.0))
    ep1 = evaluate(ctx, LayoutVars(1.0, 1.0, 1.0, 8.0, 1.0, 1.0, 64.0, 2.0, 1.0, 1.0, 1.0))
    assert ep1.memory.weights > 5 * ep8.memory.weights  # the attention and embedding do not shard over EP
    skewed = evaluate(
        _ctx(ZOO["qwen3-30b-a3b"], "dgx-h100", "fp8", imbalance=1.5),
        LayoutVars(1.0, 1.0, 1.0, 8.0, 1.0, 1.0, 64.0, 0.0, 1.0, 8.0, 1.0),
    )
    balanced = evaluate(ctx, LayoutVars(1.0, 1.0, 1.0, 8.0, 1.0, 1.0, 64.0, 0.0, 1.0, 8.0, 1.0))
    assert skewed.memory.activations > balanced.memory.activations
    assert skewed.step_time_s > balanced.step_time_s


def test_grouped_gemm_efficiency_falls_with_tokens_per_expert() -> None:
    """Same FLOPs, fewer tokens per expert: 16-token experts fill an eighth of a 128-row tile."""
    sms = 132.0
    effs = [float(grouped_efficiency(m, 2048.0, 8192.0 / m, sms)) for m in (16.0, 64.0, 256.0, 1024.0)]
    assert effs == sorted(effs) and effs[0] < 0.2 and effs[-1] > 0.9
    acc, eff = resolve(None, "dgx-h100").accelerator, DEFAULTS["hopper"]

    def seconds(m: float) -> float:
        groups = 8192.0 / m
        return float(
            op_time(Op("g", "grouped_gemm", 2 * 8192 * 2048 * 4096, 1.0, "bf16", m, 2048.0, 0, groups), acc, eff)
        )

    assert seconds(16.0) > 3 * seconds(1024.0)


def test_tokens_per_expert_follow_the_layout() -> None:
    """tokens x top_k / experts per rank: 8,192 tokens, top-8, 128 experts over EP 8 -> 8192 x 8 / 16 = 4,096."""
    md = ZOO["qwen3-30b-a3b"]
    sh = Shard(md, RECIPES["bf16"], 1.0, 1.0, 2.0, 4096, 8.0, 1.0)
    assert moe.tokens_per_expert(sh) == pytest.approx(4096)


@pytest.mark.parametrize(
    ("layout", "says"),
    [
        (
            Layout(1, 1, 1, 8, 1, 3, 1, 64, 4096, "none", 1),
            "EP 3 must divide the 8 experts of tiny-moe; on 8 GPUs: EP 1, 2, 4 or 8",
        ),
        (Layout(1, 1, 1, 8, 1, 8, 1, 64, 4096, "none", 1, 2), "must divide the TP x CP x DP = 8"),
        (Layout(1, 1, 1, 8, 1, 1, 1, 64, 4096, "none", 1, 3), "expert TP 3 must divide the expert width 1024"),
    ],
)
def test_invalid_expert_layouts_are_explained(layout: Layout, says: str) -> None:
    with pytest.raises(InfeasibleLayout, match=says):
        check(layout, TINY, 8)


def test_dense_model_refuses_expert_parallelism() -> None:
    with pytest.raises(InfeasibleLayout, match="EP 8 needs a mixture-of-experts model"):
        check(Layout(1, 1, 1, 8, 1, 8, 1, 64, 4096, "none", 1), ZOO["llama3.1-8b"], 8)


def test_the_step_evaluates_floats_arrays_and_symbols_alike() -> None:
    """The branch-free step on a MoE model: one layout as floats, several as numpy arrays, and symbolically."""
    ctx = _ctx(ZOO["deepseek-v3"], "gb300-nvl72", "mxfp8")
    layout = Layout(1, 2, 1, 128, 8, 32, 1, 4096, 4096, "selective", 1)
    one = evaluate(ctx, layout_vars(layout))
    eps = np.array([8.0, 32.0, 64.0])
    many = evaluate(ctx, layout_vars(layout)._replace(ep=eps))
    assert float(np.asarray(many.step_time_s)[1]) == pytest.approx(float(one.step_time_s), rel=1e-12)
    assert float(np.asarray(many.memory.total)[1]) == pytest.approx(float(one.memory.total), rel=1e-12)
    gbs = sympy.Symbol("gbs", positive=True)
    symbolic = evaluate(ctx, layout_vars(layout)._replace(gbs=gbs))
    assert float(sympy.sympify(symbolic.step_time_s).subs(gbs, 4096)) == pytest.approx(float(one.step_time_s))


def test_mtp_adds_time_on_the_last_stage() -> None:
    ds = ZOO["deepseek-v3"]
    layout = layout_vars(Layout(1, 2, 1, 128, 8, 32, 1, 4096, 4096, "selective", 1))
    with_mtp = evaluate(_ctx(ds, "gb300-nvl72", "mxfp8"), layout)
    without = evaluate(_ctx(replaced(ds, mtp_layers=0), "gb300-nvl72", "mxfp8"), layout)
    assert with_mtp.step_time_s > without.step_time_s
    assert without.ep_comm_exposed_s > 0


def test_tiers_place_a_wide_ep_group_across_racks() -> None:
    """EP 64 at stride 1 fits one NVL72 rack's NVLink domain; EP 64 at stride 2 spans two racks."""
    t = tiers(resolve(None, "gb300-nvl72"))
    eff = DEFAULTS["blackwell-ultra"]
    assert group_links(t, eff, 64.0, 1.0).domains == 1
    assert group_links(t, eff, 64.0, 2.0).domains == 2


def test_search_covers_expert_parallelism_and_agrees_with_predict() -> None:
    """Qwen3-30B-A3B on 8 GB300s: the vectorised search prices EP x ETP layouts; an EP layout it found, priced alone
    by predict's path, gives the same step time."""
    from perfmodel.planning.search import Space, search

    ctx = _ctx(ZOO["qwen3-30b-a3b"], "gb300-nvl72", "mxfp8")
    found = search(ctx, Space(((8, 512),), {"pp": 1, "cp": 1, "vp": 1, "recompute": "none", "zero": 1}), top=400)
    expert_parallel = [f for f in found.top if f.layout.ep > 1]
    assert expert_parallel and {f.layout.etp for f in found.top} - {1}, "EP and expert TP are both searched"
    alone = evaluate(ctx, layout_vars(expert_parallel[0].layout))
    assert float(alone.step_time_s) == pytest.approx(expert_parallel[0].step_time_s, rel=1e-9)


def test_prediction_json_of_a_moe_model_adds_its_parts_and_dense_output_does_not() -> None:
    import perfmodel

    layout = {"tp": 1, "pp": 1, "cp": 1, "vp": 1, "mbs": 8, "recompute": "none", "zero": 1}
    kwargs = {"system": "gb300-nvl72", "n_gpus": 8, "precision": "mxfp8", "gbs": 512, "seq_len": 4096, **layout}
    moe_d = perfmodel.predict(model="qwen3-30b-a3b", ep=8, **kwargs).to_dict()  # type: ignore[arg-type]
    assert moe_d["parallelism"]["etp"] == 1 and moe_d["breakdown"]["ep_comm_exposed_s"] > 0
    assert sum(moe_d["breakdown"].values()) == pytest.approx(moe_d["step_time_s"])
    dense_d = perfmodel.predict(model="llama3.1-8b", **kwargs).to_dict()  # type: ignore[arg-type]
    assert "etp" not in dense_d["parallelism"] and "ep_comm_exposed_s" not in dense_d["breakdown"]


def test_selective_recompute_of_mla_keeps_the_latents() -> None:
    """DeepSeek-V3's selective recompute re-runs RMSNorm and the MLA up-projections: per token a layer keeps the
    1536 + 512 + 64 latents instead of Q, K (128 x 192 each) and V (128 x 128), and re-runs the up-projections."""
    from perfmodel.physics.workload import SELECTIVE_RECOMPUTE

    ds = ZOO["deepseek-v3"]
    ctx = _ctx(ds, "gb300-nvl72", "mxfp8")
    sh = Shard(ds, ctx.recipe, 1.0, 1.0, 1.0, 4096, 32.0, 1.0)
    saved = partial(moe.mean_layer_saved, sh, ctx.recipe)
    none, selective = (memory.held(saved, mode, 1.0) for mode in ("none", "selective"))
    saved_per_token = (2 * 128 * 192 + 128 * 128 - (1536 + 512 + 64)) * 2
    assert none - selective > 4096 * saved_per_token
    assert {"q_up.fprop", "kv_up.fprop"} <= SELECTIVE_RECOMPUTE


def test_token_all_to_all_across_nodes_sends_each_token_once_per_remote_node() -> None:
    """EP 32 over four DGX B200 nodes, top-8: a token misses a given other node with probability (3/4)^8, so each
    rank's NIC carries 3 x (1 - (3/4)^8) = 2.70 token sends (DeepEP's dedup), not 8 x 3/4 = 6 copies; its NVLink
    carries the 7/32 of copies bound for its own node and fans out 7/8 of the 24/32 it receives from other nodes."""
    from perfmodel.physics.collectives import token_all_to_all

    ctx = _ctx(TINY, "dgx-b200")
    links = group_links(ctx.tiers, ctx.efficiency, 32.0, 1.0)
    token = 8e6
    assert links.domains == 4 and links.per_domain == 8
    inter = 3 * (1 - 0.75**8) * token / links.inter_bytes_per_s
    intra = (7 / 32 + 24 / 32 * 7 / 8) * 8 * token / links.intra_bytes_per_s
    latency = 31 * min(links.intra_latency_s, links.inter_latency_s)
    expected = links.call_latency_s + latency + _ramped(max(intra, inter))
    assert token_all_to_all(token, 8.0, links) == pytest.approx(expected)
    inside = group_links(ctx.tiers, ctx.efficiency, 8.0, 1.0)
    assert token_all_to_all(token, 8.0, inside) == pytest.approx(all_to_all(8 * token, inside))


def test_a_moe_layer_pays_attention_tp_collectives_and_its_shared_experts_only() -> None:
    """Sequence-parallel TP blocks per layer: 2 in a dense layer; in a MoE layer 1 (attention), 2 with shared experts.
    DeepSeek-V3: 3 dense and 58 MoE layers with a shared expert -> 2; Qwen3-30B-A3B: all 48 MoE, none shared -> 1."""
    assert moe.tp_blocks_per_layer(ZOO["llama3.1-8b"]) == 2.0
    assert moe.tp_blocks_per_layer(ZOO["deepseek-v3"]) == 2.0
    assert moe.tp_blocks_per_layer(ZOO["qwen3-30b-a3b"]) == 1.0
    assert moe.tp_blocks_per_layer(ZOO["mixtral-8x7b"]) == 1.0


def test_the_legacy_grouped_gemm_cost_is_paid_per_local_expert_only_before_the_grouped_kernel() -> None:
    """The MoE part of the software vintage (efficiency.GROUPED_KERNEL_RELEASE): a release before it pays
    `moe_legacy_group_s` once per local expert of every grouped expert GEMM, a release from it on and a dense model
    never; its age in years is the one the reference vintage gives it."""
    from dataclasses import replace

    from perfmodel.physics.compute import op_time
    from perfmodel.physics.efficiency import DEFAULTS, GROUPED_KERNEL_RELEASE, release_age_years
    from perfmodel.physics.workload import Op

    base = DEFAULTS["blackwell"]
    assert release_age_years(GROUPED_KERNEL_RELEASE) == pytest.approx(2 / 12)  # 26.06, two months before 26.08
    acc = resolve("gb200").accelerator
    grouped = Op("expert_fc1.fprop", "grouped_gemm", 2 * 16 * 4096 * 1536 * 2048, 1e8, "bf16", 4096, 1536, groups=16)
    dense = Op("fc1.fprop", "gemm", 2 * 4096 * 1536 * 2048, 1e8, "bf16", 4096, 1536, k=2048)
    at = {years: replace(base, vintage_years=years, moe_legacy_group_s=1e-4) for years in (0.0, 2 / 12, 4 / 12)}
    assert op_time(grouped, acc, at[2 / 12]) == op_time(grouped, acc, at[0.0])  # 26.06: the grouped kernel
    assert op_time(grouped, acc, at[4 / 12]) - op_time(grouped, acc, at[0.0]) == pytest.approx(16 * 1e-4)
    assert op_time(dense, acc, at[4 / 12]) == op_time(dense, acc, at[0.0])


def test_hopper_pays_the_per_expert_grouped_gemm_cost_in_every_release() -> None:
    """Hopper's MoE rows did not move at the grouped kernel's release (efficiency.Efficiency.moe_group_loop): an
    H100 grouped expert GEMM pays `moe_legacy_group_s` per local expert at the reference vintage too, a Blackwell
    one only before GROUPED_KERNEL_RELEASE."""
    from dataclasses import replace

    from perfmodel.physics.compute import op_time
    from perfmodel.physics.efficiency import DEFAULTS
    from perfmodel.physics.workload import Op

    grouped = Op("expert_fc1.fprop", "grouped_gemm", 2 * 16 * 4096 * 1536 * 2048, 1e8, "fp8", 4096, 1536, groups=16)
    extra = {}
    for family, system in (("hopper", "h100-sxm"), ("blackwell", "gb200")):
        acc = resolve(system).accelerator
        with_cost, without = (replace(DEFAULTS[family], moe_legacy_group_s=s) for s in (1e-4, 0.0))
        extra[family] = float(op_time(grouped, acc, with_cost) - op_time(grouped, acc, without))
    assert extra["hopper"] == pytest.approx(16 * 1e-4)
    assert extra["blackwell"] == 0.0


def test_the_alltoall_dispatcher_sorts_the_copies_by_local_expert_and_back() -> None:
    """megatron-core 0.16.1 transformer/moe/token_dispatcher.py: MoEAlltoAllTokenDispatcher sorts the copies an
    all-to-all delivers by local expert (dispatch_postprocess L732-738) and back before the combine (combine_preprocess
    L767-772) when a rank holds more than one expert: a read and write of every routed row in BF16 each way, and of
    its gradient in the backward. The flex dispatcher's one permutation groups them as they arrive."""
    recipe = RECIPES["bf16"]
    nano = ZOO["nemotron-3-nano-30b-a3b"]  # dispatcher 'alltoall', 128 experts, top-6
    names = ("sort_by_expert", "unsort_by_expert", "unsort_by_expert.bwd", "sort_by_expert.bwd")
    for ep, sorted_bytes in ((8, 8192 * 6 * nano.hidden * 2 * 2), (128, 0.0)):  # 16 local experts, then one
        sh = Shard(nano, recipe, tp=1, cp=1, mbs=1, seq_len=8192, ep=ep)
        ops = {op.name: op for op in moe.moe_block_forward(sh, recipe) + moe.moe_block_backward(sh, recipe)}
        assert [ops[name].bytes for name in names] == pytest.approx([sorted_bytes] * 4)
    flex = Shard(replaced(nano, dispatcher="flex"), recipe, tp=1, cp=1, mbs=1, seq_len=8192, ep=8)
    assert not {op.name for op in moe.moe_block_forward(flex, recipe) + moe.moe_block_backward(flex, recipe)} & set(
        names
    )
