"""Fit the loss stage of the bundled calibration on the bundled published whole runs and print each run's error, in
sample and left out (the straggler share refitted without it).

The dense parameters of the bundled calibration are held fixed: the stage prices each run with them and fits one
number, the straggler share (planning/losses.py). With --write its result replaces the 'losses' section of
perfmodel/data/calibration.json (nothing else in the file changes): rerun it after a dense refit.

Run: python scripts/whole_runs_leave_one_out.py [--write] (a few seconds).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

from perfmodel.fitting.whole_runs import bundled_whole_runs, stage
from perfmodel.physics import calibration


def main(write: bool) -> int:
    result = stage(bundled_whole_runs(), calibration.bundled())
    for row in result.residuals():
        print(
            f"{row['id']:24s} {row['basis']:6s} published {row['measured']:>11,.0f}  predicted "
            f"{row['predicted']:>11,.0f} {row['error_pct']:+6.1f}%  left out {row['held_out_error_pct']:+6.1f}% (share "
            f"{row['held_out_straggler_share']:.3f})"
        )
    print(
        f"straggler share {result.share:.3f}; MAPE {result.mape_pct():.1f}% (mean {result.mean_error_pct():+.1f}%), "
        f"left out {result.mape_pct(held_out=True):.1f}% (mean {result.mean_error_pct(held_out=True):+.1f}%)"
    )
    if write:
        document = json.loads(calibration.BUNDLED.read_text())
        document["losses"] = result.section() | {"created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
        calibration.BUNDLED.write_text(calibration.dumps(document))
    return 0


if __name__ == "__main__":
    raise SystemExit(main("--write" in sys.argv[1:]))
