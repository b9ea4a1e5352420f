"""Megatron's FP8 scaling as a knob (inputs/stacks.py stack_recipe; Megatron-Bridge's `fp8_recipe`): 'delayed' skips
the amax pass in any release, 'tensorwise' (current scaling) pays it in any release, unset the release decides
(efficiency.CURRENT_SCALING_RELEASE); each stack takes only its own recipes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import run_cli

import perfmodel
from perfmodel.errors import PerfmodelError
from perfmodel.fitting.runs import read_runs_csv
from perfmodel.inputs.precision import get_recipe
from perfmodel.inputs.stacks import Knobs, get_stack, stack_knobs, stack_recipe
from perfmodel.outputs.launch import Run, for_prediction, launch
from perfmodel.physics.parallel import Layout
from perfmodel.physics.workload import Shard, layer_forward

MEGATRON_8B = {
    "model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8, "tp": 8, "pp": 1, "cp": 1, "mbs": 1, "gbs": 64,
    "zero": 1, "recompute": "none", "precision": "fp8", "calibration": "none",
}  # fmt: skip
"""Llama 3.1 8B at TP 8 on one H100 node: the forward casts of each layer are the closed form below."""


def _predict(**options: object) -> perfmodel.Prediction:
    found = perfmodel.predict(**(MEGATRON_8B | options))
    assert isinstance(found, perfmodel.Prediction)
    return found


def _forward_bytes(fp8_recipe: str | None) -> tuple[float, float]:
    """(all memory bytes, of them the amax pass a delayed-scaling release skips) of one layer's forward at TP 8 on
    one sequence of 8,192 tokens, Megatron with this FP8 recipe."""
    found = _predict()
    stack = get_stack("megatron")
    rec = stack_recipe(get_recipe("fp8", found.hardware.accelerator), stack, stack_knobs(stack, fp8_recipe=fp8_recipe))
    ops = [op for op in layer_forward(Shard(found.model, rec, 8, 1, 1, 8192), rec) if op.kind == "memory"]
    return sum(float(op.bytes) for op in ops), sum(float(op.amax_bytes) for op in ops)


def test_the_amax_pass_is_the_releases_unset_paid_under_tensorwise_gone_under_delayed() -> None:
    """The forward's casts read 2 B per element for the amax: the QKV and fc1 inputs' T / 8 rows before the FP8
    gather (h wide), the output projection's and fc2's inputs on all T rows (q_dim / 8 and ffn / 8 wide). Unset,
    those bytes are the release's to skip; 'tensorwise' keeps them in the bytes with none to skip; 'delayed' drops
    them from the bytes."""
    md = _predict().model
    amax = 8192 * (2 * md.hidden + md.q_dim + md.ffn) / 8 * 2
    (unset, unset_amax), (current, current_amax), (delayed, delayed_amax) = (
        _forward_bytes(r) for r in (None, "tensorwise", "delayed")
    )
    assert unset_amax == pytest.approx(amax)
    assert (current, current_amax) == (pytest.approx(unset), 0.0)
    assert (delayed, delayed_amax) == (pytest.approx(unset - amax), 0.0)


@pytest.mark.parametrize(("vintage", "same_as_unset"), [("2025-06", "delayed"), ("2026-06", "tensorwise")])
def test_unset_the_release_decides_and_the_knob_overrides_it(vintage: str, same_as_unset: str) -> None:
    """Before 2025-09 the unset knob prices delayed scaling, from it current scaling; the other recipe moves the
    step the other way (current scaling slower: the amax pass). Priced with the bundled calibration: the physical
    defaults have no reference vintage to date a release against."""
    compute = {
        r: _predict(vintage=vintage, fp8_recipe=r, calibration=None).step.compute_s
        for r in (None, "delayed", "tensorwise")
    }
    assert compute[same_as_unset] == pytest.approx(compute[None])
    assert compute["tensorwise"] > compute["delayed"]


def test_the_knob_is_in_the_json_and_the_inputs_line() -> None:
    assert _predict(fp8_recipe="delayed").to_dict()["stack_knobs"]["fp8_recipe"] == "delayed"
    assert _predict().to_dict()["stack_knobs"]["fp8_recipe"] is None  # the release decides


def test_explain_shows_d_delayed_as_the_knob_sets_it() -> None:
    common = ["--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--tp", "8", "--pp", "1", "--cp", "1",
              "--mbs", "1", "--gbs", "64", "--precision", "fp8", "--vintage", "2025-06"]  # fmt: skip
    unset, current = run_cli("explain", *common), run_cli("explain", *common, "--fp8-recipe", "tensorwise")
    delayed = run_cli("explain", *common, "--fp8-recipe", "delayed")
    assert (unset.code, current.code, delayed.code) == (0, 0, 0)
    assert "d_delayed = 1:" in unset.out and "d_delayed = 0:" in current.out
    assert "FP8 scaled from each tensor's current amax in every release (fp8_recipe tensorwise: TE's)" in current.out
    assert "FP8 with delayed scaling (no amax pass before a cast)" in delayed.out
    assert "FP8 with delayed scaling" in unset.out and "FP8 with delayed scaling" not in current.out  # the release's


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--fp8-recipe", "rowwise"], "--fp8-recipe: stack 'megatron' has no FP8 recipe 'rowwise'; its recipes: "
         "delayed, tensorwise"),
        (["--stack", "torchtitan", "--fp8-recipe", "delayed"], "--fp8-recipe: stack 'torchtitan' has no FP8 recipe "
         "'delayed'; its recipes: tensorwise, rowwise"),
        (["--stack", "composer", "--fp8-recipe", "delayed"], "--fp8-recipe: stack 'composer' has no such knob; "
         "stacks that have it: megatron, torchtitan"),
    ],
)  # fmt: skip
def test_a_recipe_the_stack_does_not_run_is_a_one_line_error(flags: list[str], message: str) -> None:
    result = run_cli("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--precision", "fp8",
                     *flags)  # fmt: skip
    assert result.code == 2 and result.out == ""
    assert message in result.err and len(result.err.strip().splitlines()) == 1
    assert result.err.count(repr(flags[-1])) == 1  # the value is named once, not again as '(got ...)'


def test_the_api_and_a_runs_csv_refuse_it_too(tmp_path: Path) -> None:
    with pytest.raises(PerfmodelError, match="stack 'megatron' has no FP8 recipe 'rowwise'"):
        _predict(fp8_recipe="rowwise")
    header = "model,gpu,n_gpus,precision,seq_len,tp,pp,cp,mbs,gbs,zero,recompute,metric,measured,fp8_recipe"
    row = "llama3.1-8b,h100-sxm,8,fp8,8192,1,1,1,1,128,1,none,tokens_per_s_per_gpu,14000"
    path = tmp_path / "runs.csv"
    path.write_text(f"{header}\n{row},delayed\n")
    assert read_runs_csv(path)[0].scenario["fp8_recipe"] == "delayed"
    path.write_text(f"{header}\n{row},rowwise\n")
    with pytest.raises(PerfmodelError, match=r"row 2: field 'fp8_recipe': stack 'megatron' has no FP8 recipe"):
        read_runs_csv(path)


def test_launch_names_the_delayed_recipe_where_it_was_priced() -> None:
    layout = Layout(tp=4, pp=1, cp=1, dp=2, vp=1, ep=1, mbs=1, gbs=64, seq_len=8192, recompute="none", zero=1)
    delayed = Run("fp8", "p2p", Knobs(async_tp=None, compile=None, fp8_recipe="delayed"), n_layers=32)
    unset = replace(delayed, knobs=Knobs(async_tp=None, compile=None, fp8_recipe=None))
    assert launch("megatron-bridge", layout, delayed, "").options["mixed_precision"] == (
        "bf16_with_fp8_delayed_scaling_mixed"
    )
    assert launch("megatron-bridge", layout, unset, "").options["mixed_precision"] == (
        "bf16_with_fp8_current_scaling_mixed"
    )
    assert launch("megatron-lm", layout, delayed, "").options["--fp8-recipe"] == "delayed"
    assert launch("nemo", layout, delayed, "").options["trainer.plugins.fp8_recipe"] == "delayed"


@pytest.mark.parametrize(("vintage", "recipe"), [("2025-06", "delayed"), ("2026-06", "tensorwise")])
def test_launch_configures_the_scaling_the_release_was_priced_with(vintage: str, recipe: str) -> None:
    """The knob unset, a release before 25.09 is priced with delayed scaling: its config names delayed scaling, not
    the current scaling whose amax pass the step it heads left out (it had named 'tensorwise' in every release)."""
    found = _predict(vintage=vintage, calibration=None)
    assert for_prediction(found, "megatron-lm").options["--fp8-recipe"] == recipe
    bridge = "bf16_with_fp8_delayed_scaling_mixed" if recipe == "delayed" else "bf16_with_fp8_current_scaling_mixed"
    assert for_prediction(found, "megatron-bridge").options["mixed_precision"] == bridge
