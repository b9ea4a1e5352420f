"""`perfmodel search`: the JSON contract, agreement with `predict`, several GPU counts, errors, progress bar."""

import io
import json

import click._termui_impl
import pytest
from conftest import run_cli
from test_cli import CONTRACT_KEYS

from perfmodel.cli.options import progress
from perfmodel.planning.search import gbs_choices

SMALL = ["--model", "llama3.1-8b", "--gpu", "h100-sxm", "--precision", "fp8"]


def _search(*args: str) -> dict:
    result = run_cli("search", *SMALL, *args, "--format", "json")
    assert result.code == 0, result.err
    assert result.err == ""  # no progress bar when stderr is not a terminal
    return json.loads(result.out)


def test_search_json_contract_and_order() -> None:
    d = _search("--gpus", "16", "--gbs", "64", "--top", "7")
    assert set(d) >= {"results", "layouts_evaluated", "layouts_feasible", "elapsed_s"}
    assert d["layouts_evaluated"] >= d["layouts_feasible"] >= 7 == len(d["results"])
    assert d["layouts_priced_in_full"] >= d["layouts_feasible"]
    assert all(set(r) >= CONTRACT_KEYS and r["fits_in_memory"] and r["n_gpus"] == 16 for r in d["results"])
    times = [r["step_time_s"] for r in d["results"]]
    assert times == sorted(times)


def test_predict_with_open_dimensions_picks_the_search_best() -> None:
    best = _search("--gpus", "16", "--gbs", "64", "--top", "1")["results"][0]
    chosen = json.loads(run_cli("predict", *SMALL, "--gpus", "16", "--gbs", "64", "--format", "json").out)
    assert chosen["parallelism"] == best["parallelism"]
    assert chosen["step_time_s"] == pytest.approx(best["step_time_s"], rel=1e-12)
    par = best["parallelism"]
    fixed_flags = [f"--{k}={par[k]}" for k in ("tp", "pp", "cp", "vp", "mbs", "recompute", "zero")]
    given = json.loads(run_cli("predict", *SMALL, "--gpus", "16", "--gbs", "64", *fixed_flags, "--format", "json").out)
    assert given["step_time_s"] == pytest.approx(best["step_time_s"], rel=1e-12)


def test_open_global_batch_is_searched_per_token() -> None:
    d = _search("--gpus", "8", "--top", "20", "--tokens", "1T")
    batches = {r["parallelism"]["gbs"] for r in d["results"]}
    assert batches <= set(gbs_choices(512))
    throughput = [r["tokens_per_s"] for r in d["results"]]
    assert throughput == sorted(throughput, reverse=True)


def test_several_gpu_counts_cost_objective_and_pareto() -> None:
    d = _search("--gpus", "8,16,32", "--objective", "cost", "--pareto", "--gbs", "128", "--top", "3")
    assert d["objective"] == "cost"
    per_token = [r["n_gpus"] / r["tokens_per_s"] for r in d["results"]]
    assert per_token == sorted(per_token)
    front = d["pareto"]
    assert [r["n_gpus"] for r in front] == sorted(r["n_gpus"] for r in front)
    assert [r["tokens_per_s"] for r in front] == sorted(r["tokens_per_s"] for r in front)


def test_table_output() -> None:
    result = run_cli("search", *SMALL, "--gpus", "8", "--gbs", "64", "--top", "3", "--pareto")
    assert result.code == 0
    assert "valid layouts in" in result.out and "grid cells" in result.out
    assert "Pareto front" in result.out and "TP" in result.out


def test_a_given_layout_is_counted_in_the_singular() -> None:
    result = run_cli("search", "mlperf-405b-h100-512")  # the bundled scenario by name: every dimension given
    assert result.code == 0, result.err
    assert "1 valid layout in" in result.out and "1 fits in memory" in result.out and "on 1 grid cell," in result.out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "llama3.1-405b", "--gpus", "8"], "no layout fits in memory: of "),
        (["--gpus", "8", "--gbs", "12", "--dp", "8"], "GBS 12 must be divisible by MBS 1 x DP 8"),
        (["--gpus", "64", "--pp", "3"], "does not divide the 64 GPUs"),
        (["--gpus", "64", "--tp", "3"], "--tp: TP 3 must divide the 64 attention heads"),  # before any search
        (["--gpus", "8,x"], "'x' in '8,x' is not a whole number"),
    ],
)
def test_impossible_requests_say_why(args: list[str], message: str) -> None:
    result = run_cli("search", "--gpu", "h100-sxm", "--precision", "bf16", *args)
    assert result.code == 2 and result.out == ""
    assert message in result.err and result.err.count("\n") == 1


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal_and_not_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setattr(click._termui_impl, "isatty", lambda stream: True)
    with progress("Pricing layouts", quiet=False) as update:
        update(1, 2)
        update(2, 2)
    assert "Pricing layouts" in terminal.getvalue()
    quiet = _Terminal()
    monkeypatch.setattr("sys.stderr", quiet)
    with progress("Pricing layouts", quiet=True) as update:
        update(1, 2)
    assert quiet.getvalue() == ""


def test_scenario_layout_is_kept_unless_relayout() -> None:
    given = run_cli("search", "scenarios/mlperf-405b-gb200-512.toml", "--format", "json", "--top", "1")
    assert json.loads(given.out)["layouts_evaluated"] == 1
    relaid = json.loads(
        run_cli("search", "scenarios/mlperf-405b-gb200-512.toml", "--relayout", "--tp", "4", "--format", "json").out
    )
    assert relaid["layouts_evaluated"] > 1000
    assert all(r["parallelism"]["tp"] == 4 and r["parallelism"]["gbs"] == 896 for r in relaid["results"])


def test_cost_objective_without_a_price_is_refused_naming_the_missing_price() -> None:
    """Without a price the cost ranking is GPU-time per token, not the 'cost per token' its header says: refused,
    naming the GPU without a price and the flags that give one; with a price it ranks."""
    unpriced = ("search", "--model", "llama3.1-8b", "--gpu", "mi355x", "--gpus", "8", "--objective", "cost")
    result = run_cli(*unpriced)
    assert result.code == 2 and result.out == ""
    assert result.err == (
        "error: search by cost: no public price for mi355x; pass --usd-per-gpu-hour (or --buy), or search by time\n"
    )
    assert "best 10 by cost per" in run_cli(*unpriced, "--usd-per-gpu-hour", "3").out
    assert run_cli(*unpriced[:-1], "time").code == 0
