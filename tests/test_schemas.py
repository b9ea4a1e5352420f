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
KINDS = ("scenario", "hardware", "model", "runs", "fleet")


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


def _refused(kind: str, document: dict, tmp_path: Path) -> str:
    """What the CLI says of `document` as a file of `kind` (a measured-runs row as a one-row CSV)."""
    if kind == "runs":
        path = tmp_path / "runs.csv"
        path.write_text(",".join(document) + "\n" + ",".join(str(v) for v in document.values()) + "\n")
        result = run_cli("validate", "--data", str(path))
    else:
        path = tmp_path / f"{kind}.toml"
        path.write_text(_toml(document))
        flags = {"scenario": [str(path)], "model": ["--model", str(path)]}
        args = ["hardware", "show", document["id"], "--hardware", str(path)] if kind == "hardware" else []
        result = run_cli(*(args or ["predict", *flags[kind]]))
    assert result.code == 2, result.out
    return result.err


def _toml(document: dict) -> str:
    """A TOML file of plain keys and tables of plain keys or inline tables (what these tests write)."""

    def value(v: object) -> str:
        return (
            "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }" if isinstance(v, dict) else json.dumps(v)
        )

    lines = [f"{k} = {value(v)}" for k, v in document.items() if not isinstance(v, dict) or "value" in v]
    for key, table in document.items():
        if isinstance(table, dict) and "value" not in table:
            lines += [f"[{key}]", *(f"{k} = {value(v)}" for k, v in table.items())]
    return "\n".join(lines) + "\n"


H100 = tomllib.loads((ROOT / "hardware_specs" / "accelerators" / "h100-sxm.toml").read_text())
RUN = {"id": "r1", "model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8, "precision": "fp8",
       "metric": "tokens_per_s_per_gpu", "measured": 11000.0}  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "document", "message"),
    [
        ("scenario", {"model": "llama3.1-8b", "gpu": "h100-sxm", "tokens": 1e40}, "at most 1e+18 tokens"),
        ("scenario", {"parallelism": {"recompute": "selective", "recompute_layers": 3}}, "needs recompute 'full'"),
        ("model", {"base": "llama3.1-9b", "vocab": 32000}, "unknown model 'llama3.1-9b'"),
        ("hardware", H100 | {"id": "ours", "bf16_tflops": {"value": 1e300, "source": "typo"}}, "from 1 to 1e+06"),
        ("hardware", H100 | {"id": "ours", "year": 1066}, "from 1990 to 2100"),
        ("runs", RUN | {"vintage": "2025-13"}, "a software release month YYYY-MM"),
        ("runs", RUN | {"tokens": 1e12}, "is read for a whole run (metric gpu_hours) only"),
        ("runs", RUN | {"metric": "gpu_hours"}, "needs 'tokens' and a model"),
    ],
)
def test_the_schema_rejects_what_the_cli_refuses(kind: str, document: dict, message: str, tmp_path: Path) -> None:
    """Each of these the schema once accepted (issue 29); the rules JSON Schema cannot state (one number bounding
    another, ids that user files add) are listed in outputs/schemas.py's docstring."""
    assert message in _refused(kind, document, tmp_path)
    assert not _valid(kind, document)


def test_every_scenario_property_is_described() -> None:
    document = _schema("scenario")
    tables = [document, *document["$defs"].values()]
    missing = [
        name for table in tables for name, field in table.get("properties", {}).items() if "description" not in field
    ]
    assert not missing
    assert document["properties"]["tokens"]["description"].startswith("Tokens to train on")


def test_the_scenario_schema_takes_a_precision_in_any_case() -> None:
    """The schema's precision was an enum of lower-case names while the files take `precision = "FP8"`: an editor
    flagged a file perfmodel reads. Any case passes, a name of no case does not, at the top and in a phase."""
    for precision, valid in (("FP8", True), ("NvFp4", True), ("bf16", True), ("fp9", False), ("FP8 ", False)):
        assert _valid("scenario", {"precision": precision}) is valid, precision
        assert _valid("scenario", {"phase": [{"name": "a", "precision": precision}]}) is valid, precision
