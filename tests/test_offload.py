"""Activation offload to host memory (physics/offload.py; Scenario.activation_offload_layers): the offloaded layers'
saved activations leave HBM, and their copies over the host link cost what the pass's other layers cannot hide, plus
their HBM traffic. megatron-bridge 0.6.2's Llama 3 70B FP8 Megatron-FSDP recipes on GB200 / GB300 offload 40 / 20 of
the 80 layers (perf_recipes/llama/gb200/llama3.py L276-278, gb300/llama3.py L283-285)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

import perfmodel
from perfmodel.errors import PerfmodelError
from perfmodel.fitting.runs import bundled_runs
from perfmodel.fitting.validation import prepare
from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.scenario import Scenario, load_scenario, with_overrides
from perfmodel.physics.calibration import bundled
from perfmodel.physics.offload import offload_s
from perfmodel.physics.step import _evaluate, _per_rank, _saved, evaluate
from perfmodel.planning.predict import context_for, layout_vars, predict

LAYOUT = {"tp": 1, "pp": 1, "mbs": 2, "gbs": 256, "seq_len": 8192, "zero": 3, "recompute": "none"}
"""The recipes' layout: TP1 PP1 MBS 2 GBS 256, Megatron-FSDP, no recompute (gb200/llama3.py L258-266)."""


def _scenario(offloaded: int, gpu: str = "gb200", **layout: Any) -> Any:
    keys = {"model": "llama3.1-70b", "gpu": gpu, "n_gpus": 64, "precision": "fp8"}
    keys |= {"activation_offload_layers": offloaded} if offloaded else {}
    return load_scenario(None, keys | {f"parallelism.{k}": v for k, v in (LAYOUT | layout).items()})


def test_copies_that_fit_behind_their_pass_cost_their_hbm_traffic_alone() -> None:
    # 40 layers of 4 GB over 450 GB/s: 0.36 s of copies per pass, behind 78 layers of 14 ms (forward) and 28 ms.
    assert offload_s(4e9, 40, 80, 450e9, 8e12, 0.014, 0.028) == pytest.approx(2 * 40 * 4e9 / 8e12)


def test_copies_longer_than_their_pass_expose_the_rest() -> None:
    copies_s = 40 * 4e9 / 450e9
    hbm_s = 2 * 40 * 4e9 / 8e12
    expected = (copies_s - 78 * 0.001) + (copies_s - 78 * 0.002) + hbm_s
    assert offload_s(4e9, 40, 80, 450e9, 8e12, 0.001, 0.002) == pytest.approx(expected)
    # Over PCIe Gen5 (64 GB/s each way) the same copies take 7x longer than over NVLink-C2C.
    slow = offload_s(4e9, 40, 80, 64e9, 8e12, 0.001, 0.002)
    assert slow - hbm_s == pytest.approx(2 * 40 * 4e9 / 64e9 - 78 * 0.003)


def test_offloading_all_layers_but_one_hides_no_copy() -> None:
    """transformer-engine 2.20.2 cpu_offload.py L602-626: layer i's copy to the host starts before layer i + 1 and
    must end before layer L - n + i, its copy back starts before layer L - 1 - n + i's backward. At n = L - 1 both
    are layer i + 1: every copy waits whole, where at n = L - 2 each has a layer to hide behind."""
    copies_s, hbm_s = 79 * 4e9 / 450e9, 2 * 79 * 4e9 / 8e12
    assert offload_s(4e9, 79, 80, 450e9, 8e12, 0.014, 0.028) == pytest.approx(2 * copies_s + hbm_s)
    assert offload_s(4e9, 78, 80, 450e9, 8e12, 0.014, 0.028) == pytest.approx(2 * 78 * 4e9 / 8e12)


def test_the_offloaded_layers_saved_activations_leave_hbm() -> None:
    kept, offloaded = (context_for(_scenario(n)) for n in (0, 40))
    lv = layout_vars(predict(_scenario(40)).layout)
    sh = _per_rank(offloaded, lv)[0]
    layer_bytes = float(_saved(offloaded, sh, "none", 1.0))
    saved = float(evaluate(kept, lv).memory.activations - evaluate(offloaded, lv).memory.activations)
    assert saved == pytest.approx(40 * layer_bytes)
    # Llama 3 70B at MBS 2 x 8,192 tokens, FP8: about 4 GB per layer, about 340 GB for 80 (GB200 has 186 GB).
    assert 3e9 < layer_bytes < 5e9
    assert not evaluate(kept, lv).fits and evaluate(offloaded, lv).fits


def test_the_offload_is_priced_over_the_systems_host_link() -> None:
    assert resolve("gb200", None).system.host_link_gb_per_s_per_direction.value == 450  # NVLink-C2C, 900 bidir
    assert resolve("h100-sxm", None).system.host_link_gb_per_s_per_direction.value == 64  # PCIe 5.0 x16
    ctx = context_for(_scenario(40))
    lv = layout_vars(predict(_scenario(40)).layout)
    trace: dict[str, Any] = {}
    step = _evaluate(ctx, lv, trace)
    unpriced = evaluate(replace(ctx, recipe=replace(ctx.recipe, offload_layers=0)), lv)
    assert float(step.other_s - unpriced.other_s) == pytest.approx(trace["microbatches"] * float(trace["offload_s"]))
    assert float(trace["offload_s"]) > 0


def test_explain_says_how_much_host_memory_the_offload_holds() -> None:
    """The offloaded layers' saved activations wait in host memory: 40 of Llama 3 70B's ~4.1 GB layers at MBS 2 x
    8,192 tokens, ~163 GB of each GPU's; explain says so, as no system file gives the host's capacity to check."""
    from perfmodel.outputs.explain import explain

    prediction = predict(_scenario(40))
    ctx, lv = context_for(prediction.scenario), layout_vars(prediction.layout)
    host_gb = 40 * float(_saved(ctx, _per_rank(ctx, lv)[0], "none", 1.0)) / 1e9
    (note,) = [n for part in explain(prediction).parts for n in part.notes if n.startswith("activation offload")]
    assert f"they hold {host_gb:,.1f} GB of each GPU's host memory" in note and 150 < host_gb < 180


def test_the_search_keeps_pp_1_and_no_recompute_when_offloading() -> None:
    free = load_scenario(None, {"model": "llama3.1-70b", "gpu": "gb200", "n_gpus": 64, "precision": "fp8",
                                "activation_offload_layers": 40})  # fmt: skip
    layout = predict(free).layout
    assert (layout.pp, layout.recompute) == (1, "none")
    plain = context_for(load_scenario(None, {"model": "llama3.1-70b", "gpu": "gb200", "n_gpus": 64}))
    assert plain.recipe.offload_layers == 0


@pytest.mark.parametrize(
    ("offloaded", "gpu", "layout", "message"),
    [
        (80, "gb200", {}, "must be less than the 80 layers"),
        (40, "gb200", {"pp": 4, "zero": 1}, "needs PP 1 and recompute none"),
        (40, "gb200", {"recompute": "full"}, "needs PP 1 and recompute none"),
        (40, "a100-sxm-80gb", {}, "gives no host_link_gb_per_s_per_direction"),
    ],
)
def test_a_bad_offload_is_one_line(offloaded: int, gpu: str, layout: dict[str, Any], message: str) -> None:
    precision = {"precision": "bf16"} if gpu.startswith("a100") else {}
    with pytest.raises(PerfmodelError, match=message) as caught:
        scenario = _scenario(offloaded, gpu, **layout)
        predict(replace(scenario, **precision) if precision else scenario)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("gpu", "offloaded", "message"),
    [
        ("gb200", 80, "activation_offload_layers 80: must be less than the 80 layers"),
        ("a100-sxm-80gb", 40, "activation_offload_layers: system 'dgx-a100' gives no host_link"),
    ],
)
def test_a_bad_offload_names_its_scenario_file(tmp_path: Path, gpu: str, offloaded: int, message: str) -> None:
    """As the file's own checks do (full_iteration_graph with the offload: Scenario.__post_init__), one line, exit 2."""
    scenario = tmp_path / "offload.toml"
    scenario.write_text(f'model = "llama3.1-70b"\ngpu = "{gpu}"\nn_gpus = 64\nactivation_offload_layers = {offloaded}')
    refused = run_cli("predict", str(scenario))
    assert refused.code == 2 and refused.err.startswith(f"error: {scenario}: {message}")
    assert refused.err.count("\n") == 1


def test_a_bad_offload_of_a_scenario_object_is_refused_as_a_files() -> None:
    """The API checks a Scenario built in Python where it checks a file's (inputs/scenario.check_offload, through
    with_overrides): the same line, naming the scenario, and the flag where one set the offload."""
    built = Scenario(model="llama3.1-70b", gpu="gb200", n_gpus=64, stack="torchtitan", activation_offload_layers=40)
    with pytest.raises(PerfmodelError, match=r"^scenario: activation_offload_layers: Megatron-Core's offload; stack"):
        perfmodel.predict(built)
    with pytest.raises(PerfmodelError, match=r"^--from saved.json: activation_offload_layers 80: must be less than"):
        with_overrides(replace(built, stack="megatron"), {"activation_offload_layers": 80},
                       {"activation_offload_layers": "--from saved.json"})  # fmt: skip


@pytest.mark.parametrize("command", ["compare", "plan"])
def test_an_offload_is_checked_on_every_gpu_compared(tmp_path: Path, command: str) -> None:
    """compare's and plan's other --gpu targets (compare.scenarios) get the file's check of the offload: the A100's
    system has no host link, which priced its row NaN when only the first target's hardware was checked."""
    scenario = tmp_path / "offload.toml"
    scenario.write_text('model = "llama3.1-70b"\ngpu = "gb200"\nn_gpus = 64\nactivation_offload_layers = 40')
    goal = ("--deadline", "30d") if command == "plan" else ()
    refused = run_cli(command, str(scenario), "--gpu", "gb200", "--gpu", "a100-sxm-80gb:bf16", *goal)
    assert refused.code == 2 and refused.err.count("\n") == 1
    assert refused.err.startswith("error: --gpu a100-sxm-80gb: activation_offload_layers: system 'dgx-a100' gives no")


@pytest.mark.parametrize(("line", "offloaded"), [(155, 40), (154, 20)])
def test_the_recipe_rows_are_priced_with_their_offload(line: int, offloaded: int) -> None:
    # measured_runs.csv line 155 (NeMo 26.02.01, 64 GB200, FP8, 4,357 tokens/s/GPU) and line 154 (64 GB300, 5,243):
    # Llama 3 70B TP1 PP1 MBS 2 Megatron-FSDP, recompute blank: the recipe's (fitting.recipes).
    (run,) = [r for r in bundled_runs()[0] if r.id == f"measured_runs.csv:{line}"]
    item = prepare(run, bundled())
    assert item.context.recipe.offload_layers == offloaded and item.layout.recompute == "none"
    step = evaluate(item.context, layout_vars(item.layout))
    unpriced = evaluate(replace(item.context, recipe=replace(item.context.recipe, offload_layers=0)),
                        layout_vars(item.layout))  # fmt: skip
    assert step.fits and not unpriced.fits
    assert step.step_time_s > unpriced.step_time_s
