"""JSON Schemas of the input file kinds, so that an editor checks a scenario, hardware, model or measured-runs file
as it is typed. Generated from the same pydantic models that validate the files (and, for the runs CSV, from its
documented column set), so a schema cannot drift from what perfmodel accepts; schemas/ holds them, tested equal."""

from __future__ import annotations

from typing import Any

from perfmodel.inputs.counts import PATTERN

KINDS = ("scenario", "hardware", "model", "runs")
DIALECT = "https://json-schema.org/draft/2020-12/schema"
COUNTED = ("tokens", "tokens_per_step", "ramp_tokens", "eval_tokens")
"""A scenario's token counts: a number, or the text of one (`"15T"`)."""
NUMBER_KEYS = ("type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of one input file kind (KINDS)."""
    document = {"scenario": _scenario, "hardware": _hardware, "model": _model, "runs": _runs}[kind]()
    return {"$schema": DIALECT, "$id": f"perfmodel/{kind}.schema.json", **document}


def _scenario() -> dict[str, Any]:
    from perfmodel.inputs.scenario_check import SCENARIO

    return _counts_as_text(SCENARIO.model_json_schema()) | {"title": "perfmodel scenario (TOML)"}


def _counts_as_text(document: Any) -> Any:
    """`document` with each token count (COUNTED) also taking the text a person writes, `"15T"` (inputs/counts.py:
    the checks read it so), beside its number."""
    if isinstance(document, list):
        return [_counts_as_text(item) for item in document]
    if not isinstance(document, dict):
        return document
    found = {key: _counts_as_text(value) for key, value in document.items()}
    for name, field in (found.get("properties") or {}).items():
        if name in COUNTED:
            numbers = field.pop("anyOf", None) or [{k: field.pop(k) for k in list(field) if k in NUMBER_KEYS}]
            field["anyOf"] = [*numbers, {"type": "string", "pattern": PATTERN}]
    return found


def _model() -> dict[str, Any]:
    from perfmodel.inputs.scenario_check import MODEL_OVERRIDE

    described = "A model file (--model FILE.toml) or a scenario's [model] table: a zoo id as `base`, and the shapes."
    return MODEL_OVERRIDE.model_json_schema() | {"title": "perfmodel model (TOML)", "description": described}


def _hardware() -> dict[str, Any]:
    """An accelerator or a system file; a user file with `base` may give any subset of fields (merged on the base)."""
    from pydantic.json_schema import models_json_schema

    from perfmodel.inputs.hardware_check import MODELS

    accelerator, system = MODELS["accelerators"], MODELS["systems"]
    refs, document = models_json_schema([(accelerator, "validation"), (system, "validation")])
    based = {
        "type": "object",
        "required": ["id", "base"],
        "properties": {"id": {"type": "string"}, "base": {"type": "string", "description": "a known id to start from"}},
    }
    return {
        "title": "perfmodel hardware (TOML)",
        "description": "One accelerator or one system, each figure a {value, source} pair (README: Your own hardware).",
        "oneOf": [refs[(accelerator, "validation")], refs[(system, "validation")], based],
        **document,
    }


def _runs() -> dict[str, Any]:
    """One row of a measured-runs CSV (`validate --data`), read as an object with numbers in the numeric columns."""
    from perfmodel.fitting.runs import CSV_COLUMNS, LAYOUT_COLUMNS, METRICS, MODEL_COLUMNS
    from perfmodel.inputs.hardware import PRECISIONS

    whole = {"type": "integer", "minimum": 1}
    kinds: dict[str, dict[str, Any]] = {c: {"type": "string"} for c in CSV_COLUMNS}
    kinds |= {c: whole for c in (*MODEL_COLUMNS, *LAYOUT_COLUMNS, "n_gpus", "seq_len")}
    kinds |= {
        "zero": {"enum": [0, 1, 2, 3]},
        "precision": {"enum": list(PRECISIONS)},
        "recompute": {"enum": ["none", "selective", "full"]},
        "metric": {"enum": list(METRICS)},
        "measured": {"type": "number", "exclusiveMinimum": 0},
    }
    return {
        "title": "perfmodel measured run (one CSV row)",
        "description": "Columns of `perfmodel validate --data FILE.csv`; a blank layout column is searched.",
        "type": "object",
        "properties": {c: kinds[c] for c in CSV_COLUMNS},
        "required": ["n_gpus", "precision", "metric", "measured"],
        "allOf": [
            {"anyOf": [{"required": ["model"]}, {"required": ["benchmark"]}]},
            {"anyOf": [{"required": ["gpu"]}, {"required": ["system"]}]},
        ],
        "additionalProperties": False,
    }
