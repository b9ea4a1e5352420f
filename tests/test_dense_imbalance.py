"""`moe_imbalance` given where a dense model runs is accepted (a sweep's [sweep.set] serves dense and MoE models
alike, so refusing it would refuse the sweep) and ignored for the dense model, which the table says in a note; the
prediction itself is the one without the setting."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli

NOTE = "does not apply to llama3.1-8b: a dense model routes no tokens to experts"


def test_predict_notes_that_a_dense_model_ignores_it(tmp_path: Path) -> None:
    plain, scenario = tmp_path / "plain.toml", tmp_path / "s.toml"
    plain.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\n')
    scenario.write_text(plain.read_text() + "moe_imbalance = 1.3\n")
    given = run_cli("predict", str(scenario))
    assert given.code == 0, given.err
    note = f"Note: moe_imbalance 1.3 {NOTE} (it counts for mixture-of-experts models only).\n"
    assert given.out == run_cli("predict", str(plain)).out + "\n" + note
    assert run_cli("predict", str(scenario), "--format", "json").out == run_cli("predict", str(plain), "--format",
                                                                                 "json").out  # fmt: skip


def test_a_sweep_of_dense_and_moe_models_names_the_dense_ones(tmp_path: Path) -> None:
    sweep = tmp_path / "mix.toml"
    sweep.write_text(
        '[sweep]\nmodels = ["llama3.1-8b", "qwen3-30b-a3b"]\ngpus = ["h100-sxm"]\nprecisions = ["bf16"]\n'
        "n_gpus = [8]\n[sweep.set]\nmoe_imbalance = 1.3\nparallelism = { gbs = 64, seq_len = 4096 }\n"
    )
    result = run_cli("sweep", str(sweep))
    assert result.code == 0, result.err
    assert result.out.endswith(f"\n\nNote: moe_imbalance 1.3 {NOTE} (it counts for mixture-of-experts models only).\n")
    balanced = tmp_path / "balanced.toml"
    balanced.write_text(sweep.read_text().replace("moe_imbalance = 1.3\n", ""))
    assert NOTE not in run_cli("sweep", str(balanced)).out
