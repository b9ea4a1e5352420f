"""Jobs of one fleet file sharing a site's power (issue 31, items 2 and 4): `--power-mw` is each site's cap, and the
jobs at a site together never draw more than it."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel.inputs.fleet import Fleet, load_fleet
from perfmodel.planning import fleet_jobs
from perfmodel.planning.plan import Goal, candidate_bases

OFFER = """
[[offer]]
name = "neocloud"
system = "dgx-h100"
usd_per_gpu_hour = 2.5
max_gpus = 1024
lead_time_days = 0.25
"""


def _pool(name: str, site: str, gpus: int) -> str:
    return f'[[pool]]\nname = "{name}"\nsystem = "dgx-h100"\ngpus = {gpus}\nsite = "{site}"\n'


def _job(name: str, days: float) -> str:
    return f'[[job]]\nname = "{name}"\nmodel = "llama3.1-8b"\ntokens = "100B"\ndeadline_days = {days}\n'


def _fleet(text: str) -> Fleet:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "fleet.toml")
        path.write_text(text)
        return load_fleet(path)


def _jobs(days: list[float], cap_mw: float | None) -> list[fleet_jobs.Job]:
    bases = candidate_bases(None, {"model": "llama3.1-8b", "tokens": 100e9}, {}, ["dgx-h100"])
    return [fleet_jobs.Job(f"job{i}", bases, Goal(d * 86400, power_mw=cap_mw)) for i, d in enumerate(days)]


@settings(max_examples=5, deadline=None)
@given(
    st.lists(st.sampled_from([1.0, 1.5, 2.0, 3.0]), min_size=2, max_size=3),
    st.sampled_from([0.2, 0.4, 0.8]),
    st.booleans(),
)
def test_a_power_cap_never_gives_a_site_plans_above_it_together(days: list[float], cap_mw: float, span: bool) -> None:
    """Every site's jobs draw at most the cap together (an 8-GPU DGX H100 at the wall with PUE: 0.013 MW)."""
    text = ("span_sites = true\n" if span else "") + _pool("hall-a", "A", 256) + _pool("hall-b", "B", 256) + OFFER
    report = fleet_jobs.plan_jobs(_jobs(days, cap_mw), _fleet(text), None)
    drawn: dict[str, float] = {}
    for job in report.jobs:
        chosen = job.chosen
        if chosen is not None:
            site = "" if span else chosen.site
            drawn[site] = drawn.get(site, 0.0) + chosen.to_dict()["power_mw"]
    assert all(mw <= cap_mw * (1 + 1e-12) for mw in drawn.values()), drawn
    assert {u["site"]: sum(u["used_mw"].values()) for u in report.power_use()} == drawn


def test_jobs_at_one_site_share_its_cap_and_a_job_it_leaves_no_power_says_so(tmp_path: Path) -> None:
    """0.4 MW at one hall: three jobs of 100B tokens in 1, 1.5 and 2 days; alone each would take what it needs, sharing,
    the later ones get what the earlier left; with 0.1 MW the second finds none left."""
    path = tmp_path / "fleet.toml"
    path.write_text(_pool("hall-a", "A", 512) + OFFER + _job("one", 1) + _job("two", 1.5) + _job("three", 2))
    result = run_cli("plan", "--fleet", str(path), "--power-mw", "0.4", "--format", "json", "-q")
    assert result.code == 0, result.err
    d = json.loads(result.out)
    (site,) = d["power_use"]
    assert site["site"] == "A" and site["cap_mw"] == 0.4 and set(site["used_mw"]) == {"one", "two", "three"}
    assert sum(site["used_mw"].values()) <= 0.4 and site["left_mw"] >= 0
    for job in d["jobs"]:
        (plan,) = job["fleet_plans"]
        assert plan["site"] == "A" and plan["power_mw"] == site["used_mw"][job["job"]]
    table = run_cli("plan", "--fleet", str(path), "--power-mw", "0.4", "-q").out
    assert "Site power (MW at the wall; the jobs at a site share its cap):" in table
    tight = run_cli("plan", "--fleet", str(path), "--power-mw", "0.1", "--format", "json", "-q")
    reasons = [plan["reason"] for job in json.loads(tight.out)["jobs"] for plan in job["fleet_plans"]]
    assert any(r and "the site's power at A is taken by other jobs" in r for r in reasons), reasons


def test_a_cap_below_one_system_is_still_one_line(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(_pool("hall-a", "A", 512) + _job("one", 1) + _job("two", 2))
    result = run_cli("plan", "--fleet", str(path), "--power-mw", "0.001", "-q")
    assert result.code == 2 and result.out == "" and result.err.strip().count("\n") == 0
    assert "--power-mw 0.001: below one dgx-h100" in result.err
