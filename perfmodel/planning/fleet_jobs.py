"""Several jobs sharing one fleet (a fleet file's [[job]]s): each job's cheapest mix, no GPU counted twice.

The jobs are planned one at a time, each over what the jobs before it left. The order matters: a looser job may use an
owned pool for more GPU-hours than the tighter one it would go to. Up to MAX_ORDERED jobs every order is planned (a
job's plans over one leftover, and every prediction, shared between orders) and the one serving the most jobs for the
least total cost is kept, so the answer is never dearer than the greedy one, which is among them; beyond that the
tightest deadline goes first (file order among equal deadlines), the order a planner would hand out the fleet, and the
report says so. Each job's mix is still its own cheapest over what it finds: an exact split of every pool between the
jobs (a layout search per split) is not searched. A job holds its mix's GPUs from its start to its finish at the goal's
confidence (of an offer billed on demand, only what each phase of a campaign takes, while that phase runs: another job
may take what it gives back, and the power it stops drawing, FleetPlan.draws); it starts at day 0, or at its
`start_days`, or when the job it runs `after` finishes (the later), once its offers' lead times have passed. A job
planned later takes what the jobs before it leave while it holds it (planning/fleet.py `Beside`): its held sources
(pools, reserved offers, bought systems) what they leave at every moment of its window, its start to its finish; of an
on-demand offer, each phase of a campaign what they leave while that phase runs. So jobs one after another reuse the
same GPUs, jobs at the same time never share one, and a campaign's small first phase may run beside a short job and
its big phase after it, where its most beside the short job's would not fit. A job added never lowers another's
cost: whatever the order, a job finds at most the whole fleet, and less capacity never gives a cheaper mix
(planning/fleet.py fills cheapest first). A site's power cap (`--power-mw`) is shared the same way (planning/fleet.py
`power_site`; each phase's draw against what the others draw then), so the jobs at a site never draw more than its
cap at once.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import permutations
from pathlib import Path
from typing import Any

from perfmodel.errors import PerfmodelError, shown
from perfmodel.inputs.fleet import Fleet, job_tokens, load_fleet
from perfmodel.inputs.scenario import MAX_GPUS, Cost, Scenario
from perfmodel.planning.fleet import (
    DAY_S,
    FleetPlan,
    FleetReport,
    Others,
    Source,
    fleet_systems,
    most_each,
    plan_fleet,
    power_site,
    site_cap,
    sources,
    unplanned,
)  # fmt: skip
from perfmodel.planning.plan import Goal, Tried, candidate_bases, refuse_layouts_nowhere
from perfmodel.planning.request import (
    CLI,
    FLEET_OWNING_KEYS,
    OWNING_KEYS,
    PurchaseRead,
    ScenarioSource,
    Spelling,
)

GREEDY = "tightest deadline first"
ORDERED = "the order serving the most jobs for the least total cost, of every order tried"
MAX_ORDERED = 6
"""Up to this many jobs every order is tried (720 orders of 6, 1,956 job plans at most, sharing their predictions);
beyond it the jobs are planned greedily, the tightest deadline first."""


@dataclass(frozen=True)
class Job:
    """A job to plan: its name, its candidates (label, scenario on each system type), its goal and when it may start
    (not before `start_days`, nor before the job it runs `after` finishes)."""

    name: str
    bases: Sequence[tuple[str, Scenario]]
    goal: Goal
    start_days: float = 0.0
    after: str = ""


@dataclass(frozen=True)
class JobPlan:
    name: str
    report: FleetReport
    """Each system type's cheapest mix over what the jobs before left."""
    turn: int
    """1 for the job planned first."""

    @property
    def chosen(self) -> FleetPlan | None:
        return self.report.cheapest()

    def to_dict(self) -> dict[str, Any]:
        chosen = self.chosen
        return {"job": self.name, "turn": self.turn, "chosen": None if chosen is None else chosen.system,
                **self.report.to_dict()}  # fmt: skip


@dataclass(frozen=True)
class Held:
    """What a planned job's chosen mix holds from its start to its finish (at the goal's confidence), in days from
    now: its GPUs by source name as segments (start, finish, GPUs per source: the held sources for the window, an
    on-demand offer per campaign phase, FleetPlan.segments), and the power it draws at its `power_site` as segments
    (start, finish, MW: the window's, or each phase's renting on demand, FleetPlan.draws)."""

    job: str
    start_days: float
    finish_days: float
    segments: tuple[tuple[float, float, tuple[tuple[str, int], ...]], ...]
    site: str
    draws: tuple[tuple[float, float, float], ...]

    @property
    def power_mw(self) -> float:
        """The most power it draws at once."""
        return max(mw for _, _, mw in self.draws)

    def most(self) -> dict[str, int]:
        """The most GPUs of each source it holds at once."""
        return most_each(gpus for _, _, gpus in self.segments)


def others(held: Sequence[Held], start_days: float = 0.0, end_days: float = math.inf) -> Others:
    """What `held` holds from `start_days` to `end_days`: every GPU segment and power draw overlapping it, each draw
    at its job's `power_site`."""
    segments = [segment for h in held for segment in h.segments]
    return Others.of(segments, [(start, finish, h.site, mw) for h in held for start, finish, mw in h.draws],
                     start_days, end_days)  # fmt: skip


def most_held(
    held: Sequence[Held], start_days: float = 0.0, end_days: float = math.inf
) -> tuple[dict[str, int], dict[str, float]]:
    """The most GPUs of each source, and the most power at each site, that `held` holds at once between `start_days`
    and `end_days` (`Others.most`)."""
    return others(held, start_days, end_days).most(start_days, end_days)


@dataclass(frozen=True)
class SharedReport:
    jobs: list[JobPlan]
    """In the file's order."""
    capacity: list[Source]
    """Every pool and offer at its whole capacity."""
    elapsed_s: float
    power_cap_mw: float | None = None
    """Every site's power cap (`--power-mw`), shared by the jobs there at the same time."""
    held: tuple[Held, ...] = ()
    """What each job's chosen mix holds, and when."""
    order: str = GREEDY
    """How the order the jobs were planned in (their `turn`) was chosen."""
    orders_tried: int = 1
    greedy_cost_usd: float = 0.0
    """The chosen mixes' total cost had the jobs been planned the tightest deadline first."""
    fleet: Fleet = field(default_factory=Fleet)
    """The fleet file: its [[site]]s' own power caps."""

    def cost_usd(self) -> float:
        """The chosen mixes' total cost."""
        return sum(job.chosen.cost_usd() for job in self.jobs if job.chosen is not None)

    def use(self) -> list[dict[str, Any]]:
        """The fleet's use per pool and offer: its GPUs, each job's share, the most held at once (jobs one after
        another may each take the same GPUs) and what that leaves."""
        found, most = [], most_held(self.held)[0]
        each = {h.job: h.most() for h in self.held}
        for s in self.capacity:
            source = {"name": s.name, "kind": s.kind, "system": s.system, "site": s.site, "gpus": s.gpus}
            held = {job: gpus[s.name] for job, gpus in each.items() if gpus.get(s.name)}
            found.append(source | {"used": held, "peak": most.get(s.name, 0), "left": s.gpus - most.get(s.name, 0)})
        return found

    def power_use(self) -> list[dict[str, Any]]:
        """The power each capped site's jobs draw (MW at the wall), each job's most at once, the site's most at once and
        what that leaves of its cap (`site_cap`). Site "" is the sources of no named site, or the whole fleet where jobs
        span sites."""
        most, sites = most_held(self.held)[1], dict.fromkeys(h.site for h in self.held)
        caps = {site: cap[0] for site in sites if (cap := site_cap(self.fleet, self.power_cap_mw, site)) is not None}
        return [{"site": site, "cap_mw": cap, "used_mw": {h.job: h.power_mw for h in self.held if h.site == site},
                 "peak_mw": most[site], "left_mw": cap - most[site]} for site, cap in caps.items()]  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {"order": self.order, "orders_tried": self.orders_tried, "cost_usd": self.cost_usd(),
                "greedy_cost_usd": self.greedy_cost_usd, "jobs": [job.to_dict() for job in self.jobs],
                "fleet_use": self.use(), "power_use": self.power_use(), "elapsed_s": self.elapsed_s}  # fmt: skip

    def to_records(self) -> list[dict[str, Any]]:
        """One flat record per job and system type (`--format csv`)."""
        return [{"job": job.name, "turn": job.turn} | record for job in self.jobs for record in job.report.to_records()]


_Reports = dict[tuple[str, float, Others], FleetReport]


@dataclass(frozen=True)
class _State:
    """The jobs planned so far, in their turns, and what their chosen mixes hold."""

    planned: tuple[JobPlan, ...] = ()
    held: tuple[Held, ...] = ()

    def then(self, job: Job, fleet: Fleet, max_gpus: int | None, tried: Tried, reports: _Reports) -> _State:
        """This state with `job` planned next, beside what the jobs planned before it hold in its window (its start
        to its deadline: `others`; `reports`: the job's plans beside each such holding already planned, which other
        orders reach)."""
        turn = len(self.planned) + 1
        start = job.start_days
        if job.after:
            before = next((h for h in self.held if h.job == job.after), None)
            if before is None:
                report = unplanned(job.bases, job.goal, f"it runs after {job.after!r}, which no mix serves")
                return _State((*self.planned, JobPlan(job.name, report, turn)), self.held)
            start = max(start, before.finish_days)
        assert job.goal.deadline_s is not None
        beside = others(self.held, start, job.goal.deadline_s / DAY_S)
        if (job.name, start, beside) not in reports:
            reports[job.name, start, beside] = plan_fleet(job.bases, job.goal, fleet, max_gpus, beside, tried, start)
        report = reports[job.name, start, beside]
        chosen, held = report.cheapest(), self.held
        if chosen is not None and chosen.candidate is not None and chosen.candidate.prediction is not None:
            segments = tuple((start, finish, tuple((source.name, n) for source, n in taken))
                             for start, finish, taken in chosen.segments())  # fmt: skip
            site, draws = power_site(fleet, chosen.site), tuple(chosen.draws())
            held = (*held, Held(job.name, *chosen.window_days(), segments, site, draws))
        return _State((*self.planned, JobPlan(job.name, report, turn)), held)

    def score(self) -> tuple[int, float]:
        """What the best order minimises: the jobs no mix serves, then the total cost of the chosen mixes."""
        chosen = [job.chosen for job in self.planned]
        return sum(c is None for c in chosen), sum(c.cost_usd() for c in chosen if c is not None)


def _in_turn(order: Sequence[Job]) -> bool:
    """Whether every job comes after the job it runs after."""
    seen: set[str] = set()
    for job in order:
        if job.after and job.after not in seen:
            return False
        seen.add(job.name)
    return True


def greedy_order(jobs: Sequence[Job]) -> list[Job]:
    """The tightest deadline first (file order among equal ones), each job after the one it runs after."""
    waiting, order = sorted(jobs, key=lambda job: job.goal.deadline_s or 0.0), list[Job]()
    while waiting:
        placed = {job.name for job in order}
        ready = next(job for job in waiting if not job.after or job.after in placed)
        order.append(ready)
        waiting.remove(ready)
    return order


def plan_jobs(jobs: Sequence[Job], fleet: Fleet, max_gpus: int | None) -> SharedReport:
    """Each job's cheapest mix per system type over the GPUs and the site power the jobs before it leave while it
    holds them (an on-demand offer per campaign phase), in the order that serves the most jobs for the least total
    cost: every order up to MAX_ORDERED jobs (each job after the one it runs after; the plans of a common first few
    shared), else the tightest deadline first."""
    start = time.perf_counter()
    greedy = greedy_order(jobs)
    everyone = len(jobs) <= MAX_ORDERED
    orders = (order for order in permutations(greedy) if _in_turn(order)) if everyone else iter([tuple(greedy)])
    states: dict[tuple[str, ...], _State] = {(): _State()}
    tried: Tried = {}
    reports: _Reports = {}
    best: _State | None = None
    count = 0
    for order in orders:
        count += 1
        names = tuple(job.name for job in order)
        for turn in range(1, len(order) + 1):
            if names[:turn] not in states:
                states[names[:turn]] = states[names[: turn - 1]].then(order[turn - 1], fleet, max_gpus, tried, reports)
        if best is None or states[names].score() < best.score():
            best = states[names]
    assert best is not None
    greedy_cost = states[tuple(job.name for job in greedy)].score()[1]
    how = GREEDY if len(jobs) == 1 else ORDERED if everyone else f"{GREEDY} (greedy: more than {MAX_ORDERED} jobs)"
    by_name = {plan.name: plan for plan in best.planned}
    capacity = [source for found in sources(fleet, Cost()).values() for source in found]
    cap = next((job.goal.power_mw for job in jobs), None)
    return SharedReport([by_name[job.name] for job in jobs], capacity, time.perf_counter() - start, cap, best.held,
                        how, count, greedy_cost, fleet)  # fmt: skip


def jobs_of(
    fleet: Fleet, path: str | Path, scenario: ScenarioSource, options: dict[str, Any], origins: dict[str, str],
    targets: Sequence[str], confidence: float, power_mw: float | None, purchase_read: PurchaseRead,
    spelling: Spelling = CLI,
) -> list[Job]:  # fmt: skip
    """The fleet file's [[job]]s to plan: each its scenario (a file relative to the fleet file's, else `scenario`)
    with `options` and its model and tokens applied, on each target system, for its own deadline and budget; errors
    spelt as the CLI's flags, or with `spelling` API the Python API's, and the purchase options the fleet reads
    (`purchase_read`), as candidate_bases takes them."""
    where = Path(path).parent
    found = []
    for index, job in enumerate(fleet.job):
        own = {"model": job.model or None, "tokens": job_tokens(job)}
        named = {key: f"{shown(path, 200)}: field 'job.{index}.{key}'" for key, value in own.items() if value}
        given = {key: value for key, value in own.items() if value}
        source = where / job.scenario if job.scenario else scenario
        bases = candidate_bases(source, dict(options) | given, origins | named, targets, spelling,
                                purchase_read=purchase_read)  # fmt: skip
        goal = Goal(job.deadline_days * DAY_S, job.budget_usd, confidence, power_mw)
        found.append(Job(job.name, bases, goal, job.start_days, job.after))
    return found


def fleet_request(
    path: str | Path, scenario: ScenarioSource, options: dict[str, Any], origins: dict[str, str],
    targets: Sequence[str], goal: tuple[float | None, float | None, float, float | None], max_gpus: int | None,
    spelling: Spelling = CLI,
) -> FleetReport | SharedReport:  # fmt: skip
    """`plan --fleet`: each system type of the fleet file at `path` (or `targets`) planned over it for the goal
    (deadline_s, budget_usd, confidence, power_mw); of a file with [[job]]s, its jobs planned together, each for its
    own deadline and budget (a goal's deadline or budget is refused). Errors name the CLI's flags (`--deadline`,
    `--gpu ID`), or with `spelling` API the Python API's (`deadline_s`, `gpu='ID'`)."""
    fleet = load_fleet(path)
    read = owning_read(fleet, path, options, origins, spelling)
    return _fleet_request(path, fleet, scenario, options, origins, targets, goal, max_gpus, read, spelling)


def owning_read(
    fleet: Fleet, path: str | Path, options: dict[str, Any], origins: dict[str, str], spelling: Spelling
) -> PurchaseRead:
    """The purchase options (OWNING_KEYS) the fleet's offers to buy read, so that they count without `--buy`:
    FLEET_OWNING_KEYS where it has one, else none. One given that the fleet does not read is refused, naming where
    its price goes instead (each offer carries its own usd_per_system): a flag here, a scenario file's field as the
    scenario is read (request.check_owning), in the same words."""
    buys = [index for index, offer in enumerate(fleet.offer) if offer.usd_per_system is not None]
    if buys:
        why = (f"a fleet's offers to buy carry their own price: set it in {shown(path, 200)}, field "
               f"'offer.{buys[0]}.usd_per_system'")  # fmt: skip
    else:
        why = (f"prices owning the systems; {shown(path, 200)} has no offer to buy (an [[offer]] with usd_per_system): "
               "drop it")  # fmt: skip
    if options.get("buy") in ("buy", True):  # a fleet buys through its offers: --buy would price nothing
        raise PerfmodelError(f"{spelling.given('buy', True)}: a fleet buys through its offers to buy (an [[offer]] "
                             f"with usd_per_system in {shown(path, 200)}, spread over its life): drop it")  # fmt: skip
    read = PurchaseRead(frozenset(FLEET_OWNING_KEYS if buys else ()), why, by_mode=False)
    key = next((key for key in OWNING_KEYS if options.get(key) is not None and key not in read.keys), None)
    if key is not None:
        raise PerfmodelError(f"{origins.get(key, spelling.name(key))}: {why}")
    return read


def _fleet_request(
    path: str | Path, fleet: Fleet, scenario: ScenarioSource, options: dict[str, Any], origins: dict[str, str],
    targets: Sequence[str], goal: tuple[float | None, float | None, float, float | None], max_gpus: int | None,
    purchase_read: PurchaseRead, spelling: Spelling,
) -> FleetReport | SharedReport:  # fmt: skip
    deadline_s, budget_usd, confidence, power_mw = goal
    targets = list(targets) or fleet_systems(fleet)
    if fleet.job:
        if deadline_s is not None or budget_usd is not None:
            raise PerfmodelError(f"{shown(path, 200)} has [[job]]s, each with its own deadline_days and budget_usd: "
                                 f"drop {spelling.name('deadline_s')} and {spelling.name('budget_usd')}")  # fmt: skip
        jobs = jobs_of(fleet, path, scenario, options, origins, targets, confidence, power_mw, purchase_read,
                       spelling)  # fmt: skip
        return plan_jobs(jobs, fleet, max_gpus)
    bases = candidate_bases(scenario, options, origins, targets, spelling, purchase_read=purchase_read)
    refuse_layouts_nowhere(bases, max_gpus or MAX_GPUS)
    return plan_fleet(bases, Goal(deadline_s, budget_usd, confidence, power_mw), fleet, max_gpus)
