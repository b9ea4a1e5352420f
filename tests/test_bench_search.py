"""benchmarks/bench_search.py's cases: named fields (they were 7-field tuples read by position), each a search the
project can run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

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


def test_a_misspelt_case_ends_the_run_before_any_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The docstring promised a misspelt name fails 'before any timing', but main timed the cases before it first:
    it now checks every case's scenario before it times one, and says the case in one line."""
    bench = bench_search()
    cases = dict(bench.CASES) | {"typo": bench.Case("llama3.1-70bb", "h100-sxm", 64, "fp8", gbs=128)}
    monkeypatch.setattr(bench, "CASES", cases)

    def timed(*_: object) -> None:
        raise AssertionError("timed before the cases were checked")

    monkeypatch.setattr(bench, "pinned_chain", timed)
    monkeypatch.setattr(bench, "against", timed)
    monkeypatch.setattr(sys, "argv", ["bench_search.py"])
    with pytest.raises(SystemExit) as ended:
        bench.main()
    said = str(ended.value.code)
    assert said.startswith("bench_search: case 'typo': ") and "llama3.1-70bb" in said and "\n" not in said


def test_the_counts_a_case_searches_are_its_own_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """`n_gpus == 8` meant 'the eight counts 8 to 1,024', so any case at 8 GPUs would have searched them: the counts
    are a field, and a case at 8 GPUs without them searches 8 alone."""
    bench = bench_search()
    label = "Llama 3.1 8B, 8-1,024 H100 (8 counts), BF16, GBS 1024"
    monkeypatch.setitem(bench.CASES, "one count", bench.CASES[label]._replace(counts=()))
    assert [n for n, _ in bench.case_space(label)[1].points] == [8 * 2**k for k in range(8)]
    assert bench.case_space("one count")[1].points == ((8, 1024),)
