"""Start-up: `perfmodel predict` imports only what it needs (README "Speed"; issue 15)."""

import importlib
import pkgutil
import subprocess
import sys

import perfmodel.cli
from perfmodel.cli import COMMANDS, cli


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
