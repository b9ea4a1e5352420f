"""A user's calibration cannot silently hurt (issue 29): it fits only what its rows identify, for their families only,
with an interval around its own point, and shows each row before and after."""

import json
import re
from pathlib import Path

import pytest
from conftest import inputs_of, run_cli

from perfmodel.physics.calibration import Calibration

# Five H100 rows of perfmodel/data/measured_runs.csv at their published layouts, each time x1.15 (throughput / 1.15):
# a cluster on which the bundled model is optimistic. Rows (line numbers of measured_runs.csv): 241 Llama3-70B 64 GPUs
# 1,602 tokens/s/GPU, 242 Llama3.1-405B 1,024 GPUs 292, 240 Llama3-8B 8 GPUs 14,451 (Megatron-Bridge
# performance-summary-archive.md, NeMo 25.11), 278 Llama2-7B 8 GPUs 16,934, 280 Llama2-70B 64 GPUs 1,728 (NeMo
# performance_summary.md, 24.07). Columns: README, 'Measured runs CSV'.
ROWS = (Path(__file__).parent / "user_runs.csv").read_text()
STEP = re.compile(r"Step time\s+([\d.]+) s \(80% interval P10 ([\d.]+) s to P90 ([\d.]+) s")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("user") / "runs.csv"
    path.write_text(ROWS)
    return path


@pytest.fixture(scope="module")
def fitted(runs: Path) -> tuple[Path, str]:
    out = runs.parent / "cal.json"
    result = run_cli("calibrate", "--data", str(runs), "--out", str(out))
    assert result.code == 0, result.err
    return out, result.out


def _step(*args: str) -> tuple[float, float, float]:
    found = STEP.search(run_cli("predict", *args).out)
    assert found, "no step time with an interval"
    point, low, high = (float(v) for v in found.groups())
    return point, low, high


def test_fits_only_what_the_rows_identify_and_says_why_the_rest_stay(fitted: tuple[Path, str]) -> None:
    path, out = fitted
    user = json.loads(path.read_text())["user"]
    assert list(user["fitted"]) == ["gemm_sustained"]  # 5 rows: one parameter at most (ROWS_PER_PARAMETER)
    assert {"scaleout", "memory", "gemm_format_fp8@nvidia"} <= set(user["kept"])
    assert "Kept at the bundled calibration's values" in out and "not seen by your rows" in out
    assert "confounded with gemm_sustained" in out and "beyond what 5 rows can fit" in out
    assert user["mape_after_pct"] < user["mape_before_pct"] / 3  # the rows say the model is ~20% optimistic here


def test_the_interval_holds_the_point(fitted: tuple[Path, str]) -> None:
    point, low, high = _step("--gpu", "h100-sxm", "--calibration", str(fitted[0]))
    assert low <= point <= high


def test_predict_names_the_calibration_file(fitted: tuple[Path, str]) -> None:
    """The fitted file priced the run (its step time is not the bundled one's): the Inputs say so, as given."""
    out = run_cli("predict", "--gpu", "h100-sxm", "--calibration", str(fitted[0])).out
    assert inputs_of(out)["fitted"] == f"calibration {fitted[0]}"


def test_an_interval_from_one_sided_residuals_still_holds_the_point() -> None:
    band = {"time_factor_low": 1.36, "time_factor_high": 1.55}
    calibration = Calibration({}, {"interval": band})
    found = calibration.interval_for("hopper", "fp8", 64)
    assert found is not None and found.low == 1.0 and found.high == 1.55


def test_hardware_without_rows_is_not_moved_unless_asked(runs: Path, fitted: tuple[Path, str]) -> None:
    assert _step("--gpu", "gb300", "--calibration", str(fitted[0])) == _step("--gpu", "gb300")
    everywhere = runs.parent / "everywhere.json"
    assert run_cli("calibrate", "--data", str(runs), "--out", str(everywhere), "--everywhere").code == 0
    assert _step("--gpu", "gb300", "--calibration", str(everywhere))[0] > _step("--gpu", "gb300")[0] * 1.1


def test_too_few_rows_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "three.csv"
    path.write_text("".join(ROWS.splitlines(keepends=True)[:4]))
    result = run_cli("calibrate", "--data", str(path), "--out", str(tmp_path / "c.json"))
    assert result.code == 2 and "a calibration needs 5 rows per parameter" in result.err
    assert not (tmp_path / "c.json").exists()


def test_with_bundled_the_users_rows_decide_their_cluster(runs: Path) -> None:
    out = runs.parent / "with.json"
    result = run_cli("calibrate", "--data", str(runs), "--with-bundled", "--out", str(out), "--format", "json")
    user = json.loads(result.out)
    assert user["bundled_rows"] > 100 and user["weights"]["hopper"] == user["bundled_rows"]
    assert user["mape_after_pct"] < user["mape_before_pct"] / 3
    assert _step("--gpu", "gb300", "--calibration", str(out)) == _step("--gpu", "gb300")


def test_validate_shows_each_row_before_and_after(runs: Path, fitted: tuple[Path, str]) -> None:
    table = run_cli("validate", "--data", str(runs), "--calibration", str(fitted[0])).out
    assert "error before" in table and re.search(r"Before it \(calibration: .*calibration.json\): MAPE", table)
    assert "; held out (each of your rows left out of its fit) " in table
    records = json.loads(run_cli("validate", "--data", str(runs), "--calibration", str(fitted[0]), "--format",
                                 "json").out)  # fmt: skip
    assert records["mape_before_pct"] > 3 * records["mape_pct"]
    assert all(abs(r["error_pct"]) < abs(r["error_before_pct"]) for r in records["rows"])


def test_validate_right_aligns_its_numbers(runs: Path, fitted: tuple[Path, str]) -> None:
    """The figures a reader compares down a column (GPUs, measured, predicted, errors) end where their heading ends,
    with thousands separators, as every other table's numbers; the text columns start under theirs."""
    lines = run_cli("validate", "--data", str(runs), "--calibration", str(fitted[0])).out.splitlines()
    head, rows = lines[0], lines[2:7]
    for title in ("n", "measured", "predicted", "error", "held out", "error before"):
        end = re.search(rf"(?<!\S){title}(?!\S)", head).end()  # type: ignore[union-attr]
        assert all(row[end - 1] != " " and not row[end : end + 2].strip() for row in rows), (title, rows)
    assert " 1,024 " in rows[1]  # the 405B row's GPUs
    model = head.index("model")
    assert all(row[model] != " " for row in rows)
    detail = head.index("detail")  # each row by the id the user gave it: the five rows read alike without it
    assert [row[detail:model].split()[0] for row in rows] == ["u1", "u2", "u3", "u4", "u5"], rows


def test_calibrate_names_the_metric_its_mape_is_of(runs: Path, fitted: tuple[Path, str]) -> None:
    """calibrate printed 'MAPE 20.5% with the bundled calibration' where validate on the same five rows printed
    26.2%, neither saying that the first is of the predicted time and the second of tokens/s."""
    path, out = fitted
    before = json.loads(path.read_text())["user"]["mape_before_pct"]
    assert f"MAPE of the predicted time {before:.1f}% with the bundled calibration" in out
    validated = json.loads(run_cli("validate", "--data", str(runs), "--format", "json").out)["mape_pct"]
    assert validated > before + 3  # tokens/s: 1/(1+e)-1 of the time error e, larger for an optimistic model
    assert "shows each row before and after in its own metric" in out


def test_the_workbook_names_what_the_users_rows_refitted(fitted: tuple[Path, str]) -> None:
    """The Assumptions sheet cited the bundled fit alone for a family the user's rows refitted."""
    openpyxl = pytest.importorskip("openpyxl")
    book = fitted[0].parent / "book.xlsx"
    args = ("--calibration", str(fitted[0]), "--out", str(book), "--force")
    assert run_cli("export", "predict", "--gpu", "h100-sxm", *args).code == 0
    texts = [str(c.value) for row in openpyxl.load_workbook(book)["Assumptions"].iter_rows() for c in row if c.value]
    assert any("your 5 measured rows refitted gemm_sustained" in t for t in texts)
    assert run_cli("export", "predict", "--gpu", "gb300", *args).code == 0
    texts = [str(c.value) for row in openpyxl.load_workbook(book)["Assumptions"].iter_rows() for c in row if c.value]
    assert not any("your 5 measured rows" in t for t in texts)  # Blackwell Ultra: none of the rows' families


def test_one_row_is_counted_as_one_run(tmp_path: Path) -> None:
    """validate of one row (a single training log, a one-line CSV) closed with 'MAPE 83.7% over 1 runs'."""
    one = tmp_path / "one.csv"
    one.write_text("\n".join(ROWS.splitlines()[:2]) + "\n")
    out = run_cli("validate", "--data", str(one)).out
    assert re.search(r"MAPE [\d.]+% over 1 run \(calibration", out), out
