"""The MoE stage of the calibration: it fits only MoE parameters (dense predictions cannot change), recovers values
it was given on synthetic rows, and its section of a calibration file is checked like the rest of the file."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from perfmodel.errors import PerfmodelError
from perfmodel.fitting import calibrate as cal
from perfmodel.fitting.runs import MOE_SOURCE, bundled_runs
from perfmodel.fitting.validation import MOE_NOT_FITTED, RunBatch, moe_fit_rows, moe_model, prepare_all
from perfmodel.physics import calibration
from perfmodel.physics import parameters as table
from perfmodel.physics.calibration import BUNDLED, Calibration

MOE_SHARED = ("overlap_ep", "grouped_gemm")
"""The MoE stage's entries shared by every family."""


def _moe_items(start: Calibration):  # type: ignore[no-untyped-def]
    runs, _ = bundled_runs()
    return moe_fit_rows(prepare_all([r for r in runs if r.source.startswith(MOE_SOURCE)], start, []))


def test_the_moe_stage_refits_rows_it_priced() -> None:
    """Rows whose 'measured' value is the model's own prediction at overlap_ep 0.3, grouped_gemm 0.75 and a legacy
    per-expert cost of 150 us on Blackwell (all slower than the priors 0.5, 1.0 and 50 us): the stage finds the
    legacy cost again (within 2%: 0.6% off), the grouped GEMM share within 10% and halves the error at the priors;
    the overlap share, which trades off against the grouped GEMM share on these rows (0.4 and 0.70 price them within
    1%), stays at or below its prior."""
    start = calibration.UNCALIBRATED
    items = [i for i in _moe_items(start) if moe_model(i) in ("DeepSeek-V3", "Qwen3-30B-A3B")]
    truth = {"overlap_ep": 0.3, "grouped_gemm": 0.75, "moe_legacy_group_s@blackwell": 1.5e-4}
    predicted = RunBatch(items).predicted(cal.moe_efficiencies(start, truth))
    synthetic = [replace(i, run=replace(i.run, measured=float(p))) for i, p in zip(items, predicted, strict=True)]
    priors = RunBatch(synthetic).log_time_ratios(cal.moe_efficiencies(start, {}))
    at_priors = sum(abs(math.exp(r) - 1) for r in priors) / len(priors) * 100
    fitted = cal.fit_moe(synthetic, RunBatch, start)
    assert at_priors > 10 and cal.mape(fitted.residuals) < 0.5 * at_priors
    assert fitted.parameters["grouped_gemm"] == pytest.approx(0.75, rel=0.1)
    assert fitted.parameters["moe_legacy_group_s@blackwell"] == pytest.approx(1.5e-4, rel=0.02)
    assert fitted.parameters["overlap_ep"] <= 0.5


def test_moe_parameters_leave_a_dense_prediction_unchanged() -> None:
    runs, _ = bundled_runs()
    dense = prepare_all([r for r in runs if r.source == "Megatron-Bridge"][:20], calibration.UNCALIBRATED, [])
    base = RunBatch(dense).predicted(cal.moe_efficiencies(calibration.UNCALIBRATED, {}))
    moved = RunBatch(dense).predicted(
        cal.moe_efficiencies(calibration.UNCALIBRATED, {"overlap_ep": 0.9, "grouped_gemm": 0.6})
    )
    assert list(moved) == list(base)


def test_the_bundled_calibration_carries_the_moe_stage_with_its_error() -> None:
    """perfmodel/data/calibration.json's 'moe' section: its values, in-sample and leave-one-model-out MAPE per model,
    and a residual per fitted row; the bundled efficiencies use them."""
    bundled = calibration.bundled()
    moe = bundled.provenance["moe"]
    fit = moe["fit"]
    assert set(fit["parameters"]) == {k for k in bundled.parameters if table.stage_of(k) == "moe"} >= set(MOE_SHARED)
    assert fit["rows"] == len(fit["residuals"]) > 0
    fitted_models = {r["model"] for r in fit["residuals"]}
    assert set(fit["leave_one_model_out_mape_pct"]) == fitted_models | set(fit["not_fitted"])
    assert set(fit["in_sample_mape_pct_by_model"]) == fitted_models
    assert all(math.isfinite(v) for v in fit["leave_one_model_out_mape_pct"].values())
    for family in ("hopper", "blackwell-ultra"):
        assert bundled.efficiency(family).overlap_ep == bundled.parameters["overlap_ep"]
        assert bundled.efficiency(family).grouped_gemm == bundled.parameters["grouped_gemm"]


def test_moe_stage_models_are_the_bundled_moe_models_but_the_ones_it_leaves_out() -> None:
    """Every container's rows of every bundled MoE model but GPT-OSS-120B, Nemotron 3 Nano and Mixtral 8x22B, which
    are validated and not fitted (gaps of the model's, not the MoE mechanisms': MOE_NOT_FITTED says why); Llama 4
    Scout's one row of NeMo 25.07's table among them."""
    items = _moe_items(calibration.UNCALIBRATED)
    models = {"DeepSeek-V3", "Mixtral-8x7B", "Qwen3-235B-A22B", "Qwen3-30B-A3B", "Llama4-Scout (LLM only)"}
    assert {moe_model(i) for i in items} == models
    assert set(MOE_NOT_FITTED) == {
        "GPT-OSS-120B",
        "Nemotron-3-Nano-30B-A3B",
        "Nemotron-3.5-Lightning-30B-A3B",
        "Mixtral-8x22B",
    }
    assert len({i.run.released for i in items}) >= 6  # 25.02 ... 26.08: every container, not the newest alone


@pytest.mark.parametrize(
    ("moe", "says"),
    [
        ({"parameters": {"overlap_ep": 1.5}}, "moe.parameters.overlap_ep = 1.5; allowed 0.05 to 0.95"),
        ({"parameters": {"gemm_bf16": 0.7}}, "moe.parameters: unknown 'gemm_bf16'"),
        ({"parameters": [0.5]}, "field 'moe.parameters' must map"),
    ],
)
def test_a_bad_moe_section_is_named(tmp_path: Path, moe: dict[str, object], says: str) -> None:
    document = json.loads(BUNDLED.read_text())
    document["moe"] = moe
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(document))
    with pytest.raises(PerfmodelError, match=says.replace(".", r"\.")):
        Calibration.load(path)


def test_perfmodel_calibrate_runs_the_moe_stage_and_its_file_reloads(tmp_path: Path) -> None:
    """fit_calibration (what `perfmodel calibrate` runs) on a few dense rows and two MoE models' rows: the dense fit,
    then the MoE stage over it; the written file loads back with the same MoE values in force."""
    from perfmodel.fitting.validation import fit_calibration

    runs, _ = bundled_runs()
    dense = [r for r in runs if r.source == "Megatron-Bridge"][:12]
    moe_runs = [r for r in runs if r.source in (f"{MOE_SOURCE}: Qwen3-30B-A3B", f"{MOE_SOURCE}: Mixtral-8x7B")]
    fitted = fit_calibration([*dense, *moe_runs], [], cross_validate=False)
    section = fitted.provenance["moe"]
    assert set(section["fit"]["parameters"]) >= set(MOE_SHARED)
    fit_rows = {i.run.id for i in moe_fit_rows(prepare_all(moe_runs, calibration.UNCALIBRATED, []))}
    assert section["fit"]["rows"] == len(fit_rows)
    assert {k for k in fitted.parameters if table.stage_of(k) == "moe"} == set(section["fit"]["parameters"])
    priced = section["fit"]["priced_rows"]
    assert sorted(r["id"] for r in priced) == sorted(r.id for r in moe_runs)
    assert {r["id"] for r in priced if r["fitted"]} == fit_rows  # all but Qwen3-30B-A3B's token-dropping rows
    assert {r["zoo_model"] for r in priced} == {"qwen3-30b-a3b", "mixtral-8x7b"}
    path = tmp_path / "calibration.json"
    path.write_text(fitted.to_json())
    loaded = Calibration.load(path)
    assert loaded.efficiency("blackwell").grouped_gemm == fitted.parameters["grouped_gemm"]


def test_a_file_with_the_old_moe_section_reads_as_it_was_meant(tmp_path: Path) -> None:
    """Files written before the MoE values were table entries keep them in 'moe.parameters': they still load, with
    those values in force, and the dense values are untouched by them."""
    document = json.loads(BUNDLED.read_text())
    dense = {k: v for k, v in document["parameters"].items() if table.stage_of(k) == "dense"}
    old = document | {"parameters": dense, "moe": {"parameters": {"overlap_ep": 0.42, "grouped_gemm": 0.81}}}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    loaded = Calibration.load(path)
    eff = loaded.efficiency("blackwell")
    assert (eff.overlap_ep, eff.grouped_gemm) == (0.42, 0.81)
    plain = Calibration(dense, {}).efficiency("blackwell")
    assert replace(eff, overlap_ep=plain.overlap_ep, grouped_gemm=plain.grouped_gemm) == plain


def test_a_file_with_the_retired_scale_out_share_loads_without_it(tmp_path: Path) -> None:
    """Files written while the NIC share of the EP exchange was fitted (`overlap_ep_scaleout`, now `overlap_dp`:
    moe.ep_overlap) still load; the value is left out, and a key the table never had is still refused."""
    document = json.loads(BUNDLED.read_text())
    values = {k: v for k, v in document["parameters"].items() if k in calibration.RETIRED or table.entry(k)}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document | {"parameters": values | {"overlap_ep_scaleout": 0.81}}))
    assert "overlap_ep_scaleout" not in Calibration.load(path).parameters
    path.write_text(json.dumps(document | {"parameters": values | {"overlap_ep_nic": 0.81}}))
    with pytest.raises(PerfmodelError, match="unknown 'overlap_ep_nic'"):
        Calibration.load(path)


def test_the_moe_entries_are_in_the_shared_table_and_the_dense_fit_leaves_them() -> None:
    """overlap_ep and grouped_gemm are table entries of the MoE stage, with their bounds and
    priors; the dense fit's free entries never include them, the MoE stage's only them."""
    from perfmodel.fitting.validation import _formats

    entries = (
        ("overlap_ep", (0.05, 0.95), 0.5),
        ("grouped_gemm", (0.5, 1.2), 1.0),
    )
    for name, bounds, prior in entries:
        item = table.entry(name)
        assert item is not None and item.parameter.stage == "moe"
        assert item.parameter.bounds == bounds and item.default == prior
    items = _moe_items(calibration.UNCALIBRATED)
    dense_keys = {e.key for e in cal.free_entries(items, lambda i: i.profile, _formats)}
    moe_keys = {e.key for e in cal.free_entries(items, lambda i: i.profile, _formats, "moe")}
    assert set(MOE_SHARED) <= moe_keys and not dense_keys & moe_keys
    assert all(table.stage_of(k) == "moe" for k in moe_keys)


def test_a_moe_prediction_takes_its_interval_from_the_moe_stage_held_out_residuals() -> None:
    """The bundled file's MoE interval comes from every MoE row predicted by a stage that never saw its model (the
    fitted models left out one at a time, GPT-OSS-120B, Mixtral 8x22B, Nemotron 3 Nano and 3.5 Lightning under the
    whole stage); a dense question keeps its protocol."""
    bundled = calibration.bundled()
    fit = bundled.provenance["moe"]["fit"]
    held = [r["held_out_error_pct"] for r in fit["residuals"]]
    not_fitted = ["GPT-OSS-120B", "Mixtral-8x22B", "Nemotron-3-Nano-30B-A3B", "Nemotron-3.5-Lightning-30B-A3B"]
    assert fit["not_fitted"] == not_fitted
    assert set(not_fitted) <= set(fit["leave_one_model_out_mape_pct"])
    band = bundled.interval_for("blackwell", "mxfp8", 64, moe=True)
    assert band is not None and band.protocol == calibration.MOE_PROTOCOL
    assert (band.low, band.high) == (fit["interval"]["time_factor_low"], fit["interval"]["time_factor_high"])
    assert band.low < 1 < band.high and max(held) > 0 > min(held)
    dense = bundled.interval_for("blackwell", "mxfp8", 64)
    assert dense is not None and dense.protocol != calibration.MOE_PROTOCOL
