"""The Python API in a notebook (issue 29, item 6): short reprs and HTML tables of results and comparisons that say
what was asked, `perfmodel.__version__`, type information shipped (py.typed), token counts written as people write
them ("15T") in keywords and scenario files, and the default scenario read once per process, not once per call."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import tomllib
from pathlib import Path
from typing import Any

import pytest

import perfmodel
from perfmodel.inputs import scenario as scenarios

QUESTION: dict[str, Any] = {"model": "llama3.1-405b", "gpu": "gb300", "n_gpus": 512, "precision": "nvfp4"}
LAYOUT: dict[str, Any] = {"tp": 2, "pp": 1, "cp": 1, "vp": 1, "mbs": 1, "recompute": "none", "zero": 3}


def test_a_prediction_shows_itself_in_one_line_of_what_was_asked() -> None:
    """The issue's case: `p` printed 8,610 characters whose scenario read "Llama 3.1 70B ... 1,024 x H100"."""
    p = perfmodel.predict(**QUESTION, tokens=15.6e12)
    shown = repr(p)
    assert shown == str(p) and "\n" not in shown and len(shown) < 300, shown
    assert shown.startswith("<Prediction llama3.1-405b on 512 x gb300 (gb300-nvl72) nvfp4, TP") and "15.6T" in shown
    assert f"{p.step_time_s:.3f} s" in shown and "70B" not in shown and "H100" not in shown
    table = p._repr_html_()
    assert table.startswith("<table>") and table.count("<tr>") == 2 and "llama3.1-405b on 512 x gb300" in table


def test_a_comparison_a_search_and_a_campaign_show_a_line_per_result() -> None:
    c = perfmodel.compare(model="llama3.1-8b", gpu=["h100-sxm", "gb200"], n_gpus=64, tokens="1T")
    lines = repr(c).splitlines()
    assert lines[0] == "<Comparison of 2 results" and len(lines) == 3
    assert "h100-sxm" in lines[1] and "speedup 1.00x" in lines[1] and "gb200" in lines[2]
    assert c._repr_html_().count("<tr>") == 3  # the heading and a row per result
    search = perfmodel.search(model="llama3.1-8b", gpu="h100-sxm", n_gpus=64, top=3)
    assert repr(search).splitlines()[0] == "<SearchReport of 3 results" and search._repr_html_().count("<tr>") == 4
    campaign = perfmodel.predict("campaign-llama3.1-405b")
    assert isinstance(campaign, perfmodel.Campaign)
    shown = repr(campaign).splitlines()
    assert len(shown) == 1 + len(campaign.phases) + 1 and shown[-1].lstrip().startswith("total: ")


def test_a_plan_shows_a_line_per_feasible_plan() -> None:
    """A PlanReport printed its goal and every candidate's tried predictions as dataclass fields."""
    plan = perfmodel.plan(model="llama3.1-8b", gpu=["h100-sxm", "gb200"], deadline_s=30 * 86400, tokens="1T")
    lines = repr(plan).splitlines()
    assert lines[0] == f"<PlanReport of {len(plan.feasible())} results" and len(lines) == 1 + len(plan.feasible())
    assert "h100-sxm" in lines[1] and "gb200" in lines[2] and len(repr(plan)) < 800
    assert plan._repr_html_().count("<tr>") == 1 + len(plan.feasible())


def test_html_escapes_what_it_shows() -> None:
    from perfmodel.planning import views

    record = perfmodel.predict(**QUESTION, **LAYOUT).to_record() | {"phase": "<b>&"}
    assert "<b>&" not in views.table("Prediction", [record]) and "&lt;b&gt;&amp;" in views.table("Prediction", [record])


def test_overrides_drop_the_default_scenarios_own_name_and_description() -> None:
    default = perfmodel.load_scenario()
    assert default.description is not None and "70B" in default.description  # the default's own question
    for override in ({"model": "llama3.1-405b"}, {"gpu": "gb300"}, {"tokens": "2T"}, {"precision": "bf16"}):
        changed = perfmodel.load_scenario(**override)
        assert changed.name is None and changed.description is None, override
    assert perfmodel.load_scenario(pue=1.3).description == default.description  # the question is the same


def test_version_is_the_installed_distributions() -> None:
    assert perfmodel.__version__ == importlib.metadata.version("perfmodel")
    assert "__version__" in dir(perfmodel)


def test_type_information_ships_with_the_package() -> None:
    """PEP 561: a py.typed file in the package, which the wheel (all of perfmodel/) carries."""
    assert importlib.resources.files("perfmodel").joinpath("py.typed").is_file()
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["perfmodel"]


def test_tokens_are_read_as_people_write_them_in_keywords(tmp_path: Path) -> None:
    written = perfmodel.predict(**QUESTION, **LAYOUT, tokens="15.6T")
    assert (
        written.to_record()["tokens_to_train"]
        == perfmodel.predict(**QUESTION, **LAYOUT, tokens=15.6e12).to_record()["tokens_to_train"]
    )
    scenario = perfmodel.load_scenario(tokens="1,000,000,000", ramp_tokens="20B", ramp_start_gbs=64, eval_tokens="5M",
                                       eval_every_steps=100)  # fmt: skip
    assert (scenario.tokens, scenario.losses.ramp_tokens, scenario.losses.eval_tokens) == (1e9, 2e10, 5e6)
    with pytest.raises(perfmodel.PerfmodelError, match=r"^tokens='15X': not a number of tokens \(examples: 15T"):
        perfmodel.predict(tokens="15X")


def test_tokens_are_read_as_people_write_them_in_scenario_files(tmp_path: Path) -> None:
    path = tmp_path / "campaign.toml"
    path.write_text(
        'model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 64\ntokens = "2T"\n'
        '[[phase]]\nname = "a"\ntokens = "1.5T"\n[[phase]]\nname = "b"\ntokens_per_step = "8M"\n'
    )
    scenario = perfmodel.load_scenario(path)
    assert scenario.tokens == 2e12 and scenario.phase[0].tokens == 1.5e12 and scenario.phase[1].tokens_per_step == 8e6
    path.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\ntokens = "lots"\n')
    with pytest.raises(perfmodel.PerfmodelError, match=r"field 'tokens': not a number of tokens"):
        perfmodel.load_scenario(path)


def test_the_scenario_schema_takes_the_counts_the_checks_take() -> None:
    """An editor checking a scenario file against schemas/scenario.schema.json accepts `tokens = "15T"` too."""
    jsonschema = pytest.importorskip("jsonschema")
    from perfmodel.outputs.schemas import schema

    validator = jsonschema.Draft202012Validator(schema("scenario"))
    for tokens in ("15T", "2.5e12", "1,000,000", 15e12):
        assert validator.is_valid({"tokens": tokens, "losses": {"ramp_tokens": "20B"}}), tokens
    for tokens in ("lots", "15 T tokens", -1):
        assert not validator.is_valid({"tokens": tokens}), tokens


def test_the_default_scenario_is_read_once_and_a_question_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API asks the default scenario on every call: its file is parsed once per process (and version of the
    file), and a question asked again is not checked again."""
    reads = []
    read_toml = scenarios.read_toml
    monkeypatch.setattr(scenarios, "read_toml", lambda *args: reads.append(args) or read_toml(*args))
    scenarios._bundled_tables.cache_clear()
    perfmodel.api._ASKED.clear()
    first = perfmodel.load_scenario(**QUESTION, **LAYOUT)
    assert perfmodel.load_scenario(**QUESTION, **LAYOUT) is first  # a record: immutable, so shared
    for n_gpus in (64, 128, 256):
        perfmodel.predict(**QUESTION | {"n_gpus": n_gpus}, **LAYOUT)
    assert len(reads) == 1


def test_a_question_on_an_edited_file_is_checked_again(tmp_path: Path) -> None:
    """The questions asked before are keyed by the scenario file's version: an edit is read, not answered from
    memory."""
    path = tmp_path / "s.toml"
    path.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\n')
    assert perfmodel.load_scenario(path, precision="bf16").n_gpus == 8
    path.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 16\n')
    assert perfmodel.load_scenario(path, precision="bf16").n_gpus == 16


def test_an_override_never_reaches_the_parsed_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parsed tables are shared: a call's overrides (nested ones too) must not be seen by the next call."""
    assert perfmodel.load_scenario(cp=2, pue=1.5).parallelism.cp == 2
    plain = perfmodel.load_scenario(precision="bf16")
    assert (plain.parallelism.cp, plain.parallelism.tp, plain.cost.pue) == (1, 4, 1.2)
