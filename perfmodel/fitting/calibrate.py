"""Fit the named parameter table (physics/parameters.py) to measured runs, and report the error honestly.

The table is small and physical: GEMM kernel efficiency per format and vendor library, flash attention's and HBM's
shares, NCCL's scale-out bus bandwidth and the TP-overlap share shared by every family, a generation factor per
family with a tight prior, the MLPerf timed-region overhead per benchmark, and a few parameters of the stacks that
have rows. `fit` minimises robust least squares of log(predicted / measured) with scipy, pricing all runs as one
batch, with each parameter's prior pulling it towards its physical default (so a parameter the data cannot see
stays where physics put it), and reports the parameters that end at a bound (a missing mechanism, not a result).
Cross-validation leaves one accelerator x precision group out at a time; its held-out residuals give the error a
planner should expect on hardware it was not fitted on, and an 80% prediction interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any, Protocol, TypedDict, Unpack

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.environment import source_date
from perfmodel.physics import parameters as table
from perfmodel.physics.calibration import UNCALIBRATED, Calibration
from perfmodel.physics.efficiency import Efficiency
from perfmodel.physics.parameters import Entry, Profile, Stage

INTERVAL_COVERAGE = 0.8
BOUND_TOLERANCE = 1e-3
"""A fitted value within this relative distance of a bound sits at it."""


@dataclass(frozen=True)
class Residual:
    run_id: str
    group: str
    family: str
    log_time_ratio: float
    """log(predicted time / measured time): positive when perfmodel is too slow (throughputs are inverted)."""

    @property
    def error_pct(self) -> float:
        return (math.exp(self.log_time_ratio) - 1) * 100


class PricedRuns(Protocol):
    """Prepared runs priced together (validation.RunBatch)."""

    def log_time_ratios(
        self, efficiency_for: Callable[[Profile], Efficiency], variants: bool = False, loss: bool = False
    ) -> Any:
        """log(predicted time / measured time) per run, for the efficiencies of each profile; with `variants`, the
        efficiencies' fields are arrays of shape (V,) and the result is (runs, V). With `loss`, what the fit
        minimises: a row scored on a range of layouts gives its distance to the range (0 inside)."""
        ...


Pricer = Callable[[Sequence[Any]], PricedRuns]
"""Prepared runs -> the same runs, batched for pricing."""
ProfileOf = Callable[[Any], "Profile | str"]
"""A prepared run -> its profile (or just its family, on the Megatron stack outside MLPerf)."""

FIT_TOLERANCE = 1e-4
"""Relative change of the cost and of log(parameters) at which the fit stops: 1e-4 moves no predicted time by more
than ~0.01%, and stops the solver ~10 evaluations earlier than scipy's default 1e-8 (each costs a pass over every
row)."""
DIFF_STEP = 1e-3
"""Finite-difference step on log(parameter), relative to max(1, |log value|)."""


@dataclass(frozen=True)
class FitResult:
    parameters: dict[str, float]
    """Fitted value per table entry key ('gemm_fp8@nvidia', 'scaleout', ...)."""
    residuals: list[Residual]
    at_bound: list[str]
    """Entries whose fitted value sits at a bound of its physical range."""


def _item_profile(item: Any) -> Profile:
    """A prepared run's own profile (validation.PreparedRun.profile)."""
    return item.profile


def _profile(profile_of: ProfileOf, item: Any) -> Profile:
    found = profile_of(item)
    return found if isinstance(found, Profile) else Profile(found)


def free_entries(
    items: Sequence[Any], profile_of: ProfileOf, formats_of: Callable[[Any], set[str]], stage: Stage = "dense"
) -> list[Entry]:
    """The table entries of a fit's stage the data can inform: those of the runs' profiles that calibration fits, a
    format-specific one only where a run of the profile uses that format."""
    found: dict[str, Entry] = {}
    for item in items:
        profile = _profile(profile_of, item)
        formats = formats_of(item) | ({"mlperf"} if profile.benchmark else set())
        for candidate in table.entries_for(profile):
            needs = candidate.parameter.needs
            if candidate.parameter.stage == stage and candidate.fittable and (needs is None or needs in formats):
                found.setdefault(candidate.key, candidate)
    return sorted(found.values(), key=lambda e: (table.TABLE.index(e.parameter), e.scope_value))


def _stack(variants: Sequence[Efficiency]) -> Efficiency:
    """One Efficiency whose fields are arrays over `variants` (what RunBatch prices in one call)."""
    import numpy as np

    columns: dict[str, Any] = {f.name: np.array([getattr(v, f.name) for v in variants]) for f in fields(Efficiency)}
    return Efficiency(**columns)


def _joined(parts: Sequence[Efficiency]) -> Efficiency:
    """Stacked efficiencies (`_stack`) one after another: their variants as one array per field."""
    import numpy as np

    columns: dict[str, Any] = {f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(Efficiency)}
    return Efficiency(**columns)


class FitOptions(TypedDict, total=False):
    """How a fit departs from the bundled dense fit's defaults (see `fit`)."""

    prior_sigma: float | None
    stage: Stage
    fixed: Mapping[str, float] | None
    only: Collection[str] | None
    centre: Mapping[str, float] | None
    weights: Sequence[float] | None


def fit(
    items: Sequence[Any],
    pricer: Pricer,
    profile_of: ProfileOf,
    formats_of: Callable[[Any], set[str]],
    start: Calibration | None = None,
    **options: Unpack[FitOptions],
) -> FitResult:
    """Fit the free table entries of `stage` on `items` (robust least squares on log error), with the entries in
    `fixed` held at their values (the MoE stage holds the dense fit's); `prior_sigma` replaces every parameter's own
    prior spread when given. A user calibration (fitting/user.py) fits `only` the entries its rows identify, with
    their priors centred on the bundled values (`centre`, else each entry's physical default), and `weights` per
    row (a row's term of the loss counts as that many rows').

    The runs are priced as one batch (one array call per context) that also yields the Jacobian: runs of one
    (family, stack) depend only on the entries of their profiles, so variant k of that pair perturbs its k-th
    entry, and the same call prices every run under its base and perturbed efficiencies (forward differences on log
    parameters). The trust-region steps are solved with LSMR, not an SVD: on a busy 2-core machine multithreaded
    BLAS made the SVD of this small Jacobian cost more than pricing the runs."""
    problem = _Problem(items, profile_of, formats_of, start, **options)
    batch = pricer(items)
    fitted = problem.solve(lambda stacked: batch.log_time_ratios(stacked.__getitem__, variants=True, loss=True))
    return _result(problem, batch, fitted)


def _result(problem: _Problem, batch: PricedRuns, fitted: dict[str, float]) -> FitResult:
    """A fit's values with the in-sample residuals of its rows (`batch`: the same rows, priced together)."""
    ratios = batch.log_time_ratios(efficiencies_of(problem.held | fitted))
    residuals = [
        Residual(item.run.id, item.run.group, p.family, float(r))
        for item, p, r in zip(problem.items, problem.profiles, ratios, strict=True)
    ]
    return FitResult(fitted, residuals, at_bound(fitted))


StackedPricer = Callable[[dict[Profile, Efficiency]], Any]
"""Efficiencies per profile, each field an array over a fit's variants -> the loss's log ratios, (runs, variants)."""


class _Problem:
    """One fit's free entries, start, bounds, priors and Jacobian columns (see `fit`); `solve` runs the solver with
    any pricing of its variants, alone (`fit`) or beside other fits' in one call (`_lockstep_values`)."""

    def __init__(
        self,
        items: Sequence[Any],
        profile_of: ProfileOf,
        formats_of: Callable[[Any], set[str]],
        start: Calibration | None = None,
        **options: Unpack[FitOptions],
    ) -> None:
        import numpy as np

        only, centre, weights = options.get("only"), options.get("centre"), options.get("weights")
        prior_sigma, stage = options.get("prior_sigma"), options.get("stage", "dense")
        fixed = options.get("fixed")
        self.items = items
        self.entries = [e for e in free_entries(items, profile_of, formats_of, stage) if only is None or e.key in only]
        self.held = dict(fixed or {})
        if not self.entries:
            raise PerfmodelError("nothing to calibrate: no runs")
        self.keys = [e.key for e in self.entries]
        start = start or UNCALIBRATED
        self.lower = np.array([math.log(e.parameter.bounds[0]) for e in self.entries])
        self.upper = np.array([math.log(e.parameter.bounds[1]) for e in self.entries])
        x0 = np.array([math.log(start.parameters.get(e.key, e.default)) for e in self.entries])
        self.x0 = np.clip(x0, self.lower + 1e-9, self.upper - 1e-9)
        self.prior = np.array([math.log((centre or {}).get(e.key, e.default)) for e in self.entries])
        sigma = np.array([prior_sigma or e.parameter.prior_sigma for e in self.entries])
        self.weights = weights
        self.profiles = [_profile(profile_of, i) for i in items]
        self.pair = np.array([f"{p.family}/{p.stack}" for p in self.profiles])
        # Columns that move each (family, stack)'s runs: its profiles' entries, MLPerf overheads of each benchmark.
        self.columns: dict[str, list[int]] = {}
        self.variant_profiles: dict[str, set[Profile]] = {}
        for p in self.profiles:
            name = f"{p.family}/{p.stack}"
            self.variant_profiles.setdefault(name, set()).update({p, p._replace(benchmark=None)})
            mine = {item.key for item in table.entries_for(p)}
            known = self.columns.setdefault(name, [])
            known += [col for col, key in enumerate(self.keys) if key in mine and col not in known]
        self.width = 1 + max(len(cols) for cols in self.columns.values())
        """Variants per pricing: every run's base efficiencies and one moved entry of its (family, stack) each."""
        self.prior_scale = sigma * math.sqrt(max(sum(weights) if weights is not None else len(items), 1))

    def values(self, x: Any) -> dict[str, float]:
        return {key: float(math.exp(v)) for key, v in zip(self.keys, x, strict=True)}

    def solve(self, price: StackedPricer) -> dict[str, float]:
        """The fitted values, each residual and Jacobian from one pricing of `self.width` variants by `price`."""
        import numpy as np
        from scipy.optimize import least_squares

        items, entries, columns, upper = self.items, self.entries, self.columns, self.upper

        def priced(x: Any) -> tuple[Any, Any]:
            """Residuals and Jacobian at x from one batched call: every run under its base efficiencies (variant 0)
            and with each entry of its (family, stack) moved by a finite-difference step (variant k)."""
            step = DIFF_STEP * np.maximum(1.0, np.abs(x))
            step = np.where(x + step > upper, -step, step)
            stacked: dict[Profile, Efficiency] = {}
            for name, cols in columns.items():
                moved_values = []
                for col in [None, *cols] + [None] * (self.width - 1 - len(cols)):
                    moved = x.copy()
                    if col is not None:
                        moved[col] += step[col]
                    moved_values.append(self.held | self.values(moved))
                for p in self.variant_profiles[name]:
                    stacked[p] = _stack([table.efficiency(v, p) for v in moved_values])
            ratios = price(stacked)
            jac = np.zeros((len(items) + len(entries), len(entries)))
            for name, cols in columns.items():
                mine = self.pair == name
                for k, col in enumerate(cols, start=1):
                    jac[: len(items)][mine, col] = (ratios[mine, k] - ratios[mine, 0]) / step[col]
            jac[len(items) :] = np.diag(1 / self.prior_scale)
            return np.concatenate([ratios[:, 0], (x - self.prior) / self.prior_scale]), jac

        # The solver asks for the residuals at a point, then (if it accepts it) the Jacobian there: a variant pass
        # costs about what a plain one does (numpy's per-call overhead dominates), so both come from one.
        last: dict[bytes, tuple[Any, Any]] = {}

        def at(x: Any) -> tuple[Any, Any]:
            key = x.tobytes()
            if key not in last:
                last.clear()
                last[key] = priced(x)
            return last[key]

        def residuals(x: Any) -> Any:
            return at(x)[0]

        def jacobian(x: Any) -> Any:
            return at(x)[1]

        weights = self.weights
        solution = least_squares(
            residuals,
            self.x0,
            jac=jacobian,
            bounds=(self.lower, upper),
            loss="soft_l1" if weights is None else _weighted_soft_l1([*weights, *[1.0] * len(entries)]),
            f_scale=0.1,
            x_scale=1.0,
            max_nfev=100,
            ftol=FIT_TOLERANCE,
            xtol=FIT_TOLERANCE,
            tr_solver="lsmr" if len(entries) > 1 else "exact",  # lsmr's 2-D subspace step fails on one variable
        )
        return self.values(solution.x)


def _lockstep_values(problems: Sequence[_Problem], pricer: Pricer) -> list[dict[str, float]]:
    """The fitted values of several fits solved in lockstep: each solver runs on its own thread and, when every fit
    still running waits for a pricing, one call prices all of their variants over the union of their rows (an array
    call costs about the same for one fit's variants as for thirty: numpy's per-call overhead dominates). Each row's
    figures are computed element by element, so a fit gets the numbers it gets alone (tests/test_calibration.py)."""
    import threading

    import numpy as np

    union: dict[int, Any] = {}
    for problem in problems:
        for item in problem.items:
            union.setdefault(id(item), item)
    position = {key: k for k, key in enumerate(union)}
    rows = [np.array([position[id(item)] for item in problem.items]) for problem in problems]
    batch = pricer(list(union.values()))
    profiles = sorted({p for problem in problems for ps in problem.variant_profiles.values() for p in ps}, key=str)
    fillers: dict[tuple[Profile, int], Efficiency] = {}  # a profile a fit lacks: its rows are not that fit's

    def filler(profile: Profile, width: int) -> Efficiency:
        if (profile, width) not in fillers:
            fillers[profile, width] = _stack([table.efficiency({}, profile)] * width)
        return fillers[profile, width]

    turn = threading.Condition()
    waiting: dict[int, dict[Profile, Efficiency]] = {}
    answers: dict[int, Any] = {}
    running = set(range(len(problems)))

    def price_waiting() -> None:
        """With `turn` held, once every running fit waits: price all their variants in one call."""
        order = sorted(waiting)
        try:
            combined = {
                p: _joined([waiting[k].get(p) or filler(p, problems[k].width) for k in order]) for p in profiles
            }
            ratios = batch.log_time_ratios(combined.__getitem__, variants=True, loss=True)
            offsets = np.cumsum([0, *(problems[k].width for k in order)])
            for k, offset in zip(order, offsets, strict=False):
                answers[k] = ratios[rows[k], offset : offset + problems[k].width]
        except Exception as exc:  # every waiting fit fails with it, none waits forever
            answers.update(dict.fromkeys(order, exc))
        waiting.clear()
        turn.notify_all()

    def price(k: int, stacked: dict[Profile, Efficiency]) -> Any:
        with turn:
            waiting[k] = stacked
            if len(waiting) == len(running):
                price_waiting()
            while k not in answers:
                turn.wait()
            found = answers.pop(k)
        if isinstance(found, Exception):
            raise found
        return found

    results: dict[int, dict[str, float] | BaseException] = {}

    def solve(k: int) -> None:
        try:
            results[k] = problems[k].solve(lambda stacked: price(k, stacked))
        except BaseException as exc:
            results[k] = exc
        finally:
            with turn:
                running.discard(k)
                if waiting and len(waiting) == len(running):
                    price_waiting()

    threads = [threading.Thread(target=solve, args=(k,)) for k in range(len(problems))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    values = []
    for k in range(len(problems)):
        found = results[k]
        if isinstance(found, BaseException):
            raise found
        values.append(found)
    return values


def _weighted_soft_l1(weights: Sequence[float]) -> Any:
    """scipy's soft-L1 loss with each residual's term times its weight: a weight on the loss, not on the residual
    (which the L1-like tail would count by its square root only)."""
    import numpy as np

    weight = np.array(weights)

    def loss(z: Any) -> Any:
        root = np.sqrt(1 + z)
        return weight * np.array([2 * (root - 1), 1 / root, -0.5 / root**3])

    return loss


def dense_values(calibration: Calibration) -> dict[str, float]:
    """A calibration's dense-stage values: what the MoE stage holds fixed."""
    return {k: v for k, v in calibration.parameters.items() if table.stage_of(k) == "dense"}


def fit_moe(
    items: Sequence[Any], pricer: Pricer, start: Calibration, profile_of: ProfileOf = _item_profile
) -> FitResult:
    """The MoE stage: fit the table's MoE entries (stage 'moe') on MoE runs with every dense entry held at `start`'s
    value, so that no dense prediction can change; each entry's own prior, bounds and scope (the dense fit's
    solver and loss), starting from the priors."""
    formats_of, moe_start, options = _moe_setting(start)
    return fit(items, pricer, profile_of, formats_of, moe_start, **options)


def _moe_setting(start: Calibration) -> tuple[Callable[[Any], set[str]], Calibration, FitOptions]:
    """The MoE stage's formats, start and options (`fit`'s arguments after the profiles): the dense values held."""
    dense = dense_values(start)
    return lambda _: set(), Calibration(dense, {}), {"stage": "moe", "fixed": dense}


def moe_stage(
    items: Sequence[Any],
    pricer: Pricer,
    start: Calibration,
    model_of: Callable[[Any], str],
    not_fitted: Sequence[Any],
    zoo_of: Callable[[Any], str],
) -> tuple[dict[str, float], dict[str, Any]]:
    """The MoE stage fitted on `items` over `start`'s dense values: its fitted entries, and the calibration file's
    'moe' section, with the in-sample residuals and leave-one-model-out ones (refit without a model, predict it);
    rows the stage does not fit (`not_fitted`: a model's, or token-dropping ones) are predicted the same way, so a
    model none of whose rows it fits counts as held out under the whole stage. The held-out
    residuals give a MoE prediction's 80% interval; 'priced_rows' keeps each row's held-out throughput error with its
    zoo model (`zoo_of`) and accelerator family, which a prediction of that model on that family reports."""
    models = sorted({model_of(i) for i in [*items, *not_fitted]})
    trains = {model: [i for i in items if model_of(i) != model] for model in models}
    formats_of, moe_start, options = _moe_setting(start)
    trained = [items, *(t for t in trains.values() if t)]
    problems = [_Problem(train, _item_profile, formats_of, moe_start, **options) for train in trained]
    solved = iter(_lockstep_values(problems, pricer))  # the stage's fit and each model's left out, together
    fitted = _result(problems[0], pricer(items), next(solved))
    held: dict[str, Residual] = {}
    for model, train in trains.items():
        test = [i for i in [*items, *not_fitted] if model_of(i) == model]
        values = next(solved) if train else {}
        ratios = pricer(test).log_time_ratios(moe_efficiencies(start, values))
        held |= {i.run.id: Residual(i.run.id, model, i.family, float(r)) for i, r in zip(test, ratios, strict=True)}

    def by_model(residuals: Sequence[Residual]) -> dict[str, float]:
        mine = {m: [r for r in residuals if model_of_id[r.run_id] == m] for m in models}
        return {m: mape(found) for m, found in mine.items() if found}

    model_of_id = {i.run.id: model_of(i) for i in [*items, *not_fitted]}
    section = {
        "fit": {
            "method": "scipy.optimize.least_squares, soft-L1 loss on log(predicted/measured) of the MoE rows, dense "
            "parameters held fixed, each MoE table entry's prior on log(parameter/default) (physics/parameters.py, "
            "stage 'moe'); leave one MoE model out",
            "parameters": sorted(fitted.parameters),
            "at_bound": fitted.at_bound,
            "rows": len(items),
            "in_sample_mape_pct": mape(fitted.residuals),
            "in_sample_mape_pct_by_model": by_model(fitted.residuals),
            "leave_one_model_out_mape_pct": by_model(list(held.values())),
            "not_fitted": sorted({model_of(i) for i in not_fitted} - {model_of(i) for i in items}),
            "interval": interval(list(held.values())),
            "residuals": [
                {
                    "id": r.run_id,
                    "model": model_of_id[r.run_id],
                    "error_pct": round(r.error_pct, 3),
                    "held_out_error_pct": round(held[r.run_id].error_pct, 3),
                }
                for r in fitted.residuals
            ],
            "priced_rows": _priced_rows([*items, *not_fitted], held, zoo_of, {i.run.id for i in items}),
        },
    }
    return fitted.parameters, section


def _priced_rows(
    items: Sequence[Any], held: Mapping[str, Residual], zoo_of: Callable[[Any], str], fitted_ids: set[str]
) -> list[dict[str, Any]]:
    """Every MoE row the stage prices, fitted or not, with its zoo model, accelerator family and held-out
    throughput error (predicted / measured tokens/s - 1, %: positive is too fast)."""
    return [
        {
            "id": i.run.id,
            "zoo_model": zoo_of(i),
            "family": i.family,
            "fitted": i.run.id in fitted_ids,
            "held_out_throughput_error_pct": round((math.exp(-held[i.run.id].log_time_ratio) - 1) * 100, 3),
        }
        for i in items
    ]


def moe_efficiencies(start: Calibration, values: Mapping[str, float]) -> Callable[[Profile], Efficiency]:
    """Efficiency per profile: `start`'s dense values with the MoE stage's `values` (missing ones at their priors)."""
    return efficiencies_of(dense_values(start) | dict(values))


def at_bound(fitted: dict[str, float]) -> list[str]:
    """Keys of fitted entries at a bound of their physical range."""
    found = []
    for key, value in fitted.items():
        item = table.entry(key)
        low, high = item.parameter.bounds if item else (value, value)
        if value <= low * (1 + BOUND_TOLERANCE) or value >= high * (1 - BOUND_TOLERANCE):
            found.append(key)
    return found


def efficiencies_of(values: dict[str, float]) -> Callable[[Profile], Efficiency]:
    """Efficiency per profile: the physical defaults with a fit's table values in place."""
    return lambda profile: table.efficiency(values, profile)


def predict(
    values: dict[str, float],
    test: Sequence[Any],
    pricer: Pricer,
    profile_of: ProfileOf,
    group_of: Callable[[Any], str],
) -> list[Residual]:
    """Residuals of `test` under a fit's parameters (the held-out ones when the fit never saw them)."""
    if not test:
        return []
    ratios = pricer(test).log_time_ratios(efficiencies_of(values))
    return [
        Residual(i.run.id, group_of(i), _profile(profile_of, i).family, float(r))
        for i, r in zip(test, ratios, strict=True)
    ]


def cross_validate(
    items: Sequence[Any],
    pricer: Pricer,
    profile_of: ProfileOf,
    formats_of: Callable[[Any], set[str]],
    group_of: Callable[[Any], str],
    progress: Callable[[str], None] = lambda _: None,
    start: Calibration | None = None,
    fits: Mapping[tuple[str, ...], dict[str, float]] | None = None,
) -> list[Residual]:
    """Leave one group (accelerator x precision) out: refit without it, predict it. Returns held-out residuals.
    `fits`: those of the folds' training rows made already (by their ids in order, from `start`: `fit_together`)."""
    held_out: list[Residual] = []
    folds = leave_one_group_out(items, group_of)
    for number, (group, train, test) in enumerate(folds, start=1):
        progress(f"cross-validation {number}/{len(folds)}: holding out {group}")
        made = (fits or {}).get(run_ids(train))
        values = made if made is not None else fit(train, pricer, profile_of, formats_of, start).parameters
        held_out += predict(values if train else {}, test, pricer, profile_of, group_of)
    return held_out


def leave_one_group_out(items: Sequence[Any], group_of: Callable[[Any], str]) -> list[tuple[str, list[Any], list[Any]]]:
    """Cross-validation's folds: (group, the other groups' rows, the group's rows), by group."""
    return [
        (group, [i for i in items if group_of(i) != group], [i for i in items if group_of(i) == group])
        for group in sorted({group_of(i) for i in items})
    ]


def run_ids(items: Sequence[Any]) -> tuple[str, ...]:
    """Prepared runs' ids in order: what names a fit's training rows (the same rows in the same order, the same fit)."""
    return tuple(i.run.id for i in items)


def fit_together(
    jobs: Sequence[tuple[Sequence[Any], Calibration | None]],
    pricer: Pricer,
    profile_of: ProfileOf,
    formats_of: Callable[[Any], set[str]],
) -> list[dict[str, float]]:
    """The fitted values of each (training rows, start) job, solved in lockstep in this process (`_lockstep_values`):
    calibration's folds are independent fits, and a fit gives the same numbers beside any other fits."""
    return _lockstep_values([_Problem(train, profile_of, formats_of, start) for train, start in jobs], pricer)


def start_fits(
    jobs: Sequence[tuple[Sequence[Any], Calibration | None]],
    pricer: Pricer,
    profile_of: ProfileOf,
    formats_of: Callable[[Any], set[str]],
) -> Callable[[], list[dict[str, float]]]:
    """`fit_together` on a forked worker process while this one goes on (calibration's protocol folds beside its
    fit and cross-validation); the call returned waits for the values. A fit gives the same numbers in any process
    (the worker inherits the rows and returns the values). Where this process may use one processor only, or off
    Linux (macOS's system libraries, its BLAS among them, are not safe to fork), the fits are made in this process
    when the values are asked for."""
    import multiprocessing
    import os
    import sys
    from concurrent.futures import ProcessPoolExecutor

    processors = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    if processors < 2 or not sys.platform.startswith("linux"):
        return lambda: fit_together(jobs, pricer, profile_of, formats_of)
    _FORKED_JOBS[:] = [(jobs, pricer, profile_of, formats_of)]
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
    try:
        future = pool.submit(_fit_forked_jobs)
    finally:
        _FORKED_JOBS.clear()  # the worker is forked at the submission: it has them

    def values() -> list[dict[str, float]]:
        try:
            return future.result()
        finally:
            pool.shutdown()

    return values


_FORKED_JOBS: list[
    tuple[Sequence[tuple[Sequence[Any], Calibration | None]], Pricer, ProfileOf, Callable[[Any], set[str]]]
] = []
"""`start_fits`'s jobs while its worker is forked: it inherits them."""


def _fit_forked_jobs() -> list[dict[str, float]]:
    return fit_together(*_FORKED_JOBS[0])


def interval(held_out: Sequence[Residual]) -> dict[str, float]:
    """Factors on a predicted time that cover the measured one with 80% probability, from held-out residuals."""
    import numpy as np

    ratios = np.array([r.log_time_ratio for r in held_out])
    tail = (1 - INTERVAL_COVERAGE) / 2 * 100
    low_q, high_q = np.percentile(ratios, [tail, 100 - tail])
    # measured = predicted * exp(-r): the largest residuals bound the measured time from below.
    return {
        "coverage": INTERVAL_COVERAGE,
        "time_factor_low": float(math.exp(-high_q)),
        "time_factor_high": float(math.exp(-low_q)),
    }


def mape(residuals: Sequence[Residual]) -> float:
    return sum(abs(r.error_pct) for r in residuals) / len(residuals) if residuals else float("nan")


def build(fit_result: FitResult, held_out: Sequence[Residual], data: dict[str, Any]) -> Calibration:
    """A Calibration with its provenance: the data, the date (SOURCE_DATE_EPOCH's when set), in-sample and
    held-out residuals, the interval."""
    held = {r.run_id: r for r in held_out}
    provenance = {
        "created": (source_date() or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "data": data,
        "fit": {
            "method": "scipy.optimize.least_squares, soft-L1 loss on log(predicted/measured), each table "
            "parameter's prior on log(parameter/default) (physics/parameters.py); cross-validation leaves one "
            "accelerator x precision out",
            "parameters": len(fit_result.parameters),
            "at_bound": fit_result.at_bound,
            "rows": len(fit_result.residuals),
            "in_sample_mape_pct": mape(fit_result.residuals),
            "cv_mape_pct": mape(held_out) if held_out else None,
            "residuals": [
                {
                    "id": r.run_id,
                    "group": r.group,
                    "error_pct": round(r.error_pct, 3),
                    "held_out_error_pct": round(held[r.run_id].error_pct, 3) if r.run_id in held else None,
                }
                for r in fit_result.residuals
            ],
        },
    }
    if held_out:
        provenance["interval"] = interval(held_out)
    return Calibration(fit_result.parameters, provenance, "fitted")


def describe(values: dict[str, float]) -> list[dict[str, Any]]:
    """One record per fitted table entry: its scope, default (prior centre), fitted value, range and whether it sits
    at a bound, and which rows inform it (what `perfmodel calibrate` and docs/validation.md print)."""
    bound = set(at_bound(values))
    records = []
    for key, value in values.items():
        item = table.entry(key)
        if item is None:
            continue
        records.append(
            {
                "key": key, "scope": item.parameter.scope, "default": item.default, "fitted": value,
                "bounds": item.parameter.bounds, "at_bound": key in bound, "informed_by": item.parameter.informed_by,
            }
        )  # fmt: skip
    return records
