"""Systems as networkx graphs, and the bandwidth and latency a group of ranks really gets on them.

The graph has GPUs, one NVSwitch per scale-up domain (or a full mesh of peer links, as on AMD's xGMI platforms),
one NIC per GPU, and a rail-optimised two-tier fat tree: NIC i of every node goes to the leaf of rail i, leaves go up
to spines through uplinks whose per-port share is the NIC bandwidth divided by the oversubscription.
Three domains suffice to see every kind of path: two under one leaf and one under another.

From it come `Tiers`: the per-rank bandwidth of a group with k members inside one domain (max-flow from one member
to the others over the domain's links), and the bottleneck bandwidth and summed latency of the paths between
domains under one leaf and across the spine. A group spanning domains is limited by the slowest link of its path.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import asdict, dataclass, fields
from functools import cache
from pathlib import Path
from typing import Any

from perfmodel.inputs.diskcache import cache_dir, digest, read_private, write_atomic
from perfmodel.inputs.hardware import Hardware
from perfmodel.inputs.numbers import in_range
from perfmodel.inputs.record import as_dict

CACHE_VERSION = 2
"""Bump when the derivation below changes, so that cached tiers are recomputed."""

GBIT = 1e9 / 8
GBYTE = 1e9
US = 1e-6


@dataclass(frozen=True)
class Link:
    bytes_per_s: float
    latency_s: float


BASEBOARD_RANKS = 8
"""GPUs on one HGX/DGX baseboard's NVSwitch domain; a switched domain of more is rack-scale (Tiers.scaleup_rack)."""


@dataclass(frozen=True)
class Tiers:
    scaleup_by_members: tuple[float, ...]
    """Per-rank bandwidth of a group with k members inside one domain, indexed by k (0 and 1: no peer)."""
    scaleup_latency_s: float
    across_leaf: Link
    """Between domains under the same leaf switch."""
    across_spine: Link
    """Between domains under different leaves: through the spine, sharing oversubscribed uplinks."""
    domains_per_leaf: int
    ranks_per_domain: int
    scaleup_in_network_reduction: bool
    scaleout_in_network_reduction: bool
    scaleup_mesh: bool
    """Peer links between every pair of GPUs (AMD's xGMI, driven by RCCL) rather than a switch (NVLink, NCCL): its
    collectives ramp to their bus bandwidth differently (collectives.MESH_HALF_BANDWIDTH_S)."""
    step_latency_s: float
    """Software cost of one collective step across NICs (NCCL/RCCL kernel synchronisation, proxy thread); inside a
    domain the measured collectives fit none beyond the link hops (collectives.SCALEUP_STEP_LATENCY_S)."""

    @property
    def scaleup_rack(self) -> bool:
        """A switched domain beyond one baseboard's 8 GPUs (NVL72's NVLink switch trays): its all-gathers and
        reduce-scatters ramp to their bus bandwidth sooner (collectives.RACK_HALF_BANDWIDTH_S)."""
        return not self.scaleup_mesh and self.ranks_per_domain > BASEBOARD_RANKS

    def scaleup_bytes_per_s(self, members: int) -> float:
        """0 for a group larger than the domain (a domain of one GPU has no pair): it has no scale-up path."""
        index = int(members)
        return self.scaleup_by_members[index] if index < len(self.scaleup_by_members) else 0.0


def _gpu(domain: int, index: int) -> tuple[str, int, int]:
    return ("gpu", domain, index)


def build_graph(hw: Hardware) -> Any:
    """The system as an undirected networkx graph; edges carry `bytes_per_s` (per direction) and `latency_s`."""
    import networkx as nx

    system, acc = hw.system, hw.accelerator
    dpl = int(system.fabric.domains_per_leaf.value)
    domains = (0, 1, dpl)
    size, per_node = hw.domain_gpus, int(system.gpus_per_node.value)
    hop_s = system.latency.scaleup_hop_us.value * US
    nic_bw = system.nics_per_gpu.value * acc.nic_gbit_per_s.value * GBIT
    nic_s, switch_s = system.latency.nic_us.value * US, system.latency.switch_hop_us.value * US
    uplink_bw = nic_bw / system.fabric.oversubscription.value

    graph: nx.Graph[Any] = nx.Graph()
    for d in domains:
        gpus = [_gpu(d, i) for i in range(size)]
        if system.scaleup_kind == "switch":
            link_bw = acc.scaleup_gb_per_s_per_direction.value * GBYTE
            graph.add_edges_from((g, ("nvswitch", d)) for g in gpus)
            nx.set_edge_attributes(
                graph, {(g, ("nvswitch", d)): {"bytes_per_s": link_bw, "latency_s": hop_s} for g in gpus}
            )
        else:
            peer = acc.scaleup_peer_gb_per_s_per_direction or acc.scaleup_gb_per_s_per_direction
            for i, a in enumerate(gpus):
                for b in gpus[i + 1 :]:
                    graph.add_edge(a, b, bytes_per_s=peer.value * GBYTE, latency_s=hop_s)
        for i, g in enumerate(gpus):
            rail = i % per_node
            leaf = ("leaf", rail, d // dpl)
            graph.add_edge(g, ("nic", d, i), bytes_per_s=nic_bw, latency_s=nic_s)
            graph.add_edge(("nic", d, i), leaf, bytes_per_s=nic_bw, latency_s=switch_s)
            graph.add_edge(leaf, ("spine", rail), bytes_per_s=uplink_bw, latency_s=switch_s)
    return graph


def _path_link(graph: Any, a: object, b: object) -> Link:
    import networkx as nx

    path = nx.shortest_path(graph, a, b, weight="latency_s")
    edges = [graph.edges[u, v] for u, v in itertools.pairwise(path)]
    return Link(min(e["bytes_per_s"] for e in edges), sum(e["latency_s"] for e in edges))


def _scaleup_bandwidth(graph: Any, members: int) -> float:
    """Max-flow from one member to the other k-1 over the links among the members (and their switch)."""
    import networkx as nx
    from networkx.algorithms.flow import dinitz

    if members < 2:
        return 0.0
    nodes = [_gpu(0, i) for i in range(members)]
    sub: nx.Graph[Any] = nx.Graph(graph.subgraph([*nodes, ("nvswitch", 0)]))
    for other in nodes[1:]:
        sub.add_edge(other, "sink", bytes_per_s=float("inf"))
    return float(nx.maximum_flow_value(sub, nodes[0], "sink", capacity="bytes_per_s", flow_func=dinitz))


def derive_tiers(hw: Hardware) -> Tiers:
    """Tiers from the system's graph (networkx): a few paths and one max-flow per group size."""
    graph = build_graph(hw)
    dpl = int(hw.system.fabric.domains_per_leaf.value)
    ranks = hw.ranks_per_domain
    first = _gpu(0, 0)
    # A domain of one GPU (what-if domain_gpus=1) has no peer: every collective crosses domains over the NICs.
    inside = _path_link(graph, first, _gpu(0, 1)) if hw.domain_gpus > 1 else Link(0.0, 0.0)
    return Tiers(
        scaleup_by_members=tuple(_scaleup_bandwidth(graph, k) for k in range(ranks + 1)),
        scaleup_latency_s=inside.latency_s,
        across_leaf=_path_link(graph, first, _gpu(1, 0)),
        across_spine=_path_link(graph, first, _gpu(dpl, 0)),
        domains_per_leaf=dpl,
        ranks_per_domain=ranks,
        scaleup_in_network_reduction=hw.system.scaleup_in_network_reduction.value,
        scaleout_in_network_reduction=hw.system.fabric.in_network_reduction.value,
        scaleup_mesh=hw.system.scaleup_kind == "mesh",
        step_latency_s=hw.system.latency.collective_step_us.value * US,
    )


MAX_ENTRY_BYTES = 64 * 1024
"""A cache entry holds one bandwidth per group size up to the domain (at most 577 numbers): a few kB."""


_TIER_FIELDS = frozenset(f.name for f in fields(Tiers))


def _checked(raw: dict[str, Any]) -> Tiers | None:
    """The tiers a cache entry holds when it holds them all and nothing else: every number finite, bandwidths
    positive, latencies at most a second, counts whole and positive, flags true or false."""
    if set(raw) != _TIER_FIELDS:
        return None
    members = raw["scaleup_by_members"]
    leaf, spine = _link(raw["across_leaf"]), _link(raw["across_spine"])
    counts = (raw["domains_per_leaf"], raw["ranks_per_domain"])
    flags = (raw["scaleup_in_network_reduction"], raw["scaleout_in_network_reduction"], raw["scaleup_mesh"])
    valid = (
        isinstance(members, list)
        and all(in_range(m, 0, 1e15) for m in members)
        and in_range(raw["scaleup_latency_s"], 0, 1.0)
        and in_range(raw["step_latency_s"], 0, 1.0)
        and all(type(c) is int and c >= 1 for c in counts)
        and all(type(f) is bool for f in flags)
    )
    if not valid or leaf is None or spine is None:
        return None
    return Tiers(**(raw | {"scaleup_by_members": tuple(members), "across_leaf": leaf, "across_spine": spine}))


def _link(raw: Any) -> Link | None:
    if not isinstance(raw, dict) or set(raw) != {"bytes_per_s", "latency_s"}:
        return None
    bandwidth, latency = raw["bytes_per_s"], raw["latency_s"]
    valid = in_range(bandwidth, 0, 1e15) and bandwidth > 0 and in_range(latency, 0, 1.0)
    return Link(bandwidth, latency) if valid else None


def _read_entry(path: Path, key: str, hw: Hardware) -> Tiers | None:
    """The cached tiers at `path` when they can be trusted, else None (they are derived again and rewritten).

    Trusted means: an entry diskcache.read_private trusts, holding this hardware's key, a digest that matches its
    content, finite positive numbers, and the figures the hardware states itself."""
    data = read_private(path, MAX_ENTRY_BYTES)
    if data is None:
        return None
    try:
        entry = json.loads(data)
        if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("tiers"), dict):
            return None
        if entry.get("digest") != digest(path.parent, key, entry["tiers"]):
            return None
        checked = _checked(entry["tiers"])
    except (ValueError, RecursionError):
        return None
    if checked is None:
        return None
    expected = (
        hw.ranks_per_domain,
        int(hw.system.fabric.domains_per_leaf.value),
        hw.system.scaleup_in_network_reduction.value,
        hw.system.fabric.in_network_reduction.value,
        hw.system.latency.collective_step_us.value * US,
    )
    found = (
        checked.ranks_per_domain,
        checked.domains_per_leaf,
        checked.scaleup_in_network_reduction,
        checked.scaleout_in_network_reduction,
        checked.step_latency_s,
    )
    if found != expected or len(checked.scaleup_by_members) != checked.ranks_per_domain + 1:
        return None
    return checked


@cache
def tiers(hw: Hardware) -> Tiers:
    """Tiers of a system, derived once per hardware description and kept on disk.

    Importing networkx and building the graph costs more than a whole prediction, so the result is cached under
    ~/.cache/perfmodel (PERFMODEL_CACHE_DIR overrides; PERFMODEL_CACHE_DIR=off disables), keyed by a hash of the
    hardware description and the derivation's version. An entry is an input like any other and is checked on read
    (`_read_entry`); one that fails is ignored, derived again and rewritten.
    """
    key = hashlib.sha256(f"{CACHE_VERSION}:{json.dumps(as_dict(hw))}".encode()).hexdigest()[:32]
    directory = cache_dir()
    if directory is None:
        return derive_tiers(hw)
    path = directory / f"tiers-{key}.json"
    cached = _read_entry(path, key, hw)
    if cached is not None:
        return cached
    derived = derive_tiers(hw)
    payload = asdict(derived)
    write_atomic(directory, path, json.dumps({"key": key, "digest": digest(directory, key, payload), "tiers": payload}))
    return derived
