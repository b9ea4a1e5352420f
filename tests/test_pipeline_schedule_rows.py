"""Pipeline sends as a release ran them: a 2021 Megatron run pays its blocking sends."""

from __future__ import annotations

import pytest

from perfmodel.inputs.scenario import checked_scenario
from perfmodel.physics.calibration import UNCALIBRATED
from perfmodel.physics.step import evaluate
from perfmodel.planning.predict import choose_layout, context_for, layout_vars


def _sends(vintage: str | None) -> tuple[float, float]:
    """(exposed pipeline sends, one send) of GPT-3 175B-like training at TP 8 PP 12 VP 2, 16 micro-batches."""
    scenario = checked_scenario(
        {
            "model": "gpt3-175b", "gpu": "a100-sxm-80gb", "n_gpus": 96, "precision": "bf16", "stack": "megatron",
            "parallelism": {"tp": 8, "pp": 12, "cp": 1, "vp": 2, "mbs": 1, "gbs": 16, "seq_len": 2048,
                            "recompute": "full", "zero": 0},
        } | ({"vintage": vintage} if vintage else {})
    )  # fmt: skip
    ctx = context_for(scenario, UNCALIBRATED.efficiency("ampere", "megatron"))
    trace: dict[str, object] = {}
    step = evaluate(ctx, layout_vars(choose_layout(scenario, ctx)[0]), trace)
    return float(step.pp_comm_exposed_s), float(trace["p2p"])  # type: ignore[arg-type]


def test_a_2021_megatron_run_pays_every_steady_state_send() -> None:
    """Megatron-LM of 2021 waits on each send and synchronises (p2p_communication._communicate): 2 (PP - 1) warm-up
    and cool-down sends plus 2 sends per micro-batch and chunk, none hidden; today's hide the shared overlap_pp of
    the steady-state ones."""
    pp, vp, microbatches = 12, 2, 16
    exposed_2021, p2p = _sends("2021-04")
    assert exposed_2021 == pytest.approx((2 * (pp - 1) + 2 * microbatches * vp) * p2p)
    exposed_today, p2p_today = _sends(None)
    overlap = UNCALIBRATED.efficiency("ampere", "megatron").overlap_pp
    assert 0 < overlap < 1 and p2p_today == pytest.approx(p2p)
    assert exposed_today == pytest.approx((2 * (pp - 1) + (1 - overlap) * 2 * microbatches * vp) * p2p)
