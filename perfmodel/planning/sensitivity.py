"""Sensitivity of step time to each hardware parameter: the elasticity d log T / d log p.

Central finite differences on a log scale: T is predicted with the parameter at p x (1 + step) and p / (1 + step),
and elasticity = (log T+ - log T-) / (2 log(1 + step)). -1 means the step is entirely bound by that parameter (1%
more of it, 1% less time); 0 means it does not matter. Two flavours: at the baseline's layout (how the run as
configured is bound), and with the layout searched again at each point (what a re-planned run would gain), the
latter only when the scenario leaves layout dimensions open.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.precision import get_recipe
from perfmodel.inputs.scenario import Scenario, single_phase
from perfmodel.planning.predict import Prediction, for_layout, predict
from perfmodel.planning.request import API, Spelling
from perfmodel.planning.whatif import Knob, Setting, apply, current, timing_knobs

DEFAULT_STEP = 0.05
MIN_STEP = 1e-4
"""Below this the perturbed step times differ from the baseline by about the rounding of a double: 1e-300 gave
all-zero elasticities."""


@dataclass(frozen=True)
class Elasticity:
    knob: Knob
    value: float
    fixed_layout: float
    best_layout: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "parameter": self.knob.name,
            "description": self.knob.description,
            "value": self.value,
            "unit": self.knob.unit,
            "elasticity_fixed_layout": self.fixed_layout,
            "elasticity_best_layout": self.best_layout,
        }


@dataclass(frozen=True)
class Sensitivity:
    baseline: Prediction
    step: float
    elasticities: list[Elasticity]

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline.to_dict(),
            "method": "central finite differences of log step time over log parameter, parameter x (1 +/- step)",
            "step": self.step,
            "parameters": [e.to_dict() for e in self.elasticities],
        }


def check_step(step: float, typed: str) -> None:
    """A step from MIN_STEP to below 1, else one line naming it as `typed` (`--step 150%`) and why: a smaller one
    vanishes in floating-point rounding, a larger one (a parameter x2 or more) measures no local elasticity, and
    none but a positive number is a step."""
    if MIN_STEP <= step < 1:
        return
    why = (
        "a larger one (each parameter x2 and /2 or more) measures no local elasticity"
        if step >= 1
        else "smaller steps vanish in floating-point rounding"
        if 0 < step < MIN_STEP
        else "a step is a positive number (the differences go both ways from the parameter)"
    )
    raise PerfmodelError(f"{typed}: must be from {MIN_STEP:g} to below 1 (a relative change, e.g. 0.05 or 5%); {why}")


def sensitivity(
    scenario: Scenario,
    step: float = DEFAULT_STEP,
    progress: Callable[[int, int], None] | None = None,
    spelling: Spelling = API,
) -> Sensitivity:
    """Elasticity of the step time to every hardware parameter that can change it, largest magnitude first. A bad
    `step` is named as `spelling` spells it: the Python API's keyword (`step=1.5`) by default, since the CLI checks
    its `--step` as typed (cli/options.RelativeChange)."""
    check_step(step, spelling.given("step", step))
    single_phase(scenario, "sensitivity", "ask it of one phase's scenario (the step it differentiates is a phase's)")
    hw = resolve(scenario.gpu, scenario.system)
    baseline = predict(scenario, hardware=hw)
    fixed = for_layout(scenario, baseline.layout)
    research = baseline.layouts_searched > 1
    knobs = timing_knobs(hw, ("bf16", get_recipe(scenario.precision, hw.accelerator).gemm_format))
    h = math.log1p(step)
    found = []
    for i, knob in enumerate(knobs, 1):
        up, down = (apply(hw, [Setting(knob, math.exp(sign * h), True)]) for sign in (1, -1))

        def elasticity(of: Scenario, up: Any = up, down: Any = down) -> float:
            high, low = predict(of, hardware=up).step_time_s, predict(of, hardware=down).step_time_s
            return (math.log(high) - math.log(low)) / (2 * h)

        value = current(hw, knob)
        assert value is not None
        found.append(Elasticity(knob, value, elasticity(fixed), elasticity(scenario) if research else None))
        if progress is not None:
            progress(i, len(knobs))
    found.sort(key=lambda e: -max(abs(e.fixed_layout), abs(e.best_layout or 0.0)))
    return Sensitivity(baseline, step, found)
