"""A fleet plan bills the GPUs it holds (planning/fleet.py `held_gpus`, `hours_per_gpu`): every GPU it takes from the
pools, spares included, for the whole window it holds them, as fleet_jobs blocks them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli
from fleet_files import NEOCLOUD, campaign_file, dgx_h100_plan, node_mw

import perfmodel
from perfmodel.planning.plan import gpus_of, wall_s

HALL = '[[pool]]\nname = "hall"\nsystem = "dgx-h100"\ngpus = {gpus}\nsite = "A"\nusd_per_gpu_hour = 2.0\n'
FLEET = HALL.format(gpus=128) + NEOCLOUD
"""128 owned H100 at $2.00 per GPU-hour, and the neocloud's to rent."""


def test_a_campaign_is_billed_every_gpu_it_holds_to_its_end(tmp_path: Path) -> None:
    """Its later phase trains on fewer GPUs, yet the schedule holds all of them to the campaign's finish (nobody
    else may take them), so each is billed the wall time: more than the GPU-hours the phases use at the same rate
    (which the bill was before)."""
    plan = dgx_h100_plan(tmp_path, FLEET, str(campaign_file(tmp_path)), {})
    assert plan.feasible and plan.candidate is not None and plan.candidate.prediction is not None
    p = plan.candidate.prediction
    (hall, held), *rented = plan.taken
    assert hall.name == "hall" and not rented and held == gpus_of(p)
    phases = [phase.layout.n_gpus for phase in p.phases.values()]  # type: ignore[union-attr]
    assert phases[-1] < phases[0] == held
    assert plan.cost_usd() == pytest.approx(held * wall_s(p) / 3600 * 2.0, rel=1e-12)
    used_usd = p.run_with_losses.gpu_hours * 2.0  # type: ignore[union-attr]
    assert plan.cost_usd() > 1.2 * used_usd
    start, finish = plan.window_days()
    assert plan.gpu_hours_per_gpu() == pytest.approx((finish - start) * 24, rel=1e-12)  # at the median


def test_spare_gpus_are_taken_from_the_pools_and_billed(tmp_path: Path) -> None:
    """16 spares (losses 'spare') count against the pool: the job and its spares fit its 128 GPUs, each billed the
    wall time (before, the job took all 128 and its spares were billed on GPUs the pool did not have)."""
    work = {"model": "llama3.1-8b", "tokens": 100e9}
    plan = dgx_h100_plan(tmp_path, FLEET, None, work | {"spare_gpus": 16})
    assert plan.feasible and plan.candidate is not None and plan.candidate.prediction is not None
    p = plan.candidate.prediction
    taken = dict((source.name, n) for source, n in plan.taken)
    assert sum(taken.values()) == gpus_of(p) + 16 and taken["hall"] <= 128
    hours = wall_s(p) / 3600
    assert plan.cost_usd() == pytest.approx(sum(n * hours * s.usd_per_gpu_hour for s, n in plan.taken), rel=1e-12)
    unpriced = dgx_h100_plan(tmp_path, FLEET, None, work | {"spare_gpus": 16, "losses": "none"})  # no spares
    assert unpriced.candidate is not None and unpriced.candidate.prediction is not None
    assert sum(n for _, n in unpriced.taken) == gpus_of(unpriced.candidate.prediction)


def test_jobs_sharing_a_fleet_find_the_spares_held(tmp_path: Path) -> None:
    """Two jobs at the same time on a 128-GPU pool, each of at most 48 GPUs and 16 spares: what the first holds (its
    GPUs and spares) is taken from the second, so the two fill the pool and never hold more than its 128 at once
    (before, spares took none)."""
    job = '\n[[job]]\nname = "{}"\nmodel = "llama3.1-8b"\ntokens = "20B"\ndeadline_days = 1\n'
    path = tmp_path / "fleet.toml"
    path.write_text(HALL.format(gpus=128) + job.format("first") + job.format("second"))
    d = json.loads(
        run_cli("plan", "--fleet", str(path), "--spare-gpus", "16", "--max-gpus", "48", "--format", "json", "-q").out
    )
    (hall,) = d["fleet_use"]
    plans = {j["job"]: j["fleet_plans"][0] for j in d["jobs"]}
    assert all(plan["owned_gpus"] == plan["n_gpus"] + 16 for plan in plans.values() if plan["feasible"])
    assert hall["used"] == {name: plan["owned_gpus"] for name, plan in plans.items() if plan["feasible"]}
    assert hall["used"] == {"first": 64, "second": 64} and hall["peak"] == 128


def test_spares_are_whole_nodes(tmp_path: Path) -> None:
    """A failed GPU takes its node out and a node replaces it (BLOOM's 32 spares were 4 of its 8-GPU nodes:
    planning/losses.py), and a pool hands a node out whole: 5 spares on a DGX H100 are refused naming the flag and
    the whole counts (a prediction priced 5, a fleet plan held 8); 8 spares hold a node of a 16-GPU pool beside a
    job of 8, and 16 take it all."""
    path = tmp_path / "fleet.toml"
    path.write_text(HALL.format(gpus=16))
    args = ("--model", "llama3.1-8b", "--tokens", "10B", "--deadline", "30d", "--fleet", str(path), "-q")
    refused = run_cli("plan", *args, "--spare-gpus", "5")
    assert refused.code == 2 and "--spare-gpus: 5 spare GPUs is 0.6 dgx-h100 nodes" in refused.err
    assert "such as 0 or 8" in refused.err
    refused = run_cli("predict", "--gpu", "h100-sxm", "--gpus", "64", "--spare-gpus", "12")
    assert refused.code == 2 and "such as 8 or 16" in refused.err
    (d,) = json.loads(run_cli("plan", *args, "--spare-gpus", "8", "--format", "json").out)["fleet_plans"]
    assert d["feasible"] and d["spare_gpus"] == 8 and d["owned_gpus"] == d["n_gpus"] + 8 == 16
    (d,) = json.loads(run_cli("plan", *args, "--spare-gpus", "16", "--format", "json").out)["fleet_plans"]
    assert not d["feasible"] and "leave none beside the job's 16 spares" in d["reason"]


def test_spares_draw_site_power(tmp_path: Path) -> None:
    """Spares held powered draw the site's power (plan.spare_mw) as they take the pools' GPUs: a plan's power_mw
    counts them, and a cap of 2.5 DGX H100s' power leaves one for a job beside 8 spares (before, two)."""
    work = {"model": "llama3.1-8b", "tokens": 100e9}
    spared = dgx_h100_plan(tmp_path, FLEET, None, work | {"spare_gpus": 8})
    assert spared.candidate is not None and spared.candidate.prediction is not None
    nodes, dgx_mw = gpus_of(spared.candidate.prediction) // 8 + 1, node_mw(spared)  # the job's nodes and a spare one
    assert spared.to_dict()["power_mw"] == pytest.approx(nodes * dgx_mw, rel=1e-9)
    cap_mw = 2.5 * dgx_mw  # a deadline of 3 days wants more than two nodes: the cap binds
    for spares, counts in ((0, [8, 16]), (8, [8])):
        report = perfmodel.plan(**work, gpu=["dgx-h100"], deadline_s=3 * 86400, power_mw=cap_mw, spare_gpus=spares)
        (candidate,) = report.to_dict()["candidates"]
        assert candidate["counts_tried"] == counts and f"{len(counts) * 8} GPUs" in candidate["reason"]
