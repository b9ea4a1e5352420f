"""pydantic's check of a scenario: models built from the records of inputs/scenario.py, their validators, and the
first problem of a failed check as one line.

Imported only when a scenario must be checked (a user's file, flags, a bundled file not yet in the cache).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator, model_validator

from perfmodel.errors import PerfmodelError, did_you_mean, shown_value, unknown_key
from perfmodel.inputs import PRECISIONS
from perfmodel.inputs.checking import Checked, check, model_of
from perfmodel.inputs.counts import EXAMPLES, count
from perfmodel.inputs.documents import Documents
from perfmodel.inputs.files import other_kind
from perfmodel.inputs.numbers import unquoted
from perfmodel.inputs.scenario import (
    FAILURE_CLASSES,
    MAX_TOKENS,
    RELEASE_MONTH,
    TEXT_LIMITS,
    Cost,
    Goodput,
    Losses,
    ModelOverride,
    Parallelism,
    Phase,
    Scenario,
)
from perfmodel.inputs.stacks import DEFAULT_STACK, KNOB_FLAGS, STACKS, knob_problem
from perfmodel.inputs.text import MAX_NAME_CHARS, NOT_BLANK, check_text


class _Strict(Checked):
    """Unknown keys are errors (a typo is never ignored), and values must have the right type: strict mode refuses
    `tp = true` or `n_gpus = "8"` rather than reading them as 1 and 8."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, strict=True)

    @field_validator("*", mode="before")
    @classmethod
    def _printable_text(cls, value: Any, info: ValidationInfo) -> Any:
        """Every string of a scenario (names, ids, file names) is printable text of bounded length: it reaches
        tables, CSV/XLSX cells, LaTeX and error lines."""
        if isinstance(value, str):
            return check_text(value, TEXT_LIMITS.get(info.field_name or "", MAX_NAME_CHARS))
        return value


@field_validator("zero", mode="before")
def _zero_is_a_number(cls: type, value: Any) -> Any:
    if isinstance(value, bool):  # a Literal[1] would take true
        raise ValueError("must be 0, 1, 2 or 3, not true/false")
    return value


@model_validator(mode="before")
def _partial_recompute_is_full(cls: type, data: Any) -> Any:
    """recompute_layers is a full recompute of some layers: it sets recompute 'full' and excludes the others."""
    if isinstance(data, dict) and data.get("recompute_layers") is not None:
        if data.get("recompute") not in (None, "full"):
            raise ValueError(f"recompute_layers needs recompute 'full' (got {data.get('recompute')!r})")
        data = data | {"recompute": "full"}
    return data


@field_validator("failures_per_million_gpu_hours")
def _known_classes(cls: type, value: dict[str, float] | None) -> dict[str, float] | None:
    unknown = sorted(set(value or {}) - set(FAILURE_CLASSES))
    if unknown:
        raise ValueError(f"unknown failure class '{unknown[0]}'; valid: {', '.join(FAILURE_CLASSES)}")
    return value


@model_validator(mode="before")
def _apply_benchmark(cls: type, raw: Any) -> Any:
    if not isinstance(raw, dict) or not raw.get("benchmark"):
        return raw
    from perfmodel.inputs.mlperf import get_benchmark

    bench = get_benchmark(str(raw["benchmark"]))
    par = dict(raw.get("parallelism") or {})
    if raw.get("phase"):
        raise ValueError(f"benchmark and [[phase]] exclude each other: {bench.id} is one run of its own work")
    if raw.get("tokens") is not None:
        raise ValueError(f"tokens and benchmark exclude each other: {bench.id} defines the work to train")
    if raw.get("model") not in (None, bench.model):
        trains = bench.model if isinstance(bench.model, str) else bench.model.get("id", bench.model.get("base"))
        raise ValueError(f"model: {bench.id} trains {trains}; leave the model out")
    if bench.lora_rank and raw.get("lora_modules") not in (None, "attention"):
        raise ValueError(f"lora_modules: {bench.id} adapts the attention projections only (qkv_proj, o_proj)")
    if par.get("seq_len") not in (None, bench.seq_len):
        raise ValueError(f"parallelism.seq_len: {bench.id} uses sequences of {bench.seq_len} tokens")
    return raw | {
        "model": bench.model,
        "lora_rank": bench.lora_rank,
        "parallelism": par | {"seq_len": bench.seq_len},
    }


@field_validator(*KNOB_FLAGS, mode="before")
def _stack_has_knob(cls: type, value: Any, info: ValidationInfo) -> Any:
    """A knob (async_tp, compile, fp8_recipe) only on a stack that has it, an FP8 recipe only on a stack that runs
    it (inputs/stacks.py knob_problem)."""
    stack = STACKS.get(info.data.get("stack", DEFAULT_STACK))
    problem = knob_problem(stack, str(info.field_name), value) if value is not None and stack is not None else None
    if problem is not None:
        raise ValueError(problem)
    return value


@field_validator("precision", mode="before")
def _precision_in_any_case(cls: type, value: Any) -> Any:
    """A precision in any case, as --precision and `--gpu ID:PRECISION` take it: the tables print FP8 and NVFP4,
    and what they print is typed back into a scenario, a phase or a sweep's list."""
    return value.lower() if isinstance(value, str) and value.lower() in PRECISIONS else value


@field_validator("vintage", mode="before")
def _release_month(cls: type, value: Any) -> Any:
    if isinstance(value, str) and not re.fullmatch(RELEASE_MONTH, value):
        raise ValueError("a software release month YYYY-MM, e.g. 2025-06")
    return value


def _written(value: Any) -> Any:
    """A count of tokens written as people write it (`"15T"`, `"2.5e12"`, `"1,000,000"`) as its number."""
    if not isinstance(value, str):
        return value
    try:
        return count(value)
    except ValueError:
        raise ValueError(f"not a number of tokens (examples: {EXAMPLES})") from None


@field_validator("tokens", mode="before")
def _finite_tokens(cls: type, value: Any) -> Any:
    value = _written(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number of tokens")
    if isinstance(value, int | float) and not isinstance(value, bool) and value > MAX_TOKENS:
        raise ValueError(f"at most {MAX_TOKENS:.0e} tokens (Llama 3 trained on 1.5e13)")
    return value


@model_validator(mode="before")
def _phase_layout_only(cls: type, raw: Any) -> Any:
    """A phase's [phase.parallelism] holds its layout; its sequence length and batch are the phase's own keys."""
    layout = raw.get("parallelism") if isinstance(raw, dict) else None
    for key in ("seq_len", "gbs"):
        if isinstance(layout, dict) and key in layout:
            raise ValueError(f"parallelism.{key}: a phase gives its {key} as a key of its own ({key} = ...)")
    return raw


@field_validator("name")
def _visible_name(cls: type, value: str) -> str:
    """A phase's name labels its row in every output: a blank one would be a row without a label."""
    if not value.strip():
        raise ValueError("must name the phase with at least one visible character (it labels the phase's row)")
    return value


MODEL_OVERRIDE = model_of(ModelOverride, _Strict)
PARALLELISM = model_of(
    Parallelism,
    _Strict,
    {"_zero_is_a_number": _zero_is_a_number, "_partial_recompute_is_full": _partial_recompute_is_full},
)
COST = model_of(Cost, _Strict)
GOODPUT = model_of(Goodput, _Strict, {"_known_classes": _known_classes})
LOSSES = model_of(Losses, _Strict, {"_written": field_validator("ramp_tokens", "eval_tokens", mode="before")(_written)})
DOCUMENTS = model_of(Documents, _Strict)
PHASE = model_of(
    Phase,
    _Strict,
    {
        "_finite_tokens": _finite_tokens,
        "_phase_layout_only": _phase_layout_only,
        "_precision_in_any_case": _precision_in_any_case,
        "_visible_name": _visible_name,
        "_written": field_validator("tokens_per_step", mode="before")(_written),
    },
)
SCENARIO = model_of(
    Scenario,
    _Strict,
    {"_apply_benchmark": _apply_benchmark, "_release_month": _release_month, "_finite_tokens": _finite_tokens}
    | {"_stack_has_knob": _stack_has_knob, "_precision_in_any_case": _precision_in_any_case},
)
"""The models, nested ones first (a record's model is built once, with the validators given when it is)."""


def check_model_file(path: Path, table: dict[str, Any]) -> dict[str, Any]:
    """A model file's table when it is a valid [model] table, else one line naming the model file."""
    if isinstance(table.get("model"), dict):  # the README's "keys of a [model] table" read as a table of that name
        raise PerfmodelError(
            f"{path}: a model file holds the keys of a scenario's [model] table at its top level (id = ..., "
            "layers = ...), without a [model] header"
        )
    try:
        check(MODEL_OVERRIDE, table)
    except ValidationError as exc:
        field, message = explain_error(exc, MODEL_OVERRIDE)
        message = with_other_kind(field, message, table, "model")
        raise PerfmodelError(f"{path}: field '{field}': {message}" if field else f"{path}: {message}") from None
    return table


TYPE_MISMATCH = frozenset(("string_type", "model_type", "dict_type", "model_attributes_type"))
"""Errors of a union branch the value's type does not match (a string where a table is allowed, or the reverse)."""
BRANCHES = {"str": "a string", "int": "a whole number", "float": "a number", "bool": "true or false"}


def describe_error(exc: ValidationError, root: type[BaseModel] | None = None) -> str:
    """The first problem of a validation error as one line: "field 'parallelism.tp': ..." (or the bare message)."""
    field, message = explain_error(exc, root)
    return f"field '{field}': {message}" if field else message


def with_other_kind(field: str | None, message: str, tables: dict[str, Any], kind: str) -> str:
    """`message` about `field`, where it refuses an unknown top-level key of a `kind` file (scenario, model), with
    what the tables look like instead (files.other_kind: a hardware file given as the scenario)."""
    if not field or "." in field or not message.startswith("unknown key"):
        return message
    return message.replace("; allowed:", f"{other_kind(tables, kind)}; allowed:", 1)


def explain_error(exc: ValidationError, root: type[BaseModel] | None = None) -> tuple[str | None, str]:
    """The first problem of a validation error: the dotted field (None for the whole scenario) and what is wrong.

    A value that fails every branch of a union (model = 5) says which types the field takes; a value that matches one
    branch (a [model] table) gets that branch's error, not the other branch's "should be a valid string".
    """
    errors = exc.errors()
    located = [(err, *_walk(err["loc"], err["type"], root or SCENARIO)) for err in errors]
    real = [item for item in located if not (item[2] and item[0]["type"] in TYPE_MISMATCH)]
    if not real:
        err, path, _, _ = located[0]
        branches = [BRANCHES.get(tag, "a table") for _, p, tags, _ in located if p == path for tag in tags[-1:]]
        return ".".join(path), f"must be {' or '.join(dict.fromkeys(branches))}{_shown(err.get('input'))}"
    err, path, _, parent = real[0]
    field = ".".join(path) or None
    if err["type"] == "extra_forbidden":
        allowed = list(parent.model_fields) if parent else []
        return field, unknown_key(path[-1], allowed)
    if err["type"] in ("model_type", "dict_type"):
        return field, f"must be a table{_shown(err.get('input'))}"
    if err["type"] == "string_pattern_mismatch" and err["ctx"]["pattern"] == NOT_BLANK:
        return field, f"must not be blank{_shown(err.get('input'))}"
    if err["type"] == "too_long":
        return field, f"has {err['ctx']['actual_length']:,} entries; at most {err['ctx']['max_length']:,}"
    if err["type"] == "literal_error":  # the value given, or the choice it misspells ('FP8': 'fp8')
        value, choices = err.get("input"), re.findall(r"'([^']*)'", err["ctx"]["expected"])
        hint = did_you_mean(value, choices) if isinstance(value, str) else ""
        return field, err["msg"].replace("Input should be", "must be") + (hint or _shown(value))
    message, value = err["msg"].removeprefix("Value error, "), err.get("input")
    if field and (text := unquoted(field, err["type"], value)):  # `restart_s = "10min"`: no number read it
        return field, text
    head = re.match(r"(\w+): ", message)  # a table's check naming its key ("shares: ..."): the dotted field
    if field and head and isinstance(value, dict) and head.group(1) in value:
        return f"{field}.{head.group(1)}", message[head.end() :]
    quoted = isinstance(value, str) and repr(value) in message  # the check named the value itself: not twice
    return field, message if quoted else message + _shown(value)


def _walk(
    loc: tuple[Any, ...], kind: str, root: type[BaseModel]
) -> tuple[list[str], list[str], type[BaseModel] | None]:
    """A pydantic error location as (field path, union branch tags, the model holding the last field)."""
    model: type[BaseModel] | None = root
    path: list[str] = []
    tags: list[str] = []
    for index, part in enumerate(loc):
        fields = model.model_fields if model is not None else {}
        if kind == "extra_forbidden" and index == len(loc) - 1:
            return [*path, str(part)], tags, model
        if isinstance(part, int) and path:  # an item of a list field: the list's own item model continues
            path[-1] += f"[{part}]"
        elif isinstance(part, str) and part in fields:
            path.append(part)
            annotation = fields[part].annotation
            candidates = [a for a in getattr(annotation, "__args__", (annotation,)) if isinstance(a, type)]
            model = next((a for a in candidates if issubclass(a, BaseModel)), None)
        else:
            tags.append(str(part))
            name = str(part).removesuffix("]").rpartition(", ")[2]  # 'function-after[_build_record(), Cost]': Cost
            model = next((c for c in _Strict.__subclasses__() if c.__name__ == name), None)
    return path, tags, model


def _shown(value: Any) -> str:
    """' (got VALUE)' for a plain value, short: a 300-digit integer is shown as 1e+300."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return f" (got {value!r})" if isinstance(value, bool) else ""
    if isinstance(value, int) and value.bit_length() > 128:  # beyond float range, or str()'s 4,300-digit limit
        return f" (got {shown_value(value)})"
    text = repr(value)
    if len(text) > 40:
        text = f"{float(value):.3g}" if isinstance(value, int | float) else repr(value[:37] + "...")
    return f" (got {text})"
