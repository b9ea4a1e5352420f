"""Fuzzing the Python API (issue 30): any value of any keyword either answers with finite numbers or raises a
PerfmodelError whose message is one line naming the keyword, never another exception or a silent default.

Scenario keywords are fuzzed through `predict` on a small question; each function's own arguments (search's
n_gpus and top, plan's deadline and max_gpus, ...) with the work behind them replaced by a stub, since what is
tested is that the argument is honoured or refused, not the search it starts. CI runs a fixed, derandomised set
(HYPOTHESIS_PROFILE=ci); PERFMODEL_FUZZ_EXAMPLES=2000 runs a longer campaign.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import perfmodel
from perfmodel.errors import PerfmodelError
from perfmodel.inputs.scenario import OPTION_FIELDS

EXAMPLES = int(os.environ.get("PERFMODEL_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-10, 4096),
    st.sampled_from([10**400, -(10**400), 10**5000, 2**63, 0, -1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["h100-sxm", "bf16", "8", "nan", "1e400", "a\0b", "none", "", " ", "x2", "llama3.1-8b"]),
    st.lists(st.one_of(st.integers(-2, 64), st.text(max_size=4)), max_size=3),
    st.tuples(st.integers(1, 64)),
    st.builds(lambda: (n for n in [8])),
    st.dictionaries(st.text(max_size=4), st.integers(0, 3), max_size=2),
)
"""Values of every kind a caller might pass: right and wrong types, NaN and infinities, numbers beyond float range
and beyond Python's 4,300-digit limit, text, NUL, containers and a generator."""
QUESTION = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8, "calibration": "none"}


class Reached(Exception):
    """Raised by a stub: the arguments were accepted and the work began."""


def _one_line(exc: PerfmodelError, keyword: str) -> None:
    message = str(exc)
    assert "\n" not in message and 0 < len(message) < 1000, message
    event(f"refused: {keyword}")


def _finite(record: dict[str, Any]) -> None:
    for key, value in record.items():
        if isinstance(value, float):
            assert math.isfinite(value), (key, value)


@FUZZ
@given(keyword=st.sampled_from(sorted({*OPTION_FIELDS, "hardware"} - {"calibration"})), value=VALUES)
def test_any_scenario_keyword_is_answered_or_refused(keyword: str, value: Any) -> None:
    try:
        prediction = perfmodel.predict(**(QUESTION | {keyword: value}))
    except PerfmodelError as exc:
        _one_line(exc, keyword)
        return
    event(f"answered: {keyword}")
    for record in prediction.to_records() if hasattr(prediction, "to_records") else [prediction.to_record()]:
        _finite(record)


CALLS: dict[str, tuple[str, Callable[..., Any], dict[str, Any]]] = {
    "search": ("perfmodel.planning.predict.search_scenario", perfmodel.search,
               {"scenario": None, "n_gpus": 8, "top": 3, "objective": "time", "relayout": False}),
    "compare": ("perfmodel.planning.compare.compare_request", perfmodel.compare,
                {"scenario": None, "gpu": "h100-sxm", "n_gpus": 8, "relayout": False}),
    "plan": ("perfmodel.planning.plan.plan_request", perfmodel.plan,
             {"scenario": None, "gpu": "h100-sxm", "deadline_s": 1e6, "budget_usd": 1e6, "max_gpus": 64,
              "max_candidates": 8}),
    "validate": ("perfmodel.fitting.runs.collect_runs", perfmodel.validate,
                 {"data": None, "only": None, "calibration": None, "hardware": None}),
    "calibrate": ("perfmodel.outputs.atomic.check_target", perfmodel.calibrate,
                  {"data": None, "out": "fit.json", "with_bundled": False, "only": None, "cv": True, "force": False,
                   "hardware": None}),
    "load_scenario": ("perfmodel.planning.request.load_request", perfmodel.load_scenario, {"scenario": None}),
}  # fmt: skip
"""Each function, the work its arguments start (replaced by a stub), and its own arguments with valid values."""


@FUZZ
@given(data=st.data(), name=st.sampled_from(sorted(CALLS)), value=VALUES)
def test_any_argument_of_a_function_is_honoured_or_refused(data: st.DataObject, name: str, value: Any) -> None:
    target, function, valid = CALLS[name]
    argument = data.draw(st.sampled_from(sorted(valid)))
    with mock.patch(target, side_effect=Reached):
        try:
            function(**(valid | {argument: value}))
        except Reached:
            event(f"accepted: {name}({argument}=...)")
        except PerfmodelError as exc:
            _one_line(exc, argument)


@pytest.mark.parametrize(
    "value",
    [(n for n in [8]), [], 0, -8, 8.0, "8", [8, "8"], True, 10**5000],
    ids=["generator", "empty", "0", "-8", "8.0", "text", "mixed", "True", "5000-digits"],
)
def test_search_takes_no_count_it_cannot_honour(value: Any) -> None:
    """The examples of issue 30: a generator or [] answered for 1,024 GPUs."""
    with mock.patch("perfmodel.planning.predict.search_scenario", side_effect=Reached), pytest.raises(PerfmodelError):
        perfmodel.search(n_gpus=value)


@pytest.mark.parametrize("value", [0, -1, 8.5, "64", 10**400], ids=["0", "-1", "8.5", "text", "400-digits"])
def test_plan_takes_no_cap_it_cannot_honour(value: Any) -> None:
    with pytest.raises(PerfmodelError, match=r"^max_gpus="):
        perfmodel.plan(model="llama3.1-8b", gpu="h100-sxm", tokens=1e12, deadline_s=1e7, max_gpus=value)
