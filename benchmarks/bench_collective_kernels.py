"""Speed of the collective kernel stage: reading the bundled rows, one fit (physics.collective_kernels.fit) and the
leave-one-system-out error, and one row's price.

Run: python benchmarks/bench_collective_kernels.py [--repeat N]. Prints medians; not a test.
"""

from __future__ import annotations

import argparse

from bench_predict import median_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat

    from perfmodel.inputs.kernels import collective_kernels
    from perfmodel.physics.collective_kernels import fit, leave_one_system_out, predicted_s

    read = median_us(lambda: collective_kernels.__wrapped__(), repeat) / 1e6
    rows = collective_kernels()
    predicted_s(rows[0])  # warm the hardware and topology caches
    one = median_us(lambda: predicted_s(rows[0]), 200 * repeat) / 1e6
    fitted = median_us(lambda: fit(rows), repeat) / 1e6
    held_out = median_us(lambda: leave_one_system_out(rows), 1) / 1e6
    print(f"read {len(rows):,} rows, ms                      {read * 1e3:8.1f}")
    print(f"price one row, us                              {one * 1e6:8.1f}")
    print(f"fit, s                                         {fitted:8.2f}")
    print(f"leave-one-system-out (8 fits), s               {held_out:8.2f}")


if __name__ == "__main__":
    main()
