"""Plans over a fleet (`plan --fleet`): for each system type of the fleet, the cheapest mix of owned pools and offers
that trains the work by the deadline at the goal's confidence.

One job runs on one system type. Its sources are the pools of that system (no lead time) and its offers (each after its
lead time), each at a cost per GPU-hour: a pool's owned basis, an offer's rental price, or a bought system's price
spread over its life as `--buy` does (planning/tco.py). A plan pays for what it holds: every GPU it takes (a campaign's
most, and its spare GPUs, which count against the pools), for its whole wall time (`hours_per_gpu`), except that an
offer billed on demand is held per campaign phase only for what that phase needs beyond the held sources (`mix_of`). A
plan that uses offers up to lead time L starts after L, so it has the deadline less L: for each such L (0 and every
offer's), of the counts meeting that deadline on the sources there by then (plan.plan_candidate, capped at their
capacity and the site's power less what other jobs hold at every moment of the window), each filled cheapest first
within what the other jobs leave while it runs (`Beside`: its held sources over its window, an on-demand offer and
the power per campaign phase), the cheapest mix (`Beside.usd`: not always the fewest GPUs), and the cheapest of these
plans is the answer. The power cap (`--power-mw`) is each site's: the jobs at one site share it
(planning/fleet_jobs.py), a job counting at the site it runs at (a group of sources without a named site is a site of
its own); where a job may span sites the fleet has one cap. Owning more GPUs adds a source to every L, so it
never raises a plan's cost. A budget is checked on the mix's cost, with its probability (planning/confidence.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, NamedTuple, TypeVar

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.fleet import Billing, Fleet, everything
from perfmodel.inputs.hardware import Hardware, resolve
from perfmodel.inputs.numbers import plain
from perfmodel.inputs.scenario import MAX_GPUS, Cost, Scenario
from perfmodel.planning import tco
from perfmodel.planning.campaign import Campaign, Result
from perfmodel.planning.plan import (
    CandidatePlan,
    Goal,
    Tried,
    goal_basis,
    gpus_of,
    gpus_within,
    granularity,
    p_cost_within,
    p_within,
    plan_candidate,
    power_cap_gpus,
    power_mw,
    run_on,
    seed_count,
    spare_gpus,
    spare_mw,
    time_at,
    time_factor,
    wall_s,
)  # fmt: skip
from perfmodel.planning.training import SECONDS_PER_HOUR
from perfmodel.planning.views import usd_text

DAY_S = 86400.0


@dataclass(frozen=True)
class Source:
    """Where GPUs of one system come from: an owned pool or an offer, whole units of its system up to its cap."""

    name: str
    kind: str
    """'owned' (a pool), 'rent' or 'buy' (an offer)."""
    system: str
    site: str
    gpus: int
    usd_per_gpu_hour: float
    lead_time_days: float
    billing: Billing = "reserved"
    """'reserved' (held for the plan's whole window: pools and bought systems always) or 'on_demand' (a rental
    held per campaign phase, `mix_of`)."""

    @property
    def held(self) -> bool:
        """Whether a plan holds what it takes of this source for its whole window."""
        return self.billing != "on_demand"


def sources(fleet: Fleet, cost: Cost) -> dict[str, list[Source]]:
    """The fleet's sources by system id, each cap in whole units of its system (what other jobs hold is `Beside`'s),
    cheapest first."""
    found: dict[str, list[Source]] = {}
    for pool in fleet.pool:
        hw = resolve(system=pool.system)
        found.setdefault(pool.system, []).append(
            Source(pool.name, "owned", pool.system, pool.site, _whole(pool.gpus, hw), pool.usd_per_gpu_hour, 0.0)
        )
    for offer in fleet.offer:
        hw = resolve(system=offer.system)
        rate = offer.usd_per_gpu_hour
        if rate is None:
            assert offer.usd_per_system is not None
            owning = tco.Ownership(offer.usd_per_system, offer.usd_per_system, offer.usd_per_system, offer.name,
                                   hw.job_gpus_per_system, cost, hw.it_power_w_per_gpu)  # fmt: skip
            rate = owning.per_gpu_hour(offer.usd_per_system)
        kind = "rent" if offer.usd_per_gpu_hour is not None else "buy"
        gpus = _whole(offer.max_gpus, hw)
        found.setdefault(offer.system, []).append(
            Source(offer.name, kind, offer.system, offer.site, gpus, rate, offer.lead_time_days, offer.billing)
        )
    return {system: sorted(s, key=lambda x: (x.usd_per_gpu_hour, x.lead_time_days)) for system, s in found.items()}


def _whole(gpus: int, hw: Hardware) -> int:
    unit = hw.job_gpus_per_system
    return gpus // unit * unit


def fill(n_gpus: int, available: Sequence[Source], free: Mapping[str, int] | None = None) -> list[tuple[Source, int]]:
    """`n_gpus` taken from `available` cheapest first (they are sorted so), of each source what `free` leaves of it
    (GPUs by source name: what other jobs leave, `Beside`), else its whole capacity."""
    taken, left = [], n_gpus
    for source in available:
        if left <= 0:
            break
        take = min(left, source.gpus if free is None else free[source.name])
        if take:
            taken.append((source, take))
            left -= take
    assert left == 0, f"{n_gpus} GPUs is more than the sources hold"
    return taken


def held_gpus(p: Result) -> int:
    """The most GPUs a plan takes from the pools at once (what its window holds where every source is reserved,
    `FleetPlan.window_days`): its most (`gpus_of`, a campaign's largest phase's) and its spares, which count against
    the pools' capacity."""
    return gpus_of(p) + spare_gpus(p.scenario)


def hours_per_gpu(p: Result) -> float:
    """Each held GPU's billed hours (`held_gpus`, what `Mix.usd` bills a held source): the run's wall time on the
    goal's basis at the point (`cost_usd_at_confidence` scales it), infinite where failures stop the run from ever
    finishing. A held GPU is paid for whether busy or not (a reservation bills by the hour, an owned GPU costs its
    hours either way): a campaign's later phases on fewer GPUs leave the rest idle but held, since nobody else may
    take them (fleet_jobs blocks them to its finish), and spare GPUs are held in reserve the whole wall time
    (losses.py). Only an on-demand offer is given back between phases (`mix_of`)."""
    return wall_s(p) / SECONDS_PER_HOUR


Taken = tuple[tuple[Source, int], ...]
K = TypeVar("K")


def most_each(groups: Iterable[Iterable[tuple[K, int]]]) -> dict[K, int]:
    """The most of each key in any one group of (key, count) pairs, in the order first seen: the GPUs of each source
    held at once across a plan's segments (`Mix.taken` by source, fleet_jobs `Held.most` by source name)."""
    found: dict[K, int] = {}
    for group in groups:
        for key, n in group:
            found[key] = max(found.get(key, 0), n)
    return found


@dataclass(frozen=True)
class Mix:
    """What a plan holds: `held`, GPUs per source for its whole `hours`; and per campaign phase (name, hours, GPUs
    per on-demand offer) what it rents on demand only while that phase runs (none where every source it takes is
    reserved, or for a one-phase job, whose one phase is its window)."""

    held: Taken
    hours: float
    phases: tuple[tuple[str, float, Taken], ...] = ()

    def taken(self) -> list[tuple[Source, int]]:
        """The most GPUs it holds of each source at once: the held ones, then each on-demand offer's most."""
        return list(most_each([self.held, *(rented for _, _, rented in self.phases)]).items())

    def gpu_hours(self, source: Source) -> float:
        """The GPU-hours billed of `source`: its held GPUs x the whole window, its on-demand GPUs x each phase's
        hours."""
        held = dict(self.held).get(source, 0) * self.hours
        return held + sum(dict(rented).get(source, 0) * hours for _, hours, rented in self.phases)

    def usd_of(self, source: Source) -> float:
        """The bill of `source`: its GPU-hours billed x its rate."""
        return self.gpu_hours(source) * source.usd_per_gpu_hour

    @cached_property
    def usd(self) -> float:
        """The bill at the point: each source's GPU-hours x its rate (worked out once: a plan's cost is compared per
        lead time and site, and per order of a fleet's jobs, `fleet_jobs._State.score`)."""
        return sum(self.usd_of(source) for source, _ in self.taken())


def phase_needs(p: Result) -> list[tuple[str, int, float]]:
    """Each phase of a campaign as (name, GPUs with the job's spares, wall hours on the goal's basis at the point):
    its hours sum to the campaign's (its runs on the goal's basis are the phases' summed, planning/campaign.py)."""
    assert isinstance(p, Campaign)
    basis, spare = goal_basis(p), spare_gpus(p.scenario)
    found = []
    for name, phase in p.phases.items():
        run = run_on(phase, basis)
        hours = math.inf if run is None else run.time_s / SECONDS_PER_HOUR
        found.append((name, phase.layout.n_gpus + spare, hours))
    return found


def _fill_usd(n_gpus: int, available: Sequence[Source], free: Mapping[str, int] | None) -> float:
    """The rate of `n_gpus` taken cheapest first (`fill`), USD per hour."""
    return sum(n * source.usd_per_gpu_hour for source, n in fill(n_gpus, available, free)) if n_gpus > 0 else 0.0


@dataclass(frozen=True)
class Free:
    """What a run may take beside the other jobs' holdings (`Beside.free`): GPUs by source name for its whole window,
    each campaign phase's GPUs by on-demand source name while the phase runs, and the most GPUs (spares among them)
    it may hold for its window within its site's power (None: no cap)."""

    window: Mapping[str, int]
    phases: Sequence[Mapping[str, int]] = ()
    held_cap_gpus: int | None = None


def per_phase(p: Result, available: Sequence[Source]) -> bool:
    """Whether `p` holds what it rents of `available` per campaign phase (`mix_of`): a campaign of several phases
    with an on-demand offer among them, which finishes."""
    phased = isinstance(p, Campaign) and len(p.phases) > 1 and any(not s.held for s in available)
    return phased and math.isfinite(hours_per_gpu(p))


def mix_of(p: Result, available: Sequence[Source], free: Free | None = None) -> Mix:
    """The cheapest way to hold the run `p` on `available` (cheapest first; of each source what `free` leaves of it
    for the window and, on demand, for each phase, else its whole capacity): every phase's GPUs (and spares), the
    held sources (pools, bought systems, reserved rent) for the whole window, the on-demand offers per phase for
    what it needs beyond them. Where H GPUs are held, the bill is the held H x the window plus, per phase, the
    on-demand fill of what it needs beyond H x its hours: both terms convex and piecewise linear in H (cheapest
    first fill), with kinks where H meets a phase's need, a held source's cap or a phase's need less the on-demand
    caps, so the least H among these and the bounds (at most what the site's power holds, `free.held_cap_gpus`) is
    exact (the largest on a tie: held first). A one-phase job, and a plan with no on-demand offer, holds its GPUs
    cheapest first as before (`fill`); so owning more never raises the bill (a source more is a cheaper fill at
    every H). The caller checks that `free` holds the run (`Beside.free`)."""
    hours = hours_per_gpu(p)
    window = None if free is None else free.window
    if not per_phase(p, available):
        return Mix(tuple(fill(held_gpus(p), available, window)), hours)
    held, rented = [s for s in available if s.held], [s for s in available if not s.held]
    needs = phase_needs(p)
    each = [None] * len(needs) if free is None or not free.phases else list(free.phases)

    def cap(source: Source, of: Mapping[str, int] | None) -> int:
        return source.gpus if of is None else of[source.name]

    most = max(n for _, n, _ in needs)
    low = max(0, *(n - sum(cap(s, of) for s in rented) for (_, n, _), of in zip(needs, each, strict=True)))
    high = min(most, sum(cap(s, window) for s in held))
    if free is not None and free.held_cap_gpus is not None:
        high = min(high, free.held_cap_gpus)
    # the kinks: 0, each partial sum of the held caps, each need less each partial sum of its phase's on-demand caps
    kinks = [sum(cap(s, window) for s in held[:i]) for i in range(len(held) + 1)]
    kinks += [n - sum(cap(s, of) for s in rented[:i]) for (_, n, _), of in zip(needs, each, strict=True)
              for i in range(len(rented) + 1)]  # fmt: skip
    tried = sorted({h for h in (*kinks, low, high) if low <= h <= high}, reverse=True)
    assert tried, f"{most} GPUs is more than the sources hold"

    def usd(h: int) -> float:
        renting = sum(_fill_usd(n - h, rented, of) * t for (_, n, t), of in zip(needs, each, strict=True))
        return _fill_usd(h, held, window) * hours + renting

    best = min(tried, key=lambda h: (usd(h), -h))
    phases = tuple((name, t, tuple(fill(max(n - best, 0), rented, of)))
                   for (name, n, t), of in zip(needs, each, strict=True))  # fmt: skip
    return Mix(tuple(fill(best, held, window)), hours, phases)


def unheld(
    needs: Sequence[tuple[str, int, float]],
    phases: Sequence[Mapping[str, int]],
    held: int,
    held_cap_gpus: int | None,
    start: float,
    end: float,
) -> str | None:
    """Why the GPUs a campaign of `needs` (`phase_needs`) must hold from `start` to `end` (what its neediest phase
    needs beyond the on-demand GPUs `phases` leave it then) are more than its held sources leave (`held`) or than the
    tightest phase's power holds (`held_cap_gpus`); None where some count fits (`mix_of` has one to try)."""
    need, name = max((n - sum(rented.values()), name) for (name, n, _), rented in zip(needs, phases, strict=True))
    days = f"from day {plain(start, 3)} to {plain(end, 3)}"
    when = f"phase {name!r}: {need:,} GPUs held {days} beyond the on-demand ones:"
    if need > held:
        return f"{when} more than the {max(held, 0):,} left by the other jobs at their busiest then"
    if held_cap_gpus is not None and need > held_cap_gpus:
        tightest = f"{max(held_cap_gpus, 0):,} the power left by the other jobs holds in its tightest phase"
        return f"{when} more than the {tightest}"
    return None


def window_of(start_days: float, time_s: float) -> tuple[float, float]:
    """When a plan starting on `start_days` holds its GPUs, days from now: its start, and its finish after `time_s`
    (its run's time at the goal's confidence, `time_at`)."""
    return start_days, start_days + time_s / DAY_S


def phase_spans(hours: Sequence[float], start: float, finish: float, total_hours: float) -> list[tuple[float, float]]:
    """When each phase of `hours` runs within a window, days from now: its share of the window's time at the
    confidence (`total_hours`: the campaign's, `hours_per_gpu`)."""
    scale, at, found = (finish - start) / total_hours if total_hours else 0.0, start, []
    for phase_hours in hours:
        found.append((at, at + phase_hours * scale))
        at += phase_hours * scale
    return found


Segment = tuple[float, float, tuple[tuple[str, int], ...]]
"""GPUs held from a day to a day (from now), by source name."""
Draw = tuple[float, float, str, float]
"""Power drawn from a day to a day at a `power_site`, MW."""


@dataclass(frozen=True)
class Others:
    """What the other jobs sharing a fleet hold when (fleet_jobs.Held's): their GPUs as segments and their power as
    draws, in a canonical order (`of`: plans over the same holdings are shared, whatever order made them)."""

    segments: tuple[Segment, ...] = ()
    draws: tuple[Draw, ...] = ()

    @classmethod
    def of(
        cls, segments: Iterable[Segment], draws: Iterable[Draw], start: float = 0.0, end: float = math.inf
    ) -> Others:
        """The segments and draws that overlap `start` to `end`, sorted."""
        return cls(tuple(sorted(s for s in segments if s[0] < end and s[1] > start)),
                   tuple(sorted(d for d in draws if d[0] < end and d[1] > start)))  # fmt: skip

    def at(self, moment: float) -> tuple[dict[str, int], dict[str, float]]:
        """The GPUs of each source held, and the power drawn at each site, at `moment`."""
        gpus: dict[str, int] = {}
        for start, finish, taken in self.segments:
            if start <= moment < finish:
                for name, n in taken:
                    gpus[name] = gpus.get(name, 0) + n
        power: dict[str, float] = {}
        for start, finish, site, mw in self.draws:
            if start <= moment < finish:
                power[site] = power.get(site, 0.0) + mw
        return gpus, power

    def most(self, start: float = 0.0, end: float = math.inf) -> tuple[dict[str, int], dict[str, float]]:
        """The most GPUs of each source, and the most power at each site, held at once from `start` to `end` (what
        is held changes as segments start and finish: the most is at `start` or at a start within)."""
        starts = [s[0] for s in self.segments] + [d[0] for d in self.draws]
        return _extreme(max, [self.at(t) for t in [start, *(t for t in starts if start < t < end)]])

    def least(self, start: float, end: float) -> tuple[dict[str, int], dict[str, float]]:
        """The fewest GPUs of each source, and the least power at each site, held at every moment from `start` to
        `end` (at `start` or at a finish within): what no plan in that window can take."""
        finishes = [s[1] for s in self.segments] + [d[1] for d in self.draws]
        return _extreme(min, [self.at(t) for t in [start, *(t for t in finishes if start < t < end)]])


def _extreme(
    pick: Callable[[Iterable[float]], float], moments: Sequence[tuple[dict[str, int], dict[str, float]]]
) -> tuple[dict[str, int], dict[str, float]]:
    """`pick` (max or min) of each source's GPUs and each site's power over `moments` (not held at one: 0), where
    not 0."""
    names = dict.fromkeys(name for gpus, _ in moments for name in gpus)
    sites = dict.fromkeys(site for _, power in moments for site in power)
    gpus = {name: int(n) for name in names if (n := pick(held.get(name, 0) for held, _ in moments))}
    return gpus, {site: mw for site in sites if (mw := pick(drawn.get(site, 0.0) for _, drawn in moments))}


class PowerCap(NamedTuple):
    """A site's power cap as a plan there meets it."""

    cap_mw: float
    set_by: str
    """What sets it: a [[site]]'s power_mw or --power-mw (`site_cap`)."""
    site: str
    """The `power_site` it caps."""


@dataclass(frozen=True)
class Beside:
    """Where a plan starting on `start_days` takes its GPUs beside what the other jobs hold (`others`): `there`, the
    sources at their whole capacity, and its site's power cap (None without one). It holds its held sources for its
    window (its run's time at the goal's confidence: `time_at`), and renting on demand per campaign phase, each
    phase's rented GPUs while the phase runs (FleetPlan.segments), drawing the power of what it holds then
    (FleetPlan.draws): each is checked against what the others hold in that time, not its most against their most
    over its whole window."""

    there: Sequence[Source]
    others: Others
    start_days: float
    cap: PowerCap | None = None

    def free(self, p: Result, time_s: float) -> Free | str:
        """What the others leave `p`, of time `time_s` at the goal's confidence (`Free`), or why it does not fit
        beside them."""
        start, finish = window_of(self.start_days, time_s)
        gpus, power = self.others.most(start, finish)
        window = {s.name: s.gpus - gpus.get(s.name, 0) for s in self.there}
        if not per_phase(p, self.there):
            beside = self._beside(
                p, gpus_of(p) + spare_gpus(p.scenario), sum(window.values()), power, "", start, finish
            )
            return beside or Free(window)
        held = sum(window[s.name] for s in self.there if s.held)
        needs, phases, held_most = phase_needs(p), [], None
        for (name, n, _), (at, end) in zip(needs, phase_spans([t for _, _, t in needs], start, finish,
                                                              hours_per_gpu(p)), strict=True):  # fmt: skip
            gpus, power = self.others.most(at, end)
            rented = {s.name: s.gpus - gpus.get(s.name, 0) for s in self.there if not s.held}
            if beside := self._beside(p, n, held + sum(rented.values()), power, f"phase {name!r}: ", at, end):
                return beside
            most = self._powered(p, power)
            held_most = most if held_most is None or most is None else min(held_most, most)
            phases.append(rented)
        return unheld(needs, phases, held, held_most, start, finish) or Free(window, phases, held_most)

    def _powered(self, p: Result, power: Mapping[str, float]) -> int | None:
        """The most GPUs (spares among them) `p` may hold within the power the others leave of its site's cap (they
        draw `power` by site); None without a cap."""
        if self.cap is None:
            return None
        hw, pue, left_mw = p.hardware, p.scenario.cost.pue, self.cap.cap_mw - power.get(self.cap.site, 0.0)
        return gpus_within(hw, left_mw - spare_mw(p.scenario, hw), pue) + spare_gpus(p.scenario)

    def _beside(
        self, p: Result, n: int, free: int, power: Mapping[str, float], what: str, start: float, end: float
    ) -> str | None:
        """Why `n` GPUs (spares among them) of `p` do not fit beside the others from `start` to `end`, with `free`
        GPUs left and `power` drawn by site (`what`: which phase); None where they fit."""
        when = f"{what}{n:,} GPUs from day {plain(start, 3)} to {plain(end, 3)}:"
        if n > free:
            return f"{when} more than the {max(free, 0):,} left by the other jobs at their busiest then"
        most = self._powered(p, power)
        if most is not None and n > most and self.cap is not None:
            cap_mw, set_by, site = self.cap
            left = max(cap_mw - power.get(site, 0.0), 0.0)
            at = f" at {site}" if site else ""
            return (f"{when} more power than the {plain(left)} MW left of {set_by} {cap_mw:g}{at} by the other jobs at "
                    "their busiest then")  # fmt: skip
        return None

    def mix(self, p: Result, time_s: float) -> Mix | str:
        """The cheapest mix holding `p` (of time `time_s`) beside the others (`mix_of`), or why it does not fit."""
        free = self.free(p, time_s)
        return free if isinstance(free, str) else mix_of(p, self.there, free)

    def usd(self, p: Result, time_s: float) -> float:
        """What `p` costs as its mix beside the others (infinite where it does not fit): among the counts meeting a
        deadline, the plan takes the cheapest mix, not the fewest GPUs (a count whose DP divides the batch can take
        fewer GPU-hours than a smaller one: 2,048 H100 train 70B on 15T tokens in 2.42M GPU-hours, 1,792 in
        2.74M)."""
        mix = self.mix(p, time_s)
        return math.inf if isinstance(mix, str) else mix.usd


@dataclass(frozen=True)
class FleetPlan:
    """One system type's cheapest plan over the fleet (None when no mix meets the goal, with why)."""

    system: str
    candidate: CandidatePlan | None
    mix: Mix
    start_after_days: float
    goal: Goal
    reason: str | None
    site: str = ""
    """The site it runs at ("" where its sources name none; every site where the fleet lets a job span them)."""

    @classmethod
    def none(cls, system: str, goal: Goal, reason: str) -> FleetPlan:
        """No plan of `system` for the goal, for `reason`."""
        return cls(system, None, Mix((), 0.0), math.nan, goal, reason)

    @property
    def feasible(self) -> bool:
        return self.candidate is not None and self.candidate.feasible and self.reason is None

    @property
    def taken(self) -> list[tuple[Source, int]]:
        """The most GPUs it holds of each source at once (`Mix.taken`)."""
        return self.mix.taken()

    def window_days(self) -> tuple[float, float]:
        """When it holds its GPUs, days from now: its start, and its finish at the goal's confidence (`window_of`)."""
        assert self.candidate is not None and self.candidate.prediction is not None
        return window_of(self.start_after_days, time_at(self.candidate.prediction, self.goal.confidence))

    def gpu_hours_per_gpu(self) -> float:
        """Each held GPU's billed hours: the plan's wall time (`hours_per_gpu`)."""
        assert self.candidate is not None and self.candidate.prediction is not None
        return hours_per_gpu(self.candidate.prediction)

    def cost_usd(self) -> float:
        """The mix's cost at the point: each source's GPU-hours billed (`Mix.gpu_hours`) x its rate."""
        return self.mix.usd

    def _spans(self, start: float, finish: float) -> list[tuple[float, float, Taken]]:
        """When each phase of a campaign renting per phase runs, days from now (start, finish, the on-demand GPUs
        it rents): its share of the window's time at the confidence (`window_days`, which the caller has)."""
        spans = phase_spans([hours for _, hours, _ in self.mix.phases], start, finish, self.mix.hours)
        return [(at, end, rented) for (at, end), (_, _, rented) in zip(spans, self.mix.phases, strict=True)]

    def segments(self) -> list[tuple[float, float, Taken]]:
        """What it holds when, days from now (start, finish, GPUs per source): the held sources for its window,
        each phase's on-demand GPUs while the phase runs."""
        start, finish = self.window_days()
        held = [(start, finish, self.mix.held)] if self.mix.held else []
        return held + [s for s in self._spans(start, finish) if s[2]]

    def draws(self) -> list[tuple[float, float, float]]:
        """The site power it draws when, days from now (start, finish, MW): its `power_mw` for its window; renting
        on demand per campaign phase, each phase's while the phase runs: the GPUs held then (plan.power_mw's rule,
        a held GPU drawing busy or idle), the held sources' and that phase's rented ones, its spares among them."""
        assert self.candidate is not None and self.candidate.prediction is not None
        p = self.candidate.prediction
        if not self.mix.phases:
            return [(*self.window_days(), power_mw(p))]
        held = sum(n for _, n in self.mix.held) - spare_gpus(p.scenario)
        return [(start, finish, power_mw(p, held + sum(n for _, n in rented))) for start, finish, rented in
                self._spans(*self.window_days())]  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {"system": self.system, "feasible": self.feasible, "reason": self.reason}
        if not self.feasible:
            return record
        assert self.candidate is not None and self.candidate.prediction is not None
        p, taken = self.candidate.prediction, self.taken  # Mix.taken builds it anew each call
        deadline_s = self.goal.deadline_s
        assert deadline_s is not None
        cost, factor = self.cost_usd(), time_factor(p, self.goal.confidence)
        split = {kind: sum(self.mix.usd_of(s) for s, _ in taken if s.kind == kind)
                 for kind in ("owned", "rent", "buy")}  # fmt: skip
        planned = self.candidate.to_dict()
        budget = self.goal.budget_usd
        return record | {
            "n_gpus": planned["n_gpus"],
            "site": self.site,
            "start_after_days": self.start_after_days,
            "time_to_train_days": planned["time_to_train_days"],
            "time_to_train_days_p10": planned["time_to_train_days_p10"],
            "time_to_train_days_p50": planned["time_to_train_days_p50"],
            "time_to_train_days_p90": planned["time_to_train_days_p90"],
            "finish_days": self.start_after_days + planned["time_to_train_days"],
            "p_deadline": p_within(p, deadline_s - self.start_after_days * DAY_S),
            "spare_gpus": spare_gpus(p.scenario),
            "owned_gpus": sum(n for s, n in taken if s.kind == "owned"),
            "offered_gpus": sum(n for s, n in taken if s.kind != "owned"),
            "sources": [self._used(s, n) for s, n in taken],
            "cost_usd": cost,
            "cost_usd_owned": split["owned"],
            "cost_usd_rented": split["rent"],
            "cost_usd_bought": split["buy"],
            "cost_usd_at_confidence": cost * factor,
            "p_budget": None if budget is None else p_cost_within(p, budget, cost),
            "power_mw": planned["power_mw"],
            "co2e_t": planned["co2e_t"],
            "plan": planned,
        }

    def _used(self, source: Source, gpus: int) -> dict[str, Any]:
        """A source's share of the plan: the most GPUs it holds at once, its rate, lead time, billing, GPU-hours
        billed and cost; on demand, per phase the GPUs held and the phase's hours."""
        hours = self.mix.gpu_hours(source)
        found = {"name": source.name, "kind": source.kind, "site": source.site, "gpus": gpus,
                 "usd_per_gpu_hour": source.usd_per_gpu_hour, "lead_time_days": source.lead_time_days,
                 "billing": source.billing, "gpu_hours": hours,
                 "cost_usd": self.mix.usd_of(source)}  # fmt: skip
        if source.held:
            return found
        return found | {"phases": [{"phase": name, "gpus": dict(rented).get(source, 0), "hours": phase_hours}
                                   for name, phase_hours, rented in self.mix.phases]}  # fmt: skip


@dataclass(frozen=True)
class FleetReport:
    goal: Goal
    plans: list[FleetPlan]
    elapsed_s: float

    def cheapest(self) -> FleetPlan | None:
        return min((p for p in self.plans if p.feasible), key=FleetPlan.cost_usd, default=None)

    def to_records(self) -> list[dict[str, Any]]:
        """One flat record per system type (`plan --fleet --format csv`): the mix as its split, each source's GPUs
        as `gpus.NAME`; the full plan in `to_dict` only."""
        return [
            {k: v for k, v in d.items() if k not in ("sources", "plan")}
            | {f"gpus.{s['name']}": s["gpus"] for s in d.get("sources", [])}
            for d in (p.to_dict() for p in self.plans)
        ]

    def to_dict(self) -> dict[str, Any]:
        cheapest = self.cheapest()
        return {
            "goal": self.goal.to_dict(),
            "fleet_plans": [p.to_dict() for p in self.plans],
            "cheapest": None if cheapest is None else cheapest.system,
            "elapsed_s": self.elapsed_s,
        }


def plan_fleet(
    bases: Sequence[tuple[str, Scenario]], goal: Goal, fleet: Fleet, max_gpus: int | None,
    others: Others | None = None, tried: Tried | None = None, start_days: float = 0.0,
) -> FleetReport:  # fmt: skip
    """The cheapest plan over the fleet of each system type `bases` gives (label, scenario on that system), beside
    what `others` (other jobs) hold when (`Beside`), starting no earlier than `start_days`; `tried`: predictions
    other plans made (plan.Tried), shared here by every lead time and site."""
    if goal.deadline_s is None:
        raise PerfmodelError("plan --fleet needs --deadline (e.g. 60d): the fleet's mix is the cheapest meeting it")
    if any(scenario.cost.usd_per_gpu_hour_range is not None for _, scenario in bases):
        raise PerfmodelError(
            "plan --fleet with a price distribution (--price-range, usd_per_gpu_hour_range): a fleet prices each pool "
            "and offer at its own rate, which is not drawn; drop the distribution"
        )
    start = time.perf_counter()
    tried = {} if tried is None else tried
    plans = [_plan_system(label, scenario, goal, fleet, max_gpus or MAX_GPUS, others or Others(), tried, start_days)
             for label, scenario in bases]  # fmt: skip
    return FleetReport(goal, plans, time.perf_counter() - start)


def power_site(fleet: Fleet, site: str) -> str:
    """Whose power cap a plan at `site` draws on: the site's, or the whole fleet's ("") where jobs may span sites."""
    return "" if fleet.span_sites else site


def site_cap(fleet: Fleet, power_mw: float | None, site: str) -> tuple[float, str] | None:
    """The power cap of the jobs at `site` (a `power_site`) and what sets it: its [[site]]'s power_mw or
    `--power-mw` (`power_mw`), the smaller where both are given; None without either."""
    caps = [(s.power_mw, f"[[site]] {s.name!r} power_mw") for s in fleet.site if s.name == site]
    return min([*caps, *([] if power_mw is None else [(power_mw, "--power-mw")])], default=None)


def sites(available: Sequence[Source], span: bool) -> list[tuple[str, list[Source]]]:
    """The groups of sources one job may take together: each site's with the offers of no site, or all of them
    where the fleet lets a job span sites (or has at most one site)."""
    named = list(dict.fromkeys(s.site for s in available if s.site))
    if span or len(named) <= 1:
        return [(" and ".join(named), list(available))]
    return [(site, [s for s in available if s.site in (site, "")]) for site in named]


def _plan_system(
    label: str, base: Scenario, goal: Goal, fleet: Fleet, max_gpus: int, others: Others, tried: Tried,
    start_days: float,
) -> FleetPlan:  # fmt: skip
    """The cheapest plan of one system type: at each lead time and site, the counts up to what the others leave at
    some moment of the window (their least held from its start to the deadline) searched, each count's mix checked
    beside what they hold while it runs (`Beside`)."""
    hw = resolve(base.gpu, base.system)
    system = hw.system.id
    available = sources(fleet, base.cost).get(system, [])
    spare, spares_mw = spare_gpus(base), spare_mw(base, hw)
    assert goal.deadline_s is not None
    best: FleetPlan | None = None
    why = f"no pool or offer of {system}"
    leads = sorted({0.0, *(s.lead_time_days for s in available)})
    for lead, (site, group) in ((lead, group) for lead in leads for group in sites(available, fleet.span_sites)):
        there = [s for s in group if s.lead_time_days <= lead]
        begin = max(lead, start_days)
        used, powered = others.least(begin, goal.deadline_s / DAY_S)
        capacity = sum(s.gpus - used.get(s.name, 0) for s in there)
        by_others = any(used.get(s.name) for s in there)
        if capacity == 0:
            why = f"the fleet's {system} GPUs there by day {lead:g} are taken by other jobs" if by_others else why
            continue
        deadline_s = goal.deadline_s - begin * DAY_S
        if deadline_s <= 0:
            late = f"the offers' lead time of {lead:g} days" if lead >= start_days else f"a start on day {begin:g}"
            why = f"{late} leaves no time before the deadline"
            continue
        at = f" at {site}" if site else ""
        there_gpus = (
            f"the {capacity:,} {system} GPUs{at} left by the other jobs by day {lead:g}"
            if by_others
            else f"the fleet's {capacity:,} {system} GPUs{at} there by day {lead:g}"
        )
        if capacity - spare < granularity(hw):
            why = f"{there_gpus} leave none beside the job's {spare:,} spares"
            continue
        limit, ceiling = min(capacity - spare, max_gpus), there_gpus + (f" less {spare:,} spares" if spare else "")
        cap = site_cap(fleet, goal.power_mw, power_site(fleet, site))
        if cap is not None:
            cap_mw, set_by = cap
            power_cap_gpus(hw, cap_mw, base.cost.pue, set_by, spares_mw)  # below one system: refused
            left_mw = cap_mw - powered.get(power_site(fleet, site), 0.0)
            powered_gpus = gpus_within(hw, left_mw - spares_mw, base.cost.pue)
            if powered_gpus == 0:
                why = f"the site's power{at} is taken by other jobs: {plain(max(left_mw, 0))} of {cap_mw:g} MW left"
                continue
            if powered_gpus < limit:
                limit, ceiling = powered_gpus, f"the {plain(max(left_mw, 0))} MW left of {set_by} {cap_mw:g}{at}"
        local = replace(goal, deadline_s=deadline_s, budget_usd=None)
        seed = seed_count(base, hw, local)
        beside = Beside(there, others, begin, None if cap is None else PowerCap(*cap, power_site(fleet, site)))
        candidate = plan_candidate(base, label, local, limit, seed, ceiling, tried, beside.usd)
        if not candidate.feasible or candidate.prediction is None:
            why = candidate.reason or why
            continue
        mix = beside.mix(candidate.prediction, time_at(candidate.prediction, goal.confidence))
        if isinstance(mix, str):
            why = mix
            continue
        found = FleetPlan(system, candidate, mix, begin, goal, None, site)
        if goal.budget_usd is not None:
            factor = time_factor(candidate.prediction, goal.confidence)
            if found.cost_usd() * factor > goal.budget_usd:
                why = f"the cheapest mix by day {lead:g} costs {usd_text(found.cost_usd() * factor)}, over budget"
                continue
        if best is None or found.cost_usd() < best.cost_usd():
            best = found
    return best or FleetPlan.none(system, goal, why)


def unplanned(bases: Sequence[tuple[str, Scenario]], goal: Goal, reason: str) -> FleetReport:
    """A report of no plan for any system type, for `reason`."""
    plans = [FleetPlan.none(resolve(s.gpu, s.system).system.id, goal, reason) for _, s in bases]
    return FleetReport(goal, plans, 0.0)


def fleet_systems(fleet: Fleet) -> list[str]:
    """The system ids of the fleet, pools first, in file order."""
    return list(dict.fromkeys(source.system for source in everything(fleet)))
