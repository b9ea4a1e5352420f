"""`perfmodel export`: the workbook's live formulas recomputed by real engines equal perfmodel's own numbers, before
and after a planner edits the inputs; CSV and JSON carry the same columns; writes are atomic."""

from __future__ import annotations

import csv
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from conftest import run_cli
from workbook import Cell, Recalculator, cells_by_key, libreoffice, recompute_libreoffice

from perfmodel.inputs.scenario import load_scenario
from perfmodel.outputs.export import printing
from perfmodel.outputs.export.table import COLUMNS
from perfmodel.planning.predict import predict
from perfmodel.planning.training import Price, training_run

SCENARIO = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "64", "--precision", "fp8", "--tokens", "2T")
FORMULA_KEYS = [c.key for c in COLUMNS if c.formula is not None]
REL = 1e-9


def _export(tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / name
    result = run_cli("export", "predict", *SCENARIO, *args, "--out", str(out))
    assert result.code == 0, result.err
    return out


def _cells(path: Path) -> dict[tuple[str, int], Cell]:
    return cells_by_key(path, ("Inputs", "Results", "Breakdown"))


def _defaults(path: Path) -> dict[str, Cell]:
    """Shared default input cells (tokens, PUE, electricity) on the Inputs sheet, by key."""
    ws = openpyxl.load_workbook(path)["Inputs"]
    return {row[2].value: ("Inputs", row[1].coordinate) for row in ws.iter_rows(min_row=7) if row[2].value}


def _csv_row(path: Path) -> dict[str, Any]:
    with path.open() as handle:
        return next(csv.DictReader(handle))


@pytest.fixture(scope="module")
def workbook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _export(tmp_path_factory.mktemp("export"), "plan.xlsx")


@pytest.fixture(scope="module")
def engine(workbook: Path) -> Recalculator:
    return Recalculator(workbook)


def test_recomputed_formulas_equal_perfmodel(workbook: Path, engine: Recalculator, tmp_path: Path) -> None:
    values = engine()
    cells = _cells(workbook)
    expected = json.loads(_export(tmp_path, "plan.json").read_text())["rows"][0]
    for key in FORMULA_KEYS:
        assert values[cells[(key, 0)]] == pytest.approx(expected[key], rel=REL), key
    # The formulas are live: each of these cells holds a formula, not a number.
    book = openpyxl.load_workbook(workbook)
    for key in ("time_to_train_s", "gpu_hours", "cost_usd", "energy_kwh", "step_time_s"):
        sheet, ref = cells[(key, 0)]
        assert str(book[sheet][ref].value).startswith("="), key


def test_edited_inputs_recompute_as_perfmodel_would(workbook: Path, engine: Recalculator) -> None:
    """Tokens, price, PUE and electricity edited in the default cells: the workbook agrees with a new prediction."""
    cells, defaults = _cells(workbook), _defaults(workbook)
    values = engine(
        {
            defaults["tokens_to_train"]: 3.5e12,
            defaults["pue"]: 1.45,
            defaults["usd_per_kwh"]: 0.13,
            cells[("usd_per_gpu_hour", 0)]: 2.25,
        }
    )
    flags = dict(zip(SCENARIO[::2], SCENARIO[1::2], strict=True))
    overrides = {
        "model": flags["--model"],
        "gpu": flags["--gpu"],
        "n_gpus": 64,
        "precision": "fp8",
        "tokens": 3.5e12,
        "cost.pue": 1.45,
        "cost.usd_per_gpu_hour": 2.25,
    }
    d = predict(load_scenario(None, overrides)).to_dict()
    for key in ("time_to_train_s", "time_to_train_days", "gpu_hours", "cost_usd", "energy_kwh"):
        assert values[cells[(key, 0)]] == pytest.approx(d[key], rel=REL), key
    assert values[cells[("electricity_cost_usd", 0)]] == pytest.approx(d["energy_kwh"] * 0.13, rel=REL)
    # Price low and high were not edited: their costs stay at the accelerator's range.
    assert values[cells[("cost_usd_at_min_price", 0)]] == pytest.approx(d["gpu_hours"] * 2.99, rel=REL)


def test_edited_gpu_count_keeps_throughput_per_gpu(workbook: Path, engine: Recalculator) -> None:
    """Documented meaning: the cluster grows around the modelled per-GPU throughput."""
    cells = _cells(workbook)
    before = engine()
    after = engine({cells[("n_gpus", 0)]: 256})
    per_gpu = before[cells[("tokens_per_s_per_gpu", 0)]]
    p = predict(load_scenario(None, {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 64, "precision": "fp8"}))
    run = training_run(2e12, 2e12 / (per_gpu * 256), 256, p.price, p.hardware.it_power_w_per_gpu, 1.2)
    assert after[cells[("time_to_train_s", 0)]] == pytest.approx(run.time_s, rel=REL)
    assert after[cells[("time_to_train_s", 0)]] == pytest.approx(before[cells[("time_to_train_s", 0)]] / 4, rel=REL)
    for key in ("gpu_hours", "cost_usd", "energy_kwh"):
        assert after[cells[(key, 0)]] == pytest.approx(before[cells[(key, 0)]], rel=REL), key
    assert run.gpu_hours == pytest.approx(after[cells[("gpu_hours", 0)]], rel=REL)


def test_edited_breakdown_part_changes_step_time(workbook: Path, engine: Recalculator) -> None:
    """The step time is the sum of the Breakdown parts, so a planner can ask 'what if DP were fully hidden'."""
    cells = _cells(workbook)
    before = engine()
    part = before[cells[("breakdown.compute_s", 0)]]
    after = engine({cells[("breakdown.compute_s", 0)]: part / 2})
    step = before[cells[("step_time_s", 0)]]
    assert after[cells[("step_time_s", 0)]] == pytest.approx(step - part / 2, rel=REL)
    ratio = after[cells[("time_to_train_s", 0)]] / before[cells[("time_to_train_s", 0)]]
    assert ratio == pytest.approx((step - part / 2) / step, rel=REL)


@pytest.mark.skipif(libreoffice() is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_recomputes_the_same(workbook: Path, engine: Recalculator) -> None:
    cells = _cells(workbook)
    ours, theirs = engine(), recompute_libreoffice(workbook)
    for key in FORMULA_KEYS:
        cell = cells[(key, 0)]
        assert theirs[cell] == pytest.approx(ours[cell], rel=REL), key  # LibreOffice stores 15 significant digits


def test_missing_tokens_leave_run_cells_blank(tmp_path: Path) -> None:
    scenario = tmp_path / "no-tokens.toml"
    scenario.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\nprecision = "bf16"\n')
    out = tmp_path / "no-tokens.xlsx"
    assert run_cli("export", "predict", str(scenario), "--out", str(out)).code == 0
    values, cells = Recalculator(out)(), _cells(out)
    for key in ("time_to_train_s", "gpu_hours", "cost_usd", "energy_kwh", "electricity_cost_usd"):
        assert values[cells[(key, 0)]] == "", key
    assert values[cells[("tokens_per_s", 0)]] > 0
    filled = Recalculator(out)({cells[("tokens_to_train", 0)]: 1e11})
    assert filled[cells[("time_to_train_s", 0)]] == pytest.approx(1e11 / filled[cells[("tokens_per_s", 0)]], rel=REL)


def test_csv_and_json_carry_the_same_columns(tmp_path: Path) -> None:
    as_json = json.loads(_export(tmp_path, "plan.json").read_text())
    row = _csv_row(_export(tmp_path, "plan.csv"))
    assert list(row) == as_json["columns"] == list(as_json["rows"][0])
    assert set(as_json["columns"]) >= {c.key for c in COLUMNS}  # and the rest of the record (test_output_schema)
    for key, value in as_json["rows"][0].items():
        if isinstance(value, float):
            assert float(row[key]) == value, key  # CSV keeps every digit
    d = as_json["rows"][0]
    assert d["cost_usd"] == pytest.approx(d["gpu_hours"] * d["usd_per_gpu_hour"], rel=REL)
    sections = {a["section"] for a in as_json["assumptions"]}
    assert {"accelerator h100-sxm", "system dgx-h100", "efficiency (hopper)"} <= sections


def test_assumptions_list_every_hardware_figure_with_its_source(workbook: Path) -> None:
    ws = openpyxl.load_workbook(workbook)["Assumptions"]
    rows = [r for r in ws.iter_rows(min_row=5, values_only=True) if r[0]]
    names = {(r[0], r[1]) for r in rows}
    for figure in (
        "bf16_tflops",
        "fp8_tflops",
        "hbm_tbps",
        "scaleup_gb_per_s_per_direction",
        "nic_gbit_per_s",
        "power_w",
    ):
        assert ("accelerator h100-sxm", figure) in names, figure
    for figure in ("fabric.oversubscription", "latency.nic_us", "scaleup_in_network_reduction"):
        assert ("system dgx-h100", figure) in names, figure
    assert ("efficiency (hopper)", "gemm_fp8") in names
    assert all(r[4] and len(r[4]) > 3 for r in rows), "every assumption names its source"
    power = next(r for r in rows if r[1] == "power_w")
    assert power[2] == 700 and "H100 SXM" in power[4] and "S1," in power[4]  # public documents, by Sources key


def test_headings_align_with_the_values_under_them(workbook: Path) -> None:
    """Left-aligned over a narrow column's right-aligned numbers, each number sat under the next column's heading:
    Results printed to PDF read 'TP' empty, 'PP 4' and 'VP 32' for TP4 PP32 VP4."""
    book = openpyxl.load_workbook(workbook)
    for sheet, numbers, texts in (
        (
            "Results",
            ["parallelism.tp", "parallelism.pp", "step_time_s"],
            ["model", "precision", "parallelism.recompute"],
        ),
        ("Summary", ["n_gpus", "step_time_s", "cost_usd"], []),
    ):
        ws = book[sheet]
        align = {key.value: head.alignment.horizontal for head, key in zip(ws[4], ws[5], strict=True) if key.value}
        assert [align[k] for k in numbers] == ["right"] * len(numbers), sheet
        assert [align[k] for k in texts] == [None] * len(texts), sheet
    # Yes/No centred with its heading: left-aligned, the Summary read 'MFU (of Fits in its memory', '41.0% Yes'.
    summary = book["Summary"]
    fits = next(head.column for head in summary[5] if head.value == "fits_in_memory")
    assert [summary.cell(row, fits).alignment.horizontal for row in (4, 6)] == ["center", "center"]


def test_flops_and_the_two_mfu_bases_read_as_what_they_are(workbook: Path) -> None:
    """Model FLOPs per token printed 2.918E+11; the MFU columns were all headed 'Model FLOP/s over dense ...', so that
    three MFU headings ran together: each now says its basis (mfu, the JSON contract's, equal to mfu_of_precision:
    ARCHITECTURE.md), the % ones and the x one."""
    ws = openpyxl.load_workbook(workbook)["Results"]
    heads = {key.value: (head.value, key.column) for head, key in zip(ws[4], ws[5], strict=True) if key.value}
    flops = ws.cell(6, heads["model_flops_per_token"][1])
    assert re.fullmatch(r"\d{2,3}\.\d GFLOP", printing.shown(flops.value, flops.number_format)), flops.value
    assert "format's dense peak" in heads["mfu_of_precision"][0] and "BF16" in heads["mfu_bf16"][0]
    assert heads["mfu_bf16"][0] != heads["mfu"][0] and "contract" in heads["mfu"][0]


def test_each_share_is_headed_by_its_parts_own_name(workbook: Path) -> None:
    """The Breakdown's shares were headed by their keys ('Share: pp bubble', 'Share: other ep comm exposed', which
    ran together in print) and named no part the sheet heads its times with ('Pipeline bubble (s)')."""
    ws = openpyxl.load_workbook(workbook)["Breakdown"]
    parts = [str(cell.value).lower() for cell in ws[4] if cell.value and cell.column > 1]
    row = next(r for r in range(6, ws.max_row + 1) if ws.cell(r, 1).value == "Share of the step time")
    shares = [str(cell.value).removeprefix("Share: ") for cell in ws[row] if cell.column > 1 and cell.value]
    assert len(shares) == len(parts) >= 8
    assert [p.startswith(s) for p, s in zip(parts, shares, strict=True)] == [True] * len(parts), shares
    assert "pipeline bubble" in shares and "compute" in shares


def test_every_hardware_figure_has_its_unit(tmp_path: Path) -> None:
    """A system's purchase price, host and network watts, storage bandwidth and the GPUs a job fills of an NVL72
    rack printed bare (usd_per_system 3450000, host_w_per_gpu 466.7), a number a reader cannot sign."""
    out = tmp_path / "two.xlsx"
    result = run_cli("export", "compare", *SCENARIO, "--gpu", "h100-sxm", "--gpu", "gb200", "--out", str(out))
    assert result.code == 0, result.err
    ws = openpyxl.load_workbook(out)["Assumptions"]
    rows = [r for r in ws.iter_rows(min_row=5) if r[0].value and str(r[0].value).startswith(("accelerator", "system"))]
    numbers = [r for r in rows if isinstance(r[2].value, int | float) and not isinstance(r[2].value, bool)]
    assert len(numbers) > 40
    assert not [(r[0].value, r[1].value) for r in numbers if not r[3].value]
    price = next(r for r in rows if r[0].value == "system gb200-nvl72" and r[1].value == "usd_per_system")
    assert price[3].value == "USD per system" and price[2].number_format == "#,##0"


def test_price_without_public_figure_leaves_cost_blank(tmp_path: Path) -> None:
    """An accelerator with no public price: cost cells stay empty until the planner types a price."""
    from perfmodel.outputs.export import ExportRow, export

    p = predict(load_scenario(None, {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8, "tokens": 1e11}))
    price = Price(None, None, None, "no public price")
    run = training_run(1e11, 1e11 / p.tokens_per_s, 8, price, p.hardware.it_power_w_per_gpu, 1.2)
    unpriced = dataclasses.replace(p, price=price, run=run)
    out = tmp_path / "unpriced.xlsx"
    export([ExportRow("unpriced", unpriced)], out, title="unpriced")
    cells = _cells(out)
    engine = Recalculator(out)
    assert engine()[cells[("cost_usd", 0)]] == ""
    assert engine()[cells[("gpu_hours", 0)]] == pytest.approx(p.run.gpu_hours, rel=REL)  # type: ignore[union-attr]
    priced = engine({cells[("usd_per_gpu_hour", 0)]: 3.0})
    assert priced[cells[("cost_usd", 0)]] == pytest.approx(3.0 * p.run.gpu_hours, rel=REL)  # type: ignore[union-attr]


def test_the_summary_of_a_row_without_a_price_reads_no_cost_rather_than_zero(tmp_path: Path) -> None:
    """MI355X has no public price: its Summary row read an empty cost beside "$0" with losses, a link to the empty
    Results cell that the cost with losses is where the row has no value."""
    out = tmp_path / "mi355x.xlsx"
    done = run_cli("export", "predict", "--model", "llama3.1-8b", "--gpu", "mi355x", "--gpus", "64", "--tokens", "2T",
                   "--out", str(out))  # fmt: skip
    assert done.code == 0, done.err
    summary = cells_by_key(out, ("Summary",))
    values = Recalculator(out)()
    shown = {key: values[summary[(key, 0)]] for key in ("usd_per_gpu_hour", "cost_usd", "cost_usd_with_losses")}
    assert shown == {"usd_per_gpu_hour": "no price", "cost_usd": "", "cost_usd_with_losses": ""}


def test_results_with_one_label_are_told_apart_by_what_differs(tmp_path: Path) -> None:
    """sweeps/generations.toml's points on the datasheet and with twice the NIC bandwidth had one label each pair:
    the Summary listed two rows alike. Results such as compare's ratios do not name a row."""
    from perfmodel.outputs.export import ExportRow, export

    p = predict(load_scenario(None, {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8, "tokens": 1e11}))
    rows = [ExportRow("8b", p, {"whatif": whatif, "speedup_vs_first": speedup})
            for whatif, speedup in (("datasheet", 1.0), ("nic_gbps=x2", 1.1))]  # fmt: skip
    out = tmp_path / "alike.xlsx"
    export([*rows, ExportRow("other", p, {"whatif": "datasheet", "speedup_vs_first": 1.2})], out, title="alike")
    summary = openpyxl.load_workbook(out, data_only=True)["Summary"]
    assert [summary.cell(row, 1).value for row in (6, 7, 8)] == ["8b, whatif datasheet", "8b, whatif nic_gbps=x2",
                                                                 "other"]  # fmt: skip
    export(rows, tmp_path / "alike.csv", title="alike")
    assert [r["label"] for r in csv.DictReader((tmp_path / "alike.csv").open())] == [
        "8b, whatif datasheet",
        "8b, whatif nic_gbps=x2",
    ]


# Bad input: one line, exit code 2, nothing written.


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize(
    ("name", "message"),
    [("plan.txt", "unknown format ('.txt')"), ("plan", "unknown format (no suffix)")],
)
def test_unknown_format(tmp_path: Path, name: str, message: str) -> None:
    result = run_cli("export", "predict", "--out", str(tmp_path / name))
    assert result.code == 2 and message in result.err and result.err.count("\n") == 1
    assert _leftovers(tmp_path) == []


def test_unwritable_paths(tmp_path: Path) -> None:
    missing = run_cli("export", "predict", "--out", str(tmp_path / "nowhere" / "plan.xlsx"))
    assert missing.code == 2 and "does not exist" in missing.err
    (tmp_path / "file").write_text("x")
    under_file = run_cli("export", "predict", "--out", str(tmp_path / "file" / "plan.csv"))
    assert under_file.code == 2 and under_file.err.startswith("error: --out")
    (tmp_path / "folder.xlsx").mkdir()
    folder = run_cli("export", "predict", "--out", str(tmp_path / "folder.xlsx"))
    assert folder.code == 2 and "is a folder" in folder.err
    assert _leftovers(tmp_path) == ["file", "folder.xlsx"]


def test_existing_file_needs_force(tmp_path: Path) -> None:
    target = tmp_path / "plan.csv"
    target.write_text("keep me\n")
    refused = run_cli("export", "predict", *SCENARIO, "--out", str(target))
    assert refused.code == 2 and "pass --force" in refused.err
    assert target.read_text() == "keep me\n" and _leftovers(tmp_path) == ["plan.csv"]
    forced = run_cli("export", "predict", *SCENARIO, "--out", str(target), "--force")
    assert forced.code == 0 and target.read_text().startswith("model,accelerator,")
    assert _leftovers(tmp_path) == ["plan.csv"]


def test_failed_export_leaves_nothing(tmp_path: Path) -> None:
    """The model refuses the layout after the target was checked: no file, no temporary file."""
    result = run_cli("export", "predict", *SCENARIO, "--gbs", "12", "--dp", "8", "--out", str(tmp_path / "plan.xlsx"))
    assert result.code == 2 and "--gbs: GBS 12 must be divisible by MBS 1 x DP 8" in result.err
    assert _leftovers(tmp_path) == []


def test_failing_writer_removes_its_temporary_file(tmp_path: Path) -> None:
    from perfmodel.errors import PerfmodelError
    from perfmodel.outputs.atomic import write_atomic

    def broken(handle: Any) -> None:
        handle.write(b"half a file")
        raise PerfmodelError("disk full")

    with pytest.raises(PerfmodelError, match="disk full"):
        write_atomic(tmp_path / "plan.xlsx", broken)
    assert _leftovers(tmp_path) == []


def test_export_compare_and_search(tmp_path: Path) -> None:
    """compare's rows carry its ratios; every row's live formulas recompute to perfmodel's numbers."""
    out = tmp_path / "compare.xlsx"
    args = (
        "--model",
        "llama3.1-8b",
        "--gpu",
        "h100-sxm:fp8",
        "--gpu",
        "b200:fp8",
        "--gpus",
        "64,128",
        "--tokens",
        "1T",
    )
    assert run_cli("export", "compare", *args, "-q", "--out", str(out)).code == 0
    as_json = tmp_path / "compare.json"
    assert run_cli("export", "compare", *args, "-q", "--out", str(as_json)).code == 0
    rows = json.loads(as_json.read_text())["rows"]
    assert len(rows) == 4 and rows[0]["speedup_vs_first"] == 1.0
    values, cells = Recalculator(out)(), _cells(out)
    for index, row in enumerate(rows):
        for key in ("step_time_s", "time_to_train_s", "cost_usd", "energy_kwh"):
            assert values[cells[(key, index)]] == pytest.approx(row[key], rel=REL), (index, key)
    search = tmp_path / "search.csv"
    result = run_cli("export", "search", *SCENARIO, "--top", "3", "-q", "--out", str(search))
    assert result.code == 0, result.err
    with search.open() as handle:
        ranked = list(csv.DictReader(handle))
    assert [r["rank"] for r in ranked] == ["1", "2", "3"]
    # Search ranks by time per token (the global batch varies), so for a fixed token count by time to train.
    assert float(ranked[0]["time_to_train_s"]) <= float(ranked[1]["time_to_train_s"])


def test_export_sweep_keeps_the_points_that_run(tmp_path: Path) -> None:
    sweep = tmp_path / "s.toml"
    sweep.write_text(
        '[sweep]\nmodels = ["llama3.1-8b"]\ngpus = ["h100-sxm", "a100-sxm-80gb"]\nprecisions = ["fp8"]\n'
        'n_gpus = [8]\nwhatifs = [{}, { hbm_tbps = "x2" }]\n[sweep.set]\ntokens = 1e12\n'
    )
    out = tmp_path / "sweep.csv"
    result = run_cli("export", "sweep", str(sweep), "-q", "--out", str(out))
    assert result.code == 0, result.err
    # The A100 has no FP8: its two points cannot run and are counted, not written.
    assert "2 of 4 points could not run" in result.out
    with out.open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["whatif"] for r in rows] == ["datasheet", "hbm_tbps=x2"]
    assert float(rows[1]["step_time_s"]) <= float(rows[0]["step_time_s"])


def test_the_written_line_counts_its_results(tmp_path: Path) -> None:
    """'wrote 1 result to one.csv' where one layout was asked for, 'wrote 2 results' for two (export search)."""
    small = ("--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8")
    one = run_cli("export", "search", *small, "--top", "1", "--out", str(tmp_path / "one.csv"))
    assert one.code == 0 and one.out == f"wrote 1 result to {tmp_path / 'one.csv'}\n", one.err
    two = run_cli("export", "search", *small, "--top", "2", "--out", str(tmp_path / "two.csv"))
    assert two.code == 0 and two.out == f"wrote 2 results to {tmp_path / 'two.csv'}\n", two.err
