"""No user-supplied text is ever executed: no eval/exec, no pickle, no sympy parsing (sympify evaluates code).

Scenario files, CSVs, logs, calibration and JSON inputs are parsed by tomllib, csv, json and pydantic only. The
package source is scanned (as syntax trees, so that `evaluate(` is not mistaken for `eval(`), and ruff's security
rules (S: exec, eval, pickle, yaml.load, shell=True, ...) stay selected in pyproject.toml.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "perfmodel"
CALLS = {"eval", "exec", "compile", "__import__", "breakpoint"}
"""Built-ins that run text as code."""
ATTRIBUTES = {"sympify", "parse_expr", "S", "eval", "exec", "literal_eval", "load", "loads"}
"""sympy's string parsers (sympify, parse_expr, S("...")), and load/loads of the modules below."""
MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "marshal", "shelve", "jsonpickle", "yaml"}
"""Deserialisers that build arbitrary objects (yaml.load without SafeLoader included)."""
PARSERS = {"sympy.parsing", "sympy.parsing.sympy_parser"}


def findings(source: str, name: str = "<source>") -> list[str]:
    """Every use of a code-executing call, attribute or import in `source`, as 'name:line: what'."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CALLS:
            found.append(f"{name}:{node.lineno}: {node.func.id}()")
        if isinstance(node, ast.Attribute) and node.attr in ATTRIBUTES:
            owner = node.value.id if isinstance(node.value, ast.Name) else ""
            if node.attr in ("sympify", "parse_expr", "S") or owner in MODULES | {"ast", "builtins"}:
                found.append(f"{name}:{node.lineno}: {owner}.{node.attr}")
        if isinstance(node, ast.Import):
            found += [f"{name}:{node.lineno}: import {a.name}" for a in node.names if _forbidden(a.name)]
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if _forbidden(module):
                found.append(f"{name}:{node.lineno}: from {module} import ...")
            parsers = {"sympify", "parse_expr", "S"} if module.startswith("sympy") else {"literal_eval"}
            found += [f"{name}:{node.lineno}: from {module} import {a.name}" for a in node.names if a.name in parsers]
    return found


def _forbidden(module: str) -> bool:
    return module.split(".")[0] in MODULES or module in PARSERS


GENERATED = {PACKAGE / "physics" / "trace.py": {"exec()", "compile()"}}
"""The compiled scalar step: it runs the program it writes from perfmodel's own formulas, after `trace.checked` made
sure that program holds only generated names, operators and numbers (tested below), never text from an input."""


def test_the_package_never_executes_text() -> None:
    problems = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        for hit in findings(path.read_text(), str(path))
        if hit.rsplit(": ", 1)[1] not in GENERATED.get(path, set())
    ]
    assert problems == []


def test_the_compiled_step_runs_only_what_it_generated() -> None:
    from perfmodel.physics.trace import checked

    good = "def compiled(tp, mbs):\n    v0 = tp * (1.5e-09)\n    v1 = (v0 if v0 >= mbs else k0(v0))\n    return v1\n"
    assert checked(good, {"tp", "mbs", "k0"}) == good
    for bad in ("__import__('os')", "tp.__class__", "open(k0)", "k0['x']", "v0; k0", "k0[0]", "tp @ tp"):
        with pytest.raises(ValueError, match="not a traced program"):
            checked(f"def compiled(tp):\n    v0 = {bad}\n    return v0\n", {"tp", "k0"})


def test_the_scan_finds_each_kind_of_problem() -> None:
    """The scan itself can fail: each forbidden construct is reported, the look-alikes are not."""
    bad = [
        "eval(text)", "exec(text)", "compile(text, 'f', 'exec')", "import pickle", "from pickle import loads",
        "import sympy\nsympy.sympify(text)", "from sympy import sympify", "from sympy.parsing.sympy_parser import x",
        "import sympy\nsympy.S(text)", "import yaml\nyaml.load(text)", "import marshal", "from sympy import S",
        "import ast\nast.literal_eval(t)", "from ast import literal_eval",
    ]  # fmt: skip
    for snippet in bad:
        assert findings(snippet), snippet
    fine = ["evaluate(x)", "import json\njson.loads(text)", "import tomllib\ntomllib.load(f)", "sympy.Symbol('t_fwd')",
            "from perfmodel.outputs.symbolic import S"]  # fmt: skip
    for snippet in fine:
        assert findings(snippet) == [], snippet


def test_ruff_keeps_its_security_rules_on() -> None:
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert "S" in lint["select"]
    ignored = set(lint.get("ignore", []))
    assert not ignored & {"S102", "S301", "S307", "S506", "S602", "S604", "S605"}, ignored
