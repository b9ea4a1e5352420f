"""The scenario a question is asked about: a file, a Scenario object or the built-in default, with the options of
a command's flags or the API's keywords applied, and its layout reopened when the question searches it."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfmodel.errors import InfeasibleLayout, PerfmodelError, shown, shown_value
from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.precision import unsupported
from perfmodel.inputs.record import given, replaced
from perfmodel.inputs.scenario import (
    MAX_GPUS,
    OPTION_FIELDS,
    OPTION_FLAGS,
    Cost,
    Phase,
    Scenario,
    load_scenario,
    option_flag,
    scenario_file,
    with_overrides,
)
from perfmodel.physics import calibration
from perfmodel.physics.parallel import Layout, Rule, broken_rules, feature_rules
from perfmodel.planning.predict import check_one_step, given_degree, given_full_layout, without_layout

MAX_GPU_COUNTS = 64
"""GPU counts one search or comparison takes: each is a full layout search, and a thousand of them is a mistake."""

QUOTE_SYNTAX = "--gpu 'ID:$PRICE' (e.g. 'gb300:nvfp4:$9.50'; single quotes keep the shell off the $)"
"""How a command line quotes a price (compare.split_quote): a shell expands an unquoted `$9`."""
GOAL_FLAGS = {"deadline_s": "--deadline", "budget_usd": "--budget"}
"""The goal's keywords whose flag is not named after them (a scenario option's is scenario.option_flag's)."""


def _flag(key: str) -> str:
    """The command line's flag of keyword `key`: `--max-gpus`."""
    return GOAL_FLAGS.get(key) or option_flag(key)


@dataclass(frozen=True)
class Spelling:
    """How an error names an option and the value to give it: the CLI's flag (`--gpu ID`) or the Python API's
    keyword (`gpu='ID'`). One object passed down from the question, so that no check asks which of the two it is:
    the two spellings (CLI, API) differ in their fields alone."""

    name: Callable[[str], str]
    """The option of keyword `key`: `--max-gpus`, or `max_gpus`."""
    valued: str
    """An option given a value, as a format of its `name` and `value`: `--gpu ID`, or `gpu='ID'`."""
    switch: str
    """An option given True, as `valued`: the flag alone on a command line (`--buy`), `buy=True` in the API."""
    quote: str
    """A value holding a `$` the shell would expand: in single quotes on a command line."""
    quote_syntax: str
    """How to give a target its own price."""

    def given(self, key: str, value: object) -> str:
        """The option given `value`."""
        return (self.switch if value is True else self.valued).format(name=self.name(key), value=value)

    def quoted(self, key: str, value: str) -> str:
        """`given`, where the value holds a `$` the shell would expand."""
        return self.given(key, self.quote.format(value))


CLI = Spelling(name=_flag, valued="{name} {value}", switch="{name}", quote="'{}'", quote_syntax=QUOTE_SYNTAX)
API = Spelling(
    name=str,  # the keyword itself
    valued="{name}={value!r}",
    switch="{name}={value!r}",
    quote="{}",
    quote_syntax="gpu='ID:$PRICE' (e.g. 'gb300:nvfp4:$9.50')",
)

OWNING_KEYS = (
    "usd_per_system",
    "amortisation_years",
    "utilisation",
    "electricity_usd_per_kwh",
    "facility_usd_per_kw_month",
)
"""The options that price owning the systems (planning/tco.py): renting, a prediction reads none of them."""
FLEET_OWNING_KEYS = ("amortisation_years", "utilisation", "electricity_usd_per_kwh", "facility_usd_per_kw_month")
"""The OWNING_KEYS a fleet's offers to buy read (planning/fleet.py): each offer carries its own usd_per_system."""


@dataclass(frozen=True)
class PurchaseRead:
    """The purchase options (OWNING_KEYS) a question reads while its scenario rents, passed down from the question to
    the checks that refuse the others (`--utilisation 0.7` without `--buy` prices nothing and says nothing): an export
    prices owning beside renting (EXPORT_READ: its workbook's and columns' ownership alternative reads them all), a
    fleet plan's offers to buy spread a purchase over a life as `--buy` does (FLEET_OWNING_KEYS); a plain question
    reads none (RENTING)."""

    keys: frozenset[str] = frozenset()
    why_unread: str | None = None
    """Why one it does not read is refused, after the flag or field that gave it, where the question knows better
    than the general `needs --buy` (a fleet: where its offers to buy take their price, or that it has none)."""
    by_mode: bool = True
    """Whether a scenario that buys (`[cost] mode = "buy"`) reads every purchase option: not where the question
    prices owning its own way (a fleet's offers), so a file's key it does not read is refused whatever the mode."""

    def unread(self, cost: Cost, fields: Iterable[str]) -> str | None:
        """The first of `fields` (scenario keys, 'cost.utilisation') that prices owning the systems while `cost`
        rents and this question does not read it: nothing reads it; None if none."""
        if cost.mode == "buy" and self.by_mode:
            return None
        unread = {OPTION_FIELDS[key] for key in OWNING_KEYS if key not in self.keys}
        return next((field for field in fields if field in unread), None)


RENTING = PurchaseRead()
"""A question that prices renting alone: every purchase option needs `--buy`."""
EXPORT_READ = PurchaseRead(frozenset(OWNING_KEYS))
"""An export: it prices owning beside renting, so every purchase option counts without `--buy`."""


ScenarioSource = str | Path | Scenario | None
"""A scenario TOML file, a Scenario object, or None for the built-in default (scenarios/default.toml)."""


def source_name(source: ScenarioSource) -> str:
    """What an input error names as the scenario's origin: its file ('scenario' for a Scenario object)."""
    return "scenario" if isinstance(source, Scenario) else str(scenario_file(source))


def given_where(
    key: str, source: ScenarioSource, options: dict[str, Any], origins: dict[str, str], field: bool = True
) -> str:
    """Where option `key`'s value came from, as an error line begins: its flag or keyword where one gave it, else
    the scenario's field, or its file alone without `field` (for a message that names the field itself). `origins`
    names every flag, the ones not given too: scenario_flags."""
    if options.get(key) is not None:
        return origins.get(key, key)
    return f"{source_name(source)}: field '{OPTION_FIELDS[key]}'" if field else source_name(source)


def load_request(
    source: ScenarioSource,
    options: dict[str, Any],
    origins: dict[str, str],
    relayout: bool = False,
    spelling: Spelling = CLI,
    purchase_read: PurchaseRead = RENTING,
) -> Scenario:
    """`source` with `options` (keyword -> value, None: not given) applied; `origins` names where each came from
    (`--tp`, `tp=3`) for error lines. `relayout` leaves the scenario's own layout open (keeping its global batch and
    sequence length) so that it is searched; options still fix their dimension. A scenario without hardware is
    refused first, naming its file and the fix as `spelling` spells it: every later check needs the hardware. A
    purchase option the question does not read (`purchase_read`) while the scenario rents is refused."""
    check_keywords(options)
    if options.get("recompute_layers") is not None and options.get("recompute") is None:
        options = options | {"recompute": "full"}  # a partial recompute is a full one: it replaces the file's mode
    if isinstance(options.get("buy"), bool):  # buy=True reads as the --buy flag; False as renting
        options = options | {"buy": "buy" if options["buy"] else "rent"}
    overrides = {OPTION_FIELDS[k]: v for k, v in options.items()}
    where = {OPTION_FIELDS[k]: origin for k, origin in origins.items()}
    if isinstance(source, Scenario):
        loaded = with_overrides(source, overrides, where)
    else:
        loaded = load_scenario(source, overrides, where)
    if loaded.gpu is None and loaded.system is None:
        held = "scenario" if isinstance(source, Scenario) else "file"
        raise PerfmodelError(
            f"{source_name(source)}: no hardware given: set gpu or system in the {held}, or pass "
            f"{spelling.given('gpu', 'ID')} or {spelling.given('system', 'ID')}"
        )
    check_owning(loaded, source, options, origins, spelling, purchase_read)
    if options.get("n_gpus") is not None:
        check_whole_nodes(loaded, origins.get("n_gpus", "n_gpus"))
    check_file_nodes(loaded, source, own_count=options.get("n_gpus") is None and not relayout)
    check_spare_nodes(loaded, given_where("spare_gpus", source, options, origins))
    if loaded.calibration is not None or loaded.vintage is not None:
        check_calibration(loaded, source, options, origins)
    if not relayout:
        return loaded
    opened = without_layout(loaded)
    given = {k.removeprefix("parallelism."): v for k, v in overrides.items() if k.startswith("parallelism.") and v}
    return replaced(opened, parallelism=replaced(opened.parallelism, **given))


def check_owning(
    loaded: Scenario,
    source: ScenarioSource,
    options: dict[str, Any],
    origins: dict[str, str],
    spelling: Spelling,
    purchase_read: PurchaseRead,
) -> None:
    """A purchase option (OWNING_KEYS) given while the scenario rents priced nothing and said nothing (`--utilisation
    0.7` without `--buy`, a file's `[cost] utilisation` without `mode = "buy"`): refused, naming the flag, else the
    file's field, unless the question reads it beside renting (`purchase_read`, which may say why it refuses the
    rest: a fleet's offers to buy take their price themselves)."""
    buy = spelling.given("buy", True)
    unread = (
        k for k in OWNING_KEYS if options.get(k) is not None and purchase_read.unread(loaded.cost, [OPTION_FIELDS[k]])
    )
    key = next(unread, None)
    if key is not None:
        why = (
            f"prices owning the systems; it needs {buy} (renting, the price is per GPU-hour: "
            f"{spelling.name('usd_per_gpu_hour')})"
        )
        raise PerfmodelError(f"{origins.get(key, spelling.name(key))}: {purchase_read.why_unread or why}")
    field = purchase_read.unread(loaded.cost, [f"cost.{name}" for name in sorted(given(loaded.cost))])
    if field is not None:
        why = (
            f'prices owning the systems; it needs [cost] mode = "buy" (or {buy}); renting, the price is per GPU-hour: '
            "cost.usd_per_gpu_hour"
        )
        raise PerfmodelError(f"{source_name(source)}: field '{field}': {purchase_read.why_unread or why}")


def load_checked(
    source: ScenarioSource,
    options: dict[str, Any],
    origins: dict[str, str],
    *,
    relayout: bool = False,
    own_count: bool = True,
    own_precision: bool = True,
    spelling: Spelling = CLI,
    purchase_read: PurchaseRead = RENTING,
) -> Scenario:
    """The one path of every question from its scenario to the model: `source` with `options` applied
    (load_request, `relayout` as there), its hardware given, its given layout checked (check_given_layout,
    `own_count` as there) and, with `own_precision`, its precision on its accelerator (check_precision; compare and
    plan check each target's own instead). Each error is one line naming the flag, the keyword (`spelling` API: the
    Python API's, whose fix is spelt `precision='bf16'`) or the file's field that gave the value; a purchase option
    counts renting where the question reads it (`purchase_read`, as load_request)."""
    loaded = load_request(source, options, origins, relayout, spelling, purchase_read)
    check_given_layout(loaded, source, options, origins, own_count)
    check_tokens(loaded, source, options, origins, own_count)
    if own_precision:
        check_precision(loaded, source, options, origins, spelling=spelling)
    return loaded


def check_calibration(
    scenario: Scenario, source: ScenarioSource, options: dict[str, Any], origins: dict[str, str]
) -> None:
    """The scenario's calibration file reads, and its vintage is one the calibration fitted (not after its newest
    release), checked here so that an error names the flag or the file's field that gave it: the prediction refused
    them naming neither. Both are read once per process (cached)."""
    try:
        fitted = calibration.resolve(scenario.calibration)
    except PerfmodelError as exc:  # a calibration file's line begins with its path, the one a flag gave
        where = given_where("calibration", source, options, origins)
        raise PerfmodelError(str(exc) if options.get("calibration") is not None else f"{where}: {exc}") from None
    if scenario.vintage is None:
        return
    try:
        fitted.efficiency(resolve(scenario.gpu, scenario.system).accelerator.family, vintage=scenario.vintage)
    except PerfmodelError as exc:  # the message names the vintage itself
        raise PerfmodelError(f"{given_where('vintage', source, options, origins, field=False)}: {exc}") from None


def check_keywords(options: dict[str, Any]) -> None:
    """Every keyword is a scenario option (OPTION_FIELDS): a misspelt one is refused, not ignored, with the keyword
    meant (a command-line flag's name, `gpus`, for its keyword, `n_gpus`; else the nearest spelling)."""
    unknown = sorted(set(options) - set(OPTION_FIELDS))
    if unknown:
        word = unknown[0]
        near = [k for k, flag in OPTION_FLAGS.items() if flag == word] or difflib.get_close_matches(word, OPTION_FIELDS)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        raise PerfmodelError(f"unknown keyword '{word}'{hint}; valid: {', '.join(OPTION_FIELDS)}")


def check_given_layout(
    scenario: Scenario,
    source: ScenarioSource,
    options: dict[str, Any],
    origins: dict[str, str],
    own_count: bool = True,
) -> None:
    """The scenario's given layout breaks no layout rule at its own GPU count (`own_count`; else, searched at other
    counts, no rule that reads the count); the error names the flag that set a dimension the first broken rule names
    (`--tp: ... TP 3 must divide the 64 attention heads`), else the scenario file's field, as the other input errors
    do. A layout left partly to the search is held to the rules that read only given dimensions (TP against the
    heads), and to the GPU count's with the open degrees at 1 (`--tp 16` on 8 GPUs), which no searched layout could
    then keep: the search's own error ('no valid layout ...') names neither
    the flag nor the file. Each phase of a campaign is checked as it is predicted (campaign.phase_scenario), the
    error naming the phase and, where the phase sets the dimension, its own field."""
    if not scenario.phase:
        _check_layout(scenario, source, options, origins, own_count, None)
        return
    from perfmodel.planning.campaign import phase_scenarios  # campaign imports the predictions; request is lighter

    for phase, (_, phased) in zip(scenario.phase, phase_scenarios(scenario), strict=True):
        _check_layout(phased, source, options, origins, own_count, phase)


def _check_layout(
    scenario: Scenario,
    source: ScenarioSource,
    options: dict[str, Any],
    origins: dict[str, str],
    own_count: bool,
    phase: Phase | None,
) -> None:
    """check_given_layout of one scenario: a one-phase scenario's, or a campaign `phase`'s."""
    broken = given_layout_problem(scenario, own_count)
    if broken is None:
        return
    named, why = broken
    where = source_name(source)
    if phase is not None:
        own = _phase_fields(phase)
        field = next((own[d] for d in named if d in own), None)
        if field is not None:
            raise InfeasibleLayout(f"{where}: phase '{phase.name}': field '{field}': {why}")
        why = f"phase '{phase.name}': {why}"  # a dimension it inherits: the flag's or the top level's
    flag = next((origins[d] for d in named if options.get(d) is not None and d in origins), None)
    if flag is not None:
        raise InfeasibleLayout(f"{flag}: {why}")
    raise InfeasibleLayout(f"{where}: field '{OPTION_FIELDS[named[0]]}': {why}")


def check_layout_at_count(scenario: Scenario, source: ScenarioSource, where: str) -> None:
    """A comparison's row keeps its given layout at its own GPU count, which `where` gave (its `--gpu ID@N`, `--gpus`
    or the file's field; check_given_layout checks the base at no count); a campaign phase with a count of its own
    (`n_gpus`) names that field. The search's error ('no valid layout of llama3.1-405b on 512 GPUs', the 405B
    campaign's 128K stage at TP 8 x PP 16 x CP 16 on `gb300@512`) named neither, and the web page marked no field."""
    problem = layout_at_count_problem(scenario, source, where)
    if problem is not None:
        raise InfeasibleLayout(problem)


def layout_at_count_problem(scenario: Scenario, source: ScenarioSource, where: str | None = None) -> str | None:
    """Why the scenario's given layout runs at no layout of its GPU count, before any search (None where it may):
    the broken rule after `where` (none where the count is the caller's own, as each count a plan tries), a campaign
    phase named, by the file's field where the phase has a count of its own."""
    at = f"{where}: " if where else ""
    if not scenario.phase:
        broken = given_layout_problem(scenario)
        return f"{at}{broken[1]}" if broken is not None and "n_gpus" in broken[0] else None
    from perfmodel.planning.campaign import phase_scenarios  # campaign imports the predictions; request is lighter

    for phase, (_, phased) in zip(scenario.phase, phase_scenarios(scenario), strict=True):
        broken = given_layout_problem(phased)
        if broken is None or "n_gpus" not in broken[0]:
            continue
        own = f"{source_name(source)}: phase '{phase.name}': field 'n_gpus'"
        return f"{own if phase.n_gpus is not None else f'{at}phase {phase.name!r}'}: {broken[1]}"
    return None


def given_layout_problem(scenario: Scenario, own_count: bool = True) -> tuple[list[str], str] | None:
    """None where the scenario's given layout breaks no rule (as check_given_layout holds it), else the given
    dimensions the first broken rule names and the sentence of every broken rule: what a caller names the flag,
    field or CSV column by (fitting.validation.prepare)."""
    rules = feature_rules(scenario.stack, scenario.vintage)
    full = given_full_layout(scenario)
    layout, fixed = (full, set(OPTION_FIELDS)) if full is not None else _given_part(scenario)
    fixed -= set() if own_count else {"n_gpus"}
    held = [rule for rule in rules if set(rule.dims) <= fixed]  # then the GPU count's, which names open ones too
    rules = (*held, *(rule for rule in rules if rule not in held and _weakest_at_one(rule, fixed)))
    model = scenario.model_spec()
    broken = broken_rules(layout, model, scenario.n_gpus, rules)
    if not broken:
        return None
    why = "; ".join(rule.explain(layout.numbers(), model, scenario.n_gpus) for rule in broken)
    if full is not None and own_count:
        why = f"invalid layout {layout.describe()}: {why}"  # as physics.parallel.check words it
    return [dim for dim in broken[0].dims if dim in fixed], why  # the given ones (a GPU-count rule names open ones too)


def _weakest_at_one(rule: Rule, fixed: set[str]) -> bool:
    """Whether a partly given layout is held to a divisibility rule (parallel.Rule.open_dims) whose other dimensions
    are all given: the divisor's open degrees at 1 (_given_part) are the weakest test, since any searched degree only
    multiplies them (`--tp 16` on 8 GPUs, `--gbs 12 --dp 8`: no layout the search could find keeps them)."""
    return bool(rule.open_dims) and set(rule.dims) - set(rule.open_dims) <= fixed


PHASE_KEYS = {"n_gpus": ("n_gpus", "gpu_fraction"), "gbs": ("gbs", "tokens_per_step"), "seq_len": ("seq_len",)}
"""The layout dimensions a campaign phase sets with keys of its own (Phase), not in its parallelism table."""


def _phase_fields(phase: Phase) -> dict[str, str]:
    """The layout dimensions a campaign phase sets itself, each with the phase's field that sets it."""
    fields = {name: f"parallelism.{name}" for name in given(phase.parallelism)} if phase.parallelism else {}
    for dim, keys in PHASE_KEYS.items():
        key = next((key for key in keys if getattr(phase, key) is not None), None)
        fields |= {dim: key} if key is not None else {}
    return fields


def check_tokens(
    scenario: Scenario, source: ScenarioSource, options: dict[str, Any], origins: dict[str, str], own_count: bool = True
) -> None:
    """The token budget trains at least one global batch (predict.check_one_step), checked where the batch is known
    before any search, so that the error names the flag, the file's field or the campaign phase's field that gave
    the tokens (a phase without its own names the phase and the top level's): a given batch, or at the scenario's
    own count (`own_count`) the default one, which a prediction there runs (or a larger one where that cannot feed
    its replicas: predict.given_full_layout). A batch a search picks is checked as it is predicted."""
    if scenario.benchmark:  # an MLPerf benchmark's work is its samples, not tokens
        return
    where = given_where("tokens", source, options, origins)
    if not scenario.phase:
        _check_tokens(scenario, where, own_count)
        return
    from perfmodel.planning.campaign import phase_scenarios  # campaign imports the predictions; request is lighter

    for phase, (_, phased) in zip(scenario.phase, phase_scenarios(scenario), strict=True):
        named = f"phase '{shown(phase.name)}'"
        own = f"{source_name(source)}: {named}: field 'tokens'"
        left = f"{where}: {named} (what the others leave)"
        _check_tokens(phased, own if phase.tokens is not None else left, own_count)


def _check_tokens(scenario: Scenario, where: str, own_count: bool) -> None:
    """check_tokens of one scenario: a one-phase scenario's, or a campaign phase's."""
    if scenario.tokens is not None and (own_count or scenario.parallelism.gbs):
        check_one_step(scenario.tokens, _given_part(scenario)[0], where)


def check_precision(
    scenario: Scenario,
    source: ScenarioSource,
    options: dict[str, Any],
    origins: dict[str, str],
    target: str | None = None,
    spelling: Spelling = CLI,
) -> None:
    """The scenario's precision runs on its accelerator's tensor cores. The refusal says where the precision came
    from (its flag, the file's field, or the built-in default scenario's FP8, which `--gpu a100-sxm-80gb` alone
    trips on) and what to pass instead, spelt as `spelling` says (CLI or API): the precision, or a compare or plan
    `target`'s own `ID:PRECISION`. A campaign's phase that sets its own precision is refused naming the file
    and the phase (as a phase's other fields are); the phases without one take the scenario's, checked as above."""
    accelerator = resolve(scenario.gpu, scenario.system).accelerator
    instead = accelerator.precisions[0]
    file = source_name(source)
    on = f"{spelling.given('gpu', target)}: " if target else ""
    for phase in scenario.phase:
        if phase.precision is not None and phase.precision not in accelerator.precisions:
            raise PerfmodelError(
                f"{on}{file}: phase '{shown(phase.name)}': field 'precision': "
                f"{unsupported(phase.precision, accelerator)}; set the phase's precision to '{instead}'"
            )
    inherited = not scenario.phase or any(phase.precision is None for phase in scenario.phase)
    if not inherited or scenario.precision in accelerator.precisions:
        return
    fix = f"pass {spelling.given('gpu', f'{target}:{instead}') if target else spelling.given('precision', instead)}"
    if options.get("precision") is not None:
        where = f"{origins.get('precision', 'precision')}: "
    elif source is None:
        why = unsupported(scenario.precision, accelerator, " (the default precision)")
        raise PerfmodelError(f"{on}{why}; {fix}")
    else:
        where = f"{file}: field 'precision': "
    raise PerfmodelError(f"{where}{unsupported(scenario.precision, accelerator)}; {fix}")


def _given_part(scenario: Scenario) -> tuple[Layout, set[str]]:
    """A partly given layout with 1 (or the default batch, no recompute, ZeRO-1) in each open dimension, and the
    options it gives: the GPU count and sequence length always."""
    par = scenario.parallelism
    fixed = {"n_gpus", "seq_len"} | {name for name in OPEN_DIMS if getattr(par, name) is not None}
    vp = given_degree(par, "vp")
    fixed |= {"vp"} if vp else set()
    tp, pp, cp = par.tp or 1, par.pp or 1, par.cp or 1
    layout = Layout(
        tp, pp, cp, par.dp or max(1, scenario.n_gpus // (tp * pp * cp)), vp or 1, par.ep or 1, par.mbs or 1,
        par.gbs or scenario.default_gbs(), par.seq_len, par.recompute or "none", 1 if par.zero is None else par.zero,
        par.etp or 1, par.recompute_layers,
    )  # fmt: skip
    return layout, fixed


OPEN_DIMS = ("tp", "pp", "cp", "dp", "ep", "etp", "mbs", "gbs", "recompute", "recompute_layers", "zero")
"""The layout's dimensions a scenario may leave to the search (VP: planning.predict.given_degree)."""


def gpu_counts(values: Iterable[int]) -> list[int]:
    """The distinct GPU counts of a list, in order, each checked: between 1 and 1,000,000, at most MAX_GPU_COUNTS."""
    counts: list[int] = []
    for count in values:
        if not 1 <= count <= MAX_GPUS:
            raise PerfmodelError(f"{shown_value(count)} must be between 1 and {MAX_GPUS:,} GPUs")
        if count not in counts:
            counts.append(count)
    if len(counts) > MAX_GPU_COUNTS:
        raise PerfmodelError(f"{len(counts)} GPU counts; at most {MAX_GPU_COUNTS} (each is a full search)")
    return counts


def check_file_nodes(scenario: Scenario, source: ScenarioSource, own_count: bool) -> None:
    """The GPU counts a scenario file gives fill whole nodes, as `--gpus` must (check_whole_nodes): its `n_gpus`
    where it is predicted at its `own_count` (not a flag's, nor reopened by plan), and each campaign phase's own
    (`n_gpus = 100` on 8-GPU DGX nodes was priced as 12.5 of them), which is the phase's count as predicted
    (campaign.phase_gpus); a gpu_fraction is rounded to whole nodes already."""
    where = source_name(source)
    if own_count:
        check_whole_nodes(scenario, f"{where}: field 'n_gpus'")
    for phase in scenario.phase:
        if phase.n_gpus is not None:
            check_whole_nodes(replaced(scenario, n_gpus=phase.n_gpus), f"{where}: phase '{phase.name}': field 'n_gpus'")


def spare_gpus(scenario: Scenario) -> int:
    """The GPUs a job keeps in reserve beside its own (losses 'spare'), where the losses model prices them (the
    goal's basis then: plan.goal_basis); none with `losses.model = "none"`. Whole nodes (check_spare_nodes)."""
    return scenario.losses.spare_gpus if scenario.losses.model != "none" else 0


def check_spare_nodes(scenario: Scenario, origin: str) -> None:
    """Spare GPUs (losses 'spare', priced where the losses model is on) are whole nodes: a failed GPU takes its node
    out of the job and a node replaces it (BLOOM kept '32 gpus (4 nodes) in reserve': campaigns.md section 12, as
    planning/losses.py cites it), and a pool hands a node out whole. 5 spares on a DGX were priced as 5 GPUs by the
    prediction and held as 8 by a fleet plan."""
    spares = spare_gpus(scenario)
    if not spares:
        return
    hw = resolve(scenario.gpu, scenario.system)
    node = int(hw.system.gpus_per_node.value)
    if spares % node:
        below, above = spares // node * node, (spares // node + 1) * node
        raise PerfmodelError(
            f"{origin}: {spares:,} spare GPUs is {spares / node:,.1f} {hw.system.id} nodes of {node} GPUs each; "
            f"allowed: whole nodes (a failed GPU takes its node out), such as {below:,} or {above:,}"
        )


def check_whole_nodes(scenario: Scenario, origin: str) -> None:
    """A GPU count beyond one node fills whole nodes (`--gpus 1020` on 8-GPU nodes priced 127.5 of them); the
    error gives the nearest whole counts. Part of one node is a job of its own (a 4-GPU fine-tune)."""
    hw = resolve(scenario.gpu, scenario.system)
    node, n = int(hw.system.gpus_per_node.value), scenario.n_gpus
    if n > node and n % node:
        below, above = n // node * node, (n // node + 1) * node
        raise PerfmodelError(
            f"{origin}: {n:,} GPUs is {n / node:,.1f} {hw.system.id} nodes of {node} GPUs each; allowed: whole "
            f"nodes, such as {below:,} or {above:,}"
        )
