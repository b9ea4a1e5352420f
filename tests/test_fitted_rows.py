"""Issue 27: fewer fitted values than the 34 of integ2 (fbed699), none informed by fewer than ten bundled rows.

A row informs an entry when its predicted time moves with the entry: the dense fit's rows (protocols.fitted_items)
for the dense entries, the MoE stage's (validation.moe_fit_rows) for the MoE ones, each entry moved by 10%.
"""

from __future__ import annotations

import pytest

from perfmodel.fitting import calibrate as cal
from perfmodel.fitting import protocols
from perfmodel.fitting.runs import MOE_SOURCE, bundled_runs
from perfmodel.fitting.validation import PreparedRun, RunBatch, _formats, _profile, moe_fit_rows, prepare_all
from perfmodel.physics.calibration import bundled

MIN_ROWS = 10
BEFORE = 34
"""Fitted entries of integ2's calibration (fbed699: perfmodel/data/calibration.json 'parameters')."""
REMOVED = {
    "attention_generation@cdna3": "one number with attention@amd on CDNA3's rows (parameters._fa2_class)",
    "memory_generation@cdna4": "CDNA3's factor (parameters.SAME_MEMORY)",
    "run_overhead_s@mlperf-gpt3": "its default (parameters.RUN_OVERHEAD_FITTED)",
    "run_overhead_s@mlperf-llama31-8b": "its default: only AMD's four MI355X rows pay it (parameters.WARM_STARTED)",
    "overlap_ep_scaleout": "overlap_dp: six fitted rows informed it once the H100 recipes that overlap nothing with "
    "their flex exchange priced it exposed; across NICs the exchange hides as DP's collectives do (moe.ep_overlap)",
    "peak_power_exponent": "no row: Ampere's GEMMs run at A100's measured MAMF share over H100's "
    "(compute.silicon_ratios), every other family's at its own kernels' (calibration.RETIRED)",
}


@pytest.fixture(scope="module")
def stages() -> dict[cal.Stage, list[PreparedRun]]:
    runs, excluded = bundled_runs()
    moe = [r for r in runs if r.source.startswith(MOE_SOURCE)]
    return {
        "dense": protocols.fitted_items(runs, excluded),
        "moe": moe_fit_rows(prepare_all(moe, bundled(), [])),
    }


def _informing(items: list[PreparedRun], stage: cal.Stage) -> dict[str, int]:
    """Per free entry of the stage, the rows whose predicted time moves when the entry moves by 10%."""
    values = dict(bundled().parameters)
    batch = RunBatch(items)
    base = batch.log_time_ratios(cal.efficiencies_of(values))
    found = {}
    for item in cal.free_entries(items, _profile, _formats, stage):
        moved = values | {item.key: values.get(item.key, item.default) * 1.1}
        ratios = batch.log_time_ratios(cal.efficiencies_of(moved))
        found[item.key] = sum(abs(float(a) - float(b)) > 1e-6 for a, b in zip(base, ratios, strict=True))
    return found


def test_every_fitted_entry_is_informed_by_ten_rows_and_there_are_fewer(
    stages: dict[cal.Stage, list[PreparedRun]],
) -> None:
    counts = {key: n for stage, items in stages.items() for key, n in _informing(items, stage).items()}
    assert {k: n for k, n in counts.items() if n < MIN_ROWS} == {}
    assert len(counts) == BEFORE - len(REMOVED) < BEFORE
    assert not set(REMOVED) & set(counts)
