"""A MoE prediction says how the bundled rows of its zoo model on its accelerator family read under the model (the
calibration's 'moe.fit.priced_rows'): a note under the table and `moe.measured_*` fields; nothing for a dense model,
a model or family without rows, or a calibration file written before the rows were kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perfmodel.fitting.runs import DROPPING_ASSUMPTION, MOE_SOURCE, bundled_runs
from perfmodel.fitting.validation import MOE_NOT_FITTED
from perfmodel.physics.calibration import BUNDLED
from tests.conftest import run_cli

GPT_OSS = f"{MOE_SOURCE}: GPT-OSS-120B"
BLACKWELL_ULTRA_GPUS = ("gb300", "b300")
"""The Blackwell Ultra accelerators of the bundled MoE rows (hardware_specs: family blackwell-ultra)."""


def _fit() -> dict[str, Any]:
    fit: dict[str, Any] = json.loads(BUNDLED.read_text())["moe"]["fit"]
    return fit


def _median(values: list[float]) -> float:
    ordered, half = sorted(values), len(values) // 2
    return ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2


def test_the_bundled_file_prices_every_moe_row_with_its_held_out_error() -> None:
    """Every bundled MoE row is there once, fitted or not (GPT-OSS-120B, Nemotron 3 Nano and 3.5 Lightning,
    Mixtral 8x22B and the token-dropping rows: validated only), and each fitted row's throughput error is its time
    error in 'residuals' inverted (predicted / measured tokens/s = measured / predicted time); GPT-OSS-120B's time
    errors give the stage's recorded MAPE for it."""
    fit = _fit()
    rows = fit["priced_rows"]
    runs, _ = bundled_runs()
    moe_ids = {r.id for r in runs if r.source.startswith(MOE_SOURCE)}
    gpt_ids = {r.id for r in runs if r.source == GPT_OSS}
    not_fitted_ids = {r.id for r in runs if r.source.removeprefix(f"{MOE_SOURCE}: ") in MOE_NOT_FITTED}
    assert sorted(r["id"] for r in rows) == sorted(moe_ids)
    dropping_ids = {r.id for r in runs if DROPPING_ASSUMPTION in r.assumptions}
    assert {r["id"] for r in rows if not r["fitted"]} == not_fitted_ids | dropping_ids
    assert sum(r["fitted"] for r in rows) == fit["rows"]
    throughput = {r["id"]: r["held_out_throughput_error_pct"] for r in rows}
    for residual in fit["residuals"]:
        time_error = residual["held_out_error_pct"]
        assert abs(throughput[residual["id"]] - (100 / (1 + time_error / 100) - 100)) < 0.01
    gpt_time = [abs(100 / (1 + throughput[i] / 100) - 100) for i in gpt_ids]
    assert abs(sum(gpt_time) / len(gpt_time) - fit["leave_one_model_out_mape_pct"]["GPT-OSS-120B"]) < 0.01


def test_gpt_oss_on_gb300_notes_its_blackwell_ultra_rows() -> None:
    """The note and fields count GPT-OSS-120B's GB300 and B300 rows (from the measured data) and give the median and
    range of their held-out errors as the calibration file lists them; they read too fast (docs/moe_validation.md)."""
    runs, _ = bundled_runs()
    ids = {r.id for r in runs if r.source == GPT_OSS and r.scenario["gpu"] in BLACKWELL_ULTRA_GPUS}
    errors = [r["held_out_throughput_error_pct"] for r in _fit()["priced_rows"] if r["id"] in ids]
    median = _median(errors)
    assert len(ids) == len(errors) > 1 and median > 0
    table = run_cli("predict", "--model", "gpt-oss-120b", "--gpu", "gb300", "--gpus", "64")
    assert table.code == 0
    note = (
        f"Note: {len(ids)} measured runs of gpt-oss-120b on Blackwell Ultra (bundled, held out of the fit) read "
        f"median {median:+.0f}% ({min(errors):+.0f}% to {max(errors):+.0f}%) too fast as perfmodel prices them "
        "(each at its own recipe's settings): docs/moe_validation.md"
    )
    assert note in table.out.splitlines()
    record = json.loads(run_cli("predict", "--model", "gpt-oss-120b", "--gpu", "b300", "--format", "json").out)
    assert record["moe"]["measured_rows"] == len(ids)
    assert record["moe"]["measured_error_pct_median"] == median
    assert (record["moe"]["measured_min_error_pct"], record["moe"]["measured_max_error_pct"]) == (
        min(errors),
        max(errors),
    )


def test_a_fitted_model_says_its_rows_were_left_out_and_the_sign_says_which_way() -> None:
    """DeepSeek-V3's one Hopper row is fitted: its error is from the stage fitted without DeepSeek-V3. GPT-OSS-120B's
    Hopper rows read slower than measured: 'too slow' (the sign of the file's median)."""
    out = run_cli("predict", "--model", "deepseek-v3", "--gpu", "h100-sxm", "--gpus", "1024").out
    assert "1 measured run of deepseek-v3 on Hopper (bundled, predicted by the MoE fit without its model) reads" in out
    runs, _ = bundled_runs()
    ids = {r.id for r in runs if r.source == GPT_OSS and r.scenario["gpu"].startswith("h100")}
    median = _median([r["held_out_throughput_error_pct"] for r in _fit()["priced_rows"] if r["id"] in ids])
    out = run_cli("predict", "--model", "gpt-oss-120b", "--gpu", "h100-sxm", "--gpus", "64").out
    assert median < -0.5 and f"read median {median:+.0f}%" in out
    assert "too slow as perfmodel prices them" in out


def test_no_note_without_rows_of_that_model_on_that_family_nor_for_a_dense_model() -> None:
    """Mixtral-8x7B's bundled rows are Blackwell only; GPT-OSS-20B has none; a dense model has no `moe` record."""
    for model, gpu in (("mixtral-8x7b", "h100-sxm"), ("gpt-oss-20b", "gb300"), ("llama3.1-8b", "gb300")):
        table = run_cli("predict", "--model", model, "--gpu", gpu)
        assert table.code == 0 and not _notes(table.out), model
        record = json.loads(run_cli("predict", "--model", model, "--gpu", gpu, "--format", "json").out)
        assert "measured_rows" not in record.get("moe", {}), model


def _notes(table: str) -> list[str]:
    """The measured-MoE note lines of a prediction table."""
    return [line for line in table.splitlines() if line.startswith("Note: ") and "measured run" in line]


def _calibration(tmp_path: Path, change: Any) -> str:
    document = json.loads(BUNDLED.read_text())
    change(document["moe"]["fit"])
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(document))
    return str(path)


def test_a_file_written_before_the_priced_rows_gives_no_note(tmp_path: Path) -> None:
    path = _calibration(tmp_path, lambda fit: fit.pop("priced_rows"))
    table = run_cli("predict", "--model", "gpt-oss-120b", "--gpu", "gb300", "--calibration", path)
    assert table.code == 0 and not _notes(table.out)
    assert "80% interval" in table.out  # the rest of the MoE section still reads


def test_malformed_priced_rows_are_a_one_line_error(tmp_path: Path) -> None:
    path = _calibration(tmp_path, lambda fit: fit["priced_rows"][0].pop("family"))
    result = run_cli("predict", "--model", "gpt-oss-120b", "--gpu", "gb300", "--calibration", path)
    assert result.code == 2 and "moe.fit.priced_rows" in result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err
