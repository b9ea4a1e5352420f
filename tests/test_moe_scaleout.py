"""The expert all-to-all across NICs: its time from datasheet figures by hand, and the overlap share it hides by
(`overlap_ep_scaleout` for an EP group spanning scale-up domains, `overlap_ep` inside one)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.models import ZOO
from perfmodel.inputs.precision import RECIPES
from perfmodel.physics import moe
from perfmodel.physics.collectives import group_links, token_all_to_all
from perfmodel.physics.efficiency import DEFAULTS
from perfmodel.physics.parallel import Layout
from perfmodel.physics.step import Context, evaluate
from perfmodel.planning.predict import layout_vars

GPT_OSS_EP64 = Layout(tp=1, pp=1, cp=1, vp=1, dp=64, ep=64, mbs=4, gbs=1280, seq_len=4096, recompute="none", zero=1)
"""Megatron-Bridge docs/performance-summary-archive.md (commit 067f987df), NeMo 26.02: GPT-OSS-120B on 64 B300s
(eight HGX nodes), BF16, TP1 PP1 EP64 MBS4 GBS1280, seq 4096 (measured_runs.csv row 203, 8,359 tokens/s/GPU)."""


def _ctx(system: str, **eff: float) -> Context:
    hw = resolve(None, system)
    efficiency = replace(DEFAULTS[hw.accelerator.family], **eff)
    return Context(ZOO["gpt-oss-120b"], hw, RECIPES["bf16"], efficiency, 4096, 0, 1.0)


def test_dispatch_over_eight_b300_nodes_is_bound_by_the_nic_from_the_datasheet() -> None:
    """One rank's dispatch at EP64 over eight DGX B300s: 4 x 4,096 tokens of hidden 2,880 in BF16 = 94.4 MB of
    distinct tokens; top-4 over 8 nodes reaches 7 x (1 - (7/8)^4) = 2.90 remote nodes per token (hierarchical
    dispatch), each send through the rank's own ConnectX-8 at 800 Gb/s = 100 GB/s (times the scale-out share
    reached). NVLink carries far less per byte, so the NIC sets the time: 2.90 x 94.4 MB / 100 GB/s = 2.73 ms at
    line rate, plus the 63 peers' latency steps."""
    ctx = _ctx("dgx-b300")
    eff = ctx.efficiency
    links = group_links(ctx.tiers, eff, 64.0, 1.0)
    assert (links.domains, links.per_domain) == (8, 8)
    assert links.inter_bytes_per_s == pytest.approx(800e9 / 8 * eff.scaleout)
    token_bytes = 4 * 4096 * 2880 * 2
    sends = 7 * (1 - (7 / 8) ** 4)
    assert sends == pytest.approx(2.897, abs=1e-3)
    latency = 63 * min(links.intra_latency_s, links.inter_latency_s)
    expected = latency + sends * token_bytes / (100e9 * eff.scaleout)
    assert token_all_to_all(token_bytes, 4.0, links) == pytest.approx(expected)
    assert sends * token_bytes / 100e9 == pytest.approx(2.73e-3, rel=0.01)


def test_an_ep_group_across_nics_hides_by_its_own_share_and_one_inside_nvlink_by_overlap_ep() -> None:
    """EP64 on DGX B300s crosses the NICs: its exposed all-to-all moves with overlap_ep_scaleout only; EP8 stays
    inside a node and moves with overlap_ep only."""
    inside = replace(GPT_OSS_EP64, ep=8)
    base = _ctx("dgx-b300", overlap_ep=0.6, overlap_ep_scaleout=0.6)
    less_nic = _ctx("dgx-b300", overlap_ep=0.6, overlap_ep_scaleout=0.2)
    less_nvlink = _ctx("dgx-b300", overlap_ep=0.2, overlap_ep_scaleout=0.6)
    assert moe.ep_overlap(less_nic.efficiency, group_links(less_nic.tiers, less_nic.efficiency, 64.0, 1.0)) == 0.2
    across = {c: evaluate(c, layout_vars(GPT_OSS_EP64)).ep_comm_exposed_s for c in (base, less_nic, less_nvlink)}
    within = {c: evaluate(c, layout_vars(inside)).ep_comm_exposed_s for c in (base, less_nic, less_nvlink)}
    assert across[less_nvlink] == across[base] < across[less_nic]
    assert within[less_nic] == within[base] < within[less_nvlink]
