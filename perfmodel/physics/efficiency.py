"""The model's efficiency parameters: the few numbers that turn datasheet peaks into achieved speed.

They are all here, named, one set per accelerator family, so that calibration can fit them to measured runs and
everything else stays first-principles arithmetic. The defaults are physically sensible starting points from public
microbenchmarks (cuBLAS/hipBLASLt GEMM sweeps under the power cap, FlashAttention/cuDNN attention kernels, STREAM-like
elementwise kernels, nccl-tests/rccl-tests bus bandwidth); they are not fitted to any training run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from itertools import pairwise

from perfmodel.physics.algebra import Number, where
from perfmodel.physics.bounded import Bounded

REFERENCE_VINTAGE = "2026-08"
"""The software release the efficiencies describe at `vintage_years` 0: the newest release month among the bundled
measured runs (NeMo 26.08; fitting.runs.reference_vintage works it out from the data, and a test pins the two)."""

GROUPED_KERNEL_RELEASE = "2026-06"
"""The first release whose MoE rows run their grouped expert GEMMs without a per-expert cost (moe_legacy_group_s):
NeMo 26.06, the container in which the Megatron-Bridge MoE tables' unchanged Blackwell layouts got 18-56% faster
(measured_runs.csv: Qwen3-30B-A3B GB200 26,112 -> 40,706 tokens/s/GPU, Qwen3-235B-A22B 5,680 -> 7,376, DeepSeek-V3
4,256 -> 4,969, 26.04.01 -> 26.06), the more the more local experts per rank and the smaller they are, while
Mixtral-8x7B (one local expert) ran at today's predicted speed in 25.04 and H100 rows did not move. Read off the
rows, not a release note: an assumption, labelled."""
CURRENT_SCALING_RELEASE = "2025-09"
"""The first release whose unqualified FP8 is per-tensor CURRENT scaling: Megatron-Bridge 25.09, whose performance
tables' main numbers are FP8-CS (measured_runs_sources.md, "25.09 has no precision column. Its main numbers are FP8
per-tensor current scaling (FP8-CS), as labelled in 25.11"). Before it, NeMo 2.0 and the MLPerf submissions ran FP8
with DELAYED scaling: the scale comes from an amax history (NeMo's `bf16_with_fp8_mixed`: fp8_amax_history_len 1024,
fp8_amax_compute_algo 'max'; its performance scripts' `--fp8_recipe` default 'ds'; NVIDIA's MLPerf configs
FP8_AMAX_HISTORY / FP8_AMAX_ALGO), so the cast kernel records the amax on the way and no separate amax pass over the
BF16 tensor runs. Recalled from the public NeMo and MLPerf code, not from a stored copy: labelled."""

EAGER_YARN_ROPE_RELEASE = "2026-02"
"""The first release whose rotary embedding runs eagerly for YaRN with an attention scaling other than 1
(ModelSpec.yarn_mscale; GPT-OSS): Megatron-Core's rope_utils.apply_rotary_pos_emb warns "mscale=... is not supported
by TE's fused RoPE. Using unfused implementation" and runs _apply_rotary_pos_emb_bshd (core_v0.18.0 L250, L279-285;
first in core_v0.16.0, commit 987395813b "Fixes for gpt-oss (#2038)", 2025-11-22; core_v0.15.0 took the fused path
and ignored mscale). NeMo 26.02 is the first container the notes date it to (../shared/data/gpt_oss_blackwell_notes.md
2.4); Megatron-Bridge patches the factor to exactly 1 for non-YaRN models, so they keep the fused kernel."""

WARM_START_RELEASE = "2025-04"
"""The first release whose graph-captured MLPerf runs (parameters.GRAPH_CAPTURED) warm up and capture their CUDA
graphs before run_start: NeMo 25.04, the container of NVIDIA's v5.0 LoRA configs (training_results_v5.0
`*_ngc25.04_nemo`), whose logs' timed region minus steps and evaluations is -0.4 to +0.3 s (stack_notes.md). Runs
of the older releases (NeMo 24.04 and 24.09, MLPerf v4.0 and v4.1) hold that warm-up inside the timed region
(`timed_warmup_s`). A fixed time, not one per step: at 64-1,024 H100s the v4.x LoRA rows' scores exceed their
priced steps and evaluations by a roughly constant 20-75 s, while their 8-GPU rows (25-30 minutes) hide it. The
switch is read off those rows and the v5.0 logs, not a release note: an assumption, labelled."""


FLASH_ATTN_2_UNTIL = "2024-03"
"""The last release whose context-parallel ring ran FlashAttention-2's kernels on Hopper: TransformerEngine's first
context parallelism (attn_forward_func_with_cp) called the flash-attn package's forward and backward for each ring
step, while DotProductAttention without CP already preferred cuDNN's fused attention on Hopper (recalled from the
public code, not a stored copy). Priced at its rows measured on H200 (perfmodel/data/kernels_attention.csv: PyTorch
SDPA's flash backend, NGC 24.12: about half cuDNN's forward rate and 0.6x its backward at 4k-64k tokens;
RING_FLASH_ATTN_2). NVIDIA's long-sequence table of NeMo 24.03 (perfmodel/data/long_sequence.csv, Llama 2 7B) agrees:
its CP rows (32k-1M tokens) run at FlashAttention-2's rate, 1.5-1.7x slower than cuDNN's, its CP-1 rows at 4k and 8k
at cuDNN's (FlashAttention-2 there would price them 14% slow), as NeMo 24.07's Llama 3.1 8B rows do. CUDNN_RING_FROM,
the first release priced with cuDNN's kernel in the ring, is read off the rows: MLPerf v4.0's NeMo 24.04 LoRA rows run
CP 2 with cuDNN's FP8 attention, which FlashAttention-2 does not have. An assumption, labelled."""
CUDNN_RING_FROM = "2024-04"

BAND_TILE_TOKENS = 128.0
"""Keys a sliding-window kernel computes per query beyond those in its window: it runs whole key tiles along the
diagonal band, and a 128-wide query tile against a window of W keys touches W + 128 of them (tiles of 128 keys:
FlashAttention-2 and -3's and cuDNN's at head dims up to 128). An assumption, labelled: cuDNN's tile sizes are not
published; the fitted `attention_band_*` terms absorb a different one."""

ATTENTION_HALF_SPEED_TOKENS = 512.0
"""Sequence length at which a flash-attention kernel runs at half its long-sequence speed, where no kernel rows
measure the family: FlashAttention-3 (Shah et al. 2024, H100, head dim 128) rises from roughly half its 16k-token
throughput at 512 tokens to ~95% at 8k, which a length / (length + 512) curve follows."""


@dataclass(frozen=True)
class Efficiency:
    gemm_bf16: float
    """Fraction of the dense BF16 peak that large BF16 GEMMs sustain in training (clocks under the power cap)."""
    gemm_fp8: float
    gemm_fp4: float
    attention_fwd: float
    """Fraction of the BF16 peak reached by the flash-attention forward kernel (causal, head_dim 128)."""
    attention_bwd: float
    memory: float
    """Fraction of HBM bandwidth reached by memory-bound kernels (norms, activations, casts, optimizer)."""
    kernel_overhead_us: float
    """Fixed cost per kernel: launch, prologue and tail."""
    scaleup: float
    """Fraction of the scale-up link bandwidth NCCL/RCCL collectives reach (bus bandwidth / link bandwidth)."""
    scaleout: float
    """Fraction of the NIC bandwidth reached by collectives across nodes."""
    overlap_tp: float
    """Share of the overlappable window in which TP collectives really hide behind GEMMs."""
    overlap_dp: float
    overlap_pp: float
    step_overhead_s: float
    """Per-step fixed work outside the model: data loader, loss and grad-norm reductions, logging, scheduler."""
    run_overhead_s: float = 20.0
    """Time in an MLPerf timed region spent outside steps and evaluations: data-loader start, first-iteration
    compilation and CUDA-graph capture, the final synchronisation."""
    first_steps: float = 1.0
    """Extra step times inside an MLPerf timed region: the slow first iteration(s) (allocator growth, communicator
    and kernel autotuning set-up) the v5.0 405B logs show; it scales with the step, unlike run_overhead_s."""
    timed_warmup_s: float = 30.0
    """Warm-up inside an MLPerf timed region of a graph-captured stack's release before WARM_START_RELEASE: CUDA-graph
    capture and first-iteration set-up that later releases do before run_start. Only graph-captured profiles have
    it (parameters.efficiency sets it to 0 for other MLPerf profiles, where run_overhead_s holds the whole warm-up).
    The prior, 30 s, is a fraction of the 80-145 s of warm-up and capture the v5.0 logs show before run_start."""
    overlap_ep: float = 0.5
    """Share of the MoE layer's compute behind which the expert-parallel dispatch/combine all-to-alls of an EP group
    inside one scale-up domain hide (Megatron overlaps them with the shared experts and, with its EP-communication
    overlap, with another micro-batch's compute). Fitted on the MoE rows by the MoE stage of the calibration
    (fitting.calibrate.fit_moe). An EP group across scale-up domains hides its NIC all-to-alls at `overlap_dp`
    instead (`moe.ep_overlap`)."""
    grouped_gemm: float = 1.0
    """Grouped expert GEMMs' share of the efficiency a dense GEMM of the same tiles reaches (`gemm_*`): one kernel
    walking many weight matrices, with per-group scheduling and, for MXFP8, per-group scale tensors. Fitted on the
    MoE rows with `overlap_ep`; 1.0 until then."""
    software_gain_per_year: float = 1.0
    """Throughput gain per year of software releases at fixed hardware and layout (kernels, overlap, fusions): the
    Megatron-Bridge tables show the same run getting faster container by container."""
    peak_power_exponent: float = 0.3
    """Exponent beta of the delivered share of peak on board watts per peak FLOP/s across generations
    (compute.peak_power_share). Prior: about half the same-silicon clock exponent 0.63 (compute.CLOCK_POWER_EXPONENT),
    the rest of a newer part's higher peak per watt taken as lower energy per FLOP. Not fitted: every bundled family's
    GEMMs run at measured kernels' shares (Ampere's at its MAMF ratio over H100's, compute
    .silicon_ratios), so it prices only parts at other board watts per peak FLOP/s (what-ifs, your hardware)."""
    fusion_gain_per_year: float = 1.0
    """Memory-bound kernel time of a release one year older over today's, at fixed hardware and layout, beyond
    `software_gain_per_year`: releases fuse elementwise passes into their producers over time (stack_notes.md: TE's
    norm+cast and activation+cast, `USE_TE_OPS=1`, `FUSED_SINGLE_QKV_ROPE=1`, `CE_FUSION_IMPL=te` in later
    configs), so an older release moves more HBM bytes than the operation list, which describes today's fused
    stack, counts. Without it the shared memory efficiency sat at its 0.50 floor, fitted to the older rows (a fit on
    the rows released from 2025 on put it at 0.76, one on the older rows at its floor). The MLPerf rows (releases
    2024-04 to 2025-09) identify it with the older Megatron rows (Korthikanti et al. 2022, NeMo's long-sequence table
    of 2024-03): with NVIDIA's MLPerf rows exempt it fits at 1.03. No dated switch in its place fits as well: none,
    one step before 2025-01 or 2025-07, or the rate capped at 2024-04 each put the HBM share at 0.54-0.73 and read
    generation 6.3-7.6%, precision 6.5-7.3% and length 6.3-8.1% against 5.9, 6.0 and 4.6%
    (docs/calibration.md, 'What is left of v5.1'). The forward protocol barely moves with it (7.1-7.5% against
    7.4%): each fold prices its round at releases inside its training rows' span, so the rate is interpolated there,
    not extrapolated."""
    straggler_cv: float = 0.005
    """Spread (coefficient of variation) of one rank's compute time per step in lock-step training: thermal and
    power-cap clock drift, HBM refresh, OS and NCCL proxy noise. A step waits for the slowest of N ranks, whose
    expected excess over the mean grows like sqrt(2 ln N) (Llama 3 paper, Dubey et al. 2024, section 3.3.4: at
    16k GPUs a few slow ranks set the pace of the whole job)."""
    moe_legacy_group_s: float = 5e-5
    """Fixed time per local expert of each grouped expert GEMM in releases before GROUPED_KERNEL_RELEASE: the MoE
    stack's software age, which the rows show as a cost per expert group (a per-expert GEMM loop with its own
    quantisation and launch), not as a per-year trend. Fitted per family by the MoE stage on every container's rows;
    a prediction for the reference vintage never pays it."""
    moe_group_loop: float = 0.0
    """1 where the family's grouped expert GEMMs pay `moe_legacy_group_s` in every release, 0 where only releases
    before GROUPED_KERNEL_RELEASE do. Hopper is 1: its MoE rows did not move at NeMo 26.06 while the same Blackwell
    layouts got 18-56% faster (measured_runs.csv: Qwen3-30B-A3B H100 EP16 8,901 and 8,960 tokens/s/GPU in 26.04 and
    26.04.01, 8,826 in 26.06), so the per-expert cost the older H100 rows show is still paid today. A family fact
    read off the rows, not a fitted share: an assumption, labelled. Every Blackwell row that moved at that release
    runs TransformerEngine's fused grouped MLP from it (fitting.recipes); a run that leaves the op fuser off
    (precision.Recipe.expert_loop) pays it on any family (compute.op_time)."""
    vintage_years: float = 0.0
    """Years the priced software release is older than REFERENCE_VINTAGE."""
    attention_fwd_half_tokens: float = ATTENTION_HALF_SPEED_TOKENS
    """Tokens per sequence (per kernel call: a CP chunk) at which flash attention's forward runs at half its
    long-sequence share, `attention_fwd`: per-tile prologue and epilogue, the causal diagonal and the last wave are
    amortised over the keys a tile visits (compute.attention_core_s)."""
    attention_bwd_half_tokens: float = ATTENTION_HALF_SPEED_TOKENS
    gemm_tiles_half: float = 0.0
    """128 x 128 output tiles per SM at which a GEMM runs at half its share of peak: a grid of few tiles leaves SMs
    idle or splits K, which the libraries' heuristics smooth over rather than quantise in whole waves
    (compute.gemm_shape_share; GEMM_KERNELS)."""
    gemm_depth_half: float = 0.0
    """Reduction depth K at which a GEMM runs at half its share of peak: each output tile's prologue (loading the
    first K slices) and epilogue (writing C) are amortised over K (compute.gemm_shape_share)."""
    attention_fp8_ratio: float = 1.0
    """Flash attention's FP8 forward: its share of the FP8 peak over the BF16 forward's share of BF16's (1: the
    same share; its exponentials and softmax rescaling do not speed up either way)."""
    attention_band_fwd: float = 0.559
    """A sliding-window kernel's fixed work per query beyond the whole tiles of its band (BAND_TILE_TOKENS), in
    key-equivalents per `attention_fwd_half_tokens`: a query tile visits two or three key tiles, not thousands, so
    its prologue and epilogue are amortised over little (compute.attention_core_s). Fitted to the windowed kernels
    with the family's causal shares (physics.attention_kernels.fit_band), one value for every family."""
    attention_band_bwd: float = 0.291
    """The same for the backward, per `attention_bwd_half_tokens`."""
    attention_fp8_bwd_ps: float = 0.0
    """Flash attention's FP8 backward (per-tensor scales) where kernels measure it (FP8_ATTENTION_BACKWARD): its
    multiplies run at the FP8 peak and it spends this many picoseconds per score element beyond them and the softmax,
    at the kernel's share: quantising P and dS to FP8 for the dV and dQ/dK multiplies. Per score element, so per
    FLOP it doubles when the head dim halves (compute.attention_core_s)."""
    attention_mxfp8_bwd_ps: float = 0.0
    """The same for MXFP8 (a scale per 32 elements: a block amax, not one per tensor)."""
    kernel_releases: float = 1.0
    """1 where the stack calls the family's fused attention kernel, whose measured releases (ATTENTION_RELEASES) price
    an older release's attention; 0 where it runs a kernel of its own (FlashAttention-2 under llm-foundry or
    torchtitan on Hopper), priced by its kernel's measured speed (inputs/stacks.py StackProfile.attention_speeds)
    whatever the release."""

    def released_before(self, release: str) -> Number:
        """Whether the priced release is older than `release` (YYYY-MM; the margin absorbs the float rounding of
        the years: that release itself is not older); the release switches' one test."""
        return self.vintage_years > release_age_years(release) + 1e-6

    @property
    def before_eager_rope(self) -> Number:
        """1 where the priced release is older than EAGER_YARN_ROPE_RELEASE (a YaRN model's rotary embedding still
        fused), else 0: the share of an eager fallback's bytes (`Op.eager_bytes`) it does not move."""
        return where(self.released_before(EAGER_YARN_ROPE_RELEASE), 1.0, 0.0)

    @property
    def delayed_scaling(self) -> Number:
        """1 where the priced release runs FP8 with delayed scaling (before CURRENT_SCALING_RELEASE), else 0: the
        share of a cast's separate amax pass (`Op.amax_bytes`) it does not pay."""
        return where(self.released_before(CURRENT_SCALING_RELEASE), 1.0, 0.0)

    @property
    def vintage_factor(self) -> Number:
        """Step times of the priced release over those of the reference vintage: the one place a release enters a
        priced step (a prediction's `--vintage` and each measured row's release alike set `vintage_years`), but for
        attention priced at its own release's measured kernel (`attention_unaged`)."""
        return self.software_gain_per_year**self.vintage_years

    @property
    def unfused_factor(self) -> Number:
        """Memory-bound kernel time of the priced release over the reference vintage's (`fusion_gain_per_year`)."""
        return self.fusion_gain_per_year**self.vintage_years

    @property
    def legacy_group_s(self) -> Number:
        """Fixed time per local expert of each grouped expert GEMM at the priced release (none from
        GROUPED_KERNEL_RELEASE on, unless the family still loops over experts: `moe_group_loop`): the MoE part of
        the software vintage, set by the same `vintage_years`."""
        paid = where(self.released_before(GROUPED_KERNEL_RELEASE), 1.0, self.moe_group_loop)
        return paid * self.moe_legacy_group_s

    def timed_overhead_s(self, step_time_s: Number) -> Number:
        """Time in an MLPerf timed region outside the steps and evaluations of a run with this step time (the
        release's warm-up inside it: `timed_warmup_s` before WARM_START_RELEASE)."""
        warmup = where(self.released_before(WARM_START_RELEASE), self.timed_warmup_s, 0.0)
        return self.run_overhead_s + self.first_steps * step_time_s + warmup

    def gemm(self, fmt: str) -> float:
        return {"bf16": self.gemm_bf16, "fp8": self.gemm_fp8, "fp4": self.gemm_fp4}[fmt]


_HOPPER = Efficiency(
    gemm_bf16=0.72,
    gemm_fp8=0.62,
    gemm_fp4=0.0,
    attention_fwd=0.55,
    attention_bwd=0.40,
    memory=0.80,
    kernel_overhead_us=4.0,
    scaleup=0.80,
    scaleout=0.90,
    overlap_tp=0.60,
    overlap_dp=0.90,
    overlap_pp=0.80,
    step_overhead_s=0.05,
)
_BLACKWELL = replace(_HOPPER, gemm_bf16=0.72, gemm_fp8=0.66, gemm_fp4=0.58, attention_fwd=0.60, attention_bwd=0.45)
_CDNA = replace(
    _HOPPER,
    gemm_bf16=0.55,
    gemm_fp8=0.48,
    gemm_fp4=0.42,
    attention_fwd=0.40,
    attention_bwd=0.28,
    memory=0.70,
    scaleup=0.70,
    overlap_tp=0.40,
)

ATTENTION_RELEASES: dict[str, tuple[tuple[str | None, tuple[float, ...]], ...]] = {
    "hopper": (("2024-12", (0.974, 149.0, 0.620, 725.0, 1.005)), ("2026-02", (1.080, 941.0, 0.751, 1337.0, 0.986))),
    "blackwell": (
        ("2025-06", (1.576, 2888.0, 0.914, 2506.0, 0.869)),
        ("2025-09", (1.537, 1565.0, 0.890, 2055.0, 0.862)),
    ),
    "blackwell-ultra": ((None, (1.282, 1522.0, 0.755, 2270.0, 0.890)),),
    "cdna4": ((None, (0.555, 1416.0, 0.521, 2199.0, 1.0)),),
}
"""Flash attention where kernel rows measure the family (perfmodel/data/kernels_attention.csv: cuDNN on H200, B200,
GB200, GB300; AITER on MI355X), fitted by release by physics.attention_kernels.fit_releases and rounded
(tests/test_attention_kernels.py holds the two equal): per family, oldest first, (the NGC release from which the
kernels ran, None where one release covers all; (share, half tokens) of the BF16 forward and backward, and the FP8
forward's ratio). Hopper's older release is cuDNN's in the NGC 24.12 container (cudnn-frontend's benchmark_results.csv,
the file of the FlashAttention-2 rows, 16 heads of 128): at 16k tokens its causal backward 489 TFLOP/s against cuDNN
9.19.1's 579 and its forward 650 against 673, so a Hopper row of a release before 2026-02 (NeMo 24.03's long-sequence
table, Llama 2 7B at 16k tokens without CP: its attention 14% slower) runs those kernels, the oldest measured."""
RING_FLASH_ATTN_2: dict[str, tuple[float, ...]] = {"hopper": (0.523, 674.0, 0.400, 1469.0, 1.0)}
"""FlashAttention-2's ATTENTION_FIELDS where kernel rows measure it (H200: physics.attention_kernels.fit_flash_attn_2,
rounded; the test holds the two equal): what a context-parallel ring step ran up to FLASH_ATTN_2_UNTIL."""
NON_CAUSAL_ATTENTION: dict[str, tuple[float, ...]] = {
    "hopper": (1.069, 231.0, 0.738, 396.0, 0.978),
    "cdna4": (0.527, 556.0, 0.531, 1218.0, 1.0),
}
"""Non-causal attention's ATTENTION_FIELDS where kernel rows measure it at the newest release (H200's cuDNN 9.19 and
MI355X's AITER, the files and runs of the causal rows: physics.attention_kernels.fit_non_causal, rounded; the test
holds the two equal): the kernel of a context-parallel ring's off-diagonal steps (workload.Op.diagonal), which has no
diagonal tiles and no causal load imbalance. Other families price those steps at the causal kernel's rates."""
RING_FLASH_ATTN_2_NON_CAUSAL: dict[str, tuple[float, ...]] = {"hopper": (0.545, 0.0, 0.398, 561.0, 1.0)}
"""FlashAttention-2's non-causal ATTENTION_FIELDS (H200, the causal rows' file: attention_kernels.fit_non_causal,
rounded): a ring's off-diagonal steps up to FLASH_ATTN_2_UNTIL."""
ATTENTION_FIELDS = ("attention_fwd", "attention_fwd_half_tokens", "attention_bwd", "attention_bwd_half_tokens",
                    "attention_fp8_ratio")  # fmt: skip
"""The efficiency fields a kernel fit sets, in ATTENTION_RELEASES's order."""
_SHARES = (True, False, True, False, True)
"""Which of ATTENTION_FIELDS are shares (an older release's scales the priced one) rather than token counts."""


FP8_ATTENTION_BACKWARD: dict[str, tuple[float, float]] = {
    "blackwell": (0.196, 0.238),
    "blackwell-ultra": (0.160, 0.213),
}
"""(attention_fp8_bwd_ps, attention_mxfp8_bwd_ps) by family where FP8 backward kernels measure it and one term per
score element prices them (perfmodel/data/kernels_attention.csv: cuDNN on B200, GB200, GB300, head dims 64 and 128;
physics.attention_kernels.fit_fp8_backward, rounded; the test holds the two equal). Elsewhere an FP8 backward is
priced at BF16's rate, Hopper included, where it reads 17% fast (H200's cuDNN 9.19 FP8 backward is slower than its
BF16 one): fitted alike, its causal rows want 0.89 ps per element and its non-causal ones 0.66, and either, priced
in the MLPerf LoRA rows' FP8 attention on H100, moves the refitted long-sequence protocol a point worse (7.4% to
8.5%), a cost that other fitted parameters absorb today and that wants its own look."""


def _measured_attention(eff: Efficiency, family: str) -> Efficiency:
    _, newest = ATTENTION_RELEASES[family][-1]
    fp8, mxfp8 = FP8_ATTENTION_BACKWARD.get(family, (0.0, 0.0))
    fields = dict(zip(ATTENTION_FIELDS, newest, strict=True))
    return replace(eff, **fields, attention_fp8_bwd_ps=fp8, attention_mxfp8_bwd_ps=mxfp8)


GEMM_KERNELS: dict[str, tuple[float, float | None, float, float]] = {
    "hopper": (0.806, None, 0.073, 181.1),
    "blackwell": (0.786, 0.827, 0.111, 202.3),
    "cdna3": (0.631, None, 0.090, 191.4),
    "cdna4": (0.615, None, 0.090, 191.4),
}
"""Dense GEMMs where kernel rows measure the family (perfmodel/data/kernels_gemm_shapes.csv), fitted by
physics.gemm_kernels.fit and rounded (tests/test_gemm_kernels.py holds the two equal): (BF16 share of the BF16 peak
at the sustained clock, the FP8 share that times compute.format_share prices the FP8 rows, or None where fewer than
GEMM_MIN_ROWS rows measure it, tiles per SM at half speed, K at half speed). Kernel rows run at free clocks, a
training step at its power-capped sustained clock: the training fit scales these shares by one shared factor
(parameters `gemm_sustained`), not per family. FP8 and FP4 are priced at BF16's share times format_share
(TransformerEngine's profiling of one layer in each format, its scaling included: kernels_gemm.csv), so the FP8
share is a check: OpenXLA's raw FP8 rows run 3% faster over BF16 than that ratio says (0.762 against 0.740). Priced
from them instead, GB200's FP8 rows ran fast (held out 2.6% fast against 0.0%) and NVFP4 over FP8 came out 5% low
(tests/test_seed_ratios.py): two formats on two bases."""
GEMM_MIN_ROWS = 10
"""Fewest rows of a family and format that fit its share: fewer are a check, not a fit (Hopper's two FP8 rows)."""
GEMM_SILICON = {"blackwell-ultra": "blackwell", "ampere": "hopper"}
"""A family without GEMM rows enough to fit, and the measured family whose kernels price it. Blackwell Ultra runs
Blackwell's BF16 and FP8 tensor cores (hardware_specs: every Blackwell part names GB300's silicon as its power
reference): Blackwell's share and shape, at B300's and GB300's own peaks and clocks (B300's: its measured best GEMMs'
over B200's, inputs.kernels.best_shape_ratios), price TransformerEngine's 5B layer on B300 at 1,564 TFLOP/s against
the measured 1,447-1,504 (kernels_gemm.csv), 4-8% fast (1,669 with B300's clock by the power assumption). Ampere
is not Hopper's silicon: it takes Hopper's share and shape at A100's measured best-GEMM share over H100's (one tool's
MAMF rows, compute.silicon_ratios: 1.08x, where the power assumption said 1.17x; compute.gemm_share),
and a generation factor fitted to its rows (GEMM_OTHER_SILICON). A BF16 share of its own, fitted to Ampere's rows
alone, was the only vendor share left with rows: holding A100 80GB's out left it to A100 40GB's few rows
(leave-one-group-out 11.0% on A100 80GB against 6.8%)."""
GEMM_OTHER_SILICON = frozenset({"ampere"})
"""GEMM_SILICON's families on another generation's tensor cores: their measured best-GEMM ratio carries the kernels'
share to them, and their rows fit a generation factor on it (parameters `gemm_generation`)."""
KERNEL_GEMM = frozenset(GEMM_KERNELS) | frozenset(GEMM_SILICON)
"""Families whose GEMM shares come from measured kernels (their own, or GEMM_SILICON's), not from a fit to training
rows."""


def _measured_gemm(eff: Efficiency, family: str) -> Efficiency:
    """`eff` with the GEMM share and shape its family's kernels (or its GEMM_SILICON's) measure, every format at
    BF16's share: a ratio, compute.format_share, prices FP8 and FP4 on it (GEMM_KERNELS' FP8 share is a check)."""
    bf16, _, tiles_half, depth_half = GEMM_KERNELS[GEMM_SILICON.get(family, family)]
    return replace(
        eff, gemm_bf16=bf16, gemm_fp8=bf16, gemm_fp4=bf16, gemm_tiles_half=tiles_half, gemm_depth_half=depth_half
    )


RELEASED_KEPT = 256
"""Efficiencies whose released attention fields `released_attention` keeps: a prediction's few, a fit's many."""
_RELEASED: Bounded[tuple[object, ...], tuple[Number, ...]] = Bounded(RELEASED_KEPT)


def released_attention(eff: Efficiency, family: str, ring: Number = 0.0, causal: bool = True) -> tuple[Number, ...]:
    """`attention_at_release`, worked out once per efficiency of plain numbers (every batch of operations asks)."""
    try:
        key = (eff, family, ring, causal)
        found = _RELEASED.get(key)
    except TypeError:  # array fields (a fit's variants): worked out each time
        return attention_at_release(eff, family, ring, causal)
    return found if found is not None else _RELEASED.put(key, attention_at_release(eff, family, ring, causal))


def attention_at_release(eff: Efficiency, family: str, ring: Number = 0.0, causal: bool = True) -> tuple[Number, ...]:
    """ATTENTION_FIELDS at the priced release (`vintage_years`): the family's kernels of the newest release measured
    at or before it, held at the oldest measured before that (never extrapolated). The efficiency's own values are
    the newest release's (with any fitted factor); an older release scales their shares by its kernels' over the
    newest's and takes its half-speed lengths. A row or prediction is dated by its NeMo/NGC container month, taken to
    carry the cuDNN of that month's NGC PyTorch container (the kernel rows name theirs; an assumption, labelled). On
    Blackwell, cuDNN 9.10.2 (NGC 25.06) ran B200's causal forward at 1-8k tokens 11-62% slower than 9.13.1 (25.09),
    and MLPerf v5.0's NeMo 25.04 rows are priced with it. `ring` is 1 for a context-parallel ring step, which ran
    FlashAttention-2 up to FLASH_ATTN_2_UNTIL where kernels measure it (RING_FLASH_ATTN_2). `causal` False: the
    non-causal kernel of the same release and library, each field scaled by its measured non-causal over causal
    value (NON_CAUSAL_ATTENTION, RING_FLASH_ATTN_2_NON_CAUSAL) where kernels measure both."""
    values: tuple[Number, ...] = tuple(getattr(eff, name) for name in ATTENTION_FIELDS)
    releases = ATTENTION_RELEASES.get(family, ())
    non_causal = not causal and family in NON_CAUSAL_ATTENTION
    if len(releases) < 2 and family not in RING_FLASH_ATTN_2 and not non_causal:
        return values
    _, newest = releases[-1]
    priced = values
    for (_, older), (later, _) in reversed(list(pairwise(releases))):  # newest first: the oldest test decides last
        priced = _older(values, newest, older, priced, eff.released_before(str(later)))
    ring_before: Number = False
    if family in RING_FLASH_ATTN_2:  # a ring step of a release before cuDNN's kernel ran in the ring
        ring_before = where(ring > 0.5, eff.released_before(CUDNN_RING_FROM), False)
        priced = _older(values, newest, RING_FLASH_ATTN_2[family], priced, ring_before)
    if non_causal:
        scale: tuple[Number, ...] = _ratios(NON_CAUSAL_ATTENTION[family], newest)
        if family in RING_FLASH_ATTN_2_NON_CAUSAL:
            flash = _ratios(RING_FLASH_ATTN_2_NON_CAUSAL[family], RING_FLASH_ATTN_2[family])
            scale = tuple(where(ring_before, f, c) for f, c in zip(flash, scale, strict=True))
        priced = tuple(p * r for p, r in zip(priced, scale, strict=True))
    return tuple(where(eff.kernel_releases > 0.5, p, v) for p, v in zip(priced, values, strict=True))


def attention_unaged(eff: Efficiency, family: str, ring: Number = 0.0) -> Number:
    """1 / `vintage_factor` where the priced release's attention runs a kernel measured as that release ran it, else
    1: the step ages every part by the software trend (physics.step), and a kernel priced at its own release's
    measured speed (`attention_at_release`) must not be aged a second time. That is a ring step up to
    FLASH_ATTN_2_UNTIL (the flash-attn package's FlashAttention-2, priced at its measured rate: RING_FLASH_ATTN_2) and
    the family's fused kernel from its oldest measured release on (ATTENTION_RELEASES; None: one for every release).
    An older release, held at the oldest measured kernel (never extrapolated), keeps the trend for the kernels it
    really ran; so does a stack that runs a kernel of its own (`kernel_releases` 0) and a family no kernel rows
    measure (its attention shares are fitted to the training rows, trend included)."""
    releases = ATTENTION_RELEASES.get(family)
    if not releases:
        return 1.0
    oldest = releases[0][0]
    measured: Number = 1.0 if oldest is None else where(eff.released_before(oldest), 0.0, 1.0)
    if family in RING_FLASH_ATTN_2:
        measured = where((ring > 0.5) & eff.released_before(CUDNN_RING_FROM), 1.0, measured)
    return where((eff.kernel_releases > 0.5) & (measured > 0.5), 1 / eff.vintage_factor, 1.0)


def _ratios(non_causal: tuple[float, ...], causal: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(n / c for n, c in zip(non_causal, causal, strict=True))


def _older(
    values: tuple[Number, ...],
    newest: tuple[float, ...],
    older: tuple[float, ...],
    priced: tuple[Number, ...],
    before: Number,
) -> tuple[Number, ...]:
    """`priced`, or where `before` holds an older kernel's fields: its shares scaled from the newest's to the priced
    values (which carry any fitted factor), its half-speed lengths as measured."""
    now = tuple(v * o / n if share else o for v, o, n, share in zip(values, older, newest, _SHARES, strict=True))
    return tuple(where(before, o, p) for o, p in zip(now, priced, strict=True))


KERNEL_ATTENTION = frozenset(ATTENTION_RELEASES)
"""Families whose attention efficiencies come from measured kernels, not from a fit to training rows."""
AMPERE_FA2 = (0.91, 0.64)
"""FlashAttention-2's forward and backward shares on A100 (no kernel rows measure Ampere), in the model's convention
(compute.attention_core_s: MMA plus exponential time over the kernel's time): its forward at 73% of the BF16 MMA peak,
the top of Dao 2023's 50-73% (arXiv 2307.08691, abstract), x (1 + 312 TFLOP/s / (2.44 T exp/s x 512 MMA FLOPs per
exponential)) = 1.25; its backward at 0.8x the forward's TFLOP/s (cuDNN's measured 0.76-0.86 on Hopper and Blackwell,
../shared/data/kernels/README.md), 58% of peak, x 1.10 (2.5x the MMA FLOPs per exponential). The former 0.58 and 0.45
predate the exponentials' term (a fraction of peak), and Ampere's fitted generation factor raised them 1.43x once
llm-foundry's attention code had a factor of its own (parameters.ATTENTION_IMPL); it now fits 0.98."""
DEFAULTS: dict[str, Efficiency] = {
    "ampere": _measured_gemm(
        replace(_HOPPER, gemm_bf16=0.80, attention_fwd=AMPERE_FA2[0], attention_bwd=AMPERE_FA2[1]), "ampere"
    ),
    "hopper": _measured_gemm(_measured_attention(replace(_HOPPER, moe_group_loop=1.0), "hopper"), "hopper"),
    "blackwell": _measured_gemm(_measured_attention(_BLACKWELL, "blackwell"), "blackwell"),
    "blackwell-ultra": _measured_gemm(_measured_attention(_BLACKWELL, "blackwell-ultra"), "blackwell-ultra"),
    "cdna3": _measured_gemm(_CDNA, "cdna3"),
    "cdna4": _measured_gemm(_measured_attention(_CDNA, "cdna4"), "cdna4"),
}
SCALEUP_LINKS = {
    "ampere": "NVLink 3",
    "hopper": "NVLink 4",
    "blackwell": "NVLink 5",
    "blackwell-ultra": "NVLink 5",
    "cdna3": "xGMI 3",
    "cdna4": "xGMI 4",
}
"""Each family's scale-up link generation (Blackwell and Blackwell Ultra share NVLink 5 and its switches)."""
KERNEL_SCALEUP = {"NVLink 3": 0.754, "NVLink 4": 0.831, "NVLink 5": 0.729, "xGMI 3": 0.694, "xGMI 4": 0.831}
"""Scale-up bus efficiency per link generation, fitted to measured collectives (perfmodel/data/kernels_collectives.csv:
physics.collective_kernels.fit, rounded; tests/test_collective_kernels.py holds the two equal), in DEFAULTS. Before:
0.80 on NVIDIA and 0.70 on AMD, estimates."""
DEFAULTS = {family: replace(eff, scaleup=KERNEL_SCALEUP[SCALEUP_LINKS[family]]) for family, eff in DEFAULTS.items()}
KERNEL_MEMORY = {"hopper": 0.810, "blackwell": 0.745, "blackwell-ultra": 0.758, "cdna4": 0.459}
"""Share of the datasheet HBM bandwidth that large, well-written bandwidth-bound kernels reach, per family, fitted to
measured kernels (perfmodel/data/kernels_memory.csv: physics.memory_kernels.fit, rounded; tests/test_memory_kernels.py
holds the two equal): cuDNN's RMSNorm on H200, GB200 and GB300, CUB's add and torchao's MXFP8 casts on B200, torchao's
blockwise FP8 casts on H100, HipKittens' fused LayerNorm and RoPE on MI355X (its minimum traffic: a lower bound on
the bytes, so perhaps a low share). Priced only as a cap on the linear-recurrence scans, which no fitted row runs
(workload.Op.measured_bandwidth); elsewhere DEFAULTS keep 0.80 (NVIDIA) and 0.70 (AMD), and the training fit its
shared share times a generation factor per family, which put Blackwell Ultra at 1.04x its datasheet bandwidth (0.686 x
1.52; 1.13x before NVFP4's Hadamard pass was priced once) until held at 1x (parameters.MEMORY_SHARE_MAX), far above
these: a cost the model over-prices on GB300/B300 rows, absorbed there (docs/model.md, 'Memory-bound kernels'). Wiring
these in, with the fit's factor bounded by them, moves the precision and stack protocols 0.8-0.9 point worse until
that cost is found."""


def years_between(older: str, newer: str) -> float:
    """Years from one release month (YYYY-MM) to another."""
    (y0, m0), (y1, m1) = (map(int, month.split("-")) for month in (older, newer))
    return (12 * (y1 - y0) + m1 - m0) / 12


@cache
def release_age_years(release: str) -> float:
    """Years a release (YYYY-MM) is older than REFERENCE_VINTAGE."""
    return years_between(release, REFERENCE_VINTAGE)
