"""JSON Schemas of the input file kinds, so that an editor checks a scenario, hardware, model or measured-runs file
as it is typed. Generated from the same pydantic models that validate the files (and, for the runs CSV, from its
documented column set), so a schema cannot drift from what perfmodel accepts; schemas/ holds them, tested equal.

The checks perfmodel makes beyond those models are added where JSON Schema can say them: each hardware figure's
range (hardware_check.RANGES), the most tokens, partial recompute being full recompute, a model's `base` among the
zoo's ids, a measured run's stack, release month and whole-run columns. What it cannot say stays with the CLI: rules
between two numbers (usable HBM at most HBM, heads a multiple of KV heads) and ids that user hardware files can add
(a scenario's `gpu`, `system`). Each property carries its record field's docstring as its description.
"""

from __future__ import annotations

from typing import Any

from perfmodel.inputs.counts import PATTERN

KINDS = ("scenario", "hardware", "model", "runs", "fleet")
DIALECT = "https://json-schema.org/draft/2020-12/schema"
COUNTED = ("tokens", "tokens_per_step", "ramp_tokens", "eval_tokens")
"""A scenario's token counts: a number, or the text of one (`"15T"`)."""
NUMBER_KEYS = ("type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of one input file kind (KINDS)."""
    document = {"scenario": _scenario, "hardware": _hardware, "model": _model, "runs": _runs, "fleet": _fleet}[kind]()
    return {"$schema": DIALECT, "$id": f"perfmodel/{kind}.schema.json", **document}


def _scenario() -> dict[str, Any]:
    from perfmodel.inputs import scenario as records
    from perfmodel.inputs.documents import Documents
    from perfmodel.inputs.models import ModelSpec
    from perfmodel.inputs.scenario_check import SCENARIO

    document = _counts_as_text(SCENARIO.model_json_schema()) | {"title": "perfmodel scenario (TOML)"}
    tables = (records.Parallelism, records.Cost, records.Goodput, records.Losses, records.Phase, Documents)
    classes = {None: (records.Scenario,), "ModelOverride": (records.ModelOverride, ModelSpec)}
    _describe(document, classes | {cls.__name__: (cls,) for cls in tables})
    for table in (document, document["$defs"]["Phase"]):
        _number(table["properties"]["tokens"])["maximum"] = records.MAX_TOKENS
    for table in (document, document["$defs"]["Phase"]):
        _any_case(table["properties"]["precision"])
    document["$defs"]["Parallelism"]["if"] = {"required": ["recompute_layers"]}
    document["$defs"]["Parallelism"]["then"] = {"properties": {"recompute": {"const": "full"}}}
    return document


def _any_case(field: dict[str, Any]) -> None:
    """A precision's names in any case (`"FP8"`, as the tables print it), as the checks read it: its enum becomes a
    pattern (JSON Schema's regex has no case flag, so each letter is a class)."""
    branch = next(b for b in field.get("anyOf", [field]) if "enum" in b)
    letters = ("".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in name) for name in branch.pop("enum"))
    branch["pattern"] = f"^({'|'.join(letters)})$"
    field["description"] += " Any case."


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


def _fleet() -> dict[str, Any]:
    """A fleet file (`plan --fleet`): owned pools and offers (inputs/fleet.py)."""
    from perfmodel.inputs.checking import model_of
    from perfmodel.inputs.fleet import Fleet, Job, Offer, Pool

    described = "Owned GPU pools, offers to rent or buy, and jobs sharing them, for `perfmodel plan --fleet` (give "
    described += "usd_per_gpu_hour or "
    document = model_of(Fleet).model_json_schema() | {
        "title": "perfmodel fleet (TOML)",
        "description": described + "usd_per_system per offer).",
    }
    _describe(document, {None: (Fleet,), "Pool": (Pool,), "Offer": (Offer,), "Job": (Job,)})
    return document


def _model() -> dict[str, Any]:
    from perfmodel.inputs.models import ZOO, ModelSpec
    from perfmodel.inputs.scenario import ModelOverride
    from perfmodel.inputs.scenario_check import MODEL_OVERRIDE

    described = "A model file (--model FILE.toml) or a scenario's [model] table: a zoo id as `base`, and the shapes."
    document = MODEL_OVERRIDE.model_json_schema() | {"title": "perfmodel model (TOML)", "description": described}
    _describe(document, {None: (ModelOverride, ModelSpec)})
    document["properties"]["base"]["anyOf"][0]["enum"] = list(ZOO)
    return document


def _number(field: dict[str, Any]) -> dict[str, Any]:
    """The number branch of a property's schema (an optional number is anyOf number, null)."""
    return next(b for b in field.get("anyOf", [field]) if b.get("type") in ("number", "integer"))


def _describe(document: dict[str, Any], classes: dict[str | None, tuple[type, ...]]) -> None:
    """Each property of a table (None: the document's own, else its $def of that name) described by the docstring of
    its field in the table's record classes."""
    from perfmodel.inputs import record

    for name, records in classes.items():
        table = document if name is None else document["$defs"][name]
        for cls in records:
            for field, text in record.field_docs(cls).items():
                if field in table.get("properties", {}):
                    table["properties"][field].setdefault("description", text)


def _hardware() -> dict[str, Any]:
    """An accelerator or a system file; a user file with `base` may give any subset of fields (merged on the base)."""
    from pydantic.json_schema import models_json_schema

    from perfmodel.inputs.hardware import Accelerator, Fabric, Latency, PowerReference, System
    from perfmodel.inputs.hardware_check import MODELS, RANGES

    accelerator, system = MODELS["accelerators"], MODELS["systems"]
    refs, document = models_json_schema([(accelerator, "validation"), (system, "validation")])
    based = {
        "type": "object",
        "required": ["id", "base"],
        "properties": {"id": {"type": "string"}, "base": {"type": "string", "description": "a known id to start from"}},
    }
    for kind, name in (("accelerators", "Accelerator"), ("systems", "System")):
        for dotted, allowed in RANGES[kind].items():
            *parents, field = dotted.split(".")
            table = document["$defs"][name]
            for parent in parents:  # a nested table's own $def ('fabric' -> Fabric)
                table = document["$defs"][_ref(table["properties"][parent]).rsplit("/", 1)[1]]
            _ranged(table["properties"], field, allowed)
    _describe(document, {cls.__name__: (cls,) for cls in (Accelerator, System, Fabric, Latency, PowerReference)})
    return {
        "title": "perfmodel hardware (TOML)",
        "description": "One accelerator or one system, each figure a {value, source} pair (README: Your own hardware).",
        "oneOf": [refs[(accelerator, "validation")], refs[(system, "validation")], based],
        **document,
    }


def _ref(field: dict[str, Any]) -> str:
    return str(next(b["$ref"] for b in field.get("anyOf", [field]) if "$ref" in b))


def _ranged(properties: dict[str, Any], name: str, allowed: Any) -> None:
    """A figure's range put on its property: on its `value` where it is a {value, source} pair (a shared $def, so the
    range goes beside the reference), on the number itself otherwise."""
    bounds = {"minimum": allowed.low, "maximum": allowed.high} | ({"multipleOf": 1} if allowed.whole else {})
    field = properties[name]
    branches = field.get("anyOf", [field])
    for k, branch in enumerate(branches):
        if "$ref" in branch:
            branches[k] = {"allOf": [branch, {"properties": {"value": bounds}}]}
        elif branch.get("type") in ("number", "integer"):
            branch.update(bounds)
    if "anyOf" not in field:
        properties[name] = branches[0]


def _runs() -> dict[str, Any]:
    """One row of a measured-runs CSV (`validate --data`), read as an object with numbers in the numeric columns."""
    from perfmodel.fitting.runs import CSV_COLUMNS, LAYOUT_COLUMNS, METRICS, MODEL_COLUMNS, WHOLE_RUN_ONLY
    from perfmodel.inputs import FP8_RECIPE_NAMES, PRECISIONS
    from perfmodel.inputs.scenario import MAX_TOKENS, RELEASE_MONTH
    from perfmodel.inputs.stacks import STACKS

    whole = {"type": "integer", "minimum": 1}
    kinds: dict[str, dict[str, Any]] = {c: {"type": "string"} for c in CSV_COLUMNS}
    kinds |= {c: whole for c in (*MODEL_COLUMNS, *LAYOUT_COLUMNS, "n_gpus", "seq_len")}
    kinds |= {
        "zero": {"enum": [0, 1, 2, 3]},
        "precision": {"enum": list(PRECISIONS)},
        "recompute": {"enum": ["none", "selective", "full"]},
        "metric": {"enum": list(METRICS)},
        "measured": {"type": "number", "exclusiveMinimum": 0},
        "seq_len": {"type": "integer", "minimum": 16, "maximum": 10_000_000},
        "stack": {"enum": list(STACKS)},
        "vintage": {"type": "string", "pattern": f"^{RELEASE_MONTH}$"},
        "basis": {"enum": ["wall", "steady"]},
        "tokens": {
            "anyOf": [
                {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TOKENS},
                {"type": "string", "pattern": PATTERN},
            ]
        },
        "async_tp": {"type": "boolean"},
        "compile": {"type": "boolean"},
        "fp8_recipe": {"enum": list(FP8_RECIPE_NAMES)},
    }
    whole_run = {"properties": {"metric": {"const": "gpu_hours"}}, "required": ["metric"]}
    return {
        "title": "perfmodel measured run (one CSV row)",
        "description": "Columns of `perfmodel validate --data FILE.csv`; a blank layout column is searched.",
        "type": "object",
        "properties": {c: kinds[c] for c in CSV_COLUMNS},
        "required": ["n_gpus", "precision", "metric", "measured"],
        "allOf": [
            {"anyOf": [{"required": ["model"]}, {"required": ["benchmark"]}]},
            {"anyOf": [{"required": ["gpu"]}, {"required": ["system"]}]},
            {  # a whole run's columns on a whole run only, and a whole run needs its tokens and a model
                "if": whole_run,
                "then": {"required": ["tokens"], "anyOf": [{"required": ["model"]}, {"required": ["model_shapes"]}]},
                "else": {"not": {"anyOf": [{"required": [c]} for c in WHOLE_RUN_ONLY]}},
            },
        ],
        "additionalProperties": False,
    }
