"""scripts/mutations.py's deliberate bugs still apply to today's code: each one's old text occurs exactly once in its
file, so that a refactor which leaves a mutation stale fails here, in CI, rather than the next time someone runs the
(12-minute) script. Two had gone stale unnoticed: the CP ring's volume after the exchange's refactor, and the LM
head's forward GEMM after the head learnt its recipe."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _mutations() -> tuple[Any, ...]:
    spec = importlib.util.spec_from_file_location("mutations", ROOT / "scripts" / "mutations.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module.MUTATIONS


MUTATIONS = _mutations()


def test_there_are_at_least_fifteen_mutations() -> None:
    assert len(MUTATIONS) >= 15  # issue 27 item 4


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_each_mutation_applies_once_and_changes_the_code(mutation: Any) -> None:
    text = (ROOT / mutation.path).read_text(encoding="utf-8")
    assert text.count(mutation.old) == 1, f"{mutation.name}: its old text occurs {text.count(mutation.old)} times"
    assert mutation.new != mutation.old
