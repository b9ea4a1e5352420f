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
    sheet = openpyxl.load_workbook(out)["Assumptions"]
    rows = {r[1]: r for r in sheet.iter_rows(values_only=True) if r[0] and r[0].startswith("efficiency (")}
    stage = f"MoE stage ({moe_fit['rows']} MoE rows, in-sample MAPE {moe_fit['in_sample_mape_pct']:.1f}%;"
    for name in ("overlap_ep", "grouped_gemm", "moe_legacy_group_s"):
        assert stage in rows[name][4], name
        assert isinstance(rows[name][2], float), name
    assert stage not in rows["gemm_bf16"][4] and "measured rows" in rows["gemm_bf16"][4]
    breakdown = openpyxl.load_workbook(out)["Breakdown"]
    headers = [c.value for c in breakdown[4]]
    column = headers.index("Expert-parallel all-to-all, exposed")
    assert isinstance(breakdown.cell(row=6, column=column + 1).value, float)


def test_a_moe_run_lists_its_expert_assumptions(tmp_path: Path) -> None:
    """Qwen3-30B-A3B, 128 experts top-8, EP8 on 8 GB300 of one rack: expert DP 1, the flex dispatcher, overlap_ep."""
    out = tmp_path / "moe.json"
    assert run_cli("export", "predict", *_ARGS, "--out", str(out)).code == 0
    found = {a["name"]: a for a in json.loads(out.read_text())["assumptions"] if a["section"].startswith("run: ")}
    assert found["experts"]["value"] == "128 routed, top-8, in 48 of 48 layers"
    assert found["expert layout"]["value"] == "EP8 x ETP1 x expert DP1, 16 experts per EP rank"
    assert found["dispatcher"]["value"] == "flex" and "inputs/models.py" in found["dispatcher"]["source"]
    assert 0 < found["overlap_ep"]["value"] < 1 and "inside one scale-up domain" in found["overlap_ep"]["source"]
    assert found["moe_imbalance"]["value"] == 1.0
    dense = tmp_path / "dense.json"
    assert run_cli("export", "predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--out",
                   str(dense)).code == 0  # fmt: skip
    names = {a["name"] for a in json.loads(dense.read_text())["assumptions"] if a["section"].startswith("run: ")}
    assert not names & {"experts", "expert layout", "dispatcher", "overlap_ep", "moe_imbalance"}


def test_a_model_table_s_dispatcher_names_where_it_comes_from(tmp_path: Path) -> None:
    """A [model] table over GPT-OSS-120B runs the zoo model's 'alltoall' (its recipe's), not ModelSpec's default
    'flex'; a table that sets the dispatcher is its source."""
    sources = {}
    for name, extra in (("base", ""), ("set", 'dispatcher = "flex"\n')):
        scenario = tmp_path / f"{name}.toml"
        scenario.write_text(f'gpu = "gb200"\nn_gpus = 64\n[model]\nbase = "gpt-oss-120b"\n{extra}')
        out = tmp_path / f"{name}.json"
        result = run_cli("export", "predict", str(scenario), "--ep", "8", "--gbs", "64", "--out", str(out))
        assert result.code == 0, result.err
        found = {a["name"]: a for a in json.loads(out.read_text())["assumptions"] if a["section"].startswith("run: ")}
        sources[name] = (found["dispatcher"]["value"], found["dispatcher"]["source"])
    assert sources["base"] == ("alltoall", "the recipe's, as the zoo's model records it (perfmodel/inputs/models.py)")
    assert sources["set"] == ("flex", "scenario [model] table")
