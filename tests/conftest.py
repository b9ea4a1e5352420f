"""Shared test set-up: an isolated topology cache, an in-process CLI runner and the hypothesis profiles."""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
"""CI (.ci/run) draws the same examples every run, so that a failure there reproduces; locally they vary."""
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

RAMP_CAMPAIGN = Path(__file__).parent / "data" / "campaign-ramp.toml"
"""A two-phase campaign file (a ramp, then the main phase) the web server's tests upload."""


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    patcher = pytest.MonkeyPatch()
    patcher.setenv("PERFMODEL_CACHE_DIR", str(tmp_path_factory.mktemp("perfmodel-cache")))
    yield
    patcher.undo()


@pytest.fixture(autouse=True)
def _no_user_hardware() -> Iterator[None]:
    """A test's --hardware catalogues end with it (the in-process CLI shares one interpreter across tests)."""
    from perfmodel.inputs import catalogue

    yield
    catalogue.clear()


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_cli(*args: str) -> CliResult:
    """Run `perfmodel ARGS` in-process through the real entry point (error handling included)."""
    from perfmodel.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return CliResult(code, out.getvalue(), err.getvalue())


def one_line_error(result: CliResult, *words: str) -> str:
    """A refusal as the CLI's one line (exit 2, no traceback) holding each of `words`; the line."""
    assert result.code == 2, result.out + result.err
    err = result.err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    return err


def inputs_of(out: str) -> dict[str, str]:
    """The labelled lines under a table's 'Inputs:' heading, label to text (outputs/report.py labelled_inputs)."""
    lines = out.splitlines()
    start = lines.index("Inputs:") + 1
    block = lines[start : next(i for i in range(start, len(lines)) if not lines[i].startswith("  "))]
    return {label: text.strip() for label, text in (line.split(maxsplit=1) for line in block)}


def run_json(*args: str) -> Any:
    """`perfmodel ARGS --format json`, which must succeed, as a dict."""
    result = run_cli(*args, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


@pytest.fixture
def cli() -> object:
    return run_cli


def json_numbers(value: object) -> list[float]:
    """Every number in a JSON-like value (nested dicts and lists), booleans excluded."""
    if isinstance(value, dict):
        return [n for v in value.values() for n in json_numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in json_numbers(v)]
    return [float(value)] if isinstance(value, int | float) and not isinstance(value, bool) else []
