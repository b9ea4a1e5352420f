"""torchtitan's published async-TP and FP8 benchmark (perfmodel/data/torchtitan_runs.csv, from pytorch/torchtitan
benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md): the rows are bundled on the torchtitan stack at their knobs,
and the model's ratios between variants of one layout follow the measured ones (issue 28: within 5 points)."""

from __future__ import annotations

import pytest

from perfmodel.fitting.runs import TORCHTITAN, bundled_runs
from perfmodel.fitting.validation import validate
from perfmodel.physics.calibration import bundled

RATIO_POINTS = 5.0
"""Issue 28's target: a ratio of two variants within 5 percentage points of the measured ratio."""


@pytest.fixture(scope="module")
def rows() -> dict[int, tuple[float, float]]:
    """(measured, predicted) tokens/s per GPU by CSV line."""
    runs = [r for r in bundled_runs()[0] if r.id.startswith(TORCHTITAN)]
    report = validate(runs, bundled())
    return {int(r.prepared.run.id.split(":")[1]): (r.prepared.run.measured, r.predicted) for r in report.rows}


def _ratio_miss_points(rows: dict[int, tuple[float, float]], first: int, second: int) -> float:
    """How far (points) the predicted ratio of two lines' throughputs is from the measured one."""
    measured = rows[first][0] / rows[second][0]
    return abs(rows[first][1] / rows[second][1] - measured) * 100


def test_the_twelve_rows_run_on_grand_teton_at_their_knobs() -> None:
    runs = {int(r.id.split(":")[1]): r for r in bundled_runs()[0] if r.id.startswith(TORCHTITAN)}
    assert sorted(runs) == list(range(2, 14))
    assert {r.scenario["gpu"] for r in runs.values()} == {"h100-grand-teton"}
    # Line 2: '70B ... BF16 ... vanilla TP; torch.compile'; line 7: '70B ... FP8 rowwise ... async TP'.
    assert (runs[2].scenario["async_tp"], runs[2].scenario["compile"]) == (False, True)
    assert (runs[7].scenario["async_tp"], runs[7].scenario["fp8_recipe"]) == (True, "rowwise")
    assert runs[2].scenario["parallelism"]["zero"] == 3 and runs[8].scenario["parallelism"]["recompute"] == "selective"


MAPE_TARGET_PCT = 8.0
"""Issue 28's target for the twelve rows, left one variant out; they are validation only, so each is predicted by a
fit that saw none of them (stricter)."""


def test_the_twelve_rows_meet_issue_28s_mape(rows: dict[int, tuple[float, float]]) -> None:
    """torchtitan_runs.csv lines 2-13 (pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md):
    the mean absolute error of the predicted tokens/s per GPU."""
    errors = [abs(predicted / measured - 1) * 100 for measured, predicted in rows.values()]
    assert sum(errors) / len(errors) <= MAPE_TARGET_PCT


# (vanilla line, async line) of each variant: 70B BF16, FP8 tensorwise and rowwise, 8B the same.
VANILLA_ASYNC = [(2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 13)]


@pytest.mark.parametrize(("vanilla", "overlapped"), VANILLA_ASYNC)
def test_vanilla_over_async_tp_follows_the_measured_ratio(
    rows: dict[int, tuple[float, float]], vanilla: int, overlapped: int
) -> None:
    """torchtitan_runs.csv lines 2-13: async TP measured 3-16% faster than vanilla TP on the same layout (rowwise FP8
    4-6%: its BF16 gathers feed casts, which the pass cannot fuse, step.gathers_fuse)."""
    assert _ratio_miss_points(rows, vanilla, overlapped) <= RATIO_POINTS


# (tensorwise, rowwise) at 70B and 8B, vanilla and async TP.
ROWWISE_MISSED = pytest.mark.xfail(
    strict=True,
    reason="issue 28 missed for rowwise FP8: torchao's re-quantisation, rescale passes, BF16 TP gathers and their "
    "unfusable async-TP all-gathers priced, the predicted tensorwise/rowwise ratios are 9-23 points under the measured "
    "1.35-1.51; the rowwise GEMM kernel's own speed on H100 is not measured (kernels/ has no H100 rowwise GEMM), and "
    "a factor fitted to the 4 rowwise rows would break issue 27's ten-row rule",
)
ROWWISE_RATIOS = [
    pytest.param(4, 6, marks=ROWWISE_MISSED),
    pytest.param(5, 7, marks=ROWWISE_MISSED),
    pytest.param(10, 12, marks=ROWWISE_MISSED),
    pytest.param(11, 13),  # 3.6 points since GB200's and B300's GEMM clocks are their MAMF ratios (5.003 before)
]


@pytest.mark.parametrize(("first", "second"), ROWWISE_RATIOS)
def test_tensorwise_over_rowwise_follows_the_measured_ratio(
    rows: dict[int, tuple[float, float]], first: int, second: int
) -> None:
    """torchtitan_runs.csv lines 4-7 and 10-13: rowwise FP8 measured 1.35-1.51x slower than tensorwise."""
    assert _ratio_miss_points(rows, first, second) <= RATIO_POINTS
