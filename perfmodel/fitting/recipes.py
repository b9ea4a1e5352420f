"""The Megatron-Bridge performance recipe settings of bundled rows, dense and MoE, that the model prices differently
from the zoo entry or the stack's default: a row whose model, GPU, precision and parallel layout (and sharding, where
the recipe names it) match a sourced recipe exactly runs that recipe's settings. A MoE recipe sets the dispatcher and
EP overlap (`ModelSpec.dispatcher`, `ModelSpec.ep_microbatch_overlap`), TransformerEngine settings
(`Scenario.fp8_attention`, `fused_grouped_mlp`, `fp8_output_proj`, `expert_loop`) and CUDA graph scope
(`Scenario.full_iteration_graph`: cuda_graph_impl 'full_iteration', no per-step host overhead; the partial graphs of
cuda_graph_impl 'transformer_engine' are not priced); a dense one its activation offload
(`Scenario.activation_offload_layers`). Either's recompute applies where the row leaves it blank.

The table is Python, not a CSV under perfmodel/data: its MoE sources share long citations (the op fuser left off, the
FP8-MX full-iteration settings, why Nemotron's experts loop) and settings groups whose reasons are documented once
(`_FLEX_EXPOSED`, `_FULL_ITERATION_MXFP8`), which CSV rows would repeat verbatim.

The recipes are megatron-bridge 0.6.x's per-GPU performance recipes (PyPI sdists 0.6.0 and 0.6.2, the latter
uploaded 2026-09-18), i.e. the recipes as of NeMo 26.08; where the two differ (the Nemotron 3 FP8-MX configs), 0.6.0's,
uploaded 2026-08-20, two days before the tables' snapshot. The tables' rows of older containers ran the same layout;
that they ran the same settings is an assumption, noted on each row it is applied to. The rule for the FP8-MX
recipes' TransformerEngine settings and whole-iteration graph: from `MXFP8_ATTENTION_CONTAINER` on (the recipes' era:
the first container whose TransformerEngine runs MXFP8 attention and the op fuser's grouped MLP); a row of an older
container at the same layout keeps the zoo entry's settings and pays the host overhead, since no source says what
it ran."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

RECIPES_CONTAINER = "NeMo 26.08"
"""The container megatron-bridge 0.6.x's recipes are the recipes of: its rows run them, older ones by assumption."""

LAYOUT_KEYS = ("tp", "pp", "vp", "ep", "mbs")
"""The parallelism a recipe fixes and a row must match (the global batch only sets the micro-batch count); a dense
row, without experts, runs EP 1."""


@dataclass(frozen=True, kw_only=True)
class PerfRecipe:
    """A sourced recipe's settings that the model prices unlike the zoo entry or the stack's default, and the rows
    (by GPU, precision, layout and sharding) it applies to."""

    model: str
    """measured_runs.csv model name."""
    hardware: str
    """measured_runs.csv hardware."""
    dtypes: tuple[str, ...]
    """measured_runs.csv precisions the recipe runs (a GPU's BF16 and FP8-MX recipes may set different things)."""
    layout: tuple[int, ...]
    """The recipe's parallelism, in `LAYOUT_KEYS` order."""
    model_settings: Mapping[str, Any]
    """ModelSpec fields the recipe sets otherwise than the zoo entry."""
    run_settings: Mapping[str, bool | int]
    """Scenario fields the recipe sets: its TransformerEngine settings (precision.bridge_recipe), its activation
    offload."""
    source: str
    """Where the recipe says so: the sdist, file, config function and the lines that set `model_settings`."""
    sharding: str = ""
    """The start of the measured_runs.csv fsdp_or_zero cell of the rows the recipe runs ('Megatron-FSDP'); '': any."""
    recompute: str | None = None
    """The recompute the recipe sets, in the model's terms, for rows that leave it out: 'selective' for Megatron's
    recompute_modules ['layernorm', 'moe_act'] (the norms and the experts' activation re-run in the backward:
    workload.SELECTIVE_RECOMPUTE, with flash attention), 'none' for recompute_modules [] or no recompute_granularity;
    None: the stack's default."""
    since: str = ""
    """The first container whose software runs `model_settings` ('': every container with the layout's rows): rows of
    older containers keep the zoo entry's settings."""


_GPT_OSS = "megatron-bridge 0.6.2 (PyPI sdist, 2026-09-18), perf_recipes/gpt_oss/"
_FP8MX_FULL_ITER = (
    "common.py _apply_gpt_oss_120b_full_iter_fp8mx_configs: moe_token_dispatcher_type 'flex' on HybridEP, "
    "CommOverlapConfig overlap_moe_expert_parallel_comm True, fp8_output_proj True (Megatron-Bridge snapshot "
    "067f987df perf_recipes/gpt_oss/common.py L28: the LM head in MXFP8, Megatron-Core 0.18's "
    "is_mxfp8_output_proj_active)"
)

_FUSED_MLP = {
    gpu: "use_transformer_engine_op_fuser True (common.py L42) and NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 "
    f"({gpu}/gpt_oss.py L{line}, ../shared/data/gpt_oss_blackwell_notes.md 2.5): TransformerEngine's fused grouped "
    "MLP; fp8_dot_product_attention True (common.py L44): MXFP8 attention"
    for gpu, line in (("gb300", 251), ("gb200", 261))
}
_LAYERNORM_MOE_ACT = "recompute_granularity 'selective', recompute_modules ['layernorm', 'moe_act']"
_OP_FUSER_OFF = {"expert_loop": True}
"""A recipe that leaves TransformerEngine's op fuser off: Megatron-Core's TEGroupedMLP, its per-expert cost paid in
every release (precision.Recipe.expert_loop)."""
_OP_FUSER_OFF_SOURCE = (
    "use_transformer_engine_op_fuser left False by _benchmark_common (perf_recipes/_common.py L65-66) and no "
    "NVTE_CUTEDSL_FUSED_GROUPED_MLP: Megatron-Core's TEGroupedMLP"
)
_NO_EP_OVERLAP = (
    "overlap_moe_expert_parallel_comm left unset, so False (training/comm_overlap.py L438): nothing overlaps the "
    "exchange (ModelSpec.ep_exchange_exposed)"
)
_FLEX_EXPOSED = {"dispatcher": "flex", "ep_exchange_exposed": True}
"""A recipe's flex dispatcher with neither the EP overlap of two micro-batches nor a shared-expert one: every
all-to-all exposed, not hidden up to the fitted share as the zoo entries' flex exchange is."""
_FULL_ITERATION_MXFP8 = {"fp8_attention": True, "fused_grouped_mlp": True, "full_iteration_graph": True}
"""What the FP8-MX full-iteration recipes of GPT-OSS-120B and Qwen3 alike set that the model prices: MXFP8 attention,
the fused grouped MLP and the whole iteration in one CUDA graph (cuda_graph_impl 'full_iteration': gpt_oss/common.py
L55, qwen/common.py L39), so no per-step host overhead (precision.Recipe.graph_captured)."""
MXFP8_ATTENTION_CONTAINER = "NeMo 26.06"
"""The first container with MXFP8 attention (TransformerEngine 2.16, PR #2719 of 2026-04-21; NeMo 26.06 ships TE 2.16:
Megatron-Bridge docs/releases/software-versions.md, ../shared/data/gpt_oss_blackwell_notes.md 2.1): a row of an older
container at a full-iteration recipe's layout ran neither it nor the op fuser's grouped MLP (Megatron-Core 0.18)."""


def _qwen3_fp8mx(model: str, gpu: str, layout: tuple[int, ...], config: str) -> PerfRecipe:
    """A Blackwell FP8-MX Qwen3 recipe: qwen/common.py _enable_hybridep_full_iteration_mxfp8 (L36-60)."""
    return PerfRecipe(
        model=model,
        hardware=gpu.upper(),
        dtypes=("MXFP8",),
        layout=layout,
        model_settings={},
        run_settings=_FULL_ITERATION_MXFP8,
        source=f"megatron-bridge 0.6.2 (PyPI wheel, 2026-09-18), perf_recipes/qwen/{gpu}/qwen3_moe.py {config}: "
        "_enable_hybridep_full_iteration_mxfp8 (qwen/common.py L36-60: use_transformer_engine_op_fuser True, "
        "fp8_dot_product_attention True) and NVTE_CUTEDSL_FUSED_GROUPED_MLP=1",
        since=MXFP8_ATTENTION_CONTAINER,
    )


def _gpt_oss_120b_fp8mx(gpu: str, ep: int) -> PerfRecipe:
    """A GB300/GB200 FP8-MX GPT-OSS-120B recipe: both apply the same full-iteration settings, at their own EP."""
    return PerfRecipe(
        model="GPT-OSS-120B",
        hardware=gpu.upper(),
        dtypes=("MXFP8",),
        layout=(1, 1, 1, ep, 4),
        model_settings={"dispatcher": "flex", "ep_microbatch_overlap": True},
        run_settings={"fp8_output_proj": True} | _FULL_ITERATION_MXFP8,
        source=f"{_GPT_OSS}{gpu}/gpt_oss.py gpt_oss_120b_pretrain_64gpu_{gpu}_fp8mx_config ({_FP8MX_FULL_ITER}; "
        f"{_FUSED_MLP[gpu]})",
    )


_DEEPSEEK = "megatron-bridge 0.6.2 (PyPI sdist, 2026-09-18), perf_recipes/deepseek/"


def _deepseek_v3_fp8mx(
    gpu: str, layout: tuple[int, ...], fp8_attention: bool, line: int, no_recompute_line: int | None = None
) -> PerfRecipe:
    """A Blackwell FP8-MX DeepSeek-V3 recipe that calls common.py _enable_deepseek_full_iteration_mxfp8 (L48-76):
    the whole iteration in one CUDA graph (L59), the op fuser (L69) with NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 (the fused
    grouped MLP), the LM head in MXFP8 (L70) and, where the GPU's recipe asks, MXFP8 attention (L74). Its dispatcher
    and EP overlap are the zoo entry's already. `no_recompute_line`: the line where the recipe sets recompute_modules
    [] (Megatron-Core's selective granularity with no module: nothing re-runs), so its rows recompute nothing."""
    attention = {"fp8_attention": True} if fp8_attention else {}
    no_recompute = f"; recompute_modules [] (L{no_recompute_line})" if no_recompute_line else ""
    return PerfRecipe(
        model="DeepSeek-V3",
        hardware=gpu.upper(),
        dtypes=("MXFP8",),
        layout=layout,
        model_settings={},
        run_settings={"fused_grouped_mlp": True, "fp8_output_proj": True, "full_iteration_graph": True} | attention,
        source=f"{_DEEPSEEK}{gpu}/deepseek_v3.py deepseek_v3_pretrain_256gpu_{gpu}_fp8mx_config: "
        f"_enable_deepseek_full_iteration_mxfp8(cfg, {'fp8_dot_product_attention=True, ' * fp8_attention}"
        f"fp8_output_proj=True) (L{line}; common.py L48-76: cuda_graph_impl 'full_iteration', "
        f"use_transformer_engine_op_fuser True) and NVTE_CUTEDSL_FUSED_GROUPED_MLP=1{no_recompute}",
        recompute="none" if no_recompute_line else None,
        since=MXFP8_ATTENTION_CONTAINER,
    )


def _h100_fp8_flex_exposed(model: str, layout: tuple[int, ...], source: str) -> PerfRecipe:
    """An H100 FP8-CS recipe that runs the flex dispatcher with nothing overlapping its exchange (`_FLEX_EXPOSED`)."""
    return PerfRecipe(
        model=model,
        hardware="H100-SXM5-80GB",
        dtypes=("FP8", "FP8-CS"),
        layout=layout,
        model_settings=_FLEX_EXPOSED,
        run_settings={},
        source=source,
    )


NEMOTRON_FUSED_LATER = (
    "megatron-bridge 0.6.2 (PyPI sdist, 2026-09-18) sets use_transformer_engine_op_fuser, fp8_dot_product_attention "
    "and NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 in the GB300 and GB200 Nano and Lightning FP8-MX configs "
    "(gb300/nemotronh.py L493, L495, L515); 0.6.0 (2026-08-20), of the tables' snapshot (2026-08-22), sets none of "
    "them. Their squared-ReLU experts could not have run the fused kernel before either: TransformerEngine fuses "
    "only GLU activations (ScaledSwiGLU, ScaledClampedQGeGLU) up to 2.16.1 (ops/_common.py fuse_grouped_mlp_ops) and "
    "ScaledSReLU from 2.17 with cudnn-frontend 1.24 (ops/fused/grouped_mlp.py fuse_srelu_ops, "
    "_cudnn_frontend_supports_grouped_gemm_srelu), while Megatron-Bridge 0.5.0 (2026-06-22, NeMo 26.06's) pins "
    "cudnn-frontend 1.23.0"
)
"""Why the Nemotron 3 Nano and Lightning FP8-MX rows price the per-expert loop, not the fused grouped MLP."""


def _nemotron_fp8mx(model: str, gpu: str, mbs: int, config: str, lines: str) -> PerfRecipe:
    """A Blackwell FP8-MX Nemotron 3 Nano or Lightning recipe (EP8) as of NeMo 26.08: the op fuser off, so the experts
    loop; graphs of attention, Mamba and the router alone (cuda_graph_impl 'transformer_engine'). Megatron-Bridge 0.6.2
    (2026-09-18, after the tables' snapshot) turns the fused grouped MLP and MXFP8 attention on
    (`NEMOTRON_FUSED_LATER`)."""
    return PerfRecipe(
        model=model,
        hardware=gpu.upper(),
        dtypes=("MXFP8",),
        layout=(1, 1, 1, 8, mbs),
        model_settings={},
        run_settings=_OP_FUSER_OFF,
        source=f"megatron-bridge 0.6.0 (PyPI sdist, 2026-08-20), perf_recipes/nemotronh/{gpu}/nemotronh.py {config} "
        f"({lines}): neither the op fuser nor fp8_dot_product_attention set; {_OP_FUSER_OFF_SOURCE}; "
        f"{NEMOTRON_FUSED_LATER}",
        since=MXFP8_ATTENTION_CONTAINER,
    )


def _llama3_70b_fsdp_offload(gpu: str, offloaded: int, lines: tuple[str, str, str, str]) -> PerfRecipe:
    """A Grace-Blackwell Llama 3 70B FP8 Megatron-FSDP recipe: no recompute, the activations of `offloaded` of the 80
    layers in Grace memory instead; `lines`: the config function's, its layout's, use_megatron_fsdp's and the
    offload's lines."""
    config, layout, fsdp, offload = lines
    return PerfRecipe(
        model="Llama3-70B",
        hardware=gpu.upper(),
        dtypes=("FP8", "FP8-CS"),
        layout=(1, 1, 1, 1, 2),
        model_settings={},
        run_settings={"activation_offload_layers": offloaded},
        source=f"megatron-bridge 0.6.2 (PyPI sdist, 2026-09-18) src/megatron/bridge/perf_recipes/llama/{gpu}/llama3.py "
        f"llama3_70b_pretrain_64gpu_{gpu}_fp8cs_config (L{config}): TP1 PP1 MBS2 (L{layout}), use_megatron_fsdp "
        f"(L{fsdp}), no recompute_granularity; it keeps memory by offloading the activations of {offloaded} of the 80 "
        f"layers to Grace memory instead (cpu_offloading_num_layers {offloaded}, cpu_offloading_weights False, "
        f"L{offload})",
        sharding="Megatron-FSDP",
        recompute="none",
    )


PERF_RECIPES = (
    PerfRecipe(
        model="Qwen3-235B-A22B",
        hardware="H100-SXM5-80GB",
        dtypes=("FP8", "FP8-CS", "BF16"),
        layout=(2, 8, 4, 32, 1),
        model_settings={"dispatcher": "alltoall", "ep_microbatch_overlap": True},
        run_settings={},
        source="megatron-bridge 0.6.2 (PyPI sdist, 2026-09-18; 0.6.0 the same), perf_recipes/qwen/h100/qwen3_moe.py, "
        "qwen3_235b_a22b_pretrain_256gpu_h100_fp8cs_config and _bf16_config: TP2 PP8 VP4 EP32 MBS1, "
        "moe_token_dispatcher_type 'alltoall', moe_a2a_overlap True, "
        "CommOverlapConfig(overlap_moe_expert_parallel_comm=True)",
    ),
    _h100_fp8_flex_exposed(
        "Qwen3-30B-A3B",
        (1, 1, 1, 16, 1),
        "megatron-bridge 0.6.2 (PyPI wheel, 2026-09-18; 0.6.0 the same), perf_recipes/qwen/h100/qwen3_moe.py "
        "qwen3_30b_a3b_pretrain_16gpu_h100_fp8cs_config (L66-115): TP1 PP1 EP16 MBS1 (L79-86), recompute_granularity "
        "None (L71), moe_token_dispatcher_type 'flex' on HybridEP with moe_a2a_overlap False (L88-90), "
        f"CommOverlapConfig(tp_comm_overlap=True) (L92): {_NO_EP_OVERLAP}; Qwen3-30B-A3B has no shared experts",
    ),
    _h100_fp8_flex_exposed(
        "DeepSeek-V3",
        (2, 8, 4, 64, 1),
        f"{_DEEPSEEK}h100/deepseek_v3.py deepseek_v3_pretrain_1024gpu_h100_fp8cs_config (L75-120): TP2 PP8 VP4 EP64 "
        "MBS1 (L81-88) on recipes/deepseek/h100/deepseek_v3.py's provider, whose HybridEP backend (L145) "
        "apply_flex_dispatcher_backend (L241) turns into the flex dispatcher with moe_shared_expert_overlap False "
        "(training/flex_dispatcher_backend.py L99), overlap_moe_expert_parallel_comm False (L215): nothing overlaps "
        "the exchange (ModelSpec.ep_exchange_exposed)",
    ),
    _gpt_oss_120b_fp8mx("gb300", 16),
    _gpt_oss_120b_fp8mx("gb200", 64),
    PerfRecipe(
        model="GPT-OSS-120B",
        hardware="GB200",
        dtypes=("BF16",),
        layout=(1, 1, 1, 64, 4),
        model_settings={"ep_microbatch_overlap": True},
        run_settings={},
        source=f"{_GPT_OSS}gb200/gpt_oss.py gpt_oss_120b_pretrain_64gpu_gb200_bf16_config: "
        "comm_overlap.overlap_moe_expert_parallel_comm True, the dispatcher left 'alltoall'; "
        f"{_LAYERNORM_MOE_ACT} (L196-197)",
        recompute="selective",
    ),
    PerfRecipe(
        model="GPT-OSS-120B",
        hardware="B200",
        dtypes=("BF16", "MXFP8"),
        layout=(1, 1, 1, 8, 4),
        model_settings={},
        run_settings=_OP_FUSER_OFF,
        source=f"{_GPT_OSS}b200/gpt_oss.py gpt_oss_120b_pretrain_64gpu_b200_bf16_config and _fp8mx_config: "
        f"{_LAYERNORM_MOE_ACT} (L39-40, L75-76); {_OP_FUSER_OFF_SOURCE}",
        recompute="selective",
    ),
    PerfRecipe(
        model="GPT-OSS-120B",
        hardware="H100-SXM5-80GB",
        dtypes=("BF16", "FP8", "FP8-CS"),
        layout=(1, 4, 1, 8, 1),
        model_settings={},
        run_settings={},
        source=f"{_GPT_OSS}h100/gpt_oss.py gpt_oss_120b_pretrain_64gpu_h100_bf16_config and _fp8cs_config: "
        f"{_LAYERNORM_MOE_ACT} (L39-40, L75-76)",
        recompute="selective",
    ),
    _qwen3_fp8mx("Qwen3-30B-A3B", "gb300", (1, 1, 1, 8, 8), "qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx_config"),
    _qwen3_fp8mx("Qwen3-30B-A3B", "gb200", (1, 1, 1, 8, 4), "qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_config"),
    _qwen3_fp8mx("Qwen3-30B-A3B", "b300", (1, 1, 1, 8, 8), "qwen3_30b_a3b_pretrain_8gpu_b300_fp8mx_config"),
    _qwen3_fp8mx("Qwen3-30B-A3B", "b200", (1, 1, 1, 8, 4), "qwen3_30b_a3b_pretrain_8gpu_b200_fp8mx_config"),
    _qwen3_fp8mx("Qwen3-235B-A22B", "b300", (1, 8, 3, 8, 2), "qwen3_235b_a22b_pretrain_256gpu_b300_fp8mx_config"),
    _qwen3_fp8mx("Qwen3-235B-A22B", "b200", (1, 8, 3, 8, 1), "qwen3_235b_a22b_pretrain_256gpu_b200_fp8mx_config"),
    _qwen3_fp8mx(
        "Qwen3-235B-A22B", "gb300", (1, 4, 12, 32, 2), "qwen3_235b_a22b_pretrain_64gpu_gb300_fp8mx_config and _256gpu_"
    ),
    _qwen3_fp8mx(
        "Qwen3-235B-A22B", "gb200", (1, 8, 3, 32, 1), "qwen3_235b_a22b_pretrain_64gpu_gb200_fp8mx_config and _256gpu_"
    ),
    PerfRecipe(
        model="GPT-OSS-120B",
        hardware="B300",
        dtypes=("MXFP8", "BF16"),
        layout=(1, 1, 1, 8, 4),
        model_settings=_FLEX_EXPOSED,
        run_settings=_OP_FUSER_OFF,
        source=f"{_GPT_OSS}b300/gpt_oss.py gpt_oss_120b_pretrain_64gpu_b300_fp8mx_config and _bf16_config: "
        "moe_token_dispatcher_type 'flex', moe_flex_dispatcher_backend 'hybridep' (L284-285, L237-238), "
        f"{_NO_EP_OVERLAP}, and GPT-OSS-120B has no shared experts; {_OP_FUSER_OFF_SOURCE}",
    ),
    _deepseek_v3_fp8mx("gb300", (1, 2, 8, 32, 1), True, 154, no_recompute_line=145),
    _deepseek_v3_fp8mx("gb200", (1, 4, 4, 64, 1), False, 157),
    _nemotron_fp8mx(
        "Nemotron-3-Nano-30B-A3B", "gb300", 4, "nemotron_3_nano_pretrain_8gpu_gb300_fp8mx_config", "L362-410"
    ),
    _nemotron_fp8mx(
        "Nemotron-3-Nano-30B-A3B", "gb200", 2, "nemotron_3_nano_pretrain_8gpu_gb200_fp8mx_config", "L357-405"
    ),
    _nemotron_fp8mx(
        "Nemotron-3-Nano-30B-A3B", "b300", 4, "nemotron_3_nano_pretrain_8gpu_b300_fp8mx_config", "L276-326"
    ),
    _nemotron_fp8mx(
        "Nemotron-3.5-Lightning-30B-A3B",
        "gb200",
        2,
        "nemotron_3_5_lightning_pretrain_8gpu_gb200_fp8mx_config (the GB200 Nano config with two MTP depths)",
        "L492-520",
    ),
    _llama3_70b_fsdp_offload("gb200", 40, ("251-301", "258-264", "266", "276-278")),
    _llama3_70b_fsdp_offload("gb300", 20, ("258-308", "265-271", "273", "283-285")),
)
"""Only recipes some bundled row runs and whose settings move the prediction, every one found: the Blackwell recipes
of Qwen3 and DeepSeek-V3 (flex dispatcher, and in the MXFP8 ones the EP overlap of two micro-batches too) price as
the zoo entries already do but for their FP8-MX ones' TransformerEngine settings and whole-iteration graph,
GPT-OSS-120B's GB300 BF16, B200 and H100 recipes keep the provider's 'alltoall' without EP overlap, and the Nemotron 3
Nano and Lightning FP8-MX ones of NeMo 26.08 leave the op fuser off on GB300, GB200 and B300 (their experts loop, as
GPT-OSS-120B's B300 and B200 ones do; `NEMOTRON_FUSED_LATER`). Qwen3-30B-A3B's H100 FP8-CS (EP16) and DeepSeek-V3's
H100 FP8-CS recipes, like GPT-OSS-120B's B300 ones, run flex with nothing overlapping its exchange, where the zoo
entries' flex exchange hides behind the layer (`_FLEX_EXPOSED`). DeepSeek-V3's B300 FP8-MX recipe
(PP8 VP2 EP8 MBS1) matches no bundled row; Nano's B200 FP8-MX one (EP8 MBS2, op fuser off too) only a NeMo 26.04.01
row, whose release pays the per-expert loop anyway (efficiency.GROUPED_KERNEL_RELEASE). Of the dense recipes whose
rows in the tables leave recompute blank, only Llama 3 70B's FP8 Megatron-FSDP ones on GB200/GB300 set otherwise than
the stack's choice (fitting.assumed): they recompute nothing and offload the activations of their first 40 / 20 layers
to the Grace CPU, where the memory estimate, without offloading, would recompute."""


class KnownRegression(NamedTuple):
    """A release's known slowdown of a kernel, as its publisher marks rows measured under it."""

    settings: Mapping[str, bool]
    """Scenario fields that price the regressed kernel."""
    note: str
    """The assumption each row carries: the publisher's footnote and the kernel's measurement."""


KNOWN_REGRESSIONS = {
    ("GPT-OSS-120B", "NeMo 26.06.01 container"): KnownRegression(
        {"dglu_dbias_regression": True},
        "dglu_dbias_regression True: NVIDIA's footnote to these rows names cudnn-frontend issue #256, the fused "
        "grouped MLP's dGeGLU + dbias kernel about 10x slower from cudnn-frontend 1.24 (Megatron-Bridge "
        "docs/performance-summary-archive.md L57-58, L90, PR #4989; ../shared/data/gpt_oss_blackwell_notes.md 2.6), "
        "priced at PR #322's 1,362.8 against 155.6 us (physics.moe.DGLU_DBIAS_REGRESSION); the same layouts ran 1.6x "
        "faster in 26.06, and every other model's 26.06.01 rows are within 5% of their 26.06 ones (only GPT-OSS's "
        "experts have biases)",
    ),
}
"""Rows the publisher marks as measured under a known software regression, by model and container: the rows price the
regressed kernel (`KnownRegression.settings`) and carry the note on their assumptions."""


def recipe_for(row: Mapping[str, str], parallelism: Mapping[str, Any]) -> PerfRecipe | None:
    """The sourced recipe a measured_runs.csv row with this parallelism ran, if one matches its model, GPU, precision,
    layout and sharding exactly."""
    layout = tuple(parallelism.get(k, 1) for k in LAYOUT_KEYS)
    return next(
        (
            r
            for r in PERF_RECIPES
            if (r.model, r.hardware, r.layout) == (row["model"], row["hardware"], layout)
            and row["dtype"] in r.dtypes
            and row["fsdp_or_zero"].startswith(r.sharding)
        ),
        None,
    )
