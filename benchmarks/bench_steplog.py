"""Training-log reading speed: `perfmodel validate --logs` on a large Megatron and torchtitan log, in MB/s, against a
plain pass over the same file's lines in the same run (the floor any line-by-line reader pays).

Run: python benchmarks/bench_steplog.py [--mb 256]. Writes each log under a temporary folder (iteration lines among
ten times as many other lines, as a real run's output has), reads it with fitting.steplog.read_steps, and prints CPU
time per MB, MB/s and the ratio to the plain pass, and the reader's peak memory growth (tracemalloc: bounded, one
number per logged step). The issue asks >= 50 MB/s on a 1 GB log. Not a test.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from perfmodel.fitting.steplog import read_steps

OTHER = b"[2026-03-02 10:00:00] INFO some other line a real run prints, e.g. a timer or a checkpoint note ....\n"
MEGATRON = (
    " [2026-03-02 10:00:00] iteration {:8d}/{:8d} | consumed samples: {:12d} | elapsed time per iteration (ms): "
    "{:.1f} | throughput per GPU (TFLOP/s/GPU): 431.2 | learning rate: 3.000000E-04 | global batch size:    64 | "
    "lm loss: 2.500000E+00 | loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of "
    "nan iterations:   0 |\n"
)
TITAN = (
    "[rank0]:[titan] 2026-03-02 10:00:00,000 - root - INFO - \033[31mstep: {}  \033[32mloss:  2.3456  \033[33m"
    "grad_norm:  0.9876  \033[36mmemory: 61.23GiB(64.45%)  \033[34mtps: {:,}  \033[36mtflops: 407.20  \033[35mmfu: "
    "41.17%\033[39m\n"
)


def write(path: Path, megabytes: int, line: str) -> None:
    with path.open("wb") as handle:
        step = 0
        while handle.tell() < megabytes * 1_000_000:
            step += 1
            handle.write(OTHER * 10)
            handle.write(line.format(step, 10**9, step * 64, 6301.5 + step % 7).encode() if "iteration" in line
                         else line.format(step, 8400 + step % 7).encode())  # fmt: skip


def cpu(fn: Callable[[Path], object], path: Path) -> float:
    start = time.process_time()
    fn(path)
    return time.process_time() - start


def plain(path: Path) -> None:
    with path.open("rb") as handle:
        for _ in handle:
            pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=256)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for name, line in (("megatron", MEGATRON), ("torchtitan", TITAN)):
            path = Path(folder) / f"{name}.log"
            write(path, args.mb, line)
            size_mb = path.stat().st_size / 1e6
            base = min(cpu(plain, path) for _ in range(2))
            tracemalloc.start()
            reader = cpu(read_steps, path)
            peak_mb = tracemalloc.get_traced_memory()[1] / 1e6
            tracemalloc.stop()
            reader = min(reader, cpu(read_steps, path))
            print(
                f"{name}: {size_mb:,.0f} MB, {size_mb / reader:,.0f} MB/s ({reader:.2f} s CPU; plain line pass "
                f"{size_mb / base:,.0f} MB/s, ratio {reader / base:.2f}x), peak traced memory {peak_mb:,.1f} MB"
            )
            path.unlink()


if __name__ == "__main__":
    main()
