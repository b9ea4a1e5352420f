"""A campaign in `export compare` and `export plan`: a row per system (or candidate) and phase, and a total row per
system that carries compare's ratios of the campaigns' totals (or plan's verdict); CSV and JSON with the same
columns, the workbook with live formulas that the `formulas` engine (and LibreOffice, where installed) recomputes to
the exported numbers and that follow an edited phase price to its total and the ratios."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from test_campaign import CAMPAIGN
from workbook import Cell, Recalculator, cells_by_key, libreoffice, recompute_libreoffice

PHASES = ["ramp", "main", "long", "total"]
SYSTEMS = ("--gpu", "h100-sxm", "--gpu", "gb200:fp8")
REL = 1e-9


@pytest.fixture(scope="module")
def campaign_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("campaign") / "campaign.toml"
    path.write_text(CAMPAIGN)
    return path


def _exported(command: tuple[str, ...], folder: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The export of `command` as xlsx, csv and json in `folder`: the workbook's path and the JSON's rows; CSV and
    JSON carry the same rows and columns."""
    for suffix in ("xlsx", "csv", "json"):
        result = run_cli("export", *command, "-q", "--out", str(folder / f"export.{suffix}"))
        assert result.code == 0, result.err
    document = json.loads((folder / "export.json").read_text())
    flat = list(csv.DictReader((folder / "export.csv").open()))
    assert list(flat[0]) == document["columns"] and document["columns"][0] == "phase"
    assert [r["phase"] for r in flat] == [r["phase"] for r in document["rows"]]
    return folder / "export.xlsx", document["rows"]


@pytest.fixture(scope="module")
def compared(campaign_file: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    return _exported(("compare", str(campaign_file), *SYSTEMS), tmp_path_factory.mktemp("compare"))


@pytest.fixture(scope="module")
def planned(campaign_file: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    command = ("plan", str(campaign_file), "--gpu", "h100-sxm", "--gpu", "b200", "--deadline", "30d")
    return _exported(command, tmp_path_factory.mktemp("plan"))


def _assert_recomputed(path: Path, rows: list[dict[str, Any]], engine: Recalculator) -> dict[tuple[str, int], Cell]:
    """Every number of the export, recomputed from the workbook's formulas (`engine`, the workbook loaded into the
    engine once for this and the edits after it), is the exported one (and every empty cell empty); returns where
    each (key, line) lives."""
    cells, values = cells_by_key(path), engine()
    for (key, index), cell in cells.items():
        if index >= len(rows):  # the Inputs sheet's defaults, under the lines
            continue
        ours = rows[index].get(key)
        if isinstance(ours, int | float) and not isinstance(ours, bool):
            assert values[cell] == pytest.approx(ours, rel=REL, abs=1e-12), (key, index)
        elif ours is None:
            assert values.get(cell) in (None, ""), (key, index)
    return cells


def test_compare_has_each_systems_phases_and_a_total_with_the_ratios(
    campaign_file: Path, compared: tuple[Path, list[dict[str, Any]]]
) -> None:
    _, rows = compared
    assert [r["phase"] for r in rows] == PHASES * 2
    assert [r["label"] for r in rows[3::4]] == ["llama3.1-8b on 64 x h100-sxm bf16: total",
                                                "llama3.1-8b on 64 x gb200 fp8: total"]  # fmt: skip
    systems = json.loads(run_cli("compare", str(campaign_file), *SYSTEMS, "--format", "json").out)
    for total, system in zip(rows[3::4], systems, strict=True):  # the ratios compare gives the campaigns' totals
        for key in ("speedup_vs_first", "perf_per_usd_vs_first", "perf_per_usd_vs_first_at_max_price", "tokens_per_usd",
                    "energy_per_token_vs_first", "kwh_per_million_tokens", "gpu_hours", "cost_usd"):  # fmt: skip
            assert total[key] == pytest.approx(system[key], rel=1e-12), key
        assert total["n_gpus"] == system["n_gpus"]
    for start in (0, 4):
        phases, total = rows[start : start + 3], rows[start + 3]
        assert total["gpu_hours"] == pytest.approx(math.fsum(p["gpu_hours"] for p in phases), rel=1e-12)
        assert total["tokens_per_usd"] == pytest.approx(total["tokens_to_train"] / total["cost_usd"], rel=1e-12)
        assert all(p["speedup_vs_first"] is None and p["tokens_per_usd"] > 0 for p in phases)  # ratios: totals'


def test_compare_workbook_follows_an_edited_phase_price(compared: tuple[Path, list[dict[str, Any]]]) -> None:
    """GB200's main phase (line 5) at $2 per GPU-hour: its total cost, tokens per USD and perf per USD vs the first
    follow, its speedup does not; then H100's ramp (line 0) at $3: the first's total moves every ratio to it."""
    path, rows = compared
    engine = Recalculator(path)
    cells = _assert_recomputed(path, rows, engine)
    after = engine({cells[("usd_per_gpu_hour", 5)]: 2.0})
    cost = rows[4]["cost_usd"] + rows[5]["gpu_hours"] * 2.0 + rows[6]["cost_usd"]
    assert after[cells[("cost_usd", 7)]] == pytest.approx(cost, rel=REL)
    per_usd = rows[7]["tokens_to_train"] / cost
    assert after[cells[("tokens_per_usd", 7)]] == pytest.approx(per_usd, rel=REL)
    assert after[cells[("perf_per_usd_vs_first", 7)]] == pytest.approx(per_usd / rows[3]["tokens_per_usd"], rel=REL)
    assert after[cells[("speedup_vs_first", 7)]] == pytest.approx(rows[7]["speedup_vs_first"], rel=REL)
    assert after[cells[("usd_per_gpu_hour", 7)]] == ""  # the phases' prices differ now: no one price to show
    assert after[cells[("perf_per_usd_vs_first", 7)]] > 1.5 * rows[7]["perf_per_usd_vs_first"]  # the edit matters
    first = engine({cells[("usd_per_gpu_hour", 0)]: 3.0})
    first_cost = rows[3]["cost_usd"] - rows[0]["cost_usd"] + rows[0]["gpu_hours"] * 3.0
    expected = rows[7]["tokens_per_usd"] / (rows[3]["tokens_to_train"] / first_cost)
    assert first[cells[("perf_per_usd_vs_first", 7)]] == pytest.approx(expected, rel=REL)
    assert first[cells[("perf_per_usd_vs_first", 3)]] == pytest.approx(1.0, rel=REL)


@pytest.mark.skipif(libreoffice() is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_follows_an_edited_phase_price(compared: tuple[Path, list[dict[str, Any]]]) -> None:
    path, rows = compared
    cells = cells_by_key(path)
    after = recompute_libreoffice(path, {cells[("usd_per_gpu_hour", 5)]: 2.0})
    cost = rows[4]["cost_usd"] + rows[5]["gpu_hours"] * 2.0 + rows[6]["cost_usd"]
    assert after[cells[("cost_usd", 7)]] == pytest.approx(cost, rel=REL)
    expected = rows[7]["tokens_to_train"] / cost / rows[3]["tokens_per_usd"]
    assert after[cells[("perf_per_usd_vs_first", 7)]] == pytest.approx(expected, rel=REL)


def test_plan_has_each_candidates_campaign_and_its_verdict_on_the_total(
    campaign_file: Path, planned: tuple[Path, list[dict[str, Any]]]
) -> None:
    path, rows = planned
    assert [r["phase"] for r in rows] == PHASES * 2
    report = json.loads(run_cli("plan", str(campaign_file), "--gpu", "h100-sxm", "--gpu", "b200", "--deadline",
                                "30d", "--format", "json").out)  # fmt: skip
    for start, candidate in zip((0, 4), report["candidates"], strict=True):
        group, total = rows[start : start + 4], rows[start + 3]
        assert all(r["candidate"] == candidate["candidate"] for r in group)  # every line names its candidate
        assert total["feasible"] is True and total["deadline_share"] == pytest.approx(candidate["deadline_share"])
        assert all(r["feasible"] is None and r["deadline_share"] is None for r in group[:3])
        assert total["gpu_hours"] == pytest.approx(candidate["plan"]["gpu_hours"], rel=1e-12)
        assert [r["n_gpus"] for r in group[:3]] == [p["n_gpus"] for p in candidate["plan"]["phases"]]
    engine = Recalculator(path)
    cells = _assert_recomputed(path, rows, engine)
    after = engine({cells[("usd_per_gpu_hour", 1)]: 1.0})
    cost = rows[0]["cost_usd"] + rows[1]["gpu_hours"] * 1.0 + rows[2]["cost_usd"]
    assert after[cells[("cost_usd", 3)]] == pytest.approx(cost, rel=REL)
