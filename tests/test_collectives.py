"""Collective costs against their closed forms (alpha-beta, the data term slowed by the message-size ramp)."""

import pytest

from perfmodel.inputs.hardware import resolve
from perfmodel.physics.collectives import (
    ALL_REDUCE_HALF_BANDWIDTH_S,
    HALF_BANDWIDTH_S,
    PAIR_SHARE,
    RAMP_EXPONENT,
    SCALEUP_STEP_LATENCY_S,
    all_gather,
    all_reduce,
    all_to_all,
    group_links,
    reduce_scatter,
    send_recv,
)
from perfmodel.physics.collectives import NCCL_CALL_LATENCY_S as CALL
from perfmodel.physics.efficiency import DEFAULTS
from perfmodel.physics.topology import tiers

EFF = DEFAULTS["hopper"]
H100 = tiers(resolve("h100-sxm"))
S = 256e6  # bytes


def _nvlink_bw():
    return 450e9 * EFF.scaleup


def _nic_bw():
    return 50e9 * EFF.scaleout


def _ramped(data_s: float, half_s: float = HALF_BANDWIDTH_S) -> float:
    """A call's data time at full bus bandwidth stretched by the ramp: x (1 + (39 us / data time)^0.70), an
    all-reduce's 74 us."""
    return data_s * (1 + (half_s / data_s) ** RAMP_EXPONENT)


def _reduced(data_s: float) -> float:
    return _ramped(data_s, ALL_REDUCE_HALF_BANDWIDTH_S)


def test_group_inside_one_node() -> None:
    g = group_links(H100, EFF, 8, 1)
    assert (g.per_domain, g.domains) == (8, 1)
    alpha = H100.scaleup_latency_s + SCALEUP_STEP_LATENCY_S
    # Ring reduce-scatter: (n-1) steps of latency, (n-1)/n of the data through each link.
    assert reduce_scatter(S, g) == pytest.approx(CALL + 7 * alpha + _ramped(7 / 8 * S / _nvlink_bw()))
    assert all_gather(S, g) == reduce_scatter(S, g)


def test_group_of_one_costs_nothing() -> None:
    g = group_links(H100, EFF, 1, 1)
    assert reduce_scatter(S, g) == 0
    assert all_reduce(S, g, H100) == 0
    assert all_to_all(S, g) == 0


def test_group_across_nodes_is_hierarchical() -> None:
    # DP of 16 at stride 4 (TP 4): 2 ranks per node, 8 nodes; across nodes each rank moves half the data. NCCL's
    # ring pipelines the NVLink and NIC hops: both latencies add, the data moves at the slower (NIC) hop's pace.
    g = group_links(H100, EFF, 16, 4)
    assert (g.per_domain, g.domains) == (2, 8)
    latency = 1 * g.intra_latency_s + 7 * g.inter_latency_s
    nic_data = 7 / 8 * (S / 2) / _nic_bw()
    assert nic_data > 1 / 2 * S / _nvlink_bw()
    assert reduce_scatter(S, g) == pytest.approx(CALL + latency + _ramped(nic_data))


def test_full_node_dp_group_is_not_priced_twice() -> None:
    # DP of 32 at stride 1 (TP 1): 8 ranks per node, 4 nodes. The NVLink hop carries 7/8 S and the NIC hop 3/4 of
    # S/8; one pipelined ring costs the slower of the two, not their sum (NCCL tuning.cc: ring bus bandwidth).
    g = group_links(H100, EFF, 32, 1)
    assert (g.per_domain, g.domains) == (8, 4)
    latency = 7 * g.intra_latency_s + 3 * g.inter_latency_s
    nvlink, nic = 7 / 8 * S / _nvlink_bw(), 3 / 4 * S / 8 / _nic_bw()
    assert reduce_scatter(S, g) == pytest.approx(CALL + latency + _ramped(max(nvlink, nic)))
    # All-reduce: NVLink SHARP inside (2 latencies, S once) and across a ring (6 steps, 2 x 3/4 of S/8) or a tree
    # (2 log2 4 steps, 2 x S/8), whichever is faster; again the two overlap.
    inside = (2 * g.intra_latency_s, S / (_nvlink_bw() * g.in_switch_share))
    ring = (6 * g.inter_latency_s, 2 * nic)
    tree = (4 * g.inter_latency_s, 2 * S / 8 / _nic_bw())
    assert not H100.scaleout_in_network_reduction
    across = min(ring, tree, key=sum)
    assert all_reduce(S, g, H100) == pytest.approx(CALL + inside[0] + across[0] + _reduced(max(inside[1], across[1])))


def test_one_rank_per_node_goes_over_its_nic() -> None:
    g = group_links(H100, EFF, 4, 8)
    assert (g.per_domain, g.domains) == (1, 4)
    assert reduce_scatter(S, g) == pytest.approx(
        CALL + 3 * (H100.across_leaf.latency_s + H100.step_latency_s) + _ramped(3 / 4 * S / _nic_bw())
    )


def test_all_reduce_ring_vs_in_network_reduction() -> None:
    g = group_links(H100, EFF, 8, 1)
    ring = (14 * g.intra_latency_s, 2 * 7 / 8 * S / _nvlink_bw())  # one call: reduce-scatter and all-gather phases
    # NVLink SHARP: the data crosses the link once, at the in-switch share of the ring's rate (nccl-tests on H200:
    # NVLS bus bandwidth 482 GB/s against the ring's 367, kernels_collectives.csv)
    nvls = (2 * g.intra_latency_s, S / (_nvlink_bw() * g.in_switch_share))
    chosen = min(ring, nvls, key=sum)
    assert all_reduce(S, g, H100) == pytest.approx(CALL + chosen[0] + _reduced(chosen[1]))
    a100 = tiers(resolve("a100-sxm-80gb"))  # NVSwitch gen2: no in-switch reduction, so a plain ring
    g_a100 = group_links(a100, DEFAULTS["ampere"], 8, 1)
    ring_a100 = 14 * g_a100.intra_latency_s + _reduced(2 * 7 / 8 * S / g_a100.intra_bytes_per_s)
    assert all_reduce(S, g_a100, a100) == pytest.approx(CALL + ring_a100)


def test_large_groups_use_the_tree_for_latency() -> None:
    g = group_links(H100, EFF, 1024, 8)  # 1024 nodes, one rank each, across the spine
    small = 1e3
    ring = 2 * (1023 * g.inter_latency_s + 1023 / 1024 * small / g.inter_bytes_per_s)
    assert all_reduce(small, g, H100) < ring / 10


def test_send_recv_between_nodes_and_inside_one() -> None:
    across = group_links(H100, EFF, 8, 64)
    assert send_recv(S, across) == pytest.approx(CALL + across.inter_latency_s + _ramped(S / _nic_bw()))
    inside = group_links(H100, EFF, 4, 2)
    assert send_recv(S, inside) == pytest.approx(CALL + inside.intra_latency_s + _ramped(S / _nvlink_bw()))


def test_all_to_all_bottleneck_is_the_nic_share() -> None:
    g = group_links(H100, EFF, 16, 1)  # 8 per node, 2 nodes: half of every rank's data leaves the node
    data = _ramped(max(7 / 16 * S / _nvlink_bw(), 8 / 16 * S / _nic_bw()))
    assert all_to_all(S, g) == pytest.approx(CALL + 15 * min(g.intra_latency_s, g.inter_latency_s) + data)


def test_every_collective_call_pays_its_base_latency_and_ramp() -> None:
    """A call costs its fixed latency (7.1 us, fitted to measured collectives: physics.collective_kernels) however
    small the message, and its data runs slower the smaller it is: n calls of S/n cost (n-1) x (base + ring-step
    latencies) more than one call of S, and their data more again."""
    g = group_links(H100, EFF, 64, 8)  # one rank per node, 64 nodes
    steps = 63 * g.inter_latency_s
    assert reduce_scatter(1.0, g) == pytest.approx(CALL + steps + _ramped(63 / 64 / g.inter_bytes_per_s))
    data = 63 / 64 * S / g.inter_bytes_per_s
    split = 10 * reduce_scatter(S / 10, g)
    assert split == pytest.approx(reduce_scatter(S, g) + 9 * (CALL + steps) + 10 * _ramped(data / 10) - _ramped(data))
    # The ramp is paid in time: 5.6 ms of NIC data runs 1.03x its bus bandwidth's time, a tenth of it 1.15x (1.12x)
    assert _ramped(data / 10) / (data / 10) / (_ramped(data) / data) == pytest.approx(1.12, abs=0.01)


def test_a_pair_on_a_switched_baseboard_runs_at_the_pair_share() -> None:
    """Two members of an NVSwitch baseboard (TP 2) move their data at PAIR_SHARE of the rate a larger ring reaches
    there; neither NVL72's switch trays nor MI300X's mesh of peer links is priced so (no step measured there)."""
    pair, quad = group_links(H100, EFF, 2, 1), group_links(H100, EFF, 4, 1)
    assert pair.intra_bytes_per_s == pytest.approx(PAIR_SHARE * _nvlink_bw()) and PAIR_SHARE < 0.8
    assert quad.intra_bytes_per_s == pytest.approx(_nvlink_bw())
    assert group_links(H100, EFF, 4, 4).intra_bytes_per_s == pytest.approx(pair.intra_bytes_per_s)  # 2 per domain
    for gpu, family in (("gb200", "blackwell"), ("mi300x", "cdna3")):
        found = tiers(resolve(gpu))
        eff = DEFAULTS[family]
        two, four = group_links(found, eff, 2, 1), group_links(found, eff, 4, 1)
        assert two.intra_bytes_per_s / found.scaleup_bytes_per_s(2) == pytest.approx(
            four.intra_bytes_per_s / found.scaleup_bytes_per_s(4)
        )
