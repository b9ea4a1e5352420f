"""A campaign's P10/P50/P90 (issue 31): the model's error shared by its phases, their run-to-run variability and
interruptions each their own (planning/confidence.py campaign_quantiles), not the phases' quantiles summed."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_campaign_inputs import BASE, LONG, MAIN, RAMP

import perfmodel
from perfmodel.physics.calibration import Interval
from perfmodel.planning import confidence as chance
from perfmodel.planning.campaign import Campaign

CAMPAIGN = BASE + "gbs = 1024\n" + RAMP + MAIN + LONG + 'n_gpus = 32\nprecision = "fp8"\n'
"""Llama 3.1 8B on 64 H100s: a ramp on half of them, the main phase, a long-context phase on 32 of its own."""
KEYS = ("time_to_train_s", "gpu_hours", "cost_usd", "energy_kwh", "co2e_t", "time_to_train_with_losses_s",
        "gpu_hours_with_losses", "cost_usd_with_losses")  # fmt: skip


def _campaign(tmp_path: Path, text: str) -> Campaign:
    path = tmp_path / "campaign.toml"
    path.write_text(text)
    result = perfmodel.predict(path)
    assert isinstance(result, Campaign)
    return result


def _width(record: dict, key: str) -> float:
    return float(record[f"{key}_p90"] - record[f"{key}_p10"])


def test_a_one_phase_campaign_is_its_scenario(tmp_path: Path) -> None:
    """P50 (and P10, P90) of a one-phase campaign: the single scenario's, exactly."""
    campaign = _campaign(tmp_path, BASE + MAIN)
    (tmp_path / "single.toml").write_text(BASE)
    single = perfmodel.predict(tmp_path / "single.toml").to_dict()
    for key in KEYS:
        for q in ("p10", "p50", "p90"):
            assert campaign.record[f"{key}_{q}"] == single[f"{key}_{q}"], (key, q)


def test_a_campaign_is_no_wider_than_its_phases_summed(tmp_path: Path) -> None:
    """The phases' widths summed take every source as shared; the campaign's own run-to-run variability and
    interruptions are independent, so its P10-P90 is narrower, and its P50 near the phases' points summed."""
    campaign = _campaign(tmp_path, CAMPAIGN)
    phases = [p.to_dict() for p in campaign.phases.values()]
    for key in KEYS:
        summed = sum(_width(phase, key) for phase in phases)
        assert _width(campaign.record, key) < summed, key
        assert campaign.record[f"{key}_p50"] == pytest.approx(campaign.record[key], rel=5e-3), key
    table = perfmodel.predict(tmp_path / "campaign.toml")._shown()  # type: ignore[union-attr]
    assert table[-1]["time_to_train_s_p90"] == campaign.record["time_to_train_s_p90"]


def test_with_the_model_error_alone_the_quantiles_add(tmp_path: Path) -> None:
    """Nothing independent (no run-to-run variability, no failures): the phases' errors are one draw, perfectly
    correlated, and the campaign's quantiles are the phases' summed (quantiles of comonotone parts add)."""
    campaign = _campaign(tmp_path, CAMPAIGN + "[losses]\nrun_to_run_sd = 0\n")
    phases = [p.to_dict() for p in campaign.phases.values()]
    for q in ("p10", "p50", "p90"):
        summed = sum(phase[f"time_to_train_s_{q}"] for phase in phases)
        assert campaign.record[f"time_to_train_s_{q}"] == pytest.approx(summed, rel=1e-9), q


NOISE = 2e-3
"""The draws' relative noise on a P10-P90 width."""
SPREADS = st.builds(
    chance.Spread,
    st.builds(Interval, st.floats(0.7, 0.99), st.floats(1.01, 1.4), st.just("forward")),
    st.floats(0.0, 0.05),
    st.one_of(st.just(0.0), st.floats(0.5, 80)),
    st.floats(0.0, 0.002),
)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(SPREADS, st.floats(0.1, 10.0)), min_size=2, max_size=4))
def test_no_wider_than_the_phases_widths_summed(phases: list[tuple[chance.Spread, float]]) -> None:
    """For any phases' spreads and times: the campaign's P10-P90 is at most its phases' widths summed, each as its
    own record gives it (closed form or its draws), to the noise of 20,001 draws in two dimensions (0.2%, as the
    closed form and the draws agree in test_predict_quantiles.py); the shared model error alone adds exactly
    (test_with_the_model_error_alone_the_quantiles_add)."""
    combined = chance.campaign_quantiles([(spread, {"t": t}) for spread, t in phases])
    own = [chance.spread_quantiles(spread, {"t": t}) for spread, t in phases]
    summed = sum(q["t_p90"] - q["t_p10"] for q in own)  # type: ignore[operator]
    assert combined["t_p90"] - combined["t_p10"] <= summed * (1 + NOISE)  # type: ignore[operator]
