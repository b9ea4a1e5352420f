"""predict's P10/P50/P90 as the combined distribution's (issue 31, item 1): the interval and the run-to-run
variability added in closed form up to one integral (planning/two_piece.py), the variability settable (item 3)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

import perfmodel
from perfmodel.physics.calibration import Interval
from perfmodel.planning import confidence as chance
from perfmodel.planning import two_piece
from perfmodel.planning.plan import goal_basis, p_within, spread, time_factor
from perfmodel.planning.variability import MEASURED_SD

SMALL = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 64, "tokens": 1e11}


def test_the_written_out_normal_quantile_is_the_standard_normals() -> None:
    assert NormalDist().inv_cdf(0.9) == pytest.approx(chance.Z_END, rel=1e-15)


@settings(max_examples=30, deadline=None)
@given(st.floats(1e-4, 0.5), st.floats(1e-4, 0.5), st.floats(0.01, 0.99))
def test_with_equal_sides_the_sum_is_the_normal_of_both_spreads(side: float, sd: float, q: float) -> None:
    """A two-piece normal of equal sides is a normal: the sum's quantile is the normal of spread hypot(side, sd)."""
    expected = NormalDist(0, math.hypot(side, sd)).inv_cdf(q)
    assert two_piece.quantile(q, side, side, sd) == pytest.approx(expected, abs=1e-9 * math.hypot(side, sd))


@pytest.mark.parametrize(("above", "below"), [(0.053, 0.105), (0.0, 0.05), (0.3, 0.0), (0.0, 0.0)])
def test_the_quadrature_is_the_distribution_of_a_million_draws(above: float, below: float) -> None:
    """Against 10^6 draws of the sum itself (the README case: an interval x0.874 to x1.070), within 4 standard
    errors of each draws' quantile; also where a side has no spread (a step in the integrand)."""
    rng = np.random.default_rng(7)
    z, w = rng.standard_normal(10**6), rng.standard_normal(10**6)
    sample = np.where(z > 0, above * z, below * z) + MEASURED_SD * w
    for q in (0.1, 0.5, 0.9):
        x = two_piece.quantile(q, above, below, MEASURED_SD)
        assert two_piece.cdf_pdf(x, above, below, MEASURED_SD)[0] == pytest.approx(q, abs=1e-12)
        assert abs(float(np.mean(sample <= x)) - q) < 4 * math.sqrt(q * (1 - q) / 10**6)


def test_without_interruptions_the_closed_form_is_what_the_draws_give() -> None:
    """The same spread drawn (a negligible interruption makes plan's Monte-Carlo answer) and in closed form agree to
    the draws' own error: the plan's failure-free quantiles and predict's are one distribution."""
    interval = Interval(0.874, 1.070, "forward")
    closed = chance.Spread(interval, MEASURED_SD)
    drawn = chance.Spread(interval, MEASURED_SD, 1e-9, 1e-12)
    assert drawn.drawn and not closed.drawn and not closed.closed
    for q in (0.1, 0.25, 0.75, 0.9):
        assert chance.spread_factor(closed, q) == pytest.approx(chance.spread_factor(drawn, q), rel=2e-3)
    for ratio in (0.9, 0.97, 1.03, 1.06):
        assert chance.spread_within(closed, ratio) == pytest.approx(chance.spread_within(drawn, ratio), abs=0.01)


def test_predicts_quantiles_are_a_failure_free_plans() -> None:
    """With failures and losses off, a plan's run is predict's: its spread, quantiles and probabilities the same."""
    p = perfmodel.predict(goodput="none", losses="none", **SMALL)  # type: ignore[arg-type]
    assert goal_basis(p) == "failure-free" and spread(p) == p.spread
    record = p.to_dict()
    assert record["time_to_train_s_p90"] == record["time_to_train_s"] * time_factor(p, 0.9)
    assert p_within(p, record["time_to_train_s_p90"]) == pytest.approx(0.9, abs=1e-9)


def test_with_no_uncertainty_the_quantiles_are_the_point_exactly() -> None:
    p = perfmodel.predict(calibration="none", run_to_run_sd=0, **SMALL)  # type: ignore[arg-type]
    record = p.to_dict()
    for key in ("time_to_train_s", "gpu_hours", "cost_usd", "energy_kwh", "co2e_t"):
        assert record[f"{key}_p10"] == record[f"{key}_p50"] == record[f"{key}_p90"] == record[key], key


def test_the_run_to_run_variability_is_the_scenarios() -> None:
    """Default the measured spread; a wider one widens the P10-P90 and leaves the P50 the point; 0 turns it off."""
    spreads = {sd: perfmodel.predict(run_to_run_sd=sd, **SMALL).to_dict() for sd in (None, 0.0, 0.05)}  # type: ignore[arg-type]
    assert perfmodel.predict(**SMALL).spread.run_sd == MEASURED_SD  # type: ignore[arg-type]
    widths = {sd: r["time_to_train_s_p90"] / r["time_to_train_s_p10"] for sd, r in spreads.items()}
    assert widths[0.0] < widths[None] < widths[0.05]
    assert len({r["time_to_train_s_p50"] for r in spreads.values()}) == 1
    assert spreads[0.0]["time_to_train_s_p90"] == pytest.approx(spreads[0.0]["time_to_train_s_high"], rel=1e-12)


@pytest.mark.parametrize(("value", "allowed"), [("-0.01", "0<=x<=0.5"), ("0.6", "0<=x<=0.5"), ("x", "not a valid")])
def test_a_bad_run_to_run_variability_is_one_line(value: str, allowed: str) -> None:
    result = run_cli("predict", "--run-to-run-sd", value)
    assert result.code == 2 and allowed in result.err and "Traceback" not in result.err
    assert "--run-to-run-sd" in result.err and len(result.err.strip().splitlines()) == 1


def test_the_quantiles_need_neither_numpy_nor_statistics() -> None:
    """predict's record (the quantiles among it) of a given layout: pure Python, as the prediction (test_fast_path)."""
    code = (
        "import sys; from perfmodel.api import load_scenario, predict; predict(load_scenario()).to_dict(); "
        "assert not {'numpy', 'statistics'} & set(sys.modules), 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_workbook_gives_the_quantile_factors_as_values_with_their_method(tmp_path: Path) -> None:
    """The P10/P90 factors are values (quadrature is no spreadsheet arithmetic), headed with their method; the P90
    columns are live on them, and a new P90 factor moves every P90 (the cost's on its own factor, the time's where
    no price distribution is stated)."""
    import openpyxl
    from workbook import Recalculator, cells_by_key

    out = tmp_path / "q.xlsx"
    assert run_cli("export", "predict", "--out", str(out)).code == 0
    d = perfmodel.predict().to_dict()
    cells = cells_by_key(out, ("Results",))
    sheet, factor = cells[("quantile_factor_p90", 0)]
    ws = openpyxl.load_workbook(out)[sheet]
    assert ws[factor].value == pytest.approx(d["time_to_train_s_p90"] / d["time_to_train_s"], rel=1e-12)
    assert "run-to-run variability" in str(ws.cell(4, ws[factor].column).value)
    cost_sheet, cost_factor = cells[("cost_quantile_factor_p90", 0)]
    assert ws[cost_factor].value == ws[factor].value
    values = Recalculator(out)({(sheet, factor): 2.0, (cost_sheet, cost_factor): 3.0})
    for key in ("time_to_train_days", "gpu_hours", "energy_kwh"):
        assert values[cells[(f"{key}_p90", 0)]] == pytest.approx(2 * d[key], rel=1e-9), key
    assert values[cells[("cost_usd_p90", 0)]] == pytest.approx(3 * d["cost_usd"], rel=1e-9)


def test_the_workbook_states_the_run_to_run_variability_and_its_source(tmp_path: Path) -> None:
    import openpyxl

    for flags, value, source in (((), MEASURED_SD, "MLPerf Training"), (("--run-to-run-sd", "0.02"), 0.02, "given")):
        out = tmp_path / f"{source}.xlsx"
        assert run_cli("export", "predict", *flags, "--out", str(out)).code == 0
        rows = openpyxl.load_workbook(out)["Assumptions"].iter_rows(values_only=True)
        (row,) = [row for row in rows if "run_to_run_sd" in row]
        assert value in row and any(source in str(cell) for cell in row), row


WITH_LOSSES = ("time_to_train_with_losses_s", "time_to_train_with_losses_days", "gpu_hours_with_losses",
               "cost_usd_with_losses", "energy_kwh_with_losses")  # fmt: skip


@pytest.mark.parametrize(
    ("scenario", "many"),
    [({}, True), (SMALL, False), (SMALL | {"n_gpus": 16384, "model": "llama3.1-405b", "tokens": 15e12}, True)],
)
def test_predicts_with_losses_quantiles_are_its_plans(scenario: dict, many: bool) -> None:
    """predict's `_with_losses` quantiles: the P50 the point exactly; the P10 and P90 a plan's on the same run (its
    Monte-Carlo draws of the interruptions), exactly where they are few, and within the draws' noise where they are
    many and read as a normal (the default scenario's 59, 405B on 16,384 GPUs' ~290: poisson_as_normal)."""
    p = perfmodel.predict(**scenario)  # type: ignore[arg-type]
    record, drawn = p.to_dict(), spread(p)
    assert goal_basis(p) == "with losses" and drawn == p.losses_spread
    assert (drawn.interruptions >= chance.NORMAL_COUNT) == many
    for key in WITH_LOSSES:
        assert record[f"{key}_p50"] == record[key], key
        for q, level in (("p10", 0.1), ("p90", 0.9)):
            factor = chance.spread_factor(drawn, level)
            if many:
                assert record[f"{key}_{q}"] == pytest.approx(record[key] * factor, rel=2e-3), key
            else:
                assert record[f"{key}_{q}"] == record[key] * factor, key


def test_the_normal_reading_of_many_interruptions_is_their_draws() -> None:
    """Many interruptions read as a normal: the quantiles of the draws (the same interval and variability), for a
    count of 20 to 500 and a tenth of the run lost to them at most."""
    for count, lost in ((20, 0.02), (60, 0.1), (500, 0.1)):
        drawn = chance.Spread(Interval(0.87, 1.07, "forward"), MEASURED_SD, count, lost / count)
        normal = chance.poisson_as_normal(drawn)
        assert not normal.drawn and normal.run_sd > MEASURED_SD
        for q in (0.1, 0.25, 0.75, 0.9):
            assert chance.spread_factor(normal, q) == pytest.approx(chance.spread_factor(drawn, q), rel=2e-3)


def test_with_no_uncertainty_the_with_losses_quantiles_are_the_point_exactly() -> None:
    p = perfmodel.predict(calibration="none", run_to_run_sd=0, goodput="none", **SMALL)  # type: ignore[arg-type]
    record = p.to_dict()
    for key in WITH_LOSSES:
        assert record[f"{key}_p10"] == record[f"{key}_p50"] == record[f"{key}_p90"] == record[key], key
