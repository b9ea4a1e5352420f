"""The real-world losses of a training run and their sum: what a whole run spends beyond its steady steps.

The failure-free run (planning/training.Run) is tokens at the steady step time; goodput (planning/goodput.py) adds
interruptions and checkpoint writes. Each loss here is a named mechanism with its source, priced in GPU-hours per
prediction (so that the phases of a campaign sum them):

- failures: lost work since the last checkpoint, restarts and checkpoint reads (the goodput model's, less its
  checkpoint writes);
- checkpoints: the goodput model's synchronous checkpoint writes (reported apart, counted once);
- stragglers: lock-step ranks waiting for slow ones over a whole run: slow hosts until they are found, job-side
  imbalance, thermal clock drift. The step model's own straggler wait (Efficiency.straggler_cv) is the per-step jitter
  of the short benchmark runs it is fitted on; this is what a run of weeks adds to it. ByteDance measured 10.4% of
  the GPU-hours of its >=128-GPU jobs wasted to stragglers (Lin et al., OSDI 2025, arXiv 2505.05713; campaigns.md
  section 14); MegaScale single slow hosts ~10% slower; Llama 3 a diurnal 1-2%. It grows with the ranks in lock step
  as the expected slowest of N does (sqrt(ln N), the step model's law), from its share at 128 GPUs;
- startup: each job start's initialisation (MegaScale, arXiv 2402.15627, section 3.5: Megatron-LM's initialisation
  1,047 s on 2,048 Ampere GPUs before their work), once and again at each scheduler time limit (BLOOM ~100 h, Lucie
  20 h: campaigns.md sections 10 and 12); restarts after failures pay theirs in the goodput model;
- ramp: a batch ramp at the start, its tokens priced at their smaller batches on the run's layout (an unfilled
  pipeline's bubble, smaller GEMMs): BLOOM's ~20B tokens of "very inefficient run" (campaigns.md section 12);
- evaluation: in-loop evaluations, forward passes over `eval_tokens` every `eval_every_steps` (OLMo every 1,000
  steps, BLOOM none in the job: campaigns.md item 14; no source measures a share, so none by default);
- spare: GPUs held in reserve for the whole wall time (BLOOM kept 32 of 416: campaigns.md section 12; none by
  default).

Data loading is in the step (its `other_s`). Losses that slow the steps (stragglers) are in a published steady
throughput too; the others only in wall-clock figures (fitting/whole_runs.py compares each row on its basis).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.numbers import plain
from perfmodel.inputs.scenario import Losses as LossSettings
from perfmodel.physics.algebra import Number, log2, sqrt
from perfmodel.physics.calibration import Calibration
from perfmodel.planning.goodput import Goodput, with_failures
from perfmodel.planning.training import SECONDS_PER_HOUR, Run

NAMES = ("failures", "checkpoints", "stragglers", "startup", "ramp", "evaluation", "spare")
STRAGGLER_PRIOR = 0.104
STRAGGLER_PRIOR_SOURCE = (
    "sourced prior: ByteDance's 10.4% of the GPU-hours of >=128-GPU jobs wasted to stragglers (Lin et al., OSDI "
    "2025, arXiv 2505.05713; campaigns.md section 14)"
)
STRAGGLER_REFERENCE_GPUS = 128
"""ByteDance's smallest jobs in that study: the share is stated there and scales as sqrt(ln N) from it."""
EXPECTED_FLOOR = 0.001
"""The least expected count (interruptions, writes, GPU-hours) a table line prints as a number: below, '<0.001'."""
STARTUP_S = 1047.0
STARTUP_SOURCE = (
    "sourced: Megatron-LM's initialisation, 1,047 s on 2,048 Ampere GPUs (MegaScale, Jiang et al., NSDI 2024, "
    "arXiv 2402.15627, section 3.5; campaigns.md section 14)"
)
RAMP_POINTS = 4
"""Points of a batch ramp priced (their midpoints): the step time is smooth in the batch, so four suffice."""


class Loss(NamedTuple):
    """One loss (a NamedTuple: a prediction makes four, and a tuple is built 3x faster than a frozen dataclass)."""

    name: str
    gpu_hours: float
    time_s: float
    """Wall time it adds (none for spare GPUs, which add GPU-hours beside the job's)."""
    source: str
    template: str
    """What it is made of, for the table's line (`detail`): formatted with `values` only when shown, since most
    predictions are never printed."""
    values: tuple[Any, ...] = ()

    @property
    def detail(self) -> str:
        return self.template.format(*self.values)


@dataclass(frozen=True)
class Losses:
    """A run's losses, one per name in NAMES that applies, the run with them, and what the stragglers and start-up
    were priced from (the workbook's inputs: outputs/export)."""

    items: tuple[Loss, ...]
    run: Run
    """The failure-free run they are added to."""
    straggler_share: float = STRAGGLER_PRIOR
    """The straggler share at STRAGGLER_REFERENCE_GPUS."""
    startup_s: float = STARTUP_S
    """One job start."""
    job_starts: int = 1
    """The first, and one more at each scheduler time limit."""

    @property
    def gpu_hours(self) -> float:
        return sum(loss.gpu_hours for loss in self.items)

    def with_losses(self) -> Run:
        """The run with failures and every loss."""
        return run_with_losses(self.run, self.gpu_hours, sum(loss.time_s for loss in self.items))

    def to_dict(self) -> dict[str, float]:
        return {f"{loss.name}_gpu_hours": loss.gpu_hours for loss in self.items} | {"total_gpu_hours": self.gpu_hours}


def straggler_share(settings: LossSettings, fitted: Calibration | None) -> tuple[float, str]:
    """The straggler share at STRAGGLER_REFERENCE_GPUS and where it comes from: the scenario's, the calibration's
    fit (its `losses` section, fitting/whole_runs.py), else the sourced prior."""
    if settings.straggler_share is not None:
        return settings.straggler_share, "given"
    section = fitted.provenance.get("losses", {}) if fitted is not None else {}
    value = section.get("parameters", {}).get("straggler_share")
    if value is None:
        return STRAGGLER_PRIOR, "the prior, ByteDance's 10.4% at 128 GPUs"
    return float(value), f"fitted on {len(section.get('rows', []))} published whole runs"


def straggler_scale(n_gpus: Number) -> Number:
    """The straggler share of `n_gpus` ranks in lock step over its value at STRAGGLER_REFERENCE_GPUS, as the
    expected slowest of N grows: sqrt(ln N / ln 128). Plain arithmetic: the workbook evaluates it on its cells."""
    return sqrt(log2(n_gpus) / math.log2(STRAGGLER_REFERENCE_GPUS))


def loss_gpu_hours(time_s: Number, n_gpus: Number) -> Number:
    """GPU-hours of a loss of `time_s` of the job's wall time on `n_gpus`."""
    return time_s * (n_gpus / SECONDS_PER_HOUR)


def failure_split(train_s: Number, wall_s: Number, interval_s: Number, planned_per_s: Number,
                  write_s: Number) -> tuple[Number, Number, Number]:  # fmt: skip
    """The goodput model's loss of `train_s` of training taking `wall_s`, split: (checkpoint writes, their time,
    the rest: lost work, restarts and checkpoint reads). A write every `interval_s` of training (infinite: none) and
    one before each planned interruption. Plain arithmetic: the workbook evaluates it on its cells."""
    writes = train_s / interval_s + planned_per_s * wall_s
    checkpoint_s = writes * write_s
    return writes, checkpoint_s, wall_s - train_s - checkpoint_s


def run_with_losses(run: Run, gpu_hours: Number, time_s: Number) -> Run:
    """`run` with losses of `gpu_hours` that add `time_s` to its wall time: its GPU-hours, cost and energy grow as
    its GPU-hours do (GPUs held and drawing power while they wait, an estimate, as the goodput model takes them).
    Plain arithmetic: the workbook evaluates it on its cells."""
    ratio = (run.gpu_hours + gpu_hours) / run.gpu_hours

    def scaled(value: Number | None) -> Number | None:
        return None if value is None else value * ratio

    return Run(run.tokens, run.time_s + time_s, run.gpu_hours * ratio, scaled(run.cost_usd),
               scaled(run.cost_usd_at_min_price), scaled(run.cost_usd_at_max_price),
               run.energy_kwh * ratio)  # fmt: skip


def losses(
    run: Run,
    reliability: Goodput | None,
    settings: LossSettings,
    n_gpus: int,
    straggler: tuple[float, str],
    steps: Steps,
) -> Losses | None:
    """The run's losses (None with `losses.model = "none"`): `straggler` its share at 128 GPUs and its source,
    `steps` the run's step prices at other batches (ramp) and forward passes (evaluation)."""
    if settings.model == "none":
        return None
    startup_s = STARTUP_S if settings.startup_s is None else settings.startup_s
    _check(settings, run, steps, startup_s)
    items: list[Loss] = []

    def add(name: str, time_s: float, source: str, template: str, *values: Any,
            gpu_hours: float | None = None) -> None:  # fmt: skip
        hours = loss_gpu_hours(time_s, n_gpus) if gpu_hours is None else gpu_hours
        if hours > 0:
            items.append(Loss(name, hours, time_s, source, template, values))

    if reliability is not None:
        _failures(run, reliability, add)
    share = straggler[0] * straggler_scale(n_gpus)
    template = "{:.1%} of step time at {:,} GPUs ({})"
    add("stragglers", run.time_s * share, straggler[1], template, share, n_gpus, straggler[1])
    lost_s = run.time_s / (reliability.goodput if reliability and reliability.goodput else 1.0) - run.time_s
    starts = 1 + (int((run.time_s + lost_s) / 3600 / settings.job_limit_h) if settings.job_limit_h else 0)
    source, whose = (STARTUP_SOURCE, " (MegaScale's)") if settings.startup_s is None else ("given", "")
    template = "{:,} job start{} of {:,.0f} s{}"
    add("startup", starts * startup_s, source, template, starts, "s" * (starts > 1), startup_s, whose)
    if settings.ramp_tokens and settings.ramp_start_gbs:
        ramp_s = steps.ramp_extra_s(settings.ramp_tokens, settings.ramp_start_gbs)
        template = "{} tokens from a batch of {:,}"
        add("ramp", ramp_s, "given", template, _tokens(settings.ramp_tokens), settings.ramp_start_gbs)
    if settings.eval_every_steps and settings.eval_tokens:
        evaluations = run.tokens / steps.tokens_per_step / settings.eval_every_steps
        eval_s = evaluations * steps.forward_s(settings.eval_tokens)
        template = "{:,.0f} evaluations of {} tokens"
        add("evaluation", eval_s, "given", template, evaluations, _tokens(settings.eval_tokens))
    if settings.spare_gpus:
        wall_s = run.time_s + sum(loss.time_s for loss in items)
        spare = settings.spare_gpus * wall_s / SECONDS_PER_HOUR
        add("spare", 0.0, "given", "{:,} GPUs in reserve", settings.spare_gpus, gpu_hours=spare)
    return Losses(tuple(items), run, straggler[0], startup_s, starts)


def _check(settings: LossSettings, run: Run, steps: Steps, startup_s: float) -> None:
    """Settings that only this run shows to be impossible, each one line naming its field: a ramp longer than the
    run or starting at or above its batch, a job time limit within one start-up."""
    if settings.ramp_tokens > run.tokens:
        raise PerfmodelError(
            f"losses.ramp_tokens: a ramp of {_tokens(settings.ramp_tokens)} tokens is longer than the run's "
            f"{_tokens(run.tokens)}; allowed: at most the run's tokens"
        )
    if settings.ramp_tokens and settings.ramp_start_gbs is not None and settings.ramp_start_gbs >= steps.gbs:
        raise PerfmodelError(
            f"losses.ramp_start_gbs: the ramp starts at {settings.ramp_start_gbs:,} sequences, not below the run's "
            f"global batch of {steps.gbs:,}; allowed: a smaller batch than the run's"
        )
    if settings.job_limit_h is not None and settings.job_limit_h * SECONDS_PER_HOUR <= startup_s:
        raise PerfmodelError(
            f"losses.job_limit_h: a job of {settings.job_limit_h:g} h ends before its start-up of {startup_s:,.0f} s "
            "(losses.startup_s) does; allowed: a limit longer than the start-up"
        )


def expected(count: float) -> str:
    """An expected count, or GPU-hours, for a table line: whole from 10 on, else two significant digits, so that a
    run expecting half an interruption does not read as none beside the GPU-hours it loses to it, nor a short run's
    1.8 GPU-hours as 2, its P10 and P90 as the point, or a loss of 0.004 GPU-hours as none beside its share; in plain
    decimals (numbers.plain), below 0.001 as '<0.001' (a short run's 3.5e-06 interruptions read as 3.5)."""
    return f"{count:,.0f}" if count >= 10 else plain(count, 2, floor=EXPECTED_FLOOR)


def _tokens(count: float) -> str:
    """A token count for a table line: 20B, 1.5T."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if count >= scale:
            return f"{plain(count / scale, 3)}{suffix}"
    return f"{count:,.0f}"


class FailureLoss(NamedTuple):
    """The goodput model's expected loss of one run, split as `failure_split` does, with its interruptions."""

    writes: float
    checkpoint_s: float
    rest_s: float
    """Lost work, restarts and checkpoint reads: what the interruptions themselves cost."""
    interruptions: float
    """Expected interruptions, planned and unexpected: each pays a restart."""
    unexpected: float


def failure_loss(run: Run, reliability: Goodput) -> FailureLoss | None:
    """The goodput model's expected loss of `run`; None when failures stop it from ever finishing."""
    failing = with_failures(run, reliability)
    counts = reliability.interruptions(run.time_s)
    if failing is None or counts is None:
        return None
    interval = reliability.interval_s or math.inf  # 0: no unexpected failures, so no periodic checkpoint
    writes, checkpoint_s, rest_s = failure_split(run.time_s, failing.time_s, interval, reliability.planned_per_s,
                                                 reliability.write_s)  # fmt: skip
    return FailureLoss(writes, checkpoint_s, rest_s, *counts)


def _failures(run: Run, reliability: Goodput, add: Callable[..., None]) -> None:
    """The goodput model's loss, split: its checkpoint writes (every interval of training, and before each planned
    interruption) and the rest (lost work, restarts, checkpoint reads)."""
    loss = failure_loss(run, reliability)
    if loss is None:
        return
    add("failures", loss.rest_s, "goodput model", "{} unexpected interruptions", expected(loss.unexpected))
    add("checkpoints", loss.checkpoint_s, "goodput model", "{} writes of {:,.1f} s", expected(loss.writes),
        reliability.write_s)  # fmt: skip


class Steps(NamedTuple):
    """What the ramp and evaluation losses price: the step time at another global batch on the same layout, and
    the forward pass of the run's batch (a NamedTuple: one is made per prediction)."""

    step_at: Callable[[int], Any]
    """The step time at a global batch that `divisor` divides."""
    gbs: int
    seq_len: int
    forward_only_s: float
    """A forward pass over one global batch."""
    divisor: int
    """The layout's replicas x micro-batch: a ramp's batches are rounded down to multiples of it."""

    @property
    def tokens_per_step(self) -> int:
        return self.gbs * self.seq_len

    def per_sequence_s(self, gbs: float) -> float:
        """Step time per sequence at a batch near `gbs` that the layout can run (at least one micro-batch a replica)."""
        batch = max(self.divisor, int(gbs) // self.divisor * self.divisor)
        return float(self.step_at(batch)) / batch

    def ramp_extra_s(self, tokens: float, start_gbs: int) -> float:
        """Time a linear batch ramp from `start_gbs` to the run's batch over `tokens` takes beyond those tokens at
        the run's batch: RAMP_POINTS equal slices, each at its middle batch."""
        full = self.per_sequence_s(self.gbs)
        slices = (start_gbs + (self.gbs - start_gbs) * (k + 0.5) / RAMP_POINTS for k in range(RAMP_POINTS))
        extra = sum(self.per_sequence_s(gbs) - full for gbs in slices) * tokens / RAMP_POINTS / self.seq_len
        return max(extra, 0.0)

    def forward_s(self, tokens: float) -> float:
        """Forward passes over `tokens` at the run's batch."""
        return tokens / self.tokens_per_step * self.forward_only_s
