"""The seed's MLPerf headline as ratios anyone can recompute: Llama 3.1 405B on 512 GPUs, measured and predicted.

Four MLPerf Training results at 512 GPUs (mlperf_training_llm.csv): H100 FP8 (v5.0, NVIDIA Eos-dfw), GB200 FP8
(v5.0, NVIDIA Tyche), GB200 NVFP4 and GB300 NVFP4 (v5.1, NVIDIA Tyche and Theia). Each is priced as `validate`
prices its bundled row: at its published layout and batch (the scenarios/mlperf-405b-*.toml files hold the same
layouts), at the work its score stands for (fitting.scored) and at its own release, so that a ratio's error is the
time model's, not the convergence draw's. The seed claims the speed ratios 3.2x, 1.4x, 1.9x and 4.2x and "about 2x
performance per dollar": GB300 NVFP4 against H100 FP8 at the bundled on-demand prices ($13.13 and $6.16 per
GPU-hour: 4.17 x 6.16 / 13.13 = 1.96x; GB300's price is itself an estimate, GB200's list price x 1.25).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perfmodel.errors import PerfmodelError

if TYPE_CHECKING:
    from perfmodel.fitting.validation import Row
    from perfmodel.physics.calibration import Calibration


@dataclass(frozen=True)
class SeedRun:
    label: str
    row: str
    """The bundled MLPerf row (fitting.runs id) of its Llama 3.1 405B result."""
    scenario: str
    """The bundled scenario with its published layout and batch (`perfmodel predict scenarios/<file>`)."""


@dataclass(frozen=True)
class Claim:
    name: str
    faster: str
    slower: str
    seed: str
    """The seed's figure, as it states it."""
    per_dollar: bool = False


H100_FP8, GB200_FP8, GB200_NVFP4, GB300_NVFP4 = (
    "H100 FP8 (v5.0)", "GB200 FP8 (v5.0)", "GB200 NVFP4 (v5.1)", "GB300 NVFP4 (v5.1)",
)  # fmt: skip
RUNS = (
    SeedRun(H100_FP8, "mlperf:v5.0/NVIDIA/eos-dfw_n64_ngc25.01_nemo/llama31_405b", "mlperf-405b-h100-512.toml"),
    SeedRun(GB200_FP8, "mlperf:v5.0/NVIDIA/tyche_ngpu512_ngc25.04_nemo/llama31_405b", "mlperf-405b-gb200-512.toml"),
    SeedRun(
        GB200_NVFP4, "mlperf:v5.1/NVIDIA/tyche_ngpu512_ngc25.09_nemo/llama31_405b", "mlperf-405b-gb200-512-nvfp4.toml"
    ),
    SeedRun(
        GB300_NVFP4, "mlperf:v5.1/NVIDIA/theia_ngpu512_ngc25.09_nemo/llama31_405b", "mlperf-405b-gb300-512-nvfp4.toml"
    ),
)
CLAIMS = (
    Claim("GB200 NVFP4 / H100 FP8", GB200_NVFP4, H100_FP8, "3.2x"),
    Claim("GB200 NVFP4 / GB200 FP8", GB200_NVFP4, GB200_FP8, "1.4x"),
    Claim("GB300 NVFP4 / GB200 FP8", GB300_NVFP4, GB200_FP8, "1.9x"),
    Claim("GB300 NVFP4 / H100 FP8", GB300_NVFP4, H100_FP8, "4.2x"),
    Claim("GB300 NVFP4 / H100 FP8, per dollar", GB300_NVFP4, H100_FP8, "about 2x", per_dollar=True),
)
BENCHMARK = "mlperf-llama31-405b"


@dataclass(frozen=True)
class PricedRun:
    seed: SeedRun
    row: Row
    usd_per_gpu_hour: float
    price_source: str
    price_basis: str

    @property
    def measured_min(self) -> float:
        return self.row.prepared.run.measured

    @property
    def predicted_min(self) -> float:
        return self.row.predicted

    def to_dict(self) -> dict[str, Any]:
        run = self.row.prepared.run
        return {
            "run": self.seed.label, "id": run.id, "source_row": f"mlperf_training_llm.csv, {run.source}: {run.detail}",
            "scenario": f"scenarios/{self.seed.scenario}", "accelerator": run.accelerator, "n_gpus": run.n_gpus,
            "precision": run.precision, "layout": _layout(self.row),
            "measured_min": self.measured_min, "predicted_min": self.predicted_min, "error_pct": self.row.error_pct,
            "usd_per_gpu_hour": self.usd_per_gpu_hour, "price_source": self.price_source,
            "price_basis": self.price_basis,
        }  # fmt: skip


@dataclass(frozen=True)
class Ratio:
    claim: Claim
    measured: float
    predicted: float

    @property
    def error_pct(self) -> float:
        return (self.predicted / self.measured - 1) * 100

    def to_dict(self) -> dict[str, Any]:
        return {
            "ratio": self.claim.name, "faster": self.claim.faster, "slower": self.claim.slower,
            "per_dollar": self.claim.per_dollar, "seed": self.claim.seed, "measured": self.measured,
            "predicted": self.predicted, "error_pct": self.error_pct,
        }  # fmt: skip


@dataclass(frozen=True)
class SeedRatios:
    runs: list[PricedRun]
    ratios: list[Ratio]
    calibration: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": [r.to_dict() for r in self.runs],
            "ratios": [r.to_dict() for r in self.ratios],
            "calibration": self.calibration,
        }


def _layout(row: Row) -> str:
    lo = row.prepared.layout
    return f"TP{lo.tp} PP{lo.pp} CP{lo.cp} VP{lo.vp}, GBS {lo.gbs}"


def seed_ratios(calibration: Calibration) -> SeedRatios:
    """The four runs priced with `calibration`, and the seed's ratios measured and predicted."""
    from perfmodel.fitting.runs import bundled_runs
    from perfmodel.fitting.validation import validate
    from perfmodel.inputs.hardware import get_accelerator

    runs = {}
    for run in bundled_runs()[0]:
        if run.scenario.get("benchmark", "").startswith(BENCHMARK):
            runs[run.id] = run
    missing = [seed.row for seed in RUNS if seed.row not in runs]
    if missing:
        raise PerfmodelError(f"the bundled MLPerf rows lack {', '.join(missing)}")
    report = validate([runs[seed.row] for seed in RUNS], calibration)
    priced = {}
    for seed, row in zip(RUNS, report.rows, strict=True):
        price = get_accelerator(row.prepared.run.accelerator).usd_per_gpu_hour
        if price is None:
            raise PerfmodelError(f"{row.prepared.run.accelerator} has no bundled on-demand price")
        priced[seed.label] = PricedRun(seed, row, price.value, price.source, price.basis)
    return SeedRatios(list(priced.values()), [_ratio(claim, priced) for claim in CLAIMS], calibration.source)


def _ratio(claim: Claim, priced: dict[str, PricedRun]) -> Ratio:
    """How many times faster (or, per dollar, how much more work per dollar) `faster` is than `slower`: the time
    ratio at the same GPU count, times the ratio of their prices per GPU-hour for a per-dollar claim."""
    fast, slow = priced[claim.faster], priced[claim.slower]
    price = slow.usd_per_gpu_hour / fast.usd_per_gpu_hour if claim.per_dollar else 1.0
    return Ratio(
        claim,
        slow.measured_min / fast.measured_min * price,
        slow.predicted_min / fast.predicted_min * price,
    )
