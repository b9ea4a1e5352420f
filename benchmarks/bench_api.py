"""Speed of the Python API as a notebook calls it: `perfmodel.predict(...)` with keywords over the default scenario
(its layout given, and searched: the search is memoised, so a repeated call prices none; and a new question each
call, whose scenario is checked anew), `perfmodel.load_scenario`
alone, and the model's own `predict` of a loaded scenario, each as a ratio to a plain Python loop of 1,300 additions
measured in the same run (the machine is shared: absolute times move, ratios less).

Run: python benchmarks/bench_api.py [--repeat N]. Prints medians; not a test.
"""

from __future__ import annotations

import argparse

from bench_predict import median_us

QUESTION = {"model": "llama3.1-405b", "gpu": "gb300", "n_gpus": 512, "precision": "nvfp4", "tokens": 15.6e12}
LAYOUT = {"tp": 2, "pp": 1, "cp": 1, "vp": 1, "mbs": 1, "recompute": "none", "zero": 3}


def loop() -> int:
    """The baseline: 1,300 additions in a Python loop."""
    total = 0
    for i in range(1300):
        total += i
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=2000)
    repeat = parser.parse_args().repeat
    import perfmodel
    from perfmodel.planning.campaign import predict_any

    given = QUESTION | LAYOUT
    counter = iter(range(10**9))

    def new_tokens() -> dict[str, float]:
        """A question not asked before: its scenario is checked anew."""
        return {"tokens": 15e12 + next(counter)}

    scenario = perfmodel.load_scenario(**given)
    perfmodel.predict(**QUESTION)  # the layout search, once: later calls find it memoised
    figures = {
        "baseline: 1,300-addition loop": lambda: loop(),
        "perfmodel.predict(), layout given": lambda: perfmodel.predict(**given),
        "perfmodel.predict(), layout searched (memoised)": lambda: perfmodel.predict(**QUESTION),
        "perfmodel.predict(), layout given, new tokens each call": lambda: perfmodel.predict(**given | new_tokens()),
        "perfmodel.load_scenario() alone": lambda: perfmodel.load_scenario(**given),
        "the model's predict of a loaded scenario": lambda: predict_any(scenario),
    }
    for fn in figures.values():
        median_us(fn, repeat // 10)  # warm
    times = {name: median_us(fn, repeat) for name, fn in figures.items()}
    base = times["baseline: 1,300-addition loop"]
    for name, value in times.items():
        print(f"{name:50s} {value:8.1f} us {value / base:6.2f}x")


if __name__ == "__main__":
    main()
