"""Context parallelism's three exchanges (precision.Recipe.cp_comm): their bytes against hand counts, what each
hides, the head split Ulysses needs, and a million-token layout that fits only with CP and recompute."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import inputs_of, run_cli

import perfmodel
from perfmodel.errors import PerfmodelError
from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.models import get_model
from perfmodel.inputs.precision import cp_comm_recipe, get_recipe
from perfmodel.physics.collectives import NCCL_CALL_LATENCY_S, GroupLinks
from perfmodel.physics.efficiency import DEFAULTS
from perfmodel.physics.step import Context, _context_parallel
from perfmodel.physics.workload import Shard

GB_PER_S = 1e9


def _comm(mode: str, cp: int = 4, tp: int = 1, model: str = "llama2-7b") -> tuple[float, float]:
    """(forward, whole layer) seconds of a model's (Llama 2 7B's) CP exchange at 32,768 tokens, one micro-batch, over
    links of 1 GB/s with no latency inside one domain and no message-size ramp: each call pays NCCL's fixed latency
    alone."""
    hw, md = resolve("h100-sxm"), get_model(model)
    recipe = cp_comm_recipe(get_recipe("bf16", hw.accelerator), mode)
    ctx = Context(md, hw, recipe, DEFAULTS["hopper"], 32768)
    links = GroupLinks(cp, cp, 1, GB_PER_S, GB_PER_S, 0.0, GB_PER_S, 0.0, half_bandwidth_s=0.0)
    comm = _context_parallel(ctx, Shard(md, recipe, tp, cp, 1, 32768), links, 0.0)
    return float(comm.forward), float(comm.layer)


def test_each_exchange_moves_the_bytes_counted_by_hand() -> None:
    """Llama 2 7B (32 heads of 128, no GQA: K and V are 4,096 wide each), CP 4: a rank holds 8,192 tokens, its K and V
    chunk 8,192 x 2 x 4,096 x 2 bytes = 134.2 MB. Ring, as TransformerEngine schedules it (physics.ring): 3 hops of one
    chunk forward; backward a single hop of K, V at the first step, of dK, dV at the last, and CP - 2 = 2 hops of K, V
    with dK, dV in one call between; each hop a call. All-gather: the same 3 chunks arrive per rank (3/4 of the 4-chunk
    tensor), gathered again backward and the gradients reduce-scattered. Ulysses: Q, K, V and the output (4 x 8,192 x
    4,096 x 2 bytes = 268.4 MB per rank) all-to-all'd, 3/4 of it leaving the rank, and the same again backward. Each
    call pays NCCL's fixed latency."""
    chunk = 8192 * 2 * 4096 * 2 / GB_PER_S
    step = chunk + NCCL_CALL_LATENCY_S
    double = 2 * chunk + NCCL_CALL_LATENCY_S
    assert _comm("p2p") == pytest.approx((3 * step, 3 * step + 2 * step + 2 * double))
    gathered = 3 * chunk + NCCL_CALL_LATENCY_S
    assert _comm("all_gather") == pytest.approx((gathered, 3 * gathered))
    a2a = 0.75 * 4 * 8192 * 4096 * 2 / GB_PER_S + NCCL_CALL_LATENCY_S
    assert _comm("a2a") == pytest.approx((a2a, 2 * a2a))
    assert _comm("p2p", cp=1) == (0.0, 0.0)


def test_mla_exchanges_its_up_projected_heads() -> None:
    """DeepSeek-V3's attention (128 heads) runs on up-projected heads: keys of 128 + 64 (24,576 wide), values of 128
    (16,384), the output as wide as the values; its ModelSpec.kv_dim (7,168, hidden over heads times the KV heads) is
    no tensor's width. CP 4, TP 2: a rank holds 8,192 tokens of 64 heads, its K and V chunk 8,192 x (12,288 + 8,192) x
    2 bytes = 335.5 MB a hop; Ulysses moves Q, K, V and the output, 8,192 x (12,288 x 2 + 8,192 x 2) x 2 bytes."""
    chunk = 8192 * (12288 + 8192) * 2 / GB_PER_S
    step, double = chunk + NCCL_CALL_LATENCY_S, 2 * chunk + NCCL_CALL_LATENCY_S
    assert _comm("p2p", tp=2, model="deepseek-v3") == pytest.approx((3 * step, 3 * step + 2 * step + 2 * double))
    a2a = 0.75 * 8192 * (12288 + 12288 + 8192 + 8192) * 2 / GB_PER_S + NCCL_CALL_LATENCY_S
    assert _comm("a2a", tp=2, model="deepseek-v3") == pytest.approx((a2a, 2 * a2a))


def _long(**options: Any) -> perfmodel.Prediction:
    """Llama 2 7B, 128k tokens, on 128 H100s at TP4 CP4 (NVIDIA's long-sequence row of 128k, NeMo 24.03)."""
    found = perfmodel.predict(model="llama2-7b", gpu="h100-sxm", n_gpus=128, precision="fp8", seq_len=131072, tp=4,
                              pp=1, cp=4, gbs=32, mbs=1, recompute="none", **({"zero": 1} | options))  # fmt: skip
    assert isinstance(found, perfmodel.Prediction)
    return found


def test_only_the_ring_hides_behind_attention_and_the_default_is_the_stacks() -> None:
    ring, gathered, ulysses = (_long(cp_comm=mode) for mode in ("p2p", "all_gather", "a2a"))
    assert _long().step.step_time_s == ring.step.step_time_s  # Megatron's default: the ring
    exposed = {p.step.cp_comm_exposed_s for p in (ring, gathered, ulysses)}
    assert ring.step.cp_comm_exposed_s == min(exposed)
    assert ring.step.step_time_s < gathered.step.step_time_s
    torchtitan = _long(stack="torchtitan", zero=3)  # FSDP2: torchtitan has no ZeRO-1
    assert torchtitan.scenario.parallelism.cp_comm is None  # its stack's default, all-gather, priced
    assert torchtitan.step.cp_comm_exposed_s > ring.step.cp_comm_exposed_s


def test_ulysses_needs_tp_x_cp_to_divide_the_heads() -> None:
    """Llama 3.1 8B has 32 query heads and 8 KV heads: TP 8 x CP 8 = 64 divides neither."""
    with pytest.raises(PerfmodelError, match="TP x CP = 64 must divide the 32 attention heads and the 8 KV heads"):
        perfmodel.predict(model="llama3.1-8b", gpu="h100-sxm", n_gpus=64, seq_len=131072, tp=8, cp=8, cp_comm="a2a")
    ulysses = perfmodel.predict(model="llama3.1-8b", gpu="h100-sxm", n_gpus=64, seq_len=131072, cp_comm="a2a")
    assert isinstance(ulysses, perfmodel.Prediction)
    layout = ulysses.layout
    assert 8 % (layout.tp * layout.cp) == 0


def test_a_million_tokens_of_llama3_8b_on_32_h100s_fit_only_with_cp_and_full_recompute() -> None:
    """1,048,576-token sequences on 32 H100 80GB: without CP the smallest layout needs 125 GiB, without a full
    recompute 131 GiB (selective); the search finds CP 4 with a full recompute at 78 GiB."""
    fit = perfmodel.predict(model="llama3.1-8b", gpu="h100-sxm", n_gpus=32, seq_len=1048576, gbs=2)
    assert isinstance(fit, perfmodel.Prediction)
    assert fit.layout.cp > 1 and fit.layout.recompute == "full"
    forbidden: dict[str, Any]
    for forbidden in ({"cp": 1}, {"recompute": "selective"}, {"recompute": "none"}):
        with pytest.raises(PerfmodelError, match="no layout fits in memory"):
            perfmodel.predict(model="llama3.1-8b", gpu="h100-sxm", n_gpus=32, seq_len=1048576, gbs=2, **forbidden)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--seq-len", "64"), "--seq-len: 64 tokens is shorter than gpt-oss-20b's sliding window of 128"),
        (("--seq-len", "8196", "--tp", "1", "--cp", "4", "--pp", "1"), "divisible by 2 x CP x TP = 8"),
    ],
)
def test_impossible_long_context_inputs_are_one_line(args: tuple[str, ...], message: str) -> None:
    """A window longer than the sequence, a CP that does not split it into 2 x CP load-balanced chunks: one line
    naming the flag, exit 2 (a document longer than the packed sequence: tests/test_documents_lora.py)."""
    result = run_cli("predict", "--model", "gpt-oss-20b", "--gpu", "b200", "--gpus", "8", *args)
    assert result.code == 2 and result.out == "" and message in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_the_inputs_line_says_what_priced_the_attention() -> None:
    """A planner sees the exchange (and whether perfmodel chose it) and the documents the attention was priced over."""
    base = ("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "64", "--seq-len", "131072")
    chosen = run_cli(*base, "--cp", "8", "--tp", "4", "--doc-len", "8192")
    assert chosen.code == 0, chosen.err
    assert inputs_of(chosen.out)["attention"] == "over documents of 8,192 tokens, CP exchange p2p (the stack's)"
    given = run_cli(*base, "--cp", "8", "--tp", "4", "--cp-comm", "all_gather")
    assert given.code == 0 and inputs_of(given.out)["attention"] == "CP exchange all_gather"
