"""Published whole runs (perfmodel/data/whole_runs.csv, from the data notes' whole_runs.csv and whole_runs_sources.md):
GPU-hours as their authors published them against perfmodel's run with failures and losses."""

from __future__ import annotations

import csv
import json
from functools import cache
from pathlib import Path

import pytest

from perfmodel.fitting import whole_runs
from perfmodel.fitting.runs import DATA, bundled_runs, read_runs_csv
from perfmodel.fitting.validation import fitted_densely, validate
from perfmodel.inputs.models import ZOO
from perfmodel.inputs.scenario import table_spec
from perfmodel.physics import calibration
from tests.conftest import run_cli

LEAVE_ONE_OUT_MAPE_PCT = 12.0
LEAVE_ONE_OUT_MEAN_PCT = 5.0
"""Issue 25's targets: leave one run out MAPE <= 12% (measured 11.1% with the bundled calibration of 2026-12-06, at a
straggler share of 0.097; 11.4% at 0.084 before) and a mean signed error within +/-5% (measured +0.8%)."""


@cache
def _stage() -> whole_runs.Result:
    return whole_runs.stage(whole_runs.bundled_whole_runs(), calibration.bundled())


def test_the_ten_published_runs_are_bundled_with_their_sources() -> None:
    runs = whole_runs.bundled_whole_runs()
    assert [r.id.removesuffix("-gpu-hours") for r in runs] == [
        "llama1-7b", "llama1-13b", "llama1-33b", "llama1-65b", "llama2-7b", "llama2-13b", "llama2-70b",
        "bloom-176b", "falcon-180b", "mpt-7b",
    ]  # fmt: skip
    # LLaMA Table 15; Llama 2 Table 2; BLOOM section 3.4.1; Falcon-180B blog; MPT-7B blog (whole_runs_sources.md)
    assert [r.measured for r in runs] == [82432, 135168, 530432, 1022362, 184320, 368640, 1720320, 1082990, 7e6, 100320]
    assert all(r.metric == "gpu_hours" and r.source == whole_runs.SOURCE and r.basis in whole_runs.BASES for r in runs)
    assert {r.id for r in runs} <= {r.id for r in bundled_runs()[0]}
    assert not any(fitted_densely(r) for r in runs)  # their own stage, not the dense fit


def test_the_zoo_holds_each_rows_published_shapes() -> None:
    with (DATA / "whole_runs.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            shapes = dict(part.split("=") for part in row["model_shapes"].split(";") if part)
            if not shapes:
                continue
            base = shapes.pop("base", None)
            typed = {
                k: v == "true" if v in ("true", "false") else int(v) if v.isdigit() else v for k, v in shapes.items()
            }
            published = table_spec({"base": base, **typed} if base else {"id": "x", "name": "x", **typed})
            zoo = ZOO[row["model"]]
            assert published.params == zoo.params and published.matmul_params == zoo.matmul_params, row["id"]


def test_llama_65b_is_tokens_over_its_stated_steady_throughput() -> None:
    # LLaMA paper p.4: 'around 380 tokens/sec/GPU on 2048 A100'; 1.4T tokens: 1,023,392 GPU-hours, the published
    # 1,022,362 (Table 15) to 0.1%. So the row's basis is steady.
    run = next(r for r in whole_runs.bundled_whole_runs() if r.id == "llama1-65b-gpu-hours")
    assert run.basis == "steady"
    steady_gpu_hours = 1.4e12 / (380 * 2048) / 3600 * 2048
    assert steady_gpu_hours == pytest.approx(run.measured, rel=0.002)


def test_leave_one_run_out_error_meets_the_targets() -> None:
    result = _stage()
    held = result.errors_pct(held_out=True)
    assert result.mape_pct(held_out=True) <= LEAVE_ONE_OUT_MAPE_PCT
    assert abs(result.mean_error_pct(held_out=True)) <= LEAVE_ONE_OUT_MEAN_PCT
    assert all(abs(e) < 30 for e in held)  # no run is off by a third
    assert 0 < result.share < whole_runs.STRAGGLER_BOUND  # the fitted share is inside its bounds
    assert result.mape_pct() <= result.mape_pct(held_out=True)


def test_before_the_losses_and_the_era_every_run_read_short() -> None:
    # The finding: gpu_hours_with_failures short on 9 of 10. With the stack's era and the losses, the errors
    # are of both signs.
    errors = _stage().errors_pct(held_out=True)
    assert sum(e < 0 for e in errors) >= 3 and sum(e > 0 for e in errors) >= 3


def test_validate_lists_the_whole_runs_as_their_own_group() -> None:
    result = run_cli("validate", "--only", "Whole runs", "--format", "json")
    assert result.code == 0, result.err
    record = json.loads(result.out)
    assert len(record["rows"]) == 10 and {r["metric"] for r in record["rows"]} == {"gpu_hours"}
    assert list(record["groups"]["source"]) == ["Whole runs"]
    # the excluded rows listed are those the filter asks about: not the A100 40GB rows whose reason said "whole runs"
    assert record["excluded"] == []


def test_the_whole_runs_protocol_reports_mape_and_mean_signed_error() -> None:
    result = run_cli("validate", "--protocol", "whole-runs", "--format", "json")
    assert result.code == 0, result.err
    record = json.loads(result.out)
    assert record["protocol"] == "whole-runs" and len(record["rows"]) == 10
    assert record["mape_pct"] == pytest.approx(_stage().mape_pct(held_out=True))
    assert record["mean_error_pct"] == pytest.approx(_stage().mean_error_pct(held_out=True))
    table = run_cli("validate", "--protocol", "whole-runs").out
    assert "mean error" in table and "straggler share" in table


WHOLE_RUN_CSV = (
    "id,source,model,gpu,n_gpus,precision,seq_len,gbs,metric,measured,tokens,stack,vintage,model_shapes,basis,settings\n"
    "ours,our run,our-7b,a100-sxm-80gb,256,bf16,2048,1024,gpu_hours,30000,200e9,megatron,2023-01,"
    "base=llama2-7b;layers=30,wall,goodput.rates=rsc;losses.job_limit_h=48\n"
)


def test_a_users_whole_run_is_read_validated_and_held_out(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    second = WHOLE_RUN_CSV.splitlines()[1].replace("ours,our run", "ours2,our run").replace(",30000,", ",40000,")
    path.write_text(WHOLE_RUN_CSV + second + "\n")
    runs = read_runs_csv(path)
    based = f"{path}, row 2, column 'model_shapes', based on {ZOO['llama2-7b'].source}"  # its layers are the row's
    assert runs[0].scenario["model"] == {"source": based, "base": "llama2-7b", "layers": 30}
    assert runs[0].scenario["losses"] == {"job_limit_h": 48} and runs[0].basis == "wall"
    report = validate(runs, calibration.bundled())
    assert [r.prepared.run.id for r in report.rows] == ["ours", "ours2"]
    result = run_cli("validate", "--protocol", "whole-runs", "--data", str(path), "--format", "json")
    assert result.code == 0, result.err
    assert len(json.loads(result.out)["rows"]) == 2


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (("wall,", "daily,"), "column 'basis' is 'daily'; allowed: wall, steady"),
        (("goodput.rates=rsc", "goodput.rates"), "column 'settings': 'goodput.rates' is not key=value"),
        (("goodput.rates=rsc", "fleet.rates=rsc"), "column 'settings': 'fleet.rates' is not a setting"),
        (("200e9", "lots"), "column 'tokens' is 'lots', not a number"),
        (("200e9", ""), "metric gpu_hours (a whole run) needs 'tokens' and a model"),
        (("goodput.rates=rsc", "losses.spare_gpus=-1"), "losses.spare_gpus"),
        # a throughput row would ignore them (its stack and vintage it reads: the release it is priced at)
        (
            ("gpu_hours,30000,200e9", "tokens_per_s_per_gpu,3000,"),
            "column 'model_shapes' is read for a whole run (metric gpu_hours) only",
        ),
    ],
)
def test_a_bad_whole_run_row_is_one_line(tmp_path: Path, change: tuple[str, str], says: str) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(WHOLE_RUN_CSV.replace(*change))
    result = run_cli("validate", "--data", str(path))
    assert result.code == 2 and result.out == "" and len(result.err.strip().splitlines()) == 1
    assert says in result.err and str(path) in result.err
