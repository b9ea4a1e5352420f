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
        raise PerfmodelError(f"{path}: field '{field}': {err['msg']}") from None
