"""The seed's MLPerf headline (`perfmodel ratios`) and the forward protocol's newest fold: accuracy the tests see."""

import json

import pytest
from conftest import run_cli

from perfmodel.fitting import calibrate as cal
from perfmodel.fitting import protocols
from perfmodel.fitting.runs import bundled_runs
from perfmodel.fitting.seed_ratios import RUNS, seed_ratios
from perfmodel.fitting.validation import RunBatch, _formats, _profile
from perfmodel.inputs.resources import data_dir
from perfmodel.inputs.scenario import load_scenario
from perfmodel.physics.calibration import bundled

# mlperf_training_llm.csv, llama31_405b at 512 GPUs, time_to_train_min:
MEASURED = {
    "H100 FP8 (v5.0)": 269.122,  # v5.0 NVIDIA Eos-dfw (64x NVIDIA HGX H100), FP8, TP8 PP8 CP2 VP8, GBS 1152
    "GB200 FP8 (v5.0)": 121.757,  # v5.0 NVIDIA Tyche (8x NVIDIA GB200 NVL72), FP8, TP4 PP8 CP2 VP8, GBS 896
    "GB200 NVFP4 (v5.1)": 84.94,  # v5.1 NVIDIA Tyche (8x NVIDIA GB200 NVL72), NVFP4, TP4 PP8 CP2 VP8, GBS 1152
    "GB300 NVFP4 (v5.1)": 64.605,  # v5.1 NVIDIA Theia (8x NVIDIA GB300 NVL72), NVFP4, TP2 PP8 CP2 VP8, GBS 1152
}
TOLERANCE_PCT = {
    "GB200 NVFP4 / H100 FP8": 4.5,  # +3.9% with GEMMs from the kernel stage (+2.4% before it, +2.5% physics3)
    "GB200 NVFP4 / GB200 FP8": 5.0,  # -4.6% with measured collectives (-1.8%, -0.7%, -2.6%): issue 25's 5%
    "GB300 NVFP4 / GB200 FP8": 5.0,  # -4.9% with measured collectives (-3.5%, -2.2%, -0.5%): issue 25's 5%
    "GB300 NVFP4 / H100 FP8": 3.0,  # +2.1% (+0.7%, +0.9%, +3.7%; +7.4% before the FP4 kernels)
    "GB300 NVFP4 / H100 FP8, per dollar": 3.0,  # the same ratio x the bundled prices ($6.16 / $13.13)
}
"""Each ratio's error, about a point above today's, and every one within issue 25's target of 5%: the kernel stage
(every run priced from measured GEMM shapes with one shared training factor, no per-family GEMM factor) moved each
run by at most 1.5 points, H100 FP8 +1.8% -> +2.9%, GB200 FP8 -1.2% -> -2.7%, GB200 NVFP4 -0.5% -> -0.9%, GB300 NVFP4
+1.1% -> +0.8%."""


@pytest.fixture(scope="module")
def result():  # type: ignore[no-untyped-def]
    return seed_ratios(bundled())


def test_the_four_runs_are_the_published_rows_and_scenarios(result) -> None:  # type: ignore[no-untyped-def]
    for priced in result.runs:
        assert priced.measured_min == MEASURED[priced.seed.label]
        scenario = load_scenario(data_dir("scenarios") / priced.seed.scenario)
        layout = priced.row.prepared.layout
        given = scenario.parallelism
        assert (given.tp, given.pp, given.cp, given.vp, given.gbs) == (layout.tp, layout.pp, layout.cp, layout.vp,
                                                                       layout.gbs)  # fmt: skip
        assert (scenario.gpu, scenario.precision, scenario.n_gpus) == (
            priced.row.prepared.run.accelerator, priced.row.prepared.run.precision, 512,
        )  # fmt: skip
    assert [r.seed for r in result.runs] == list(RUNS)


def test_each_seed_ratio_is_near_the_measured_one(result) -> None:  # type: ignore[no-untyped-def]
    """Measured: GB200 NVFP4 / H100 FP8 = 269.122 / 84.94 = 3.17x, GB200 NVFP4 / GB200 FP8 = 121.757 / 84.94 =
    1.43x, GB300 NVFP4 / GB200 FP8 = 121.757 / 64.605 = 1.88x, GB300 NVFP4 / H100 FP8 = 269.122 / 64.605 = 4.17x;
    per dollar at the bundled on-demand prices (hardware_specs: H100 $6.16, GB300 $13.13 per GPU-hour) 1.95x."""
    ratios = {r.claim.name: r for r in result.ratios}
    assert ratios["GB300 NVFP4 / H100 FP8"].measured == pytest.approx(269.122 / 64.605)
    assert ratios["GB300 NVFP4 / H100 FP8, per dollar"].measured == pytest.approx(269.122 / 64.605 * 6.16 / 13.13)
    for name, tolerance in TOLERANCE_PCT.items():
        assert abs(ratios[name].error_pct) <= tolerance, (name, ratios[name].error_pct)


def test_ratios_command_prints_them_with_their_source_rows() -> None:
    table = run_cli("ratios")
    assert table.code == 0 and "about 2x" in table.out and "NVIDIA Theia (8x NVIDIA GB300 NVL72)" in table.out
    report = json.loads(run_cli("ratios", "--format", "json").out)
    assert [r["run"] for r in report["runs"]] == list(MEASURED)
    assert all(r["source_row"].startswith("mlperf_training_llm.csv, MLPerf Training v5.") for r in report["runs"])
    assert {r["ratio"] for r in report["ratios"]} == set(TOLERANCE_PCT)


def test_forward_protocol_predicts_the_v51_round() -> None:
    """Fit on what was published before MLPerf Training v5.1 (2025-11-12), predict its 74 rows (the 22 naming no
    precision where the round ran FP8 and NVFP4 are excluded: fitting.runs.round_precisions; MangoBoost's five
    LLMBoost rows are another stack: fitting.runs.LLMBOOST_STACK): 9.4% MAPE (16.0% over 101 rows before the
    kernel-measured attention, the LoRA graphs and the exclusions; 12.6% over 79 before the LLMBoost exclusion and
    the attention kernels by release; 11.3% when this test was written), the 405B rows 5.9% (5.8% until the
    collectives were refitted with a baseboard pair's share, physics.collectives.PAIR_SHARE; 5.7% until the
    learned-position and Nemotron-H models stopped paying a rotary embedding, which moved the fold's shared
    values). LoRA and Llama 3.1 8B on Blackwell and Blackwell Ultra are predicted up to 36% too slow (14% on
    average): NVIDIA's v5.1 software (NeMo 25.09) ran the same B200 LoRA
    layout 13% faster per sample than v5.0's 25.04, and GB200's CP8 layouts 17% faster, of which cuDNN's attention
    release explains a few points; MI355X's LoRA rows +14% (+37% while the v5.0 LLMBoost rows set AMD's
    timed-region fixed part)."""
    runs, excluded = bundled_runs()
    items = protocols.fitted_items(runs, excluded)
    (fold,) = [f for f in protocols.folds("forward", items) if f.name == "v5.1"]
    fitted = cal.fit(fold.train, RunBatch, _profile, _formats).parameters
    residuals = cal.predict(fitted, fold.test, RunBatch, _profile, lambda _: "v5.1")
    rows = [protocols.HeldOut(i, "v5.1", r) for i, r in zip(fold.test, residuals, strict=True)]
    assert len(rows) == 74
    mape = sum(abs(r.error_pct) for r in rows) / len(rows)
    big = [r for r in rows if "405b" in r.item.run.scenario["benchmark"]]
    assert mape <= 9.9, mape
    assert sum(abs(r.error_pct) for r in big) / len(big) <= 5.9
