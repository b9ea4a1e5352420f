"""Issue 31, items 1 and 4: power per GPU at the wall (board, host share, network), a site power cap on plans
(`plan --power-mw`), carbon (operational and embodied), and P10/P50/P90 in every output that has an interval."""

from __future__ import annotations

import json
import math
from pathlib import Path

import openpyxl
import pytest
from conftest import run_cli, run_json
from hypothesis import given, settings
from hypothesis import strategies as st
from workbook import Recalculator, cells_by_key

import perfmodel
from perfmodel.errors import PerfmodelError
from perfmodel.inputs.hardware import resolve
from perfmodel.physics.calibration import Interval
from perfmodel.planning import carbon
from perfmodel.planning import confidence as chance
from perfmodel.planning.plan import p_within, power_cap_gpus, power_mw

SMALL = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "64", "--tokens", "100B")


@pytest.mark.parametrize(
    ("system_id", "system_kw"),
    [("dgx-b200", 14.3), ("dgx-b300", 14.5)],  # accelerators_sources.md section 6: 'DGX B200 14.3 kW, DGX B300 14.5 kW
)  # per 8-GPU system' (S22)
def test_a_dgx_draws_its_published_system_power(system_id: str, system_kw: float) -> None:
    hw = resolve(system=system_id)
    host = hw.system.host_w_per_gpu.value + hw.accelerator.power_w.value
    assert 8 * host / 1000 == pytest.approx(system_kw)
    assert hw.it_power_w_per_gpu == host + hw.system.network_w_per_gpu.value


def test_an_nvl72_rack_draws_its_published_power() -> None:
    """accelerators_sources.md section 6: GB200 NVL72 ~120 kW a rack (S21), every tray and switch in."""
    hw = resolve(system="gb200-nvl72")
    assert 72 * (hw.accelerator.power_w.value + hw.system.host_w_per_gpu.value) / 1000 == pytest.approx(120, rel=1e-3)


def test_energy_and_carbon_follow_the_power_at_the_wall() -> None:
    d = run_json("predict", *SMALL)
    hw = resolve(system="dgx-h100")
    assert d["power_w_per_gpu_at_wall"] == hw.it_power_w_per_gpu > hw.accelerator.power_w.value
    kwh = 64 * hw.it_power_w_per_gpu * d["pue"] * d["time_to_train_s"] / 3.6e6
    assert d["energy_kwh"] == pytest.approx(kwh, rel=1e-12)
    assert d["grid_gco2_per_kwh"] == 367.0  # the US default: EIA, 0.81 lb CO2 per kWh in 2023
    assert d["co2e_t"] == pytest.approx(d["energy_kwh"] * 367 / 1e6, rel=1e-12)
    # BLOOM's embodied 11.2 tCO2e over 1,082,990 A100 GPU-hours (Luccioni et al., JMLR 2023)
    assert d["co2e_embodied_t"] == pytest.approx(d["gpu_hours"] * 11.2 / 1_082_990, rel=1e-12)
    france = run_json("predict", *SMALL, "--grid-gco2-per-kwh", "france")
    assert france["co2e_t"] == pytest.approx(d["co2e_t"] * 32 / 367, rel=1e-12)
    assert run_json("predict", *SMALL, "--grid-gco2-per-kwh", "100")["co2e_t"] == pytest.approx(d["co2e_t"] * 100 / 367)
    table = run_cli("predict", *SMALL).out
    assert "Carbon" in table and f"{d['co2e_t']:,.2f} tCO2e operational at 367 gCO2e/kWh" in table
    assert "grid 367 gCO2e/kWh (default: us)" in table


@pytest.mark.parametrize("value", ["mars", "-1", "1e9", "nan"])
def test_a_bad_grid_is_refused_in_one_line(value: str) -> None:
    result = run_cli("predict", *SMALL, "--grid-gco2-per-kwh", value)
    assert result.code == 2 and result.out == "" and result.err.strip().count("\n") == 0
    assert "--grid-gco2-per-kwh" in result.err and "us, world, france" in result.err


def test_predicts_quantiles_add_run_to_run_variability_to_the_interval() -> None:
    """predict's P10/P90 are the combined distribution's, wider than the 80% interval; with the variability off
    (--run-to-run-sd 0) they are the interval's ends; the P50 is the point exactly either way."""
    d, off = run_json("predict", *SMALL), run_json("predict", *SMALL, "--run-to-run-sd", "0")
    for key in ("time_to_train_s", "gpu_hours", "energy_kwh"):
        assert d[f"{key}_p50"] == d[key] == off[f"{key}_p50"]
        assert off[f"{key}_p10"] == pytest.approx(off[f"{key}_low"], rel=1e-9)
        assert off[f"{key}_p90"] == pytest.approx(off[f"{key}_high"], rel=1e-9)
        # wider from P10 to P90 (centred on the point, the P10 may sit a little inside the interval's low end)
        assert d[f"{key}_p90"] / d[f"{key}_p10"] > d[f"{key}_high"] / d[f"{key}_low"]
        assert d[f"{key}_high"] < d[f"{key}_p90"]
    assert d["cost_usd_p50"] == d["cost_usd"] and d["co2e_t_p50"] == d["co2e_t"]
    assert off["cost_usd_p90"] == pytest.approx(off["cost_usd_high"], rel=1e-9)
    assert d["cost_usd_p90"] / d["cost_usd"] == pytest.approx(d["time_to_train_s_p90"] / d["time_to_train_s"])
    (c,) = run_json("plan", "--model", "llama3.1-8b", "--tokens", "100B", "--gpu", "h100-sxm:fp8", "--deadline", "3d",
                 "--quiet")["candidates"]  # fmt: skip
    assert c["time_to_train_days_p50"] == c["time_to_train_days"] and c["cost_usd_p50"] == c["cost_usd"]
    # a plan's run on its goal basis spreads wider than the interval: run-to-run variability and random failures
    assert c["time_to_train_days_p10"] < c["time_to_train_days"]
    assert c["time_to_train_days"] < c["time_to_train_days_high"] < c["time_to_train_days_p90"]
    assert c["p_deadline"] == c["p_meet_deadline"] and c["p_budget"] is None


@given(
    st.one_of(st.none(), st.tuples(st.floats(0.3, 1.0), st.floats(1.0, 3.0))),
    st.floats(1e-6, 1e12, allow_nan=False),
)
def test_with_no_spread_or_any_the_median_is_the_point_exactly(band: tuple[float, float] | None, value: float) -> None:
    interval = None if band is None else Interval(band[0], band[1], "forward")
    q = chance.quantiles(interval, {"x": value})
    assert q["x_p50"] == value
    assert q["x_p10"] <= q["x_p50"] <= q["x_p90"]
    for key, level in (("x_p10", 0.1), ("x_p90", 0.9)):  # the distribution's own quantiles
        assert q[key] == pytest.approx(value * chance.time_factor(interval, level), rel=1e-9)
    if interval is None:
        assert q["x_p10"] == q["x_p90"] == value


@settings(max_examples=6, deadline=None)
@given(st.sampled_from([8, 16, 32, 64]), st.sampled_from([2, 4]), st.floats(0.5, 3.0), st.floats(1.05, 2.0))
def test_the_chance_of_a_deadline_rises_with_gpus_and_with_the_deadline(
    n: int, more: int, days: float, later: float
) -> None:
    fewer, bigger = (
        perfmodel.predict(model="llama3.1-8b", gpu="h100-sxm", n_gpus=k, tokens=100e9) for k in (n, n * more)
    )
    deadline_s = days * 86400
    assert p_within(bigger, deadline_s) >= p_within(fewer, deadline_s)
    assert p_within(fewer, deadline_s * later) >= p_within(fewer, deadline_s)


@settings(max_examples=5, deadline=None)
@given(st.floats(0.05, 3.0))
def test_a_power_cap_never_gives_a_plan_above_it(cap_mw: float) -> None:
    hw = resolve(system="dgx-h100")
    try:
        report = perfmodel.plan(model="llama3.1-8b", tokens=100e9, gpu="h100-sxm:fp8", budget_usd=1e5,
                                deadline_s=86400, power_mw=cap_mw)  # fmt: skip
    except PerfmodelError as exc:  # below one node: 8 x 1,365 W x PUE 1.2 = 0.0131 MW
        assert cap_mw < 8 * hw.it_power_w_per_gpu * 1.2 / 1e6 and "below one dgx-h100" in str(exc)
        return
    (c,) = report.plans
    cap_gpus = power_cap_gpus(hw, cap_mw, 1.2)
    assert all(n <= cap_gpus for n in c.tried)
    if c.prediction is not None:
        assert power_mw(c.prediction) <= cap_mw
        assert c.to_dict()["power_mw"] == power_mw(c.prediction)


def test_a_cap_below_one_node_is_a_one_line_error() -> None:
    args = ("plan", "--model", "llama3.1-405b", "--tokens", "15T", "--deadline", "60d", "--gpu", "gb300")
    result = run_cli(*args, "--power-mw", "0.1")
    assert result.code == 2 and result.out == "" and result.err.strip().count("\n") == 0
    assert "--power-mw 0.1: below one gb300-nvl72 (0.1698 MW" in result.err  # 72 x 1,965 W x 1.2
    bad = run_cli(*args, "--power-mw", "-3")
    assert bad.code == 2 and bad.err.strip().count("\n") == 0 and "--power-mw" in bad.err


def test_the_power_cap_binds_a_budget_plan_and_is_shown() -> None:
    args = ("plan", "--model", "llama3.1-70b", "--tokens", "15T", "--budget", "60M", "--gpu", "gb300", "--quiet")
    free = run_json(*args)["candidates"][0]
    capped = run_json(*args, "--power-mw", "2")
    (c,) = capped["candidates"]
    assert capped["goal"]["power_cap_mw"] == 2.0 and c["binds"] == "power-mw"
    assert c["power_mw"] <= 2 < free["power_mw"] and c["n_gpus"] < free["n_gpus"]
    table = run_cli(*args, "--power-mw", "2").out
    assert "in at most 2 MW at the wall" in table and f"{c['power_mw']:,.1f}" in table
    assert math.isclose(c["co2e_t"], carbon.operational_t(c["energy_kwh"], 367.0))


def test_the_workbook_prices_carbon_and_quantiles_live(tmp_path: Path) -> None:
    """Carbon and P10/P50/P90 are formulas on the cells: a planner's grid recomputes as perfmodel would."""
    out = tmp_path / "carbon.xlsx"
    assert run_cli("export", "predict", *SMALL, "--out", str(out)).code == 0
    cells = cells_by_key(out, ("Inputs", "Results"))
    ws = openpyxl.load_workbook(out)["Inputs"]
    grid = next(("Inputs", row[1].coordinate) for row in ws.iter_rows(min_row=7) if row[2].value == "grid_gco2_per_kwh")
    france = run_json("predict", *SMALL, "--grid-gco2-per-kwh", "france")
    values = Recalculator(out)({grid: 32.0})
    for key in ("co2e_t", "co2e_t_p10", "co2e_t_p50", "co2e_t_p90", "co2e_embodied_t"):
        assert values[cells[(key, 0)]] == pytest.approx(france[key], rel=1e-9), key
    assert values[cells[("time_to_train_days_p90", 0)]] == pytest.approx(france["time_to_train_days_p90"], rel=1e-9)


def test_the_plan_workbook_carries_the_probabilities_and_their_method(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    args = ("--model", "llama3.1-8b", "--tokens", "100B", "--gpu", "h100-sxm:fp8", "--deadline", "3d")
    assert run_cli("export", "plan", *args, "--confidence", "0.8", "--power-mw", "1", "--out", str(out)).code == 0
    (row,) = json.loads(out.read_text())["rows"]
    (c,) = run_json("plan", *args, "--confidence", "0.8", "--power-mw", "1", "--quiet")["candidates"]
    for key in ("p_deadline", "power_mw"):
        assert row[key] == c[key], key
    assert (
        row["co2e_t"] == c["plan"]["co2e_t"] < c["co2e_t"]
    )  # the rows failure-free, as predict's; the plan's with losses
    assert row["confidence"] == 0.8 and row["power_cap_mw"] == 1 and row["power_mw"] <= 1
    book = tmp_path / "plan.xlsx"
    assert run_cli("export", "plan", *args, "--confidence", "0.8", "--out", str(book)).code == 0
    summary = " ".join(str(v) for r in openpyxl.load_workbook(book)["Summary"].iter_rows(values_only=True) for v in r)
    assert "p_deadline and p_budget are values, not formulas" in summary
