"""`perfmodel serve`: the planner's web page and JSON HTTP API (perfmodel/serve/), served by uvicorn."""

from __future__ import annotations

import importlib.util
import socket

import click

from perfmodel.cli import cli
from perfmodel.cli.options import Whole, say
from perfmodel.errors import PerfmodelError

APP = "perfmodel.serve.app:app"
"""The application, by the name uvicorn imports it under (the server sits above the CLI in the data flow)."""


@cli.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. The default serves this machine only; 0.0.0.0 serves the network (there is no "
    "login: use it on a trusted network).",
)
@click.option("--port", type=Whole("ports", 1, 65535), default=8000, show_default=True, help="Port to listen on.")
def serve(host: str, port: int) -> None:
    """Serve the planner's web page and its JSON HTTP API (README 'The web page and HTTP API').

    The page predicts, compares and plans; the API takes the Python API's keywords at POST /api/predict,
    /api/compare and /api/plan and answers the CLI's JSON (described at /openapi.json). Needs the serve extra:
    pip install 'perfmodel[serve]'.
    """
    missing = [name for name in ("fastapi", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        raise PerfmodelError(f"perfmodel serve needs {' and '.join(missing)}: pip install 'perfmodel[serve]'")
    _check_free(host, port)
    import uvicorn

    say(f"perfmodel serving http://{host}:{port}/ (API description: /openapi.json); Ctrl-C stops")
    uvicorn.run(APP, host=host, port=port, log_level="warning")


def _check_free(host: str, port: int) -> None:
    """One line, before uvicorn starts, when the address cannot be listened on (taken, or not this machine's)."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise PerfmodelError(f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc})") from None
