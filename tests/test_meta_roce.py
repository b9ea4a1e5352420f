"""meta-h100-roce: the RoCE cluster Llama 3 405B pre-trained on (../shared/data/campaigns.md section 1, "Cluster",
from the Llama 3 paper, arXiv:2407.21783, section 3.3.1): '192 racks = a 3,072-GPU pod with full bisection bandwidth;
8 pods joined by aggregation switches with 1:7 oversubscription', 400 Gb/s per GPU. perfmodel's two tiers: a pod of
384 servers is the full-bisection tier, the uplinks across pods carry 1/7 of a NIC."""

from __future__ import annotations

import pytest

from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.scenario import load_scenario
from perfmodel.physics.collectives import group_links
from perfmodel.physics.topology import derive_tiers
from perfmodel.planning.predict import context_for

NIC_BYTES_PER_S = 400e9 / 8
"""campaigns.md section 1, Cluster: 'Both RoCE and Infiniband clusters leverage 400 Gbps interconnects between GPUs'."""
POD_SERVERS = 3072 // 8
"""campaigns.md section 1, Cluster: a 3,072-GPU pod of Grand Teton servers of 'eight GPUs'."""


def test_a_pod_is_the_full_bisection_tier_and_across_pods_is_one_seventh() -> None:
    tiers = derive_tiers(resolve("h100-sxm", "meta-h100-roce"))
    assert tiers.domains_per_leaf == POD_SERVERS == 384
    assert tiers.across_leaf.bytes_per_s == pytest.approx(NIC_BYTES_PER_S)
    assert tiers.across_spine.bytes_per_s == pytest.approx(NIC_BYTES_PER_S / 7)
    assert not tiers.scaleout_in_network_reduction


@pytest.mark.parametrize(("ranks", "pods_rate"), [(128, 1.0), (POD_SERVERS, 1.0), (POD_SERVERS + 1, 1 / 7)])
def test_a_data_parallel_group_is_priced_at_the_tier_it_spans(ranks: int, pods_rate: float) -> None:
    """One GPU per server (a DP group at stride TP 8, as Table 4's layouts): 128 servers (DP 128 of the 16,384-GPU
    phase, one pipeline stage in Megatron's rank order) and a whole pod stay inside it; one server more crosses the
    aggregation layer."""
    ctx = context_for(load_scenario(None, {"model": "llama3.1-405b", "system": "meta-h100-roce", "n_gpus": 16384}))
    links = group_links(ctx.tiers, ctx.efficiency, float(ranks), 8.0)
    assert (links.per_domain, links.domains) == (1.0, ranks)
    assert links.inter_bytes_per_s / ctx.efficiency.scaleout == pytest.approx(NIC_BYTES_PER_S * pods_rate)
