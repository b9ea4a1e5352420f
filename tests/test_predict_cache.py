"""What a context keeps between predictions (planning/predict.layout_free, the efficiencies per calibration): a
repeated prediction reuses it, and a question that differs in a kept input gets its own answer, the same as a
prediction made in a fresh process would give (the caches change the cost, never a number)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from perfmodel.inputs.record import replaced
from perfmodel.inputs.scenario import Scenario, checked_scenario
from perfmodel.physics import calibration
from perfmodel.planning import predict as pr

BASE: dict[str, Any] = {
    "model": "llama3.1-8b",
    "gpu": "h100-sxm",
    "n_gpus": 64,
    "precision": "bf16",
    "tokens": 1e11,
    "parallelism": {"tp": 2, "pp": 1, "cp": 1, "vp": 1, "mbs": 1, "gbs": 512, "recompute": "none", "zero": 1},
}
CHANGES = {
    "price": {"cost": {"usd_per_gpu_hour": 7.5}},
    "buying": {"cost": {"mode": "buy", "usd_per_system": 400_000.0}},
    "failure scale": {"goodput": {"failure_scale": 3.0}},
    "own failure rates (not kept: a dict)": {"goodput": {"failures_per_million_gpu_hours": {"gpu": 50.0}}},
    "no goodput model": {"goodput": {"rates": "none"}},
    "uncalibrated": {"calibration": "none"},
}


def _without_caches(scenario: Scenario, **kwargs: Any) -> dict[str, Any]:
    """The prediction computed with every cache of predict.py emptied first."""
    pr._CONTEXTS.clear()
    pr._EFFICIENCIES.clear()
    pr._LAST_CONTEXT.clear()
    return pr.predict(scenario, **kwargs).to_dict()


@pytest.mark.parametrize("name", CHANGES)
def test_a_kept_input_changed_gives_the_uncached_answer(name: str) -> None:
    base = checked_scenario(BASE)
    changed = checked_scenario(BASE | CHANGES[name])
    pr.predict(base)  # the context now keeps the base scenario's price, interval and goodput
    assert pr.predict(changed).to_dict() == _without_caches(changed)
    assert pr.predict(changed).to_dict() != pr.predict(base).to_dict()


def test_repeated_predictions_share_the_context_and_its_layout_free_parts() -> None:
    scenario = checked_scenario(BASE)
    fresh = _without_caches(scenario)
    first, second = pr.predict(scenario), pr.predict(scenario)
    assert first.to_dict() == second.to_dict() == fresh
    assert second.price is first.price  # taken from the context, not worked out again
    assert second.goodput is first.goodput


def test_the_same_scenario_object_sees_an_edited_calibration_file(tmp_path: Path) -> None:
    """A repeated prediction of one scenario object skips the context's key work and the layout choice
    (`_LAST_CONTEXT`, the context's last-scenario slots), but the calibration file is resolved again each time:
    an edit between two predictions gives the new file's answer, the one a fresh process gives."""
    path = tmp_path / "cal.json"
    path.write_text(calibration.BUNDLED.read_text())
    scenario = checked_scenario(BASE | {"calibration": str(path)})
    before = pr.predict(scenario).to_dict()
    assert pr.predict(scenario).to_dict() == before
    path.write_text(json.dumps({"format": calibration.FORMAT, "parameters": {}}))  # the physical defaults
    os.utime(path, ns=(1, 1))  # a new modification time, however fast the rewrite
    after = pr.predict(scenario).to_dict()
    assert after != before
    assert after == _without_caches(scenario)


def test_the_same_scenario_object_with_other_efficiencies_or_hardware_gets_its_own_context() -> None:
    """The last-context slot matches the efficiency and hardware passed by identity too (a fit's variants, what-if
    hardware): each gives the answer a fresh process gives for it."""
    from dataclasses import replace

    from perfmodel.inputs.hardware import resolve
    from perfmodel.physics.efficiency import DEFAULTS

    scenario = checked_scenario(BASE)
    slower = replace(DEFAULTS["hopper"], gemm_bf16=0.5)
    hw = resolve(scenario.gpu, scenario.system)
    faster_hbm = replaced(
        hw, accelerator=replaced(hw.accelerator, hbm_tbps=replaced(hw.accelerator.hbm_tbps, value=6.0))
    )
    plain = pr.predict(scenario).to_dict()
    for kwargs in ({"efficiency": DEFAULTS["hopper"]}, {"efficiency": slower}, {"hardware": faster_hbm}):
        answer = pr.predict(scenario, **kwargs).to_dict()
        assert answer == _without_caches(scenario, **kwargs) != plain
