"""`perfmodel plan` prints energy as every other table does (MWh to 0.1): it rounded to whole MWh, so an MLPerf
plan (0.2 MWh for DeepSeek-V3 on 192 GB300) read 0."""

from __future__ import annotations

import json

from conftest import run_cli

ARGS = ("plan", "--model", "llama3.1-8b", "--tokens", "100B", "--gpu", "h100-sxm:fp8", "--deadline", "3d", "--quiet")


def test_the_mwh_cell_is_the_json_energy_to_a_tenth() -> None:
    plan = json.loads(run_cli(*ARGS, "--format", "json").out)["candidates"][0]
    row = next(line for line in run_cli(*ARGS).out.splitlines() if line.startswith("dgx-h100:FP8"))
    energy = f"{plan['energy_kwh'] / 1000:,.1f}"
    assert f"  {energy}  " in row and plan["energy_kwh"] / 1000 % 1  # a fraction the old format dropped


def test_predict_prints_a_small_run_in_kwh_and_a_large_one_in_mwh() -> None:
    """72 GB300s for the ~14-minute MLPerf GPT-OSS-20B run use tens of kWh, which one-decimal MWh printed as 0.0."""
    small = run_cli("predict", "mlperf-gpt-oss-20b-gb300-72-nvfp4")
    energy = next(line for line in small.out.splitlines() if line.startswith("Energy"))
    assert " kWh (1,965 W per GPU at the wall (board 1,400" in energy and "0.0 MWh" not in small.out
    large = run_cli("predict")
    assert next(line for line in large.out.splitlines() if line.startswith("Energy")).split()[2] == "MWh"


def test_a_plan_under_a_twentieth_of_a_mwh_does_not_read_zero() -> None:
    """The MLPerf GPT-OSS-20B plan on GB300 (about 25 kWh) read 0.0 in the MWh column, as predict's '0.0 MWh' did."""
    args = ("plan", "--benchmark", "mlperf-gpt-oss-20b", "--gpu", "gb300:nvfp4", "--deadline", "1h", "--quiet")
    kwh = json.loads(run_cli(*args, "--format", "json").out)["candidates"][0]["energy_kwh"]
    row = next(line for line in run_cli(*args).out.splitlines() if line.startswith("gb300-nvl72:NVFP4"))
    cell = row.split("$")[1].split()[1]
    assert kwh < 50 and abs(float(cell) - kwh / 1000) <= 0.05 * kwh / 1000, (cell, kwh)


def test_the_plan_table_prints_the_precision_as_predict_does() -> None:
    """The plan table's candidate read 'dgx-h100:fp8' where predict and compare print 'FP8'; the JSON keeps the
    `--gpu ID:PRECISION` spelling of plan._label."""
    assert json.loads(run_cli(*ARGS, "--format", "json").out)["candidates"][0]["candidate"] == "dgx-h100:fp8"
    out = run_cli(*ARGS).out
    assert any(line.startswith("dgx-h100:FP8  ") for line in out.splitlines()) and "dgx-h100:fp8" not in out


def test_a_small_plans_power_does_not_read_zero() -> None:
    """Eight H100s draw about 0.01 MW at the wall; the plan's MW column printed it to 0.1 MW, as '0.0'."""
    args = (*ARGS[:-2], "30d", "--quiet")
    mw = json.loads(run_cli(*args, "--format", "json").out)["candidates"][0]["power_mw"]
    header, _, row = run_cli(*args).out.splitlines()[2:5]
    cell = row[header.index("MWh") + len("MWh") : header.index(" MW ") + len(" MW")].split()[-1]
    assert mw < 0.05 and float(cell) == float(f"{mw:.2g}") > 0, (cell, mw)
