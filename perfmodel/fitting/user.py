"""A user's calibration: the bundled one, with only the parameters a user's own rows identify refitted on them, for
the accelerator families those rows ran on.

A handful of rows from one cluster cannot inform a dozen parameters: fitting them all from their physical defaults
moved every family's predictions (GB300, never in the rows, by 9.7%) and made an interval from residuals of another
fit. So a user calibration starts from the bundled calibration and
- fits a parameter only if the rows see it (a 10% change moves their times by at least SEEN on average), it is not
  confounded with one already chosen on those rows (INDEPENDENT), and the rows allow it: ROWS_PER_PARAMETER rows per
  fitted parameter, fewer rows than that is refused; every other parameter keeps the bundled value, and the
  calibration says why;
- scopes the fitted values to the families of the rows (Calibration.scoped), unless asked to apply them everywhere;
- takes its interval on those families from the rows each predicted by a fit without it (leave one row out), so that
  it is centred on the fit it qualifies;
- with the bundled rows (`with_bundled`), fits on the bundled rows of the same families as well, each user row
  weighing as much as all the bundled rows of its family together: under the fit's robust (L1-like) loss, the user's
  rows then decide their own cluster, and the bundled rows only inform what they leave open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perfmodel.errors import PerfmodelError
from perfmodel.fitting import calibrate as cal
from perfmodel.fitting import evidence
from perfmodel.fitting.runs import MeasuredRun
from perfmodel.fitting.validation import PreparedRun, RunBatch, _formats, _group, _profile, fitted_densely, prepare_all
from perfmodel.inputs.environment import source_date
from perfmodel.inputs.hardware import get_accelerator
from perfmodel.physics import parameters as table
from perfmodel.physics.calibration import Calibration

ROWS_PER_PARAMETER = 5
"""Rows per fitted parameter: with fewer, the fit follows the rows' noise as readily as their cluster."""
SEEN = 0.01
"""Mean |change of log time| over the rows for a 10% change of a parameter below which the rows do not see it."""
INDEPENDENT = 0.3
"""Share of a parameter's effect on the rows left once the chosen parameters' are removed (Gram-Schmidt) below which
it is confounded with them: the rows cannot tell the two apart."""
PRIOR_SIGMA = 1.0
"""Spread of the fitted parameters' priors on log(value / bundled value): wide, so that the rows decide (the
parameters fitted are those they identify; the bundled fit's own priors, ~0.2, would hold them half-way)."""
NOT_FITTED = "not fitted: a whole run (metric gpu_hours) informs the loss stage, which a user calibration keeps"
WEIGHT_RULE = "each of your rows weighs as much as all the bundled rows of its accelerator family together"


@dataclass(frozen=True)
class Choice:
    """The entries a user's rows identify, and why each other entry they could inform stays at the bundled value."""

    fitted: list[str]
    kept: dict[str, str]


def effects(items: Sequence[PreparedRun], base: Calibration, keys: Sequence[str]) -> dict[str, Any]:
    """Per entry, the change of each row's log time for a 10% change of the entry from its bundled value."""
    values = base.parameters
    batch = RunBatch(items)
    at = batch.log_time_ratios(cal.efficiencies_of(values))
    found = {}
    for key in keys:
        item = table.entry(key)
        now = values.get(key, item.default if item else 1.0)
        found[key] = batch.log_time_ratios(cal.efficiencies_of(values | {key: now * 1.1})) - at
    return found


def choose(effect: dict[str, Any], rows: int) -> Choice:
    """The entries to fit: greedily the one with the largest effect not explained by those chosen, while it is seen,
    independent and within the row budget."""
    import numpy as np

    budget = rows // ROWS_PER_PARAMETER
    left = {k: np.asarray(v, dtype=float) for k, v in effect.items()}
    chosen: list[tuple[str, Any]] = []
    kept: dict[str, str] = {}
    for key, column in left.items():
        moved = float(np.mean(np.abs(column)))
        if moved < SEEN:
            kept[key] = f"not seen by your rows (a 10% change moves their times by {moved * 100:.2f}% on average)"
    candidates = [k for k in left if k not in kept]
    while candidates:
        rest = {k: _residual(left[k], [c for _, c in chosen]) for k in candidates}
        key = max(candidates, key=lambda k: float(np.linalg.norm(rest[k])))
        candidates.remove(key)
        share = float(np.linalg.norm(rest[key]) / np.linalg.norm(left[key]))
        if share < INDEPENDENT:
            names = ", ".join(k for k, _ in chosen)
            kept[key] = f"confounded with {names} on your rows ({share * 100:.0f}% of its effect is its own)"
        elif len(chosen) >= budget:
            kept[key] = (f"beyond what {rows} rows can fit ({ROWS_PER_PARAMETER} rows per parameter: at most "
                         f"{budget})")  # fmt: skip
        else:
            chosen.append((key, rest[key]))
    return Choice([k for k, _ in chosen], kept)


def _residual(column: Any, basis: Sequence[Any]) -> Any:
    """`column` less its projection on the (orthogonal) `basis`."""
    import numpy as np

    for b in basis:
        column = column - b * float(np.dot(column, b) / np.dot(b, b))
    return column


def calibrate(
    runs: Sequence[MeasuredRun],
    excluded: Sequence[Any],
    base: Calibration,
    bundled: Sequence[MeasuredRun] = (),
    everywhere: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> Calibration:
    """`base` refitted on the user's `runs` (and the `bundled` rows of their families, weighted: WEIGHT_RULE), as
    the module says."""
    unpredictable: list[dict[str, str]] = [{"id": e.id, "reason": e.reason} for e in excluded]
    unpredictable += [{"id": r.id, "reason": NOT_FITTED} for r in runs if not fitted_densely(r)]
    mine = prepare_all([r for r in runs if fitted_densely(r)], base, unpredictable)
    if len(mine) < ROWS_PER_PARAMETER:
        raise PerfmodelError(
            f"{len(mine)} of your rows can be fitted; a calibration needs {ROWS_PER_PARAMETER} rows per parameter it "
            "fits: add rows, or compare your runs with `perfmodel validate` (--data or --logs)"
        )
    families = sorted({i.family for i in mine})
    same = [r for r in bundled if fitted_densely(r) and get_accelerator(r.accelerator).family in families]
    theirs = prepare_all(same, base, [])
    keys = [e.key for e in cal.free_entries(mine, _profile, _formats)]
    choice = choose(effects(mine, base, keys), len(mine))
    if not choice.fitted:
        why = "; ".join(f"{k}: {v}" for k, v in choice.kept.items())
        raise PerfmodelError(f"your rows identify no parameter to fit ({why}): the bundled calibration stands")
    progress(f"fitting {', '.join(choice.fitted)} on {len(mine)} rows of {', '.join(families)}")
    weight = {f: max(1.0, float(sum(i.family == f for i in theirs))) for f in families}
    items = [*mine, *theirs]
    weights = [weight[i.family] for i in mine] + [1.0] * len(theirs)

    def fit(rows: Sequence[PreparedRun], row_weights: Sequence[float], start: Calibration) -> dict[str, float]:
        return cal.fit(rows, RunBatch, _profile, _formats, start, prior_sigma=PRIOR_SIGMA, fixed=base.parameters,
                       only=choice.fitted, centre=base.parameters, weights=row_weights).parameters  # fmt: skip

    fitted = fit(items, weights, base)
    near = replace(base, parameters=base.parameters | fitted)  # where each fit without one row starts: fewer steps
    before = cal.predict(base.parameters, mine, RunBatch, _profile, _group)
    after = cal.predict(base.parameters | fitted, mine, RunBatch, _profile, _group)
    held: list[cal.Residual] = []
    for k, item in enumerate(mine):
        progress(f"leaving out {item.run.id} ({k + 1}/{len(mine)})")
        rest = [i for i in items if i is not item]
        values = fit(rest, [w for i, w in zip(items, weights, strict=True) if i is not item], near)
        held += cal.predict(base.parameters | values, [item], RunBatch, _profile, _group)
    section = {
        "method": "fitting/user.py: the bundled calibration, with the parameters your rows identify refitted on "
        "them (soft-L1 least squares, priors centred on the bundled values)"
        + (f", with the bundled rows of their families ({WEIGHT_RULE})" if theirs else ""),
        "families": families,
        "applied_to": "every family" if everywhere else "these families only",
        "rows": [i.run.id for i in mine],
        "bundled_rows": len(theirs),
        "weights": weight if theirs else {},
        "fitted": {k: {"bundled": base.parameters.get(k), "fitted": v} for k, v in fitted.items()},
        "at_bound": cal.at_bound(fitted),
        "kept": choice.kept,
        "rows_per_parameter": ROWS_PER_PARAMETER,
        "mape_before_pct": cal.mape(before),
        "mape_after_pct": cal.mape(after),
        "leave_one_out_mape_pct": cal.mape(held),
        "residuals": [
            {
                "id": b.run_id,
                "error_before_pct": round(b.error_pct, 3),
                "error_pct": round(a.error_pct, 3),
                "held_out_error_pct": round(h.error_pct, 3),
            }
            for b, a, h in zip(before, after, held, strict=True)
        ],
        "interval": cal.interval(held),
        "excluded": unpredictable,
    }
    rows = base.provenance.get("evidence", {}).get("rows", [])
    created = (source_date() or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    section["base"] = {"source": base.source, "created": base.provenance.get("created")}
    provenance = base.provenance | {"created": created, "user": section}
    if "evidence" in base.provenance:
        provenance["evidence"] = base.provenance["evidence"] | {"rows": rows + [evidence.row(i) for i in mine]}
    if everywhere:
        return replace(base, parameters=base.parameters | fitted, provenance=provenance, source="fitted")
    return replace(base, provenance=provenance, source="fitted", scoped={f: dict(fitted) for f in families})


def calibration_from(
    data: str | Path | None,
    only: str | None = None,
    with_bundled: bool = False,
    everywhere: bool = False,
    cross_validate: bool = True,
    progress: Callable[[str], None] = lambda _: None,
    logged: Sequence[MeasuredRun] = (),
    note: Callable[[str], None] = lambda _: None,
) -> Calibration:
    """What `perfmodel calibrate` (and the API's) writes: with `data` (a runs CSV) or `logged` runs (read from
    training or MLPerf logs), the user calibration of those rows over the bundled one; with neither, the bundled fit
    refitted on the bundled rows (`cross_validate`: with its held-out errors and protocol intervals). `note` hears of
    the CSV's ignored columns (fitting.runs.read_runs_csv)."""
    from perfmodel.fitting.runs import bundled_runs, collect_runs
    from perfmodel.fitting.validation import fit_calibration
    from perfmodel.physics.calibration import bundled

    own = data is not None or bool(logged)
    if (with_bundled or everywhere) and not own:
        flag = "with-bundled" if with_bundled else "everywhere"
        raise PerfmodelError(f"{flag} applies to your rows: give a runs CSV (--data) or logs")
    runs, excluded = collect_runs(data, logged, only=only, with_bundled=not own, note=note)
    if not own:
        return fit_calibration(runs, excluded, cross_validate, progress)
    return calibrate(runs, excluded, bundled(), bundled_runs()[0] if with_bundled else (), everywhere, progress)
