"""A MoE model's workbook: the parameters the calibration's MoE stage fits cite that stage (its MoE rows and error),
not the dense fit's rows; numbers stay numbers and the EP part keeps its unit."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
from conftest import run_cli

from perfmodel.physics.calibration import BUNDLED

_ARGS = ("--model", "qwen3-30b-a3b", "--gpu", "gb300", "--gpus", "8", "--precision", "mxfp8", "--tp", "1", "--pp",
         "1", "--cp", "1", "--vp", "1", "--ep", "8", "--mbs", "8", "--gbs", "512", "--seq-len", "4096",
         "--recompute", "none", "--zero", "1")  # fmt: skip


def test_moe_stage_parameters_cite_the_moe_fit(tmp_path: Path) -> None:
    out = tmp_path / "moe.xlsx"
    result = run_cli("export", "predict", *_ARGS, "--out", str(out))
    assert result.code == 0, result.err
    moe_fit = json.loads(BUNDLED.read_text())["moe"]["fit"]
    rows = {r[1]: r for r in openpyxl.load_workbook(out)["Assumptions"].iter_rows(values_only=True) if r[0]}
    stage = f"MoE stage ({moe_fit['rows']} MoE rows, in-sample MAPE {moe_fit['in_sample_mape_pct']:.1f}%;"
    for name in ("overlap_ep", "overlap_ep_scaleout", "grouped_gemm", "moe_legacy_group_s"):
        assert stage in rows[name][4], name
        assert isinstance(rows[name][2], float), name
    assert stage not in rows["gemm_bf16"][4] and "measured rows" in rows["gemm_bf16"][4]
    breakdown = openpyxl.load_workbook(out)["Breakdown"]
    headers = [c.value for c in breakdown[4]]
    column = headers.index("Expert-parallel all-to-all, exposed (s)")
    assert isinstance(breakdown.cell(row=6, column=column + 1).value, float)
