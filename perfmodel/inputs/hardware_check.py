"""A hardware file's tables checked against the record classes of inputs/hardware.py, by pydantic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.checking import check, model_of
from perfmodel.inputs.hardware import Accelerator, System

MODELS = {"accelerators": model_of(Accelerator), "systems": model_of(System)}
"""The pydantic models of an accelerator file and a system file (outputs/schemas.py prints their JSON Schema)."""


def checked(kind: str, path: Path, raw: dict[str, Any]) -> Any:
    """The record of an accelerator or system file, or one line naming the file, the field and the problem."""
    try:
        return check(MODELS[kind], raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise PerfmodelError(f"{path}: field '{field}': {_message(err)}") from None


def _message(err: Any) -> str:
    """pydantic's message, but a figure given as a bare number names the {value, source} pair it must be rather
    than the record class a user never sees ('a valid dictionary or instance of SourcedPositive')."""
    if err["type"] != "model_type":
        return str(err["msg"])
    if str(err.get("ctx", {}).get("class_name", "")).startswith("Sourced"):
        return (
            f'must be a {{value, source}} pair, e.g. {{ value = {err["input"]!r}, source = "where it comes from" }}'
            if isinstance(err.get("input"), int | float) and not isinstance(err["input"], bool)
            else 'must be a {value, source} pair, e.g. { value = 1.0, source = "where it comes from" }'
        )
    return "must be a table"
