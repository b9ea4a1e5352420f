"""Paths a file names resolve against that file (issue 30 class 1): the same scenario or sweep answers the same from
any working folder, and a calibration of the same name in the working folder is never picked up instead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import perfmodel
from perfmodel.physics.calibration import BUNDLED
from perfmodel.planning.sweep import load_points, predict_point

SCENARIO = 'model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\ncalibration = "cal.json"\n'


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """A project folder (sub/) with its scenario and its own calibration (slower GEMMs), and a working folder
    holding the bundled calibration under the same name."""
    project = tmp_path / "sub"
    project.mkdir()
    fitted = json.loads(BUNDLED.read_text())
    fitted["parameters"]["gemm_sustained"] *= 0.8
    (project / "cal.json").write_text(json.dumps(fitted))
    (tmp_path / "cal.json").write_text(BUNDLED.read_text())
    (project / "scenario.toml").write_text(SCENARIO)
    return tmp_path, project


def _step_s(scenario: str, **options: str) -> float:
    return float(perfmodel.predict(scenario, precision="bf16", **options).to_record()["step_time_s"])


def test_a_scenario_calibration_is_the_one_beside_it(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    work, project = folders
    own = _step_s(str(project / "scenario.toml"), calibration=str(project / "cal.json"))
    assert own != _step_s(str(project / "scenario.toml"), calibration=str(work / "cal.json"))  # the two differ
    monkeypatch.chdir(work)
    assert _step_s("sub/scenario.toml") == own
    monkeypatch.chdir(project)
    assert _step_s("scenario.toml") == own


def test_a_calibration_flag_stays_relative_to_the_working_folder(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    work, _ = folders
    monkeypatch.chdir(work)
    assert _step_s("sub/scenario.toml", calibration="cal.json") == _step_s(
        "sub/scenario.toml", calibration=str(work / "cal.json")
    )


def test_a_sweep_set_calibration_is_the_one_beside_the_sweep(
    folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    work, project = folders
    (project / "sweep.toml").write_text(
        '[sweep]\nprecisions = ["bf16"]\n[sweep.set]\nmodel = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\n'
        'calibration = "cal.json"\n'
    )
    (project / "base.toml").write_text(SCENARIO)
    (project / "based.toml").write_text('[sweep]\nbase = "base.toml"\nprecisions = ["bf16"]\n')
    own = _step_s(str(project / "scenario.toml"), calibration=str(project / "cal.json"))
    monkeypatch.chdir(work)
    for sweep in ("sub/sweep.toml", "sub/based.toml"):
        (point,) = load_points(sweep)
        assert float(predict_point(point).to_record()["step_time_s"]) == own
