"""What a prediction pays to say how near it is to the measured runs (planning/evidence.py).

In process, medians: `predict()` repeated on one scenario with a copy of the bundled calibration and with the same
file less its 'evidence' section (the ratio is the cost of the evidence on every prediction); the parts that run once
per question (`evidence.ground`, at a new model, family, format or GPU count) and once per layout priced in full
(`Ground.at`); and, once per process, reading the section into rows and parsing the file with and without it.

Run: python benchmarks/bench_evidence.py [--repeat N]. Prints medians; not a test.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from bench_predict import median_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=2000)
    repeat = parser.parse_args().repeat

    from perfmodel.inputs.scenario import load_scenario
    from perfmodel.physics import calibration
    from perfmodel.planning import evidence
    from perfmodel.planning.predict import predict

    text = calibration.BUNDLED.read_text()
    document = json.loads(text)
    without = {k: v for k, v in document.items() if k != "evidence"}
    with tempfile.TemporaryDirectory() as folder:
        plain, full = Path(folder) / "plain.json", Path(folder) / "full.json"
        plain.write_text(json.dumps(without, indent=1))
        full.write_text(text)
        flags = {"model": "llama3.1-70b", "gpu": "h100-sxm", "n_gpus": 1024, "precision": "fp8"}
        searched = load_scenario(None, flags)
        given = load_scenario(None, flags | {"parallelism.tp": 4, "parallelism.pp": 8, "parallelism.vp": 5,
                              "parallelism.cp": 1, "parallelism.mbs": 1, "parallelism.recompute": "none",
                              "parallelism.zero": 1})  # fmt: skip
        rows = []
        for name, scenario in (("searched layout", searched), ("given layout", given)):
            given_flags = flags | _layout(scenario)
            base = load_scenario(None, given_flags | {"calibration": str(plain)})
            copy = load_scenario(None, given_flags | {"calibration": str(full)})
            predict(copy), predict(base)  # warm: contexts, layouts, the index
            with_evidence = median_us(lambda s=copy: predict(s), repeat)
            no_evidence = median_us(lambda s=base: predict(s), repeat)
            rows.append((f"predict() repeated, {name}, with evidence, us", with_evidence, ""))
            rows.append((f"predict() repeated, {name}, file without it, us", no_evidence,
                         f"(evidence: {with_evidence / no_evidence:.2f}x)"))  # fmt: skip
    fitted = calibration.bundled()
    index = evidence.index(fitted)
    assert index is not None
    p = predict(searched)
    assert p.interval is not None and p.evidence is not None

    def new_question() -> Any:
        return evidence.ground(index, "llama3.1-70b", 70.6, False, False, "hopper", "fp8-tensor", 1024)

    ground = new_question()
    rows.append(("evidence.ground (once per question), us", median_us(new_question, repeat // 10), ""))
    at = median_us(lambda: ground.at(p.layout, p.model_tflops_per_gpu, p.evidence.base), repeat)  # type: ignore[union-attr]
    rows.append(("Ground.at (once per layout priced in full), us", at, ""))
    rows.append(("reading the section's rows (once per calibration), us",
                 median_us(lambda: evidence._index(fitted), 20), f"({len(index.rows)} rows)"))  # fmt: skip
    small = json.dumps(without, indent=1)
    parse_with, parse_without = median_us(lambda: json.loads(text), 20), median_us(lambda: json.loads(small), 20)
    rows.append(("json.loads of the bundled calibration, us", parse_with, ""))
    rows.append(
        ("the same without the section, us", parse_without, f"(section: +{parse_with - parse_without:,.0f} us)")
    )
    for name, value, note in rows:
        print(f"{name:58s} {value:10.1f} {note}")


def _layout(scenario: Any) -> dict[str, Any]:
    """The scenario's layout flags as load_scenario takes them."""
    par = scenario.parallelism
    names = ("tp", "pp", "vp", "cp", "mbs", "recompute", "zero")
    return {f"parallelism.{n}": getattr(par, n) for n in names if getattr(par, n) is not None}


if __name__ == "__main__":
    main()
