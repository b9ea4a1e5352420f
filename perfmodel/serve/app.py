"""The FastAPI application: the page, the JSON API (POST /api/predict, /api/compare, /api/plan), the exports and the
OpenAPI description (/openapi.json).

FastAPI because its request models are pydantic's (perfmodel's own validation library), which gives the OpenAPI
description from the same models the requests are checked with; uvicorn serves it (`perfmodel serve`). The work is
done in worker processes (workers.py), each stopped past the wall-time bound.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cache
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel
from starlette.types import ASGIApp, Receive, Scope, Send

from perfmodel.serve import work
from perfmodel.serve.schemas import CompareRequest, PlanRequest, PredictRequest
from perfmodel.serve.workers import POOL

STATIC = Path(__file__).parent / "static"
FORMATS = {"csv": "text/csv", "json": "application/json",
           "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}  # fmt: skip


class Error(BaseModel):
    """A refused request: the one line the CLI prints after `error:`, and the keyword (or upload) at fault."""

    error: str
    field: str | None = None


REFUSALS: dict[int | str, dict[str, Any]] = {
    411: {"model": Error, "description": "A body without a Content-Length header."},
    413: {"model": Error, "description": "An upload or the body past the server's size limit."},
    422: {"model": Error, "description": "A keyword or upload the model refuses, or work past the server's bounds."},
}


class BodyLimit:
    """ASGI middleware: a request body must declare its length (411), at most `work.MAX_BODY_BYTES` (413), so that
    no body past the limit is read."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH"):
            declared = dict(scope["headers"]).get(b"content-length", b"")
            refusal = (
                (411, "request body: its length must be given (a Content-Length header)")
                if not declared.isdigit()
                else (413, f"request body: {int(declared):,} bytes; this server takes at most {work.MAX_BODY_BYTES:,}")
                if int(declared) > work.MAX_BODY_BYTES
                else None
            )
            if refusal is not None:
                status, line = refusal
                await JSONResponse(Error(error=line).model_dump(), status_code=status)(scope, receive, send)
                return
        await self.app(scope, receive, send)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The workers start with the server, not at the first requests."""
    POOL.start()
    yield


app = FastAPI(
    lifespan=lifespan,
    title="perfmodel",
    summary="Time, cost and energy of LLM training on GPU clusters: the CLI's questions over HTTP.",
    description="Request bodies are the Python API's keywords (README 'Python API'); responses are the documents "
    "of the CLI's `--format json`. Errors: `{error, field}` with the CLI's one-line message.",
    docs_url=None,  # FastAPI's interactive docs load their scripts from a CDN; /openapi.json is the description
    redoc_url=None,
)
app.add_middleware(BodyLimit)
app.mount("/static", StaticFiles(directory=STATIC), name="static")


@app.exception_handler(work.Refused)
def refused(request: Request, exc: work.Refused) -> JSONResponse:
    return JSONResponse(Error(error=exc.message, field=exc.field).model_dump(), status_code=exc.status)


@app.exception_handler(RequestValidationError)
def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    """pydantic's first complaint as one line naming the keyword: the keywords themselves are checked by the API,
    so this is an unknown keyword, a malformed upload or a body that is not a JSON object."""
    first = exc.errors()[0]
    where = [] if first["type"] == "json_invalid" else [str(part) for part in first["loc"] if part != "body"]
    field = where[0] if where else None
    if first["type"] == "extra_forbidden":
        valid = ", ".join(name for name in _valid(request.url.path))
        line = f"unknown keyword '{field}'; valid: {valid}"
    elif not where:
        line = f"request body: {first['msg']} (a JSON object of the Python API's keywords)"
    else:
        line = f"{'.'.join(where)}: {first['msg']}"
    return JSONResponse(Error(error=line, field=field).model_dump(), status_code=422)


def _valid(path: str) -> list[str]:
    model = {"predict": PredictRequest, "compare": CompareRequest, "plan": PlanRequest}.get(path.rsplit("/", 1)[-1])
    return list(model.model_fields) if model else []


def _document(question: str, body: BaseModel) -> Response:
    """The CLI's `--format json` document of the question, as its own text."""
    text = POOL.ask(question, body.model_dump(exclude_unset=True))
    return Response(text, media_type="application/json")


ANSWERS: dict[int | str, dict[str, Any]] = {200: {"content": {"application/json": {}}}, **REFUSALS}


@app.post("/api/predict", responses=ANSWERS, response_class=Response)
def predict(body: PredictRequest) -> Response:  # type: ignore[valid-type]  # a model derived from perfmodel.api
    """One prediction: the object of `perfmodel predict --format json`."""
    return _document("predict", body)


@app.post("/api/compare", responses=ANSWERS, response_class=Response)
def compare(body: CompareRequest) -> Response:  # type: ignore[valid-type]
    """Several systems and GPU counts: the list of `perfmodel compare --format json`, ratios to the first row."""
    return _document("compare", body)


@app.post("/api/plan", responses=ANSWERS, response_class=Response)
def plan(body: PlanRequest) -> Response:  # type: ignore[valid-type]
    """The GPUs of each candidate meeting the goal (a deadline: the cheapest count): the object of `perfmodel plan
    --format json`."""
    return _document("plan", body)


def _export(question: str, body: BaseModel, fmt: str) -> Response:
    """The file `perfmodel export QUESTION --out FILE.fmt` writes."""
    content = POOL.ask(question, body.model_dump(exclude_unset=True), fmt)
    headers = {"Content-Disposition": f'attachment; filename="perfmodel-{question}.{fmt}"'}
    return Response(content, media_type=FORMATS[fmt], headers=headers)


Format = Literal["csv", "json", "xlsx"]
FILES: dict[int | str, dict[str, Any]] = {200: {"content": {kind: {} for kind in FORMATS.values()}}, **REFUSALS}


@app.post("/api/export/predict", responses=FILES, response_class=Response)
def export_predict(body: PredictRequest, format: Format = "xlsx") -> Response:  # type: ignore[valid-type]
    """`perfmodel export predict`: the workbook (live formulas), CSV or JSON of one prediction."""
    return _export("predict", body, format)


@app.post("/api/export/compare", responses=FILES, response_class=Response)
def export_compare(body: CompareRequest, format: Format = "xlsx") -> Response:  # type: ignore[valid-type]
    """`perfmodel export compare`: the comparison's rows with their ratios to the first."""
    return _export("compare", body, format)


@app.post("/api/export/plan", responses=FILES, response_class=Response)
def export_plan(body: PlanRequest, format: Format = "xlsx") -> Response:  # type: ignore[valid-type]
    """`perfmodel export plan`: each candidate's plan with its verdict."""
    return _export("plan", body, format)


@app.get("/api/catalogue")
def catalogue() -> dict[str, Any]:
    """What the page's lists offer: the zoo's models, the accelerators and systems with their precisions, the bundled
    scenarios with their descriptions (a campaign among them), the names of models and accelerators (the chart's
    legend prints names, as the CLI's plots do) and the limits: this server's, and plan()'s largest deadline (the page
    checks the days typed against it, saying the bound in days)."""
    return _catalogue()


@cache
def _catalogue() -> dict[str, Any]:
    from perfmodel.inputs.arguments import MAX_FIGURE
    from perfmodel.inputs.hardware import accelerators, systems
    from perfmodel.inputs.models import ZOO
    from perfmodel.inputs.resources import bundled_descriptions

    chips = accelerators()
    return {
        "models": list(ZOO),
        "accelerators": {i: list(a.precisions) for i, a in chips.items()},
        "systems": {i: list(chips[s.accelerator].precisions) for i, s in systems().items()},
        "scenarios": bundled_descriptions("scenarios"),
        "names": {"models": {i: m.name for i, m in ZOO.items()}, "accelerators": {i: a.name for i, a in chips.items()}},
        "limits": {
            "upload_bytes": work.MAX_UPLOAD_BYTES,
            "hardware_files": work.MAX_HARDWARE_FILES,
            "compare_rows": work.MAX_ROWS,
            "plan_candidates": work.MAX_CANDIDATES,
            "request_s": work.MAX_REQUEST_S,
            "deadline_s": MAX_FIGURE,
        },
    }


@app.get("/", include_in_schema=False)
def page() -> FileResponse:
    return FileResponse(STATIC / "index.html")
