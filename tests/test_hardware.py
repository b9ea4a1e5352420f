"""The hardware database: every id loads, every figure is sourced (the figures themselves: tests/test_datasheet.py)."""

import tomllib

import pytest

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.hardware import accelerators, resolve, systems
from perfmodel.inputs.resources import data_dir

ACCELERATORS = ["a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200", "gb200", "b300", "gb300", "mi300x", "mi325x", "mi355x"]
SYSTEMS = ["dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "gb200-nvl72", "dgx-b300", "gb300-nvl72", "mi300x-8"]


def test_every_architecture_id_is_present() -> None:
    assert set(ACCELERATORS) <= set(accelerators())
    assert set(SYSTEMS) <= set(systems())


def test_every_figure_carries_a_source() -> None:
    for path in (data_dir("hardware_specs")).rglob("*.toml"):
        raw = tomllib.loads(path.read_text())
        tables = [raw] + [v for v in raw.values() if isinstance(v, dict) and "value" not in v]
        for table in tables:
            for key, value in table.items():
                if isinstance(value, int | float) and not isinstance(value, bool) and key != "year":
                    pytest.fail(f"{path.name}: '{key}' is a bare number without a source")
                if isinstance(value, dict) and "value" in value:
                    assert len(value.get("source", "")) > 10, f"{path.name}: '{key}' has no source"


def test_gpu_alone_picks_its_usual_system() -> None:
    assert resolve("h100-sxm").system.id == "dgx-h100"
    assert resolve("gb200").system.id == "gb200-nvl72"
    assert resolve(system="mi300x-8").accelerator.id == "mi300x"


def test_unknown_and_mismatched_ids() -> None:
    with pytest.raises(PerfmodelError, match=r"unknown GPU 'h300'; valid: .*h100-sxm"):
        resolve("h300")
    with pytest.raises(PerfmodelError, match=r"unknown system 'dgx-z'; valid: .*dgx-h100"):
        resolve(system="dgx-z")
    with pytest.raises(PerfmodelError, match="does not match"):
        resolve("h100-sxm", "gb200-nvl72")
