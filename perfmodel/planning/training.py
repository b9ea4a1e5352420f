"""From step time to a training run: time-to-train, GPU-hours, cost (with the price range) and energy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from perfmodel.inputs.hardware import Accelerator

SECONDS_PER_HOUR = 3600.0
JOULES_PER_KWH = 3.6e6


AT_MIN_PRICE, AT_MAX_PRICE = "_at_min_price", "_at_max_price"
"""The suffixes of a figure at the low and the high end of its price range (`cost_usd_at_min_price`); never
`_low/_high`, which name only an 80% interval (ARCHITECTURE.md's output contract)."""


@dataclass(frozen=True)
class Price:
    usd_per_gpu_hour: float | None
    minimum: float | None
    maximum: float | None
    source: str
    basis: str = "quoted"
    """'list' (published on-demand), 'estimate' (derived), 'quoted' (the user's), 'owned' (--buy) or 'none'."""
    note: str = ""
    """The basis in one line, as tables show it beside the price."""
    distribution: tuple[float, float, float] | None = None
    """A triangular distribution of the price the user states (low, mode, high, USD per GPU-hour): drawn in the
    cost's quantiles and P(cost within budget) (planning/confidence.py); None: the price is a quote, not drawn."""

    @classmethod
    def for_run(cls, acc: Accelerator, given: float | None, distribution: tuple[float, ...] | None = None) -> Price:
        """The user's price when given (a quote, or a triangular distribution quoted at its mode and ranging over
        its ends), else the accelerator's own (list, estimate or a user file's quote) and its low-high range."""
        if distribution is not None:
            bottom, mode, top = distribution
            note = f"triangular ${bottom:,.2f}/${mode:,.2f}/${top:,.2f} given for this run"
            source = "given by the user (triangular low/mode/high)"
            return cls(mode, bottom, top, source, "quoted", note, (bottom, mode, top))
        if given is not None:
            return cls(given, given, given, "given by the user", "quoted", "given for this run")
        figure = acc.usd_per_gpu_hour
        if figure is None:
            return cls(None, None, None, f"no public price for {acc.id}; pass --usd-per-gpu-hour", "none")
        low = acc.usd_per_gpu_hour_low or figure
        high = acc.usd_per_gpu_hour_high or figure
        return cls(figure.value, low.value, high.value, figure.source, figure.basis, figure.note or figure.source)

    @property
    def drawn(self) -> tuple[float, float, float] | None:
        """The stated distribution as factors on the quoted price (planning/confidence.py's `Spread.price`)."""
        if self.distribution is None or not self.usd_per_gpu_hour:
            return None
        low, mode, high = (value / self.usd_per_gpu_hour for value in self.distribution)
        return low, mode, high

    @property
    def basis_line(self) -> str:
        """'estimate: GB200's CoreWeave list price x 1.25 ...': the basis and its note, one line."""
        return f"{self.basis}: {self.note}" if self.note else self.basis


class Run(NamedTuple):
    """A training run's totals (a NamedTuple: one is made per prediction, and a tuple is built 5x faster than a
    frozen dataclass)."""

    tokens: float
    time_s: float
    gpu_hours: float
    cost_usd: float | None
    cost_usd_at_min_price: float | None
    cost_usd_at_max_price: float | None
    energy_kwh: float


def training_run(tokens: float, time_s: float, n_gpus: int, price: Price, power_w: float, pue: float) -> Run:
    """A run of `tokens` taking `time_s` on `n_gpus`. Energy counts the power per GPU at the wall (`power_w`:
    board, host share, network) times the facility PUE."""
    gpu_hours = n_gpus * time_s / SECONDS_PER_HOUR

    def cost(rate: float | None) -> float | None:
        return None if rate is None else gpu_hours * rate

    return Run(tokens, time_s, gpu_hours, cost(price.usd_per_gpu_hour), cost(price.minimum), cost(price.maximum),
               n_gpus * power_w * time_s * pue / JOULES_PER_KWH)  # fmt: skip
