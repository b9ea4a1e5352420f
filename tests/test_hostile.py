"""Hostile inputs that are valid but reach outputs: text that looks like a formula or markup stays text.

The bad-input table (test_bad_inputs.py) holds what is refused; these check what is accepted and how it comes out:
CSV cells quoted, XLSX cells typed as strings (the workbook's own formulas still formulas, numbers still numbers),
LaTeX escaped.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from conftest import run_cli

FORMULA_ID = '=HYPERLINK("http://example.invalid","x")'
DDE_NAME = "=cmd|' /C calc'!A0"
LAYOUT = ("--gpus", "8", "--tp", "1", "--pp", "1", "--cp", "1", "--vp", "1", "--mbs", "1", "--gbs", "64",
          "--recompute", "none", "--zero", "1")  # fmt: skip


def _scenario(tmp_path: Path, model_id: str = FORMULA_ID, model_name: str = DDE_NAME) -> str:
    path = tmp_path / "s.toml"
    path.write_text(
        "name = '@SUM(A1:A9)'\ngpu = 'h100-sxm'\n[model]\nbase = 'llama3.1-8b'\n"
        f"id = '{model_id}'\nname = \"{model_name}\"\n"
    )
    return str(path)


def test_xlsx_text_is_never_a_formula_and_the_model_formulas_stay(tmp_path: Path) -> None:
    out = tmp_path / "plan.xlsx"
    result = run_cli("export", "predict", _scenario(tmp_path), *LAYOUT, "--tokens", "1T", "--out", str(out))
    assert result.code == 0, result.err
    book = openpyxl.load_workbook(out)
    formulas = [c for ws in book for row in ws.iter_rows() for c in row if c.data_type == "f"]
    assert formulas, "the workbook's live formulas are gone"
    assert not [c.value for c in formulas if "HYPERLINK" in c.value or "cmd" in c.value]
    cells = [c for ws in book for row in ws.iter_rows() for c in row]
    texts = [c for c in cells if isinstance(c.value, str) and "HYPERLINK" in c.value]
    assert texts and all(c.data_type == "s" for c in texts)
    results = book["Results"]
    assert results["A6"].value.startswith(FORMULA_ID) and results["A6"].data_type == "s"
    numbers = [c.value for c in results[6] if c.data_type == "n" and c.value is not None]
    assert len(numbers) > 10 and all(isinstance(v, int | float) for v in numbers)


def test_csv_exports_quote_formula_like_text(tmp_path: Path) -> None:
    out = tmp_path / "plan.csv"
    result = run_cli("export", "predict", _scenario(tmp_path), *LAYOUT, "--out", str(out))
    assert result.code == 0, result.err
    with out.open() as handle:
        row = next(csv.DictReader(handle))
    assert row["label"].startswith("'" + FORMULA_ID) and row["model"] == "'" + FORMULA_ID
    assert float(row["step_time_s"]) > 0  # numbers are not quoted


def test_predict_and_validate_csv_quote_formula_like_text(tmp_path: Path) -> None:
    predicted = run_cli("predict", _scenario(tmp_path), *LAYOUT, "--format", "csv")
    assert predicted.code == 0, predicted.err
    assert next(csv.DictReader(predicted.out.splitlines()))["model"] == "'" + FORMULA_ID
    runs = tmp_path / "r.csv"
    runs.write_text(
        "id,source,model,gpu,n_gpus,precision,metric,measured,tp,pp,cp,vp,mbs,gbs\n"
        "=1+2,@SUM(A1),llama3.1-8b,h100-sxm,8,bf16,step_time_s,1.2,1,1,1,1,1,64\n"
        "-2+3,+cmd,llama3.1-8b,h100-sxm,8,bf16,step_time_s,1.2,1,1,1,1,1,64\n"
    )
    result = run_cli("validate", "--data", str(runs), "--calibration", "none", "--format", "csv")
    assert result.code == 0, result.err
    rows = list(csv.DictReader(result.out.splitlines()))
    assert [(r["id"], r["source"]) for r in rows] == [("'=1+2", "'@SUM(A1)"), ("'-2+3", "'+cmd")]
    assert float(rows[0]["error_pct"]) != 0  # negative numbers are not text: error_pct stays a number


def test_latex_escapes_user_text(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, "evil", r"x \\input{/etc/passwd} \\write18{rm -rf ~} 100% $a_b$ #1")
    result = run_cli("explain", scenario, *LAYOUT, "--format", "latex", "--no-ops")
    assert result.code == 0, result.err
    first = result.out.splitlines()[0]
    assert first.startswith("% perfmodel explain: x \\textbackslash{}input\\{/etc/passwd\\}")
    assert "\\input{" not in result.out and "\\write18{" not in result.out and "100\\%" in first


def test_a_write_never_replaces_the_calibration_its_scenario_names(tmp_path: Path) -> None:
    """The scenario's calibration is only known once the scenario is read: the write itself checks it."""
    calibration = tmp_path / "c.json"
    calibration.write_text('{"format": "perfmodel-calibration/1", "parameters": {}}')
    before = calibration.read_bytes()
    scenario = tmp_path / "s.toml"
    scenario.write_text(f"gpu = 'h100-sxm'\nmodel = 'llama3.1-8b'\ncalibration = '{calibration}'\n")
    link = tmp_path / "link.json"
    link.symlink_to(calibration)
    for out in (calibration, link):
        result = run_cli("export", "predict", str(scenario), *LAYOUT, "--out", str(out), "--force")
        assert result.code == 2 and f"is {calibration}, an input of this command" in result.err, result.err
    assert calibration.read_bytes() == before and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "link.json", "s.toml"]


def test_sigterm_during_a_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    """SIGTERM (a killed job, a container stop) cleans up as Ctrl-C does: no half-written file, no .tmp file."""
    script = (
        "import os, signal, time\nfrom pathlib import Path\nfrom perfmodel.outputs.atomic import write_atomic\n"
        "def write(handle):\n    handle.write(b'partial')\n    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(20)\n"
        f"write_atomic(Path({str(tmp_path / 'plan.csv')!r}), write)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert list(tmp_path.iterdir()) == []


# ---- the topology cache is an input like any other ---------------------------------------------------------------


def _entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Path, Any]:
    """Hardware, the path of its cache entry in a fresh cache folder (written once), and its true tiers."""
    from perfmodel.inputs.hardware import resolve
    from perfmodel.physics import topology

    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path / "cache"))
    hw = resolve("h100-sxm")
    truth = topology.tiers.__wrapped__(hw)
    (path,) = (tmp_path / "cache").glob("tiers-*.json")
    return hw, path, truth


def _edit(path: Path, change: Any, redigest: bool = False) -> None:
    from perfmodel.inputs.diskcache import digest

    entry = json.loads(path.read_text())
    change(entry["tiers"])
    if redigest:
        entry["digest"] = digest(path.parent, entry["key"], entry["tiers"])
    path.write_text(json.dumps(entry))


@pytest.mark.parametrize(
    ("change", "redigest"),
    [
        (lambda t: t["across_spine"].update(bytes_per_s=5e8), False),  # an edit: the digest no longer matches
        (lambda t: t.update(ranks_per_domain=4, scaleup_by_members=[0, 0, 1, 1, 1]), True),  # not this hardware
        (lambda t: t["across_leaf"].update(latency_s=float("nan")), True),  # non-finite
        (lambda t: t["scaleup_by_members"].clear(), True),  # the crash of issue 11
        (lambda t: t.update(extra=1), True),
    ],
    ids=["edited", "other-hardware", "nan", "empty", "unknown-key"],
)
def test_a_bad_cache_entry_is_ignored_and_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Any, redigest: bool
) -> None:
    from perfmodel.physics import topology

    hw, path, truth = _entry(tmp_path, monkeypatch)
    _edit(path, change, redigest)
    assert topology.tiers.__wrapped__(hw) == truth
    assert topology._read_entry(path, json.loads(path.read_text())["key"], hw) == truth  # rewritten


def test_the_cache_trusts_only_private_regular_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from perfmodel.physics import topology

    hw, path, truth = _entry(tmp_path, monkeypatch)
    key = json.loads(path.read_text())["key"]
    _edit(path, lambda t: t["across_spine"].update(bytes_per_s=5e8), redigest=True)  # a consistent plant
    path.chmod(0o666)
    assert topology._read_entry(path, key, hw) is None  # writable by others: not trusted
    path.unlink()
    os.mkfifo(path)
    assert topology._read_entry(path, key, hw) is None  # never opened (opening a FIFO would block)
    assert topology.tiers.__wrapped__(hw) == truth and path.is_file()
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    path.unlink()
    path.symlink_to(outside)
    assert topology.tiers.__wrapped__(hw) == truth  # a link is not followed, read or written through
    assert outside.read_text() == "precious" and not path.is_symlink()
    assert not list(path.parent.glob("*.tmp"))


def test_outputs_never_hold_a_non_finite_number() -> None:
    """The last line of defence after every input's range check: one line naming the field, not a traceback."""
    from perfmodel.errors import PerfmodelError
    from perfmodel.outputs import report

    for bad in (float("inf"), float("nan")):
        with pytest.raises(PerfmodelError, match=r"result\[0\]\.breakdown\.compute_s is (inf|nan): not written"):
            report.to_csv([{"breakdown": {"compute_s": bad}}])
        with pytest.raises(PerfmodelError, match=r"result\.rows\[1\] is"):
            report.to_json({"rows": [1.0, bad]})


# ---- a hostile environment: full disks, edge hardware, determinism -------------------------------------------


def _file_size_limit(limit_bytes: int) -> Any:
    """A child process whose writes beyond `limit_bytes` fail with EFBIG, as on a full disk (SIGXFSZ ignored)."""
    import resource

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return limit


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_on_stdout_is_one_line() -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "perfmodel", "predict", "--format", "json"],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=60,
        )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == "error: cannot write the output (No space left on device)\n"


@pytest.mark.parametrize("command", [("export", "predict"), ("plot", "breakdown")], ids=["xlsx", "png"])
def test_a_full_disk_during_a_write_is_one_line_and_leaves_nothing(tmp_path: Path, command: tuple[str, str]) -> None:
    out = tmp_path / ("plan.xlsx" if command[0] == "export" else "plan.png")
    args = ["--model", "llama3.1-8b", "--gpu", "h100-sxm", *LAYOUT]
    proc = subprocess.run(
        [sys.executable, "-m", "perfmodel", *command, *args, "--out", str(out)],
        capture_output=True, text=True, timeout=120, preexec_fn=_file_size_limit(4096),
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"error: --out {out}: cannot write (File too large)\n"
    assert list(tmp_path.iterdir()) == []


def test_a_domain_of_one_gpu_is_answered_and_is_slower() -> None:
    """whatif domain_gpus=1 (inside its documented range): no scale-up peers, so every collective crosses NICs."""
    result = run_cli("whatif", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "64", "--gbs", "128", "--tp",
                     "4", "--set", "domain_gpus=1", "--format", "json")  # fmt: skip
    assert result.code == 0, result.err
    baseline, same, *_ = json.loads(result.out)
    assert same["parallelism"]["tp"] == 4 and same["step_time_s"] > 1.2 * baseline["step_time_s"]


def test_a_sweep_point_with_a_domain_of_one_gpu_is_a_row(tmp_path: Path) -> None:
    sweep = tmp_path / "w.toml"
    sweep.write_text(
        "[sweep]\nmodels = ['llama3.1-8b']\ngpus = ['h100-sxm', 'gb200']\nn_gpus = [64]\n"
        "whatifs = [{}, {domain_gpus = 1}]\n[sweep.set]\nparallelism = {gbs = 128}\n"
    )
    result = run_cli("sweep", str(sweep), "--jobs", "1", "--format", "json")
    assert result.code == 0, result.err
    rows = json.loads(result.out)
    assert len(rows) == 4 and all(r["error"] is None and r["step_time_s"] > 0 for r in rows)
    for datasheet, one in (rows[0:2], rows[2:4]):
        assert one["whatif"] == "domain_gpus=1" and one["step_time_s"] >= datasheet["step_time_s"]


def test_xlsx_is_byte_identical_and_honours_source_date_epoch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import zipfile

    def export(name: str) -> bytes:
        out = tmp_path / name
        assert run_cli("export", "predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", *LAYOUT, "--out",
                       str(out)).code == 0  # fmt: skip
        return out.read_bytes()

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    first = export("a.xlsx")
    with zipfile.ZipFile(tmp_path / "a.xlsx") as book:
        assert {info.date_time for info in book.infolist()} == {(2000, 1, 1, 0, 0, 0)}
        assert b'<dcterms:modified xsi:type="dcterms:W3CDTF">2000-01-01T00:00:00Z' in book.read("docProps/core.xml")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    stamped = export("b.xlsx")
    assert stamped == export("c.xlsx") and stamped != first
    with zipfile.ZipFile(tmp_path / "b.xlsx") as book:
        assert b"2023-11-14T22:13:20Z" in book.read("docProps/core.xml")


def test_svg_is_byte_identical(tmp_path: Path) -> None:
    args = ("plot", "breakdown", "--model", "llama3.1-8b", "--gpu", "h100-sxm", *LAYOUT)
    images = []
    for name in ("a.svg", "b.svg"):
        assert run_cli(*args, "--out", str(tmp_path / name)).code == 0
        images.append((tmp_path / name).read_bytes())
    assert images[0] == images[1] and b"<dc:date>" not in images[0]


def test_a_sweep_never_replaces_the_calibration_its_points_use(tmp_path: Path) -> None:
    """The points' calibration is read by the worker processes, not the sweep's own: it is still an input."""
    calibration = tmp_path / "c.json"
    calibration.write_text('{"format": "perfmodel-calibration/1", "parameters": {}}')
    sweep = tmp_path / "w.toml"
    sweep.write_text(f"[sweep]\nn_gpus = [8]\n[sweep.set]\ncalibration = '{calibration}'\n")
    result = run_cli("sweep", str(sweep), "--out", str(tmp_path / "c.json"), "--force")
    assert result.code == 2 and f"is {calibration}, an input of this command" in result.err, result.err
    assert calibration.read_text().startswith('{"format"')


def test_a_long_calibration_path_is_not_free_text(tmp_path: Path) -> None:
    """Names and ids are capped at 200 characters; a file path in a scenario may be as long as paths are."""
    folder = tmp_path / ("d" * 120) / ("e" * 120)
    folder.mkdir(parents=True)
    calibration = folder / "c.json"
    calibration.write_text('{"format": "perfmodel-calibration/1", "parameters": {}}')
    result = run_cli("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", *LAYOUT, "--calibration",
                     str(calibration), "--format", "json")  # fmt: skip
    assert len(str(calibration)) > 200 and result.code == 0, result.err
