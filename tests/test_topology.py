"""Topology graphs and the bandwidth a group gets: switch vs mesh, leaf vs spine, oversubscription."""

import pytest

from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.record import replaced
from perfmodel.physics.topology import GBIT, GBYTE, build_graph, derive_tiers, tiers


def _with_fabric(hw, **fabric):
    updated = replaced(hw.system.fabric, **{k: v for k, v in fabric.items()})
    return replaced(hw, system=replaced(hw.system, fabric=updated))


def test_graph_has_gpus_switches_nics_leaves_and_spines() -> None:
    graph = build_graph(resolve("h100-sxm"))
    kinds = {node[0] for node in graph.nodes}
    assert kinds == {"gpu", "nvswitch", "nic", "leaf", "spine"}
    assert sum(1 for node in graph.nodes if node[0] == "gpu") == 3 * 8


def test_nvswitch_gives_every_group_the_full_link() -> None:
    t = tiers(resolve("h100-sxm"))
    # accelerators.csv: NVLink 4 = 450 GB/s per direction per GPU, whatever the group size behind the switch.
    assert [t.scaleup_bytes_per_s(k) / GBYTE for k in (2, 4, 8)] == [450, 450, 450]
    assert t.scaleup_bytes_per_s(1) == 0


def test_xgmi_mesh_bandwidth_grows_with_the_group() -> None:
    t = tiers(resolve("mi300x"))
    # accelerators_sources.md: 64 GB/s per direction per peer link, 7 links; a k-GPU group uses k-1 of them.
    assert [t.scaleup_bytes_per_s(k) / GBYTE for k in (2, 4, 8)] == [64, 192, 448]


def test_paths_between_domains_are_limited_by_the_nic() -> None:
    t = tiers(resolve("h100-sxm"))
    assert t.across_leaf.bytes_per_s == 400 * GBIT  # ConnectX-7: 400 Gb/s = 50 GB/s
    assert t.across_spine.latency_s > t.across_leaf.latency_s > t.scaleup_latency_s


def test_oversubscribed_spine_halves_cross_leaf_bandwidth() -> None:
    hw = resolve("h100-sxm")
    tapered = _with_fabric(hw, oversubscription=replaced(hw.system.fabric.oversubscription, value=2.0))
    t = derive_tiers(tapered)
    assert t.across_leaf.bytes_per_s == 400 * GBIT
    assert t.across_spine.bytes_per_s == pytest.approx(200 * GBIT)


def test_nvl72_racks_are_filled_64_at_a_time() -> None:
    t = tiers(resolve("gb200"))
    assert t.ranks_per_domain == 64
    assert t.scaleup_bytes_per_s(64) == 900 * GBYTE


def test_cached_tiers_equal_derived_ones() -> None:
    hw = resolve("b200")
    assert tiers(hw) == derive_tiers(hw)
