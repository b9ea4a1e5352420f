"""MLPerf Training LLM benchmarks: what each one trains, how it is evaluated, and how its score is formed.

Definitions follow the MLCommons reference implementations and the training rules of each round, as summarised in
../shared/data/mlperf_benchmarks.md. The samples needed to converge at a global batch size come from the reference
convergence points (RCPs) shipped in the `mlperf-logging` package, read with its RCP checker's rules (olympic mean of
the reference runs, pruned, interpolated between batch sizes exactly as the checker does), so that a predicted
score is what the result summarizer would report: the timed region (training steps plus the evaluations up to the
one that reaches the target) at the RCP mean convergence, which is what normalisation brings faster runs to.
"""

from __future__ import annotations

import importlib.util
import json
import math
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, Literal

from perfmodel.errors import PerfmodelError, did_you_mean, shown
from perfmodel.inputs.precision import Recipe


@dataclass(frozen=True)
class Evaluation:
    """Evaluation cadence of a round: every `interval` samples (to whole steps, see `whole_steps`), the first
    floor(skip_per_sample * GBS + skip_fixed) evaluations skipped, each a forward pass over `samples`."""

    interval: int
    samples: int
    whole_steps: Literal["up", "down"] | None = None
    """How the interval becomes whole steps: 'up' (the first step boundary at or past it), 'down' (the last one
    before it, at least one step: an `eval_interval` of floor(interval / GBS) steps), or None (not at all)."""
    skip_per_sample: float = 0.0
    skip_fixed: float = 0.0

    def interval_samples(self, gbs: int) -> float:
        if self.whole_steps is None:
            return float(self.interval)
        steps = max(1, self.interval // gbs) if self.whole_steps == "down" else math.ceil(self.interval / gbs)
        return steps * gbs

    def skipped(self, gbs: int) -> int:
        return math.floor(self.skip_per_sample * gbs + self.skip_fixed)


@dataclass(frozen=True)
class Benchmark:
    id: str
    name: str
    """The benchmark's name in mlperf-logging and in result logs."""
    round: str
    model: str | dict[str, Any]
    """A zoo id or a scenario model table."""
    seq_len: int
    evaluation: Evaluation
    rcp_tokens: bool = False
    """GPT-3's RCPs count tokens, the others sequences."""
    lora_rank: int = 0
    max_gbs: int | None = None
    min_gbs: int | None = None
    nvfp4_hadamard: bool = True
    """Whether the benchmark's NVFP4 config keeps the random Hadamard transform on the weight-gradient inputs
    (Transformer Engine's default). NVIDIA's Llama 3.1 405B FP4 config disables it (NVTE_NVFP4_DISABLE_RHT=1,
    stack_notes.md)."""
    fp8_attention_vendors: tuple[str, ...] = ()
    """Vendors whose configs of the benchmark run Transformer Engine's FP8 dot-product attention forward and
    backward in a quantised recipe: NVIDIA's LoRA configs (FP8_DPA=1, NVTE_FP8_DPA_BWD=1; AMD's set FP8_DPA=0;
    the 405B configs keep BF16 attention, NVTE_DPA_FP8_RECIPE="F16": stack_notes.md)."""
    graph_captured_vendors: tuple[str, ...] = ()
    """Vendors whose configs of the benchmark capture the whole training iteration in one CUDA graph, so that no
    per-step host work is left (precision.Recipe.graph_captured), from efficiency.WARM_START_RELEASE on: NVIDIA's
    LoRA configs (MCORE_CUDA_GRAPH=1, ON_DEVICE_CLIP_GRAD=1 in training_results_v5.0, stack_notes.md)."""

    @property
    def ruleset(self) -> str:
        return self.round.removeprefix("v") + ".0"

    def gbs_bounds(self) -> tuple[int, int]:
        """The global batches a run can be scored at: from the rules' minimum (else 1) to the largest batch with a
        reference convergence point (else the rules' maximum, if smaller). Below the RCPs the checker holds a run to
        the smallest batch's; above them it has nothing to hold it to."""
        largest = _pruned_rcps(self.name, self.ruleset)[-1][0]
        return self.min_gbs or 1, min(largest, self.max_gbs or largest)

    def samples_to_converge(self, gbs: int) -> float:
        """Mean samples to reach the target at this global batch, from the round's reference convergence points."""
        if self.max_gbs is not None and gbs > self.max_gbs:
            raise PerfmodelError(f"{self.id}@{self.round}: GBS {gbs} is above the rules' maximum of {self.max_gbs}")
        if self.min_gbs is not None and gbs < self.min_gbs:
            raise PerfmodelError(f"{self.id}@{self.round}: GBS {gbs} is below the rules' minimum of {self.min_gbs}")
        mean = _rcp_mean(self.name, self.ruleset, gbs)
        if mean is None:
            low, high = self.gbs_bounds()
            raise PerfmodelError(
                f"{self.id}@{self.round}: GBS {gbs} is above its largest batch with a reference convergence point, "
                f"{high} (nothing to score the run against); use a GBS from {low} to {high}"
            )
        return mean / self.seq_len if self.rcp_tokens else mean


@dataclass(frozen=True)
class Score:
    """A predicted MLPerf result."""

    samples: float
    steps: float
    evaluations: float
    train_s: float
    eval_s: float
    overhead_s: float = 0.0

    @property
    def time_s(self) -> float:
        return self.train_s + self.eval_s + self.overhead_s

    @property
    def time_to_train_min(self) -> float:
        return self.time_s / 60


def score(
    benchmark: Benchmark,
    gbs: int,
    step_time_s: float,
    eval_batch_s: float,
    samples: float | None = None,
    evaluations: float | None = None,
    overhead_s: float = 0.0,
) -> Score:
    """The timed region at the RCP mean convergence: training steps plus the evaluations that are not skipped.

    `eval_batch_s` is the forward pass over one global batch; an evaluation costs eval_samples / GBS of them.
    `samples` and `evaluations` replace the RCP mean and the cadence for one logged run; `overhead_s` is the timed
    time outside steps and evaluations (efficiency.run_overhead_s).
    """
    samples = benchmark.samples_to_converge(gbs) if samples is None else samples
    ev = benchmark.evaluation
    if evaluations is None:
        evaluations = max(1.0, samples / ev.interval_samples(gbs) - ev.skipped(gbs))
    steps = samples / gbs
    eval_s = evaluations * ev.samples / gbs * eval_batch_s
    return Score(samples, steps, evaluations, steps * step_time_s, eval_s, overhead_s)


@cache
def _pruned_rcps(name: str, ruleset: str) -> tuple[tuple[int, float], ...]:
    """(batch size, RCP mean) of a benchmark's reference convergence points after the checker's pruning, by batch.

    Read from the RCP files that ship in mlperf-logging, with its rules (rcp_checker.RCP_Checker: olympic mean
    dropping the fastest and slowest run; points below the fastest-converging batch dropped, then every point slower
    than the interpolation of its neighbours). Importing the checker itself costs ~3 s of scipy.stats for a t-test
    perfmodel does not use; tests/test_mlperf.py checks these means equal the checker's.
    """
    spec = importlib.util.find_spec("mlperf_logging")
    assert spec is not None and spec.origin is not None, "mlperf-logging is a dependency"
    path = Path(spec.origin).parent / "rcp_checker" / f"training_{ruleset}" / f"rcps_{name}.json"
    points = []
    for record in json.loads(path.read_text(encoding="utf-8")).values():
        unit = "samples to converge" if record["Benchmark"] in ("llama2_70b_lora", "flux1") else "Epochs to converge"
        runs = sorted(record[unit])
        points.append((int(record["BS"]), numpy_mean(runs[1:-1])))  # numpy's summation order, as the checker
    points.sort()
    fastest = min(points, key=lambda point: point[1])
    kept = [point for point in points if point[0] >= fastest[0]]
    i = 1
    while i < len(kept) - 1:
        if kept[i][1] > _interpolated(kept[i][0], kept[i - 1], kept[i + 1]):
            del kept[i]
            i -= 1
        i += 1
    return tuple(kept)


def numpy_mean(values: list[float]) -> float:
    """`float(numpy.mean(values))` bit for bit, without importing numpy (~130 ms of a prediction, for a dozen
    numbers): numpy's pairwise sum (eight running sums over blocks of up to 128 values, halves beyond), divided once.
    tests/test_mlperf.py holds it equal to numpy's."""
    return _pairwise_sum([float(v) for v in values]) / len(values)


def _pairwise_sum(values: list[float]) -> float:
    """numpy's pairwise_sum of float64 (numpy/_core/src/umath/loops_utils.h.src), in its order of additions."""
    n = len(values)
    if n < 8:
        total = -0.0
        for value in values:
            total += value
        return total
    if n <= PAIRWISE_BLOCK:
        sums = values[:8]
        whole = n - n % 8
        for start in range(8, whole, 8):
            for j in range(8):
                sums[j] += values[start + j]
        total = ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]))
        for value in values[whole:]:
            total += value
        return total
    half = n // 2 - (n // 2) % 8
    return _pairwise_sum(values[:half]) + _pairwise_sum(values[half:])


PAIRWISE_BLOCK = 128
"""numpy's PW_BLOCKSIZE: a longer run is summed as two halves."""


def _interpolated(gbs: int, low: tuple[int, float], high: tuple[int, float]) -> float:
    """Linear interpolation of the mean between two points, in numpy.interp's order of operations (the checker's)."""
    slope = (high[1] - low[1]) / (high[0] - low[0])
    return slope * (gbs - low[0]) + low[1]


@cache
def _rcp_mean(name: str, ruleset: str, gbs: int) -> float | None:
    """The RCP mean the checker holds a run of this batch size to: the batch's own RCP, an interpolation between
    its neighbours, or, below every RCP, the smallest batch's (mlperf_logging rcp_checker.check_directory)."""
    points = _pruned_rcps(name, ruleset)
    means = dict(points)
    if gbs in means:
        return means[gbs]
    low = max((p for p in points if p[0] < gbs), default=None)
    high = min((p for p in points if p[0] > gbs), default=None)
    if low is not None and high is not None:
        return _interpolated(gbs, low, high)
    return points[0][1] if high is not None else None


_LLAMA_405B_MLPERF = {"base": "llama3.1-405b", "id": "llama3.1-405b-mlperf", "vocab": 32000}
# GPT-3's validation set is 24,567 C4 documents (mlperf_benchmarks.md), not 24,567 sequences: Megatron concatenates
# documents and cuts 2048-token sequences, and the result logs count eval_samples in tokens, like train_samples:
# 11,590,004 tokens (NVIDIA's v4.0/v4.1 GPT-3 result_*.txt; recalled from the logs, which ../shared/data does not
# carry), 472 tokens per document. Cross-check: C4.en holds 156 B tokens in 365 M documents (Dodge et al. 2021,
# "Documenting Large Webtext Corpora", Table 1), 427 per document, 10% fewer. An evaluation is then 5,660 sequences,
# a quarter of what 24,567 sequences priced (761 s of the 56.9 min Eos 512 x H100 v4.1 prediction).
GPT3_EVAL_TOKENS = 11_590_004
_GPT3_EVAL = Evaluation(interval=24576, samples=math.ceil(GPT3_EVAL_TOKENS / 2048))
_LORA_EVAL = Evaluation(interval=384, samples=173, whole_steps="up", skip_per_sample=0.125, skip_fixed=2)
_LLAMA_405B_EVAL_V50 = Evaluation(interval=46080, samples=5760)
_LLAMA_405B_EVAL_V51 = Evaluation(interval=18432, samples=5760, whole_steps="up", skip_per_sample=0.0026, skip_fixed=12)
_LLAMA_8B_EVAL = Evaluation(interval=12288, samples=1024, whole_steps="up")
# v6.0 MoE benchmarks (mlperf-logging 4.1.68, compliance_checker/training_6.0.0/closed_deepseekv3_671b.yaml and
# closed_gpt_oss_20b.yaml): DeepSeek-V3 671B at sequence 4096, GBS >= 15360, 1024 evaluation samples, target log
# perplexity 3.6; GPT-OSS-20B at sequence 8192, 1024 evaluation samples, target 3.34. The rules files do not state
# the evaluation cadence. DeepSeek-V3's is read off its RCPs (rcp_checker/training_6.0.0): the converged sample
# counts are whole steps at every reference batch (721,920 = 47 x 15,360; 770,048 = 47 x 16,384), so an evaluation
# after every step (inferred; no recipe of megatron-bridge 0.6.2 is an MLPerf DeepSeek-V3 config).
_DEEPSEEK_V3_EVAL = Evaluation(interval=1, samples=1024, whole_steps="up")
# GPT-OSS-20B's cadence is read off the GPT-OSS-20B performance recipes of megatron-bridge 0.6.2 (PyPI sdist,
# 2026-09-18; the recipes as of NeMo 26.08), perf_recipes/gpt_oss/<gpu>/gpt_oss.py, which carry the MLPerf configuration
# (eval_interval x GBS: 12,288 samples in whole steps, eval_iters x GBS >= 1,024, the rules' AdamW eps 1e-5 and weight
# decay 0.1, vocab 128,256): eval_interval 384 at GBS 32 (b300 gpt_oss_20b_pretrain_64gpu_b300_nvfp4_config), 192 at GBS
# 64 (gb300 gpt_oss_20b_pretrain_512gpu_gb300_fp8mx_config) and 341 = floor(12,288 / 36) at GBS 36 (gb300
# gpt_oss_20b_pretrain_72gpu_gb300_nvfp4_config): every 12,288 samples rounded down to whole steps. The RCPs agree:
# converged counts are multiples of 12,288 at every reference batch (184,320 = 15 x 12,288 at GBS 16).
_GPT_OSS_20B_EVAL = Evaluation(interval=12288, samples=1024, whole_steps="down")
# The MLPerf GPT-OSS-20B is the zoo's shapes with the Llama 3 tokenizer's 128,256-token vocabulary and the flex
# (HybridEP) dispatcher: megatron-bridge 0.6.2 perf_recipes/gpt_oss/common.py, _apply_gpt_oss_20b_common_configs
# (`cfg.model.vocab_size = 128256`, `moe_token_dispatcher_type = "flex"`, `moe_flex_dispatcher_backend =
# "hybridep"`), applied by every GPT-OSS-20B recipe. It also routes as trained (`moe_router_force_load_balancing =
# False`, `moe_aux_loss_coeff = 0.0`); no source gives how much busier the busiest expert rank is then (the recipes'
# moe_expert_rank_capacity_factor of 5-7 sizes a static receive buffer, a bound, not a mean), so the scenario's
# moe_imbalance stays 1.0 and the prediction is optimistic by that unpriced imbalance.
_GPT_OSS_20B_MLPERF = {"base": "gpt-oss-20b", "id": "gpt-oss-20b-mlperf", "vocab": 128256, "dispatcher": "flex"}

BENCHMARKS: dict[str, dict[str, Benchmark]] = {}
for _bench in (
    *(Benchmark("mlperf-gpt3", "gpt3", r, "gpt3-175b", 2048, _GPT3_EVAL, rcp_tokens=True) for r in ("v4.0", "v4.1")),
    *(
        Benchmark(
            "mlperf-llama2-70b-lora",
            "llama2_70b_lora",
            r,
            "llama2-70b",
            8192,
            _LORA_EVAL,
            lora_rank=16,
            fp8_attention_vendors=("NVIDIA",),
            graph_captured_vendors=("NVIDIA",),
        )
        for r in ("v4.0", "v4.1", "v5.0", "v5.1", "v6.0")
    ),
    Benchmark(
        "mlperf-llama31-405b", "llama31_405b", "v5.0", _LLAMA_405B_MLPERF, 8192, _LLAMA_405B_EVAL_V50, max_gbs=9216
    ),
    *(
        Benchmark(
            "mlperf-llama31-405b",
            "llama31_405b",
            r,
            _LLAMA_405B_MLPERF,
            8192,
            _LLAMA_405B_EVAL_V51,
            nvfp4_hadamard=False,
        )
        for r in ("v5.1", "v6.0")
    ),
    *(Benchmark("mlperf-llama31-8b", "llama31_8b", r, "llama3.1-8b", 8192, _LLAMA_8B_EVAL) for r in ("v5.1", "v6.0")),
    Benchmark("mlperf-deepseek-v3", "deepseekv3_671b", "v6.0", "deepseek-v3", 4096, _DEEPSEEK_V3_EVAL, min_gbs=15360),
    Benchmark("mlperf-gpt-oss-20b", "gpt_oss_20b", "v6.0", _GPT_OSS_20B_MLPERF, 8192, _GPT_OSS_20B_EVAL),
):
    BENCHMARKS.setdefault(_bench.id, {})[_bench.round] = _bench


@cache
def benchmark_recipe(
    recipe: Recipe,
    nvfp4_hadamard: bool = True,
    fp8_attention: bool = False,
    graph_captured: bool = False,
    fused_lora: bool = False,
) -> Recipe:
    """The precision recipe as the MLPerf reference configurations run it: per-tensor FP8 with delayed scaling (the
    scale from an amax history: NVIDIA's configs set FP8_AMAX_HISTORY / FP8_AMAX_ALGO in every round, and their v5.1
    NVFP4 LoRA config heals to `HEALING_PRECISION=FP8_DS`, stack_notes.md), so no cast runs a separate amax pass,
    whatever the release (efficiency.CURRENT_SCALING_RELEASE dates Megatron-Bridge's switch, not MLPerf's); NVFP4
    without the Hadamard transform where the benchmark's config disables it (`Benchmark.nvfp4_hadamard`); with FP8
    attention where the config sets it (`Benchmark.fp8_attention_vendors`); the whole iteration in one CUDA graph
    where the config captures it (`Benchmark.graph_captured_vendors`); LoRA adapters fused into their layers in the
    LoRA benchmark (`fused_lora`: its 138 rows, H100's 42 at a mean error of -0.6% without the adapters' own passes
    and +3.3% with them, leave no room for an unfused adapter's six passes over the layer's activations; read off
    the rows, an assumption, labelled). Cached: one object per recipe and setting, so contexts built from it are
    shared."""
    if recipe.delayed_scaling_capable:
        recipe = replace(recipe, amax_passes=0)
    if not nvfp4_hadamard and recipe.hadamard_wgrad:
        recipe = replace(recipe, hadamard_wgrad=False)
    if graph_captured:
        recipe = replace(recipe, graph_captured=True)
    if fused_lora:
        recipe = replace(recipe, fused_lora=True)
    return replace(recipe, attention_format="fp8") if fp8_attention and recipe.quantised else recipe


def get_benchmark(spec: str) -> Benchmark:
    """A benchmark id with an optional round suffix: `mlperf-llama31-405b` (latest rules) or `...@v5.0`."""
    bench_id, _, round_name = spec.partition("@")
    if bench_id not in BENCHMARKS:
        hint = did_you_mean(bench_id, BENCHMARKS)
        raise PerfmodelError(f"unknown benchmark '{shown(bench_id)}'{hint}; valid: {', '.join(BENCHMARKS)}")
    rounds = BENCHMARKS[bench_id]
    if not round_name:
        return rounds[max(rounds, key=lambda r: tuple(int(x) for x in r[1:].split(".")))]
    if round_name not in rounds:
        hint = did_you_mean(round_name, rounds)  # '5.0' for 'v5.0'
        raise PerfmodelError(f"{bench_id} has no round '{shown(round_name)}'{hint}; valid: {', '.join(rounds)}")
    return rounds[round_name]
