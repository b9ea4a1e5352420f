"""Goal seeking: the GPUs of each candidate system that meet a deadline (the cheapest count) and/or a budget.

A candidate is a system (or accelerator) and a precision. Its GPU counts are whole units of the system: nodes
(8 GPUs on a DGX) or, on an NVL72, the GPUs of a rack a job fills (64, as the hardware file says), in steps of
m x 2^k units with m in 4..7 (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, ... units: at most 25% apart). At each
count tried, the layout is searched (`search.best_layout`: the exhaustive search's best, priced in full only where
a layout's floor could beat the best so far) at one global batch: the given one, or the default for that count.
Time and cost are the run's on the goal's basis (`goal_basis`): with every real-world loss (planning/losses.py:
failures, checkpoints, stragglers, start-up and those the scenario sets), else, with the losses model off, with the
expected failures of the goodput model, else failure-free.

Time and cost need not fall and rise with the count (a count whose DP divides the global batch lays out better than
its neighbours: STALL_FACTOR), so the searches try every count in a range. Deadline: a few power-law steps from
the seed (time ~ count^-a, a from the last two tries) find counts near it; then every count from the fewest that
could meet it at GPU_HOURS_FLOOR of the least GPU-hours seen is tried upward to STALL_FACTOR times the cheapest
meeting it (within the budget, with both goals), which is the answer (ties to the fewer GPUs; without a price, as
mi355x, the fewest GPUs meeting it: the first). Budget alone: the fastest plan within it; from the seed the counts are
galloped up an octave at a time, then every count from the fewest that could be faster than the fastest within it
is tried upward. A scan ends where STALL_FACTOR times the GPUs of the fastest count tried were no faster (scaling
has stopped), or of the largest count within the budget were all over it. A goal no count meets says why: the time
stopped improving (scaling stops at DP=..., the global batch bounds it), `--max-gpus` was reached, the fewest GPUs
meeting the deadline cost too much (and the cheapest meeting it), or no count within the budget meets it.
"""

from __future__ import annotations

import bisect
import functools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from perfmodel.errors import PerfmodelError, shown
from perfmodel.inputs.hardware import Hardware, resolve
from perfmodel.inputs.precision import get_recipe
from perfmodel.inputs.record import replaced
from perfmodel.inputs.scenario import MAX_GPUS, Scenario, flatten, phase_tokens
from perfmodel.planning import carbon
from perfmodel.planning import confidence as chance
from perfmodel.planning.campaign import Campaign, Result, predict_campaign
from perfmodel.planning.predict import (
    Prediction,
    context_for,
    failure_spread,
    for_layout,
    prediction_for,
    scenario_price,
    searched_layout,
)
from perfmodel.planning.request import (
    CLI,
    RENTING,
    PurchaseRead,
    ScenarioSource,
    Spelling,
    given_layout_problem,
    layout_at_count_problem,
    source_name,
    spare_gpus,
)
from perfmodel.planning.training import Run
from perfmodel.planning.variability import run_sd
from perfmodel.planning.views import Shown, usd_text

STALL_FACTOR = 4
"""Time and cost need not move monotonically with the count: a count whose DP divides the global batch lays out
better than its neighbours (Llama 3.1 70B on 15T tokens: 2,048 H100 FP8 train it in 49.3 days for $14.9M, 1,792
in 63.7 days for $16.9M; the 405B campaign runs 111 days on 16,384 H100 and 144 on 20,480). The searches take
scaling to have stopped only where this many times the GPUs of the fastest count tried are no faster, and the cost
to have left a budget behind where this many times the GPUs of the largest count within it are all over it: on the
bundled workloads a count undercuts a smaller one within an octave above 1,000 GPUs, within a quadrupling below,
where memory forces recompute (70B on H100: 128 GPUs for $13.8M, 64 for $14.6M, 32 for $14.1M)."""
GPU_HOURS_FLOOR = 0.7
"""Counts below one meeting a time target are tried down to those that could still meet it doing the work in this
share of the least GPU-hours of the counts tried (count x target >= 0.7 x the least): that would beat strong
scaling by far (on the bundled workloads 4x fewer GPUs take 0.6-0.9 of the GPU-hours, but 2.4-3.6 times as long:
70B on H100 at 4,096 and 16,384 GPUs, at 2,048 and 8,192; the 405B campaign at 4,096 and 16,384)."""
SEED_SHARE_OF_PEAK = 1 / 3
"""Only where the search starts: about what the model reaches on big clusters (the answers come from searches)."""


@dataclass(frozen=True)
class Goal:
    deadline_s: float | None = None
    budget_usd: float | None = None
    confidence: float = chance.MEDIAN
    """The probability with which the plan must meet the deadline and the budget (planning/confidence.py)."""
    power_mw: float | None = None
    """The site's power, MW at the wall (PUE in): no plan draws more (`power_mw`)."""

    def __post_init__(self) -> None:
        if self.deadline_s is None and self.budget_usd is None:
            raise PerfmodelError("plan needs a goal: --deadline (e.g. 30d) and/or --budget (USD, e.g. 40e6)")
        chance.check(self.confidence, CLI)
        cap = self.power_mw
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int | float) or not 0 < cap < math.inf):
            raise PerfmodelError(f"--power-mw {cap!r}: allowed a positive number of megawatts (e.g. 20)")

    def to_dict(self) -> dict[str, Any]:
        days = None if self.deadline_s is None else self.deadline_s / 86400
        return {"deadline_s": self.deadline_s, "deadline_days": days, "budget_usd": self.budget_usd,
                "confidence": self.confidence, "power_cap_mw": self.power_mw}  # fmt: skip


def granularity(hw: Hardware) -> int:
    """GPUs a job takes at a time: a node, or the GPUs of an NVL72 rack that a job fills."""
    return hw.job_gpus_per_system


def counts(unit: int, max_gpus: int) -> list[int]:
    """Candidate GPU counts: unit x (1, 2, 3, then m x 2^k with m in 4..7), up to `max_gpus`."""
    multiples = {1, 2, 3} | {m * 2**k for m in (4, 5, 6, 7) for k in range(0, 20)}
    return sorted(unit * k for k in multiples if unit * k <= max_gpus)


def layout_runs_nowhere(base: Scenario, hw: Hardware, grid: Sequence[int]) -> str | None:
    """Why the given layout runs at none of the GPU counts `grid` (a plan's, on `hw`), with what to change; None
    where it runs at one, or the grid is empty. A plan says it without searching (a fleet's plan as plain plan)."""
    if not grid or not all(layout_at_count_problem(replaced(base, n_gpus=n), base) for n in grid):
        return None
    fewest = next((n for n in grid if n >= fits_count(base, hw)), grid[-1])  # where the model state fits
    broken = layout_at_count_problem(replaced(base, n_gpus=fewest), base)
    return (f"the given layout runs at none of the GPU counts plan tries ({_counts_text(grid)}): e.g. {broken}; "
            f"{_layout_hint(replaced(base, n_gpus=fewest))}")  # fmt: skip


def refuse_layouts_nowhere(bases: Sequence[tuple[str, Scenario]], max_gpus: int) -> None:
    """Refuse, as plain plan does, where the given layout of every candidate (label, scenario) runs at none of the
    GPU counts up to `max_gpus` (a fleet plan, which caps its counts no higher, said so in a table and exited 0)."""
    reasons: list[tuple[str, str | None]] = []
    for label, scenario in bases:
        hw = resolve(scenario.gpu, scenario.system)
        why = layout_runs_nowhere(scenario, hw, counts(granularity(hw), max_gpus))
        if why is None:
            return
        reasons.append((label, why))
    raise _no_count_runs(reasons)


def _no_count_runs(reasons: Sequence[tuple[str, str | None]]) -> PerfmodelError:
    """The refusal of a plan none of whose candidates (label, why) runs at any GPU count tried: bad input."""
    said = "; ".join(f"{label}: {why}" for label, why in reasons)
    return PerfmodelError(f"plan: no GPU count tried runs on any candidate ({said})")


def _counts_text(grid: Sequence[int]) -> str:
    """The GPU counts a plan tries, as a reason lists them: the first few and the last, from the grid itself."""
    shown = [f"{n:,}" for n in grid]
    return ", ".join(shown if len(shown) <= 8 else [*shown[:6], "...", shown[-1]])


def _layout_hint(scenario: Scenario) -> str:
    """What to change when the given layout runs at none of the counts tried: the given degrees the broken rule
    names (TP x PP), or the layout as a whole for a campaign's phases."""
    broken = None if scenario.phase else given_layout_problem(scenario)
    dims = [dim.upper() for dim in broken[0] if dim != "n_gpus"] if broken is not None else []
    if not dims:
        return "give a layout that runs at one of these counts, or leave it out to let plan search it"
    pronoun = "them" if len(dims) > 1 else "it"
    return (f"give a {' x '.join(dims)} that divides one of these counts, or leave {' and '.join(dims)} out to let "
            f"plan search {pronoun}")  # fmt: skip


WITH_LOSSES, WITH_FAILURES, FAILURE_FREE = "with losses", "with failures", "failure-free"


def goal_basis(p: Result) -> str:
    """Which run a goal is checked against: the run with every real-world loss (failures among them) where the
    losses model prices them, else with the expected failures where the goodput model is on, else failure-free."""
    phases = p.phases.values() if isinstance(p, Campaign) else (p,)
    if all(phase.losses is not None for phase in phases):
        return WITH_LOSSES
    return FAILURE_FREE if p.goodput is None else WITH_FAILURES


def goal_run(p: Result) -> Run | None:
    """The run on the goal's basis; None when failures stop it from ever finishing."""
    assert p.run is not None
    return run_on(p, goal_basis(p))


def run_on(p: Result, basis: str) -> Run | None:
    """`p`'s run on `basis` (a campaign's, or one of its phases' on the campaign's basis: a phase without goodput
    runs failure-free, as Campaign.run_with_failures sums it)."""
    if basis == WITH_LOSSES:
        return p.run_with_losses
    return p.run_with_failures if basis == WITH_FAILURES and p.goodput is not None else p.run


def wall_s(p: Result) -> float:
    """Time to train on the goal's basis; infinite when failures stop the run from ever finishing."""
    run = goal_run(p)
    return math.inf if run is None else run.time_s


def cost_usd(p: Result) -> float | None:
    """Cost at the run's price on the goal's basis; None without a price (mi355x has no public one): a deadline is
    planned without it, a budget is not. Infinite, like `wall_s`, when failures stop the run from ever finishing:
    no budget buys it."""
    run = goal_run(p)
    return math.inf if run is None else run.cost_usd


def _system_mw(hw: Hardware, pue: float) -> float:
    """One system's power at the wall x PUE, MW: every GPU it holds (an NVL72 rack's 72, of which a job fills 64)."""
    powered = hw.domain_gpus if hw.system.ranks_per_domain is not None else hw.job_gpus_per_system
    return powered * hw.it_power_w_per_gpu * pue / 1e6


def gpus_of(p: Result) -> int:
    """The GPUs a plan takes (a campaign's most, its first phase's)."""
    return p.n_gpus if isinstance(p, Campaign) else p.layout.n_gpus


def spare_mw(scenario: Scenario, hw: Hardware) -> float:
    """The site power a job's spare GPUs (spare_gpus) draw, MW: each at the wall x PUE, as the job's own. A hot
    spare is held powered to step in at once, and a site's cap is a provisioning limit: it must hold a spare's full
    draw when one replaces a failed node, so the spares are counted at their GPUs' full power, not idle."""
    return spare_gpus(scenario) * hw.it_power_w_per_gpu * scenario.cost.pue / 1e6


def power_mw(p: Result, gpus: int | None = None) -> float:
    """The site power a plan draws while it trains, MW: the whole systems its GPUs take (`gpus` beside its spares,
    else its most: gpus_of), at the wall x PUE, busy or idle, and its spare GPUs (spare_mw; before, a plan's power
    left them out while its pools and bill held them)."""
    systems = math.ceil((gpus_of(p) if gpus is None else gpus) / p.hardware.job_gpus_per_system)
    return systems * _system_mw(p.hardware, p.scenario.cost.pue) + spare_mw(p.scenario, p.hardware)


def gpus_within(hw: Hardware, cap_mw: float, pue: float) -> int:
    """The most GPUs a job may take within `cap_mw`: whole systems, each at the wall x PUE (`power_mw`); 0 below
    one system."""
    return max(math.floor(cap_mw / _system_mw(hw, pue)), 0) * hw.job_gpus_per_system


def power_cap_gpus(hw: Hardware, cap_mw: float, pue: float, where: str = "--power-mw", spares_mw: float = 0.0) -> int:
    """`gpus_within` a site's cap less the job's spares' power (`spares_mw`, spare_mw), which must hold one system
    beside them (a one-line error names it and `where` it is set)."""
    system_mw = _system_mw(hw, pue)
    if gpus_within(hw, cap_mw - spares_mw, pue) < 1:
        beside = f" beside its spares' {spares_mw:.4f} MW" if spares_mw else ""
        raise PerfmodelError(
            f"{where} {cap_mw:g}: below one {hw.system.id} ({system_mw:.4f} MW: its GPUs at "
            f"{hw.it_power_w_per_gpu:,.0f} W at the wall x PUE {pue:g}){beside}"
        )
    return gpus_within(hw, cap_mw - spares_mw, pue)


def _budget_cost(p: Result) -> float:
    cost = cost_usd(p)
    if cost is None:
        raise PerfmodelError(f"a budget needs a price: {p.price.source}")
    return cost


def spread(p: Result) -> chance.Spread:
    """What the run on the goal's basis varies by (planning/confidence.py): the prediction's interval, the scenario's
    run-to-run variability (the measured one by default) and, on a basis with failures, its expected interruptions
    (every phase's), each costing the mean of the goodput model's loss to lost work, restarts and checkpoint reads;
    its cost by the price too where the user states a distribution of it."""
    phases = () if goal_basis(p) == FAILURE_FREE else p.phases.values() if isinstance(p, Campaign) else (p,)
    base = chance.Spread(p.interval, run_sd(p.scenario.losses.run_to_run_sd), price=p.price.drawn)
    return failure_spread(base, phases, wall_s(p))


def time_factor(p: Result, confidence: float) -> float:
    """The factor on the run's time (and cost at a quote not drawn) on the goal's basis at `confidence`."""
    return chance.spread_factor(spread(p), confidence)


def time_at(p: Result, confidence: float) -> float:
    """The time to train on the goal's basis at `confidence`, s (a fleet plan holds its GPUs for it)."""
    return wall_s(p) * time_factor(p, confidence)


def cost_factor(p: Result, confidence: float) -> float:
    """The factor on the run's cost at its quoted price on the goal's basis at `confidence` (the time's, unless the
    user states a price distribution: then time x price)."""
    return chance.cost_factor(spread(p), confidence)


def p_within(p: Result, deadline_s: float) -> float:
    """The probability that the run on the goal's basis finishes within `deadline_s` (planning/confidence.py)."""
    return chance.spread_within(spread(p), deadline_s / wall_s(p))


def p_affordable(p: Result, budget_usd: float) -> float | None:
    """The probability that the run on the goal's basis costs at most `budget_usd` at its price (None: no price)."""
    cost = cost_usd(p)
    return None if cost is None else p_cost_within(p, budget_usd, cost)


def p_cost_within(p: Result, budget_usd: float, cost: float) -> float:
    """The probability that a cost of `cost` at the point, proportional to the run's time (and to the price, where
    a distribution of it is stated), stays within the budget."""
    return 1.0 if cost == 0 else chance.cost_within(spread(p), budget_usd / cost)


Tried = dict[tuple[Scenario, int], tuple[Result | None, str | None, dict[tuple[str, float], float]]]
"""Predictions already made, by scenario and count (None, with why, where no layout runs), with their times and costs
by confidence (`_Tries.time`, `_Tries.cost`): plans that try the same counts of the same work (a fleet's lead times
and sites, its jobs in every order) share them."""


@dataclass
class _Tries:
    """Predictions of one candidate at the counts tried (a campaign's, with the phases that follow its count at
    each), memoised; None where no layout runs (with why)."""

    base: Scenario
    grid: list[int]
    confidence: float = chance.MEDIAN
    """Times and costs are their quantiles at this probability."""
    found: dict[int, Result | None] = field(default_factory=dict)
    why: dict[int, str] = field(default_factory=dict)
    shared: Tried = field(default_factory=dict)
    order: list[int] = field(default_factory=list)
    """The indices of the counts tried, in order, kept as each is tried (`tried`)."""

    def at(self, index: int) -> Result | None:
        n = self.grid[index]
        if n not in self.found:
            if (self.base, n) not in self.shared:
                scenario = replaced(self.base, n_gpus=n)
                made, why = None, layout_at_count_problem(scenario, self.base)  # a given layout no search here runs
                if why is None:
                    try:
                        made = predict_campaign(scenario) if scenario.phase else _searched(scenario, n)
                    except PerfmodelError as exc:
                        why = str(exc)
                self.shared[self.base, n] = made, why, {}
            result, why, _ = self.shared[self.base, n]
            self.found[n] = result
            bisect.insort(self.order, index)
            if why is not None:
                self.why[n] = why
        return self.found[n]

    def tried(self) -> list[int]:
        """The indices of the counts tried, in order."""
        return list(self.order)

    def time(self, index: int) -> float:
        return self._quantile("time", index, lambda p: time_at(p, self.confidence))

    def cost(self, index: int) -> float:
        return self._quantile("cost", index, lambda p: _budget_cost(p) * cost_factor(p, self.confidence))

    def _quantile(self, kind: str, index: int, of: Callable[[Result], float]) -> float:
        """`of` the prediction at index (infinite where none runs), memoised with the prediction for every plan
        sharing it at this confidence (a fleet's 6 jobs' 709 plans ask for 270 counts' times about 85,000 times)."""
        p = self.at(index)
        shared = self.shared[self.base, self.grid[index]][2]
        if (kind, self.confidence) not in shared:
            shared[kind, self.confidence] = math.inf if p is None else of(p)
        return shared[kind, self.confidence]


@dataclass(frozen=True)
class CandidatePlan:
    """The answer for one candidate: the plan (None when the goal cannot be met), what binds, or why not."""

    label: str
    granularity: int
    prediction: Result | None
    binds: str | None
    reason: str | None
    tried: dict[int, Result | None]
    goal: Goal
    neighbour: dict[str, Any] | None = None
    """The GPU count tried that shows why the plan's is the answer, its figures and why not it (`_neighbour`)."""

    @property
    def feasible(self) -> bool:
        return self.reason is None and self.prediction is not None

    @property
    def goal_basis(self) -> str | None:
        """The run its times and costs are (`goal_basis`), from any count tried; None when none ran."""
        return next((goal_basis(p) for p in (self.prediction, *self.tried.values()) if p is not None), None)

    def to_dict(self) -> dict[str, Any]:
        p = self.prediction
        record: dict[str, Any] = {
            "candidate": self.label,
            "feasible": self.feasible,
            "binds": self.binds,
            "reason": self.reason,
            "granularity_gpus": self.granularity,
            "counts_tried": sorted(self.tried),
            "goal_basis": self.goal_basis,
        }
        if p is None:
            return record | {"n_gpus": None, "plan": None}
        time_s, cost = wall_s(p), cost_usd(p)
        low, high = (p.interval.low, p.interval.high) if p.interval else (1.0, 1.0)
        run = goal_run(p)
        assert run is not None
        planned = p.to_dict()
        co2e_t = carbon.operational_t(run.energy_kwh, p.scenario.cost.grid_gco2_per_kwh)
        figures = {"time_to_train_days": time_s / 86400, "cost_usd": cost, "energy_kwh": run.energy_kwh,
                   "gpu_hours": run.gpu_hours, "co2e_t": co2e_t}  # fmt: skip
        return record | {
            "n_gpus": planned["n_gpus"],
            "layout": p.describe() if isinstance(p, Campaign) else p.layout.describe(),
            "time_to_train_days": time_s / 86400,
            "time_to_train_days_low": time_s * low / 86400,
            "time_to_train_days_high": time_s * high / 86400,
            "cost_usd": cost,
            "cost_usd_at_min_price": run.cost_usd_at_min_price,
            "cost_usd_at_max_price": run.cost_usd_at_max_price,
            "cost_usd_low": None if cost is None else cost * low,
            "cost_usd_high": None if cost is None else cost * high,
            "energy_kwh": run.energy_kwh,
            "energy_kwh_low": run.energy_kwh * low,
            "energy_kwh_high": run.energy_kwh * high,
            "gpu_hours": run.gpu_hours,
            "gpu_hours_low": run.gpu_hours * low,
            "gpu_hours_high": run.gpu_hours * high,
            "goodput": planned.get("goodput"),
            "power_mw": power_mw(p),
            "co2e_t": co2e_t,
            "co2e_embodied_t": carbon.embodied_t(run.gpu_hours),
            **chance.spread_quantiles(spread(p), figures, chance.PRICED),
            "deadline_share": None if self.goal.deadline_s is None else time_s / self.goal.deadline_s,
            "budget_share": None if cost is None or self.goal.budget_usd is None else cost / self.goal.budget_usd,
            **self._chances(p),
            "neighbour": self.neighbour,
            "plan": planned,
        }

    def _chances(self, p: Result) -> dict[str, Any]:
        """The time and cost at the goal's confidence, and the probabilities of meeting the deadline and the budget
        (planning/confidence.py); None where the goal has no deadline or budget, or the plan no price."""
        goal, factor, cost = self.goal, time_factor(p, self.goal.confidence), cost_usd(p)
        cost_at = None if cost is None else cost * cost_factor(p, goal.confidence)
        deadline = None if goal.deadline_s is None else p_within(p, goal.deadline_s)
        budget = None if goal.budget_usd is None else p_affordable(p, goal.budget_usd)
        return {
            "time_to_train_days_at_confidence": wall_s(p) * factor / 86400,
            "cost_usd_at_confidence": cost_at,
            "p_meet_deadline": deadline,
            "p_within_budget": budget,
            "p_deadline": deadline,
            "p_budget": budget,
        }


def _searched(scenario: Scenario, n: int) -> Prediction:
    """The best layout of a one-phase scenario on `n` GPUs, at its global batch or the default for the count. The
    search ranks layouts per token (predict.search_objective), so its choice for the same work at another token
    count (a fleet's jobs, 405B on 1T-15T tokens: 75 searches where 273) is priced at these tokens as the search
    prices its choice, not searched again (`predict.searched_layout` keeps it on the context, which the token count
    does not change). The search is `choose_layout`'s: `search.best_layout`, `predict.search_scenario`'s best
    layout and count of layouts without pricing every layout in full (DeepSeek-V3 on 1,280 GB200: 5.5M layouts,
    ~6 s a count exhaustively, ~2 s bounded)."""
    gbs = scenario.parallelism.gbs or scenario.default_gbs()
    scenario = replaced(scenario, parallelism=replaced(scenario.parallelism, gbs=gbs))
    ctx = context_for(scenario)
    layout, searched = searched_layout(scenario, ctx)
    return prediction_for(for_layout(scenario, layout), ctx, layout, searched, calibrated=True)


def _power_law_next(tries: _Tries, i: int, target_s: float, tried: Sequence[int]) -> int:
    """The index whose count should just meet `target_s`, from time ~ count^-a fitted on the last two tries."""
    t_i, n_i = tries.time(i), tries.grid[i]
    exponent = 1.0
    others = [j for j in tried if j != i and math.isfinite(tries.time(j))]
    if others and math.isfinite(t_i):
        j = others[-1]
        ratio = math.log(tries.grid[j] / n_i)
        if ratio:
            exponent = min(max(-math.log(tries.time(j) / t_i) / ratio, 0.3), 1.2)
    if not math.isfinite(t_i):
        return i + max(1, (len(tries.grid) - i) // 4)
    needed = n_i * (t_i / target_s) ** (1 / exponent)
    return next((k for k, n in enumerate(tries.grid) if n >= needed), len(tries.grid) - 1)


def _guess(tries: _Tries, seed: int, deadline_s: float) -> None:
    """A few tries from the seed towards the deadline, each count the power law (time ~ count^-a) says should meet
    it, until one does, the time stops improving or the counts end: GPU-hours near the answer, which bound where the
    scan (`_search`) starts."""
    i, tried, last = seed, [seed], len(tries.grid) - 1
    while tries.time(i) > deadline_s and i < last:
        if math.isfinite(tries.time(i)) and any(tries.time(j) <= tries.time(i) for j in tried if j < i):
            return
        i = min(max(_power_law_next(tries, i, deadline_s, tried), i + 1), last)
        tried.append(i)


def _gallop(tries: _Tries, seed: int, budget: float | None) -> None:
    """Tries from the seed up an octave at a time (the same m of m x 2^k units: the batch divides alike) while the
    counts do not run or run faster (within the budget, if any): a fast count, whose time bounds where the scan
    (`_search`) starts."""
    i, last = seed, len(tries.grid) - 1
    while i < last and (tries.at(i) is None or budget is None or tries.cost(i) <= budget):
        if tries.at(i) is not None and any(tries.time(j) <= tries.time(i) for j in tries.tried() if j < i):
            return
        i = next((k for k, n in enumerate(tries.grid) if n >= 2 * tries.grid[i]), last)


def _fewest_possible(tries: _Tries, target_s: float) -> int:
    """The first index whose count could still finish within `target_s`: one doing the work in GPU_HOURS_FLOOR of
    the fewest GPU-hours of any count tried (index 0 before any count runs)."""
    work = [tries.grid[i] * tries.time(i) for i in tries.tried() if math.isfinite(tries.time(i))]
    least = GPU_HOURS_FLOOR * min(work) / target_s if work else 0.0
    return next((k for k, n in enumerate(tries.grid) if n >= least), len(tries.grid) - 1)


Price = Callable[[Result, float], float]
"""What a plan meeting a deadline costs where that is not the GPUs' own price (a fleet's mix of pools and offers),
given the run and its time at the goal's confidence (`time_at`, s); infinite where it cannot be held (a fleet's mix
beside other jobs)."""
PriceAt = Callable[[int], float]
"""What a deadline's plan minimises among the counts meeting it, by the count's index (`plan_candidate`)."""


@dataclass
class _Bests:
    """What a scan (`_search`) reads at every count, kept as each count is tried: the fastest and the cheapest run
    and the largest count within the budget (`stop`), and the answer. Found afresh among every count tried at each
    count, they made a scan's work grow as the square of the counts it tries. Ties go to the fewer GPUs, as a
    `min` over the counts in order gives them."""

    tries: _Tries
    deadline: float | None
    budget: float | None
    price: PriceAt | None
    fastest: int | None = None
    cheapest: int | None = None
    within: int | None = None
    answer: int | None = None
    """The fewest GPUs meeting the deadline within the budget (with `price`, the cheapest at it), or without a deadline
    the fastest within the budget (the fewer GPUs of equal figures)."""

    def __post_init__(self) -> None:
        for i in self.tries.tried():
            self.add(i)

    def add(self, i: int) -> None:
        """Count index i in, once it is tried (again: no change)."""
        tries, budget = self.tries, self.budget
        if tries.at(i) is None:
            return
        self.fastest = _fewer(self.fastest, i, tries.time)
        affordable = budget is None or tries.cost(i) <= budget
        if budget is not None:
            self.cheapest = _fewer(self.cheapest, i, tries.cost)
            self.within = i if affordable and (self.within is None or i > self.within) else self.within
        if self.deadline is None and affordable:
            self.answer = _fewer(self.answer, i, tries.time)
        elif self.deadline is not None and tries.time(i) <= self.deadline and affordable:
            self.answer = _fewer(self.answer, i, lambda k: k if self.price is None else self.price(k))

    def stop(self, i: int) -> str | None:
        """Why the upward scan ends at index i, or None: 'scaling' where its count is STALL_FACTOR times the fastest
        count tried, 'budget' where it is STALL_FACTOR times the largest count within the budget (none being within
        it, the cheapest), 'max-gpus' at the last count."""
        grid = self.tries.grid
        if self.fastest is not None and grid[i] >= STALL_FACTOR * grid[self.fastest]:
            return "scaling"
        if self.fastest is not None and self.budget is not None:
            bound = self.cheapest if self.within is None else self.within
            assert bound is not None
            if grid[i] >= STALL_FACTOR * grid[bound]:
                return "budget"
        return "max-gpus" if i == len(grid) - 1 else None


def _fewer(best: int | None, i: int, key: Callable[[int], float]) -> int:
    """Index i where its key is under best's, or equal with i the fewer GPUs; else best."""
    return i if best is None or (key(i), i) < (key(best), best) else best


def _search(
    tries: _Tries, seed: int, deadline: float | None, budget: float | None, price: PriceAt | None = None
) -> tuple[int | None, str]:
    """The answer's index (`_Bests.answer`: with neither goal, the fastest count) and why the scan stopped
    ('scaling', 'budget' or 'max-gpus': `_Bests.stop`).

    Neither time nor cost is taken to move monotonically with the count (STALL_FACTOR): after a few guided tries
    (`_guess`, `_gallop`) every count of the grid is tried in turn from the fewest that could still meet the time
    target (the deadline, or the fastest time within the budget: `_fewest_possible`) upward, until the first count
    meeting a deadline (with `price`, STALL_FACTOR times the GPUs of the cheapest meeting it), else until it stops;
    where the counts tried since lower the bound, the counts below are tried too."""
    if deadline is not None:
        _guess(tries, seed, deadline)
    else:
        _gallop(tries, seed, budget)
    bests = _Bests(tries, deadline, budget, price)

    def floor() -> int:
        if deadline is not None:
            return _fewest_possible(tries, deadline)
        found = bests.answer  # none within the budget yet: from the seed (the model state fits)
        return seed if found is None else _fewest_possible(tries, tries.time(found))

    def answered(i: int) -> bool:
        """Whether the scan up to index i settles a deadline's answer."""
        found = None if deadline is None else bests.answer
        limit = 0 if found is None else tries.grid[found] * (1 if price is None else STALL_FACTOR)
        return found is not None and tries.grid[i] >= limit

    start, end, why = floor(), len(tries.grid), "max-gpus"
    while True:
        for i in range(start, end):
            bests.add(i)
            if answered(i):
                break
            if end == len(tries.grid) and (stop := bests.stop(i)) is not None:
                why = stop
                break
        lower = floor()
        if lower >= start:
            return bests.answer, why
        start, end = lower, start


def _scaling_reason(p: Result | None, why: str | None, at_max: bool, confidence: float, ceiling: str) -> str:
    if p is None:
        return why or "no layout runs"
    time_s = time_at(p, confidence)
    days = f"{time_s / 86400:,.1f} days {goal_basis(p)}{chance.at(confidence)}"
    if isinstance(p, Campaign):
        head = f"even {p.n_gpus:,} {p.hardware.accelerator.id} need {days} for the campaign"
        return f"{head}: at {ceiling} / the largest count tried" if at_max else f"{head}: its phases stop scaling"
    lo = p.layout
    head = f"even {lo.n_gpus:,} {p.hardware.accelerator.id} need {days}"
    if at_max:
        return f"{head}: at {ceiling} / the largest count tried"
    return (
        f"{head}: scaling stops at DP={lo.dp:,} (TP{lo.tp} PP{lo.pp} CP{lo.cp}; a global batch of {lo.gbs:,} "
        f"sequences, {lo.gbs * lo.seq_len / 1e6:,.1f}M tokens per step, and MBS {lo.mbs})"
    )


def plan_candidate(
    base: Scenario, label: str, goal: Goal, max_gpus: int, seed_n: int, ceiling: str = "--max-gpus",
    tried: Tried | None = None, price: Price | None = None,
) -> CandidatePlan:  # fmt: skip
    """The plan for one candidate (its scenario `base`: hardware, precision and work set, layout open); `ceiling`
    names what sets `max_gpus` (--max-gpus, or the power cap's GPUs); `tried` the predictions other plans made;
    `price`, with a deadline, what the plan minimises among the counts meeting it (a fleet's mix; else the run's
    cost at the goal's confidence, `_Tries.cost`, or the GPUs where the candidate has no price)."""
    hw = resolve(base.gpu, base.system)
    unit = granularity(hw)
    grid = counts(unit, max_gpus)
    if not grid:
        raise PerfmodelError(f"--max-gpus {max_gpus:,}: below one unit of {hw.system.id} ({unit} GPUs)")
    tries = _Tries(base, grid, goal.confidence, shared={} if tried is None else tried)
    seed = next((k for k, n in enumerate(grid) if n >= seed_n), len(grid) - 1)
    priced: PriceAt | None = None
    if price is not None:
        priced = functools.cache(lambda i: price(_ran(tries, i), tries.time(i)))  # the mix at each count, once
    elif goal.deadline_s is not None and scenario_price(base, hw).usd_per_gpu_hour is not None:
        priced = tries.cost

    def done(index: int | None, binds: str | None, reason: str | None = None) -> CandidatePlan:
        p = None if index is None else tries.at(index)
        beside = None if index is None or reason is not None else _neighbour(tries, index, binds, goal, price)
        return CandidatePlan(label, unit, p, binds, reason, dict(tries.found), goal, beside)

    nowhere = layout_runs_nowhere(base, hw, grid)
    if nowhere is not None:  # said per candidate, unsearched
        return done(None, None, nowhere)
    if goal.budget_usd is not None:
        seeded = tries.at(seed)
        if seeded is not None and seeded.price.usd_per_gpu_hour is None:
            return done(None, None, f"a budget needs a price: {seeded.price.source}")
        _check_step_cost(seeded, goal.budget_usd)
    index, why = _search(tries, seed, goal.deadline_s, goal.budget_usd, priced)
    runs = [k for k in tries.tried() if tries.at(k) is not None]
    if goal.deadline_s is not None:
        if index is not None:
            return done(index, "deadline")
        met = [k for k in runs if tries.time(k) <= goal.deadline_s]
        if met and goal.budget_usd is not None:  # the deadline is met, but never within the budget
            first, cheapest = min(met), min(met, key=tries.cost)
            reason = (
                f"the fewest GPUs meeting the deadline, {grid[first]:,}, cost {_cost_text(tries, first)}, "
                f"over the budget of {usd_text(goal.budget_usd)}"
            )
            if cheapest != first:
                reason += f" (the cheapest meeting it, {grid[cheapest]:,}, cost {_cost_text(tries, cheapest)})"
            return done(first, None, reason)
        if why == "budget" and goal.budget_usd is not None:  # the scan left the budget behind first
            within = [k for k in runs if tries.cost(k) <= goal.budget_usd]
            return done(None, None, _priced_out(tries, within, goal.budget_usd, max(runs)))
        fits = next((k for k, n in enumerate(grid) if n >= fits_count(base, hw)), len(grid) - 1)
        fastest, _ = _search(tries, fits, None, None)  # what the deadline misses by: the fastest count
        best = min(tries.tried(), key=tries.time) if fastest is None else fastest
        p = tries.at(best)
        reason = _scaling_reason(p, tries.why.get(grid[best]), best == len(grid) - 1, goal.confidence, ceiling)
        return done(None, None, reason)
    assert goal.budget_usd is not None
    if index is None:
        if not runs:
            return done(None, None, next(iter(tries.why.values()), "no layout runs"))
        return done(None, None, _priced_out(tries, [], goal.budget_usd, max(runs)))
    binds = "budget" if any(tries.time(k) < tries.time(index) for k in runs) else why
    if binds == "max-gpus" and ceiling != "--max-gpus":
        binds = "power-mw"
    return done(index, binds)


def _ran(tries: _Tries, index: int) -> Result:
    """The prediction at index, which runs (`_Bests` prices only those)."""
    p = tries.at(index)
    assert p is not None
    return p


def _neighbour(tries: _Tries, index: int, binds: str | None, goal: Goal, price: Price | None) -> dict[str, Any] | None:
    """The GPU count tried that shows why index's is the answer, its time and cost at the goal's confidence and why
    it is not the answer: where the deadline binds, the next count fewer (too slow, or over the budget, or dearer:
    at its own price, or as a fleet's mix with `price`); where the budget binds, the fewest GPUs of the faster
    counts (over it); else the fastest of the larger counts tried (no faster: scaling has stopped). None where
    there is none."""
    runs = [k for k in tries.tried() if tries.at(k) is not None]
    if binds == "deadline":
        k = index - 1 if index and tries.grid[index - 1] in tries.found else None
    elif binds == "budget":
        k = min((k for k in runs if tries.time(k) < tries.time(index)), default=None)
    else:
        k = min((k for k in runs if k > index), key=tries.time, default=None)
    if k is None:
        return None
    n, p = tries.grid[k], tries.at(k)
    if p is None:
        return {"n_gpus": n, "time_to_train_days": None, "cost_usd": None,
                "why": f"{n:,} GPUs run no layout: {tries.why.get(n, 'no layout runs')}"}  # fmt: skip
    days, at = tries.time(k) / 86400, f"{goal_basis(p)}{chance.at(tries.confidence)}"
    cost = None if cost_usd(p) is None else tries.cost(k)  # memoised; None without a price, which `cost` refuses
    money = "no price" if cost is None else usd_text(cost)
    if binds == "deadline" and goal.deadline_s is not None and tries.time(k) <= goal.deadline_s:
        mix_usd = None if price is None else price(p, tries.time(k))  # a fleet's mix at the point
        if mix_usd is not None and not math.isfinite(mix_usd):
            why = f"{n:,} GPUs ({days:,.1f} days {at}) do not fit beside the other jobs"
        elif mix_usd is not None:
            why = f"{n:,} GPUs ({days:,.1f} days {at}) cost {usd_text(mix_usd)} as a mix, more"
        else:
            over = goal.budget_usd is not None and tries.cost(k) > goal.budget_usd
            why = f"{n:,} GPUs ({days:,.1f} days) cost {money} {at}, {'over the budget' if over else 'more'}"
    elif binds == "deadline":
        why = f"{n:,} GPUs, one step fewer, need {days:,.1f} days {at}"
    elif binds == "budget":
        why = f"{n:,} GPUs ({days:,.1f} days) cost {money} {at}, over the budget"
    else:
        why = f"{n:,} GPUs are no faster: {days:,.1f} days {at}"
    return {"n_gpus": n, "time_to_train_days": days, "cost_usd": cost, "why": why}


def _priced_out(tries: _Tries, within: list[int], budget: float, top: int) -> str:
    """Why no count is within the budget (`within`: those that are, none of them meeting the deadline), the scan
    having stopped at index `top`."""
    if not within:
        cheapest = min((k for k in tries.tried() if tries.at(k) is not None), key=tries.cost)
        return f"even {tries.grid[cheapest]:,} GPUs (the cheapest count tried) cost {_cost_text(tries, cheapest)}"
    fastest = min(within, key=tries.time)
    p = tries.at(fastest)
    assert p is not None
    return (
        f"no count within the budget of {usd_text(budget)} meets the deadline: the fastest within it, "
        f"{tries.grid[fastest]:,} GPUs, needs {tries.time(fastest) / 86400:,.1f} days {goal_basis(p)}"
        f"{chance.at(tries.confidence)}, and the counts tried above {tries.grid[max(within)]:,} up to "
        f"{tries.grid[top]:,} cost more"
    )


def _cost_text(tries: _Tries, index: int) -> str:
    """The cost at a count tried and its basis: '$41.20M with losses'."""
    p = tries.at(index)
    assert p is not None
    return f"{usd_text(tries.cost(index))} {goal_basis(p)}{chance.at(tries.confidence)}"


def _check_step_cost(p: Result | None, budget: float) -> None:
    if not isinstance(p, Prediction) or p.price.usd_per_gpu_hour is None:  # a campaign has no one step
        return
    step_usd = p.step_time_s * p.layout.n_gpus * p.price.usd_per_gpu_hour / 3600
    if budget < step_usd:
        raise PerfmodelError(
            f"--budget {budget:,.2f}: below the cost of one training step (${step_usd:,.2f} on "
            f"{p.layout.n_gpus:,} {p.hardware.accelerator.id})"
        )


def fits_count(base: Scenario, hw: Hardware) -> int:
    """The fewest GPUs whose HBM holds the model state (16 B/param) twice over: where a search for a budget or the
    fastest count starts."""
    return math.ceil(2 * 16 * base.model_spec().params / hw.accelerator.memory_bytes)


def seed_count(base: Scenario, hw: Hardware, goal: Goal) -> int:
    """Where to start looking: the count that would meet the deadline at a third of the recipe's GEMM peak,
    else `fits_count`. A starting point only: every answer comes from searches."""
    model = base.model_spec()
    fits = fits_count(base, hw)
    tokens = sum(phase_tokens(base)) if base.phase else base.tokens
    if goal.deadline_s is None or tokens is None:
        return fits
    flops = tokens * model.model_flops_per_token(base.parallelism.seq_len)
    peak = hw.accelerator.peak_flops(get_recipe(base.precision, hw.accelerator).gemm_format)
    return max(fits, math.ceil(flops / (goal.deadline_s * peak * SEED_SHARE_OF_PEAK)))


@dataclass(frozen=True, repr=False)
class PlanReport(Shown):
    """Every candidate's plan for one goal; shown short, a line per feasible plan (`to_dict` has them all)."""

    goal: Goal
    plans: list[CandidatePlan]
    elapsed_s: float

    def _shown(self) -> list[dict[str, Any]]:
        return [record for c in self.feasible() for record in c.prediction._shown()]  # type: ignore[union-attr]

    def feasible(self) -> list[CandidatePlan]:
        return [c for c in self.plans if c.feasible]

    def cheapest(self) -> CandidatePlan | None:
        """The feasible plan of least cost among those with a price (None when none has one)."""
        priced = [(cost, c) for c in self.feasible() if (cost := cost_usd(c.prediction)) is not None]  # type: ignore[arg-type]
        return min(priced, key=lambda pair: pair[0], default=(None, None))[1]

    def fastest(self) -> CandidatePlan | None:
        return min(self.feasible(), key=lambda c: wall_s(c.prediction), default=None)  # type: ignore[arg-type]

    def estimated(self) -> list[CandidatePlan]:
        """The feasible plans priced at an estimate (GB300's GB200 list x 1.25): the cheapest verdict rests on them."""
        return [c for c in self.feasible() if c.prediction is not None and c.prediction.price.basis == "estimate"]

    def to_dict(self) -> dict[str, Any]:
        cheapest, fastest = self.cheapest(), self.fastest()
        return {
            "goal": self.goal.to_dict(),
            "candidates": [c.to_dict() for c in self.plans],
            "cheapest": None if cheapest is None else cheapest.label,
            "cheapest_rests_on_estimates": [c.label for c in self.estimated()],
            "fastest": None if fastest is None else fastest.label,
            "elapsed_s": self.elapsed_s,
        }

    def to_records(self) -> list[dict[str, Any]]:
        """One flat record per candidate (the rows `plan --format csv` prints), ready for pandas.DataFrame; a
        campaign's phases are in `to_dict` only."""
        return [{k: v for k, v in flatten(c.to_dict()).items() if k != "plan.phases"} for c in self.plans]


def plan(
    bases: Sequence[tuple[str, Scenario]],
    goal: Goal,
    max_gpus: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> PlanReport:
    """Plan every candidate (label, scenario) for the goal. The scenarios need the work (tokens or a benchmark)."""
    start = time.perf_counter()
    plans = []
    for done, (label, scenario) in enumerate(bases, 1):
        if scenario.tokens is None and scenario.benchmark is None and not scenario.phase:
            raise PerfmodelError("plan needs the work to train: --tokens (e.g. 15T) or --benchmark")
        if scenario.phase and all(phase.n_gpus is not None for phase in scenario.phase):
            raise PerfmodelError(
                "plan: every phase of the campaign gives its own n_gpus, so none follows the count plan seeks "
                "(give a phase gpu_fraction, or leave its n_gpus out)"
            )
        hw = resolve(scenario.gpu, scenario.system)
        limit, ceiling = max_gpus or MAX_GPUS, "--max-gpus"
        cap = goal.power_mw
        if (
            cap is not None
            and (powered := power_cap_gpus(hw, cap, scenario.cost.pue, spares_mw=spare_mw(scenario, hw))) < limit
        ):
            limit, ceiling = powered, f"--power-mw {cap:g} ({powered:,} GPUs)"
        plans.append(plan_candidate(scenario, label, goal, limit, seed_count(scenario, hw, goal), ceiling))
        if progress is not None:
            progress(done, len(bases))
    if not any(p is not None for c in plans for p in c.tried.values()):  # nothing to plan with: bad input
        raise _no_count_runs([(c.label, c.reason) for c in plans])
    return PlanReport(goal, plans, time.perf_counter() - start)


def plan_request(
    source: ScenarioSource,
    options: dict[str, Any],
    origins: dict[str, str],
    targets: Sequence[str],
    goal: Goal,
    max_gpus: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    spelling: Spelling = CLI,
    max_candidates: int | None = None,
    purchase_read: PurchaseRead = RENTING,
) -> PlanReport:
    """The plan for `source` with `options` applied, on each target `ID[:PRECISION[,PRECISION...]]` (a precision
    list makes one candidate per precision; at most `max_candidates`); the layout is reopened, to be searched at
    every count tried. Errors name the CLI's flags, or with `spelling` API the Python API's (candidate_bases, as the
    purchase options read renting)."""
    bases = candidate_bases(source, options, origins, targets, spelling, max_candidates, purchase_read)
    first = bases[0][1] if bases else None
    if source is not None and first and first.tokens is None and first.benchmark is None and not first.phase:
        raise PerfmodelError(  # the file's own: plan's line named the flags only, where the file lacked the field
            f'{source_name(source)}: no work to train: set tokens (e.g. 15e12 or "15T") or benchmark in it, or pass '
            f"{spelling.name('tokens')} (e.g. 15T) or {spelling.name('benchmark')}"
        )
    return plan(bases, goal, max_gpus, progress)


class TooManyCandidates(PerfmodelError):
    """More candidates than a caller's bound (`max_candidates`: the HTTP server's, serve/work.py), refused as the
    targets are read, before any is loaded or planned; `count` for the caller's own line."""

    def __init__(self, count: int, limit: int, spelling: Spelling) -> None:
        super().__init__(f"{spelling.name('gpu')}: {count} candidates; at most {limit} (systems x precisions)")
        self.count = count


def candidate_bases(
    source: ScenarioSource,
    options: dict[str, Any],
    origins: dict[str, str],
    targets: Sequence[str],
    spelling: Spelling = CLI,
    max_candidates: int | None = None,
    purchase_read: PurchaseRead = RENTING,
) -> list[tuple[str, Scenario]]:
    """Each candidate's label and scenario: `source` with `options` applied on each target, layout reopened; more
    than `max_candidates` are refused (TooManyCandidates). Errors spell a target and its fix as the CLI's flags
    (`--gpu ID`), or with `spelling` API the Python API's (`gpu='ID'`), as compare_request's do; a purchase option
    the question does not read renting (`purchase_read`) is refused."""
    from perfmodel.planning.compare import checked_base, parse_target, scenarios, split_quote

    if options.get("n_gpus") is not None:
        raise PerfmodelError(
            f"{origins.get('n_gpus', 'n_gpus')}: plan finds the GPU count itself; to cap it, give "
            f"{spelling.name('max_gpus')}"
        )
    parsed = [
        replace(parse_target(f"{ident}:{precision}" if precision else ident, named, spelling), usd_per_gpu_hour=quote)
        for spec in targets
        for named in [spelling.given("gpu", shown(spec))]
        for unquoted, quote in [split_quote(spec, named, spelling)]
        for ident, _, precisions in [unquoted.partition(":")]
        for precision in (precisions.split(",") if precisions else [""])
    ]
    counted = next((spec for spec in targets if "@" in spec), None)
    if counted is not None:
        raise PerfmodelError(f"{spelling.given('gpu', counted)}: plan finds the GPU count itself; drop the '@N'")
    if max_candidates is not None and len(parsed) > max_candidates:
        raise TooManyCandidates(len(parsed), max_candidates, spelling)
    base = checked_base(parsed, source, options, origins, relayout=True, spelling=spelling, purchase_read=purchase_read)
    return [(_label(s), s) for s in scenarios(base, parsed, None, spelling)]


def _label(scenario: Scenario) -> str:
    hw = resolve(scenario.gpu, scenario.system)
    return f"{hw.system.id}:{scenario.precision}"
