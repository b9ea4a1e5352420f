"""A model file (--model FILE.toml, or `model = "FILE.toml"` in a scenario) whose shapes disagree is refused naming
the model file, not the scenario that loaded it (the default scenario when only flags are given)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

MOE = 'id = "my-moe"\nname = "My MoE"\nlayers = 8\nhidden = 1024\nffn = 4096\nheads = 8\nkv_heads = 8\nvocab = 32000\n'


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ("experts = 16\ntop_k = 20\nmoe_ffn = 512\n", "model: experts (16) need moe_ffn and top_k between 1 and 16"),
        ("top_k = 2\n", "model: top_k, shared_experts, moe_ffn and dense_layers need experts > 0"),
        ("experts = 16\ntop_k = 2\nmoe_ffn = 512\ngroup_top_k = 2\n",
         "model: expert_groups and group_top_k (at most expert_groups) go together"),
    ],
)  # fmt: skip
def test_shapes_that_disagree_name_the_model_file(tmp_path: Path, extra: str, problem: str) -> None:
    model = tmp_path / "my-moe.toml"
    model.write_text(MOE + extra)
    flags = run_cli("predict", "--model", str(model), "--gpu", "h100-sxm", "--gpus", "8")
    assert (flags.code, flags.out) == (2, "")
    assert flags.err == f"error: {model}: {problem}\n"
    scenario = tmp_path / "run.toml"
    scenario.write_text('model = "my-moe.toml"\ngpu = "h100-sxm"\nn_gpus = 8\n')
    assert run_cli("predict", str(scenario)).err == f"error: {model}: {problem}\n"
