"""The request bodies: the Python API's keywords (perfmodel/api.py), derived from its signatures so that the two
cannot drift, with uploads in place of the keywords that name files.

Each keyword is documented in the OpenAPI description with the API's type but accepted as any JSON value, so that a
wrong one is refused by the API's own checks with the line the CLI and the Python API print.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, WithJsonSchema, create_model

from perfmodel import api

FILE_KEYWORDS = ("hardware", "calibration")
"""Keywords a request cannot give: paths on the server's disk (uploads replace the hardware files; the bundled
calibration is used). The scenario, the functions' first argument, is a bundled scenario's name or an upload."""
SERVER_KEYWORDS = ("max_candidates",)
"""Keywords the server sets itself: a bound on one request's work (work.MAX_CANDIDATES) that no request may raise."""


ONLY_TYPED = ("ScenarioSource", "Prediction", "Campaign", "Comparison", "PlanReport")
"""Names in the API's signatures imported only for the type checker: none is a keyword's type."""


class Upload(BaseModel):
    """A file sent with the request: its name (letters, digits, '.', '_', '-'; ending in .toml) and its text."""

    model_config = ConfigDict(extra="forbid")
    name: str
    text: str


SCENARIO = (
    "A bundled scenario's name (GET /api/catalogue: scenarios), the functions' first argument: "
    '`perfmodel.predict("campaign-llama3.1-405b")`; the other keywords override it, as flags override a file.'
)
MODEL_FILE = "A model TOML file (README 'Your own model'), as model=."
SCENARIO_FILE = "A scenario TOML file (a campaign's [[phase]] tables too), as scenario; a file it names is refused."


def _request_model(name: str, function: Callable[..., Any], options: type) -> type[BaseModel]:
    """A request body: the keywords of `function` and its `options` TypedDict, and the uploads."""
    own = typing.get_type_hints(function, localns=dict.fromkeys(ONLY_TYPED, Any))
    keyword_only = [p.name for p in inspect.signature(function).parameters.values() if p.kind == p.KEYWORD_ONLY]
    hints = typing.get_type_hints(options) | {keyword: own[keyword] for keyword in keyword_only}
    fields: dict[str, Any] = {
        keyword: (Annotated[Any, WithJsonSchema(TypeAdapter(hint | None).json_schema())], None)
        for keyword, hint in hints.items()
        if keyword not in FILE_KEYWORDS + SERVER_KEYWORDS
    }
    uploads: dict[str, Any] = {  # typed Any as `fields` are: mypy reads create_model's tuples as type forms
        "scenario": (Annotated[Any, WithJsonSchema({"type": "string"})], Field(None, description=SCENARIO)),
        "scenario_file": (Upload | None, Field(None, description=SCENARIO_FILE)),
        "model_file": (Upload | None, Field(None, description=MODEL_FILE)),
        "hardware_files": (
            list[Upload],
            Field([], description="Accelerator or system TOML files (README 'Your own hardware'), as hardware=."),
        ),
    }
    return create_model(
        name,
        __config__=ConfigDict(extra="forbid"),
        __doc__=f"The keywords of perfmodel.{function.__name__}() (README 'Python API'); null or left out: not given.",
        **uploads,
        **fields,
    )


PredictRequest = _request_model("PredictRequest", api.predict, api.ScenarioOptions)
CompareRequest = _request_model("CompareRequest", api.compare, api.WorkloadOptions)
PlanRequest = _request_model("PlanRequest", api.plan, api.WorkloadOptions)
