"""MLPerf benchmarks: reference convergence points through mlperf-logging, evaluation cadence, the score."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.mlperf import Evaluation, get_benchmark, numpy_mean, score


def test_rcp_mean_at_a_published_batch_size() -> None:
    # mlperf_logging rcp_checker/training_5.0.0/rcps_llama31_405b.json, llama31_405b_ref_1152: six runs, all 322,560.
    assert get_benchmark("mlperf-llama31-405b@v5.0").samples_to_converge(1152) == 322560


def test_below_the_smallest_rcp_the_checker_uses_the_smallest() -> None:
    # The v5.0 NVIDIA GB200 submission ran GBS 896 (mlperf_training_llm.csv, Tyche 8x GB200 NVL72); the pruned RCPs
    # start at 1152, so the checker holds it to that RCP: its normalisation factor 1.153846 = 322560 / 279552.
    bench = get_benchmark("mlperf-llama31-405b@v5.0")
    assert bench.samples_to_converge(896) == 322560
    assert pytest.approx(1.153846, rel=1e-6) == 322560 / 279552


def test_interpolation_between_rcps_grows_with_batch() -> None:
    bench = get_benchmark("mlperf-llama31-405b@v5.0")
    low, mid, high = (bench.samples_to_converge(b) for b in (1152, 1728, 2304))
    assert low < mid < high


def test_gpt3_rcps_count_tokens() -> None:
    # mlperf_benchmarks.md: GPT-3 logs train_samples in tokens; ~1.21B tokens = ~590k sequences at GBS 2048.
    samples = get_benchmark("mlperf-gpt3@v4.1").samples_to_converge(2048)
    assert 550_000 < samples < 620_000


def test_latest_round_is_the_default() -> None:
    assert get_benchmark("mlperf-llama31-405b").round == "v6.0"
    assert get_benchmark("mlperf-llama2-70b-lora@v4.0").lora_rank == 16


def test_unknown_benchmark_or_round() -> None:
    with pytest.raises(PerfmodelError, match="unknown benchmark 'mlperf-bert'; valid: mlperf-gpt3"):
        get_benchmark("mlperf-bert")
    with pytest.raises(PerfmodelError, match=r"no round 'v3\.0'; valid: v5\.0, v5\.1, v6\.0"):
        get_benchmark("mlperf-llama31-405b@v3.0")


def test_v51_evaluation_cadence() -> None:
    # mlperf_benchmarks.md: v5.1 evaluates every CEIL(18432/GBS)*GBS sequences, skipping FLOOR(0.0026*GBS+12).
    ev = get_benchmark("mlperf-llama31-405b@v5.1").evaluation
    assert ev.interval_samples(1152) == 18432
    assert ev.interval_samples(1000) == 19000
    assert ev.skipped(1152) == 14


def test_score_adds_steps_evaluations_and_overhead() -> None:
    bench = get_benchmark("mlperf-llama31-405b@v5.0")
    result = score(bench, 1152, step_time_s=50.0, eval_batch_s=15.0, overhead_s=30.0)
    evaluations = 322560 / 46080  # v5.0: every 46,080 sequences, none skipped
    assert result.evaluations == pytest.approx(evaluations)
    assert result.train_s == pytest.approx(322560 / 1152 * 50.0)
    assert result.eval_s == pytest.approx(evaluations * 5760 / 1152 * 15.0)
    assert result.time_to_train_min == pytest.approx((result.train_s + result.eval_s + 30) / 60)


def test_a_logged_run_uses_its_own_samples() -> None:
    bench = get_benchmark("mlperf-llama2-70b-lora@v5.0")
    assert score(bench, 8, 1.0, 1.0, samples=3072, evaluations=4).steps == 3072 / 8


def test_evaluation_skips_floor_of_rule() -> None:
    assert Evaluation(384, 173, whole_steps="up", skip_per_sample=0.125, skip_fixed=2).skipped(8) == 3


def test_rcp_means_equal_the_checker_of_mlperf_logging() -> None:
    """perfmodel reads the RCP files without importing the checker (scipy.stats, ~3 s); the means must be the
    checker's own, for every benchmark and round perfmodel knows, at each RCP's batch, between and below them."""
    from mlperf_logging.rcp_checker.rcp_checker import RCP_Checker

    from perfmodel.inputs.mlperf import BENCHMARKS, _pruned_rcps, _rcp_mean

    checked = 0
    for rounds in BENCHMARKS.values():
        for bench in rounds.values():
            checker = RCP_Checker("training", bench.ruleset, bench.name, False)
            pruned = sorted((r["BS"], float(r["RCP Mean"])) for r in checker.pruned_rcp_data.values())
            assert list(_pruned_rcps(bench.name, bench.ruleset)) == pruned
            batches = sorted({b for b, _ in pruned} | {b + 1 for b, _ in pruned} | {pruned[0][0] // 2})
            for gbs in batches:
                record = checker._find_rcp(gbs, "pruned_rcps")
                if record is None:
                    low = checker._find_top_min_rcp(gbs, "pruned_rcps")
                    high = checker._find_bottom_max_rcp(gbs, "pruned_rcps")
                    if low is not None and high is not None:
                        _, record = checker._create_interp_rcp(gbs, low, high)
                    elif high is not None:
                        record = checker._find_min_rcp("pruned_rcps")
                expected = None if record is None else float(record["RCP Mean"])
                assert _rcp_mean(bench.name, bench.ruleset, gbs) == expected, (bench.id, bench.round, gbs)
                checked += 1
    assert checked > 30


def test_a_benchmark_prediction_does_not_import_scipy() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from perfmodel.cli import main\n"
        "try: main(['predict', '--benchmark', 'mlperf-llama31-405b', '--gpu', 'h100-sxm', '--gpus', '512',"
        " '--gbs', '1152', '--format', 'json'])\n"
        "except SystemExit: pass\n"
        "print('scipy' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == "False", done.stderr


def test_gpt3_evaluates_its_documents_packed_into_sequences() -> None:
    # mlperf_benchmarks.md: 24,567 validation examples are C4 documents; at C4.en's 156 B tokens per 365 M documents
    # (Dodge et al. 2021, Table 1) they hold ~10.5 M tokens, ~5,100 sequences of 2048, not 24,567 sequences. The
    # logged eval_samples (11,590,004 tokens) must agree with that within 15%.
    from perfmodel.inputs.mlperf import GPT3_EVAL_TOKENS

    documents_tokens = 24_567 * 156e9 / 365e6
    assert pytest.approx(documents_tokens, rel=0.15) == GPT3_EVAL_TOKENS
    ev = get_benchmark("mlperf-gpt3@v4.1").evaluation
    assert ev.samples == 5660
    assert ev.samples * 2048 >= GPT3_EVAL_TOKENS > (ev.samples - 1) * 2048


RUN_COUNTS = st.one_of(st.integers(0, 10**7), st.floats(0, 1e7, allow_nan=False, allow_infinity=False))


@given(st.lists(RUN_COUNTS, min_size=1, max_size=300))
def test_the_mean_of_reference_runs_is_numpys_bit_for_bit(values: list[float]) -> None:
    """The RCP means without numpy: the same pairwise order of additions (blocks of 8 sums, halves past 128)."""
    assert numpy_mean(values) == float(np.mean(values))
