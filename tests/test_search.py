"""The vectorised search agrees with pricing each layout one by one."""

import numpy as np

from perfmodel.predict import context_for, layout_vars
from perfmodel.scenario import Scenario
from perfmodel.search import candidate_layouts, search
from perfmodel.step import evaluate


def test_vectorised_search_equals_one_by_one() -> None:
    scenario = Scenario(model="llama3.1-8b", gpu="h100-sxm", n_gpus=16, precision="fp8")
    ctx = context_for(scenario)
    layouts = candidate_layouts(ctx.model, 16, 8192, 128, 8, {})
    assert len(layouts) > 100
    found = search(ctx, layouts)
    one_by_one = [evaluate(ctx, layout_vars(lo)) for lo in layouts]
    times = np.array([r.step_time_s for r in one_by_one])
    fits = np.array([bool(r.fits) for r in one_by_one])
    np.testing.assert_allclose(found.step_time_s, times, rtol=1e-9)
    np.testing.assert_array_equal(found.fits, fits)
    assert found.best == layouts[int(np.argmin(np.where(fits, times, np.inf)))]


def test_fixed_dimensions_are_respected() -> None:
    scenario = Scenario(model="llama3.1-70b", gpu="h100-sxm", n_gpus=64, precision="fp8")
    ctx = context_for(scenario)
    layouts = candidate_layouts(ctx.model, 64, 8192, 128, 8, {"tp": 4, "recompute": "none"})
    assert layouts and all(lo.tp == 4 and lo.recompute == "none" for lo in layouts)
