"""perfmodel's Python API: the CLI's questions as functions, for notebooks and scripts.

Keywords mirror the CLI's flags (`--gpus` is `n_gpus`, `--seq-len` is `seq_len`); a scenario TOML path or a
`Scenario` object may come first, and the keywords override it, exactly as flags override a file. The results are
the objects the CLI prints: `.to_dict()` is the `--format json` object, `.to_record()` / `.to_records()` the flat
`--format csv` rows, so `pandas.DataFrame(result.to_records())` needs no glue. Every error is a `PerfmodelError`
whose message is the line the CLI prints after `error:`; a keyword that caused it is named as `keyword=value`.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from perfmodel.errors import PerfmodelError, shown_value
from perfmodel.inputs import arguments, catalogue
from perfmodel.inputs.scenario import FP8Recipe, Precision, Scenario, scenario_file
from perfmodel.planning.campaign import predict_any  # every question needs the model: imported here, not per call
from perfmodel.planning.request import API, load_checked

if TYPE_CHECKING:
    from perfmodel.fitting.validation import Report
    from perfmodel.outputs.launch import Launch
    from perfmodel.physics.calibration import Calibration
    from perfmodel.planning.campaign import Campaign
    from perfmodel.planning.compare import Comparison
    from perfmodel.planning.fleet import FleetReport
    from perfmodel.planning.fleet_jobs import SharedReport
    from perfmodel.planning.plan import PlanReport
    from perfmodel.planning.predict import Prediction, SearchReport
    from perfmodel.planning.request import ScenarioSource


class WorkloadOptions(TypedDict, total=False):
    """The scenario keywords every question takes (see `perfmodel predict --help` for their meaning); `hardware` is
    a file or folder of your own accelerators and systems (or a list of them), used from then on in this process."""

    hardware: str | Path | Sequence[str | Path]
    model: str
    system: str
    precision: Precision
    tp: int
    pp: int
    cp: int
    vp: int
    ep: int
    etp: int
    dp: int
    mbs: int
    gbs: int
    seq_len: int
    doc_len: int
    lora_rank: int
    lora_modules: Literal["attention", "mlp", "all-linear"]
    recompute: Literal["none", "selective", "full"]
    recompute_layers: int
    cp_comm: Literal["p2p", "all_gather", "a2a"]
    shard_group: int
    zero: Literal[0, 1, 2, 3]
    tokens: float | str
    benchmark: str
    calibration: str
    stack: Literal["megatron", "composer", "torchtitan", "deepspeed", "megatron-deepspeed", "maxtext"]
    async_tp: bool
    compile: bool
    fp8_recipe: FP8Recipe
    vintage: str
    usd_per_gpu_hour: float
    pue: float
    goodput: Literal["llama3", "rsc", "none"]
    failure_scale: float
    checkpoint_gbps: float
    restart_s: float
    checkpoint_interval_s: float
    losses: Literal["default", "none"]
    straggler_share: float
    startup_s: float
    job_limit_h: float
    ramp_tokens: float | str
    ramp_start_gbs: int
    eval_every_steps: int
    eval_tokens: float | str
    spare_gpus: int
    run_to_run_sd: float
    buy: bool | Literal["buy", "rent"]
    usd_per_system: float
    amortisation_years: float
    utilisation: float
    electricity_usd_per_kwh: float
    facility_usd_per_kw_month: float


class SystemOptions(WorkloadOptions, total=False):
    gpu: str


class ScenarioOptions(SystemOptions, total=False):
    n_gpus: int


def load_scenario(scenario: ScenarioSource = None, **options: Unpack[ScenarioOptions]) -> Scenario:
    """The validated scenario of a TOML file (None: the built-in default) with keyword overrides applied."""
    return _request(scenario, dict(options), relayout=False)


def predict(scenario: ScenarioSource = None, **options: Unpack[ScenarioOptions]) -> Prediction | Campaign:
    """One prediction: step time and its breakdown, throughput, MFU, memory, time-to-train, cost and energy.

    `perfmodel.predict(model="llama3.1-405b", gpu="gb300", n_gpus=512, precision="nvfp4", tokens=15.6e12)`.
    Layout keywords left out (tp, pp, cp, vp, mbs, recompute, zero) are searched: the fastest layout that fits.
    A campaign (a scenario with [[phase]] tables) gives a Campaign: `.phases` (a Prediction per phase, by name),
    `.to_dict()` (the totals, and `phases`) and `.to_records()` (a row per phase and the total row).
    A `gpu` naming a system (`gpu="gb200-nvl72"`) is that `system`, in every question (inputs/scenario.py).
    """
    return predict_any(_request(scenario, dict(options), relayout=False))


def launch(
    stack: Literal["megatron-lm", "megatron-bridge", "nemo", "torchtitan"],
    /,
    scenario: ScenarioSource = None,
    **options: Unpack[ScenarioOptions],
) -> Launch:
    """The stack's own config for the predicted layout (`perfmodel launch`): `.text` (the file), `.options`.

    `perfmodel.launch("torchtitan", model="llama3.1-8b", gpu="h100-sxm", n_gpus=16)`. The prediction is made with
    the stack's profile (a `stack=` keyword naming another profile is refused); a layout the stack cannot run is
    refused naming the setting.
    """
    from perfmodel.outputs.launch import PROFILES, for_scenario

    arguments.one_of("stack", stack, tuple(PROFILES))
    profile = options.setdefault("stack", PROFILES[stack])  # type: ignore[typeddict-item]
    if profile != PROFILES[stack]:
        raise PerfmodelError(f"stack={profile!r}: launch on {stack} predicts with stack '{PROFILES[stack]}'")
    return for_scenario(load_scenario(scenario, **options), stack)


def search(
    scenario: ScenarioSource = None,
    *,
    n_gpus: int | Sequence[int] | None = None,
    top: int = 10,
    objective: Literal["time", "cost"] = "time",
    relayout: bool = False,
    **options: Unpack[SystemOptions],
) -> SearchReport:
    """The `top` best layouts of one system, best first, as full predictions (`perfmodel search`).

    `n_gpus` may be a list of counts (searched together: where `objective="cost"` and the Pareto front matter).
    `relayout=True` reopens a scenario file's own layout; keywords still fix their dimension.
    """
    from perfmodel.planning.predict import search_scenario

    arguments.number("top", top, 1, 10_000, whole=True)
    arguments.one_of("objective", objective, ("time", "cost"))
    arguments.flag("relayout", relayout)
    counts = gpu_counts_given(n_gpus)
    given = dict(options) | {"n_gpus": counts[0] if counts else None}
    return search_scenario(_request(scenario, given, relayout, own_count=False), counts, top, objective)


def compare(
    scenario: ScenarioSource = None,
    *,
    gpu: str | Sequence[str] = (),
    n_gpus: int | Sequence[int] | None = None,
    relayout: bool = False,
    **options: Unpack[WorkloadOptions],
) -> Comparison:
    """The same workload on each `gpu` ("ID[:PRECISION]", an accelerator or system id) and each GPU count, with
    ratios to the first row: speedup, perf per dollar, energy per token, scaling efficiency (`perfmodel compare`)."""
    from perfmodel.planning import compare as comparing

    _check_source(scenario)
    targets = arguments.texts("gpu", gpu)
    arguments.flag("relayout", relayout)
    given = dict(options)
    _use_hardware(given)
    origins = _origins(given | ({} if n_gpus is None else {"n_gpus": n_gpus}))  # a row's count names its keyword
    items = comparing.compare_request(
        scenario, given, origins, targets, gpu_counts_given(n_gpus), relayout, spelling=API
    )
    return comparing.Comparison(comparing.run(items))


def plan(
    scenario: ScenarioSource = None,
    *,
    gpu: str | Sequence[str] = (),
    deadline_s: float | None = None,
    budget_usd: float | None = None,
    confidence: float = 0.5,
    max_gpus: int | None = None,
    power_mw: float | None = None,
    max_candidates: int | None = None,
    **options: Unpack[WorkloadOptions],
) -> PlanReport:
    """The cheapest count of each candidate `gpu` ("ID[:PRECISION[,PRECISION...]]") that trains the work (`tokens` or
    `benchmark`) within `deadline_s` and/or `budget_usd`, failures and the other real-world losses included
    (planning.plan.goal_basis), each with probability `confidence` (0.5: on the point estimate; planning/confidence.py),
    with the cheapest and fastest plans (`perfmodel plan --deadline 30d --budget 40e6 --confidence 0.9`); no plan
    draws more than `power_mw` at the wall (`--power-mw`). More candidates than `max_candidates` are refused before
    any is planned (planning.plan.TooManyCandidates: the HTTP server's bound, which it sets itself)."""
    from perfmodel.planning import plan as planning

    targets, given, goal = _goal_arguments(
        scenario, gpu, deadline_s, budget_usd, confidence, max_gpus, power_mw, options
    )
    arguments.number("max_candidates", max_candidates, 1, arguments.MAX_FIGURE, whole=True, optional=True)
    return planning.plan_request(
        scenario, given, _origins(given), targets, planning.Goal(*goal), max_gpus, spelling=API,
        max_candidates=max_candidates,
    )  # fmt: skip


def plan_fleet(
    fleet: str | Path,
    scenario: ScenarioSource = None,
    *,
    gpu: str | Sequence[str] = (),
    deadline_s: float | None = None,
    budget_usd: float | None = None,
    confidence: float = 0.5,
    max_gpus: int | None = None,
    power_mw: float | None = None,
    **options: Unpack[WorkloadOptions],
) -> FleetReport | SharedReport:
    """The cheapest mix of the owned pools and offers of the fleet file `fleet` per system type (of the fleet, or
    each `gpu`) that trains the work within `deadline_s` at `confidence`, as `perfmodel plan --fleet`: a
    FleetReport, or, for a file with [[job]]s (each its own deadline and budget: `deadline_s` and `budget_usd` are
    refused), a SharedReport of its jobs planned together. `.to_dict()` is `plan --fleet --format json`'s object,
    `.to_records()` its CSV rows."""
    from perfmodel.planning.fleet_jobs import fleet_request

    arguments.path("fleet", fleet, required=True)
    targets, given, goal = _goal_arguments(
        scenario, gpu, deadline_s, budget_usd, confidence, max_gpus, power_mw, options
    )
    return fleet_request(fleet, scenario, given, _origins(given), targets, goal, max_gpus, spelling=API)


def _goal_arguments(
    scenario: ScenarioSource, gpu: str | Sequence[str], deadline_s: float | None, budget_usd: float | None,
    confidence: float, max_gpus: int | None, power_mw: float | None, options: Mapping[str, Any],
) -> tuple[list[str], dict[str, Any], tuple[float | None, float | None, float, float | None]]:  # fmt: skip
    """A plan's own arguments checked (the targets, the keywords with hardware registered, and the goal: deadline,
    budget, confidence, power), before the goal is: plan(deadline_days=30) is a misspelt keyword, not a missing
    goal."""
    from perfmodel.inputs.scenario import MAX_GPUS
    from perfmodel.planning.confidence import check as confidence_check
    from perfmodel.planning.request import check_keywords

    _check_source(scenario)
    targets = arguments.texts("gpu", gpu)
    arguments.number("deadline_s", deadline_s, 0, arguments.MAX_FIGURE, optional=True, above=True)
    arguments.number("budget_usd", budget_usd, 0, arguments.MAX_FIGURE, optional=True, above=True)
    arguments.number("max_gpus", max_gpus, 1, MAX_GPUS, whole=True, optional=True)
    arguments.number("power_mw", power_mw, 0, arguments.MAX_FIGURE, optional=True, above=True)
    given = dict(options)
    _use_hardware(given)
    check_keywords(given)
    return targets, given, (deadline_s, budget_usd, confidence_check(confidence, API), power_mw)


def validate(
    data: str | Path | None = None,
    *,
    only: str | None = None,
    calibration: str | None = None,
    hardware: str | Path | Sequence[str | Path] | None = None,
) -> Report:
    """Predicted against measured for every bundled run, or for the runs of a CSV (`data`, the README's columns):
    per-row error and MAPE (`perfmodel validate`). `only` keeps runs whose id, source or group contains the text;
    `calibration` is a calibration JSON, or "none" for the physical defaults; `hardware` your own hardware files,
    which the CSV's gpu and system columns may name."""
    from perfmodel.fitting.runs import collect_runs
    from perfmodel.fitting.validation import validate as run
    from perfmodel.physics import calibration as calibrations

    _use_hardware({"hardware": hardware})
    arguments.path("data", data)
    arguments.text("only", only)
    arguments.path("calibration", calibration)
    runs, excluded = collect_runs(data, only=only, note=_note)
    return run(runs, calibrations.resolve(calibration), excluded)


def _note(message: str) -> None:
    """What the CLI says on stderr beside its answer (a runs CSV's ignored columns), as a UserWarning pointing at the
    caller's line (the first frame outside perfmodel, however deep the reader): a notebook shows it, a script may
    filter it."""
    frame: FrameType | None = sys._getframe(1)
    level = 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("perfmodel"):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


def calibrate(
    data: str | Path | None = None,
    *,
    out: str | Path,
    with_bundled: bool = False,
    everywhere: bool = False,
    only: str | None = None,
    cv: bool = True,
    force: bool = False,
    hardware: str | Path | Sequence[str | Path] | None = None,
) -> Calibration:
    """Fit a calibration on measured runs and write it to `out` (`perfmodel calibrate`), for `calibration=out` in
    the other functions. With a CSV (`data`): the bundled calibration with only the parameters its rows identify
    refitted on them, for their accelerator families only (`everywhere`: for all), with the bundled rows of those
    families when `with_bundled` (its `.provenance["user"]` is the `--format json` object); without: the bundled fit
    on the bundled rows (`cv` adds the held-out error and the intervals). `only` and `hardware` as for `validate`.
    Written whole or not at all, over an existing file only with `force`."""
    from perfmodel.fitting.user import calibration_from
    from perfmodel.outputs.atomic import check_target, write_atomic

    _use_hardware({"hardware": hardware})
    arguments.path("data", data)
    arguments.text("only", only)
    for name, value in (("with_bundled", with_bundled), ("everywhere", everywhere), ("cv", cv), ("force", force)):
        arguments.flag(name, value)
    target = Path(arguments.path("out", out, required=True))
    check_target(target, force, (data,), named=f"out={str(out)!r}", force_flag="force=True")
    fitted = calibration_from(data, only, with_bundled, everywhere, cv, note=_note)
    write_atomic(target, lambda handle: handle.write(fitted.to_json().encode()), force)
    return fitted


def frame(result: Any) -> Any:
    """Any result's rows (`.to_records()`, or a prediction's `.to_record()`) as a pandas DataFrame whose columns have
    their own dtypes (numbers, text, flags), also a column every row leaves empty, which `pandas.DataFrame(records)`
    makes `object`."""
    from perfmodel.outputs.record import frame as typed

    rows = getattr(result, "to_records", None)
    if rows is None and not hasattr(result, "to_record"):
        raise PerfmodelError(f"frame() takes a perfmodel result (a prediction...), not {type(result).__name__}")
    return typed(rows() if rows is not None else [result.to_record()])


def _request(scenario: ScenarioSource, options: dict[str, Any], relayout: bool, own_count: bool = True) -> Scenario:
    """The scenario a question asks for, checked as the CLI checks it (a layout keyword that breaks a rule is named:
    `tp=3: TP 3 must divide the 32 attention heads`; `own_count` as check_given_layout's); a question asked before is
    answered from `_ASKED`."""
    _check_source(scenario)
    asked = _asked_key(scenario, options, relayout)
    key = None if asked is None else (own_count, *asked)  # a search's scenario holds no count: predict checks its own
    found = _ASKED.get(key) if key is not None else None
    if found is None:
        _use_hardware(options)
        origins = _origins(options)
        found = load_checked(scenario, options, origins, relayout=relayout, own_count=own_count, spelling=API)
        if key is not None:
            if len(_ASKED) >= MAX_ASKED:
                del _ASKED[next(iter(_ASKED))]
            _ASKED[key] = found
    return found


_ASKED: dict[tuple[Any, ...], Scenario] = {}
"""Questions asked before and the scenario each was checked into (records are immutable: one can be shared), so that
a notebook asking the same question again pays the model's time, not the checks' (the oldest dropped past
MAX_ASKED)."""
MAX_ASKED = 256


def _asked_key(scenario: ScenarioSource, options: dict[str, Any], relayout: bool) -> tuple[Any, ...] | None:
    """All a question's scenario depends on: the arguments, the scenario file's version (modification time and size,
    so an edited file is read again), the working folder (a relative path's meaning) and the hardware catalogues in
    force. None where that is more: a Scenario object, hardware or model files, or a value that cannot be a key."""
    if scenario is not None and not isinstance(scenario, str | Path):  # a Scenario object (_check_source)
        return None
    try:
        given = _given(tuple(options.items()))
    except TypeError:  # a value that cannot be a key (a list)
        return None
    if given is None:
        return None
    try:
        stat = os.stat(_default_file() if scenario is None else scenario_file(scenario))
    except (OSError, PerfmodelError):
        return None
    return (str(scenario), given, relayout, stat.st_mtime_ns, stat.st_size, os.getcwd(), catalogue.version())


@lru_cache(maxsize=MAX_ASKED)
def _given(options: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, Any], ...] | None:
    """A question's keywords as a key, in a fixed order, those left None dropped; None where one names hardware or
    a file, whose contents the question depends on too. Remembered by the keywords as given: a notebook asks the
    same question in the same words again, and sorting and scanning them cost as much as the rest of the key."""
    given = tuple(sorted((k, v) for k, v in options if v is not None))
    return None if any(k == "hardware" or _is_file(v) for k, v in given) else given


def _is_file(value: Any) -> bool:
    """A keyword naming a file (a model TOML), whose contents the question depends on too."""
    return isinstance(value, str) and value.endswith(".toml")


@cache
def _default_file() -> Path:
    return scenario_file(None)


def _check_source(scenario: ScenarioSource) -> None:
    """A scenario argument: a Scenario object, or a path (None: the default scenario)."""
    if not isinstance(scenario, Scenario):
        arguments.path("scenario", scenario)


def _use_hardware(options: dict[str, Any]) -> None:
    """Register the `hardware` keyword's catalogues (popped from `options`), as --hardware does."""
    from perfmodel.inputs.hardware import add_catalogue

    for path in arguments.paths("hardware", options.pop("hardware", None)):
        add_catalogue(path, origin="hardware=")


def _origins(options: dict[str, Any]) -> dict[str, str]:
    """Where each keyword's value came from, as error lines name it: `n_gpus=0`."""
    return {key: f"{key}={shown_value(value)}" for key, value in options.items()}


def gpu_counts_given(n_gpus: int | Sequence[int] | None) -> list[int] | None:
    """`n_gpus` as search() and compare() read it: distinct, each in range, refused naming the keyword; the HTTP
    server counts a comparison's rows on it (serve/work.py)."""
    from perfmodel.planning.request import gpu_counts

    counts = arguments.counts("n_gpus", n_gpus)
    try:
        return None if counts is None else gpu_counts(counts)
    except PerfmodelError as exc:
        raise arguments.refused("n_gpus", n_gpus, str(exc)) from None
