"""Real-world losses (planning/losses.py): each a named mechanism with its own figure, summed into `*_with_losses`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import perfmodel
from perfmodel.planning import goodput as gp
from perfmodel.planning.losses import STARTUP_S, STRAGGLER_PRIOR, expected, straggler_scale
from tests.conftest import run_cli

RUN = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 256, "precision": "fp8", "tokens": 2e12, "gbs": 512}
LAYOUT = {"tp": 1, "pp": 2, "cp": 1, "vp": 1, "mbs": 1, "recompute": "none", "zero": 1, "seq_len": 8192}


def _predict(**changes: object) -> dict[str, object]:
    return perfmodel.predict(**(RUN | LAYOUT | changes), calibration="none").to_dict()


def test_the_losses_sum_on_top_of_the_run_with_failures() -> None:
    d = _predict()
    lost = d["losses"]
    assert lost["failures_gpu_hours"] + lost["checkpoints_gpu_hours"] == pytest.approx(
        d["gpu_hours_with_failures"] - d["gpu_hours"], rel=1e-9
    )
    parts = [v for k, v in lost.items() if k != "total_gpu_hours"]
    assert lost["total_gpu_hours"] == pytest.approx(sum(parts), rel=1e-12)
    assert d["gpu_hours_with_losses"] == pytest.approx(d["gpu_hours"] + lost["total_gpu_hours"], rel=1e-12)
    assert d["cost_usd_with_losses"] / d["cost_usd"] == pytest.approx(d["gpu_hours_with_losses"] / d["gpu_hours"])
    assert d["time_to_train_s"] < d["time_to_train_with_failures_s"] < d["time_to_train_with_losses_s"]
    # time_to_train_s, gpu_hours, cost_usd and energy_kwh stay the failure-free figures (the contract)
    assert d["gpu_hours"] == pytest.approx(d["n_gpus"] * d["time_to_train_s"] / 3600)


def test_stragglers_default_to_the_sourced_share_scaled_by_the_slowest_of_n() -> None:
    # ByteDance: 10.4% of the GPU-hours of >=128-GPU jobs (Lin et al., OSDI 2025; campaigns.md section 14).
    d = _predict()
    share = STRAGGLER_PRIOR * math.sqrt(math.log(256) / math.log(128))
    assert d["losses"]["stragglers_gpu_hours"] == pytest.approx(share * d["gpu_hours"], rel=1e-12)
    assert straggler_scale(128) == 1.0 and straggler_scale(16384) > straggler_scale(1024) > 1.0
    given = _predict(straggler_share=0.05)
    assert given["losses"]["stragglers_gpu_hours"] == pytest.approx(0.05 / STRAGGLER_PRIOR * share * d["gpu_hours"])
    assert "stragglers_gpu_hours" not in _predict(straggler_share=0.0)["losses"]


def test_startup_counts_each_job_a_time_limit_starts() -> None:
    # MegaScale: Megatron-LM's initialisation 1,047 s on 2,048 Ampere GPUs; BLOOM's jobs ran ~100 h each.
    d = _predict()
    assert d["losses"]["startup_gpu_hours"] == pytest.approx(STARTUP_S * 256 / 3600)
    limited = _predict(job_limit_h=20)
    wall_h = d["time_to_train_with_failures_s"] / 3600
    assert limited["losses"]["startup_gpu_hours"] == pytest.approx((1 + int(wall_h / 20)) * STARTUP_S * 256 / 3600)


def test_a_batch_ramp_costs_its_tokens_at_smaller_batches() -> None:
    steady = _predict()
    small, smaller = _predict(ramp_tokens=100e9, ramp_start_gbs=256), _predict(ramp_tokens=100e9, ramp_start_gbs=128)
    assert "ramp_gpu_hours" not in steady["losses"]
    assert 0 < small["losses"]["ramp_gpu_hours"] < smaller["losses"]["ramp_gpu_hours"]
    twice = _predict(ramp_tokens=200e9, ramp_start_gbs=256)["losses"]["ramp_gpu_hours"]
    assert twice == pytest.approx(2 * small["losses"]["ramp_gpu_hours"])


def test_evaluation_and_spare_gpus() -> None:
    d = _predict(eval_every_steps=1000, eval_tokens=50e6)
    steps = RUN["tokens"] / (RUN["gbs"] * LAYOUT["seq_len"])
    forward_s = perfmodel.predict(**RUN, **LAYOUT, calibration="none").step.forward_only_s
    expected = steps / 1000 * 50e6 / (RUN["gbs"] * LAYOUT["seq_len"]) * forward_s * 256 / 3600
    assert d["losses"]["evaluation_gpu_hours"] == pytest.approx(expected, rel=1e-9)
    spare = _predict(spare_gpus=16)
    others = spare["losses"]["total_gpu_hours"] - spare["losses"]["spare_gpu_hours"]
    wall_h = (spare["gpu_hours"] + others) / 256
    assert spare["losses"]["spare_gpu_hours"] == pytest.approx(16 * wall_h, rel=1e-9)


def test_losses_none_drops_their_keys_and_nothing_else() -> None:
    on = json.loads(run_cli("predict", "--format", "json").out)
    off = json.loads(run_cli("predict", "--format", "json", "--losses", "none").out)
    figures = {"time_to_train_with_losses_s", "time_to_train_with_losses_days", "gpu_hours_with_losses",
               "cost_usd_with_losses", "energy_kwh_with_losses"}  # fmt: skip
    added = {"losses", *figures, *(f"{key}_{q}" for key in figures for q in ("p10", "p50", "p90"))}
    assert set(on) - set(off) == added and {k: v for k, v in on.items() if k not in added} == off


def test_the_table_prints_one_line_per_loss(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 64\nprecision = "fp8"\ntokens = 1e12\n'
        "[losses]\nramp_tokens = 20e9\nramp_start_gbs = 64\neval_every_steps = 500\neval_tokens = 10e6\n"
        "spare_gpus = 8\njob_limit_h = 24\n"
    )
    out = run_cli("predict", str(scenario)).out
    for name in ("failures", "checkpoints", "stragglers", "startup", "ramp", "evaluation", "spare"):
        assert f"Loss: {name}" in out
    assert "With losses" in out


def test_a_bad_loss_setting_is_one_line_naming_the_field(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\ntokens = 1e12\n[losses]\nstraggler_share = 2\n')
    bad = run_cli("predict", str(scenario))
    assert bad.code == 2 and bad.out == "" and len(bad.err.strip().splitlines()) == 1
    assert "losses.straggler_share" in bad.err


def test_rsc_rates_are_the_a100_fleets_failure_rate() -> None:
    # Kokolis et al. 2025: 6.50 failures per 1,000 node-days on RSC-1 (8-GPU A100 nodes).
    reliability = gp.Reliability.build(1e9, fleet="rsc")
    assert reliability.per_gpu_hour(loses_work=True) == pytest.approx(6.5e-3 / (8 * 24))
    assert reliability.per_gpu_hour(loses_work=False) == gp.Reliability().per_gpu_hour(loses_work=False)


def test_a_calibrations_loss_stage_sets_the_straggler_share(tmp_path: Path) -> None:
    from perfmodel.physics import calibration

    document = json.loads(calibration.BUNDLED.read_text())
    document["losses"] = {"parameters": {"straggler_share": 0.05}, "rows": ["a", "b", "c"]}
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(document))
    d = perfmodel.predict(**RUN, **LAYOUT, calibration=str(path)).to_dict()
    share = 0.05 * math.sqrt(math.log(256) / math.log(128))
    assert d["losses"]["stragglers_gpu_hours"] == pytest.approx(share * d["gpu_hours"], rel=1e-12)
    table = run_cli("predict", "--calibration", str(path), "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus",
                    "256", "--tokens", "2T").out  # fmt: skip
    assert "fitted on 3 published whole runs" in table


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ("ramp_tokens = 20e9\n", "ramp_tokens needs ramp_start_gbs"),
        ("ramp_start_gbs = 64\n", "ramp_start_gbs needs ramp_tokens"),
        ("eval_tokens = 10e6\n", "eval_tokens needs eval_every_steps"),
        ("eval_every_steps = 500\n", "eval_every_steps needs eval_tokens"),
    ],
)
def test_half_a_ramp_or_an_evaluation_is_refused_not_ignored(tmp_path: Path, table: str, named: str) -> None:
    # either half alone priced nothing and said nothing
    scenario = tmp_path / "s.toml"
    scenario.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\ntokens = 1e12\n[losses]\n' + table)
    bad = run_cli("predict", str(scenario))
    assert bad.code == 2 and bad.out == "" and len(bad.err.strip().splitlines()) == 1
    assert "s.toml: field 'losses': " + named in bad.err


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"ramp_tokens": 3e12, "ramp_start_gbs": 64}, "losses.ramp_tokens: a ramp of 3T tokens is longer"),
        ({"ramp_tokens": 1e9, "ramp_start_gbs": 512}, "losses.ramp_start_gbs: the ramp starts at 512 sequences"),
        ({"job_limit_h": 0.1}, "losses.job_limit_h: a job of 0.1 h ends before its start-up of 1,047 s"),
    ],
)
def test_a_loss_setting_the_run_makes_impossible_is_one_line(changes: dict[str, float], named: str) -> None:
    # a ramp longer than the run, or not below its batch of 512, and a job limit within one start-up
    with pytest.raises(perfmodel.PerfmodelError) as error:
        _predict(**changes)
    assert str(error.value).startswith(named) and "allowed: " in str(error.value)


def test_a_fraction_of_an_interruption_is_not_printed_as_none() -> None:
    # 100B tokens on 64 H100 expect a few hundredths of an interruption: the table said "0 unexpected" beside the
    # GPU-hours lost to them
    table = run_cli("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "64", "--tokens", "1e11").out
    failures = next(line for line in table.splitlines() if line.startswith("Loss: failures"))
    assert " 0 unexpected" not in failures and "0.0" in failures.split(":", 2)[2]
    assert expected(0.48) == "0.48" and expected(9.4) == "9.4" and expected(53.2) == "53" and expected(0) == "0"
