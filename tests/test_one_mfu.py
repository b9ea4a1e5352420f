"""Issue 29 item 3: one MFU in every output, over the dense peak of the precision the GEMMs run in (never above
100%); the BF16-peak figure is offered as a named ratio, never as a percentage above 100% (each test failed on the
behaviour the issue reports: sweep's 'MFU BF16' and the workbook Summary gave GB300 NVFP4 176.5%)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import openpyxl
import pytest

from tests.conftest import run_cli

GB300_NVFP4 = ("--model", "llama3.1-405b", "--gpu", "gb300", "--precision", "nvfp4")


def _percentages(text: str) -> list[float]:
    return [float(v.replace(",", "")) for v in re.findall(r"([\d,]+\.\d)%", text)]


def test_predict_gives_no_mfu_above_100_percent() -> None:
    out = run_cli("predict", *GB300_NVFP4).out
    line = next(line for line in out.splitlines() if line.startswith("MFU"))
    assert max(_percentages(line)) <= 100, line
    assert "x the dense BF16 peak" in line  # the other convention, named, as a ratio


def test_sweep_shows_the_one_mfu(tmp_path: Path) -> None:
    sweep = tmp_path / "fp4.toml"
    sweep.write_text('[sweep]\nmodels = ["llama3.1-8b"]\ngpus = ["gb300"]\nprecisions = ["nvfp4"]\nn_gpus = [64]\n')
    table = run_cli("sweep", str(sweep), "-j", "1").out
    assert "MFU BF16" not in table
    header, _, row = table.splitlines()[:3]
    cells = _percentages(row)
    assert cells and max(cells) <= 100, table
    assert "x BF16 peak" in header
    record = next(csv.DictReader(io.StringIO(run_cli("sweep", str(sweep), "-j", "1", "--format", "csv").out)))
    assert f"{float(record['mfu_of_precision']):.1%}" in row
    assert float(record["mfu"]) == float(record["mfu_of_precision"]) <= 1 < float(record["mfu_bf16"])  # the contract


def test_the_workbook_summary_gives_the_one_mfu(tmp_path: Path) -> None:
    out = tmp_path / "fp4.xlsx"
    result = run_cli("export", "predict", *GB300_NVFP4, "--out", str(out))
    assert result.code == 0, result.err
    book = openpyxl.load_workbook(out, data_only=True)
    summary = book["Summary"]
    keys = {cell.value: cell.column_letter for cell in summary[5] if isinstance(cell.value, str)}
    assert "mfu" not in keys and "mfu_of_precision" in keys
    assert summary[f"{keys['mfu_of_precision']}6"].value <= 1
    for ws in book.worksheets:  # no figure reads as a percentage above 100%
        for row in ws.iter_rows():
            for cell in row:
                if isinstance(cell.value, float) and "%" in cell.number_format:
                    assert cell.value <= 1, (ws.title, cell.coordinate, cell.value)
    row = json.loads(run_cli("predict", *GB300_NVFP4, "--format", "json").out)
    assert row["mfu"] == row["mfu_of_precision"] <= 1 < row["mfu_bf16"]  # ARCHITECTURE: of the precision's peak


def test_the_contract_key_mfu_is_of_the_precisions_peak_everywhere(tmp_path: Path) -> None:
    """ARCHITECTURE.md: `mfu` is of the dense peak of the precision used, never above 1; it was the BF16-peak figure
    (FP8 on H100: mfu 0.82 beside mfu_of_precision 0.41), in JSON, CSV and the workbook's Results alike."""
    fp8 = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--precision", "fp8")
    row = json.loads(run_cli("predict", *fp8, "--format", "json").out)
    assert row["mfu"] == row["mfu_of_precision"] <= 1 and row["mfu_bf16"] == pytest.approx(2 * row["mfu"], rel=1e-3)
    record = next(csv.DictReader(io.StringIO(run_cli("predict", *fp8, "--format", "csv").out)))
    assert float(record["mfu"]) == pytest.approx(float(record["mfu_of_precision"]))
    out = tmp_path / "fp8.xlsx"
    assert run_cli("export", "predict", *fp8, "--out", str(out)).code == 0
    results = openpyxl.load_workbook(out, data_only=True)["Results"]
    keys = {cell.value: cell.column_letter for cell in results[5] if isinstance(cell.value, str)}
    assert results[f"{keys['mfu']}6"].value == pytest.approx(row["mfu"])
    assert results[f"{keys['mfu_bf16']}6"].value == pytest.approx(row["mfu_bf16"])
