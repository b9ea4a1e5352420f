"""Your own hardware and models: user TOML files found through --hardware, PERFMODEL_PATH and the API keyword,
validated like the bundled ones, `base =` inheritance, and bundled scenarios and sweeps reachable by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

import perfmodel
from perfmodel.inputs import catalogue

TAPERED = """\
id = "ours-h100"
base = "dgx-h100"
name = "Our H100 cluster (2:1 tapered fabric, 4 NICs per node)"
nics_per_gpu = { value = 0.5, source = "our cluster: 4 ConnectX-7 per 8-GPU node" }

[fabric]
oversubscription = { value = 2.0, source = "our network design: 2:1 taper at the leaf" }
"""
NEW_GPU = """\
id = "h100-lowpower"
base = "h100-sxm"
name = "H100 SXM at a 500 W cap"
default_system = "lowpower-node"
bf16_tflops = { value = 700, source = "estimate: clocks at a 500 W board cap" }
fp8_tflops = { value = 1400, source = "estimate: clocks at a 500 W board cap" }
power_w = { value = 500, source = "our power cap" }
"""
NEW_NODE = """\
id = "lowpower-node"
base = "dgx-h100"
name = "8 x H100 at 500 W"
accelerator = "h100-lowpower"
"""
MODEL = """\
id = "our-34b"
name = "Our 34B"
layers = 48
hidden = 8192
ffn = 22016
heads = 64
kv_heads = 8
vocab = 128256
"""
WORKLOAD = ("--model", "llama3.1-70b", "--gpus", "256", "--gbs", "256", "--precision", "fp8", "--format", "json")


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_a_based_entry_replaces_only_what_it_gives(tmp_path: Path) -> None:
    path = _write(tmp_path, "ours.toml", TAPERED)
    shown = json.loads(run_cli("hardware", "show", "ours-h100", "--hardware", str(path), "--format", "json").out)
    bundled = json.loads(run_cli("hardware", "show", "dgx-h100", "--format", "json").out)
    assert shown["fabric"]["oversubscription"] == {"value": 2.0, "source": "our network design: 2:1 taper at the leaf"}
    assert shown["nics_per_gpu"]["value"] == 0.5
    assert shown["latency"] == bundled["latency"] and shown["fabric"]["name"] == bundled["fabric"]["name"]
    assert shown["accelerator"] == "h100-sxm"


def test_half_the_nics_and_a_tapered_fabric_are_never_faster(tmp_path: Path) -> None:
    path = _write(tmp_path, "ours.toml", TAPERED)
    ours = json.loads(run_cli("predict", "--hardware", str(path), "--system", "ours-h100", *WORKLOAD).out)
    theirs = json.loads(run_cli("predict", "--system", "dgx-h100", *WORKLOAD).out)
    assert ours["system"] == "ours-h100"
    assert ours["step_time_s"] > theirs["step_time_s"]


def test_a_new_accelerator_and_its_system(tmp_path: Path) -> None:
    _write(tmp_path, "gpu.toml", NEW_GPU)
    _write(tmp_path, "node.toml", NEW_NODE)
    capped = json.loads(run_cli("predict", "--hardware", str(tmp_path), "--gpu", "h100-lowpower", *WORKLOAD).out)
    full = json.loads(run_cli("predict", "--gpu", "h100-sxm", *WORKLOAD).out)
    assert capped["system"] == "lowpower-node" and capped["accelerator"] == "h100-lowpower"
    assert capped["step_time_s"] > full["step_time_s"]
    listed = run_cli("hardware", "list", "--hardware", str(tmp_path)).out
    assert "h100-lowpower" in listed and "lowpower-node" in listed


def test_the_path_variable_and_the_api_keyword(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, "ours.toml", TAPERED)
    api = perfmodel.predict(hardware=path, system="ours-h100", model="llama3.1-70b", n_gpus=256, gbs=256)
    catalogue.clear()
    monkeypatch.setenv("PERFMODEL_PATH", str(tmp_path))
    assert perfmodel.predict(system="ours-h100", model="llama3.1-70b", n_gpus=256, gbs=256).to_dict() == api.to_dict()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (TAPERED.replace(', source = "our network design: 2:1 taper at the leaf"', ""),
         "ours.toml: field 'fabric.oversubscription.source': Field required"),
        (TAPERED.replace('base = "dgx-h100"', 'base = "dgx-h1000"'), "ours.toml: field 'base': unknown accelerator"),
        (TAPERED.replace('id = "ours-h100"', 'id = "dgx-h100"'), "ours.toml: id 'dgx-h100' is already defined by"),
        (TAPERED.replace('id = "ours-h100"\n', ""), "ours.toml: field 'id' is required"),
        (TAPERED.replace("value = 2.0", "value = -2.0"),
         "field 'fabric.oversubscription.value': must be a number from 0.5 to 100, not -2"),
        ("id = [", "ours.toml: not valid TOML"),
        (TAPERED.replace('{ value = 0.5, source = "our cluster: 4 ConnectX-7 per 8-GPU node" }', "0.5"),
         "ours.toml: field 'nics_per_gpu': must be a {value, source} pair, e.g. { value = 0.5, source = "),
        (TAPERED.split("[fabric]")[0] + "fabric = 3\n",
         "ours.toml: field 'fabric': must be a table"),
    ],
)  # fmt: skip
def test_bad_user_entries_are_one_line_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, "ours.toml", text)
    result = run_cli("predict", "--hardware", str(path), "--format", "json")
    assert result.code == 2 and result.out == "" and result.err.count("\n") == 1
    assert message in result.err


def test_a_missing_catalogue_names_the_flag() -> None:
    result = run_cli("predict", "--hardware", "/nonexistent/cluster.toml")
    assert (
        result.code == 2
        and result.err == "error: --hardware /nonexistent/cluster.toml: no such hardware file or folder\n"
    )


@pytest.mark.parametrize(("name", "flag"), [("gb300", "--gpu"), ("dgx-h100", "--system")])
def test_a_catalogue_id_given_as_a_hardware_path_says_which_flag_takes_it(name: str, flag: str) -> None:
    result = run_cli("predict", "--hardware", name)
    assert result.code == 2 and result.out == ""
    assert result.err == f"error: --hardware {name}: no such hardware file or folder ({flag} {name} names it)\n"


def test_a_model_file_from_a_flag_and_from_a_scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, "ours.toml", MODEL)
    _write(tmp_path, "plan.toml", 'model = "ours.toml"\ngpu = "h100-sxm"\nn_gpus = 64\nprecision = "bf16"\n')
    from_scenario = json.loads(run_cli("predict", str(tmp_path / "plan.toml"), "--format", "json").out)
    monkeypatch.chdir(tmp_path)
    flags = ("--model", "ours.toml", "--gpu", "h100-sxm", "--gpus", "64", "--precision", "bf16", "--format", "json")
    from_flag = json.loads(run_cli("predict", *flags).out)
    assert from_scenario["model"] == from_flag["model"] == "our-34b"
    assert from_scenario["step_time_s"] == from_flag["step_time_s"]
    _write(tmp_path, "bad.toml", MODEL.replace("layers = 48", "layers = 0"))
    bad = run_cli("predict", "--model", "bad.toml")
    assert bad.code == 2 and "bad.toml: field 'layers'" in bad.err
    _write(tmp_path, "headed.toml", "[model]\n" + MODEL)  # "the keys of a [model] table", read as that table
    headed = run_cli("predict", "--model", "headed.toml")
    assert headed.code == 2 and headed.err.count("\n") == 1
    assert "headed.toml: a model file holds the keys of a scenario's [model] table at its top level" in headed.err


def test_bundled_scenarios_and_sweeps_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # nowhere near the checkout's scenarios/ folder
    by_name = run_cli("predict", "mlperf-405b-h100-512", "--format", "json")
    assert by_name.code == 0 and json.loads(by_name.out)["parallelism"]["tp"] == 8
    dotted = run_cli("predict", "llama3.1-8b-1node", "--format", "json")  # a name with dots in it
    assert dotted.code == 0 and json.loads(dotted.out)["model"] == "llama3.1-8b"
    listed = json.loads(run_cli("scenarios", "list", "--format", "json").out)
    assert {"kind": "sweep", "name": "generations"} | {"description": listed[-1]["description"]} in listed
    assert {r["name"] for r in listed if r["kind"] == "scenario"} >= {"default", "mlperf-405b-h100-512"}
    unknown = run_cli("predict", "mlperf-405b")
    bundled = "(bundled scenarios: campaign-deepseek-v3, campaign-llama3.1-405b, default,"
    assert unknown.code == 2 and bundled in unknown.err
    unknown_dotted = run_cli("predict", "llama3.1-8b-2node")
    assert unknown_dotted.code == 2 and bundled in unknown_dotted.err


def test_the_user_config_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$XDG_CONFIG_HOME/perfmodel/hardware, the same convention as the topology cache's $XDG_CACHE_HOME."""
    folder = tmp_path / "perfmodel" / "hardware"
    folder.mkdir(parents=True)
    _write(folder, "ours.toml", TAPERED)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert "ours-h100" in run_cli("hardware", "list").out


def test_a_sweep_is_described_by_its_first_whole_sentence() -> None:
    """A sweep file has no description key: its comment's first line alone ended 'on the datasheet and'."""
    listed = {r["name"]: r["description"] for r in json.loads(run_cli("scenarios", "list", "--format", "json").out)}
    assert listed["generations"].endswith(
        "with twice the NIC bandwidth: 2 x 5 x 3 x 2 = 60 points, each with its best layout."
    )
    assert listed["70b-layouts"].endswith("priced as arrays (7,680 rows).")


RUNS_ON_OURS = """\
id,source,model,system,n_gpus,precision,seq_len,tp,pp,cp,vp,mbs,gbs,zero,recompute,metric,measured
ours-1,our log,llama3.1-8b,ours-h100,16,bf16,8192,1,1,1,1,1,128,1,none,tokens_per_s_per_gpu,9000
ours-2,our log,llama3.1-8b,ours-h100,32,bf16,8192,1,1,1,1,1,128,1,none,tokens_per_s_per_gpu,8800
ours-3,our log,llama3.1-8b,ours-h100,64,bf16,8192,1,1,1,1,1,128,1,none,tokens_per_s_per_gpu,8700
ours-4,our log,llama3.1-8b,ours-h100,128,bf16,8192,1,1,1,1,1,256,1,none,tokens_per_s_per_gpu,8600
ours-5,our log,llama3.1-8b,ours-h100,256,bf16,8192,1,1,1,1,1,512,1,none,tokens_per_s_per_gpu,8500
"""


def test_validate_and_calibrate_name_your_own_hardware(tmp_path: Path) -> None:
    """A CSV of runs on your own cluster needs its file: --hardware on validate and calibrate, `hardware=` in Python."""
    ours = _write(tmp_path, "ours.toml", TAPERED)
    runs = _write(tmp_path, "runs.csv", RUNS_ON_OURS)
    unknown = run_cli("validate", "--data", str(runs))
    assert unknown.code == 2 and "unknown system 'ours-h100'" in unknown.err
    cli = json.loads(run_cli("validate", "--hardware", str(ours), "--data", str(runs), "--format", "json").out)
    catalogue.clear()
    api = perfmodel.validate(data=runs, hardware=ours).to_dict()
    assert [r["predicted"] for r in cli["rows"]] == [r["predicted"] for r in api["rows"]]
    stock = _write(tmp_path, "stock.csv", RUNS_ON_OURS.replace("ours-h100", "dgx-h100"))
    assert all(
        o["predicted"] < s["predicted"]
        for o, s in zip(cli["rows"], perfmodel.validate(data=stock).to_dict()["rows"], strict=True)
    )
    catalogue.clear()
    out = tmp_path / "cal.json"
    fitted = run_cli("calibrate", "--hardware", str(ours), "--data", str(runs), "--out", str(out), "--no-cv")
    assert fitted.code == 0, fitted.err
    assert json.loads(out.read_text())["user"]["rows"] == [f"ours-{k}" for k in range(1, 6)]


def test_a_sweep_takes_hardware_files_and_hands_them_to_its_workers(tmp_path: Path) -> None:
    """`sweep --hardware DIR`: a sweep over your own GPU beside a bundled one, on two worker processes; a worker
    started by spawn or forkserver (Python 3.14's default) inherits no catalogue, so each adds its parent's."""
    from perfmodel.inputs.hardware import get_accelerator
    from perfmodel.planning.workers import _use_catalogues

    hardware = tmp_path / "hardware"
    hardware.mkdir()
    _write(hardware, "gpu.toml", NEW_GPU)
    _write(hardware, "node.toml", NEW_NODE)
    spec = _write(tmp_path, "s.toml", '[sweep]\nmodels = ["llama3.1-8b"]\ngpus = ["h100-lowpower", "h100-sxm"]\n'
                                      'precisions = ["fp8"]\nn_gpus = [64]\n')  # fmt: skip
    result = run_cli("sweep", str(spec), "--hardware", str(hardware), "-j", "2", "--format", "json")
    assert result.code == 0, result.err
    assert sorted(row["accelerator"] for row in json.loads(result.out)) == ["h100-lowpower", "h100-sxm"]
    catalogue.clear()
    _use_catalogues((str(hardware),))
    assert get_accelerator("h100-lowpower").power_w.value == 500
    catalogue.clear()


def test_the_shipped_examples_named_again_are_not_a_conflict(monkeypatch: pytest.MonkeyPatch) -> None:
    """hardware_specs/examples is always read; `--hardware hardware_specs/examples` (a relative path to the same
    files) failed with "id 'grand-teton' is already defined by .../grand-teton.toml", the file itself."""
    root = Path(__file__).parent.parent
    monkeypatch.chdir(root)
    for named in ("hardware_specs/examples", "hardware_specs/examples/grand-teton.toml"):
        result = run_cli("predict", "--hardware", named, "--system", "grand-teton", *WORKLOAD)
        assert result.code == 0, (named, result.err)
        assert json.loads(result.out)["system"] == "grand-teton"
