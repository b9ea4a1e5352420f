"""An offer billed on demand (`billing = "on_demand"`, planning/fleet.py `mix_of`): a campaign holds of it, per
phase, only what that phase needs beyond the held sources, for that phase's time; owned pools and reserved offers
are held for the whole window as before, and another job may take what a phase gives back (fleet_jobs)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from conftest import run_cli
from fleet_files import RENT, campaign_file, dgx_h100_report, node_mw
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel.planning import fleet as fleets
from perfmodel.planning.campaign import Campaign, predict_campaign
from perfmodel.planning.fleet_jobs import Held, most_held
from perfmodel.planning.plan import Goal, Result, candidate_bases, gpus_of, plan_candidate, wall_s


def _jobs(start: float) -> str:
    """The campaign (deadline 3 days) and a second job of 20B tokens from day `start`, due 2 days later."""
    return (f'[[job]]\nname = "campaign"\nscenario = "campaign.toml"\ndeadline_days = 3\n'
            f'[[job]]\nname = "second"\nmodel = "llama3.1-8b"\ntokens = "20B"\nstart_days = {start}\n'
            f"deadline_days = {start + 2}\n")  # fmt: skip


def _report(tmp_path: Path, text: str, options: dict[str, object] | None = None) -> fleets.FleetReport:
    """The campaign planned within 3 days on the fleet `text` (on DGX H100)."""
    return dgx_h100_report(tmp_path, text, str(campaign_file(tmp_path)), options or {})


def _plan(tmp_path: Path, text: str, options: dict[str, object] | None = None) -> fleets.FleetPlan:
    """The campaign's feasible plan over the fleet `text`."""
    (plan,) = _report(tmp_path, text, options).plans
    assert plan.feasible and isinstance(plan.candidate and plan.candidate.prediction, Campaign)
    return plan


def _phases(plan: fleets.FleetPlan) -> list[tuple[int, float]]:
    """Each phase's GPUs and its hours with losses (the goal's basis), from the campaign's own predictions."""
    assert plan.candidate is not None and isinstance(plan.candidate.prediction, Campaign)
    found = []
    for phase in plan.candidate.prediction.phases.values():
        assert phase.run_with_losses is not None
        found.append((phase.layout.n_gpus, phase.run_with_losses.time_s / 3600))
    return found


def test_a_two_phase_campaign_on_demand_bills_each_phases_gpu_hours(tmp_path: Path) -> None:
    """On one offer, reserved bills the most GPUs x the wall hours x the price; on demand, each phase's GPUs x its
    hours x the price (the tail, on a quarter of the main phase's GPUs to whole nodes, gives the rest back)."""
    reserved = _plan(tmp_path, RENT.format(gpus=1024, billing="reserved"))
    (main, main_h), (tail, tail_h) = _phases(reserved)
    assert reserved.candidate is not None and reserved.candidate.prediction is not None
    assert wall_s(reserved.candidate.prediction) / 3600 == pytest.approx(main_h + tail_h, rel=1e-12)
    assert tail < main / 2 and reserved.cost_usd() == pytest.approx(main * (main_h + tail_h) * 2.5, rel=1e-12)
    on_demand = _plan(tmp_path, RENT.format(gpus=1024, billing="on_demand"))
    (main, main_h), (tail, tail_h) = _phases(on_demand)
    assert on_demand.cost_usd() == pytest.approx((main * main_h + tail * tail_h) * 2.5, rel=1e-12)
    assert on_demand.cost_usd() < 0.8 * reserved.cost_usd()
    (cloud,) = on_demand.to_dict()["sources"]
    assert cloud["billing"] == "on_demand" and cloud["gpus"] == main
    assert cloud["gpu_hours"] == pytest.approx(main * main_h + tail * tail_h, rel=1e-12)
    assert [(p["phase"], p["gpus"]) for p in cloud["phases"]] == [("main", main), ("tail", tail)]
    assert on_demand.to_dict()["cost_usd_rented"] == pytest.approx(on_demand.cost_usd(), rel=1e-12)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    path = campaign_file(tmp_path_factory.mktemp("campaign"))
    (_, scenario), *_ = candidate_bases(str(path), {}, {}, ["dgx-h100"])
    return predict_campaign(scenario)


def _source(name: str, gpus: int, rate: float, billing: str = "reserved") -> fleets.Source:
    return fleets.Source(name, "owned" if name == "pool" else "rent", "dgx-h100", "", gpus, rate, 0.0, billing)


def test_an_owned_pool_stays_held_and_the_offer_fills_each_phase_beyond_it(campaign: Campaign) -> None:
    """On 128 then 32 GPUs: 64 owned GPUs at $1.00 are held the whole window, as with a reserved offer; the offer
    rents the main phase's 64 more, and nothing in the tail (within the pool). A pool GPU used only in the main
    phase costs $1.00 x the window, less than $2.50 x the main phase's hours (about half of it): the pool is used
    in full."""
    (main, main_h), (tail, tail_h) = [(p.layout.n_gpus, p.run_with_losses.time_s / 3600)  # type: ignore[union-attr]
                                      for p in campaign.phases.values()]  # fmt: skip
    assert (main, tail) == (128, 32) and 0.3 < main_h / (main_h + tail_h) < 0.7
    pool, cloud = _source("pool", 64, 1.0), _source("cloud", 1024, 2.5, "on_demand")
    mix = fleets.mix_of(campaign, [pool, cloud])
    assert mix.held == ((pool, 64),) and mix.taken() == [(pool, 64), (cloud, 64)]
    assert [rented for _, _, rented in mix.phases] == [((cloud, 64),), ()]
    assert mix.gpu_hours(pool) == pytest.approx(64 * (main_h + tail_h), rel=1e-12)
    assert mix.usd == pytest.approx(64 * (main_h + tail_h) * 1.0 + 64 * main_h * 2.5, rel=1e-12)
    reserved = fleets.mix_of(campaign, [pool, _source("cloud", 1024, 2.5)])
    assert reserved.gpu_hours(pool) == mix.gpu_hours(pool) and not reserved.phases


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from([0, 16, 32, 64, 96, 128]),
    st.sampled_from([16, 64]),
    st.sampled_from([0.0, 1.0, 2.0, 3.0]),
    st.sampled_from([0, 64, 128]),
    st.sampled_from([1.5, 2.5, 4.0]),
)
def test_the_on_demand_mix_is_the_cheapest_hold_and_owning_more_never_raises_it(
    campaign: Campaign, pool: int, more: int, pool_rate: float, reserved: int, reserved_rate: float
) -> None:
    """Against every count of held GPUs (whole nodes): the mix is the cheapest way to hold the campaign's phases,
    and a larger pool never raises it."""
    rent = _source("cloud", 128, 2.5, "on_demand")
    needs, window_h = fleets.phase_needs(campaign), fleets.hours_per_gpu(campaign)
    costs = []
    for owned in (pool, pool + more):
        available = sorted(
            [s for s in (_source("pool", owned, pool_rate), _source("reserved", reserved, reserved_rate)) if s.gpus]
            + [rent],
            key=lambda s: s.usd_per_gpu_hour,
        )
        mix = fleets.mix_of(campaign, available)
        held = [s for s in available if s.held]
        brute = min(
            sum(n * s.usd_per_gpu_hour for s, n in fleets.fill(h, held)) * window_h
            + sum(n * t * 2.5 for _, need, t in needs for n in [max(need - h, 0)])
            for h in range(0, min(128, sum(s.gpus for s in held)) + 1, 8)
        )
        assert mix.usd == pytest.approx(brute, rel=1e-12)
        costs.append(mix.usd)
    assert costs[1] <= costs[0] * (1 + 1e-12)


def test_most_held_sees_what_a_phase_gives_back() -> None:
    """A job at site A holding 128 GPUs of an offer to day 2 at 2 MW, then 32 to day 3 at 0.5 MW: a window from day
    2 finds 32 taken and 0.5 MW drawn, and a second job there from day 2.5 at 1 MW adds its own to them."""
    gpus = ((0.0, 2.0, (("cloud", 128),)), (2.0, 3.0, (("cloud", 32),)))
    first = Held("first", 0.0, 3.0, gpus, "A", ((0.0, 2.0, 2.0), (2.0, 3.0, 0.5)))
    assert first.power_mw == 2.0
    assert most_held([first]) == ({"cloud": 128}, {"A": 2.0})
    assert most_held([first], 2.0, 5.0) == ({"cloud": 32}, {"A": 0.5})
    assert most_held([first], 3.0, 5.0) == ({}, {})
    second = Held("second", 2.5, 4.0, ((2.5, 4.0, (("cloud", 64),)),), "A", ((2.5, 4.0, 1.0),))
    assert most_held([first, second], 1.0, 5.0) == ({"cloud": 128}, {"A": 2.0})
    assert most_held([first, second], 2.0, 5.0) == ({"cloud": 96}, {"A": 1.5})
    assert most_held([first, second], 3.0, 5.0) == ({"cloud": 64}, {"A": 1.0})


def test_others_hold_at_least_what_every_moment_holds() -> None:
    """A job holding 128 GPUs of an offer to day 2 at 2 MW, then 32 to day 3 at 0.5 MW, and another 64 from day 2.5
    to 4 at 1 MW: from day 1 to 5 no moment has fewer than none held (day 4 on); from day 2 to 3.5, 32 and 0.5 MW
    (day 2 to 2.5); the most there is 96 and 1.5 MW."""
    segments = [(0.0, 2.0, (("cloud", 128),)), (2.0, 3.0, (("cloud", 32),)), (2.5, 4.0, (("cloud", 64),))]
    draws = [(0.0, 2.0, "A", 2.0), (2.0, 3.0, "A", 0.5), (2.5, 4.0, "A", 1.0)]
    others = fleets.Others.of(segments, draws)
    assert others.least(1.0, 5.0) == ({}, {})
    assert others.least(2.0, 3.5) == ({"cloud": 32}, {"A": 0.5})
    assert others.most(2.0, 3.5) == ({"cloud": 96}, {"A": 1.5})
    assert fleets.Others.of(segments, draws, 3.0, 5.0) == fleets.Others((segments[2],), (draws[2],))


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([0, 32, 64, 128]),
    st.sampled_from([0, 64, 96, 128]),
    st.sampled_from([0, 32, 64]),
    st.sampled_from([None, 64, 96, 128]),
    st.sampled_from([0.5, 1.0, 4.0]),
)
def test_the_mix_within_what_others_leave_is_the_cheapest_hold_there(
    campaign: Campaign, pool: int, main: int, tail: int, held_most: int | None, pool_rate: float
) -> None:
    """The campaign (128 then 32 GPUs) on a pool of which `pool` GPUs are free for its window and an offer on
    demand of which `main` and `tail` are free in each phase, holding at most `held_most` for the window (the
    site's power): where no count of held GPUs (whole nodes) fits, it is refused with why (`unheld`, Beside.free's
    check); else against every count that fits, the mix is the cheapest, and it takes no more than is free."""
    needs, window_h = fleets.phase_needs(campaign), fleets.hours_per_gpu(campaign)
    fits = [h for h in range(0, min(pool, held_most or pool) + 1, 8)
            if all(n - h <= free for (_, n, _), free in zip(needs, (main, tail), strict=True))]  # fmt: skip
    phases = [{"cloud": main}, {"cloud": tail}]
    why = fleets.unheld(needs, phases, pool, held_most, 0.0, 1.0)
    assert (why is None) == bool(fits), why
    if not fits:
        return
    held, cloud = _source("pool", 1024, pool_rate), _source("cloud", 1024, 2.5, "on_demand")
    free = fleets.Free({"pool": pool, "cloud": 0}, phases, held_most)
    mix = fleets.mix_of(campaign, [held, cloud] if pool_rate < 2.5 else [cloud, held], free)
    brute = min(h * pool_rate * window_h + sum(max(n - h, 0) * t * 2.5 for _, n, t in needs) for h in fits)
    assert mix.usd == pytest.approx(brute, rel=1e-12)
    (_, h), *_ = mix.held or ((held, 0),)
    assert h <= min(pool, held_most or pool)
    rented = [dict(taken).get(cloud, 0) for _, _, taken in mix.phases]
    assert all(n <= free for n, free in zip(rented, (main, tail), strict=True)), rented


def test_a_campaign_on_demand_draws_each_phases_power_and_a_held_gpu_draws_idle(tmp_path: Path) -> None:
    """Reserved, the campaign draws its main phase's nodes for its whole window, as before (plan.power_mw); on
    demand, each phase's nodes while that phase runs; 8 spares draw a node more in every phase; with 32 owned GPUs
    held for the window, the tail draws the pool's 4 nodes though it runs on fewer (a held GPU draws busy or idle)."""
    reserved = _plan(tmp_path, RENT.format(gpus=1024, billing="reserved"))
    (main, _), _ = _phases(reserved)
    assert reserved.draws() == [(*reserved.window_days(), pytest.approx(main // 8 * node_mw(reserved), rel=1e-12))]
    for spares in (0, 8):
        on_demand = _plan(tmp_path, RENT.format(gpus=1024, billing="on_demand"), {"spare_gpus": spares})
        (main, _), (tail, _) = _phases(on_demand)
        (start, main_end, _), (tail_start, finish, _) = on_demand.segments()
        nodes = [main // 8 + spares // 8, tail // 8 + spares // 8]
        draws = on_demand.draws()
        assert [(at, end) for at, end, _ in draws] == [(start, main_end), (tail_start, finish)]
        assert [mw for _, _, mw in draws] == pytest.approx([n * node_mw(on_demand) for n in nodes], rel=1e-12)
        assert on_demand.to_dict()["power_mw"] == draws[0][2]
    pool = '[[pool]]\nname = "pool"\nsystem = "dgx-h100"\ngpus = 32\nusd_per_gpu_hour = 1.0\n'
    pooled = _plan(tmp_path, pool + RENT.format(gpus=1024, billing="on_demand"))
    (main, _), (tail, _) = _phases(pooled)
    assert tail < 32 < main and [(s.name, n) for s, n in pooled.mix.held] == [("pool", 32)]
    (start, finish), dgx_mw = pooled.window_days(), node_mw(pooled)
    (_, _, main_mw), (_, tail_end, tail_mw) = pooled.draws()
    assert (main_mw, tail_mw, tail_end) == pytest.approx((main // 8 * dgx_mw, 4 * dgx_mw, finish), rel=1e-12)


def test_a_second_job_uses_the_gpus_the_first_gave_back(tmp_path: Path) -> None:
    """On an offer of the campaign's most GPUs, its tail holds a quarter of them; a job of 20B tokens starting after
    the main phase (it needs more GPUs than an eighth of the main phase's within its 2 days) finds the rest free on
    demand, where reserved billing blocks them to the campaign's finish (the two jobs cannot both run)."""
    first = _plan(tmp_path, RENT.format(gpus=1024, billing="on_demand"))
    (main, _), (tail, _) = _phases(first)
    (_, main_end, _), (tail_start, finish, _) = first.segments()
    assert main_end == tail_start < finish
    jobs = _jobs(tail_start + 0.01)
    found = {}
    for billing in ("reserved", "on_demand"):
        (tmp_path / "fleet.toml").write_text(RENT.format(gpus=main, billing=billing) + jobs)
        d = json.loads(run_cli("plan", "--fleet", str(tmp_path / "fleet.toml"), "--format", "json", "-q").out)
        found[billing] = {job["job"]: job["chosen"] for job in d["jobs"]}, d["fleet_use"]
    assert sorted(map(str, found["reserved"][0].values())) == ["None", "dgx-h100"]  # one job or the other
    assert found["on_demand"][0] == {"campaign": "dgx-h100", "second": "dgx-h100"}
    (use,) = found["on_demand"][1]
    assert use["used"]["campaign"] == main and main // 8 < use["used"]["second"] <= main - tail


def test_a_second_job_uses_the_power_the_first_gave_back(tmp_path: Path) -> None:
    """A site's power (--power-mw) half a node above the campaign's main phase, GPUs to spare: a job of 20B tokens
    starting after the main phase runs beside the tail on demand, within the cap with the tail's power though not
    with the main phase's; starting before the main phase ends, or reserved (the campaign draws its main phase's
    power to its finish), one job or the other. power_use: each job's most, the most at once the main phase's."""
    first = _plan(tmp_path, RENT.format(gpus=1024, billing="on_demand"))
    dgx_mw = node_mw(first)
    (main, _), (tail, _) = _phases(first)
    (_, main_end, _), (tail_start, _, _) = first.segments()
    main_mw, tail_mw, cap_mw = main // 8 * dgx_mw, tail // 8 * dgx_mw, (main // 8 + 0.5) * dgx_mw
    found = {}
    for billing, start in (
        ("reserved", tail_start + 0.01),
        ("on_demand", main_end - 0.2),
        ("on_demand", tail_start + 0.01),
    ):
        (tmp_path / "fleet.toml").write_text(RENT.format(gpus=1024, billing=billing) + _jobs(start))
        args = ("plan", "--fleet", str(tmp_path / "fleet.toml"), "--power-mw", repr(cap_mw), "--format", "json", "-q")
        d = json.loads(run_cli(*args).out)
        found[billing, start < main_end] = {job["job"]: job["chosen"] for job in d["jobs"]}, d["power_use"]
    for one in (("reserved", False), ("on_demand", True)):
        assert sorted(map(str, found[one][0].values())) == ["None", "dgx-h100"]  # one job or the other
    chosen, (power,) = found["on_demand", False]
    assert chosen == {"campaign": "dgx-h100", "second": "dgx-h100"} and power["cap_mw"] == cap_mw
    second_mw = power["used_mw"]["second"]
    assert power["used_mw"]["campaign"] == pytest.approx(main_mw, rel=1e-12) and second_mw >= dgx_mw
    assert tail_mw + second_mw <= cap_mw < main_mw + second_mw
    assert power["peak_mw"] == pytest.approx(max(main_mw, tail_mw + second_mw), rel=1e-12)
    assert power["left_mw"] == pytest.approx(cap_mw - power["peak_mw"], rel=1e-12)


def test_billing_is_one_of_two_and_a_bought_offer_is_held(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    args = ("plan", "--model", "llama3.1-8b", "--tokens", "1B", "--deadline", "2d", "--fleet", str(path), "-q")
    path.write_text(RENT.format(gpus=64, billing="hourly"))
    result = run_cli(*args)
    assert result.code == 2 and "fleet.toml: field 'offer.0.billing'" in result.err and "'on_demand'" in result.err
    path.write_text('[[offer]]\nname = "b"\nsystem = "dgx-h100"\nusd_per_system = 4e5\nbilling = "on_demand"\n')
    result = run_cli(*args)
    assert result.code == 2 and "field 'offer.0.billing': 'b' is bought" in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_the_fleet_table_reads_an_on_demand_offers_gpu_hours_as_the_gpu_hours_line_does(tmp_path: Path) -> None:
    """The fleet table's note of an on-demand offer prints its GPU-hours as the GPU-hours line does (whole, with
    thousands commas, from 10 on), not a format of its own (it read 0.00266M GPU-h)."""
    from perfmodel.outputs.plan_report import fleet_table

    report = _report(tmp_path, RENT.format(gpus=4096, billing="on_demand"))
    (source,) = report.plans[0].to_dict()["sources"]
    assert source["billing"] == "on_demand" and source["gpu_hours"] >= 10
    table = fleet_table(report, timed=False)
    (said,) = re.findall(r"\(rent on demand, ([\d,]+) GPU-h,", table)
    assert "M GPU-h" not in table
    assert int(said.replace(",", "")) == round(source["gpu_hours"])


def test_a_phase_on_demand_beyond_what_the_others_leave_is_named(campaign: Campaign) -> None:
    """On demand, the phase that does not fit is named (README: `phase 'main': ...`): 96 of the offer's 128 GPUs
    held by another job for the whole window leave 32, too few for the main phase's 128, not for the tail's 32."""
    cloud = _source("cloud", 128, 2.5, "on_demand")
    others = fleets.Others.of([(0.0, 100.0, (("cloud", 96),))], [])
    why = fleets.Beside([cloud], others, 0.0).free(campaign, fleets.time_at(campaign, 0.5))
    said = r"phase 'main': 128 GPUs from day 0 to [\d.]+: more than the 32 left by the other jobs at their busiest then"
    assert isinstance(why, str) and re.fullmatch(said, why), why


def test_a_fewer_count_that_does_not_fit_beside_the_other_jobs_says_so() -> None:
    """Where the count one step fewer meets the deadline but its mix is priced infinite (it does not fit beside the
    other jobs, Beside.usd), the plan's neighbour says so, not that it costs more."""
    (label, base), *_ = candidate_bases(None, {"model": "llama3.1-8b", "tokens": 100e9}, {}, ["dgx-h100"])
    goal = Goal(deadline_s=10 * 86400, confidence=0.5)

    def price(p: Result, time_s: float) -> float:
        return math.inf if gpus_of(p) < 64 else gpus_of(p) * time_s

    plan = plan_candidate(base, label, goal, 1024, 64, price=price)
    assert plan.feasible and plan.prediction is not None and gpus_of(plan.prediction) == 64
    assert plan.neighbour is not None and plan.neighbour["n_gpus"] == 56
    said = r"56 GPUs \([\d.]+ days with losses\) do not fit beside the other jobs"
    assert re.fullmatch(said, plan.neighbour["why"]), plan.neighbour["why"]
