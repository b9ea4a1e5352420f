"""`perfmodel compare`: ratios to the first row, scaling efficiency, targets and re-layout."""

import csv
import io
import json
import re
from pathlib import Path

import pytest
from conftest import run_cli

from perfmodel.inputs.hardware import get_accelerator

WORKLOAD = ["--model", "llama3.1-8b", "--gbs", "128", "--tokens", "1T"]


def _compare(*args: str) -> list[dict]:
    result = run_cli("compare", *WORKLOAD, *args, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_ratios_to_the_first_system() -> None:
    h100, b200 = _compare("--gpu", "h100-sxm:fp8", "--gpu", "b200:fp8", "--gpus", "16")
    assert (h100["accelerator"], b200["accelerator"], b200["precision"]) == ("h100-sxm", "b200", "fp8")
    assert h100["speedup_vs_first"] == 1 and h100["perf_per_usd_vs_first"] == 1
    assert b200["speedup_vs_first"] == pytest.approx(b200["tokens_per_s"] / h100["tokens_per_s"])
    h100_gpu, b200_gpu = get_accelerator("h100-sxm"), get_accelerator("b200")
    for suffix, end in (("", ""), ("_at_min_price", "_low"), ("_at_max_price", "_high")):
        price = f"usd_per_gpu_hour{end}"  # the hardware file's range: its input keys end _low/_high
        per_usd = (
            b200["tokens_per_s"] / getattr(b200_gpu, price).value,
            h100["tokens_per_s"] / getattr(h100_gpu, price).value,
        )
        assert b200[f"perf_per_usd_vs_first{suffix}"] == pytest.approx(per_usd[0] / per_usd[1])
    assert b200["energy_per_token_vs_first"] == pytest.approx(b200["energy_kwh"] / h100["energy_kwh"])
    assert h100["scaling_efficiency"] is None


def test_a_first_target_without_fp8_runs_in_its_own_precision() -> None:
    """The first target stands in for the base scenario, whose default precision (FP8) an A100 lacks: its own
    `:bf16` is checked, not the default it replaces (request.check_precision; a check on the base refused it)."""
    a100, h100 = _compare("--gpu", "a100-sxm-80gb:bf16", "--gpu", "h100-sxm", "--gpus", "16")
    assert (a100["precision"], h100["precision"]) == ("bf16", "fp8")


def test_scaling_sweep() -> None:
    rows = _compare("--gpu", "h100-sxm:bf16", "--gpus", "8,16,32")
    assert [r["n_gpus"] for r in rows] == [8, 16, 32]
    assert rows[0]["scaling_efficiency"] == 1
    for r in rows:
        assert r["scaling_efficiency"] == pytest.approx(r["tokens_per_s_per_gpu"] / rows[0]["tokens_per_s_per_gpu"])
        assert r["time_to_train_s"] == pytest.approx(rows[0]["time_to_train_s"] / r["speedup_vs_first"])


GIVEN = """model = "llama3.1-8b"
gpu = "h100-sxm"
n_gpus = 8
precision = "fp8"
[parallelism]
tp = 4
pp = 2
cp = 1
vp = 1
mbs = 1
gbs = 128
recompute = "full"
zero = 1
"""


def test_relayout_searches_each_system(tmp_path: Path) -> None:
    scenario = tmp_path / "given.toml"
    scenario.write_text(GIVEN)
    fixed = _compare(str(scenario), "--gpu", "h100-sxm", "--gpu", "b200")
    assert fixed[0]["parallelism"] == fixed[1]["parallelism"]
    assert fixed[0]["layouts_searched"] == 1
    relaid = _compare(str(scenario), "--gpu", "h100-sxm", "--gpu", "b200", "--relayout")
    assert all(r["layouts_searched"] > 1 for r in relaid)
    assert relaid[0]["parallelism"]["gbs"] == fixed[0]["parallelism"]["gbs"]
    assert relaid[0]["step_time_s"] <= fixed[0]["step_time_s"]


def test_table_and_bad_targets() -> None:
    table = run_cli("compare", *WORKLOAD, "--gpu", "h100-sxm", "--gpu", "dgx-b200:fp8", "--gpus", "8")
    assert table.code == 0 and "dgx-b200" in table.out and "speedup" in table.out
    bad = run_cli("compare", "--gpu", "h100-sxm", "--gpu", "h900")
    assert bad.code == 2 and "unknown accelerator or system 'h900'; valid: a100-40gb, a100-sxm-80gb" in bad.err
    bad = run_cli("compare", "--gpu", "h100-sxm:fp6")
    assert bad.code == 2 and "unknown precision 'fp6'" in bad.err


def test_each_row_may_have_its_own_gpu_count() -> None:
    """`--gpu ID:PRECISION@N` (the ARCHITECTURE contract): GB300 in NVFP4 on 1,024 against H100 in FP8 on 2,048."""
    result = run_cli(
        "compare", "--model", "llama3.1-70b", "--gpu", "b200:fp8@128", "--gpu", "h100-sxm:fp8@256", "--gpu", "gb200",
        "--gpus", "64", "--gbs", "512", "--tokens", "1T", "--format", "json",
    )  # fmt: skip
    assert result.code == 0, result.err
    rows = json.loads(result.out)
    assert [(r["accelerator"], r["n_gpus"]) for r in rows] == [("b200", 128), ("h100-sxm", 256), ("gb200", 64)]
    assert all(r["scaling_efficiency"] is None for r in rows)  # no system at two counts
    table = run_cli("compare", "--model", "llama3.1-70b", "--gpu", "b200@128", "--gpu", "h100-sxm@256", "--gbs", "512")
    assert table.code == 0 and "256" in table.out


@pytest.mark.parametrize("spec", ["h100-sxm@", "h100-sxm@x", "h100-sxm@0", "h100-sxm:fp8@2000000"])
def test_a_bad_row_count_is_one_line(spec: str) -> None:
    result = run_cli("compare", "--gpu", spec)
    assert result.code == 2 and result.err.count("\n") == 1
    assert "must be a whole number of GPUs from 1 to 1,000,000" in result.err


def test_the_goodput_column_gives_the_time_with_failures_in_the_time_to_train_unit() -> None:
    """An MLPerf run of four hours read 'goodput (days with failures)' ... '(0.2)'."""
    table = run_cli("compare", "mlperf-405b-h100-512", "--gpu", "h100-sxm").out
    header, _, row = table.splitlines()[2:5]
    assert "goodput (time with failures)" in header
    assert re.search(r"\d+\.\d% \(\d+\.\d hours\)", row), row


def test_the_time_and_cost_with_losses_stand_beside_the_failure_free_ones() -> None:
    """With the losses model on, each row shows its time and cost with every loss (the record's *_with_losses);
    perf/$ stays the failure-free runs', and says so. With --losses none the columns are not there."""
    args = ("compare", *WORKLOAD, "--gpu", "h100-sxm:fp8", "--gpu", "b200:fp8", "--gpus", "64")
    lines = run_cli(*args).out.splitlines()
    header, rows = lines[2], lines[4:6]
    assert "time with losses" in header and "cost with losses" in header
    for line, record in zip(rows, _compare("--gpu", "h100-sxm:fp8", "--gpu", "b200:fp8", "--gpus", "64"), strict=True):
        days = record["time_to_train_with_losses_s"] / 86400
        assert f"{days:,.1f} days" in line and f"${record['cost_usd_with_losses'] / 1e3:,.2f}k" in line, line
        assert record["cost_usd_with_losses"] > record["cost_usd_with_failures"] > record["cost_usd"]
    assert "perf/$ is of the failure-free runs" in "\n".join(lines)
    assert "with losses" not in run_cli(*args, "--losses", "none").out


@pytest.mark.parametrize(
    ("flags", "basis"),
    [
        (("--gpu", "h100-sxm", "--gpu", "b200"), "cost at on-demand list price"),
        (("--gpu", "h100-sxm", "--gpu", "b200", "--buy"), "cost of owning"),
        (("--gpu", "h100-sxm:$3", "--gpu", "b200:$4"), "cost at the quoted price"),
        (("--gpu", "h100-sxm", "--gpu", "b300"), "cost at each row's own price"),
    ],
)
def test_the_note_names_the_price_the_perf_per_dollar_uses(flags: tuple[str, ...], basis: str) -> None:
    """It said 'at on-demand prices' with --buy and with a given price too, and for an estimated price."""
    result = run_cli("compare", *WORKLOAD, "--gpus", "64", *flags)
    assert result.code == 0, result.err
    assert f"perf/$: tokens per dollar over the first row's, {basis}" in result.out


def test_the_layout_column_carries_zero_and_recompute() -> None:
    """A planner re-running a compare row needs its ZeRO stage and recompute mode: 8B on 64 H100 at GBS 128 is best
    at ZeRO-3, which the column left out (as plan's and whatif's did)."""
    result = run_cli("compare", *WORKLOAD, "--gpu", "h100-sxm", "--gpus", "64")
    record = _compare("--gpu", "h100-sxm", "--gpus", "64")[0]["parallelism"]
    assert result.code == 0
    expected = f"MBS{record['mbs']} GBS{record['gbs']} ZeRO-{record['zero']}"
    if record["recompute"] != "none":
        expected += f" recompute-{record['recompute']}"
    assert expected in result.out.splitlines()[4]


def test_csv_of_rows_with_and_without_a_price() -> None:
    """A priced row has cost-per-token columns an unpriced one (mi355x) lacks: the CSV writer raised a traceback."""
    result = run_cli("compare", *WORKLOAD, "--gpu", "mi355x", "--gpu", "h100-sxm", "--gpus", "64", "--format", "csv")
    assert result.code == 0, result.err
    amd, nvidia = csv.DictReader(io.StringIO(result.out))
    assert amd["usd_per_million_tokens"] == "" and float(nvidia["usd_per_million_tokens"]) > 0


def test_a_price_range_is_shown_only_when_it_differs_as_printed() -> None:
    """Two systems at the same prices have the same perf/$ at both ends, up to float rounding: no "(1.01-1.01)"."""
    from perfmodel.outputs.plan_report import _price_range

    assert _price_range(1.0124, 1.0126 + 1e-16) == ""
    assert _price_range(None, None) == ""
    assert _price_range(0.9, 1.1) == " (0.90-1.10)"


def test_the_rows_bound_counts_in_words_and_names_only_the_keyword_given() -> None:
    """ "1 systems x 17 GPU counts" read wrong; with no gpu given the error named `gpu x n_gpus` though only the
    counts were given; and the keyword at fault is carried for the server's page: the counts where one system takes
    them, the systems where several do."""
    from perfmodel.planning.compare import Target, TooLarge, check_size
    from perfmodel.planning.request import API

    with pytest.raises(TooLarge) as one:
        check_size([Target("b200", None, None)], 17, API, max_rows=16)
    assert str(one.value).startswith("gpu x n_gpus: 1 system x 17 GPU counts = 17 rows; at most 16")
    assert (one.value.field, one.value.rows) == ("n_gpus", "gpu x n_gpus: 1 system x 17 GPU counts = 17 rows")
    with pytest.raises(TooLarge) as none:
        check_size([], 65)
    assert str(none.value).startswith("--gpus: the scenario's system x 65 GPU counts = 65 rows; at most 64")
    assert none.value.field == "n_gpus"
    with pytest.raises(TooLarge) as several:
        check_size([Target("b200", None, None)] * 9, 8)
    assert several.value.field == "gpu" and str(several.value).startswith("--gpu x --gpus: 9 systems x 8 GPU counts")


def test_a_system_at_its_own_count_is_one_row_of_the_bound() -> None:
    """MAX_ROWS bounds predictions: 15 systems at their own counts and one taking 9 counts are 24 rows, not 16 x 9;
    the shared system's counts alone cross it."""
    from perfmodel.errors import PerfmodelError
    from perfmodel.planning.compare import MAX_ROWS, Target, check_size

    own, shared = [Target("h100-sxm", None, None, 8)] * 15, [Target("b200", None, None)]
    check_size(own + shared, 9)
    check_size(own + shared, MAX_ROWS - 15)
    with pytest.raises(
        PerfmodelError, match=f"15 at their own counts \\+ 1 system x {MAX_ROWS - 14} GPU counts = {MAX_ROWS + 1} rows"
    ):
        check_size(own + shared, MAX_ROWS - 14)
