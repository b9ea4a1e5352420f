"""benchmarks/bench_search.py's cases: named fields (they were 7-field tuples read by position), each a search the
project can run."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

BENCHMARK = Path(__file__).parent.parent / "benchmarks" / "bench_search.py"


def bench_search() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_search", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_case_is_named_and_searches_what_its_fields_say() -> None:
    bench = bench_search()
    for label, case in bench.CASES.items():
        assert isinstance(case, bench.Case), label
        scenario = bench.case_scenario(case)
        assert (scenario.gpu, scenario.n_gpus, scenario.precision) == (case.gpu, case.n_gpus, case.precision), label
    deepseek = bench.CASES["DeepSeek-V3 (TP x PP x VP x EP x ETP x ...), 256 GB300, MXFP8, GBS 4096"]
    assert bench.case_scenario(deepseek).parallelism.seq_len == 4096  # its campaign's, not the default scenario's
