"""Transformer architectures of the model zoo and their exact parameter counts."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from perfmodel.errors import PerfmodelError, shown

MAX_LAYERS = 1_000
"""The deepest published dense models have about 130 layers (Llama 3.1 405B 126, Megatron's 1T 128); a search over
a 10,000-layer model prices millions of pipeline layouts for seconds, so deeper is refused."""


class ModelSpec(BaseModel):
    """Shapes of a decoder-only transformer. Counts follow the Hugging Face checkpoints exactly."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    id: str = "custom"
    name: str = "custom model"
    layers: int = Field(gt=0, le=MAX_LAYERS)
    hidden: int = Field(gt=0, le=1_000_000)
    ffn: int = Field(gt=0, le=10_000_000)
    heads: int = Field(gt=0, le=100_000)
    kv_heads: int = Field(gt=0, le=100_000)
    vocab: int = Field(gt=0, le=100_000_000)
    tied_embeddings: bool = False
    mlp: Literal["swiglu", "gelu"] = "swiglu"
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    bias: bool = False
    learned_positions: int = Field(default=0, ge=0, description="rows of a learned position table (0 = RoPE)")

    @model_validator(mode="after")
    def _shapes_agree(self) -> ModelSpec:
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        return self

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        """Width of the K (or V) projection: kv_heads x head_dim (grouped-query attention)."""
        return self.kv_heads * self.head_dim

    @property
    def mlp_in_width(self) -> int:
        """Output width of the first MLP GEMM: gate and up fused for SwiGLU."""
        return 2 * self.ffn if self.mlp == "swiglu" else self.ffn

    @property
    def attention_params_per_layer(self) -> int:
        h = self.hidden
        weights = h * (h + 2 * self.kv_dim) + h * h
        biases = (h + 2 * self.kv_dim) + h if self.bias else 0
        return weights + biases

    @property
    def mlp_params_per_layer(self) -> int:
        weights = self.hidden * self.mlp_in_width + self.ffn * self.hidden
        biases = self.mlp_in_width + self.hidden if self.bias else 0
        return weights + biases

    @property
    def norm_params(self) -> int:
        """Parameters of one normalisation layer (LayerNorm has a bias too)."""
        return self.hidden * (2 if self.norm == "layernorm" else 1)

    @property
    def params_per_layer(self) -> int:
        return self.attention_params_per_layer + self.mlp_params_per_layer + 2 * self.norm_params

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden + self.learned_positions * self.hidden

    @property
    def lm_head_params(self) -> int:
        return 0 if self.tied_embeddings else self.vocab * self.hidden

    def lora_params_per_layer(self, rank: int) -> int:
        """LoRA adapters of rank r on the QKV and output projections: A (d_in x r) and B (r x d_out) each."""
        return rank * (self.hidden + self.hidden + 2 * self.kv_dim) + rank * (self.hidden + self.hidden)

    @property
    def params(self) -> int:
        return self.layers * self.params_per_layer + self.embedding_params + self.norm_params + self.lm_head_params

    @property
    def matmul_params(self) -> int:
        """Parameters that take part in GEMMs per token: every linear layer plus the LM head (not the lookup)."""
        linear = self.hidden * (2 * self.hidden + 2 * self.kv_dim) + self.hidden * (self.mlp_in_width + self.ffn)
        return self.layers * linear + self.vocab * self.hidden

    def model_flops_per_token(self, seq_len: int) -> float:
        """Training FLOPs per token: 6 x matmul parameters + causal attention, no recomputation.

        The convention of NVIDIA's published model TFLOP/s (Megatron-Bridge flop_utils) and of the Llama 3 paper's
        MFU: attention scores and context cost 2 x 2 x s x d_model per token per layer in the forward pass, halved
        by the causal mask, and three times that for forward + backward.
        """
        attention = 6 * self.layers * seq_len * self.hidden
        return 6 * self.matmul_params + attention


def _llama(
    model_id: str, name: str, layers: int, hidden: int, ffn: int, heads: int, vocab: int, kv_heads: int = 8
) -> ModelSpec:
    return ModelSpec(
        id=model_id, name=name, layers=layers, hidden=hidden, ffn=ffn, heads=heads, kv_heads=kv_heads, vocab=vocab
    )


def gpt(model_id: str, name: str, layers: int, hidden: int, heads: int, vocab: int, seq_len: int) -> ModelSpec:
    """A GPT-2/3-style model as Megatron-LM builds it: GELU MLP of 4h, LayerNorm, biases, learned positions,
    embeddings tied to the LM head."""
    return ModelSpec(
        id=model_id,
        name=name,
        layers=layers,
        hidden=hidden,
        ffn=4 * hidden,
        heads=heads,
        kv_heads=heads,
        vocab=vocab,
        tied_embeddings=True,
        mlp="gelu",
        norm="layernorm",
        bias=True,
        learned_positions=seq_len,
    )


# Shapes from the models' config.json on Hugging Face (meta-llama) and, for GPT-3, Brown et al. 2020 Table 2.1 with
# the MLPerf 50,257-token vocabulary (mlperf_benchmarks.md); the smaller GPT-3s as NeMo's GPT3 5B/20B configs.
ZOO: dict[str, ModelSpec] = {
    m.id: m
    for m in (
        _llama("llama3.1-8b", "Llama 3.1 8B", 32, 4096, 14336, 32, 128256),
        _llama("llama3.1-70b", "Llama 3.1 70B", 80, 8192, 28672, 64, 128256),
        _llama("llama3.1-405b", "Llama 3.1 405B", 126, 16384, 53248, 128, 128256),
        _llama("llama2-7b", "Llama 2 7B", 32, 4096, 11008, 32, 32000, kv_heads=32),
        _llama("llama2-13b", "Llama 2 13B", 40, 5120, 13824, 40, 32000, kv_heads=40),
        _llama("llama2-70b", "Llama 2 70B", 80, 8192, 28672, 64, 32000),
        gpt("gpt3-5b", "GPT-3 5B", 24, 4096, 32, 50257, 2048),
        gpt("gpt3-20b", "GPT-3 20B", 44, 6144, 48, 50257, 2048),
        gpt("gpt3-175b", "GPT-3 175B", 96, 12288, 96, 50257, 2048),
    )
}


def get_model(model_id: str) -> ModelSpec:
    if model_id not in ZOO:
        raise PerfmodelError(f"unknown model '{shown(model_id)}'; valid: {', '.join(ZOO)}")
    return ZOO[model_id]
