"""`perfmodel launch`: every emitted option is one the stack's cited release has (perfmodel/data/launch_options.csv,
read from megatron-core 0.17.1 (Megatron-LM's parser), Megatron-Bridge 0.3.1 / Megatron-Core 0.16.1 and torchtitan
0.2.0 by scripts/launch_options.py), the
config carries the predicted layout, and a layout the stack cannot run is refused naming the setting."""

from __future__ import annotations

import csv
import io
import json
import re
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import run_cli

import perfmodel
from perfmodel.errors import PerfmodelError
from perfmodel.inputs.scenario import RUN_SETTINGS
from perfmodel.inputs.stacks import Knobs
from perfmodel.outputs import launch as launch_module
from perfmodel.outputs.launch import Run, known_options, launch
from perfmodel.physics.parallel import Layout

BASE = Layout(tp=4, pp=4, cp=2, dp=2, vp=2, ep=1, mbs=1, gbs=64, seq_len=8192, recompute="full", zero=1)
TITAN_KNOBS = Knobs(async_tp=True, compile=True, fp8_recipe="tensorwise")
MEGATRON_KNOBS = Knobs(async_tp=None, compile=None, fp8_recipe=None)


def _run(precision: str = "bf16", cp_comm: str = "p2p", knobs: Knobs = MEGATRON_KNOBS) -> Run:
    return Run(precision, cp_comm, knobs, n_layers=80)


BRIDGE_CASES = [
    (BASE, _run()),
    (replace(BASE, vp=1, cp=1, recompute="none", zero=0), _run("fp8")),
    (replace(BASE, recompute="full", recompute_layers=3, zero=2), _run("mxfp8", "a2a")),
    (replace(BASE, recompute="selective", zero=3, ep=4), _run("nvfp4", "all_gather")),
    (replace(BASE, pp=1, vp=1, recompute="none", zero=3), replace(_run("fp8"), offload_layers=40)),
    (BASE, replace(_run(), grad_reduce_in_fp32=True)),
    (BASE, _run("fp8", knobs=replace(MEGATRON_KNOBS, fp8_recipe="delayed"))),
]
TITAN_CASES = [
    (replace(BASE, zero=3), _run("fp8", "all_gather", TITAN_KNOBS)),
    (replace(BASE, zero=0, pp=1, vp=1, cp=1, dp=16), _run("mxfp8", "a2a", TITAN_KNOBS)),
    (
        replace(BASE, zero=3, recompute="selective"),
        _run("fp8", "all_gather", replace(TITAN_KNOBS, fp8_recipe="rowwise")),
    ),
]


def _named(stack: str, options: dict[str, object]) -> set[str]:
    """The option names as the stack's source defines them (a mixed-precision recipe is a registered name)."""
    return {f"{key}={value}" if key == "mixed_precision" else key for key, value in options.items()}


@pytest.mark.parametrize(("stack", "layout", "run"), [("megatron-bridge", *c) for c in BRIDGE_CASES]
                         + [("megatron-lm", *c) for c in BRIDGE_CASES]
                         + [("nemo", *c) for c in BRIDGE_CASES]
                         + [("torchtitan", *c) for c in TITAN_CASES])  # fmt: skip
def test_every_emitted_option_is_in_the_stacks_cited_release(stack: str, layout: Layout, run: Run) -> None:
    emitted = _named(stack, launch(stack, layout, run, "note").options)
    assert emitted - known_options(stack) == set()


def test_an_option_the_stack_lacks_fails_the_check() -> None:
    assert "model.tensor_model_parallel_size" in known_options("megatron-bridge")
    assert {"--tensor-model-parallel-size", "--bf16", "--fp8-format"} <= known_options("megatron-lm")
    assert "--fp8" not in known_options("megatron-lm")  # TransformerConfig.fp8's flag is --fp8-format
    assert "model.tensor_parallel_degree" not in known_options("megatron-bridge")  # torchtitan's name
    assert "parallelism.tensor_model_parallel_size" not in known_options("torchtitan")


def test_megatron_bridge_overrides_carry_the_layout() -> None:
    layout = replace(BASE, recompute_layers=5)
    text = launch("megatron-bridge", layout, _run("fp8"), "note").text
    lines = dict(line.split("=", 1) for line in text.splitlines() if not line.startswith("#"))
    assert lines["model.tensor_model_parallel_size"] == "4"
    assert lines["model.pipeline_model_parallel_size"] == "4"
    assert lines["model.virtual_pipeline_model_parallel_size"] == "2"
    assert lines["model.context_parallel_size"] == "2"
    assert lines["model.cp_comm_type"] == "p2p"
    assert lines["model.recompute_method"] == "block"
    assert lines["model.recompute_num_layers"] == "5"
    assert lines["train.global_batch_size"] == "64"
    assert lines["ddp.use_distributed_optimizer"] == "true"
    assert lines["mixed_precision"] == "bf16_with_fp8_current_scaling_mixed"
    assert "# perfmodel decides the layout" in text and "tokenizer" in text


def test_a_moe_model_gets_its_dispatcher_and_a_campaign_is_refused() -> None:
    moe = Run("bf16", "p2p", MEGATRON_KNOBS, n_layers=80, dispatcher="flex")
    assert launch("megatron-lm", BASE, moe, "n").options["--moe-token-dispatcher-type"] == "flex"
    bridge = launch("megatron-bridge", BASE, moe, "n").options
    assert bridge["model.moe_token_dispatcher_type"] == moe.dispatcher
    assert "--moe-token-dispatcher-type" not in launch("megatron-lm", BASE, _run(), "n").options
    campaign = Path(perfmodel.__file__).parent.parent / "scenarios" / "campaign-llama3.1-405b.toml"
    refused = run_cli("launch", str(campaign), "--stack", "megatron-lm")
    assert refused.code == 2 and "launch takes one steady run, not a campaign of" in refused.err


def test_an_offloading_prediction_launches_with_its_offload(tmp_path: Path) -> None:
    """A prediction whose memory holds only the layers it does not offload (activation_offload_layers 40, as
    megatron-bridge 0.6.2's gb200/llama3.py L276-278 sets it) is launched offloading them, on every Megatron stack: a
    config without it would not fit (tests/test_offload.py)."""
    scenario = tmp_path / "offload.toml"
    scenario.write_text(
        'model = "llama3.1-70b"\ngpu = "gb200"\nn_gpus = 64\nprecision = "fp8"\nactivation_offload_layers = 40\n'
        '[parallelism]\ntp = 1\npp = 1\ncp = 1\nmbs = 2\ngbs = 256\nseq_len = 8192\nzero = 3\nrecompute = "none"\n'
    )
    configs = {stack: run_cli("launch", str(scenario), "--stack", stack) for stack in ("megatron-bridge", "nemo")}
    configs["megatron-lm"] = run_cli("launch", str(scenario), "--stack", "megatron-lm")
    assert all(result.code == 0 for result in configs.values()), [r.err for r in configs.values()]
    bridge = configs["megatron-bridge"].out.splitlines()
    assert {"model.cpu_offloading=true", "model.cpu_offloading_num_layers=40"} <= set(bridge)
    assert "model.config.cpu_offloading_num_layers=40" in configs["nemo"].out.splitlines()
    assert "--cpu-offloading-num-layers 40 \\" in configs["megatron-lm"].out.splitlines()
    plain = launch("megatron-bridge", BASE, _run(), "n").options
    assert not [key for key in plain if "offload" in key]


def test_fp32_gradient_reduction_is_launched_as_priced() -> None:
    """grad_reduce_in_fp32 (tests/test_grad_reduce_fp32.py): Megatron-LM's --accumulate-allreduce-grads-in-fp32,
    Megatron-Bridge's ddp field, NeMo's mixed-precision plugin field; unset, Megatron-LM's flag stays off, NeMo's
    plugin field says false (its bf16_mixed() sets it true: nemo-toolkit 2.7.3 recipes/precision/mixed_precision.py
    L35, copied over the DDP config, megatron_strategy.py L499), and Megatron-Bridge's config says the recipe must set
    it (its recipes set it true, mixed_precision.py L42, L183, which no override of a recipe given by name can undo)."""
    fp32 = replace(_run(), grad_reduce_in_fp32=True)
    assert launch("megatron-lm", BASE, fp32, "n").options["--accumulate-allreduce-grads-in-fp32"] is True
    assert launch("megatron-bridge", BASE, fp32, "n").options["ddp.grad_reduce_in_fp32"] is True
    assert launch("nemo", BASE, fp32, "n").options["trainer.plugins.grad_reduce_in_fp32"] is True
    assert "--accumulate-allreduce-grads-in-fp32" not in launch("megatron-lm", BASE, _run(), "n").options
    assert launch("nemo", BASE, _run(), "n").options["trainer.plugins.grad_reduce_in_fp32"] is False
    note = "set cfg.mixed_precision.grad_reduce_in_fp32 = False in the recipe"
    assert note in launch("megatron-bridge", BASE, _run(), "n").text
    assert note not in launch("megatron-bridge", BASE, fp32, "n").text


def test_megatron_lm_arguments_carry_the_layout() -> None:
    layout = replace(BASE, zero=3, recompute="selective")
    text = launch("megatron-lm", layout, _run("nvfp4", "a2a"), "note").text
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert all(line.endswith(" \\") for line in lines[:-1]) and not lines[-1].endswith("\\")
    args = " ".join(line.removesuffix(" \\") for line in lines).split()
    value = {
        flag: args[i + 1]
        for i, flag in enumerate(args[:-1])
        if flag.startswith("--") and not args[i + 1].startswith("--")
    }
    assert value["--tensor-model-parallel-size"] == "4" and value["--num-virtual-stages-per-pipeline-rank"] == "2"
    assert value["--cp-comm-type"] == "a2a" and value["--recompute-granularity"] == "selective"
    assert value["--data-parallel-sharding-strategy"] == "optim_grads_params" and "--use-megatron-fsdp" in args
    assert value["--fp4-format"] == "e2m1" and "--use-distributed-optimizer" not in args and "--bf16" in args


@pytest.mark.parametrize("stack", ["megatron-lm", "megatron-bridge"])
def test_an_uneven_pipeline_counts_the_embedding_and_the_loss_as_layers(stack: str) -> None:
    """82 = 80 layers + embedding + loss splits into PP 41 x VP 2 chunks (physics/schedule.stage_layers)."""
    uneven = launch(stack, replace(BASE, pp=41, vp=2), _run(), "note").options
    even = launch(stack, BASE, _run(), "note").options
    names = {"--account-for-embedding-in-pipeline-split", "model.account_for_embedding_in_pipeline_split"}
    assert names & set(uneven) and not names & set(even)


def _stages(layout: str) -> list[str]:
    """A --pipeline-model-parallel-layout's stages, unrolled as megatron-core 0.18.2 parses it
    (transformer/pipeline_parallel_layer_layout.py parse_str_to_list: '(...)*n' and 'x*n' repeat, ',' is cosmetic)."""
    text = layout.replace(",", "")
    for pattern in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):
        text = re.sub(pattern, lambda m: m.group(1) * int(m.group(2)), text)
    return text.split("|")


LAYOUT_OPTION = {
    "megatron-lm": "--pipeline-model-parallel-layout",
    "megatron-bridge": "model.pipeline_model_parallel_layout",
    "nemo": "trainer.strategy.pipeline_model_parallel_layout",
}


@pytest.mark.parametrize("stack", LAYOUT_OPTION)
@pytest.mark.parametrize(("layers", "pp", "vp"), [(80, 3, 1), (126, 5, 13), (80, 4, 7), (32, 6, 5)])
def test_a_split_the_embedding_and_loss_count_cannot_make_is_placed(stack: str, layers: int, pp: int, vp: int) -> None:
    """126 layers + embedding + loss do not split into PP 5 x VP 13 = 65 equal chunks (plan's GB300 answer for Llama
    3.1 405B on 2,560 GPUs); Megatron-Core's pipeline_model_parallel_layout places them: every layer once, the
    embedding first and the loss last, no chunk above the ceil((L + 2) / chunks) units physics/schedule.stage_layers
    prices; Megatron-LM's VP set by the layout alone (megatron-core 0.18.2 training/arguments.py L906-931 allows one
    of the three), the recipes' account_for_* (true in Llama 3.1 405B's) set false beside it (transformer_config.py
    L1712-1729 refuses both)."""
    run = replace(_run(), n_layers=layers)
    options = launch(stack, replace(BASE, pp=pp, vp=vp), run, "note").options
    stages = _stages(str(options[LAYOUT_OPTION[stack]]))
    assert len(stages) == pp * vp and "".join(stages).count("t") == layers
    assert stages[0].startswith("E") and stages[-1].endswith("L") and "".join(stages).count("E") == 1
    assert max(len(stage) for stage in stages) == -(-(layers + 2) // (pp * vp))
    assert not {"--num-virtual-stages-per-pipeline-rank", "--account-for-loss-in-pipeline-split"} & set(options)
    assert not [value for key, value in options.items() if key.endswith("account_for_loss_in_pipeline_split") and value]
    assert _named(stack, options) <= known_options(stack)
    if stack == "megatron-lm":  # a shell line: quoted
        text = launch(stack, replace(BASE, pp=pp, vp=vp), run, "note").text
        assert f"--pipeline-model-parallel-layout '{options['--pipeline-model-parallel-layout']}' \\" in text


def test_torchtitan_toml_parses_and_carries_the_layout() -> None:
    layout = replace(BASE, zero=3, mbs=2)
    config = tomllib.loads(launch("torchtitan", layout, _run("fp8", "all_gather", TITAN_KNOBS), "note").text)
    par = config["parallelism"]
    assert (par["tensor_parallel_degree"], par["pipeline_parallel_degree"], par["context_parallel_degree"]) == (4, 4, 2)
    assert par["data_parallel_shard_degree"] == 2 and par["data_parallel_replicate_degree"] == 1
    assert par["pipeline_parallel_schedule"] == "Interleaved1F1B"
    assert par["pipeline_parallel_layers_per_stage"] == 80 // (4 * 2)
    assert par["pipeline_parallel_microbatch_size"] == 2
    assert config["training"]["local_batch_size"] == 64 // 2  # the pipeline's micro-batches per DP rank
    assert config["activation_checkpoint"]["mode"] == "full"
    assert config["quantize"]["linear"]["float8"]["recipe_name"] == "tensorwise"


def test_torchtitan_without_pipeline_runs_one_micro_batch_per_forward() -> None:
    layout = replace(BASE, zero=3, pp=1, vp=1, mbs=2, dp=8)
    config = tomllib.loads(launch("torchtitan", layout, _run(knobs=TITAN_KNOBS, cp_comm="all_gather"), "n").text)
    assert config["training"]["local_batch_size"] == 2  # global 64 over 2 x 8: 4 accumulation steps


@pytest.mark.parametrize(
    ("stack", "layout", "run", "setting"),
    [
        ("torchtitan", replace(BASE, zero=1), _run(cp_comm="all_gather"), "--zero 1"),
        ("torchtitan", replace(BASE, zero=2), _run(cp_comm="all_gather"), "--zero 2"),
        ("torchtitan", replace(BASE, zero=3), _run(cp_comm="p2p"), "--cp-comm p2p"),
        ("torchtitan", replace(BASE, zero=3, recompute_layers=2), _run(cp_comm="a2a"), "--recompute-layers"),
        ("torchtitan", replace(BASE, zero=3), _run("nvfp4", "a2a"), "--precision nvfp4"),
        ("torchtitan", replace(BASE, zero=3, pp=3, vp=1), _run(cp_comm="a2a"), "--pp 3 --vp 1"),
        ("megatron-bridge", BASE, _run("mxfp4"), "--precision mxfp4"),
        ("megatron-lm", BASE, _run("mxfp4"), "--precision mxfp4"),
        ("megatron-lm", replace(BASE, pp=3, vp=1), replace(_run(), layer_layout=False), "--pp 3 --vp 1"),  # 80 + 2
        ("megatron-bridge", replace(BASE, pp=7, vp=2), replace(_run(), layer_layout=False), "--pp 7 --vp 2"),
        ("nemo", BASE, _run("mxfp4"), "--precision mxfp4"),
        ("nemo", replace(BASE, pp=7, vp=2), replace(_run(), layer_layout=False), "--pp 7 --vp 2"),
    ],
)
def test_a_layout_the_stack_cannot_run_is_refused_naming_the_setting(
    stack: str, layout: Layout, run: Run, setting: str
) -> None:
    with pytest.raises(PerfmodelError, match=rf"^{setting}: {stack} cannot run it \("):
        launch(stack, layout, run, "note")


def test_a_stack_without_a_launch_config_is_refused() -> None:
    with pytest.raises(
        PerfmodelError, match="--stack: 'maxtext' has no launch config; valid: megatron-lm, megatron-bridge, nemo, t"
    ):
        launch("maxtext", BASE, _run(), "note")
    with pytest.raises(PerfmodelError, match="stack='maxtext': allowed megatron-lm, megatron-bridge, nemo, torchtitan"):
        perfmodel.launch("maxtext")  # type: ignore[arg-type]


def test_nemo_overrides_name_the_strategy_plugin_and_data_module() -> None:
    """NeMo 2 sets what Megatron-Bridge sets, under the recipe's MegatronStrategy, MegatronMixedPrecision plugin and
    data module; Megatron-FSDP through the strategy's fsdp, which saves fsdp_dtensor checkpoints only."""
    options = launch("nemo", replace(BASE, zero=3), _run("fp8", "a2a"), "note").options
    expected = {
        "trainer.strategy.tensor_model_parallel_size": 4, "data.global_batch_size": 64,
        "trainer.strategy.virtual_pipeline_model_parallel_size": 2, "model.config.recompute_granularity": "full",
        "trainer.plugins.fp8_recipe": "tensorwise", "trainer.strategy.fsdp": "megatron",
        "trainer.strategy.ddp.data_parallel_sharding_strategy": "optim_grads_params",
        "model.config.cp_comm_type": "a2a",
    }  # fmt: skip
    assert {key: options[key] for key in expected} == expected
    assert not any(key.startswith(("train.", "mixed_precision", "comm_overlap", "dist.")) for key in options)
    text = launch("nemo", BASE, _run("nvfp4"), "note").text
    assert "nemo llm pretrain --factory RECIPE" in text and "trainer.plugins.fp4=e2m1" in text.splitlines()


def test_the_api_predicts_with_the_stacks_profile() -> None:
    config = perfmodel.launch("torchtitan", model="llama3.1-8b", gpu="h100-sxm", n_gpus=8, precision="bf16")
    assert config.options["parallelism.data_parallel_shard_degree"] in (1, 2, 4, 8)  # searched: FSDP2, no ZeRO-1
    with pytest.raises(PerfmodelError, match="launch on torchtitan predicts with stack 'torchtitan'"):
        perfmodel.launch("torchtitan", model="llama3.1-8b", stack="megatron")


def test_cli_prints_the_config_and_refuses_in_one_line(tmp_path: Path) -> None:
    args = ("launch", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--precision", "bf16")
    shown = run_cli(*args, "--stack", "megatron-bridge", "--tp", "2", "--pp", "1", "--cp", "1", "--vp", "1")
    assert shown.code == 0 and "model.tensor_model_parallel_size=2" in shown.out
    refused = run_cli(*args, "--stack", "torchtitan", "--tp", "2", "--cp", "2", "--cp-comm", "p2p")
    assert refused.code == 2 and refused.out == ""
    assert refused.err == "error: --cp-comm p2p: torchtitan cannot run it (its rotate methods: allgather, alltoall)\n"
    out = tmp_path / "job.toml"
    written = run_cli(*args, "--stack", "torchtitan", "--out", str(out))
    assert written.code == 0 and written.out == "" and "[parallelism]" in out.read_text()
    again = run_cli(*args, "--stack", "torchtitan", "--out", str(out))
    assert again.code == 2 and "file exists; pass --force" in again.err


def test_a_mistyped_stack_is_refused_with_the_one_meant() -> None:
    """click's bare choice list named no stack; every choice of the CLI now says which was meant (cli/options.Choice),
    as ids and keys do, and a word near none gets the list alone."""
    near = run_cli("launch", "--stack", "megatorn")
    assert near.code == 2 and near.err.endswith("'torchtitan' (did you mean 'megatron-lm'?)\n")
    far = run_cli("launch", "--stack", "xyz")
    assert far.code == 2 and far.err.endswith("'nemo', 'torchtitan'.\n")


def test_a_searched_layout_is_the_fastest_the_stack_can_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """70B on 64 H100s at TP2 CP2 ZeRO-2: the fastest layout (PP4 VP7: 80 layers and Megatron's embedding and loss
    in 28 chunks) is placed by a layer layout; where none could place it (a model with MTP modules), launch takes the
    fastest searched layout that has a Megatron split, and a given layout is still refused."""
    question = {"model": "llama3.1-70b", "gpu": "h100-sxm", "n_gpus": 64, "precision": "fp8", "gbs": 128}
    question |= {"tp": 2, "cp": 2, "zero": 2}
    assert perfmodel.predict(**question).layout.vp == 7  # type: ignore[union-attr]
    placed = perfmodel.launch("megatron-bridge", **question).options  # type: ignore[arg-type]
    assert len(_stages(str(placed["model.pipeline_model_parallel_layout"]))) == 28
    monkeypatch.setattr(launch_module, "_layer_layout", lambda layout, run: None)
    config = perfmodel.launch("megatron-lm", **question)  # type: ignore[arg-type]
    chunks = int(config.options["--pipeline-model-parallel-size"]) * int(
        config.options.get("--num-virtual-stages-per-pipeline-rank", 1))  # fmt: skip
    assert 80 % chunks == 0 or (80 + 2) % chunks == 0
    with pytest.raises(PerfmodelError, match=r"^--pp 4 --vp 7: megatron-lm cannot run it"):
        perfmodel.launch("megatron-lm", **question, pp=4, vp=7, mbs=1, recompute="none")  # type: ignore[arg-type]


SAVED_SETTINGS = {
    "offload": 'model = "llama3.1-70b"\ngpu = "gb200"\nn_gpus = 64\nprecision = "fp8"\nactivation_offload_layers = 40\n'
    'grad_reduce_in_fp32 = true\n[parallelism]\ntp = 1\npp = 1\nmbs = 2\ngbs = 256\nzero = 3\nrecompute = "none"\n',
    "graph": 'model = "llama3.1-8b"\ngpu = "b200"\nn_gpus = 8\nprecision = "mxfp8"\nfp8_attention = true\n'
    'full_iteration_graph = true\nvintage = "2025-06"\n',
    "imbalance": 'model = "mixtral-8x7b"\ngpu = "h100-sxm"\nn_gpus = 64\nmoe_imbalance = 1.3\n',
}
"""Scenarios whose run settings no flag gives: each changes the step by 7-22% (offload copies, FP8 attention and a
graph-captured iteration in an older release, a skewed router), so a saved prediction launched without them would
say another step and, offloading, configure a run that does not fit."""


@pytest.mark.parametrize("name", SAVED_SETTINGS)
def test_a_saved_prediction_keeps_its_run_settings(tmp_path: Path, name: str) -> None:
    """predict's JSON and CSV carry the settings the file set (outputs/record.py), and `launch --from` prices and
    configures the prediction with them: the same step, the offload and the FP32 gradient reduction configured, the
    settings no override sets (FP8 attention, the graph-captured iteration) named in its header."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(SAVED_SETTINGS[name])
    saved = tmp_path / "saved.json"
    saved.write_text(run_cli("predict", str(scenario), "--format", "json").out)
    record = json.loads(saved.read_text())
    launched = run_cli("launch", "--stack", "megatron-bridge", "--from", str(saved))
    assert launched.code == 0, launched.err
    lines = launched.out.splitlines()
    assert f"predicted step {record['step_time_s']:.3f} s" in lines[0]
    if name == "offload":
        (row,) = csv.DictReader(io.StringIO(run_cli("predict", str(scenario), "--format", "csv").out))
        assert (row["activation_offload_layers"], row["grad_reduce_in_fp32"]) == ("40", "True")
        assert {"model.cpu_offloading_num_layers=40", "ddp.grad_reduce_in_fp32=true"} <= set(lines)
    unset = "# priced with fp8_attention = true, full_iteration_graph = true, which this config does not set"
    assert any(line.startswith(unset) for line in lines) == (name == "graph")
    if name == "graph":
        assert (record["fp8_attention"], record["full_iteration_graph"], record["vintage"]) == (True, True, "2025-06")


def test_a_prediction_saved_before_records_carried_its_run_settings_says_so(tmp_path: Path) -> None:
    """A JSON saved before 3a87941 has no `run_settings` column, nor the settings it was priced with: launch --from
    prices their defaults and says so on stderr, one line naming the file and the settings; a record saved now, its
    settings all at their defaults, launches without the warning."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(SAVED_SETTINGS["graph"])
    record = json.loads(run_cli("predict", str(scenario), "--format", "json").out)
    assert record["run_settings"] == "fp8_attention; full_iteration_graph"
    old = {key: value for key, value in record.items() if key not in (*RUN_SETTINGS, "run_settings", "vintage")}
    saved = tmp_path / "old.json"
    saved.write_text(json.dumps(old))
    launched = run_cli("launch", "--stack", "megatron-bridge", "--from", str(saved))
    assert launched.code == 0 and launched.err.count("\n") == 1
    assert launched.err.startswith(f"warning: --from {saved}: result 1 was saved before perfmodel's records carried")
    assert all(name in launched.err for name in (*RUN_SETTINGS, "vintage"))
    between = tmp_path / "between.json"  # saved at 3a87941-71abe26: its settings set, no run_settings column
    between.write_text(json.dumps({key: value for key, value in record.items() if key != "run_settings"}))
    assert run_cli("launch", "--stack", "megatron-bridge", "--from", str(between)).err == ""
    current = tmp_path / "new.json"
    plain = ("--model", "llama3.1-8b", "--gpu", "b200", "--gpus", "8", "--format", "json")
    current.write_text(run_cli("predict", *plain).out)
    assert json.loads(current.read_text())["run_settings"] == ""
    assert run_cli("launch", "--stack", "megatron-bridge", "--from", str(current)).err == ""


def test_a_saved_prediction_launches_as_predicted(tmp_path: Path) -> None:
    """search's JSON, row 3: the same layout and step as that row; plan's and compare's rows too; a flag beside --from,
    a campaign, a row past the end and another stack's prediction are one line each."""
    question = ["--model", "llama3.1-70b", "--gpu", "h100-sxm", "--gpus", "64", "--precision", "fp8", "--gbs", "128"]
    saved = tmp_path / "search.json"
    saved.write_text(run_cli("search", *question, "--top", "3", "--format", "json").out)
    third = json.loads(saved.read_text())["results"][2]
    launched = run_cli("launch", "--stack", "megatron-bridge", "--from", str(saved), "--row", "3")
    assert launched.code == 0, launched.err
    head = launched.out.splitlines()[0]
    assert f"predicted step {third['step_time_s']:.3f} s" in head
    assert f"TP{third['parallelism']['tp']} PP{third['parallelism']['pp']} VP{third['parallelism']['vp']} " in head
    plan = tmp_path / "plan.json"
    plan.write_text(run_cli("plan", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpu", "b200", "--tokens", "1T",
                            "--deadline", "30d", "--format", "json").out)  # fmt: skip
    assert "x b200, fp8" in run_cli("launch", "--stack", "nemo", "--from", str(plan), "--row", "2").out.splitlines()[0]
    campaign = tmp_path / "campaign.json"
    campaign.write_text(run_cli("predict", "campaign-llama3.1-405b", "--format", "json").out)
    refusals = {
        ("--from", str(saved), "--tp", "2"): f"--from {saved}: the saved prediction gives the question and layout; "
        "drop --tp",
        ("--from", str(saved), "--row", "4"): f"--row 4: {saved} holds 3 predictions; allowed: 1 to 3",
        ("--from", str(campaign)): f"--from {campaign}: a campaign has no one layout",
    }
    for args, message in refusals.items():
        refused = run_cli("launch", "--stack", "megatron-lm", *args)
        assert refused.code == 2 and refused.err.startswith(f"error: {message}") and refused.err.count("\n") == 1
    other = run_cli("launch", "--stack", "torchtitan", "--from", str(saved))
    assert "was predicted for the megatron stack; torchtitan launches torchtitan's predictions" in other.err
