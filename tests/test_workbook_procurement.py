"""The workbook a procurement reader gets: perf/$ and every other derived column follow an edited price, numbers are
stored with the formulas for readers without a formula engine, a Summary one page wide, validated inputs with units,
the 80% interval as formulas, public sources and no path of the machine that wrote it."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from conftest import run_cli
from workbook import Cell, Recalculator, cells_by_key, libreoffice, recompute_libreoffice

COMPARE = ("--model", "llama3.1-8b", "--gpu", "h100-sxm:fp8", "--gpu", "gb200:fp8", "--gpus", "64,128", "--tokens",
           "1T")  # fmt: skip
REL = 1e-9
GB200_PRICE = 2.10


def _cells(path: Path) -> dict[tuple[str, int], Cell]:
    sheets = tuple(name for name in openpyxl.load_workbook(path).sheetnames if name != "Summary")
    return cells_by_key(path, sheets)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("procurement")
    for name in ("c.xlsx", "c.json"):
        result = run_cli("export", "compare", *COMPARE, "-q", "--out", str(folder / name))
        assert result.code == 0, result.err
    return folder / "c.xlsx", json.loads((folder / "c.json").read_text())["rows"]


@pytest.fixture(scope="module")
def cells(exported: tuple[Path, list[dict[str, Any]]]) -> dict[tuple[str, int], Cell]:
    """Every column key's cells, found once for the module's tests (each parsed the workbook for them)."""
    return _cells(exported[0])


@pytest.fixture(scope="module")
def engine(exported: tuple[Path, list[dict[str, Any]]]) -> Recalculator:
    """The workbook in the `formulas` engine, loaded once (about 10 s): a recomputation keeps no edit."""
    return Recalculator(exported[0])


def _expected_after_price_edit(rows: list[dict[str, Any]]) -> list[float]:
    """perf/$ vs the first row with the GB200 rows (2 and 3) at GB200_PRICE: tokens per USD over the first's."""

    def per_usd(row: dict[str, Any], price: float) -> float:
        return row["tokens_per_s_per_gpu"] * 3600 / price

    first = per_usd(rows[0], rows[0]["usd_per_gpu_hour"])
    prices = [r["usd_per_gpu_hour"] if i < 2 else GB200_PRICE for i, r in enumerate(rows)]
    return [per_usd(r, p) / first for r, p in zip(rows, prices, strict=True)]


def test_perf_per_usd_follows_an_edited_price(
    exported: tuple[Path, list[dict[str, Any]]], cells: dict[tuple[str, int], Cell], engine: Recalculator
) -> None:
    """The issue's case: GB200 at $2.10 per GPU-hour instead of its list price; perf/$ vs H100 must follow."""
    _, rows = exported
    before = engine()
    for index, row in enumerate(rows):
        for key in ("perf_per_usd_vs_first", "tokens_per_usd", "speedup_vs_first", "energy_per_token_vs_first",
                    "kwh_per_million_tokens", "perf_per_usd_vs_first_at_min_price"):  # fmt: skip
            assert before[cells[(key, index)]] == pytest.approx(row[key], rel=REL), (key, index)
    edits = {cells[("usd_per_gpu_hour", i)]: GB200_PRICE for i in (2, 3)}
    after = engine(edits)
    expected = _expected_after_price_edit(rows)
    for index in range(4):
        assert after[cells[("perf_per_usd_vs_first", index)]] == pytest.approx(expected[index], rel=REL)
    assert expected[2] > 4 * rows[2]["perf_per_usd_vs_first"]  # the edit matters: no stale 1.3x
    assert after[cells[("speedup_vs_first", 2)]] == pytest.approx(rows[2]["speedup_vs_first"], rel=REL)


@pytest.mark.skipif(libreoffice() is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_follows_an_edited_price(
    exported: tuple[Path, list[dict[str, Any]]], cells: dict[tuple[str, int], Cell]
) -> None:
    path, rows = exported
    after = recompute_libreoffice(path, {cells[("usd_per_gpu_hour", i)]: GB200_PRICE for i in (2, 3)})
    for index, value in enumerate(_expected_after_price_edit(rows)):
        assert after[cells[("perf_per_usd_vs_first", index)]] == pytest.approx(value, rel=REL)
    summary = openpyxl.load_workbook(path)["Summary"]
    column = next(c.column_letter for c in summary[5] if c.value == "perf_per_usd_vs_first")
    assert after[("Summary", f"{column}8")] == pytest.approx(_expected_after_price_edit(rows)[2], rel=REL)


def test_readers_without_a_formula_engine_see_the_numbers(
    exported: tuple[Path, list[dict[str, Any]]], cells: dict[tuple[str, int], Cell]
) -> None:
    """Every formula cell stores its value: openpyxl's data_only and pandas read perfmodel's numbers."""
    import pandas

    path, rows = exported
    book = openpyxl.load_workbook(path, data_only=True)
    formulas = openpyxl.load_workbook(path)
    for (key, index), (sheet, ref) in cells.items():
        if str(formulas[sheet][ref].value).startswith("=") and key in rows[index]:
            stored, ours = book[sheet][ref].value, rows[index][key]
            assert stored == (ours if ours is not None else ""), (key, index)
    results = pandas.read_excel(path, sheet_name="Results", header=4)
    assert list(results["perf_per_usd_vs_first"]) == [r["perf_per_usd_vs_first"] for r in rows]
    assert list(results["time_to_train_s"]) == [r["time_to_train_s"] for r in rows]


def test_summary_prints_one_landscape_page_wide(exported: tuple[Path, list[dict[str, Any]]]) -> None:
    """The Summary first, one A4 landscape page wide (as many tall as its rows need), its cells links; every other
    sheet landscape too (tests/test_workbook_print.py measures the printed type)."""
    path, _ = exported
    book = openpyxl.load_workbook(path)
    summary = book["Summary"]
    assert book.sheetnames[0] == "Summary"
    assert summary.page_setup.orientation == "landscape" and summary.sheet_properties.pageSetUpPr.fitToPage
    assert summary.page_setup.fitToWidth in (None, 1) and summary.page_setup.fitToHeight == 0  # 1 wide by default
    assert all(str(c.value).startswith("=") for c in summary[6][1:] if c.value is not None)  # links, so they follow
    for name in ("Inputs", "Results", "Breakdown", "Details", "Assumptions"):
        ws = book[name]
        assert ws.page_setup.orientation == "landscape" and ws.page_setup.paperSize == 9, name


def test_inputs_are_validated_and_carry_units(
    exported: tuple[Path, list[dict[str, Any]]], cells: dict[tuple[str, int], Cell]
) -> None:
    path, _ = exported
    inputs = openpyxl.load_workbook(path)["Inputs"]
    rules = inputs.data_validations.dataValidation
    for key in ("usd_per_gpu_hour", "n_gpus", "min_usd_per_gpu_hour"):
        _, ref = cells[(key, 3)]
        rule = next(r for r in rules if ref in r.sqref)
        assert rule.type in ("decimal", "whole") and rule.operator in ("greaterThan", "greaterThanOrEqual"), key
        assert float(rule.formula1) >= 0 and rule.showErrorMessage, key
    assert inputs[cells[("usd_per_gpu_hour", 0)][1]].number_format == '"$"0.00"/GPU-h"'
    assert inputs[cells[("n_gpus", 0)][1]].number_format == '#,##0" GPUs"'
    tokens = next(c for c in inputs[5] if c.value == "tokens_to_train").column_letter
    assert inputs.column_dimensions[tokens].width >= len("1,000,000,000,000 tokens")  # no '###'


def test_interval_columns_are_live_formulas(
    exported: tuple[Path, list[dict[str, Any]]], cells: dict[tuple[str, int], Cell], engine: Recalculator
) -> None:
    """The 80% interval follows an edited token budget as the time does: a factor on the time."""
    path, rows = exported
    values = engine()
    for key in ("step_time_s_low", "time_to_train_s_high", "cost_usd_low", "gpu_hours_high"):
        assert values[cells[(key, 0)]] == pytest.approx(rows[0][key], rel=REL), key
    defaults = openpyxl.load_workbook(path)["Inputs"]
    default = next(f"B{r[0].row}" for r in defaults.iter_rows(min_row=7) if r[2].value == "tokens_to_train")
    doubled = engine({("Inputs", default): 2e12})  # every row's tokens cell links to the default
    ratio = doubled[cells[("time_to_train_s_high", 0)]] / values[cells[("time_to_train_s_high", 0)]]
    time_ratio = doubled[cells[("time_to_train_s", 0)]] / values[cells[("time_to_train_s", 0)]]
    assert ratio == pytest.approx(time_ratio, rel=REL) and ratio > 1.9


def test_sources_are_public_documents_and_no_machine_path_is_written(tmp_path: Path) -> None:
    """A user calibration file: the workbook names it, never its folder; hardware sources cite public documents."""
    from perfmodel.physics.calibration import BUNDLED

    calibration = tmp_path / "secret-folder" / "my-cal.json"
    calibration.parent.mkdir()
    shutil.copy(BUNDLED, calibration)
    out = tmp_path / "w.xlsx"
    args = ("export", "predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--tokens", "1T")
    assert run_cli(*args, "--calibration", str(calibration), "--out", str(out)).code == 0
    book = openpyxl.load_workbook(out)
    texts = [str(c.value) for ws in book for row in ws.iter_rows() for c in row if isinstance(c.value, str)]
    machine = (str(tmp_path), str(Path.cwd()), str(Path(__file__).parents[1]), str(Path.home()), tempfile.gettempdir())
    assert not [t for t in texts for p in machine if p in t]
    local = ("accelerators.csv", "accelerators_sources.md", "MODELLING.md", "SOURCES.md", "shared/")
    assert not [t for t in texts for name in local if name in t]
    assert any("'my-cal.json'" in t for t in texts)
    sources = {row[0]: row[1] for row in book["Sources"].iter_rows(min_row=5, values_only=True) if row[0]}
    assert "S1" in sources and "https://github.com/stas00/ml-engineering" in sources["S1"]
    cited = {key for t in texts for key in sources if f"{key}," in t or f"{key})" in t or f"{key};" in t}
    assert cited == set(sources), "the Sources sheet lists exactly the documents cited"


def test_a_missing_price_reads_no_price_not_zero(tmp_path: Path) -> None:
    """MI355X has no public price: the Summary says so (a plain link to the empty cell would read $0.00), the cost
    is empty, and the Inputs sheet gives the reason next to the price a planner types."""
    out = tmp_path / "mi355x.xlsx"
    args = ("export", "predict", "--model", "llama3.1-8b", "--gpu", "mi355x", "--gpus", "8", "--tokens", "1T")
    assert run_cli(*args, "--out", str(out)).code == 0
    book = openpyxl.load_workbook(out, data_only=True)
    summary = {c.value: book["Summary"].cell(6, c.column).value for c in book["Summary"][5] if c.value}
    assert summary["usd_per_gpu_hour"] == "no price" and summary["cost_usd"] in ("", None)
    assert Recalculator(out)()[("Summary", "C6")] == "no price"
    inputs = {c.value: book["Inputs"].cell(6, c.column).value for c in book["Inputs"][5] if c.value}
    assert inputs["usd_per_gpu_hour"] is None and inputs["price_source"].startswith("no public price for mi355x")
