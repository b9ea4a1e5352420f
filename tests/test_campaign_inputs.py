"""A campaign file ([[phase]] tables): what a phase inherits, and the one-line errors of a bad phase."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.scenario import load_scenario, phase_tokens

BASE = """
model = "llama3.1-8b"
gpu = "h100-sxm"
n_gpus = 64
tokens = 1e12
[parallelism]
seq_len = 4096
"""
RAMP = '[[phase]]\nname = "ramp"\ntokens = 1e11\ngbs = 256\ngpu_fraction = 0.5\n'
MAIN = '[[phase]]\nname = "main"\n'
LONG = '[[phase]]\nname = "long"\ntokens = 5e10\nseq_len = 32768\nparallelism = { cp = 4 }\n'


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "campaign.toml"
    path.write_text(text)
    return path


def test_a_campaign_reads_its_phases_and_the_one_that_takes_the_rest(tmp_path: Path) -> None:
    scenario = load_scenario(_file(tmp_path, BASE + RAMP + MAIN + LONG))
    assert [p.name for p in scenario.phase] == ["ramp", "main", "long"]
    assert phase_tokens(scenario) == (1e11, 1e12 - 1e11 - 5e10, 5e10)
    assert scenario.phase[2].parallelism is not None and scenario.phase[2].parallelism.cp == 4


def test_phases_without_a_total_each_give_their_tokens(tmp_path: Path) -> None:
    scenario = load_scenario(_file(tmp_path, BASE.replace("tokens = 1e12\n", "") + RAMP + LONG))
    assert phase_tokens(scenario) == (1e11, 5e10)


BAD = [
    (
        "negative tokens",
        RAMP + MAIN.replace("\n", "\ntokens = -5\n", 1),
        "phase 'main': field 'tokens': ",
        "greater than 0",
    ),
    ("zero tokens", RAMP + MAIN + "tokens = 0\n", "phase 'main': field 'tokens'", "greater than 0"),
    ("no GPUs", RAMP + MAIN + "n_gpus = 0\n", "phase 'main': field 'n_gpus'", "greater than or equal to 1"),
    ("no GPU share", RAMP + MAIN + "gpu_fraction = 0.001\n", "phase 'main': field 'gpu_fraction'", "no GPU at all"),
    ("zero share", RAMP + MAIN + "gpu_fraction = 0\n", "phase 'main': field 'gpu_fraction'", "greater than 0"),
    ("more than all GPUs", RAMP + MAIN + "gpu_fraction = 1.5\n", "phase 'main': field 'gpu_fraction'", "less than"),
    ("unknown key", RAMP + MAIN + "tokenz = 5\n", "phase 'main': field 'tokenz': unknown key", "allowed: name"),
    ("duplicate name", RAMP + RAMP.replace("1e11", "2e11"), "phase 'ramp': field 'name'", "phase[0] has that name"),
    ("reserved name", MAIN.replace("main", "total"), "phase 'total': field 'name'", "own row"),
    (
        "batch twice",
        RAMP + MAIN + "gbs = 8\ntokens_per_step = 4e6\n",
        "phase 'main': gbs and tokens_per_step",
        "give one",
    ),
    ("count twice", RAMP + MAIN + "n_gpus = 8\ngpu_fraction = 0.5\n", "phase 'main': n_gpus and gpu_fraction", ""),
    ("layout's batch", RAMP + MAIN + "parallelism = { gbs = 8 }\n", "phase 'main': parallelism.gbs", "own (gbs ="),
    ("bad layout value", RAMP + MAIN + "parallelism = { tp = 0 }\n", "phase 'main': field 'parallelism.tp'", ""),
    ("no name", "[[phase]]\ntokens = 1e12\n", "phase[0]: field 'name'", "required"),
    ("blank name", "[[phase]]\nname = ' '\ntokens = 1e12\n", "phase[0]: field 'name'", "one visible character"),
    ("two without tokens", MAIN + MAIN.replace("main", "more"), "phase 'more': field 'tokens'", "only one phase"),
    ("phase as a table", "[phase]\nname = 'x'\n", "field 'phase'", ""),
    (  # a partial layout no search could complete (it said "phase 'main': no valid layout", naming no file)
        "layout the heads refuse",
        RAMP + MAIN + "parallelism = { tp = 3 }\n",
        "phase 'main': field 'parallelism.tp': TP 3 must divide the 32 attention heads",
        "",
    ),
    (
        "full layout off the GPU count",
        MAIN + "parallelism = { tp = 2, pp = 2, cp = 2, dp = 2, vp = 1, mbs = 1, recompute = 'none', zero = 1 }\n",
        "phase 'main': field 'parallelism.tp': invalid layout TP2 PP2 VP1 CP2 DP2",
        "must equal the 64 GPUs",
    ),
]


@pytest.mark.parametrize(("case", "phases", "where", "what"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_phase_is_one_line_naming_the_phase_and_field(
    tmp_path: Path, case: str, phases: str, where: str, what: str
) -> None:
    path = _file(tmp_path, BASE + phases)
    result = run_cli("predict", str(path))
    assert result.code == 2, (case, result.out)
    assert result.out == ""
    line = result.err.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith(f"error: {path}: ") and where in line and what in line, line


def test_tokens_that_do_not_add_up_to_the_total_name_the_total(tmp_path: Path) -> None:
    path = _file(tmp_path, BASE + RAMP + LONG)  # 1e11 + 5e10 against a total of 1e12
    result = run_cli("predict", str(path))
    assert result.code == 2
    assert "field 'tokens': the phases' tokens add up to 1.5e+11, not the total of 1e+12" in result.err
    flag = run_cli("predict", str(_file(tmp_path, BASE + RAMP + MAIN)), "--tokens", "1e11")
    assert flag.code == 2 and flag.err.startswith("error: --tokens: the total of 1e+11 tokens leaves none for phase")


def test_a_layout_flag_a_phase_inherits_is_named_with_the_phase(tmp_path: Path) -> None:
    result = run_cli("predict", str(_file(tmp_path, BASE + RAMP + MAIN)), "--tp", "3")
    assert result.code == 2 and result.err.startswith("error: --tp: phase 'ramp': TP 3 must divide the 32 attention")


def test_a_phase_without_tokens_needs_a_total(tmp_path: Path) -> None:
    result = run_cli("predict", str(_file(tmp_path, BASE.replace("tokens = 1e12\n", "") + RAMP + MAIN)))
    assert result.code == 2 and "phase 'main': field 'tokens': give the phase's tokens, or the campaign's" in result.err


def test_a_benchmark_is_no_campaign(tmp_path: Path) -> None:
    text = 'gpu = "h100-sxm"\nn_gpus = 64\nbenchmark = "mlperf-llama31-8b"\n' + MAIN.replace(
        "\n", "\ntokens = 1e9\n", 1
    )
    result = run_cli("predict", str(_file(tmp_path, text)))
    assert result.code == 2 and "benchmark and [[phase]] exclude each other" in result.err


def test_python_api_names_the_phase_too(tmp_path: Path) -> None:
    import perfmodel

    with pytest.raises(PerfmodelError, match=r"phase 'main': field 'n_gpus'"):
        perfmodel.load_scenario(_file(tmp_path, BASE + RAMP + MAIN + "n_gpus = 0\n"))


def test_the_fp8_recipe_scales_the_fp8_phases_and_leaves_the_others(tmp_path: Path) -> None:
    """A top-level fp8_recipe is the FP8 phases' (campaign.phase_scenario): a BF16 phase has no FP8 GEMM to scale
    and is priced as without it (it was refused: "'delayed' scales FP8 GEMMs; it needs --precision fp8")."""
    import perfmodel

    phases = RAMP + 'precision = "bf16"\n' + MAIN
    fp8 = BASE.replace("[parallelism]", 'precision = "fp8"\n[parallelism]')
    plain = perfmodel.predict(_file(tmp_path, fp8 + phases))
    delayed = perfmodel.predict(
        _file(tmp_path, fp8.replace("[parallelism]", 'fp8_recipe = "delayed"\n[parallelism]') + phases)
    )
    assert isinstance(plain, perfmodel.Campaign) and isinstance(delayed, perfmodel.Campaign)
    knobs = {name: p.to_dict()["stack_knobs"]["fp8_recipe"] for name, p in delayed.phases.items()}
    assert knobs == {"ramp": None, "main": "delayed"}
    assert delayed.phases["ramp"].step.step_time_s == plain.phases["ramp"].step.step_time_s


def test_an_fp8_recipe_without_an_fp8_phase_is_refused_at_the_field(tmp_path: Path) -> None:
    text = BASE.replace("[parallelism]", 'fp8_recipe = "delayed"\n[parallelism]') + RAMP + MAIN
    result = run_cli("predict", str(path := _file(tmp_path, text)))
    assert result.code == 2 and result.out == ""
    assert result.err.strip() == (
        f"error: {path}: field 'fp8_recipe': 'delayed' scales FP8 GEMMs; no phase runs --precision fp8"
    )
