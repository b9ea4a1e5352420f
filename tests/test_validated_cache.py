"""Bundled inputs come checked from the cache, so that `perfmodel predict` never imports pydantic (issue 15), nor
tabulate (its table is printed by outputs/columns.py) or numpy (an MLPerf benchmark's means: mlperf.numpy_mean)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from perfmodel.inputs import validated
from perfmodel.inputs.checking import check, model_of
from perfmodel.inputs.hardware import Accelerator, System, accelerators, systems
from perfmodel.inputs.models import ZOO, ModelSpec
from perfmodel.inputs.record import as_dict, from_dict, given, record
from perfmodel.inputs.resources import bundled_names, bundled_path
from perfmodel.inputs.scenario import Scenario, load_scenario

RUN = (
    "import sys\nfrom perfmodel.cli import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
    "heavy = ('pydantic', 'tabulate', 'numpy')\n"
    "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)), file=sys.stderr)"
)


@record
class _Text:
    text: str


def _run(cache: Path, *args: str) -> tuple[str, list[str]]:
    """A command in a fresh interpreter: its stdout and which of pydantic, tabulate and numpy it imported."""
    env = os.environ | {"PERFMODEL_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", RUN, *args], env=env, capture_output=True, text=True, check=True)
    return done.stdout, json.loads(done.stderr.strip().splitlines()[-1].replace("'", '"'))


@pytest.mark.parametrize("args", [("predict",), ("predict", "mlperf-405b-h100-512"), ("predict", "--format", "json")])
def test_predict_on_bundled_inputs_imports_no_pydantic_once_cached(tmp_path: Path, args: tuple[str, ...]) -> None:
    first, checked_with = _run(tmp_path, *args)
    again, imported = _run(tmp_path, *args)
    assert checked_with == ["pydantic"] and imported == []  # the first run checks the files, the next read the cache
    assert again == first


def test_a_user_file_is_still_checked_by_pydantic(tmp_path: Path) -> None:
    user = tmp_path / "mine.toml"
    user.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\n')
    _, imported = _run(tmp_path / "cache", "predict", str(user))
    assert "pydantic" in imported


def test_the_cache_is_keyed_by_the_text(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path))
    calls: list[str] = []

    def checker(text: str) -> Any:
        return lambda: calls.append(text) or _Text(text=text)

    assert validated.cached("scenario", "a = 1", _Text, checker("a = 1")) == _Text(text="a = 1")
    assert validated.cached("scenario", "a = 1", _Text, checker("a = 1")) == _Text(text="a = 1")  # read back
    assert validated.cached("scenario", "a = 2", _Text, checker("a = 2")) == _Text(text="a = 2")  # a changed file
    assert validated.cached("systems", "a = 2", _Text, checker("a = 2")) == _Text(text="a = 2")  # another kind's
    assert calls == ["a = 1", "a = 2", "a = 2"]


@pytest.mark.parametrize(
    "spoil",
    [
        lambda path: path.write_text("{not json"),
        lambda path: path.write_text(json.dumps({"key": "another", "tables": {}})),
        lambda path: path.write_text(json.dumps([1, 2])),
        lambda path: path.chmod(0o666),  # writable by others: not trusted
    ],
    ids=["corrupt", "other-key", "not-an-entry", "not-private"],
)
def test_an_entry_that_cannot_be_trusted_is_ignored_and_rewritten(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spoil: Any
) -> None:
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path))
    calls: list[int] = []
    validated.cached("scenario", "a = 1", _Text, lambda: calls.append(1) or _Text(text="a"))
    (entry,) = tmp_path.glob("checked-*.json")
    spoil(entry)
    assert validated.cached("scenario", "a = 1", _Text, lambda: calls.append(2) or _Text(text="a")) == _Text(text="a")
    assert calls == [1, 2]
    assert validated.cached("scenario", "a = 1", _Text, lambda: calls.append(3) or _Text(text="a")) == _Text(text="a")
    assert calls == [1, 2] and oct(entry.stat().st_mode & 0o777) == oct(0o600)  # rewritten, private again


def test_caching_off_checks_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", "off")
    calls: list[int] = []
    for _ in range(2):
        validated.cached("scenario", "a = 1", _Text, lambda: calls.append(1) or _Text(text="a"))
    assert calls == [1, 1]


@pytest.mark.parametrize("cls", [Accelerator, System])
def test_bundled_hardware_read_back_is_what_pydantic_checks(cls: type[Any]) -> None:
    from perfmodel.inputs import catalogue
    from perfmodel.inputs.hardware_check import checked

    kind = "accelerators" if cls is Accelerator else "systems"
    records = accelerators() if cls is Accelerator else systems()
    for entry in catalogue.entries()[kind].values():
        record = checked(kind, entry.path, catalogue.raw_tables(entry))
        assert record == records[entry.id] == from_dict(cls, json.loads(json.dumps(validated.tables(record))))


@pytest.mark.parametrize("name", bundled_names("scenarios"))
def test_a_bundled_scenario_read_back_is_what_pydantic_checks(name: str) -> None:
    path = bundled_path("scenarios", name)
    cached = load_scenario(path)
    checked = load_scenario(path, {"n_gpus": cached.n_gpus})  # an override: checked by pydantic, not cached
    assert cached == checked
    assert given(cached) | {"n_gpus"} == given(checked)
    read_back = from_dict(Scenario, json.loads(json.dumps(validated.tables(checked))))
    assert read_back == cached and given(read_back) == given(cached) | {"n_gpus"}


def test_every_zoo_model_passes_the_checks_of_a_model_file() -> None:
    """The zoo is built in Python, without pydantic: its shapes must still respect the limits a file would."""
    model = model_of(ModelSpec)
    for spec in ZOO.values():
        assert check(model, as_dict(spec)) == spec


def _scale_first_figure(tables: dict[str, Any]) -> bool:
    """Double the first number found (a peak, a bandwidth, a GPU count): a plausible edit."""
    for key, value in tables.items():
        if isinstance(value, int | float) and not isinstance(value, bool) and value:
            tables[key] = value * 2
            return True
        if isinstance(value, dict) and _scale_first_figure(value):
            return True
    return False


def _figure_as_text(tables: dict[str, Any]) -> bool:
    for key, value in tables.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            tables[key] = str(value)
            return True
        if isinstance(value, dict) and _figure_as_text(value):
            return True
    return False


EDITS = {
    "figure-scaled": _scale_first_figure,
    "n_gpus-rewritten": lambda tables: "n_gpus" in tables and bool(tables.update(n_gpus=tables["n_gpus"] * 4) or 1),
    "figure-as-text": _figure_as_text,
    "figure-removed": lambda tables: bool(tables.pop(sorted(tables)[-1], None) is not None),
    "digest-dropped": lambda tables: True,
    "digest-worked-out-again": _scale_first_figure,  # by hand, from the entry's format: the folder's key is not known
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edited_entry_changes_no_answer(tmp_path: Path, edit: str) -> None:
    """Issue 30 class 1: every checked-*.json entry edited (its digest left as it was, or dropped) is caught on read
    and checked again: the prediction is the one of a clean cache, and the entry is rewritten whole."""
    clean, _ = _run(tmp_path, "predict", "--format", "json")
    edited = 0
    for path in tmp_path.glob("checked-*.json"):
        entry = json.loads(path.read_text())
        if EDITS[edit](entry["tables"]):
            if edit == "digest-dropped":
                entry.pop("digest", None)
            if edit == "digest-worked-out-again":
                text = f"{entry['key']}:{json.dumps(entry['tables'], sort_keys=True)}"
                entry["digest"] = hashlib.sha256(text.encode()).hexdigest()
            path.write_text(json.dumps(entry))
            edited += 1
    assert edited
    again, imported = _run(tmp_path, "predict", "--format", "json")
    assert again == clean and imported == ["pydantic"]  # the edited entries were checked again
    third, imported = _run(tmp_path, "predict", "--format", "json")
    assert third == clean and imported == []  # ...and rewritten as they should be


def test_an_entry_of_another_input_under_its_name_is_not_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An entry copied over another's file (a plausible tables and digest, but for another text) is not trusted."""
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path))
    validated.cached("scenario", "a = 1", _Text, lambda: _Text(text="one"))
    validated.cached("scenario", "a = 2", _Text, lambda: _Text(text="two"))
    first, second = sorted(tmp_path.glob("checked-*.json"), key=lambda p: "two" in p.read_text())
    first.write_text(second.read_text())
    assert validated.cached("scenario", "a = 1", _Text, lambda: _Text(text="one")) == _Text(text="one")
