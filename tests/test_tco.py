"""Cost of ownership (--buy): capex amortised over the hours trained, power and facility, in predict, plan and the
workbook's live formulas."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest
from conftest import run_cli
from workbook import Recalculator

from perfmodel.inputs.hardware import get_system

WORK = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "64", "--precision", "fp8", "--tokens", "1T")


def _predict(*args: str) -> dict:
    result = run_cli("predict", *WORK, *args, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


WALL_KW = (700 + 575 + 90) / 1000
"""A DGX H100's power per GPU at the wall before PUE: board, host share (10.2 kW less 8 x 700 W, per GPU), network
(hardware_specs/systems/dgx-h100.toml and inputs/hardware.py's default)."""


def test_owning_a_dgx_h100() -> None:
    d = _predict("--buy")
    system = get_system("dgx-h100")
    assert system.usd_per_system is not None and "estimate" in system.usd_per_system.source
    capex = 375_000 / 8 / (4 * 8760 * 0.8)  # mid price / GPUs / hours trained in 4 years at 80%
    power = WALL_KW * 1.2 * 0.08  # kW x PUE x USD/kWh
    assert d["cost_mode"] == "buy" and d["usd_per_gpu_hour"] == pytest.approx(capex + power, rel=1e-12)
    assert d["min_usd_per_gpu_hour"] == pytest.approx(300_000 / 8 / (4 * 8760 * 0.8) + power, rel=1e-12)
    assert d["cost_usd"] == pytest.approx(d["gpu_hours"] * d["usd_per_gpu_hour"], rel=1e-12)
    assert d["usd_per_million_tokens"] == pytest.approx(d["cost_usd"] / 1e6, rel=1e-12)
    assert d["tco"]["capex_usd_per_gpu_hour"] == pytest.approx(capex, rel=1e-12)
    rented = _predict()
    assert rented["cost_mode"] == "rent" and "tco" not in rented
    assert rented["usd_per_million_tokens"] == pytest.approx(rented["cost_usd"] / 1e6, rel=1e-12)


def test_the_parameters_of_owning() -> None:
    base = _predict("--buy")["usd_per_gpu_hour"]
    assert _predict("--buy", "--utilisation", "0.4")["usd_per_gpu_hour"] > base
    assert _predict("--buy", "--amortisation-years", "6")["usd_per_gpu_hour"] < base
    facility = _predict("--buy", "--facility-usd-per-kw-month", "150")
    assert facility["tco"]["facility_usd_per_gpu_hour"] == pytest.approx(150 * 12 * WALL_KW / (8760 * 0.8))
    given = _predict("--buy", "--usd-per-system", "800000", "--electricity-usd-per-kwh", "0.2")
    assert given["usd_per_gpu_hour"] == pytest.approx(800_000 / 8 / (4 * 8760 * 0.8) + WALL_KW * 1.2 * 0.2)
    assert given["min_usd_per_gpu_hour"] == given["max_usd_per_gpu_hour"]


def test_an_nvl72_rack_is_paid_by_the_64_gpus_a_job_uses() -> None:
    """S17 (Ornn, accelerators_sources.md): GB200 NVL72 racks sell for $3.0-3.9M; a job fills 64 of 72 GPUs."""
    result = run_cli("predict", "--model", "llama3.1-8b", "--gpu", "gb200", "--gpus", "64", "--tokens", "1T",
                     "--buy", "--format", "json")  # fmt: skip
    t = json.loads(result.out)["tco"]
    assert (t["min_usd_per_system"], t["max_usd_per_system"], t["gpus_per_system"]) == (3.0e6, 3.9e6, 64)
    assert "S17" in t["usd_per_system_source"]


def test_plan_budgets_with_the_cost_of_owning() -> None:
    args = ("plan", "--model", "llama3.1-8b", "--tokens", "100B", "--gpu", "h100-sxm:fp8", "--deadline", "3d")
    rent = json.loads(run_cli(*args, "--format", "json", "--quiet").out)["candidates"][0]
    buy = json.loads(run_cli(*args, "--buy", "--format", "json", "--quiet").out)["candidates"][0]
    assert buy["n_gpus"] == rent["n_gpus"] and buy["cost_usd"] < rent["cost_usd"]
    assert buy["plan"]["cost_mode"] == "buy"


def test_the_workbook_prices_ownership_with_live_formulas(tmp_path: Path) -> None:
    out = tmp_path / "tco.xlsx"
    assert run_cli("export", "predict", *WORK, "--buy", "--out", str(out)).code == 0
    book = openpyxl.load_workbook(out)
    cells = {}
    for sheet in ("Inputs", "Results"):
        for cell in book[sheet][5]:
            if cell.value:
                cells[cell.value] = (sheet, f"{cell.column_letter}6")
    sheet, ref = cells["owned_usd_per_gpu_hour"]
    assert str(book[sheet][ref].value).startswith("=")
    engine = Recalculator(out)
    d = _predict("--buy")
    values = engine()
    assert values[cells["owned_usd_per_gpu_hour"]] == pytest.approx(d["usd_per_gpu_hour"], rel=1e-9)
    assert values[cells["cost_usd_owned"]] == pytest.approx(d["cost_usd"], rel=1e-9)
    edited = engine({cells["usd_per_system"]: 750_000})  # twice the price: twice the capex share
    capex = d["tco"]["capex_usd_per_gpu_hour"]
    assert edited[cells["owned_usd_per_gpu_hour"]] == pytest.approx(d["usd_per_gpu_hour"] + capex, rel=1e-9)


def test_the_api_takes_buy_as_a_boolean() -> None:
    """perfmodel.predict(buy=True) is what a notebook writes: it was refused ('must be 'rent' or 'buy'')."""
    import perfmodel

    owned = perfmodel.predict(buy=True).to_dict()
    assert owned["cost_mode"] == "buy" and owned == perfmodel.predict(buy="buy").to_dict()
    assert perfmodel.predict(buy=False).to_dict()["cost_mode"] == "rent"
