"""perfmodel serve's JSON API: every endpoint answers what the CLI prints for the same question, every refusal is a
4xx `{error, field}` with the CLI's one line, the bounds hold, and 20 requests at once are all answered."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import RAMP_CAMPAIGN, run_cli, run_json
from fastapi.testclient import TestClient

import perfmodel
from perfmodel.inputs import arguments
from perfmodel.planning.compare import MAX_ROWS as MAX_COMPARED_ROWS
from perfmodel.serve import work, workers
from perfmodel.serve.app import app

PREDICT = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 64, "tokens": "1T"}
PREDICT_FLAGS = ["--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "64", "--tokens", "1T"]
COMPARE = {"model": "llama3.1-8b", "gpu": ["h100-sxm", "b200:fp8"], "n_gpus": [64, 128], "tokens": "1T"}
COMPARE_FLAGS = [
    "--model",
    "llama3.1-8b",
    "--gpu",
    "h100-sxm",
    "--gpu",
    "b200:fp8",
    "--gpus",
    "64,128",
    "--tokens",
    "1T",
]
PLAN = {
    "model": "llama3.1-8b",
    "gpu": ["h100-sxm", "b200"],
    "tokens": "2T",
    "deadline_s": 20 * 86400,
    "confidence": 0.8,
}
PLAN_FLAGS = ["--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpu", "b200", "--tokens", "2T", "--deadline", "20d",
              "--confidence", "0.8"]  # fmt: skip
MODEL_FILE = 'id = "my-8b"\nbase = "llama3.1-8b"\nlayers = 16\n'
HARDWARE_FILE = 'id = "ours-h100"\nbase = "dgx-h100"\nnics_per_gpu = { value = 0.5, source = "our cluster" }\n'
CAMPAIGN_FILE = RAMP_CAMPAIGN.read_text()


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(app)


def cli_error(*args: str) -> str:
    done = run_cli(*args)
    assert done.code == 2 and done.err.startswith("error: "), done.err
    return done.err.removeprefix("error: ").strip()


def without_clock(document: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in document.items() if key != "elapsed_s"}


def test_predict_answers_the_run_json(client: TestClient) -> None:
    response = client.post("/api/predict", json=PREDICT)
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    assert response.json() == run_json("predict", *PREDICT_FLAGS)


def test_compare_answers_the_run_json(client: TestClient) -> None:
    response = client.post("/api/compare", json=COMPARE)
    assert response.status_code == 200
    rows = response.json()
    assert rows == run_json("compare", *COMPARE_FLAGS)
    assert [(r["system"], r["n_gpus"]) for r in rows] == [("dgx-h100", 64), ("dgx-h100", 128), ("dgx-b200", 64),
                                                          ("dgx-b200", 128)]  # fmt: skip


def test_plan_answers_the_run_json(client: TestClient) -> None:
    response = client.post("/api/plan", json=PLAN)
    assert response.status_code == 200
    document = response.json()
    assert without_clock(document) == without_clock(run_json("plan", *PLAN_FLAGS))
    assert document["goal"]["confidence"] == 0.8 and document["cheapest"] is not None


def test_uploaded_model_and_hardware_answer_as_the_files_do(client: TestClient, tmp_path: Path) -> None:
    (tmp_path / "my-8b.toml").write_text(MODEL_FILE)
    (tmp_path / "ours-h100.toml").write_text(HARDWARE_FILE)
    body = {"model_file": {"name": "my-8b.toml", "text": MODEL_FILE}, "system": "ours-h100", "n_gpus": 64,
            "hardware_files": [{"name": "ours-h100.toml", "text": HARDWARE_FILE}]}  # fmt: skip
    response = client.post("/api/predict", json=body)
    assert response.status_code == 200, response.text
    flags = ["--model", str(tmp_path / "my-8b.toml"), "--hardware", str(tmp_path / "ours-h100.toml")]
    assert response.json() == run_json("predict", *flags, "--system", "ours-h100", "--gpus", "64")
    assert (response.json()["model"], response.json()["system"]) == ("my-8b", "ours-h100")
    # the upload was this request's only: the next one does not know the system
    after = client.post("/api/predict", json={"system": "ours-h100", "n_gpus": 64})
    assert after.status_code == 422 and after.json()["field"] == "system"


def test_predict_takes_a_system_as_its_gpu(client: TestClient, tmp_path: Path) -> None:
    """The page's one "GPU or system" field sends a system as predict's `gpu`, as compare's and plan's take it:
    gb200-nvl72, and README's uploaded ours-h100, were refused "'gb200-nvl72' is a system, not a GPU"."""
    response = client.post("/api/predict", json=PREDICT | {"gpu": "gb200-nvl72", "n_gpus": 72})
    assert response.status_code == 200, response.text
    flags = ["--model", "llama3.1-8b", "--tokens", "1T", "--system", "gb200-nvl72", "--gpus", "72"]
    assert response.json() == run_json("predict", *flags)
    (tmp_path / "ours-h100.toml").write_text(HARDWARE_FILE)
    body = {"gpu": "ours-h100", "n_gpus": 64, "hardware_files": [{"name": "ours-h100.toml", "text": HARDWARE_FILE}]}
    response = client.post("/api/predict", json=body)
    assert response.status_code == 200, response.text
    flags = ["--hardware", str(tmp_path / "ours-h100.toml"), "--system", "ours-h100", "--gpus", "64"]
    assert response.json() == run_json("predict", *flags)
    # with a system given too, the id is a GPU's again: refused with the API's line, naming the field
    with pytest.raises(perfmodel.PerfmodelError) as raised:
        perfmodel.predict(gpu="gb200-nvl72", system="dgx-h100")
    assert "'gb200-nvl72' is a system, not a GPU" in str(raised.value)
    found = refusal(client, "/api/predict", {"gpu": "gb200-nvl72", "system": "dgx-h100"})
    assert found == {"error": str(raised.value), "field": "gpu"}


def refusal(client: TestClient, path: str, body: Any, status: int = 422) -> dict[str, Any]:
    response = client.post(path, json=body)
    assert response.status_code == status, response.text
    found = response.json()
    assert set(found) == {"error", "field"} and "\n" not in found["error"]
    return found


def test_a_bad_keyword_is_refused_with_the_api_line(client: TestClient) -> None:
    for body, field in [({"model": "nope"}, "model"), ({"n_gpus": 0}, "n_gpus"), ({"n_gpus": "abc"}, "n_gpus"),
                        ({"tokens": "lots"}, "tokens"), ({"precision": "fp3"}, "precision")]:  # fmt: skip
        with pytest.raises(perfmodel.PerfmodelError) as raised:
            perfmodel.predict(**body)
        assert refusal(client, "/api/predict", body) == {"error": str(raised.value), "field": field}
    with pytest.raises(perfmodel.PerfmodelError) as raised:
        perfmodel.plan(gpu="h100-sxm", tokens="1T")
    assert refusal(client, "/api/plan", {"gpu": "h100-sxm", "tokens": "1T"})["error"] == str(raised.value)
    assert refusal(client, "/api/compare", {"gpu": ["zzz"]})["field"] == "gpu"
    # the keyword named as keyword=value (it was 'confidence 2:', and the page marked no field)
    asked = {"gpu": "h100-sxm", "tokens": "1T", "deadline_s": 86400, "confidence": 2}
    with pytest.raises(perfmodel.PerfmodelError) as raised:
        perfmodel.plan(**asked)
    assert str(raised.value).startswith("confidence=2: ")
    assert refusal(client, "/api/plan", asked) == {"error": str(raised.value), "field": "confidence"}


def test_an_infeasible_question_is_explained(client: TestClient) -> None:
    found = refusal(client, "/api/predict", {"model": "llama3.1-405b", "gpu": "h100-sxm", "n_gpus": 8})
    assert found["error"].startswith("no layout fits in memory")


def test_unknown_and_file_keywords_are_refused(client: TestClient) -> None:
    for keyword in ("foo", "calibration", "hardware"):
        found = refusal(client, "/api/predict", {keyword: "x"})
        assert found == {"error": found["error"], "field": keyword}
        assert found["error"].startswith(
            f"unknown keyword '{keyword}'; valid: scenario, scenario_file, model_file, hardware_files, model"
        )
    assert refusal(client, "/api/plan", {"n_gpus": 8})["error"].startswith("unknown keyword 'n_gpus'")
    bound = refusal(client, "/api/plan", PLAN | {"max_candidates": 100})  # the server's own bound: not the request's
    assert bound == {"error": bound["error"], "field": "max_candidates"}
    assert refusal(client, "/api/predict", [1, 2])["error"].startswith("request body: ")
    malformed = client.post("/api/predict", content=b"{not json", headers={"content-type": "application/json"})
    assert malformed.status_code == 422 and malformed.json()["error"].startswith("request body: ")


def test_no_path_is_taken_from_a_request(client: TestClient) -> None:
    for body, field in [({"model": "/etc/passwd"}, "model"), ({"model": "llama.toml"}, "model"),
                        ({"gpu": "..\\gpu"}, "gpu"), ({"benchmark": "a/b"}, "benchmark")]:  # fmt: skip
        found = refusal(client, "/api/predict", body)
        assert found["field"] == field and "the server takes no paths" in found["error"]
    for name in ("../x.toml", "x.txt", "", ".hidden.toml", "a/b.toml"):
        found = refusal(client, "/api/predict", {"model_file": {"name": name, "text": MODEL_FILE}})
        assert found["field"] == "model_file" and "file name" in found["error"]


def test_a_bad_field_in_an_upload_is_the_cli_line_with_the_file_name(client: TestClient, tmp_path: Path) -> None:
    bad_model = MODEL_FILE.replace("layers = 16", "layers = -3")
    (tmp_path / "bad.toml").write_text(bad_model)
    expected = cli_error("predict", "--model", str(tmp_path / "bad.toml")).replace(f"{tmp_path}/", "")
    found = refusal(client, "/api/predict", {"model_file": {"name": "bad.toml", "text": bad_model}})
    assert found == {"error": expected, "field": "model_file"}
    assert found["error"].startswith("bad.toml: field 'layers'")
    bad_hardware = HARDWARE_FILE + "memory_gb = 7\n"
    (tmp_path / "ours.toml").write_text(bad_hardware)
    expected = cli_error("predict", "--hardware", str(tmp_path / "ours.toml")).replace(f"{tmp_path}/", "")
    found = refusal(client, "/api/predict", {"hardware_files": [{"name": "ours.toml", "text": bad_hardware}]})
    assert found == {"error": expected, "field": "hardware_files"}
    assert "memory_gb" in found["error"]
    both = {"model": "llama3.1-8b", "model_file": {"name": "m.toml", "text": MODEL_FILE}}
    assert refusal(client, "/api/predict", both)["field"] == "model_file"


def test_a_bundled_campaign_answers_the_cli_json_and_export(client: TestClient, tmp_path: Path) -> None:
    """A bundled scenario by name, as `perfmodel predict NAME` runs it: Llama 3.1 405B's campaign of 11 phases
    (scenarios/campaign-llama3.1-405b.toml), its totals and a document per phase; compared on two systems; exported
    as `perfmodel export predict NAME` writes it, a row per phase and the total row."""
    name = "campaign-llama3.1-405b"
    response = client.post("/api/predict", json={"scenario": name})
    assert response.status_code == 200, response.text
    document = response.json()
    assert document == run_json("predict", name)
    assert [p["phase"] for p in document["phases"]][:2] == ["ramp-4m", "ramp-8m"] and len(document["phases"]) == 11
    # an error in a phase names the scenario as the request did, not by the server's path to it
    found = refusal(client, "/api/predict", {"scenario": name, "tp": 3})
    assert found["field"] == "scenario" and found["error"].startswith(f"{name}: phase 'ramp-4m': field 'parallelism.")
    assert name in client.get("/api/catalogue").json()["scenarios"]
    compared = client.post("/api/compare", json={"scenario": name, "gpu": ["h100-sxm", "b200"]})
    assert compared.json() == run_json("compare", name, "--gpu", "h100-sxm", "--gpu", "b200")
    exported = client.post("/api/export/predict?format=csv", json={"scenario": name})
    assert run_cli("export", "predict", name, "--out", str(tmp_path / "cli.csv")).code == 0
    assert exported.content == (tmp_path / "cli.csv").read_bytes()
    lines = exported.text.splitlines()
    assert lines[0].startswith("phase,") and [line.split(",")[0] for line in lines[-2:]] == ["anneal", "total"]


def test_a_phase_too_small_for_its_given_layout_names_the_count_that_made_it(client: TestClient) -> None:
    """The 405B campaign on 512 GB300 vs 1,024 H100: its 128K stage's given TP 8 x PP 16 x CP 16 needs 2,048 GPUs.
    The refusal names the count as the request gave it (the page marks that field; it was null, the search's 'no
    valid layout'), and the CLI's line the same flag; a phase's own count names its field."""
    name = "campaign-llama3.1-405b"
    why = "phase 'context-128k': TP 8 x PP 16 x CP 16 = 2,048 does not divide the 512 GPUs"
    on_each = ["--gpu", "gb300@512", "--gpu", "h100-sxm@1024"]
    on_both = ["--gpu", "gb300", "--gpu", "h100-sxm", "--gpus", "512"]
    for body, field, flags, said, flag in [
        ({"gpu": ["gb300@512", "h100-sxm@1024"]}, "gpu", on_each, "gpu='gb300@512'", "--gpu gb300@512"),
        ({"gpu": ["gb300", "h100-sxm"], "n_gpus": 512}, "n_gpus", on_both, "n_gpus=512", "--gpus"),
    ]:
        with pytest.raises(perfmodel.PerfmodelError) as raised:
            perfmodel.compare(name, **body)
        assert str(raised.value) == f"{said}: {why}"
        found = refusal(client, "/api/compare", {"scenario": name, **body})
        assert found == {"error": f"{said}: {why}", "field": field}
        assert cli_error("compare", name, *flags) == f"{flag}: {why}"
    own = CAMPAIGN_FILE.replace('name = "main"', 'name = "main"\nn_gpus = 64\nparallelism = { tp = 8, pp = 16 }')
    found = refusal(client, "/api/compare", {"scenario_file": {"name": "own.toml", "text": own}, "gpu": ["h100-sxm"]})
    assert found["field"] == "scenario_file"
    assert found["error"].startswith("own.toml: phase 'main': field 'n_gpus': TP 8 x PP 16"), found


def test_a_campaign_planned_answers_each_phase_at_the_chosen_count(client: TestClient) -> None:
    """The page's per-phase lines of a planned campaign come from the plan's own document: each candidate's `plan`
    holds a document per phase (the `phase` key, its GPUs scaled to the chosen count as `perfmodel plan` prints them),
    and its phases' figures with losses add up to the candidate's."""
    name = "campaign-llama3.1-405b"
    response = client.post("/api/plan", json={"scenario": name, "gpu": "gb300", "deadline_s": 120 * 86400})
    assert response.status_code == 200, response.text
    document = response.json()
    assert without_clock(document) == without_clock(run_json("plan", name, "--gpu", "gb300", "--deadline", "120d"))
    (candidate,) = document["candidates"]
    phases = candidate["plan"]["phases"]
    assert phases[0]["phase"] == "ramp-4m" and len(phases) == 11
    assert max(p["n_gpus"] for p in phases) == candidate["n_gpus"] > min(p["n_gpus"] for p in phases)
    for key in ("time_to_train_with_losses_days", "gpu_hours_with_losses", "cost_usd_with_losses"):
        assert sum(p[key] for p in phases) == pytest.approx(candidate[key.replace("_with_losses", "")], rel=1e-9)


def test_an_uploaded_campaign_answers_as_the_file_does(client: TestClient) -> None:
    upload = {"name": RAMP_CAMPAIGN.name, "text": CAMPAIGN_FILE}
    response = client.post("/api/predict", json={"scenario_file": upload, "n_gpus": 128})
    assert response.status_code == 200, response.text
    assert response.json() == run_json("predict", str(RAMP_CAMPAIGN), "--gpus", "128")
    assert [(p["phase"], p["n_gpus"]) for p in response.json()["phases"]] == [("ramp", 128), ("main", 128)]


def test_a_bad_phase_is_the_cli_line_naming_the_upload_the_phase_and_the_field(
    client: TestClient, tmp_path: Path
) -> None:
    bad = CAMPAIGN_FILE.replace("tokens = 1e11", "tokens = -5")
    (tmp_path / "bad.toml").write_text(bad)
    expected = cli_error("predict", str(tmp_path / "bad.toml")).replace(f"{tmp_path}/", "")
    found = refusal(client, "/api/predict", {"scenario_file": {"name": "bad.toml", "text": bad}})
    assert found == {"error": expected, "field": "scenario_file"}
    assert found["error"].startswith("bad.toml: phase 'ramp': field 'tokens': Input should be greater than 0")


def test_a_scenario_is_a_bundled_name_or_an_upload_never_a_path(client: TestClient) -> None:
    """A bare name that is no bundled scenario would be read as a file of the worker's folder (inputs/resources.py
    bundled_file), and an uploaded scenario's model file and calibration are read relative to it: both refused."""
    for name in ("/etc/passwd", "../campaign", "campaign-llama3.1-405b.toml"):
        found = refusal(client, "/api/predict", {"scenario": name})
        assert found["field"] == "scenario" and "the server takes no paths" in found["error"]
    found = refusal(client, "/api/predict", {"scenario": "campaign-llama3-405b"})
    assert found["field"] == "scenario"
    assert found["error"].startswith(
        "scenario='campaign-llama3-405b': not a bundled scenario (did you mean 'campaign-llama3.1-405b'?); bundled: "
    )
    for line in ('model = "../../../etc/ours.toml"', 'calibration = "/etc/passwd"', '[model]\nbase = "/x/y"'):
        found = refusal(client, "/api/predict", {"scenario_file": {"name": "s.toml", "text": line + "\n"}})
        assert (
            found["field"] == "scenario_file" and "a path; the server reads no file a scenario names" in found["error"]
        )
    both = {"scenario": "default", "scenario_file": {"name": "s.toml", "text": CAMPAIGN_FILE}}
    assert refusal(client, "/api/predict", both)["field"] == "scenario_file"


def test_sizes_are_bounded(client: TestClient) -> None:
    big = "# padding\n" * (work.MAX_UPLOAD_BYTES // 10 + 1)
    found = refusal(client, "/api/predict", {"model_file": {"name": "big.toml", "text": big}}, 413)
    assert found["field"] == "model_file" and f"{work.MAX_UPLOAD_BYTES:,}" in found["error"]
    files = [{"name": f"h{i}.toml", "text": HARDWARE_FILE} for i in range(work.MAX_HARDWARE_FILES + 1)]
    assert refusal(client, "/api/predict", {"hardware_files": files})["field"] == "hardware_files"
    body = json.dumps({"model": "x" * work.MAX_BODY_BYTES}).encode()
    response = client.post("/api/predict", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 413 and response.json()["error"].startswith("request body: ")
    chunked = client.post("/api/predict", content=iter([b"{}"]), headers={"content-type": "application/json"})
    assert chunked.status_code == 411


MODEL_UPLOAD = {"name": "m.toml", "text": MODEL_FILE}
HARDWARE_UPLOAD = {"name": "h.toml", "text": HARDWARE_FILE}


@pytest.mark.parametrize(
    ("keywords", "field", "message"),
    [
        ({"model_file": MODEL_UPLOAD, "scenario_file": {"name": "s.toml", "text": 'model = "../x.toml"\n'}},
         "scenario_file", "scenario_file: s.toml: field 'model' = '../x.toml': a path; the server reads no file"),
        ({"hardware_files": [HARDWARE_UPLOAD, {"name": "../h.toml", "text": HARDWARE_FILE}]},
         "hardware_files", "hardware_files: file name '../h.toml': allowed letters"),
        ({"hardware_files": [HARDWARE_UPLOAD, HARDWARE_UPLOAD]},
         "hardware_files", "hardware_files: two files named h.toml"),
        ({"model_file": MODEL_UPLOAD, "scenario_file": {"name": "s.toml", "text": "#" * (work.MAX_UPLOAD_BYTES + 1)}},
         "scenario_file", "scenario_file: s.toml is 65,537 bytes"),
        ({"model": "llama3.1-8b", "model_file": MODEL_UPLOAD}, "model_file", "model and model_file: give one"),
    ],
)  # fmt: skip
def test_uploads_are_checked_before_any_is_written(
    monkeypatch: pytest.MonkeyPatch, keywords: dict[str, Any], field: str, message: str
) -> None:
    """A refused upload writes nothing: the scenario's named files were checked after it and the model file were
    written, and a second hardware file's name after the first was."""

    def no_folder(**_: Any) -> None:
        raise AssertionError("a folder made for a refused request")

    monkeypatch.setattr(work.tempfile, "TemporaryDirectory", no_folder)
    with pytest.raises(work.Refused) as refused:
        work.answer("predict", keywords, None)
    assert refused.value.field == field and refused.value.message.startswith(message), refused.value.message


def test_work_is_bounded(client: TestClient) -> None:
    rows = {"gpu": ["h100-sxm", "b200"], "n_gpus": list(range(64, 64 * (work.MAX_ROWS // 2 + 2), 64))}
    found = refusal(client, "/api/compare", rows)
    assert found["field"] == "gpu" and f"at most {work.MAX_ROWS}" in found["error"]
    counts = list(range(8, 8 * (work.MAX_ROWS + 2), 8))  # no gpu: the scenario's own, a row per count (was 0 rows)
    found = refusal(client, "/api/compare", {"n_gpus": counts})
    rows = f"n_gpus: the scenario's system x {work.MAX_ROWS + 1} GPU counts = {work.MAX_ROWS + 1} rows; "
    assert found["field"] == "n_gpus" and found["error"].startswith(rows)
    candidates = {"gpu": ["h100-sxm:bf16,fp8", "b200:bf16,fp8,nvfp4", "gb200:bf16,fp8,nvfp4,mxfp8"], "deadline_s": 1e6}
    found = refusal(client, "/api/plan", candidates)
    assert found["field"] == "gpu" and f"at most {work.MAX_CANDIDATES}" in found["error"]


def test_a_gpu_with_its_own_count_is_one_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """`h100-sxm@8` is one row at its own count, but the bound counted it once per n_gpus entry: two such systems and
    64 and 128 for a third were counted as 6 rows, not the 4 compare() makes (the bound lowered here to see it)."""
    monkeypatch.setattr(work, "MAX_ROWS", 4)
    own = ["h100-sxm@8", "h100-sxm@16"]
    work._check_rows({"gpu": [*own, "b200"], "n_gpus": [64, 128]})  # 4 rows: within
    with pytest.raises(work.Refused) as refused:  # asked here: the server's workers read their own bound
        work._check_rows({"gpu": [*own, "b200", "gb200"], "n_gpus": [64, 128]})
    assert refused.value.field == "gpu"
    assert refused.value.message.startswith("gpu x n_gpus: 2 at their own counts + 2 systems x 2 GPU counts = 6 rows")


def test_the_rows_bound_names_the_keyword_at_fault(client: TestClient) -> None:
    """One system x 17 counts highlighted `gpu` (the field chosen by the message's first word) though the counts are
    at fault; two systems x 9 counts: the systems."""
    counts = list(range(8, 8 * (work.MAX_ROWS + 2), 8))
    assert refusal(client, "/api/compare", {"gpu": ["b200"], "n_gpus": counts})["field"] == "n_gpus"
    several = {"gpu": ["b200", "h100-sxm"], "n_gpus": counts[: work.MAX_ROWS // 2 + 1]}
    assert refusal(client, "/api/compare", several)["field"] == "gpu"


def test_the_rows_bound_is_worded_as_this_servers(client: TestClient) -> None:
    """The refusal read compare's CLI-bound wording ("at most 16 (each a full prediction): compare fewer")."""
    counts = list(range(8, 8 * (work.MAX_ROWS + 2), 8))
    found = refusal(client, "/api/compare", {"gpu": ["b200"], "n_gpus": counts})
    assert found["error"] == (
        f"gpu x n_gpus: 1 system x {work.MAX_ROWS + 1} GPU counts = {work.MAX_ROWS + 1} rows; this server compares "
        f"at most {work.MAX_ROWS} in one request (the CLI up to {MAX_COMPARED_ROWS})"
    )


def test_gpu_counts_are_checked_as_the_api_checks_them_before_the_rows(client: TestClient) -> None:
    """20 counts none of which is a GPU count (0, -1, ...) were refused for their 20 rows (counted apart from the API's
    reading) before their range."""
    found = refusal(client, "/api/compare", {"n_gpus": [-k for k in range(work.MAX_ROWS + 4)]})
    assert found["field"] == "n_gpus" and ": 0 must be between 1 and 1,000,000 GPUs" in found["error"], found


def test_a_gpu_count_no_row_uses_is_refused(client: TestClient) -> None:
    """n_gpus beside systems that each have their own count (`gb300@512`) was dropped without a word: the rows were
    at 512 and 1,024, not the 64 asked."""
    found = refusal(client, "/api/compare", {"gpu": ["gb300@512", "h100-sxm@1024"], "n_gpus": [64, 128]})
    assert found["field"] == "n_gpus"
    assert found["error"] == (
        "n_gpus: no row would use it, each gpu has its own count (gb300@512, h100-sxm@1024); drop n_gpus or an @N"
    )


def test_a_comparisons_rows_are_counted_as_compare_counts_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server counted a comparison's rows itself, apart from compare()'s check_size: n_gpus [64, 64, 128, 128]
    was 4 counts where compare() makes 2 (refused within the bound), and a target compare() refuses was counted as a
    row. Now the targets are parsed as the API parses them, an uploaded system's among them (the bound lowered)."""

    def asked(scenario: Any, **given: Any) -> None:
        raise perfmodel.PerfmodelError("asked")

    monkeypatch.setattr(work, "MAX_ROWS", 4)
    monkeypatch.setitem(work.QUESTIONS, "compare", asked)
    hardware = [{"name": "ours.toml", "text": HARDWARE_FILE}]
    twice = {"gpu": ["h100-sxm", "b200"], "n_gpus": [64, 64, 128, 128]}
    uploaded = {"gpu": ["ours-h100@64", "b200"], "n_gpus": [64, 128, 256], "hardware_files": hardware}
    for within in [twice, uploaded]:
        with pytest.raises(work.Refused) as refused:
            work.answer("compare", within, None)
        assert refused.value.message == "asked", refused.value.message
    past = {"gpu": ["ours-h100", "b200"], "n_gpus": [64, 128, 256], "hardware_files": hardware}
    with pytest.raises(work.Refused) as refused:
        work.answer("compare", past, None)
    assert refused.value.field == "gpu" and "= 6 rows; this server compares at most 4 " in refused.value.message
    with pytest.raises(work.Refused) as refused:  # refused as compare() refuses it, before any row is counted
        work.answer("compare", {"gpu": ["zzz", "b200"]}, None)
    assert refused.value.field == "gpu" and refused.value.message.startswith("gpu='zzz': unknown accelerator")


def test_a_plans_candidates_are_counted_as_plan_reads_them(client: TestClient) -> None:
    """The bound counts plan()'s own candidates (planning.plan.candidate_bases): one per precision before a quote,
    an uploaded system's among them; past the bound the request is refused before any is planned."""
    hardware = [{"name": "ours.toml", "text": HARDWARE_FILE}]
    nine = ["ours-h100:bf16,fp8:$2.50", "b200:bf16,fp8,nvfp4,mxfp8,mxfp4", "h100-sxm:fp8,bf16"]
    found = refusal(client, "/api/plan", {"gpu": nine, "deadline_s": 1e6, "hardware_files": hardware})
    assert found == {"error": found["error"], "field": "gpu"}
    assert found["error"].startswith(f"gpu: 9 candidates; this server plans at most {work.MAX_CANDIDATES} ")
    unknown = refusal(client, "/api/plan", {"gpu": nine, "deadline_s": 1e6})  # not uploaded: plan()'s own line
    assert unknown["field"] == "gpu" and "unknown accelerator or system 'ours-h100'" in unknown["error"]


def test_a_plans_candidates_are_counted_on_its_own_scenario(client: TestClient) -> None:
    """The bound was checked on the default scenario (fp8), which refused an A100 planned at the request's own
    precision='bf16' ("has no tensor-core support for fp8 (the default precision)") before plan() saw it."""
    asked = PLAN | {"gpu": ["a100-sxm-80gb"], "precision": "bf16", "tokens": "0.1T"}
    response = client.post("/api/plan", json=asked)
    assert response.status_code == 200, response.text
    assert [plan["candidate"] for plan in response.json()["candidates"]] == ["dgx-a100:bf16"]


def test_a_request_past_the_wall_time_is_stopped(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """DeepSeek-V3 on 16,384 GB300 with every layout dimension open searches for 1-2 s on one core (its bounded
    search prices about 10,000 of 11.7 million valid layouts): a bound of 0.2 s stops the worker, and the next request
    is answered by a new one."""
    for _ in range(workers.WORKERS):  # every worker started and warm: the bound then times the question alone
        assert client.post("/api/predict", json=PREDICT).status_code == 200
    monkeypatch.setattr(work, "MAX_REQUEST_S", 0.2)
    started = time.monotonic()
    found = refusal(client, "/api/predict", {"model": "deepseek-v3", "gpu": "gb300", "n_gpus": 16384})
    assert time.monotonic() - started < 15
    assert found == {"error": found["error"], "field": None}
    assert found["error"].startswith("stopped after 0.2 s, this server's bound on one request's work")
    monkeypatch.undo()  # the new worker's first answer (its imports) under the server's own bound
    assert client.post("/api/predict", json=PREDICT).json() == run_json("predict", *PREDICT_FLAGS)


def test_twenty_requests_at_once_are_all_answered(client: TestClient) -> None:
    """Twenty requests at once, one of them with its own hardware file: each gets its own answer."""
    counts = [8 * (i + 1) for i in range(19)]
    alone = {n: client.post("/api/predict", json=PREDICT | {"n_gpus": n}).json() for n in counts}
    uploaded = {"system": "ours-h100", "n_gpus": 64, "hardware_files": [{"name": "ours.toml", "text": HARDWARE_FILE}]}

    def ask(body: dict[str, Any]) -> Any:
        return client.post("/api/predict", json=body)

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(ask, [PREDICT | {"n_gpus": n} for n in counts] + [uploaded]))
    assert [a.status_code for a in answers] == [200] * 20
    assert [a.json() for a in answers[:-1]] == [alone[n] for n in counts]
    assert answers[-1].json()["system"] == "ours-h100"


@pytest.mark.parametrize(("question", "body", "flags"), [("predict", PREDICT, PREDICT_FLAGS),
                         ("compare", COMPARE, COMPARE_FLAGS)])  # fmt: skip
def test_exports_are_the_cli_exports(client: TestClient, tmp_path: Path, question: str, body: Any,
                                     flags: list[str]) -> None:  # fmt: skip
    for fmt in ("csv", "json"):
        response = client.post(f"/api/export/{question}?format={fmt}", json=body)
        assert response.status_code == 200
        assert response.headers["content-disposition"] == f'attachment; filename="perfmodel-{question}.{fmt}"'
        out = tmp_path / f"cli.{fmt}"
        assert run_cli("export", question, *flags, "--out", str(out)).code == 0
        assert response.content == out.read_bytes()


def test_the_plan_workbook_downloads(client: TestClient, tmp_path: Path) -> None:
    import openpyxl

    response = client.post("/api/export/plan?format=xlsx", json=PLAN)
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/vnd.openxml")
    (tmp_path / "plan.xlsx").write_bytes(response.content)
    sheets = openpyxl.load_workbook(tmp_path / "plan.xlsx").sheetnames
    assert len(sheets) >= 2
    assert client.post("/api/export/plan?format=pdf", json=PLAN).status_code == 422


def test_openapi_lists_the_endpoints_and_the_api_keywords(client: TestClient) -> None:
    described = client.get("/openapi.json").json()
    assert {"/api/predict", "/api/compare", "/api/plan"} <= set(described["paths"])
    for path in ("/api/predict", "/api/compare", "/api/plan"):
        assert {"200", "422", "413"} <= set(described["paths"][path]["post"]["responses"])
    schemas = described["components"]["schemas"]
    assert {"n_gpus", "model_file", "hardware_files", "tokens"} <= set(schemas["PredictRequest"]["properties"])
    assert {"deadline_s", "budget_usd", "confidence", "max_gpus"} <= set(schemas["PlanRequest"]["properties"])
    assert "n_gpus" not in schemas["PlanRequest"]["properties"]
    precision = schemas["PredictRequest"]["properties"]["precision"]["anyOf"][0]["enum"]
    assert precision == ["bf16", "fp8", "mxfp8", "nvfp4", "mxfp4"]
    assert client.get("/docs").status_code == 404  # FastAPI's docs page would load its scripts from a CDN


def test_the_page_and_its_files_are_served(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and '<script src="/static/app.js"' in page.text
    script = client.get("/static/app.js").text
    assert not [part for part in (".innerHTML", ".outerHTML", "insertAdjacentHTML", "document.write") if part in script]
    assert "http" not in script.replace("http://www.w3.org/2000/svg", "")  # nothing loaded from elsewhere
    known = client.get("/api/catalogue").json()
    assert "llama3.1-405b" in known["models"] and "nvfp4" in known["accelerators"]["gb300"]
    assert known["limits"]["upload_bytes"] == work.MAX_UPLOAD_BYTES
    assert known["limits"]["deadline_s"] == arguments.MAX_FIGURE  # the page's bound: test_serve_browser's deadline


def test_the_command_refuses_an_address_in_use() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        message = cli_error("serve", "--port", str(port))
    assert message.startswith(f"--host 127.0.0.1 --port {port}: cannot listen there")
