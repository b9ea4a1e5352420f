"""`perfmodel validate --logs`: Megatron-Bridge 0.3.1 and torchtitan 0.2.0 training logs read back as measured runs
(fixtures written in the stacks' exact line formats by tests/data/logs/write_fixtures.py), and the round trip from
`perfmodel launch`'s config to a log of that config and back to the same layout."""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

import pytest
from conftest import run_cli
from data.logs import write_fixtures

from perfmodel.errors import PerfmodelError
from perfmodel.fitting.steplog import MAX_LINE_BYTES, read_step_log, read_steps

LOGS = Path(__file__).parent / "data" / "logs"
MEGATRON, MEGATRON_LM, TITAN = LOGS / "megatron_bridge.log", LOGS / "megatron_lm.log", LOGS / "torchtitan.log"
NEMO = LOGS / "nemo2.log"
WORKLOAD = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--precision", "bf16", "--seq-len", "8192")


@pytest.mark.parametrize("path", [MEGATRON, MEGATRON_LM])
def test_megatron_log_skips_warm_up_flags_the_slow_interval_and_counts_the_cut_line(path: Path) -> None:
    log = read_steps(path)
    assert log.format.stack == "megatron" and log.gbs == 64
    assert log.warmup == (10,) and tuple(log.steps) == tuple(range(20, 101, 10))
    assert log.median == 6301.5  # write_fixtures.MEGATRON_MS without its first interval
    assert log.outliers == (80,)  # 9850.3 ms, 56% over the median
    assert log.skipped_lines == 1  # the line cut short; start-up lines and a non-UTF-8 byte are not iteration lines
    assert "steps 20-100 used (9 of 10 logged), warm-up step 10 skipped" in log.summary()


def test_torchtitan_log_strips_colours_and_takes_the_slowest_rank_of_each_step() -> None:
    log = read_steps(TITAN)
    assert log.format.metric == "tokens_per_s_per_gpu" and log.gbs is None
    assert log.warmup == (1,) and log.outliers == (70,)
    assert log.median == 8448.0  # rank 1 logs 3 tokens/s fewer than rank 0 at every step: the median of rank 1's
    assert log.skipped_lines == 1


@pytest.mark.parametrize("path", [MEGATRON, MEGATRON_LM, TITAN])
def test_the_logged_peak_memory_is_read_and_set_beside_the_models(path: Path) -> None:
    """Megatron-LM's MiB, Megatron-Bridge's 1e9-byte GB and torchtitan's GiB all read as GiB (the fixtures: 61.5 and
    61.23 GiB); validate's JSON row sets it beside the memory the model prices for the layout."""
    expected = 61.23 if path == TITAN else 61.5
    assert read_steps(path).memory_gib == pytest.approx(expected, abs=1e-3)
    row = _validated(path, ["--gbs", "64", "--tp", "1", "--pp", "1", "--cp", "1", "--vp", "1", "--mbs", "1",
                            "--recompute", "selective", "--zero", "3"])  # fmt: skip
    assert row["measured_memory_gib"] == pytest.approx(expected, abs=1e-3)
    assert 10 < row["predicted_memory_gib"] < 80  # 8B sharded over 8 GPUs: weights, states and activations
    assert f"peak memory {expected:.1f} GiB reserved" in row["assumptions"][0]


def test_warm_up_steps_can_be_named(tmp_path: Path) -> None:
    assert tuple(read_steps(MEGATRON, warmup_steps=50).steps) == (60, 70, 80, 90, 100)
    with pytest.raises(PerfmodelError, match="all 10 logged steps are warm-up \\(up to step 100\\); log more steps"):
        read_steps(MEGATRON, warmup_steps=100)


def test_a_log_without_iteration_lines_is_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"starting\n\xff\xfe garbage\n" + b"x" * (3 * MAX_LINE_BYTES) + b"\n")
    with pytest.raises(PerfmodelError, match=r"empty.log: no iteration lines \(Megatron, NeMo 2 or torchtitan"):
        read_steps(empty)
    with pytest.raises(PerfmodelError, match=r"missing\.log: no such log file"):
        read_steps(tmp_path / "missing.log")
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    with pytest.raises(PerfmodelError, match=r"pipe\.log: not a regular file; give a log file or a folder of per-rank"):
        read_steps(fifo)
    (tmp_path / "none").mkdir()
    with pytest.raises(PerfmodelError, match="none: a log folder holds 1 to 100,000 files \\(a log per rank\\), not 0"):
        read_steps(tmp_path / "none")


def test_a_folder_of_per_rank_logs_is_one_run_merged_step_by_step(tmp_path: Path) -> None:
    """torchrun's --log-dir writes a file per rank: the folder reads as the interleaved log does (the slowest rank
    per step), in either order of the files; torchtitan's `validate step:` lines are not training steps."""
    lines = TITAN.read_bytes().splitlines(keepends=True)
    for rank in (0, 1):
        folder = tmp_path / "attempt_0" / str(rank)
        folder.mkdir(parents=True)
        mine = [line for line in lines if not line.startswith(b"[rank") or line.startswith(b"[rank%d]" % rank)]
        validation = b"[rank0]:[titan] - root - INFO - \x1b[33mvalidate step: 50  \x1b[32mloss:  2.1000\n"
        (folder / "stdout.log").write_bytes(b"".join(mine[::-1] if rank else mine) + validation)
    merged, whole = read_steps(tmp_path), read_steps(TITAN)
    assert (merged.steps, merged.values, merged.warmup) == (whole.steps, whole.values, whole.warmup)
    assert merged.skipped_lines == whole.skipped_lines and merged.files == 2  # validation lines are not counted
    assert "torchtitan log (2 rank files merged, the slowest rank per step): steps" in merged.summary()


def test_an_over_long_line_is_skipped_and_counted_not_held(tmp_path: Path) -> None:
    log = tmp_path / "long.log"
    log.write_bytes(MEGATRON.read_bytes() + b"y" * (2 * MAX_LINE_BYTES + 5) + b"\n")
    assert read_steps(log).skipped_lines == 2


def test_the_logged_global_batch_must_agree_with_the_flags() -> None:
    scenario = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8, "precision": "bf16"}
    with pytest.raises(PerfmodelError, match=r"megatron_bridge\.log: the log says --gbs 64, not 128 as given"):
        read_step_log(MEGATRON, scenario | {"parallelism": {"gbs": 128}})
    with pytest.raises(PerfmodelError, match="a torchtitan log does not say its global batch: pass --gbs"):
        read_step_log(TITAN, scenario)
    run = read_step_log(MEGATRON, scenario)
    assert run.scenario["parallelism"]["gbs"] == 64 and run.scenario["stack"] == "megatron"
    assert run.metric == "step_time_s" and run.measured == pytest.approx(6.3015)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--logs", str(MEGATRON), "--gpu", "h100-sxm", "--gpus", "8"), "--logs: training logs do not say which model"),
        (("--logs", str(MEGATRON), "--model", "llama3.1-8b"), "training logs do not say what ran them: pass --gpu"),
        (("--logs", str(TITAN), *WORKLOAD), "torchtitan.log: a torchtitan log does not say its global batch"),
        (("--logs", str(LOGS / "write_fixtures.py"), *WORKLOAD), "write_fixtures.py: no iteration lines"),
    ],
)
def test_cli_refusals_are_one_line(args: tuple[str, ...], message: str) -> None:
    result = run_cli("validate", *args)
    assert result.code == 2 and result.out == ""
    assert result.err.startswith("error: ") and message in result.err and result.err.count("\n") == 1


def _validated(log: Path, flags: list[str]) -> dict[str, object]:
    result = run_cli("validate", "--logs", str(log), *WORKLOAD, *flags, "--format", "json")
    assert result.code == 0, result.err
    (row,) = json.loads(result.out)["rows"]
    return dict(row)


def test_a_precision_typed_as_the_tables_print_it() -> None:
    """validate's --precision in any case, as predict's and compare's (13369d6): 'BF16' was refused ("field
    'precision': must be 'bf16', ...")."""
    assert _validated(MEGATRON, ["--precision", "BF16"]) == _validated(MEGATRON, [])


def test_round_trip_megatron_lm() -> None:
    launched = run_cli("launch", "--stack", "megatron-lm", *WORKLOAD, "--gbs", "64")
    assert launched.code == 0, launched.err
    args = " ".join(line.removesuffix(" \\") for line in launched.out.splitlines() if not line.startswith("#"))
    given = dict(re.findall(r"(--[a-z0-9-]+) ([^- ][^ ]*)", args))
    zero = 1 if "--use-distributed-optimizer" in args else {"optim_grads": 2, "optim_grads_params": 3}.get(
        given.get("--data-parallel-sharding-strategy", ""), 0)  # fmt: skip
    flags = [
        "--tp", given["--tensor-model-parallel-size"], "--pp", given["--pipeline-model-parallel-size"],
        "--cp", given["--context-parallel-size"], "--mbs", given["--micro-batch-size"],
        "--vp", given.get("--num-virtual-stages-per-pipeline-rank", "1"),
        "--recompute", given.get("--recompute-granularity", "none"), "--zero", str(zero),
    ]  # fmt: skip
    row = _validated(MEGATRON_LM, flags)
    assert str(row["layout"]) in launched.out.splitlines()[0]
    assert row["measured"] == pytest.approx(6.3015)


DESTINATIONS = {"--fp8-format": "fp8", "--fp4-format": "fp4"}
"""Megatron-LM flags whose argparse destination is not the flag's name (TransformerConfig's argparse_meta)."""


def _printed_arguments(flags: str, world_size: int) -> list[bytes]:
    """The arguments block Megatron-LM prints for these pretrain_gpt.py flags after its validation: every flag under
    its destination, the flags not given at their defaults, the virtual pipeline size derived (None for none)."""
    given = dict(re.findall(r"--([a-z0-9-]+)(?: ([^- ][^ ]*))?", flags))
    args: dict[str, object] = {
        "world_size": world_size, "recompute_granularity": None, "use_distributed_optimizer": False,
        "use_megatron_fsdp": False, "data_parallel_sharding_strategy": "no_shard", "bf16": False, "fp8": None,
        "fp8_recipe": "delayed", "fp4": None, "fp4_recipe": "nvfp4", "lr": 0.0003, "num_layers": 80,
    }  # fmt: skip
    for flag, value in given.items():
        args[DESTINATIONS.get(f"--{flag}", flag.replace("-", "_"))] = value or True
    args["virtual_pipeline_model_parallel_size"] = args.get("num_virtual_stages_per_pipeline_rank")
    return write_fixtures.arguments(args)


def test_round_trip_megatron_lm_reads_the_layout_from_the_printed_arguments(tmp_path: Path) -> None:
    """A Megatron-LM log prints its arguments: the GPU count, precision and layout come from there, no flags."""
    workload = ["--model", "llama3.1-70b", "--gpu", "h100-sxm"]
    launched = run_cli("launch", "--stack", "megatron-lm", *workload, "--gpus", "64", "--precision", "fp8",
                       "--gbs", "128", "--pp", "4", "--vp", "5")  # fmt: skip
    assert launched.code == 0, launched.err
    flags = " ".join(line.removesuffix(" \\") for line in launched.out.splitlines() if not line.startswith("#"))
    log = tmp_path / "megatron_lm_70b.log"
    log.write_bytes(write_fixtures.megatron("2026-03-02 10:{:02d}:00.123456", _printed_arguments(flags, 64), 128))
    result = run_cli("validate", "--logs", str(log), *workload, "--format", "json")
    assert result.code == 0, result.err
    (row,) = json.loads(result.out)["rows"]
    assert f": {row['layout']};" in launched.out.splitlines()[0] and row["measured"] == pytest.approx(6.3015)
    assert "64 x h100-sxm, fp8" in launched.out.splitlines()[0]
    same = run_cli("validate", "--logs", str(log), *workload, "--gpus", "64", "--tp", "2", "--format", "json")
    assert json.loads(same.out)["rows"][0]["predicted"] == row["predicted"]  # flags may repeat the log
    refused = run_cli("validate", "--logs", str(log), *workload, "--tp", "4")
    assert refused.code == 2 and refused.err == f"error: {log}: the log says --tp 2, not 4 as given\n"


def test_calibrate_reads_logs_of_several_layouts(tmp_path: Path) -> None:
    """Six Megatron-LM runs of their own layouts (read from their printed arguments), each 20% slower than predicted
    (a cluster the bundled calibration is optimistic about): `calibrate --logs` fits on them, and the calibration
    brings their error from -16.7% towards 0 (the fitted parameter is shared, so not to 0 on each)."""
    workload = ["--model", "llama3.1-70b", "--gpu", "h100-sxm"]
    layouts = ["--pp 4 --vp 5", "--tp 4 --pp 2 --vp 5", "--tp 8 --pp 1", "--tp 4 --pp 4 --vp 5",
               "--tp 8 --pp 2 --vp 5", "--tp 2 --pp 8 --vp 5"]  # fmt: skip
    logs = []
    for k, layout in enumerate(layouts):
        launched = run_cli("launch", "--stack", "megatron-lm", *workload, "--gpus", "64", "--precision", "fp8",
                           "--gbs", "128", *layout.split())  # fmt: skip
        step_s = float(re.findall(r"predicted step ([0-9.]+) s", launched.out)[0])
        flags = " ".join(line.removesuffix(" \\") for line in launched.out.splitlines() if not line.startswith("#"))
        header = _printed_arguments(flags, 64)
        scale = 1.2 * step_s * 1000 / 6301.5  # the fixture's steady median, 6301.5 ms, made 20% over the prediction
        logs += ["--logs", str(tmp_path / f"run{k}.log")]
        Path(logs[-1]).write_bytes(write_fixtures.megatron("2026-03-02 10:{:02d}:00.123456", header, 128, scale))
    out = tmp_path / "cluster.json"
    fitted = run_cli("calibrate", *logs, *workload, "--out", str(out), "--format", "json")
    assert fitted.code == 0, fitted.err
    before = json.loads(run_cli("validate", *logs, *workload, "--format", "json").out)
    after = json.loads(run_cli("validate", *logs, *workload, "--calibration", str(out), "--format", "json").out)
    assert all(row["error_pct"] == pytest.approx(-100 / 6, abs=0.1) for row in before["rows"])
    assert after["mape_pct"] < before["mape_pct"] / 3


def _core_flags(overrides: dict[str, str], parallel: str, ddp: str, config: str, batch: str) -> list[str]:
    """The layout flags of Megatron-Core settings as a stack names them: the parallel sizes under `parallel`, the DDP
    config under `ddp`, recompute under `config`, the micro-batch under `batch`."""
    sharding = {"optim_grads": 2, "optim_grads_params": 3}.get(
        overrides.get(f"{ddp}ddp.data_parallel_sharding_strategy", "")
    )
    zero = sharding or (1 if overrides[f"{ddp}ddp.use_distributed_optimizer"] == "true" else 0)
    return [
        "--tp", overrides[f"{parallel}tensor_model_parallel_size"],
        "--pp", overrides[f"{parallel}pipeline_model_parallel_size"],
        "--cp", overrides[f"{parallel}context_parallel_size"], "--mbs", overrides[f"{batch}micro_batch_size"],
        "--vp", {"null": "1"}.get(v := overrides[f"{parallel}virtual_pipeline_model_parallel_size"], v),
        "--recompute", overrides.get(f"{config}recompute_granularity", "none"), "--zero", str(zero),
    ]  # fmt: skip


def _overrides(stack: str) -> tuple[str, dict[str, str]]:
    launched = run_cli("launch", "--stack", stack, *WORKLOAD, "--gbs", "64")
    assert launched.code == 0, launched.err
    return launched.out, dict(line.split("=", 1) for line in launched.out.splitlines() if not line.startswith("#"))


def test_round_trip_megatron_bridge() -> None:
    text, overrides = _overrides("megatron-bridge")
    flags = _core_flags(overrides, "model.", "", "model.", "train.")
    row = _validated(MEGATRON, flags)  # the log's own global batch (64): no --gbs
    assert str(row["layout"]) in text.splitlines()[0]  # the same layout, described the same way
    assert row["layout_basis"] == "reported" and row["measured"] == pytest.approx(6.3015)
    predicted = float(text.splitlines()[0].rsplit("predicted step ", 1)[1].removesuffix(" s"))
    assert row["predicted"] == pytest.approx(predicted, abs=5e-4)  # validate prices what launch predicted


def test_round_trip_nemo() -> None:
    """NeMo 2's overrides give the layout; its ProgressPrinter log (seconds, `{:.4}`) reads back to the same run."""
    text, overrides = _overrides("nemo")
    flags = _core_flags(overrides, "trainer.strategy.", "trainer.strategy.", "model.config.", "data.")
    log = read_steps(NEMO)
    assert log.format.name == "NeMo 2" and log.gbs == 64 and log.skipped_lines == 1
    assert log.median == 6.301 and log.outliers == (79,)  # 4 significant digits; iteration n-1: counted from 0
    row = _validated(NEMO, flags)
    assert str(row["layout"]) in text.splitlines()[0] and row["measured"] == pytest.approx(6.301)


def test_round_trip_torchtitan() -> None:
    launched = run_cli("launch", "--stack", "torchtitan", *WORKLOAD, "--gbs", "64")
    assert launched.code == 0, launched.err
    config = tomllib.loads(launched.out)
    par, training = config["parallelism"], config["training"]
    dp = par["data_parallel_shard_degree"] * par["data_parallel_replicate_degree"]
    micro = par.get("pipeline_parallel_microbatch_size", training["local_batch_size"])
    flags = [
        "--tp", par["tensor_parallel_degree"], "--pp", par["pipeline_parallel_degree"],
        "--cp", par["context_parallel_degree"], "--mbs", micro, "--gbs", training["global_batch_size"],
        "--recompute", config["activation_checkpoint"]["mode"],
        "--zero", 3 if par["data_parallel_shard_degree"] == dp else 0,
    ]  # fmt: skip
    row = _validated(TITAN, [str(f) for f in flags])
    assert str(row["layout"]) in launched.out.splitlines()[0]
    assert row["metric"] == "tokens_per_s_per_gpu" and row["measured"] == 8448.0


@pytest.mark.parametrize("recipe", ["delayed", "tensorwise"])
def test_megatron_lm_prints_its_fp8_recipe_and_the_run_is_priced_with_it(tmp_path: Path, recipe: str) -> None:
    """Megatron-LM prints `fp8_recipe` (its --fp8-recipe, default 'delayed'): the log's run takes it as the
    megatron stack's knob, so a delayed-scaling log is priced without the amax pass in any release, not at the
    release's rule (inputs/stacks.py stack_recipe). Before, the printed recipe was read past."""
    flags = "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 --global-batch-size 128 --bf16 "
    args = _printed_arguments(f"{flags}--fp8-format hybrid --fp8-recipe {recipe}", 64)
    log = tmp_path / f"{recipe}.log"
    log.write_bytes(write_fixtures.megatron("2026-03-02 10:{:02d}:00.123456", args, 128))
    run = read_step_log(log, {"model": "llama3.1-70b", "gpu": "h100-sxm"})
    assert (run.scenario["precision"], run.scenario["fp8_recipe"]) == ("fp8", recipe)
