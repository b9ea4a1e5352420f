"""whatif, sensitivity and sweep on mixture-of-experts models: the expert layout survives every path, and the EP
all-to-all answers the network settings the way its placement says it should."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import run_cli

from perfmodel.inputs.scenario import checked_scenario
from perfmodel.planning.predict import for_layout, predict
from perfmodel.planning.sensitivity import sensitivity
from perfmodel.planning.sweep import load_points, run

# Qwen3-30B-A3B on two DGX B200 nodes with EP 16: the dispatch and combine cross the NICs.
ACROSS_NICS = ["--model", "qwen3-30b-a3b", "--gpu", "b200", "--gpus", "16", "--precision", "mxfp8", "--gbs", "256",
               "--tp", "1", "--pp", "1", "--cp", "1", "--ep", "16", "--mbs", "2", "--recompute", "none"]  # fmt: skip


def test_whatif_faster_nics_shrink_the_exposed_all_to_all_on_the_same_layout() -> None:
    result = run_cli("whatif", *ACROSS_NICS, "--set", "nic_gbps=x2", "--format", "json")
    assert result.code == 0, result.err
    rows = {r["case"]: r for r in json.loads(result.out)}
    base, same = rows["baseline"], rows["what-if, same layout"]
    assert same["parallelism"]["ep"] == base["parallelism"]["ep"] == 16
    assert 0 < same["breakdown"]["ep_comm_exposed_s"] < base["breakdown"]["ep_comm_exposed_s"]
    assert same["breakdown"]["compute_s"] == pytest.approx(base["breakdown"]["compute_s"], rel=1e-12)


def test_sensitivity_of_a_moe_step_includes_the_nic_and_matches_a_finite_difference() -> None:
    scenario = checked_scenario(
        {"model": "qwen3-30b-a3b", "gpu": "b200", "n_gpus": 16, "precision": "mxfp8",
         "parallelism": {"tp": 1, "pp": 1, "cp": 1, "ep": 16, "mbs": 2, "gbs": 256, "recompute": "none"}}
    )  # fmt: skip
    result = sensitivity(scenario, step=0.1)
    by_name = {e.knob.name: e for e in result.elasticities}
    assert result.baseline.layout.ep == 16
    nic = by_name["nic_gbps"].fixed_layout
    assert nic < 0  # more NIC bandwidth, shorter step: the EP 16 exchange crosses the NICs
    from perfmodel.inputs.hardware import resolve
    from perfmodel.planning.whatif import apply, parse_setting

    hw, fixed = resolve("b200"), for_layout(scenario, result.baseline.layout)
    up = predict(fixed, hardware=apply(hw, [parse_setting("nic_gbps=x1.1")])).step_time_s
    down = predict(fixed, hardware=apply(hw, [parse_setting(f"nic_gbps=x{1 / 1.1!r}")])).step_time_s
    assert nic == pytest.approx(math.log(up / down) / (2 * math.log(1.1)))


def test_sweep_over_moe_models_keeps_their_expert_layouts(tmp_path: Path) -> None:
    sweep = tmp_path / "moe.toml"
    sweep.write_text(
        '[sweep]\nmodels = ["qwen3-30b-a3b", "gpt-oss-20b"]\ngpus = ["b200"]\nprecisions = ["mxfp8"]\n'
        "n_gpus = [8, 16]\n[sweep.set]\nparallelism = { gbs = 256, ep = 8 }\n"
    )
    rows = run(load_points(sweep), jobs=1)
    assert len(rows) == 4 and not any(r["error"] for r in rows)
    assert all(r["parallelism.ep"] == 8 and r["breakdown.ep_comm_exposed_s"] > 0 for r in rows)
    one = next(r for r in rows if r["model"] == "qwen3-30b-a3b" and r["n_gpus"] == 16)
    again = predict(checked_scenario(
        {"model": "qwen3-30b-a3b", "gpu": "b200", "n_gpus": 16, "precision": "mxfp8",
         "parallelism": {"gbs": 256, "ep": 8}}
    ))  # fmt: skip
    assert one["step_time_s"] == pytest.approx(again.step_time_s, rel=1e-12)
