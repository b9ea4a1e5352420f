"""One output schema: predict, export, sweep, compare and search rows carry the same columns under the same names
(outputs/record.py), each documented in the README; a missing price is said, not left blank."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from conftest import run_cli

from perfmodel.inputs.record import input_fields
from perfmodel.inputs.scenario import RUN_SETTINGS, Scenario, load_scenario
from perfmodel.outputs import record
from perfmodel.physics.step import BREAKDOWN
from perfmodel.planning.predict import predict

README = Path(__file__).parent.parent / "README.md"
SCENARIOS = Path(__file__).parent.parent / "scenarios"
WORK = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "16", "--precision", "fp8", "--tokens", "1T")
SWEEP = """[sweep]
models = ["llama3.1-8b"]
gpus = ["h100-sxm", "mi355x"]
precisions = ["fp8"]
n_gpus = [16]
[sweep.set]
tokens = 1e12
"""


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.fixture(scope="module")
def predicted() -> dict[str, str]:
    result = run_cli("predict", *WORK, "--format", "csv")
    assert result.code == 0, result.err
    [row] = _rows(result.out)
    return row


def test_predict_export_and_sweep_csv_share_the_schema(predicted: dict[str, str], tmp_path: Path) -> None:
    """The same prediction three ways: every column of predict's row is in export's and sweep's, same name, same
    value, and each table begins with the schema's columns in the schema's order."""
    exported = tmp_path / "x.csv"
    assert run_cli("export", "predict", *WORK, "--out", str(exported)).code == 0
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text(SWEEP)
    swept = run_cli("sweep", str(sweep_file), "--jobs", "1", "--format", "csv", "--quiet")
    assert swept.code == 0, swept.err
    [export_row] = _rows(exported.read_text())
    sweep_row = next(r for r in _rows(swept.out) if r["accelerator"] == "h100-sxm")
    for other in (export_row, sweep_row):
        assert {k: other[k] for k in predicted} == predicted
        canonical = [k for k in other if k in record.NAMES]
        assert canonical == sorted(canonical, key=record.NAMES.index)
        assert list(other)[: len(canonical)] == canonical, "the schema's columns come first"
    assert list(predicted) == [k for k in record.NAMES if k in predicted]
    assert (sweep_row["whatif"], sweep_row["error"]) == ("datasheet", "")


def test_search_and_compare_csv_carry_the_schema(predicted: dict[str, str]) -> None:
    search = run_cli("search", *WORK, "--top", "2", "--format", "csv", "--quiet")
    compare = run_cli("compare", *WORK[:2], *WORK[4:], "--gpu", "h100-sxm", "--gpu", "b200", "--format", "csv", "-q")
    for result in (search, compare):
        assert result.code == 0, result.err
        header = list(_rows(result.out)[0])
        assert header[: len(predicted)] == list(predicted)
    assert [row["rank"] for row in _rows(search.out)] == ["1", "2"]  # the table's '#', as export search's rank


@pytest.mark.parametrize(
    "overrides",
    [
        {"model": "mixtral-8x7b", "gpu": "h100-sxm", "n_gpus": 64, "tokens": 1e12, "cost.mode": "buy"},
        {"base": "mlperf-405b-h100-512.toml"},
        {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8},
        {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8, "cost.usd_per_gpu_hour_range": (2.0, 2.5, 4.0)},
    ],
    ids=["moe-buy", "mlperf", "no-tokens", "price-drawn"],
)
def test_every_column_a_prediction_can_have_is_documented(overrides: dict[str, object]) -> None:
    base = overrides.pop("base", None)
    scenario = load_scenario(SCENARIOS / str(base) if base else None, overrides)
    keys = list(predict(scenario).to_record())
    assert [k for k in keys if k not in record.NAMES] == []
    assert keys == sorted(keys, key=record.NAMES.index), "to_record keeps the documented order"


def test_every_run_setting_is_a_scenario_key_and_a_column_in_its_order() -> None:
    """The scenario keys a record carries when set (RUN_SETTINGS, whose units and meanings the schema takes): each a
    Scenario field (`run_settings` reads it), each a column, in the scenario's order."""
    assert set(RUN_SETTINGS) <= {f.name for f in input_fields(Scenario)}
    columns = [name for name in record.NAMES if name in RUN_SETTINGS]
    assert columns == list(RUN_SETTINGS)


def test_every_step_time_part_is_documented() -> None:
    parts = {name.removeprefix("breakdown.") for name in record.NAMES if name.startswith("breakdown.")}
    assert parts == {*BREAKDOWN, "ep_comm_exposed_s"}


def test_readme_documents_the_schema_once() -> None:
    text = README.read_text()
    assert text.count(record.markdown_table()) == 1
    assert len(set(record.NAMES)) == len(record.NAMES)


def test_a_missing_price_is_said_not_blank(tmp_path: Path) -> None:
    """MI355X has no public price: its sweep row's cost is empty (no number to give) and price_source says why."""
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text(SWEEP)
    swept = run_cli("sweep", str(sweep_file), "--jobs", "1", "--format", "csv", "--quiet")
    mi355x = next(r for r in _rows(swept.out) if r["accelerator"] == "mi355x")
    assert mi355x["cost_usd"] == "" and mi355x["price_source"] == "no public price for mi355x; pass --usd-per-gpu-hour"
    table = run_cli("sweep", str(sweep_file), "--jobs", "1", "--quiet").out
    assert "no price" in next(line for line in table.splitlines() if "mi355x" in line)
