"""MLPerf result logs: parsed with mlperf-logging into measured runs; garbled logs give one-line errors."""

import json
from pathlib import Path

import pytest

from perfmodel.errors import PerfmodelError
from perfmodel.fitting.mllog import read_log

HARDWARE = {"gpu": "h100-sxm", "n_gpus": 8, "precision": "fp8", "parallelism": {"tp": 4, "pp": 1, "cp": 1}}


def _line(key: str, value: object, time_ms: float, metadata: dict | None = None) -> str:
    record = {"namespace": "", "time_ms": time_ms, "event_type": "POINT_IN_TIME", "key": key, "value": value,
              "metadata": metadata or {}}  # fmt: skip
    return ":::MLLOG " + json.dumps(record)


def _log(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "result_0.txt"
    path.write_text("some framework chatter\n" + "\n".join(lines) + "\n")
    return path


def _complete(stop_status: str = "success") -> list[str]:
    start = 1_700_000_000_000
    return [
        _line("submission_benchmark", "llama2_70b_lora", start - 10),
        _line("global_batch_size", 8, start - 5),
        _line("run_start", None, start),
        *(_line("eval_accuracy", 0.9, start + (i + 1) * 300_000, {"samples_count": 384 * (i + 3)}) for i in range(5)),
        _line("run_stop", None, start + 29.5 * 60_000, {"status": stop_status}),
    ]


def test_a_complete_log_becomes_a_run(tmp_path: Path) -> None:
    run = read_log(_log(tmp_path, _complete()), HARDWARE, "v5.0")
    assert run.metric == "time_to_train_min" and run.measured == pytest.approx(29.5)
    assert run.samples == 384 * 7 and run.evaluations == 5
    assert run.scenario["benchmark"] == "mlperf-llama2-70b-lora@v5.0"
    assert run.scenario["parallelism"] == {"tp": 4, "pp": 1, "cp": 1, "gbs": 8}


def test_garbled_line(tmp_path: Path) -> None:
    path = _log(tmp_path, [*_complete()[:3], ':::MLLOG {"key": "eval_accuracy", "value": 0.9'])
    with pytest.raises(PerfmodelError, match=r"result_0.txt: unparsable :::MLLOG line"):
        read_log(path, HARDWARE)


def test_run_that_did_not_converge(tmp_path: Path) -> None:
    with pytest.raises(PerfmodelError, match="run_stop status is 'aborted', not a converged run"):
        read_log(_log(tmp_path, _complete("aborted")), HARDWARE)


def test_missing_events(tmp_path: Path) -> None:
    with pytest.raises(PerfmodelError, match="no 'global_batch_size' event"):
        read_log(_log(tmp_path, [line for line in _complete() if "global_batch_size" not in line]), HARDWARE)
    with pytest.raises(PerfmodelError, match="benchmark 'bert' is not modelled"):
        read_log(_log(tmp_path, [_line("submission_benchmark", "bert", 1.0)]), HARDWARE)
