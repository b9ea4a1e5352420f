"""Issue 31, item 3: `plan --fleet` answers with the cheapest mix of owned pools and offers per system type; owning
more never raises a plan's cost; bad fleet files are one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel.inputs.fleet import load_fleet
from perfmodel.planning import fleet as fleets
from perfmodel.planning.plan import Goal, candidate_bases

WORK = ("--model", "llama3.1-8b", "--tokens", "100B")
OFFERS = """
[[offer]]
name = "neocloud"
system = "dgx-h100"
usd_per_gpu_hour = 2.5
max_gpus = 1024
lead_time_days = 0.25
"""


def _pool(gpus: int, rate: float = 0.0) -> str:
    return (
        f'[[pool]]\nname = "hall-a"\nsystem = "dgx-h100"\ngpus = {gpus}\nsite = "Hall A"\nusd_per_gpu_hour = {rate}\n'
    )


def _write(tmp_path: Path, text: str, name: str = "fleet.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_owned_pool_is_used_first_and_the_rest_rented(tmp_path: Path) -> None:
    path = _write(tmp_path, _pool(64) + OFFERS)
    result = run_cli("plan", *WORK, "--deadline", "1d", "--fleet", str(path), "--format", "json", "--quiet")
    assert result.code == 0, result.err
    (d,) = json.loads(result.out)["fleet_plans"]
    assert d["feasible"] and d["system"] == "dgx-h100" and d["n_gpus"] > 64
    owned, rented = d["sources"]
    assert (owned["name"], owned["gpus"], owned["cost_usd"]) == ("hall-a", 64, 0.0)  # zero marginal cost
    assert rented["gpus"] == d["n_gpus"] - 64 == d["offered_gpus"] and d["owned_gpus"] == 64
    assert d["start_after_days"] == 0.25  # the offer's lead time
    assert d["cost_usd"] == pytest.approx(d["cost_usd_owned"] + d["cost_usd_rented"] + d["cost_usd_bought"])
    hours = d["plan"]["gpu_hours"] / d["n_gpus"]  # the run's hours on the goal's basis, each GPU
    assert d["cost_usd_rented"] == pytest.approx(rented["gpus"] * hours * 2.5, rel=1e-12)
    assert d["finish_days"] <= 1 and d["p_deadline"] >= 0.5
    table = run_cli("plan", *WORK, "--deadline", "1d", "--fleet", str(path), "--quiet").out
    assert "64 hall-a (Hall A)" in table and "neocloud (rent, 0.25 d)" in table and "Cheapest: dgx-h100" in table


def test_enough_owned_gpus_need_no_offer_and_cost_nothing(tmp_path: Path) -> None:
    path = _write(tmp_path, _pool(1024) + OFFERS)
    result = run_cli("plan", *WORK, "--deadline", "2d", "--fleet", str(path), "--format", "json", "--quiet")
    (d,) = json.loads(result.out)["fleet_plans"]
    assert d["offered_gpus"] == 0 and d["cost_usd"] == 0 and d["start_after_days"] == 0


@settings(max_examples=4, deadline=None)
@given(st.sampled_from([8, 32, 64, 128, 256]), st.sampled_from([16, 64, 256]), st.floats(0.0, 3.0))
def test_owning_more_never_raises_the_cost_of_a_plan(gpus: int, more: int, owned_rate: float) -> None:
    goal = Goal(deadline_s=2 * 86400, confidence=0.8)
    bases = candidate_bases(None, {"model": "llama3.1-8b", "tokens": 100e9}, {}, ["dgx-h100"])
    costs = []
    for pool in (gpus, gpus + more):
        fleet = _fleet(_pool(pool, owned_rate) + OFFERS)
        (plan,) = fleets.plan_fleet(bases, goal, fleet, None).plans
        costs.append(plan.cost_usd() if plan.feasible else float("inf"))
    assert costs[1] <= costs[0] * (1 + 1e-12)


def _fleet(text: str) -> fleets.Fleet:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        return load_fleet(_write(Path(folder), text))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[[pool]]\nname = 'a'\nsystem = 'dgx-h100'\ngpus = -3\n", "field 'pool.0.gpus'"),
        ("[[pool]]\nname = 'a'\nsystem = 'dgx-h900'\ngpus = 8\n", "field 'pool.0.system': unknown system 'dgx-h900'"),
        ("[[pool]]\nname = 'a'\nsystem = 'dgx-h100'\ngpus = 8\ncolour = 1\n", "field 'pool.0.colour'"),
        ("[[offer]]\nname = 'a'\nsystem = 'dgx-h100'\n", "give usd_per_gpu_hour (rent) or usd_per_system (buy)"),
        (_pool(8) + _pool(16), "'hall-a' names two pools or offers"),
        ("", "no [[pool]] and no [[offer]]"),
        ("[[pool]\n", "not valid TOML"),
    ],
)
def test_bad_fleet_files_are_one_line_errors(tmp_path: Path, text: str, says: str) -> None:
    path = _write(tmp_path, text)
    result = run_cli("plan", *WORK, "--deadline", "2d", "--fleet", str(path), "--quiet")
    assert result.code == 2 and result.out == "" and result.err.strip().count("\n") == 0, result.err
    assert str(path) in result.err and says in result.err


def test_a_fleet_needs_a_deadline_and_a_lead_time_past_it_is_said(tmp_path: Path) -> None:
    path = _write(tmp_path, OFFERS.replace("lead_time_days = 0.25", "lead_time_days = 30"))
    result = run_cli("plan", *WORK, "--budget", "1M", "--fleet", str(path), "--quiet")
    assert result.code == 2 and "plan --fleet needs --deadline" in result.err
    (d,) = json.loads(run_cli("plan", *WORK, "--deadline", "2d", "--fleet", str(path), "--format", "json").out)[
        "fleet_plans"
    ]
    assert not d["feasible"] and "lead time of 30 days leaves no time" in d["reason"]


def test_the_fleet_schema_is_shipped_and_checks_a_file() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(run_cli("schema", "fleet").out)
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"pool": [{"name": "a", "system": "dgx-h100", "gpus": 8}]})
    assert not validator.is_valid({"pool": [{"name": "a", "system": "dgx-h100", "gpus": 8, "colour": 1}]})


def test_a_budget_is_checked_on_the_mix_at_the_confidence(tmp_path: Path) -> None:
    path = _write(tmp_path, _pool(64, 1.0) + OFFERS)
    args = ("plan", *WORK, "--deadline", "1d", "--confidence", "0.8", "--fleet", str(path), "--format", "json", "-q")
    (d,) = json.loads(run_cli(*args).out)["fleet_plans"]
    assert d["cost_usd_owned"] == pytest.approx(64 * d["plan"]["gpu_hours"] / d["n_gpus"] * 1.0, rel=1e-12)
    enough = json.loads(run_cli(*args, "--budget", str(d["cost_usd_at_confidence"] * 1.01)).out)["fleet_plans"][0]
    assert enough["feasible"] and enough["p_budget"] >= 0.8
    short = json.loads(run_cli(*args, "--budget", str(d["cost_usd_at_confidence"] * 0.5)).out)["fleet_plans"][0]
    assert not short["feasible"] and "over budget" in short["reason"]
