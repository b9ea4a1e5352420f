"""Out-of-sample protocols: predict rows that no fit has seen, the way a planner's question is out of sample.

`perfmodel validate --protocol P` (design notes, MODELLING.md "the four protocols"), on the rows calibration fits:
- forward: for each MLPerf round R from v4.1 on, fit on everything released before R (earlier rounds; measured runs
  whose container or paper month precedes R's publication month), predict R's rows.
- generation: leave one accelerator family out (Ampere, Hopper, Blackwell, Blackwell Ultra, CDNA3, CDNA4 where the data
  has rows), fit on the others, predict it.
- precision: leave one number format out (BF16, FP8 per-tensor, FP8 blockwise, MXFP8, NVFP4 where present).
- scale: fit on runs of at most 256 GPUs, predict the larger ones, reported by bucket (about 512, 1,024-2,048 and
  4,096+ GPUs; bucket edges at the geometric midpoints 724 and 2,896).
- length: each length of NeMo's long-sequence table, predicted by the fit on every fitted row (none of the table's).
- stack: leave one software stack out (issue 28): fit on the other stacks' fitted rows, predict the stack's rows
  (MaxText's, which no fit takes, are predicted by the fit on every fitted row).
Every fit starts from the physical defaults, not from a fit on all rows, and layouts the data leave open are chosen
with the defaults too, so no test row informs its own prediction. The held-out residuals are what prediction
intervals are drawn from (calibrate.interval).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from perfmodel.errors import PerfmodelError
from perfmodel.fitting import calibrate as cal
from perfmodel.fitting.runs import (
    DEEPSPEED_SOURCE,
    FOUNDRY_40GB_SOURCE,
    LONG_SEQUENCE_SOURCE,
    MAXTEXT_SOURCE,
    ROUND_PUBLISHED,
    TORCHTITAN_SOURCE,
    Exclusion,
    MeasuredRun,
)
from perfmodel.fitting.validation import PreparedRun, RunBatch, _formats, _profile, fitted_densely, prepare_all
from perfmodel.physics import parameters as table
from perfmodel.physics.calibration import UNCALIBRATED

PROTOCOLS = ("forward", "generation", "precision", "scale", "length", "stack")
FIRST_FORWARD_ROUND = "v4.1"
SCALE_TRAIN_MAX_GPUS = 256
SCALE_BUCKETS = ((724, "257-724 GPUs (~512)"), (2896, "725-2,896 GPUs (~1,024-2,048)"), (None, "2,897+ GPUs (~4,096+)"))
DEFINITIONS = {
    "forward": "for each MLPerf round from v4.1 on: fit on rows published before it, predict its rows",
    "generation": "leave one accelerator generation out: fit on the others, predict it",
    "precision": "leave one number format out: fit on the others, predict it",
    "scale": f"fit on runs of at most {SCALE_TRAIN_MAX_GPUS} GPUs, predict the larger ones (by bucket)",
    "length": "each length of the long-sequence table predicted by the fit on every fitted row (none of the table's)",
    "stack": "leave one software stack out: fit on the other stacks' rows, predict its rows",
}


@dataclass(frozen=True)
class Fold:
    name: str
    train: list[PreparedRun]
    test: list[PreparedRun]


def _round(run: MeasuredRun) -> str | None:
    return run.source.removeprefix("MLPerf Training ") if run.source.startswith("MLPerf Training ") else None


def _known(run: MeasuredRun) -> str | None:
    """The month a row became public: an MLPerf result's round publication (its software may be older), else its
    release (a table published with its container, a paper)."""
    mlperf_round = _round(run)
    return ROUND_PUBLISHED.get(mlperf_round, run.released) if mlperf_round else run.released


def _forward(items: Sequence[PreparedRun]) -> list[Fold]:
    rounds = sorted(
        {r for i in items if (r := _round(i.run)) and r in ROUND_PUBLISHED}, key=ROUND_PUBLISHED.__getitem__
    )
    folds = []
    for name in rounds:
        published = ROUND_PUBLISHED[name]
        if published < ROUND_PUBLISHED[FIRST_FORWARD_ROUND]:
            continue
        train = [i for i in items if (known := _known(i.run)) is not None and known < published]
        folds.append(Fold(name, train, [i for i in items if _round(i.run) == name]))
    return folds


def _leave_one_out(items: Sequence[PreparedRun], key: Callable[[PreparedRun], str]) -> list[Fold]:
    return [
        Fold(value, [i for i in items if key(i) != value], [i for i in items if key(i) == value])
        for value in sorted({key(i) for i in items})
    ]


def scale_bucket(n_gpus: int) -> str:
    return next(label for edge, label in SCALE_BUCKETS if edge is None or n_gpus <= edge)


def _scale(items: Sequence[PreparedRun]) -> list[Fold]:
    train = [i for i in items if i.run.n_gpus <= SCALE_TRAIN_MAX_GPUS]
    large = [i for i in items if i.run.n_gpus > SCALE_TRAIN_MAX_GPUS]
    return [
        Fold(label, train, members)
        for _, label in SCALE_BUCKETS
        if (members := [i for i in large if scale_bucket(i.run.n_gpus) == label])
    ]


def length_name(seq_len: int) -> str:
    """A fold of the length protocol: the sequence length as the long-sequence table writes it (4K ... 1024K)."""
    return f"{seq_len // 1024}K" if seq_len % 1024 == 0 else str(seq_len)


def _length(items: Sequence[PreparedRun]) -> list[Fold]:
    """A fold per length of the long-sequence table, each trained on every row but the table's (one fit for all)."""
    table = [i for i in items if i.run.source == LONG_SEQUENCE_SOURCE]
    train = [i for i in items if i.run.source != LONG_SEQUENCE_SOURCE]
    lengths = sorted({i.context.seq_len for i in table})
    return [Fold(length_name(seq), train, [i for i in table if i.context.seq_len == seq]) for seq in lengths]


def _stack(items: Sequence[PreparedRun]) -> list[Fold]:
    """A fold per software stack (the stack each row ran): trained on the other stacks' fitted rows, never on rows
    of VALIDATION_ONLY's sources (which no fit takes), testing every row of the stack."""
    tested_only = set(VALIDATION_ONLY["stack"])
    fitted = [i for i in items if i.run.source not in tested_only]
    stacks = sorted({i.context.stack for i in items})
    return [
        Fold(name, [i for i in fitted if i.context.stack != name], [i for i in items if i.context.stack == name])
        for name in stacks
    ]


VALIDATION_ONLY = {
    "length": (LONG_SEQUENCE_SOURCE,),
    "stack": (MAXTEXT_SOURCE, TORCHTITAN_SOURCE, DEEPSPEED_SOURCE, FOUNDRY_40GB_SOURCE),
}
"""Protocols whose test rows include sources no fit takes (validation.NOT_FITTED): their folds predict those
sources' rows too."""


def with_tested(
    protocol: str, items: Sequence[PreparedRun], runs: Sequence[MeasuredRun], unpredictable: list[dict[str, str]]
) -> list[PreparedRun]:
    """The fitted rows, and for a protocol of VALIDATION_ONLY the rows of its sources it predicts."""
    sources = VALIDATION_ONLY.get(protocol, ())
    if not sources:
        return list(items)
    return [*items, *prepare_all([r for r in runs if r.source in sources], UNCALIBRATED, unpredictable)]


def folds(protocol: str, items: Sequence[PreparedRun]) -> list[Fold]:
    """The protocol's folds over prepared runs: what each fit trains on and what it predicts."""
    if protocol == "forward":
        return _forward(items)
    if protocol == "generation":
        return _leave_one_out(items, lambda i: i.family)
    if protocol == "precision":
        return _leave_one_out(items, lambda i: i.run.format)
    if protocol == "scale":
        return _scale(items)
    if protocol == "length":
        return _length(items)
    if protocol == "stack":
        return _stack(items)
    raise PerfmodelError(f"--protocol {protocol}: unknown; valid: {', '.join(PROTOCOLS)}")


@dataclass(frozen=True)
class HeldOut:
    """One row predicted by a fit that never saw it."""

    item: PreparedRun
    fold: str
    residual: cal.Residual

    @property
    def predicted(self) -> float:
        return self.item.run.measured * math.exp(self.item.time_sign * self.residual.log_time_ratio)

    @property
    def error_pct(self) -> float:
        return (self.predicted / self.item.run.measured - 1) * 100

    def to_dict(self) -> dict[str, Any]:
        run = self.item.run
        return {
            "id": run.id, "fold": self.fold, "source": run.source, "detail": run.detail,
            "model": self.item.context.model.id, "accelerator": run.accelerator, "family": self.item.family,
            "n_gpus": run.n_gpus, "precision": run.precision, "format": run.format, "released": run.released,
            "layout": self.item.layout.describe(), "metric": run.metric, "measured": run.measured,
            "predicted": self.predicted, "error_pct": self.error_pct,
            "time_error_pct": self.residual.error_pct,
        }  # fmt: skip


@dataclass(frozen=True)
class FoldResult:
    fold: Fold
    rows: list[HeldOut]
    fitted_families: list[str]
    parameters: dict[str, float]
    """The fold's fitted values: with them the accuracy gate re-prices its test rows without refitting."""

    @property
    def mape_pct(self) -> float:
        return _mape(self.rows)

    def to_dict(self) -> dict[str, Any]:
        tested = sorted({i.family for i in self.fold.test})
        return {
            "name": self.fold.name,
            "train_rows": len(self.fold.train),
            "test_rows": len(self.fold.test),
            "mape_pct": self.mape_pct,
            "test_families": tested,
            "test_families_at_defaults": [f for f in tested if f not in self.fitted_families],
        }


@dataclass(frozen=True)
class ProtocolResult:
    protocol: str
    folds: list[FoldResult]

    @property
    def rows(self) -> list[HeldOut]:
        return [row for fold in self.folds for row in fold.rows]

    @property
    def mape_pct(self) -> float:
        return _mape(self.rows)

    @property
    def residuals(self) -> list[cal.Residual]:
        return [row.residual for row in self.rows]

    def to_dict(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "definition": DEFINITIONS[self.protocol],
            "folds": [f.to_dict() for f in self.folds],
            "rows": [r.to_dict() for r in self.rows],
            "mape_pct": self.mape_pct,
        }


def _mape(rows: Sequence[HeldOut]) -> float:
    return sum(abs(r.error_pct) for r in rows) / len(rows) if rows else float("nan")


def evaluate(
    protocol: str,
    items: Sequence[PreparedRun],
    progress: Callable[[str], None] = lambda _: None,
    fits: dict[tuple[str, ...], dict[str, float]] | None = None,
) -> ProtocolResult:
    """Fit each fold on its training rows (from the physical defaults) and predict its test rows. `fits`: fits from
    the physical defaults by their training rows' ids in order, shared by folds and protocols that train on the same
    rows (the length and stack protocols' folds on every fitted row are calibration's own fit): the same rows in the
    same order give the same fit, so it is made once."""
    results = []
    fits = {} if fits is None else fits
    plan = folds(protocol, items)
    if not plan:
        raise PerfmodelError(f"--protocol {protocol}: no rows to hold out among the {len(items)} selected")
    for number, fold in enumerate(plan, start=1):
        progress(f"{protocol} {number}/{len(plan)}: {fold.name} ({len(fold.train)} train, {len(fold.test)} test)")
        key = cal.run_ids(fold.train)
        if key not in fits:
            fits[key] = cal.fit(fold.train, RunBatch, _profile, _formats).parameters if fold.train else {}
        results.append(held_out(fold, fits[key]))
    return ProtocolResult(protocol, results)


def repriced(protocol: str, items: Sequence[PreparedRun], stored: Sequence[dict[str, Any]]) -> ProtocolResult:
    """The protocol's held-out rows priced by the model as it is now with each fold's stored fitted values (a
    calibration's `protocols.P.folds`), without refitting: what the accuracy gate checks where refits take long."""
    values = {fold["name"]: fold["parameters"] for fold in stored}
    return ProtocolResult(protocol, [held_out(fold, values[fold.name]) for fold in folds(protocol, items)])


def held_out(fold: Fold, values: dict[str, float]) -> FoldResult:
    """The fold's test rows predicted with a fit's values."""
    residuals = cal.predict(values, fold.test, RunBatch, _profile, _named(fold.name))
    rows = [HeldOut(i, fold.name, r) for i, r in zip(fold.test, residuals, strict=True)]
    return FoldResult(fold, rows, _fitted_families(values), values)


def provenance(results: Iterable[ProtocolResult], items: Sequence[PreparedRun]) -> dict[str, Any]:
    """What a calibration file keeps of the protocols: per protocol its folds, MAPE and the 80% interval of its
    held-out residuals; and the ground the fit covers (formats and largest GPU count per family), which picks the
    protocol matching a question (physics.calibration.Calibration.protocol_for)."""
    formats: dict[str, set[str]] = {}
    max_gpus: dict[str, int] = {}
    for i in items:
        formats.setdefault(i.family, set()).add(i.run.format)
        max_gpus[i.family] = max(max_gpus.get(i.family, 0), i.run.n_gpus)
    summaries = {
        r.protocol: {
            "definition": DEFINITIONS[r.protocol],
            "rows": len(r.rows),
            "mape_pct": r.mape_pct,
            "folds": [_fold_summary(fold) for fold in r.folds],
            "interval": cal.interval(r.residuals),
        }
        for r in results
    }
    coverage = {"formats": {f: sorted(v) for f, v in sorted(formats.items())}, "max_gpus": max_gpus}
    return {"protocols": summaries, "coverage": coverage}


def _fold_summary(fold: FoldResult) -> dict[str, Any]:
    record = fold.to_dict()
    return {k: record[k] for k in ("name", "train_rows", "test_rows", "mape_pct")} | {"parameters": fold.parameters}


def _fitted_families(values: dict[str, float]) -> list[str]:
    """Families with generation factors of their own in a fit (the others take their vendor's shared values)."""
    found = set()
    for key in values:
        item = table.entry(key)
        if item is not None and item.parameter.scope == "family":
            found.add(item.scope_value)
    return sorted(found)


def _named(fold: str) -> Callable[[Any], str]:
    """The held-out group of every row of a fold: the fold's name."""
    return lambda _: fold


def fitted_items(runs: Sequence[MeasuredRun], excluded: Sequence[Exclusion] = ()) -> list[PreparedRun]:
    """The rows calibration fits (the MoE rows are validated, not fitted), prepared with the physical defaults."""
    unpredictable: list[dict[str, str]] = [{"id": e.id, "reason": e.reason} for e in excluded]
    return prepare_all([r for r in runs if fitted_densely(r)], UNCALIBRATED, unpredictable)


def run(
    protocol: str,
    runs: Sequence[MeasuredRun],
    excluded: Sequence[Exclusion] = (),
    progress: Callable[[str], None] = lambda _: None,
) -> ProtocolResult:
    if protocol not in PROTOCOLS:
        raise PerfmodelError(f"--protocol {protocol}: unknown; valid: {', '.join(PROTOCOLS)}")
    items = fitted_items(runs, excluded)
    if not items:
        raise PerfmodelError(f"--protocol {protocol}: none of the selected rows is one calibration fits")
    unpredictable: list[dict[str, str]] = [{"id": e.id, "reason": e.reason} for e in excluded]
    return evaluate(protocol, with_tested(protocol, items, runs, unpredictable), progress)
