"""What `perfmodel calibrate --data` prints: what a user's rows refitted, what they left alone and why, and how their
rows' error moved (fitting/user.py)."""

from __future__ import annotations

from typing import Any

from perfmodel.outputs.columns import tabulated
from perfmodel.outputs.report import _exclusions, parameter_figure
from perfmodel.physics.calibration import USER_PROTOCOL, around_point


def user_calibration_table(fitted: Any) -> str:
    """The fitted parameters against the bundled values, the parameters kept and why, and the rows' error before
    and after, in sample and left out."""
    user = fitted.provenance["user"]
    families = ", ".join(user["families"])
    where = "every family" if user["applied_to"] == "every family" else f"{families} only"
    rows = [[k, parameter_figure(v["bundled"]) if v["bundled"] is not None else "default",
             parameter_figure(v["fitted"]), where] for k, v in user["fitted"].items()]  # fmt: skip
    lines = [tabulated(rows, headers=["parameter", "bundled", "fitted", "applies to"], disable_numparse=True), ""]
    if user["at_bound"]:
        lines.append(
            f"At a bound of its physical range (a missing mechanism, not a result): {', '.join(user['at_bound'])}"
        )
    lines.append(f"Kept at the bundled calibration's values ({len(user['kept'])}):")
    lines += [f"  {key}: {why}" for key, why in user["kept"].items()]
    if user["weights"]:
        each = ", ".join(f"{f} {w:g}" for f, w in user["weights"].items())
        lines.append(f"Fitted with {user['bundled_rows']} bundled rows of {families}; each of your rows weighs as much "
                     f"as all of its family's together ({each})")  # fmt: skip
    low, high, _ = around_point(user["interval"], USER_PROTOCOL)
    lines += [
        f"Your {len(user['rows'])} rows: MAPE of the predicted time {user['mape_before_pct']:.1f}% with the bundled "
        "calibration, "
        f"{user['mape_after_pct']:.1f}% fitted, {user['leave_one_out_mape_pct']:.1f}% each left out of the fit",
        f"80% interval on a predicted time on {families}: x{low:.3f} to x{high:.3f} ({USER_PROTOCOL}); every other "
        "family keeps the bundled intervals"
        + (" (and, with --everywhere, the fitted values)" if user["applied_to"] == "every family" else ""),
        "(errors of the predicted time, which the fit minimises; `perfmodel validate --data|--logs ... --calibration "
        "FILE` shows each row before and after in its own metric, so a throughput row's error there is 1/(1+e)-1 of "
        "its time error e)",
    ]
    lines += _exclusions(user["excluded"], "the calibration file's user.excluded lists each")
    return "\n".join(lines)
