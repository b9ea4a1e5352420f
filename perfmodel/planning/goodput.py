"""Goodput: how much of a run's wall-clock time trains, once failures, checkpoints and restarts are counted.

Failures arrive as a Poisson process whose rate grows with the GPU-hours of the job, one rate per component class.
An unexpected interruption loses the work since the last checkpoint and costs a restart (re-queue, health checks,
NCCL initialisation: `restart_s`) plus reading the checkpoint back; a planned one (maintenance, configuration
changes) checkpoints first, so it loses no work but pays the restart and the write. Checkpoints are written every
`interval` of training, synchronously, at the storage bandwidth of every node of the job together.

The expected wall time of T_s seconds of failure-free training is Daly's (J. T. Daly 2006, "A higher order
estimate of the optimum checkpoint interval for restart dumps", Future Generation Computer Systems 22(3)) for
exponential failures with mean time between failures M, checkpoint write time delta, restart R and interval tau:

    T_w = M exp(R / M) (exp((tau + delta) / M) - 1) T_s / tau

and his higher-order optimum interval unless the interval is given:

    tau = sqrt(2 delta M) (1 + sqrt(delta / (2M)) / 3 + delta / (18 M)) - delta   (delta < 2M), else M

(to first order Young's sqrt(2 delta M)). Planned interruptions add R + delta each, at their own rate over the wall
time. Goodput = T_s / wall time: the Llama 3 paper's "effective training time".

Every default says whether it is a sourced fact or an estimate (`Sourced.kind`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from perfmodel.inputs.hardware import Hardware
from perfmodel.inputs.models import ModelSpec
from perfmodel.inputs.scenario import FAILURE_CLASSES as CLASS_NAMES
from perfmodel.inputs.scenario import Scenario
from perfmodel.physics.algebra import Number, ceil, exp, sqrt
from perfmodel.planning.training import Run

SECONDS_PER_HOUR = 3600.0
LLAMA3_GPUS = 16_384
LLAMA3_DAYS = 54
LLAMA3_GPU_HOURS = LLAMA3_GPUS * LLAMA3_DAYS * 24.0
"""The Llama 3 paper's snapshot: 54 days of Llama 3 405B pre-training on 16,384 H100 GPUs (Grattafiori et al.,
"The Llama 3 Herd of Models", arXiv 2407.21783, section 3.3.4 "Reliability and Operational Challenges")."""
LLAMA3_TABLE5 = (
    "Llama 3 paper (arXiv 2407.21783) section 3.3.4, Table 5 (root causes of the 419 unexpected interruptions in a "
    "54-day snapshot on 16,384 H100)"
)


@dataclass(frozen=True)
class FailureClass:
    """Interruptions of one component class, per million GPU-hours of the job."""

    name: str
    per_million_gpu_hours: float
    loses_work: bool
    """Unexpected (True): the work since the last checkpoint is lost. Planned (False): the job checkpoints first."""
    kind: str
    """'sourced' or 'estimate'."""
    source: str


def _llama3(name: str, count: int, parts: str, loses_work: bool = True) -> FailureClass:
    rate = count / LLAMA3_GPU_HOURS * 1e6
    where = LLAMA3_TABLE5 if loses_work else "Llama 3 paper (arXiv 2407.21783) section 3.3.4, the 47 planned of 466"
    source = f"sourced: {count} in {where}: {parts}"
    return FailureClass(name, rate, loses_work, "sourced", source + "; per GPU-hour: scaling with GPUs is an estimate")


GPU_PARTS = (
    "faulty GPU 148, GPU HBM3 72, GPU SRAM 19, GPU system processor 17, silent data corruption 6, GPU thermal "
    "interface and sensor 6"
)
FAILURE_CLASSES: tuple[FailureClass, ...] = (
    _llama3("gpu", 268, GPU_PARTS),
    _llama3("host", 21, "NIC 7, SSD 3, power supply 3, server chassis 2, IO expansion board 2, CPU 2, system memory 2"),
    _llama3("network", 35, "network switch and cable 35"),
    _llama3("software", 56, "software bug 54, dependency 2"),
    _llama3("maintenance", 32, "unplanned host maintenance 32"),
    _llama3("unknown", 7, "NCCL watchdog timeouts 7"),
    _llama3("planned", 47, "automated maintenance (firmware upgrades) and operator-initiated changes", False),
)
"""Defaults: the Llama 3 paper's interruption counts over its GPU-hours, transcribed from the paper itself (section
3.3.4, Table 5); the data notes' campaigns.md section 1 carries the same counts. The table's own percentages put
faulty GPUs at 30.1% of 419 (126), its counts at 148; the counts sum to 419, so the counts are used. Meta's HPCA
2025 paper ("Revisiting Reliability in Large-Scale Machine Learning Research Clusters", campaigns.md section 14)
gives the `rsc` rates (RSC_SOURCE)."""
assert tuple(c.name for c in FAILURE_CLASSES) == CLASS_NAMES

RSC_PER_NODE_DAY = 6.50e-3
RSC_GPUS_PER_NODE = 8
RSC_SOURCE = (
    "sourced: Meta's RSC-1 A100 cluster (16K A100, where LLaMA and Llama 2 trained), 6.50 failures per 1,000 node-days "
    "of 8-GPU nodes over 11 months (Kokolis et al., HPCA 2025, arXiv 2410.21680; campaigns.md section 14, secondary "
    "summaries): the Llama 3 classes' unexpected rates scaled to that total, planned ones kept"
)
"""`rates = "rsc"`: the A100 fleet's failure rate, 1.7x Llama 3's unexpected rate per GPU-hour on H100."""


def rsc_scale() -> float:
    """What multiplies the Llama 3 classes' unexpected rates to give RSC-1's (33.9 per million GPU-hours)."""
    rsc = RSC_PER_NODE_DAY / (RSC_GPUS_PER_NODE * 24.0) * 1e6
    return rsc / sum(c.per_million_gpu_hours for c in FAILURE_CLASSES if c.loses_work)


RESTART_S = 600.0
RESTART_SOURCE = (
    "estimate: 10 min per interruption to detect it, re-queue, check node health and re-initialise NCCL and the "
    "data loader (checkpoint reading is counted separately); the Llama 3 paper's >90% effective training time with "
    "466 interruptions in 54 days bounds the whole cost of one at about 17 min"
)
CHECKPOINT_BYTES_PER_PARAM = 2.0 + 12.0
CHECKPOINT_SOURCE = (
    "the memory model's state: BF16 weights (2 B/param) + FP32 master weights and two Adam moments (12 B/param) of "
    "the trained parameters; a frozen base (LoRA) saves its BF16 weights only"
)


@dataclass(frozen=True)
class Reliability:
    """The parameters of the goodput model, resolved: rates per class, storage, restart, checkpoint interval."""

    classes: tuple[FailureClass, ...] = FAILURE_CLASSES
    storage_bytes_per_s_per_node: float = 1e9
    restart_s: float = RESTART_S
    interval_s: float | None = None
    """Training time between checkpoints; None: Daly's optimum."""

    @classmethod
    def build(
        cls,
        storage_bytes_per_s_per_node: float,
        failure_scale: float = 1.0,
        rates: Mapping[str, float] | None = None,
        restart_s: float | None = None,
        interval_s: float | None = None,
        fleet: str = "llama3",
    ) -> Reliability:
        """The defaults of a `fleet` ('llama3', or 'rsc': its unexpected rates scaled to RSC_SOURCE's) with a user's
        changes: every rate times `failure_scale`, `rates` per class replacing them."""

        def default(c: FailureClass) -> FailureClass:
            if fleet == "rsc" and c.loses_work:
                return FailureClass(c.name, c.per_million_gpu_hours * rsc_scale(), True, "sourced", RSC_SOURCE)
            return c

        classes = tuple(
            FailureClass(c.name, rates[c.name], c.loses_work, "given", "given by the user")
            if rates and c.name in rates
            else FailureClass(c.name, c.per_million_gpu_hours * failure_scale, c.loses_work, c.kind, c.source)
            for c in map(default, FAILURE_CLASSES)
        )
        restart = RESTART_S if restart_s is None else restart_s
        return cls(classes, storage_bytes_per_s_per_node, restart, interval_s)

    def per_gpu_hour(self, loses_work: bool) -> float:
        return sum(c.per_million_gpu_hours for c in self.classes if c.loses_work == loses_work) / 1e6


@dataclass(frozen=True)
class Goodput:
    """The goodput of one job and what it is made of. Times in seconds, rates per second of the whole job."""

    goodput: float
    """Failure-free training time over expected wall time (0 when the job never gets ahead of its interruptions)."""
    unexpected_per_s: float
    planned_per_s: float
    checkpoint_bytes: float
    write_s: float
    load_s: float
    restart_s: float
    interval_s: float
    interval_given: bool
    storage_bytes_per_s_per_node: float

    @property
    def mtbf_s(self) -> float:
        """Mean time between unexpected interruptions of the whole job."""
        return math.inf if self.unexpected_per_s == 0 else 1 / self.unexpected_per_s

    def wall_s(self, train_s: float) -> float | None:
        """Expected wall time of `train_s` of failure-free training; None when it never finishes."""
        return None if self.goodput == 0 else train_s / self.goodput

    def interruptions(self, train_s: float) -> tuple[float, float] | None:
        """Expected (all, unexpected) interruptions over the wall time of `train_s` of training."""
        wall = self.wall_s(train_s)
        if wall is None:
            return None
        return (self.unexpected_per_s + self.planned_per_s) * wall, self.unexpected_per_s * wall

    def to_dict(self) -> dict[str, float | str | None]:
        return {
            "job_mtbf_h": None if self.unexpected_per_s == 0 else self.mtbf_s / SECONDS_PER_HOUR,
            "unexpected_per_day": self.unexpected_per_s * 86400,
            "planned_per_day": self.planned_per_s * 86400,
            "checkpoint_gb": self.checkpoint_bytes / 1e9,
            "storage_gb_per_s_per_node": self.storage_bytes_per_s_per_node / 1e9,
            "checkpoint_write_s": self.write_s,
            "checkpoint_load_s": self.load_s,
            "checkpoint_interval_s": self.interval_s,
            "checkpoint_interval": "given" if self.interval_given else "Young/Daly optimum",
            "restart_s": self.restart_s,
        }


def checkpoint_bytes(params: float, trainable: float) -> float:
    """Bytes of one checkpoint: weights and optimizer state of the trained parameters, weights of frozen ones."""
    return trainable * CHECKPOINT_BYTES_PER_PARAM + (params - trainable) * 2.0


def young_daly_interval(write_s: Number, mtbf_s: Number) -> Number:
    """Daly's higher-order optimum checkpoint interval for a write shorter than 2 MTBF; Young's sqrt(2 delta M) to
    first order. Plain arithmetic: the workbook evaluates it on its cells."""
    ratio = write_s / (2 * mtbf_s)
    return sqrt(2 * write_s * mtbf_s) * (1 + sqrt(ratio) / 3 + ratio / 9) - write_s


def daly_interval(write_s: float, mtbf_s: float) -> float:
    """The optimum interval; once per MTBF when a write takes 2 MTBF or more."""
    return mtbf_s if write_s >= 2 * mtbf_s else float(young_daly_interval(write_s, mtbf_s))


def wall_per_train(mtbf_s: Number, write_s: Number, restart_s: Number, interval_s: Number) -> Number:
    """Daly's expected wall time per second of failure-free training (exponential failures, failures during a
    restart restart it, `restart_s` includes reading the checkpoint back)."""
    return mtbf_s * exp(restart_s / mtbf_s) * (exp((interval_s + write_s) / mtbf_s) - 1) / interval_s


def goodput_ratio(stretch: Number, planned_per_s: Number, restart_s: Number, write_s: Number) -> Number:
    """Training time over wall time: the stretch of unexpected failures, and each planned interruption's restart and
    checkpoint write taken out of the wall time at its rate."""
    return (1 - planned_per_s * (restart_s + write_s)) / stretch


def mtbf_s(unexpected_per_million_gpu_hours: Number, n_gpus: Number) -> Number:
    """Mean time between unexpected interruptions of a job of `n_gpus`."""
    return 1e6 * SECONDS_PER_HOUR / (unexpected_per_million_gpu_hours * n_gpus)


def write_s(state_bytes: Number, n_gpus: Number, gpus_per_node: Number, bytes_per_s_per_node: Number) -> Number:
    """Checkpoint write (and read) time: the state over the storage bandwidth of the job's nodes together."""
    return state_bytes / (ceil(n_gpus / gpus_per_node) * bytes_per_s_per_node)


MAX_EXPONENT = 700.0
"""exp() of more than this overflows a double: the job loses everything between checkpoints."""


def goodput(n_gpus: int, gpus_per_node: int, state_bytes: float, reliability: Reliability) -> Goodput:
    """The goodput of a job of `n_gpus` whose checkpoint holds `state_bytes`, under `reliability`."""
    write = load = float(write_s(state_bytes, n_gpus, gpus_per_node, reliability.storage_bytes_per_s_per_node))
    unexpected_rate = reliability.per_gpu_hour(loses_work=True) * 1e6
    unexpected = unexpected_rate * n_gpus / 1e6 / SECONDS_PER_HOUR
    planned = reliability.per_gpu_hour(loses_work=False) * n_gpus / SECONDS_PER_HOUR
    restart = reliability.restart_s + load
    given = reliability.interval_s is not None
    mtbf = math.inf if unexpected == 0 else float(mtbf_s(unexpected_rate, n_gpus))
    if reliability.interval_s is not None:
        interval = reliability.interval_s
    elif unexpected == 0:
        interval = math.inf
    else:
        interval = daly_interval(write, mtbf)
    if unexpected == 0:
        stretch = 1 + (0 if math.isinf(interval) else write / interval)
    elif max(restart, interval + write) / mtbf > MAX_EXPONENT:
        stretch = math.inf
    else:
        stretch = float(wall_per_train(mtbf, write, restart, interval))
    ratio = 0.0 if math.isinf(stretch) else float(goodput_ratio(stretch, planned, restart, write))
    shown_interval = interval if math.isfinite(interval) else 0.0
    return Goodput(
        max(ratio, 0.0), unexpected, planned, state_bytes, write, load, reliability.restart_s, shown_interval, given,
        reliability.storage_bytes_per_s_per_node,
    )  # fmt: skip


def for_scenario(scenario: Scenario, hardware: Hardware, model: ModelSpec, n_gpus: int) -> Goodput | None:
    """The goodput of a scenario's run on `n_gpus`, or None when the scenario turns the model off."""
    given = scenario.goodput
    if given.rates == "none":
        return None
    storage = given.storage_gb_per_s_per_node or hardware.system.storage_gb_per_s_per_node.value
    reliability = Reliability.build(
        storage * 1e9, given.failure_scale, given.failures_per_million_gpu_hours, given.restart_s,
        given.checkpoint_interval_s, given.rates,
    )  # fmt: skip
    adapters = model.lora_params_per_layer(scenario.lora_rank, scenario.lora_modules)
    trainable = model.layers * adapters if scenario.lora_rank else model.params
    state = checkpoint_bytes(model.params + (trainable if scenario.lora_rank else 0), trainable)
    return goodput(n_gpus, int(hardware.system.gpus_per_node.value), state, reliability)


def with_failures(run: Run, result: Goodput) -> Run | None:
    """The run as it is expected to go with interruptions: wall time, GPU-hours, cost and energy over the goodput
    (the GPUs are held, and taken to draw their power, while the job restarts: an estimate). None: never finishes."""
    if result.goodput == 0:
        return None
    stretch = 1 / result.goodput

    def scaled(value: float | None) -> float | None:
        return None if value is None else value * stretch

    return Run(
        run.tokens, run.time_s * stretch, run.gpu_hours * stretch, scaled(run.cost_usd),
        scaled(run.cost_usd_at_min_price), scaled(run.cost_usd_at_max_price), run.energy_kwh * stretch,
    )  # fmt: skip
