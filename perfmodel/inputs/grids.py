"""Electricity grids' carbon intensity: a few sourced regional averages that `--grid-gco2-per-kwh` accepts by name.

Location-based annual averages (what a site on that grid emits per kWh on average over a year), not marginal
figures nor a supplier's contract: pass your own number for a site with its own supply. Kept short on purpose.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from perfmodel.errors import PerfmodelError


class Grid(NamedTuple):
    g_co2e_per_kwh: float
    source: str


GRIDS: dict[str, Grid] = {
    "us": Grid(367.0, "US average 2023: 0.81 lb CO2 per kWh of generation (EIA FAQ 'How much carbon dioxide is "
                      "produced per kilowatthour of U.S. electricity generation?'; CO2 only)"),
    "world": Grid(480.0, "world average 2023: 480 gCO2 per kWh of generation (Ember, Global Electricity Review "
                         "2024)"),
    "france": Grid(32.0, "France 2023: 32 gCO2e per kWh (RTE, Bilan electrique 2023), a mostly nuclear grid"),
}  # fmt: skip
MAX_G_PER_KWH = 2000.0
"""Above any grid's annual average (coal plants emit about 1,000)."""
DEFAULT = "us"
"""The default grid: the US average, as the default electricity price is (planning/tco.py)."""


def intensity(value: str) -> float:
    """gCO2e/kWh from a number or a grid's name (one of GRIDS)."""
    named = GRIDS.get(value.strip().lower())
    if named is not None:
        return named.g_co2e_per_kwh
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not 0 <= number <= MAX_G_PER_KWH:
        raise PerfmodelError(
            f"--grid-gco2-per-kwh {value!r}: allowed a number of gCO2e per kWh from 0 to {MAX_G_PER_KWH:,.0f}, "
            f"or one of {', '.join(GRIDS)}"
        )
    return number


def source(g_co2e_per_kwh: float) -> str:
    """Where a grid figure comes from: the named grid it equals, else the user's."""
    return next((f"{name}: {g.source}" for name, g in GRIDS.items() if g.g_co2e_per_kwh == g_co2e_per_kwh),
                "given by the user")  # fmt: skip
