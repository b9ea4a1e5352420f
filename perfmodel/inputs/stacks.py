"""Software-stack profiles: what a training stack does that the hardware does not decide.

The measured rows come from different stacks: NVIDIA's NeMo/Megatron-Bridge (Megatron-Core + Transformer Engine,
cuDNN fused attention, userbuffers TP overlap), MosaicML's Composer (llm-foundry: PyTorch FSDP, FlashAttention-2 or
Triton attention), torchtitan (PyTorch FSDP2 + async TP, SDPA attention), DeepSpeed (ZeRO) and MaxText (JAX/XLA:
hybrid FSDP, cuDNN flash attention through Transformer Engine). A profile holds the
facts a prediction needs; calibration fits the few stack-specific parameters where a stack has rows
(physics/parameters.py: attention_impl, step_overhead_s, overlap_dp).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.precision import (
    BF16_BYTES,
    FP8_RECIPES,
    FP32_BYTES,
    TE_FP8_RECIPES,
    Recipe,
    float8_tp_recipe,
    rowwise_recipe,
)


@dataclass(frozen=True)
class SourcedFigure:
    value: float
    source: str


@dataclass(frozen=True)
class LayoutDefault:
    """What a stack runs for a layout dimension a measured row does not report.

    `default` is the stack's documented setting (None where none can be sourced); `plausible` the settings the
    stack picks among per run (memory decides: fitting.assumed prices the row at the least memory-saving one that
    fits), over which such a row also gets its range. A dimension with one plausible setting is not open: the row
    is a point at it. BLOCK_RECOMPUTE stands for a full recompute of the fewest leading layers that fit."""

    dimension: str
    """'recompute', 'zero' or 'mbs' (a Layout field)."""
    default: str | int | None
    plausible: tuple[str | int, ...]
    source: str


@dataclass(frozen=True)
class StackProfile:
    name: str
    description: str
    attention_kernel: str
    attention_speed: SourcedFigure
    """Speed of the stack's attention kernel relative to cuDNN fused attention / FlashAttention-3 (the prior centre
    of its fitted attention factor)."""
    attention_native: tuple[str, ...]
    """Accelerator families on which the stack's attention kernel is already the family's fastest (no factor)."""
    fa2: bool
    """Whether the stack's attention kernel is FlashAttention-2, whose speed against the family's fused attention is
    measured per family and pass (FA2_SPEEDS); `attention_speed` prices the families without FA2 rows."""
    tp_comm_overlap: bool
    """Whether the stack overlaps tensor-parallel collectives with GEMMs (userbuffers or async TP)."""
    fp8: bool
    """Whether the stack trains with FP8 GEMMs (Transformer Engine)."""
    attention_code: SourcedFigure = SourcedFigure(1.0, "the stack's models call the kernel as measured")
    """Speed of the attention code the stack's models run against the kernel `attention_speed` describes: the prior
    centre of physics/parameters.py `attention_impl` on every family, what a fit without the stack's rows keeps."""
    fp8_delayed_scaling: bool = False
    """Whether the stack's FP8 is Transformer Engine's delayed scaling (scale from an amax history, no amax pass);
    Megatron's depends on the release (efficiency.CURRENT_SCALING_RELEASE) unless its fp8_recipe knob sets it."""
    fp8_current_scaling: bool = False
    """Whether the stack's FP8 scales from the current amax in every release (precision.Recipe.current_scaling:
    torchao's dynamic scaling), where Megatron's follows its release (efficiency.CURRENT_SCALING_RELEASE) unless its
    fp8_recipe knob sets it."""
    fp8_weight_gather: bool = True
    """Whether the stack's ZeRO/FSDP all-gathers weights already cast to FP8 (Megatron's fp8 parameter gather);
    False: it gathers BF16 weights and quantises them inside each FP8 GEMM (Flax's fp8 dot_general)."""
    release_trend: bool = False
    """Whether the fitted software trend (`software_gain_per_year`) prices the stack's releases: only where the data
    hold a series of the stack's releases (Megatron: NeMo/Megatron-Bridge containers 2024-04 to 2026-08) is the trend
    measured; llm-foundry's rows are one table of one release (its README, last changed 2024-01-06), so another
    stack's trend would be Megatron's gains borrowed, and its gap to Megatron would be read as software age."""
    layout_defaults: tuple[LayoutDefault, ...] = ()
    """The stack's setting of each layout dimension a row may leave unreported (fitting.assumed uses them)."""
    cp_comm: str = "p2p"
    """The stack's context-parallel exchange (precision.Recipe.cp_comm): Megatron-Core's `cp_comm_type` defaults to
    'p2p' (the ring); torchtitan's `context_parallel_rotate_method` to 'allgather' (recalled from the public code,
    not a stored copy)."""

    dp_overlap: str = "ZeRO's collectives overlapped with compute (the shared overlap_dp)"
    """How the stack hides its data-parallel/FSDP collectives behind compute (`explain` names it)."""
    async_tp: bool | None = None
    """The stack's async-TP knob at its shipped default (torchtitan's `enable_async_tensor_parallel`); None: no such
    knob (Megatron overlaps TP through `tp_comm_overlap`, its userbuffers)."""
    compile: bool | None = None
    """The stack's torch.compile knob at its shipped default; None: no such knob (its fused kernels are its own)."""
    per_op_sac: bool = False
    """Whether the stack's selective recompute is per-op selective activation checkpointing (precision.Recipe
    .per_op_sac: torchtitan's), not Megatron's recompute of the attention core."""
    dtensor_tp: bool = False
    """Whether the stack's TP is PyTorch's DTensor sequence parallelism (precision.Recipe.tp_layout_copies and
    tp_wgrad_regather: its layout copies, and no backward re-gather of the inputs autograd keeps)."""
    separate_projections: bool = False
    """Whether the stack's model code runs Q, K, V and the gated MLP's gate and up projections as separate linear
    layers (precision.Recipe.separate_projections: torchtitan's Llama), not fused as Megatron-Core's."""
    fsdp2: bool = False
    """Whether the stack shards with PyTorch's FSDP2 (fully_shard) as it ships: its copies beside each all-gather and
    reduce-scatter and FP32 gradient reduction (precision.Recipe.fsdp_copies, grad_reduce_bytes)."""
    fp8_recipes: tuple[str, ...] = ()
    """The FP8 scaling recipes the stack's knob takes, its default first (torchao's: precision.FP8_RECIPES;
    Megatron's: precision.TE_FP8_RECIPES); empty: no knob, its FP8 scaling is fixed."""
    fused_cross_entropy: bool = False
    """Whether the stack's loss is a fused cross entropy holding BF16 logits and a BF16 gradient
    (precision.Recipe.fused_cross_entropy)."""

    @property
    def fp8_recipe_by_release(self) -> bool:
        """Whether the stack's FP8 scaling, the knob unset, follows its release (Megatron: delayed scaling before
        efficiency.CURRENT_SCALING_RELEASE, current scaling from it) rather than a shipped default: an FP8 stack
        whose scaling neither `fp8_delayed_scaling` nor `fp8_current_scaling` fixes (`stack_recipe` leaves it to
        Efficiency.delayed_scaling)."""
        return self.fp8 and not (self.fp8_delayed_scaling or self.fp8_current_scaling)

    def layout_default(self, dimension: str) -> LayoutDefault | None:
        return next((d for d in self.layout_defaults if d.dimension == dimension), None)

    def attention_speeds(self, family: str) -> tuple[float, float] | None:
        """(forward, backward) speed of the stack's attention kernel against the family's fused attention, where it
        is slower than the family's best (FlashAttention-2 is Ampere's best kernel, half of Hopper's and under a
        third of Blackwell's: FA2_SPEEDS); None where it is as fast (`attention_native`, or a cuDNN-class kernel)."""
        if family in self.attention_native:
            return None
        speeds = FA2_SPEEDS[family] if self.fa2 and family in FA2_SPEEDS else (self.attention_speed.value,) * 2
        return speeds if min(speeds) < 1.0 else None


_FA2_ON_H100 = SourcedFigure(
    0.5,
    "FlashAttention-3 paper (Shah et al. 2024, arXiv 2407.08608, abstract and section 4.1): FlashAttention-2 reaches "
    "~35% of H100 BF16 peak, FlashAttention-3 up to 75% and 1.5-2.0x FlashAttention-2's forward speed; "
    "NVIDIA/cudnn-frontend@91b7532 benchmark/benchmark_results.csv (Hopper at a locked 1,980 MHz, NGC 24.12): "
    "PyTorch SDPA's FA2 backend runs the causal forward at 0.48-0.54 and the backward at 0.56-0.63 of cuDNN's "
    "TFLOP/s at 4k-64k tokens (../shared/data/kernels/attention.csv)",
)
FA2_SPEEDS = {"hopper": (0.501, 0.522), "blackwell": (0.275, 0.293), "blackwell-ultra": (0.220, 0.260)}
"""FlashAttention-2's (forward, backward) speed against the fused attention each family is priced at (its newest
cuDNN), per FLOP at 4k to 32k tokens: inputs/kernels.py fa2_speeds of the bundled rows, rounded (tests/test_kernels.py
holds the two equal). H200 forward 0.49-0.50, backward 0.51-0.55 (FA2 of NGC 24.12 against cuDNN 9.19); B200 and
GB200 0.26-0.30 and 0.27-0.33 (NGC 25.09, 25.11); GB300 0.22-0.23 and 0.25-0.29 (NGC 25.11). FlashAttention-2 is
Ampere's kernel (Dao 2023): it has none written for Hopper's wgmma or Blackwell's tensor-core instructions (recalled
from the public code, not a stored copy), so each newer generation's fused attention leaves it further behind. The
families without FA2 rows (CDNA) keep the H100 figure `_FA2_ON_H100`."""
_TRITON_FLASH = SourcedFigure(
    0.555,
    "llm-foundry 0.4.0 (PyPI sdist, the release of its README's throughput table, 2024-01) defaults attn_impl to "
    "'triton' (llmfoundry/models/layers/blocks.py attn_config_defaults) and admits MPT's ALiBi only with 'torch' or "
    "'triton' (models/mpt/configuration_mpt.py); 'triton' is flash_attn_triton.py, FlashAttention's Triton port "
    "copied from HazyResearch/flash-attention@eff9fe6 (its docstring: Triton forward + backward slightly slower "
    "than FlashAttention-1's CUDA). FlashAttention-2 runs 1.3-2.5x faster than that Triton FlashAttention (Dao 2023, "
    "arXiv 2307.08691, section 4.1; recalled, not a stored copy): 1/sqrt(1.3 x 2.5) = 0.555 of its speed, on "
    "Ampere and Hopper alike (neither kernel uses Hopper's wgmma or TMA)",
)
FA2_BEST = ("ampere",)
"""FlashAttention-2 is Ampere's fastest attention: it reaches 50-73% of A100 BF16 peak (Dao 2023, arXiv 2307.08691,
abstract), and FlashAttention-3's gain comes from Hopper-only features (wgmma, TMA, FP8 tensor cores; Shah et al.
2024, arXiv 2407.08608, section 3), which cuDNN's fused attention on Ampere does not have either."""
_RECALLED = "recalled from the public code, not a stored copy"
BLOCK_RECOMPUTE = "block"
"""A plausible recompute setting: Megatron's recompute_granularity=full, recompute_method=block with the fewest
recompute_num_layers per pipeline chunk that fit (fitting.assumed finds k; the layout holds it as recompute 'full'
with recompute_layers k)."""
_MEMORY_DECIDES = (
    "stack_notes.md: memory capacity changes the recompute choice (AMD's MI300X LoRA config recomputes 21 of 80 "
    "layers, the MI325X config none)"
)
_MEGATRON_LAYOUT = (
    LayoutDefault(
        "recompute",
        "none",
        ("none", "selective", BLOCK_RECOMPUTE, "full"),
        "Megatron-Core TransformerConfig.recompute_granularity defaults to None (no recomputation); Megatron-Bridge "
        "and NeMo recipes set selective or full recomputation per model and GPU where activations do not fit, full "
        "with recompute_method 'block' and recompute_num_layers k for the first k layers of each pipeline chunk "
        f"only ({_RECALLED}); {_MEMORY_DECIDES} (ACG=full ACM=block ACL=21: a block of 21)",
    ),
    LayoutDefault(
        "zero",
        1,
        (1, 3),
        "Megatron-Bridge/NeMo recipes run the distributed optimizer (use_distributed_optimizer=True, ZeRO-1 "
        f"sharding of optimizer state; {_RECALLED}), as perfmodel's runs.py maps a blank sharding column; "
        "Megatron-FSDP (ZeRO-3) is the recipes' alternative (measured_runs.csv lists 'Megatron-FSDP' rows)",
    ),
    LayoutDefault(
        "mbs",
        None,
        (1, 2, 4, 8),
        "no default: Megatron-LM's --micro-batch-size has none (the run sets it) and Megatron-Bridge sets it per "
        f"recipe ({_RECALLED}); plausible: the micro-batch sizes Narayanan et al. 2021 (arXiv 2104.04473, section "
        "5.7) study",
    ),
)
_COMPOSER_LAYOUT = (
    LayoutDefault(
        "recompute",
        "none",
        ("none", "full"),
        "Composer's FSDP config defaults activation_checkpointing to False; llm-foundry's throughput table turns it "
        f"on per run (its 'ActCkpt' column: full-block checkpointing, no selective mode; {_RECALLED})",
    ),
    LayoutDefault(
        "zero",
        3,
        (3, 2),
        "Composer's FSDP config defaults sharding_strategy to FULL_SHARD (ZeRO-3); llm-foundry's table also runs "
        f"SHARD_GRAD_OP (ZeRO-2) ({_RECALLED})",
    ),
    LayoutDefault(
        "mbs",
        None,
        (1, 2, 4, 8, 16),
        "no default: llm-foundry's yamls set device_train_microbatch_size per model (the throughput table lists 1-16)",
    ),
)
STACKS: dict[str, StackProfile] = {
    "megatron": StackProfile(
        "megatron",
        "NVIDIA NeMo / Megatron-Bridge (Megatron-Core + Transformer Engine): MLPerf and most measured rows",
        "cuDNN fused attention / FlashAttention-3",
        SourcedFigure(1.0, "reference: the kernels the fitted attention efficiencies describe"),
        attention_native=(),
        fa2=False,
        tp_comm_overlap=True,
        fp8=True,
        release_trend=True,
        layout_defaults=_MEGATRON_LAYOUT,
        fp8_recipes=TE_FP8_RECIPES,
        dp_overlap="Megatron-Core DDP's gradient buckets reduced during the backward (overlap_grad_reduce) and "
        "parameters gathered during the forward (overlap_param_gather)",
    ),
    "composer": StackProfile(
        "composer",
        "MosaicML Composer / llm-foundry: PyTorch FSDP (FULL_SHARD), no tensor parallelism",
        "FlashAttention-2 / Triton",
        _FA2_ON_H100,
        attention_native=FA2_BEST,
        fa2=True,
        tp_comm_overlap=False,
        fp8=True,
        # Composer's `precision: amp_fp8` wraps the model in te.fp8_autocast with TE's DelayedScaling recipe
        # (composer/core/precision.py; recalled from the public code, not a stored copy).
        fp8_delayed_scaling=True,
        # llm-foundry 0.4.0 (the release of its benchmark table; PyPI sdist) defaults `loss_fn` to
        # 'fused_crossentropy': flash-attn's CrossEntropyLoss (llmfoundry/models/mpt/modeling_mpt.py,
        # ComposerMPTCausalLM.__init__, L869-875), which saves the logits in their own dtype with an FP32
        # log-sum-exp per token and allocates their gradient as `torch.empty_like(logits)` (flash-attn 2.3.2, its
        # gpu-flash2 extra: flash_attn/ops/triton/cross_entropy.py L220 and L232; 1.0.9, its gpu extra, saves the
        # same in flash_attn/losses/cross_entropy.py L89; both PyPI sdists).
        fused_cross_entropy=True,
        attention_code=_TRITON_FLASH,
        layout_defaults=_COMPOSER_LAYOUT,
        dp_overlap="PyTorch FSDP's prefetched all-gathers and backward reduce-scatters (its own fitted overlap_dp)",
    ),
    "torchtitan": StackProfile(
        "torchtitan",
        "PyTorch torchtitan: FSDP2, vanilla or async TP, torch.compile, torchao FP8 (its 12 bundled rows are "
        "validation only: priced at its profile's figures and the shared fitted values)",
        "PyTorch SDPA (FlashAttention-2 backend)",
        _FA2_ON_H100,
        attention_native=FA2_BEST,
        fa2=True,
        tp_comm_overlap=True,
        fp8=True,
        layout_defaults=(
            LayoutDefault(
                "recompute",
                None,
                ("none", "selective", "full"),
                "no default sourced: torchtitan's job tomls set activation_checkpoint.mode per model (no bundled rows)",
            ),
            LayoutDefault("zero", 3, (3,), f"torchtitan shards with FSDP2 (fully_shard: ZeRO-3) ({_RECALLED})"),
            LayoutDefault("mbs", None, (1, 2, 4, 8), "no default: local_batch_size is set per job"),
        ),
        cp_comm="all_gather",
        # torchtitan's JobConfig defaults: parallelism.enable_async_tensor_parallel = False, compile.enable = False,
        # float8 recipe_name None = tensorwise (torchtitan/config/job_config.py; recalled from the public code, not a
        # stored copy). The benchmark rows turn compile on and vary the other two (torchtitan_runs.csv).
        async_tp=False,
        compile=False,
        fp8_recipes=FP8_RECIPES,
        fp8_current_scaling=True,
        per_op_sac=True,
        dtensor_tp=True,
        separate_projections=True,
        fsdp2=True,
        dp_overlap="FSDP2's all-gathers prefetched a layer ahead and its reduce-scatters during the backward (priced "
        "at the shared overlap_dp: its rows are validation only)",
    ),
    "deepspeed": StackProfile(
        "deepspeed",
        "Microsoft DeepSpeed ZeRO (no rows of its own: priced at its profile's figures, its per-step overhead and DP "
        "overlap at the shared values, an assumption no source sizes; before its 0.6.0 release ZeRO-3 runs tensor "
        "by tensor, nothing overlapped: inputs/features.py)",
        "FlashAttention-2",
        _FA2_ON_H100,
        attention_native=FA2_BEST,
        fa2=True,
        tp_comm_overlap=False,
        fp8=False,
        layout_defaults=(
            LayoutDefault(
                "recompute",
                "none",
                ("none", "full"),
                "DeepSpeed's activation_checkpointing is off unless configured (full-layer checkpointing) "
                f"({_RECALLED})",
            ),
            LayoutDefault(
                "zero", None, (1, 2, 3), "no default: the ZeRO stage is the run's config (zero_optimization.stage)"
            ),
            LayoutDefault("mbs", None, (1, 2, 4, 8), "no default: train_micro_batch_size_per_gpu is set per run"),
        ),
        dp_overlap="DeepSpeed's bucketed gradient reduction during the backward (overlap_comm) and ZeRO-3's "
        "parameter prefetch (priced at the shared overlap_dp: no rows of its own)",
    ),
    "megatron-deepspeed": StackProfile(
        "megatron-deepspeed",
        "Megatron-DeepSpeed (BigScience's BLOOM, 2022): Megatron-LM's model code and kernels of its release in "
        "DeepSpeed's pipeline engine with ZeRO-1, or without a pipeline with DeepSpeed's ZeRO-3 (Narayanan et al. "
        "2021's Table 2 rows, validation only); no fit of its own: Megatron's, its release trend included",
        "Megatron-LM's (fused softmax before FlashAttention)",
        SourcedFigure(1.0, "Megatron-LM's kernels: the reference the fitted attention efficiencies describe"),
        attention_native=(),
        fa2=False,
        tp_comm_overlap=False,
        fp8=False,
        release_trend=True,
        layout_defaults=_MEGATRON_LAYOUT,
    ),
    "maxtext": StackProfile(
        "maxtext",
        "Google's MaxText on JAX/XLA (NVIDIA's GPU container): hybrid FSDP (ICI x DCN FSDP, outer DP), XLA's "
        "latency-hiding scheduler overlapping its collectives with compute, no TP or pipeline in its GPU recipes "
        "(no fit of its own: priced with the shared fitted values)",
        "cuDNN fused flash attention through Transformer Engine's JAX bindings",
        SourcedFigure(
            1.0,
            "MaxText's GPU recipes set attention=cudnn_flash_te (TE's cuDNN fused attention, the kernel Megatron's "
            f"figures describe) in the ghcr.io/nvidia/jax:maxtext containers of 2024 ({_RECALLED})",
        ),
        attention_native=(),
        fa2=False,
        tp_comm_overlap=False,
        fp8=True,
        # MaxText's quantization=fp8 is Flax's fp8 dot_general (Fp8DotGeneralOp): delayed scaling from an amax
        # history kept with the parameters, no amax pass before each cast (recalled from the public code, 2024).
        fp8_delayed_scaling=True,
        fp8_weight_gather=False,
        layout_defaults=(
            LayoutDefault(
                "recompute",
                "full",
                ("full", "selective"),
                f"MaxText's base.yml sets remat_policy 'full' (rematerialise each decoder layer) ({_RECALLED}); its "
                "other policies (save_dot_except_mlp, ...) keep some GEMM outputs: a selective recompute",
            ),
            LayoutDefault(
                "zero",
                3,
                (3,),
                "MaxText shards parameters, gradients and optimizer state together over its fsdp mesh axes (ZeRO-3; "
                f"the data axes replicate them all) ({_RECALLED})",
            ),
            LayoutDefault("mbs", None, (1, 2, 4), "no default: per_device_batch_size is set per run"),
        ),
        # MaxText's context parallelism on GPU all-gathers K and V over the context mesh axis before the cuDNN
        # attention (recalled from the public code, not a stored copy; its bundled rows run CP 1).
        cp_comm="all_gather",
        dp_overlap="XLA's latency-hiding scheduler runs the FSDP all-gathers and reduce-scatters asynchronously "
        "behind the layers' compute (priced at the shared overlap_dp: no rows to fit one of its own)",
    ),
}
DEFAULT_STACK = "megatron"


def get_stack(name: str) -> StackProfile:
    if name not in STACKS:
        raise PerfmodelError(f"unknown stack '{name}'; valid: {', '.join(STACKS)}")
    return STACKS[name]


@dataclass(frozen=True)
class Knobs:
    """A stack's knobs as a run sets them (None: the stack has no such knob; for Megatron's fp8_recipe, the release
    decides: StackProfile.fp8_recipe_by_release)."""

    async_tp: bool | None
    compile: bool | None
    fp8_recipe: str | None


KNOB_FLAGS = {"async_tp": "--async-tp", "compile": "--compile", "fp8_recipe": "--fp8-recipe"}
"""The flag of each knob (its scenario key is the field's name), for the one-line refusals."""


def stack_knobs(
    stack: StackProfile, async_tp: bool | None = None, compile: bool | None = None, fp8_recipe: str | None = None
) -> Knobs:
    """The knobs of a run on `stack`: each given one, else the stack's shipped default (none for an FP8 recipe that
    follows the release). A knob the stack does not have, or a value it does not take, is refused, naming the stacks
    that have it or the values it takes."""
    default_fp8 = None if stack.fp8_recipe_by_release else next(iter(stack.fp8_recipes), None)
    shipped = Knobs(stack.async_tp, stack.compile, default_fp8)
    given: dict[str, Any] = {"async_tp": async_tp, "compile": compile, "fp8_recipe": fp8_recipe}
    for name, value in given.items():
        problem = knob_problem(stack, name, value) if value is not None else None
        if problem is not None:
            raise PerfmodelError(f"{KNOB_FLAGS[name]} / {name}: {problem}")
    return replace(shipped, **{name: value for name, value in given.items() if value is not None})


def knob_problem(stack: StackProfile, name: str, value: object = None) -> str | None:
    """Why `stack` cannot take the knob `name` (a Knobs field), naming the stacks that have it, or an FP8 recipe
    `value` it does not run, naming those it does; None if it can."""
    knob = "fp8_recipes" if name == "fp8_recipe" else name
    if getattr(stack, knob) in (None, ()):
        others = [s.name for s in STACKS.values() if getattr(s, knob) not in (None, ())] or ["none"]
        return f"stack '{stack.name}' has no such knob; stacks that have it: {', '.join(others)}"
    if name == "fp8_recipe" and value is not None and value not in stack.fp8_recipes:
        return f"stack '{stack.name}' has no FP8 recipe '{value}'; its recipes: {', '.join(stack.fp8_recipes)}"
    return None


@cache
def stack_recipe(recipe: Recipe, stack: StackProfile, knobs: Knobs | None = None) -> Recipe:
    """The precision recipe as the stack runs it with its knobs (`stack_knobs`; None: its shipped defaults): without
    TP overlap where the stack has none (vanilla TP: not even Megatron's backward overlap), with async TP's overlap
    where the knob is on, eager elementwise kernels without torch.compile, torchao's rowwise FP8 where chosen,
    without the amax pass where its FP8 is delayed scaling (the stack's, or Megatron's fp8_recipe 'delayed') and
    with it in every release where it is current scaling (torchao's, or Megatron's 'tensorwise'; unset, Megatron's
    release decides: Efficiency.delayed_scaling), gathering BF16 weights where it quantises inside
    the GEMM; a quantised recipe on a stack without FP8 support is
    refused. Cached: one object per recipe, stack and knobs, so contexts built from it are shared
    (planning.predict.context_for keys them by identity)."""
    knobs = knobs or stack_knobs(stack)
    if recipe.quantised and not stack.fp8:
        raise PerfmodelError(f"stack '{stack.name}' has no {recipe.id} training; use --precision bf16")
    if recipe.delayed_scaling_capable and (stack.fp8_delayed_scaling or knobs.fp8_recipe == "delayed"):
        recipe = replace(recipe, amax_passes=0)
    if recipe.delayed_scaling_capable and (stack.fp8_current_scaling or knobs.fp8_recipe == "tensorwise"):
        recipe = replace(recipe, current_scaling=True)
    if not stack.fp8_weight_gather and recipe.quantised:
        recipe = replace(recipe, param_gather_bytes=BF16_BYTES)
    if knobs.fp8_recipe == "rowwise" and recipe.quantised:
        recipe = rowwise_recipe(recipe)
    elif knobs.fp8_recipe == "tensorwise" and recipe.delayed_scaling_capable and stack.dtensor_tp:
        recipe = float8_tp_recipe(recipe)  # torchao's float8 TP styles are DTensor's (torchtitan)
    if knobs.compile is False:
        recipe = replace(recipe, eager_elementwise=True)
    if stack.per_op_sac:
        recipe = replace(recipe, per_op_sac=True)
    if stack.dtensor_tp:
        recipe = replace(recipe, tp_layout_copies=True, tp_wgrad_regather=False)
    if stack.separate_projections:
        recipe = replace(recipe, separate_projections=True)
    if stack.fsdp2:
        recipe = replace(recipe, fsdp_copies=True, grad_reduce_bytes=FP32_BYTES)
    if stack.fused_cross_entropy:
        recipe = replace(recipe, fused_cross_entropy=True)
    if knobs.async_tp is not None:
        overlap = knobs.async_tp and recipe.tp_comm_overlap
        return replace(recipe, tp_comm_overlap=overlap, tp_backward_overlap=overlap, tp_decomposed=overlap)
    return recipe if stack.tp_comm_overlap else replace(recipe, tp_comm_overlap=False)
