"""A prediction says how near it is to the measured runs its calibration saw, and widens its interval beyond them
(planning/evidence.py; the calibration's 'evidence' section, fitting/evidence.py)."""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, run_json

from perfmodel.physics.calibration import BUNDLED, Interval, bundled, dumps
from perfmodel.planning import evidence

ISSUE = ("--model", "llama3.1-70b", "--gpu", "h100-sxm", "--gpus", "1024", "--precision", "fp8")
"""Issue 25, part 5: 70B on 1,024 H100 in FP8, layout searched (it picks TP1 PP1 CP2 ZeRO-3)."""
MEASURED_LAYOUT = ("--tp", "4", "--pp", "8", "--vp", "5", "--cp", "1", "--mbs", "1", "--recompute", "none",
                   "--zero", "1")  # fmt: skip
"""The layout of the bundled Llama 3.1 70B H100 FP8 rows of DGXC recipes v25.04 at 64-2,048 GPUs
(measured_runs.csv rows 639-644: TP4 PP8 VP5, 1,614-1,662 tokens/s/GPU)."""
BEST_ROW = "measured_runs.csv:69"
"""Megatron-Bridge docs/performance-summary-archive.md (commit 067f987df), NeMo 26.04.01 container, Llama3-70B on 64
H100-SXM5-80GB, FP8, TP4 PP8 VP5: 1,664 tokens/s/GPU, the best bundled run of that model on Hopper in FP8."""


def _relative_width(record: dict[str, Any]) -> float:
    return float((record["step_time_s_high"] - record["step_time_s_low"]) / record["step_time_s"])


def test_the_issues_example_warns_and_is_wider_than_at_a_measured_layout() -> None:
    searched, measured = run_json("predict", *ISSUE), run_json("predict", *ISSUE, *MEASURED_LAYOUT)
    found = searched["evidence"]
    assert (searched["parallelism"]["tp"], searched["parallelism"]["zero"]) == (1, 3)
    assert found["beyond"] == "layout class; above best measured"
    assert found["best_measured_row"] == BEST_ROW
    best_tokens = 1664  # BEST_ROW's published tokens/s/GPU, at the same sequence length: the ratio is of tokens/s
    assert found["ratio_to_best_measured"] == pytest.approx(searched["tokens_per_s_per_gpu"] / best_tokens, rel=1e-3)
    assert found["ratio_to_best_measured"] > 1.1 and found["widening"] > 1.3
    assert searched["step_time_s_high"] >= searched["step_time_s"] * found["ratio_to_best_measured"] * (1 - 1e-9)
    assert measured["evidence"]["beyond"] == "" and measured["evidence"]["widening"] == 1
    assert _relative_width(searched) > 1.3 * _relative_width(measured)
    table = run_cli("predict", *ISSUE).out
    assert "Warning: beyond the measured runs" in table
    assert "layout class TP1 PP1 CP2+ ZeRO-3 never measured for dense 32B-316B models on Hopper" in table
    assert "forward residuals, widened (below)" in table
    assert "Warning: beyond" not in run_cli("predict", *ISSUE, *MEASURED_LAYOUT).out


def _section() -> dict[str, Any]:
    section: dict[str, Any] = json.loads(BUNDLED.read_text())["evidence"]
    return section


def _held_out() -> list[dict[str, Any]]:
    section = _section()
    return [dict(zip(section["held_out_columns"], row, strict=True)) for row in section["held_out"]]


def _widened(row: dict[str, Any]) -> tuple[Interval, Interval]:
    """A held-out row's protocol interval, and the one a prediction beyond as it was would get."""
    band = bundled().provenance["protocols"][row["protocol"]]["interval"]
    base = Interval(band["time_factor_low"], band["time_factor_high"], row["protocol"])
    index = evidence.index(bundled())
    assert index is not None
    beyond = row["beyond"].split("; ") if row["beyond"] else []
    return base, evidence.widen(base, beyond, row["ratio_to_best_measured"], index.widening)


def _covered(row: dict[str, Any], interval: Interval) -> bool:
    measured_over_predicted = 1 / (1 + row["time_error_pct"] / 100)
    return interval.low <= measured_over_predicted <= interval.high


def _fold_centred_mape(rows: list[dict[str, Any]], chosen: list[dict[str, Any]]) -> float:
    """MAPE of `chosen` around their fold's median time error: what is left once the error that belongs to the
    fold's own question (a round's release, a held-out format: its protocol's interval) is taken out."""
    logs: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        logs.setdefault((r["protocol"], r["fold"]), []).append(math.log1p(r["time_error_pct"] / 100))
    median = {key: statistics.median(values) for key, values in logs.items()}
    errors = [abs(math.expm1(math.log1p(r["time_error_pct"] / 100) - median[r["protocol"], r["fold"]])) for r in chosen]
    return 100 * sum(errors) / len(errors)


def test_held_out_rows_beyond_their_fits_evidence_err_more_and_the_widened_interval_covers_80_percent() -> None:
    """The rule is derived from data: rows of the forward, precision and scale protocols that were beyond their own
    fold's rows on a widening axis (model class, scale band, layout class) or above its best run err more than the
    rest of their fold, their protocol's interval covers fewer than 80% of them (and fewer than of the rows within),
    and the widened one about 80%.

    Compared around each fold's median error. Raw, the rows within err more since the refit of 2026-12-06 (8.3%
    against 7.4%): the forward protocol's v5.1 fold is within the evidence on these axes for 70 of its 79 rows, and
    they carry the round's release (Blackwell's LoRA and 8B steps 13-17% faster in NeMo 25.09 than 25.04, which no
    earlier row shows), as the held-out BF16 format carries the precision fold's; that error is the fold's question,
    answered by its protocol's interval, not the evidence's. Around the fold's median the rows beyond err more
    (5.7% against 4.9% at the refit of b784a8b; 7.1% against 6.2% before), by 2.0 points in the precision protocol
    (6.4% against 4.4%, 237 and 330 rows; 2.7 points before, when the BF16 fold's Narayanan rows read 4 points nearer),
    while the forward protocol's 43 rows beyond err less than its rows within (3.6% against 6.3%): the v5.1 rows at
    measured layouts are the worst predicted."""
    rows = _held_out()
    widening = {"layout class", "scale band", "model class", "above best measured"}
    beyond = [r for r in rows if widening & set(r["beyond"].split("; "))]
    within = [r for r in rows if r not in beyond]
    assert len(beyond) >= 100 and len(within) >= 100
    assert _fold_centred_mape(rows, beyond) > _fold_centred_mape(rows, within) + 0.5

    def of(protocol: str, chosen: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in chosen if r["protocol"] == protocol]

    assert _fold_centred_mape(rows, of("precision", beyond)) > _fold_centred_mape(rows, of("precision", within)) + 1.5
    before = sum(_covered(r, _widened(r)[0]) for r in beyond) / len(beyond)
    after = sum(_covered(r, _widened(r)[1]) for r in beyond) / len(beyond)
    covered_within = sum(_covered(r, _widened(r)[0]) for r in within) / len(within)
    assert before < min(0.8, covered_within) and 0.78 <= after <= 0.88 and covered_within >= 0.8
    summary = _section()["summary"]
    assert summary["beyond"]["rows"] == len(beyond)  # a row at an end of its interval may read either way rounded
    assert summary["beyond"]["coverage_widened"] == pytest.approx(after, abs=2 / len(beyond))


def test_the_held_out_rows_are_the_files_protocol_rows() -> None:
    """The section was sized on this calibration's protocols: each protocol's held-out rows give its recorded MAPE
    (a refit without rerunning scripts/evidence_section.py fails here)."""
    rows = _held_out()
    section = _section()
    metric = {row[0]: row[section["columns"].index("metric")] for row in section["rows"]}

    def error_pct(row: dict[str, Any]) -> float:
        """The protocol's error of a row: in throughput for a throughput row, in time otherwise."""
        time_error = float(row["time_error_pct"])
        return 100 / (1 + time_error / 100) - 100 if metric[row["id"]] == "tokens_per_s_per_gpu" else time_error

    for protocol in ("forward", "precision", "scale"):
        mine = [r for r in rows if r["protocol"] == protocol]
        recorded = bundled().provenance["protocols"][protocol]
        assert len(mine) == recorded["rows"]
        assert sum(abs(error_pct(r)) for r in mine) / len(mine) == pytest.approx(recorded["mape_pct"], abs=0.01)


def test_each_widening_axis_is_sized_on_enough_rows_and_never_narrows() -> None:
    for axis, entry in _section()["widening"].items():
        assert axis in evidence.WIDENED
        assert entry["rows"] >= 10 and entry["low_power"] >= 1 and entry["high_power"] >= 1
        assert entry["coverage_widened"] >= entry["coverage"]


@pytest.mark.parametrize(
    ("params_b", "moe", "lora", "expected"),
    [(70.6, False, False, "dense 32B-316B"), (8.0, False, False, "dense 3.2B-32B"), (405.9, False, False,
     "dense 316B-3.2T"), (0.125, False, False, "dense 32M-316M"), (69.0, False, True, "dense 32B-316B LoRA"),
     (671.0, True, False, "MoE")],
)  # fmt: skip
def test_model_classes(params_b: float, moe: bool, lora: bool, expected: str) -> None:
    assert evidence.model_class(params_b, moe, lora) == expected


@pytest.mark.parametrize(
    ("n_gpus", "expected"), [(1, "1 GPU"), (8, "5-16 GPUs"), (1024, "257-1,024 GPUs"), (1025, "1,025-4,096 GPUs")]
)
def test_scale_bands(n_gpus: int, expected: str) -> None:
    assert evidence.scale_band(n_gpus) == expected


def test_layout_classes() -> None:
    assert evidence.layout_class(4, 8, 1, 5, 1, 1, "none") == "TP2-4 PP5+ VP ZeRO-0/1"
    assert evidence.layout_class(1, 1, 2, 1, 1, 3, "selective") == "TP1 PP1 CP2+ ZeRO-3"
    assert evidence.layout_class(8, 1, 1, 1, 8, 0, "full") == "TP5+ PP1 EP2+ ZeRO-0/1 full recompute"


def test_widen_takes_the_largest_power_per_side_and_reaches_the_best_run_above_it() -> None:
    base = Interval(0.9, 1.1, "forward")
    powers = {"layout class": evidence.Widening(1.2, 1.1), "scale band": evidence.Widening(1.0, 1.5)}
    low, high, protocol = evidence.widen(base, ["layout class", "scale band"], None, powers)
    assert low == pytest.approx(0.9**1.2) and high == pytest.approx(1.1**1.5) and protocol == "forward"
    assert evidence.widen(base, ["accelerator family"], None, powers) == base
    assert evidence.widen(base, ["above best measured"], 1.3, powers) == (0.9, 1.3, "forward")
    assert evidence.widen(base, ["layout class", "above best measured"], 1.3, powers, moe=True) == (0.9, 1.3, "forward")


def _calibration(tmp_path: Path, change: Any) -> str:
    document = json.loads(BUNDLED.read_text())
    change(document)
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(document))
    return str(path)


def test_a_file_without_the_section_predicts_as_before_without_evidence(tmp_path: Path) -> None:
    path = _calibration(tmp_path, lambda d: d.pop("evidence"))
    record = run_json("predict", *ISSUE, "--calibration", path)
    band = bundled().provenance["protocols"]["forward"]["interval"]
    assert "evidence" not in record
    assert record["step_time_s_low"] == pytest.approx(record["step_time_s"] * band["time_factor_low"])
    table = run_cli("predict", *ISSUE, "--calibration", path).out
    assert "Nearest measured" not in table and "beyond the measured runs" not in table


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda s: s["rows"][3].__setitem__(9, 0), "evidence.rows[3].n_gpus"),
        (lambda s: s["rows"][0].pop(), "evidence.rows"),
        (lambda s: s["widening"]["layout class"].__setitem__("high_power", 0.5), "evidence.widening.layout class"),
        (lambda s: s.__setitem__("columns", ["id"]), "evidence.columns"),
    ],
)
def test_a_malformed_section_is_a_one_line_error(tmp_path: Path, change: Any, field: str) -> None:
    path = _calibration(tmp_path, lambda d: change(d["evidence"]))
    result = run_cli("predict", *ISSUE, "--calibration", path)
    assert result.code == 2 and f"'{field}" in result.err and path in result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err


def test_compare_plan_and_search_mark_rows_beyond_the_evidence() -> None:
    compare = run_cli("compare", "--model", "llama3.1-70b", "--gpus", "1024", "--gpu", "h100-sxm:fp8", "--gpu",
                      "h100-sxm:fp8", "--tp", "4", "--pp", "8", "--vp", "5", "--cp", "1").out  # fmt: skip
    assert " *" not in compare
    searched = run_cli("compare", "--model", "llama3.1-70b", "--gpus", "1024", "--gpu", "h100-sxm:fp8").out
    plan = run_cli("plan", "--model", "llama3.1-70b", "--tokens", "15e12", "--deadline", "60d", "--gpu",
                   "h100-sxm:fp8").out  # fmt: skip
    search = run_cli("search", *ISSUE, "--top", "2").out
    for out in (searched, plan, search):
        assert any(line.count("TP1 PP1") == 1 and " * " in line for line in out.splitlines()), out
        assert "* beyond the measured runs the calibration saw (layout class, above best measured)" in out


def test_explain_and_the_flat_record_carry_the_evidence() -> None:
    text = run_cli("explain", *ISSUE, "--no-ops").out
    assert "How near the measured runs the calibration saw:" in text
    assert (
        f"best measured of this model on Hopper in FP8: Llama 3.1 70B on 64 x NVIDIA H100 SXM 80GB, FP8, TP4 PP8 "
        f"VP5 CP1 ZeRO-1, Megatron-Bridge, NeMo 26.04.01 container: 1,664 tokens/s/GPU (row {BEST_ROW})" in text
    )
    document = json.loads(run_cli("explain", *ISSUE, "--format", "json").out)
    assert document["evidence"]["best_measured_row"] == BEST_ROW
    rows = list(csv.DictReader(io.StringIO(run_cli("predict", *ISSUE, "--format", "csv").out)))
    assert rows[0]["evidence.beyond"] == "layout class; above best measured"
    assert float(rows[0]["evidence.widening"]) > 1.3


def test_a_moe_interval_is_widened_only_up_to_the_best_measured_run() -> None:
    """DeepSeek-V3 on 1,024 H100: its searched layout class was never measured for a MoE model on Hopper; the MoE
    interval (leave one MoE model out) is not widened for it."""
    record = run_json("predict", "--model", "deepseek-v3", "--gpu", "h100-sxm", "--gpus", "1024")
    assert "layout class" in record["evidence"]["beyond"]
    assert "above best measured" in record["evidence"]["beyond"] or record["evidence"]["widening"] == 1
    assert "not widened: its MoE models" in run_cli("predict", "--model", "deepseek-v3", "--gpu", "h100-sxm",
                                                    "--gpus", "1024").out  # fmt: skip


def test_the_file_writes_a_row_a_line_and_reads_back() -> None:
    document = {"evidence": {"rows": [[1, "a", None]], "held_out": [["x", 2.5]], "columns": ["a"]}, "fit": [1, 2]}
    text = dumps(document)
    assert json.loads(text) == document
    assert '   [1, "a", null]' in text.splitlines() and '   ["x", 2.5]' in text.splitlines()
    lines = set(BUNDLED.read_text().splitlines())  # the bundled section's rows one per line, not one per value
    assert all(f"   {json.dumps(row)}," in lines or f"   {json.dumps(row)}" in lines for row in _section()["rows"])


def test_a_row_describes_its_run() -> None:
    index = evidence.index(bundled())
    assert index is not None
    row = next(r for r in index.rows if r.id == BEST_ROW)
    assert (row.model, row.family, row.format, row.n_gpus, row.tokens_per_s_per_gpu) == (
        "llama3.1-70b", "hopper", "fp8-tensor", 64, 1664)  # fmt: skip
    assert row.model_tflops_per_gpu == pytest.approx(731, rel=0.03)  # the row's published model TFLOP/s (causal)
    assert math.isclose(row.params_b, 70.6, rel_tol=0.01)
    assert row.layout_class == "TP2-4 PP5+ VP ZeRO-0/1"


def test_a_run_validated_not_fitted_is_evidence() -> None:
    """MPT-7B on 16 A100 40GB: llm-foundry's A100 40GB table is validated, not fitted, yet it measured that very run
    (measured_runs.csv row 497, llm-foundry A100 40GB table: 16 GPUs, 3,645 tokens/s/GPU); the nearest run is
    that one, not an 80GB A100's."""
    record = run_json("predict", "--model", "mpt-7b", "--gpu", "a100-40gb", "--gpus", "16", "--precision", "bf16",
                      "--stack", "composer")  # fmt: skip
    assert "A100 SXM4 40GB" in record["evidence"]["nearest"]


def test_the_nearest_run_is_the_questions_own_accelerator_before_a_newer_one_of_its_family() -> None:
    """Mixtral 8x22B on 256 B200 at the layout of measured_runs.csv row 293 (NeMo 25.02 table: TP2 PP4 VP14 CP8 EP8,
    64K tokens, 2,232 tokens/s/GPU): the nearest run is that very row, not row 302, the same layout on GB200 in the
    newer 25.04 table; the interval is the one either row gives (nothing is beyond)."""
    record = run_json("predict", "--model", "mixtral-8x22b", "--gpu", "b200", "--gpus", "256", "--precision", "fp8",
                      "--seq-len", "65536", "--gbs", "64", "--mbs", "1", "--tp", "2", "--pp", "4", "--cp", "8",
                      "--vp", "14", "--ep", "8", "--etp", "1")  # fmt: skip
    found = record["evidence"]
    assert found["nearest_row"] == "measured_runs.csv:293" and "NVIDIA B200" in found["nearest"]
    assert (found["beyond"], found["widening"]) == ("", 1.0)
