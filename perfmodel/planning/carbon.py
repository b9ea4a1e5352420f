"""A run's carbon: operational tCO2e from its facility energy at the grid's intensity (inputs/grids.py), and the
hardware's embodied tCO2e spread over its GPU-hours, a labelled estimate. Plain arithmetic, so that the workbook
evaluates these same functions on its cells."""

from __future__ import annotations

from typing import Any

GRAMS_PER_TONNE = 1e6
EMBODIED_G_PER_GPU_HOUR = 11.2e6 / 1_082_990
"""Embodied gCO2e per GPU-hour: BLOOM's 11.2 tCO2e of embodied emissions over its 1,082,990 A100 GPU-hours."""
EMBODIED_SOURCE = (
    "estimate: Luccioni, Viguier and Ligozat, 'Estimating the Carbon Footprint of BLOOM' (JMLR 2023, arXiv "
    "2211.02001): 11.2 tCO2e embodied in the servers and A100s (2.5 t a server, 150 kg a GPU, over 6 years at 85% "
    "use) for 1,082,990 GPU-hours, ~10.3 g per GPU-hour; an A100-era estimate, likely low for newer parts with more "
    "HBM and silicon"
)


def operational_t(energy_kwh: Any, grid_gco2_per_kwh: Any) -> Any:
    """Tonnes of CO2e the run's facility energy emits on the grid (floats or sympy symbols)."""
    return energy_kwh * grid_gco2_per_kwh / GRAMS_PER_TONNE


def embodied_t(gpu_hours: Any, embodied_gco2e_per_gpu_hour: Any = EMBODIED_G_PER_GPU_HOUR) -> Any:
    """Tonnes of CO2e embodied in the hardware, the run's share of it by GPU-hours."""
    return gpu_hours * embodied_gco2e_per_gpu_hour / GRAMS_PER_TONNE
