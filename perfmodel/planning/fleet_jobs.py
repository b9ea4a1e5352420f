"""Several jobs sharing one fleet (a fleet file's [[job]]s): each job's cheapest mix, no GPU counted twice.

The jobs are planned one at a time, the tightest deadline first (file order among equal deadlines), each over what
the jobs before it left: earliest-deadline-first, the order a planner would hand out the fleet. It is greedy, not
the cheapest total: a looser job might have used an owned pool for less than the tighter one it went to. An exact
search would price every split of every pool between the jobs, each a layout search (a second or so per job and
system), so it is left out. The jobs run at the same time: a GPU one job takes is not another's for the horizon
(using a pool one after the other is not planned). A job added never lowers another's cost: it either comes after
it (no effect) or takes capacity before it (less left, never a cheaper mix: planning/fleet.py fills cheapest first).
A site's power cap (`--power-mw`) is shared the same way: each job draws on what the jobs before it at that site left
(planning/fleet.py `power_site`), so the jobs at a site together never draw more than its cap.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfmodel.errors import shown
from perfmodel.inputs.fleet import Fleet, job_tokens
from perfmodel.inputs.scenario import Cost, Scenario
from perfmodel.planning.fleet import DAY_S, FleetPlan, FleetReport, Source, plan_fleet, power_site, sources
from perfmodel.planning.plan import Goal, candidate_bases, power_mw
from perfmodel.planning.request import ScenarioSource

ORDER = "tightest deadline first"


@dataclass(frozen=True)
class Job:
    """A job to plan: its name, its candidates (label, scenario on each system type) and its goal."""

    name: str
    bases: Sequence[tuple[str, Scenario]]
    goal: Goal


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
class SharedReport:
    jobs: list[JobPlan]
    """In the file's order."""
    capacity: list[Source]
    """Every pool and offer at its whole capacity."""
    elapsed_s: float
    power_cap_mw: float | None = None
    """Each site's power cap (`--power-mw`), shared by the jobs there."""
    powered: dict[str, dict[str, float]] = field(default_factory=dict)
    """The power each job's chosen mix draws, MW at the wall, by `power_site`, then by job name."""

    def used(self) -> dict[str, dict[str, int]]:
        """GPUs each job's chosen mix takes, by source name, then job name."""
        found: dict[str, dict[str, int]] = {source.name: {} for source in self.capacity}
        for job in self.jobs:
            for source, gpus in job.chosen.taken if job.chosen else []:
                found[source.name][job.name] = gpus
        return found

    def use(self) -> list[dict[str, Any]]:
        """The fleet's use per pool and offer: its GPUs, each job's share and what is left."""
        used = self.used()
        return [{"name": s.name, "kind": s.kind, "system": s.system, "site": s.site, "gpus": s.gpus,
                 "used": used[s.name], "left": s.gpus - sum(used[s.name].values())}
                for s in self.capacity]  # fmt: skip

    def power_use(self) -> list[dict[str, Any]]:
        """The power each site's jobs draw together (MW at the wall), each job's and what is left of the cap; none
        without a cap. Site "" is the sources of no named site, or the whole fleet where jobs span sites."""
        cap = self.power_cap_mw
        if cap is None:
            return []
        return [{"site": site, "cap_mw": cap, "used_mw": jobs, "left_mw": cap - sum(jobs.values())}
                for site, jobs in self.powered.items()]  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {"order": ORDER, "jobs": [job.to_dict() for job in self.jobs], "fleet_use": self.use(),
                "power_use": self.power_use(), "elapsed_s": self.elapsed_s}  # fmt: skip

    def to_records(self) -> list[dict[str, Any]]:
        """One flat record per job and system type (`--format csv`)."""
        return [{"job": job.name, "turn": job.turn} | record for job in self.jobs for record in job.report.to_records()]


def plan_jobs(jobs: Sequence[Job], fleet: Fleet, max_gpus: int | None) -> SharedReport:
    """Each job's cheapest mix per system type, the tightest deadline first, over the GPUs and the site power the
    jobs before it left."""
    start = time.perf_counter()
    used: dict[str, int] = {}
    powered: dict[str, dict[str, float]] = {}
    planned: dict[str, JobPlan] = {}
    order = sorted(jobs, key=lambda job: job.goal.deadline_s or 0.0)
    for turn, job in enumerate(order, 1):
        drawn = {site: sum(jobs.values()) for site, jobs in powered.items()}
        report = plan_fleet(job.bases, job.goal, fleet, max_gpus, used, drawn)
        planned[job.name] = JobPlan(job.name, report, turn)
        chosen = report.cheapest()
        for source, gpus in chosen.taken if chosen else []:
            used[source.name] = used.get(source.name, 0) + gpus
        if chosen is not None and chosen.candidate is not None and chosen.candidate.prediction is not None:
            site = power_site(fleet, chosen.site)
            powered.setdefault(site, {})[job.name] = power_mw(chosen.candidate.prediction)
    capacity = [source for found in sources(fleet, Cost()).values() for source in found]
    cap = next((job.goal.power_mw for job in jobs), None)
    return SharedReport([planned[job.name] for job in jobs], capacity, time.perf_counter() - start, cap, powered)


def jobs_of(
    fleet: Fleet, path: str | Path, scenario: ScenarioSource, options: dict[str, Any], origins: dict[str, str],
    targets: Sequence[str], confidence: float, power_mw: float | None,
) -> list[Job]:  # fmt: skip
    """The fleet file's [[job]]s to plan: each its scenario (a file relative to the fleet file's, else `scenario`)
    with `options` and its model and tokens applied, on each target system, for its own deadline and budget."""
    where = Path(path).parent
    found = []
    for index, job in enumerate(fleet.job):
        own = {"model": job.model or None, "tokens": job_tokens(job)}
        named = {key: f"{shown(path, 200)}: field 'job.{index}.{key}'" for key, value in own.items() if value}
        given = {key: value for key, value in own.items() if value}
        source = where / job.scenario if job.scenario else scenario
        bases = candidate_bases(source, dict(options) | given, origins | named, targets)
        found.append(Job(job.name, bases, Goal(job.deadline_days * DAY_S, job.budget_usd, confidence, power_mw)))
    return found
