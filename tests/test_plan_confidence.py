"""Plans at a confidence (issue 31, item 2): the time read as a distribution from the prediction's 80% interval,
`plan --confidence`, `predict --deadline`, and bad confidences refused."""

from __future__ import annotations

import json
from statistics import NormalDist

import pytest
from conftest import run_cli, run_json
from hypothesis import given, settings
from hypothesis import strategies as st

import perfmodel
from perfmodel.errors import PerfmodelError
from perfmodel.physics.calibration import BUNDLED, Interval
from perfmodel.planning import confidence as chance
from perfmodel.planning.plan import p_within

SMALL = ("--model", "llama3.1-8b", "--tokens", "100B", "--gpu", "h100-sxm:fp8")
BIG = ("--model", "llama3.1-405b", "--tokens", "15.6T", "--gpu", "gb300:nvfp4")


def _forward() -> Interval:
    """The bundled calibration's forward-protocol interval: its held-out residuals' 10% and 90% quantiles as factors
    on a predicted time (fitting/calibrate.py `interval`)."""
    band = json.loads(BUNDLED.read_text())["protocols"]["forward"]["interval"]
    return Interval(band["time_factor_low"], band["time_factor_high"], "forward")


def test_the_stored_quantiles_are_read_back_and_the_median_is_the_point() -> None:
    interval = _forward()
    assert chance.time_factor(interval, 0.9) == pytest.approx(interval.high, rel=1e-12)
    assert chance.time_factor(interval, 0.1) == pytest.approx(interval.low, rel=1e-12)
    assert chance.time_factor(interval, 0.5) == 1.0
    assert chance.probability_within(interval, interval.high) == pytest.approx(0.9, abs=1e-12)
    assert chance.probability_within(interval, interval.low) == pytest.approx(0.1, abs=1e-12)
    assert chance.probability_within(interval, 1.0) == 0.5
    # closed form between and beyond the ends: log factor = log(high) z(q) / z(0.9)
    z = NormalDist().inv_cdf
    assert chance.time_factor(interval, 0.95) == pytest.approx(interval.high ** (z(0.95) / z(0.9)), rel=1e-12)


@given(st.floats(0.001, 0.999))
def test_probability_inverts_the_quantile(q: float) -> None:
    interval = _forward()
    assert chance.probability_within(interval, chance.time_factor(interval, q)) == pytest.approx(q, abs=1e-9)


def test_without_an_interval_the_time_is_the_point() -> None:
    assert chance.time_factor(None, 0.99) == 1.0
    assert (chance.probability_within(None, 1.0), chance.probability_within(None, 0.999)) == (1.0, 0.0)


def test_the_default_confidence_plans_on_the_point_as_before() -> None:
    (c,) = run_json("plan", *SMALL, "--deadline", "3d", "--quiet")["candidates"]
    assert c["time_to_train_days_at_confidence"] == c["time_to_train_days"] <= 3
    assert c["p_meet_deadline"] >= 0.5


def test_gb300_405b_at_p90_needs_more_gpus_than_on_the_point() -> None:
    """The issue's case: on the point GB300 'meets' the deadline while its own 80% interval runs past it (issue 31
    saw 1,792 GPUs at 59.3 days for 60 days, interval to 67.3; on this calibration the point plan for 72 days, the
    cheapest count meeting them, is 2,048 GPUs at 69.7 days, interval to 76.2, and at P90 it is 4,096 GPUs, 39.1
    days: cheaper than the counts from 2,560 to 3,584 that meet 72 days at P90 too)."""
    (point,) = run_json("plan", *BIG, "--deadline", "72d", "--quiet")["candidates"]
    (sure,) = run_json("plan", *BIG, "--deadline", "72d", "--confidence", "0.9", "--quiet")["candidates"]
    assert point["time_to_train_days"] <= 72 < point["time_to_train_days_high"]
    assert 0.5 <= point["p_meet_deadline"] < 0.9
    assert sure["n_gpus"] > point["n_gpus"]
    # the P90 is the interval's high end widened by run-to-run variability and the failures' Poisson spread
    assert sure["time_to_train_days_p90"] == pytest.approx(sure["time_to_train_days_at_confidence"], rel=1e-12)
    assert sure["time_to_train_days_high"] < sure["time_to_train_days_at_confidence"]
    assert sure["time_to_train_days_at_confidence"] <= 72 and sure["p_meet_deadline"] >= 0.9
    table = run_cli("plan", *BIG, "--deadline", "72d", "--confidence", "0.9", "--quiet").out
    assert "within 72.0 days, each with probability at least 0.9;" in table
    assert f"Fastest:  gb300-nvl72:NVFP4 on {sure['n_gpus']:,} GPUs" in table
    assert f"P(meet 72.0 days) {sure['p_meet_deadline']:.2f}" in table


@settings(max_examples=5, deadline=None)
@given(st.floats(0.05, 0.95), st.floats(0.05, 0.95))
def test_a_higher_confidence_never_costs_less(a: float, b: float) -> None:
    """A deadline plan is the cheapest count meeting it at the goal's confidence: a count meeting it at the higher
    confidence meets it at the lower, where it costs no more, so the surer plan's cost at its confidence is no less
    (its GPU count may be either side: a DP that divides the batch)."""
    low, high = sorted((a, b))
    plans = [perfmodel.plan(model="llama3.1-8b", tokens=100e9, gpu="h100-sxm:fp8", deadline_s=2 * 86400,
                            budget_usd=5e4, confidence=q).plans[0] for q in (low, high)]  # fmt: skip
    costs = [p.to_dict()["cost_usd_at_confidence"] for p in plans if p.feasible]
    if len(costs) == 2:
        assert costs[0] <= costs[1] * (1 + 1e-12)
    else:
        assert plans[0].feasible or not plans[1].feasible


def test_budget_probability_is_of_the_cost_at_the_plans_price() -> None:
    (c,) = run_json("plan", *SMALL, "--budget", "20000", "--confidence", "0.8", "--quiet")["candidates"]
    assert c["cost_usd_at_confidence"] <= 20000 and c["p_within_budget"] >= 0.8
    assert c["p_meet_deadline"] is None


@pytest.mark.parametrize("value", ["0", "1", "1.5", "-0.1", "nan"])
def test_bad_confidences_are_refused_in_one_line(value: str) -> None:
    result = run_cli("plan", *SMALL, "--deadline", "3d", "--confidence", value, "--quiet")
    assert result.code == 2 and result.out == ""
    assert result.err.strip().count("\n") == 0 and "--confidence" in result.err and "between 0 and 1" in result.err


def test_the_api_refuses_a_bad_confidence() -> None:
    with pytest.raises(PerfmodelError, match=r"confidence=1\.0: allowed a probability strictly between 0 and 1"):
        perfmodel.plan(model="llama3.1-8b", tokens=100e9, gpu="h100-sxm:fp8", deadline_s=86400, confidence=1.0)


def test_predict_deadline_gives_the_probability_of_finishing() -> None:
    args = ("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "64", "--tokens", "100B")
    point = run_json(*args)["time_to_train_with_losses_days"]
    at_point = run_json(*args, "--deadline", f"{point * 24}h")
    assert at_point["p_finish_within_deadline"] == pytest.approx(0.5, abs=1 / chance.SAMPLES)  # one draw
    later = run_json(*args, "--deadline", f"{point * 1.2}d")["p_finish_within_deadline"]
    assert 0.9 < later < 1
    table = run_cli(*args, "--deadline", f"{point * 1.2}d").out
    assert f"with losses): {later:.2f}" in table


@given(st.floats(0.5, 2.0), st.floats(0.5, 2.0))
def test_the_probability_rises_with_the_deadline(a: float, b: float) -> None:
    interval, (near, far) = _forward(), sorted((a, b))
    assert chance.probability_within(interval, near) <= chance.probability_within(interval, far)


def test_the_probability_rises_with_the_gpus() -> None:
    """405B on GB300 NVFP4 within 53 days, on the counts plan tries: the interval widens beyond the measured scale
    bands, but never by more than the time falls."""
    work = {"model": "llama3.1-405b", "gpu": "gb300", "precision": "nvfp4", "tokens": 15.6e12, "gbs": 2048}
    counts = (1792, 2560, 3072, 3584, 4096, 6144)
    chances = [p_within(perfmodel.predict(n_gpus=n, **work), 53 * 86400) for n in counts]  # type: ignore[arg-type]
    assert chances == sorted(chances) and chances[0] < 0.01 and chances[-1] > 0.99
