"""Cost of owning the cluster instead of renting it, per GPU-hour of the job.

The purchase price of a system is spread over the hours it trains in its life (amortisation years x 8,760 h x
utilisation) and over the GPUs a job uses of it (8 of a DGX, 64 of an NVL72 rack: the 8 spare GPUs are paid for
too); the GPUs' power at the wall (board, host share, network) x PUE is paid at the electricity price while
they train; a facility (colocation) price per kW of that power and month is paid whether they train or not. The
formula is plain arithmetic so that the exported workbook evaluates this same function on its cells.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.hardware import Hardware
from perfmodel.inputs.scenario import Cost
from perfmodel.planning.training import Price

HOURS_PER_YEAR = 8760.0
DEFAULT_USD_PER_KWH: float = Cost().usd_per_kwh
YEARS_SOURCE = "estimate: 4 years, a common depreciation life for AI servers (hyperscalers use 5-6)"
UTILISATION_SOURCE = "estimate: 80% of the hours the cluster trains (the rest: maintenance, idle, other jobs)"
USD_PER_KWH_SOURCE = (
    "assumption: about the US average industrial retail electricity price of 2023-2024 (EIA Electric Power "
    "Monthly, table 5.3: ~8 cents/kWh); pass --usd-per-kwh for your site"
)


def owned_usd_per_gpu_hour(
    usd_per_system: Any, gpus_per_system: Any, years: Any, utilisation: Any, power_w: Any, pue: Any,
    usd_per_kwh: Any, facility_usd_per_kw_month: Any,
) -> Any:  # fmt: skip
    """Capex, power and facility per GPU-hour the job uses (floats or sympy symbols)."""
    trained_hours = years * HOURS_PER_YEAR * utilisation
    capex = usd_per_system / gpus_per_system / trained_hours
    power = power_w / 1000 * pue * usd_per_kwh
    facility = facility_usd_per_kw_month * 12 * power_w / 1000 / (HOURS_PER_YEAR * utilisation)
    return capex + power + facility


@dataclass(frozen=True)
class Ownership:
    """What owning costs: the system's price range and the parts of the cost per GPU-hour."""

    usd_per_system: float
    min_usd_per_system: float
    max_usd_per_system: float
    source: str
    gpus_per_system: int
    cost: Cost
    power_w: float

    def per_gpu_hour(self, usd_per_system: float) -> float:
        c = self.cost
        return owned_usd_per_gpu_hour(
            usd_per_system, self.gpus_per_system, c.amortisation_years, c.utilisation, self.power_w, c.pue,
            c.usd_per_kwh, c.facility_usd_per_kw_month,
        )  # fmt: skip

    def price(self) -> Price:
        return Price(
            self.per_gpu_hour(self.usd_per_system),
            self.per_gpu_hour(self.min_usd_per_system),
            self.per_gpu_hour(self.max_usd_per_system),
            f"owned: {self.source}, over {self.cost.amortisation_years:g} years at {self.cost.utilisation:.0%}",
            "owned",
            f"purchase over {self.cost.amortisation_years:g} years at {self.cost.utilisation:.0%}, power, facility",
        )

    def to_dict(self) -> dict[str, Any]:
        c = self.cost
        capex = owned_usd_per_gpu_hour(self.usd_per_system, self.gpus_per_system, c.amortisation_years,
                                       c.utilisation, 0.0, c.pue, c.usd_per_kwh, 0.0)  # fmt: skip
        return {
            "usd_per_system": self.usd_per_system,
            "min_usd_per_system": self.min_usd_per_system,
            "max_usd_per_system": self.max_usd_per_system,
            "usd_per_system_source": self.source,
            "gpus_per_system": self.gpus_per_system,
            "amortisation_years": c.amortisation_years,
            "utilisation": c.utilisation,
            "usd_per_kwh": c.usd_per_kwh,
            "facility_usd_per_kw_month": c.facility_usd_per_kw_month,
            "capex_usd_per_gpu_hour": capex,
            "power_usd_per_gpu_hour": self.power_w / 1000 * c.pue * c.usd_per_kwh,
            "facility_usd_per_gpu_hour": c.facility_usd_per_kw_month
            * 12
            * self.power_w
            / 1000
            / (HOURS_PER_YEAR * c.utilisation),
        }


def ownership(hw: Hardware, cost: Cost) -> Ownership | None:
    """The cost of owning `hw` under `cost`, or None when no purchase price is known or given."""
    if cost.usd_per_system is not None:
        given = cost.usd_per_system
        return Ownership(given, given, given, "given by the user", hw.job_gpus_per_system, cost,
                         hw.it_power_w_per_gpu)  # fmt: skip
    system = hw.system
    if system.usd_per_system is None:
        return None
    low = system.usd_per_system_low or system.usd_per_system
    high = system.usd_per_system_high or system.usd_per_system
    return Ownership(system.usd_per_system.value, low.value, high.value, system.usd_per_system.source,
                     hw.job_gpus_per_system, cost, hw.it_power_w_per_gpu)  # fmt: skip


def buy_price(hw: Hardware, cost: Cost) -> Price:
    found = ownership(hw, cost)
    if found is None:
        raise PerfmodelError(f"--buy: no purchase price for {hw.system.id} in hardware_specs; pass --usd-per-system")
    return found.price()
