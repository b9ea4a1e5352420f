"""perfmodel: predict the time, cost and energy of LLM training on GPU clusters from first principles.

    import perfmodel
    p = perfmodel.predict(model="llama3.1-405b", gpu="gb300", n_gpus=512, precision="nvfp4", tokens=15.6e12)
    p.to_dict()["time_to_train_days"]

The public API (perfmodel/api.py, README "Python API") is imported on first use, so that `import perfmodel` and
the CLI start fast; `from perfmodel import predict` works the same as the attribute.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from perfmodel.errors import InfeasibleLayout, PerfmodelError

if TYPE_CHECKING:
    from perfmodel.api import (
        calibrate,
        compare,
        frame,
        launch,
        load_scenario,
        plan,
        plan_fleet,
        predict,
        search,
        validate,
    )  # fmt: skip
    from perfmodel.fitting.validation import Report as ValidationReport
    from perfmodel.inputs.scenario import Scenario
    from perfmodel.planning.campaign import Campaign
    from perfmodel.planning.compare import Comparison
    from perfmodel.planning.plan import PlanReport
    from perfmodel.planning.predict import Prediction, SearchReport

_LAZY = {
    "predict": ("perfmodel.api", "predict"),
    "search": ("perfmodel.api", "search"),
    "compare": ("perfmodel.api", "compare"),
    "validate": ("perfmodel.api", "validate"),
    "calibrate": ("perfmodel.api", "calibrate"),
    "plan": ("perfmodel.api", "plan"),
    "plan_fleet": ("perfmodel.api", "plan_fleet"),
    "launch": ("perfmodel.api", "launch"),
    "frame": ("perfmodel.api", "frame"),
    "PlanReport": ("perfmodel.planning.plan", "PlanReport"),
    "load_scenario": ("perfmodel.api", "load_scenario"),
    "Scenario": ("perfmodel.inputs.scenario", "Scenario"),
    "Prediction": ("perfmodel.planning.predict", "Prediction"),
    "Campaign": ("perfmodel.planning.campaign", "Campaign"),
    "SearchReport": ("perfmodel.planning.predict", "SearchReport"),
    "Comparison": ("perfmodel.planning.compare", "Comparison"),
    "ValidationReport": ("perfmodel.fitting.validation", "Report"),
}

__all__ = [
    "Campaign", "Comparison", "InfeasibleLayout", "PerfmodelError", "PlanReport", "Prediction", "Scenario",
    "SearchReport", "ValidationReport", "__version__", "calibrate", "compare", "frame", "launch", "load_scenario",
    "plan", "plan_fleet", "predict", "search", "validate",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the installed distribution's, read on first use (importlib.metadata is not free)
        from importlib.metadata import version

        globals()[name] = version("perfmodel")
        return globals()[name]
    if name not in _LAZY:
        raise AttributeError(f"module 'perfmodel' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, "__version__"})  # a lazy name once loaded is in both
