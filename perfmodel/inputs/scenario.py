"""What the user asks for: a scenario from a TOML file and/or command-line flags.

Flags override the file. Every problem becomes one line naming the file (or flag), the field and what is allowed.
The classes here are records (inputs/record.py); pydantic checks a user's file and flags (inputs/scenario_check.py),
while a bundled scenario run as it is comes checked from the cache (inputs/validated.py), without pydantic.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args

from perfmodel.errors import FieldError, PerfmodelError, did_you_mean, shown
from perfmodel.inputs import FP8_RECIPE_NAMES, PRECISIONS, validated
from perfmodel.inputs.documents import Documents
from perfmodel.inputs.files import MAX_PATH_CHARS, beside, parse_toml, read_text
from perfmodel.inputs.grids import DEFAULT as DEFAULT_GRID
from perfmodel.inputs.grids import GRIDS, MAX_G_PER_KWH
from perfmodel.inputs.hardware import get_accelerator, get_system, names_a_system, resolve
from perfmodel.inputs.models import ZOO, ModelSpec, get_model, model_spec
from perfmodel.inputs.record import as_dict, bounded, given, given_field, input_fields, overriding, record, replaced
from perfmodel.inputs.resources import bundled_file, bundled_names, bundled_path, data_dir, is_a_name
from perfmodel.inputs.stacks import Knobs, get_stack, stack_knobs
from perfmodel.inputs.text import MAX_TEXT_CHARS

MAX_GPUS = 1_000_000
MAX_TOKENS = 1e18
MAX_PHASES = 100
"""A campaign's stages: published ones have a handful (batch ramp, main run, long-context stages, annealing); each
is predicted (its layout searched), ~10 ms or more, and a campaign of thousands is a mistake rather than a plan."""
TOKENS_PER_STEP_TARGET = 4 * 2**20
"""Default global batch: about 4M tokens per step (Llama 3's first stage), rounded to a multiple of the GPU count."""
TOKENS_PER_STEP_CAP = 16 * 2**20
"""...but at most 16M tokens per step: the largest batch of Llama 3 405B's pre-training (Llama 3 paper, arXiv
2407.21783, section 3.4.1: 4M tokens, then 8M after 252M tokens, then 16M after 2.87T tokens; Table 4: 16M tokens
per batch on 16,384 GPUs). A batch that grew with the cluster (134M tokens on 16,384 GPUs) is beyond what anyone
has shown to converge."""
TOKENS_PER_STEP_PUBLISHED = 9216 * 8192
"""The largest batch with published convergence data the project carries: MLPerf Training v5.0 Llama 3.1 405B
allows GBS 1,152 to 9,216 sequences of 8,192 tokens, with reference convergence points (75.5M tokens; continued
pre-training from Meta's checkpoint, mlperf_benchmarks.md). Beyond it a prediction warns."""

RELEASE_MONTH = r"20\d\d-(0[1-9]|1[0-2])"
"""A software release month, YYYY-MM (a scenario's `vintage`)."""
TEXT_LIMITS = {"description": MAX_TEXT_CHARS, "calibration": MAX_PATH_CHARS}
"""Characters a scenario's string may have: a name or id MAX_NAME_CHARS, these more."""


@record
@overriding(ModelSpec)
class ModelOverride:
    """A model given in the scenario: a zoo id to start from (`base`), and/or shapes that replace its own."""

    base: str | None = None
    """A zoo id to start from (perfmodel models list); the other keys replace its shapes."""
    given: frozenset[str] | None = given_field()


@record
class Parallelism:
    tp: int | None = bounded(None, ge=1, le=MAX_GPUS)
    """Tensor-parallel size (with sequence parallelism); left out: searched."""
    pp: int | None = bounded(None, ge=1, le=MAX_GPUS)
    """Pipeline-parallel stages; left out: searched."""
    cp: int | None = bounded(None, ge=1, le=MAX_GPUS)
    """Context-parallel size; left out: searched."""
    vp: int | None = bounded(None, ge=1, le=MAX_GPUS)
    """Virtual pipeline stages per rank (interleaving); left out: searched."""
    ep: int | None = bounded(None, ge=1, le=MAX_GPUS)
    """Expert-parallel size (MoE models only); left out: searched."""
    etp: int | None = bounded(None, ge=1, le=MAX_GPUS)
    """Expert tensor-parallel size (MoE models): the experts' TP, separate from the attention's."""
    dp: int | None = bounded(None, ge=1, le=MAX_GPUS)
    """Data-parallel size; left out: the GPU count over TP x PP x CP."""
    mbs: int | None = bounded(None, ge=1, le=MAX_GPUS)
    """Micro-batch size in sequences; left out: searched."""
    gbs: int | None = bounded(None, ge=1, le=10**9)
    """Global batch size in sequences; left out: about 4M tokens per step (at most 16M)."""
    seq_len: int = bounded(8192, ge=16, le=10_000_000)
    """Sequence length in tokens."""
    recompute: Literal["none", "selective", "full"] | None = None
    """Activation recompute: none, selective (attention's core) or full; left out: searched."""
    recompute_layers: int | None = bounded(None, ge=1, le=MAX_GPUS)
    """Partial (block) recompute: only the first k layers of each pipeline chunk recompute in full, the others keep
    their activations (Megatron's recompute_method=block, recompute_num_layers=k); implies recompute 'full'. None:
    every layer that recomputes does."""
    zero: Literal[0, 1, 2, 3] | None = None
    """0 plain data parallel, 1 distributed optimizer (Megatron's default), 2 also gradients, 3 FSDP; left out:
    searched."""
    cp_comm: Literal["p2p", "all_gather", "a2a"] | None = None
    """Context parallelism's exchange (precision.Recipe.cp_comm); None: the stack's (Megatron's ring, 'p2p')."""
    shard_group: int | None = bounded(None, ge=1, le=MAX_GPUS)
    """Hybrid sharding with ZeRO-3: shard over groups of this many DP x CP ranks, replicate across the groups
    (MaxText's ICI x DCN FSDP with outer DP; precision.Recipe.shard_group). None: shard over every DP x CP rank."""
    given: frozenset[str] | None = given_field()


MAX_USD_PER_GPU_HOUR = 10_000


@record
class Cost:
    usd_per_gpu_hour: float | None = bounded(None, gt=0, le=MAX_USD_PER_GPU_HOUR, allow_inf_nan=False)
    """Rental price per GPU-hour, USD; left out: the accelerator's on-demand price."""
    usd_per_gpu_hour_range: tuple[float, ...] | None = None
    """A rental price stated as a triangular distribution, USD per GPU-hour: [low, mode, high]. The cost is quoted
    at the mode; its quantiles and P(cost within budget) draw the price (planning/confidence.py). Left out: the
    price is a quote, not drawn."""
    pue: float = bounded(1.2, ge=1.0, le=5.0, allow_inf_nan=False)
    """Power usage effectiveness: the facility's energy over the IT equipment's."""
    mode: Literal["rent", "buy"] = "rent"
    """rent: the price per GPU-hour; buy: the cost of owning the systems (planning/tco.py)."""
    usd_per_system: float | None = bounded(None, gt=0, le=1e9, allow_inf_nan=False)
    """buy: the price of one system, USD; left out: the system file's."""
    amortisation_years: float = bounded(4.0, gt=0, le=30, allow_inf_nan=False)
    """buy: the years the systems' price is spread over."""
    utilisation: float = bounded(0.8, gt=0, le=1, allow_inf_nan=False)
    """buy: the share of those years the systems train (their price is spread over those hours)."""
    usd_per_kwh: float = bounded(0.08, gt=0, le=10, allow_inf_nan=False)
    """buy: the electricity price, USD per kWh."""
    facility_usd_per_kw_month: float = bounded(0.0, ge=0, le=100_000, allow_inf_nan=False)
    """buy: the data centre's space and power provision, USD per kW of IT power per month."""
    grid_gco2_per_kwh: float = bounded(GRIDS[DEFAULT_GRID].g_co2e_per_kwh, ge=0, le=MAX_G_PER_KWH, allow_inf_nan=False)
    """The grid's carbon intensity, gCO2e per kWh (inputs/grids.py; default: the US average)."""
    given: frozenset[str] | None = given_field()

    def __post_init__(self) -> None:
        """One price (a ValueError, which pydantic reports as the table's own check)."""
        if self.mode == "buy" and self.usd_per_gpu_hour is not None:
            raise ValueError("buying (--buy, mode = 'buy') and a rental price (--usd-per-gpu-hour) exclude each other")
        stated = self.usd_per_gpu_hour_range
        if stated is None:
            return
        if not (len(stated) == 3 and all(math.isfinite(v) for v in stated)
                and 0 <= stated[0] <= stated[1] <= stated[2] <= MAX_USD_PER_GPU_HOUR and stated[1] > 0):  # fmt: skip
            raise ValueError(
                f"usd_per_gpu_hour_range {list(stated)}: allowed [low, mode, high] USD per GPU-hour with 0 <= low "
                f"<= mode <= high <= {MAX_USD_PER_GPU_HOUR:,} and mode > 0 (the price quoted; e.g. [2.0, 2.5, 4.0])"
            )
        if self.mode == "buy" or self.usd_per_gpu_hour is not None:
            raise ValueError(
                "a price distribution (usd_per_gpu_hour_range) states the price: it excludes "
                + ("buying (--buy, mode = 'buy')" if self.mode == "buy" else "a rental price (usd_per_gpu_hour)")
            )


Precision = Literal["bf16", "fp8", "mxfp8", "nvfp4", "mxfp4"]
"""A precision as a type checker reads it: PRECISIONS spelled out, which a Literal cannot take from a tuple."""
assert get_args(Precision) == PRECISIONS
FP8Recipe = Literal["tensorwise", "rowwise", "delayed"]
"""An FP8 scaling recipe as a type checker reads it: FP8_RECIPE_NAMES spelled out."""
assert get_args(FP8Recipe) == FP8_RECIPE_NAMES
TOTAL = "total"
"""The name of a campaign's own row in its outputs (a phase cannot take it)."""


@record
class Phase:
    """One stage of a campaign (a [[phase]] table): a batch or sequence ramp, the main phase, a long-context stage,
    annealing. It sets what changes; what it leaves out it inherits from the scenario's top level."""

    name: str
    """How the outputs name the phase: unique within the campaign."""
    tokens: float | None = bounded(None, gt=0)
    """Tokens the phase trains; one phase may leave them out and take what the scenario's `tokens` total leaves."""
    n_gpus: int | None = bounded(None, ge=1, le=MAX_GPUS)
    """A GPU count of the phase's own, which `plan` and `compare --gpus` leave as it is."""
    gpu_fraction: float | None = bounded(None, gt=0, le=1, allow_inf_nan=False)
    """The phase's share of the scenario's n_gpus (to whole nodes): it follows the count plan and compare set, as a
    phase that gives neither does with the whole count."""
    precision: Precision | None = None
    """The phase's precision recipe; left out: the scenario's."""
    seq_len: int | None = bounded(None, ge=16, le=10_000_000)
    """The phase's sequence length in tokens; left out: the scenario's."""
    gbs: int | None = bounded(None, ge=1, le=10**9)
    """Global batch in sequences. Left out (with tokens_per_step), the phase keeps the scenario's batch in tokens
    per step (its sequences at the phase's length), or takes the default batch when the scenario gives none."""
    tokens_per_step: float | None = bounded(None, ge=16, le=1e12, allow_inf_nan=False)
    """Global batch in tokens, as papers give it (16M): gbs is this over seq_len, to the nearest whole sequence."""
    parallelism: Parallelism | None = None
    """Layout dimensions that replace the scenario's (the sequence length and batch are the phase's own keys); a
    dimension neither sets is searched for the phase."""
    given: frozenset[str] | None = given_field()

    def __post_init__(self) -> None:
        """One batch and one GPU count (a ValueError, which pydantic reports as the phase's own check)."""
        for first, second, what in (("gbs", "tokens_per_step", "batch"), ("n_gpus", "gpu_fraction", "GPU count")):
            if getattr(self, first) is not None and getattr(self, second) is not None:
                raise ValueError(f"{first} and {second} both give the phase's {what}: give one")


FAILURE_CLASSES = ("gpu", "host", "network", "software", "maintenance", "unknown", "planned")
"""The component classes of the goodput model (planning/goodput.py holds their rates and sources)."""


@record
class Goodput:
    """The failure and checkpoint model of a run (planning/goodput.py); every key optional."""

    rates: Literal["llama3", "rsc", "none"] = "llama3"
    """llama3: the Llama 3 paper's interruption rates; rsc: Meta's RSC-1 A100 cluster's (Kokolis et al. 2025);
    none: a run that never fails (no goodput keys)."""
    failure_scale: float = bounded(1.0, gt=0, le=1000, allow_inf_nan=False)
    """Every interruption rate times this (2: twice as many failures)."""
    failures_per_million_gpu_hours: dict[str, float] | None = bounded(
        None, items={"ge": 0, "le": 1e6, "allow_inf_nan": False}
    )
    """Interruptions per million GPU-hours by component class (gpu, host, network, software, maintenance, unknown,
    planned), replacing those of `rates`."""
    storage_gb_per_s_per_node: float | None = bounded(None, gt=0, le=10_000, allow_inf_nan=False)
    """Checkpoint storage bandwidth per node, GB/s (write and read); left out: the system file's."""
    restart_s: float | None = bounded(None, ge=0, le=1e6, allow_inf_nan=False)
    """Seconds to detect an interruption and restart, before reading the checkpoint back; left out: 600."""
    checkpoint_interval_s: float | None = bounded(None, gt=0, le=1e9, allow_inf_nan=False)
    """Training seconds between checkpoints; left out: Daly's optimum."""
    given: frozenset[str] | None = given_field()


@record
class Losses:
    """The real-world losses of a run beside its failures (planning/losses.py); every key optional. A loss set to 0
    is off; `model = "none"` turns them all off."""

    model: Literal["default", "none"] = "default"
    """default: each loss priced; none: every loss off."""
    straggler_share: float | None = bounded(None, ge=0, le=1, allow_inf_nan=False)
    """Share of step time lock-step ranks wait for slow ones over a whole run, at 128 GPUs (None: the calibration's
    fitted value)."""
    startup_s: float | None = bounded(None, ge=0, le=1e6, allow_inf_nan=False)
    """Start-up of each job (initialisation, data loader, compilation), s (None: 1,047 s, MegaScale's)."""
    job_limit_h: float | None = bounded(None, gt=0, le=1e6, allow_inf_nan=False)
    """The scheduler's time limit per job, h: the run restarts (with its start-up) at each (None: no limit)."""
    ramp_tokens: float = bounded(0.0, ge=0, le=1e18, allow_inf_nan=False)
    """Tokens of a batch ramp at the start, from `ramp_start_gbs` linearly up to the run's global batch."""
    ramp_start_gbs: int | None = bounded(None, ge=1, le=10**9)
    """The global batch (sequences) a batch ramp starts from."""
    eval_every_steps: int | None = bounded(None, ge=1, le=10**9)
    """Steps between in-loop evaluations (None: none)."""
    eval_tokens: float = bounded(0.0, ge=0, le=1e15, allow_inf_nan=False)
    """Tokens each evaluation runs forward."""
    spare_gpus: int = bounded(0, ge=0, le=MAX_GPUS)
    """GPUs held in reserve beside the job's, paid for its whole wall time."""
    run_to_run_sd: float | None = bounded(None, ge=0, le=0.5, allow_inf_nan=False)
    """Run-to-run variability: the standard deviation of log(time) between runs of the same job, in the quantiles
    and probabilities (0: none; None: 0.00787, measured between MLPerf runs, planning/variability.py). Not a loss:
    `model = "none"` keeps it."""
    given: frozenset[str] | None = given_field()

    def __post_init__(self) -> None:
        """A ramp needs its tokens and its first batch, an evaluation its cadence and its tokens (a ValueError,
        which pydantic reports as the table's own check): either half alone would price nothing and say nothing."""
        for first, second in (("ramp_tokens", "ramp_start_gbs"), ("eval_every_steps", "eval_tokens")):
            has_first, has_second = bool(getattr(self, first)), bool(getattr(self, second))
            if has_first != has_second:
                given, missing = (first, second) if has_first else (second, first)
                raise ValueError(f"{given} needs {missing} too (one without the other prices nothing)")


@record
class Scenario:
    """One planning question: model, hardware, GPU count, precision, layout (what is left out is searched), the
    work to train (tokens or an MLPerf benchmark, or a campaign's phases), cost and calibration. A scenario TOML file
    has these keys."""

    name: str | None = None
    """A short name for the scenario in outputs."""
    description: str | None = None
    """What the scenario is for, in words."""
    model: str | ModelOverride = "llama3.1-70b"
    """A zoo id (perfmodel models list), a model TOML file (relative to this file), or a [model] table: a zoo id as
    `base` and the shapes that differ."""
    gpu: str | None = None
    """Accelerator id (perfmodel hardware list, or a --hardware file's); it picks its usual system unless `system` is
    given."""
    system: str | None = None
    """System id: the node and network the accelerators are in (perfmodel hardware list)."""
    n_gpus: int = bounded(8, ge=1, le=MAX_GPUS)
    """Number of GPUs the job uses."""
    precision: Precision = "bf16"
    """Training precision recipe (bf16, fp8, mxfp8, nvfp4, mxfp4): the accelerator must support it."""
    tokens: float | None = bounded(None, gt=0)
    """Tokens to train on (15e12), for time to train, cost and energy; at most 1e18."""
    moe_imbalance: float = bounded(1.0, ge=1.0, le=64.0, allow_inf_nan=False)
    """MoE: tokens the busiest expert rank receives over the mean (1.0: balanced, as the published rows force)."""
    lora_rank: int = bounded(0, ge=0, le=65536)
    """0: full training; r > 0: LoRA adapters of rank r on the `lora_modules` linear layers, base model frozen."""
    lora_modules: Literal["attention", "mlp", "all-linear"] = "attention"
    """The linear layers LoRA adapts: 'attention' (QKV and output projections, as the MLPerf llama2_70b_lora
    benchmark), 'mlp' (fc1 and fc2) or 'all-linear' (both: Megatron-Bridge's default)."""
    documents: Documents = Documents()
    """The documents packed into each sequence: attention is priced over documents (document masking)."""
    parallelism: Parallelism = Parallelism()
    """The layout ([parallelism] table); a dimension left out is searched."""
    cost: Cost = Cost()
    """What a GPU-hour costs ([cost] table): rented (the accelerator's on-demand price by default) or bought."""
    goodput: Goodput = Goodput()
    """Failures, restarts and checkpoints ([goodput] table)."""
    losses: Losses = Losses()
    """Losses beside failures ([losses] table): stragglers, start-up, job limits, batch ramps, evaluations, spares."""
    stack: Literal["megatron", "composer", "torchtitan", "deepspeed", "megatron-deepspeed", "maxtext"] = "megatron"
    """The software stack (inputs/stacks.py): its attention kernel, TP overlap, FP8 support and fitted overheads."""
    async_tp: bool | None = None
    """torchtitan's async TP: TP collectives decomposed and overlapped with the GEMMs (false: vanilla TP, every one
    exposed); None: the stack's default. A stack without the knob refuses it (inputs/stacks.py stack_knobs)."""
    compile: bool | None = None
    """torch.compile's fusion of the elementwise kernels (false: eager PyTorch); None: the stack's default."""
    fp8_recipe: FP8Recipe | None = None
    """The FP8 scaling with --precision fp8, each stack its own (inputs/stacks.py knob_problem): torchao's tensorwise
    (with float8 all-gather of FSDP weights) or rowwise on torchtitan; Megatron-Bridge's delayed (TE DelayedScaling,
    no amax pass) or tensorwise (Float8CurrentScaling, an amax pass before each cast) on Megatron; None: the stack's
    default (Megatron's follows the release: efficiency.CURRENT_SCALING_RELEASE)."""
    fp8_attention: bool = False
    """TransformerEngine's FP8 dot-product attention, as a Megatron-Bridge recipe sets it (fp8_dot_product_attention):
    flash attention in the quantised recipe's format, MXFP8 under mxfp8 (precision.bridge_recipe); BF16 otherwise."""
    fp8_attention_band: Literal["skipped", "masked"] = "skipped"
    """With fp8_attention, how the FP8 attention backward of a sliding window's layers runs: 'skipped', its
    out-of-band tiles skipped as cuDNN's BF16 backward is measured to (the default), or 'masked', the whole causal
    square computed and the band masked (precision.Recipe.fp8_band_masked): no public measurement tells them apart."""
    fused_grouped_mlp: bool = False
    """The experts as TransformerEngine's fused grouped MLP on cuDNN's MXFP8 kernels (use_transformer_engine_op_fuser
    with NVTE_CUTEDSL_FUSED_GROUPED_MLP=1; mxfp8 only): 256-wide tiles, the experts' biases in its epilogues."""
    dglu_dbias_regression: bool = False
    """With fused_grouped_mlp, the container's cudnn-frontend is 1.24 or 1.25, whose dGeGLU + dbias kernel (the experts'
    fc2 data gradient when their fc1 has biases: GPT-OSS) runs 8.8x slower than the fixed one (issue #256, PR #322;
    NVIDIA's footnote names it for NeMo 26.06.01: precision.Recipe.dglu_dbias_regressed); false: as fixed."""
    fp8_output_proj: bool = False
    """The LM head in the quantised recipe's format (Megatron-Bridge's fp8_output_proj); BF16 otherwise."""
    expert_loop: bool = False
    """The experts as Megatron-Core's TEGroupedMLP with its per-expert cost (Efficiency.moe_legacy_group_s) in every
    release, where the run leaves TransformerEngine's op fuser off in a release whose grouped kernel does without it
    (precision.Recipe.expert_loop); false: the release's own expert path."""
    full_iteration_graph: bool = False
    """The whole training iteration captured in one CUDA graph and replayed each step, as a Megatron-Bridge recipe
    sets it (cuda_graph_impl 'full_iteration'): no per-step host overhead (precision.Recipe.graph_captured)."""
    grad_reduce_in_fp32: bool = False
    """Megatron-Core's DistributedDataParallelConfig.grad_reduce_in_fp32: the gradients accumulate and reduce over
    the data-parallel ranks in an FP32 buffer (4 bytes per gradient on the wire and in memory,
    precision.Recipe.grad_buffer_bytes), as Llama 3 trained (arXiv:2407.21783 section 3.3.2); false: BF16."""
    activation_offload_layers: int = bounded(0, ge=0, le=100_000)
    """Megatron-Core's activation offload, as a Megatron-Bridge recipe sets it (cpu_offloading_num_layers): the saved
    activations of the model's first n layers go to host memory after their forward and come back before their
    backward, over the system's host link (precision.Recipe.offload_layers). Fewer than the model's layers, with
    PP 1 and no recompute, as Megatron-Core 0.16.0 requires (transformer/transformer_config.py L1137-1152); the
    layout search never offloads unless this is set."""
    vintage: str | None = bounded(None, pattern=f"^{RELEASE_MONTH}$")
    """Software release month (YYYY-MM) to predict for: older releases are slower by the fitted software trend.
    Default: the calibration's reference vintage, the newest release in its data."""
    calibration: str | None = None
    """A calibration JSON (perfmodel calibrate), 'none' for the physical defaults; the bundled fit when left out."""
    benchmark: str | None = None
    """An MLPerf benchmark id (`mlperf-llama31-405b`, optionally `@v5.0`): it sets the model, sequence length and
    the work to train (samples to converge at the chosen GBS, plus evaluations) instead of `tokens`."""
    phase: tuple[Phase, ...] = bounded((), max_length=MAX_PHASES)
    """A campaign's stages ([[phase]] tables), in the order they run; none: one steady run. `tokens`, when given,
    is their total."""
    given: frozenset[str] | None = given_field()

    def __post_init__(self) -> None:
        """A masked FP8 band without FP8 attention, or a regressed dGeGLU + dbias kernel without the fused grouped MLP
        that runs it, would price nothing and say nothing; Megatron-Core's FP32 gradient buffer on another stack
        would price a setting it does not have; and Megatron-Core runs no activation offload inside a CUDA graph
        (each a ValueError, reported as the scenario's own check)."""
        if self.fp8_attention_band == "masked" and not self.fp8_attention:
            raise ValueError("fp8_attention_band 'masked' needs fp8_attention = true (it prices FP8 attention only)")
        if self.dglu_dbias_regression and not self.fused_grouped_mlp:
            raise ValueError("dglu_dbias_regression needs fused_grouped_mlp = true (it prices that kernel only)")
        if self.grad_reduce_in_fp32 and self.stack != "megatron":
            raise ValueError(
                f"grad_reduce_in_fp32 is Megatron-Core's gradient buffer setting; the {self.stack} stack reduces its "
                "gradients as its own code does (inputs/stacks.py)"
            )
        if self.activation_offload_layers and self.full_iteration_graph:
            raise ValueError(
                "activation_offload_layers needs full_iteration_graph = false (Megatron-Core 0.16.0 "
                "transformer/transformer_config.py L1722: CUDA graphs not supported with CPU offloading)"
            )

    def model_spec(self) -> ModelSpec:
        if isinstance(self.model, str):
            return get_model(self.model)
        return table_spec(as_dict(self.model, exclude_none=True))

    @property
    def cp_exchange(self) -> str:
        """Context parallelism's exchange as priced: the scenario's `cp_comm`, else its stack's."""
        return self.parallelism.cp_comm or get_stack(self.stack).cp_comm

    @property
    def knobs(self) -> Knobs:
        """The stack's knobs as this scenario runs them (inputs/stacks.py stack_knobs): an FP8 recipe needs FP8, and
        without it there is none."""
        if self.fp8_recipe is not None and self.precision != "fp8":
            raise PerfmodelError(
                f"--fp8-recipe / fp8_recipe: '{self.fp8_recipe}' scales FP8 GEMMs; it needs --precision fp8, not "
                f"{self.precision}"
            )
        knobs = stack_knobs(get_stack(self.stack), self.async_tp, self.compile, self.fp8_recipe)
        return knobs if self.precision == "fp8" else replace(knobs, fp8_recipe=None)

    def default_gbs(self, capped: bool = True) -> int:
        """`token_default_gbs`, kept within an MLPerf benchmark's scorable batches (`default_batch`)."""
        return self.default_batch(capped)[0]

    def default_batch(self, capped: bool = True) -> tuple[int, str]:
        """The default global batch and why it is that: `token_default_gbs`, raised to an MLPerf benchmark's minimum
        (a multiple of the GPU count) or lowered to its largest batch with a reference convergence point."""
        chosen = self.token_default_gbs(capped)
        why = "~4M tokens per step, at most 16M"
        if self.benchmark:
            from perfmodel.inputs.mlperf import get_benchmark

            low, high = get_benchmark(self.benchmark).gbs_bounds()
            if chosen < low:
                chosen = self.n_gpus * math.ceil(low / self.n_gpus)
                why = f"{self.benchmark}'s minimum batch, {low:,}, as a multiple of the GPU count"
            if chosen > high:
                chosen = high
                why = f"{self.benchmark}'s largest batch with a reference convergence point, {high:,}"
        return chosen, why

    def token_default_gbs(self, capped: bool = True) -> int:
        """About 4M tokens per step as a multiple of the GPU count, unless that passes 16M tokens: then the largest
        power of two of sequences within 16M tokens (2,048 of 8,192), which the search gives layouts that divide.
        `capped=False`: the multiple of the GPU count regardless, for a cluster too large for any layout to use
        the capped batch (the prediction then warns beyond published convergence data)."""
        seq = self.parallelism.seq_len
        gbs = self.n_gpus * math.ceil(TOKENS_PER_STEP_TARGET / (seq * self.n_gpus))
        cap = max(1, TOKENS_PER_STEP_CAP // seq)
        return gbs if gbs <= cap or not capped else 2 ** (cap.bit_length() - 1)


LAYOUT_KEYS = ("tp", "pp", "cp", "vp", "ep", "etp", "dp", "mbs", "gbs", "recompute", "recompute_layers", "zero")
WORKLOAD_KEYS = ("model", "gpu", "system", "n_gpus", "benchmark")
DESCRIBED_KEYS = (*WORKLOAD_KEYS, "precision", "tokens")
"""What the default scenario's name and description state ("Llama 3.1 70B, 15T tokens, 1,024 x H100 SXM (DGX H100),
FP8"): overriding one drops them, so that no result reads as another question's."""


def read_toml(source: Path, kind: str) -> dict[str, Any]:
    """A TOML file's tables, or one line saying why the `kind` file (scenario, sweep) cannot be read: it must be a
    regular file within its size cap and nesting depth (inputs/files.py). A bare name that is no file lists the
    bundled ones of its kind (they run by name: see bundled_file), the one meant first where one is near; a missing
    path whose name is near a bundled one (the README's `scenarios/mlperf-405b-h100-512.toml`, run from another
    folder than the checkout's) names it too."""
    names = bundled_names(f"{kind}s") if not os.path.lexists(source) else []
    if names and is_a_name(source):
        hint = did_you_mean(source.name, names)
        raise PerfmodelError(f"{source}: no such {kind} file{hint} (bundled {kind}s: {', '.join(names)})")
    if source.stem in names and len(str(source)) <= MAX_PATH_CHARS:
        raise PerfmodelError(
            f"{shown(source, 200)}: no such {kind} file; bundled {kind}s run by name from any folder: '{source.stem}'"
        )
    if names and source.parent.name == f"{kind}s" and (hint := did_you_mean(source.stem, names)):
        raise PerfmodelError(f"{shown(source, 200)}: no such {kind} file{hint}")
    return parse_toml(source, read_text(source, kind))


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as flat columns: {'breakdown': {'compute_s': 1}} -> {'breakdown.compute_s': 1}."""
    flat: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, dict):
            flat |= flatten(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


OPTION_FIELDS: dict[str, str] = {
    "model": "model",
    "gpu": "gpu",
    "system": "system",
    "n_gpus": "n_gpus",
    "precision": "precision",
    **{name: f"parallelism.{name}" for name in ("tp", "pp", "cp", "vp", "ep", "etp", "dp", "mbs", "gbs", "seq_len")},
    "recompute": "parallelism.recompute",
    "recompute_layers": "parallelism.recompute_layers",
    "zero": "parallelism.zero",
    "cp_comm": "parallelism.cp_comm",
    "shard_group": "parallelism.shard_group",
    "tokens": "tokens",
    "doc_len": "documents.length",
    "lora_rank": "lora_rank",
    "lora_modules": "lora_modules",
    "benchmark": "benchmark",
    "calibration": "calibration",
    "stack": "stack",
    "async_tp": "async_tp",
    "compile": "compile",
    "fp8_recipe": "fp8_recipe",
    "vintage": "vintage",
    "usd_per_gpu_hour": "cost.usd_per_gpu_hour",
    "price_range": "cost.usd_per_gpu_hour_range",
    "pue": "cost.pue",
    "grid_gco2_per_kwh": "cost.grid_gco2_per_kwh",
    "goodput": "goodput.rates",
    "failure_scale": "goodput.failure_scale",
    "checkpoint_gbps": "goodput.storage_gb_per_s_per_node",
    "restart_s": "goodput.restart_s",
    "checkpoint_interval_s": "goodput.checkpoint_interval_s",
    "losses": "losses.model",
    "straggler_share": "losses.straggler_share",
    "startup_s": "losses.startup_s",
    "job_limit_h": "losses.job_limit_h",
    "ramp_tokens": "losses.ramp_tokens",
    "ramp_start_gbs": "losses.ramp_start_gbs",
    "eval_every_steps": "losses.eval_every_steps",
    "eval_tokens": "losses.eval_tokens",
    "spare_gpus": "losses.spare_gpus",
    "run_to_run_sd": "losses.run_to_run_sd",
    "buy": "cost.mode",
    "usd_per_system": "cost.usd_per_system",
    "amortisation_years": "cost.amortisation_years",
    "utilisation": "cost.utilisation",
    "electricity_usd_per_kwh": "cost.usd_per_kwh",
    "facility_usd_per_kw_month": "cost.facility_usd_per_kw_month",
}
"""The scenario fields that a command's flags and the Python API's keywords set, by keyword (the flag is --gpus
for n_gpus, --seq-len for seq_len): one table, so the CLI and the API cannot drift apart."""
RUN_SETTINGS: dict[str, tuple[str, str]] = {
    "fp8_attention": ("true/false", "TransformerEngine's FP8 dot-product attention (fp8_dot_product_attention)"),
    "fp8_attention_band": ("", "FP8 attention's backward of a sliding window: its band skipped or masked"),
    "fused_grouped_mlp": ("true/false", "the experts as TransformerEngine's fused grouped MLP on cuDNN (MXFP8)"),
    "dglu_dbias_regression": ("true/false", "the fused grouped MLP's slow dGeGLU + dbias (cudnn-frontend 1.24-1.25)"),
    "fp8_output_proj": ("true/false", "the LM head in the quantised recipe's format"),
    "expert_loop": ("true/false", "the experts as Megatron-Core's TEGroupedMLP with its per-expert cost"),
    "full_iteration_graph": ("true/false", "the whole iteration captured in one CUDA graph"),
    "grad_reduce_in_fp32": ("true/false", "the gradients accumulated and reduced in an FP32 buffer"),
    "activation_offload_layers": ("layers", "the leading layers whose saved activations wait in host memory"),
}
"""The scenario keys of how the stack runs (a Megatron-Bridge recipe's settings) that a file gives and no flag does,
with the unit and meaning of the record's column of each (outputs/record.py): each changes the price, so a
prediction's record carries those set (`run_settings`), and `launch --from` prices them (its config sets the offload
and the gradient dtype and names the rest: outputs/launch.Run.unset)."""


RUN_DEFAULTS = {f.name: f.default for f in input_fields(Scenario) if f.name in RUN_SETTINGS}
"""RUN_SETTINGS' defaults, found once: `run_settings` runs for every prediction's record."""


def run_settings(scenario: Scenario) -> dict[str, Any]:
    """The RUN_SETTINGS the scenario sets to other than their defaults (RUN_DEFAULTS), in that order."""
    return {name: getattr(scenario, name) for name in RUN_SETTINGS if getattr(scenario, name) != RUN_DEFAULTS[name]}


OPTION_FLAGS = {"n_gpus": "gpus"}
"""Keywords whose command-line flag is not the keyword's own name (--gpus sets n_gpus)."""


def option_flag(keyword: str) -> str:
    """The command-line flag that sets `keyword` (OPTION_FIELDS): --gpus for n_gpus, --seq-len for seq_len."""
    return "--" + OPTION_FLAGS.get(keyword, keyword).replace("_", "-")


def load_scenario(
    path: str | Path | None = None, overrides: dict[str, Any] | None = None, origins: dict[str, str] | None = None
) -> Scenario:
    """A scenario from a TOML file, with flag overrides applied.

    `overrides` maps dotted keys ("parallelism.tp", "n_gpus") to values; None values are ignored. `origins` names
    where each override came from ("--tp"), so that an error about it names the flag rather than the file. Without a
    file the default scenario is the base; when the overrides change its model, hardware or GPU count, its layout
    and global batch (tuned for 70B on 1,024 H100s) are dropped, so that they are chosen for the new question; one
    naming the default's own (`--gpu h100-sxm`) still opens the layout to the search but keeps the batch. A
    GPU or system override replaces the file's hardware as a whole (--system gb200-nvl72 on a file naming an H100).
    """
    source = scenario_file(path)
    if source.absolute().parent != data_dir("scenarios") or not source.is_file():  # read_toml says what is wrong
        loaded = scenario_from(read_toml(source, "scenario"), str(source), overrides, origins, default=path is None)
        return _marked(loaded, path, overrides)
    if all(value is None for value in (overrides or {}).values()):
        return _marked(_bundled(source), path, overrides)
    tables = _copied(_bundled_tables(source, *_version(source)))
    return _marked(scenario_from(tables, str(source), overrides, origins, default=path is None), path, overrides)


def _marked(loaded: Scenario, path: str | Path | None, overrides: dict[str, Any] | None) -> Scenario:
    """`loaded`, or a copy marked where the built-in default scenario gave it its tokens (`from_default`): the
    cached bundled scenario stays unmarked."""
    if path is not None or loaded.tokens is None or (overrides or {}).get("tokens") is not None:
        return loaded
    marked = replaced(loaded)
    object.__setattr__(marked, FROM_DEFAULT, frozenset({"tokens"}))
    return marked


def _version(source: Path) -> tuple[int, int]:
    """What tells an edited file from the one read before: its modification time and size."""
    st = source.stat()
    return st.st_mtime_ns, st.st_size


@cache
def _bundled_tables(source: Path, _mtime_ns: int, _size: int) -> dict[str, Any]:
    """A bundled scenario file's tables, read and parsed once per process and version of the file (the Python API
    asks the default scenario once per call): `_copied` before use, as scenario_from edits them."""
    return read_toml(source, "scenario")


def _copied(tables: Any) -> Any:
    """TOML tables copied through their nested tables and arrays (their values are immutable)."""
    if isinstance(tables, dict):
        return {key: _copied(value) for key, value in tables.items()}
    if isinstance(tables, list):
        return [_copied(value) for value in tables]
    return tables


FROM_DEFAULT = "_from_default"
"""The attribute of a scenario naming the fields the built-in default scenario supplied (not an input field)."""


def from_default(scenario: Scenario) -> frozenset[str]:
    """The fields the built-in default scenario gave a question that did not: its 15T tokens (Llama 3 70B's budget)
    answer a 405B question too, and a report marks them "(default)". Copies made with `replaced` keep the mark."""
    marked: frozenset[str] = getattr(scenario, FROM_DEFAULT, frozenset())
    return marked


def scenario_file(path: str | Path | None) -> Path:
    """The file a scenario argument names: a path, a bundled scenario's name, or (None) the default scenario."""
    return bundled_file(path, "scenarios") if path is not None else bundled_path("scenarios", "default")


def _bundled(source: Path) -> Scenario:
    """A bundled scenario as it is: its checked tables from the cache (inputs/validated.py), checked by pydantic
    when they are not there yet; then, as for any scenario, its model and hardware are looked up."""
    text = read_text(source, "scenario")

    def check() -> Scenario:
        return scenario_from(parse_toml(source, text), str(source), None, None, default=False)

    scenario = validated.cached("scenario", text, Scenario, check)
    _look_up(scenario, _locator(str(source), {}, None))
    return scenario


def with_overrides(scenario: Scenario, overrides: dict[str, Any], origins: dict[str, str] | None = None) -> Scenario:
    """A Scenario object with overrides applied and validated again, as a file's would be (the Python API's path).
    One built in Python (`Scenario(n_gpus=...)`, or copied with dataclasses.replace: its `given` is unknown) was
    never checked: it is checked here."""
    if scenario.given is not None and all(value is None for value in overrides.values()):
        return scenario
    return scenario_from(as_dict(scenario, exclude_unset=True), "scenario", overrides, origins, default=False)


def _same_hardware(raw: dict[str, Any], overrides: dict[str, Any]) -> bool:
    """Whether the overrides' GPU or system is the raw tables' own (the default's h100-sxm named as `--gpu h100-sxm`
    or its system, `dgx-h100`): such an override changes no hardware. An id that resolves to nothing is a change,
    refused later naming its flag."""
    pair = ("gpu", "system")
    given = {key: overrides.get(key) for key in pair}
    if not all(value is None or isinstance(value, str) for value in given.values()):
        return False  # `gpu=False` from the API: refused by the field's check
    try:
        ours, theirs = resolve(raw.get("gpu"), raw.get("system")), resolve(given["gpu"], given["system"])
    except PerfmodelError:
        return False
    return (ours.accelerator.id, ours.system.id) == (theirs.accelerator.id, theirs.system.id)


def _system_as_gpu(
    raw: dict[str, Any], overrides: dict[str, Any], origins: dict[str, str] | None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, str] | None]:
    """The tables and overrides with a `gpu` that names a system (names_a_system), and no system beside it, given
    as that `system`: compare and plan took `--gpu gb200-nvl72` while predict refused it ("is a system, not a GPU").
    Here, where every question's flags or keywords meet its file's fields (a file's, a Scenario object's or the
    default's), so predict, search, launch, explain, export and every API function read it alike; a flag keeps its
    name for errors. An unknown id, or a system given too, is left to the checks and their messages."""

    def as_system(table: dict[str, Any]) -> dict[str, Any]:
        return {("system" if key == "gpu" else key): value for key, value in table.items()}

    if "gpu" in overrides or "system" in overrides:  # an override replaces the file's hardware as a whole
        if "system" not in overrides and names_a_system(overrides.get("gpu")):
            return raw, as_system(overrides), origins and as_system(origins)
        return raw, overrides, origins
    if raw.get("system") is None and names_a_system(raw.get("gpu")):
        raw = as_system(raw)
    return raw, overrides, origins


def scenario_from(
    raw: dict[str, Any], source: str, overrides: dict[str, Any] | None, origins: dict[str, str] | None, default: bool
) -> Scenario:
    """The scenario of `raw` tables (read from `source`) with overrides applied; `default`: `raw` is the built-in
    default scenario, whose layout is dropped when the overrides change the workload (see load_scenario)."""
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    raw, overrides, origins = _system_as_gpu(raw, overrides, origins)
    changed = {key for key, value in overrides.items() if raw.get(key) != value}
    if default and changed & {"gpu", "system"} and _same_hardware(raw, overrides):  # `--gpu h100-sxm`, dgx-h100
        changed -= {"gpu", "system"}
    if default and changed & set(DESCRIBED_KEYS):  # the default's name and description are its own
        raw = {k: v for k, v in raw.items() if k not in ("name", "description")}
    if default and set(overrides) & set(WORKLOAD_KEYS):  # naming its own (`--gpu h100-sxm`) keeps only the batch
        kept = () if changed & set(WORKLOAD_KEYS) else ("gbs",)
        layout = raw.get("parallelism", {})
        raw["parallelism"] = {k: v for k, v in layout.items() if k not in LAYOUT_KEYS or k in kept}
        if "benchmark" in overrides:  # the benchmark defines the model and the work
            raw = {k: v for k, v in raw.items() if k not in ("model", "tokens")}
            raw["parallelism"].pop("seq_len", None)
    if "gpu" in overrides or "system" in overrides:
        raw = {k: v for k, v in raw.items() if k not in ("gpu", "system")}
    named = overrides.get("model", raw.get("model"))
    if isinstance(named, str) and named.endswith(".toml"):  # a model file: relative to the scenario file's folder
        flag = overrides.pop("model", None)  # a flag's is the working folder's, named as given
        raw["model"] = model_file(Path(named) if flag else Path(source).parent / named)
    if "calibration" in raw:  # the file's own; a flag's stays relative to the working folder
        raw["calibration"] = calibration_beside(source, raw["calibration"])
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        table = raw
        for parent in parents:
            table = table.setdefault(parent, {})
            if not isinstance(table, dict):
                raise PerfmodelError(f"{source}: field '{parent}' must be a table")
        table[leaf] = value
    located = _locator(source, overrides, origins)
    from pydantic import ValidationError  # checking a scenario's tables imports pydantic anyway

    from perfmodel.inputs.scenario_check import explain_error, with_other_kind

    try:
        scenario = checked_scenario(raw)
        if isinstance(scenario.model, ModelOverride) and (
            source != "scenario" or isinstance(overrides.get("model"), dict)
        ):
            check_zoo_id(as_dict(scenario.model, exclude_none=True))  # the user's own table: the API's keyword too
        check_phases(scenario)
        check_documents(scenario)
        check_window(scenario)
    except ValidationError as exc:
        field, message = explain_error(exc)
        if field is None:  # the benchmark's check of the whole scenario: the flag of a field it names, else the file's
            given = next((key for key in overrides if _named_in(key, message)), "benchmark")
            raise located(given, message, named=False) from None
        message = with_other_kind(field, message, raw, "scenario")
        raise located(*in_phase(field, message, raw.get("phase"))) from None
    except FieldError as exc:
        raise located(*in_phase(exc.field, exc.detail, raw.get("phase"))) from None
    _look_up(scenario, located)
    try:
        check_lora(scenario)
    except FieldError as exc:
        raise located(exc.field, exc.detail) from None
    try:
        check_offload(scenario)
    except PerfmodelError as exc:
        raise located("activation_offload_layers", str(exc), named=False) from None
    return scenario


def calibration_beside(source: str | Path, calibration: Any) -> Any:
    """A calibration that the file `source` names, relative to that file (files.beside); 'none' stays as it is, and
    what is no path is left for the checks to refuse."""
    if isinstance(calibration, str) and calibration.lower() not in ("", "none"):
        return beside(source, calibration)
    return calibration


def checked_scenario(raw: dict[str, Any]) -> Scenario:
    """The scenario of `raw` tables as pydantic checks them (a ValidationError when they are wrong)."""
    from perfmodel.inputs.checking import check
    from perfmodel.inputs.scenario_check import SCENARIO

    return check(SCENARIO, raw)


def table_spec(shapes: dict[str, Any]) -> ModelSpec:
    """The model of a [model] table's shapes: over its `base` zoo entry, else from scratch; its source as
    table_source says (a source alone changes no shape: the id and name stay the base's)."""
    source = table_source(shapes)
    shapes = {key: value for key, value in shapes.items() if key != "source"}
    base = shapes.pop("base", None)
    try:
        start = as_dict(get_model(base)) if base else {"id": "custom", "name": "custom model"}
    except PerfmodelError as exc:  # an unknown base (get_model's only error): the field that named it
        raise FieldError("model.base", str(exc)) from None
    if base and "id" not in shapes:
        start["id"] = f"{base}-custom" if shapes else base
    if base and "name" not in shapes and set(shapes) - {"id"}:  # not the zoo's model: its heading says which it is
        start["name"] = f"{start['name']} ({shapes.get('id', start['id'])})"
    return model_spec(start | shapes | {"source": source})


def check_zoo_id(table: dict[str, Any]) -> None:
    """A user's [model] table (a scenario's, a model file's) whose `id` names a zoo model is refused unless its
    shapes are that model's: every output's `model` column would name it. Shapes never override a zoo id (no such
    semantics: other shapes go over `base` under an id of their own). Not in table_spec: the bundled runs price
    llm-foundry's configs under the zoo's id (fitting/runs.py _gpt_table), their sequence length their own. Ids
    compare in lower case: `id = "Llama3.1-8B"` names the zoo's model as much as its own spelling does."""
    zoo, base = table.get("id"), table.get("base")
    zoo = zoo.lower() if isinstance(zoo, str) else zoo
    if zoo not in ZOO:
        return
    if not base:  # `id = "llama3.1-8b"`, `layers = 16`: the zoo's id read as a base
        raise FieldError(
            "model.id",
            f"'{zoo}' is the zoo's {ZOO[zoo].name}; to change its shapes, start from it with base = '{zoo}' and give "
            f"an id of your own (e.g. '{zoo}-custom'), or name it alone as model = '{zoo}'",
        )
    if _shapes(table_spec(table)) != _shapes(ZOO[zoo]):
        raise FieldError(
            "model.id",
            f"'{zoo}' is the zoo's {ZOO[zoo].name}, whose shapes these are not, and every output's `model` column "
            f"would name it; give the model an id of its own (e.g. '{base}-custom')",
        )


def _shapes(spec: ModelSpec) -> dict[str, Any]:
    """What prices a model: its fields but its names and citation."""
    return {k: v for k, v in as_dict(spec).items() if k not in ("id", "name", "source")}


def table_source(shapes: dict[str, Any], origin: str = "given") -> str:
    """Where a [model] table's shapes come from: its own `source`; else, over a zoo `base`, the base's citation when
    it changes no shape, and `origin` (a model file's path, 'given') "based on" it when it does, so that the changed
    shapes never claim the base's source; without a base, `origin`."""
    base = ZOO.get(shapes.get("base", ""))
    if "source" in shapes or base is None:
        return str(shapes.get("source", origin))
    own = {key: value for key, value in shapes.items() if key not in ("base", "id", "name")}
    if all(getattr(base, key, None) == value for key, value in own.items()):
        return base.source
    return f"{origin}, based on {base.source}"


def sourced(shapes: dict[str, Any], origin: str) -> dict[str, Any]:
    """A [model] table read from `origin` (a model file, a runs-CSV cell) with its source as table_source says,
    kept in the table: the scenario prices the table again later (Scenario.model_spec) without the origin."""
    return {"source": table_source(shapes, origin)} | shapes


def model_file(path: Path) -> dict[str, Any]:
    """A model TOML file (the keys of a scenario's [model] table) as that table, checked here, each field and the
    shapes together (experts and top_k, expert groups, ...), so that an error names the model file."""
    from perfmodel.inputs.scenario_check import check_model_file

    table = check_model_file(path, read_toml(path, "model"))
    table = sourced(table, str(path))
    try:
        check_zoo_id(table)
        table_spec(table)
    except FieldError as exc:
        raise PerfmodelError(f"{path}: field '{exc.field.removeprefix('model.')}': {exc.detail}") from None
    except PerfmodelError as exc:
        raise PerfmodelError(f"{path}: {exc}") from None
    return table


def _locator(source: str, overrides: dict[str, Any], origins: dict[str, str] | None) -> Callable[..., PerfmodelError]:
    """How an error says where the bad value came from: the flag that set the field, else the file (and the field,
    unless the message names it)."""

    def located(field: str | None, message: str, named: bool = True) -> PerfmodelError:
        given = next((k for k in overrides if field and (field == k or field.startswith(f"{k}."))), None)
        if given is not None:
            return PerfmodelError(f"{(origins or {}).get(given, f'override {given!r}')}: {message}")
        inside = [k for k in overrides if field and k.startswith(f"{field}.") and _named_in(k, message)]
        if inside:  # a rule across a table's fields (buy and a rental price): the flags that set the ones it names
            return PerfmodelError(f"{', '.join((origins or {}).get(k, f'override {k!r}') for k in inside)}: {message}")
        return PerfmodelError(f"{source}: field '{field}': {message}" if field and named else f"{source}: {message}")

    return located


def _named_in(dotted: str, message: str) -> bool:
    """Whether a message names a field, as a key or as its flag (mode, usd_per_gpu_hour or usd-per-gpu-hour)."""
    leaf = dotted.rpartition(".")[2]
    return any(
        re.search(rf"(?<!\w)(?:--)?{re.escape(name)}(?![\w-])", message) for name in {leaf, leaf.replace("_", "-")}
    )


PHASE_FIELD = re.compile(r"phase\[(\d+)\](?:\.(.+))?")
TOKENS_TOLERANCE = 1e-6
"""Relative difference between a campaign's `tokens` and its phases' sum that still counts as adding up."""


def in_phase(field: str | None, message: str, phases: Any) -> tuple[str | None, str]:
    """An error about `phase[2].tokens` as one that names the phase: (None, "phase 'main': field 'tokens': ..."),
    for `located` to put the file in front; any other field as it is."""
    match = PHASE_FIELD.fullmatch(field or "")
    if match is None:
        return field, message
    index, inner = int(match.group(1)), match.group(2)
    table = phases[index] if isinstance(phases, list | tuple) and index < len(phases) else None
    name = table.get("name") if isinstance(table, dict) else getattr(table, "name", None)
    label = f"phase '{shown(name)}'" if isinstance(name, str) and name.strip() else f"phase[{index}]"
    return None, f"{label}: field '{inner}': {message}" if inner else f"{label}: {message}"


def phase_tokens(scenario: Scenario) -> tuple[float, ...]:
    """The tokens of each phase of a campaign: as given, and for the one phase that leaves them out, what the
    scenario's `tokens` total leaves. A FieldError when they cannot be worked out or do not add up to the total."""
    phases, total = scenario.phase, scenario.tokens
    given_sum = math.fsum(p.tokens for p in phases if p.tokens is not None)
    missing = [i for i, p in enumerate(phases) if p.tokens is None]
    if len(missing) > 1:
        raise FieldError(
            f"phase[{missing[1]}].tokens",
            f"give the phase's tokens: phase '{shown(phases[missing[0]].name)}' already leaves its tokens out, and "
            "only one phase may (it takes what the scenario's tokens total leaves)",
        )
    if missing and total is None:
        raise FieldError(
            f"phase[{missing[0]}].tokens",
            "give the phase's tokens, or the campaign's total as the scenario's `tokens` (this phase takes the rest)",
        )
    if missing:
        rest = total - given_sum  # type: ignore[operator]
        if rest <= TOKENS_TOLERANCE * total:  # type: ignore[operator]
            raise FieldError(
                "tokens",
                f"the total of {total:.4g} tokens leaves none for phase '{shown(phases[missing[0]].name)}' (the "
                f"other phases train {given_sum:.4g})",
            )
        return tuple(rest if p.tokens is None else p.tokens for p in phases)
    if total is not None and abs(given_sum - total) > TOKENS_TOLERANCE * total:
        raise FieldError(
            "tokens",
            f"the phases' tokens add up to {given_sum:.4g}, not the total of {total:.4g}: correct one of them, or "
            "leave one phase's tokens out to take the rest",
        )
    return tuple(p.tokens for p in phases if p.tokens is not None)


def check_phases(scenario: Scenario) -> None:
    """A campaign's phases agree with each other and with the scenario: names unique (and not the total row's),
    tokens that add up (phase_tokens), at least one GPU in every phase's share of the scenario's count, and an
    fp8_recipe only where a phase runs FP8 (the phases in other precisions drop it: campaign.phase_scenario)."""
    seen: dict[str, int] = {}
    for index, phase in enumerate(scenario.phase):
        if phase.name == TOTAL:
            raise FieldError(f"phase[{index}].name", f"'{TOTAL}' names the campaign's own row: name it otherwise")
        if phase.name in seen:
            raise FieldError(f"phase[{index}].name", f"phase[{seen[phase.name]}] has that name too: give each its own")
        seen[phase.name] = index
        if phase.gpu_fraction is not None and phase.gpu_fraction * scenario.n_gpus < 1:
            raise FieldError(
                f"phase[{index}].gpu_fraction",
                f"{phase.gpu_fraction:g} of the campaign's {scenario.n_gpus:,} GPUs (n_gpus) is no GPU at all",
            )
    if not scenario.phase:
        return
    phase_tokens(scenario)
    if scenario.fp8_recipe is not None and all((p.precision or scenario.precision) != "fp8" for p in scenario.phase):
        raise FieldError("fp8_recipe", f"'{scenario.fp8_recipe}' scales FP8 GEMMs; no phase runs --precision fp8")


def check_documents(scenario: Scenario) -> None:
    """Documents of one length fit the packed sequence of every phase (a histogram's longer ones are split)."""
    length = scenario.documents.length
    for seq_len in {scenario.parallelism.seq_len, *(p.seq_len for p in scenario.phase if p.seq_len)}:
        if length is not None and length > seq_len:
            raise FieldError(
                "documents.length",
                f"documents of {length:,} tokens do not fit a packed sequence of {seq_len:,} (seq_len); give a "
                "histogram (lengths, shares) to have long documents split at the sequence boundary",
            )


def check_window(scenario: Scenario) -> None:
    """A sliding window no longer than any phase's sequence: a longer one would be whole-sequence attention priced
    under a window's name. A model that does not resolve is left to the check that names it."""
    try:
        model = scenario.model_spec()
    except PerfmodelError:
        return
    for seq_len in sorted({scenario.parallelism.seq_len, *(p.seq_len for p in scenario.phase if p.seq_len)}):
        if model.sliding_window > seq_len:
            raise FieldError(
                "parallelism.seq_len",
                f"{seq_len:,} tokens is shorter than {model.id}'s sliding window of {model.sliding_window:,}: its "
                "windowed layers would attend the whole sequence; use a sequence at least as long as the window",
            )


def check_lora(scenario: Scenario) -> None:
    """LoRA adapts what the model has: no MLP adapters on a MoE model's experts, a rank within the layer width; and
    its modules without a rank price nothing (full training), so they are refused as a ramp without its start is."""
    if not scenario.lora_rank:
        if "lora_modules" in given(scenario):
            raise FieldError(
                "lora_modules", "adapters need a rank: set lora_rank too (e.g. 16); without it every weight trains"
            )
        return
    model = scenario.model_spec()
    if model.is_moe and scenario.lora_modules != "attention":
        raise FieldError(
            "lora_modules",
            f"LoRA on a MoE model's experts is not modelled ({model.id}): only 'attention' (adapters on the "
            "attention projections, experts frozen)",
        )
    if scenario.lora_rank > model.hidden:
        raise FieldError("lora_rank", f"rank {scenario.lora_rank:,} is above the layer width ({model.hidden:,})")


def check_offload(scenario: Scenario) -> None:
    """One line saying why the scenario cannot offload its `activation_offload_layers`: Megatron-Core's stack alone
    has the offload, of at most the model's layers less one (transformer_config.py L1137-1142; transformer-engine
    2.20.2 cpu_offload.py L843-853), over a host link the system file gives. Here, with the checks that need the
    model and hardware (`scenario_from`), so that it names the file or flag that set it, and a Scenario object the
    API takes is checked as a file is (`with_overrides`)."""
    offloaded = scenario.activation_offload_layers
    if not offloaded:
        return
    if scenario.stack != "megatron":
        raise PerfmodelError(f"activation_offload_layers: Megatron-Core's offload; stack '{scenario.stack}' has none")
    model = scenario.model_spec()
    if offloaded >= model.layers:
        raise PerfmodelError(
            f"activation_offload_layers {offloaded}: must be less than the {model.layers} layers of {model.name} "
            "(Megatron-Core 0.16.0 transformer/transformer_config.py L1137-1142)"
        )
    system = resolve(scenario.gpu, scenario.system).system
    if system.host_link_gb_per_s_per_direction is None:
        raise PerfmodelError(
            f"activation_offload_layers: system '{system.id}' gives no host_link_gb_per_s_per_direction (the GPU's "
            "link to host memory that the activations cross)"
        )


def single_phase(scenario: Scenario, command: str, instead: str) -> None:
    """One line for a command that does not take a campaign: why, and what to do `instead`."""
    if scenario.phase:
        raise PerfmodelError(f"{command} takes a one-phase scenario, not a campaign ([[phase]] tables): {instead}")


def _look_up(scenario: Scenario, located: Callable[..., PerfmodelError]) -> None:
    """The scenario's model, GPU and system exist and agree; an error names the file or flag (`located`)."""
    checks: list[tuple[str, Any]] = [("model", scenario.model_spec)]  # here, so that an error names file or flag
    if scenario.gpu is not None:
        checks.append(("gpu", lambda: get_accelerator(scenario.gpu)))
    if scenario.system is not None:
        checks += [
            ("system", lambda: get_system(scenario.system)),
            ("gpu", lambda: resolve(scenario.gpu, scenario.system)),
        ]
    for field, check in checks:
        try:
            check()
        except FieldError as exc:
            raise located(exc.field, exc.detail) from None
        except PerfmodelError as exc:
            raise located(field, str(exc), named=not str(exc).startswith(f"{field}:")) from None
