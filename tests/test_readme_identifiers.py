"""The README's "Identifiers" list names every bundled model, accelerator, system and precision and nothing else: it
had drifted 13 models and the Grand Teton H100 behind `perfmodel models list` and `hardware list`."""

from __future__ import annotations

import re
from pathlib import Path

from perfmodel.inputs import PRECISIONS
from perfmodel.inputs.hardware import accelerators, systems
from perfmodel.inputs.models import ZOO

ROOT = Path(__file__).resolve().parent.parent


def _listed() -> dict[str, set[str]]:
    """The README's identifiers by kind: the backticked ids between 'Identifiers: models', 'accelerators',
    'systems', 'precisions' and the list's end at `--zero`."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = readme[readme.index("Identifiers: models") : readme.index("`--zero` 0 plain data parallel")]
    parts = re.split(r"\b(models|accelerators|systems|precisions)\b(?=\s*\n?`)", paragraph)
    return {kind: set(re.findall(r"`([a-z0-9][a-z0-9.-]*)`", text)) - {"--ep", "--etp"}
            for kind, text in zip(parts[1::2], parts[2::2], strict=True)}  # fmt: skip


def test_the_readme_lists_every_bundled_identifier() -> None:
    listed = _listed()
    assert listed["models"] == set(ZOO)
    assert listed["accelerators"] == set(accelerators())
    assert listed["systems"] == set(systems())
    assert listed["precisions"] == set(PRECISIONS)
