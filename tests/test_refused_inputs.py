"""Issue 30 class 5: what perfmodel cannot honour is refused in one line (exit 2 at the CLI, a PerfmodelError from
the Python API), never a traceback, an AttributeError/TypeError/ValueError, or a silent fallback to a default:
the API's own arguments, numbers beyond float range or longer than Python's 4,300-digit limit, calibration
sections of the wrong type, an MLPerf log whose key is no text, a NUL byte in a sweep's base."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from test_mllog import HARDWARE, _complete, _line

import perfmodel
from perfmodel.errors import PerfmodelError
from perfmodel.fitting.mllog import read_log
from perfmodel.physics.calibration import BUNDLED

BIG = int("1" * 400)  # beyond float range
HUGE = "1" * 5000  # beyond Python's int <-> str limit
WORK = {"model": "llama3.1-8b", "gpu": "h100-sxm", "tokens": 1e12}

API_CALLS: dict[str, Callable[[], Any]] = {
    "search n_gpus generator": lambda: perfmodel.search(n_gpus=(n for n in [8])),
    "search n_gpus []": lambda: perfmodel.search(n_gpus=[]),
    "search n_gpus text": lambda: perfmodel.search(n_gpus=["8"]),
    "search n_gpus float": lambda: perfmodel.search(n_gpus=8.0),  # type: ignore[arg-type]
    "search top 0": lambda: perfmodel.search(top=0),
    "search top 3.0": lambda: perfmodel.search(top=3.0),  # type: ignore[arg-type]
    "search relayout text": lambda: perfmodel.search(relayout="yes"),  # type: ignore[arg-type]
    "plan max_gpus 0": lambda: perfmodel.plan(deadline_s=1e7, max_gpus=0, **WORK),  # type: ignore[arg-type]
    "plan max_gpus -8": lambda: perfmodel.plan(deadline_s=1e7, max_gpus=-8, **WORK),  # type: ignore[arg-type]
    "plan max_gpus 8.5": lambda: perfmodel.plan(deadline_s=1e7, max_gpus=8.5, **WORK),  # type: ignore[arg-type]
    "plan deadline nan": lambda: perfmodel.plan(deadline_s=math.nan, **WORK),  # type: ignore[arg-type]
    "plan deadline -1": lambda: perfmodel.plan(deadline_s=-1, **WORK),  # type: ignore[arg-type]
    "plan deadline text": lambda: perfmodel.plan(deadline_s="30d", **WORK),  # type: ignore[arg-type]
    "plan budget big": lambda: perfmodel.plan(budget_usd=BIG, **WORK),  # type: ignore[arg-type]
    "plan gpu number": lambda: perfmodel.plan(gpu=3, deadline_s=1e7, model="llama3.1-8b", tokens=1e12),  # type: ignore[arg-type]
    "compare gpu None": lambda: perfmodel.compare(gpu=None),  # type: ignore[arg-type]
    "compare gpu [3]": lambda: perfmodel.compare(gpu=[3]),  # type: ignore[list-item]
    "predict scenario number": lambda: perfmodel.predict(3),  # type: ignore[arg-type]
    "predict scenario NUL": lambda: perfmodel.predict("a\0b.toml"),
    "compare scenario number": lambda: perfmodel.compare(3),  # type: ignore[arg-type]
    "plan scenario NUL": lambda: perfmodel.plan("a\0b.toml", deadline_s=1e7),
    "predict hardware number": lambda: perfmodel.predict(hardware=3),  # type: ignore[arg-type]
    "predict hardware [None]": lambda: perfmodel.predict(hardware=[None]),  # type: ignore[list-item]
    "predict tokens big": lambda: perfmodel.predict(tokens=BIG),
    "predict n_gpus huge": lambda: perfmodel.predict(n_gpus=10**5000),
    "predict tp huge": lambda: perfmodel.predict(tp=10**5000),
    "predict usd big": lambda: perfmodel.predict(usd_per_gpu_hour=BIG),
    "predict tokens nan": lambda: perfmodel.predict(tokens=math.nan),
    "predict tp text": lambda: perfmodel.predict(tp="2"),  # type: ignore[arg-type]
    "validate data number": lambda: perfmodel.validate(3),  # type: ignore[arg-type]
    "validate only number": lambda: perfmodel.validate(only=3),  # type: ignore[arg-type]
    "validate calibration number": lambda: perfmodel.validate(calibration=3),  # type: ignore[arg-type]
    "calibrate out None": lambda: perfmodel.calibrate(out=None),  # type: ignore[arg-type]
    "calibrate cv text": lambda: perfmodel.calibrate(out="x.json", cv="no"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("name", list(API_CALLS))
def test_the_api_refuses_what_it_cannot_honour(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PerfmodelError) as caught:
        API_CALLS[name]()
    message = str(caught.value)
    keyword = message.partition("=")[0]
    assert "\n" not in message and len(message) < 400, message
    assert keyword.isidentifier(), message  # names the keyword, as `name=value: ...`
    assert not list(tmp_path.iterdir())  # nothing written


def _predict(tmp_path: Path, text: str, *args: str) -> tuple[int, str]:
    path = tmp_path / "s.toml"
    path.write_text(text)
    result = run_cli("predict", str(path), *args)
    return result.code, result.err


SCENARIO = 'model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\n'


@pytest.mark.parametrize(
    "text",
    [
        SCENARIO + f"tokens = {BIG}\n",
        SCENARIO.replace("n_gpus = 8", f"n_gpus = {HUGE}"),
        SCENARIO + f"[cost]\nusd_per_gpu_hour = {BIG}\n",
        SCENARIO + f"[parallelism]\ntp = {HUGE}\n",
        SCENARIO + f'description = "{HUGE}"\n',  # a long text is refused by its length, not its digits
    ],
    ids=["tokens-400-digits", "n_gpus-5000-digits", "price-400-digits", "tp-5000-digits", "text-5000-digits"],
)
def test_a_scenario_number_beyond_range_is_one_line(tmp_path: Path, text: str) -> None:
    code, err = _predict(tmp_path, text)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and len(err) < 400, err


@pytest.mark.parametrize(
    "sweep",
    [f"n_gpus = [{BIG}]", f"n_gpus = [{HUGE}]", f"[sweep.set]\ntokens = {HUGE}", f"[sweep.set]\ntokens = {BIG}"],
    ids=["n_gpus-400", "n_gpus-5000", "tokens-5000", "tokens-400"],
)
def test_a_sweep_number_beyond_range_is_one_line(tmp_path: Path, sweep: str) -> None:
    path = tmp_path / "w.toml"
    path.write_text(f"[sweep]\n{sweep}\n")
    result = run_cli("sweep", str(path))
    assert result.code == 2 and result.err.count("\n") == 1 and len(result.err) < 400, result.err


def test_a_nul_byte_in_a_sweep_base_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_text('[sweep]\nbase = "a\\u0000b.toml"\n')
    result = run_cli("sweep", str(path))
    assert (result.code, result.err) == (
        2,
        f"error: {path}: field 'sweep.base': a file name cannot contain a NUL byte\n",
    )


def _spoiled(change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    document = json.loads(BUNDLED.read_text())
    change(document)
    return document


CALIBRATIONS = {
    "data-list": (lambda d: d.update(data=[1]), "field 'data' must be a table"),
    "data-text": (lambda d: d.update(data="x"), "field 'data' must be a table"),
    "vintage-list": (lambda d: d["data"].update(vintage=[1]), "field 'data.vintage' must be a table"),
    "reference-list": (lambda d: d["data"]["vintage"].update(reference=["2026-08"]), "'data.vintage.reference'"),
    "reference-number": (lambda d: d["data"]["vintage"].update(reference=202608), "'data.vintage.reference'"),
    "moe-fit-list": (lambda d: d["moe"].update(fit=[1]), "field 'moe.fit' must be a table"),
    "moe-fit-text": (lambda d: d["moe"].update(fit="x"), "field 'moe.fit' must be a table"),
    "losses-list": (lambda d: d.update(losses=[1]), "field 'losses' must be a table"),
    "straggler-text": (lambda d: d["losses"]["parameters"].update(straggler_share="x"), "straggler_share"),
    "validation-list": (lambda d: d.update(validation=[]), "field 'validation' must be a table"),
}


@pytest.mark.parametrize("name", list(CALIBRATIONS))
def test_a_calibration_section_of_the_wrong_type_is_one_line(tmp_path: Path, name: str) -> None:
    change, expected = CALIBRATIONS[name]
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(_spoiled(change)))
    result = run_cli("predict", "--calibration", str(path))
    assert result.code == 2 and result.err.startswith(f"error: {path}: ") and expected in result.err, result.err
    assert result.err.count("\n") == 1


@pytest.mark.parametrize("digits", [str(BIG), HUGE])
def test_a_calibration_number_beyond_range_is_one_line(tmp_path: Path, digits: str) -> None:
    text = BUNDLED.read_text()
    key, value = next(iter(json.loads(text)["parameters"].items()))
    path = tmp_path / "cal.json"
    path.write_text(text.replace(f'"{key}": {json.dumps(value)}', f'"{key}": {digits}', 1))
    assert path.read_text() != text
    result = run_cli("predict", "--calibration", str(path))
    assert result.code == 2 and result.err.count("\n") == 1 and len(result.err) < 400, result.err


KEYED = ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": %s, "value": 1, "metadata": {}}'
LOGS = {
    "key-list": [*_complete()[:2], KEYED % '["run_start"]', *_complete()[2:]],
    "key-object": [*_complete()[:2], KEYED % '{"a": 1}', *_complete()[2:]],
    "time-400-digits": [*_complete()[:-1], _line("run_stop", None, BIG, {"status": "success"})],
    "count-5000-digits": [_complete()[0], KEYED.replace('"value": 1', f'"value": {HUGE}') % '"global_batch_size"',
                          *_complete()[2:]],
    "samples-400-digits": [*_complete()[:-2], _line("eval_accuracy", 0.9, 1_700_001_000_000, {"samples_count": BIG}),
                           _complete()[-1]],
}  # fmt: skip


@pytest.mark.parametrize("name", list(LOGS))
def test_a_hostile_mlperf_log_is_one_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / "result_0.txt"
    path.write_text("\n".join(LOGS[name]) + "\n")
    with pytest.raises(PerfmodelError) as caught:
        read_log(path, HARDWARE, "v5.0")
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)
    assert len(str(caught.value)) < 400
