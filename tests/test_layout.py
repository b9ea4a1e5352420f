"""The package tree is the architecture: each stage imports only from the stages below it.

Order of the data flow (README and docs/model.md, 'How the model works'): errors <- inputs <- physics <- planning <-
fitting <- outputs <- cli, with the public Python API (perfmodel/api.py, re-exported lazily by the package root)
above them and the web server (perfmodel/serve/, a client of the Python API) on top: `perfmodel serve` names its
application to uvicorn by its import string, so that the CLI never imports it.
Fitting asks planning's predictions of measured runs, so it sits above planning; planning reads the calibration
file through physics.calibration and never imports fitting. The walk reads every import statement,
including those inside functions (lazy imports count: they are still a dependency).
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "perfmodel"
STAGES = ("errors", "inputs", "physics", "planning", "fitting", "outputs", "cli", "api", "serve")
FOLDERS = ("inputs", "physics", "planning", "fitting", "outputs", "cli", "serve")
TOP_LEVEL = ("__init__.py", "__main__.py", "errors.py", "api.py")


def _stage(module: str) -> str | None:
    """The stage of a dotted module name under perfmodel, or None for the package root (the public API)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "perfmodel" and parts[1] in STAGES else None


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import of perfmodel in a file, `from perfmodel.x import y` as x.y too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.startswith("perfmodel.")]


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE or p.name in ("errors.py", "api.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down_the_flow(path: Path) -> None:
    own = _stage("perfmodel." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
    assert own is not None, f"{path} is in no stage folder"
    upward = []
    for line, name in _imports(path):
        target = _stage(name)
        if target is None:
            upward.append(f"line {line}: {name} (the public API sits above every stage)")
        elif STAGES.index(target) > STAGES.index(own):
            upward.append(f"line {line}: {name} ({target} is above {own})")
    assert not upward, f"{path.relative_to(PACKAGE)} imports up the flow: " + "; ".join(upward)


def test_every_module_sits_in_a_stage_folder() -> None:
    loose = [p.name for p in PACKAGE.glob("*.py") if p.name not in TOP_LEVEL]
    assert not loose, f"modules outside a stage folder: {loose}"
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()} == set(FOLDERS)
