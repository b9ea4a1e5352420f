"""A campaign: a whole training run as the phases it really goes through (batch and sequence ramps, the main
phase, long-context stages, annealing), each a full prediction, and the run's totals.

A phase is the scenario with what its [[phase]] table sets (inputs/scenario.py, Phase): its tokens, GPU count,
precision, sequence length, batch and layout dimensions; the rest it inherits from the scenario's top level. A phase
that changes the sequence length but not the batch keeps the batch in tokens per step (as real long-context stages
do: fewer, longer sequences), and a layout dimension neither sets is searched for the phase at its own batch,
sequence length and GPU count.

The totals follow one rule per column of a phase's record (`total_rule`), so that a column another part of the
model adds is totalled without code here knowing it: whole-run quantities (time, GPU-hours, cost, energy, tokens,
interruptions, with their intervals, price ranges and `_with_failures` / `_with_losses` families) are summed; rates
are averaged with the weight that makes them the whole run's (throughput per GPU and MFU over GPU-hours, so that
they are the model FLOPs over the GPU time; cluster throughput over time; cost per token over tokens; goodput over
wall time; tokens per USD over cost, energy per token over tokens); the GPU count and memory per GPU are the largest
any phase needs; anything else is the phases' common value, or empty where they differ. The P10/P50/P90 are not
summed (that would take every source of spread as shared by the phases): the model's error is, the run-to-run
variability and interruptions are each phase's own (`Campaign.quantiles`, confidence.campaign_quantiles).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from perfmodel.errors import InfeasibleLayout, PerfmodelError, did_you_mean, shown
from perfmodel.inputs.hardware import Hardware, resolve
from perfmodel.inputs.models import ModelSpec
from perfmodel.inputs.record import given, replaced
from perfmodel.inputs.scenario import TOTAL, Phase, Scenario, phase_tokens
from perfmodel.physics.calibration import Interval
from perfmodel.planning import confidence as chance
from perfmodel.planning.predict import Prediction, predict
from perfmodel.planning.training import SECONDS_PER_HOUR, Price, Run
from perfmodel.planning.views import Shown

SUMMED = re.compile(
    r"(?:^|[._])(?:tokens_to_train|time_to_train|gpu_hours|cost_usd|energy_kwh|expected_(?:unexpected_)?interruptions"
    r"|layouts_searched|checkpoint_writes|job_starts|co2e)(?:_|$)"
)
"""Whole-run quantities, by a word of their column's name: the campaign's is the phases' sum (`cost_usd_at_min_price`,
`gpu_hours_with_failures`, `time_to_train_with_losses_days` and `losses.stragglers_gpu_hours` alike)."""
WEIGHTED = {
    "tokens_per_s": "time_to_train_s",
    "tokens_per_s_per_gpu": "gpu_hours",
    "model_tflops_per_gpu": "gpu_hours",
    "mfu": "gpu_hours",
    "mfu_bf16": "gpu_hours",
    "mfu_of_precision": "gpu_hours",
    "goodput": "time_to_train_with_failures_s",
    "usd_per_million_tokens": "tokens_to_train",
    "tokens_per_usd": "cost_usd",
    "tokens_per_usd_at_min_price": "cost_usd_at_min_price",
    "tokens_per_usd_at_max_price": "cost_usd_at_max_price",
    "joules_per_token": "tokens_to_train",
    "kwh_per_million_tokens": "tokens_to_train",
}
"""Rates, each averaged over the phases with the whole-run quantity it is per (a column that begins with a key's
name and `_`, such as `usd_per_million_tokens_with_failures`, takes its weight): the campaign's throughput is its
tokens over its time, its MFU its model FLOPs over its GPU time, its tokens per USD its tokens over its cost (at
each price), its energy per token its energy over its tokens."""
LARGEST = frozenset(("n_gpus", "memory_per_gpu_gb", "memory_per_gpu_gib"))
"""What the cluster must hold: the most any phase needs."""
EVERY = frozenset(("fits_in_memory",))
"""True only when it is true of every phase."""


def total_rule(key: str) -> tuple[str, str | None]:
    """How a campaign totals the column `key` of its phases' records: ('sum', None), ('mean', weight column),
    ('max', None), ('all', None) or ('same', None): the phases' common value, empty where they differ."""
    if key in WEIGHTED:
        return "mean", WEIGHTED[key]
    family = next((name for name in WEIGHTED if key.startswith(f"{name}_")), None)
    if family is not None:
        return "mean", WEIGHTED[family]
    if SUMMED.search(key) and "_per_" not in key:  # a rate per GPU-hour (interruptions) is no whole-run quantity
        return "sum", None
    if key in LARGEST:
        return "max", None
    if key in EVERY:
        return "all", None
    return "same", None


def incurred(key: str) -> bool:
    """Whether `key` is a loss's column: a run's losses table lists only the losses it incurs, so that a phase
    without the column (or with it empty in a table of many) incurred none of it, and the campaign's total is the
    other phases' sum (a ramp is the first phase's alone); any other summed column empty in a phase (a cost without
    a price) leaves the total empty."""
    return key.startswith("losses.")


def total(key: str, values: Sequence[Any], weights: Sequence[Any] | None = None) -> Any:
    """The campaign's value of column `key` from its phases' `values` (and, for a mean, their `weights`)."""
    rule, _ = total_rule(key)
    if rule == "sum" and incurred(key):
        values = [0 if v is None else v for v in values]
    if rule == "same":
        first = values[0]
        return first if all(v == first for v in values) else None
    if any(v is None for v in values) or (rule == "mean" and (weights is None or any(w is None for w in weights))):
        return None
    if rule == "sum":
        return sum(values) if all(isinstance(v, int) for v in values) else math.fsum(values)
    if rule == "max":
        return max(values)
    if rule == "all":
        return all(values)
    assert weights is not None
    return math.fsum(v * w for v, w in zip(values, weights, strict=True)) / math.fsum(weights)


def totals(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The campaign's flat record from its phases' flat records (the columns of every phase, first one's order)."""
    keys = list(dict.fromkeys(key for record in records for key in record))
    out = {}
    for key in keys:
        values = [record.get(key) for record in records]
        weight = total_rule(key)[1]
        out[key] = total(key, values, None if weight is None else [record.get(weight) for record in records])
    return out


def nested(flat: Mapping[str, Any]) -> dict[str, Any]:
    """A flat record as nested tables again: {'breakdown.compute_s': 1} -> {'breakdown': {'compute_s': 1}}."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        *parents, leaf = key.split(".")
        table = out
        for parent in parents:
            table = table.setdefault(parent, {})
        table[leaf] = value
    return out


def phase_gpus(scenario: Scenario, phase: Phase) -> int:
    """The phase's GPU count: its own, else its share of the scenario's (to the nearest whole node or rack, when the
    scenario's count is whole ones), else the scenario's."""
    if phase.n_gpus is not None:
        return phase.n_gpus
    if phase.gpu_fraction is None:
        return scenario.n_gpus
    share = phase.gpu_fraction * scenario.n_gpus
    unit = resolve(scenario.gpu, scenario.system).job_gpus_per_system
    if scenario.n_gpus % unit:
        return max(1, round(share))
    return max(unit, round(share / unit) * unit)


def phase_gbs(scenario: Scenario, phase: Phase, seq_len: int) -> int | None:
    """The phase's global batch in sequences: its own (gbs, or tokens_per_step over its sequence length), else the
    scenario's batch in tokens per step at the phase's sequence length, else None (the default batch)."""
    if phase.gbs is not None:
        return phase.gbs
    top = scenario.parallelism
    tokens_per_step = phase.tokens_per_step or (top.gbs * top.seq_len if top.gbs else None)
    return None if tokens_per_step is None else max(1, round(tokens_per_step / seq_len))


def phase_scenario(scenario: Scenario, phase: Phase, tokens: float, first: bool = True) -> Scenario:
    """The scenario a phase is predicted as: the campaign's top level with what the phase sets. A batch ramp of
    the top level's [losses] (ramp_tokens) is the run's start: the `first` phase's alone, not every phase's. The top
    level's fp8_recipe scales the FP8 phases' GEMMs; a phase in another precision has none to scale (Scenario.knobs
    would refuse it there)."""
    seq_len = phase.seq_len or scenario.parallelism.seq_len
    precision = phase.precision or scenario.precision
    own = {name: getattr(phase.parallelism, name) for name in given(phase.parallelism)} if phase.parallelism else {}
    if "recompute" in own and "recompute_layers" not in own:  # a phase's own recompute mode replaces a partial one
        own["recompute_layers"] = None
    layout = replaced(scenario.parallelism, **own, seq_len=seq_len, gbs=phase_gbs(scenario, phase, seq_len))
    losses = scenario.losses
    if not first and losses.ramp_tokens:
        losses = replaced(losses, ramp_tokens=0.0, ramp_start_gbs=None)
    return replaced(
        scenario,
        n_gpus=phase_gpus(scenario, phase),
        precision=precision,
        fp8_recipe=scenario.fp8_recipe if precision == "fp8" else None,
        tokens=tokens,
        parallelism=layout,
        losses=losses,
        phase=(),
    )


def phase_scenarios(scenario: Scenario) -> list[tuple[str, Scenario]]:
    """Each phase's name and scenario, in the order they run."""
    tokens = phase_tokens(scenario)
    return [
        (p.name, phase_scenario(scenario, p, t, first=i == 0))
        for i, (p, t) in enumerate(zip(scenario.phase, tokens, strict=True))
    ]


@dataclass(frozen=True, repr=False)
class Campaign(Shown):
    """The prediction of a campaign: each phase's full Prediction, by name in the order they run, and the run's
    totals (`to_dict()` is `perfmodel predict --format json`: the totals at the top level, the phases under
    `phases`, each with its name under `phase`)."""

    scenario: Scenario
    phases: dict[str, Prediction]

    @cached_property
    def record(self) -> dict[str, Any]:
        """The campaign's flat record: the totals of its phases' records (`total_rule`), its quantiles those of
        the phases' distributions combined (`quantiles`)."""
        found = totals([p.to_record() for p in self.phases.values()])
        return found | {key: value for key, value in self.quantiles().items() if key in found}

    def quantiles(self) -> dict[str, float | None]:
        """P10/P50/P90 of the campaign's run and run with losses: the model's error shared by the phases, their
        run-to-run variability and interruptions each their own (confidence.campaign_quantiles). One phase: its
        own quantiles (the campaign is that prediction)."""
        phases = list(self.phases.values())
        if len(phases) == 1:
            return {}
        runs = [(p.spread, p.quantile_figures()) for p in phases]
        found = chance.campaign_quantiles(runs, chance.PRICED) if all(f is not None for _, f in runs) else {}  # type: ignore[arg-type]
        if all(p.losses is not None for p in phases):
            found |= chance.campaign_quantiles([(p.losses_spread, p.losses_figures()) for p in phases], chance.PRICED)
        return found

    def to_dict(self) -> dict[str, Any]:
        return nested(self.record) | {"phases": [{"phase": name} | p.to_dict() for name, p in self.phases.items()]}

    def to_record(self) -> dict[str, Any]:
        """The total row of `to_records`."""
        return {"phase": TOTAL} | self.record

    def to_records(self) -> list[dict[str, Any]]:
        """One flat row per phase and the total row, each with its `phase` first (`--format csv`)."""
        return [{"phase": name} | p.to_record() for name, p in self.phases.items()] + [self.to_record()]

    def _shown(self) -> list[dict[str, Any]]:
        return self.to_records()

    @property
    def first(self) -> Prediction:
        return next(iter(self.phases.values()))

    @property
    def model(self) -> ModelSpec:
        return self.first.model

    @property
    def hardware(self) -> Hardware:
        return self.first.hardware

    @property
    def price(self) -> Price:
        """Every phase runs on the scenario's hardware at its price."""
        return self.first.price

    @property
    def n_gpus(self) -> int:
        """The most GPUs any phase runs on: the cluster the campaign needs."""
        return int(self.record["n_gpus"])

    @property
    def mean_gpus(self) -> float:
        """GPUs held on average over the campaign's time (its GPU-hours over its hours)."""
        return self.run.gpu_hours * SECONDS_PER_HOUR / self.run.time_s

    @property
    def tokens_per_s(self) -> float:
        return float(self.record["tokens_per_s"])

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return float(self.record["tokens_per_s_per_gpu"])

    @property
    def goodput(self) -> float | None:
        """Training time over wall time of the whole campaign; None with the goodput model off."""
        value: float | None = self.record.get("goodput")
        return value

    @cached_property
    def run(self) -> Run:
        """The campaign's totals as a run (every phase has one: its tokens)."""
        return _summed(p.run for p in self.phases.values())  # type: ignore[misc]

    @cached_property
    def run_with_failures(self) -> Run | None:
        """The totals with each phase's expected interruptions (None when one never finishes)."""
        runs = [p.run_with_failures if p.goodput is not None else p.run for p in self.phases.values()]
        return None if any(r is None for r in runs) else _summed(runs)  # type: ignore[arg-type]

    @cached_property
    def run_with_losses(self) -> Run | None:
        """The totals with each phase's losses (None without the losses model, or when a phase never finishes)."""
        runs = [p.run_with_losses for p in self.phases.values()]
        return None if any(r is None for r in runs) else _summed(runs)  # type: ignore[arg-type]

    @cached_property
    def interval(self) -> Interval | None:
        """The factors on the campaign's time that its phases' intervals give together (their time-weighted mean:
        each phase's bound moved as far, the cautious reading); None when a phase has none."""
        found = [(p.interval, p.run.time_s) for p in self.phases.values() if p.interval and p.run]
        if len(found) < len(self.phases):
            return None
        time_s = math.fsum(t for _, t in found)
        protocols = {i.protocol for i, _ in found}
        return Interval(
            math.fsum(i.low * t for i, t in found) / time_s,
            math.fsum(i.high * t for i, t in found) / time_s,
            protocols.pop() if len(protocols) == 1 else "per phase",
        )

    def describe(self) -> str:
        """Each phase's layout, as a plan row shows it."""
        return "; ".join(f"{name}: {p.layout.describe()}" for name, p in self.phases.items())


def _summed(runs: Iterable[Run]) -> Run:
    """Runs added up, field by field (a cost is None when a run has none)."""
    columns = list(zip(*runs, strict=True))
    return Run(*(None if None in column else math.fsum(column) for column in columns))  # type: ignore[arg-type]


def predict_campaign(scenario: Scenario) -> Campaign:
    """Every phase of a campaign predicted in full (its layout searched where neither it nor the scenario gives
    it); an error names the phase."""
    predictions = {}
    for name, phase in phase_scenarios(scenario):
        try:
            predictions[name] = predict(phase)
        except InfeasibleLayout as exc:
            raise InfeasibleLayout(f"phase '{name}': {exc}") from None
        except PerfmodelError as exc:
            raise PerfmodelError(f"phase '{name}': {exc}") from None
    return Campaign(scenario, predictions)


Result = Prediction | Campaign
"""What a question about a scenario answers: one prediction, or a campaign of them."""


def predict_any(scenario: Scenario) -> Result:
    """A scenario's prediction: a campaign's when it has phases, else the one-phase Prediction of today."""
    return predict_campaign(scenario) if scenario.phase else predict(scenario)


def chosen_phases(campaign: Campaign, name: str | None) -> dict[str, Prediction]:
    """The phase `name` of a campaign (every phase when None); one line naming the phases when it has none such."""
    if name is None:
        return campaign.phases
    if name not in campaign.phases:
        known = ", ".join(campaign.phases)
        hint = did_you_mean(name, campaign.phases)
        raise PerfmodelError(f"--phase {shown(name)}: the campaign has no such phase{hint}; its phases: {known}")
    return {name: campaign.phases[name]}


def refuse_campaigns(results: Iterable[Any], command: str, instead: str) -> None:
    """One line for a command whose rows are one-phase predictions, when a result is a campaign: why, and what to
    do `instead`."""
    if any(isinstance(r, Campaign) for r in results):
        raise PerfmodelError(f"{command} takes one-phase scenarios, not a campaign ([[phase]] tables): {instead}")
