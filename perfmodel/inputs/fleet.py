"""A fleet file (`plan --fleet FLEET.toml`): the GPUs you own, in pools, and the capacity you may rent or buy, in
offers; `perfmodel schema fleet` prints its JSON Schema.

```toml
[[pool]]                        # GPUs you own
name = "hall-a"
system = "dgx-h100"
gpus = 2048
site = "Hall A"
usd_per_gpu_hour = 0.0          # the owned cost basis: amortisation per GPU-hour, 0 for zero marginal cost

[[offer]]                       # capacity to rent (usd_per_gpu_hour) or to buy (usd_per_system)
name = "neocloud-gb300"
system = "gb300-nvl72"
usd_per_gpu_hour = 10.50
max_gpus = 4096                 # availability cap
lead_time_days = 30             # until the capacity is there: the job starts after it
billing = "on_demand"           # optional: "reserved" (default) bills the whole window, "on_demand" each phase's use

[[site]]                        # optional: a site's power cap, MW at the wall with PUE (else --power-mw's)
name = "Hall A"
power_mw = 30

[[job]]                         # several jobs share the fleet (optional: else the command line's one job)
name = "pretrain"
scenario = "pretrain.toml"      # its work: a scenario file (relative to this file) and/or model and tokens
deadline_days = 60
budget_usd = 40e6               # optional

[[job]]
name = "finetune"
model = "llama3.1-8b"
tokens = "100B"
deadline_days = 90              # days from now, as every job's
after = "pretrain"              # optional: starts when pretrain finishes (at the plan's confidence), so it may
start_days = 30                 #   reuse its GPUs; or not before this day (both: the later)
```

A job runs on one system at one site (a pool's `site`; an offer without one joins any site) unless
`span_sites = true` (top level) lets one job take pools of several sites. A `[[site]]`'s `power_mw` caps what the
jobs at that site draw together; `--power-mw` caps every site, and a site given both keeps the smaller.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Literal

from perfmodel.errors import PerfmodelError, shown, unknown_key
from perfmodel.inputs.counts import EXAMPLES, count
from perfmodel.inputs.files import parse_toml, read_text
from perfmodel.inputs.numbers import unquoted
from perfmodel.inputs.record import bounded, record
from perfmodel.inputs.scenario import MAX_GPUS

Billing = Literal["reserved", "on_demand"]
"""How a source is billed: "reserved", held for a plan's whole window; "on_demand", held per campaign phase
(planning/fleet.py `mix_of`)."""


@record
class Pool:
    """GPUs you own, of one system, at one site."""

    name: str = bounded(min_length=1, max_length=64)
    system: str = bounded(min_length=1, max_length=64)
    """A system id (perfmodel hardware list): a job runs on one system type."""
    gpus: int = bounded(ge=1, le=MAX_GPUS)
    site: str = bounded("", max_length=64)
    usd_per_gpu_hour: float = bounded(0.0, ge=0, le=10_000, allow_inf_nan=False)
    """The owned cost basis: amortisation (and power) per GPU-hour, or 0 where using them costs nothing more."""


@record
class Offer:
    """Capacity to rent per GPU-hour or to buy per system, up to a cap, after a lead time."""

    name: str = bounded(min_length=1, max_length=64)
    system: str = bounded(min_length=1, max_length=64)
    usd_per_gpu_hour: float | None = bounded(None, gt=0, le=10_000, allow_inf_nan=False)
    """Rent: the price per GPU-hour."""
    site: str = bounded("", max_length=64)
    """Where the capacity is ("": delivered to whichever site the job runs at)."""
    usd_per_system: float | None = bounded(None, gt=0, le=1e9, allow_inf_nan=False)
    """Buy: the price of one system, spread over its life as `--buy` does (planning/tco.py)."""
    max_gpus: int = bounded(MAX_GPUS, ge=1, le=MAX_GPUS)
    """The most GPUs the offer has."""
    lead_time_days: float = bounded(0.0, ge=0, le=3650, allow_inf_nan=False)
    """Days until the capacity is there: a plan that uses it starts after them."""
    billing: Billing = "reserved"
    """How rent is billed: "reserved", for the plan's whole window (its most GPUs, as a reservation); "on_demand",
    per campaign phase only the GPUs that phase needs beyond the held sources, for that phase's time."""


@record
class Site:
    """A site's power cap: the jobs there never draw more at once."""

    name: str = bounded(min_length=1, max_length=64)
    """A `site` of a pool or an offer."""
    power_mw: float = bounded(gt=0, le=100_000, allow_inf_nan=False)
    """MW at the wall with PUE (whole systems: board, host share, network)."""


@record
class Job:
    """One job sharing the fleet: its work and its own goal."""

    name: str = bounded(min_length=1, max_length=64)
    deadline_days: float = bounded(gt=0, le=3650, allow_inf_nan=False)
    scenario: str = bounded("", max_length=4096)
    """A scenario file, relative to the fleet file ("": the command line's scenario)."""
    model: str = bounded("", max_length=64)
    tokens: float | str | None = bounded(None)
    """Tokens to train: a number or its text (15T)."""
    budget_usd: float | None = bounded(None, gt=0, le=1e12, allow_inf_nan=False)
    start_days: float = bounded(0.0, ge=0, le=3650, allow_inf_nan=False)
    """Days from now before which it cannot start (its data, its code): GPUs that jobs before it free are its."""
    after: str = bounded("", max_length=64)
    """The job it runs after ("": none): it starts when that one finishes, at the plan's confidence."""


@record
class Fleet:
    pool: tuple[Pool, ...] = bounded((), max_length=100)
    offer: tuple[Offer, ...] = bounded((), max_length=100)
    job: tuple[Job, ...] = bounded((), max_length=100)
    site: tuple[Site, ...] = bounded((), max_length=100)
    span_sites: bool = False
    """Whether one job may take pools of several sites (their network between sites is not priced)."""


TABLES: dict[str, type] = {"pool": Pool, "offer": Offer, "job": Job, "site": Site}
"""A fleet file's lists of tables, by key: what keys an entry of each takes."""


def everything(fleet: Fleet) -> list[Pool | Offer]:
    """The pools, then the offers."""
    return [*fleet.pool, *fleet.offer]


def load_fleet(path: str | Path) -> Fleet:
    """The fleet of a TOML file, or one line naming the file, the field and what is allowed."""
    from pydantic import ValidationError

    from perfmodel.inputs.checking import check, model_of
    from perfmodel.inputs.hardware import get_system

    where = shown(path, 200)
    raw = parse_toml(Path(path), read_text(path, "fleet"))
    try:
        fleet: Fleet = check(model_of(Fleet), raw)
    except ValidationError as exc:
        raise PerfmodelError(f"{where}: {_refusal(exc.errors())}") from None
    if not fleet.pool and not fleet.offer:
        raise PerfmodelError(f"{where}: no [[pool]] and no [[offer]]: allowed a fleet of at least one of them")
    for names, what in (([source.name for source in everything(fleet)], "pools or offers"),
                        ([job.name for job in fleet.job], "jobs")):  # fmt: skip
        twice = next((name for name in names if names.count(name) > 1), None)
        if twice is not None:
            raise PerfmodelError(f"{where}: field 'name': {twice!r} names two {what}; allowed: one each")
    for kind, sources in (("pool", list[Pool | Offer](fleet.pool)), ("offer", list[Pool | Offer](fleet.offer))):
        for index, source in enumerate(sources):
            try:
                get_system(source.system)
            except PerfmodelError as exc:
                raise PerfmodelError(f"{where}: field '{kind}.{index}.system': {exc}") from None
    _check_sites(fleet, where)
    for index, offer in enumerate(fleet.offer):
        if (offer.usd_per_gpu_hour is None) == (offer.usd_per_system is None):
            raise PerfmodelError(
                f"{where}: field 'offer.{index}': give usd_per_gpu_hour (rent) or usd_per_system (buy), one of them"
            )
        if offer.billing == "on_demand" and offer.usd_per_system is not None:
            raise PerfmodelError(f"{where}: field 'offer.{index}.billing': {offer.name!r} is bought (usd_per_system), "
                                 "which is owned and costs its hours either way; allowed 'reserved'")  # fmt: skip
    names = [job.name for job in fleet.job]
    for index, job in enumerate(fleet.job):
        if job.after and (job.after not in names or job.after == job.name):
            allowed = ", ".join(repr(name) for name in names if name != job.name) or "none"
            raise PerfmodelError(f"{where}: field 'job.{index}.after': {job.after!r} is not another job; allowed "
                                 f"one of {allowed}")  # fmt: skip
        if job.start_days >= job.deadline_days:
            raise PerfmodelError(f"{where}: field 'job.{index}.start_days': {job.start_days:g} leaves no time before "
                                 f"its deadline_days {job.deadline_days:g}; allowed fewer days")  # fmt: skip
        tokens = job_tokens(job)
        if tokens is not None and not 0 < tokens < math.inf:
            raise PerfmodelError(f"{where}: field 'job.{index}.tokens': allowed a positive count such as {EXAMPLES}, "
                                 f"not {shown(repr(job.tokens), 80)}")  # fmt: skip
    _check_chains(fleet, where)
    return fleet


def _refusal(errors: list[Any]) -> str:
    """The first problem of a fleet file as "field 'pool.0.gpus': ...": a misspelt key before the field it leaves
    missing, with the key meant and what its table allows in a scenario's wording (errors.unknown_key). Not
    scenario_check.explain_error itself: a fleet's lines name list items as 'pool.0' and values as ', not X'."""
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = err["loc"]
    field = ".".join(str(part) for part in loc)
    if err["type"] == "extra_forbidden":
        allowed = [f.name for f in dataclasses.fields(TABLES.get(str(loc[0]), Fleet) if len(loc) > 1 else Fleet)]
        return f"field '{field}': {unknown_key(str(loc[-1]), allowed)}"
    if err["type"] == "missing":
        return f"field '{field}': required"
    if err["type"] == "tuple_type" and len(loc) == 1 and isinstance(err["input"], dict):
        return f"field '{field}': a list of tables, [[{field}]], not one [{field}] table"
    text = unquoted(field, err["type"], err["input"])  # `lead_time_days = "2w"`: no number read it
    return f"field '{field}': {text or err['msg'] + ', not ' + shown(repr(err['input']), 80)}"


def _check_sites(fleet: Fleet, where: str) -> None:
    """A [[site]] names a site of the fleet's pools or offers, once; with `span_sites` the fleet has one cap."""
    named = list(dict.fromkeys(source.site for source in everything(fleet) if source.site))
    seen: list[str] = []
    for index, site in enumerate(fleet.site):
        if fleet.span_sites:
            raise PerfmodelError(f"{where}: field 'site.{index}': with span_sites = true a job draws on several "
                                 "sites at once; allowed one cap for the fleet: --power-mw")  # fmt: skip
        if site.name in seen:
            raise PerfmodelError(f"{where}: field 'site.{index}.name': {site.name!r} is capped twice; allowed one "
                                 "[[site]] each")  # fmt: skip
        if site.name not in named:
            allowed = ", ".join(repr(name) for name in named) or "none (no pool or offer names a site)"
            raise PerfmodelError(f"{where}: field 'site.{index}.name': {site.name!r} is not a site of a pool or "
                                 f"offer; allowed one of {allowed}")  # fmt: skip
        seen.append(site.name)


def _check_chains(fleet: Fleet, where: str) -> None:
    """A job's `after` chain ends: a job cannot run after itself by way of others."""
    after = {job.name: job.after for job in fleet.job}
    for index, job in enumerate(fleet.job):
        seen, name = [job.name], job.after
        while name:
            if name in seen:
                raise PerfmodelError(f"{where}: field 'job.{index}.after': {' -> '.join([*seen, name])} runs in a "
                                     "circle; allowed a chain that ends")  # fmt: skip
            seen.append(name)
            name = after[name]


def job_tokens(job: Job) -> float | None:
    """A job's tokens as a number (NaN where its text writes none)."""
    if not isinstance(job.tokens, str):
        return job.tokens
    try:
        return count(job.tokens)
    except ValueError:
        return math.nan
