"""The public Python API: importable both ways in a fresh interpreter, equal to the CLI's JSON for the same flags,
one exception type carrying the CLI's message, flat records for pandas, and the README's example as written."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from fleet_files import NEOCLOUD

import perfmodel
from perfmodel.outputs.report import to_json

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = (
    "predict", "search", "compare", "plan", "plan_fleet", "validate", "calibrate", "load_scenario", "Scenario",
    "Prediction", "SearchReport", "Comparison", "PlanReport", "ValidationReport", "PerfmodelError", "InfeasibleLayout",
)  # fmt: skip


def _fresh(code: str) -> str:
    """Run `code` in a new interpreter (no module of this test process leaks into it) and return its stdout."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _same_as_cli(api_result: object, *cli_args: str) -> None:
    """The API's object, as the CLI would print it, equals what the CLI prints for the same question (but for the
    seconds a search or plan took)."""
    result = run_cli(*cli_args, "--format", "json")
    assert result.code == 0, result.err
    ours, theirs = json.loads(to_json(api_result)), json.loads(result.out)
    if isinstance(ours, dict):
        ours.pop("elapsed_s", None), theirs.pop("elapsed_s", None)
    assert ours == theirs


@pytest.mark.parametrize("style", ["attribute", "from-import"])
def test_public_names_import_in_a_fresh_interpreter(style: str) -> None:
    names = ", ".join(PUBLIC)
    load = (
        f"import perfmodel; objects = [getattr(perfmodel, n) for n in {PUBLIC!r}]"
        if style == "attribute"
        else f"from perfmodel import {names}; objects = [{names}]"
    )
    out = _fresh(f"{load}\nimport inspect\nprint([inspect.isfunction(o) or inspect.isclass(o) for o in objects])")
    assert out.strip() == str([True] * len(PUBLIC))


def test_import_stays_lazy() -> None:
    """`import perfmodel` loads none of the heavy dependencies: the CLI's start-up does not pay for the API."""
    out = _fresh("import sys, perfmodel; print(sorted({'pydantic', 'numpy', 'sympy', 'click'} & set(sys.modules)))")
    assert out.strip() == "[]"


def test_dir_lists_each_public_name_once() -> None:
    """A notebook's tab completion: a lazy name, once loaded, is listed once, not twice."""
    _ = perfmodel.predict
    names = dir(perfmodel)
    assert len(names) == len(set(names)) and set(perfmodel.__all__) <= set(names)


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'predcit'"):
        _ = perfmodel.predcit  # type: ignore[attr-defined]


def test_predict_keywords_equal_the_cli_flags() -> None:
    p = perfmodel.predict(model="llama3.1-405b", gpu="gb300", n_gpus=512, precision="nvfp4", tokens=15.6e12)
    assert isinstance(p, perfmodel.Prediction)
    _same_as_cli(
        p.to_dict(),
        "predict", "--model", "llama3.1-405b", "--gpu", "gb300", "--gpus", "512", "--precision", "nvfp4",
        "--tokens", "15.6T",
    )  # fmt: skip


def test_predict_takes_a_file_or_a_scenario_object_with_overrides() -> None:
    path = ROOT / "scenarios" / "mlperf-405b-h100-512.toml"
    scenario = perfmodel.load_scenario(path)
    assert isinstance(scenario, perfmodel.Scenario)
    from_file = perfmodel.predict(str(path), gpu="gb200")
    from_object = perfmodel.predict(scenario, gpu="gb200")
    assert from_file.to_dict() == from_object.to_dict()
    _same_as_cli(from_object.to_dict(), "predict", str(path), "--gpu", "gb200")
    assert perfmodel.predict(scenario).to_dict() == perfmodel.predict(path).to_dict()


def test_search_compare_and_validate_equal_the_cli() -> None:
    report = perfmodel.search(model="llama3.1-70b", gpu="h100-sxm", n_gpus=[64, 128], precision="fp8", gbs=256, top=3)
    _same_as_cli(
        report.to_dict(),
        "search", "--model", "llama3.1-70b", "--gpu", "h100-sxm", "--gpus", "64,128", "--precision", "fp8",
        "--gbs", "256", "--top", "3",
    )  # fmt: skip

    comparison = perfmodel.compare(
        model="llama3.1-70b", gpu=["h100-sxm:fp8", "b200:fp8"], n_gpus=[64, 128], gbs=256, tokens=1e12
    )
    assert len(comparison.predictions) == 4
    _same_as_cli(
        comparison.rows,
        "compare", "--model", "llama3.1-70b", "--gpu", "h100-sxm:fp8", "--gpu", "b200:fp8", "--gpus", "64,128",
        "--gbs", "256", "--tokens", "1T",
    )  # fmt: skip

    validation = perfmodel.validate(only="Training v5.0")
    assert isinstance(validation, perfmodel.ValidationReport) and validation.rows
    _same_as_cli(validation.to_dict(), "validate", "--only", "Training v5.0")


def test_calibrate_writes_what_the_cli_writes_and_predict_uses_it(tmp_path: Path) -> None:
    """A notebook fits on its own runs without a shell: the same file as `perfmodel calibrate`, used by name."""
    runs = Path(__file__).parent / "user_runs.csv"  # five rows: a user calibration fits one parameter per five
    fitted = perfmodel.calibrate(runs, out=tmp_path / "api.json", cv=False)
    assert run_cli("calibrate", "--data", str(runs), "--out", str(tmp_path / "cli.json"), "--no-cv").code == 0
    api, cli = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("api", "cli"))
    assert api["scoped"] == cli["scoped"] and api["user"]["rows"] == ["u1", "u2", "u3", "u4", "u5"]
    assert fitted.provenance["user"] == api["user"]
    flags = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8, "precision": "fp8", "gbs": 64, "seq_len": 8192}
    ours = perfmodel.predict(**flags, calibration=str(tmp_path / "api.json"))
    assert ours.step_time_s != perfmodel.predict(**flags).step_time_s
    with pytest.raises(perfmodel.PerfmodelError, match=r"out='.*api.json': file exists; pass force=True"):
        perfmodel.calibrate(runs, out=tmp_path / "api.json")


def test_plan_equals_the_cli() -> None:
    report = perfmodel.plan(
        model="llama3.1-70b", gpu=["h100-sxm:fp8", "b200:fp8"], tokens=1e12, deadline_s=30 * 86400, max_gpus=512
    )
    _same_as_cli(
        report.to_dict(),
        "plan", "--model", "llama3.1-70b", "--gpu", "h100-sxm:fp8", "--gpu", "b200:fp8", "--tokens", "1T",
        "--deadline", "30d", "--max-gpus", "512",
    )  # fmt: skip
    assert len(report.to_records()) == 2 and all("candidate" in r for r in report.to_records())


def test_records_are_flat_and_make_a_dataframe() -> None:
    pandas = pytest.importorskip("pandas")
    comparison = perfmodel.compare(model="llama3.1-8b", gpu=["h100-sxm", "b200"], n_gpus=8, gbs=64, tokens=1e12)
    records = comparison.to_records()
    assert all(not isinstance(v, dict | list) for r in records for v in r.values())
    frame = pandas.DataFrame(records)
    assert list(frame["accelerator"]) == ["h100-sxm", "b200"]
    assert frame.loc[1, "speedup_vs_first"] == pytest.approx(comparison.rows[1]["speedup_vs_first"])
    assert "breakdown.compute_s" in frame.columns and "parallelism.tp" in frame.columns
    one = comparison.predictions[0].to_record()
    assert {key: records[0][key] for key in one} == one  # the comparison's row adds ratios to the prediction's
    search = perfmodel.search(model="llama3.1-8b", gpu="h100-sxm", n_gpus=8, gbs=64, top=2)
    assert len(pandas.DataFrame(search.to_records())) == 2
    assert len(pandas.DataFrame(perfmodel.validate(only="Training v5.0").to_records())) > 0


def test_errors_carry_the_cli_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('model = "llama3.1-8b"\nn_gpus = 0\n')
    cli = run_cli("predict", str(bad))
    with pytest.raises(perfmodel.PerfmodelError) as caught:
        perfmodel.predict(bad)
    assert cli.code == 2 and cli.err == f"error: {caught.value}\n"
    assert f"{bad}: field 'n_gpus'" in str(caught.value)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: perfmodel.predict(n_gpus=0), r"^n_gpus=0: "),
        (lambda: perfmodel.predict(model="llama3.1-450b"), r"^model='llama3.1-450b': unknown model"),
        (lambda: perfmodel.predict(gpus=8), r"^unknown keyword 'gpus' \(did you mean 'n_gpus'\?\); valid: model, gpu"),
        (lambda: perfmodel.predict(precison="fp8"), r"^unknown keyword 'precison' \(did you mean 'precision'\?\)"),
        (lambda: perfmodel.plan(deadline_days=30), r"^unknown keyword 'deadline_days'; valid: model, gpu"),
        (lambda: perfmodel.predict(tp=True), r"^tp=True: "),
        (lambda: perfmodel.search(n_gpus=[8, 0]), r"^n_gpus=\[8, 0\]: 0 must be between 1 and 1,000,000 GPUs"),
        (lambda: perfmodel.search(n_gpus="8"), r"^n_gpus='8': allowed a whole number of GPUs"),
        (lambda: perfmodel.search(top=0), r"^top=0: allowed a whole number from 1 up to 10,000"),
        (lambda: perfmodel.search(objective="speed"), r"^objective='speed': allowed time, cost"),
        # compare names its targets and their fixes as keywords (request.API), not as the CLI's --gpu flags
        (lambda: perfmodel.compare(gpu=["h100-sxm:fp5"]), r"^gpu='h100-sxm:fp5': unknown precision 'fp5'"),
        (  # a quote's form without the CLI's shell-quoting hint (request.QUOTE_SYNTAX): no shell reads a keyword
            lambda: perfmodel.compare(gpu=["gb300:$0"]),
            r"^gpu='gb300:\$0': .* at most 10,000 USD: gpu='ID:\$PRICE' \(e.g. 'gb300:nvfp4:\$9.50'\)$",
        ),
        (
            lambda: perfmodel.compare(gpu=["a100-sxm-80gb"]),
            r"^gpu='a100-sxm-80gb': a100-sxm-80gb has no tensor-core support for fp8 \(the default precision\); "
            r"supported: bf16; pass gpu='a100-sxm-80gb:bf16'$",
        ),
        (lambda: perfmodel.compare(gpu=["h100-sxm@1020"]), r"^gpu='h100-sxm@1020': 1,020 GPUs is 127.5 dgx-h100 nodes"),
        (lambda: perfmodel.compare(gpu=["h100-sxm"] * 17), r"^gpu given 17 times; at most 16 systems"),
        (
            lambda: perfmodel.predict(gpu="a100-sxm-80gb"),
            r"^a100-sxm-80gb has no tensor-core support for fp8 \(the default precision\); supported: bf16; pass "
            r"precision='bf16'$",
        ),
        (lambda: perfmodel.predict(precision="mxfp8"), r"^precision='mxfp8': h100-sxm has no tensor-core support"),
        (  # a layout keyword the rest of the layout is searched around, named as `--tp 3` is (the search said neither)
            lambda: perfmodel.predict(model="llama3.1-8b", gpu="h100-sxm", n_gpus=8, tp=3),
            r"^tp=3: TP 3 must divide the 32 attention heads",
        ),
        (lambda: perfmodel.search(model="llama3.1-8b", gpu="h100-sxm", n_gpus=[8, 16], tp=3), r"^tp=3: TP 3 must"),
        (lambda: perfmodel.validate("/nonexistent/runs.csv"), r"/nonexistent/runs.csv"),
    ],
)
def test_bad_keywords_raise_one_exception_type(call: object, message: str) -> None:
    with pytest.raises(perfmodel.PerfmodelError, match=message):
        call()  # type: ignore[operator]


def test_a_system_given_as_the_gpu_is_that_system_in_every_function() -> None:
    """Every question reads `gpu="gb200-nvl72"` as that system (inputs/scenario.py _system_as_gpu), not predict()
    alone: search(), launch() and load_scenario() refused it ("'gb200-nvl72' is a system, not a GPU")."""
    ask = {"model": "llama3.1-8b", "tokens": 1e12}
    as_gpu, as_system = {"gpu": "gb200-nvl72"}, {"system": "gb200-nvl72"}
    found = perfmodel.search(**ask, **as_gpu, n_gpus=[72], top=2).to_dict() | {"elapsed_s": 0}
    assert found == perfmodel.search(**ask, **as_system, n_gpus=[72], top=2).to_dict() | {"elapsed_s": 0}
    assert perfmodel.load_scenario(**ask, **as_gpu) == perfmodel.load_scenario(**ask, **as_system)
    launched = perfmodel.launch("torchtitan", **ask, **as_gpu, n_gpus=72)
    assert launched.text == perfmodel.launch("torchtitan", **ask, **as_system, n_gpus=72).text
    assert perfmodel.predict(perfmodel.Scenario(**ask, **as_gpu, n_gpus=72)).to_dict()["system"] == "gb200-nvl72"


def test_plan_refuses_more_candidates_than_max_candidates() -> None:
    """Counted as the targets are read (one per precision), before any is loaded: the HTTP server's bound."""
    from perfmodel.planning.plan import TooManyCandidates

    goal = {"tokens": 1e12, "deadline_s": 30 * 86400}
    with pytest.raises(TooManyCandidates) as caught:
        perfmodel.plan(gpu=["h100-sxm:bf16,fp8", "b200"], max_candidates=2, **goal)
    assert (str(caught.value), caught.value.count) == ("gpu: 3 candidates; at most 2 (systems x precisions)", 3)
    with pytest.raises(perfmodel.PerfmodelError, match=r"^max_candidates=0: allowed a whole number from 1 up to "):
        perfmodel.plan(gpu=["h100-sxm"], max_candidates=0, **goal)


def test_plan_and_fleet_errors_spell_the_keywords(tmp_path: Path) -> None:
    """plan() and plan_fleet() name a target and its fix as keywords (request.API), as compare() does, not as the
    CLI's flags: `--gpu h100-sxm@64`, `give --max-gpus` and `pass --gpu ...` named flags a Python caller has none of."""
    goal = {"tokens": 1e12, "deadline_s": 30 * 86400}
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(NEOCLOUD)
    for ask in (perfmodel.plan, lambda **kw: perfmodel.plan_fleet(fleet, **kw)):
        with pytest.raises(perfmodel.PerfmodelError, match=r"^gpu='h100-sxm@64': plan finds the GPU count .* '@N'$"):
            ask(gpu=["h100-sxm@64"], **goal)
        with pytest.raises(perfmodel.PerfmodelError, match=r"^n_gpus=64: plan finds .*; to cap it, give max_gpus$"):
            ask(gpu=["h100-sxm"], n_gpus=64, **goal)
        with pytest.raises(perfmodel.PerfmodelError) as caught:
            ask(gpu=["a100-sxm-80gb"], **goal)
        assert str(caught.value).startswith("gpu='a100-sxm-80gb': ")
        assert str(caught.value).endswith("pass gpu='a100-sxm-80gb:bf16'")
        with pytest.raises(perfmodel.PerfmodelError, match=r"^gpu='h100-sxm:fp5': unknown precision 'fp5'"):
            ask(gpu=["h100-sxm:fp5"], **goal)


def test_a_scenario_without_hardware_is_refused_naming_its_file(tmp_path: Path) -> None:
    """As `perfmodel predict FILE` refuses it (test_bad_inputs.py, case no-hardware), with the keywords' fix: the
    API's refusal was the hardware lookup's own, naming neither the file nor a keyword."""
    path = tmp_path / "s.toml"
    path.write_text('model = "llama3.1-8b"\nn_gpus = 8\n')
    refused = "no hardware given: set gpu or system in the {}, or pass gpu='ID' or system='ID'"
    for call in (perfmodel.predict, perfmodel.load_scenario, perfmodel.search, perfmodel.compare):
        with pytest.raises(perfmodel.PerfmodelError) as caught:
            call(path)
        assert str(caught.value) == f"{path}: {refused.format('file')}"
    with pytest.raises(perfmodel.PerfmodelError) as caught:
        perfmodel.predict(perfmodel.Scenario(model="llama3.1-8b", n_gpus=8))
    assert str(caught.value) == f"scenario: {refused.format('scenario')}"


def test_a_scenario_built_in_python_is_checked_like_a_file(tmp_path: Path) -> None:
    """Scenario records are plain dataclasses: one built in Python is checked when a question is asked about it."""
    built = perfmodel.Scenario(model="llama3.1-8b", gpu="h100-sxm", n_gpus=8, tokens=1e12)
    (tmp_path / "s.toml").write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\ntokens = 1e12\n')
    assert perfmodel.predict(built).to_dict() == perfmodel.predict(tmp_path / "s.toml").to_dict()
    with pytest.raises(perfmodel.PerfmodelError, match=r"^scenario: field 'n_gpus': Input should be greater than"):
        perfmodel.predict(perfmodel.Scenario(model="llama3.1-8b", gpu="h100-sxm", n_gpus=0))


def test_a_scenario_copied_with_dataclasses_replace_is_checked_again(tmp_path: Path) -> None:
    """dataclasses.replace cannot carry a checked scenario's record of given fields over (record.given_field): its
    copy counts as built in Python, so a bad value is refused and a changed field survives the check, not dropped."""
    from perfmodel.inputs.scenario import load_scenario

    path = tmp_path / "s.toml"
    path.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\ntokens = 1e12\n')
    checked = load_scenario(path)
    with pytest.raises(perfmodel.PerfmodelError, match=r"^scenario: field 'n_gpus': Input should be greater than"):
        perfmodel.predict(dataclasses.replace(checked, n_gpus=0))
    copied = perfmodel.predict(dataclasses.replace(checked, stack="composer"), n_gpus=16).to_dict()
    assert copied == perfmodel.predict(path, stack="composer", n_gpus=16).to_dict()


def test_an_infeasible_layout_is_its_subclass() -> None:
    with pytest.raises(perfmodel.InfeasibleLayout, match="divide"):
        perfmodel.predict(
            model="llama3.1-8b", gpu="h100-sxm", n_gpus=8, tp=3, pp=1, cp=1, vp=1, mbs=1, recompute="none", zero=1
        )


def test_the_readme_example_runs_as_written(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python API", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None, "the README's Python API section has no python example"
    env = os.environ | {"MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code.group(1)], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "time_to_train.png").stat().st_size > 10_000
    assert "error: model='llama3.1-450b': unknown model" in done.stdout
    assert "gb300" in done.stdout and "speedup_vs_first" in done.stdout


def test_frame_gives_every_column_its_dtype() -> None:
    """`perfmodel.frame` types a column every row leaves empty by its unit (pandas alone makes it `object`), and the
    others by their values; a non-result is refused with one line."""
    pandas = pytest.importorskip("pandas")
    comparison = perfmodel.compare(model="llama3.1-8b", gpu=["h100-sxm", "b200"], n_gpus=8, gbs=64, tokens=1e12)
    assert pandas.DataFrame(comparison.to_records())["lora_modules"].dtype == object  # what frame() fixes
    frame = perfmodel.frame(comparison)
    assert list(frame.columns) == list(pandas.DataFrame(comparison.to_records()).columns)
    expected = {
        "lora_modules": "string", "stack_knobs.async_tp": "boolean", "scaling_efficiency": "Float64",
        "n_gpus": "Int64", "step_time_s": "Float64", "fits_in_memory": "boolean", "accelerator": "string",
    }  # fmt: skip
    assert {column: str(frame[column].dtype) for column in expected} == expected
    assert frame.loc[1, "speedup_vs_first"] == pytest.approx(comparison.rows[1]["speedup_vs_first"])
    one = perfmodel.frame(comparison.predictions[0])
    assert len(one) == 1 and "object" not in {str(dtype) for dtype in one.dtypes}
    with pytest.raises(perfmodel.PerfmodelError, match=r"^frame\(\) takes a perfmodel result"):
        perfmodel.frame({"step_time_s": 1.0})


def test_views_mark_the_default_scenarios_tokens() -> None:
    """The default scenario's 15T tokens answer any question that gives none; a comparison's repr says so, as the
    CLI's tables do, and not for tokens the question gave."""
    assert "tokens 15.0T (default)," in repr(perfmodel.compare(model="llama3.1-8b", gpu=["h100-sxm"], n_gpus=8, gbs=64))
    given = perfmodel.compare(model="llama3.1-8b", gpu=["h100-sxm"], n_gpus=8, gbs=64, tokens="1T")
    assert "tokens 1.00T," in repr(given) and "(default)" not in repr(given)
