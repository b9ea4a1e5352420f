"""Fuzzing every reader of a user's file: scenario, campaign, model and sweep TOML, measured-runs and whole-run CSV,
calibration JSON and MLPerf result logs; and the Python API's keywords (tests/test_fuzz_api.py).

Each example is random bytes or a valid file mutated the way files go wrong (a slice deleted or repeated, a hostile
fragment inserted: brackets, quotes, NUL and escape characters, formula prefixes, NaN, 1e308, deep nesting). Whatever
comes in, `perfmodel` either answers (exit 0, strict JSON) or refuses with exit 2 and one line on stderr, never a
traceback, within the bad-input time limit. CI runs a fixed, derandomised set of a few seconds (HYPOTHESIS_PROFILE=ci);
`PERFMODEL_FUZZ_EXAMPLES=5000 pytest tests/test_fuzz_inputs.py` runs a longer campaign.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("PERFMODEL_FUZZ_EXAMPLES", "40"))
TIME_LIMIT_S = 10.0
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SCENARIO = """name = "fuzz"
description = "a valid scenario, mutated"
model = "llama3.1-8b"
gpu = "h100-sxm"
n_gpus = 8
precision = "bf16"
tokens = 1e12

[parallelism]
tp = 1
pp = 1
cp = 1
vp = 1
mbs = 1
gbs = 64
seq_len = 8192
recompute = "none"
zero = 1

[cost]
usd_per_gpu_hour = 2.5
pue = 1.2
"""
RUNS = """id,source,model,gpu,n_gpus,precision,metric,measured,tp,pp,cp,vp,mbs,gbs,zero,recompute
r1,lab notes,llama3.1-8b,h100-sxm,8,bf16,step_time_s,1.2,1,1,1,1,1,64,1,none
r2,lab notes,llama3.1-8b,h100-sxm,8,fp8,tokens_per_s_per_gpu,9000,1,1,1,1,1,64,1,none
"""
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
CELL_TEXT = ["=1+2", "=cmd|' /C calc'!A0", "+1", "-x", "@SUM(A1)", "\t=1", "\r=1", "\x00", "\x1b[31m", "\u202e"]
FRAGMENTS = [
    "[", "]", "{", "}", "[[x]]", "{a = {b = {c = 1}}}", "[" * 40 + "]" * 40, "{a = " * 40 + "1" + "}" * 40,
    "'", '"', '"""', "\\", "\\u0000", "\\u202e", "\x00", "\x1b[31m", "\r", "\t", "\n", ",", ",,", '","',
    "=", "= 1", "=cmd|' /C calc'!A0", "+1", "-1", "@SUM(A1)", "nan", "inf", "-inf", "1e308", "5e-324", "0", "-0",
    "[" * 3000 + "]" * 3000, "{a = " * 1500 + "1" + "}" * 1500, "1e30", "9" * 40, "true", "tp = 3",
    "n_gpus = 1000000", "layers = 10000", "\n[parallelism]\n", "\n[model]\n",
    "base = 'llama3.1-405b'\n", "calibration = '/dev/zero'\n", "gpu = 'h300'\n", "x" * 300, "\u00e9", "\ufeff",
    "1" * 400, "-" + "9" * 400, "1" * 5000, "1e400", "[" + "1" * 400 + "]", '{"a": ' + "1" * 400 + "}", "null", "[]",
    "{}", '"x"', "\"\\u0000\"",
]  # fmt: skip
"""Hostile values: structure, quoting, control characters, formula prefixes, numbers at or beyond float range and
beyond Python's 4,300-digit integer limit, JSON values of the wrong type."""


@st.composite
def mutated(draw: st.DrawFn, base: str) -> bytes:
    """`base` after one to four mutations, or (one time in six) random bytes."""
    if draw(st.integers(0, 5)) == 0:
        return draw(st.binary(max_size=400))
    text = base
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 40)))
        kind = draw(st.sampled_from(("insert", "delete", "replace", "repeat", "value", "cell")))
        values = [m.end() for m in re.finditer(r"= |: ", text)]  # a TOML or JSON value
        cells = [m.end() for m in re.finditer(r"[,\n]", text)]
        if kind == "value" and values:  # a value replaced by a fragment, up to the line's end or the next comma
            at = draw(st.sampled_from(values))
            line_end = min(i for i in (text.find("\n", at), text.find(",", at), len(text)) if i >= 0)
            text = text[:at] + draw(st.sampled_from(FRAGMENTS)) + text[line_end:]
        elif kind == "cell" and cells:  # a CSV cell (or TOML line) begins with formula-like or control text
            at = draw(st.sampled_from(cells))
            text = text[:at] + draw(st.sampled_from(CELL_TEXT)) + text[at:]
        elif kind == "insert":
            piece = draw(st.sampled_from(FRAGMENTS) | st.text(max_size=12))
            text = text[:start] + piece + text[start:]
        elif kind == "delete":
            text = text[:start] + text[end:]
        elif kind == "replace":
            text = text[:start] + draw(st.sampled_from(FRAGMENTS)) + text[end:]
        else:
            text = text[:end] + text[start:end] * draw(st.integers(2, 50)) + text[end:]
    return text.encode("utf-8", "surrogatepass")


def _answered_or_refused(args: list[str], fmt: str) -> None:
    start = time.perf_counter()
    result = run_cli(*args, "--format", fmt)  # any exception but the CLI's own exit fails the test, traceback shown
    elapsed = time.perf_counter() - start
    assert result.code in (0, 2), (result.code, result.err)
    event(f"exit {result.code}")
    if result.code == 0 and fmt == "json":
        json.loads(result.out, parse_constant=lambda constant: pytest.fail(f"{constant} in JSON output"))
    elif result.code == 0:  # CSV: a text cell never begins like a formula (numbers such as -3.5 are numbers)
        for row in csv.reader(io.StringIO(result.out)):
            assert not [c for c in row if c.startswith(FORMULA_PREFIXES) and not _is_number(c)], row
    else:
        assert result.out == "" and result.err.startswith("error: ") and result.err.count("\n") == 1, result.err
        assert "Traceback" not in result.err
    assert elapsed < TIME_LIMIT_S


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


CAMPAIGN = (
    SCENARIO.replace("gbs = 64\n", "")
    + """
[[phase]]
name = "ramp"
tokens = 1e11
seq_len = 4096
gbs = 32

[[phase]]
name = "main"
"""
)
MODEL = """base = "llama3.1-8b"
layers = 16
hidden = 4096
heads = 32
kv_heads = 8
"""
SWEEP = """[sweep]
base = "base.toml"
models = ["llama3.1-8b"]
gpus = ["h100-sxm"]
precisions = ["bf16"]
n_gpus = [8]
whatifs = [{}, { nvlink_gbps = "x2" }]
[sweep.set]
tokens = 1e12
calibration = "none"
"""
WHOLE_RUNS = """id,source,model,model_shapes,gpu,n_gpus,precision,seq_len,gbs,tokens,metric,measured,basis,settings
w1,paper,my-7b,base=llama2-7b;layers=16,a100-sxm-80gb,64,bf16,2048,512,1e10,gpu_hours,2000,wall,parallelism.pp=1
"""


def _calibration() -> str:
    """The bundled calibration less its evidence and data rows, its lists of tables cut to three: every section a
    prediction reads in a few kB, so that a mutation lands on one (the whole file is 700 kB of rows and folds)."""
    from perfmodel.physics.calibration import BUNDLED

    def cut(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: cut(v) for k, v in value.items()}
        if isinstance(value, list) and value and isinstance(value[0], dict):
            return [cut(v) for v in value[:3]]
        return value

    document = json.loads(BUNDLED.read_text())
    document.pop("evidence")
    document["data"].pop("rows")
    return json.dumps(cut(document), indent=1)


def _mllog() -> str:
    from test_mllog import _complete

    return "some framework chatter\n" + "\n".join(_complete()) + "\n"


NO_CALIBRATION = ("--calibration", "none")
LOG_FLAGS = ("--gpu", "h100-sxm", "--gpus", "8", "--precision", "fp8", "--tp", "4", "--pp", "1", "--cp", "1")
FILES = {
    "scenario": (SCENARIO, "s.toml", ("predict", "{path}", *NO_CALIBRATION)),
    "campaign": (CAMPAIGN, "c.toml", ("predict", "{path}", *NO_CALIBRATION)),
    "model": (MODEL, "m.toml", ("predict", "{folder}/with-model.toml", *NO_CALIBRATION)),
    "sweep": (SWEEP, "w.toml", ("sweep", "{path}", "--jobs", "1")),
    "runs-csv": (RUNS, "r.csv", ("validate", "--data", "{path}", *NO_CALIBRATION)),
    "whole-run-csv": (WHOLE_RUNS, "w.csv", ("validate", "--data", "{path}", *NO_CALIBRATION)),
    "calibration": (_calibration(), "cal.json", ("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus",
                                                 "8", "--calibration", "{path}")),
    "mlperf-log": (_mllog(), "result_0.txt", ("validate", "{path}", *LOG_FLAGS, *NO_CALIBRATION)),
}  # fmt: skip
"""Each reader: the valid file that is mutated, its name, and the command that reads it."""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fuzzing folder, with the files the fuzzed ones name: a sweep's base and a scenario naming the model file."""
    made = tmp_path_factory.mktemp("fuzz")
    (made / "base.toml").write_text(SCENARIO)
    (made / "with-model.toml").write_text(SCENARIO.replace('model = "llama3.1-8b"', 'model = "m.toml"'))
    return made


@pytest.mark.parametrize("kind", list(FILES))
@FUZZ
@given(data=st.data(), fmt=st.sampled_from(("json", "csv")))
def test_any_file_is_answered_or_refused_in_one_line(folder: Path, kind: str, data: st.DataObject, fmt: str) -> None:
    base, name, command = FILES[kind]
    path = folder / name
    path.write_bytes(data.draw(mutated(base)))
    _answered_or_refused([arg.format(path=path, folder=folder) for arg in command], fmt)
