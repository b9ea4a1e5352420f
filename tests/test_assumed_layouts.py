"""Rows with unreported layout dimensions: priced at their stack's defaults or as a range, never at the best layout."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

import pytest

from perfmodel.fitting.runs import MeasuredRun
from perfmodel.fitting.validation import RunBatch, prepare, validate
from perfmodel.inputs.scenario import checked_scenario
from perfmodel.inputs.stacks import STACKS
from perfmodel.physics.calibration import UNCALIBRATED
from perfmodel.physics.step import evaluate
from perfmodel.planning.predict import choose_layout, context_for, layout_vars


def _run(model: str, n_gpus: int, parallelism: dict[str, Any], stack: str = "composer") -> MeasuredRun:
    scenario = {"model": model, "gpu": "h100-sxm", "n_gpus": n_gpus, "precision": "bf16", "stack": stack,
                "parallelism": {"tp": 1, "pp": 1, "cp": 1, "vp": 1, "seq_len": 2048} | parallelism}  # fmt: skip
    return MeasuredRun("test:1", "test", scenario, "step_time_s", 1.0)


def _best(run: MeasuredRun) -> Any:
    """The model's fastest layout for the row's open dimensions (what rows were scored at before)."""
    scenario = checked_scenario(run.scenario)
    return choose_layout(scenario, context_for(scenario, UNCALIBRATED.efficiency("hopper", scenario.stack)))[0]


COMPOSER_OPEN = _run("llama3.1-8b", 8, {"gbs": 64, "mbs": 1})
"""A Composer row that leaves recompute and sharding unreported; an 8B model on 8 H100s fits at every setting."""


def test_composer_row_is_priced_at_composers_defaults_not_the_best_layout() -> None:
    item = prepare(COMPOSER_OPEN, UNCALIBRATED)
    composer = STACKS["composer"]
    assert (item.layout.recompute, item.layout.zero) == (
        composer.layout_default("recompute").default,  # type: ignore[union-attr]
        composer.layout_default("zero").default,  # type: ignore[union-attr]
    )
    assert item.basis == "stack default" and item.settled and item.settled.assumed == ("recompute", "zero")
    best = _best(COMPOSER_OPEN)
    assert (best.recompute, best.zero) != (item.layout.recompute, item.layout.zero)  # else the test cannot fail
    assert RunBatch([item]).predicted()[0] > RunBatch([replace(item, layout=best, settled=None)]).predicted()[0]


def test_megatron_row_takes_megatrons_defaults() -> None:
    run = _run("llama3.1-8b", 8, {"gbs": 64, "mbs": 1}, stack="megatron")
    item = prepare(run, UNCALIBRATED)
    megatron = STACKS["megatron"]
    assert item.layout.zero == megatron.layout_default("zero").default == 1  # type: ignore[union-attr]
    assert item.layout.zero != STACKS["composer"].layout_default("zero").default  # type: ignore[union-attr]


@pytest.mark.parametrize("run", [COMPOSER_OPEN, _run("llama3.1-70b", 64, {"gbs": 128, "mbs": 1})])
def test_range_contains_point_and_every_member_fits(run: MeasuredRun) -> None:
    item = prepare(run, UNCALIBRATED)
    assert item.members
    for member in item.members:
        assert bool(evaluate(item.context, layout_vars(member)).fits)
    (row,) = validate([run], UNCALIBRATED).rows
    assert row.low is not None and row.high is not None
    assert row.low <= row.predicted <= row.high
    assert row.low < row.high  # the plausible settings differ in time


def test_row_whose_default_does_not_fit_takes_the_stacks_choice() -> None:
    """70B on 32 H100s: without recompute the activations of a 4-sequence micro-batch do not fit, so Composer's
    default (no checkpointing, FULL_SHARD) cannot be what ran; the row is priced where the recipe would go, the
    least memory-saving setting that fits (fitting.assumed.MEMORY_ORDER: full-block checkpointing, still
    FULL_SHARD), and keeps its range."""
    run = _run("llama3.1-70b", 32, {"gbs": 128, "mbs": 4})
    item = prepare(run, UNCALIBRATED)
    default = checked_scenario(
        run.scenario | {"parallelism": run.scenario["parallelism"] | {"recompute": "none", "zero": 3}}
    )
    ctx = context_for(default, UNCALIBRATED.efficiency("hopper", "composer"))
    assert not bool(evaluate(ctx, layout_vars(choose_layout(default, ctx)[0])).fits)
    assert not item.range_only and item.basis == "stack choice"
    assert (item.layout.recompute, item.layout.zero) == ("full", 3)
    (row,) = validate([run], UNCALIBRATED).rows
    assert row.low is not None and row.high is not None and row.low <= row.predicted <= row.high


def test_row_without_a_sourced_micro_batch_is_scored_on_its_range() -> None:
    """The same row without its micro-batch: no stack has a sourced default for it, so the row is range-only, the
    fit's loss is its log distance to the range (0 inside) and its error scores the range's geometric middle."""
    run = _run("llama3.1-70b", 32, {"gbs": 128})
    item = prepare(run, UNCALIBRATED)
    assert item.range_only and item.basis == "range"
    (row,) = validate([run], UNCALIBRATED).rows
    assert row.low is not None and row.high is not None and row.low < row.high
    assert row.predicted == pytest.approx(math.sqrt(row.low * row.high))
    for measured, distance in ((row.predicted, 0.0), (row.high * 1.1, math.log(row.high / (row.high * 1.1)))):
        batch = RunBatch([replace(item, run=replace(run, measured=measured))])
        assert batch.log_time_ratios(lambda p: item.context.efficiency, loss=True)[0] == pytest.approx(distance)
        assert batch.log_time_ratios(lambda p: item.context.efficiency)[0] == pytest.approx(
            math.log(row.predicted / measured)
        )


def test_validate_json_carries_layout_basis_and_range(cli: Any) -> None:
    result = cli("validate", "--only", "NeMo 24.07", "--format", "json")
    assert result.code == 0, result.err
    rows = json.loads(result.out)["rows"]
    for row in rows:
        for key in ("measured", "predicted", "error_pct", "layout", "assumptions"):  # the contract's fields stay
            assert key in row
        assert row["layout_basis"] == "stack default" and "recompute" in row["layout_assumed"]
        assert row["min_predicted"] <= row["predicted"] <= row["max_predicted"]
        assert any(a.startswith("recompute, zero not reported: stack 'megatron'") for a in row["assumptions"])


def test_row_without_vp_at_pp_1_takes_its_stacks_defaults_not_a_search() -> None:
    """PP 1 fixes VP 1: a row leaving VP out there (an MLPerf log given --tp --pp 1 --cp) is settled at its stack's
    defaults, and one reporting everything else is 'reported', not 'searched'."""
    open_vp = {"tp": 1, "pp": 1, "cp": 1, "seq_len": 2048, "gbs": 64, "mbs": 1}
    run = MeasuredRun("test:1", "test", COMPOSER_OPEN.scenario | {"parallelism": open_vp}, "step_time_s", 1.0)
    item = prepare(run, UNCALIBRATED)
    assert item.basis == "stack default" and item.layout == prepare(COMPOSER_OPEN, UNCALIBRATED).layout
    reported = open_vp | {"recompute": "none", "zero": 0}
    full = MeasuredRun("test:2", "test", COMPOSER_OPEN.scenario | {"parallelism": reported}, "step_time_s", 1.0)
    assert prepare(full, UNCALIBRATED).basis == "reported"
