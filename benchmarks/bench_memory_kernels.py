"""Speed of the memory kernel stage: reading the bundled rows, one fit (physics.memory_kernels.fit) and the
leave-one-GPU-out error, and one row's price.

Run: python benchmarks/bench_memory_kernels.py [--repeat N]. Prints medians; not a test.
"""

from __future__ import annotations

import argparse

from bench_predict import median_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat

    from perfmodel.inputs.kernels import memory_kernels
    from perfmodel.physics.efficiency import KERNEL_MEMORY
    from perfmodel.physics.memory_kernels import family, fit, leave_one_gpu_out, predicted_s

    read = median_us(lambda: memory_kernels.__wrapped__(), repeat) / 1e6
    rows = memory_kernels()
    share = KERNEL_MEMORY[family(rows[0])]
    predicted_s(rows[0], share)  # warm the hardware caches
    one = median_us(lambda: predicted_s(rows[0], share), 200 * repeat) / 1e6
    fitted = median_us(lambda: fit(rows), repeat) / 1e6
    held_out = median_us(lambda: leave_one_gpu_out(rows), 1) / 1e6
    print(f"read {len(rows):,} rows, ms                        {read * 1e3:8.1f}")
    print(f"price one row, us                              {one * 1e6:8.1f}")
    print(f"fit, s                                         {fitted:8.2f}")
    print(f"leave-one-GPU-out (6 fits), s                  {held_out:8.2f}")


if __name__ == "__main__":
    main()
