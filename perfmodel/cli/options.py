"""Option types and the scenario flags shared by every command that takes a scenario."""

from __future__ import annotations

import contextlib
import json
import math
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast, overload

import click
from click.core import ParameterSource

from perfmodel.errors import PerfmodelError, did_you_mean, visible
from perfmodel.inputs import FP8_RECIPE_NAMES, PRECISIONS
from perfmodel.inputs.counts import EXAMPLES, SUFFIXES, count, digits_hint


class Choice(click.Choice):
    """click's Choice, whose refusal adds the did-you-mean that ids and keys get (errors.did_you_mean): `--stack
    megatorn` names 'megatron-lm'. A few closed choices make a looser match (70% alike) a safe guess, where among
    hundreds of model ids it would not be."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            hint = did_you_mean(str(value), [str(choice) for choice in self.choices], cutoff=CHOICE_CUTOFF)
            if not hint:
                raise
            self.fail(f"{exc.message.rstrip('.')}{hint}", param, ctx)


CHOICE_CUTOFF = 0.7
"""How alike a mistyped choice must be to name its nearest (difflib's ratio): 'megatorn' is 0.74 of 'megatron-lm'."""
FORMATS = Choice(["table", "json", "csv"])
PRECISION = Choice(PRECISIONS, case_sensitive=False)
"""--precision in any case: the tables print FP8 and NVFP4, and what they print is typed back (a scenario file's
`precision` too: scenario_check._precision_in_any_case)."""
Command = TypeVar("Command", bound=Callable[..., Any])
"""A click command function, as option decorators take and return it."""
Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]
"""A click option (or argument) decorator."""


class FilePath(click.Path):
    """click's Path, with a NUL byte in the name refused as a usage error (click's own stat would raise)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if "\x00" in str(value):
            self.fail("a file name cannot contain a NUL byte", param, ctx)
        return super().convert(value, param, ctx)


class ScenarioPath(FilePath):
    """The SCENARIO argument. A count's suffix alone that names no file is a count split by a space (`--tokens 15 T`:
    the shell passes T as the SCENARIO): refused saying that a count takes no space, naming the flag that took the
    number where one did, not as no scenario file named T."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(value)
        if text.upper() in SUFFIXES and not Path(text).exists():
            split = [(p.opts[0], ctx.params[p.name]) for p in ctx.command.params if _split_count(p, ctx)] if ctx else []
            written = f"e.g. --tokens 15{text}"
            if split:
                flag, number = split[-1]
                written = f"{flag} {number:g}{text}, not {flag} {number:g} {text}"
            self.fail(
                f"'{text}' is a count's suffix, not a scenario file: a count takes no space ({written})", param, ctx
            )
        return super().convert(value, param, ctx)


def _split_count(param: click.Parameter, ctx: click.Context) -> bool:
    """Whether `param` is a count flag (Count) given on the command line before the SCENARIO argument."""
    given = param.name is not None and ctx.params.get(param.name) is not None
    return (
        given and isinstance(param.type, Count) and ctx.get_parameter_source(param.name) == ParameterSource.COMMANDLINE
    )


class Whole(click.IntRange):
    """click's IntRange, saying what a fractional value should have been: click's "'1.5' is not a valid integer
    range" named neither a whole number nor what it counts."""

    def __init__(self, unit: str, min: int | None = None, max: int | None = None) -> None:
        super().__init__(min, max)
        self.unit = unit

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, int):
            try:
                int(value)
            except (TypeError, ValueError):
                self.fail(f"'{value}' is not a whole number of {self.unit}{_in_digits(value, param)}", param, ctx)
        return super().convert(value, param, ctx)


def _in_digits(value: Any, param: click.Parameter | None) -> str:
    """How to write a suffixed or separated count (`--seq-len 8k`, `--gpus 1,024`) that a whole-number flag refuses
    (counts.digits_hint), as inputs.files hints for a scenario file's `seq_len = 8k`: '' for other text."""
    text = str(value).strip()
    flag = f"{param.opts[0]} " if param is not None and param.opts else ""
    why = "a suffix is read only where a flag takes a count (--tokens 15T); " if text[-1:].isalpha() else ""
    return digits_hint(text, flag, why)


class Count(click.ParamType):
    """A positive finite number, with an optional K/M/B/T suffix: 15T, 2.5e12, 1,000,000."""

    name = "count"
    examples = EXAMPLES

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            number = float(value)
        else:
            try:
                number = count(self.digits(str(value)))
            except ValueError:
                self.fail(f"'{value}' is not a number (examples: {self.examples})", param, ctx)
        if not math.isfinite(number) or number <= 0:
            self.fail(f"'{value}' must be a positive finite number", param, ctx)
        return number

    def digits(self, text: str) -> str:
        return text


class _Dollars:
    """A leading `$` allowed before a number of USD (a budget or a price is written with its sign), as --gpu
    ID:$PRICE takes it."""

    def digits(self, value: Any) -> str:
        return str(value).strip().removeprefix("$")


class Usd(_Dollars, Count):
    """An amount of USD as a count: 40M, 40e6, $40M."""

    name = "usd"
    examples = "40M, 40e6, $40M"


class PositiveFloat(click.ParamType):
    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            number = float(self.digits(value))
        except (TypeError, ValueError):
            self.fail(f"'{value}' is not a number", param, ctx)
        if not math.isfinite(number) or number <= 0:
            self.fail(f"'{value}' must be a positive finite number", param, ctx)
        return number

    def digits(self, value: Any) -> Any:
        return value


class Share(click.ParamType):
    """A share of one as people write it: 0.8 or 80% (the range is the option's record to check, naming the flag)."""

    name = "share"
    examples = "0.8, 80%"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        text = str(value).strip()
        percent = text.endswith("%")
        try:
            number = float(text.removesuffix("%"))
        except ValueError:
            self.fail(f"'{value}' is not a {self.name} (examples: {self.examples})", param, ctx)
        return number / 100 if percent else number


class Probability(Share):
    """A probability: 0.9 or 90% (planning.confidence checks the range)."""

    name = "probability"
    examples = "0.9, 90%"


class RelativeChange(Share):
    """A relative change: 0.05 or 5% (sensitivity's step; planning.sensitivity checks the range)."""

    name = "relative change"
    examples = "0.05, 5%"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        """The step, its range checked here, where the refusal can echo what was typed (`--step 150%`)."""
        from perfmodel.planning.sensitivity import check_step

        number = super().convert(value, param, ctx)
        check_step(number, f"--step {str(value).strip()}")
        return number


class Price(_Dollars, PositiveFloat):
    """USD per GPU-hour: 2.99, $2.99."""

    name = "usd"


class PriceRange(click.ParamType):
    """A price stated as a triangular distribution: LOW:MODE:HIGH, USD per GPU-hour (their order is the scenario's
    check, so that a file and the flag say the same)."""

    name = "LOW:MODE:HIGH"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[float, ...]:
        if isinstance(value, tuple):
            return value
        parts = str(value).split(":")
        try:
            numbers = tuple(float(part) for part in parts)
        except ValueError:
            numbers = ()
        if len(numbers) != 3:
            self.fail(f"'{value}': allowed three numbers LOW:MODE:HIGH, USD per GPU-hour (e.g. 2:2.5:4)", param, ctx)
        return numbers


class GridIntensity(click.ParamType):
    """A grid's carbon intensity: gCO2e per kWh, or a named grid (inputs/grids.py)."""

    name = "G|REGION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from perfmodel.errors import PerfmodelError
        from perfmodel.inputs.grids import intensity

        try:
            return value if isinstance(value, float) else intensity(str(value))
        except PerfmodelError as exc:
            self.fail(str(exc).removeprefix("--grid-gco2-per-kwh "), param, ctx)


class CountList(click.ParamType):
    """GPU counts: one number or a comma-separated list (256,512,1024), at most MAX_GPU_COUNTS of them."""

    name = "N[,N...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[int]:
        from perfmodel.errors import PerfmodelError
        from perfmodel.planning.request import gpu_counts

        if isinstance(value, list):
            return value
        counts: list[int] = []
        parts = [part.strip() for part in str(value).split(",")]
        for index, part in enumerate(parts):
            if len(part) > 1 and part.startswith("0") and part.isdigit():  # '1,024': a thousands separator
                meant = f"{parts[index - 1]}{part}" if index else str(int(part))
                self.fail(
                    f"'{part}' in '{value}' begins with 0: a comma separates GPU counts (256,512,1024); write "
                    f"{meant} for {int(meant):,} GPUs",
                    param,
                    ctx,
                )
            try:
                counts.append(int(part))
            except ValueError:
                self.fail(f"'{part}' in '{value}' is not a whole number (example: 256,512,1024)", param, ctx)
        try:
            return gpu_counts(counts)
        except PerfmodelError as exc:
            self.fail(str(exc), param, ctx)


CALIBRATION_HELP = "Calibration JSON (perfmodel calibrate); 'none' for the uncalibrated defaults."


def _use_hardware(ctx: click.Context, param: click.Parameter, paths: tuple[str, ...]) -> None:
    if not paths:  # the hardware module (and pydantic with it) is imported when the command needs it, not here
        return
    from perfmodel.inputs.hardware import add_catalogue

    for path in paths:
        add_catalogue(path)


def complete_ids(
    kinds: tuple[str, ...], files: bool = False
) -> Callable[[click.Context, click.Parameter, str], list[Any]]:
    """Shell completion of ids (README 'Shell completion'): models, accelerators, systems (user files' too), MLPerf
    benchmarks (with their rounds), bundled scenarios or sweeps; the precisions an accelerator or system supports after
    `ID:` (and after each comma of `ID:PRECISION,...`); file names too where a file is taken (`files`)."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
        from click.shell_completion import CompletionItem

        if ":" in incomplete and {"accelerators", "systems"} & set(kinds):
            return list(_precisions(incomplete))
        found = [CompletionItem(i) for kind in kinds for i in _ids(kind) if i.startswith(incomplete)]
        return found + ([CompletionItem(incomplete, type="file")] if files else [])

    return complete


def _ids(kind: str) -> list[str]:
    from perfmodel.inputs.hardware import accelerators, systems
    from perfmodel.inputs.mlperf import BENCHMARKS
    from perfmodel.inputs.models import ZOO
    from perfmodel.inputs.resources import bundled_names

    known = {
        "models": lambda: list(ZOO),
        "accelerators": lambda: list(accelerators()),
        "systems": lambda: list(systems()),
        "benchmarks": lambda: [*BENCHMARKS, *(f"{b}@{r}" for b, rounds in BENCHMARKS.items() for r in rounds)],
        "scenarios": lambda: bundled_names("scenarios"),
        "sweeps": lambda: bundled_names("sweeps"),
        "calibration": lambda: ["none"],
    }
    return known[kind]()


def _precisions(incomplete: str) -> list[str]:
    """`ID:PRECISION,...` with the last precision completed among those the accelerator (or system's) supports."""
    from perfmodel.inputs.hardware import accelerators, systems

    entry, _, chosen = incomplete.partition(":")
    done, _, last = chosen.rpartition(",")
    system = systems().get(entry)
    accelerator = accelerators().get(system.accelerator if system else entry)
    if accelerator is None:
        return []
    head = f"{entry}:{done}," if done else f"{entry}:"
    return [head + p for p in accelerator.precisions if p.startswith(last) and p not in done.split(",")]


hardware_option = click.option(
    "--hardware",
    multiple=True,
    metavar="FILE|DIR",
    expose_value=False,
    is_eager=True,
    callback=_use_hardware,
    shell_complete=complete_ids((), files=True),
    help="Your own accelerator/system TOML file or folder (README 'Your own hardware'); repeatable.",
)
"""Read before the other options, so that --gpu and --system can name the entries it adds."""

calibration_option = click.option(
    "--calibration", help=CALIBRATION_HELP, shell_complete=complete_ids(("calibration",), files=True)
)


def _degree(name: str, unit: str, help_text: str) -> Callable[[Command], Command]:
    return click.option(name, type=Whole(unit, min=1), default=None, help=help_text)


@overload
def scenario_options(
    command: Command, *, many_gpus: bool = ..., many_systems: bool = ..., stack: Decorator | None = ...
) -> Command: ...
@overload
def scenario_options(
    command: None = None, *, many_gpus: bool = ..., many_systems: bool = ..., stack: Decorator | None = ...
) -> Callable[[Command], Command]: ...
def scenario_options(
    command: Command | None = None,
    *,
    many_gpus: bool = False,
    many_systems: bool = False,
    stack: Decorator | None = None,
) -> Command | Callable[[Command], Command]:
    """The flags shared by every command that takes a scenario; they override the scenario file.

    `many_gpus`: --gpus takes a list of counts. `many_systems`: --gpu is repeated, each ID[:PRECISION]. `stack`:
    the command's own --stack option in place of the stack profile's (`perfmodel launch` names target stacks).
    """
    gpu = (
        click.option(
            "--gpu",
            "gpu",
            multiple=True,
            metavar="ID[:PRECISION][:$PRICE]",
            help="Accelerator or system id, optionally with a precision and your quoted price per GPU-hour "
            "('gb300:nvfp4:$9.50', in single quotes); repeat to compare.",
            shell_complete=complete_ids(("accelerators", "systems")),
        )
        if many_systems
        else click.option(
            "--gpu",
            help="Accelerator id (perfmodel hardware list); picks its usual system.",
            shell_complete=complete_ids(("accelerators",)),
        )
    )
    gpus = (
        click.option("--gpus", type=CountList(), help="Number of GPUs, or a comma-separated list (256,512,1024).")
        if many_gpus
        else click.option("--gpus", type=Whole("GPUs", min=1, max=1_000_000), help="Number of GPUs.")
    )
    options: list[Decorator] = [
        click.argument(
            "scenario",
            required=False,
            type=ScenarioPath(dir_okay=False),
            shell_complete=complete_ids(("scenarios",), files=True),
        ),
        hardware_option,
        click.option(
            "--model",
            help="Model id (perfmodel models list) or FILE.toml.",
            shell_complete=complete_ids(("models",), files=True),
        ),
        gpu,
        click.option(
            "--system", help="System id (perfmodel hardware list).", shell_complete=complete_ids(("systems",))
        ),
        gpus,
        click.option("--precision", type=PRECISION),
        _degree("--tp", "GPUs", "Tensor-parallel size (with sequence parallelism)."),
        _degree("--pp", "stages", "Pipeline-parallel stages."),
        _degree("--cp", "GPUs", "Context-parallel size."),
        _degree("--vp", "stages", "Virtual pipeline stages per rank (interleaving)."),
        _degree("--ep", "GPUs", "Expert-parallel size (MoE models only)."),
        _degree("--etp", "GPUs", "Expert tensor-parallel size (MoE models only; default 1)."),
        _degree("--dp", "replicas", "Data-parallel size (derived from the GPU count when left out)."),
        _degree("--mbs", "sequences", "Micro-batch size in sequences."),
        _degree("--gbs", "sequences", "Global batch size in sequences."),
        click.option("--seq-len", type=Whole("tokens", min=16, max=10_000_000), help="Sequence length in tokens."),
        click.option(
            "--doc-len",
            type=Whole("tokens", min=1, max=10_000_000),
            help="Documents of N tokens packed into each sequence: attention per document (document masking).",
        ),
        click.option("--lora-rank", type=Whole("ranks", min=1, max=65536), help="Fine-tune LoRA adapters of rank R."),
        click.option(
            "--lora-modules",
            type=Choice(["attention", "mlp", "all-linear"]),
            help="Linear layers LoRA adapts (default attention: QKV and output projections).",
        ),
        click.option("--recompute", type=Choice(["none", "selective", "full"])),
        click.option(
            "--recompute-layers",
            type=Whole("layers", min=1),
            help="Partial recompute: only the first K layers of each pipeline chunk recompute in full (Megatron's "
            "block method); implies --recompute full; the other layout dimensions must be given.",
        ),
        click.option(
            "--zero", type=Whole("stages", 0, 3), help="0 plain DP, 1 distributed optimizer, 2 +grads, 3 FSDP."
        ),
        click.option(
            "--cp-comm",
            type=Choice(["p2p", "all_gather", "a2a"]),
            help="Context parallelism's exchange: p2p ring (Megatron's default), all_gather (Llama 3, torchtitan) "
            "or a2a (Ulysses: heads split over CP).",
        ),
        click.option(
            "--shard-group",
            type=Whole("ranks", min=1),
            help="Hybrid sharding with --zero 3: shard over groups of N DP ranks, replicate across them (MaxText's "
            "FSDP x DP, FSDP's HYBRID_SHARD); default: over every DP rank.",
        ),
        click.option("--tokens", type=Count(), help="Tokens to train on (e.g. 15T) for time-to-train and cost."),
        click.option(
            "--benchmark",
            shell_complete=complete_ids(("benchmarks",)),
            help="MLPerf benchmark (e.g. mlperf-llama31-405b or ...@v5.0): predict its score.",
        ),
        calibration_option,
        stack
        or click.option(
            "--stack",
            type=Choice(["megatron", "composer", "torchtitan", "deepspeed", "megatron-deepspeed", "maxtext"]),
            help="Software stack (default megatron: NeMo/Megatron-Bridge); composer is llm-foundry's, maxtext JAX's.",
        ),
        click.option(
            "--async-tp/--no-async-tp",
            default=None,
            help="torchtitan's async TP (TP collectives overlapped with the GEMMs) or vanilla TP (default: the "
            "stack's, off).",
        ),
        click.option(
            "--compile/--no-compile",
            default=None,
            help="torch.compile fusion of the elementwise kernels, or eager (torchtitan; default: the stack's, off).",
        ),
        click.option(
            "--fp8-recipe",
            type=Choice(FP8_RECIPE_NAMES),
            help="FP8 scaling with --precision fp8, each stack its own: torchtitan's torchao tensorwise (default, "
            "with float8 FSDP all-gather) or rowwise; megatron's delayed (no amax pass) or tensorwise (current "
            "scaling; default: delayed before 2025-09, tensorwise from it).",
        ),
        click.option(
            "--vintage",
            metavar="YYYY-MM",
            help="Software release to predict for (default: the newest release in the calibration's data).",
        ),
        click.option("--usd-per-gpu-hour", type=Price(), help="Price; default: the GPU's on-demand price."),
        click.option(
            "--price-range",
            type=PriceRange(),
            help="Price as a triangular distribution, USD/GPU-hour (e.g. 2:2.5:4): quoted at the mode, drawn in the "
            "cost's P10/P90 and P(within budget).",
        ),
        click.option("--pue", type=PositiveFloat(), help="Facility power usage effectiveness (default 1.2)."),
        click.option(
            "--grid-gco2-per-kwh",
            type=GridIntensity(),
            help="Grid carbon intensity, gCO2e/kWh, or a grid: us (default), world, france (README, Carbon).",
        ),
        click.option(
            "--goodput",
            type=Choice(["llama3", "rsc", "none"]),
            help="Failure rates: llama3 (the Llama 3 paper's, default), rsc (Meta's A100 RSC-1 cluster's) or none.",
        ),
        click.option("--failure-scale", type=PositiveFloat(), help="Multiply every failure rate (default 1)."),
        click.option(
            "--checkpoint-gbps", type=PositiveFloat(), help="Checkpoint storage GB/s per node (default: the system's)."
        ),
        click.option(
            "--restart-s", type=click.FloatRange(min=0), help="Restart time per interruption, s (default 600)."
        ),
        click.option(
            "--checkpoint-interval-s",
            type=PositiveFloat(),
            help="Training time between checkpoints, s (default: the Young/Daly optimum).",
        ),
        click.option(
            "--losses", type=Choice(["default", "none"]), help="Real-world losses beside failures (none: off)."
        ),
        click.option(
            "--straggler-share",
            type=click.FloatRange(0, 1),
            help="Step time lost to slow ranks at 128 GPUs (default: the calibration's fit).",
        ),
        click.option("--startup-s", type=click.FloatRange(min=0), help="Start-up per job, s (default 1,047)."),
        click.option("--job-limit-h", type=PositiveFloat(), help="Scheduler time limit per job, h (default: none)."),
        click.option("--ramp-tokens", type=Count(), help="Tokens of a batch ramp at the start (e.g. 20B)."),
        click.option("--ramp-start-gbs", type=Whole("sequences", min=1), help="Global batch the ramp starts from."),
        click.option("--eval-every-steps", type=Whole("steps", min=1), help="Steps between in-loop evaluations."),
        click.option("--eval-tokens", type=Count(), help="Tokens each evaluation runs forward (e.g. 50M)."),
        click.option("--spare-gpus", type=Whole("GPUs", min=0), help="GPUs held in reserve for the job (default 0)."),
        click.option(
            "--run-to-run-sd",
            type=click.FloatRange(0, 0.5),
            help="Run-to-run spread of log time in P10/P90 and probabilities (default 0.00787, measured; 0: off).",
        ),
        click.option("--buy", flag_value="buy", default=None, help="Cost of owning the systems instead of renting."),
        click.option("--usd-per-system", type=Usd(), help=f"{OWN}: price of one node or rack: 400k, $3.9M."),
        click.option("--amortisation-years", type=PositiveFloat(), help=f"{OWN_FLEET}: years the price is spread (4)."),
        click.option("--utilisation", type=Share(), help=f"{OWN_FLEET}: share of the hours they train (0.8 or 80%)."),
        click.option("--electricity-usd-per-kwh", type=Price(), help=f"{OWN_FLEET}: electricity, USD per kWh (0.08)."),
        click.option(
            "--facility-usd-per-kw-month",
            type=click.FloatRange(min=0),
            help=f"{OWN_FLEET}: colocation per kW-month (0).",
        ),
    ]

    def decorate(target: Command) -> Command:
        decorated: Any = target
        for option in reversed(options):
            decorated = option(decorated)
        return cast(Command, decorated)

    return decorate(command) if command is not None else decorate


OWN = "With --buy, or in export"
"""Where a purchase flag counts (planning.request.check_owning): owning priced, by --buy or beside renting."""
OWN_FLEET = f"{OWN} or for plan --fleet's offers to buy"
"""Where a purchase flag a fleet's offer to buy reads counts (planning.request.FLEET_OWNING_KEYS)."""


quiet_option = click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
table_or_json = click.option("--format", "fmt", type=Choice(["table", "json"]), default="table", show_default=True)
"""--format of a command with no CSV (a catalog, a fit, a single table)."""


def shows_progress(quiet: bool) -> bool:
    """Whether a command shows how far it is: on stderr while it is a terminal and not --quiet (a log or a pipe keeps
    only the output and the notes); the one rule of the progress bar (`progress`) and a fit's lines."""
    return not quiet and sys.stderr.isatty()


@contextlib.contextmanager
def progress(label: str, quiet: bool) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr where `shows_progress`; yields `update(done, total)`.

    The bar appears at the first update, once the total is known.
    """
    if not shows_progress(quiet):
        yield lambda done, total: None
        return
    with contextlib.ExitStack() as stack:
        bars: list[Any] = []

        def update(done: int, total: int) -> None:
            if not bars:
                bars.append(stack.enter_context(click.progressbar(length=total, label=label, file=sys.stderr)))
            bars[0].update(done - bars[0].pos)

        yield update


def scenario_flags(flags: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The scenario options among a command's flags, popped from `flags`, and the flag each comes from."""
    from perfmodel.inputs.scenario import OPTION_FIELDS, OPTION_FLAGS, option_flag

    options = {key: flags.pop(OPTION_FLAGS.get(key, key), None) for key in OPTION_FIELDS}
    origins = {key: option_flag(key) for key in OPTION_FIELDS}
    return options, origins


def load_from_flags(
    scenario: str | None,
    flags: dict[str, Any],
    relayout: bool = False,
    own_count: bool = True,
    prices_owning: bool = False,
) -> Any:
    """The scenario file with the flags applied. `relayout` leaves the file's layout open (keeping its global batch
    and sequence length) so that it is searched; layout flags still fix their dimension. `own_count`: the scenario
    is priced at its own GPU count, so a layout given in full is checked here, where an error can name its flag (else
    only what no GPU count changes). `prices_owning`: the command prices owning beside renting (purchase_read)."""
    from perfmodel.planning.request import load_checked

    options, origins = scenario_flags(flags)
    read = purchase_read(prices_owning)
    return load_checked(scenario, options, origins, relayout=relayout, own_count=own_count, purchase_read=read)


def purchase_read(prices_owning: bool) -> Any:
    """The purchase flags (planning.request.PurchaseRead) a command reads without --buy: every one where it prices
    owning beside renting (an export: its workbook's and columns' ownership alternative), else none."""
    from perfmodel.planning.request import EXPORT_READ, RENTING

    return EXPORT_READ if prices_owning else RENTING


def emit(records: Any, fmt: str, table: Callable[[], str] | None = None) -> None:
    """Print `records` as JSON or CSV (a list of flat-able dicts), or the `table` text for people."""
    from perfmodel.outputs import report

    if fmt == "json":
        click.echo(report.to_json(records))
    elif fmt == "csv":
        rows = records if isinstance(records, list) else [records]
        click.echo(report.to_csv(rows), nl=False)
    else:
        assert table is not None
        say(table())


def say(text: str, err: bool = False) -> None:
    """Print `text` for people (a table, a message): `visible` (errors.py), its line breaks kept, so that user text
    in it cannot drive the terminal."""
    click.echo(visible(text, keep="\n"), err=err)


UNITS_S = {"h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}


class Deadline(click.ParamType):
    """A duration with its unit: 720h, 30d, 4.5w."""

    name = "DURATION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        text = str(value).strip().lower()
        unit = text[-1:]
        if unit not in UNITS_S:
            word = text[len(text.rstrip("abcdefghijklmnopqrstuvwxyz")) :]  # '60days', '2mo': a unit, not these
            why = f": the unit must be h, d or w, not '{word}'" if word else " needs a unit: h, d or w"
            self.fail(f"'{value}'{why} (examples: 720h, 30d, 4w)", param, ctx)
        try:
            number = float(text[:-1])
        except ValueError:
            self.fail(f"'{value}' is not a number of hours, days or weeks (examples: 720h, 30d, 4w)", param, ctx)
        if not math.isfinite(number) or number <= 0:
            self.fail(f"'{value}' must be a positive finite duration", param, ctx)
        return number * UNITS_S[unit]


def read_results(source: Path) -> Any:
    """A JSON perfmodel wrote (`--from FILE`), parsed; one line naming the file when it is not JSON."""
    from perfmodel.inputs.files import check_depth, read_text

    label = f"--from {source}"
    text = read_text(source, "results JSON", label)
    check_depth(text, label)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise PerfmodelError(f"--from {source}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
