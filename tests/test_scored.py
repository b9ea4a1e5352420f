"""The work an MLPerf score stands for: the samples and evaluations of the runs its olympic mean keeps."""

import math

import pytest

from perfmodel.fitting.runs import bundled_runs
from perfmodel.fitting.scored import Run, logged_work, olympic


def test_the_olympic_mean_drops_the_fastest_and_the_slowest_run() -> None:
    runs = [Run(10.0, 100, 5), Run(9.0, 90, 4), Run(12.0, 120, 6), Run(11.0, 110, 5)]
    assert olympic(runs) == (105.0, 5.0)
    assert olympic([Run(9.0, 90, 4), Run(10.0, 100, 5), Run(math.inf, 0, 0)]) == (100.0, 5.0)  # median of three
    assert olympic([Run(9.0, 90, 4), Run(math.inf, 0, 0), Run(math.inf, 0, 0)]) is None  # two runs did not converge
    assert olympic([Run(9.0, 90, 4)]) == (90.0, 4.0)


def test_a_score_is_priced_at_its_kept_runs_not_at_the_mean_of_all() -> None:
    """mlperf_training_llm_runs.csv, v5.1 NVIDIA theia_ngpu512_ngc25.09_nemo llama31_405b: result_0 64.6051 min at
    331,776 samples (4 evaluations), result_1 60.8414 min at 313,344 (3), result_2 64.6273 min at 331,776 (4). The
    score, 64.605 min (mlperf_training_llm.csv, RCP factor 1.0), is the median run; the CSV's samples_to_converge,
    325,632, is the mean of all three."""
    work = logged_work()["mlcommons/training_results_v5.1:NVIDIA/results/theia_ngpu512_ngc25.09_nemo/llama31_405b/"]
    assert work == (331776.0, 4.0)
    (gb300,) = [r for r in bundled_runs()[0] if r.id == "mlperf:v5.1/NVIDIA/theia_ngpu512_ngc25.09_nemo/llama31_405b"]
    assert (gb300.samples, gb300.evaluations) == (331776.0, 4.0)


def test_the_rcp_factor_scales_the_kept_work() -> None:
    """v5.0 NVIDIA tyche_ngpu512_ngc25.04_nemo llama31_405b: three runs at 279,552 samples and 6 evaluations; RCP
    scaling factor 1.153846 (mlperf_training_llm.csv): scored at 1.153846 x that work."""
    (gb200,) = [r for r in bundled_runs()[0] if r.id == "mlperf:v5.0/NVIDIA/tyche_ngpu512_ngc25.04_nemo/llama31_405b"]
    assert gb200.samples == pytest.approx(279552 * 1.153846)
    assert gb200.evaluations == pytest.approx(6 * 1.153846)
