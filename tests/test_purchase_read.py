"""The purchase options a question reads renting (planning.request.PurchaseRead) are passed down from the question:
an export reads every one, a fleet plan what its offers to buy read, any other question none. They were a context
variable that export and the fleet plan set around the question, so that the same call to load_request took
`--utilisation` or refused it depending on who called it, invisibly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import one_line_error, run_cli

import perfmodel
from perfmodel.errors import PerfmodelError
from perfmodel.planning.request import EXPORT_READ, FLEET_OWNING_KEYS, RENTING, PurchaseRead, load_request

PACKAGE = Path(perfmodel.__file__).parent
SCENARIO = 'model = "llama3.1-8b"\ngpu = "h100-sxm"\nn_gpus = 8\ntokens = 1e11\n'
NO_BUY = '[[offer]]\nname = "neocloud"\nsystem = "dgx-h100"\nusd_per_gpu_hour = 2.5\nmax_gpus = 1024\n'
"""A fleet that rents only: it reads no purchase option."""
BUY = '[[offer]]\nname = "vendor"\nsystem = "dgx-h100"\nusd_per_system = 400000\nmax_gpus = 64\n'
"""A fleet with an offer to buy: it reads the purchase options but the price (the offer's own)."""


def test_load_request_reads_the_purchase_options_it_is_told() -> None:
    """The same call refuses `--utilisation` renting, or takes it where the question says it reads it: no state
    outside the call decides."""
    options = {"gpu": "h100-sxm", "utilisation": 0.7}
    origins = {"utilisation": "--utilisation"}
    with pytest.raises(PerfmodelError, match="--utilisation: prices owning the systems; it needs --buy"):
        load_request(None, options, origins)
    with pytest.raises(PerfmodelError, match="--utilisation: prices owning"):
        load_request(None, options, origins, purchase_read=RENTING)
    assert load_request(None, options, origins, purchase_read=EXPORT_READ).cost.utilisation == 0.7
    fleet = PurchaseRead(frozenset(FLEET_OWNING_KEYS))
    assert load_request(None, options, origins, purchase_read=fleet).cost.utilisation == 0.7
    with pytest.raises(PerfmodelError, match="--usd-per-system: prices owning"):
        load_request(None, options | {"usd_per_system": 1e6}, origins | {"usd_per_system": "--usd-per-system"},
                     purchase_read=fleet)  # fmt: skip


def test_no_module_keeps_state_in_a_context_variable() -> None:
    """A question's behaviour depends on its arguments alone: no module of the package reads a context variable."""
    users = [
        str(path.relative_to(PACKAGE)) for path in sorted(PACKAGE.rglob("*.py")) if "contextvars" in path.read_text()
    ]
    assert users == []


@pytest.mark.parametrize(
    "command",
    [
        ("predict",),
        ("compare", "--gpu", "h100-sxm", "--gpu", "h200-sxm"),
        ("search", "--top", "1"),
        ("plan", "--gpu", "h100-sxm", "--deadline", "30d", "-q"),
    ],
)
def test_every_export_reads_a_purchase_flag_renting(tmp_path: Path, command: tuple[str, ...]) -> None:
    """Each export sub-command prices owning beside renting, so it takes `--utilisation` without `--buy` (and uses
    it: the row's ownership columns), where the command itself refuses it."""
    path, out = tmp_path / "s.toml", tmp_path / "x.json"
    path.write_text(SCENARIO)
    args = (*command[1:], "--utilisation", "0.5")
    if command[0] == "plan":  # plan finds the GPU count itself
        path.write_text(SCENARIO.replace("n_gpus = 8\n", ""))
    one_line_error(run_cli(command[0], str(path), *args), "--utilisation: prices owning the systems; it needs --buy")
    exported = run_cli("export", command[0], str(path), *args, "--out", str(out))
    assert exported.code == 0, exported.err
    assert {row["utilisation"] for row in json.loads(out.read_text())["rows"]} == {0.5}


def test_an_exported_sweep_reads_a_base_files_purchase_key_renting(tmp_path: Path) -> None:
    """`export sweep` prices owning beside renting too: its base file's `[cost] utilisation` counts, where
    `perfmodel sweep` refuses it."""
    base, sweep, out = tmp_path / "base.toml", tmp_path / "sweep.toml", tmp_path / "x.json"
    base.write_text(SCENARIO + "[cost]\nutilisation = 0.5\n")
    sweep.write_text('[sweep]\nbase = "base.toml"\nprecisions = ["bf16"]\n')
    one_line_error(run_cli("sweep", str(sweep)), f"{base}: field 'cost.utilisation': prices owning")
    exported = run_cli("export", "sweep", str(sweep), "--out", str(out))
    assert exported.code == 0, exported.err
    assert [row["utilisation"] for row in json.loads(out.read_text())["rows"]] == [0.5]


def test_an_exported_fleet_plan_reads_what_the_fleet_reads(tmp_path: Path) -> None:
    """`export plan --fleet` reads the purchase flags its fleet's offers to buy read, not every one an export
    prices: a fleet without an offer to buy refuses `--utilisation` as `plan --fleet` does."""
    fleet, out = tmp_path / "fleet.toml", tmp_path / "x.json"
    fleet.write_text(NO_BUY)
    args = ("--fleet", str(fleet), "--model", "llama3.1-8b", "--tokens", "100B", "--deadline", "3d", "-q")
    says = f"--utilisation: prices owning the systems; {fleet} has no offer to buy"
    one_line_error(run_cli("plan", *args, "--utilisation", "0.5"), says)
    one_line_error(run_cli("export", "plan", *args, "--utilisation", "0.5", "--out", str(out)), says)


@pytest.mark.parametrize(
    ("fleet", "flag", "field", "says"),
    [
        (NO_BUY, ("--utilisation", "0.5"), "utilisation = 0.5",
         "prices owning the systems; {fleet} has no offer to buy (an [[offer]] with usd_per_system): drop it"),
        (NO_BUY, ("--usd-per-system", "1M"), "usd_per_system = 1e6",
         "prices owning the systems; {fleet} has no offer to buy (an [[offer]] with usd_per_system): drop it"),
        (BUY, ("--usd-per-system", "1M"), "usd_per_system = 1e6",
         "a fleet's offers to buy carry their own price: set it in {fleet}, field 'offer.0.usd_per_system'"),
    ],
    ids=["no-buy-utilisation", "no-buy-price", "buy-price"],
)  # fmt: skip
def test_a_fleet_refuses_a_scenario_files_purchase_key_as_it_refuses_the_flag(
    tmp_path: Path, fleet: str, flag: tuple[str, str], field: str, says: str
) -> None:
    """`plan --fleet` refused `--utilisation` saying the fleet has no offer to buy, but the scenario file's
    `[cost] utilisation` with the general 'needs [cost] mode = "buy" (or --buy)', which a fleet plan does not
    price with: the file's key now says what the flag says, naming the file and its field (a job's own scenario
    file alike, and from Python)."""
    path, scenario = tmp_path / "fleet.toml", tmp_path / "s.toml"
    path.write_text(fleet)
    scenario.write_text(f'model = "llama3.1-8b"\ntokens = 1e11\n[cost]\n{field}\n')
    why = says.format(fleet=path)
    name = field.split()[0]
    goal = ("--deadline", "3d", "-q")
    one_line_error(run_cli("plan", "--fleet", str(path), "--model", "llama3.1-8b", "--tokens", "100B", *goal, *flag),
                   f"error: {flag[0]}: {why}")  # fmt: skip
    one_line_error(run_cli("plan", str(scenario), "--fleet", str(path), *goal),
                   f"error: {scenario}: field 'cost.{name}': {why}")  # fmt: skip
    with pytest.raises(PerfmodelError) as caught:
        perfmodel.plan_fleet(path, scenario, deadline_s=3 * 86400)
    assert str(caught.value) == f"{scenario}: field 'cost.{name}': {why}"
    path.write_text(fleet + '[[job]]\nname = "a"\nscenario = "s.toml"\ndeadline_days = 3\n')
    one_line_error(run_cli("plan", "--fleet", str(path), "-q"), f"error: {scenario}: field 'cost.{name}': {why}")


@pytest.mark.parametrize("fleet", [NO_BUY, BUY], ids=["no-buy", "buy"])
def test_a_fleet_refuses_a_buying_scenario_files_price_and_the_buy_flag(tmp_path: Path, fleet: str) -> None:
    """A scenario file with `[cost] mode = "buy"` and `usd_per_system` went through `plan --fleet` silently, its
    price unread, where `--usd-per-system` is refused: the file's key is refused in the flag's words whatever the
    file's mode; and `--buy`, which a fleet priced nothing with, is refused naming where a fleet buys instead."""
    path, scenario = tmp_path / "fleet.toml", tmp_path / "s.toml"
    path.write_text(fleet)
    scenario.write_text('model = "llama3.1-8b"\ntokens = 1e11\n[cost]\nmode = "buy"\nusd_per_system = 1e6\n')
    goal = ("--deadline", "3d", "-q")
    flag = run_cli("plan", "--fleet", str(path), "--model", "llama3.1-8b", "--tokens", "100B", *goal,
                   "--usd-per-system", "1M")  # fmt: skip
    why = flag.err.strip().removeprefix("error: --usd-per-system: ")
    one_line_error(run_cli("plan", str(scenario), "--fleet", str(path), *goal),
                   f"error: {scenario}: field 'cost.usd_per_system': {why}")  # fmt: skip
    says = f"--buy: a fleet buys through its offers to buy (an [[offer]] with usd_per_system in {path}"
    one_line_error(run_cli("plan", "--fleet", str(path), "--model", "llama3.1-8b", "--tokens", "100B", *goal, "--buy"),
                   says)  # fmt: skip
    with pytest.raises(PerfmodelError, match=r"^buy=True: a fleet buys through its offers"):
        perfmodel.plan_fleet(path, None, deadline_s=3 * 86400, model="llama3.1-8b", tokens=1e11, buy=True)
