"""Start-up: `perfmodel predict` imports only what it needs (README "Speed"; issue 15)."""

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import perfmodel.cli
from perfmodel.cli import COMMANDS, cli
from perfmodel.inputs.files import nesting_depth
from perfmodel.physics import calibration


def test_every_command_is_listed_with_the_module_that_defines_it() -> None:
    """The lazy group finds a command through COMMANDS: a command added to a module but not there would vanish."""
    for info in pkgutil.iter_modules(perfmodel.cli.__path__):
        importlib.import_module(f"perfmodel.cli.{info.name}")
    assert set(cli.commands) == set(COMMANDS)
    for name, command in cli.commands.items():
        assert command.callback is not None
        defined_in = sys.modules[command.callback.__module__].__name__
        assert defined_in == f"perfmodel.cli.{COMMANDS[name]}", name


def test_predict_imports_no_other_command() -> None:
    """Each command's module is imported when that command runs, not at start-up."""
    code = (
        "import sys; from perfmodel.cli import main\n"
        "try:\n    main(['predict', '--format', 'json'])\nexcept SystemExit:\n    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('perfmodel.cli.'))\n"
        "assert loaded == ['perfmodel.cli.options', 'perfmodel.cli.predict'], loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_predict_on_a_warm_cache_imports_only_what_it_uses(tmp_path: Path) -> None:
    """tempfile (writing a cache entry), csv (`--format csv`), inputs/mlperf.py (a benchmark scenario),
    planning/search.py (a layout left open; the default scenario gives its own) and the expert exchange and Experts
    line (a MoE model; the default is dense), statistics (the kernel rows' medians, worked out once and cached) and
    the campaign modules (a scenario with phases) are imported by what uses them: about 10 ms of a bare
    interpreter's 0.15 s start (benchmarks/README.md, issue 15). Counted beyond what the interpreter had imported
    before perfmodel (a site hook may import tempfile or csv itself)."""
    used_elsewhere = {"tempfile", "csv", "statistics", "perfmodel.inputs.mlperf", "perfmodel.planning.search"} | {
        "perfmodel.physics.expert_exchange",
        "perfmodel.outputs.experts",
        "perfmodel.planning.campaign",
        "perfmodel.outputs.campaign_report",
    }
    code = (
        "import sys; before = set(sys.modules); from perfmodel.cli import main\n"
        "try:\n    main(['predict'])\nexcept SystemExit:\n    pass\n"
        f"print(sorted({used_elsewhere!r} & set(sys.modules) - before), file=sys.stderr)"
    )
    env = os.environ | {"PERFMODEL_CACHE_DIR": str(tmp_path)}
    for _ in range(2):  # the first run writes the cache entries (and may import tempfile), the second only reads
        done = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    assert done.stderr == "[]\n"


def _depth_token_by_token(text: str) -> int:
    """The plain reading of nesting_depth's rule: scan strings, comments and brackets one match at a time."""
    import re

    depth = deepest = 0
    for match in re.finditer(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}]', text):
        if match.group() in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif match.group() in ("]", "}"):
            depth = max(0, depth - 1)
    return deepest


@given(st.text(alphabet="[]{}\"'#\\\nab =,", max_size=200))
def test_nesting_depth_reads_strings_and_comments_as_the_rule_says(text: str) -> None:
    """The one-pass form (strings and comments removed first) counts exactly what a token-by-token scan counts."""
    assert nesting_depth(text) == _depth_token_by_token(text)


def test_nesting_depth_of_the_bundled_calibration_is_its_real_depth() -> None:
    text = calibration.BUNDLED.read_text()
    assert nesting_depth(text) == _depth_token_by_token(text) > 1
