"""Fleet-file pieces the fleet tests share (TOML text), and the fleet plan and node power they read of them."""

from pathlib import Path

from perfmodel.inputs.fleet import load_fleet
from perfmodel.inputs.hardware import resolve
from perfmodel.planning import fleet as fleets
from perfmodel.planning.plan import Goal, candidate_bases

NEOCLOUD = """
[[offer]]
name = "neocloud"
system = "dgx-h100"
usd_per_gpu_hour = 2.5
max_gpus = 1024
lead_time_days = 0.25
"""
"""1,024 H100 to rent at $2.50 per GPU-hour, after 6 hours."""

CAMPAIGN = """
name = "tail-on-a-quarter"
model = "llama3.1-8b"
gpu = "h100-sxm"
system = "dgx-h100"
n_gpus = 128
precision = "bf16"
tokens = 100e9

[[phase]]
name = "main"
tokens = 80e9

[[phase]]
name = "tail"
tokens = 20e9
gpu_fraction = 0.25
"""
"""A made-up campaign whose last fifth of the tokens runs on a quarter of its GPUs (to whole nodes)."""


def campaign_file(folder: Path) -> Path:
    """CAMPAIGN written as `folder`/campaign.toml, the name the fleet files' [[job]]s give it."""
    path = folder / "campaign.toml"
    path.write_text(CAMPAIGN)
    return path


def dgx_h100_report(folder: Path, fleet: str, scenario: str | None, options: dict[str, object]) -> fleets.FleetReport:
    """The fleet plans of DGX H100s for `scenario` with `options` (keywords) over the fleet file `fleet`, written in
    `folder`: due in 3 days at even odds."""
    path = folder / "fleet.toml"
    path.write_text(fleet)
    bases = candidate_bases(scenario, options, {}, ["dgx-h100"])
    return fleets.plan_fleet(bases, Goal(deadline_s=3 * 86400, confidence=0.5), load_fleet(path), None)


def dgx_h100_plan(folder: Path, fleet: str, scenario: str | None, options: dict[str, object]) -> fleets.FleetPlan:
    """The one fleet plan of `dgx_h100_report`."""
    (plan,) = dgx_h100_report(folder, fleet, scenario, options).plans
    return plan


def node_mw(plan: fleets.FleetPlan) -> float:
    """One DGX H100's site power: its 8 GPUs' draw at the wall x the plan's scenario's PUE (plan.power_mw's rule)."""
    assert plan.candidate is not None and plan.candidate.prediction is not None
    return dgx_h100_node_mw(plan.candidate.prediction.scenario.cost.pue)


def dgx_h100_node_mw(pue: float) -> float:
    """One DGX H100's site power at `pue`: its 8 GPUs' draw at the wall x the PUE (plan.power_mw's rule)."""
    return 8 * resolve("h100-sxm", "dgx-h100").it_power_w_per_gpu * pue / 1e6


RENT = """
[[offer]]
name = "cloud"
system = "dgx-h100"
usd_per_gpu_hour = 2.5
max_gpus = {gpus}
billing = "{billing}"
"""
"""H100 to rent at $2.50 per GPU-hour from day 0: `.format(gpus=..., billing="reserved" or "on_demand")`."""
