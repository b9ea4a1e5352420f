"""The CLI contract: commands, JSON keys and formats (bad input: tests/test_bad_inputs.py)."""

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import inputs_of, run_cli, run_json

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


def test_default_predict_json_contract() -> None:
    d = run_json("predict")
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
    d = run_json("predict", "--tp", "8", "--pp", "4", "--vp", "5", "--usd-per-gpu-hour", "2", "--tokens", "1T")
    assert (d["parallelism"]["tp"], d["parallelism"]["pp"], d["parallelism"]["dp"]) == (8, 4, 32)
    assert d["usd_per_gpu_hour"] == 2 and d["tokens_to_train"] == 1e12


def test_missing_dimensions_are_searched() -> None:
    d = run_json(
        "predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--precision", "fp8", "--gbs", "64"
    )
    assert d["fits_in_memory"] and d["layouts_searched"] > 1


def test_a_system_given_as_the_gpu_is_that_system(tmp_path: Path) -> None:
    """`--gpu gb200-nvl72` (a system) is `--system gb200-nvl72` for predict, as for compare and plan, and a file's
    `gpu = "gb200-nvl72"` too: predict refused both as "'gb200-nvl72' is a system, not a GPU". A system given beside
    it keeps that refusal (test_bad_inputs.py, case system-as-gpu)."""
    flags = ("--model", "llama3.1-8b", "--gpus", "72", "--tokens", "1T")
    wanted = run_json("predict", "--system", "gb200-nvl72", *flags)
    assert run_json("predict", "--gpu", "gb200-nvl72", *flags) == wanted
    (tmp_path / "s.toml").write_text('model = "llama3.1-8b"\ngpu = "gb200-nvl72"\nn_gpus = 72\ntokens = 1e12\n')
    (tmp_path / "t.toml").write_text('model = "llama3.1-8b"\nsystem = "gb200-nvl72"\nn_gpus = 72\ntokens = 1e12\n')
    assert run_json("predict", str(tmp_path / "s.toml")) == run_json("predict", str(tmp_path / "t.toml"))
    assert run_json("explain", "--gpu", "gb200-nvl72", *flags) == run_json("explain", "--system", "gb200-nvl72", *flags)


def test_table_and_csv_formats() -> None:
    table = run_cli("predict")
    assert table.code == 0 and "Step time" in table.out and "Where the step time goes" in table.out
    rows = list(csv.DictReader(io.StringIO(run_cli("predict", "--format", "csv").out)))
    assert len(rows) == 1 and float(rows[0]["breakdown.compute_s"]) > 0 and rows[0]["parallelism.tp"] == "4"


def test_python_dash_m_matches_the_console_script(tmp_path: Path) -> None:
    via_module = subprocess.run(
        [sys.executable, "-m", "perfmodel", "predict", "--format", "json"], capture_output=True, text=True, check=True
    )
    assert json.loads(via_module.stdout) == run_json("predict")


@pytest.mark.parametrize("args", [(), ("hardware",), ("models",)])
def test_no_command_prints_the_help_as_help(args: tuple[str, ...]) -> None:
    """`perfmodel` alone (a new user's first try) printed 'error: Usage: perfmodel [OPTIONS] COMMAND ... Commands:
    calibrate Fit ...' as one run-on line: the help flattened as an input error's line."""
    result = run_cli(*args)
    assert result.code == 2 and not result.out, result
    assert result.err.startswith(f"Usage: perfmodel {' '.join(args)}".rstrip() + " [OPTIONS] COMMAND"), result.err
    assert "\nCommands:\n" in result.err and "error:" not in result.err, result.err


def test_hardware_and_models_lists() -> None:
    hw = json.loads(run_cli("hardware", "list", "--format", "json").out)
    assert {a["id"] for a in hw["accelerators"]} >= {"h100-sxm", "gb300", "mi355x"}
    assert all("source" in a["bf16_tflops"] for a in hw["accelerators"])
    models = json.loads(run_cli("models", "list", "--format", "json").out)
    # Llama 3.1 405B (meta-llama/Llama-3.1-405B config.json: hidden 16384, 126 layers, 128 heads of 128 in 8 KV
    # groups, FFN 53248 SwiGLU, untied vocab 128256), summed tensor by tensor: 405,853,388,800.
    layer = 2 * 16384 * 16384 + 2 * 16384 * 8 * 128 + 3 * 16384 * 53248 + 2 * 16384
    assert {m["id"]: m["params"] for m in models}["llama3.1-405b"] == 126 * layer + 2 * 128256 * 16384 + 16384
    assert "h100-sxm" in run_cli("hardware", "list").out
    assert "405,853,388,800" in run_cli("models", "list").out


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


def test_layout_given_but_for_vp_at_pp_1_is_priced_not_searched() -> None:
    """PP 1 has one VP, so a layout given but for VP is given: one that does not fit is priced with the warning (as
    with --vp 1), not refused by a search."""
    flags = ("predict", "--model", "llama3.1-70b", "--gpu", "h100-sxm", "--gpus", "8", "--tp", "1", "--pp", "1")
    rest = ("--cp", "1", "--mbs", "1", "--recompute", "none", "--zero", "0")
    result = run_cli(*flags, *rest)
    assert result.code == 0
    assert "DOES NOT FIT" in result.out and "(given)" in result.out
    assert result.out == run_cli(*flags, "--vp", "1", *rest).out


def test_no_layout_fits_gives_the_smallest_need() -> None:
    result = run_cli("predict", "--model", "llama3.1-405b", "--gpu", "h100-sxm", "--gpus", "8", "--gbs", "8")
    assert result.code == 2 and "the smallest needs" in result.err


def test_a_hardware_flag_replaces_the_files_hardware() -> None:
    """The default scenario names an H100; --system alone picks that system's GPUs instead of clashing with it."""
    d = run_json("predict", "--system", "gb200-nvl72", "--gpus", "72", "--model", "llama3.1-8b")
    assert (d["accelerator"], d["system"]) == ("gb200", "gb200-nvl72")
    d = run_json("predict", "--gpu", "mi300x", "--gpus", "8", "--model", "llama3.1-8b")
    assert (d["accelerator"], d["system"]) == ("mi300x", "mi300x-8")


def test_shell_completion_offers_ids() -> None:
    import os
    import subprocess
    import sys

    def complete(words: str) -> list[str]:
        env = os.environ | {"COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1),
                            "_PERFMODEL_COMPLETE": "bash_complete"}  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "perfmodel"], env=env, capture_output=True, text=True, timeout=60)
        return [line.split(",", 1)[1] for line in done.stdout.splitlines()]

    assert complete("perfmodel predict --gpu h1") == ["h100-grand-teton", "h100-sxm"]
    assert complete("perfmodel compare --gpu gb3") == ["gb300", "gb300-nvl72"]
    assert complete("perfmodel predict --model llama3.1-4") == ["llama3.1-405b", "llama3.1-4"]  # and FILE.toml
    assert complete("perfmodel predict --precision nv") == ["nvfp4"]
    # Every id kind (issue 29): hardware show, precisions after ID: (and after a comma), bundled scenarios and sweeps
    # by name (with files: 'file,' items), MLPerf benchmarks with their rounds.
    assert complete("perfmodel hardware show gb3") == ["gb300", "gb300-nvl72"]
    assert complete("perfmodel compare --gpu h100-sxm:") == ["h100-sxm:bf16", "h100-sxm:fp8"]
    assert complete("perfmodel plan --gpu gb300-nvl72:fp8,nv") == ["gb300-nvl72:fp8,nvfp4"]
    assert complete("perfmodel predict mlperf-405b-h1") == ["mlperf-405b-h100-512", "mlperf-405b-h1"]
    assert complete("perfmodel sweep gen") == ["generations", "gen"]
    assert complete("perfmodel predict --calibration n") == ["none", "n"]
    assert complete("perfmodel predict --hardware ou") == ["ou"]  # a file or folder
    assert complete("perfmodel predict --benchmark mlperf-llama31-8") == [
        "mlperf-llama31-8b", "mlperf-llama31-8b@v5.1", "mlperf-llama31-8b@v6.0"
    ]  # fmt: skip


def test_a_moe_prediction_says_where_its_interval_comes_from() -> None:
    layout = ("--tp", "1", "--pp", "1", "--cp", "1", "--vp", "1", "--ep", "8", "--mbs", "1", "--gbs", "64")
    args = ("predict", "--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "8", *layout, "--recompute", "none",
            "--zero", "1")  # fmt: skip
    out = run_cli(*args).out
    assert "leave-one-moe-model-out residuals" in out and "predicted by a MoE fit without it" in out
    assert "MoE" not in run_cli("predict").out


@pytest.mark.parametrize(
    ("flags", "note"),
    [
        ((), "$6.16/GPU-h (list: CoreWeave on-demand list, HGX H100, Feb 2026; the GPU's default)"),
        (("--buy",), "/GPU-h (owned, see Owning)"),
        (("--gpu", "mi355x", "--gpus", "64"), "no price (no public price for mi355x; pass --usd-per-gpu-hour)"),
        (("--usd-per-gpu-hour", "2"), "$2.00/GPU-h (quoted: given for this run)"),
    ],
)
def test_the_inputs_line_says_where_the_price_comes_from(flags: tuple[str, ...], note: str) -> None:
    """An owned or missing price is not labelled an on-demand default: a planner reads that line to trust the cost."""
    result = run_cli("predict", *flags)
    assert result.code == 0, result.err
    price = inputs_of(result.out)["price"]
    assert price.endswith(note)
    assert ("GPU's default" in price) == (not flags)


def test_the_inputs_are_short_labelled_lines() -> None:
    """One ~330-character 'Inputs:' line wrapped mid-word in an 80-column terminal: each input is a line of its own,
    the longest the price with its basis."""
    result = run_cli("predict")
    inputs = inputs_of(result.out)
    assert list(inputs) == ["work", "batch", "price", "energy", "stack", "software", "fitted"]
    assert inputs["batch"] == "GBS 1,024 x 8,192 = 8.39M tokens per step"
    assert max(len(line) for line in result.out.split("Inputs:\n")[1].split("\n\n")[0].splitlines()) <= 96


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        ((), "the bundled calibration (default)"),
        (("--calibration", "none"), "no calibration: the physical defaults, no interval"),
    ],
)
def test_the_inputs_name_the_calibration(flags: tuple[str, ...], named: str) -> None:
    """A calibration fitted on one's own runs (calibrate --data) moves every figure: the table says which priced it,
    as the JSON's interval_protocol and validate's footer do; a file is named as given (tests/test_user_calibration)."""
    assert inputs_of(run_cli("predict", *flags).out)["fitted"] == named


def test_the_memory_line_says_when_a_job_gets_less_than_the_datasheet_hbm() -> None:
    """`hardware list` prints GB300's 288 GiB; a job gets the 279 GiB the system exposes (hbm_usable_gb)."""
    gb300 = run_cli("predict", "llama3.1-405b-gb300-1024-nvfp4")
    assert gb300.code == 0 and " GiB of 279.0 GiB usable (288 GiB HBM) (fits)" in gb300.out
    h100 = run_cli("predict")
    assert h100.code == 0 and " GiB of 80.0 GiB (fits)" in h100.out


LAYOUT_FILE = """model = "llama3.1-70b"
gpu = "h100-sxm"
n_gpus = 64
[parallelism]
tp = 3
pp = 1
cp = 1
mbs = 1
recompute = "none"
zero = 0
"""


@pytest.mark.parametrize(
    ("flags", "where"),
    [
        ((), "{file}: field 'parallelism.tp': invalid layout TP3 "),  # the file set TP
        (("--tp", "8", "--gbs", "100"), "--gbs: invalid layout TP8 "),  # the flag set the batch the rule names
        (("--gpus", "56"), "--gpus: invalid layout TP3 "),  # the file's TP, the flag's GPU count: the flag
    ],
)
def test_layout_rule_error_names_the_flag_or_file_field_that_set_it(
    tmp_path: Path, flags: tuple[str, ...], where: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(LAYOUT_FILE)
    result = run_cli("predict", str(path), *flags)
    assert result.code == 2 and "Traceback" not in result.err
    assert result.err.startswith("error: " + where.format(file=path)), result.err
    assert result.err.count("\n") == 1


def test_a_precision_typed_as_the_tables_print_it() -> None:
    """Every table prints FP8 and NVFP4; `--precision FP8` and `--gpu h100-sxm:FP8` were refused ('FP8' is not one of
    'bf16', 'fp8', ...)."""
    flags = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--tp", "1", "--pp", "1", "--cp", "1")
    assert run_json("predict", *flags, "--precision", "FP8") == run_json("predict", *flags, "--precision", "fp8")
    rows = run_json("compare", "--model", "llama3.1-8b", "--gpu", "h100-sxm:FP8", "--gpu", "b200:NVFP4", "--gpus", "8")
    assert [r["precision"] for r in rows] == ["fp8", "nvfp4"]
    refused = run_cli("compare", "--model", "llama3.1-8b", "--gpu", "h100-sxm:FP9")
    assert refused.code == 2 and "unknown precision 'FP9'" in refused.err


def test_hardware_show_prints_whole_figures_whole() -> None:
    """`hardware show dgx-h100` printed 8.0 GPUs per node and a $375000.0 server; a GB200 NVL72 rack's price
    reads whole too."""
    rows = {line.split()[0]: line.split()[1] for line in run_cli("hardware", "show", "dgx-h100").out.splitlines()[2:]
            if len(line.split()) > 1}  # fmt: skip
    assert (rows["gpus_per_node"], rows["usd_per_system"], rows["latency.switch_hop_us"]) == ("8", "375000", "0.15")
    assert " 3450000 " in run_cli("hardware", "show", "gb200-nvl72").out


def test_a_budget_written_with_its_dollar_sign() -> None:
    """`plan --budget '$40M'` was refused as "not a number (examples: 15T, 2.5e12, 1,000,000)", token counts."""
    flags = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--tokens", "1T")
    signed, plain = (run_json("plan", *flags, "--budget", budget) for budget in ("$1M", "1M"))
    assert signed["goal"]["budget_usd"] == 1e6 and signed["candidates"] == plain["candidates"]
    refused = run_cli("plan", *flags, "--budget", "lots")
    assert refused.code == 2 and "'lots' is not a number (examples: 40M, 40e6, $40M)" in refused.err


def test_a_price_written_with_its_dollar_sign() -> None:
    """`--usd-per-gpu-hour '$2.99'` was refused as "not a number" where --budget '$40M' and --gpu ID:$PRICE take it."""
    flags = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--format", "json")
    signed, plain = (run_json("predict", *flags, "--usd-per-gpu-hour", price) for price in ("$2.99", "2.99"))
    assert signed == plain
    refused = run_cli("predict", *flags, "--usd-per-gpu-hour", "$cheap")
    assert refused.code == 2 and "'$cheap' is not a number" in refused.err


def test_a_scenario_saved_with_a_byte_order_mark_reads_as_without(tmp_path: Path) -> None:
    """Notepad and other Windows editors begin UTF-8 with a BOM, which tomllib took for 'Invalid statement'."""
    text = 'model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\n'
    plain, marked = tmp_path / "plain.toml", tmp_path / "marked.toml"
    plain.write_text(text)
    marked.write_bytes(b"\xef\xbb\xbf" + text.encode())
    expected = run_cli("predict", str(plain), "--format", "json")
    assert expected.code == 0 and run_cli("predict", str(marked), "--format", "json").out == expected.out


@pytest.mark.parametrize(("flags", "energy"), [((), "PUE 1.2 (default), "), (("--pue", "1.3"), "PUE 1.3, ")])
def test_the_energy_input_marks_a_pue_nobody_gave(flags: tuple[str, ...], energy: str) -> None:
    """The default scenario's PUE is perfmodel's, not the user's: it read 'PUE 1.2' unmarked, as if given."""
    assert inputs_of(run_cli("predict", *flags).out)["energy"].startswith(energy)
