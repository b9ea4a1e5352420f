"""An MLPerf benchmark's default global batch stays within the batches it can be scored at: the rules' minimum and
the largest batch with a reference convergence point (mlperf-logging rcp_checker/training_6.0.0/rcps_*.json)."""

from __future__ import annotations

import json

from conftest import inputs_of, run_cli

from perfmodel.inputs.mlperf import get_benchmark
from perfmodel.inputs.scenario import load_scenario


def test_bounds_are_the_rules_minimum_and_the_largest_rcp_batch() -> None:
    """rcps_gpt_oss_20b.json: reference batches 16, 32, 64; rcps_llama31_8b.json: 16 ... 128;
    closed_deepseekv3_671b.yaml: GBS >= 15,360, rcps_deepseekv3_671b.json up to 18,432."""
    assert get_benchmark("mlperf-gpt-oss-20b").gbs_bounds() == (1, 64)
    assert get_benchmark("mlperf-llama31-8b").gbs_bounds() == (1, 128)
    assert get_benchmark("mlperf-deepseek-v3").gbs_bounds() == (15360, 18432)


def test_the_default_batch_is_lowered_to_the_largest_rcp_batch() -> None:
    """~4M tokens of 8,192 would be 512 sequences: no GPT-OSS-20B RCP reaches it, so no score could be given."""
    scenario = load_scenario(None, {"benchmark": "mlperf-gpt-oss-20b", "gpu": "gb300", "n_gpus": 64})
    assert scenario.token_default_gbs() == 512
    assert scenario.default_gbs() == 64


def test_a_gpt_oss_20b_benchmark_with_the_default_batch_is_predicted_and_says_why() -> None:
    args = ("predict", "--benchmark", "mlperf-gpt-oss-20b", "--gpu", "gb300", "--gpus", "64")
    result = run_cli(*args)
    assert result.code == 0, result.err
    batch = inputs_of(result.out)["batch"]
    assert batch.startswith("GBS 64 x 8,192")
    assert batch.endswith("(default: mlperf-gpt-oss-20b's largest batch with a reference convergence point, 64)")
    d = json.loads(run_cli(*args, "--format", "json").out)
    assert d["samples_to_converge"] == get_benchmark("mlperf-gpt-oss-20b").samples_to_converge(64)


def test_deepseek_v3_says_its_batch_is_the_rules_minimum() -> None:
    out = run_cli("predict", "--benchmark", "mlperf-deepseek-v3", "--gpu", "gb300", "--gpus", "256").out
    batch = inputs_of(out)["batch"]
    assert batch.startswith("GBS 15,360 x 4,096")
    assert batch.endswith("(default: mlperf-deepseek-v3's minimum batch, 15,360, as a multiple of the GPU count)")


def test_search_keeps_every_batch_within_the_rcps() -> None:
    args = ("search", "--benchmark", "mlperf-llama31-8b", "--gpu", "h100-sxm", "--gpus", "64", "--format", "json")
    result = run_cli(*args)
    assert result.code == 0, result.err
    batches = {row["parallelism"]["gbs"] for row in json.loads(result.out)["results"]}
    assert batches and max(batches) <= 128


def test_a_batch_above_the_rcps_names_the_range_to_use() -> None:
    result = run_cli(
        "predict", "--benchmark", "mlperf-deepseek-v3", "--gpu", "gb300", "--gpus", "256", "--gbs", "20480"
    )
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "error: mlperf-deepseek-v3@v6.0: GBS 20480 is above its largest batch with a reference convergence point, "
        "18432 (nothing to score the run against); use a GBS from 15360 to 18432\n"
    )
