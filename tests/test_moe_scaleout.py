"""The expert all-to-all across NICs: its time from datasheet figures by hand for each dispatcher, the nodes a
token reaches under group-limited routing, and the overlap share it hides by (`overlap_dp` for an EP group
spanning scale-up domains, `overlap_ep` inside one)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from perfmodel.errors import FieldError
from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.models import ZOO
from perfmodel.inputs.precision import RECIPES
from perfmodel.inputs.record import replaced
from perfmodel.physics import moe
from perfmodel.physics.collectives import HALF_BANDWIDTH_S, RAMP_EXPONENT, group_links
from perfmodel.physics.compute import Rates, times_by
from perfmodel.physics.efficiency import DEFAULTS
from perfmodel.physics.parallel import Layout
from perfmodel.physics.step import Context, evaluate
from perfmodel.physics.workload import Shard
from perfmodel.planning.predict import layout_vars

GPT_OSS_EP64 = Layout(tp=1, pp=1, cp=1, vp=1, dp=64, ep=64, mbs=4, gbs=1280, seq_len=4096, recompute="none", zero=1)
"""Megatron-Bridge docs/performance-summary-archive.md (commit 067f987df), NeMo 26.02: GPT-OSS-120B on 64 B300s
(eight HGX nodes), BF16, TP1 PP1 EP64 MBS4 GBS1280, seq 4096 (measured_runs.csv row 203, 8,359 tokens/s/GPU)."""


def _ctx(system: str, model: str = "gpt-oss-120b", **eff: float) -> Context:
    hw = resolve(None, system)
    efficiency = replace(DEFAULTS[hw.accelerator.family], **eff)
    return Context(ZOO[model], hw, RECIPES["bf16"], efficiency, 4096, 0, 1.0)


def test_gpt_oss_dispatch_over_eight_b300_nodes_is_the_plain_all_to_all_at_the_nic_of_the_datasheet() -> None:
    """GPT-OSS-120B's recipe keeps Megatron's 'alltoall' dispatcher (Megatron-Bridge 0.3.1 GPTOSSProvider,
    recipes/gpt_oss/gpt_oss.py): every copy goes to its expert's rank. One rank's dispatch at EP64 over eight DGX
    B300s: 4 x 4,096 tokens x top-4 x hidden 2,880 in BF16 = 377.5 MB, of which 56/64 leave the node through the
    rank's own ConnectX-8 at 800 Gb/s = 100 GB/s (times the scale-out share reached): 3.30 ms at line rate, plus
    the 63 peers' latency steps; combine the same. NVLink carries 7/64 of it and is not the bound."""
    ctx = _ctx("dgx-b300")
    eff = ctx.efficiency
    links = group_links(ctx.tiers, eff, 64.0, 1.0)
    assert (links.domains, links.per_domain) == (8, 8)
    assert links.inter_bytes_per_s == pytest.approx(800e9 / 8 * eff.scaleout)
    sent = 4 * 4096 * 4 * 2880 * 2
    assert 56 / 64 * sent / 100e9 == pytest.approx(3.30e-3, rel=0.01)
    bound = 56 / 64 * sent / (100e9 * eff.scaleout)
    data = bound * (1 + (HALF_BANDWIDTH_S / bound) ** RAMP_EXPONENT)  # 1.05x at 3.7 ms
    one = links.call_latency_s + 63 * min(links.intra_latency_s, links.inter_latency_s) + data
    sh = Shard(ctx.model, ctx.recipe, 1, 1, 4, 4096, 64, 1, 1.0)
    forward, _ = moe.expert_comm(sh, links, group_links(ctx.tiers, eff, 1.0, 1.0), False)
    assert forward == pytest.approx(2 * one)


def test_deepseek_v3_routing_groups_bound_the_nodes_a_token_reaches() -> None:
    """DeepSeek-V3 routes each token to 4 of 8 groups of 32 consecutive experts (Megatron-Bridge 0.3.1
    DeepSeekV3ModelProvider: moe_router_num_groups 8, moe_router_group_topk 4; transformers 5.24 DeepseekV3Config:
    n_group 8, topk_group 4), its 8 copies uniform among the taken groups' experts. At EP64 over 8 nodes a node is
    one group: missed when its group is not taken (1/2), or taken and none of the 8 copies lands in it (1/2 x
    (3/4)^8). At EP32 over 4 nodes a node holds two groups: 0, 1 or 2 of them taken with chances 15/70, 40/70 and
    15/70, each missing all 8 copies with (1 - j/4)^8. Ungrouped top-8 (Qwen3) misses a node with (1 - 1/D)^8."""
    ds, qwen = ZOO["deepseek-v3"], ZOO["qwen3-30b-a3b"]
    assert moe.domain_missed(ds, 8.0) == pytest.approx(0.5 + 0.5 * 0.75**8)
    assert moe.domain_missed(ds, 4.0) == pytest.approx(15 / 70 + 40 / 70 * 0.75**8 + 15 / 70 * 0.5**8)
    assert moe.domain_missed(ds, 1.0) == pytest.approx(0.0)
    for d in (1.0, 4.0, 8.0, 32.0):
        assert moe.domain_missed(qwen, d) == pytest.approx((1 - 1 / d) ** 8)
    array = moe.domain_missed(ds, np.array([4.0, 8.0, 32.0]))
    assert list(array) == pytest.approx([float(moe.domain_missed(ds, d)) for d in (4.0, 8.0, 32.0)])
    # the NIC carries (D - 1)(1 - missed) sends per token: 3.15 instead of the ungrouped 4.69 at 8 nodes
    assert 7 * (1 - moe.domain_missed(ds, 8.0)) == pytest.approx(3.15, abs=0.01)


def test_routing_groups_must_divide_the_experts() -> None:
    with pytest.raises(ValueError, match="expert_groups"):
        replaced(ZOO["deepseek-v3"], expert_groups=7)
    with pytest.raises(ValueError, match="group_top_k"):
        replaced(ZOO["deepseek-v3"], group_top_k=0)


def test_an_ep_group_across_nics_hides_as_dp_collectives_do_and_one_inside_nvlink_by_overlap_ep() -> None:
    """Qwen3-30B-A3B (flex dispatcher) at EP64 on DGX B300s crosses the NICs: its exposed all-to-all moves with
    overlap_dp only (a NIC-bound collective on its own stream, `moe.ep_overlap`); EP8 stays inside a node and moves
    with overlap_ep only."""
    inside = replace(GPT_OSS_EP64, ep=8)
    base = _ctx("dgx-b300", "qwen3-30b-a3b", overlap_ep=0.6, overlap_dp=0.6)
    less_nic = _ctx("dgx-b300", "qwen3-30b-a3b", overlap_ep=0.6, overlap_dp=0.2)
    less_nvlink = _ctx("dgx-b300", "qwen3-30b-a3b", overlap_ep=0.2, overlap_dp=0.6)
    assert moe.ep_overlap(less_nic.efficiency, group_links(less_nic.tiers, less_nic.efficiency, 64.0, 1.0)) == 0.2
    across = {c: evaluate(c, layout_vars(GPT_OSS_EP64)).ep_comm_exposed_s for c in (base, less_nic, less_nvlink)}
    within = {c: evaluate(c, layout_vars(inside)).ep_comm_exposed_s for c in (base, less_nic, less_nvlink)}
    assert across[less_nvlink] == across[base] < across[less_nic]
    assert within[less_nic] == within[base] < within[less_nvlink]


def test_the_alltoall_dispatcher_hides_only_behind_shared_experts() -> None:
    """Megatron's 'alltoall' dispatcher runs its all-to-alls in the layer's order (megatron-core 0.16
    token_dispatcher.py) and the recipes that keep it leave the EP-communication overlap off (Megatron-Bridge 0.3.1
    training/comm_overlap.py, recipes/gpt_oss/gpt_oss.py, recipes/kimi/kimi_k2.py): GPT-OSS-120B, with no shared
    experts, exposes every all-to-all whatever the overlap share; Kimi-K2 hides them behind its shared expert's
    compute only, and Qwen3-30B-A3B (flex) behind the whole layer's."""
    lo = replace(GPT_OSS_EP64, ep=8)
    for share in (0.2, 0.9):
        ctx = _ctx("dgx-b300", overlap_ep=share)
        sh = Shard(ctx.model, ctx.recipe, 1, 1, 4, 4096, 8, 1, 1.0)
        links = group_links(ctx.tiers, ctx.efficiency, 8.0, 1.0)
        _, whole = moe.expert_comm(sh, links, group_links(ctx.tiers, ctx.efficiency, 1.0, 1.0), 0.0)
        microbatches = 1280 / (4 * 64)
        assert evaluate(ctx, layout_vars(lo)).ep_comm_exposed_s == pytest.approx(microbatches * 36 * whole)
    for model, flex in (("kimi-k2", False), ("qwen3-30b-a3b", True)):
        ctx = _ctx("dgx-b300", model)
        assert moe.exchange_windows(ctx.model, (1.0, 2.0), (0.1, 0.3), 0.5) == ((1.0, 2.0) if flex else (0.1, 0.35))


def test_the_shared_experts_window_is_the_layer_timings_own_per_moe_layer() -> None:
    """The 'alltoall' window (`moe.exchange_windows`) takes the shared experts' times from the memoised layer times:
    the sum of their operations' times in one MoE layer (Kimi-K2's first layer is dense; the mean layer blends it,
    the shared experts' window does not), and nothing for a model without them (GPT-OSS-120B)."""
    acc = resolve(None, "dgx-b300").accelerator
    for model, ops in (("kimi-k2", (3, 5)), ("gpt-oss-120b", (0, 0))):
        ctx, trace = _ctx("dgx-b300", model), {}
        evaluate(ctx, layout_vars(GPT_OSS_EP64), trace)
        sh, layer = trace["shard"], trace["layer"]
        for built, priced, count in (
            (moe.moe_block_forward(sh, ctx.recipe), layer.shared_forward, ops[0]),
            (moe.moe_block_backward(sh, ctx.recipe), layer.shared_backward, ops[1]),
        ):
            shared = [op for op in built if op.name.startswith("shared_")]
            total_s = times_by(shared, Rates(acc, ctx.efficiency))["total"]
            assert len(shared) == count and priced == pytest.approx(total_s)
        assert (layer.shared_forward > 0) == (model == "kimi-k2")


def test_the_ep_overlap_of_two_microbatches_gives_any_dispatcher_the_layers_window() -> None:
    """megatron-bridge 0.6.2 perf_recipes/qwen/h100/qwen3_moe.py runs Qwen3-235B-A22B with the 'alltoall' dispatcher
    and overlap_moe_expert_parallel_comm=True: one micro-batch's all-to-alls beside the other's compute, so the window
    is the layer's whatever the dispatcher; without the overlap the 'alltoall' one has the shared experts' only."""
    for overlap in (False, True):
        model = replaced(ZOO["qwen3-235b-a22b"], dispatcher="alltoall", ep_microbatch_overlap=overlap)
        windows = moe.exchange_windows(model, (1.0, 2.0), (0.1, 0.3), 0.5)
        assert windows == ((1.0, 2.0) if overlap else (0.1, 0.35))
        assert (moe.exchange_beside(model) == "layer") == overlap


def test_a_flex_recipe_with_neither_overlap_exposes_every_all_to_all() -> None:
    """megatron-bridge 0.6.2 perf_recipes/qwen/h100/qwen3_moe.py qwen3_30b_a3b_pretrain_16gpu_h100_fp8cs_config
    (L88-92) runs the flex dispatcher without overlap_moe_expert_parallel_comm, and flex turns the shared-expert
    overlap off (training/flex_dispatcher_backend.py L99): a MoE layer dispatches, computes and combines in sequence
    (megatron-core 0.18 moe_layer.py MoELayer.forward), so nothing hides the exchange, where the zoo entry's flex one
    hides behind the layer; a recipe cannot both expose it and overlap two micro-batches."""
    flex = ZOO["qwen3-30b-a3b"]
    exposed = replaced(flex, ep_exchange_exposed=True)
    assert moe.exchange_windows(flex, (1.0, 2.0), (0.0, 0.0), 0.0) == (1.0, 2.0)
    assert moe.exchange_windows(exposed, (1.0, 2.0), (0.0, 0.0), 0.0) == (0.0, 0.0)
    assert moe.exchange_beside(exposed) == "nothing"
    layout = Layout(tp=1, pp=1, cp=1, vp=1, dp=16, ep=16, mbs=1, gbs=1024, seq_len=4096, recompute="none", zero=1)
    ctx = _ctx("dgx-h100", "qwen3-30b-a3b")
    hidden, bare = (evaluate(replace(ctx, model=m), layout_vars(layout)).ep_comm_exposed_s for m in (flex, exposed))
    assert bare > hidden > 0
    with pytest.raises(FieldError, match="ep_exchange_exposed"):
        replaced(flex, ep_exchange_exposed=True, ep_microbatch_overlap=True)
