"""The named parameter table: every number calibration may fit, with its scope, physical bounds and prior.

A parameter is shared wherever its mechanism is the same: one NCCL scale-out efficiency and one TP-overlap share for
every family, one GEMM kernel efficiency per vendor library (cuBLAS, hipBLASLt) with each lower-precision format a
ratio on it (FORMAT_SHARE), one MLPerf timed-region overhead per benchmark. Generations then differ by their
datasheet facts (peaks, SMs, HBM, links, sustained clocks), and by a generation factor per family, one for all its
GEMM formats, whose tight prior (a regularised, hierarchical fit) keeps it near 1 unless the data insist: a held-out
generation or format predicts at its vendor's values, not at unfitted defaults.

Resolution for a profile (family, software stack, MLPerf benchmark): start from the family's physical defaults
(efficiency.DEFAULTS), put fitted base values in place, then multiply the factors in (a factor's default is 1, or the
stack profile's figure). A parameter = name, target (an Efficiency field, or a SCALES entry scaling several together),
scope, bounds, prior and the rows that inform it. A parameter's stage
says which fit moves it: the dense fit, or the MoE stage, which fits its parameters on the MoE rows with every dense
one held (they act only on MoE layers, so no dense prediction can move).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Literal, NamedTuple

from perfmodel.inputs.stacks import FA2_BEST, STACKS
from perfmodel.physics.algebra import minimum
from perfmodel.physics.efficiency import (
    DEFAULTS,
    GEMM_OTHER_SILICON,
    KERNEL_ATTENTION,
    KERNEL_GEMM,
    Efficiency,
)

Scope = Literal["shared", "vendor", "family", "stack", "benchmark"]
Stage = Literal["dense", "moe"]
VENDORS = {
    "ampere": "nvidia",
    "hopper": "nvidia",
    "blackwell": "nvidia",
    "blackwell-ultra": "nvidia",
    "cdna3": "amd",
    "cdna4": "amd",
}
"""The GEMM/attention library behind a family: cuBLAS/cuDNN/Transformer Engine, or hipBLASLt/CK/ROCm TE."""


class Profile(NamedTuple):
    """What selects a parameter's value: the accelerator family, the software stack, the MLPerf benchmark (if any)."""

    family: str
    stack: str = "megatron"
    benchmark: str | None = None


@dataclass(frozen=True)
class Parameter:
    name: str
    target: str
    scope: Scope
    bounds: tuple[float, float]
    prior_sigma: float
    """Spread of the prior on log(value / prior centre)."""
    informed_by: str
    factor: bool = False
    """A factor multiplies the target (default 1, or `factor_default`); otherwise the value replaces it."""
    factor_default: Callable[[str], float] | None = None
    """A factor's default per scope value (a stack profile's figure)."""
    only: tuple[str, ...] | None = None
    """Scope values for which calibration fits the parameter (None: all); elsewhere it keeps its default."""
    needs: str | None = None
    """What the rows must have to inform the parameter: a GEMM format ('bf16', 'fp8', 'fp4') or 'mlperf'."""
    stage: Stage = "dense"
    """The fit that moves it: the dense fit, or the MoE stage over the fixed dense values (fitting.calibrate)."""
    applies: Callable[[Profile], bool] | None = None
    """Whether the parameter acts on a profile at all (None: on every profile)."""
    relative_to: str | None = None
    """A factor on this other field's fitted value rather than on its own target's default (which it keeps where
    that field has none)."""
    tied: tuple[tuple[str, str], ...] = ()
    """Scope values priced by another's entry, whose mechanism is the same: (value, the value whose entry it takes).
    One number for both, which the rows of either inform."""

    def scope_value(self, profile: Profile) -> str | None:
        """The value of this parameter's scope for a profile; None when the parameter does not apply to it."""
        if self.applies is not None and not self.applies(profile):
            return None
        if self.scope == "shared":
            value: str | None = ""
        elif self.scope == "vendor":
            value = VENDORS[profile.family]
        else:  # the profile's own field: family, stack or benchmark
            value = getattr(profile, self.scope)
        return next((to for tied, to in self.tied if tied == value), value)

    def key(self, scope_value: str) -> str:
        return f"{self.name}@{scope_value}" if scope_value else self.name

    def default(self, scope_value: str) -> float:
        """Prior centre: a factor's default, or the geometric mean of the physical defaults of the families in the
        scope (those with the format, for a GEMM)."""
        if self.factor:
            return self.factor_default(scope_value) if self.factor_default else 1.0
        families = [f for f in DEFAULTS if self.scope != "vendor" or VENDORS[f] == scope_value]
        families = [f for f in families if self.applies is None or self.applies(Profile(f))] or families
        if self.scope == "family":
            families = [scope_value]
        defaults = [d for d in (_field(DEFAULTS[f], self.target) for f in families) if d > 0]
        return math.exp(sum(math.log(d) for d in defaults) / len(defaults))


SCALES = {"attention": ("attention_fwd", "attention_bwd"), "gemm": ("gemm_bf16", "gemm_fp8", "gemm_fp4")}
"""Targets that scale several Efficiency fields together: the flash-attention kernels' forward and backward, and a
part's GEMMs in every format (its tensor cores and sustained clock, whatever the format: FORMAT_SHARE)."""
FORMAT_SHARE = (0.6, 1.4)
"""Bounds of a lower-precision format's GEMM share of peak over BF16's on the same part; the prior centre is 1. The
tensor cores' rate per clock doubles with each halving of the format, and the power cap sets the clock alike for both:
AMD's ROCm blog "Measuring Max-Achievable FLOPs - Part 2" (rocm-blogs) measured median dense GEMM clocks of 1,230 MHz
in FP8 against 1,207 MHz in BF16 on MI300X (750 W) and 1,464 against 1,447 MHz on MI325X (1,000 W). A held-out
format or a family without its rows is then priced at BF16's fitted share, not at an unfitted default; with
separate per-format entries, a fit without BF16 rows pushed BF16's to its 0.85 bound (Hopper at 0.98 of peak)."""


def _field(eff: Efficiency, target: str) -> float:
    return 1.0 if target in SCALES else float(getattr(eff, target))


def _stack_attention(stack: str) -> float:
    return STACKS[stack].attention_speed.value


def _stack_attention_code(stack: str) -> float:
    return STACKS[stack].attention_code.value


def _attention_unmeasured(profile: Profile) -> bool:
    """Whether the family's attention is fitted to training rows: it has no kernel rows (efficiency.KERNEL_ATTENTION,
    whose families take their shares from the measured kernels instead)."""
    return profile.family not in KERNEL_ATTENTION


def _fa3_class(profile: Profile) -> bool:
    """Whether the family's best attention kernel is cuDNN fused attention / FlashAttention-3 (Hopper on), which the
    vendor's attention factor describes, and no kernel rows measure it; Ampere's best is FlashAttention-2
    (inputs/stacks.py FA2_BEST), priced at its own defaults (Dao 2023) times its generation factor."""
    return profile.family not in FA2_BEST and _attention_unmeasured(profile)


def _fa2_class(profile: Profile) -> bool:
    """Whether the family's attention is fitted to its rows apart from any vendor factor: its best kernel is
    FlashAttention-2 (Ampere) and no kernel rows measure it. A family the vendor factor prices takes no generation
    factor on top: with one such family per vendor (CDNA3 for AMD, none for NVIDIA) the two are one number on the
    same rows, which only their priors split (fitted 0.995 and 0.999 on MI300X/MI325X's 15 rows)."""
    return profile.family in FA2_BEST and _attention_unmeasured(profile)


ATTENTION_FACTOR = (0.5, 2.0)
"""Bounds of the vendor attention factor on the shares of families without kernel rows (efficiency.DEFAULTS: MMA
FLOPs over time). The model prices an attention op as (MMA time + exponential time) / efficiency
(compute.attention_core_s), so a kernel that hides its exponentials behind its MMAs at share s fits efficiency
s x (1 + exp_s / mma_s): at head dim 128 (512 MMA flops per exponential) that is 1 + 989 / (3.9 x 512) = 1.50 on H100
and 1 + 2,500 / (5.0 x 512) = 1.98 on GB200 (hardware_specs sfu_texp_per_s), hence an upper bound of 2, not 1.5.
Fitted to training rows, the NVIDIA factor sat at that bound; the families with kernel rows (Hopper, Blackwell,
Blackwell Ultra, CDNA4) now take their shares from the kernels (physics.attention_kernels), and the factor acts only
where none exist."""


ATTENTION_IMPL = (0.3, 1.5)
"""Bounds of a stack's attention-code factor (prior 1: the kernel it calls runs as measured). llm-foundry's MPT rows
(measured_runs.csv, its README of 2024-01) lose throughput with sequence length on A100 and H100 alike, more than
FlashAttention-2's kernels do (8 GPUs, 2k to 65k tokens): one factor for the stack's attention code on every family,
on top of its kernel's speed against the family's best (a measured figure, not fitted: inputs/stacks.py
FA2_SPEEDS), so that either family's rows inform the other's. Before, a stack factor fitted against cuDNN on Hopper
(0.28) and Ampere's attention generation factor (0.79) absorbed it family by family, and a held-out family's
llm-foundry rows read 15-20% fast. Fitted on those rows it came to 0.543, and a fold holding the stack out priced
it at 1 (32.6% held out): its prior centre is now the stack profile's sourced figure (inputs/stacks.py
`attention_code`: FlashAttention-2 against the Triton kernel llm-foundry runs, 0.555), which a fold without the
stack's rows keeps. Still fitted: held at the figure, the 2% between them moved the shared GEMM, HBM and straggler
values of the whole fit (NeMo's long-sequence rows 4.6% -> 5.5%)."""


GRAPH_CAPTURED = {
    ("mlperf-llama2-70b-lora", "nvidia"): "NVIDIA's MLPerf LoRA configs (training_results_v5.0) capture the whole "
    "iteration in a CUDA graph (MCORE_CUDA_GRAPH=1) and warm up before run_start: their logs' timed region minus "
    "steps and evaluations is -0.4 to +0.3 s",
}
"""(benchmark, vendor) whose timed region holds no warm-up, graph capture or slow first step from
efficiency.WARM_START_RELEASE on: no run overhead; older releases pay only `timed_warmup_s`."""


WARM_STARTED = {
    ("mlperf-llama31-8b", "nvidia"): "first run in v5.1 (NVIDIA's configs: NeMo 25.09, after "
    "efficiency.WARM_START_RELEASE); inferred from mlperf_training_llm_runs.csv: NVIDIA's 512-GPU runs' minutes "
    "against their samples trained (10 runs at 5 sample counts each) meet zero samples at -0.5 +- 1.0 s (Theia, "
    "GB300) and -3.2 +- 2.1 s (Tyche, GB200)",
}
"""(benchmark, vendor) whose timed region holds no warm-up or slow first step in every release it was run with, read
off its run logs, with no whole-iteration CUDA graph sourced: no run overhead and no `timed_warmup_s`, but the
per-step host work stays (inputs.mlperf.Benchmark.graph_captured_vendors): the same fit gives NVIDIA's 512-GPU Llama
3.1 8B runs 17.0 and 17.8 s per 12,288 samples (192 steps and an evaluation), 88.6 and 92.9 ms a step against 41 and
46 ms of priced compute and communication (docs/calibration.md, 'MLPerf v5.1's Llama 3.1 8B'), so that no source-less
whole-iteration graph (which would drop that work) is priced. By vendor,
as GRAPH_CAPTURED: four other submitters' 8-GPU B200 results (Dell 1xXE9680L, Lenovo SR780a V3, Supermicro
SYS-422GS and AS-4126GS: two sample counts each) meet zero samples at 40-54 s, under 1% of their 85 minutes."""


def _graph_captured(profile: Profile) -> bool:
    """Whether a profile's MLPerf runs are graph-captured (GRAPH_CAPTURED): `timed_warmup_s` acts only there."""
    return profile.benchmark is not None and (profile.benchmark, VENDORS[profile.family]) in GRAPH_CAPTURED


def _warm_started(profile: Profile) -> bool:
    """Whether a profile's MLPerf runs warm up before their timed region (GRAPH_CAPTURED's from WARM_START_RELEASE
    on, WARM_STARTED's always): no run overhead or slow first step in it."""
    return _graph_captured(profile) or (profile.benchmark, VENDORS[profile.family]) in WARM_STARTED


def _release_series(profile: Profile) -> bool:
    """Whether the fitted release trends price a profile's releases (a stack with a release series); elsewhere they
    keep their default of 1: no trend."""
    return STACKS[profile.stack].release_trend


FP4_FITTED_VENDORS = ("amd",)
"""Vendors whose FP4 format factor the fit moves: not NVIDIA's, whose FP4 GEMM share is measured on both its FP4
families (inputs.kernels.format_shares: B200 and B300), so that the fit cannot carry Blackwell Ultra's FP4 GEMMs
past TransformerEngine's measured rates to absorb a cost elsewhere (it put them 14% above)."""
FP8_FITTED_VENDORS = ("nvidia",)
"""Vendors whose FP8 format factor the fit moves: not AMD's, whose FP8 GEMM share hipblaslt-bench measures on both
its FP8 families (inputs.kernels.BENCH_FORMAT_SHARES). With a factor per vendor, FP8 rows identify only its product
with the shared `gemm_sustained`, and their priors split it: holding BF16's rows out, the fit put both AMD's and
NVIDIA's factor at 0.88-0.92 and `gemm_sustained` at 0.97 (0.89 on every row), BF16 4-7% fast. AMD's FP8 rows now
measure `gemm_sustained` through a kernel-measured share. NVIDIA's factor stays: Hopper's only FP8 kernel rows
(ml-engineering's MAMF, torch._scaled_mm) put its FP8 at 0.88 of BF16's share, which its training rows reject (as
Hopper's share the precision protocol read 8.3% against 6.3%)."""
GENERATION = (0.6, 1.6)


def _generation(name: str, target: str, prior_sigma: float, informed_by: str) -> Parameter:
    """A family's generation factor on its vendor's (or the shared) value: what lets a held-out family be priced
    from its vendor's parameters and its datasheet facts."""
    return Parameter(name, target, "family", GENERATION, prior_sigma, informed_by, factor=True)


def _gemm_unmeasured(profile: Profile) -> bool:
    """Whether the family's GEMM share is fitted to training rows: no kernel rows measure it (efficiency.KERNEL_GEMM,
    whose families take their shares and shapes from the measured kernels instead)."""
    return profile.family not in KERNEL_GEMM


def _gemm_measured(profile: Profile) -> bool:
    return not _gemm_unmeasured(profile)


def _gemm_own_silicon_unmeasured(profile: Profile) -> bool:
    """Whether no kernel rows measure the family's own tensor cores: its GEMM share is fitted to its rows, or carried
    from another generation's kernels (efficiency.GEMM_OTHER_SILICON), which its rows correct."""
    return _gemm_unmeasured(profile) or profile.family in GEMM_OTHER_SILICON


GEMM_SUSTAINED = (0.6, 1.0)
"""Bounds of a training step's dense GEMM rate over the measured kernels' at the same shape (prior 1): kernel rows
run short loops at free clocks, a training step for hours at its power-capped sustained clock, with other kernels and
communication sharing the SMs and the power, so it can reach the kernels' rate but not pass it (the bound was 1.3,
which let a fit trade a slower HBM share for GEMMs above the kernels'). One factor for every family with kernel
rows, so that the families' differences come from their kernels and datasheets, not from a factor per family fitted
to a few training rows."""


SAME_MEMORY = (("cdna4", "cdna3"),)
"""Families whose HBM factor is another's: CDNA4 keeps CDNA3's memory system (eight HBM stacks behind a 256 MB
Infinity Cache, as AMD's CDNA 3 and CDNA 4 architecture white papers describe them: recalled, not a stored copy),
HBM3E as on MI325X, so that the same ROCm norm, cast and optimizer kernels stream at the same share of the datasheet
bandwidth (an assumption: no bundled kernel row measures CDNA3's streaming share). With a factor of its own, MI355X's
8 MLPerf rows alone set it (0.926, against CDNA3's 0.994 on 15 rows, its prior)."""

MEMORY_SHARE_MAX = 1.0
"""Most of the datasheet HBM bandwidth a memory-bound kernel is priced at (Efficiency.memory is a share of it): the
shared streaming share times a family's generation factor is held under it, which no box bound on either can do.
Unbounded, the fit put Blackwell Ultra at 0.686 x 1.52 = 1.04 of GB300's 8 TB/s, where cuDNN's RMSNorm streams 6.5
(kernels_memory.csv; efficiency.KERNEL_MEMORY 0.758): a cost the model lacks, not HBM speed. Held at 1, the refit
moves the rest into the shared share (0.686 -> 0.701, other families' factors down alike) and reads the protocols
as before or better (generation 4.88 -> 4.86, stack 9.25 -> 9.21, held-out 4.83 -> 4.79)."""

RUN_OVERHEAD_FITTED = ("mlperf-llama2-70b-lora", "mlperf-llama31-405b")
"""Benchmarks whose fixed timed-region overhead the fit moves; the others keep efficiency.Efficiency.run_overhead_s
(20 s). Not GPT-3's (retired after v4.1): of its 9 fitted rows, 7 run 12 minutes or longer, on which its overhead is
under 0.6% of the time, so 2 rows (NVIDIA Eos-dfw on 10,752 and 11,616 H100s, 3.4-3.7 minutes) set it, to 27 s;
at the default those two read 4.5% and 2.6% fast. Not Llama 3.1 8B's: NVIDIA GPUs' runs hold none (WARM_STARTED), and
the 4 fitted rows left, AMD's MI355X results of 96-108 minutes, would set it from 0.3% of their time."""


TABLE: tuple[Parameter, ...] = (
    Parameter(
        "gemm_bf16",
        "gemm_bf16",
        "vendor",
        (0.35, 0.85),
        0.3,
        "rows of families without GEMM kernel rows (BF16 GEMMs run in every recipe)",
        applies=_gemm_unmeasured,
    ),
    Parameter(
        "gemm_sustained",
        "gemm",
        "shared",
        GEMM_SUSTAINED,
        0.2,
        "rows of families whose GEMMs kernel rows measure: their sustained rate over the kernels'",
        factor=True,
        applies=_gemm_measured,
    ),
    *(
        Parameter(
            f"gemm_format_{fmt}",
            f"gemm_{fmt}",
            "vendor",
            FORMAT_SHARE,
            0.1,
            f"{fmt.upper()} rows: the share of peak its GEMMs reach against BF16's on the same part",
            factor=True,
            needs=fmt,
            relative_to="gemm_bf16",
            only=only,
        )
        for fmt, only in (("fp8", FP8_FITTED_VENDORS), ("fp4", FP4_FITTED_VENDORS))
    ),
    replace(
        _generation(
            "gemm_generation",
            "gemm",
            0.1,
            "the family's rows, every format, where no kernel rows measure its tensor cores: against its vendor's",
        ),
        applies=_gemm_own_silicon_unmeasured,
    ),
    Parameter(
        "attention",
        "attention",
        "vendor",
        ATTENTION_FACTOR,
        0.3,
        "rows of families whose best kernel is cuDNN/FlashAttention-3 and no kernel rows measure (scales those "
        "kernels; not Ampere's FA2)",
        applies=_fa3_class,
    ),
    replace(
        _generation(
            "attention_generation",
            "attention",
            0.15,
            "the family's rows, where no kernel rows measure it and no vendor factor prices it (Ampere's "
            "FlashAttention-2): its attention kernels against its defaults",
        ),
        applies=_fa2_class,
    ),
    Parameter("memory", "memory", "shared", (0.5, 0.9), 0.3, "every row (norms, activations, casts, optimizer)"),
    replace(
        _generation(
            "memory_generation",
            "memory",
            0.1,
            "the family's rows: its HBM against the shared streaming efficiency (CDNA4's: CDNA3's, SAME_MEMORY)",
        ),
        tied=SAME_MEMORY,
    ),
    Parameter("scaleout", "scaleout", "shared", (0.5, 0.95), 0.3, "rows spanning more than one scale-up domain"),
    Parameter("overlap_tp", "overlap_tp", "shared", (0.1, 0.95), 0.3, "rows with TP > 1 (userbuffers overlap)"),
    Parameter(
        "run_overhead_s",
        "run_overhead_s",
        "benchmark",
        (0.1, 300.0),
        1.0,
        "MLPerf rows of the benchmark: the fixed part of its timed region outside steps and evaluations (data "
        "loading, checkpoint load, the final sync: what its reference code does before the first step)",
        needs="mlperf",
        only=RUN_OVERHEAD_FITTED,
    ),
    Parameter(
        "timed_warmup_s",
        "timed_warmup_s",
        "benchmark",
        (0.1, 300.0),
        1.0,
        "MLPerf rows of a graph-captured stack (GRAPH_CAPTURED) from releases before efficiency.WARM_START_RELEASE: "
        "the warm-up and CUDA-graph capture those releases ran inside the timed region",
        needs="mlperf",
        applies=_graph_captured,
    ),
    Parameter(
        "first_steps",
        "first_steps",
        "shared",
        (0.01, 100.0),
        1.0,
        "MLPerf rows: extra step times in the timed region (slow first iteration)",
        needs="mlperf",
    ),
    Parameter(
        "software_gain_per_year",
        "software_gain_per_year",
        "shared",
        (0.9, 2.0),
        0.2,
        "rows with a release month: the same hardware and layout across containers and rounds",
        applies=_release_series,
    ),
    Parameter(
        "fusion_gain_per_year",
        "fusion_gain_per_year",
        "shared",
        (0.9, 2.0),
        0.2,
        "rows with a release month: memory-bound kernels of older releases, which fused fewer elementwise passes",
        applies=_release_series,
    ),
    Parameter(
        "straggler_cv",
        "straggler_cv",
        "shared",
        (1e-4, 0.05),
        1.0,
        "multi-rank rows: the wait for the slowest rank grows with the ranks in lock-step",
    ),
    Parameter(
        "attention_impl",
        "attention",
        "stack",
        ATTENTION_IMPL,
        0.3,
        "rows of the stack on every family: its attention code against the kernel its profile's attention_speed "
        "describes (prior: the stack profile's figure, llm-foundry's Triton FlashAttention with MPT's ALiBi biases "
        "at 0.555 of FlashAttention-2, from the FlashAttention-2 paper)",
        factor=True,
        factor_default=_stack_attention_code,
        only=("composer",),
    ),
    Parameter(
        "step_overhead_s",
        "step_overhead_s",
        "stack",
        (0.005, 2.0),
        1.0,
        "rows of the stack: per-step work outside the model",
        only=("composer",),
    ),
    Parameter(
        "overlap_dp",
        "overlap_dp",
        "stack",
        (0.1, 0.99),
        0.3,
        "rows of the stack: share of FSDP/DP collectives hidden behind compute",
        only=("composer",),
    ),
    Parameter(
        "overlap_ep",
        "overlap_ep",
        "shared",
        (0.05, 0.95),
        0.3,
        "MoE rows: the share of the expert-parallel dispatch/combine inside a scale-up domain hidden behind compute "
        "(no all-to-all hides completely or not at all; prior: Megatron's EP-communication overlap hides about half)",
        stage="moe",
    ),
    Parameter(
        "grouped_gemm",
        "grouped_gemm",
        "shared",
        (0.5, 1.2),
        0.3,
        "MoE rows: grouped expert GEMMs against a dense GEMM of the same tiles (above 1: the dense gemm_* fit "
        "absorbed something grouped kernels do not pay)",
        stage="moe",
    ),
    Parameter(
        "moe_legacy_group_s",
        "moe_legacy_group_s",
        "family",
        (1e-6, 1e-3),
        2.0,
        "MoE rows of the family from releases before the grouped expert kernel (efficiency.GROUPED_KERNEL_RELEASE), "
        "and of every release on Hopper, whose rows did not move at that release (Efficiency.moe_group_loop): the "
        "fixed cost per local expert of each grouped GEMM (a weak prior: the rows decide; docs/moe_validation.md)",
        stage="moe",
    ),
)
BY_NAME = {p.name: p for p in TABLE}
RELATIVE = {p.target: p.relative_to for p in TABLE if p.relative_to}
"""Targets whose factor multiplies another field's fitted value (a lower-precision format's GEMM share: BF16's)."""


@dataclass(frozen=True)
class Entry:
    """One free number of a fit: a parameter at one scope value."""

    parameter: Parameter
    scope_value: str

    @property
    def key(self) -> str:
        return self.parameter.key(self.scope_value)

    @property
    def default(self) -> float:
        return self.parameter.default(self.scope_value)

    @property
    def fittable(self) -> bool:
        only = self.parameter.only
        return only is None or self.scope_value in only


def entry(key: str) -> Entry | None:
    """The entry a calibration file's key names ('gemm_fp8@nvidia', 'scaleout'), or None if unknown."""
    name, _, scope_value = key.partition("@")
    parameter = BY_NAME.get(name)
    if parameter is None or bool(scope_value) == (parameter.scope == "shared"):
        return None
    return Entry(parameter, scope_value)


def stage_of(key: str) -> Stage | None:
    """The fit that moves the entry a calibration key names (None: unknown key)."""
    item = entry(key)
    return item.parameter.stage if item else None


def entries_for(profile: Profile) -> list[Entry]:
    """The entries that set a profile's efficiencies."""
    found = []
    for parameter in TABLE:
        value = parameter.scope_value(profile)
        if value is not None:
            found.append(Entry(parameter, value))
    return found


def efficiency(values: Mapping[str, float], profile: Profile) -> Efficiency:
    """A profile's efficiencies: physical defaults, fitted base values in place, factors multiplied in."""
    base = DEFAULTS[profile.family]
    resolved: dict[str, float] = {}
    factors: dict[str, float] = {}
    for item in entries_for(profile):
        target = item.parameter.target
        if item.parameter.factor:
            factors[target] = factors.get(target, 1.0) * values.get(item.key, item.default)
        elif item.key in values:
            resolved[target] = values[item.key]
    for target, source in RELATIVE.items():
        if target in factors and source in resolved:
            resolved[target] = resolved[source]
    for target, factor in factors.items():
        resolved[target] = resolved.get(target, _field(base, target)) * factor
    if "memory" in resolved:  # a share of the datasheet bandwidth: never above it (MEMORY_SHARE_MAX)
        resolved["memory"] = minimum(resolved["memory"], MEMORY_SHARE_MAX)
    speeds = STACKS[profile.stack].attention_speeds(profile.family)
    if speeds is not None:  # the stack's kernel against the family's best: measured, not fitted
        pairs = zip(SCALES["attention"], speeds, strict=True)
        resolved |= {field: resolved.get(field, _field(base, field)) * speed for field, speed in pairs}
    if _stack_attention(profile.stack) < 1.0:
        resolved["kernel_releases"] = 0.0
    if _warm_started(profile):
        resolved |= {"run_overhead_s": 0.0, "first_steps": 0.0}
    if profile.benchmark is not None and not _graph_captured(profile):
        resolved["timed_warmup_s"] = 0.0  # its run_overhead_s holds the whole warm-up, or it has none
    return apply(base, resolved)


def apply(base: Efficiency, values: Mapping[str, float]) -> Efficiency:
    """`base` with values in place, then the SCALES targets (attention, gemm) multiplied into their fields."""
    placed = {k: v for k, v in values.items() if k not in SCALES}
    for target, scaled in SCALES.items():
        if target in values:
            placed |= {f: placed.get(f, getattr(base, f)) * values[target] for f in scaled}
    return replace(base, **placed)
