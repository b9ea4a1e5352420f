"""A campaign predicted whole: each phase a full prediction, the totals by one rule, every command that takes one."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import openpyxl
import pytest
from conftest import run_cli
from test_campaign_inputs import BASE, LONG, MAIN, RAMP
from workbook import cells_by_key

import perfmodel
from perfmodel.inputs.record import replaced
from perfmodel.inputs.scenario import load_scenario
from perfmodel.outputs.report import _duration
from perfmodel.planning.campaign import Campaign, phase_scenarios, predict_campaign, total_rule
from perfmodel.planning.predict import predict

CAMPAIGN = BASE + "gbs = 1024\n" + RAMP + MAIN + LONG + 'n_gpus = 32\nprecision = "fp8"\n'
"""Llama 3.1 8B on 64 H100s: a ramp on half of them, the main phase, a long-context phase on 32 of its own, in FP8."""


@pytest.fixture(scope="module")
def campaign_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("campaign") / "campaign.toml"
    path.write_text(CAMPAIGN)
    return path


@pytest.fixture(scope="module")
def campaign(campaign_file: Path) -> Campaign:
    result = perfmodel.predict(campaign_file)
    assert isinstance(result, Campaign)
    return result


def test_a_phase_inherits_what_it_does_not_set(campaign_file: Path) -> None:
    phases = dict(phase_scenarios(load_scenario(campaign_file)))
    ramp, main, long = phases["ramp"], phases["main"], phases["long"]
    assert (ramp.n_gpus, ramp.parallelism.gbs, ramp.parallelism.seq_len, ramp.precision) == (32, 256, 4096, "bf16")
    assert (main.n_gpus, main.parallelism.gbs, main.tokens) == (64, 1024, 1e12 - 1e11 - 5e10)
    # a longer sequence keeps the batch in tokens per step: 1,024 x 4,096 = 128 x 32,768
    assert (long.parallelism.gbs, long.parallelism.cp, long.precision, long.n_gpus) == (128, 4, "fp8", 32)
    assert all(not s.phase for s in phases.values())


def test_a_share_of_the_gpus_is_whole_nodes_and_follows_the_count(campaign_file: Path) -> None:
    scenario = load_scenario(campaign_file, {"n_gpus": 200})  # half is 100 GPUs: 12.5 nodes of 8
    phases = dict(phase_scenarios(scenario))
    assert phases["ramp"].n_gpus == 96 and phases["main"].n_gpus == 200 and phases["long"].n_gpus == 32


def test_a_losses_batch_ramp_is_the_first_phases_alone(tmp_path: Path) -> None:
    # the run starts once: a [losses] ramp priced in every phase would pay it once per phase
    path = tmp_path / "ramped.toml"
    path.write_text(CAMPAIGN.replace(RAMP, "[losses]\nramp_tokens = 20e9\nramp_start_gbs = 64\n" + RAMP, 1))
    scenario = load_scenario(path)
    ramps = {name: s.losses.ramp_tokens for name, s in phase_scenarios(scenario)}
    assert ramps == {"ramp": 20e9, "main": 0.0, "long": 0.0}
    campaign = predict_campaign(scenario)
    lost = {name: p.to_dict()["losses"] for name, p in campaign.phases.items()}
    assert lost["ramp"]["ramp_gpu_hours"] > 0
    assert "ramp_gpu_hours" not in lost["main"] and "ramp_gpu_hours" not in lost["long"]
    # a loss the other phases do not incur is none of theirs in the total, not an unknown total
    assert campaign.to_dict()["losses"]["ramp_gpu_hours"] == lost["ramp"]["ramp_gpu_hours"]
    assert "Loss: ramp" in run_cli("predict", str(path)).out
    exported = tmp_path / "ramped.csv"
    assert run_cli("export", "predict", str(path), "--out", str(exported)).code == 0
    rows = {row["phase"]: row for row in csv.DictReader(io.StringIO(exported.read_text()))}
    assert float(rows["total"]["losses.ramp_gpu_hours"]) == pytest.approx(lost["ramp"]["ramp_gpu_hours"])
    book = tmp_path / "ramped.xlsx"
    assert run_cli("export", "predict", str(path), "--out", str(book)).code == 0
    sheet, cell = cells_by_key(book)[("losses.ramp_gpu_hours", 3)]  # the total row, under the three phases
    assert openpyxl.load_workbook(book)[sheet][cell].value.startswith("=SUM(")  # empty phase cells add nothing


def test_each_phase_is_the_full_prediction_of_its_scenario(campaign_file: Path, campaign: Campaign) -> None:
    for name, scenario in phase_scenarios(load_scenario(campaign_file)):
        assert campaign.phases[name].to_dict() == predict(scenario).to_dict()


def test_the_totals_are_the_phases_sums_and_the_whole_runs_rates(campaign: Campaign) -> None:
    d, phases = campaign.to_dict(), [p.to_dict() for p in campaign.phases.values()]
    for key in ("tokens_to_train", "time_to_train_s", "gpu_hours", "cost_usd", "cost_usd_at_min_price", "energy_kwh",
                "gpu_hours_with_failures", "cost_usd_with_failures_at_max_price", "time_to_train_with_failures_days",
                "expected_interruptions", "gpu_hours_high"):  # fmt: skip
        assert d[key] == pytest.approx(math.fsum(p[key] for p in phases), rel=1e-12), key
    assert d["tokens_per_s"] == pytest.approx(d["tokens_to_train"] / d["time_to_train_s"], rel=1e-12)
    gpu_s = d["gpu_hours"] * 3600
    assert d["tokens_per_s_per_gpu"] == pytest.approx(d["tokens_to_train"] / gpu_s, rel=1e-12)
    model_flops = math.fsum(
        p.run.tokens * p.model.model_flops_per_token(p.layout.seq_len)  # type: ignore[union-attr]
        for p in campaign.phases.values()
    )
    peak = campaign.hardware.accelerator.peak_flops("bf16")
    assert d["mfu_bf16"] == pytest.approx(model_flops / (gpu_s * peak), rel=1e-9)
    assert d["usd_per_million_tokens"] == pytest.approx(d["cost_usd"] / d["tokens_to_train"] * 1e6, rel=1e-12)
    assert d["goodput"] == pytest.approx(d["time_to_train_s"] / d["time_to_train_with_failures_s"], rel=1e-12)
    assert d["n_gpus"] == 64 and d["precision"] is None and d["step_time_s"] is None  # the phases differ
    assert d["model"] == "llama3.1-8b" and d["fits_in_memory"] is all(p["fits_in_memory"] for p in phases)


@pytest.mark.parametrize(
    ("key", "rule"),
    [
        ("gpu_hours_with_losses", ("sum", None)),  # a family another part of the model may add
        ("cost_usd_with_losses_low", ("sum", None)),
        ("time_to_train_with_losses_days", ("sum", None)),
        ("losses.stragglers_gpu_hours", ("sum", None)),
        ("electricity_cost_usd", ("sum", None)),
        ("usd_per_million_tokens_with_losses", ("mean", "tokens_to_train")),
        ("mfu_of_precision", ("mean", "gpu_hours")),
        ("memory_per_gpu_gib", ("max", None)),
        ("step_time_s", ("same", None)),
        ("usd_per_gpu_hour", ("same", None)),
        ("breakdown.compute_s", ("same", None)),
        ("failures_per_million_gpu_hours", ("same", None)),  # a rate per GPU-hour, not GPU-hours
        ("tokens_per_usd_at_min_price", ("mean", "cost_usd_at_min_price")),  # tokens over cost at each price
        ("kwh_per_million_tokens", ("mean", "tokens_to_train")),
    ],
)
def test_one_rule_totals_every_column_by_its_name(key: str, rule: tuple[str, str | None]) -> None:
    assert total_rule(key) == rule


def test_one_phase_that_sets_nothing_is_the_scenario_itself(tmp_path: Path) -> None:
    plain = tmp_path / "plain.toml"
    plain.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 16\ntokens = 1e11\n')
    single = tmp_path / "single.toml"
    single.write_text(plain.read_text() + '[[phase]]\nname = "all"\n')
    alone, one = perfmodel.predict(plain), perfmodel.predict(single)
    assert isinstance(one, Campaign) and not isinstance(alone, Campaign)
    assert one.phases["all"].to_dict() == alone.to_dict()
    for key, value in alone.to_record().items():
        assert one.record[key] == (pytest.approx(value, rel=1e-12) if isinstance(value, float) else value), key
    assert "Llama 3.1 8B campaign of 1 phase on up to 16 x" in run_cli("predict", str(single)).out


def test_a_scenario_without_phases_prints_what_a_prediction_prints() -> None:
    """The CLI's campaign dispatch leaves every one-phase scenario's output as the prediction's own."""
    from perfmodel.outputs.report import table

    for name in ("default", "llama3.1-8b-1node", "mlperf-405b-h100-512"):
        direct = predict(load_scenario(name))
        assert run_cli("predict", name, "--format", "json").out == json.dumps(direct.to_dict(), indent=2) + "\n"
        assert run_cli("predict", name).out == table(direct) + "\n"


def test_predict_prints_a_line_per_phase_the_total_and_the_summary(campaign_file: Path) -> None:
    result = run_cli("predict", str(campaign_file))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("Llama 3.1 8B campaign of 3 phases on up to 64 x NVIDIA H100")
    table = next(i for i, line in enumerate(lines) if line.startswith("phase ")) + 2  # under the headings and rule
    rows = [line.split()[0] for line in lines[table : table + 4]]
    assert rows == ["ramp", "main", "long", "total"]
    assert any(line.startswith("GPU-hours") for line in lines)
    assert "long: sequences of 32,768 tokens and more" in result.out
    # the total's P10/P90: its phases' (the interval and run-to-run variability), the model error shared by them
    d = json.loads(run_cli("predict", str(campaign_file), "--format", "json").out)
    (days,) = [line for line in lines if line.startswith("Time to train")]
    p10, p90 = (_duration(d[f"time_to_train_s_{q}"]) for q in ("p10", "p90"))
    assert f"(P10 {p10} to P90 {p90}: " in days and "run-to-run 0.79%, model error shared by the phases)" in days
    summed = sum(ph["time_to_train_s_p90"] for ph in d["phases"])  # every source shared: wider
    assert summed * (1 - 1e-3) < d["time_to_train_s_p90"] < summed
    # the cost says its price's basis and the prices of its range, as a prediction's does
    (cost,) = [line for line in lines if line.split("  ")[0] == "Cost"]  # not "Cost per 1M tokens"
    low, high = d["min_usd_per_gpu_hour"], d["max_usd_per_gpu_hour"]
    assert f"/GPU-h {d['price_basis']} (P10 " in cost and cost.endswith(f" at ${low:,.2f} to ${high:,.2f})")


def test_predict_prints_each_loss_summed_over_the_phases_and_the_campaign_with_them(
    campaign_file: Path, campaign: Campaign
) -> None:
    """The losses a phase prices (planning/losses.py) sum into the campaign's lines, as its record sums them."""
    out = run_cli("predict", str(campaign_file)).out
    record = campaign.record
    stragglers = sum(p.losses.to_dict()["stragglers_gpu_hours"] for p in campaign.phases.values() if p.losses)
    assert record["losses.stragglers_gpu_hours"] == pytest.approx(stragglers)
    assert f"Loss: stragglers       {stragglers:,.0f} GPU-h" in out
    assert "With losses            " in out and f"{record['gpu_hours_with_losses']:,.0f} GPU-hours" in out
    assert "Loss:" not in run_cli("predict", str(campaign_file), "--losses", "none").out


def test_json_has_the_totals_on_top_and_a_prediction_per_phase(campaign_file: Path, campaign: Campaign) -> None:
    d = json.loads(run_cli("predict", str(campaign_file), "--format", "json").out)
    assert [p["phase"] for p in d["phases"]] == ["ramp", "main", "long"]
    one = campaign.phases["main"].to_dict()
    assert set(d) - {"phases"} == set(one) and list(d["phases"][1]) == ["phase", *one]
    assert d["gpu_hours"] == campaign.run.gpu_hours


def test_csv_has_a_phase_column_and_a_total_row(campaign_file: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(run_cli("predict", str(campaign_file), "--format", "csv").out)))
    assert [r["phase"] for r in rows] == ["ramp", "main", "long", "total"]
    assert float(rows[3]["gpu_hours"]) == pytest.approx(sum(float(r["gpu_hours"]) for r in rows[:3]), rel=1e-12)
    assert next(iter(rows[0])) == "phase" and rows[3]["step_time_s"] == ""


def test_compare_runs_the_whole_campaign_on_each_system(campaign_file: Path) -> None:
    args = ("compare", str(campaign_file), "--gpu", "h100-sxm", "--gpu", "b200", "--gpus", "64,128")
    rows = json.loads(run_cli(*args, "--format", "json").out)
    assert [(r["system"], r["n_gpus"]) for r in rows] == [("dgx-h100", 64), ("dgx-h100", 128), ("dgx-b200", 64),
                                                          ("dgx-b200", 128)]  # fmt: skip
    assert [p["n_gpus"] for p in rows[1]["phases"]] == [64, 128, 32]  # the share follows, the fixed count stays
    first = rows[0]
    for r in rows:
        assert r["speedup_vs_first"] == pytest.approx(r["tokens_per_s"] / first["tokens_per_s"], rel=1e-12)
        per_usd = r["tokens_to_train"] / r["cost_usd"]
        assert r["tokens_per_usd"] == pytest.approx(per_usd, rel=1e-12)
        assert r["perf_per_usd_vs_first"] == pytest.approx(per_usd / (first["tokens_to_train"] / first["cost_usd"]))
    table = run_cli(*args)
    assert table.code == 0 and "Each row runs the whole campaign (3 phases" in table.out
    days = rows[0]["time_to_train_with_losses_s"] / 86400
    assert "time with losses" in table.out and f"{days:,.1f} days" in table.out.splitlines()[4]
    flat = list(csv.DictReader(io.StringIO(run_cli(*args, "--format", "csv").out)))
    assert [r["phase"] for r in flat] == ["ramp", "main", "long", "total"] * 4  # one schema: predict's csv rows
    totals = [r for r in flat if r["phase"] == "total"]
    assert [float(r["gpu_hours"]) for r in totals] == pytest.approx([r["gpu_hours"] for r in rows], rel=1e-12)
    assert all(r["speedup_vs_first"] == "" for r in flat if r["phase"] != "total")  # ratios compare whole runs
    assert float(totals[3]["speedup_vs_first"]) == pytest.approx(rows[3]["speedup_vs_first"], rel=1e-12)


def test_plan_seeks_the_campaigns_count(campaign_file: Path) -> None:
    report = perfmodel.plan(campaign_file, gpu="h100-sxm", deadline_s=30 * 86400)
    plan = report.plans[0]
    assert plan.feasible and isinstance(plan.prediction, Campaign)
    days = plan.to_dict()["time_to_train_days"]
    assert days <= 30 and plan.to_dict()["goal_basis"] == "with losses"
    assert plan.prediction.run_with_losses is not None
    assert days == pytest.approx(plan.prediction.run_with_losses.time_s / 86400, rel=1e-12)
    assert days * 86400 == pytest.approx(plan.prediction.record["time_to_train_with_losses_s"], rel=1e-12)
    n = plan.to_dict()["n_gpus"]
    smaller = predict_campaign(replaced(load_scenario(campaign_file), n_gpus=n - 8))
    assert smaller.run_with_losses is not None and plan.prediction.run_with_losses.cost_usd is not None
    # the plan is the cheapest count meeting the deadline: one step fewer misses it or costs more
    assert smaller.run_with_losses.time_s > 30 * 86400 or (
        (smaller.run_with_losses.cost_usd or 0.0) > plan.prediction.run_with_losses.cost_usd
    )
    assert plan.prediction.phases["long"].layout.n_gpus == 32  # its own count stays
    assert "plan.phases" not in report.to_records()[0]


def test_tables_mark_the_phases_beyond_the_measured_runs(campaign_file: Path) -> None:
    """On 4,096 H100s the ramp and main phases of 8B go beyond the calibration's runs (scale band, layout class):
    predict marks their lines and names the axes in planning/evidence.py's words under the table (JSON had them,
    the table none); compare and plan mark the campaign's row (plan's table failed on a campaign)."""
    wide = perfmodel.predict(campaign_file, n_gpus=4096)
    assert isinstance(wide, Campaign)
    beyond = {name: p.evidence for name, p in wide.phases.items() if p.evidence is not None and p.evidence.beyond}
    assert set(beyond) == {"ramp", "main"}
    lines = run_cli("predict", str(campaign_file), "--gpus", "4096").out.splitlines()
    marked = [line.split()[0] for line in lines if line.split()[1:2] == ["[e]"]]
    assert marked == ["ramp", "main"]
    head = next(i for i, line in enumerate(lines) if line.startswith("[e] beyond the measured runs"))
    note = lines[head + 1 :]
    for name, evidence in beyond.items():
        line = next(line for line in note if name in line.split(":")[0])
        assert all(evidence.axis_text(axis) in line for axis in evidence.beyond), line
    small = perfmodel.predict(campaign_file)  # 64 GPUs: the ramp and the long stage within the evidence
    assert isinstance(small, Campaign)
    near = [name for name, p in small.phases.items() if p.evidence is not None and not p.evidence.beyond]
    assert {"ramp", "long"} <= set(near)
    lines = run_cli("predict", str(campaign_file)).out.splitlines()
    assert [line.split()[0] for line in lines if line.split()[1:2] == ["[e]"]] == [
        name for name in small.phases if name not in near
    ]  # the main phase sits at the best measured run's edge (x1.07): marked where its evidence says beyond
    compared = run_cli("compare", str(campaign_file), "--gpu", "h100-sxm", "--gpus", "64,4096").out
    footnote = next(line for line in compared.splitlines() if line.startswith("* beyond the measured runs"))
    assert "dgx-h100 *" in compared and "scale band" in footnote.split(":")[0]
    planned = run_cli("plan", str(campaign_file), "--gpu", "h100-sxm", "--deadline", "30d", "--quiet")
    assert planned.code == 0 and "3 phases (below)" in planned.out, planned.err


def test_plan_refuses_a_campaign_whose_phases_all_fix_their_count(tmp_path: Path) -> None:
    path = tmp_path / "fixed.toml"
    path.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\n[[phase]]\nname = "a"\ntokens = 1e9\nn_gpus = 8\n')
    result = run_cli("plan", str(path), "--gpu", "h100-sxm", "--deadline", "30d")
    assert result.code == 2 and "every phase of the campaign gives its own n_gpus" in result.err


def test_explain_each_phase_or_the_one_named(campaign_file: Path) -> None:
    every = run_cli("explain", str(campaign_file), "--no-ops")
    assert every.code == 0 and [line for line in every.out.splitlines() if line.startswith("== phase")] == [
        "== phase ramp", "== phase main", "== phase long"]  # fmt: skip
    one = json.loads(run_cli("explain", str(campaign_file), "--phase", "long", "--format", "json").out)
    assert [p["phase"] for p in one["phases"]] == ["long"] and "CP4" in one["phases"][0]["layout"]
    unknown = run_cli("explain", str(campaign_file), "--phase", "lon")
    assert unknown.code == 2 and unknown.err == "error: --phase lon: the campaign has no such phase (did you mean " \
        "'long'?); its phases: ramp, main, long\n"  # fmt: skip


def test_export_writes_a_row_per_phase_and_a_live_total(campaign_file: Path, tmp_path: Path) -> None:
    import openpyxl
    from workbook import Recalculator

    for suffix in ("xlsx", "json", "csv"):
        result = run_cli("export", "predict", str(campaign_file), "--out", str(tmp_path / f"c.{suffix}"))
        assert result.code == 0, result.err
    rows = json.loads((tmp_path / "c.json").read_text())["rows"]
    assert [r["phase"] for r in rows] == ["ramp", "main", "long", "total"]
    assert [r["phase"] for r in csv.DictReader((tmp_path / "c.csv").open())] == ["ramp", "main", "long", "total"]
    book = openpyxl.load_workbook(tmp_path / "c.xlsx")
    cells = {cell.value: (ws.title, cell.column_letter) for ws in book if ws.title != "Summary" for cell in ws[5]
             if isinstance(cell.value, str)}  # fmt: skip
    engine = Recalculator(tmp_path / "c.xlsx")
    before = engine()
    for key in ("gpu_hours", "cost_usd", "energy_kwh", "time_to_train_days", "gpu_hours_with_failures",
                "tokens_per_s_per_gpu", "mfu", "goodput", "n_gpus", "usd_per_million_tokens"):  # fmt: skip
        sheet, letter = cells[key]
        for index, row in enumerate(rows):
            assert before[(sheet, f"{letter}{6 + index}")] == pytest.approx(row[key], rel=1e-9), (key, index)
    price, cost = cells["usd_per_gpu_hour"], cells["cost_usd"]
    after = engine({(price[0], f"{price[1]}7"): 2.0})  # the main phase at $2 per GPU-hour
    expected = rows[0]["cost_usd"] + rows[1]["gpu_hours"] * 2.0 + rows[2]["cost_usd"]
    assert after[(cost[0], f"{cost[1]}9")] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("search", "{file}"), "search takes a one-phase scenario, not a campaign ([[phase]] tables): predict, "),
        (("sensitivity", "{file}"), "sensitivity takes a one-phase scenario, not a campaign"),
        (("whatif", "{file}", "--set", "nvlink_gbps=x2"), "whatif takes a one-phase scenario, not a campaign"),
        (("plot", "compare", "{file}", "--gpu", "b200", "--out", "{tmp}/p.png"), "plot takes one-phase scenarios"),
    ],
)
def test_commands_that_take_no_campaign_say_why_and_what_instead(
    campaign_file: Path, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    result = run_cli(*(arg.replace("{file}", str(campaign_file)).replace("{tmp}", str(tmp_path)) for arg in args))
    assert result.code == 2 and result.out == "" and message in result.err and result.err.count("\n") == 1
    assert not list(tmp_path.iterdir())


def test_a_sweep_of_a_campaign_says_why(campaign_file: Path, tmp_path: Path) -> None:
    sweep = tmp_path / "s.toml"
    sweep.write_text(f'[sweep]\nbase = "{campaign_file}"\nn_gpus = [64, 128]\n')
    result = run_cli("sweep", str(sweep))
    assert result.code == 2 and "a sweep takes a one-phase scenario, not a campaign" in result.err


def test_the_api_gives_phases_a_dict_and_records(campaign_file: Path, campaign: Campaign) -> None:
    import pandas

    assert list(campaign.phases) == ["ramp", "main", "long"]
    frame = pandas.DataFrame(campaign.to_records())
    assert list(frame["phase"]) == ["ramp", "main", "long", "total"]
    assert campaign.to_dict()["phases"][0]["phase"] == "ramp"


def test_the_phase_tables_token_counts_have_three_significant_figures() -> None:
    """scenarios/campaign-deepseek-v3.toml: the tokens column printed two decimals, '117.25B' and '62.91B' beside
    '14.33T' (and '800.00B' beside '2.87T' elsewhere); every count now reads to three figures, as views' repr does."""
    from perfmodel.planning.views import count_text

    out = run_cli("predict", "scenarios/campaign-deepseek-v3.toml").out.splitlines()
    header = next(i for i, line in enumerate(out) if line.startswith("phase "))
    end = out[header].index(" tokens ") + len(" tokens")
    cells = [line[:end].split()[-1] for line in out[header + 2 :] if line.strip()][:8]
    assert cells[-1] == count_text(14.93e12) == "14.9T" and "117B" in cells and "62.9B" in cells, cells
    assert all(len(cell.replace(".", "").rstrip("TBMk")) == 3 for cell in cells), cells
    assert [count_text(v) for v in (800e9, 2.87e12, 15e12, 999.6e9, 512)] == ["800B", "2.87T", "15.0T", "1.00T", "512"]


def test_a_phases_own_gpu_count_fills_whole_nodes(tmp_path: Path) -> None:
    """`--gpus 100` on 8-GPU DGX H100 nodes is refused (12.5 nodes); a phase's `n_gpus = 100`, and the file's own
    `n_gpus`, were accepted by predict and plan and priced as 12.5 nodes. Each names the file, the phase and the
    field."""
    top = 'model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = {n}\ntokens = 200e9\n'
    phases = '[[phase]]\nname = "small"\nn_gpus = 100\ntokens = 100e9\n[[phase]]\nname = "main"\ntokens = 100e9\n'
    campaign, single = tmp_path / "campaign.toml", tmp_path / "single.toml"
    campaign.write_text(top.format(n=128) + phases)
    single.write_text(top.format(n=100))
    nodes = "100 GPUs is 12.5 dgx-h100 nodes of 8 GPUs each; allowed: whole nodes, such as 96 or 104"
    for args in (("predict",), ("plan", "--deadline", "30d")):
        result = run_cli(*args, str(campaign))
        assert result.code == 2 and result.err == f"error: {campaign}: phase 'small': field 'n_gpus': {nodes}\n"
    result = run_cli("predict", str(single))
    assert result.code == 2 and result.err == f"error: {single}: field 'n_gpus': {nodes}\n"
    assert run_cli("predict", str(single), "--gpus", "96").code == 0
