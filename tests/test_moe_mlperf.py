"""MLPerf Training v6.0 MoE benchmarks: samples to converge against the RCP files that ship in mlperf-logging, the
rules' batch minimum and sequence lengths, the evaluation cadence, and a scored prediction."""

from __future__ import annotations

import json
from importlib.resources import files

import pytest

import perfmodel
from perfmodel.errors import PerfmodelError
from perfmodel.inputs.mlperf import get_benchmark
from perfmodel.inputs.models import get_model


def _olympic_means(name: str) -> dict[int, float]:
    """mlperf_logging rcp_checker/training_6.0.0/rcps_<name>.json: per batch size, the mean of the reference runs
    without the fastest and the slowest (the checker's olympic mean)."""
    path = files("mlperf_logging") / "rcp_checker" / "training_6.0.0" / f"rcps_{name}.json"
    means = {}
    for record in json.loads(path.read_text()).values():
        runs = sorted(record["Epochs to converge"])[1:-1]
        means[record["BS"]] = sum(runs) / len(runs)
    return means


@pytest.mark.parametrize(
    ("bench_id", "rcp"), [("mlperf-deepseek-v3", "deepseekv3_671b"), ("mlperf-gpt-oss-20b", "gpt_oss_20b")]
)
def test_samples_to_converge_are_the_rcp_olympic_means(bench_id: str, rcp: str) -> None:
    """The smallest and largest reference batches keep their own olympic mean; the checker prunes a middle point
    that converges slower than the interpolation of its neighbours, and then holds runs to that interpolation."""
    bench = get_benchmark(bench_id)
    means = _olympic_means(rcp)
    batches = sorted(means)
    assert len(batches) >= 3
    for gbs in (batches[0], batches[-1]):
        assert bench.samples_to_converge(gbs) == pytest.approx(means[gbs])
    for gbs in batches[1:-1]:
        assert bench.samples_to_converge(gbs) <= means[gbs] + 1e-6
    if rcp == "deepseekv3_671b":  # ref_15360: 721,920 x 3, 737,280 x 2, 691,200 -> olympic mean 725,760
        assert bench.samples_to_converge(15360) == 725_760
    else:  # ref_32 (mean 234,837) is pruned: 194,560 + (32 - 16) / (64 - 16) x (301,056 - 194,560)
        assert means[32] == pytest.approx(234_837.333, abs=0.01)
        assert bench.samples_to_converge(32) == pytest.approx(194_560 + 16 / 48 * (301_056 - 194_560))


def test_rules_of_the_v60_moe_benchmarks() -> None:
    """compliance_checker/training_6.0.0/closed_deepseekv3_671b.yaml: GBS >= 15360, sequence 4096, 1024 eval
    samples; closed_gpt_oss_20b.yaml: sequence 8192, 1024 eval samples."""
    ds, oss = get_benchmark("mlperf-deepseek-v3"), get_benchmark("mlperf-gpt-oss-20b")
    assert (ds.round, ds.model, ds.seq_len, ds.evaluation.samples) == ("v6.0", "deepseek-v3", 4096, 1024)
    assert (oss.seq_len, oss.evaluation.samples) == (8192, 1024)
    with pytest.raises(PerfmodelError, match="GBS 8192 is below the rules' minimum of 15360"):
        ds.samples_to_converge(8192)
    assert ds.evaluation.interval_samples(15360) == 15360  # an evaluation after every step


def test_gpt_oss_20b_benchmark_trains_the_recipes_model() -> None:
    """megatron-bridge 0.6.2 perf_recipes/gpt_oss/common.py, _apply_gpt_oss_20b_common_configs: vocab_size 128256
    and the flex dispatcher; the rest is the zoo's GPT-OSS-20B. The untied embedding and LM head lose
    2 x 2,880 x (201,088 - 128,256) = 419.5M parameters, all counted active (the whole embedding, as the zoo counts)."""
    spec = perfmodel.load_scenario(benchmark="mlperf-gpt-oss-20b", system="dgx-b200", n_gpus=8).model_spec()
    zoo = get_model("gpt-oss-20b")
    assert (spec.id, spec.vocab, spec.dispatcher) == ("gpt-oss-20b-mlperf", 128256, "flex")
    shed = 2 * 2880 * (201088 - 128256)
    assert zoo.params - spec.params == shed == 419_512_320
    assert zoo.active_params - spec.active_params == shed
    assert spec.active_params / 1e9 == pytest.approx(3.77, abs=0.01)  # 4.19B for the zoo model


def test_a_gpt_oss_20b_benchmark_prediction_is_scored() -> None:
    layout = {"tp": 1, "pp": 1, "cp": 1, "vp": 1, "ep": 8, "mbs": 2, "recompute": "none", "zero": 1}
    d = perfmodel.predict(benchmark="mlperf-gpt-oss-20b", system="dgx-b200", n_gpus=8, gbs=32, **layout).to_dict()  # type: ignore[arg-type]
    assert d["model"] == "gpt-oss-20b-mlperf" and d["parallelism"]["seq_len"] == 8192
    assert d["samples_to_converge"] == pytest.approx(get_benchmark("mlperf-gpt-oss-20b").samples_to_converge(32))
    steps = d["samples_to_converge"] / 32
    assert d["train_time_s"] == pytest.approx(steps * d["step_time_s"])
    assert d["evaluations"] == pytest.approx(d["samples_to_converge"] / 12288)


# megatron-bridge 0.6.2 perf_recipes/gpt_oss/<gpu>/gpt_oss.py, gpt_oss_20b_pretrain_<n>gpu_<gpu>_<precision>_config:
# (gpu, GPUs, precision, TP, CP, EP, GBS, eval_interval); every one MBS 1, PP 1, ETP 1.
RECIPE_LAYOUTS = [
    ("gb300", 72, "nvfp4", 1, 2, 4, 36, 341),
    ("gb200", 72, "nvfp4", 1, 2, 4, 36, 341),
    ("b300", 64, "nvfp4", 1, 2, 4, 32, 384),
    ("b300", 64, "mxfp8", 1, 2, 4, 32, 384),
    ("gb300", 512, "mxfp8", 2, 4, 8, 64, 192),
    ("gb200", 512, "mxfp8", 2, 4, 8, 64, 192),
]


@pytest.mark.parametrize(("gpu", "n_gpus", "precision", "tp", "cp", "ep", "gbs", "eval_interval"), RECIPE_LAYOUTS)
def test_bundled_gpt_oss_20b_scenarios_are_the_recipes_layouts(
    gpu: str, n_gpus: int, precision: str, tp: int, cp: int, ep: int, gbs: int, eval_interval: int
) -> None:
    """Each bundled scenario runs the benchmark in its recipe's layout, and the model finds it feasible; it evaluates
    every `eval_interval` steps as the recipe does: 12,288 samples rounded down to whole steps (341 at GBS 36, not
    342)."""
    scenario = perfmodel.load_scenario(f"mlperf-gpt-oss-20b-{gpu}-{n_gpus}-{precision}")
    par = scenario.parallelism
    assert (scenario.gpu, scenario.n_gpus, scenario.precision) == (gpu, n_gpus, precision)
    assert (par.tp, par.pp, par.cp, par.ep, par.etp, par.mbs, par.gbs) == (tp, 1, cp, ep, 1, 1, gbs)
    d = perfmodel.predict(scenario).to_dict()
    assert d["model"] == "gpt-oss-20b-mlperf" and d["fits_in_memory"]
    assert d["samples_to_converge"] == pytest.approx(get_benchmark("mlperf-gpt-oss-20b").samples_to_converge(gbs))
    assert d["evaluations"] == pytest.approx(d["samples_to_converge"] / (eval_interval * gbs))
