"""`perfmodel.plan_fleet` (issue 31, item 5): the fleet plan from Python, checked as the CLI checks it, with the
object `plan --fleet --format json` prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from fleet_files import NEOCLOUD

import perfmodel
from perfmodel.outputs.report import to_json

FLEET = '[[pool]]\nname = "hall-a"\nsystem = "dgx-h100"\ngpus = 64\nsite = "Hall A"\n' + NEOCLOUD
JOBS = """
[[job]]
name = "tight"
model = "llama3.1-8b"
tokens = "100B"
deadline_days = 1

[[job]]
name = "loose"
model = "llama3.1-8b"
tokens = "100B"
deadline_days = 3
"""


def _timeless(found: Any) -> Any:
    """A plan's JSON without the seconds it took (at any depth)."""
    if isinstance(found, dict):
        return {key: _timeless(value) for key, value in found.items() if key != "elapsed_s"}
    return [_timeless(value) for value in found] if isinstance(found, list) else found


def _same_as_cli(report: Any, *args: str) -> None:
    result = run_cli("plan", *args, "--format", "json", "-q")
    assert result.code == 0, result.err
    assert _timeless(json.loads(to_json(report.to_dict()))) == _timeless(json.loads(result.out))


def test_a_fleet_plan_equals_the_clis(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET)
    report = perfmodel.plan_fleet(path, model="llama3.1-8b", tokens=100e9, deadline_s=86400, confidence=0.8)
    _same_as_cli(report, "--fleet", str(path), "--model", "llama3.1-8b", "--tokens", "100B", "--deadline", "1d",
                 "--confidence", "0.8")  # fmt: skip
    (plan,) = report.to_dict()["fleet_plans"]
    assert plan["feasible"] and plan["owned_gpus"] == 64
    assert len(report.to_records()) == 1


def test_jobs_sharing_a_fleet_equal_the_clis(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET + JOBS)
    report = perfmodel.plan_fleet(str(path), power_mw=0.5)
    _same_as_cli(report, "--fleet", str(path), "--power-mw", "0.5")
    assert [job["job"] for job in report.to_dict()["jobs"]] == ["tight", "loose"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda p: perfmodel.plan_fleet(None), r"^fleet=None: allowed a file name"),
        (lambda p: perfmodel.plan_fleet(p, model="llama3.1-8b", tokens=1e11), r"plan needs a goal: --deadline"),
        (lambda p: perfmodel.plan_fleet(p, tokens=1e11, deadline_s=-1), r"^deadline_s=-1: "),
        (lambda p: perfmodel.plan_fleet(p, tokens=1e11, deadline_s=86400, confidence=1), r"^confidence=1: allowed"),
        (lambda p: perfmodel.plan_fleet(p, tokens=1e11, deadline_days=1), r"^unknown keyword 'deadline_days'"),
        (lambda p: perfmodel.plan_fleet(p.parent / "missing.toml", deadline_s=86400), r"missing\.toml"),
    ],
)
def test_bad_arguments_raise_the_clis_line(tmp_path: Path, call: Any, message: str) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET)
    with pytest.raises(perfmodel.PerfmodelError, match=message):
        call(path)


def test_a_goal_beside_jobs_is_refused_in_the_apis_words(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET + JOBS)
    with pytest.raises(perfmodel.PerfmodelError, match=r"has \[\[job\]\]s, .*: drop deadline_s and budget_usd$"):
        perfmodel.plan_fleet(path, deadline_s=86400)
    bad = tmp_path / "bad.toml"
    bad.write_text(FLEET.replace("gpus = 64", "gpus = -3"))
    cli = run_cli("plan", "--fleet", str(bad), "--deadline", "1d", "-q")
    with pytest.raises(perfmodel.PerfmodelError) as caught:
        perfmodel.plan_fleet(bad, deadline_s=86400)
    assert cli.code == 2 and cli.err == f"error: {caught.value}\n"


BUY = '[[offer]]\nname = "vendor"\nsystem = "dgx-h100"\nusd_per_system = 400000\nmax_gpus = 64\n'
"""An offer to buy: it reads the purchase options but its own price."""


def test_a_fleets_offer_to_buy_reads_the_purchase_options_it_prices_with(tmp_path: Path) -> None:
    """`plan_fleet(..., amortisation_years=2)` was refused ("needs buy=True") where `plan --fleet` took it: the
    fleet's offer to buy spreads its price over them, from Python as from the command line; the API equals the CLI."""
    path = tmp_path / "fleet.toml"
    path.write_text(BUY)
    goal = {"model": "llama3.1-8b", "tokens": 100e9, "deadline_s": 3 * 86400, "confidence": 0.5}
    report = perfmodel.plan_fleet(path, amortisation_years=2, **goal)  # type: ignore[arg-type]
    longer = perfmodel.plan_fleet(path, amortisation_years=8, **goal)  # type: ignore[arg-type]
    assert report.to_dict()["fleet_plans"][0]["cost_usd"] > longer.to_dict()["fleet_plans"][0]["cost_usd"]
    _same_as_cli(report, "--fleet", str(path), "--model", "llama3.1-8b", "--tokens", "100B", "--deadline", "3d",
                 "--confidence", "0.5", "--amortisation-years", "2")  # fmt: skip


@pytest.mark.parametrize(
    ("fleet", "flag", "says"),
    [
        (BUY, ("--usd-per-system", "1M"), "--usd-per-system: a fleet's offers to buy carry their own price: set it in "
         "{path}, field 'offer.0.usd_per_system'"),
        (NEOCLOUD, ("--utilisation", "0.5"), "--utilisation: prices owning the systems; {path} has no offer to buy"),
    ],
)  # fmt: skip
def test_a_purchase_option_a_fleet_does_not_read_is_refused(
    tmp_path: Path, fleet: str, flag: tuple[str, str], says: str
) -> None:
    """`plan --fleet --usd-per-system 1M` was accepted and never read (each offer carries its own price), and with
    no offer to buy every purchase option was: refused, naming where the price goes."""
    path = tmp_path / "fleet.toml"
    path.write_text(fleet)
    result = run_cli("plan", "--fleet", str(path), "--model", "llama3.1-8b", "--tokens", "100B", "--deadline", "3d",
                     *flag)  # fmt: skip
    assert result.code == 2
    assert says.format(path=path) in result.err.strip().splitlines()[-1], result.err
