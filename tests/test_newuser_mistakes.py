"""Mistakes a first-time planner made following the README (each test failed on the behaviour it describes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CliResult, run_cli


def _one_line_error(result: CliResult, *words: str) -> str:
    assert result.code == 2, result.out + result.err
    err = result.err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    return err


@pytest.mark.parametrize(
    ("command", "typed", "meant"),
    [
        ("predict", "defualt", "'default'"),
        ("predict", "mlperf-405b-h100", "'mlperf-405b-h100-512'"),
        ("sweep", "generation", "'generations'"),
    ],
)
def test_a_mistyped_bundled_name_says_the_one_meant(command: str, typed: str, meant: str) -> None:
    """`predict mlperf-405b-h100` listed the 15 bundled scenarios but not the one meant, where every other id
    (models, GPUs, keys) says "did you mean"."""
    _one_line_error(run_cli(command, typed), f"{typed}: no such", f"(did you mean {meant}?)")


@pytest.mark.parametrize(
    ("command", "path", "name"),
    [
        ("predict", "scenarios/mlperf-405b-h100-512.toml", "mlperf-405b-h100-512"),
        ("sweep", "sweeps/generations.toml", "generations"),
    ],
)
def test_a_readme_path_run_from_another_folder_names_the_bundled_file(
    command: str, path: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README's `perfmodel predict scenarios/mlperf-405b-h100-512.toml`, run outside the checkout (an installed
    wheel), said only 'no such scenario file': the bundled file runs by name from any folder."""
    monkeypatch.chdir(tmp_path)
    _one_line_error(run_cli(command, path), f"{path}: no such", f"run by name from any folder: '{name}'")


def test_a_mistyped_file_in_a_scenarios_folder_says_the_one_meant(tmp_path: Path) -> None:
    """A missing `.../scenarios/mlperf-405b-gb300-512.toml` (the bundled one ends -nvfp4) names it; a missing file of
    the user's own folder is not matched to a bundled name."""
    (tmp_path / "scenarios").mkdir()
    typed = str(tmp_path / "scenarios" / "mlperf-405b-gb300-512.toml")
    _one_line_error(run_cli("predict", typed), "(did you mean 'mlperf-405b-gb300-512-nvfp4'?)")
    err = _one_line_error(run_cli("predict", str(tmp_path / "m.toml")), "m.toml: no such scenario file")
    assert "did you mean" not in err and "bundled" not in err
