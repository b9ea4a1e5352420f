"""Cost of NCCL-style collectives on a group of ranks placed on the system (alpha-beta model).

A group of `size` ranks at `stride` in Megatron order fills k = min(size, ranks_per_domain / stride) slots of each
scale-up domain and spans m = size / k domains. Each rank's data crosses two kinds of hop: the scale-up links inside
a domain, and the NICs across domains, which carry 1/k of the data per rank (each of the k ranks uses its own NIC,
which is what a rail-optimised fabric is built for). A ring over n ranks takes (n-1) steps of latency and moves
(n-1)/n of the data through each rank's link; in-network reduction (NVLink SHARP, InfiniBand SHARP) lets an
all-reduce move the data once instead of twice.

The two hops run at once, not one after the other: NCCL's ring (and its tree) is one pipeline through every rank, in
which each chunk's NVLink and NIC hops overlap with other chunks', so its bus bandwidth is the slower hop's. NCCL's
own cost model (src/graph/tuning.cc) prices a multi-node ring at nChannels x the inter-node bandwidth, and its
latency as the intra-node steps' plus the inter-node steps' (recalled from the public source, not a stored copy:
labelled). Adding a scale-up phase's time to the NIC phase's, as a two-phase hierarchical algorithm would, prices
a DP group of k ranks per node up to twice too slowly on the data (k = 8 on H100: 7/8 S over 360 GB/s of NVLink
against S/8 over 45 GB/s of NIC).
"""

from __future__ import annotations

from typing import NamedTuple

from perfmodel.physics.algebra import Number, ceil, equal, floor, log2, lookup, maximum, minimum, where
from perfmodel.physics.efficiency import Efficiency
from perfmodel.physics.topology import Tiers

NCCL_CALL_LATENCY_S = 4.98e-6
"""Fixed latency of one collective call on top of its per-step latencies: kernel launch, channel set-up and the
closing synchronisation, fitted to measured collectives (physics.collective_kernels; NCCL's own cost model,
src/graph/tuning.cc `baseLat`, says 8.4 us for a ring with the Simple protocol, recalled, not stored; the measured
8-GPU floor is 30-45 us through XLA and torch.distributed, 6-17 us in rccl-tests). Thousands of TP collectives per
step, and DP buckets at hundreds of ranks, each pay it: short steps across many ranks are latency-bound."""
SCALEUP_STEP_LATENCY_S = 0.0
"""Software latency of one ring step inside a scale-up domain on top of its two link hops, fitted to measured
collectives (physics.collective_kernels): none beyond the hops (GB200 NVL72's all-gather floor grows 1.4 us per
rank, 17 us at 4 ranks to 95 us at 64: the two 0.7 us hops). The system file's `collective_step_us` stays the step
cost across NICs, which no bundled row measures."""
HALF_BANDWIDTH_S = 38.8e-6
"""Data time (at full bus bandwidth) of a call whose data moves at half that bandwidth through a switch (NCCL on
NVLink), fitted to measured collectives (physics.collective_kernels) with RAMP_EXPONENT: NCCL fills a pipeline of
chunks per channel before the links run at speed, and uses fewer channels for smaller calls. A time, not a size: the
fill is paid in time, so a call bound by a slower link (a NIC at a tenth of NVLink's rate) reaches its bus bandwidth
at a tenth of the bytes (8-GPU NVLink reaches half its peak at 8-64 MiB, NVL72's 64-rank groups at 128-150 MiB:
kernels README). Fitted in bytes instead, the ramp priced NIC-bound DP buckets as slowly as NVLink's, and the
calibration pinned the NIC efficiency at its bound to pay for it. Across NICs only a 4-node EFA all-reduce sweep
measures it (not bundled): with 75 us more per step across its NICs its 0.25 MiB-16 GiB rows fit this ramp within
3-7%, where a ramp in bytes prices them 12-32% slow (docs/model.md, Collectives)."""
RACK_HALF_BANDWIDTH_S = 20.3e-6
"""HALF_BANDWIDTH_S on a rack-scale switched domain (topology.Tiers.scaleup_rack: NVL72's NVLink switch trays),
fitted with it: OpenXLA's GB200 and GB300 NVL72 tables reach their bus bandwidth at smaller calls than its H100 and
B200 baseboards' (an 8-rank all-gather of 1 MiB in about 21 us on GB200 against 36 us on B200; nccl-tests on AWS
p6-b200 agree with B200's), which one half-rate time priced 30-45% slow at 1-64 MiB, the TP calls of a step. Why
is not measured here (NCCL's channel count over NVL72's 18 switch chips per GPU against HGX's two is a guess)."""
ALL_REDUCE_HALF_BANDWIDTH_S = 73.7e-6
"""The same for an all-reduce through a switch, fitted with it: NCCL's all-reduce kernel loads, adds and stores every
chunk in the SMs at each step of its reduce-scatter half before its all-gather half runs, so its pipeline reaches
speed over 2.5x the time an all-gather's copies do. One half-rate time for both priced GB200's 8-rank all-gathers
and reduce-scatters 44% slow at 8-64 MiB (the TP calls of a step) and its all-reduces 10% fast."""
RAMP_EXPONENT = 0.699
"""How slowly the bus bandwidth approaches its peak: data time x (1 + (HALF_BANDWIDTH_S / data time)^exponent),
fitted with it. Below 1 a ramp's cost grows with the message, as a fixed pipeline-fill latency (exponent 1) does
not."""
MESH_HALF_BANDWIDTH_S = 4.73e-6
"""The same on a mesh of peer links (RCCL on xGMI), fitted on its own rows: RCCL drives each peer link with its own
channels, and once each XLA ROCm table's runtime floor is priced (physics.collective_kernels: 64 us on gfx950, 182 us
on gfx942; the kernels README says 55-370 us) its 1 MiB-1 GiB calls are near their latencies plus their data at one
bus rate. Fitted jointly with NVLink's, the ramp took XLA's floor for RCCL's and priced NCCL's 1-8 MiB all-gathers
and reduce-scatters 40-60% slow."""
IN_SWITCH_SHARE = 0.687
"""Share of a ring's scale-up rate an in-switch (NVLink SHARP) all-reduce reaches, fitted to measured collectives
(physics.collective_kernels): nccl-tests measures H200's NVLS all-reduce at a bus bandwidth of 482 GB/s against the
ring's 367 (1.3x, not the 1.75x of moving the data once instead of twice at the ring's rate)."""
PAIR_SHARE = 0.757
"""Share of the ring's scale-up rate a group with two members on one switched baseboard (an HGX/DGX NVSwitch domain:
TP 2, a CP pair) reaches, fitted to measured collectives (physics.collective_kernels). At one efficiency for every
group size, OpenXLA's tables priced H100's 2-rank calls of 64 MiB and more fast (all-gathers 14%, reduce-scatters 38%,
all-reduces 22%) and B200's alike (18%, 17%, 11%; their all-to-alls, priced not fitted, 9% and 33%), while their 4-
and 8-rank calls ranged from 13% fast to 20% slow, most within 7%: a pair does not drive the switch at the rate a
larger ring does. Why is not measured here (NCCL's channel count for a two-rank ring is a guess); no nccl-tests row
measures two ranks, NVL72's tables start at four, and RCCL's mesh (one peer link per pair) priced its 2-rank calls
within 12% at one efficiency (MI300X, MI355X), so neither takes the share. It prices a pair's collectives
(all-gather, reduce-scatter, all-reduce, all-to-all: `intra_bytes_per_s`), not point-to-point sends (a CP ring's
steps, pipeline sends: `pair_bytes_per_s`), which no fitted row measures."""


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
    call_latency_s: float = NCCL_CALL_LATENCY_S
    half_bandwidth_s: float = HALF_BANDWIDTH_S
    """The ramp's half-rate data time: HALF_BANDWIDTH_S through a switch, MESH_HALF_BANDWIDTH_S on a mesh."""
    all_reduce_half_bandwidth_s: float = ALL_REDUCE_HALF_BANDWIDTH_S
    """An all-reduce's: ALL_REDUCE_HALF_BANDWIDTH_S through a switch, MESH_HALF_BANDWIDTH_S on a mesh."""
    in_switch_share: float = IN_SWITCH_SHARE
    ramp_exponent: float = RAMP_EXPONENT


def group_links(
    tiers: Tiers, eff: Efficiency, size: Number, stride: Number, pair_share: float = PAIR_SHARE
) -> GroupLinks:
    """What one rank of a group of `size` ranks at `stride` sees; `pair_share` is PAIR_SHARE but in its fit."""
    per_domain = minimum(size, maximum(1.0, floor(tiers.ranks_per_domain / stride)))
    switched_baseboard = not (tiers.scaleup_mesh or tiers.scaleup_rack)
    share = where(equal(per_domain, 2.0), pair_share, 1.0) if switched_baseboard else 1.0
    domains = ceil(size / per_domain)
    spine = domains > tiers.domains_per_leaf
    inter = where(spine, tiers.across_spine.bytes_per_s, tiers.across_leaf.bytes_per_s)
    inter_latency = where(spine, tiers.across_spine.latency_s, tiers.across_leaf.latency_s)
    return GroupLinks(
        size=size,
        per_domain=per_domain,
        domains=domains,
        intra_bytes_per_s=lookup(tiers.scaleup_by_members, per_domain) * eff.scaleup * share,
        pair_bytes_per_s=tiers.scaleup_bytes_per_s(2) * eff.scaleup,
        intra_latency_s=tiers.scaleup_latency_s + SCALEUP_STEP_LATENCY_S,
        inter_bytes_per_s=inter * eff.scaleout,
        inter_latency_s=inter_latency + tiers.step_latency_s,
        half_bandwidth_s=switch_half_bandwidth_s(tiers, MESH_HALF_BANDWIDTH_S, RACK_HALF_BANDWIDTH_S, HALF_BANDWIDTH_S),
        all_reduce_half_bandwidth_s=MESH_HALF_BANDWIDTH_S if tiers.scaleup_mesh else ALL_REDUCE_HALF_BANDWIDTH_S,
    )


def switch_half_bandwidth_s(tiers: Tiers, mesh_s: float, rack_s: float, baseboard_s: float) -> float:
    """The all-gather and reduce-scatter ramp's half-rate time of the domain's kind."""
    return mesh_s if tiers.scaleup_mesh else rack_s if tiers.scaleup_rack else baseboard_s


def _ramped(data_s: Number, g: GroupLinks, half_s: float | None = None) -> Number:
    """A call's data time at full bus bandwidth stretched by its ramp (the group's, unless `half_s` is given)."""
    half = g.half_bandwidth_s if half_s is None else half_s
    return data_s * (1.0 + (half / maximum(data_s, 1e-12)) ** g.ramp_exponent)


def _ring_data(ranks: Number, size_bytes: Number, bytes_per_s: Number) -> Number:
    """The data term of a ring reduce-scatter or all-gather phase: (n-1)/n of the data through each link (its
    (n-1) steps of latency are added by the caller, once for both hops)."""
    safe_bw = maximum(bytes_per_s, 1.0)  # a one-rank phase has no link and moves nothing
    return (ranks - 1) / ranks * size_bytes / safe_bw


def reduce_scatter(size_bytes: Number, g: GroupLinks) -> Number:
    """Reduce-scatter of `size_bytes` (the full tensor) so each rank ends with size/n; all-gather costs the same.
    Both hops' latencies add up; their data moves at the slower hop's pace (one pipelined ring)."""
    latency = (g.per_domain - 1) * g.intra_latency_s + (g.domains - 1) * g.inter_latency_s
    intra = _ring_data(g.per_domain, size_bytes, g.intra_bytes_per_s)
    inter = _ring_data(g.domains, size_bytes / g.per_domain, g.inter_bytes_per_s)
    return _call_latency(g) + latency + _ramped(maximum(intra, inter), g)


def _call_latency(g: GroupLinks) -> Number:
    """NCCL's fixed cost of one collective call; a group of one rank calls nothing."""
    return where(g.size > 1, g.call_latency_s, 0.0)


all_gather = reduce_scatter


def all_reduce(size_bytes: Number, g: GroupLinks, tiers: Tiers) -> Number:
    """Hierarchical all-reduce: reduce-scatter and all-gather in the domain, all-reduce of 1/k across domains, the
    two pipelined as in `reduce_scatter` (latencies add, the data moves at the slower hop's pace).

    Across domains NCCL picks the faster of a ring and a double binary tree (log-depth latency); in-network reduction
    replaces a reduce-scatter + all-gather pair by one pass of the data.
    """
    k, d = g.per_domain, g.domains
    inside, across = k > 1, d > 1
    intra_options = [(2 * (k - 1) * g.intra_latency_s, 2 * _ring_data(k, size_bytes, g.intra_bytes_per_s))]
    if tiers.scaleup_in_network_reduction:
        in_switch = size_bytes / maximum(g.intra_bytes_per_s * g.in_switch_share, 1.0)
        intra_options.append((where(inside, 2 * g.intra_latency_s, 0.0), where(inside, in_switch, 0.0)))
    share = size_bytes / k
    once, twice = share / g.inter_bytes_per_s, 2 * share / g.inter_bytes_per_s
    inter_options = [
        (2 * (d - 1) * g.inter_latency_s, 2 * _ring_data(d, share, g.inter_bytes_per_s)),
        (2 * log2(d) * g.inter_latency_s, where(across, twice, 0.0)),  # double binary tree
    ]
    if tiers.scaleout_in_network_reduction:
        inter_options.append((where(across, 2 * g.inter_latency_s, 0.0), where(across, once, 0.0)))
    intra_latency, intra_data = _fastest(intra_options)
    inter_latency, inter_data = _fastest(inter_options)
    data = _ramped(maximum(intra_data, inter_data), g, g.all_reduce_half_bandwidth_s)
    return _call_latency(g) + intra_latency + inter_latency + data


def _fastest(options: list[tuple[Number, Number]]) -> tuple[Number, Number]:
    """(latency, data time) of the algorithm with the least total of the two: NCCL's choice per call."""
    latency, data = options[0]
    for other_latency, other_data in options[1:]:
        faster = other_latency + other_data < latency + data
        latency, data = where(faster, other_latency, latency), where(faster, other_data, data)
    return latency, data


def all_to_all(size_bytes: Number, g: GroupLinks) -> Number:
    """Each rank sends size/n to every other rank: the NIC carries the share bound for other domains."""
    n = g.size
    intra = (g.per_domain - 1) / n * size_bytes / maximum(g.intra_bytes_per_s, 1.0)
    inter = (n - g.per_domain) / n * size_bytes / g.inter_bytes_per_s
    latency = (n - 1) * minimum(g.intra_latency_s, g.inter_latency_s)
    return _call_latency(g) + latency + _ramped(maximum(intra, inter), g)


def token_all_to_all(token_bytes: Number, copies: float, g: GroupLinks, missed: Number | None = None) -> Number:
    """Expert dispatch (or combine) of tokens that each go to `copies` ranks chosen uniformly, hierarchically as
    DeepEP and HybridEP do (Megatron's flex dispatcher): a token crosses the NICs once per remote domain that holds
    one of its experts, to the rank of the same local index there, which forwards it over the scale-up links.

    With D domains a token misses a given other domain with probability `missed`, (1 - 1/D)^copies unless routing
    limits its domains (moe.domain_missed), so each rank's NIC carries (D - 1)(1 - missed) x token_bytes instead of
    copies x (D - 1)/D x token_bytes (top-8 over 4 nodes: 2.7 sends per token instead of 6). Its scale-up links
    carry the copies for its own domain's other ranks and fan out the ones it receives for them. Inside one domain
    this is the plain all-to-all (its call latency and ramp on the rank's `copies` x token_bytes)."""
    n, k, d = g.size, g.per_domain, g.domains
    local = (k - 1) / n * copies * token_bytes
    forwarded = (n - k) / n * copies * token_bytes * (k - 1) / k
    remote_domains = (d - 1) * (1 - ((1 - 1 / d) ** copies if missed is None else missed))
    intra = (local + forwarded) / maximum(g.intra_bytes_per_s, 1.0)
    inter = remote_domains * token_bytes / g.inter_bytes_per_s
    latency = (n - 1) * minimum(g.intra_latency_s, g.inter_latency_s)
    return _call_latency(g) + latency + _ramped(maximum(intra, inter), g)


def send_recv(size_bytes: Number, g: GroupLinks) -> Number:
    """Point-to-point transfer to the next rank of the group (pipeline stages): across domains when it spans them."""
    crosses = g.domains > 1
    bw = where(crosses, g.inter_bytes_per_s, g.pair_bytes_per_s)
    latency = where(crosses, g.inter_latency_s, g.intra_latency_s)
    return _call_latency(g) + latency + _ramped(size_bytes / maximum(bw, 1.0), g)
