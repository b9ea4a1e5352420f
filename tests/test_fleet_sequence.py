"""Jobs one after another reuse the same GPUs (issue 31, item 3): a [[job]]'s `after` and `start_days` give its
window, and a job holds its GPUs and its site's power only from its start to its finish at the plan's confidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli
from hypothesis import example, given, settings
from hypothesis import strategies as st

from perfmodel.inputs.fleet import load_fleet
from perfmodel.planning import fleet_jobs
from perfmodel.planning.plan import Goal, candidate_bases

HALL = '[[pool]]\nname = "hall-a"\nsystem = "dgx-h100"\ngpus = 128\nsite = "A"\n'


def _job(name: str, days: float, extra: str = "") -> str:
    return f'[[job]]\nname = "{name}"\nmodel = "llama3.1-8b"\ntokens = "100B"\ndeadline_days = {days}\n{extra}'


def _plan(tmp_path: Path, text: str, *flags: str) -> dict:
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    result = run_cli("plan", "--fleet", str(path), *flags, "--format", "json", "-q")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_a_job_after_another_reuses_its_gpus(tmp_path: Path) -> None:
    """128 owned H100: 100B tokens in a day take 96 of them; a second 100B job by day 2 at the same time gets the 32
    left, which need about 2.5 days, and cannot finish; after the first it has the hall again from the first's
    finish (a deadline with margin both ways, so that a refit moving H100's speed a few percent keeps the case)."""
    together = _plan(tmp_path, HALL + _job("first", 1) + _job("second", 2))
    assert not together["jobs"][1]["fleet_plans"][0]["feasible"]
    d = _plan(tmp_path, HALL + _job("first", 1) + _job("second", 2, 'after = "first"\n'))
    first, second = (job["fleet_plans"][0] for job in d["jobs"])
    assert first["feasible"] and second["feasible"]
    assert second["start_after_days"] == pytest.approx(first["finish_days"], rel=1e-12)  # at the median: the point
    assert second["finish_days"] <= 2 and first["owned_gpus"] + second["owned_gpus"] > 128
    (hall,) = d["fleet_use"]
    assert hall["used"] == {"first": first["owned_gpus"], "second": second["owned_gpus"]}
    assert hall["peak"] == max(first["owned_gpus"], second["owned_gpus"]) and hall["left"] == 128 - hall["peak"]


def test_a_start_day_frees_what_ends_before_it(tmp_path: Path) -> None:
    d = _plan(tmp_path, HALL + _job("first", 1) + _job("later", 3, "start_days = 1.2\n"))
    first, later = (job["fleet_plans"][0] for job in d["jobs"])
    assert later["feasible"] and later["start_after_days"] == 1.2 and later["owned_gpus"] > 128 - first["owned_gpus"]


def test_a_chain_at_a_confidence_waits_for_the_first_jobs_p90(tmp_path: Path) -> None:
    d = _plan(tmp_path, HALL + _job("first", 1) + _job("second", 3, 'after = "first"\n'), "--confidence", "0.9")
    first, second = (job["fleet_plans"][0] for job in d["jobs"])
    p90_finish = first["start_after_days"] + first["plan"]["time_to_train_days_at_confidence"]
    assert second["start_after_days"] == pytest.approx(p90_finish, rel=1e-12)
    assert p90_finish > first["finish_days"]


def test_a_job_after_one_no_mix_serves_says_so(tmp_path: Path) -> None:
    d = _plan(tmp_path, HALL + _job("huge", 0.1) + _job("next", 3, 'after = "huge"\n'))
    (plan,) = d["jobs"][1]["fleet_plans"]
    assert not plan["feasible"] and plan["reason"] == "it runs after 'huge', which no mix serves"


@pytest.mark.parametrize(
    ("jobs", "says"),
    [
        (_job("a", 1, 'after = "b"\n'), "field 'job.0.after': 'b' is not another job; allowed one of none"),
        (_job("a", 1, 'after = "a"\n') + _job("b", 2), "'a' is not another job; allowed one of 'b'"),
        (_job("a", 1, 'after = "b"\n') + _job("b", 2, 'after = "a"\n'), "'job.0.after': a -> b -> a runs in a circle"),
        (_job("a", 1, "start_days = 1\n"), "field 'job.0.start_days': 1 leaves no time before its deadline_days 1"),
        (_job("a", 1, "start_days = -1\n"), "field 'job.0.start_days'"),
    ],
)  # fmt: skip
def test_bad_windows_are_one_line_errors(tmp_path: Path, jobs: str, says: str) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(HALL + jobs)
    result = run_cli("plan", "--fleet", str(path), "-q")
    assert result.code == 2 and result.out == "" and result.err.strip().count("\n") == 0, result.err
    assert says in result.err


@settings(max_examples=5, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([1.0, 2.0, 3.0]), st.sampled_from([0.0, 0.5, 1.5]), st.booleans()),
             min_size=2, max_size=4),
    st.sampled_from([0.15, 0.3]),
)  # fmt: skip
@example([(1.0, 0.0, False), (2.0, 0.0, False), (2.0, 1.5, False)], 0.3)  # two holdings one after the other, both
# within the third's window: it finds the most held at once taken, not their sum (which passed the pool's 128)
def test_at_no_moment_do_jobs_hold_more_than_a_pool_or_a_sites_cap(
    specs: list[tuple[float, float, bool]], cap_mw: float
) -> None:
    """Whatever the windows: the GPUs held at once never pass a pool's, the power never the cap."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "fleet.toml")
        path.write_text(HALL)
        fleet = load_fleet(path)
    bases = candidate_bases(None, {"model": "llama3.1-8b", "tokens": 100e9}, {}, ["dgx-h100"])
    jobs = [
        fleet_jobs.Job(f"j{i}", bases, Goal((start + days) * 86400, power_mw=cap_mw), start,
                       f"j{i - 1}" if chained and i else "")
        for i, (days, start, chained) in enumerate(specs)
    ]  # fmt: skip
    report = fleet_jobs.plan_jobs(jobs, fleet, None)
    for held in report.held:  # at each start, what is held then
        now = [h for h in report.held if h.start_days <= held.start_days < h.finish_days]
        assert sum(h.most().get("hall-a", 0) for h in now) <= 128
        assert sum(h.power_mw for h in now) <= cap_mw * (1 + 1e-12)
    (hall,) = report.use()
    assert hall["left"] >= 0 and hall["peak"] <= 128
