"""Issue 31, item 3: `plan --fleet` answers with the cheapest mix of owned pools and offers per system type; owning
more never raises a plan's cost; bad fleet files are one-line errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import run_cli
from fleet_files import NEOCLOUD
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel.inputs.fleet import load_fleet
from perfmodel.planning import fleet as fleets
from perfmodel.planning import fleet_jobs
from perfmodel.planning import plan as planning
from perfmodel.planning.plan import Goal, candidate_bases

WORK = ("--model", "llama3.1-8b", "--tokens", "100B")
OFFERS = NEOCLOUD
BOUGHT = """
[[offer]]
name = "buy-b200"
system = "dgx-b200"
usd_per_system = 400000
max_gpus = 512
lead_time_days = 0.1
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


def test_the_fleet_plan_is_exported_with_its_mix(tmp_path: Path) -> None:
    """`export plan --fleet`: a row per system type's mix, its sources' GPUs, rates and costs and the split, as the
    plan's JSON has them."""
    path = _write(tmp_path, _pool(64, 1.0) + OFFERS + BOUGHT)
    args = (*WORK, "--deadline", "1d", "--fleet", str(path))
    plans = {d["system"]: d for d in json.loads(run_cli("plan", *args, "--format", "json", "-q").out)["fleet_plans"]}
    out = tmp_path / "fleet.json"
    assert run_cli("export", "plan", *args, "--out", str(out), "-q").code == 0
    rows = {row["candidate"]: row for row in json.loads(out.read_text())["rows"]}
    assert set(rows) == set(plans) == {"dgx-h100", "dgx-b200"}
    for system, row in rows.items():
        d = plans[system]
        for source in d["sources"]:
            for key in ("kind", "gpus", "usd_per_gpu_hour", "cost_usd"):
                assert row[f"mix.{source['name']}.{key}"] == source[key], (system, key)
        for key in ("cost_usd", "cost_usd_owned", "cost_usd_rented", "cost_usd_bought", "start_after_days",
                    "finish_days", "p_deadline"):  # fmt: skip
            assert row[f"mix_{key}"] == d[key], (system, key)
        assert row["owned_gpus"] + row["offered_gpus"] == row["n_gpus"] == d["n_gpus"]
    assert rows["dgx-h100"]["mix.buy-b200.gpus"] is None and rows["dgx-b200"]["mix_cost_usd_bought"] > 0


def test_the_workbook_prices_the_mix_live(tmp_path: Path) -> None:
    """Each source's cost is GPUs x the run's hours x its rate as a formula: a planner's new rate moves the split
    and the mix's cost as perfmodel would price them; the method of the values is stated on the Summary."""
    import openpyxl
    from workbook import Recalculator, cells_by_key

    path = _write(tmp_path, _pool(64, 1.0) + OFFERS)
    book = tmp_path / "fleet.xlsx"
    args = (*WORK, "--deadline", "1d", "--fleet", str(path))
    assert run_cli("export", "plan", *args, "--out", str(book), "-q").code == 0
    cells = cells_by_key(book, ("Results",))
    values = Recalculator(book)({cells[("mix.neocloud.usd_per_gpu_hour", 0)]: 5.0})
    (d,) = json.loads(run_cli("plan", *args, "--format", "json", "-q").out)["fleet_plans"]
    owned, rented = d["sources"]
    assert values[cells[("mix_cost_usd_owned", 0)]] == pytest.approx(owned["cost_usd"], rel=1e-9)
    assert values[cells[("mix_cost_usd_rented", 0)]] == pytest.approx(2 * rented["cost_usd"], rel=1e-9)
    assert values[cells[("mix_cost_usd", 0)]] == pytest.approx(owned["cost_usd"] + 2 * rented["cost_usd"], rel=1e-9)
    assert values[cells[("mix_finish_days", 0)]] == pytest.approx(d["finish_days"], rel=1e-9)
    summary = " ".join(str(v) for r in openpyxl.load_workbook(book)["Summary"].iter_rows(values_only=True) for v in r)
    assert "a source's cost is its GPUs x the time on the goal's basis x its rate, live" in summary


def test_an_export_of_a_fleet_no_system_meets_says_why(tmp_path: Path) -> None:
    path = _write(tmp_path, OFFERS.replace("lead_time_days = 0.25", "lead_time_days = 30"))
    out = tmp_path / "none.csv"
    result = run_cli("export", "plan", *WORK, "--deadline", "2d", "--fleet", str(path), "--out", str(out), "-q")
    assert result.code == 2 and not out.exists()
    assert "no plan meets the goal: dgx-h100 (the offers' lead time of 30 days" in result.err


def _job(name: str, days: float, tokens: str = "100B") -> str:
    return f'[[job]]\nname = "{name}"\nmodel = "llama3.1-8b"\ntokens = "{tokens}"\ndeadline_days = {days}\n'


def _jobs(*jobs: tuple[str, float]) -> list[fleet_jobs.Job]:
    bases = candidate_bases(None, {"model": "llama3.1-8b", "tokens": 100e9}, {}, ["dgx-h100"])
    return [fleet_jobs.Job(name, bases, Goal(deadline_s=days * 86400)) for name, days in jobs]


def test_jobs_share_the_fleet_the_tightest_deadline_first(tmp_path: Path) -> None:
    """Two jobs in one fleet file: the tighter plans first over the whole fleet, the looser over what it left; no
    pool's GPUs are counted twice, and the table shows each job's mix and the fleet's use per pool."""
    path = _write(tmp_path, _pool(128) + OFFERS + _job("loose", 3) + _job("tight", 1))
    result = run_cli("plan", "--fleet", str(path), "--format", "json", "-q")
    assert result.code == 0, result.err
    d = json.loads(result.out)
    loose, tight = d["jobs"]
    assert (loose["job"], loose["turn"], tight["job"], tight["turn"]) == ("loose", 2, "tight", 1)
    by_itself = _write(tmp_path, _pool(128) + OFFERS, "alone.toml")
    alone = run_cli("plan", *WORK, "--deadline", "1d", "--fleet", str(by_itself), "--format", "json", "-q").out
    alone = json.loads(alone)["fleet_plans"][0]
    (first,) = tight["fleet_plans"]
    assert first["sources"] == alone["sources"]  # planned first: as if alone
    (second,) = loose["fleet_plans"]
    use = {u["name"]: u for u in d["fleet_use"]}
    for u in use.values():
        assert sum(u["used"].values()) + u["left"] == u["gpus"] and u["left"] >= 0
    owned = use["hall-a"]["used"]
    assert owned.get("tight", 0) == first["owned_gpus"] and owned.get("loose", 0) == second["owned_gpus"]
    assert first["owned_gpus"] + second["owned_gpus"] <= 128
    table = run_cli("plan", "--fleet", str(path), "-q").out
    assert "Job tight (planned 1st)" in table and "Job loose (planned 2nd)" in table and "Fleet use (GPUs):" in table
    csv_rows = run_cli("plan", "--fleet", str(path), "--format", "csv", "-q").out.splitlines()
    assert csv_rows[0].startswith("job,turn,") and len(csv_rows) == 3


@settings(max_examples=4, deadline=None)
@given(st.sampled_from([0.5, 1.0, 2.0, 3.0]), st.sampled_from([0.5, 1.0, 2.0, 3.0]), st.sampled_from([64, 128, 256]))
def test_adding_a_job_never_lowers_another_jobs_cost(days: float, added: float, owned: int) -> None:
    fleet = _fleet(_pool(owned, 0.5) + OFFERS)

    def cost(jobs: list[fleet_jobs.Job]) -> float:
        plan = next(job for job in fleet_jobs.plan_jobs(jobs, fleet, None).jobs if job.name == "a").chosen
        return math.inf if plan is None else plan.cost_usd()

    assert cost(_jobs(("a", days), ("b", added))) >= cost(_jobs(("a", days))) * (1 - 1e-12)


@pytest.mark.parametrize(
    ("text", "flags", "says"),
    [
        (_job("a", 1) + _job("a", 2), (), "'a' names two jobs"),
        (_job("a", 1).replace('"100B"', '"lots"'), (), "field 'job.0.tokens': allowed a positive count"),
        (_job("a", 1).replace("deadline_days = 1", ""), (), "field 'job.0.deadline_days'"),
        (_job("a", 1), ("--deadline", "1d"), "has [[job]]s, each with its own deadline_days"),
        (_job("a", 1) + 'scenario = "missing.toml"\n', (), "missing.toml"),
    ],
)
def test_bad_jobs_are_one_line_errors(tmp_path: Path, text: str, flags: tuple[str, ...], says: str) -> None:
    path = _write(tmp_path, _pool(64) + text)
    result = run_cli("plan", "--fleet", str(path), *flags, "-q")
    assert result.code == 2 and result.out == "" and result.err.strip().count("\n") == 0, result.err
    assert says in result.err


def _sited(name: str, site: str, gpus: int = 64) -> str:
    return f'[[pool]]\nname = "{name}"\nsystem = "dgx-h100"\ngpus = {gpus}\nsite = "{site}"\n'


def test_a_job_stays_at_one_site_unless_the_file_lets_it_span(tmp_path: Path) -> None:
    """96 GPUs meet the day (the tight job above); each hall has 64: one site cannot, both together can."""
    args = (*WORK, "--deadline", "1d", "--format", "json", "-q")
    halls = _sited("hall-a", "A") + _sited("hall-b", "B")
    (apart,) = json.loads(run_cli("plan", *args, "--fleet", str(_write(tmp_path, halls))).out)["fleet_plans"]
    assert not apart["feasible"] and "at B there by day 0" in apart["reason"]
    spanning = _write(tmp_path, "span_sites = true\n" + halls, "span.toml")
    (d,) = json.loads(run_cli("plan", *args, "--fleet", str(spanning)).out)["fleet_plans"]
    assert d["feasible"] and {s["site"] for s in d["sources"]} == {"A", "B"} and d["n_gpus"] > 64
    offered = OFFERS + 'site = "B"\n'  # an offer with a site is there only; without one it joins any (tests above)
    at_a_and_b = _write(tmp_path, _sited("hall-a", "A") + offered, "b.toml")
    (at_b,) = json.loads(run_cli("plan", *args, "--fleet", str(at_a_and_b)).out)["fleet_plans"]
    assert at_b["feasible"] and {s["site"] for s in at_b["sources"]} == {"B"}


def test_an_export_of_jobs_gives_each_jobs_chosen_mix(tmp_path: Path) -> None:
    path = _write(tmp_path, _pool(128) + OFFERS + _job("loose", 3) + _job("tight", 1))
    out = tmp_path / "jobs.json"
    assert run_cli("export", "plan", "--fleet", str(path), "--out", str(out), "-q").code == 0
    rows = {row["job"]: row for row in json.loads(out.read_text())["rows"]}
    plans = {
        d["job"]: d for d in json.loads(run_cli("plan", "--fleet", str(path), "--format", "json", "-q").out)["jobs"]
    }
    assert set(rows) == {"loose", "tight"} and rows["tight"]["deadline_days"] == 1
    for name, row in rows.items():
        (chosen,) = plans[name]["fleet_plans"]
        assert row["n_gpus"] == chosen["n_gpus"] and row["mix_cost_usd"] == chosen["cost_usd"]
    assert sum(row["mix.hall-a.gpus"] or 0 for row in rows.values()) <= 128


def test_a_campaigns_mix_is_on_its_total_row(tmp_path: Path) -> None:
    """A campaign's mix is the whole run's: its total row carries it (values), its phases' rows leave it blank."""
    import openpyxl
    from workbook import cells_by_key

    path = _write(tmp_path, _pool(4096).replace("hall-a", "hall") + OFFERS.replace("1024", "16384"))
    args = ("scenarios/campaign-llama3.1-405b.toml", "--deadline", "120d", "--fleet", str(path), "-q")
    (d,) = json.loads(run_cli("plan", *args, "--format", "json").out)["fleet_plans"]
    book = tmp_path / "campaign.xlsx"
    assert run_cli("export", "plan", *args, "--out", str(book)).code == 0
    cells, ws = cells_by_key(book, ("Results",)), openpyxl.load_workbook(book)["Results"]
    phases = sum(1 for key, _ in cells if key == "mix_cost_usd")
    value = [ws[cells[("mix_cost_usd", index)][1]].value for index in range(phases)]
    assert value[:-1] == [None] * (phases - 1) and d["cost_usd"] > 0
    assert value[-1] == pytest.approx(d["cost_usd"], rel=1e-12)


def test_the_mix_is_the_cheapest_of_the_counts_meeting_the_deadline_not_the_fewest(tmp_path: Path) -> None:
    """70B on 15T tokens (the default scenario) on a pool of 4,096 H100: a count whose DP divides the batch can take
    fewer GPU-hours than a smaller one (at each count's default batch, 4,096 GPUs train it in 26.6 days for $16.1M at
    list, 2,560 in 43.9 days for $16.6M). With the deadline just above the time of the first such smaller count from
    1,024 GPUs, the mix is the cheapest of the counts meeting it (against every count of the pool's grid); it was the
    fewest GPUs meeting it."""
    bases = candidate_bases(None, {}, {}, ["dgx-h100"])
    ((_, base),) = bases
    grid = planning.counts(8, 4096)
    tries = planning._Tries(base, grid)
    runs = [i for i in range(len(grid)) if tries.at(i) is not None]
    hours = {i: tries.time(i) * grid[i] for i in runs}
    dearer = [i for i in runs if any(j > i and hours[j] < hours[i] and tries.time(j) < tries.time(i) for j in runs)]
    fewer = next(i for i in dearer if grid[i] >= 1024)
    deadline_s = tries.time(fewer) * 1.001
    meeting = [i for i in runs if tries.time(i) <= deadline_s]
    assert min(meeting) == fewer  # it is the fewest GPUs meeting the deadline
    fleet = load_fleet(
        _write(tmp_path, '[[pool]]\nname = "hall"\nsystem = "dgx-h100"\ngpus = 4096\nusd_per_gpu_hour = 2.0\n')
    )
    (d,) = fleets.plan_fleet(bases, Goal(deadline_s), fleet, None).to_dict()["fleet_plans"]
    assert d["n_gpus"] == grid[min(meeting, key=hours.__getitem__)] != grid[fewer]
