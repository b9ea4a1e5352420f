"""`perfmodel plan` when a candidate runs at no GPU count tried: the table no longer crashes (StopIteration, when the
first candidate had no run), and when no candidate runs at all the plan is a one-line error, exit 2."""

from __future__ import annotations

from conftest import run_cli

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
