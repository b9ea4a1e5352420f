"""meta-h100-roce: the RoCE cluster Llama 3 405B pre-trained on (../shared/data/campaigns.md section 1, "Cluster",
from the Llama 3 paper, arXiv:2407.21783, section 3.3.1): '192 racks = a 3,072-GPU pod with full bisection bandwidth;
8 pods joined by aggregation switches with 1:7 oversubscription', 400 Gb/s per GPU. perfmodel's two tiers: a pod of
384 servers is the full-bisection tier, the uplinks across pods carry 1/7 of a NIC."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import perfmodel
from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.scenario import load_scenario
from perfmodel.physics.collectives import group_links
from perfmodel.physics.topology import derive_tiers
from perfmodel.planning.campaign import Campaign, phase_scenarios
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


CAMPAIGN = Path(__file__).parent.parent / "scenarios" / "campaign-llama3.1-405b.toml"


def test_the_llama3_campaign_runs_as_meta_ran_it() -> None:
    """scenarios/campaign-llama3.1-405b.toml: every phase on the RoCE cluster, with FP32 gradient reduction
    (campaigns.md section 1, row 1a), at the software of 2024-03 (inferred: the file's header)."""
    for _, scenario in phase_scenarios(load_scenario(CAMPAIGN)):
        ctx = context_for(scenario)
        assert ctx.hardware.system.id == "meta-h100-roce" and ctx.recipe.grad_buffer_bytes == 4
        assert scenario.vintage == "2024-03"


def test_each_phase_is_slower_as_run_than_today_and_its_groups_stay_in_a_pod(tmp_path: Path) -> None:
    """Older software and twice the gradient bytes cannot make a step faster; every group of Table 4's layouts (DP
    at most 128 servers at TP 8, CP 16 at stride 8) fits in one 384-server pod, so the 1:7 uplinks are not paid."""
    as_run = perfmodel.predict(CAMPAIGN)
    text = CAMPAIGN.read_text()
    for key in ("system", "vintage", "grad_reduce_in_fp32"):
        text = re.sub(rf"^{key} = .*\n", "", text, flags=re.M)
    (tmp_path / "today.toml").write_text(text)
    today = perfmodel.predict(tmp_path / "today.toml")
    assert isinstance(as_run, Campaign) and isinstance(today, Campaign)
    for name, phase in as_run.phases.items():
        assert phase.step_time_s > today.phases[name].step_time_s
        lo = phase.layout
        assert lo.dp * lo.cp <= POD_SERVERS and lo.pp <= POD_SERVERS
