"""The output contract of /work/shared/design/ARCHITECTURE.md ("Uncertainty: `_low`/`_high` (80% interval)"): a key
ending `_low`/`_high` is only ever the 80% interval around the key without that ending, in every JSON object that
predict, compare, plan and a campaign print. A price range's ends are `_min`/`_max` and the figures priced at them
`_at_min_price`/`_at_max_price` (README, One output schema), so a tool built to the contract never reads tokens per
USD at the low price (the larger) as the interval's low end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_json
from test_campaign import CAMPAIGN

SIDES = ("_low", "_high")


def _objects(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object in `value`, nested ones (parallelism, a plan's candidates, a campaign's phases) too."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _objects(item)
    elif isinstance(value, list):
        for item in value:
            yield from _objects(item)


def _intervals(d: dict[str, Any]) -> dict[str, tuple[Any, Any, Any]]:
    """Each `_low`/`_high` pair of one object as (low, point, high), by the point's key; a key with no partner or no
    point fails here."""
    points = {key.removesuffix(side) for key in d for side in SIDES if key.endswith(side)}
    for point in points:
        assert all(point + side in d for side in SIDES), f"{point}: one end of its interval is missing"
        assert point in d, f"{point}_low/_high: no {point} for the interval to be around"
    return {point: (d[f"{point}_low"], d[point], d[f"{point}_high"]) for point in points}


def _check(found: Any) -> int:
    """Every interval in the JSON `found` brackets its point; returns how many were checked with numbers."""
    checked = 0
    for d in _objects(found):
        for point, (low, value, high) in _intervals(d).items():
            if None in (low, value, high):
                continue
            assert low <= value <= high, f"{point}: {low} <= {value} <= {high} does not hold"
            checked += 1
    return checked


PRICED = ("--model", "llama3.1-70b", "--tokens", "1T")
"""Priced at a list price with a public range (H100's, GB200's estimate): cost, tokens per USD and perf per USD at
each end of it differ from the point."""


@pytest.mark.parametrize(
    "args",
    [
        ("predict", *PRICED, "--gpu", "h100-sxm", "--gpus", "1024"),
        ("predict", *PRICED, "--gpu", "gb200", "--gpus", "1152", "--buy"),
        ("predict", "--model", "qwen3-30b-a3b", "--tokens", "100B", "--gpu", "h100-sxm", "--gpus", "64"),
        ("compare", *PRICED, "--gpu", "h100-sxm", "--gpu", "gb200", "--gpus", "1024"),
        ("plan", "--model", "llama3.1-8b", "--tokens", "100B", "--gpu", "h100-sxm:fp8", "--deadline", "3d"),
    ],
    ids=["predict", "predict-buy", "predict-moe", "compare", "plan"],
)
def test_every_low_and_high_is_an_interval_around_its_point(args: tuple[str, ...]) -> None:
    assert _check(run_json(*args, *(("--quiet",) if args[0] == "plan" else ()))) >= 5


def test_a_campaigns_totals_and_phases_keep_the_contract(tmp_path: Path) -> None:
    path = tmp_path / "campaign.toml"
    path.write_text(CAMPAIGN)
    assert _check(run_json("predict", str(path))) >= 15  # the totals and three phases


def test_each_interval_of_a_prediction_is_the_times_factor() -> None:
    """The interval is the calibration's factor on the time (predict.py `_run_interval_dict`), so each `_low` and
    `_high` is its point times the time's factors; a price range's end (the low price over the quoted one) is not."""
    d = run_json("predict", *PRICED, "--gpu", "h100-sxm", "--gpus", "1024", "--goodput", "none")
    factors = {side: d[f"time_to_train_s{side}"] / d["time_to_train_s"] for side in SIDES}
    assert factors["_low"] < 1 < factors["_high"]
    intervals = _intervals(d)
    assert {"step_time_s", "gpu_hours", "energy_kwh", "cost_usd"} <= set(intervals)
    for point, (low, value, high) in intervals.items():
        assert (low / value, high / value) == pytest.approx((factors["_low"], factors["_high"]), rel=1e-9), point
    assert d["cost_usd_at_min_price"] < d["cost_usd_low"]  # H100's low list price is further out than the interval
