"""Published whole runs: GPU-hours as their authors published them, against perfmodel's run with failures and losses.

A whole-run row (metric `gpu_hours`, README "Measured runs CSV") is a planning question (model, hardware, GPUs,
tokens, the stack and its release, what is known of its layout and losses) and the GPU-hours its authors published.
Its basis says what those count: `wall`, the run as it went (compared with `gpu_hours_with_losses`: failures and
every loss), or `steady`, tokens over a measured steady throughput (compared with `gpu_hours` and the losses that
slow the steps: stragglers). Each row is predicted as `perfmodel predict` would (its layout searched among what its
stack's release could run), with the dense calibration.

The rows identify one number: the straggler share (planning/losses.py). Every other loss has a sourced default or a
sourced per-row setting; the share is fitted as the calibration's `losses` stage (least squares on log GPU-hours,
within [0, STRAGGLER_BOUND]), with each row's error from a fit that never saw it (the `whole-runs` protocol). What the
rows cannot separate: the stragglers from the step time of the stack that ran them (LLaMA's own stack is priced with
the megatron profile) and from losses no source sizes (evaluation outside the job, queueing, lost days).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from perfmodel.errors import PerfmodelError, shown
from perfmodel.fitting.runs import DATA, MeasuredRun, parse_row, runs_csv_cells
from perfmodel.inputs.counts import EXAMPLES, count
from perfmodel.inputs.models import ZOO
from perfmodel.inputs.record import replaced
from perfmodel.inputs.scenario import sourced
from perfmodel.physics.calibration import Calibration
from perfmodel.physics.step import Context
from perfmodel.planning.losses import STRAGGLER_PRIOR, STRAGGLER_PRIOR_SOURCE, straggler_scale
from perfmodel.planning.predict import Prediction, choose_layout, context_for, prediction_for

SOURCE = "Whole runs (published GPU-hours)"
BASES = ("wall", "steady")
SETTING_TABLES = ("goodput", "losses", "parallelism")
SETTING_FIELDS = ("stack", "vintage", "system", "gpu")
STRAGGLER_BOUND = 0.5
PROTOCOL = "whole-runs"
DEFINITION = (
    "leave one published whole run out: fit the straggler share on the others, predict its GPU-hours with failures "
    "and losses"
)
NOT_IDENTIFIED = (
    "The rows identify one number, the straggler share: every other loss is a sourced default or a sourced setting "
    "of its row. They cannot separate it from the step time of the software that ran them (LLaMA and Llama 2 ran "
    "Meta's own stack, priced with the megatron profile of their release), nor from losses no source sizes for "
    "these runs (evaluation jobs, queueing, days lost to incidents): the fitted share holds all of those."
)


def whole_run(run: MeasuredRun, cell: dict[str, str], where: str) -> MeasuredRun:
    """A runs-CSV row of metric gpu_hours as a whole run: its tokens, model shapes, basis and settings in the
    scenario (parse_row reads its stack and release); a bad cell is one line naming `where` and the column."""
    scenario = dict(run.scenario)
    try:
        scenario["tokens"] = count(cell["tokens"])  # '15T' as the CLI's --tokens and a scenario's tokens read it
    except ValueError:
        raise PerfmodelError(
            f"{where}: column 'tokens' is '{shown(cell['tokens'])}', not a number of tokens (examples: {EXAMPLES})"
        ) from None
    if cell.get("model_shapes"):
        if cell.get("model") in ZOO:
            raise PerfmodelError(
                f"{where}: column 'model_shapes': model '{cell['model']}' is in the zoo; give shapes only for a model "
                "it lacks (a 'base=' shape starts from a zoo model)"
            )
        shapes = _pairs(cell["model_shapes"], where, "model_shapes")
        shapes = sourced(shapes, f"{where}, column 'model_shapes'")
        if "base" not in shapes:
            shapes = {"id": cell.get("model") or "custom", "name": cell.get("model") or "custom model"} | shapes
        scenario["model"] = shapes
    for key, value in _pairs(cell.get("settings", ""), where, "settings").items():
        table, _, field = key.rpartition(".")
        if (table and table not in SETTING_TABLES) or (not table and key not in SETTING_FIELDS) or not field:
            allowed = ", ".join([*SETTING_FIELDS, *(f"{t}.KEY" for t in SETTING_TABLES)])
            raise PerfmodelError(f"{where}: column 'settings': '{key}' is not a setting; allowed: {allowed}")
        target = scenario.setdefault(table, {}) if table else scenario
        target[field] = value
    basis = cell.get("basis") or "wall"
    if basis not in BASES:
        raise PerfmodelError(f"{where}: column 'basis' is '{basis}'; allowed: {', '.join(BASES)}")
    return replace(run, scenario=scenario, basis=basis, released=scenario.get("vintage"))


def _pairs(text: str, where: str, column: str) -> dict[str, Any]:
    """`key=value;...` as a dict, numbers and true/false typed."""
    pairs: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        key, equals, value = part.partition("=")
        if not equals or not key.strip() or not value.strip():
            raise PerfmodelError(f"{where}: column '{column}': '{part}' is not key=value")
        pairs[key.strip()] = _typed(value.strip())
    return pairs


def _typed(text: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


BUNDLED = "whole_runs.csv"


@cache
def bundled_whole_runs() -> tuple[MeasuredRun, ...]:
    """The published whole runs bundled with perfmodel (perfmodel/data/whole_runs.csv, a copy of the data notes'
    with each row's basis and sourced settings added; its perfmodel_notes column says why)."""
    path = DATA / BUNDLED
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    runs = []
    for line, row in enumerate(rows, start=2):
        cell = runs_csv_cells(row)
        if cell["model"] in ZOO:
            cell["model_shapes"] = ""  # the zoo holds the row's shapes (a test checks they agree)
        if cell["system"] and cell["system"] not in _systems():
            cell["system"] = ""  # a system named in the notes only: the row's settings pick one
        run = parse_row(path, line, cell)
        detail = f"{row['source'].split(',')[0].split(' (')[0]} ({row['version_or_date']})"
        runs.append(replace(run, source=SOURCE, detail=detail))
    return tuple(runs)


def _systems() -> set[str]:
    from perfmodel.inputs.hardware import systems

    return set(systems())


@dataclass(frozen=True)
class Priced:
    """A whole run predicted at a straggler share of 0, and what a share of 1 adds: its figure at share s is
    `fixed + s * per_share` (the losses add to the failure-free run, each priced on it)."""

    run: MeasuredRun
    context: Context
    prediction: Prediction
    fixed: float
    per_share: float

    def at(self, share: float) -> float:
        return self.fixed + share * self.per_share

    def log_error(self, share: float) -> float:
        return math.log(self.at(share) / self.run.measured)


def price(run: MeasuredRun, calibration: Calibration) -> Priced:
    """The run as `perfmodel predict` answers it with `calibration`'s efficiencies at the run's release (its layout
    searched among what that release could run), losses on, stragglers apart."""
    scenario = run.checked
    scenario = replaced(scenario, losses=replaced(scenario.losses, straggler_share=0.0))
    family = _family(scenario)
    ctx = context_for(scenario, calibration.efficiency(family, scenario.stack, None, scenario.vintage))
    layout, searched = choose_layout(scenario, ctx)
    prediction = prediction_for(scenario, ctx, layout, searched, calibrated=False)
    record = prediction.to_dict()
    if run.basis == "steady":
        fixed = record["gpu_hours"]
    elif record.get("gpu_hours_with_losses") is None:
        raise PerfmodelError(f"{run.id}: the run never finishes (its failures outpace its recovery)")
    else:
        fixed = record["gpu_hours_with_losses"]
    return Priced(run, ctx, prediction, fixed, record["gpu_hours"] * straggler_scale(layout.n_gpus))


def _family(scenario: Any) -> str:
    from perfmodel.inputs.hardware import resolve

    return resolve(scenario.gpu, scenario.system).accelerator.family


def fit_share(rows: Sequence[Priced]) -> float:
    """The straggler share minimising the rows' squared log errors, within [0, STRAGGLER_BOUND]."""
    from scipy.optimize import minimize_scalar

    found = minimize_scalar(
        lambda s: sum(r.log_error(s) ** 2 for r in rows), bounds=(0.0, STRAGGLER_BOUND), method="bounded"
    )
    return float(found.x)


@dataclass(frozen=True)
class Result:
    """The loss stage: the share fitted on every row, and each row's prediction in and out of sample."""

    rows: list[Priced]
    share: float
    held_out_shares: list[float]

    def errors_pct(self, held_out: bool = False) -> list[float]:
        shares = self.held_out_shares if held_out else [self.share] * len(self.rows)
        return [(r.at(s) / r.run.measured - 1) * 100 for r, s in zip(self.rows, shares, strict=True)]

    def mape_pct(self, held_out: bool = False) -> float:
        errors = self.errors_pct(held_out)
        return sum(map(abs, errors)) / len(errors)

    def mean_error_pct(self, held_out: bool = False) -> float:
        errors = self.errors_pct(held_out)
        return sum(errors) / len(errors)

    def residuals(self) -> list[dict[str, Any]]:
        fitted, held = self.errors_pct(), self.errors_pct(held_out=True)
        return [
            {"id": r.run.id, "detail": r.run.detail, "basis": r.run.basis, "measured": r.run.measured,
             "predicted": r.at(self.share), "error_pct": e, "held_out_predicted": r.at(s), "held_out_error_pct": h,
             "held_out_straggler_share": s, "layout": r.prediction.layout.describe()}
            for r, e, h, s in zip(self.rows, fitted, held, self.held_out_shares, strict=True)
        ]  # fmt: skip

    def section(self) -> dict[str, Any]:
        """The calibration file's `losses` section."""
        return {
            "definition": "planning/losses.py: the straggler share at 128 GPUs, fitted on published whole runs",
            "parameters": {"straggler_share": self.share},
            "prior": {"straggler_share": STRAGGLER_PRIOR, "source": STRAGGLER_PRIOR_SOURCE},
            "bounds": {"straggler_share": [0.0, STRAGGLER_BOUND]},
            "rows": [r.run.id for r in self.rows],
            "fit": {
                "mape_pct": self.mape_pct(),
                "mean_error_pct": self.mean_error_pct(),
                "held_out_mape_pct": self.mape_pct(held_out=True),
                "held_out_mean_error_pct": self.mean_error_pct(held_out=True),
                "protocol": DEFINITION,
                "residuals": self.residuals(),
            },
            "not_identified": NOT_IDENTIFIED,
        }


def stage(runs: Sequence[MeasuredRun], calibration: Calibration, say: Callable[[str], None] = lambda _: None) -> Result:
    """Price the whole runs with `calibration`, fit the share on all of them, and on all but each one."""
    if len(runs) < 2:
        raise PerfmodelError(f"the loss stage needs at least 2 whole runs (metric gpu_hours); got {len(runs)}")
    say(f"pricing {len(runs)} whole runs")
    rows = [price(run, calibration) for run in runs]
    held = [fit_share([r for r in rows if r is not row]) for row in rows]
    return Result(rows, fit_share(rows), held)


def is_whole_run(run: MeasuredRun) -> bool:
    return run.metric == "gpu_hours"


def fitted_share(calibration: Calibration) -> float:
    """The calibration's straggler share (its `losses` section), else the sourced prior."""
    value = calibration.provenance.get("losses", {}).get("parameters", {}).get("straggler_share")
    return STRAGGLER_PRIOR if value is None else float(value)


def held_out_errors(calibration: Calibration) -> dict[str, float]:
    """Each whole run's error from the loss fit without it, by run id (the calibration's `losses` section)."""
    residuals = calibration.provenance.get("losses", {}).get("fit", {}).get("residuals", [])
    return {r["id"]: r["held_out_error_pct"] for r in residuals}


def protocol(runs: Sequence[MeasuredRun], calibration: Calibration, say: Callable[[str], None] = lambda _: None) -> Any:
    """`perfmodel validate --protocol whole-runs`: every whole run among `runs` predicted by a loss fit without it."""
    chosen = [r for r in runs if is_whole_run(r)]
    if not chosen:
        raise PerfmodelError(f"--protocol {PROTOCOL}: none of the selected rows is a whole run (metric gpu_hours)")
    return ProtocolResult(stage(chosen, calibration, say))


@dataclass(frozen=True)
class ProtocolResult:
    result: Result

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        rows = [
            row | {"predicted": row["held_out_predicted"], "error_pct": row["held_out_error_pct"]}
            for row in r.residuals()
        ]
        return {
            "protocol": PROTOCOL,
            "definition": DEFINITION,
            "rows": rows,
            "mape_pct": r.mape_pct(held_out=True),
            "mean_error_pct": r.mean_error_pct(held_out=True),
            "in_sample_mape_pct": r.mape_pct(),
            "in_sample_mean_error_pct": r.mean_error_pct(),
            "straggler_share": r.share,
            "not_identified": NOT_IDENTIFIED,
        }
