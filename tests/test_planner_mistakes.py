"""Issue 29 item 5: defaults marked, tokens in every header, and the mistakes a planner made refused or fixed
(each test failed on the behaviour the issue reports)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import inputs_of, one_line_error, run_cli

UNITS = ("days", "hours", "min")


def test_tokens_below_one_global_batch_step_are_refused() -> None:
    """`--tokens 15` printed $0.00 with exit 0: fewer tokens than one step of 1,024 x 8,192 trains nothing."""
    err = one_line_error(run_cli("predict", "--tokens", "15"), "--tokens", "8.39M")
    assert "one global batch step" in err
    assert run_cli("predict", "--tokens", "8388608").code == 0  # exactly one step is a run


def test_plan_refuses_a_gpu_count_it_would_ignore() -> None:
    """`plan --gpus 1024` was accepted and ignored: plan finds the count itself."""
    one_line_error(run_cli("plan", "--gpus", "1024", "--tokens", "15T", "--deadline", "90d"), "--gpus", "--max-gpus")


def test_a_gpu_count_of_partial_nodes_is_refused_with_the_nearest_whole_ones() -> None:
    """`--gpus 1020` on 8-GPU DGX H100 nodes priced 127.5 nodes without a word."""
    one_line_error(run_cli("predict", "--gpus", "1020"), "--gpus", "1,016", "1,024", "8 GPUs")
    one_line_error(run_cli("compare", "--gpus", "1020,1024"), "1,016")
    part_of_a_node = run_cli("predict", "--model", "llama3.1-8b", "--gpus", "4", "--tokens", "1e9")
    assert part_of_a_node.code == 0  # part of one node is a job of its own


def _column(table: str, header: str) -> list[str]:
    """The cells of one column of a tabulate table (found by the header's span over the dashes)."""
    lines = table.splitlines()
    rule = next(i for i, line in enumerate(lines) if set(line) <= {"-", " "} and "--" in line)
    spans = [m.span() for m in re.finditer(r"-+", lines[rule])]
    start = lines[rule - 1].index(header)
    span = next(s for s in spans if s[0] <= start < s[1] or start <= s[0] < start + len(header))
    rows = []
    for line in lines[rule + 1 :]:
        if not line.strip():
            break
        rows.append(line[span[0] : span[1]].strip())
    return rows


def test_every_time_column_of_a_comparison_has_one_unit() -> None:
    """'11.5 hours' stood above '40.9 min' in one column (and '13.0 hours' above '64.1 min')."""
    out = run_cli("compare", "--gpus", "64,1024", "--tokens", "5e9", "--relayout").out
    for header in ("time to train", "time with losses"):
        cells = _column(out, header)
        units = {cell.split()[-1] for cell in cells}
        assert len(units) == 1 and units <= set(UNITS), (header, cells)


def test_perf_per_dollar_brackets_run_low_to_high_around_the_value() -> None:
    """'1.27x (1.43-1.42)': the bracket excluded the value and ran high to low."""
    result = run_cli("compare", "--gpu", "h100-sxm:fp8", "--gpu", "gb200:fp8", "--gpu", "b200:fp8", "--format", "json")
    rows = json.loads(result.out)
    table = run_cli("compare", "--gpu", "h100-sxm:fp8", "--gpu", "gb200:fp8", "--gpu", "b200:fp8").out
    cells = [c for c in re.findall(r"(\d+\.\d+)x \((\d+\.\d+)-(\d+\.\d+)\)", table)]
    assert len(cells) == 2, table
    for value, low, high in cells:
        assert float(low) <= float(value) <= float(high), (value, low, high)
    for row in rows[1:]:
        assert row["perf_per_usd_vs_first_min"] <= row["perf_per_usd_vs_first"] <= row["perf_per_usd_vs_first_max"]


def test_tokens_taken_from_the_default_scenario_are_marked_as_defaults() -> None:
    """15T tokens from the default scenario (Llama 3 70B's budget) were used for a 405B question unmarked."""
    assert "15.0T tokens (default)" in run_cli("predict", "--model", "llama3.1-405b").out
    assert "15.0T tokens (default)" in run_cli("predict").out
    given = run_cli("predict", "--model", "llama3.1-405b", "--tokens", "15T").out
    assert inputs_of(given)["work"] == "15.0T tokens" and "tokens (default)" not in given
    assert json.loads(run_cli("predict", "--model", "llama3.1-405b", "--format", "json").out)["tokens_from_default"]
    assert not json.loads(run_cli("predict", "--tokens", "15T", "--format", "json").out)["tokens_from_default"]


def test_tokens_are_in_every_header() -> None:
    """The search and compare headers omitted the token count."""
    assert "15.0T tokens (default)" in run_cli("search").out.splitlines()[0]
    assert "15.0T tokens (default)" in run_cli("compare", "--gpu", "h100-sxm", "--gpu", "h200-sxm").out.splitlines()[0]
    assert "2.00T tokens" in run_cli("plan", "--tokens", "2T", "--deadline", "90d").out.splitlines()[0]


def test_a_sweep_of_partial_nodes_is_refused(tmp_path: Path) -> None:
    sweep = tmp_path / "partial.toml"
    sweep.write_text('[sweep]\nmodels = ["llama3.1-8b"]\ngpus = ["h100-sxm"]\nn_gpus = [64, 1020]\n')
    err = one_line_error(run_cli("sweep", str(sweep)), "sweep.n_gpus", "1,016")
    assert err.startswith(f"error: {sweep}: ")


def test_a_missing_file_in_the_bundled_scenarios_folder_is_one_line_with_flags_too() -> None:
    """`predict scenarios/mlperf-405b-gb300-512.toml --gbs 512` (a name mistyped: the bundled one ends -nvfp4) raised
    a FileNotFoundError traceback: the bundled folder's cached read took the file's modification time before reading
    it; without a flag the same path said 'no such scenario file'."""
    from perfmodel.inputs.resources import bundled_path

    missing = str(bundled_path("scenarios", "mlperf-405b-gb300-512"))
    for flags in ((), ("--gbs", "512")):
        one_line_error(run_cli("predict", missing, *flags), "mlperf-405b-gb300-512.toml: no such scenario file")


def test_a_quote_that_looks_like_a_nodes_price_is_warned_of() -> None:
    """`--usd-per-gpu-hour 49.24`, CoreWeave's DGX H100 node an hour (the source of h100-sxm's $6.16 list), priced the
    default run at $130M without a word, 8x the $16M of the list price. A quote within the public range is not."""
    slipped = run_cli("predict", "--usd-per-gpu-hour", "49.24")
    assert slipped.code == 0, slipped.err
    assert "Warning: the quoted $49.24/GPU-h is 7.2x the highest public price of h100-sxm ($6.88)" in slipped.out
    assert "a node of 8 GPUs at $49.24 an hour is $6.16 per GPU-hour" in slipped.out
    assert "Warning: the quoted" not in run_cli("predict", "--usd-per-gpu-hour", "6.5").out


def test_a_confidence_in_percent_is_read_as_the_probability() -> None:
    """`plan --confidence 90%` said "'90%' is not a valid float."; a planner writes P90 as 90% as often as 0.9."""
    percent = run_cli("plan", "--deadline", "60d", "--confidence", "90%", "--format", "json")
    assert percent.code == 0, percent.err
    assert json.loads(percent.out)["goal"]["confidence"] == 0.9
