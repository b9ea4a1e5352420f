"""The default global batch on big clusters: capped at 16M tokens per step, printed, and warned about past the data."""

from __future__ import annotations

import json

import pytest
from conftest import inputs_of, run_cli

from perfmodel.inputs.scenario import TOKENS_PER_STEP_CAP, load_scenario

CASES = [(1024, 8192, 1024), (2048, 8192, 2048), (16384, 8192, 2048), (16384, 4096, 4096), (4096, 8190, 2048),
         (64, 8192, 512)]  # fmt: skip


@pytest.mark.parametrize(("n_gpus", "seq_len", "gbs"), CASES)
def test_the_default_batch_grows_with_the_cluster_up_to_16m_tokens(n_gpus: int, seq_len: int, gbs: int) -> None:
    """Llama 3 paper (arXiv 2407.21783) section 3.4.1: the batch went 4M -> 8M -> 16M tokens; Table 4: 16M tokens
    per batch on 16,384 H100. Before the cap the default on 16,384 GPUs was 16,384 sequences (134M tokens)."""
    scenario = load_scenario(None, {"model": "llama3.1-8b", "n_gpus": n_gpus, "parallelism.seq_len": seq_len})
    assert scenario.default_gbs() == gbs
    assert scenario.default_gbs() * seq_len <= TOKENS_PER_STEP_CAP
    assert scenario.default_gbs(capped=False) == n_gpus * -(-4 * 2**20 // (seq_len * n_gpus))


def test_predict_on_16k_gpus_defaults_to_16m_tokens_per_step_and_prints_it() -> None:
    args = ("predict", "--model", "llama3.1-405b", "--gpu", "h100-sxm", "--gpus", "16384", "--tp", "8", "--pp", "16",
            "--cp", "1")  # fmt: skip
    d = json.loads(run_cli(*args, "--format", "json").out)
    assert d["parallelism"]["gbs"] * d["parallelism"]["seq_len"] == 16 * 2**20
    table = run_cli(*args).out
    assert inputs_of(table)["batch"].startswith("GBS 2,048 x 8,192 = 16.8M tokens per step")
    assert "beyond any published convergence data" not in table


def test_a_batch_beyond_published_convergence_data_warns() -> None:
    """MLPerf Training v5.0 Llama 3.1 405B: GBS up to 9,216 x 8,192 tokens has reference convergence points."""
    within = run_cli("predict", "--gbs", "9216").out
    beyond = run_cli("predict", "--gbs", "9248").out  # the next multiple of DP 32
    assert "beyond any published convergence data" not in within
    assert "Warning: 75.8M tokens per step is beyond any published convergence data" in beyond


def test_a_cluster_too_large_for_the_capped_batch_gets_the_growing_one() -> None:
    """1,000,000 GPUs cannot split 2,048 sequences of Llama 3.1 8B (32 layers, TP at most 8): the batch grows with
    the GPU count again, and the table says it is beyond the data."""
    args = ("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "1000000")
    d = json.loads(run_cli(*args, "--format", "json").out)
    assert d["parallelism"]["gbs"] >= 1_000_000 // (8 * 34)
    assert "beyond any published convergence data" in run_cli(*args).out
