"""How perfmodel reads the bundled measured rows where their own columns disagree (fitting/runs.py)."""

from __future__ import annotations

from perfmodel.fitting.runs import MeasuredRun, bundled_runs


def _run(run_id: str) -> MeasuredRun:
    return next(r for r in bundled_runs()[0] if r.id == run_id)


def _notes(run_id: str) -> list[str]:
    return [a for a in _run(run_id).assumptions if "GA=" in a]


def test_a_row_whose_ga_contradicts_its_batch_and_layout_says_so() -> None:
    """measured_runs.csv line 249 (Megatron-Bridge performance-summary-archive.md, NeMo 25.09, Llama3-70B on 64 GB200,
    the MXFP8 alternative: TP2 PP4 VP5, MBS 2, GBS 128, notes 'GA=16'): 128 / (2 x 8) is 8, not 16."""
    (note,) = _notes("measured_runs.csv:249")
    assert "GA=16" in note and "make 8" in note
    run = _run("measured_runs.csv:249")
    assert (run.scenario["parallelism"]["mbs"], run.scenario["parallelism"]["gbs"]) == (2, 128)  # as stated


def test_rows_whose_ga_agrees_carry_no_such_note() -> None:
    """Line 248, the same table row's main config (TP1 PP1 Megatron-FSDP 64, MBS 2, GBS 128, 'GA=1'), and every
    llm-foundry row (its GradAccum column kept as 'GA=' in the notes): only the three contradicting lines are
    noted."""
    assert _notes("measured_runs.csv:248") == []
    noted = sorted(r.id for r in bundled_runs()[0] if any("GA=" in a for a in r.assumptions))
    assert noted == ["measured_runs.csv:222", "measured_runs.csv:243", "measured_runs.csv:249"]
