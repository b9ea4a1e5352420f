"""Speed of the kernel stages fitted on measured microbenchmarks: the collectives' (physics.collective_kernels) and
the HBM-bound kernels' (physics.memory_kernels): reading the bundled rows, one fit, the leave-one-out error, and one
row's price.

Run: python benchmarks/bench_kernel_stages.py [--repeat N]. Prints medians; not a test.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from bench_predict import median_us


def _stage(name: str, read: Callable[[], Any], price_one: Callable[[], Any], fit: Callable[[], Any],
           held_out: Callable[[], Any], held_out_name: str, repeat: int) -> None:  # fmt: skip
    """Time one stage's steps (the row reader's cache bypassed, the hardware caches warmed by one price first)."""
    rows = read()
    price_one()
    timings = {
        f"read {len(rows):,} rows, ms": median_us(read, repeat) / 1e3,
        "price one row, us": median_us(price_one, 200 * repeat),
        "fit, s": median_us(fit, repeat) / 1e6,
        f"{held_out_name}, s": median_us(held_out, 1) / 1e6,
    }
    print(name)
    for label, value in timings.items():
        print(f"  {label:<45}{value:10.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat

    from perfmodel.inputs.kernels import collective_kernels, memory_kernels
    from perfmodel.physics import collective_kernels as collectives
    from perfmodel.physics import memory_kernels as memory
    from perfmodel.physics.efficiency import KERNEL_MEMORY

    links = collective_kernels()
    _stage("collectives", collective_kernels.__wrapped__, lambda: collectives.predicted_s(links[0]),
           lambda: collectives.fit(links), lambda: collectives.leave_one_system_out(links), "leave-one-system-out",
           repeat)  # fmt: skip
    kernels = memory_kernels()
    share = KERNEL_MEMORY[memory.family(kernels[0])]
    _stage("HBM-bound kernels", memory_kernels.__wrapped__, lambda: memory.predicted_s(kernels[0], share),
           lambda: memory.fit(kernels), lambda: memory.leave_one_gpu_out(kernels), "leave-one-GPU-out",
           repeat)  # fmt: skip


if __name__ == "__main__":
    main()
