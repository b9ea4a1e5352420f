"""`perfmodel plan` when a candidate runs at no GPU count tried: the table no longer crashes (StopIteration, when the
first candidate had no run), and when no candidate runs at all the plan is a one-line error, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import one_line_error, run_cli, run_json

from perfmodel.inputs.scenario import load_scenario

WORK = ("--tokens", "1T", "--deadline", "30d")


def test_an_ep_that_divides_no_expert_count_is_a_one_line_error() -> None:
    """DeepSeek-V3's 256 experts: EP 3 breaks the rule at every GPU count, so plan refuses it before any count is
    tried, naming the flag (it said 'no GPU count tried runs on any candidate' after trying them)."""
    result = run_cli("plan", "--model", "deepseek-v3", "--gpu", "gb300", *WORK, "--ep", "3", "--max-gpus", "256")
    assert result.code == 2 and result.out == ""
    assert result.err.count("\n") == 1 and "Traceback" not in result.err
    assert result.err.startswith("error: --ep: EP 3 must divide the 256 experts of deepseek-v3")


def test_a_first_candidate_without_any_run_is_listed_with_its_reason() -> None:
    """Llama 3.1 405B fits no count of H100 up to 64 (its weights and optimizer state alone need more); GB300 runs."""
    args = ("plan", "--model", "llama3.1-405b", "--gpu", "h100-sxm", "--gpu", "gb300", *WORK, "--max-gpus", "64")
    result = run_cli(*args)
    assert result.code == 0, result.err
    assert result.out.startswith("Llama 3.1 405B, 1.00T tokens, within 30.0 days")
    assert "dgx-h100:FP8: no layout fits in memory" in result.out


def test_a_given_layout_no_count_runs_is_said_per_candidate() -> None:
    """TP 8 x PP 3 = 24 divides no count of whole 64-GPU GB200 racks up to 120: the candidate said the search's
    'no valid layout of llama3.1-70b on 64 GPUs' (a count the user never gave), after searching; now it names the
    counts plan tries and the rule, beside the H100 candidate planned at 48."""
    args = ("--model", "llama3.1-70b", "--gpu", "h100-sxm", "--gpu", "gb200", "--tokens", "1T", "--deadline", "300d")
    h100, gb200 = run_json("plan", *args, "--tp", "8", "--pp", "3", "--max-gpus", "120")["candidates"]
    assert h100["feasible"] and h100["n_gpus"] == 48
    assert not gb200["feasible"] and gb200["reason"] == (
        "the given layout runs at none of the GPU counts plan tries (64): e.g. TP 8 x PP 3 x CP 1 = 24 does not divide "
        "the 64 GPUs; give a TP x PP that divides one of these counts, or leave TP and PP out to let plan search them"
    )


def test_the_counts_a_given_layout_runs_at_none_of_are_the_ones_tried() -> None:
    """The reason listed the counts by hand, 'up to 100' under `--max-gpus 100` where 96 is the last tried: it lists
    the grid itself (the first few and the last), and says what to change (the given PP here)."""
    args = ("--model", "llama3.1-70b", "--gpu", "h100-sxm", "--tokens", "1T", "--deadline", "300d", "--pp", "9")
    err = one_line_error(run_cli("plan", *args, "--max-gpus", "100"))
    assert err.endswith(
        "the given layout runs at none of the GPU counts plan tries (8, 16, 24, 32, 40, 48, ..., 96): e.g. TP 1 x PP 9 "
        "x CP 1 = 9 does not divide the 32 GPUs; give a PP that divides one of these counts, or leave PP out to let "
        "plan search it)"
    ), err


def test_a_count_the_given_layout_cannot_run_is_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    """A count the given layout does not divide runs no layout whatever the search picks: it is said with the rule
    (the neighbour's '320 GPUs run no layout: ... all 49,896 candidates break a layout rule' read a search's
    count), without a search."""
    from perfmodel.planning import plan as planning

    def searched(*_: object) -> None:
        raise AssertionError("searched")

    base = load_scenario(None, {"model": "llama3.1-70b", "gpu": "h100-sxm", "parallelism": {"tp": 8, "pp": 3}})
    monkeypatch.setattr(planning, "_searched", searched)
    tries = planning._Tries(base, [32, 48])
    assert tries.at(0) is None and tries.why == {32: "TP 8 x PP 3 x CP 1 = 24 does not divide the 32 GPUs"}
    with pytest.raises(AssertionError, match="searched"):  # 48: the layout may run, so the search is asked
        tries.at(1)


def test_a_count_the_given_layout_cannot_run_is_said_with_thousands_separators() -> None:
    """'5,120 GPUs run no layout: ... does not divide the 5120 GPUs' wrote one count two ways: the rule's counts
    carry the separators the rest of the output does."""
    from perfmodel.planning import plan as planning

    base = load_scenario(None, {"model": "llama3.1-70b", "gpu": "h100-sxm", "parallelism": {"tp": 8, "pp": 3}})
    tries = planning._Tries(base, [5120])
    assert tries.at(0) is None and tries.why == {5120: "TP 8 x PP 3 x CP 1 = 24 does not divide the 5,120 GPUs"}


def test_a_fleet_plan_refuses_a_given_layout_no_count_runs_as_plain_plan_does(tmp_path: Path) -> None:
    """`plan --fleet --pp 9` said 'No system type meets the goal' and exited 0 where plain plan refuses the layout
    in one line (exit 2): a fleet plan now gives plain plan's reason; a layout that runs still plans."""
    fleet = tmp_path / "fleet.toml"
    fleet.write_text('[[offer]]\nname = "neocloud"\nsystem = "dgx-h100"\nusd_per_gpu_hour = 2.5\nmax_gpus = 1024\n')
    args = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--tokens", "100B", "--deadline", "3d", "--max-gpus", "100")
    plain = one_line_error(run_cli("plan", *args, "--pp", "9"), "the given layout runs at none of the GPU counts")
    assert one_line_error(run_cli("plan", *args, "--pp", "9", "--fleet", str(fleet))) == plain
    assert run_cli("plan", *args, "--pp", "2", "--fleet", str(fleet), "-q").code == 0
