"""scripts/protocol_blame.py: its swaps put exactly the named values in place, and swapping every value it lists
turns a fold's fit into the full fit on the fold's rows (so the MoE-stage values it leaves out move no dense row)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from perfmodel.fitting import protocols
from perfmodel.fitting.runs import collect_runs
from perfmodel.physics.calibration import bundled

ROOT = Path(__file__).resolve().parents[1]


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("protocol_blame", ROOT / "scripts" / "protocol_blame.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


BLAME = _script()


def test_a_swap_sets_the_sources_values_and_drops_those_it_lacks_to_their_defaults() -> None:
    values = {"memory": 0.7, "overlap_tp": 0.5, "straggler_cv": 0.01}
    source = {"memory": 0.8, "scaleout": 0.9}
    assert BLAME.swapped(values, source, ["memory", "straggler_cv", "scaleout"]) == {
        "memory": 0.8,
        "overlap_tp": 0.5,
        "scaleout": 0.9,
    }


def test_swapping_every_listed_value_gives_the_full_fits_errors() -> None:
    name = "composer"
    calibration = bundled()
    full = calibration.parameters
    folds = calibration.provenance["protocols"]["stack"]["folds"]
    fold_values = next(f["parameters"] for f in folds if f["name"] == name)
    runs, excluded = collect_runs(None)
    items = protocols.with_tested("stack", protocols.fitted_items(runs, excluded), runs, [])
    fold = next(f for f in protocols.folds("stack", items) if f.name == name)
    table = BLAME.blame(fold, fold_values, full)
    listed = [line.split()[0] for line in table[4:] if not line.startswith("[")]
    assert "overlap_dp@composer" in listed
    assert not any(key.startswith(("grouped_gemm", "overlap_ep", "moe_legacy")) for key in listed)
    whole = BLAME.score(fold, BLAME.swapped(fold_values, full, listed))
    mape, signed, _ = BLAME.score(fold, full)
    assert whole[:2] == pytest.approx((mape, signed), abs=1e-9)
