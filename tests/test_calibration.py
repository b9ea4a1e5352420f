"""Calibration: the fit recovers known parameters, files round-trip with provenance, bad files are refused."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from perfmodel.errors import PerfmodelError
from perfmodel.fitting import calibrate as fitting
from perfmodel.fitting.protocols import PROTOCOLS
from perfmodel.fitting.runs import MeasuredRun, bundled_runs
from perfmodel.fitting.validation import RunBatch, _formats, _group, _profile, prepare, prepare_all
from perfmodel.inputs.files import MAX_DEPTH, nesting_depth
from perfmodel.physics import calibration as cal
from perfmodel.physics import parameters as table
from perfmodel.physics.efficiency import DEFAULTS
from perfmodel.physics.parameters import Profile

LAYOUTS = [
    ("llama3.1-70b", 64, "fp8", {"tp": 4, "pp": 8, "cp": 1, "vp": 5, "mbs": 1, "gbs": 128}),
    ("llama3.1-70b", 64, "bf16", {"tp": 4, "pp": 4, "cp": 2, "vp": 5, "mbs": 1, "gbs": 128}),
    ("llama3.1-8b", 8, "fp8", {"tp": 1, "pp": 1, "cp": 1, "vp": 1, "mbs": 1, "gbs": 128}),
    ("llama3.1-8b", 8, "bf16", {"tp": 2, "pp": 1, "cp": 1, "vp": 1, "mbs": 2, "gbs": 64}),
    ("llama3.1-405b", 512, "fp8", {"tp": 8, "pp": 8, "cp": 2, "vp": 8, "mbs": 1, "gbs": 256}),
    ("llama3.1-405b", 512, "bf16", {"tp": 8, "pp": 8, "cp": 2, "vp": 8, "mbs": 1, "gbs": 256}),
    ("llama3.1-8b", 64, "fp8", {"tp": 1, "pp": 1, "cp": 4, "vp": 1, "mbs": 1, "gbs": 256}),
    ("llama3.1-70b", 256, "fp8", {"tp": 8, "pp": 4, "cp": 1, "vp": 5, "mbs": 1, "gbs": 512}),
]
TRUE = {"gemm_bf16": 0.6, "gemm_fp8": 0.5, "attention": 0.8, "memory": 0.7}


def _synthetic_items():
    truth = table.apply(DEFAULTS["hopper"], TRUE)
    items = []
    for number, (model, gpus, precision, layout) in enumerate(LAYOUTS):
        scenario = {"model": model, "gpu": "h100-sxm", "n_gpus": gpus, "precision": precision,
                    "parallelism": layout | {"recompute": "none", "zero": 1}}  # fmt: skip
        probe = prepare(MeasuredRun(f"r{number}", "synthetic", scenario, "step_time_s", 1.0), cal.UNCALIBRATED)
        measured = probe.predicted(truth)
        items.append(replace(probe, run=replace(probe.run, measured=measured)))
    return items


def test_fit_recovers_the_parameters_that_made_the_data() -> None:
    """The GEMM shares come back within 2.5% (1.2% and 0.7% off: the other parameters trade off a little)."""
    items = _synthetic_items()
    result = fitting.fit(items, RunBatch, _profile, _formats, prior_sigma=100.0)  # the data alone decide
    assert fitting.mape(result.residuals) < 0.5
    fitted = table.efficiency(result.parameters, Profile("hopper"))  # vendor value x Hopper's generation factor
    assert fitted.gemm_fp8 == pytest.approx(TRUE["gemm_fp8"], rel=0.025)
    assert fitted.gemm_bf16 == pytest.approx(TRUE["gemm_bf16"], rel=0.025)
    assert not any("fp4" in key for key in result.parameters)  # no FP4 run: the data cannot inform it
    assert not any(key.startswith("run_overhead_s") for key in result.parameters)  # no MLPerf run


def test_cross_validation_and_interval() -> None:
    items = _synthetic_items()
    held = fitting.cross_validate(items, RunBatch, _profile, _formats, _group)
    assert len(held) == len(items) and {r.group for r in held} == {"h100-sxm/fp8", "h100-sxm/bf16"}
    band = fitting.interval(held)
    assert band["time_factor_low"] <= 1.0 + 1e-6 <= band["time_factor_high"] + 2e-6 or band["coverage"] == 0.8
    built = fitting.build(fitting.fit(items, RunBatch, _profile, _formats), held, {"rows": [i.run.id for i in items]})
    assert built.provenance["fit"]["cv_mape_pct"] == pytest.approx(fitting.mape(held))
    assert built.provenance["fit"]["parameters"] == len(built.parameters) > 0  # what `calibrate` reports
    assert built.provenance["fit"]["at_bound"] == fitting.at_bound(built.parameters)
    assert built.interval == (band["time_factor_low"], band["time_factor_high"])


def test_batched_residuals_equal_the_per_row_ones() -> None:
    # Every fifth bundled row (all sources, metrics and layouts chosen by search among them), priced one layout at a
    # time and as one array call per context; then the finite-difference variants a fit prices at once.
    runs, _ = bundled_runs()
    items = prepare_all(runs[::5], cal.bundled(), [])
    assert len({i.context for i in items}) < len(items)  # some rows share a context: a real batch

    def efficiency(profile: Profile):
        return cal.bundled().efficiency(*profile)

    per_row = np.array([i.log_time_ratio(efficiency(i.profile)) for i in items])
    batched = RunBatch(items).log_time_ratios(efficiency)
    np.testing.assert_allclose(batched, per_row, rtol=1e-9, atol=0)
    variants = [efficiency, lambda family: replace(efficiency(family), gemm_bf16=0.5, overlap_tp=0.3, run_overhead_s=9)]
    stacked = RunBatch(items).log_time_ratios(lambda f: fitting._stack([v(f) for v in variants]), variants=True)
    for k, variant in enumerate(variants):
        expected = [i.log_time_ratio(variant(i.profile)) for i in items]
        np.testing.assert_allclose(stacked[:, k], expected, rtol=1e-9, atol=0)


def test_round_trip(tmp_path: Path) -> None:
    original = cal.Calibration(
        {"gemm_sustained": 0.9, "gemm_bf16@nvidia": 0.55}, {"created": "now", "fit": {"rows": 3}}
    )
    path = tmp_path / "c.json"
    path.write_text(original.to_json())
    loaded = cal.Calibration.load(path)
    assert loaded.parameters == original.parameters and loaded.provenance["fit"] == {"rows": 3}
    # Every family's GEMMs are kernel-measured now: an older file's vendor share loads and prices none of them.
    assert loaded.efficiency("ampere").gemm_bf16 == pytest.approx(0.9 * DEFAULTS["ampere"].gemm_bf16)
    assert loaded.efficiency("hopper").attention_fwd == DEFAULTS["hopper"].attention_fwd


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not a calibration JSON file"),
        (json.dumps({"parameters": {}}), "field 'format' must be 'perfmodel-calibration/2'"),
        (json.dumps({"format": cal.FORMAT_V1, "parameters": {"volta": {}}}), "unknown family 'volta'"),
        (json.dumps({"format": cal.FORMAT_V1, "parameters": {"hopper": {"speed": 1}}}), "unknown 'speed'"),
        (json.dumps({"format": cal.FORMAT_V1, "parameters": {"hopper": {"gemm_fp8": 1.7}}}), "allowed 0.25 to 0.8"),
        (
            json.dumps({"format": cal.FORMAT, "parameters": {}, "protocols": {"scale": {"interval": {}}}}),
            "field 'protocols.scale.interval' must hold positive numbers",
        ),
        (json.dumps({"format": cal.FORMAT, "parameters": {}, "protocols": {}}), "field 'coverage' must map families"),
    ],
)
def test_bad_calibration_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(PerfmodelError, match=message):
        cal.Calibration.load(path)


def test_bundled_file_nests_within_the_limit_that_user_files_are_checked_against() -> None:
    """`Calibration.load` skips the depth check for the bundled file (written by `perfmodel calibrate`)."""
    assert 0 < nesting_depth(cal.BUNDLED.read_text()) <= MAX_DEPTH


def _band(low: float, high: float) -> dict[str, float]:
    return {"coverage": 0.8, "time_factor_low": low, "time_factor_high": high}


def test_interval_comes_from_the_protocol_matching_the_question() -> None:
    provenance = {
        "interval": _band(0.9, 1.2),
        "protocols": {p: {"interval": _band(0.9 - k / 10, 1.2 + k / 10)} for k, p in enumerate(PROTOCOLS)},
        "coverage": {"formats": {"hopper": ["bf16", "fp8-tensor"]}, "max_gpus": {"hopper": 1024}},
    }
    calibration = cal.Calibration({}, provenance)
    assert calibration.protocol_for("blackwell", "fp8", 64) == "generation"  # no Blackwell row
    assert calibration.protocol_for("hopper", "mxfp8", 64) == "precision"  # no MXFP8 row on Hopper
    assert calibration.protocol_for("hopper", "fp8", 4096) == "scale"  # beyond the largest Hopper row
    assert calibration.protocol_for("hopper", "fp8", 1024) == "forward"  # covered ground: the next run
    assert calibration.interval_for("hopper", "mxfp8", 8) == (0.7, 1.4, "precision")
    old = cal.Calibration({}, {"interval": _band(0.9, 1.2)})  # a file written before the protocols
    assert old.protocol_for("hopper", "fp8", 8) is None
    assert old.interval_for("hopper", "fp8", 8) == (0.9, 1.2, cal.FALLBACK_PROTOCOL)
    assert cal.UNCALIBRATED.interval_for("hopper", "fp8", 8) is None


def test_resolve() -> None:
    assert cal.resolve("none") is cal.UNCALIBRATED
    with pytest.raises(PerfmodelError, match="no such calibration file"):
        cal.resolve("/nonexistent/cal.json")


def test_fits_made_together_on_a_forked_worker_are_the_fits_made_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """calibrate.start_fits (calibration's protocol folds) on a worker process gives each job exactly the values
    `fit` gives it in this process, in the jobs' order."""
    items = _synthetic_items()
    jobs = [(items[:5], None), (items[2:], cal.Calibration({"memory": 0.75}, {}, "start")), (items[1:7], None)]
    alone = [fitting.fit(train, RunBatch, _profile, _formats, start).parameters for train, start in jobs]
    monkeypatch.setattr("os.sched_getaffinity", lambda _: {0, 1}, raising=False)
    assert fitting.start_fits(jobs, RunBatch, _profile, _formats)() == alone


def test_fits_solved_in_lockstep_in_one_process_are_the_fits_made_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On one processor start_fits solves its jobs in this process, in lockstep: every fit's variants priced in one
    call over the union of their rows (different rows, starts and widths); each job still gets exactly `fit`'s
    values."""
    items = _synthetic_items()
    jobs = [(items[:5], None), (items[2:], cal.Calibration({"memory": 0.75}, {}, "start")), (items[1:7], None)]
    alone = [fitting.fit(train, RunBatch, _profile, _formats, start).parameters for train, start in jobs]
    monkeypatch.setattr("os.sched_getaffinity", lambda _: {0}, raising=False)
    assert fitting.start_fits(jobs, RunBatch, _profile, _formats)() == alone


def test_cross_validation_takes_the_folds_fits_made_already(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fold whose fit `fits` holds (by its training rows' ids in order) is not refitted, and is predicted with it."""
    items = _synthetic_items()
    folds = fitting.leave_one_group_out(items, _group)
    made = {fitting.run_ids(t): fitting.fit(t, RunBatch, _profile, _formats).parameters for _, t, _ in folds}
    expected = fitting.cross_validate(items, RunBatch, _profile, _formats, _group)
    monkeypatch.setattr(fitting, "fit", lambda *a, **k: pytest.fail("refitted a fold made already"))
    assert fitting.cross_validate(items, RunBatch, _profile, _formats, _group, fits=made) == expected
