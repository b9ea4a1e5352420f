"""Out-of-sample protocols: each fold's fit never sees its test rows, and the JSON contract of validate --protocol."""

import json
from pathlib import Path

import pytest
from conftest import run_cli

from perfmodel.fitting import protocols
from perfmodel.fitting.runs import ROUND_PUBLISHED, bundled_runs
from perfmodel.fitting.validation import PreparedRun


@pytest.fixture(scope="module")
def items() -> list[PreparedRun]:
    runs, _ = bundled_runs()
    return protocols.fitted_items(runs[::3])  # every third bundled row: all sources, families, formats, scales


@pytest.mark.parametrize("protocol", protocols.PROTOCOLS)
def test_no_fold_trains_on_its_test_rows(items: list[PreparedRun], protocol: str) -> None:
    runs, _ = bundled_runs()
    folds = protocols.folds(protocol, protocols.with_tested(protocol, items, runs[::3], []))
    assert folds

    def row(item: PreparedRun) -> tuple[str, str]:  # an MLPerf submission's id names each of its benchmarks' rows
        return item.run.id, str(item.run.scenario.get("benchmark", ""))

    for fold in folds:
        train, test = {row(i) for i in fold.train}, {row(i) for i in fold.test}
        assert test and not train & test, fold.name


def test_what_each_protocol_holds_out(items: list[PreparedRun]) -> None:
    for fold in protocols.folds("forward", items):
        published = ROUND_PUBLISHED[fold.name]
        assert fold.name != "v4.0" and all(i.run.source == f"MLPerf Training {fold.name}" for i in fold.test)
        assert all(i.run.released is not None and i.run.released < published for i in fold.train)
        # an MLPerf row is known from its round's publication, not from its (older) container's release
        earlier = {r for r, month in ROUND_PUBLISHED.items() if month < published}
        assert all(
            i.run.source.removeprefix("MLPerf Training ") in earlier for i in fold.train if "MLPerf" in i.run.source
        )
    generation = protocols.folds("generation", items)
    assert {f.name for f in generation} == {i.family for i in items}
    for fold in generation:
        assert {i.family for i in fold.test} == {fold.name} and fold.name not in {i.family for i in fold.train}
    for fold in protocols.folds("precision", items):
        assert {i.run.format for i in fold.test} == {fold.name} and fold.name not in {i.run.format for i in fold.train}
    scale = protocols.folds("scale", items)
    assert all(i.run.n_gpus <= 256 for f in scale for i in f.train)
    assert all(i.run.n_gpus > 256 and protocols.scale_bucket(i.run.n_gpus) == f.name for f in scale for i in f.test)
    assert protocols.scale_bucket(512) != protocols.scale_bucket(1024) != protocols.scale_bucket(4096)


def test_validate_protocol_json_on_a_subset() -> None:
    # MLPerf v4.0 and v4.1 only: the v4.1 fold fits on the 26 v4.0 rows and predicts the 33 v4.1 ones.
    result = run_cli("validate", "--protocol", "forward", "--only", "mlperf:v4", "--format", "json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert {"protocol", "folds", "rows", "mape_pct"} <= set(report) and report["protocol"] == "forward"
    (fold,) = report["folds"]
    assert fold["name"] == "v4.1" and fold["test_rows"] == len(report["rows"]) > 0
    assert all(r["fold"] == "v4.1" and r["id"].startswith("mlperf:v4.1/") for r in report["rows"])
    assert report["mape_pct"] == pytest.approx(sum(abs(r["error_pct"]) for r in report["rows"]) / len(report["rows"]))
    assert fold["mape_pct"] == pytest.approx(report["mape_pct"])


def test_protocol_refuses_other_data(tmp_path: Path) -> None:
    result = run_cli("validate", "--protocol", "scale", "--data", str(tmp_path / "x.csv"))
    assert result.code == 2 and "--protocol refits on the bundled rows" in result.err and result.out == ""


def test_folds_on_rows_fitted_already_take_that_fit(items: list[PreparedRun], monkeypatch: pytest.MonkeyPatch) -> None:
    """The length protocol's folds train on every fitted row, in order: calibration's own fit, handed over by their
    ids (`fits`), is used as it is, not made again, and kept for the next protocol under the same key."""
    from perfmodel.fitting import calibrate as cal

    runs, _ = bundled_runs()
    tested = protocols.with_tested("length", items, runs[::3], [])
    made = {"memory": 0.7}
    fits = {cal.run_ids(items): made}
    monkeypatch.setattr(cal, "fit", lambda *a, **k: pytest.fail("refitted the rows fitted already"))
    result = protocols.evaluate("length", tested, fits=fits)
    assert result.folds and all(fold.parameters is made for fold in result.folds)
    assert list(fits) == [cal.run_ids(items)]
