"""Which linear layers LoRA adapts, by the names workload.py gives a layer's linear layers.

`attention`: the attention projections (QKV and output; MLA's down- and up-projections), as the MLPerf
llama2_70b_lora benchmark trains them (`qkv_proj,o_proj`, mlperf_benchmarks.md). `mlp`: fc1 (gate and up fused for
SwiGLU, one adapter as Megatron-Bridge's `linear_fc1`) and fc2. `all-linear`: both, Megatron-Bridge's default
target modules (`linear_qkv`, `linear_proj`, `linear_fc1`, `linear_fc2`). The LM head and embeddings stay frozen.
"""

from __future__ import annotations

ATTENTION_LAYERS = frozenset(("qkv", "proj", "q_proj", "q_down", "q_up", "kv_down", "kv_up"))
MLP_LAYERS = frozenset(("fc1", "fc2"))
LORA_MODULES = {"attention": ATTENTION_LAYERS, "mlp": MLP_LAYERS, "all-linear": ATTENTION_LAYERS | MLP_LAYERS}


def adapted_layers(modules: str) -> frozenset[str]:
    """The linear layers a LoRA target (`attention`, `mlp`, `all-linear`) adapts."""
    return LORA_MODULES[modules]
