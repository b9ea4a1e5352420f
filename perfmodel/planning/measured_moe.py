"""How the bundled MoE rows of a prediction's zoo model on its accelerator family read as perfmodel prices them.

The MoE interval (x0.87-x1.43 on a time) pools every MoE model; a model whose own rows on that GPU family read far
off (GPT-OSS-120B on Blackwell: a cost the model lacks, docs/moe_validation.md) should say so in the prediction
itself. The calibration's MoE stage keeps each row it prices with its held-out error ('moe.fit.priced_rows',
fitting/calibrate.py moe_stage); files written before it have none, and give no note.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.scenario import Scenario
from perfmodel.physics.calibration import Calibration
from perfmodel.planning.evidence import family_name

FIELD = "moe.fit.priced_rows"
DOC = "docs/moe_validation.md"


@dataclass(frozen=True)
class MeasuredRows:
    """A zoo model's bundled rows on one accelerator family: each row's held-out throughput error (predicted /
    measured tokens/s - 1, %: positive is too fast), and whether the MoE stage fits them (else validated only)."""

    zoo_model: str
    family: str
    errors_pct: tuple[float, ...]
    fitted: bool

    @property
    def median_pct(self) -> float:
        return statistics.median(self.errors_pct)

    def to_dict(self) -> dict[str, Any]:
        """The `moe` record's fields (outputs/record.py)."""
        return {
            "measured_rows": len(self.errors_pct),
            "measured_error_pct_median": self.median_pct,
            "measured_min_error_pct": min(self.errors_pct),
            "measured_max_error_pct": max(self.errors_pct),
        }

    def note(self) -> str:
        """One line for the prediction table: how many rows, and how far off this model read them."""
        median = self.median_pct
        way = " too fast" if median >= 0.5 else " too slow" if median <= -0.5 else ""  # by the rounded sign
        shown = f"{median:+.0f}%" if way else f"{median:+.1f}%"
        held = "predicted by the MoE fit without its model" if self.fitted else "held out of the fit"
        runs = len(self.errors_pct)
        where = f"{runs} measured run{'s' if runs > 1 else ''} of {self.zoo_model} on {family_name(self.family)}"
        spread = f" ({min(self.errors_pct):+.0f}% to {max(self.errors_pct):+.0f}%)" if runs > 1 else ""
        read = f"read median {shown}{spread}" if runs > 1 else f"reads {shown}"
        priced = "as perfmodel prices them (each at its own recipe's settings)"
        return f"Note: {where} (bundled, {held}) {read}{way} {priced}: {DOC}"


def zoo_model(scenario: Scenario) -> str | None:
    """The zoo model a scenario prices: its model id, or the zoo entry its [model] table starts from (None: none)."""
    model = scenario.model
    return model if isinstance(model, str) else model.base


def measured_rows(fitted: Calibration, scenario: Scenario, family: str) -> MeasuredRows | None:
    """The calibration's priced MoE rows of the scenario's zoo model on `family`, or None when it holds none (or is
    a file written before the stage kept them)."""
    model = zoo_model(scenario)
    rows = _priced_rows(fitted)
    mine = [r for r in rows if r["zoo_model"] == model and r["family"] == family]
    if model is None or not mine:
        return None
    errors = tuple(float(r["held_out_throughput_error_pct"]) for r in mine)
    return MeasuredRows(model, family, errors, all(r["fitted"] for r in mine))


def _priced_rows(fitted: Calibration) -> list[dict[str, Any]]:
    """The file's priced rows, checked: a user's file with a malformed list is a one-line error."""
    moe = fitted.provenance.get("moe")
    fit = moe.get("fit") if isinstance(moe, dict) else None
    rows = fit.get("priced_rows", []) if isinstance(fit, dict) else []
    if isinstance(rows, list) and all(_row_ok(r) for r in rows):
        return rows
    raise PerfmodelError(
        f"{fitted.source}: field '{FIELD}' must list rows with 'zoo_model' and 'family' (text), 'fitted' (true/false)"
        " and a finite 'held_out_throughput_error_pct'"
    )


def _row_ok(row: object) -> bool:
    if not isinstance(row, dict):
        return False
    error = row.get("held_out_throughput_error_pct")
    number = isinstance(error, int | float) and not isinstance(error, bool) and math.isfinite(error)
    text = isinstance(row.get("zoo_model"), str) and isinstance(row.get("family"), str)
    return number and text and isinstance(row.get("fitted"), bool)
