"""DP gradient buckets: Megatron's bucket size, per-bucket latency, the first/last bucket exposed."""

import math
from dataclasses import replace

import pytest

import perfmodel
from perfmodel.inputs.hardware import resolve
from perfmodel.physics.collectives import (
    HALF_BANDWIDTH_S,
    NCCL_CALL_LATENCY_S,
    RAMP_EXPONENT,
    all_gather,
    group_links,
    reduce_scatter,
)
from perfmodel.physics.efficiency import DEFAULTS
from perfmodel.physics.step import bucketed_exposed, dp_buckets
from perfmodel.physics.topology import tiers

EFF = DEFAULTS["hopper"]
H100 = tiers(resolve("h100-sxm"))
NOTHING_HIDDEN = replace(EFF, overlap_dp=0.0)


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


def _llama8b_dp8_exposed_s(zero: int, gbs: int) -> tuple[float, float]:
    """Exposed DP time of Llama 3.1 8B on DP 8 inside one H100 node (BF16, MBS 1, 8K tokens) with nothing hidden
    (overlap_dp 0), and the model's parameters."""
    from perfmodel.inputs.models import get_model
    from perfmodel.inputs.precision import get_recipe
    from perfmodel.physics.parallel import Layout
    from perfmodel.physics.step import Context, evaluate
    from perfmodel.planning.predict import layout_vars

    hw, model = resolve("h100-sxm"), get_model("llama3.1-8b")
    ctx = Context(model, hw, get_recipe("bf16", hw.accelerator), NOTHING_HIDDEN, 8192)
    step = evaluate(ctx, layout_vars(Layout(1, 1, 1, 8, 1, 1, 1, gbs, 8192, "none", zero)))
    return float(step.dp_comm_exposed_s), model.params


def test_zero1_reduce_scatters_the_gradients_and_all_gathers_the_updated_parameters() -> None:
    """ZeRO-1 (Rajbhandari et al. 2020, "ZeRO", section 7.2.1; Megatron-Core's distributed optimizer): each step
    reduce-scatters the BF16 gradients and all-gathers the updated BF16 parameters, Psi bytes each, the 2 Psi of
    plain DDP's all-reduce. Llama 3.1 8B (8.03 B parameters, Meta's model card) with nothing hidden: the exposed DP
    time is the 201 Megatron buckets (8.03 B / 40 M) of each collective; the gather is half of it."""
    exposed_s, params = _llama8b_dp8_exposed_s(zero=1, gbs=64)
    assert params == pytest.approx(8.03e9, rel=0.005)
    g, buckets = group_links(H100, NOTHING_HIDDEN, 8, 1), math.ceil(params / 40e6)
    bucket_bytes = params * 2 / buckets
    assert buckets == 201 and all_gather(bucket_bytes, g) == pytest.approx(reduce_scatter(bucket_bytes, g))
    assert exposed_s == pytest.approx(buckets * 2 * reduce_scatter(bucket_bytes, g))


def test_zero3_gathers_the_weights_for_every_forward_and_backward() -> None:
    """ZeRO-3 (Rajbhandari et al. 2020, "ZeRO", section 7.2.2): each micro-batch all-gathers the BF16 weights for
    its forward and again for its backward and reduce-scatters the gradients, 3 Psi bytes, 1.5 times DDP's
    all-reduce. FSDP runs them one wrapped unit, a transformer layer, at a time (torch fully_shard per block,
    Megatron-FSDP's fsdp_unit_modules): Llama 3.1 8B's 32 layers, two micro-batches, nothing hidden, are 3 x 32
    calls of 1/32 of the weights each per micro-batch, each paying its ring's latency."""
    exposed_s, params = _llama8b_dp8_exposed_s(zero=3, gbs=16)
    g, layers, size = group_links(H100, NOTHING_HIDDEN, 8, 1), 32, params * 2
    per_microbatch = layers * (2 * all_gather(size / layers, g) + reduce_scatter(size / layers, g))
    assert exposed_s == pytest.approx(2 * per_microbatch)


def test_zero3_pays_a_ring_latency_per_layer_across_thousands_of_ranks() -> None:
    """At DP 2,048 (one rank per H100 node at a stride of TP 8) each of a layer's gathers waits 2,047 NIC ring
    steps, so Llama 3.1 8B's 32 per-layer gathers cost at least 32 such latencies: priced as one call for the
    whole model, the search took ZeRO-3 for 8B-70B models on 4,096-32,768 GPUs at a fraction of that."""
    g, layers, size = group_links(H100, EFF, 2048, 8), 32, 8.03e9 * 2 / 8
    alpha = NCCL_CALL_LATENCY_S + (g.domains - 1) * g.inter_latency_s
    assert g.domains == 2048 and alpha > 5e-3
    per_layer = layers * all_gather(size / layers, g)
    assert per_layer > all_gather(size, g) + (layers - 1) * alpha


def test_the_search_leaves_zero3_whose_layer_gathers_wait_on_hundreds_of_nic_steps() -> None:
    """Llama 3.1 8B on 32,768 GB200 (GBS 2,048): ZeRO-3 at TP4 CP4 DP2048 shards over 8,192 ranks, 16 per NVL72
    rack in 512 racks, so each of its 3 x 32 layer calls a micro-batch waits 511 NIC ring steps: its exposed DP time
    alone is more than the searched layout's whole step. Priced as one call for the rank's weights, the search took
    it at 90 ms a step."""
    question = {"model": "llama3.1-8b", "gpu": "gb200", "n_gpus": 32768, "precision": "bf16"}
    searched = perfmodel.predict(**question)
    fsdp = perfmodel.predict(**question, tp=4, cp=4, pp=1, zero=3, mbs=1, recompute="none")  # type: ignore[arg-type]
    assert searched.layout.zero < 3  # type: ignore[union-attr]
    assert fsdp.step.dp_comm_exposed_s > searched.step_time_s  # type: ignore[union-attr]
