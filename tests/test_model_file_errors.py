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
        ("experts = 16\ntop_k = 20\nmoe_ffn = 512\n", "field 'top_k': top_k (20) must be between 1 and the 16 experts"),
        ("experts = 16\ntop_k = 2\n",
         "field 'moe_ffn': experts (16) need moe_ffn, the hidden width of one expert (>= 1)"),
        ("top_k = 2\n", "field 'top_k': top_k needs experts > 0 (a dense model has no top_k)"),
        ("expert_glu_clamp = true\n",
         "field 'expert_glu_clamp': expert_glu_clamp needs experts > 0 (a dense model has no expert_glu_clamp)"),
        ("experts = 16\ntop_k = 2\nmoe_ffn = 512\ngroup_top_k = 2\n",
         "field 'expert_groups': group_top_k (2) needs expert_groups > 0"),
        ("experts = 16\ntop_k = 2\nmoe_ffn = 512\nexpert_groups = 4\ngroup_top_k = 5\n",
         "field 'group_top_k': group_top_k (5) must be between 1 and expert_groups (4)"),
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
    inline = tmp_path / "inline.toml"  # the same shapes as the scenario's own [model] table: its field, dotted
    inline.write_text('gpu = "h100-sxm"\nn_gpus = 8\n[model]\n' + MOE + extra)
    dotted = problem.replace("field '", "field 'model.")
    assert run_cli("predict", str(inline)).err == f"error: {inline}: {dotted}\n"


def test_an_unknown_base_names_the_field_and_a_flag_path_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A misspelt `base` is the model file's field 'base' (the scenario's [model] table's 'model.base'), and a
    `--model` file is named as the flag gave it, relative to the working folder, as a scenario's model file is."""
    monkeypatch.chdir(tmp_path)
    Path("mine.toml").write_text('base = "llama-70b"\nlayers = 40\n')
    problem = "field 'base': unknown model 'llama-70b' (did you mean 'llama2-70b'?); valid: "
    flags = run_cli("predict", "--model", "mine.toml", "--gpu", "h100-sxm", "--gpus", "8")
    assert (flags.code, flags.out) == (2, "") and flags.err.startswith(f"error: mine.toml: {problem}")
    Path("run.toml").write_text('model = "mine.toml"\ngpu = "h100-sxm"\nn_gpus = 8\n')
    assert run_cli("predict", "run.toml").err.startswith(f"error: mine.toml: {problem}")
    Path("inline.toml").write_text('gpu = "h100-sxm"\nn_gpus = 8\n[model]\nbase = "llama-70b"\nlayers = 40\n')
    dotted = problem.replace("field '", "field 'model.")
    assert run_cli("predict", "inline.toml").err.startswith(f"error: inline.toml: {dotted}")
