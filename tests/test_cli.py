"""The CLI contract: commands, JSON keys, formats, and one-line errors with exit code 2."""

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

CONTRACT_KEYS = {
    "model",
    "accelerator",
    "system",
    "n_gpus",
    "precision",
    "parallelism",
    "step_time_s",
    "tokens_per_s",
    "tokens_per_s_per_gpu",
    "model_tflops_per_gpu",
    "mfu",
    "memory_per_gpu_gb",
    "fits_in_memory",
    "tokens_to_train",
    "time_to_train_s",
    "time_to_train_min",
    "gpu_hours",
    "usd_per_gpu_hour",
    "cost_usd",
    "energy_kwh",
    "breakdown",
}
PARALLELISM_KEYS = {"tp", "pp", "cp", "dp", "vp", "ep", "mbs", "gbs", "seq_len", "recompute"}
BREAKDOWN_KEYS = {
    "compute_s",
    "tp_comm_exposed_s",
    "cp_comm_exposed_s",
    "pp_bubble_s",
    "pp_comm_exposed_s",
    "dp_comm_exposed_s",
    "optimizer_s",
    "other_s",
}


def _json(*args: str) -> dict:
    result = run_cli("predict", *args, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_default_predict_json_contract() -> None:
    d = _json()
    assert set(d) >= CONTRACT_KEYS
    assert set(d["parallelism"]) >= PARALLELISM_KEYS
    assert set(d["breakdown"]) == BREAKDOWN_KEYS
    assert (d["model"], d["accelerator"], d["system"], d["n_gpus"], d["precision"]) == (
        "llama3.1-70b",
        "h100-sxm",
        "dgx-h100",
        1024,
        "fp8",
    )
    assert d["tokens_to_train"] == 15e12
    assert sum(d["breakdown"].values()) == pytest.approx(d["step_time_s"])
    assert d["time_to_train_min"] == pytest.approx(d["time_to_train_s"] / 60)
    assert d["tokens_per_s"] == pytest.approx(d["tokens_per_s_per_gpu"] * d["n_gpus"])
    assert d["cost_usd"] == pytest.approx(d["gpu_hours"] * d["usd_per_gpu_hour"])
    assert d["gpu_hours"] == pytest.approx(d["n_gpus"] * d["time_to_train_s"] / 3600)


def test_flags_override_the_scenario() -> None:
    d = _json("--tp", "8", "--pp", "4", "--vp", "5", "--usd-per-gpu-hour", "2", "--tokens", "1T")
    assert (d["parallelism"]["tp"], d["parallelism"]["pp"], d["parallelism"]["dp"]) == (8, 4, 32)
    assert d["usd_per_gpu_hour"] == 2 and d["tokens_to_train"] == 1e12


def test_missing_dimensions_are_searched() -> None:
    d = _json("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--precision", "fp8", "--gbs", "64")
    assert d["fits_in_memory"] and d["layouts_searched"] > 1


def test_table_and_csv_formats() -> None:
    table = run_cli("predict")
    assert table.code == 0 and "Step time" in table.out and "Where the step time goes" in table.out
    rows = list(csv.DictReader(io.StringIO(run_cli("predict", "--format", "csv").out)))
    assert len(rows) == 1 and float(rows[0]["breakdown.compute_s"]) > 0 and rows[0]["parallelism.tp"] == "4"


def test_python_dash_m_matches_the_console_script(tmp_path: Path) -> None:
    via_module = subprocess.run(
        [sys.executable, "-m", "perfmodel", "predict", "--format", "json"], capture_output=True, text=True, check=True
    )
    assert json.loads(via_module.stdout) == _json()


def test_hardware_and_models_lists() -> None:
    hw = json.loads(run_cli("hardware", "list", "--format", "json").out)
    assert {a["id"] for a in hw["accelerators"]} >= {"h100-sxm", "gb300", "mi355x"}
    assert all("source" in a["bf16_tflops"] for a in hw["accelerators"])
    models = json.loads(run_cli("models", "list", "--format", "json").out)
    assert {m["id"]: m["params"] for m in models}["llama3.1-405b"] == 405_853_388_800
    assert "h100-sxm" in run_cli("hardware", "list").out
    assert "405,853,388,800" in run_cli("models", "list").out


def _scenario(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.toml"
    path.write_text(text)
    return str(path)


BAD_FLAGS = [
    (["--model", "llama9"], "unknown model 'llama9'; valid: llama3.1-8b"),
    (["--gpu", "h300"], "unknown GPU 'h300'; valid:"),
    (["--system", "dgx-z"], "unknown system 'dgx-z'; valid:"),
    (["--gpu", "h100-sxm", "--system", "gb200-nvl72"], "does not match"),
    (["--tp", "3"], "TP 3 must divide the 64 attention heads"),
    (["--gbs", "1000"], "GBS 1000 must be divisible by MBS 1 x DP 32"),
    (["--tp", "0"], "Invalid value for '--tp'"),
    (["--tokens", "-5"], "must be a positive finite number"),
    (["--tokens", "lots"], "is not a number"),
    (["--usd-per-gpu-hour", "nan"], "must be a positive finite number"),
    (["--precision", "mxfp8"], "h100-sxm has no tensor-core support for mxfp8; supported: bf16, fp8"),
    (["--precision", "fp16"], "Invalid value for '--precision'"),
    (["--ep", "8"], "EP 8 needs a mixture-of-experts model"),
    (["scenarios/default.toml", "--gpus", "1000"], "TP 4 x PP 8 x CP 1 = 32 does not divide the 1000 GPUs"),
]


@pytest.mark.parametrize(("flags", "message"), BAD_FLAGS)
def test_bad_flags_fail_with_one_line(flags: list[str], message: str) -> None:
    result = run_cli("predict", *flags, "--format", "json")
    assert result.code == 2
    assert result.out == ""
    assert message in result.err
    assert result.err.count("\n") == 1 and "Traceback" not in result.err


BAD_FILES = [
    ("model = 'llama3.1-8b'\n[parallelism]\ntpp = 2\n", "field 'parallelism.tpp': unknown key; allowed: tp, pp"),
    ("modle = 'llama3.1-8b'\n", "field 'modle': unknown key; allowed: name"),
    ("n_gpus = 'eight'\n", "field 'n_gpus'"),
    ("n_gpus = -8\n", "field 'n_gpus'"),
    ("tokens = nan\n", "field 'tokens'"),
    ("tokens = inf\n", "field 'tokens'"),
    ("precision = 'fp6'\n", "field 'precision': must be 'bf16', 'fp8', 'mxfp8', 'nvfp4' or 'mxfp4'"),
    ("[parallelism]\nrecompute = 'some'\n", "field 'parallelism.recompute'"),
    ("[cost]\npue = 0.5\n", "field 'cost.pue'"),
    ("gpu = 'h100-sxm'\n[model]\nbase = 'llama3.1-8b'\nheads = 7\n", "model: "),
    ("model = 'gpt5'\n", "unknown model 'gpt5'; valid:"),
    ("model = [1, 2\n", "not valid TOML"),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES)
def test_bad_scenario_files_name_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = _scenario(tmp_path, text)
    result = run_cli("predict", path, "--format", "json")
    assert result.code == 2
    assert result.out == ""
    assert message in result.err and path in result.err
    assert result.err.count("\n") == 1 and "Traceback" not in result.err


def test_missing_scenario_file(tmp_path: Path) -> None:
    result = run_cli("predict", str(tmp_path / "nope.toml"))
    assert result.code == 2 and "no such scenario file" in result.err


def test_real_process_exit_code_and_no_traceback() -> None:
    proc = subprocess.run([sys.executable, "-m", "perfmodel", "predict", "--tp", "3"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: invalid layout") and proc.stderr.count("\n") == 1


def test_layout_that_does_not_fit_is_explained_not_crashed() -> None:
    result = run_cli(
        "predict",
        "--model",
        "llama3.1-405b",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "8",
        "--tp",
        "8",
        "--pp",
        "1",
        "--cp",
        "1",
        "--vp",
        "1",
        "--mbs",
        "1",
        "--gbs",
        "8",
        "--recompute",
        "full",
        "--zero",
        "1",
    )
    assert result.code == 0
    assert "DOES NOT FIT" in result.out and "Warning: this layout needs" in result.out


def test_no_layout_fits_gives_the_smallest_need() -> None:
    result = run_cli("predict", "--model", "llama3.1-405b", "--gpu", "h100-sxm", "--gpus", "8", "--gbs", "8")
    assert result.code == 2 and "the smallest needs" in result.err


def test_a_hardware_flag_replaces_the_files_hardware() -> None:
    """The default scenario names an H100; --system alone picks that system's GPUs instead of clashing with it."""
    d = _json("--system", "gb200-nvl72", "--gpus", "72", "--model", "llama3.1-8b")
    assert (d["accelerator"], d["system"]) == ("gb200", "gb200-nvl72")
    d = _json("--gpu", "mi300x", "--gpus", "8", "--model", "llama3.1-8b")
    assert (d["accelerator"], d["system"]) == ("mi300x", "mi300x-8")
