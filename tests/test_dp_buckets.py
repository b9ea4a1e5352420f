"""DP gradient buckets: Megatron's bucket size, per-bucket latency, the first/last bucket exposed."""

import math

import pytest

from perfmodel.inputs.hardware import resolve
from perfmodel.physics.collectives import (
    HALF_BANDWIDTH_S,
    NCCL_CALL_LATENCY_S,
    RAMP_EXPONENT,
    group_links,
    reduce_scatter,
)
from perfmodel.physics.efficiency import DEFAULTS
from perfmodel.physics.step import bucketed_exposed, dp_buckets
from perfmodel.physics.topology import tiers

EFF = DEFAULTS["hopper"]
H100 = tiers(resolve("h100-sxm"))


def test_bucket_count_follows_megatron_default() -> None:
    """Megatron-Core DDP bucket: max(40M, 1M x DP ranks) parameters."""
    assert dp_buckets(1e9, 8) == math.ceil(1e9 / 40e6)
    assert dp_buckets(1e9, 256) == math.ceil(1e9 / 256e6)
    assert dp_buckets(20e6, 8) == 1  # LoRA adapters: one bucket


def test_each_bucket_pays_the_ring_latency_across_nodes() -> None:
    g = group_links(H100, EFF, 512, 8)  # DP 512 at stride 8 (TP 8): one rank per node, 512 nodes
    size, buckets = 4e9, 10
    alpha = NCCL_CALL_LATENCY_S + (g.per_domain - 1) * g.intra_latency_s + (g.domains - 1) * g.inter_latency_s
    bucketed = buckets * reduce_scatter(size / buckets, g)
    data = (g.domains - 1) / g.domains * size / g.inter_bytes_per_s  # one rank per node: the NIC hop is the bound
    ramps = [1 + (HALF_BANDWIDTH_S / s) ** RAMP_EXPONENT for s in (data / buckets, data)]
    assert bucketed == pytest.approx(reduce_scatter(size, g) + (buckets - 1) * alpha + data * (ramps[0] - ramps[1]))
    assert alpha > 1e-3  # 511 ring steps of NIC latency: at hundreds of ranks latency, not bandwidth, dominates


def test_first_or_last_bucket_is_never_hidden() -> None:
    assert bucketed_exposed(1.0, 1, 100.0, 0.9) == 1.0  # one bucket: ready only when the backward ends
    assert bucketed_exposed(1.0, 10, 100.0, 0.9) == pytest.approx(0.1)
    assert bucketed_exposed(1.0, 10, 0.0, 0.9) == 1.0  # no window: all of it
