"""Speed of a user calibration (fitting/user.py): fitting five rows of one cluster (alone and with the bundled rows of
its family), and one prediction under it against the same prediction under the bundled calibration given as a file
too (a calibration named by path is stat-ed and remembered per prediction: ~1.3x the bundled one's own, whatever it
holds), on the family it fitted (H100) and on one it did not (GB300), alternating.

Run: python benchmarks/bench_user_calibration.py [--repeat N]. Prints medians and ratios; not a test.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from bench_predict import median_us

ROWS = Path(__file__).resolve().parents[1] / "tests" / "user_runs.csv"
"""tests/test_user_calibration.py's rows: five H100 rows of measured_runs.csv, each time x1.15."""


def alternating(first: Callable[[], object], second: Callable[[], object], repeat: int) -> tuple[float, float, float]:
    """Median times of `first` and `second` run in turn, and the median of their ratios pair by pair."""
    pairs = [(median_us(first, 1) / 1e6, median_us(second, 1) / 1e6) for _ in range(repeat)]
    return (statistics.median(a for a, _ in pairs), statistics.median(b for _, b in pairs),
            statistics.median(a / b for a, b in pairs))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=200)
    repeat = parser.parse_args().repeat

    from perfmodel.fitting import user
    from perfmodel.fitting.runs import bundled_runs, read_runs_csv
    from perfmodel.inputs.scenario import load_scenario
    from perfmodel.physics.calibration import bundled
    from perfmodel.planning.predict import predict

    folder = Path(tempfile.mkdtemp())
    runs = read_runs_csv(ROWS)
    theirs = bundled_runs()[0]
    fitted = user.calibrate(runs, [], bundled())
    alone = median_us(lambda: user.calibrate(runs, [], bundled()), 3) / 1e6
    together = median_us(lambda: user.calibrate(runs, [], bundled(), theirs), 3) / 1e6
    print(f"calibrate 5 rows: {alone:.2f} s; with the bundled rows of their family: {together:.2f} s (median of 3)")
    (folder / "cal.json").write_text(fitted.to_json())
    (folder / "bundled.json").write_text(bundled().to_json())
    for gpu in ("h100-sxm", "gb300"):
        base = load_scenario(None, {"gpu": gpu, "calibration": str(folder / "bundled.json")})
        mine = load_scenario(None, {"gpu": gpu, "calibration": str(folder / "cal.json")})
        predict(base), predict(mine)  # warm
        user_s, base_s, ratio = alternating(partial(predict, mine), partial(predict, base), repeat)
        print(f"predict() on {gpu}: user calibration {user_s * 1e6:.0f} us, bundled (as a file) {base_s * 1e6:.0f} "
              f"us, ratio {ratio:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
