"""Latency of `perfmodel serve`'s API as a client sees it, through FastAPI's TestClient (the whole ASGI stack, no
socket): a prediction (layout searched, memoised after the first call; and a new question each call), a comparison of
2 systems x 3 sizes, a plan of 3 candidates and the workbook export of a prediction, each as a ratio to the same
question asked of the Python API in the same run (the server's own cost: validation, JSON, the lock; and the
TestClient's round trip, which the page's catalogue, answered from memory, measures alone).

Run: python benchmarks/bench_serve.py [--repeat N]. Prints medians; not a test.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from bench_predict import median_us

PREDICT = {"model": "llama3.1-405b", "gpu": "gb300", "n_gpus": 512, "precision": "nvfp4", "tokens": 15.6e12}
COMPARE = {"model": "llama3.1-70b", "gpu": ["h100-sxm", "b200:fp8"], "n_gpus": [256, 512, 1024], "tokens": 2e12}
PLAN = {"model": "llama3.1-405b", "gpu": ["h100-sxm", "b200:fp8", "gb200:nvfp4"], "tokens": 15e12,
        "deadline_s": 60 * 86400, "confidence": 0.9}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=200)
    repeat = parser.parse_args().repeat
    from fastapi.testclient import TestClient

    import perfmodel
    from perfmodel.serve.app import app

    client = TestClient(app)
    counter = iter(range(10**9))

    def posted(path: str, body: dict[str, Any]) -> Callable[[], Any]:
        def ask() -> Any:
            response = client.post(path, json=body)
            assert response.status_code == 200, response.text
            return response

        return ask

    def new_tokens() -> dict[str, float]:
        """A question not asked before: its scenario is checked anew."""
        return {"tokens": 15e12 + next(counter)}

    def new_question() -> Any:
        return client.post("/api/predict", json=PREDICT | new_tokens())

    pairs = {
        "predict, layout searched (memoised)": (posted("/api/predict", PREDICT), lambda: perfmodel.predict(**PREDICT)),
        "predict, a new question each call": (new_question, lambda: perfmodel.predict(**PREDICT | new_tokens())),
        "compare, 2 systems x 3 sizes": (posted("/api/compare", COMPARE), lambda: perfmodel.compare(**COMPARE).rows),
        "plan, 3 candidates at P90": (posted("/api/plan", PLAN), lambda: perfmodel.plan(**PLAN).to_dict()),
        "export predict as XLSX": (posted("/api/export/predict?format=xlsx", PREDICT), None),
        "catalogue (the page's lists)": (lambda: client.get("/api/catalogue"), None),
    }
    slow = {"compare, 2 systems x 3 sizes", "plan, 3 candidates at P90", "export predict as XLSX"}
    print(f"{'request':40s} {'server':>12s} {'Python API':>12s} {'ratio':>7s}")
    for name, (served, direct) in pairs.items():
        times = max(3, repeat // 20) if name in slow else repeat
        served()  # warm
        server_us = median_us(served, times)
        direct_us = median_us(direct, times) if direct is not None else None
        ratio = f"{server_us / direct_us:6.2f}x" if direct_us else ""
        shown = f"{direct_us / 1000:9.2f} ms" if direct_us else ""
        print(f"{name:40s} {server_us / 1000:9.2f} ms {shown:>12s} {ratio:>7s}")


if __name__ == "__main__":
    main()
