"""Cost of NCCL-style collectives on a group of ranks placed on the system (alpha-beta model).

A group of `size` ranks at `stride` in Megatron order fills k = min(size, ranks_per_domain / stride) slots of each
scale-up domain and spans m = size / k domains. Collectives run hierarchically: a phase inside each domain over the
scale-up links, then a phase across domains over the NICs carrying 1/k of the data per rank (each of the k ranks
uses its own NIC, which is what a rail-optimised fabric is built for). A ring phase over n ranks costs
(n-1) steps of latency and moves (n-1)/n of the data through each rank's link; in-network reduction (NVLink SHARP,
InfiniBand SHARP) lets an all-reduce move the data once instead of twice.
"""

from __future__ import annotations

from typing import NamedTuple

from perfmodel.physics.algebra import Number, ceil, floor, log2, lookup, maximum, minimum, where
from perfmodel.physics.efficiency import Efficiency
from perfmodel.physics.topology import Tiers

NCCL_CALL_LATENCY_S = 8.4e-6
"""Fixed latency of one NCCL collective call on top of its per-step latencies: NCCL's own cost model
(src/graph/tuning.cc, `baseLat`, ring algorithm with the Simple protocol that large collectives use: 8.4 us) for
the kernel launch, channel set-up and the closing synchronisation. Thousands of TP collectives per step, and DP
buckets at hundreds of ranks, each pay it: short steps across many ranks are latency-bound, not bandwidth-bound."""


class GroupLinks(NamedTuple):
    """What one rank of a group sees: members per domain, domains spanned, and each phase's link."""

    size: Number
    per_domain: Number
    domains: Number
    intra_bytes_per_s: Number
    pair_bytes_per_s: float
    """Scale-up bandwidth between two ranks alone (one peer link on a mesh)."""
    intra_latency_s: Number
    inter_bytes_per_s: Number
    inter_latency_s: Number


def group_links(tiers: Tiers, eff: Efficiency, size: Number, stride: Number) -> GroupLinks:
    per_domain = minimum(size, maximum(1.0, floor(tiers.ranks_per_domain / stride)))
    domains = ceil(size / per_domain)
    spine = domains > tiers.domains_per_leaf
    inter = where(spine, tiers.across_spine.bytes_per_s, tiers.across_leaf.bytes_per_s)
    inter_latency = where(spine, tiers.across_spine.latency_s, tiers.across_leaf.latency_s)
    return GroupLinks(
        size=size,
        per_domain=per_domain,
        domains=domains,
        intra_bytes_per_s=lookup(tiers.scaleup_by_members, per_domain) * eff.scaleup,
        pair_bytes_per_s=tiers.scaleup_bytes_per_s(2) * eff.scaleup,
        intra_latency_s=tiers.scaleup_latency_s + tiers.step_latency_s,
        inter_bytes_per_s=inter * eff.scaleout,
        inter_latency_s=inter_latency + tiers.step_latency_s,
    )


def _ring(ranks: Number, size_bytes: Number, bytes_per_s: Number, latency_s: Number) -> Number:
    """One ring reduce-scatter or all-gather phase: (n-1) steps, (n-1)/n of the data through each link."""
    safe_bw = maximum(bytes_per_s, 1.0)  # a one-rank phase has no link and moves nothing
    return (ranks - 1) * latency_s + (ranks - 1) / ranks * size_bytes / safe_bw


def reduce_scatter(size_bytes: Number, g: GroupLinks) -> Number:
    """Reduce-scatter of `size_bytes` (the full tensor) so each rank ends with size/n; all-gather costs the same."""
    intra = _ring(g.per_domain, size_bytes, g.intra_bytes_per_s, g.intra_latency_s)
    inter = _ring(g.domains, size_bytes / g.per_domain, g.inter_bytes_per_s, g.inter_latency_s)
    return _call_latency(g) + intra + inter


def _call_latency(g: GroupLinks) -> Number:
    """NCCL's fixed cost of one collective call; a group of one rank calls nothing."""
    return where(g.size > 1, NCCL_CALL_LATENCY_S, 0.0)


all_gather = reduce_scatter


def all_reduce(size_bytes: Number, g: GroupLinks, tiers: Tiers) -> Number:
    """Hierarchical all-reduce: reduce-scatter and all-gather in the domain, all-reduce of 1/k across domains.

    Across domains NCCL picks the faster of a ring and a double binary tree (log-depth latency); in-network reduction
    replaces a reduce-scatter + all-gather pair by one pass of the data.
    """
    intra_pair = 2 * _ring(g.per_domain, size_bytes, g.intra_bytes_per_s, g.intra_latency_s)
    if tiers.scaleup_in_network_reduction:
        in_switch = 2 * g.intra_latency_s + size_bytes / maximum(g.intra_bytes_per_s, 1.0)
        intra_pair = where(g.per_domain > 1, minimum(intra_pair, in_switch), 0.0)
    share = size_bytes / g.per_domain
    ring = 2 * _ring(g.domains, share, g.inter_bytes_per_s, g.inter_latency_s)
    tree = 2 * log2(g.domains) * g.inter_latency_s + 2 * share / g.inter_bytes_per_s
    inter = where(g.domains > 1, minimum(ring, tree), 0.0)
    if tiers.scaleout_in_network_reduction:
        inter = where(g.domains > 1, minimum(inter, 2 * g.inter_latency_s + share / g.inter_bytes_per_s), 0.0)
    return _call_latency(g) + intra_pair + inter


def all_to_all(size_bytes: Number, g: GroupLinks) -> Number:
    """Each rank sends size/n to every other rank: the NIC carries the share bound for other domains."""
    n = g.size
    intra = (g.per_domain - 1) / n * size_bytes / maximum(g.intra_bytes_per_s, 1.0)
    inter = (n - g.per_domain) / n * size_bytes / g.inter_bytes_per_s
    return (n - 1) * minimum(g.intra_latency_s, g.inter_latency_s) + maximum(intra, inter)


def token_all_to_all(token_bytes: Number, copies: float, g: GroupLinks, missed: Number | None = None) -> Number:
    """Expert dispatch (or combine) of tokens that each go to `copies` ranks chosen uniformly, hierarchically as
    DeepEP and HybridEP do (Megatron's flex dispatcher): a token crosses the NICs once per remote domain that holds
    one of its experts, to the rank of the same local index there, which forwards it over the scale-up links.

    With D domains a token misses a given other domain with probability `missed`, (1 - 1/D)^copies unless routing
    limits its domains (moe.domain_missed), so each rank's NIC carries (D - 1)(1 - missed) x token_bytes instead of
    copies x (D - 1)/D x token_bytes (top-8 over 4 nodes: 2.7 sends per token instead of 6). Its scale-up links
    carry the copies for its own domain's other ranks and fan out the ones it receives for them. Inside one domain
    this is the plain all-to-all."""
    n, k, d = g.size, g.per_domain, g.domains
    local = (k - 1) / n * copies * token_bytes
    forwarded = (n - k) / n * copies * token_bytes * (k - 1) / k
    remote_domains = (d - 1) * (1 - ((1 - 1 / d) ** copies if missed is None else missed))
    intra = (local + forwarded) / maximum(g.intra_bytes_per_s, 1.0)
    inter = remote_domains * token_bytes / g.inter_bytes_per_s
    return (n - 1) * minimum(g.intra_latency_s, g.inter_latency_s) + maximum(intra, inter)


def send_recv(size_bytes: Number, g: GroupLinks) -> Number:
    """Point-to-point transfer to the next rank of the group (pipeline stages): across domains when it spans them."""
    crosses = g.domains > 1
    bw = where(crosses, g.inter_bytes_per_s, g.pair_bytes_per_s)
    latency = where(crosses, g.inter_latency_s, g.intra_latency_s)
    return latency + size_bytes / maximum(bw, 1.0)
