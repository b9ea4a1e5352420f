"""Transformer architectures of the model zoo and their exact parameter counts."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import MISSING
from typing import Any, Literal

from perfmodel.errors import FieldError, PerfmodelError, did_you_mean, shown
from perfmodel.inputs import hybrid
from perfmodel.inputs.documents import Packing
from perfmodel.inputs.lora import adapted_layers
from perfmodel.inputs.record import bounded, input_fields, record
from perfmodel.inputs.text import NOT_BLANK

MAX_LAYERS = 1_000
"""The deepest published dense models have about 130 layers (Llama 3.1 405B 126, Megatron's 1T 128); a search over
a 10,000-layer model prices millions of pipeline layouts for seconds, so deeper is refused."""


MAX_SOURCE_LENGTH = 2_000
"""The longest citation of a model's shapes allowed (the zoo's longest, Nemotron 3.5 Lightning's, is 743
characters)."""


MOE_ONLY = (
    "top_k", "shared_experts", "moe_ffn", "dense_layers", "expert_groups", "group_top_k", "capacity_factor",
    "pad_to_capacity", "expert_glu_clamp",
)  # fmt: skip
"""ModelSpec fields a dense model must leave at 0 (or false): set on one, they would price nothing and say nothing."""


@record
class ModelSpec:
    """Shapes of a decoder-only transformer. Counts follow the Hugging Face checkpoints exactly."""

    id: str = bounded("custom", pattern=NOT_BLANK)
    """The model's id in outputs (not blank: every row's `model` column)."""
    name: str = bounded("custom model", pattern=NOT_BLANK)
    """The model's name in outputs (not blank: every table's heading)."""
    # not compared: two specs of the same shapes are one model to the physics and its caches
    source: str = dataclasses.field(default="", compare=False, metadata={"limits": {"max_length": MAX_SOURCE_LENGTH}})
    """Where the shapes come from: the model card, paper or config with its locator (a zoo model's citation). Left
    out: the model file's path ('given' inline), and over a `base` whose shapes it changes, '<that>, based on <the
    base's citation>'."""
    layers: int = bounded(ge=1, le=MAX_LAYERS)
    """Transformer layers."""
    hidden: int = bounded(ge=1, le=1_000_000)
    """Hidden (model) width."""
    ffn: int = bounded(ge=1, le=10_000_000)
    """Hidden width of the dense MLP."""
    heads: int = bounded(ge=1, le=100_000)
    """Attention (query) heads."""
    kv_heads: int = bounded(ge=1, le=100_000)
    """Key/value heads (grouped-query attention); heads must be a multiple of them."""
    vocab: int = bounded(ge=1, le=100_000_000)
    """Vocabulary size."""
    tied_embeddings: bool = False
    """Whether the LM head shares the input embedding's weights."""
    mlp: Literal["swiglu", "geglu", "gelu", "squared_relu"] = "swiglu"
    """The MLP: gated, three matrices (swiglu; geglu, Gemma's gated GELU), or plain, two (gelu; squared_relu,
    Nemotron-4's relu(x)^2)."""
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    """The normalisation layers."""
    bias: bool = False
    """Whether the linear layers have biases."""
    learned_positions: int = bounded(0, ge=0, le=10_000_000, description="rows of a learned position table (0 = RoPE)")
    rotary: bool = True
    """Whether attention rotates its queries and keys (RoPE) where no learned positions do; False: attention has no
    position embedding (Nemotron-H, whose Mamba layers carry position: Megatron-Bridge 0.3.1 MambaModelProvider
    `position_embedding_type = "none"`, models/mamba/mamba_provider.py L102)."""
    head_size: int = bounded(0, ge=0, le=100_000, description="per-head width (0 = hidden / heads)")
    qk_norm: bool = False
    """RMSNorm on each query and key head (Qwen3): head_size weights each."""
    attention: Literal["gqa", "mla"] = "gqa"
    """Grouped-query attention, or DeepSeek's multi-head latent attention (low-rank Q and compressed KV)."""
    q_lora_rank: int = bounded(0, ge=0, le=1_000_000)
    """MLA: rank of the query down-projection (0 = a full-rank query projection)."""
    kv_lora_rank: int = bounded(0, ge=0, le=1_000_000)
    """MLA: rank of the compressed key/value projection."""
    qk_nope_dim: int = bounded(0, ge=0, le=100_000)
    """MLA: per-head query/key width without rotary embedding."""
    qk_rope_dim: int = bounded(0, ge=0, le=100_000)
    """MLA: per-head query/key width with rotary embedding."""
    v_head_dim: int = bounded(0, ge=0, le=100_000)
    """MLA: per-head value width."""
    sliding_window: int = bounded(0, ge=0, le=100_000_000)
    """Keys a query of a sliding-window layer sees (0 = no sliding-window layers)."""
    sliding_layers: int = bounded(0, ge=0, le=10_000)
    """Layers with sliding-window attention (of `sliding_window` keys)."""
    attention_sinks: bool = False
    """A learned softmax sink logit per head (GPT-OSS): `heads` parameters per layer, no GEMM."""
    yarn_mscale: float = bounded(1.0, ge=0.0, le=100.0)
    """YaRN's attention scaling of the rotated query and key (0.1 ln(factor) + 1 without yarn_mscale set: GPT-OSS's
    factor 32 gives 1.347; 1 for plain RoPE). Megatron-Core runs its rotary embedding eagerly, not in TE's fused
    kernel, when it is not 1 (workload.yarn_rope_bytes)."""
    expert_glu_clamp: bool = False
    """Whether the experts' gated activation clamps its two halves first (Megatron-Core's activation_func_clamp_value;
    GPT-OSS 7.0: megatron-bridge 0.6.2 gpt_oss_bridge.py L83). Outside the fused grouped MLP Megatron-Core runs that
    clamp eagerly, before its fused activation (moe.EAGER_GLU_CLAMP_BYTES)."""
    experts: int = bounded(0, ge=0, le=100_000)
    """Routed experts per MoE layer (0 = dense model)."""
    top_k: int = bounded(0, ge=0, le=100_000)
    """Routed experts each token goes to (MoE models)."""
    shared_experts: int = bounded(0, ge=0, le=1_000)
    """Experts every token goes to beside its routed ones (MoE models)."""
    moe_ffn: int = bounded(0, ge=0, le=10_000_000)
    """Hidden width of one expert's MLP."""
    dense_layers: int = bounded(0, ge=0, le=10_000)
    """MoE models: the first layers that have a dense MLP of width `ffn` instead of experts."""
    expert_groups: int = bounded(0, ge=0, le=100_000)
    """Group-limited routing (Megatron's moe_router_num_groups; DeepSeek-V3's node-limited routing): the experts
    split into this many groups of consecutive experts, a token picks `group_top_k` of them and its top_k experts
    among theirs (0: no groups)."""
    group_top_k: int = bounded(0, ge=0, le=100_000)
    """Expert groups a token picks under group-limited routing (`expert_groups`)."""
    dispatcher: Literal["flex", "alltoall"] = "flex"
    """How the stack's recipe moves tokens to their experts: 'flex' (DeepEP/HybridEP, hierarchical: a token crosses
    the NICs once per remote scale-up domain holding one of its experts) or 'alltoall' (NCCL all-to-all: every copy
    to its expert's rank)."""
    ep_microbatch_overlap: bool = False
    """Whether the recipe overlaps one micro-batch's EP all-to-alls with another's compute (Megatron-Bridge's
    overlap_moe_expert_parallel_comm, off unless a recipe sets it: training/comm_overlap.py): the exchange then has
    the layer's compute to hide behind whichever dispatcher moves it (`moe.exchange_windows`)."""
    ep_exchange_exposed: bool = False
    """Whether the recipe runs the EP exchange with nothing beside it: neither the EP overlap of two micro-batches
    nor the shared experts' (Megatron-Bridge's apply_flex_dispatcher_backend turns moe_shared_expert_overlap off with
    the flex dispatcher), so each MoE layer dispatches, runs its experts and combines in sequence (megatron-core 0.18
    moe_layer.py MoELayer.forward) and every all-to-all is exposed (`moe.exchange_windows`). False: the flex exchange
    hides behind the layer's compute up to the fitted share (no bundled source says which overlap the tables' flex
    runs turned on), the 'alltoall' one behind the shared experts'."""
    hybrid_pattern: str = bounded("", max_length=MAX_LAYERS)
    """Megatron's hybrid_override_pattern (inputs/hybrid.py): 'M' Mamba-2, '*' attention, '-' MLP, 'E' MoE, one
    character per layer ('' = every layer attention and MLP, a transformer)."""
    mamba_heads: int = bounded(0, ge=0, le=100_000)
    """Mamba-2 heads of an 'M' layer (Megatron's mamba_num_heads); its inner width is mamba_heads x mamba_head_dim."""
    mamba_head_dim: int = bounded(64, ge=1, le=100_000)
    """Channels per Mamba-2 head (mamba_head_dim)."""
    mamba_groups: int = bounded(8, ge=1, le=100_000)
    """B and C groups of a Mamba-2 layer (mamba_num_groups); heads must be a multiple of them."""
    mamba_state: int = bounded(128, ge=1, le=100_000)
    """State size per head channel (mamba_state_dim)."""
    mamba_conv: int = bounded(4, ge=1, le=1_000)
    """Width of the causal depthwise conv1d (d_conv)."""
    mamba_chunk: int = bounded(128, ge=1, le=100_000)
    """Chunk length of the SSD scan (chunk_size: Dao and Gu 2024, arXiv 2405.21060, section 6)."""
    gdn_key_heads: int = bounded(0, ge=0, le=100_000)
    """Query and key heads of a Gated DeltaNet 'G' layer (Megatron's linear_num_key_heads; 0: no 'G' layers)."""
    gdn_value_heads: int = bounded(0, ge=0, le=100_000)
    """Value heads of a 'G' layer (linear_num_value_heads), a multiple of the key heads, which repeat to match."""
    gdn_key_head_dim: int = bounded(128, ge=1, le=100_000)
    """Width of a 'G' layer's query and key heads (linear_key_head_dim)."""
    gdn_value_head_dim: int = bounded(128, ge=1, le=100_000)
    """Width of a 'G' layer's value heads (linear_value_head_dim): the recurrent state per head is key x value."""
    gdn_conv: int = bounded(4, ge=1, le=1_000)
    """Width of a 'G' layer's causal depthwise conv1d over q, k and v (linear_conv_kernel_dim)."""
    gdn_chunk: int = bounded(64, ge=1, le=100_000)
    """Chunk length of the chunked delta rule (the fla kernels' chunk_gated_delta_rule: 64)."""
    attention_output_gate: bool = False
    """Gated attention (Qwen3-Next): the QKV projection also makes a gate of the query's width, and the attention
    output is multiplied by its sigmoid (megatron-core 0.16.1 transformer/attention.py L1218-1222, L1264-1266)."""
    shared_expert_gate: bool = False
    """A sigmoid gate on the shared experts' output, a hidden x 1 linear layer per MoE layer (Qwen2-MoE, Qwen3-Next:
    Megatron's moe_shared_expert_gate)."""
    bf16_edge_layers: int = bounded(0, ge=0, le=MAX_LAYERS)
    """Layers at each end that a quantised recipe runs in BF16 (Megatron's first_last_layers_bf16, with
    num_layers_at_start_in_bf16 and num_layers_at_end_in_bf16 at this count: megatron-core 0.16.1
    transformer_config.py L486-495, applied per layer by get_fp8_context, ssm/mamba_block.py L122)."""
    mtp_layers: int = bounded(0, ge=0, le=100)
    """Multi-token-prediction modules (DeepSeek-V3): each one transformer layer plus a 2h -> h projection, sharing
    the embedding and the LM head with the main model."""
    mtp_pattern: str = bounded("", max_length=100)
    """A hybrid model's MTP module as a layer pattern of `hybrid_pattern`'s kinds (Megatron's
    mtp_hybrid_override_pattern: Nemotron 3.5 Lightning's '*E', an attention and a MoE layer); '' = one transformer
    layer, DeepSeek-V3's."""
    mtp_shared_weights: bool = False
    """Every MTP depth runs the one module's weights (Megatron's mtp_use_repeated_layer): mtp_layers passes, one set
    of parameters, gradients and optimizer state."""
    mtp_bf16: bool = False
    """A quantised recipe runs the MTP modules in BF16 (Megatron-Bridge's keep_mtp_spec_in_bf16)."""
    parallel_block: bool = False
    """Attention and MLP side by side on the same input, their outputs added to one residual (GPT-J, PaLM, Falcon):
    one TP all-gather in and one reduce-scatter out per layer instead of two of each. Dense models only."""
    layer_norms: int = bounded(2, ge=1, le=4)
    """Normalisation layers per transformer layer: 2 (pre-norm attention and MLP; Falcon-40B/180B's ln_attn and
    ln_mlp), 1 (a parallel block's shared input norm: GPT-J, PaLM) or 4 (Gemma 2/3's pre- and post-norms)."""
    capacity_factor: float = bounded(0.0, ge=0.0, le=1_000.0)
    """MoE token dropping (Megatron's moe_expert_capacity_factor): an expert takes at most this many times its
    balanced share of the token copies and drops the rest (0: dropless)."""
    pad_to_capacity: bool = False
    """Token dropping pads every expert's input up to its capacity (Megatron's moe_pad_expert_input_to_capacity, on
    in Megatron-Bridge's apply_moe_token_drop): the experts and the all-to-all move capacity_factor x the balanced
    load whatever the routing."""
    index_topk: int = bounded(0, ge=0, le=10_000_000)
    """DeepSeek Sparse Attention (DSA, DeepSeek-V3.2; MLA only): each query attends the `index_topk` keys a
    lightning indexer picks among all its causal keys (0: dense attention)."""
    index_heads: int = bounded(0, ge=0, le=10_000)
    """DSA: the indexer's heads (its query projection from the MLA query latent, one shared key head)."""
    index_head_dim: int = bounded(0, ge=0, le=10_000)
    """DSA: the width of each indexer head."""
    moe_layer_interval: int = bounded(1, ge=1, le=1_000)
    """MoE models: of the layers after `dense_layers`, every this-many-th has experts and the others a dense MLP of
    width `ffn` (Megatron's moe_layer_freq; Llama 4 Maverick's [0, 1] * 24 is 2; 1: every one)."""

    def __post_init__(self) -> None:
        """The shapes agree; when they do not, a FieldError (a ValueError, which pydantic reports as a model's own
        check) names the one field to change and what it allows."""
        if not self.head_size and self.hidden % self.heads:
            raise FieldError(
                "heads", f"hidden ({self.hidden}) must be a multiple of heads ({self.heads}) or head_size given"
            )
        if self.heads % self.kv_heads:
            raise FieldError("kv_heads", f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        mla_missing = [n for n in ("kv_lora_rank", "qk_nope_dim", "v_head_dim") if not getattr(self, n)]
        if self.attention == "mla" and mla_missing:
            raise FieldError(mla_missing[0], "attention 'mla' needs kv_lora_rank, qk_nope_dim and v_head_dim above 0")
        if self.hybrid_pattern or self.mamba_heads or self.gdn_value_heads:
            self._check_hybrid()
        if self.experts:
            self._check_experts()
        else:
            given = [n for n in MOE_ONLY if getattr(self, n)]
            if given or self.moe_layer_interval != 1:
                name = given[0] if given else "moe_layer_interval"
                raise FieldError(name, f"{name} needs experts > 0 (a dense model has no {name})")
        if self.expert_groups and not 0 < self.group_top_k <= self.expert_groups:
            raise FieldError(
                "group_top_k",
                f"group_top_k ({self.group_top_k}) must be between 1 and expert_groups ({self.expert_groups})",
            )
        if self.group_top_k and not self.expert_groups:
            raise FieldError("expert_groups", f"group_top_k ({self.group_top_k}) needs expert_groups > 0")
        if bool(self.sliding_layers) != bool(self.sliding_window) or self.sliding_layers > self.layers:
            raise FieldError(
                "sliding_layers" if self.sliding_window else "sliding_window",
                f"sliding_window and sliding_layers go together, sliding_layers between 1 and the {self.layers} layers"
                f" (got {self.sliding_window} and {self.sliding_layers})",
            )
        self._check_blocks()
        self._check_mtp()

    def _check_mtp(self) -> None:
        """MTP settings that need modules to set, and a module pattern of layer kinds the main pattern prices."""
        given = next((n for n in ("mtp_pattern", "mtp_shared_weights", "mtp_bf16") if getattr(self, n)), None)
        if given and not self.mtp_layers:
            raise FieldError(given, f"{given} needs mtp_layers > 0 (the MTP modules it describes)")
        if self.hybrid_pattern and self.mtp_layers and not self.mtp_pattern:
            raise FieldError("mtp_pattern", "mtp_layers on a hybrid_pattern model needs mtp_pattern (e.g. '*E')")
        if self.mtp_pattern and not self.hybrid_pattern:
            raise FieldError("mtp_pattern", "mtp_pattern needs hybrid_pattern (a transformer's MTP module is a layer)")
        missing = sorted(set(self.mtp_pattern) - set(self.hybrid_pattern))
        if missing:
            problem = hybrid.pattern_problem(self.mtp_pattern, len(self.mtp_pattern))
            detail = problem or f"has {missing[0]!r} layers but hybrid_pattern has none, to take its shapes from"
            raise FieldError("mtp_pattern", f"'{shown(self.mtp_pattern)}' {detail}")

    def _check_blocks(self) -> None:
        """Block shapes the physics prices: a parallel block without experts, one norm only in a parallel block, the
        DSA indexer on MLA's query latent and not beside sliding windows."""
        if self.index_topk and not (self.attention == "mla" and self.q_lora_rank):
            raise FieldError("index_topk", "sparse attention (index_topk) needs attention 'mla' with q_lora_rank > 0")
        if bool(self.index_topk) != bool(self.index_heads and self.index_head_dim):
            raise FieldError(
                "index_heads" if self.index_topk else "index_topk",
                "index_topk, index_heads and index_head_dim go together (all above 0, or all 0)",
            )
        if self.index_topk and self.sliding_layers:
            raise FieldError("index_topk", "sparse attention (index_topk) is not priced beside sliding_window layers")
        if self.parallel_block and self.is_moe:
            raise FieldError("parallel_block", "parallel_block is priced for dense models only (experts must be 0)")
        if self.layer_norms != 2 and self.is_moe:
            raise FieldError("layer_norms", "layer_norms other than 2 is priced for dense models only (experts 0)")
        if self.layer_norms == 1 and not self.parallel_block:
            raise FieldError("layer_norms", "layer_norms 1 (one shared norm) needs parallel_block = true")

    def _check_hybrid(self) -> None:
        """A hybrid model's pattern and Mamba-2 shapes, each refused on its own, saying what is allowed; features the
        physics does not price on a hybrid model are refused by name."""
        problem = hybrid.pattern_problem(self.hybrid_pattern, self.layers) if self.hybrid_pattern else None
        if problem:
            raise FieldError("hybrid_pattern", f"'{shown(self.hybrid_pattern)}' {problem}")
        kinds = hybrid.counts(self.hybrid_pattern)
        if bool(kinds["M"]) != bool(self.mamba_heads):
            raise FieldError(
                "mamba_heads", f"mamba_heads ({self.mamba_heads}) must be above 0 exactly when hybrid_pattern has 'M'"
            )
        if self.mamba_heads % self.mamba_groups:
            raise FieldError(
                "mamba_groups",
                f"mamba_heads ({self.mamba_heads}) must be a multiple of mamba_groups ({self.mamba_groups})",
            )
        if bool(kinds["G"]) != bool(self.gdn_value_heads):
            raise FieldError(
                "gdn_value_heads",
                f"gdn_value_heads ({self.gdn_value_heads}) must be above 0 exactly when hybrid_pattern has 'G'",
            )
        if kinds["G"] and (not self.gdn_key_heads or self.gdn_value_heads % self.gdn_key_heads):
            raise FieldError(
                "gdn_key_heads",
                f"gdn_key_heads ({self.gdn_key_heads}) must be above 0 and divide gdn_value_heads"
                f" ({self.gdn_value_heads})",
            )
        if bool(kinds["E"]) != bool(self.experts):
            raise FieldError("experts", f"experts ({self.experts}) must be above 0 exactly when hybrid_pattern has 'E'")
        unpriced = ("dense_layers", "sliding_layers", "parallel_block", "index_topk", "capacity_factor")
        given = next((n for n in unpriced if getattr(self, n)), None)
        given = given or ("moe_layer_interval" if self.moe_layer_interval != 1 else None)
        given = given or ("layer_norms" if self.layer_norms != 2 else None)
        if given:
            raise FieldError(given, f"{given} is not priced on a hybrid_pattern model (the pattern places every layer)")

    def _check_experts(self) -> None:
        """A MoE model's expert fields, each refused on its own, saying what is allowed."""
        if not self.moe_ffn:
            raise FieldError("moe_ffn", f"experts ({self.experts}) need moe_ffn, the hidden width of one expert (>= 1)")
        if not 0 < self.top_k <= self.experts:
            raise FieldError("top_k", f"top_k ({self.top_k}) must be between 1 and the {self.experts} experts")
        if self.dense_layers >= self.layers:
            raise FieldError(
                "dense_layers",
                f"dense_layers ({self.dense_layers}) must be below layers ({self.layers}): MoE layers left",
            )
        if not self.moe_layers:
            raise FieldError(
                "moe_layer_interval",
                f"moe_layer_interval ({self.moe_layer_interval}) leaves no MoE layer in the"
                f" {self.layers - self.dense_layers} layers after the dense ones",
            )
        if self.expert_groups and self.experts % self.expert_groups:
            raise FieldError(
                "expert_groups", f"expert_groups ({self.expert_groups}) must divide experts ({self.experts})"
            )
        if (self.capacity_factor or self.pad_to_capacity) and self.dispatcher != "alltoall":
            raise FieldError(
                "capacity_factor",
                "token dropping (capacity_factor, pad_to_capacity) runs with dispatcher 'alltoall' only"
                " (Megatron-Bridge's apply_moe_token_drop asserts it)",
            )
        if self.shared_expert_gate and not self.shared_experts:
            raise FieldError("shared_expert_gate", "shared_expert_gate needs shared_experts > 0 (the output it gates)")
        if self.pad_to_capacity and not self.capacity_factor:
            raise FieldError("pad_to_capacity", "pad_to_capacity needs capacity_factor > 0 (the capacity padded to)")
        if self.ep_exchange_exposed and self.ep_microbatch_overlap:
            raise FieldError(
                "ep_exchange_exposed", "ep_exchange_exposed contradicts ep_microbatch_overlap (its exchange hides)"
            )

    @property
    def head_dim(self) -> int:
        return self.head_size or self.hidden // self.heads

    @property
    def q_dim(self) -> int:
        """Width of the query (and attention output) projection: heads x head_dim; MLA: heads x (nope + rope)."""
        if self.attention == "mla":
            return self.heads * (self.qk_nope_dim + self.qk_rope_dim)
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the K (or V) projection: kv_heads x head_dim (grouped-query attention)."""
        return self.kv_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def moe_layers(self) -> int:
        if self.hybrid_pattern:
            return self.hybrid_pattern.count("E")
        return (self.layers - self.dense_layers) // self.moe_layer_interval if self.is_moe else 0

    @property
    def dense_layer_count(self) -> int:
        return self.layers - self.moe_layers

    @property
    def gated_mlp(self) -> bool:
        """Whether the MLP is gated (SwiGLU, GeGLU): gate and up projections, their product the activation."""
        return self.mlp in ("swiglu", "geglu")

    @property
    def mlp_in_width(self) -> int:
        """Output width of the first MLP GEMM: gate and up fused for a gated MLP."""
        return 2 * self.ffn if self.gated_mlp else self.ffn

    @property
    def expert_in_width(self) -> int:
        """Output width of an expert's first GEMM (gate and up fused for a gated MLP)."""
        return 2 * self.moe_ffn if self.gated_mlp else self.moe_ffn

    @property
    def qkv_width(self) -> int:
        """Output width of the fused QKV projection (GQA): the queries, keys and values, and any output gate (one
        value per query channel, attention_output_gate)."""
        return self.q_dim * (2 if self.attention_output_gate else 1) + 2 * self.kv_dim

    @property
    def attention_linear_shapes(self) -> dict[str, tuple[int, int]]:
        """The attention's linear layers as (input width, output width), by the names workload.py gives them."""
        h, q = self.hidden, self.q_dim
        if self.attention != "mla":
            return {"qkv": (h, self.qkv_width), "proj": (q, h)}
        queries = (
            {"q_down": (h, self.q_lora_rank), "q_up": (self.q_lora_rank, q)} if self.q_lora_rank else {"q_proj": (h, q)}
        )
        kv_up = self.heads * (self.qk_nope_dim + self.v_head_dim)
        return queries | {
            "kv_down": (h, self.kv_lora_rank + self.qk_rope_dim),
            "kv_up": (self.kv_lora_rank, kv_up),
            "proj": (self.heads * self.v_head_dim, h),
        }

    @property
    def mlp_linear_shapes(self) -> dict[str, tuple[int, int]]:
        """A dense MLP's linear layers: fc1 (gate and up fused for SwiGLU) and fc2."""
        return {"fc1": (self.hidden, self.mlp_in_width), "fc2": (self.ffn, self.hidden)}

    @property
    def attention_linear_params(self) -> int:
        """Weights of the attention projections (the GEMMs), without biases or norms."""
        return sum(k * n for k, n in self.attention_linear_shapes.values())

    @property
    def indexer_linear_shapes(self) -> dict[str, tuple[int, int]]:
        """The DSA indexer's linear layers (transformers 5.25 DeepseekV32Indexer, modeling_deepseek_v32.py L171-174):
        its queries from MLA's query latent, one shared key and the per-head weights from the layer input."""
        if not self.index_topk:
            return {}
        width = self.index_heads * self.index_head_dim
        return {
            "index_q": (self.q_lora_rank, width),
            "index_k": (self.hidden, self.index_head_dim),
            "index_weights": (self.hidden, self.index_heads),
        }

    @property
    def indexer_params(self) -> int:
        """The indexer's weights and its key's LayerNorm (weight and bias)."""
        linear = sum(k * n for k, n in self.indexer_linear_shapes.values())
        return linear + (2 * self.index_head_dim if self.index_topk else 0)

    @property
    def attention_params_per_layer(self) -> int:
        if self.attention == "mla":  # the latent norms of the compressed Q and KV, and any DSA indexer
            return self.attention_linear_params + self.q_lora_rank + self.kv_lora_rank + self.indexer_params
        biases = self.qkv_width + self.hidden if self.bias else 0
        norms = 2 * self.head_dim if self.qk_norm else 0
        return self.attention_linear_params + biases + norms + (self.heads if self.attention_sinks else 0)

    @property
    def mlp_params_per_layer(self) -> int:
        """A dense layer's MLP of width `ffn`."""
        weights = self.hidden * self.mlp_in_width + self.ffn * self.hidden
        biases = self.mlp_in_width + self.hidden if self.bias else 0
        return weights + biases

    @property
    def expert_params(self) -> int:
        """One expert (routed or shared): an MLP of width `moe_ffn`."""
        weights = self.hidden * (self.expert_in_width + self.moe_ffn)
        return weights + (self.expert_in_width + self.hidden if self.bias else 0)

    @property
    def router_params(self) -> int:
        """The router, and the shared experts' gate when there is one (a GEMM of one column)."""
        gate = self.hidden if self.shared_expert_gate else 0
        return self.experts * self.hidden + (self.experts if self.bias else 0) + gate

    @property
    def routed_expert_params_per_layer(self) -> int:
        """The weights expert parallelism shards: every routed expert of one MoE layer."""
        return self.experts * self.expert_params

    @property
    def norm_params(self) -> int:
        """Parameters of one normalisation layer (LayerNorm has a bias too)."""
        return self.hidden * (2 if self.norm == "layernorm" else 1)

    @property
    def params_per_layer(self) -> int:
        """A dense layer: attention, MLP, `layer_norms` norms."""
        return self.attention_params_per_layer + self.mlp_params_per_layer + self.layer_norms * self.norm_params

    @property
    def tensors_per_layer(self) -> int:
        """Parameter tensors of a dense layer as Megatron-LM's modules hold them (one fused QKV weight, one fused
        gate-and-up weight): what a sharding that gathers tensor by tensor (step.zero3_per_tensor_s) calls per layer."""
        weights = 2 + 2  # attention: QKV and output projection; MLP: input (gated or not) and output projection
        return weights * (2 if self.bias else 1) + self.layer_norms * (2 if self.norm == "layernorm" else 1)

    @property
    def moe_layer_params(self) -> int:
        """A MoE layer: attention, router, routed and shared experts, `layer_norms` norms."""
        experts = self.routed_expert_params_per_layer + self.shared_experts * self.expert_params
        return self.attention_params_per_layer + self.router_params + experts + self.layer_norms * self.norm_params

    @property
    def moe_layer_dense_params(self) -> int:
        """The part of a MoE layer that is not a routed expert (sharded like a dense layer's weights)."""
        return self.moe_layer_params - self.routed_expert_params_per_layer

    @property
    def mamba_inner(self) -> int:
        """Inner width of a Mamba-2 layer: heads x head dim (x, z and the scan's output are this wide)."""
        return self.mamba_heads * self.mamba_head_dim

    @property
    def mamba_bc_width(self) -> int:
        """Width of B and C together: a state of mamba_state per group, for each."""
        return 2 * self.mamba_groups * self.mamba_state

    @property
    def mamba_linear_shapes(self) -> dict[str, tuple[int, int]]:
        """A Mamba-2 layer's linear layers: in_proj to z, x, B, C and dt (one per head) fused, and out_proj
        (megatron-core 0.16.1 ssm/mamba_mixer.py L268-279 and L367-379)."""
        in_width = 2 * self.mamba_inner + self.mamba_bc_width + self.mamba_heads
        return {"in_proj": (self.hidden, in_width), "out_proj": (self.mamba_inner, self.hidden)}

    @property
    def mamba_params(self) -> int:
        """A Mamba-2 mixer: in_proj and out_proj, the conv1d over x, B and C with its bias, dt_bias, A_log and D per
        head, and the gated RMSNorm's weight over the inner width (mamba_mixer.py L292-363: D per head, the default
        D_has_hdim=False)."""
        linear = sum(k * n for k, n in self.mamba_linear_shapes.values())
        conv = (self.mamba_inner + self.mamba_bc_width) * (self.mamba_conv + 1)
        return linear + conv + 3 * self.mamba_heads + self.mamba_inner

    @property
    def gdn_key_width(self) -> int:
        """Width of a Gated DeltaNet layer's queries (and of its keys): key heads x key head dim."""
        return self.gdn_key_heads * self.gdn_key_head_dim

    @property
    def gdn_value_width(self) -> int:
        """Width of a Gated DeltaNet layer's values (and of its output gate z and its output)."""
        return self.gdn_value_heads * self.gdn_value_head_dim

    @property
    def gdn_linear_shapes(self) -> dict[str, tuple[int, int]]:
        """A Gated DeltaNet layer's linear layers: in_proj to q, k, v, the output gate z, beta and alpha (one each per
        value head) fused, and out_proj (megatron-core 0.16.1 ssm/gated_delta_net.py L138-158, L209-220;
        transformers 5.25 Qwen3NextGatedDeltaNet splits in_proj into in_proj_qkvz and in_proj_ba,
        modeling_qwen3_next.py L671-674)."""
        in_width = 2 * self.gdn_key_width + 2 * self.gdn_value_width + 2 * self.gdn_value_heads
        return {"in_proj": (self.hidden, in_width), "out_proj": (self.gdn_value_width, self.hidden)}

    @property
    def gdn_params(self) -> int:
        """A Gated DeltaNet mixer: in_proj and out_proj, the conv1d over q, k and v without bias, dt_bias and A_log
        per value head, and the gated RMSNorm's weight over one value head, shared by all (gated_delta_net.py
        L160-207; modeling_qwen3_next.py L659-685)."""
        linear = sum(k * n for k, n in self.gdn_linear_shapes.values())
        conv = (2 * self.gdn_key_width + self.gdn_value_width) * self.gdn_conv
        return linear + conv + 2 * self.gdn_value_heads + self.gdn_value_head_dim

    @property
    def hybrid_layer_params(self) -> dict[str, int]:
        """One layer of each pattern kind with its pre-norm: Mamba-2, Gated DeltaNet, attention, dense MLP, MoE (all
        its experts)."""
        return {
            "M": self.mamba_params + self.norm_params,
            "G": self.gdn_params + self.norm_params,
            "*": self.attention_params_per_layer + self.norm_params,
            "-": self.mlp_params_per_layer + self.norm_params,
            "E": self.moe_layer_params - self.attention_params_per_layer - self.norm_params,
        }

    @property
    def layer_stack_params(self) -> int:
        """Every layer of the main model (embedding, final norm and LM head apart)."""
        if self.hybrid_pattern:
            per_kind = self.hybrid_layer_params
            return sum(per_kind[c] for c in self.hybrid_pattern)
        return self.dense_layer_count * self.params_per_layer + self.moe_layers * self.moe_layer_params

    @property
    def mean_layer_dense_params(self) -> float:
        """A hybrid model's mean layer without its routed experts (sharded as a dense layer's weights are)."""
        routed = self.moe_layers * self.routed_expert_params_per_layer
        return (self.layer_stack_params - routed) / self.layers

    @property
    def mtp_weight_sets(self) -> int:
        """MTP modules with weights of their own: one when every depth runs the same (`mtp_shared_weights`)."""
        return min(self.mtp_layers, 1) if self.mtp_shared_weights else self.mtp_layers

    @property
    def mtp_module_moe_layers(self) -> int:
        """MoE layers in one MTP module: its pattern's 'E's, else its one layer's (a MoE model's MTP layer is MoE)."""
        return self.mtp_pattern.count("E") if self.mtp_pattern else int(self.is_moe)

    @property
    def mtp_params(self) -> int:
        """All MTP modules' weights: two input norms, the 2h -> h projection, its layers (each with its pre-norm) and
        a final norm each, counted once for modules that share them (megatron-core 0.19.2 transformer/
        multi_token_prediction.py MultiTokenPredictionLayer: enorm, hnorm, eh_proj, the HybridStack of the MTP
        pattern without a post-norm, final_layernorm; MultiTokenPredictionBlock._build_layers builds one layer under
        mtp_use_repeated_layer)."""
        if self.mtp_pattern:
            per_kind = self.hybrid_layer_params
            layers = sum(per_kind[c] for c in self.mtp_pattern)
        else:
            layers = self.moe_layer_params if self.is_moe else self.params_per_layer
        return self.mtp_weight_sets * (3 * self.norm_params + 2 * self.hidden * self.hidden + layers)

    def pattern_passes(self, kind: str) -> int:
        """A hybrid model's layers of one pattern kind that a token goes through: the main pattern's, and the MTP
        pattern's once per MTP depth."""
        return self.hybrid_pattern.count(kind) + self.mtp_layers * self.mtp_pattern.count(kind)

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden + self.learned_positions * self.hidden

    @property
    def lm_head_params(self) -> int:
        return 0 if self.tied_embeddings else self.vocab * self.hidden

    def lora_params_per_layer(self, rank: int, modules: str = "attention") -> int:
        """LoRA adapters of rank r on each adapted linear layer (lora.LORA_MODULES): A (d_in x r) and B (r x d_out),
        one pair per layer as Megatron-Bridge fuses them (QKV one layer, gate and up one fc1)."""
        shapes = self.attention_linear_shapes | self.mlp_linear_shapes
        return sum(rank * (k + n) for name, (k, n) in shapes.items() if name in adapted_layers(modules))

    @property
    def main_params(self) -> int:
        """The model without its MTP modules (the figure model cards quote, e.g. DeepSeek-V3's 671B)."""
        return self.layer_stack_params + self.embedding_params + self.norm_params + self.lm_head_params

    @property
    def params(self) -> int:
        """Every trained parameter, MTP modules included."""
        return self.main_params + self.mtp_params

    @property
    def active_params(self) -> int:
        """Parameters one token touches in the main model: embedding row, LM head, attention, and of each MoE layer
        the router with top_k routed and the shared experts (equal to `main_params` for a dense model)."""
        if not self.is_moe:
            return self.main_params
        if self.hybrid_pattern:
            return self.main_params - self.moe_layers * (self.experts - self.top_k) * self.expert_params
        router_attention_norms = self.moe_layer_dense_params - self.shared_experts * self.expert_params
        moe = self.moe_layers * (router_attention_norms + (self.top_k + self.shared_experts) * self.expert_params)
        layers = self.dense_layer_count * self.params_per_layer + moe
        return layers + self.embedding_params + self.norm_params + self.lm_head_params

    @property
    def moe_active_linear_params(self) -> int:
        """GEMM weights one token goes through in a MoE layer's MLP: router (with any shared-expert gate), top_k routed
        and the shared experts."""
        gate = self.hidden if self.shared_expert_gate else 0
        return (
            self.experts * self.hidden
            + gate
            + (self.top_k + self.shared_experts) * self.hidden * (self.expert_in_width + self.moe_ffn)
        )

    @property
    def matmul_params(self) -> int:
        """Parameters that take part in GEMMs per token: every linear layer a token goes through (for MoE layers the
        router and the active experts) plus the LM head (not the lookup); MTP modules add their layer, their
        projection and one more pass through the LM head."""
        indexer = sum(k * n for k, n in self.indexer_linear_shapes.values())
        attention, dense_mlp = self.attention_linear_params + indexer, self.hidden * (self.mlp_in_width + self.ffn)
        if self.hybrid_pattern:
            mamba = sum(k * n for k, n in self.mamba_linear_shapes.values())
            gdn = sum(k * n for k, n in self.gdn_linear_shapes.values())
            per_kind = {"M": mamba, "G": gdn, "*": attention, "-": dense_mlp, "E": self.moe_active_linear_params}
            layers = sum(per_kind[c] * self.pattern_passes(c) for c in per_kind)
            return layers + self.vocab * self.hidden + self.mtp_layers * (2 * self.hidden**2 + self.vocab * self.hidden)
        layers = self.dense_layer_count * (attention + dense_mlp) + self.moe_layers * (
            attention + self.moe_active_linear_params
        )
        mtp_layer = attention + (self.moe_active_linear_params if self.is_moe else dense_mlp)
        mtp = self.mtp_layers * (2 * self.hidden * self.hidden + mtp_layer + self.vocab * self.hidden)
        return layers + self.vocab * self.hidden + mtp

    @property
    def attention_widths(self) -> int:
        """Width of the score GEMM plus the context GEMM per query: 2 x q_dim (GQA), heads x (qk + v) (MLA)."""
        if self.attention == "mla":
            return self.q_dim + self.heads * self.v_head_dim
        return 2 * self.q_dim

    def mean_keys(self, seq_len: int) -> float:
        """Keys a query of a sliding-window layer attends on average: W - W^2 / 2s (s/2 when the window is s)."""
        window = min(self.sliding_window, seq_len)
        return window - window * window / (2 * seq_len)

    def ssd_flops_per_token(self, seq_len: int) -> float:
        """Forward FLOPs per token of one Mamba-2 layer's chunked SSD scan (Dao and Gu 2024, arXiv 2405.21060,
        section 6, the block decomposition of the semiseparable matrix into chunks of Q): the diagonal blocks' C B^T
        per group (2 Q N per group) and their masked product with x (2 Q per inner channel), the chunk states B^T x
        (2 N per inner channel) and the output from the states passed in, C h (2 N per inner channel). The causal
        mask halves the diagonal blocks' work (Q / 2 keys on average, as attention's convention); the state passing
        between chunks (2 N per channel per chunk, not per token) is left out."""
        q = min(self.mamba_chunk, seq_len) / 2
        return (
            2 * q * (self.mamba_groups * self.mamba_state + self.mamba_inner) + 4 * self.mamba_state * self.mamba_inner
        )

    def gdn_flops_per_token(self, seq_len: int) -> float:
        """Forward FLOPs per token of one Gated DeltaNet layer's chunked delta rule (Yang, Kautz and Hatamizadeh
        2024, arXiv 2412.06464, section 3.3: the WY representation over chunks of C; the fla kernels of
        chunk_gated_delta_rule_fwd, recalled from the public code, not a stored copy), per value head with key width
        K and value width V, the queries and keys repeated to every value head: the chunk's beta K K^T (C K), the
        inverse of its unit lower-triangular (I + A) (C^2 / 3), W and U from it (C K + C V), the state passing, each
        chunk's new values U - W S and the state update S + K^T V (4 K V), and the output: Q S from the state passed
        in (2 K V) and the masked Q K^T and its product with the new values (C K + C V). Every within-chunk product
        is masked causal, counted at half (Q / 2 keys, as attention's and the SSD scan's convention)."""
        c, k, v = min(self.gdn_chunk, seq_len), self.gdn_key_head_dim, self.gdn_value_head_dim
        return self.gdn_value_heads * (3 * c * k + 2 * c * v + 6 * k * v + c * c / 3)

    def hybrid_kind_flops_per_token(self, seq_len: int) -> dict[str, float]:
        """Forward FLOPs per token of one layer of each pattern kind: its GEMMs (a MoE layer's router and active
        experts), and attention's causal scores and context, Mamba's SSD scan or Gated DeltaNet's delta rule."""
        h = self.hidden
        return {
            "M": 2 * sum(k * n for k, n in self.mamba_linear_shapes.values()) + self.ssd_flops_per_token(seq_len),
            "G": 2 * sum(k * n for k, n in self.gdn_linear_shapes.values()) + self.gdn_flops_per_token(seq_len),
            "*": 2 * self.attention_linear_params + seq_len * self.attention_widths,
            "-": 2 * h * (self.mlp_in_width + self.ffn),
            "E": 2 * self.moe_active_linear_params,
        }

    def sparse_keys(self, seq_len: int) -> float:
        """Keys a DSA query attends on average: min(position, index_topk), k - k^2 / 2s (`mean_keys` with a window of
        k: a causal query before position k has fewer keys than k to pick)."""
        k = min(self.index_topk, seq_len)
        return k - k * k / (2 * seq_len)

    def model_flops_per_token(
        self, seq_len: int, packed: Packing | None = None, lora_rank: int = 0, lora_modules: str = "attention"
    ) -> float:
        """Training FLOPs per token: 6 x active matmul parameters + causal attention, no recomputation.

        The convention of NVIDIA's published model TFLOP/s (Megatron-Bridge flop_utils) and of the Llama 3 paper's
        MFU: attention scores and context cost 2 x 2 x s x d_model per token per layer in the forward pass, halved
        by the causal mask, and three times that for forward + backward. MoE models count the active parameters
        (router, top_k and shared experts), MTP modules included; sliding-window layers attend `mean_keys` keys.
        Packed documents (`packed`, document masking) count the keys of each query's own document: the pairs the
        mask removes are no work, so that MFU stays a share of work done. A LoRA fine-tune (`lora_rank`) takes no
        weight gradients of its frozen base: 4 FLOPs per matmul parameter, not 6, and 6 per adapter parameter
        (mlperf_benchmarks.md on llama2_70b_lora: "a 6·N·D model over-counts by roughly 1/3").
        """
        full_layers = self.layers + self.mtp_layers - self.sliding_layers
        if self.hybrid_pattern:  # attention in the '*' layers only; the SSD scan in the 'M' layers
            full_layers = self.pattern_passes("*")
        if packed is None:
            attention: float = 3 * full_layers * seq_len * self.attention_widths
        else:
            attention = 6 * full_layers * packed.keys * self.attention_widths
        if self.sliding_layers:
            keys = self.mean_keys(seq_len) if packed is None else packed.window_keys(self.sliding_window)
            attention = attention + 6 * self.sliding_layers * keys * self.attention_widths
        if self.mamba_heads:
            attention = attention + 3 * self.pattern_passes("M") * self.ssd_flops_per_token(seq_len)
        if self.gdn_value_heads:
            attention = attention + 3 * self.pattern_passes("G") * self.gdn_flops_per_token(seq_len)
        if self.index_topk:  # DSA: attention over the picked keys, the indexer's scores over every causal key
            causal = seq_len / 2 if packed is None else packed.keys
            keys = self.sparse_keys(seq_len) if packed is None else min(packed.keys, self.sparse_keys(seq_len))
            scores = 2 * self.index_heads * self.index_head_dim * causal
            attention = 3 * full_layers * (2 * keys * self.attention_widths + scores)
        if not lora_rank:
            return 6 * self.matmul_params + attention
        adapters = self.layers * self.lora_params_per_layer(lora_rank, lora_modules)
        return 4 * self.matmul_params + 6 * adapters + attention


def _llama(
    model_id: str, name: str, layers: int, hidden: int, ffn: int, heads: int, vocab: int, source: str, kv_heads: int = 8
) -> ModelSpec:
    return ModelSpec(
        id=model_id,
        name=name,
        layers=layers,
        hidden=hidden,
        ffn=ffn,
        heads=heads,
        kv_heads=kv_heads,
        vocab=vocab,
        source=source,
    )


def _hf(repo: str) -> str:
    """A Hugging Face checkpoint's config, the source of a Llama's shapes."""
    return f"the model's config.json on Hugging Face (meta-llama/{repo})"


def gpt(
    model_id: str, name: str, layers: int, hidden: int, heads: int, vocab: int, seq_len: int, source: str
) -> ModelSpec:
    """A GPT-2/3-style model as Megatron-LM builds it: GELU MLP of 4h, LayerNorm, biases, learned positions,
    embeddings tied to the LM head."""
    return ModelSpec(
        id=model_id,
        name=name,
        source=source,
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


GPT_OSS_YARN_MSCALE = round(0.1 * math.log(32) + 1, 3)
"""GPT-OSS's YaRN attention scaling: Megatron-Bridge's gpt_oss_bridge.py (snapshot 067f987df, L94-100) sets YaRN
factor 32 with yarn_mscale None, which Megatron-Core's yarn_rotary_pos_embedding.py (core_v0.18.0 L252-255) turns
into 0.1 ln(32) + 1 (../shared/data/gpt_oss_blackwell_notes.md 2.4)."""


def _moe(model_id: str, name: str, **shapes: float | bool | str) -> ModelSpec:
    """A SwiGLU, RMSNorm, RoPE mixture-of-experts model with untied embeddings."""
    return ModelSpec(id=model_id, name=name, **shapes)  # type: ignore[arg-type]


_MLA: dict[str, int | bool | str] = {
    "attention": "mla", "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_dim": 128, "qk_rope_dim": 64,
}  # fmt: skip
_LLAMA4 = (
    "Llama4ModelProvider (llama_provider.py L323-383: 48 layers, 5120 wide, 40 heads, 8 query groups, dense FFN 16384, "
    "experts of 8192 top-1 and a shared one of 8192, 'alltoall' dispatcher, untied vocab 202048) and transformers 5.25 "
    "Llama4TextConfig (head_dim 128; the QK norm is an L2 norm without weights)"
)
_QWEN3_MOE = "(128 experts top-8, head dim 128, 4 query groups, QK norm, vocab 151936)"
_GPT_OSS = (
    "(2880 wide, 64 heads of 64, 8 query groups, experts of 2880 top-4, biases, learnable softmax sinks, every other "
    "layer a 128-token sliding window, vocab 201088)"
)
MOE_MODELS = (
    _moe(
        "deepseek-v3", "DeepSeek-V3 671B", layers=61, hidden=7168, ffn=18432, heads=128, kv_heads=128,
        vocab=129280, v_head_dim=128, experts=256, top_k=8, shared_experts=1, moe_ffn=2048, dense_layers=3,
        mtp_layers=1, expert_groups=8, group_top_k=4, **_MLA,
        source="Megatron-Bridge 0.3.1 DeepSeekV3ModelProvider (61 layers, 7168 wide, dense FFN 18432, 256 experts of "
        "2048 top-8 + 1 shared in 8 routing groups of which a token takes 4, first 3 layers dense, vocab 129280) and "
        "transformers 5.24 DeepseekV3Config (128 heads, q/kv LoRA ranks 1536/512, nope/rope/v head dims 128/64/128, "
        "1 MTP layer; n_group 8, topk_group 4). Its recipe (recipes/deepseek/deepseek_v3.py) applies the flex "
        "dispatcher.",
    ),
    _moe(
        "deepseek-v3.2", "DeepSeek-V3.2 671B", layers=61, hidden=7168, ffn=18432, heads=128, kv_heads=128,
        vocab=129280, v_head_dim=128, experts=256, top_k=8, shared_experts=1, moe_ffn=2048, dense_layers=3,
        mtp_layers=1, expert_groups=8, group_top_k=4, index_topk=2048, index_heads=64, index_head_dim=128, **_MLA,
        source="transformers 5.25 DeepseekV32Config (configuration_deepseek_v32.py L83-121: DeepSeek-V3's shapes and "
        "routing, and DSA: an indexer of 64 heads of 128 picking 2048 keys per query). The config leaves the MTP "
        "modules out; one, as DeepSeek-V3 whose checkpoint V3.2 continues training, is an assumption. The recipe's "
        "dispatcher is DeepSeek-V3's (Megatron-Bridge 0.3.1 has no V3.2 recipe).",
    ),
    # Llama 4: chunked attention (8192-token chunks in three of four layers) is priced as full causal attention: the
    # same below 8192 tokens, more work above.
    _moe(
        "llama4-scout", "Llama 4 Scout 17B-16E", layers=48, hidden=5120, ffn=16384, heads=40, kv_heads=8,
        vocab=202048, experts=16, top_k=1, shared_experts=1, moe_ffn=8192, dispatcher="alltoall",
        source=f"Megatron-Bridge 0.3.1 Llama4Experts16ModelProvider over {_LLAMA4}",
    ),
    _moe(
        "llama4-maverick", "Llama 4 Maverick 17B-128E", layers=48, hidden=5120, ffn=16384, heads=40, kv_heads=8,
        vocab=202048, experts=128, top_k=1, shared_experts=1, moe_ffn=8192, moe_layer_interval=2,
        dispatcher="alltoall",
        source=f"Megatron-Bridge 0.3.1 Llama4Experts128ModelProvider (moe_layer_freq [0, 1] * 24: every other layer "
        f"MoE) over {_LLAMA4}",
    ),
    _moe(
        "kimi-k2", "Kimi K2 1T", layers=61, hidden=7168, ffn=18432, heads=64, kv_heads=64, vocab=163840,
        v_head_dim=128, experts=384, top_k=8, shared_experts=1, moe_ffn=2048, dense_layers=1, dispatcher="alltoall",
        **_MLA,
        source="Megatron-Bridge 0.3.1 KimiK2Provider (DeepSeek-V3's MLA with 64 heads, 384 experts, first layer "
        "dense, one routing group; its recipe keeps the provider's 'alltoall' dispatcher)",
    ),
    _moe(
        "qwen3-30b-a3b", "Qwen3-30B-A3B", layers=48, hidden=2048, ffn=6144, heads=32, kv_heads=4, head_size=128,
        qk_norm=True, vocab=151936, experts=128, top_k=8, moe_ffn=768,
        source=f"Megatron-Bridge 0.3.1 Qwen3MoEModelProvider30B_A3B {_QWEN3_MOE}",
    ),
    _moe(
        "qwen3-235b-a22b", "Qwen3-235B-A22B", layers=94, hidden=4096, ffn=12288, heads=64, kv_heads=4,
        head_size=128, qk_norm=True, vocab=151936, experts=128, top_k=8, moe_ffn=1536,
        source=f"Megatron-Bridge 0.3.1 Qwen3MoEModelProvider235B_A22B {_QWEN3_MOE}",
    ),
    # GPT-OSS: the provider's dispatcher is 'alltoall' and its recipes (recipes/gpt_oss/gpt_oss.py) never apply the
    # flex one; megatron-bridge 0.6.x's per-GPU FP8-MX and B300 perf recipes do, and the bundled rows of their layouts
    # run them (fitting.recipes); the MLPerf GPT-OSS-20B runs flex too (inputs.mlperf).
    _moe(
        "gpt-oss-20b", "GPT-OSS-20B", layers=24, hidden=2880, ffn=2880, heads=64, kv_heads=8, head_size=64,
        vocab=201088, bias=True, attention_sinks=True, sliding_window=128, sliding_layers=12, experts=32, top_k=4,
        moe_ffn=2880, dispatcher="alltoall", yarn_mscale=GPT_OSS_YARN_MSCALE, expert_glu_clamp=True,
        source=f"Megatron-Bridge 0.3.1 GPTOSSProvider20B {_GPT_OSS}",
    ),
    _moe(
        "gpt-oss-120b", "GPT-OSS-120B", layers=36, hidden=2880, ffn=2880, heads=64, kv_heads=8, head_size=64,
        vocab=201088, bias=True, attention_sinks=True, sliding_window=128, sliding_layers=18, experts=128, top_k=4,
        moe_ffn=2880, dispatcher="alltoall", yarn_mscale=GPT_OSS_YARN_MSCALE, expert_glu_clamp=True,
        source=f"Megatron-Bridge 0.3.1 GPTOSSProvider120B {_GPT_OSS}",
    ),
    _moe(
        "mixtral-8x7b", "Mixtral 8x7B", layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=32000,
        experts=8, top_k=2, moe_ffn=14336,
        source="transformers 5.24 MixtralConfig defaults (mistralai/Mixtral-8x7B-v0.1)",
    ),
    # No sliding window (MixtralConfig has none, unlike Mistral 7B's); the vocabulary is the v3 SentencePiece
    # tokenizer's, which NeMo's config leaves to the tokenizer.
    _moe(
        "mixtral-8x22b", "Mixtral 8x22B", layers=56, hidden=6144, ffn=16384, heads=48, kv_heads=8, vocab=32768,
        experts=8, top_k=2, moe_ffn=16384,
        source=(
            "NeMo 2.4.0 nemo/collections/llm/gpt/model/mixtral.py MixtralConfig8x22B L117-120 (56 layers, 6144 wide, "
            "48 heads, ffn 16384) over MixtralConfig L50 (8 query groups), L59-61 (8 experts, top-2), L70 (rope "
            "base 1e6); vocab 32768: mistral_common 1.13.1 mistral.py L527 maps open-mixtral-8x22b-2404 to "
            "MistralTokenizer.v3, L228 mistral_instruct_tokenizer_240323.model.v3 (32768 pieces)"
        ),
    ),
)  # fmt: skip


NEMOTRON_H_8B_PATTERN = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
NEMOTRON_H_56B_PATTERN = (
    "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-"
    "M-M-M-M-M-"
)
NEMOTRON_3_NANO_PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
QWEN3_NEXT_PATTERN = "GEGEGE*E" * 12
"""Qwen3-Next's 48 layers as 96 pattern positions, each layer a mixer and a MoE MLP: Gated DeltaNet in three of four,
gated attention in every fourth (transformers 5.25 configuration_qwen3_next.py L123-129: full_attention_interval 4;
Megatron-Bridge 0.3.1 qwen_provider.py L458: linear_attention_freq 4)."""


def _hybrid(model_id: str, name: str, source: str, **shapes: Any) -> ModelSpec:
    """A Nemotron-H-style hybrid (Megatron-Bridge 0.3.1 NemotronHModelProvider, models/nemotronh/
    nemotron_h_provider.py): squared-ReLU MLPs and experts, RMSNorm, no position embedding, no biases, untied
    embeddings, 8 query groups, Mamba-2 heads of 64 in 8 groups, the first and last layer in BF16 under FP8
    (first_last_layers_bf16, TransformerConfig's one layer at each end); vocabulary 131,072 (transformers 5.25
    NemotronHConfig's default, its docstring's checkpoint nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16). `source`
    names the provider of the model's own shapes; the defaults' sources are added to it."""
    defaults: dict[str, Any] = {
        "kv_heads": 8, "vocab": 131072, "mlp": "squared_relu", "mamba_head_dim": 64, "bf16_edge_layers": 1,
        "rotary": False,
    }  # fmt: skip
    cited = (
        f"{source}, over Megatron-Bridge 0.3.1 NemotronHModelProvider (models/nemotronh/nemotron_h_provider.py); "
        "vocabulary 131,072: transformers 5.25 NemotronHConfig's default"
    )
    return ModelSpec(id=model_id, name=name, source=cited, **(defaults | shapes))


NEMOTRON_3_NANO = _hybrid(
    "nemotron-3-nano-30b-a3b", "Nemotron 3 Nano 30B-A3B",
    "Nemotron3NanoProvider: 2688 wide, 32 heads of 128 in 2 query groups, Mamba-2 64 heads of 64 with states of 128, "
    "128 experts of 1856 top-6 and a shared expert of 3712, one routing group; its dispatcher 'alltoall' "
    "(NemotronHModelProvider.moe_token_dispatcher_type)",
    layers=52, hidden=2688, ffn=1856, heads=32, kv_heads=2, head_size=128, hybrid_pattern=NEMOTRON_3_NANO_PATTERN,
    mamba_heads=64, mamba_state=128, experts=128, top_k=6, shared_experts=2, moe_ffn=1856, dispatcher="alltoall",
)  # fmt: skip
"""Nemotron 3 Nano, the base of Nemotron 3.5 Lightning: its shared expert of 3712 is two of 1856 (the same weights
and FLOPs)."""

HYBRID_MODELS = (
    _hybrid(
        "nemotron-h-8b", "Nemotron-H 8B",
        "NemotronHModelProvider8B: 52 layers of the pattern, 4096 wide, Mamba-2 with 128 heads and states of 128, MLP "
        "21504, 32 attention heads (head dim 128)",
        layers=52, hidden=4096, ffn=21504, heads=32, hybrid_pattern=NEMOTRON_H_8B_PATTERN, mamba_heads=128,
        mamba_state=128,
    ),
    _hybrid(
        "nemotron-h-56b", "Nemotron-H 56B",
        "NemotronHModelProvider56B: 118 layers of the pattern, 8192 wide, Mamba-2 with 256 heads and states of 256, "
        "MLP 32768, 64 attention heads (head dim 128)",
        layers=118, hidden=8192, ffn=32768, heads=64, hybrid_pattern=NEMOTRON_H_56B_PATTERN, mamba_heads=256,
        mamba_state=256,
    ),
    NEMOTRON_3_NANO,
    dataclasses.replace(
        NEMOTRON_3_NANO, id="nemotron-3.5-lightning-30b-a3b", name="Nemotron 3.5 Lightning 30B-A3B", mtp_layers=2,
        mtp_pattern="*E", mtp_shared_weights=True, mtp_bf16=True,
        source="Megatron-Bridge 0.6.2 recipes/nemotronh/h100/nemotron_3_nano.py nemotron_3_5_lightning_pretrain_config "
        "(and perf_recipes/nemotronh/gb200/nemotronh.py _build_nemotron_3_5_lightning_gb200_mxfp8): Nano's provider "
        "with mtp_num_layers 2, mtp_hybrid_override_pattern '*E', mtp_use_repeated_layer and keep_mtp_spec_in_bf16. "
        f"Nano: {NEMOTRON_3_NANO.source}",
    ),
    # Qwen3-Next-80B-A3B: its RMSNorms are zero-centred (the same parameters); the checkpoint's MTP module, which
    # transformers skips (modeling_qwen3_next.py L1034) and the provider leaves unset, is left out. The dense width
    # (5632 in the config's defaults, 5120 in the provider) is unused: every layer is MoE.
    ModelSpec(
        id="qwen3-next-80b-a3b", name="Qwen3-Next-80B-A3B", layers=96, hidden=2048, ffn=5120, heads=16, kv_heads=2,
        head_size=256, qk_norm=True, attention_output_gate=True, vocab=151936, hybrid_pattern=QWEN3_NEXT_PATTERN,
        gdn_key_heads=16, gdn_value_heads=32, experts=512, top_k=10, shared_experts=1, moe_ffn=512,
        shared_expert_gate=True,
        source="transformers 5.25 Qwen3NextConfig's defaults, whose docstring names the checkpoint "
        "(configuration_qwen3_next.py L23, L50, L88-118: 48 layers, 2048 wide, 16 heads of 256 in 2 query groups, 512 "
        "experts of 512 top-10 and a shared expert of 512, every layer MoE, vocab 151936 untied; Gated DeltaNet of 16 "
        "key heads and 32 value heads of 128, conv 4), agreeing with Megatron-Bridge 0.3.1 "
        "Qwen3NextModelProvider80B_A3B (qwen_provider.py L434-482: gated attention, the shared expert's gate, QK norm "
        "from Qwen3MoEModelProvider). The pretraining recipe applies the flex dispatcher (DeepEP: "
        "recipes/qwen/qwen3_next.py L66-68, L140).",
    ),
)  # fmt: skip


def _gelu(model_id: str, name: str, **shapes: Any) -> ModelSpec:
    """A GELU, LayerNorm model with embeddings tied to the LM head and no position table (ALiBi or RoPE)."""
    return ModelSpec(id=model_id, name=name, mlp="gelu", norm="layernorm", tied_embeddings=True, **shapes)


_LLAMA1 = (
    "Touvron et al. 2023, arXiv 2302.13971, Table 2 (dim/heads/layers; FFN 2/3 x 4h to a multiple of 256; vocabulary "
    "32,000): whole_runs.csv's model_shapes"
)
WHOLE_RUN_MODELS = (
    # LLaMA 1 7B and 13B have Llama 2's shapes.
    _llama("llama1-7b", "LLaMA 7B", 32, 4096, 11008, 32, 32000, _LLAMA1, kv_heads=32),
    _llama("llama1-13b", "LLaMA 13B", 40, 5120, 13824, 40, 32000, _LLAMA1, kv_heads=40),
    _llama("llama1-33b", "LLaMA 33B", 60, 6656, 17920, 52, 32000, _LLAMA1, kv_heads=52),
    _llama("llama1-65b", "LLaMA 65B", 80, 8192, 22016, 64, 32000, _LLAMA1, kv_heads=64),
    # BLOOM-176B: its ALiBi has no parameters; the LayerNorm after its embedding (28,672 parameters) is left out.
    _gelu(
        "bloom-176b", "BLOOM 176B", layers=70, hidden=14336, ffn=57344, heads=112, kv_heads=112, vocab=250680,
        bias=True,
        source="arXiv 2211.05100, p.21: 70 layers, 14336 hidden, 112 heads, vocab 250,680; 4h GELU MLP, biases",
    ),
    _gelu(
        "falcon-180b", "Falcon 180B", layers=80, hidden=14848, ffn=59392, heads=232, kv_heads=8, vocab=65024,
        parallel_block=True,
        source="Falcon-180B's config as whole_runs_sources.md gives it: 80 layers, 14848 hidden, 232 heads, 8 KV, "
        "vocab 65024, no biases; a parallel attention/MLP block with two LayerNorms on its input (transformers 5.25 "
        "FalconConfig new_decoder_architecture, modeling_falcon.py L368-381: ln_attn and ln_mlp)",
    ),
    _gelu(
        "mpt-7b", "MPT-7B", layers=32, hidden=4096, ffn=16384, heads=32, kv_heads=32, vocab=50432,
        source="whole_runs.csv, the llm-foundry mpt-7b config: ALiBi, no biases, vocab 50,432",
    ),
)  # fmt: skip
"""Models of the published whole runs (whole_runs.csv) that the zoo had no shapes for."""

_NEMOTRON = (
    "over NemotronModelProvider (L33-68: squared ReLU, LayerNorm, no linear biases, untied embeddings, RoPE on half "
    "the head). Vocabulary 256,000 as Nemotron-4's: NeMo 24.07's performance table"
)
_NEMOTRON4 = (
    "(nemotron_provider.py L33-146: squared-ReLU MLP, LayerNorm, no linear biases, untied embeddings, RoPE on half the "
    "head) and transformers 5.25 NemotronConfig (vocab 256000, head_dim hidden / heads)"
)
ARCHITECTURE_MODELS = (
    ModelSpec(
        id="nemotron3-8b", name="Nemotron-3 8B", layers=32, hidden=4096, ffn=16384, heads=32, kv_heads=32,
        vocab=256000, mlp="squared_relu", norm="layernorm",
        source="Megatron-Bridge 0.3.1 Nemotron3ModelProvider8B (nemotron_provider.py L87-116: 32 layers, 4096 wide, "
        f"MLP of 16384, 32 heads, num_query_groups None: multi-head) {_NEMOTRON} (measured_runs.csv row 281) gives "
        "643 / 12,507 TFLOP/s per tokens/s, 51.41 GFLOP a token, which these shapes reproduce with it "
        "(tests/test_architecture_variants.py)",
    ),
    ModelSpec(
        id="nemotron3-22b", name="Nemotron-3 22B", layers=40, hidden=6144, ffn=24576, heads=48, kv_heads=48,
        vocab=256000, mlp="squared_relu", norm="layernorm",
        source="Megatron-Bridge 0.3.1 Nemotron3ModelProvider22B (nemotron_provider.py L87-116: 40 layers, 6144 wide, "
        f"MLP of 24576, 48 heads, num_query_groups None: multi-head) {_NEMOTRON} (measured_runs.csv row 282) gives "
        "562 / 4,312 TFLOP/s per tokens/s, 130.3 GFLOP a token, which these shapes reproduce with it "
        "(tests/test_architecture_variants.py)",
    ),
    ModelSpec(
        id="nemotron4-15b", name="Nemotron-4 15B", layers=32, hidden=6144, ffn=24576, heads=48, kv_heads=8,
        vocab=256000, mlp="squared_relu", norm="layernorm",
        source=f"Megatron-Bridge 0.3.1 Nemotron4ModelProvider15B {_NEMOTRON4}",
    ),
    ModelSpec(
        id="nemotron4-340b", name="Nemotron-4 340B", layers=96, hidden=18432, ffn=73728, heads=96, kv_heads=8,
        vocab=256000, mlp="squared_relu", norm="layernorm",
        source=f"Megatron-Bridge 0.3.1 Nemotron4ModelProvider340B {_NEMOTRON4}",
    ),
    # Gemma 3 27B: its language model.
    ModelSpec(
        id="gemma3-27b", name="Gemma 3 27B", layers=62, hidden=5376, ffn=21504, heads=32, kv_heads=16,
        head_size=128, vocab=262208, tied_embeddings=True, mlp="geglu", qk_norm=True, layer_norms=4,
        sliding_window=1024, sliding_layers=52,
        source="Megatron-Bridge 0.3.1 Gemma3ModelProvider27B and Gemma3ModelProvider (gemma3_provider.py L55-207: 62 "
        "layers, 5376 wide, 32 heads of 128, 16 query groups, gated GELU of 21504, RMSNorm before and after each "
        "block, QK norm, tied embeddings, five 1024-token sliding-window layers to one global one: 52 of 62, vocab "
        "262208)",
    ),
)  # fmt: skip
"""Models of issue 32's architecture features (squared-ReLU MLPs, pre- and post-norms) with their published
configs (DeepSeek-V3.2's sparse attention and Llama 4's interleaved MoE layers are among MOE_MODELS). StarCoder2 15B
is left out: its shapes are in no reachable source (transformers' Starcoder2Config defaults are the 3B's)."""

_GPT3 = "with the MLPerf 50,257-token vocabulary (mlperf_benchmarks.md)"
ZOO: dict[str, ModelSpec] = {
    m.id: m
    for m in (
        _llama("llama3.1-8b", "Llama 3.1 8B", 32, 4096, 14336, 32, 128256, _hf("Llama-3.1-8B")),
        _llama("llama3.1-70b", "Llama 3.1 70B", 80, 8192, 28672, 64, 128256, _hf("Llama-3.1-70B")),
        _llama("llama3.1-405b", "Llama 3.1 405B", 126, 16384, 53248, 128, 128256, _hf("Llama-3.1-405B")),
        _llama("llama2-7b", "Llama 2 7B", 32, 4096, 11008, 32, 32000, _hf("Llama-2-7b-hf"), kv_heads=32),
        _llama("llama2-13b", "Llama 2 13B", 40, 5120, 13824, 40, 32000, _hf("Llama-2-13b-hf"), kv_heads=40),
        _llama("llama2-70b", "Llama 2 70B", 80, 8192, 28672, 64, 32000, _hf("Llama-2-70b-hf")),
        gpt("gpt3-5b", "GPT-3 5B", 24, 4096, 32, 50257, 2048, f"NeMo's GPT3 5B config {_GPT3}"),
        gpt("gpt3-20b", "GPT-3 20B", 44, 6144, 48, 50257, 2048, f"NeMo's GPT3 20B config {_GPT3}"),
        gpt(
            "gpt3-175b",
            "GPT-3 175B",
            96,
            12288,
            96,
            50257,
            2048,
            f"Brown et al. 2020 (arXiv 2005.14165) Table 2.1 {_GPT3}",
        ),
        *WHOLE_RUN_MODELS,
        *ARCHITECTURE_MODELS,
        *MOE_MODELS,
        *HYBRID_MODELS,
    )
}


def get_model(model_id: str) -> ModelSpec:
    if model_id not in ZOO:
        raise PerfmodelError(
            f"unknown model '{shown(model_id)}'{did_you_mean(shown(model_id), ZOO)}; valid: {', '.join(ZOO)}"
        )
    return ZOO[model_id]


def model_spec(shapes: dict[str, Any]) -> ModelSpec:
    """The model of checked shapes (a scenario's [model] table over a zoo entry's), or a FieldError naming the
    scenario field ('model.top_k') that is missing ('Field required', as pydantic words it) or that the other shapes
    rule out (ModelSpec's own check)."""
    missing = next((f.name for f in input_fields(ModelSpec) if f.default is MISSING and f.name not in shapes), None)
    if missing is not None:
        raise FieldError(f"model.{missing}", "Field required")
    try:
        return ModelSpec(**shapes)
    except FieldError as exc:
        raise FieldError(f"model.{exc.field}", exc.detail) from None
