"""Mistakes a first-time planner made following the README (each test failed on the behaviour it describes)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import CliResult, one_line_error, run_cli


@pytest.mark.parametrize(
    ("command", "typed", "meant"),
    [
        ("predict", "defualt", "'default'"),
        ("predict", "mlperf-405b-h100", "'mlperf-405b-h100-512'"),
        ("sweep", "generation", "'generations'"),
    ],
)
def test_a_mistyped_bundled_name_says_the_one_meant(command: str, typed: str, meant: str) -> None:
    """`predict mlperf-405b-h100` listed the 15 bundled scenarios but not the one meant, where every other id
    (models, GPUs, keys) says "did you mean"."""
    one_line_error(run_cli(command, typed), f"{typed}: no such", f"(did you mean {meant}?)")


@pytest.mark.parametrize(
    ("command", "path", "name"),
    [
        ("predict", "scenarios/mlperf-405b-h100-512.toml", "mlperf-405b-h100-512"),
        ("sweep", "sweeps/generations.toml", "generations"),
    ],
)
def test_a_readme_path_run_from_another_folder_names_the_bundled_file(
    command: str, path: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README's `perfmodel predict scenarios/mlperf-405b-h100-512.toml`, run outside the checkout (an installed
    wheel), said only 'no such scenario file': the bundled file runs by name from any folder."""
    monkeypatch.chdir(tmp_path)
    one_line_error(run_cli(command, path), f"{path}: no such", f"run by name from any folder: '{name}'")


def test_a_mistyped_file_in_a_scenarios_folder_says_the_one_meant(tmp_path: Path) -> None:
    """A missing `.../scenarios/mlperf-405b-gb300-512.toml` (the bundled one ends -nvfp4) names it; a missing file of
    the user's own folder is not matched to a bundled name."""
    (tmp_path / "scenarios").mkdir()
    typed = str(tmp_path / "scenarios" / "mlperf-405b-gb300-512.toml")
    one_line_error(run_cli("predict", typed), "(did you mean 'mlperf-405b-gb300-512-nvfp4'?)")
    err = one_line_error(run_cli("predict", str(tmp_path / "m.toml")), "m.toml: no such scenario file")
    assert "did you mean" not in err and "bundled" not in err


def test_a_whole_runs_tokens_read_as_the_cli_reads_them(tmp_path: Path) -> None:
    """A whole-run CSV row with tokens `15T` (as `--tokens 15T` and a scenario's `tokens = "15T"` take it) was
    refused, "column 'tokens' is '15T', not a number"; it reads as 15e12, and the runs schema accepts it."""
    from perfmodel.outputs.schemas import schema

    jsonschema = pytest.importorskip("jsonschema")

    header = "id,model,gpu,n_gpus,precision,metric,measured,tokens\n"
    results = []
    for tokens in ("15T", "15e12", '"15,000,000,000,000"'):
        path = tmp_path / "runs.csv"
        path.write_text(header + f"w1,llama3.1-8b,h100-sxm,1024,bf16,gpu_hours,1460000,{tokens}\n")
        result = run_cli("validate", "--data", str(path), "--format", "json")
        assert result.code == 0, result.err
        results.append(json.loads(result.out)["rows"])
    assert results[0] == results[1] == results[2]
    row = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 1024, "precision": "bf16", "metric": "gpu_hours"}
    assert jsonschema.Draft202012Validator(schema("runs")).is_valid(row | {"measured": 1460000, "tokens": "15T"})
    path.write_text(header + "w1,llama3.1-8b,h100-sxm,1024,bf16,gpu_hours,1460000,lots\n")
    one_line_error(run_cli("validate", "--data", str(path)), "column 'tokens' is 'lots'", "examples: 15T")


@pytest.mark.parametrize(
    ("header", "said"),
    [
        ("", "empty; a runs CSV's first line names its columns: id, source, model"),
        ("id,model\n", "missing column(s) n_gpus, precision, metric, measured, gpu or system;"),
        ("id,Model,gpu,n_gpus,precision,metric,measured\n", "'Model' is no column (did you mean 'model'?)"),
    ],
)
def test_a_runs_csv_header_error_names_every_missing_column_and_a_real_one(
    header: str, said: str, tmp_path: Path
) -> None:
    """An empty runs CSV said 'missing column(s) n_gpus, precision, metric, measured' (not that it was empty, nor
    its gpu and model); `id,model` left 'gpu or system' out; a header's `Model` got "did you mean 'model or
    benchmark'", which is no column."""
    path = tmp_path / "runs.csv"
    path.write_text(header)
    one_line_error(run_cli("validate", "--data", str(path)), said)


def test_a_purchase_price_is_written_as_a_budget_is() -> None:
    """`--buy --usd-per-system $400k` said "'$400k' is not a number" where `--budget $40M` and `--usd-per-gpu-hour
    $2.50` take the sign and the suffix; `--electricity-usd-per-kwh $0.12` likewise."""

    def tco(*flags: str) -> dict:
        result = run_cli("predict", "--buy", *flags, "--format", "json")
        assert result.code == 0, result.err
        return json.loads(result.out)["tco"]

    plain = tco("--usd-per-system", "400000", "--electricity-usd-per-kwh", "0.12")
    for price in ("400k", "$400,000", "$0.4M"):
        assert tco("--usd-per-system", price, "--electricity-usd-per-kwh", "$0.12") == plain
    one_line_error(run_cli("predict", "--buy", "--usd-per-system", "lots"), "'lots' is not a number (examples: 40M")


def test_a_utilisation_in_percent_is_read_as_a_share() -> None:
    """`--buy --utilisation 80%` said "'80%' is not a number", where `--confidence 90%` is read as 0.9."""
    costs = []
    for share in ("0.7", "70%"):
        result = run_cli("predict", "--buy", "--utilisation", share, "--format", "json")
        assert result.code == 0, result.err
        costs.append(json.loads(result.out)["cost_usd"])
    assert costs[0] == costs[1]
    one_line_error(run_cli("predict", "--buy", "--utilisation", "most"), "'most' is not a share (examples: 0.8, 80%)")
    one_line_error(run_cli("predict", "--buy", "--utilisation", "80"), "--utilisation", "less than or equal to 1")


@pytest.fixture(scope="module")
def short_run() -> CliResult:
    """8B on 100M tokens on 8 H100, run once for the tests that read its lines."""
    return run_cli("predict", "--model", "llama3.1-8b", "--gpus", "8", "--tokens", "100M")


def test_a_short_runs_checkpoint_writes_are_not_read_as_none(short_run: CliResult) -> None:
    """8B on 100M tokens on 8 H100 printed 'Loss: checkpoints ... (+0.2%): 0 writes of 112.4 s': a loss from no
    write. Expected counts read as the interruptions beside them do (losses.expected)."""
    result = short_run
    assert result.code == 0, result.err
    line = next(x for x in result.out.splitlines() if x.startswith("Loss: checkpoints"))
    writes = float(line.split(": ")[-1].split(" writes")[0])
    assert 0.001 < writes < 0.1, line


def test_a_short_runs_gpu_hours_keep_two_significant_digits(short_run: CliResult) -> None:
    """8B on 100M tokens on 8 H100 printed 'GPU-hours 2 (P10 2 to P90 2 ...)' beside a cost of $10.83, and its
    losses '0 GPU-h (+0.2%)': GPU-hours read as expected counts do, whole from 10 on."""
    result = short_run
    assert result.code == 0, result.err
    line = next(x for x in result.out.splitlines() if x.startswith("GPU-hours"))
    point, low = line.split()[1], line.split()[3]
    assert re.fullmatch(r"\d\.\d", point) and re.fullmatch(r"\d\.\d", low) and float(low) < float(point), line
    assert " 0 GPU-h" not in result.out
    big = next(x for x in run_cli("predict").out.splitlines() if x.startswith("GPU-hours"))
    assert re.match(r"GPU-hours +\d,\d{3},\d{3} \(P10 \d,\d{3},\d{3} to", big), big  # whole from 10 on, as before


POOL = "[[pool]]\nname = 'a'\nsystem = 'dgx-h100'\ngpus = 8\n"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (POOL.replace("[[pool]]", "[[pools]]"), "field 'pools': unknown key (did you mean 'pool'?); allowed: pool, "),
        (
            POOL.replace("gpus", "gpu"),
            "field 'pool.0.gpu': unknown key (did you mean 'gpus'?); allowed: name, system, ",
        ),
        (POOL.replace("gpus = 8\n", ""), "field 'pool.0.gpus': required"),
        (POOL.replace("[[pool]]", "[pool]"), "field 'pool': a list of tables, [[pool]], not one [pool] table"),
    ],
)
def test_a_fleet_files_mistyped_key_says_the_key_meant(tmp_path: Path, text: str, says: str) -> None:
    """A fleet file's `[[pools]]` said "field 'pools': Extra inputs are not permitted, not [{'name': ...", a pool's
    `gpu = 8` "field 'pool.0.gpus': Field required, not {...}" (the missing key, not the typo), `[pool]` "Input
    should be a valid tuple": a scenario's unknown key names the key meant and what is allowed."""
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    result = run_cli("plan", "--model", "llama3.1-8b", "--tokens", "1T", "--deadline", "30d", "--fleet", str(path))
    one_line_error(result, f"{path}: {says}")


def test_a_spreadsheets_rows_of_bare_commas_are_skipped(tmp_path: Path) -> None:
    """A runs CSV saved from a spreadsheet ends in rows of bare commas: they were refused, "row 4: column 'metric'
    is ''". They are skipped, a later bad row keeping its own number."""
    header = "id,model,gpu,n_gpus,precision,metric,measured\n"
    row = "u1,llama3.1-8b,h100-sxm,8,fp8,tokens_per_s_per_gpu,12566\n"
    path = tmp_path / "runs.csv"
    path.write_text(header + row + ",,,,,,\n,,,,,,,,,\n")
    result = run_cli("validate", "--data", str(path), "--format", "json")
    assert result.code == 0, result.err
    assert len(json.loads(result.out)["rows"]) == 1
    path.write_text(header + ",,,,,,\n" + row + ",,x,,,,\n")
    one_line_error(run_cli("validate", "--data", str(path)), "row 4: column 'metric' is ''")
    path.write_text(header + ",,,,,,\n")
    one_line_error(run_cli("validate", "--data", str(path)), "no rows")


def test_a_runs_csv_written_with_spaces_after_its_commas_reads_as_without(tmp_path: Path) -> None:
    """`id, model, gpu, ...` (a CSV typed by hand) said "missing column(s) ...; ' model' is no column (did you mean
    'model'?)", where its cells' spaces were already stripped: the header's are too."""
    rows = []
    for sep in (",", ", "):
        path = tmp_path / "runs.csv"
        cells = [["id", "model", "gpu", "n_gpus", "precision", "metric", "measured"],
                 ["u1", "llama3.1-8b", "h100-sxm", "8", "fp8", "tokens_per_s_per_gpu", "12566"]]  # fmt: skip
        path.write_text("".join(sep.join(line) + "\n" for line in cells))
        result = run_cli("validate", "--data", str(path), "--format", "json")
        assert result.code == 0, result.err
        rows.append(json.loads(result.out)["rows"])
    assert rows[0] == rows[1]


def test_a_model_file_may_not_take_a_zoo_models_id_for_other_shapes(tmp_path: Path) -> None:
    """A model file `base = "llama3.1-8b"`, `id = "llama3.1-70b"` priced the 8B with every output's `model` column
    saying llama3.1-70b (a CSV or JSON reader takes it for the 70B). Refused as a hardware file reusing a bundled id
    is; the zoo's own shapes under their own id stay allowed."""
    path = tmp_path / "mine.toml"
    path.write_text('base = "llama3.1-8b"\nid = "llama3.1-70b"\n')
    one_line_error(run_cli("predict", "--model", str(path)), f"{path}: field 'id': 'llama3.1-70b' is the zoo's")
    path.write_text('base = "llama3.1-8b"\nid = "llama3.1-8b"\n')
    assert run_cli("predict", "--model", str(path), "--gpus", "8").code == 0


@pytest.mark.parametrize("key", ["name", "id"])
def test_a_blank_model_name_or_id_is_refused(key: str, tmp_path: Path) -> None:
    """A model file's `name = ""` printed a heading ' on 8 x NVIDIA H100 ...' (`id = ""` an empty `model` column)."""
    path = tmp_path / "mine.toml"
    path.write_text(f'base = "llama3.1-8b"\nlayers = 16\n{key} = " "\n')
    one_line_error(run_cli("predict", "--model", str(path)), f"{path}: field '{key}': must not be blank")


def test_a_hardware_files_own_price_is_not_ranged_by_its_bases(tmp_path: Path) -> None:
    """An accelerator file over h100-sxm quoting $2.00 printed 'Cost $4.16M at $2.00/GPU-h quoted ... (range $6.22M
    to $14.32M at $2.99 to $6.88)': the base's list range, above the quote. A price alone is its own range; a range
    the file gives must hold its price."""
    path = tmp_path / "ours.toml"
    price = 'id = "h100-ours"\nbase = "h100-sxm"\nusd_per_gpu_hour = { value = 2.0, source = "our quote" }\n'
    path.write_text(price)
    result = run_cli("predict", "--hardware", str(path), "--gpu", "h100-ours", "--format", "json")
    assert result.code == 0, result.err
    record = json.loads(result.out)
    assert record["min_usd_per_gpu_hour"] == record["usd_per_gpu_hour"] == record["max_usd_per_gpu_hour"] == 2.0
    above = tmp_path / "above.toml"
    above.write_text(
        price.replace("h100-ours", "h100-above") + 'usd_per_gpu_hour_low = { value = 3.0, source = "ours" }\n'
    )
    err = "field 'usd_per_gpu_hour_low.value': 3 is above usd_per_gpu_hour (2)"
    one_line_error(run_cli("predict", "--hardware", str(above), "--gpu", "h100-above"), err)


def test_two_swapped_letters_get_the_word_meant(tmp_path: Path) -> None:
    """`explain campaign.toml --phase mian` said no phase 'mian' without naming 'main' (difflib finds a swap in a
    four-letter word only 0.75 alike); a changed letter stays no guess ('h300')."""
    from perfmodel.errors import did_you_mean

    assert did_you_mean("mian", ["main", "long"]) == " (did you mean 'main'?)"
    assert did_you_mean("zreo", ["zero", "tp"]) == " (did you mean 'zero'?)"
    assert did_you_mean("h300", ["h100-sxm", "h200-sxm", "h800"]) == ""
    assert did_you_mean("main", ["mian"]) == " (did you mean 'mian'?)" and did_you_mean("ab", ["ba"]) != ""
    assert did_you_mean("abc", ["cba"]) == ""  # two letters apart: not a neighbour swap


def test_a_hardware_files_mistyped_base_says_the_one_meant(tmp_path: Path) -> None:
    """`base = "dgx-h10"` listed every id without the one meant, where `--system dgx-h10` says "did you mean"."""
    path = tmp_path / "ours.toml"
    path.write_text('id = "ours-typo"\nbase = "dgx-h10"\n')
    err = "field 'base': unknown accelerator or system 'dgx-h10' (did you mean 'dgx-h100'?)"
    one_line_error(run_cli("hardware", "list", "--hardware", str(path)), err)


def test_models_show_reads_a_model_file(tmp_path: Path) -> None:
    """`models show mine.toml` said "unknown model 'mine.toml'": a planner's own model (README, Scenario files: a
    model file for --model) had no way to show its parameter count. It reads it as --model does, errors and all."""
    path = tmp_path / "mine.toml"
    path.write_text('base = "llama3.1-8b"\nlayers = 16\n')
    result = run_cli("models", "show", str(path), "--format", "json")
    assert result.code == 0, result.err
    mine, zoo = json.loads(result.out), json.loads(run_cli("models", "show", "llama3.1-8b", "--format", "json").out)
    assert mine["id"] == "llama3.1-8b-custom" and mine["layers"] == 16 and mine["params"] < zoo["params"]
    one_line_error(run_cli("models", "show", str(tmp_path / "none.toml")), "none.toml: no such model file")


def test_lora_modules_without_a_rank_are_refused(tmp_path: Path) -> None:
    """`--lora-modules mlp` without `--lora-rank` priced full training with exit 0 (the modules dropped from every
    output): a key that prices nothing is refused, as a ramp without its start batch is."""
    one_line_error(run_cli("predict", "--model", "llama3.1-8b", "--gpus", "8", "--lora-modules", "mlp"),
                    "--lora-modules: adapters need a rank: set lora_rank too")  # fmt: skip
    path = tmp_path / "s.toml"
    path.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\nlora_modules = "mlp"\n')
    one_line_error(run_cli("predict", str(path)), f"{path}: field 'lora_modules': adapters need a rank")
    assert run_cli("predict", str(path), "--lora-rank", "16").code == 0


def test_a_logs_warm_up_steps_read_as_steps(tmp_path: Path) -> None:
    """A 20-step Megatron log's footer said 'warm-up 1, 2 skipped' (read: a warm-up of 1, and 2 skipped)."""
    line = " [2025-01-01] iteration {0}/ 100 | elapsed time per iteration (ms): 4200.5 | global batch size: 128 |\n"
    path = tmp_path / "run.log"
    path.write_text("".join(line.format(i) for i in range(1, 21)))
    result = run_cli("validate", "--logs", str(path), "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8")
    assert result.code == 0, result.err
    assert "steps 3-20 used (18 of 20 logged), warm-up steps 1, 2 skipped" in result.out, result.out


@pytest.mark.parametrize(
    "args",
    [
        ("compare", "--gpu", "h100", "--gpu", "b200"),
        ("plan", "--gpu", "h100:fp8", "--deadline", "90d"),
    ],
)
def test_a_mistyped_gpu_in_compare_or_plan_says_the_one_meant(args: tuple[str, ...]) -> None:
    """`predict --gpu h100` says "did you mean 'h100-grand-teton' or 'h100-sxm'?"; compare and plan listed the ids
    only (newuser7's report)."""
    one_line_error(run_cli(*args), "unknown accelerator or system 'h100' (did you mean", "'h100-sxm'")


def test_a_price_without_its_dollar_sign_says_so() -> None:
    """`--gpu mi355x:fp8:3` read 'fp8:3' as an unknown precision and said no more (newuser7's report)."""
    one_line_error(run_cli("plan", "--gpu", "mi355x:fp8:3", "--budget", "100M"), "takes a '$': 'mi355x:fp8:$3'")


def test_spare_gpus_of_part_of_a_node_in_a_file_name_the_file(tmp_path: Path) -> None:
    """`[losses] spare_gpus = 4` on a DGX said '--spare-gpus: 4 spare GPUs is 0.5 ...', a flag not given (mends17b's
    brief); the flag is named where it gave the count."""
    path = tmp_path / "s.toml"
    path.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 64\ntokens = 1e12\n[losses]\nspare_gpus = 4\n')
    err = one_line_error(run_cli("predict", str(path)), f"{path}: field 'losses.spare_gpus': 4 spare GPUs is 0.5")
    assert "--spare-gpus" not in err
    one_line_error(run_cli("predict", str(path), "--spare-gpus", "12"), "--spare-gpus: 12 spare GPUs is 1.5")
    assert run_cli("predict", str(path), "--spare-gpus", "8").code == 0


def test_a_compare_row_of_part_of_a_node_names_the_flag_that_gave_its_count() -> None:
    """`--gpu b200@8 --gpu h100-sxm --gpu h100-sxm@12 --gpus 12`: the second row's 12 GPUs are --gpus', but the error
    named `--gpu h100-sxm@12`, the row found by its value (mends17b's brief); each row is named by its own target."""
    tail = ("--model", "llama3.1-8b", "--tokens", "1e12")
    shared = run_cli("compare", "--gpu", "b200@8", "--gpu", "h100-sxm", "--gpu", "h100-sxm@12", "--gpus", "12", *tail)
    one_line_error(shared, "--gpus: 12 GPUs is 1.5 dgx-h100 nodes")
    own = run_cli("compare", "--gpu", "b200@8", "--gpu", "h100-sxm@12", "--gpu", "h100-sxm", "--gpus", "16", *tail)
    one_line_error(own, "--gpu h100-sxm@12: 12 GPUs is 1.5 dgx-h100 nodes")


def test_tokens_below_one_step_in_a_file_name_the_file_and_field(tmp_path: Path) -> None:
    """`tokens = 100` in a scenario said 'tokens (--tokens): 100 is less than one global batch step', blaming a flag
    not given (mends17b's brief): the flag is named where it gave the tokens, else the file's field, or a campaign
    phase's own (its remainder of the total names the top level's), in predict and in each compare row."""
    path = tmp_path / "s.toml"
    path.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\ntokens = 100\n')
    step = "is less than one global batch step, GBS 512 x seq 8,192"
    err = one_line_error(run_cli("predict", str(path)), f"{path}: field 'tokens': 100 {step}")
    assert "--tokens" not in err
    one_line_error(run_cli("compare", str(path), "--gpu", "b200"), f"{path}: field 'tokens': 100 {step}")
    one_line_error(run_cli("predict", str(path), "--tokens", "200"), f"--tokens: 200 {step}")
    campaign = tmp_path / "c.toml"
    top = 'model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 16\ntokens = 1e12\n'
    campaign.write_text(f'{top}[[phase]]\nname = "a"\ntokens = 100\n\n[[phase]]\nname = "b"\n')
    one_line_error(run_cli("predict", str(campaign)), f"{campaign}: phase 'a': field 'tokens': 100 {step}")
    campaign.write_text(f'{top}[[phase]]\nname = "a"\ntokens = 999.998e9\n\n[[phase]]\nname = "b"\n')
    left = "phase 'b' (what the others leave): 2e+06"
    one_line_error(run_cli("predict", str(campaign)), f"{campaign}: field 'tokens': {left} {step}")


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('id = "llama3.1-8b"\nlayers = 16\n', "'llama3.1-8b' is the zoo's Llama 3.1 8B; to change its shapes, start "
                                              "from it with base = 'llama3.1-8b' and give an id of your own"),
        ('base = "llama3.1-8b"\nid = "llama3.1-8b"\nlayers = 16\n', "'llama3.1-8b' is the zoo's Llama 3.1 8B, whose "
                                                                    "shapes these are not"),
        ('base = "llama3.1-8b"\nid = "Llama3.1-8B"\nlayers = 16\n', "'llama3.1-8b' is the zoo's Llama 3.1 8B, whose "
                                                                    "shapes these are not"),
        ('id = "LLAMA3.1-8B"\nlayers = 16\n', "'llama3.1-8b' is the zoo's Llama 3.1 8B; to change its shapes"),
    ],
)  # fmt: skip
def test_a_model_tables_zoo_id_is_not_overridden_by_its_shapes(table: str, says: str, tmp_path: Path) -> None:
    """A scenario's `[model]` table `id = "llama3.1-8b"`, `layers = 16` said "field 'model.hidden': Field required",
    and over `base = "llama3.1-8b"` priced 16 layers under the zoo's id in every output, silently, where a model file
    doing so was refused. Shapes never override a zoo id (README, Scenario files): the table names its own."""
    path = tmp_path / "s.toml"
    head = 'gpu = "h100-sxm"\nn_gpus = 8\n[model]\n'
    path.write_text(head + table)
    one_line_error(run_cli("predict", str(path)), f"{path}: field 'model.id': {says}")
    path.write_text(head + 'base = "llama3.1-8b"\nid = "llama3.1-8b"\n')  # the zoo's own shapes under its own id
    assert run_cli("predict", str(path)).code == 0


OWNING_FLAGS = [
    ("--usd-per-system", "400k"),
    ("--amortisation-years", "5"),
    ("--utilisation", "70%"),
    ("--electricity-usd-per-kwh", "0.12"),
    ("--facility-usd-per-kw-month", "150"),
]


@pytest.mark.parametrize(("flag", "value"), OWNING_FLAGS)
def test_a_purchase_flag_without_buy_is_refused(flag: str, value: str) -> None:
    """`predict --usd-per-system 400k` (no `--buy`) priced renting and said nothing of the price given; each
    purchase flag prices owning only, and its help says so, with where it counts without --buy (an export; a fleet's
    offers to buy, which carry their own price)."""
    one_line_error(run_cli("predict", flag, value), f"{flag}: prices owning the systems; it needs --buy (renting")
    helped = " ".join(run_cli("predict", "--help").out.split())
    fleet = "" if flag == "--usd-per-system" else " or for plan --fleet's offers to buy"
    assert re.search(rf"{flag} [A-Z ]+ With --buy, or in export{fleet}: ", helped), helped


@pytest.mark.parametrize(
    "command",
    [
        ("compare", "--gpu", "h100-sxm", "--gpu", "b200"),
        ("search",),
        ("plan", "--gpu", "h100-sxm", "--deadline", "90d"),
        ("whatif", "--set", "nvlink_gbps=x2"),
        ("sensitivity",),
        ("explain",),
        ("launch", "--stack", "megatron-lm"),
    ],
)
def test_every_command_refuses_a_purchase_flag_without_buy(command: tuple[str, ...]) -> None:
    """Every command taking the scenario's flags refuses `--utilisation` without `--buy` alike."""
    one_line_error(
        run_cli(*command, "--utilisation", "0.7"), "--utilisation: prices owning the systems; it needs --buy"
    )


def test_a_files_purchase_field_without_buy_is_refused(tmp_path: Path) -> None:
    """A scenario's `[cost] utilisation = 0.7` without `mode = "buy"` priced renting and said nothing, as the flag
    did; with `--buy` it prices owning."""
    path = tmp_path / "s.toml"
    path.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\n[cost]\nutilisation = 0.7\n')
    err = f"{path}: field 'cost.utilisation': prices owning the systems; it needs [cost] mode = \"buy\" (or --buy)"
    one_line_error(run_cli("predict", str(path)), err)
    owned = run_cli("predict", str(path), "--buy", "--format", "json")
    assert owned.code == 0, owned.err
    assert json.loads(owned.out)["tco"]["utilisation"] == 0.7


def test_a_sweeps_purchase_key_without_buy_is_refused(tmp_path: Path) -> None:
    """A sweep whose base file has `[cost] utilisation = 0.5`, or whose [sweep.set] does, and renting ran and
    dropped it (sweeps skipped the check predict makes): each point is checked, naming the key; with
    `cost.mode = "buy"` it prices owning."""
    base, sweep = tmp_path / "base.toml", tmp_path / "sweep.toml"
    base.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\ntokens = 1e12\n[cost]\nutilisation = 0.5\n')
    sweep.write_text('[sweep]\nbase = "base.toml"\nprecisions = ["bf16"]\n')
    err = f"{sweep}: {base}: field 'cost.utilisation': prices owning the systems; it needs cost.mode = \"buy\""
    one_line_error(run_cli("sweep", str(sweep)), err)
    base.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\ntokens = 1e12\n')
    sweep.write_text('[sweep]\nbase = "base.toml"\nprecisions = ["bf16"]\n[sweep.set]\ncost = {utilisation = 0.5}\n')
    one_line_error(run_cli("sweep", str(sweep)), f"{sweep}: field 'sweep.set.cost.utilisation': prices owning")
    sweep.write_text('[sweep]\nbase = "base.toml"\n[sweep.set]\ncost = {utilisation = 0.5, mode = "buy"}\n')
    assert run_cli("sweep", str(sweep)).code == 0


def test_a_purchase_flag_counts_where_owning_is_priced(tmp_path: Path) -> None:
    """A scenario file's `[cost] mode = "buy"` takes the flags without `--buy`; an export prices owning beside
    renting (the workbook's ownership alternative), so it takes them renting too."""
    path = tmp_path / "s.toml"
    path.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\ntokens = 1e12\n[cost]\nmode = "buy"\n')
    owned = run_cli("predict", str(path), "--utilisation", "0.5", "--format", "json")
    assert owned.code == 0, owned.err
    assert json.loads(owned.out)["tco"]["utilisation"] == 0.5
    path.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\ntokens = 1e12\n')
    out = tmp_path / "x.json"
    exported = run_cli("export", "predict", str(path), "--utilisation", "0.5", "--out", str(out))
    assert exported.code == 0, exported.err
    assert json.loads(out.read_text())["rows"][0]["utilisation"] == 0.5


def test_an_exports_electricity_price_is_the_one_given(tmp_path: Path) -> None:
    """`export predict --electricity-usd-per-kwh 0.2` was taken and dropped (the export priced electricity, owned
    and rented, at its own `--usd-per-kwh`, default 0.08): the scenario's price is the export's unless
    `--usd-per-kwh` gives one; two that differ are refused."""
    path, out = tmp_path / "s.toml", tmp_path / "x.json"
    path.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\ntokens = 1e12\n')
    rows = {}
    for price in ("0.08", "0.2"):
        args = ("--electricity-usd-per-kwh", price, "--out", str(out), "--force")
        found = run_cli("export", "predict", str(path), *args)
        assert found.code == 0, found.err
        rows[price] = json.loads(out.read_text())["rows"][0]
    assert rows["0.2"]["usd_per_kwh"] == 0.2
    assert rows["0.2"]["owned_usd_per_gpu_hour"] > rows["0.08"]["owned_usd_per_gpu_hour"]
    both = ("--electricity-usd-per-kwh", "0.2", "--usd-per-kwh", "0.1", "--out", str(out), "--force")
    refused = run_cli("export", "predict", str(path), *both)
    one_line_error(refused, "--usd-per-kwh: the export prices electricity at one")


def test_a_precision_in_capitals_reads_in_a_file_as_on_the_command_line(tmp_path: Path) -> None:
    """A file's `precision = "FP8"` (as the tables print it) said "must be 'bf16', 'fp8', ..." where `--precision
    FP8` ran: a scenario, a campaign phase and a sweep's list take any case, as the flag does; a precision of no
    case is refused by both, naming the allowed ones."""
    path = tmp_path / "s.toml"
    top = 'model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\n'
    path.write_text(top + 'precision = "FP8"\n')
    by_file = run_cli("predict", str(path), "--format", "json")
    assert by_file.code == 0, by_file.err
    assert json.loads(by_file.out) == json.loads(
        run_cli("predict", str(path), "--precision", "Fp8", "--format", "json").out
    )
    assert json.loads(by_file.out)["precision"] == "fp8"
    path.write_text(top + 'tokens = 1e12\n[[phase]]\nname = "a"\nprecision = "FP8"\n')
    assert run_cli("predict", str(path)).code == 0
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('[sweep]\nmodels = ["llama3.1-8b"]\ngpus = ["h100-sxm"]\nprecisions = ["FP8"]\nn_gpus = [8]\n')
    assert run_cli("sweep", str(sweep)).code == 0
    path.write_text(top + 'precision = "FP9"\n')
    allowed = "must be 'bf16', 'fp8', 'mxfp8', 'nvfp4' or 'mxfp4'"
    one_line_error(run_cli("predict", str(path)), f"{path}: field 'precision': {allowed}")
    one_line_error(run_cli("predict", "--precision", "FP9"), "'--precision'", "'bf16', 'fp8', 'mxfp8', 'nvfp4'")


def test_a_sensitivity_step_in_percent_is_read_as_a_share() -> None:
    """`sensitivity --step 10%` said "'10%' is not a number", where `--utilisation 80%` and `--confidence 90%` read
    as shares: 10% is 0.10, and garbage names the flag and both forms."""
    layout = ("--model", "llama3.1-8b", "--gpus", "8", "--tp", "1", "--pp", "1", "--cp", "1", "--vp", "1", "--mbs", "1")
    steps = []
    for step in ("0.1", "10%"):
        result = run_cli("sensitivity", *layout, "--recompute", "none", "--step", step, "--format", "json")
        assert result.code == 0, result.err
        steps.append(json.loads(result.out))
    assert steps[0] == steps[1] and steps[0]["step"] == 0.1
    one_line_error(
        run_cli("sensitivity", "--step", "ten"), "'--step': 'ten' is not a relative change (examples: 0.05, 5%)"
    )


@pytest.mark.parametrize(
    ("step", "why"),
    [
        ("150%", "a larger one (each parameter x2 and /2 or more) measures no local elasticity"),
        ("0.001%", "smaller steps vanish in floating-point rounding"),
        ("-5%", "a step is a positive number"),
    ],
)
def test_a_sensitivity_step_out_of_range_echoes_what_was_typed(step: str, why: str) -> None:
    """`--step 150%` said "--step 1.5: ...; smaller steps vanish in floating-point rounding": the flag as typed,
    and the reason that fits the side it is out on."""
    one_line_error(run_cli("sensitivity", "--step", step), f"--step {step}: must be from 0.0001 to below 1", why)


def test_a_short_runs_small_counts_print_without_an_exponent() -> None:
    """8B on 10M tokens on 8 H100 printed 'With failures 1.3 min, 3.9e-06 interruptions' and 'Loss: failures
    0.00028 GPU-h (+0.2%): 3.5e-06 unexpected interruptions' (read: 3.9 interruptions). Numbers print in plain
    decimals (numbers.plain), an expected count below 0.001 as '<0.001'."""
    from perfmodel.inputs.numbers import plain
    from perfmodel.outputs.report import parameter_figure

    result = run_cli("predict", "--model", "llama3.1-8b", "--gpus", "8", "--tokens", "10M")
    assert result.code == 0, result.err
    assert not re.search(r"\de[-+]\d", result.out), result.out
    assert "<0.001 interruptions (<0.001 unexpected)" in result.out
    assert (plain(3.5e-5), plain(3.5e-5, floor=0.001), plain(1234, 3), plain(0.5), plain(2.0)) == (
        "0.000035", "<0.001", "1,230", "0.5", "2")  # fmt: skip
    assert parameter_figure(2.1e-5) == "0.000021"


def test_a_rate_per_second_is_no_count_of_seconds() -> None:
    """`plot --from`'s `tokens_per_s: "fast"` was told "a number of seconds" (the name ends in _s), a grid's
    `gco2_per_kwh` "US dollars per kWh": the longer ending names the unit."""
    from perfmodel.inputs.numbers import unquoted

    assert "of units per second (the _per_s in its name)" in str(unquoted("tokens_per_s", "float_type", "fast"))
    assert "of US dollars per kWh" in str(unquoted("cost.usd_per_kwh", "float_type", "12c"))


@pytest.mark.parametrize(
    ("kind", "text", "says"),
    [
        ("scenario", '[goodput]\nrestart_s = "10min"\n', "field 'goodput.restart_s': must be a number of seconds (the "
                                                        "_s in its name), unquoted and without a unit, not '10min'"),
        ("scenario", 'n_gpus = "8 GPUs"\n', "field 'n_gpus': must be a whole number, unquoted and without a unit"),
        ("scenario", '[cost]\ngrid_gco2_per_kwh = "400g"\n', "field 'cost.grid_gco2_per_kwh': must be a number of "
                                                               "grams CO2e per kWh (the gco2_per_kwh in its name)"),
        ("fleet", '[[offer]]\nname = "a"\nsystem = "dgx-h100"\nusd_per_gpu_hour = 2.5\nlead_time_days = "2w"\n',
         "field 'offer.0.lead_time_days': must be a number of days (the _days in its name), unquoted"),
        ("fleet", '[[pool]]\nname = "a"\nsystem = "dgx-h100"\ngpus = "64 GPUs"\n',
         "field 'pool.0.gpus': must be a whole number, unquoted and without a unit, not '64 GPUs'"),
        ("model", 'base = "llama3.1-8b"\nlayers = "16"\n', "field 'layers': must be a whole number, unquoted"),
    ],
)  # fmt: skip
def test_a_number_written_as_text_says_unquoted_and_its_unit(kind: str, text: str, says: str, tmp_path: Path) -> None:
    """A scenario's `restart_s = "10min"` said "Input should be a valid number (got '10min')", a fleet file's
    `lead_time_days = "2w"` "Input should be a valid number, unable to parse string as a number, not '2w'": neither
    said that TOML reads a quoted value as text, nor the unit the field's name gives."""
    path = tmp_path / f"{kind}.toml"
    path.write_text(('model = "llama3.1-8b"\ngpu = "h100-sxm"\n' if kind == "scenario" else "") + text)
    fleet = ("plan", "--model", "llama3.1-8b", "--tokens", "1T", "--deadline", "30d", "--fleet", str(path))
    args = {
        "scenario": ("predict", str(path)),
        "model": ("predict", "--model", str(path), "--gpus", "8"),
        "fleet": fleet,
    }
    one_line_error(run_cli(*args[kind]), f"{path}: {says}")


def test_plan_of_a_file_without_tokens_names_the_file(tmp_path: Path) -> None:
    """`plan s.toml --deadline 30d` of a file without `tokens` said 'plan needs the work to train: --tokens (e.g. 15T)
    or --benchmark', as if only a flag could give it: the file and its field are named too."""
    path = tmp_path / "s.toml"
    path.write_text('model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\n')
    err = f'{path}: no work to train: set tokens (e.g. 15e12 or "15T") or benchmark in it, or pass --tokens (e.g.'
    one_line_error(run_cli("plan", str(path), "--deadline", "30d"), err)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"model": "llama3.1-8b", "gpu": "h100-sxm"}', "; this is JSON: an input file is TOML, key = value lines"),
        ('model = "llama3.1-8b"\ngpu = "h100-sxm"\n[model]\nbase = "llama3.1-8b"\n',
         "Cannot overwrite a value (at line 3, column 7); a key is set twice, or beside a table of its name"),
    ],
)  # fmt: skip
def test_a_scenario_that_is_no_toml_says_what_it_is(text: str, says: str, tmp_path: Path) -> None:
    """A scenario written as JSON (the HTTP API's body) said only 'not valid TOML: Invalid statement (at line 1,
    column 1)'; `model = ...` beside a `[model]` table only 'Cannot overwrite a value'."""
    path = tmp_path / "s.toml"
    path.write_text(text)
    one_line_error(run_cli("predict", str(path)), f"{path}: not valid TOML: ", says)
