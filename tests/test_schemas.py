"""JSON Schemas of the input kinds: the shipped files equal what `perfmodel schema` prints, and every bundled input
(and a user entry with `base`) is valid against them, while a typo'd key is not."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from conftest import run_cli

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("scenario", "hardware", "model", "runs")


def _schema(kind: str) -> dict:
    result = run_cli("schema", kind)
    assert result.code == 0, result.err
    return json.loads(result.out)


@pytest.mark.parametrize("kind", KINDS)
def test_shipped_schemas_are_current(kind: str) -> None:
    shipped = json.loads((ROOT / "schemas" / f"{kind}.schema.json").read_text())
    assert shipped == _schema(kind), f"regenerate: perfmodel schema {kind} > schemas/{kind}.schema.json"
    jsonschema.Draft202012Validator.check_schema(shipped)


def _valid(kind: str, document: dict) -> bool:
    return jsonschema.Draft202012Validator(_schema(kind)).is_valid(document)


def test_bundled_inputs_are_valid() -> None:
    for path in sorted((ROOT / "scenarios").glob("*.toml")):
        assert _valid("scenario", tomllib.loads(path.read_text())), path
    for path in sorted((ROOT / "hardware_specs").glob("*/*.toml")):
        assert _valid("hardware", tomllib.loads(path.read_text())), path
    assert _valid("model", {"base": "llama3.1-70b", "vocab": 32000})
    assert _valid("hardware", {"id": "ours", "base": "dgx-h100", "nics_per_gpu": {"value": 0.5, "source": "ours"}})


def test_mistakes_are_invalid() -> None:
    assert not _valid("scenario", {"model": "llama3.1-8b", "n_gpu": 8})  # a typo'd key
    assert not _valid("scenario", {"parallelism": {"tp": 0}})
    assert not _valid("model", {"layers": 0})
    system = tomllib.loads((ROOT / "hardware_specs" / "systems" / "dgx-h100.toml").read_text())
    del system["fabric"]["oversubscription"]["source"]
    assert not _valid("hardware", system)


def test_a_measured_runs_row_is_valid_as_documented() -> None:
    row = {"id": "r1", "source": "ours", "model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8, "precision": "fp8",
           "tp": 1, "zero": 1, "metric": "tokens_per_s_per_gpu", "measured": 11000.0}  # fmt: skip
    assert _valid("runs", row)
    assert not _valid("runs", row | {"metric": "mfu"})
    assert not _valid("runs", {k: v for k, v in row.items() if k != "gpu"})
    readme = " ".join((ROOT / "README.md").read_text().split())
    documented = readme.split("**Measured runs CSV** (`--data`): columns `", 1)[1].split("`", 1)[0].split(", ")
    assert list(_schema("runs")["properties"]) == documented


def test_a_scenario_checks_its_nested_tables_with_their_own_validators() -> None:
    """model_of builds a record class's model once: the scenario's parallelism and goodput tables must be checked by
    the models built with their validators (zero as a number, partial recompute, known failure classes), which holds
    only while scenario_check builds those before the Scenario that nests them."""
    from perfmodel.inputs import scenario_check as sc

    nested = {name: sc.SCENARIO.model_fields[name].annotation for name in ("parallelism", "goodput", "cost")}
    assert nested == {"parallelism": sc.PARALLELISM, "goodput": sc.GOODPUT, "cost": sc.COST}
