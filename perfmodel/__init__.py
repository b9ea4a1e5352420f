"""perfmodel: predict the time, cost and energy of LLM training on GPU clusters from first principles.

The public API is imported lazily so that `perfmodel --help` and the CLI start fast.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Goal", "Prediction", "Scenario", "load_scenario", "plan", "predict"]


def __getattr__(name: str) -> Any:
    if name in ("predict", "Prediction"):
        from perfmodel.planning import predict as module

        return getattr(module, name)
    if name in ("plan", "Goal"):
        from perfmodel.planning import plan as planning

        return getattr(planning, name)
    if name in ("Scenario", "load_scenario"):
        from perfmodel.inputs import scenario

        return getattr(scenario, name)
    raise AttributeError(f"module 'perfmodel' has no attribute {name!r}")
