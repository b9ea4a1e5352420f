"""The workbook's real-world losses: live formulas generated from planning/losses.py's own functions, which follow an
edited GPU count, price and straggler share as perfmodel's own arithmetic does (the formulas engine and LibreOffice);
the losses no formula of the sheet's cells gives (a batch ramp priced at its batches) are perfmodel's values."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from conftest import run_cli
from workbook import Cell, Recalculator, cells_by_key, libreoffice, recompute_libreoffice

from perfmodel.inputs.models import get_model
from perfmodel.inputs.scenario import Losses as LossSettings
from perfmodel.planning import goodput as gp
from perfmodel.planning import losses
from perfmodel.planning.training import Price, training_run

WORK = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "64", "--tokens", "1T", "--ramp-tokens", "20B",
        "--ramp-start-gbs", "128")  # fmt: skip
REL = 1e-9
FORMULAS = (
    "straggler_share_at_n_gpus", "losses.stragglers_gpu_hours", "losses.startup_gpu_hours", "checkpoint_writes",
    "losses.checkpoints_gpu_hours", "losses.failures_gpu_hours", "losses.total_gpu_hours",
    "time_to_train_with_losses_s", "time_to_train_with_losses_days", "gpu_hours_with_losses", "cost_usd_with_losses",
    "energy_kwh_with_losses",
)  # fmt: skip
EDITS = {"n_gpus": 1024, "usd_per_gpu_hour": 3.0, "straggler_share": 0.2}
"""A planner's edits: 16x the GPUs, a negotiated price, a worse straggler share than the fitted one."""


def _export(folder: Path, *flags: str) -> tuple[Path, dict[str, Any]]:
    for name in ("w.xlsx", "w.json"):
        result = run_cli("export", "predict", *WORK, *flags, "--out", str(folder / name))
        assert result.code == 0, result.err
    return folder / "w.xlsx", json.loads((folder / "w.json").read_text())["rows"][0]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return _export(tmp_path_factory.mktemp("losses"))


@pytest.fixture(scope="module")
def cells(exported: tuple[Path, dict[str, Any]]) -> dict[tuple[str, int], Cell]:
    """Every column key's cells, found once for the module's tests."""
    return cells_by_key(exported[0])


@pytest.fixture(scope="module")
def engine(exported: tuple[Path, dict[str, Any]]) -> Recalculator:
    """The workbook in the `formulas` engine, loaded once: a recomputation keeps no edit."""
    return Recalculator(exported[0])


def _edits(cells: dict[tuple[str, int], Cell], path: Path) -> dict[Cell, Any]:
    """EDITS on the row's cells; the straggler share on its one default cell, which the row's cell links to."""
    inputs = openpyxl.load_workbook(path)["Inputs"]
    default = next(f"B{r[0].row}" for r in inputs.iter_rows(min_row=7) if r[2].value == "straggler_share")
    assert inputs[cells[("straggler_share", 0)][1]].value == f"=${default[0]}${default[1:]}"
    return {
        cells[("n_gpus", 0)]: EDITS["n_gpus"],
        cells[("usd_per_gpu_hour", 0)]: EDITS["usd_per_gpu_hour"],
        ("Inputs", default): EDITS["straggler_share"],
    }


def _expected(row: dict[str, Any]) -> dict[str, float]:
    """perfmodel's losses at the edits, on the workbook's reading of a GPU count: the throughput per GPU kept; the
    goodput model at the exported checkpoint interval; the ramp's GPU-hours perfmodel's (a value)."""
    n, price = EDITS["n_gpus"], EDITS["usd_per_gpu_hour"]
    time_s = row["tokens_to_train"] / (row["tokens_per_s_per_gpu"] * n)
    run = training_run(row["tokens_to_train"], time_s, n, Price(price, price, price, "edited"), row["power_w_per_gpu"],
                       row["pue"])  # fmt: skip
    model = get_model("llama3.1-8b")
    state = gp.checkpoint_bytes(model.params, model.params)
    reliability = gp.goodput(n, 8, state, gp.Reliability(interval_s=row["checkpoint_interval_s"]))
    share = EDITS["straggler_share"]
    found = losses.losses(run, reliability, LossSettings(), n, (share, "given"), None)  # type: ignore[arg-type]
    assert found is not None
    ramp = row["losses.ramp_gpu_hours"]
    with_losses = losses.run_with_losses(
        run, found.gpu_hours + ramp, sum(x.time_s for x in found.items) + ramp * 3600 / n
    )
    by_name = {f"losses.{x.name}_gpu_hours": x.gpu_hours for x in found.items}
    return by_name | {
        "straggler_share_at_n_gpus": share * losses.straggler_scale(n),
        "losses.total_gpu_hours": found.gpu_hours + ramp,
        "time_to_train_with_losses_s": with_losses.time_s,
        "gpu_hours_with_losses": with_losses.gpu_hours,
        "cost_usd_with_losses": with_losses.cost_usd,  # type: ignore[dict-item]
        "energy_kwh_with_losses": with_losses.energy_kwh,
    }


def test_the_loss_cells_are_formulas_that_give_perfmodels_numbers(
    exported: tuple[Path, dict[str, Any]], cells: dict[tuple[str, int], Cell], engine: Recalculator
) -> None:
    path, row = exported
    book = openpyxl.load_workbook(path)
    values = engine()
    for key in FORMULAS:
        sheet, ref = cells[(key, 0)]
        assert str(book[sheet][ref].value).startswith("="), key
        assert values[(sheet, ref)] == pytest.approx(row[key], rel=REL), key
    straggler = book["Results"][cells[("straggler_share_at_n_gpus", 0)][1]].value
    assert "SQRT(LN(" in straggler  # losses.straggler_scale evaluated on the GPU count's cell
    sheet, ref = cells[("losses.ramp_gpu_hours", 0)]
    assert book[sheet][ref].value == pytest.approx(row["losses.ramp_gpu_hours"], rel=1e-15)  # perfmodel's value
    assert row["losses.ramp_gpu_hours"] > 0
    assert row["cost_usd_with_losses"] > row["cost_usd_with_failures"] > row["cost_usd"]


def test_the_losses_follow_an_edited_gpu_count_price_and_straggler_share(
    exported: tuple[Path, dict[str, Any]], cells: dict[tuple[str, int], Cell], engine: Recalculator
) -> None:
    path, row = exported
    after = engine(_edits(cells, path))
    expected = _expected(row)
    for key, value in expected.items():
        assert after[cells[(key, 0)]] == pytest.approx(value, rel=REL), key
    assert expected["losses.stragglers_gpu_hours"] > 2 * row["losses.stragglers_gpu_hours"]  # the edits matter
    assert expected["losses.startup_gpu_hours"] == pytest.approx(16 * row["losses.startup_gpu_hours"])
    assert expected["cost_usd_with_losses"] < 0.6 * row["cost_usd_with_losses"]


@pytest.mark.skipif(libreoffice() is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_follows_the_same_edits(
    exported: tuple[Path, dict[str, Any]], cells: dict[tuple[str, int], Cell]
) -> None:
    path, row = exported
    after = recompute_libreoffice(path, _edits(cells, path))
    for key, value in _expected(row).items():
        assert after[cells[(key, 0)]] == pytest.approx(value, rel=REL), key
    summary = openpyxl.load_workbook(path)["Summary"]
    column = next(c.column_letter for c in summary[5] if c.value == "cost_usd_with_losses")
    assert after[("Summary", f"{column}6")] == pytest.approx(_expected(row)["cost_usd_with_losses"], rel=REL)


def test_without_failures_the_losses_add_up_without_them(tmp_path: Path) -> None:
    """--goodput none: the failure and checkpoint cells are empty, and the run with losses adds the others."""
    path, row = _export(tmp_path, "--goodput", "none")
    cells, book = cells_by_key(path), openpyxl.load_workbook(path)
    assert book["Results"][cells[("losses.failures_gpu_hours", 0)][1]].value is None
    values = Recalculator(path)()
    for key in ("losses.total_gpu_hours", "time_to_train_with_losses_s", "cost_usd_with_losses"):
        assert values[cells[(key, 0)]] == pytest.approx(row[key], rel=REL), key


def test_losses_none_exports_no_loss_column(tmp_path: Path) -> None:
    out = tmp_path / "none.csv"
    assert run_cli("export", "predict", *WORK, "--losses", "none", "--out", str(out)).code == 0
    header = next(csv.reader(out.open()))
    assert not [key for key in header if "loss" in key or key in ("straggler_share", "startup_s", "job_starts")]
