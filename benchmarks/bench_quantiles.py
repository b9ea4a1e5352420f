"""Speed of a prediction's P10/P50/P90 (planning/two_piece.py): the record of the default scenario with the
quantiles of its interval and run-to-run variability already worked out (every later prediction of that interval)
and worked out anew (the quadrature, three quantiles), beside the prediction itself and a plain Python loop of
1,300 additions measured in the same run (the machine is shared: ratios move less than times).

Run: python benchmarks/bench_quantiles.py [--repeat N]. Prints medians; not a test.
"""

from __future__ import annotations

import argparse

from bench_api import loop
from bench_predict import median_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=500)
    repeat = parser.parse_args().repeat
    from perfmodel.api import load_scenario, predict
    from perfmodel.planning import two_piece

    prediction = predict(load_scenario())

    def anew() -> object:
        two_piece.quantile.cache_clear()
        return prediction.to_dict()

    figures = {
        "baseline: 1,300-addition loop": loop,
        "predict() of the default scenario": lambda: predict(load_scenario()),
        "its record, quantiles known": prediction.to_dict,
        "its record, quantiles worked out anew": anew,
    }
    for fn in figures.values():
        median_us(fn, repeat // 10)  # warm
    times = {name: median_us(fn, repeat) for name, fn in figures.items()}
    base = times["baseline: 1,300-addition loop"]
    for name, value in times.items():
        print(f"{name:40s} {value:8.1f} us {value / base:6.2f}x")


if __name__ == "__main__":
    main()
