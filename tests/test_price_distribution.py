"""A price stated as a distribution, drawn in the cost's quantiles and P(cost within budget) (issue 31, item 1), and
`predict --budget`, the twin of `predict --deadline`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import run_cli, run_json
from hypothesis import given, settings
from hypothesis import strategies as st

import perfmodel
from perfmodel.planning import confidence as chance
from perfmodel.planning.plan import cost_factor, goal_run, p_affordable, spread, time_factor

SMALL = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 64, "tokens": 1e11}
RANGE = (2.0, 2.5, 4.0)
"""A right-skewed quote: most likely $2.50, at worst $4.00 per GPU-hour."""
LEVELS = (("p10", 0.1), ("p50", 0.5), ("p90", 0.9))


def _triangle_quantile(q: float, low: float, mode: float, high: float) -> float:
    """The triangular distribution's inverse, written out here independently of planning/confidence.py."""
    split = (mode - low) / (high - low)
    if q < split:
        return low + math.sqrt(q * (high - low) * (mode - low))
    return high - math.sqrt((1 - q) * (high - low) * (high - mode))


def test_without_a_distribution_the_cost_is_spread_by_the_time_alone() -> None:
    """No stated distribution (the default): the cost's quantiles are the time's factors on the cost at the quote,
    as before the price could be drawn, and no key is added."""
    p = perfmodel.predict(**SMALL)  # type: ignore[arg-type]
    d = p.to_dict()
    assert p.spread.price is None and "price_distribution" not in d
    for key, level in LEVELS:
        assert d[f"cost_usd_{key}"] == d["cost_usd"] * chance.spread_factor(p.spread, level)
        with_losses = d[f"time_to_train_with_losses_s_{key}"] / d["time_to_train_with_losses_s"]
        assert d[f"cost_usd_with_losses_{key}"] / d["cost_usd_with_losses"] == pytest.approx(with_losses, rel=1e-12)
    (c,) = perfmodel.plan(budget_usd=3e4, confidence=0.8, **SMALL | {"n_gpus": None}).to_dict()["candidates"]  # type: ignore[arg-type]
    factor = c["time_to_train_days_at_confidence"] / c["time_to_train_days"]
    assert c["cost_usd_at_confidence"] / c["cost_usd"] == pytest.approx(factor, rel=1e-12)
    assert c["cost_usd_p90"] / c["cost_usd"] == pytest.approx(c["time_to_train_days_p90"] / c["time_to_train_days"])


def test_the_price_alone_draws_the_triangle() -> None:
    """Without the model's error or run-to-run variability, the cost's factors are the price's: the triangle's
    quantiles and distribution, to the draws' noise (20,001 of them)."""
    stated = (0.8, 1.0, 1.6)
    price_only = chance.Spread(price=stated)
    for q in (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95):
        assert chance.cost_factor(price_only, q) == pytest.approx(_triangle_quantile(q, *stated), abs=4e-3)
        assert chance.cost_within(price_only, _triangle_quantile(q, *stated)) == pytest.approx(q, abs=6e-3)
    assert chance.spread_factor(price_only, 0.9) == 1.0, "the time does not draw the price"


def test_a_stated_distribution_spreads_the_cost_and_not_the_time() -> None:
    quoted = perfmodel.predict(usd_per_gpu_hour=RANGE[1], **SMALL).to_dict()  # type: ignore[arg-type]
    drawn = perfmodel.predict(price_range=RANGE, **SMALL).to_dict()  # type: ignore[arg-type]
    assert drawn["usd_per_gpu_hour"] == RANGE[1] and drawn["cost_usd"] == quoted["cost_usd"]
    assert (drawn["min_usd_per_gpu_hour"], drawn["max_usd_per_gpu_hour"]) == (RANGE[0], RANGE[2])
    assert drawn["price_distribution"] | {"drawn_in": None} == {"kind": "triangular", "low": 2.0, "mode": 2.5,
                                                                "high": 4.0, "drawn_in": None}  # fmt: skip
    for key, _ in LEVELS:
        assert drawn[f"time_to_train_s_{key}"] == quoted[f"time_to_train_s_{key}"]
    # a right-skewed price: the cost's median and P90 rise above the quote's; its P10 stays above the low end's
    assert drawn["cost_usd_p50"] > quoted["cost_usd_p50"] == quoted["cost_usd"]
    assert drawn["cost_usd_p90"] > quoted["cost_usd_p90"]
    assert drawn["cost_usd_with_losses_p90"] > quoted["cost_usd_with_losses_p90"]
    assert drawn["cost_usd_p10"] > quoted["cost_usd_p10"] * RANGE[0] / RANGE[1]
    # the mean of time x price is the product of their means (independent draws): the price's mean is its
    # triangle's (2 + 2.5 + 4) / 3 over the quote
    p = perfmodel.predict(price_range=RANGE, calibration="none", run_to_run_sd=0, **SMALL)  # type: ignore[arg-type]
    assert chance.cost_factor(p.spread, 0.5) == pytest.approx(_triangle_quantile(0.5, *RANGE) / RANGE[1], abs=4e-3)


def test_the_draws_are_seeded() -> None:
    stated = chance.Spread(price=(0.9, 1.0, 1.3), run_sd=0.02)
    first = chance.cost_factor(stated, 0.9)
    chance._cost_factors.cache_clear()
    chance._price_uniforms.cache_clear()
    assert chance.cost_factor(stated, 0.9) == first


def test_a_plan_draws_the_price_in_its_budget() -> None:
    """At the same quote, a stated distribution that can only raise the price lowers P(within budget) and raises the
    cost at the confidence, and the plan meets the budget on it."""
    goal = {"budget_usd": 2.2e4, "confidence": 0.8, "model": "llama3.1-8b", "gpu": "h100-sxm:fp8", "tokens": 1e11}
    quoted = perfmodel.plan(usd_per_gpu_hour=RANGE[1], **goal).plans[0]  # type: ignore[arg-type]
    drawn = perfmodel.plan(price_range=RANGE, **goal).plans[0]  # type: ignore[arg-type]
    assert quoted.prediction is not None and drawn.prediction is not None
    for plan in (quoted, drawn):
        d = plan.to_dict()
        if plan.feasible:
            assert d["cost_usd_at_confidence"] <= goal["budget_usd"] and d["p_within_budget"] >= 0.8
    p = drawn.prediction
    cost = goal_run(p).cost_usd  # type: ignore[union-attr]
    assert cost is not None
    assert cost_factor(p, 0.8) > time_factor(p, 0.8)
    assert p_affordable(p, cost * time_factor(p, 0.8)) < 0.8
    assert spread(p).price == (0.8, 1.0, 1.6)


@settings(max_examples=4, deadline=None)
@given(st.floats(0.05, 0.95), st.floats(0.05, 0.95))
def test_with_a_drawn_price_a_higher_confidence_never_needs_fewer_gpus(a: float, b: float) -> None:
    low, high = sorted((a, b))
    plans = [perfmodel.plan(model="llama3.1-8b", tokens=100e9, gpu="h100-sxm:fp8", deadline_s=2 * 86400,
                            budget_usd=3e4, confidence=q, price_range=RANGE).plans[0] for q in (low, high)]  # fmt: skip
    counts = [p.prediction.layout.n_gpus for p in plans if p.feasible]  # type: ignore[union-attr]
    if len(counts) == 2:
        assert counts[0] <= counts[1]
    else:
        assert plans[0].feasible or not plans[1].feasible


@pytest.mark.parametrize("value", ["3:2.5:4", "-1:2:3", "2:3:1", "1:2:20000", "0:0:0", "0:0:4"])
def test_a_bad_price_distribution_is_one_line(value: str) -> None:
    result = run_cli("predict", "--price-range", value)
    assert result.code == 2 and result.out == "" and "Traceback" not in result.err
    assert result.err.strip().count("\n") == 0
    assert "--price-range" in result.err and "usd_per_gpu_hour_range" in result.err and "low <= mode" in result.err


@pytest.mark.parametrize("value", ["1:2", "a:b:c", "1:2:3:4"])
def test_a_malformed_price_distribution_is_one_line(value: str) -> None:
    result = run_cli("predict", "--price-range", value)
    assert result.code == 2 and result.out == "" and "Traceback" not in result.err
    assert "--price-range" in result.err and "LOW:MODE:HIGH" in result.err


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ("usd_per_gpu_hour_range = [3.0, 2.0, 1.0]", "low <= mode <= high"),
        ("usd_per_gpu_hour_range = [1.0, 2.0]", "low <= mode <= high"),
        ('usd_per_gpu_hour_range = [1.0, 2.0, "x"]', "must be a number, unquoted"),
        ("usd_per_gpu_hour_range = [1.0, 2.0, 3.0]\nusd_per_gpu_hour = 2.0", "excludes a rental price"),
        ('usd_per_gpu_hour_range = [1.0, 2.0, 3.0]\nmode = "buy"', "excludes buying"),
    ],
)
def test_a_bad_price_distribution_in_a_file_names_the_file_and_field(tmp_path: Path, table: str, says: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(f'model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\n[cost]\n{table}\n')
    result = run_cli("predict", str(path))
    assert result.code == 2 and result.out == "" and result.err.strip().count("\n") == 0
    assert str(path) in result.err and "usd_per_gpu_hour_range" in result.err and says in result.err


def test_a_fleet_refuses_a_price_distribution(tmp_path: Path) -> None:
    fleet = tmp_path / "f.toml"
    fleet.write_text('[[offer]]\nname = "rent"\nsystem = "dgx-h100"\nusd_per_gpu_hour = 2.5\nmax_gpus = 1024\n')
    result = run_cli("plan", "--model", "llama3.1-8b", "--tokens", "100B", "--deadline", "3d", "--fleet", str(fleet),
                     "--price-range", "2:2.5:4", "--quiet")  # fmt: skip
    assert result.code == 2 and result.err.strip().count("\n") == 0 and "--price-range" in result.err


def test_the_tables_say_what_the_cost_quantiles_draw() -> None:
    args = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--tokens", "100B", "--price-range", "2:2.5:4")
    table = run_cli("predict", *args, "--gpus", "64").out
    assert "price triangular $2.00/$2.50/$4.00)" in table and "Cost " in table
    planned = run_cli("plan", *args, "--budget", "30000", "--confidence", "0.9", "--quiet").out
    assert "drawn over the stated price distribution" in planned


def test_predict_budget_gives_the_probability_of_costing_at_most_it() -> None:
    """The twin of --deadline: at the cost with losses itself, one half (the point is the median); above it more;
    plan's probability of the same prediction."""
    args = ("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "64", "--tokens", "100B")
    d = json.loads(run_cli(*args, "--format", "json").out)
    point = d["cost_usd_with_losses"]
    at_point = json.loads(run_cli(*args, "--budget", f"{point}", "--format", "json").out)
    assert at_point["budget_basis"] == "with losses"
    assert at_point["p_cost_within_budget"] == pytest.approx(0.5, abs=2 / chance.SAMPLES)
    more = json.loads(run_cli(*args, "--budget", f"{point * 1.1}", "--format", "json").out)["p_cost_within_budget"]
    assert 0.5 < more < 1
    p = perfmodel.predict(**SMALL)  # type: ignore[arg-type]
    assert more == p_affordable(p, point * 1.1)
    table = run_cli(*args, "--budget", f"{point * 1.1}").out
    assert f"with losses): {more:.2f}" in table
    # at the mode's quote and the same budget, a price that can only rise makes the budget less likely met
    quoted = run_json(*args, "--usd-per-gpu-hour", "2.5")
    budget = f"{quoted['cost_usd_with_losses'] * 1.1}"
    at_quote = run_json(*args, "--usd-per-gpu-hour", "2.5", "--budget", budget)["p_cost_within_budget"]
    drawn = run_json(*args, "--price-range", "2:2.5:4", "--budget", budget)["p_cost_within_budget"]
    assert drawn < at_quote == pytest.approx(more, abs=2 / chance.SAMPLES)


@pytest.mark.parametrize(
    ("targets", "says"),
    [
        (("--gpu", "h100-sxm@8", "--gpu", "b200@8"), "one price for candidates on different GPUs"),
        (("--gpu", "h100-sxm@8:$2"), "a price distribution and a candidate's own quote (h100-sxm) exclude each other"),
    ],
)
def test_one_distribution_prices_one_gpu(targets: tuple[str, ...], says: str) -> None:
    """A stated distribution is one GPU's price: candidates on two GPUs, or one with its own quote, are refused."""
    result = run_cli("compare", "--model", "llama3.1-8b", "--tokens", "100B", *targets, "--price-range", "2:2.5:4")
    assert result.code == 2 and result.err.strip().count("\n") == 0
    assert result.err.startswith("error: --price-range: ") and says in result.err


def test_the_workbook_draws_the_price_in_the_costs_quantiles(tmp_path: Path) -> None:
    """The cost's P10/P50/P90 are live on factors of their own (values: draws, not arithmetic), which are the
    time's without a stated price and time x price with one: the workbook gives what the JSON gives."""
    from workbook import Recalculator, cells_by_key

    out = tmp_path / "p.xlsx"
    assert run_cli("export", "predict", "--price-range", "2:2.5:4", "--out", str(out)).code == 0
    d = perfmodel.predict(price_range=RANGE).to_dict()  # type: ignore[arg-type]
    cells = cells_by_key(out, ("Results",))
    values = Recalculator(out)({})
    for key, _ in LEVELS:
        assert values[cells[(f"cost_usd_{key}", 0)]] == pytest.approx(d[f"cost_usd_{key}"], rel=1e-12), key
    assert d["cost_usd_p50"] > d["cost_usd"]
