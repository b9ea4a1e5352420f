"""A layouts sweep against the same layouts predicted one by one, in one run, and a million-point sweep written out.

Run: python benchmarks/bench_sweep.py [--sample N] [--million]. The first figures price sweeps/70b-layouts.toml (2
points x 3,840 given layouts) as arrays (`layout_sweep.run`, in process) and predict a sample of the same layouts
one at a time, as a points sweep does (`sweep.run_point`: scenario, context, check, prediction), both in CPU time
per point; the ratio is the speed-up. `--million` also times `perfmodel sweep` on a 1,000,000-point file written to
CSV and JSON (wall and CPU time, the largest peak memory of the runs so far, the file's size). Not a test.
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MILLION = """
# 4 points x 250,000 layouts = 1,000,000 points (most break a rule: DP and CP are crossed with everything)
[sweep]
models = ["llama3.1-70b"]
gpus = ["h100-sxm", "b200"]
precisions = ["fp8"]
n_gpus = [1024]
whatifs = [{}, { nic_gbps = "x2" }]
[sweep.set]
tokens = 15e12
parallelism = { seq_len = 8192, recompute = "selective" }
[sweep.layouts]
tp = [1, 2, 4, 8]
cp = [1, 2, 4, 8, 16]
pp = [1, 2, 4, 8, 16]
vp = [1, 2, 4, 5, 10]
mbs = [1, 2, 4, 8, 16]
gbs = [256, 512, 1024, 2048, 4096]
zero = [0, 1, 2, 3]
dp = [32, 64, 128, 256, 512]
"""


def arrays_vs_points(sample: int) -> None:
    from perfmodel.physics.parallel import RECOMPUTE_MODES
    from perfmodel.planning import layout_sweep
    from perfmodel.planning.sweep import Point, load, run_point

    sweep = load(ROOT / "sweeps" / "70b-layouts.toml")
    start = time.process_time()
    rows = sum(len(columns["error"]) for columns in layout_sweep.run(sweep))
    arrays_s = (time.process_time() - start) / rows
    picks = random.Random(15).sample(range(sweep.size), sample)  # noqa: S311 (a reproducible sample)
    points = []
    for row in picks:
        point, at = sweep.points[row // sweep.layouts], row % sweep.layouts
        chosen = layout_sweep._axis_columns(layout_sweep.Chunk(point, sweep.axes, at, at + 1))
        given = {f"parallelism.{k}": RECOMPUTE_MODES[int(v[0])] if k == "recompute" else int(v[0])
                 for k, v in chosen.items()}  # fmt: skip
        points.append(Point(point.base, {**point.overrides, **given}, point.gpu, point.system, point.settings))
    start = time.process_time()
    for point in points:
        run_point(point)
    single_s = (time.process_time() - start) / len(points)
    print(f"{'layouts sweep, CPU us per point (arrays)':52s} {arrays_s * 1e6:12,.1f}")
    print(f"{'same layouts one by one, CPU us per point':52s} {single_s * 1e6:12,.1f}")
    print(f"{'speed-up':52s} {single_s / arrays_s:12,.1f}")


def million() -> None:
    folder = Path(tempfile.mkdtemp())
    (folder / "million.toml").write_text(MILLION)
    for suffix in ("csv", "json"):
        out = folder / f"rows.{suffix}"
        command = [sys.executable, "-m", "perfmodel", "sweep", str(folder / "million.toml"), "--out", str(out), "-j1"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        print(f"{'1,000,000 points to ' + suffix + ': wall s, CPU s, peak MB, file MB':52s} {wall:8.1f} {cpu:8.1f} "
              f"{after.ru_maxrss / 1024:8.0f} {out.stat().st_size / 1e6:8.0f}")  # fmt: skip
        out.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=300, help="layouts predicted one by one (default 300)")
    parser.add_argument("--million", action="store_true", help="also write a 1,000,000-point sweep (minutes)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    arrays_vs_points(args.sample)
    if args.million:
        million()


if __name__ == "__main__":
    main()
