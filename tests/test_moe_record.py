"""`predict --format json|csv` of a MoE model carries what its exposed EP time rests on (the `moe.` columns: the
dispatcher, the EP overlap setting and share, the scale-up domains, the imbalance), the same values the Experts line
and the export's Assumptions state; a dense prediction has none of them, and a sweep mixing both leaves them empty."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from conftest import run_cli, run_json

from perfmodel.inputs.scenario import load_scenario
from perfmodel.planning.predict import context_for

_GIVEN = ("--tp", "1", "--pp", "1", "--cp", "1", "--vp", "1", "--mbs", "1", "--recompute", "none", "--zero", "1")


def _json(*args: str) -> dict:  # type: ignore[type-arg]
    return run_json("predict", *args, *_GIVEN)  # type: ignore[no-any-return]


def _efficiency(model: str, gpu: str, name: str) -> float:
    return float(getattr(context_for(load_scenario(None, {"model": model, "gpu": gpu})).efficiency, name))


def test_an_ep_group_across_dgx_nodes_records_the_scale_out_share() -> None:
    """EP32 x ETP2 on 8-GPU DGX H100 nodes spans 8 nodes (as tests/test_experts_line.py words it)."""
    d = _json("--model", "deepseek-v3", "--gpu", "h100-sxm", "--gpus", "64", "--ep", "32", "--etp", "2", "--gbs", "64")
    exchange = {k: v for k, v in d["moe"].items() if not k.startswith("measured_")}  # tests/test_measured_moe.py
    assert d["moe"]["measured_rows"] == 1  # DeepSeek-V3's one bundled Hopper row (measured_runs.csv row 270)
    assert exchange == {
        "dispatcher": "flex",
        "ep_microbatch_overlap": False,
        "ep_exchange_exposed": False,
        "ep_overlap_fraction": _efficiency("deepseek-v3", "h100-sxm", "overlap_dp"),
        "ep_overlap_parameter": "overlap_dp",
        "ep_scaleup_domains": 8,
        "imbalance": 1.0,
        "capacity_factor": 0.0,
        "pad_to_capacity": False,
    }
    assert list(d)[list(d).index("breakdown") + 1] == "moe" and d["breakdown"]["ep_comm_exposed_s"] > 0


def test_the_recipe_setting_and_the_imbalance_are_recorded(tmp_path: Path) -> None:
    """GPT-OSS-120B with the micro-batch EP overlap set (the 'alltoall' recipe of Megatron-Bridge 0.6.2's GB200
    BF16 config) and a 1.3x busiest rank, EP8 inside one GB200 rack: the CSV row carries both."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'gpu = "gb200"\nn_gpus = 8\nmoe_imbalance = 1.3\n[model]\nbase = "gpt-oss-120b"\nep_microbatch_overlap = true\n'
    )
    result = run_cli("predict", str(scenario), "--ep", "8", "--gbs", "64", *_GIVEN, "--format", "csv")
    assert result.code == 0, result.err
    row = next(csv.DictReader(io.StringIO(result.out)))
    assert row["moe.measured_rows"]  # GPT-OSS-120B's bundled Blackwell rows: tests/test_measured_moe.py
    assert {k: v for k, v in row.items() if k.startswith("moe.") and not k.startswith("moe.measured_")} == {
        "moe.dispatcher": "alltoall",
        "moe.ep_microbatch_overlap": "True",
        "moe.ep_exchange_exposed": "False",
        "moe.ep_overlap_fraction": repr(_efficiency("gpt-oss-120b", "gb200", "overlap_ep")),
        "moe.ep_overlap_parameter": "overlap_ep",
        "moe.ep_scaleup_domains": "1",
        "moe.imbalance": "1.3",
        "moe.capacity_factor": "0.0",
        "moe.pad_to_capacity": "False",
    }


def test_token_dropping_is_recorded_with_its_capacity_factor(tmp_path: Path) -> None:
    """Qwen3-30B-A3B padded to a capacity factor of 1.25 ('alltoall', as Megatron-Bridge's apply_moe_token_drop
    asserts): the record and the Experts line both say so."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'gpu = "b200"\nn_gpus = 8\n[model]\nbase = "qwen3-30b-a3b"\ndispatcher = "alltoall"\n'
        "capacity_factor = 1.25\npad_to_capacity = true\n"
    )
    d = _json(str(scenario), "--ep", "8", "--gbs", "64")
    assert (d["moe"]["capacity_factor"], d["moe"]["pad_to_capacity"]) == (1.25, True)
    table = run_cli("predict", str(scenario), "--ep", "8", "--gbs", "64", *_GIVEN)
    assert "in 48 of 48 layers, tokens beyond capacity factor 1.25 dropped, every expert padded to it;" in table.out


def test_a_dense_prediction_has_no_moe_columns_and_a_mixed_sweep_leaves_them_empty(tmp_path: Path) -> None:
    dense = _json("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--gbs", "64")
    assert "moe" not in dense and "ep_comm_exposed_s" not in dense["breakdown"]
    sweep = tmp_path / "mix.toml"
    sweep.write_text(
        '[sweep]\nmodels = ["llama3.1-8b", "qwen3-30b-a3b"]\ngpus = ["h100-sxm"]\nprecisions = ["bf16"]\n'
        "n_gpus = [8]\n[sweep.set]\nparallelism = { gbs = 64, seq_len = 4096 }\n"
    )
    result = run_cli("sweep", str(sweep), "--format", "csv")
    assert result.code == 0, result.err
    llama, qwen = csv.DictReader(io.StringIO(result.out))
    assert {llama[k] for k in llama if k.startswith("moe.")} == {""}
    assert (qwen["model"], qwen["moe.dispatcher"], qwen["moe.ep_scaleup_domains"]) == ("qwen3-30b-a3b", "flex", "1")
