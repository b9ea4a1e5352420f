"""The same workload on several systems, precisions and cluster sizes, as ratios to the first.

Each target is `ID[:PRECISION]` (an accelerator id picks its usual system; a system id works too). Every row is a
full prediction (its layout searched where the scenario leaves dimensions open) with ratios added:
speedup_vs_first (throughput), perf_per_usd_vs_first (tokens per dollar; _at_min_price/_at_max_price with both
systems at the low, resp. high end of their price quotes; _min/_max with each price anywhere in its range, the
ratio's whole range; `_low/_high` names only ever an 80% interval, ARCHITECTURE.md's contract),
energy per token, and scaling efficiency across GPU counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from perfmodel.errors import PerfmodelError, counted, did_you_mean, shown
from perfmodel.inputs import PRECISIONS
from perfmodel.inputs.hardware import accelerators, systems
from perfmodel.inputs.record import replaced
from perfmodel.inputs.scenario import MAX_GPUS, TOTAL, Scenario, check_offload, flatten
from perfmodel.planning.campaign import Campaign, Result, predict_any
from perfmodel.planning.request import (
    CLI,
    RENTING,
    PurchaseRead,
    ScenarioSource,
    Spelling,
    check_layout_at_count,
    check_precision,
    check_tokens,
    check_whole_nodes,
    given_where,
    load_checked,
    source_name,
)
from perfmodel.planning.training import AT_MAX_PRICE, AT_MIN_PRICE, JOULES_PER_KWH, SECONDS_PER_HOUR
from perfmodel.planning.views import Shown


@dataclass(frozen=True)
class Target:
    gpu: str | None
    system: str | None
    precision: str | None
    n_gpus: int | None = None
    """A row's own GPU count (`@N`), which the --gpus list does not replace."""
    usd_per_gpu_hour: float | None = None
    """A row's own quoted price (`:$PRICE`), which replaces its GPU's list price or estimate."""

    @property
    def accelerator(self) -> str:
        """The accelerator id the target runs on (a system's own)."""
        return self.gpu or systems()[str(self.system)].accelerator


MAX_USD_PER_GPU_HOUR = 10_000.0
"""The most a quote may be (the scenario's cost.usd_per_gpu_hour limit)."""


def split_quote(spec: str, named: str | None = None, spelling: Spelling = CLI) -> tuple[str, float | None]:
    """A target without its trailing `:$PRICE` quote, and the quote (None when it has none). `named`: what an error
    calls the target (its flag, `--gpu SPEC`, by default); `spelling` how its fix is given."""
    core, sign, text = spec.strip().partition(":$")
    if not sign:
        return core, None
    try:
        price = float(text)
    except ValueError:
        price = math.nan
    if not 0 < price <= MAX_USD_PER_GPU_HOUR:  # NaN too
        raise PerfmodelError(
            f"{named or f'--gpu {shown(spec)}'}: '${shown(text)}' must be a price per GPU-hour above 0 and at most "
            f"{MAX_USD_PER_GPU_HOUR:,.0f} USD: {spelling.quote_syntax}"
        )
    return core, price


def parse_target(spec: str, named: str | None = None, spelling: Spelling = CLI) -> Target:
    """`ID[:PRECISION][@N_GPUS][:$PRICE]`: an accelerator or system id, optionally with a precision, its own GPU
    count (`gb300:nvfp4@1024` against `h100-sxm:fp8@2048`: equal budgets or equal racks rather than equal counts)
    and its own quoted price per GPU-hour (`gb300:nvfp4:$9.50`). `named`: what an error calls the target (its flag,
    `--gpu SPEC`, by default; a sweep file's list entry), `spelling` how a price's fix is given."""
    named = named or f"--gpu {shown(spec)}"
    unquoted, quote = split_quote(spec, named, spelling)
    core, at, count = unquoted.partition("@")
    n_gpus = None
    if at:
        n_gpus = int(count) if count.isdigit() else 0
        if not 1 <= n_gpus <= MAX_GPUS:
            raise PerfmodelError(f"{named}: '@{shown(count)}' must be a whole number of GPUs from 1 to {MAX_GPUS:,}")
    ident, _, given = core.partition(":")
    precision = given.lower()  # as the tables print it (FP8, NVFP4) too
    if precision and precision not in PRECISIONS:
        written, _, price = given.partition(":")
        hint = did_you_mean(given, PRECISIONS)
        if written.lower() in PRECISIONS:  # 'fp8:3': a price without its '$'
            hint = f" (a price per GPU-hour takes a '$': '{shown(ident)}:{shown(written)}:${shown(price)}')"
        raise PerfmodelError(f"{named}: unknown precision '{shown(given)}'{hint}; valid: {', '.join(PRECISIONS)}")
    known_accelerators, known_systems = accelerators(), systems()
    if ident in known_accelerators:
        return Target(ident, None, precision or None, n_gpus, quote)
    if ident in known_systems:
        return Target(None, ident, precision or None, n_gpus, quote)
    valid = ", ".join([*known_accelerators, *known_systems])
    hint = did_you_mean(ident, [*known_accelerators, *known_systems])
    raise PerfmodelError(f"{named}: unknown accelerator or system '{shown(ident)}'{hint}; valid: {valid}")


MAX_SYSTEMS = 16
MAX_ROWS = 64
"""Each row of a comparison is a full prediction (a search where the layout is open, up to a second or two)."""


def parse_targets(specs: Sequence[str], spelling: Spelling = CLI) -> list[Target]:
    """Each `--gpu` (or `gpu=`) target parsed, an error naming it as `spelling` spells it: compare's, and the HTTP
    server's bound on a comparison's rows (serve/work.py), which counts the targets as compare reads them."""
    return [parse_target(spec, spelling.given("gpu", shown(spec)), spelling) for spec in specs]


class TooLarge(PerfmodelError):
    """A comparison past a bound (check_size): `field` the keyword at fault as the API spells it (`gpu`, `n_gpus`),
    which the HTTP page highlights; `rows`, for the rows' bound, what was counted ("gpu x n_gpus: ... = 72 rows"),
    which the server words against its own bound."""

    def __init__(self, message: str, field: str, rows: str = "") -> None:
        super().__init__(message)
        self.field = field
        self.rows = rows


def check_size(targets: Sequence[Target], n_counts: int, spelling: Spelling = CLI, max_rows: int = MAX_ROWS) -> None:
    """Refuse (TooLarge), before any work, more than MAX_SYSTEMS systems or `max_rows` rows (a system at its own
    count, `@N`, is one row; each other takes every GPU count; the HTTP server's bound is lower), and GPU counts no
    row would use (every system at its own count: they were dropped without a word); the error names the flags or
    the API's keywords, as `spelling` says. Past the rows' bound the counts are at fault where they alone pass it or
    at most one system takes them (the scenario's own where no gpu is given), else the systems."""
    gpu, gpus = spelling.name("gpu"), spelling.name("n_gpus")
    if len(targets) > MAX_SYSTEMS:
        raise TooLarge(f"{gpu} given {len(targets)} times; at most {MAX_SYSTEMS} systems per comparison", "gpu")
    own = [t for t in targets if t.n_gpus]
    if targets and len(own) == len(targets) and n_counts:
        at_counts = ", ".join(f"{t.gpu or t.system}@{t.n_gpus}" for t in own)
        raise TooLarge(
            f"{gpus}: no row would use it, each {gpu} has its own count ({at_counts}); drop {gpus} or an @N", "n_gpus"
        )
    shared = len(targets) - len(own) if targets else 1
    rows = len(own) + shared * max(n_counts, 1)
    if rows > max_rows:
        at_own = f"{len(own)} at their own counts + " if own else ""
        systems = counted(shared, "system") if targets else "the scenario's system"
        field = "n_gpus" if n_counts > max_rows or shared <= 1 else "gpu"
        named = f"{gpu} x {gpus}" if targets else gpus
        said = f"{named}: {at_own}{systems} x {counted(n_counts, 'GPU count')} = {rows} rows"
        raise TooLarge(f"{said}; at most {max_rows} (each a full prediction): compare fewer", field, said)


def scenarios(
    base: Scenario, targets: Sequence[Target], gpu_counts: Sequence[int] | None, spelling: Spelling = CLI
) -> list[Scenario]:
    """One scenario per target and GPU count, in that order (targets outer); a target's own count is its only one.
    Each target's hardware is checked for the base's activation offload (`check_offload`, which only the first
    target's went through with the file): a system without a host link priced it NaN. Errors name the target as
    `spelling` spells it (request.CLI, API)."""
    out = []
    for target in targets or [Target(base.gpu, base.system, None)]:
        cost = base.cost
        named = spelling.given("gpu", target.accelerator)
        if target.usd_per_gpu_hour is not None:
            if cost.mode == "buy":
                raise PerfmodelError(f"{named}: a quote is a rental price; {spelling.given('buy', True)} prices owning")
            cost = replaced(cost, usd_per_gpu_hour=target.usd_per_gpu_hour)
        for n in target_counts(target, gpu_counts, base):
            update = {"gpu": target.gpu, "system": target.system, "n_gpus": n, "cost": cost}
            out.append(replaced(base, **update | {"precision": target.precision or base.precision}))
        try:
            check_offload(out[-1])
        except PerfmodelError as exc:
            raise PerfmodelError(f"{named}: {exc}") from None
    return out


def target_counts(target: Target, gpu_counts: Sequence[int] | None, base: Scenario) -> Sequence[int]:
    """The GPU counts of a target's rows: its own (@N) alone, else the comparison's, else the base's."""
    return [target.n_gpus] if target.n_gpus else gpu_counts or [base.n_gpus]


def check_one_price(
    targets: Sequence[Target], base: Scenario, source: ScenarioSource, options: dict[str, Any], origins: dict[str, str],
    spelling: Spelling = CLI,
) -> None:  # fmt: skip
    """One price (a flag's or the scenario file's, a quote or a distribution) for candidates on different GPUs would
    price them all alike: the error says how to quote each. A candidate's own quote is its price, and the one price
    may serve one GPU; a distribution states the price, so no candidate may quote its own beside it."""
    unquoted = sorted({t.accelerator for t in targets if t.usd_per_gpu_hour is None})
    key = "usd_per_gpu_hour" if base.cost.usd_per_gpu_hour is not None else "price_range"
    if base.cost.usd_per_gpu_hour is None and base.cost.usd_per_gpu_hour_range is None:
        return
    where = given_where(key, source, options, origins)
    quoted = sorted(t.accelerator for t in targets if t.usd_per_gpu_hour is not None)
    if key == "price_range" and quoted:
        raise PerfmodelError(f"{where}: a price distribution and a candidate's own quote ({', '.join(quoted)}) "
                             "exclude each other; drop one")  # fmt: skip
    if len(unquoted) < 2:
        return
    example = " ".join(spelling.quoted("gpu", f"{gpu}:$PRICE") for gpu in unquoted)
    instead = "ask for one GPU at a time, or " if key == "price_range" else ""
    raise PerfmodelError(
        f"{where}: one price for candidates on different GPUs ({', '.join(unquoted)}); {instead}quote each instead: "
        f"{example}"
    )


def check_precisions(
    targets: Sequence[Target], base: Scenario, source: ScenarioSource, options: dict[str, Any], origins: dict[str, str],
    spelling: Spelling = CLI,
) -> None:  # fmt: skip
    """Each target's precision (its own `:PRECISION`, else the base's) runs on its accelerator, checked before any
    prediction, so that the refusal names the target and its `ID:PRECISION` fix (check_precision)."""
    for target in targets:
        ident = str(target.gpu or target.system)
        candidate = replaced(base, gpu=target.gpu, system=target.system, precision=target.precision or base.precision)
        if target.precision:  # the target's own: the refusal names it as given
            named = {"precision": spelling.given("gpu", f"{ident}:{target.precision}")}
            check_precision(candidate, source, {"precision": target.precision}, named, ident, spelling)
        else:
            check_precision(candidate, source, options, origins, ident, spelling)


def checked_base(
    targets: Sequence[Target],
    source: ScenarioSource,
    options: dict[str, Any],
    origins: dict[str, str],
    relayout: bool,
    spelling: Spelling = CLI,
    purchase_read: PurchaseRead = RENTING,
) -> Scenario:
    """The base of a comparison or a plan, checked before any prediction: `source` with `options` on the first
    target's hardware, so that a default scenario's layout, tuned for its own hardware, is dropped as it is for a
    prediction on new hardware; checked as every question is (load_checked; its given layout at every count, as each
    target's count may differ; the purchase options it reads renting, `purchase_read`), then one price
    (check_one_price) and each target's precision (check_precisions), each error spelt as `spelling` says
    (request.CLI, or API for the Python API's)."""
    first = targets[0] if targets else None
    options = options | {"gpu": first and first.gpu}
    options["system"] = options.get("system") or (first and first.system)
    base = load_checked(
        source,
        options,
        origins,
        relayout=relayout,
        own_count=False,
        own_precision=False,
        spelling=spelling,
        purchase_read=purchase_read,
    )
    check_one_price(targets, base, source, options, origins, spelling)
    check_precisions(targets, base, source, options, origins, spelling)
    return base


def compare_request(
    source: ScenarioSource,
    options: dict[str, Any],
    origins: dict[str, str],
    targets: Sequence[str],
    gpu_counts: Sequence[int] | None,
    relayout: bool = False,
    spelling: Spelling = CLI,
    purchase_read: PurchaseRead = RENTING,
) -> list[Scenario]:
    """The scenarios of one comparison: `source` with `options` applied, on each target and GPU count. The first
    target and count stand in for the base's hardware (checked_base, with the purchase options the question reads
    renting). Errors name the CLI's flags (`--gpu ID`), or with `spelling` API the Python API's (`gpu='ID'`), as
    load_checked's do."""
    parsed = parse_targets(targets, spelling)
    check_size(parsed, len(gpu_counts or []), spelling)
    first = parsed[0] if parsed else None
    options = options | {"n_gpus": (first and first.n_gpus) or (gpu_counts[0] if gpu_counts else None)}
    shared_origins = origins  # the rows without @N take --gpus' counts, named as it
    if first and first.n_gpus:  # the first row's own count: an error about it names its --gpu
        origins = origins | {"n_gpus": spelling.given("gpu", targets[0])}
    base = checked_base(parsed, source, options, origins, relayout, spelling, purchase_read)
    made = scenarios(base, parsed, gpu_counts, spelling)
    # without --gpus, the first row's count; without any, the file's
    shared = (shared_origins if gpu_counts else origins).get("n_gpus", f"{source_name(source)}: field 'n_gpus'")
    named = [spelling.given("gpu", spec) if t.n_gpus else shared  # a row's own count (@N) is its --gpu's
             for spec, t in zip(targets, parsed, strict=True) for _ in target_counts(t, gpu_counts, base)]  # fmt: skip
    for scenario, where in zip(made, named or [shared] * len(made), strict=True):  # each row and its target
        check_whole_nodes(scenario, where)
        check_layout_at_count(scenario, source, where)
        check_tokens(scenario, source, options, origins)  # each row is predicted at its own count and batch
    return made


def run(items: Sequence[Scenario], progress: Callable[[int, int], None] | None = None) -> list[Result]:
    """Each scenario predicted in full: a Prediction, or a Campaign of a scenario with phases."""
    predictions = []
    for i, scenario in enumerate(items, 1):
        predictions.append(predict_any(scenario))
        if progress is not None:
            progress(i, len(items))
    return predictions


def gpu_count(p: Result) -> int:
    """A result's GPU count: its layout's, or the most any phase of a campaign runs on."""
    return p.n_gpus if isinstance(p, Campaign) else p.layout.n_gpus


def gpus_held(p: Result) -> float:
    """The GPUs a result holds while it trains: its layout's count, or a campaign's over its time (its GPU-hours
    over its hours), so that its tokens per dollar and energy per token are the whole run's."""
    return p.mean_gpus if isinstance(p, Campaign) else p.layout.n_gpus


def tokens_per_usd(p: Result, price: float | None) -> float | None:
    """Tokens one US dollar buys at `price` per GPU-hour (None without a price)."""
    return None if price is None else p.tokens_per_s * SECONDS_PER_HOUR / (gpus_held(p) * price)


def _over(value: float | None, first: float | None) -> float | None:
    return None if value is None or not first else value / first


def joules_per_token(p: Result) -> float:
    """Facility energy per trained token: GPUs x power at the wall (board, host, network) x PUE over throughput."""
    return gpus_held(p) * p.hardware.it_power_w_per_gpu * p.scenario.cost.pue / p.tokens_per_s


def scaling_bases(predictions: Sequence[Result]) -> list[int | None]:
    """Per prediction, the index of the one its scaling efficiency is relative to: the smallest GPU count of the
    same system, precision and model; None when that group has one size only."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for index, p in enumerate(predictions):
        groups.setdefault((p.hardware.system.id, p.scenario.precision, p.model.id), []).append(index)
    bases: list[int | None] = [None] * len(predictions)
    for members in groups.values():
        if len({gpu_count(predictions[i]) for i in members}) > 1:
            smallest = min(members, key=lambda i: gpu_count(predictions[i]))
            for i in members:
                bases[i] = smallest
    return bases


def with_ratios(predictions: Sequence[Result]) -> list[dict[str, Any]]:
    """Each prediction's JSON object with its ratios to the first, and scaling efficiency within each system."""
    first = predictions[0]
    records = []
    for p, base in zip(predictions, scaling_bases(predictions), strict=True):
        record = p.to_dict()
        prices = {"": p.price.usd_per_gpu_hour, AT_MIN_PRICE: p.price.minimum, AT_MAX_PRICE: p.price.maximum}
        first_prices = {"": first.price.usd_per_gpu_hour, AT_MIN_PRICE: first.price.minimum,
                        AT_MAX_PRICE: first.price.maximum}  # fmt: skip
        record["speedup_vs_first"] = p.tokens_per_s / first.tokens_per_s
        for suffix, price in prices.items():
            record[f"tokens_per_usd{suffix}"] = tokens_per_usd(p, price)
            record[f"perf_per_usd_vs_first{suffix}"] = _over(
                tokens_per_usd(p, price), tokens_per_usd(first, first_prices[suffix])
            )
        record.update(_perf_per_usd_range(p, first, record))
        record["joules_per_token"] = joules_per_token(p)
        record["kwh_per_million_tokens"] = joules_per_token(p) * 1e6 / JOULES_PER_KWH
        record["energy_per_token_vs_first"] = joules_per_token(p) / joules_per_token(first)
        record["scaling_efficiency"] = (
            None if base is None else p.tokens_per_s_per_gpu / predictions[base].tokens_per_s_per_gpu
        )
        records.append(record)
    return records


def _perf_per_usd_range(p: Result, first: Result, record: dict[str, Any]) -> dict[str, float | None]:
    """perf_per_usd_vs_first's range with each price anywhere in its low-high range: independent prices for two
    GPUs, one price moving for both rows of one GPU (then the ratios at both low and both high bound it)."""
    if p.hardware.accelerator.id == first.hardware.accelerator.id and p.price == first.price:
        ends = [record[f"perf_per_usd_vs_first{AT_MIN_PRICE}"], record[f"perf_per_usd_vs_first{AT_MAX_PRICE}"]]
        if None in ends:
            return {"perf_per_usd_vs_first_min": None, "perf_per_usd_vs_first_max": None}
        return {"perf_per_usd_vs_first_min": min(ends), "perf_per_usd_vs_first_max": max(ends)}
    return {
        "perf_per_usd_vs_first_min": _over(
            tokens_per_usd(p, p.price.maximum), tokens_per_usd(first, first.price.minimum)
        ),
        "perf_per_usd_vs_first_max": _over(
            tokens_per_usd(p, p.price.minimum), tokens_per_usd(first, first.price.maximum)
        ),
    }


@dataclass(frozen=True, repr=False)
class Comparison(Shown):
    """The predictions of one comparison (or campaigns, each run whole), first row the reference of every ratio."""

    predictions: list[Result]

    @cached_property
    def rows(self) -> list[dict[str, Any]]:
        """What `perfmodel compare --format json` prints: each prediction's object with its ratios to the first
        (computed once: every row is a full to_dict)."""
        return with_ratios(self.predictions)

    def to_records(self) -> list[dict[str, Any]]:
        """The rows as flat records (`breakdown.compute_s` columns), ready for pandas.DataFrame or a CSV writer; a
        campaign's rows are its phases and its total (`flat_rows`)."""
        return [record for row in self.rows for record in flat_rows(row)]

    def _shown(self) -> list[dict[str, Any]]:
        return self.to_records()


def flat_rows(row: dict[str, Any]) -> list[dict[str, Any]]:
    """A comparison row as the flat records of the one output schema: itself, or for a campaign a record per phase
    (`phase` first, no ratios: they compare whole campaigns) and the total record carrying the ratios, as
    `predict --format csv` of a campaign and `export compare` write them."""
    if "phases" not in row:
        return [flatten(row)]
    total = {"phase": TOTAL} | flatten({key: value for key, value in row.items() if key != "phases"})
    return [flatten(phase) for phase in row["phases"]] + [total]
