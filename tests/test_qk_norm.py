"""The per-head query and key RMSNorms (ModelSpec.qk_norm): their kernels and what they keep, by hand."""

from __future__ import annotations

from perfmodel.inputs.models import ZOO
from perfmodel.inputs.precision import RECIPES
from perfmodel.inputs.record import replaced
from perfmodel.physics import memory, moe
from perfmodel.physics.workload import Shard, attention_block_backward, attention_block_forward

QWEN3_30B = ZOO["qwen3-30b-a3b"]  # 32 query heads, 4 KV heads, head_dim 128: Q 4,096 wide, K 512


def _norm_bytes(model_id: str, backward: bool, tp: float = 2.0) -> dict[str, float]:
    md, bf16 = ZOO[model_id], RECIPES["bf16"]
    sh = Shard(md, bf16, tp, 1.0, 1.0, 4096)
    ops = attention_block_backward(sh, bf16) if backward else attention_block_forward(sh, bf16)
    return {op.name: op.bytes for op in ops if op.name.startswith(("q_norm", "k_norm"))}


def test_qk_norms_move_q_and_k_once_each_way() -> None:
    # 4,096 tokens on TP 2: Q is 4,096 x 2,048 per rank, K 4,096 x 256; forward reads and writes BF16 (4 B/element),
    # backward reads the input and the gradient and writes the gradient (6 B/element).
    assert _norm_bytes("qwen3-30b-a3b", backward=False) == {"q_norm": 4096 * 2048 * 4, "k_norm": 4096 * 256 * 4}
    assert _norm_bytes("qwen3-30b-a3b", backward=True) == {
        "q_norm.bwd": 4096 * 2048 * 6,
        "k_norm.bwd": 4096 * 256 * 6,
    }


def test_no_qk_norm_no_kernels() -> None:
    assert not ZOO["llama3.1-8b"].qk_norm
    assert _norm_bytes("llama3.1-8b", backward=False) == {}
    assert _norm_bytes("llama3.1-8b", backward=True) == {}


def test_qk_norm_inputs_are_kept_for_backward() -> None:
    # The norms keep their inputs, the projection's Q and K: (4,096 + 512) x 2 B per token, in both the dense
    # accounting and the MoE block's attention.
    without = replaced(QWEN3_30B, qk_norm=False)
    bf16 = RECIPES["bf16"]
    for mode in ("none", "selective"):
        dense = memory.activation_bytes_per_token(QWEN3_30B, bf16, mode)
        assert dense - memory.activation_bytes_per_token(without, bf16, mode) == (4096 + 512) * 2
        kept = moe._attention_saved_per_token(QWEN3_30B, bf16, mode, 1)
        assert kept - moe._attention_saved_per_token(without, bf16, mode, 1) == (4096 + 512) * 2


def test_the_key_norm_keeps_the_replicated_key_where_tp_exceeds_the_kv_heads() -> None:
    """Qwen3-30B-A3B's 4 KV heads at TP 8: each rank holds one whole K and V head (workload.kv_width: 1,024 wide
    across the group against kv_dim 512), and the key norm keeps its input at that width, as its kernel reads it
    (workload.qk_norms): three replicated tensors, not attention's two. At TP 4 nothing is replicated."""
    without = replaced(QWEN3_30B, qk_norm=False)
    assert memory.replicated_kv_bytes_per_token(QWEN3_30B, 8) == 3 * (1024 - 512) * 2
    assert memory.replicated_kv_bytes_per_token(without, 8) == 2 * (1024 - 512) * 2
    assert memory.replicated_kv_bytes_per_token(QWEN3_30B, 4) == 0
