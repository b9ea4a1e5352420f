"""validate's counted exclusions say why a row is out: a MoE row's reason ('Kimi-K2: trained with the Muon
optimizer; ...') was counted under its model name alone."""

from __future__ import annotations

from conftest import run_cli

from perfmodel.outputs.report import reason_kind


def test_a_reason_keeps_its_first_clause_and_a_long_one_its_head() -> None:
    assert reason_kind("Kimi-K2: trained with the Muon optimizer; perfmodel models Adam's") == (
        "Kimi-K2: trained with the Muon optimizer"
    )
    long = "DeepSpeed implementation: " + "x" * 120
    assert reason_kind(long) == "DeepSpeed implementation"
    assert reason_kind("accelerator 'L40S' is not in hardware_specs") == "accelerator 'L40S' is not in hardware_specs"


def test_validate_counts_moe_rows_by_why_they_are_out() -> None:
    """measured_runs.csv: the four Kimi-K2 Megatron-Bridge rows ran the Muon optimizer."""
    out = run_cli("validate").out
    counted = {line.strip().partition("  ")[2].strip(): line.split()[0] for line in out.splitlines()
               if line.startswith("  ") and line.split()[0].isdigit()}  # fmt: skip
    assert counted["Kimi-K2: trained with the Muon optimizer"] == "4"
    assert "Kimi-K2" not in counted
