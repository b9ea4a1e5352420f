"""NVIDIA NeMo's context-parallel table as bundled measured runs: priced at its release, validation only (no fit sees
it), predicted length by length.

Every figure below is a row of perfmodel/data/long_sequence.csv (rows nemo-longseq-llama2-7b-h100-fp8-4k to -1024k):
NVIDIA/NeMo docs/source/performance/performance_long_sequence.md at commit a2c4cc8ee6, section 'LLAMA2-7B (FP8) -
H100', the 'With CP' TFLOPS/GPU column (NeMo 24.03.01 container), converted to tokens/s/GPU as its derivation column
says. Issue 26's targets on them: leave one length out, each row within 10% and MAPE <= 8%.
"""

import json
from pathlib import Path

import pytest
from conftest import run_cli

from perfmodel.fitting import protocols
from perfmodel.fitting.runs import LONG_SEQUENCE_SOURCE, bundled_runs, container_month, read_runs_csv
from perfmodel.fitting.validation import fitted_densely, validate
from perfmodel.physics.calibration import bundled

LENGTHS = ("4K", "8K", "16K", "32K", "64K", "128K", "256K", "512K", "1024K")
TARGET_ROW_PCT = 10.0
TARGET_MAPE_PCT = 8.0
IN_SAMPLE_MAPE_LIMIT_PCT = 4.0
"""validate's MAPE over the nine rows with the bundled calibration, which never saw them: 2.9% with attention priced
at its release's measured kernel no longer aged again by the software trend (efficiency.attention_unaged: the CP
rows' FlashAttention-2 ring steps; 4K -4.6%, 8K +0.3%, 16K +8.9%, 32K -5.1%, 64K -3.1%, 128K -0.2%, 256K +0.6%,
512K -1.4%, 1M +1.7%, refitted); 4.4% before it (32K -7.4%, 512K -4.7%), once GB200's and B300's GEMM clocks were
their measured ratios; 4.5% with a pair of ranks
on an NVSwitch baseboard priced at its measured share of the ring's rate (physics.collectives.PAIR_SHARE: TP 2, the
CP pairs; 4K -4.0%, 8K +1.0%, 16K +9.4%, 32K -7.2%, 64K -5.8%, 128K -3.4%, 256K -2.9%, 512K -5.0%, 1M -2.2%: the
stack's default settings, recompute none, ZeRO-1, MBS 1; attention outside a ring at cuDNN's rates of the oldest
Hopper release measured, NGC 24.12's (efficiency.ATTENTION_RELEASES); the CP rows' ring steps at FlashAttention-2's
measured rates, efficiency.FLASH_ATTN_2_UNTIL, their off-diagonal steps at its non-causal kernel's); the same once
refitted. Before the pair's share 4.6% (16K +10.5%, 32K -6.6%: its TP 2 collectives priced 14-38% fast against
OpenXLA's H100 table). Before the step-by-step ring (physics.ring: each hop behind its own step's attention) 6.2%
(128K -6.0%, 512K -8.7%); before NGC 24.12's kernels 7.2% (4K -4.0%, 8K +2.5%, 16K +14.8%: cuDNN 9.19's rates);
before the ring's causal split 8.0% (32K -8.6% to 512K -10.5%); before issue 26's physics: 25.0%, +15% to +47% from
32K on."""
LENGTH_PROTOCOL_LIMIT_PCT = {"mape": 4.0, "row": TARGET_ROW_PCT}
"""The length protocol as the bundled calibration records it: the same figures (the table is validation only, so
every length is predicted by a fit that saw none): 2.9%, worst row 16K +8.9% (4.4% before the ring's measured
kernel left the trend, worst 16K +8.9% and 32K -7.4%; +10.6% before the pair's share, 6.2% MAPE before the
step-by-step ring; 16K +14.7% with cuDNN 9.19's rates, +13.6% before the GEMM kernel
stage)."""


def _long_rows() -> list:
    runs, _ = bundled_runs()
    return [r for r in runs if r.source == LONG_SEQUENCE_SOURCE]


def test_the_nine_rows_are_bundled_at_their_containers_release_and_not_fitted() -> None:
    rows = _long_rows()
    assert [protocols.length_name(r.scenario["parallelism"]["seq_len"]) for r in rows] == list(LENGTHS)
    for run in rows:
        assert run.released == container_month(run.detail) == "2024-03" and run.scenario["vintage"] == "2024-03"
        assert run.metric == "tokens_per_s_per_gpu" and run.precision == "fp8" and run.accelerator == "h100-sxm"
        assert not fitted_densely(run)
        par = run.scenario["parallelism"]
        assert par["tp"] * par["pp"] * par["cp"] * (run.n_gpus // (par["tp"] * par["pp"] * par["cp"])) == run.n_gpus
        assert par["mbs"] == 1 and any(a.startswith("MBS 1 (not published)") for a in run.assumptions)
        assert not {"recompute", "zero"} & set(par)  # not published: the stack's setting


def test_validate_only_longseq_prints_the_nine_rows_at_2024_03() -> None:
    result = run_cli("validate", "--only", "longseq", "--format", "json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert len(report["rows"]) == 9 and set(report["groups"]["source"]) == {LONG_SEQUENCE_SOURCE}
    assert all(r["detail"] == "NeMo 24.03.01 framework container" for r in report["rows"])


@pytest.fixture(scope="module")
def in_sample() -> dict[str, float]:
    rows = _long_rows()
    report = validate(rows, bundled())
    return {protocols.length_name(r.prepared.context.seq_len): r.error_pct for r in report.rows}


def test_the_long_rows_hold_their_in_sample_accuracy(in_sample: dict[str, float]) -> None:
    assert sum(map(abs, in_sample.values())) / len(in_sample) <= IN_SAMPLE_MAPE_LIMIT_PCT


@pytest.mark.parametrize("length", LENGTHS)
def test_each_long_row_within_the_issue_target(in_sample: dict[str, float], length: str) -> None:
    assert abs(in_sample[length]) <= TARGET_ROW_PCT


def test_the_length_protocol_holds_its_accuracy() -> None:
    recorded = bundled().provenance["protocols"]["length"]
    assert [f["name"] for f in recorded["folds"]] == list(LENGTHS)
    assert recorded["mape_pct"] <= LENGTH_PROTOCOL_LIMIT_PCT["mape"]
    assert all(fold["mape_pct"] <= LENGTH_PROTOCOL_LIMIT_PCT["row"] for fold in recorded["folds"])  # one row each


def test_each_length_fold_predicts_the_table_rows_of_its_length_from_the_fitted_rows() -> None:
    runs, _ = bundled_runs()
    chosen = [r for r in runs if r.source in (LONG_SEQUENCE_SOURCE, "llm-foundry")]
    fitted = protocols.fitted_items(chosen)
    assert all(i.run.source == "llm-foundry" for i in fitted)  # the table is validation only
    folds = protocols.folds("length", protocols.with_tested("length", fitted, chosen, []))
    assert [f.name for f in folds] == list(LENGTHS)  # by length, not by name
    for fold in folds:
        (held,) = fold.test
        assert held.run.source == LONG_SEQUENCE_SOURCE and protocols.length_name(held.context.seq_len) == fold.name
        assert fold.train == fitted  # one fit for every fold: no long row in it


def test_validate_protocol_length_on_h100_fp8() -> None:
    # The JSON contract, not the accuracy (the full protocol is held by the calibration's record above): the H100
    # FP8 rows fit once, the table's nine lengths are predicted from it.
    result = run_cli("validate", "--protocol", "length", "--only", "h100-sxm/fp8", "--format", "json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["protocol"] == "length" and [f["name"] for f in report["folds"]] == list(LENGTHS)
    assert [r["fold"] for r in report["rows"]] == list(LENGTHS)
    assert len({f["train_rows"] for f in report["folds"]}) == 1 and all(f["test_rows"] == 1 for f in report["folds"])


RUN_AT = (
    "id,model,gpu,n_gpus,precision,seq_len,gbs,mbs,tp,pp,cp,vp,zero,recompute,metric,measured,stack,vintage\n"
    "then,llama3.1-70b,h100-sxm,64,fp8,8192,128,1,4,8,1,5,1,none,tokens_per_s_per_gpu,1602,megatron,{}\n"
)


def test_a_users_throughput_row_is_priced_at_its_release(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    predicted = {}
    for vintage in ("2024-03", ""):
        path.write_text(RUN_AT.format(vintage))
        (run,) = read_runs_csv(path)
        assert run.released == (vintage or None) and run.scenario.get("vintage") == (vintage or None)
        (row,) = validate([run], bundled()).rows
        predicted[vintage] = row.predicted
    assert predicted["2024-03"] < predicted[""]  # the software trend: an older release is slower


def test_a_bad_release_on_a_throughput_row_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(RUN_AT.format("March"))
    result = run_cli("validate", "--data", str(path))
    assert result.code == 2 and result.out == "" and len(result.err.strip().splitlines()) == 1
    assert f"{path}, row 2: field 'vintage'" in result.err
