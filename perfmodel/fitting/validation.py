"""Compare predictions with measured runs: per-row error, MAPE overall and per group, held-out error.

Every run is predicted through the same path as `perfmodel predict`: its scenario, the layout it used (or, where
unpublished, the fastest one that fits), and the efficiency parameters of a calibration. The layout and all that
does not depend on efficiencies are prepared once, so a calibration fit re-evaluates only the step model.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from perfmodel.errors import InfeasibleLayout, PerfmodelError
from perfmodel.fitting import whole_runs
from perfmodel.fitting.assumed import OPEN_DIMENSIONS, PARALLEL_DEGREES, Settled, settle
from perfmodel.fitting.calibrate import mape
from perfmodel.fitting.runs import (
    DEEPSPEED_SOURCE,
    DROPPING_ASSUMPTION,
    FOUNDRY_40GB_SOURCE,
    LONG_SEQUENCE_SOURCE,
    MAXTEXT_SOURCE,
    MOE_MODELS,
    MOE_SOURCE,
    TORCHTITAN_SOURCE,
    MeasuredRun,
    reference_vintage,
    release_years,
    vintage_years,
)
from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.mlperf import Benchmark, get_benchmark, score
from perfmodel.inputs.scenario import flatten
from perfmodel.physics.algebra import Number
from perfmodel.physics.calibration import UNCALIBRATED, Calibration
from perfmodel.physics.efficiency import Efficiency
from perfmodel.physics.parallel import Layout
from perfmodel.physics.parameters import Profile
from perfmodel.physics.step import Context, StepResult, evaluate, memory_need
from perfmodel.planning.batch import Batch
from perfmodel.planning.predict import choose_layout, context_for, given_degree, layout_vars
from perfmodel.planning.request import given_layout_problem

GROUPINGS = ("source", "accelerator", "precision", "metric")
REPORTED_DIMENSIONS = PARALLEL_DEGREES + OPEN_DIMENSIONS
"""Layout dimensions a row reports or leaves open (the stack's settings or, for parallel degrees, a search)."""
MOE_NOT_FITTED = {
    "GPT-OSS-120B": "its newest rows are within 6%, its older containers 19-74% too fast, by a gap no mechanism "
    "the rows can tell apart closes (docs/moe_validation.md has the figures): fitting them pulls the shared MoE "
    "entries (grouped_gemm to 0.64, overlap_ep to its bound) and moves DeepSeek-V3's newest rows from 3% to 13% "
    "error left out; validated, not fitted",
    "Nemotron-3-Nano-30B-A3B": "a hybrid Mamba-2/MoE model whose Mamba layers (half its layers) no kernel rows "
    "measure: fitted, the shared MoE entries would absorb what the SSD scan's pricing misses; validated, not fitted",
    "Nemotron-3.5-Lightning-30B-A3B": "Nemotron 3 Nano with two MTP depths: its Mamba layers are Nano's, which no "
    "kernel rows measure; validated, not fitted",
    "Mixtral-8x22B": "its two rows (NeMo 25.02 and 25.04 tables, 64K-token sequences over CP8) read too fast by a "
    "gap the stage cannot close (fitted, they still read fast): fitting them pulls the shared MoE entries and moves "
    "Mixtral-8x7B's GB200 row of the same tables (docs/moe.md has the figures); full recompute, which no source "
    "states for them, would close it; validated, not fitted",
}
"""MoE models whose rows the MoE stage leaves out, and why (they are still validated and reported)."""
DROPPING_NOT_FITTED = (
    "token-dropping rows (NeMo 25.09, padded to a capacity factor of 1.0): force-balanced, they run the work of the "
    "same layouts' dropless rows, yet read from 24% slower to 2x faster than them; fitted, the per-expert cost "
    "(moe_legacy_group_s) would absorb the gap; validated, not fitted"
)
"""Why the MoE stage leaves the token-dropping rows out (fitting.runs.DROPPING_ROUTING; docs/moe_validation.md)."""
NOT_FITTED: dict[str, str] = {
    f"{MOE_SOURCE}: {name}": "not in the dense fit: MoE rows fit only the calibration's MoE stage (overlap_ep, "
    "grouped_gemm, moe_legacy_group_s; docs/moe_validation.md), with the dense parameters fixed"
    + (f"; {MOE_NOT_FITTED[name]}" if name in MOE_NOT_FITTED else "")
    for name in MOE_MODELS
} | {
    whole_runs.SOURCE: "not in the dense fit: whole runs fit only the calibration's loss stage (the straggler share; "
    "scripts/whole_runs_leave_one_out.py), with the dense parameters fixed",
    MAXTEXT_SOURCE: "not in the dense fit: MaxText's six rows (one model, one release) may not inform a parameter "
    "of their own (issue 27: none informed by fewer than ten rows), and fitted into the shared ones they would move "
    "Megatron's; predicted with the shared values and the maxtext profile's mechanisms (the stack protocol)",
    LONG_SEQUENCE_SOURCE: "not in the dense fit: NVIDIA's long-sequence table (one model, one release) is validation "
    "only, every length predicted by a fit that saw none of them (the length protocol); fitted, its nine rows moved "
    "shared parameters (the straggler spread halved, the HBM share +8%) and every other protocol 0.1-0.4 points worse",
    TORCHTITAN_SOURCE: "not in the dense fit: torchtitan's benchmark is validation only, every row predicted by a fit "
    "that saw none of them; fitted, its four rowwise-FP8 rows (+37-76%: their slower H100 GEMMs are not priced) moved "
    "shared parameters, every protocol 0.3-2.8 points worse and Megatron's rows with them (2026-12-06 refit)",
    DEEPSPEED_SOURCE: "not in the dense fit: the six ZeRO-3 rows of one paper table are validation only, priced by "
    "DeepSpeed's per-tensor ZeRO-3 with no parameter of their own; fitted, their three 530B rows (+13-31%: optimistic, "
    "unexplained) moved shared parameters (the HBM share 0.74 to 0.70, the scale-out share 0.79 to 0.74) and four "
    "protocols 0.1-0.7 points worse (2026-12-06 refit)",
    FOUNDRY_40GB_SOURCE: "not in the dense fit: llm-foundry's A100-40GB rows (one table, one release) are validation "
    "only, predicted with the composer parameters its A100-80GB and H100 rows fit; fitted, they moved the Ampere and "
    "composer parameters (overlap_dp@composer 0.28 to 0.21) and the scale and precision protocols 0.05 and 0.02 "
    "points worse on the rows both fits predict (generation, stack and length better) (2026-12-06 refit)",
}
"""Bundled sources that `perfmodel validate` predicts but the bundled calibration is not fitted on, and why."""


@dataclass(frozen=True)
class PreparedRun:
    """A run with everything that stays fixed while efficiencies change: scenario, context, layout."""

    run: MeasuredRun
    context: Context
    layout: Layout
    benchmark: Benchmark | None
    settled: Settled | None = None
    """Dimensions the row leaves to its stack (fitting.assumed): its default and the range of plausible settings."""

    @property
    def members(self) -> tuple[Layout, ...]:
        """The layouts of the row's range (none when it reports every dimension)."""
        return self.settled.members if self.settled else ()

    @property
    def range_only(self) -> bool:
        """Whether the row is scored on its range: a dimension without a sourced default, nothing fits, or an
        MLPerf row naming no container (a span of releases, MeasuredRun.releases)."""
        return (self.settled is not None and self.settled.range_only) or self.run.releases is not None

    @property
    def range_members(self) -> tuple[tuple[Layout, float], ...]:
        """The (layout, vintage years) pairs the row's range is priced at: its layouts' range where it is scored on
        it or has no release span, else its layout, at each end of its release span (else its release); none when
        the row has neither range. Its ends hold with and without a release's timed warm-up and the trend's span."""
        if not self.members and self.run.releases is None:
            return ()
        layout_range = self.members and (self.run.releases is None or (self.settled and self.settled.range_only))
        return tuple(itertools.product(self.members if layout_range else (self.layout,), release_years(self.run)))

    @property
    def memory_gib(self) -> float:
        """The memory per GPU the row's layout needs, as the model prices it (GiB)."""
        return float(memory_need(self.context, layout_vars(self.layout))) / 2**30

    @property
    def over_memory_gib(self) -> tuple[float, float] | None:
        """(needed, held) GiB per GPU when the row's layout exceeds the memory estimate, else None: a run that ran
        fit, so such a row's layout columns (or its measured value) are suspect. No bundled row is one."""
        need, held = self.memory_gib, self.context.hardware.accelerator.memory_bytes / 2**30
        return (need, held) if need > held else None

    @property
    def basis(self) -> str:
        """How the layout was decided: 'reported', 'stack default', 'stack choice', 'range', 'searched' (no dimension
        given) or 'partly given (tp/pp)': the search kept the row's given dimensions, which 'searched' hid."""
        if self.settled:
            return self.settled.basis
        given = set(self.run.scenario.get("parallelism", {}))
        if given_degree(self.run.checked.parallelism, "vp") is not None:  # given, or fixed by PP 1
            given.add("vp")
        if given.issuperset(REPORTED_DIMENSIONS):
            return "reported"
        named = [dim for dim in REPORTED_DIMENSIONS if dim in given]
        return f"partly given ({'/'.join(named)})" if named else "searched"

    @property
    def family(self) -> str:
        return self.context.hardware.accelerator.family

    @property
    def profile(self) -> Profile:
        """What selects the run's parameters: family, stack and MLPerf benchmark."""
        return Profile(self.family, self.context.stack, self.benchmark.id if self.benchmark else None)

    @property
    def formats(self) -> set[str]:
        return {"bf16", self.context.recipe.gemm_format}

    def released_step(
        self, efficiency: Efficiency, layout: Layout | None = None, years: float | None = None
    ) -> tuple[StepResult, Efficiency]:
        """The step of `layout` (default: the run's) priced with these efficiencies at release `years` (default: the
        run's, `vintage_years`), and the efficiencies at that release (whose `timed_overhead_s` the metric takes)."""
        released = replace(efficiency, vintage_years=vintage_years(self.run) if years is None else years)
        step = evaluate(replace(self.context, efficiency=released), layout_vars(layout or self.layout))
        return step, released

    def predicted(self, efficiency: Efficiency) -> float:
        """The run's metric as perfmodel predicts it with these efficiencies at the run's release (one layout at a
        time; `RunBatch` prices many runs at once); a range-only row's is its range's geometric middle."""

        def at(layout: Layout, years: float) -> float:
            step, released = self.released_step(efficiency, layout, years)
            return float(self.released_metric(step.step_time_s, step.forward_only_s, released))

        if not self.range_only:
            return at(self.layout, vintage_years(self.run))
        values = [at(*m) for m in self.range_members]
        return math.sqrt(min(values) * max(values))

    def released_metric(self, step_time_s: Number, forward_only_s: Number, efficiency: Efficiency) -> Number:
        """The metric of a step priced at the run's release (the step applies the software trend through the
        efficiencies' `vintage_years`, as a prediction for a `--vintage` does), with the MLPerf overhead of that
        step."""
        return self.metric_value(step_time_s, forward_only_s, efficiency.timed_overhead_s(step_time_s))

    def metric_value(self, step_time_s: Number, forward_only_s: Number, run_overhead_s: Number) -> Number:
        """The run's metric from a predicted step time, forward pass and MLPerf run overhead (floats or arrays)."""
        metric = self.run.metric
        if metric == "step_time_s":
            return step_time_s
        if metric == "tokens_per_s_per_gpu":
            return self.layout.gbs * self.layout.seq_len / step_time_s / self.layout.n_gpus
        if self.benchmark is None:
            raise ValueError(f"{self.run.id}: time_to_train_min needs a benchmark")
        result = score(
            self.benchmark, self.layout.gbs, step_time_s, forward_only_s, self.run.samples, self.run.evaluations,
            run_overhead_s,
        )  # fmt: skip
        return result.time_to_train_min

    @property
    def time_sign(self) -> float:
        """+1 when the metric is a time, -1 when it is a throughput (so that a positive log ratio means 'slow')."""
        return -1.0 if self.run.metric == "tokens_per_s_per_gpu" else 1.0

    def log_time_ratio(self, efficiency: Efficiency) -> float:
        """log(predicted time / measured time); throughputs are inverted so that the sign always means 'slow'."""
        return self.time_sign * math.log(self.predicted(efficiency) / self.run.measured)


class RunBatch:
    """Prepared runs priced together: one array call of the step model per distinct context (planning.batch).

    A row with a range (fitting.assumed) is priced at each member too: always when it is range-only (its score
    comes from the range), for every ranged row with `every_range` (what validate reports)."""

    def __init__(self, items: Sequence[PreparedRun], every_range: bool = False) -> None:
        import numpy as np

        self.items = list(items)
        ranged = [k for k, i in enumerate(self.items) if i.range_members and (every_range or i.range_only)]
        pairs = [(i.context, i.layout, vintage_years(i.run)) for i in self.items]
        self._member_of: list[int] = []
        for k in ranged:
            item, members = self.items[k], self.items[k].range_members
            pairs += [(item.context, m, years) for m, years in members]
            self._member_of += [k] * len(members)
        self._years = [y for _, _, y in pairs]
        self._batch = Batch([(c, lo) for c, lo, _ in pairs], self._years)
        self._measured = np.array([i.run.measured for i in self.items])
        self._sign = np.array([i.time_sign for i in self.items])
        self._range_only = np.array([i.range_only for i in self.items], dtype=bool)

    def predicted(self, efficiency_for: Callable[[Profile], Efficiency] | None = None, variants: bool = False) -> Any:
        """Every run's metric, with the efficiencies of its profile (default: the ones it was prepared with); the
        step prices with the profile's (family, stack) at the run's own release (the batch sets each row's
        `vintage_years`, the one vintage mechanism of the step). A range-only row's is its range's geometric
        middle: no end of the range is the run's setting more than the other.

        With `variants` the efficiencies' fields are arrays of shape (V,) and the result is (runs, V)."""
        return self.priced(efficiency_for, variants)[0]

    def priced(
        self, efficiency_for: Callable[[Profile], Efficiency] | None = None, variants: bool = False
    ) -> tuple[Any, Any, Any]:
        """`predicted` and each run's range, low and high metric (NaN where the row has none or it is not priced)."""
        import numpy as np

        def step_efficiency(ctx: Context) -> Efficiency:
            if efficiency_for is None:
                return ctx.efficiency
            return efficiency_for(Profile(ctx.hardware.accelerator.family, ctx.stack))

        priced = self._batch.price(step_efficiency, variants)
        values = np.empty_like(priced.step_time_s)
        rows = list(range(len(self.items))) + self._member_of
        at_release: dict[tuple[int, float], tuple[Efficiency, Efficiency]] = {}  # few sets x releases among rows
        for k, owner in enumerate(rows):
            item = self.items[owner]
            chosen = item.context.efficiency if efficiency_for is None else efficiency_for(item.profile)
            key = (id(chosen), self._years[k])  # `chosen` is kept with its entry: its id stays its own
            if key not in at_release:  # the timed region's release switch
                at_release[key] = chosen, replace(chosen, vintage_years=key[1])
            values[k] = item.released_metric(priced.step_time_s[k], priced.forward_only_s[k], at_release[key][1])
        points = values[: len(self.items)]
        low, high = np.full_like(points, np.nan), np.full_like(points, np.nan)
        if self._member_of:
            members, owners = values[len(self.items) :], np.array(self._member_of)
            np.fmin.at(low, owners, members)
            np.fmax.at(high, owners, members)
            points = np.where(self._range_only.reshape((-1,) + (1,) * (points.ndim - 1)), np.sqrt(low * high), points)
        return points, low, high

    def log_time_ratios(
        self, efficiency_for: Callable[[Profile], Efficiency], variants: bool = False, loss: bool = False
    ) -> Any:
        """log(predicted time / measured time) of every run (see PreparedRun.log_time_ratio); with `loss` (what the
        fit minimises) a range-only row's is its log distance to the range instead, 0 inside it."""
        import numpy as np

        predicted, low, high = self.priced(efficiency_for, variants)
        shape = (-1, 1) if variants else (-1,)
        sign, measured = self._sign.reshape(shape), self._measured.reshape(shape)
        ratios = sign * np.log(predicted / measured)
        if not loss or not self._range_only.any():
            return ratios
        ends = sign * np.log(low / measured), sign * np.log(high / measured)
        below, above = np.fmin(*ends), np.fmax(*ends)
        distance = np.where(below > 0, below, np.where(above < 0, above, 0.0))
        return np.where(self._range_only.reshape(shape), distance, ratios)


def prepare(
    run: MeasuredRun, calibration: Calibration, known: dict[tuple[str, str, str | None], Efficiency] | None = None
) -> PreparedRun:
    """The run's context and layout; `known`: the calibration's efficiencies by (family, stack, benchmark), worked
    out once for many runs (prepare_all) instead of once per run. A layout its columns give in part is checked as a
    question's is (request.given_layout_problem), so that a refusal names the column and the rule it breaks (`column
    'tp': TP 3 must divide the 32 attention heads`), not a PP of the search's that no column gave."""
    if whole_runs.is_whole_run(run):
        raise PerfmodelError(f"{run.id}: a whole run (metric gpu_hours) is priced by its prediction, not by one step")
    scenario = run.checked
    broken = given_layout_problem(scenario)
    if broken is not None:
        named, why = broken
        raise InfeasibleLayout(f"column '{named[0]}': {why}" if named else why)
    bench = get_benchmark(scenario.benchmark) if scenario.benchmark else None
    family = resolve(scenario.gpu, scenario.system).accelerator.family  # the family picks the efficiencies
    profile = (family, scenario.stack, bench.id if bench else None)
    efficiency = known.get(profile) if known is not None else None
    if efficiency is None:
        efficiency = calibration.efficiency(*profile)
        if known is not None:
            known[profile] = efficiency
    ctx = context_for(scenario, efficiency)  # shared by equal rows
    settled = settle(scenario, ctx)
    layout = settled.point if settled else choose_layout(scenario, ctx)[0]
    return PreparedRun(run, ctx, layout, bench, settled)


@dataclass(frozen=True)
class Row:
    prepared: PreparedRun
    predicted: float
    held_out_error_pct: float | None
    low: float | None = None
    high: float | None = None
    """The metric's range over the plausible settings of the dimensions the row leaves to its stack."""

    @property
    def range_error_pct(self) -> float | None:
        """Error to the nearest end of the range, 0 inside it (what the fit minimises for a range-only row)."""
        if self.low is None or self.high is None:
            return None
        measured = self.prepared.run.measured
        nearest = min(max(measured, self.low), self.high)
        return (nearest / measured - 1) * 100

    @property
    def error_pct(self) -> float:
        return (self.predicted / self.prepared.run.measured - 1) * 100

    def key(self, grouping: str) -> str:
        run = self.prepared.run
        return {
            "source": run.source.split(" v")[0].split(" 2")[0]
            if run.source.startswith("MLPerf")
            else run.source.split(" NeMo")[0].split(" DGXC")[0].split(" (")[0],
            "accelerator": run.accelerator,
            "precision": run.precision,
            "metric": run.metric,
        }[grouping]

    def to_dict(self) -> dict[str, Any]:
        run, lo = self.prepared.run, self.prepared.layout
        return {
            "id": run.id,
            "source": run.source,
            "detail": run.detail,
            "model": self.prepared.context.model.id,
            "accelerator": run.accelerator,
            "n_gpus": lo.n_gpus,
            "precision": run.precision,
            "layout": lo.describe(),
            "metric": run.metric,
            "measured": run.measured,
            "predicted": self.predicted,
            "error_pct": self.error_pct,
            "held_out_error_pct": self.held_out_error_pct,
            "assumptions": list(run.assumptions) + ([self.prepared.settled.note] if self.prepared.settled else []),
            "layout_basis": self.prepared.basis,
            "layout_assumed": list(self.prepared.settled.assumed) if self.prepared.settled else [],
            "min_predicted": self.low,
            "max_predicted": self.high,
            "range_error_pct": self.range_error_pct,
        } | (
            {"measured_memory_gib": run.memory_gib, "predicted_memory_gib": self.prepared.memory_gib}
            if run.memory_gib is not None
            else {}
        )


@dataclass(frozen=True)
class Report:
    rows: list[Row]
    excluded: list[dict[str, str]]
    calibration: Calibration

    @property
    def mape_pct(self) -> float:
        return sum(abs(r.error_pct) for r in self.rows) / len(self.rows)

    @property
    def cv_mape_pct(self) -> float | None:
        held = [abs(r.held_out_error_pct) for r in self.rows if r.held_out_error_pct is not None]
        return sum(held) / len(held) if held else None

    def groups(self) -> dict[str, dict[str, dict[str, float | int | None]]]:
        out: dict[str, dict[str, dict[str, float | int | None]]] = {}
        for grouping in GROUPINGS:
            buckets: dict[str, list[Row]] = {}
            for row in self.rows:
                buckets.setdefault(row.key(grouping), []).append(row)
            out[grouping] = {
                name: {
                    "rows": len(rows),
                    "mape_pct": sum(abs(r.error_pct) for r in rows) / len(rows),
                    "cv_mape_pct": _mean_abs([r.held_out_error_pct for r in rows]),
                }
                for name, rows in sorted(buckets.items())
            }
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": [r.to_dict() for r in self.rows],
            "mape_pct": self.mape_pct,
            "cv_mape_pct": self.cv_mape_pct,
            "groups": self.groups(),
            "excluded": self.excluded,
            "calibration": self.calibration.source,
        }

    def to_records(self) -> list[dict[str, Any]]:
        """One flat record per run, predicted against measured (the rows `validate --format csv` prints)."""
        return [flatten(row.to_dict()) for row in self.rows]


def accuracy(report: Report) -> dict[str, Any]:
    """What a calibration stores of its validation for the accuracy gate (tests/test_accuracy_gate.py): MAPE over
    every row and per group (the report's groupings and the accelerator x precision group) and each row's error (in
    the report's order: an MLPerf system's id names each of its benchmarks), so that a change to the model that makes
    any of them worse with the same calibration fails the suite."""
    groups = {g: {name: figures["mape_pct"] for name, figures in by.items()} for g, by in report.groups().items()}
    crossed: dict[str, list[float]] = {}
    for row in report.rows:
        crossed.setdefault(row.prepared.run.group, []).append(abs(row.error_pct))
    groups["accelerator_precision"] = {name: sum(errors) / len(errors) for name, errors in sorted(crossed.items())}
    errors = [[row.prepared.run.id, row.error_pct] for row in report.rows]
    return {"rows": len(report.rows), "mape_pct": report.mape_pct, "groups": groups, "row_errors_pct": errors}


def _mean_abs(values: Sequence[float | None]) -> float | None:
    known = [abs(v) for v in values if v is not None]
    return sum(known) / len(known) if known else None


def held_out_errors(calibration: Calibration) -> dict[str, float]:
    """Held-out error of every run the calibration was cross-validated on, by run id; of a user calibration, its own
    rows' only (each left out of its fit): the bundled fit's held-out errors are of values it may have changed."""
    user = calibration.provenance.get("user")
    residuals = user["residuals"] if user else calibration.provenance.get("fit", {}).get("residuals", [])
    return {r["id"]: r["held_out_error_pct"] for r in residuals if r.get("held_out_error_pct") is not None}


def validate(runs: Sequence[MeasuredRun], calibration: Calibration, excluded: Sequence[Any] = ()) -> Report:
    held = held_out_errors(calibration)
    rows = []
    unpredictable = [{"id": e.id, "reason": e.reason} for e in excluded]
    steps = [r for r in runs if not whole_runs.is_whole_run(r)]
    batch = RunBatch(prepare_all(steps, calibration, unpredictable), every_range=True)
    for prepared, *metric in zip(batch.items, *batch.priced(), strict=True):
        predicted, low, high = (float(v) for v in metric)
        held_out = _held_out_metric_error(prepared.run, held.get(prepared.run.id))
        rows.append(Row(prepared, predicted, held_out, *((low, high) if prepared.range_members else (None, None))))
    rows += _whole_run_rows([r for r in runs if whole_runs.is_whole_run(r)], calibration, unpredictable)
    if not rows:
        first = f"; {unpredictable[0]['id']}: {unpredictable[0]['reason']}" if unpredictable else ""
        raise PerfmodelError(f"nothing to validate: none of the {len(runs)} runs can be predicted{first}")
    return Report(rows, unpredictable, calibration)


def _whole_run_rows(
    runs: Sequence[MeasuredRun], calibration: Calibration, unpredictable: list[dict[str, str]]
) -> list[Row]:
    """Whole runs (fitting/whole_runs.py) at the calibration's straggler share, held out by its loss stage."""
    share, held = whole_runs.fitted_share(calibration), whole_runs.held_out_errors(calibration)
    rows = []
    for run in runs:
        try:
            priced = whole_runs.price(run, calibration)
        except PerfmodelError as exc:
            unpredictable.append({"id": run.id, "reason": str(exc)})
            continue
        prepared = PreparedRun(run, priced.context, priced.prediction.layout, None)
        rows.append(Row(prepared, priced.at(share), held.get(run.id)))
    return rows


def prepare_all(
    runs: Sequence[MeasuredRun], calibration: Calibration, unpredictable: list[dict[str, str]]
) -> list[PreparedRun]:
    """Prepared runs; a run no valid layout can reproduce is reported in `unpredictable` with the reason."""
    prepared = []
    known: dict[tuple[str, str, str | None], Efficiency] = {}
    for run in runs:
        try:
            prepared.append(prepare(run, calibration, known))
        except PerfmodelError as exc:
            unpredictable.append({"id": run.id, "reason": str(exc)})
    return prepared


def _held_out_metric_error(run: MeasuredRun, time_error_pct: float | None) -> float | None:
    """Calibration residuals are on time; a throughput's error is the inverse ratio."""
    if time_error_pct is None:
        return None
    if run.metric == "tokens_per_s_per_gpu":
        return (1 / (1 + time_error_pct / 100) - 1) * 100
    return time_error_pct


__all__ = ["Report", "Row", "RunBatch", "accuracy", "mape", "prepare", "validate"]


def fit_calibration(
    runs: Sequence[MeasuredRun],
    excluded: Sequence[Any],
    cross_validate: bool = True,
    progress: Callable[[str], None] | None = None,
) -> Calibration:
    """Fit the efficiency parameters on `runs` (layouts fixed as predicted with the physical defaults), with
    leave-one-group-out cross-validation, the out-of-sample protocols whose residuals give prediction intervals,
    the provenance a calibration file carries, and the evidence a prediction compares itself with
    (fitting/evidence.py)."""
    from perfmodel.fitting import calibrate as cal
    from perfmodel.fitting import evidence, protocols

    say = progress or (lambda _: None)
    unpredictable: list[dict[str, str]] = [{"id": e.id, "reason": e.reason} for e in excluded]
    not_fitted = [{"id": r.id, "reason": NOT_FITTED[r.source]} for r in runs if r.source in NOT_FITTED]
    items = prepare_all([r for r in runs if fitted_densely(r)], UNCALIBRATED, unpredictable)
    if not items:
        raise PerfmodelError("nothing to calibrate: none of the runs can be predicted")
    tested_unpredictable: list[dict[str, str]] = []  # reported with the protocols, below, as before
    tested: dict[str, list[PreparedRun]] = {}
    held_out: list[cal.Residual] = []
    if cross_validate:
        tested = {name: protocols.with_tested(name, items, runs, tested_unpredictable) for name in protocols.PROTOCOLS}
        protocol_trains = _protocol_trains(items, tested)
        say(f"fitting {len(protocol_trains)} protocol folds beside the fit on {len(items)} runs")
        protocol_fits = cal.start_fits([(t, None) for t in protocol_trains.values()], RunBatch, _profile, _formats)
    say(f"fitting on {len(items)} runs")
    fitted = cal.fit(items, RunBatch, _profile, _formats)
    start = Calibration(fitted.parameters, {}, "fit")
    fits = {cal.run_ids(items): fitted.parameters}  # protocol folds on every row: the fit above
    if cross_validate:
        cv_trains = [train for _, train, _ in cal.leave_one_group_out(items, _group) if train]
        say(f"fitting {len(cv_trains)} cross-validation folds")
        cv_values = cal.fit_together([(train, start) for train in cv_trains], RunBatch, _profile, _formats)
        cv_fits = {cal.run_ids(train): values for train, values in zip(cv_trains, cv_values, strict=True)}
        held_out = cal.cross_validate(items, RunBatch, _profile, _formats, _group, say, start, cv_fits)
    data = {
        "vintage": {"reference": reference_vintage(), "unknown_release": "rows without a release month count as it"},
        "rows": [item.run.id for item in items],
        "sources": sorted({item.run.source for item in items}),
        "excluded": unpredictable,
        "validated_not_fitted": not_fitted,
    }
    built = cal.build(fitted, held_out, data)
    moe_runs = [r for r in runs if r.source.startswith(MOE_SOURCE)]
    moe_items: list[PreparedRun] = []
    if moe_runs:
        say(f"MoE stage on the rows of every container of {len(moe_runs)} MoE runs")
        moe_items = prepare_all(moe_runs, start, unpredictable)
        left_out = [i for i in moe_items if not moe_fitted(i)]
        values, section = cal.moe_stage(moe_fit_rows(moe_items), RunBatch, start, moe_model, left_out, zoo_model)
        built = replace(built, parameters=built.parameters | values, provenance=built.provenance | {"moe": section})
    whole = [r for r in runs if whole_runs.is_whole_run(r)]
    if len(whole) > 1:
        say(f"loss stage on {len(whole)} whole runs")
        built = replace(built, provenance=built.provenance | {"losses": whole_runs.stage(whole, built).section()})
    validated = {"validation": accuracy(validate(runs, built, excluded))}
    built = replace(built, provenance=built.provenance | validated)
    if not cross_validate:
        return built
    unpredictable += tested_unpredictable
    fits |= dict(zip(protocol_trains, protocol_fits(), strict=True))
    results = {}
    for name in protocols.PROTOCOLS:
        try:
            results[name] = protocols.evaluate(name, tested[name], say, fits)
        except PerfmodelError as exc:  # no fold in these runs (no MLPerf round to predict, say)
            say(f"{name}: skipped ({exc})")
    checked = prepare_all([r for r in runs if validated_steadily(r)], built, [])  # their exclusions: reported above
    found = protocols.provenance(results.values(), items) | {
        "evidence": evidence.section([*items, *checked], moe_items, results)
    }
    return replace(built, provenance=built.provenance | found)


def _protocol_trains(
    items: Sequence[PreparedRun], tested: dict[str, list[PreparedRun]]
) -> dict[tuple[str, ...], list[PreparedRun]]:
    """The protocols' folds' training rows by their ids in order, each once, but for every fitted row (the fit's)."""
    from perfmodel.fitting import calibrate as cal
    from perfmodel.fitting import protocols

    trains: dict[tuple[str, ...], list[PreparedRun]] = {}
    for name, rows in tested.items():
        for fold in protocols.folds(name, rows):
            if fold.train and cal.run_ids(fold.train) != cal.run_ids(items):
                trains.setdefault(cal.run_ids(fold.train), fold.train)
    return trains


def validated_steadily(run: MeasuredRun) -> bool:
    """Whether the run is a dense steady-step row that is validated, not fitted (llm-foundry's A100 40GB, MaxText,
    torchtitan, the long-sequence table): measured evidence of the model in its regime all the same, which a
    prediction there is near (a 40GB A100 run, not only an 80GB one)."""
    return run.source in NOT_FITTED and not run.source.startswith(MOE_SOURCE) and not whole_runs.is_whole_run(run)


def fitted_densely(run: MeasuredRun) -> bool:
    """Whether the dense fit takes the run: not a MoE row, not a whole run (each has its own stage)."""
    return run.source not in NOT_FITTED and not whole_runs.is_whole_run(run)


def moe_model(item: PreparedRun) -> str:
    """The MoE model a bundled MoE row ran (its source names it)."""
    return item.run.source.removeprefix(f"{MOE_SOURCE}: ")


def zoo_model(item: PreparedRun) -> str:
    """The zoo model a bundled row ran: its scenario's model, or the zoo entry its [model] table starts from."""
    model = item.run.scenario["model"]
    return model if isinstance(model, str) else str(model["base"])


def moe_fit_rows(items: Sequence[PreparedRun]) -> list[PreparedRun]:
    """The MoE rows the MoE stage fits: every container's, but for the models of MOE_NOT_FITTED and the token-dropping
    rows (DROPPING_NOT_FITTED). Containers before the grouped expert kernel ran the same layouts 18-56% slower;
    `moe_legacy_group_s` prices that age, so that the other MoE entries need not absorb it."""
    return [i for i in items if moe_fitted(i)]


def moe_fitted(item: PreparedRun) -> bool:
    """Whether the MoE stage fits this MoE row (moe_fit_rows); the others it validates, held out of the whole stage."""
    return moe_model(item) not in MOE_NOT_FITTED and DROPPING_ASSUMPTION not in item.run.assumptions


def newest_container(items: Sequence[PreparedRun]) -> list[PreparedRun]:
    """Each MoE model's rows from its newest container (what docs/moe_validation.md also reports on its own)."""
    newest: dict[str, str] = {}
    for item in items:
        newest[moe_model(item)] = max(newest.get(moe_model(item), ""), item.run.released or "")
    return [i for i in items if (i.run.released or "") == newest[moe_model(i)]]


def _profile(item: PreparedRun) -> Profile:
    return item.profile


def _formats(item: PreparedRun) -> set[str]:
    return item.formats


def _group(item: PreparedRun) -> str:
    return item.run.group
