"""Measured training runs: the documented CSV format users validate and calibrate with, and the bundled rows.

A `MeasuredRun` is a scenario (what ran: model, hardware, GPUs, precision, layout) plus one measured number
(`tokens_per_s_per_gpu`, `step_time_s` or, for MLPerf, `time_to_train_min`). The bundled rows are converted from
perfmodel/data/measured_runs.csv and mlperf_training_llm.csv (copies of ../shared/data, source columns kept); a row
that cannot be predicted honestly (a model whose shapes are not bundled, a hybrid Mamba model, another
optimizer, accelerator not in hardware_specs, duplicate, missing layout facts) is excluded with its reason rather
than guessed. Mixture-of-experts rows are grouped per model (source 'Megatron-Bridge MoE: <model>').
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfmodel.errors import PerfmodelError, did_you_mean, shown
from perfmodel.fitting.recipes import KNOWN_REGRESSIONS, RECIPES_CONTAINER, recipe_for
from perfmodel.fitting.scored import logged_work, result_folder
from perfmodel.inputs.counts import digits_hint
from perfmodel.inputs.files import read_bytes
from perfmodel.inputs.numbers import allowed, in_range
from perfmodel.inputs.text import MAX_NAME_CHARS, MAX_TEXT_CHARS, text_problem
from perfmodel.physics.efficiency import years_between

if TYPE_CHECKING:
    from perfmodel.inputs.scenario import Scenario

DATA = Path(__file__).resolve().parents[1] / "data"
METRICS = ("tokens_per_s_per_gpu", "step_time_s", "time_to_train_min", "gpu_hours")
MEASURED_RANGE = (1e-6, 1e9)
"""A measured step time (s), time-to-train (min) or tokens/s per GPU: a microsecond to 30 years, or a millionth of a
token to a billion tokens a second; outside it the ratio to a prediction overflows or means nothing."""
MAX_ROWS = 10_000
"""Each run is a prediction (a search where the layout is open): 10,000 runs are minutes of validation already."""
LAYOUT_COLUMNS = ("tp", "pp", "cp", "vp", "ep", "etp", "mbs", "gbs", "zero")
MODEL_COLUMNS = ("layers", "hidden", "ffn", "heads", "kv_heads", "vocab")
WHOLE_RUN_COLUMNS = ("tokens", "stack", "vintage", "model_shapes", "basis", "settings")
"""Columns of a whole run (metric gpu_hours; fitting/whole_runs.py reads them): tokens trained, the stack and its
release, `key=value;...` shapes of a [model] table, what the published figure counts (`wall` or `steady`) and
`key=value;...` scenario settings (`losses.job_limit_h=100;goodput.rates=rsc`)."""
RELEASE_COLUMNS = ("stack", "vintage")
"""What software ran a row of any metric: a step measured on an older release is priced at that release."""
KNOB_COLUMNS = ("async_tp", "compile", "fp8_recipe")
"""The stack's knobs a row ran with (inputs/stacks.py; blank: the stack's default): async_tp and compile true or
false, fp8_recipe one the row's stack takes (torchtitan: tensorwise or rowwise; megatron: delayed or tensorwise)."""
WHOLE_RUN_ONLY = tuple(c for c in WHOLE_RUN_COLUMNS if c not in RELEASE_COLUMNS)
CSV_COLUMNS = (
    "id", "source", "model", *MODEL_COLUMNS, "gpu", "system", "n_gpus", "precision", "seq_len", *LAYOUT_COLUMNS,
    "recompute", "benchmark", "metric", "measured", *WHOLE_RUN_COLUMNS, *KNOB_COLUMNS,
)  # fmt: skip
"""The documented column set of `--data FILE.csv`. Required: model (or benchmark), gpu or system, n_gpus, precision,
metric, measured. A blank recompute, zero or mbs column is the stack's setting (fitting.assumed: its default, else
the least memory-saving plausible setting that fits, or a range); a blank parallel degree is chosen by search (the
fastest layout that fits)."""


@dataclass(frozen=True)
class MeasuredRun:
    id: str
    source: str
    """Where the number comes from, short (its group in reports): 'Megatron-Bridge', 'MLPerf Training v5.0', ..."""
    scenario: dict[str, Any]
    metric: str
    measured: float
    assumptions: tuple[str, ...] = field(default=())
    detail: str = ""
    """Version, submitter or file: what tells this row from its neighbours."""
    samples: float | None = None
    """MLPerf result logs: the samples this run trained (instead of the RCP mean), and its evaluations."""
    evaluations: float | None = None
    released: str | None = None
    """Month (YYYY-MM) the run's software was released (its container or paper) or its MLPerf round published: what
    the `forward` protocol orders runs by. None when unknown."""
    releases: tuple[str, str] | None = None
    """An MLPerf row naming no container: the earliest and latest release its round's rows name (round_releases);
    the row is priced over that span (fitting.validation), `released` its round's publication. None otherwise."""
    number_format: str | None = None
    """The number format as run (NUMBER_FORMATS), finer than `precision`: FP8 per-tensor and blockwise are both the
    fp8 recipe. None: the one the recipe implies."""
    basis: str | None = None
    """A whole run (metric gpu_hours): what its published GPU-hours count, 'wall' (the run as it went, failures and
    losses included) or 'steady' (tokens over a measured steady throughput). None for other metrics."""
    memory_gib: float | None = None
    """A training log's peak memory per GPU (GiB, the allocator's peak reservation as the stack logs it), shown beside
    the model's; None where the source gives none."""

    @cached_property
    def checked(self) -> Scenario:
        """The scenario as pydantic checks it, once per run: reading a row checks it, and pricing it uses the record
        (a ValidationError when it is not valid)."""
        from perfmodel.inputs.scenario import checked_scenario

        return checked_scenario(self.scenario)

    @property
    def accelerator(self) -> str:
        from perfmodel.inputs.hardware import get_system

        return self.scenario.get("gpu") or get_system(self.scenario["system"]).accelerator

    @property
    def precision(self) -> str:
        return str(self.scenario["precision"])

    @property
    def format(self) -> str:
        """The number format as run: bf16, fp8-tensor, fp8-blockwise, mxfp8 or nvfp4."""
        return self.number_format or {"fp8": "fp8-tensor"}.get(self.precision, self.precision)

    @property
    def n_gpus(self) -> int:
        return int(self.scenario["n_gpus"])

    @property
    def group(self) -> str:
        """The held-out unit of cross-validation: accelerator x precision."""
        return f"{self.accelerator}/{self.precision}"


@dataclass(frozen=True)
class Exclusion:
    id: str
    reason: str


class Excluded(Exception):
    """A bundled row that cannot be predicted honestly; the message says why."""


# ----------------------------------------------------------------------------------------------------------------
# The documented CSV format
# ----------------------------------------------------------------------------------------------------------------


def read_runs_csv(path: str | Path, note: Callable[[str], None] = lambda _: None) -> list[MeasuredRun]:
    """Runs from a CSV in the documented column set; a bad row is one line naming the file, row and column. A column
    near none of the set (a spreadsheet's `notes`) is ignored and named once to `note`; one near a column of the
    set (`tokens_per_s_per_gpus`) is refused with the column meant, as a misspelt column must not be dropped."""
    path = Path(path)
    data = read_bytes(path, "runs CSV")
    try:
        with io.StringIO(data.decode("utf-8-sig"), newline="") as handle:  # -sig: spreadsheets often write a BOM
            reader = csv.DictReader(handle)
            header = [name.strip() for name in reader.fieldnames or []]  # 'id, model, gpu': as parse_row its cells
            reader.fieldnames = header
            if len(header) == 1 and (";" in header[0] or "\t" in header[0]):  # a spreadsheet's other delimiters
                sep = "';'" if ";" in header[0] else "tabs"
                raise PerfmodelError(
                    f"{path}: its columns are separated by {sep}; a runs CSV separates them with commas (a "
                    "spreadsheet's 'CSV (comma delimited)')"
                )
            if not header:
                raise PerfmodelError(
                    f"{path}: empty; a runs CSV's first line names its columns: {', '.join(CSV_COLUMNS)}"
                )
            needs: list[tuple[str, ...]] = [
                (c,) for c in ("n_gpus", "precision", "metric", "measured") if c not in header
            ]
            needs += [p for p in (("model", "benchmark"), ("gpu", "system")) if not set(p) & set(header)]
            unknown = [c for c in header if c not in CSV_COLUMNS]
            metric = next((u for u in unknown if did_you_mean(u, METRICS)), None)
            if metric is not None:  # a wide sheet's column per metric, where a runs CSV has one of names, one of values
                raise PerfmodelError(
                    f"{path}: unknown column '{shown(metric)}': a metric ({', '.join(METRICS)}) is a value of the "
                    "'metric' column, with its number in 'measured'"
                )
            if needs:  # the hint names a column ('model'), not the pair it completes
                wanted = [column for need in needs for column in need]
                near = next(((u, hint) for u in unknown if (hint := did_you_mean(u, wanted))), None)
                said = f"; '{shown(near[0])}' is no column{near[1]}" if near else ""
                missing = ", ".join(" or ".join(need) for need in needs)
                raise PerfmodelError(f"{path}: missing column(s) {missing}{said}; columns: {', '.join(CSV_COLUMNS)}")
            near = next(((u, hint) for u in unknown if (hint := did_you_mean(u, CSV_COLUMNS))), None)
            if near:
                raise PerfmodelError(
                    f"{path}: unknown column '{shown(near[0])}'{near[1]}; allowed: {', '.join(CSV_COLUMNS)}"
                )
            twice = sorted({c for c in header if header.count(c) > 1 and c not in unknown})
            if twice:
                raise PerfmodelError(f"{path}: column '{twice[0]}' appears more than once in the header")
            rows = list(itertools.islice(reader, MAX_ROWS + 1))  # counted before any row is checked
            if len(rows) > MAX_ROWS:
                raise PerfmodelError(
                    f"{path}: more than {MAX_ROWS:,} rows; at most {MAX_ROWS:,} runs per file: split it"
                )
            kept = [{k: v for k, v in row.items() if k not in unknown} for row in rows] if unknown else rows
            runs = [parse_row(path, number, row) for number, row in enumerate(kept, start=2) if not _blank(row)]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise PerfmodelError(f"{path}: not a readable CSV ({exc})") from None
    if not runs:
        raise PerfmodelError(f"{path}: no rows")
    if unknown:
        names = ", ".join(f"'{shown(column)}'" for column in dict.fromkeys(unknown))
        note(f"{path}: ignored columns: {names}")
    return runs


def _number(path: Path, line: int, column: str, text: str, integer: bool) -> float:
    """A positive number of the cell (whole when `integer`; a measured value within MEASURED_RANGE)."""
    try:
        value = float(text)
    except ValueError:
        hint = digits_hint(text)  # a spreadsheet's '1,024' or '12,000', or '8k'
        raise PerfmodelError(f"{path}, row {line}: column '{column}' is '{shown(text)}', not a number{hint}") from None
    if not math.isfinite(value) or value <= 0 or (integer and value != int(value)):
        kind = "a positive integer" if integer else "a positive finite number"
        raise PerfmodelError(f"{path}, row {line}: column '{column}' is '{shown(text)}'; it must be {kind}")
    if not integer and not in_range(value, *MEASURED_RANGE):
        raise PerfmodelError(
            f"{path}, row {line}: column '{column}' is '{text}'; it must be {allowed(*MEASURED_RANGE)}"
        )
    return value


LONG_COLUMNS = ("source", "model_shapes", "settings")
"""Columns that may hold more than a name: up to MAX_TEXT_CHARS."""


def _flag(path: Path, line: int, column: str, text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise PerfmodelError(f"{path}, row {line}: column '{column}' is '{text}'; it must be true or false")
    return text.lower() == "true"


def _blank(row: dict[Any, Any]) -> bool:
    """Whether every cell of a row is empty: the rows of bare commas a spreadsheet writes below its data (the extra
    cells of a row longer than the header come as a list)."""
    cells = [c for v in row.values() for c in (v if isinstance(v, list) else [v])]
    return not any((c or "").strip() for c in cells)


def parse_row(path: Path, line: int, row: dict[str, str]) -> MeasuredRun:
    """The run of one CSV row (a dict by column), or one line naming the file, row and column."""
    cell = {k: (v or "").strip() for k, v in row.items() if k is not None}
    if None in row:
        raise PerfmodelError(f"{path}, row {line}: more cells than columns")
    for column, text in cell.items():
        problem = text_problem(text, MAX_TEXT_CHARS if column in LONG_COLUMNS else MAX_NAME_CHARS)
        if problem is not None:
            raise PerfmodelError(f"{path}, row {line}: column '{column}' {problem}")
    metric = cell.get("metric", "")
    if metric not in METRICS:
        raise PerfmodelError(f"{path}, row {line}: column 'metric' is '{metric}'; allowed: {', '.join(METRICS)}")
    for required in ("n_gpus", "precision", "measured"):
        if not cell.get(required):
            raise PerfmodelError(f"{path}, row {line}: column '{required}' is empty")
    if metric == "time_to_train_min" and not cell.get("benchmark"):
        raise PerfmodelError(f"{path}, row {line}: metric time_to_train_min needs a 'benchmark' (an MLPerf id)")
    if metric == "gpu_hours" and not (cell.get("tokens") and (cell.get("model") or cell.get("model_shapes"))):
        raise PerfmodelError(f"{path}, row {line}: metric gpu_hours (a whole run) needs 'tokens' and a model")
    unread = next((c for c in WHOLE_RUN_ONLY if cell.get(c)), None) if metric != "gpu_hours" else None
    if unread is not None:  # only a whole run reads them: ignored, a row would be priced as it did not run
        raise PerfmodelError(
            f"{path}, row {line}: column '{unread}' is read for a whole run (metric gpu_hours) only; leave it empty "
            f"on a {metric} row"
        )
    scenario: dict[str, Any] = {
        "n_gpus": int(_number(path, line, "n_gpus", cell["n_gpus"], integer=True)),
        "precision": cell["precision"].lower(),
    }
    for key in ("gpu", "system", "benchmark"):
        if cell.get(key):
            scenario[key] = cell[key]
    overrides = {c: int(_number(path, line, c, cell[c], integer=True)) for c in MODEL_COLUMNS if cell.get(c)}
    if cell.get("model"):
        scenario["model"] = {"base": cell["model"], **overrides} if overrides else cell["model"]
    parallelism: dict[str, Any] = {
        c: int(_number(path, line, c, cell[c], integer=True)) for c in LAYOUT_COLUMNS if cell.get(c) and c != "zero"
    }
    if cell.get("zero"):
        if cell["zero"] not in ("0", "1", "2", "3"):
            raise PerfmodelError(f"{path}, row {line}: column 'zero' is '{cell['zero']}'; it must be 0, 1, 2 or 3")
        parallelism["zero"] = int(cell["zero"])
    if cell.get("seq_len"):
        parallelism["seq_len"] = int(_number(path, line, "seq_len", cell["seq_len"], integer=True))
    if cell.get("recompute"):
        parallelism["recompute"] = cell["recompute"]
    scenario["parallelism"] = parallelism
    for column in RELEASE_COLUMNS:
        if cell.get(column):
            scenario[column] = cell[column]
    for column in KNOB_COLUMNS:
        if cell.get(column):
            scenario[column] = cell[column] if column == "fp8_recipe" else _flag(path, line, column, cell[column])
    measured = _number(path, line, "measured", cell["measured"], integer=False)
    detail = ", ".join(filter(None, (cell.get("id"), cell.get("vintage"))))  # the user's own name tells rows apart
    run = MeasuredRun(
        cell.get("id") or f"{path.name}:{line}", cell.get("source") or path.name, scenario, metric, measured,
        detail=detail, released=scenario.get("vintage"),
    )  # fmt: skip
    if metric == "gpu_hours":
        from perfmodel.fitting.whole_runs import whole_run

        run = whole_run(run, cell, f"{path}, row {line}")
    check_scenario(run, f"{path}, row {line}")
    return run


BUNDLED_COLUMNS = {"accelerator": "gpu"}
"""The data notes' column names that differ from the runs CSV's (whole_runs.csv, long_sequence.csv)."""


def runs_csv_cells(row: dict[str, str]) -> dict[str, str]:
    """A data-notes row (whole_runs.csv's column set) under the runs CSV's names, without its sources and notes."""
    return {BUNDLED_COLUMNS.get(k, k): v for k, v in row.items() if BUNDLED_COLUMNS.get(k, k) in CSV_COLUMNS}


def check_scenario(run: MeasuredRun, where: str) -> None:
    """One line naming `where` (file and row) and the field when the run's scenario is not a valid one."""
    from pydantic import ValidationError

    from perfmodel.inputs.hardware import resolve
    from perfmodel.inputs.scenario_check import describe_error

    try:
        scenario = run.checked
        scenario.model_spec()
        resolve(scenario.gpu, scenario.system)
    except ValidationError as exc:
        raise PerfmodelError(f"{where}: {describe_error(exc)}") from None
    except PerfmodelError as exc:
        raise PerfmodelError(f"{where}: {exc}") from None


# ----------------------------------------------------------------------------------------------------------------
# The bundled rows
# ----------------------------------------------------------------------------------------------------------------

HARDWARE = {
    "H100-SXM5-80GB": "h100-sxm", "H100-80GB": "h100-sxm", "H200-SXM5-141GB": "h200-sxm",
    "A100-SXM4-80GB": "a100-sxm-80gb", "A100-80GB (1600Gbps RoCE)": "a100-sxm-80gb",
    "A100-40GB (1600Gbps RoCE)": "a100-40gb",
    "B200": "b200", "B200-SXM-180GB": "b200", "GB200": "gb200", "B300": "b300", "B300-SXM-270GB": "b300",
    "GB300": "gb300",
    "MI300X": "mi300x", "MI325X": "mi325x", "MI355X": "mi355x",
    "H100-SXM 96GB HBM2e @500W (Grand Teton)": "h100-grand-teton",
}  # fmt: skip
MODELS = {
    "Llama3-8B": "llama3.1-8b", "Llama3.1-8B": "llama3.1-8b", "Llama3-70B": "llama3.1-70b",
    "Llama3.1-70B": "llama3.1-70b", "Llama3.1-405B": "llama3.1-405b", "Llama2-7B": "llama2-7b",
    "Llama2-13B": "llama2-13b", "Llama2-70B": "llama2-70b", "GPT3-5B": "gpt3-5b", "GPT3-20B": "gpt3-20b",
    "GPT3-175B": "gpt3-175b", "Nemotron-4-15B": "nemotron4-15b", "Nemotron-4-340B": "nemotron4-340b",
    "Nemotron-8B": "nemotron3-8b", "Nemotron-22B": "nemotron3-22b",
}  # fmt: skip
MEGATRON_GPT_SHAPES = {"GPT-174.6B": (12288, 96, 96), "GPT-529.6B": (20480, 105, 128), "GPT-530B": (20480, 105, 128)}
"""Models of Narayanan 2021 Table 2 / Korthikanti 2022 named without shapes: the shapes their Table 1 rows give."""
MEGATRON_GPT_VOCAB = 51200
MPT_SHAPES = {
    "MPT-125m": (768, 12, 12), "MPT-350m": (1024, 16, 24), "MPT-760m": (1536, 12, 24), "MPT-1b": (2048, 16, 24),
    "MPT-3b": (2560, 20, 32), "MPT-7b": (4096, 32, 32), "MPT-13b": (5120, 40, 40), "MPT-30b": (7168, 56, 48),
    "MPT-70b": (8192, 64, 80),
}  # fmt: skip
"""(d_model, n_heads, n_layers) of llm-foundry's mpt-*.yaml configs; with a 50,368-token vocabulary, tied embeddings,
no biases and learned positions of max_seq_len they reproduce the README's parameter counts to 0.1% (tested)."""
MPT_VOCAB = 50368
PRECISIONS = {
    "fp8": "fp8", "fp8-cs": "fp8", "fp8-cs (per-tensor current scaling)": "fp8", "amp_fp8": "fp8",
    "fp8-blockwise": "fp8", "mxfp8": "mxfp8", "nvfp4": "nvfp4", "bf16": "bf16", "amp_bf16": "bf16",
    "fp16/bf16 mixed": "bf16", "bf16/fp16 mixed": "bf16", "fp8 tensorwise": "fp8", "fp8 rowwise": "fp8",
}  # fmt: skip
NUMBER_FORMATS = {
    "fp8": "fp8-tensor", "fp8-cs": "fp8-tensor", "fp8-cs (per-tensor current scaling)": "fp8-tensor",
    "amp_fp8": "fp8-tensor", "fp8-blockwise": "fp8-blockwise", "mxfp8": "mxfp8", "nvfp4": "nvfp4",
    "fp8 tensorwise": "fp8-tensor", "fp8 rowwise": "fp8-rowwise",
}  # fmt: skip
"""Number formats finer than the recipes (the `precision` protocol holds each out); the rest are bf16. FP8 without a
qualifier is per-tensor scaling: delayed scaling in NeMo before 2025 and MLPerf, current scaling ("FP8-CS") since."""
ROUND_PUBLISHED = {"v4.0": "2024-06", "v4.1": "2024-11", "v5.0": "2025-06", "v5.1": "2025-11"}
"""Month MLCommons published each MLPerf Training round's results (press releases of 2024-06-12, 2024-11-13,
2025-06-04 and 2025-11-12)."""
FOUNDRY_40GB_SOURCE = "llm-foundry A100 40GB"
"""Source of llm-foundry's A100-40GB rows: their own group in validate, validated, not fitted
(validation.NOT_FITTED)."""
COMPOSER_SOURCES = ("llm-foundry", FOUNDRY_40GB_SOURCE)
"""Sources whose runs were made with MosaicML Composer (inputs/stacks.py 'composer'); the rest are Megatron."""
OTHER_STACK = (
    "DeepSpeed implementation: NGC PyTorch 24.01 with DeepSpeed over Gigabit Ethernet scale-out; neither the "
    "DeepSpeed release, its ZeRO stage and LoRA settings nor the Ethernet fabric are in the submission's row or in "
    "a bundled system, so no profile can price it as it ran"
)
DEEPSPEED_IN_MEGATRON = (
    "ZeRO-3 of DeepSpeed in Megatron-LM's codebase of the row's month (Narayanan et al. 2021, section 5.3.2: 'We "
    "integrated ZeRO into our codebase using the DeepSpeed Python library', recalled): stack megatron-deepspeed at "
    "that vintage"
)
DEEPSPEED_SOURCE = "Narayanan et al. 2021: ZeRO-3 (DeepSpeed)"
"""Source of Narayanan et al. 2021's Table 2 ZeRO-3 rows (GPT-3 175B and 530B without model parallelism): their own
group in validate, priced on the megatron-deepspeed stack of 2021-04 (DeepSpeed's per-tensor ZeRO-3)."""
LLMBOOST_STACK = (
    "LLMBoost implementation: MangoBoost's own training stack (and, across nodes, its GPUBoost RoCE NICs), not AMD's "
    "ROCm PyTorch reference whose kernels and overlap perfmodel's AMD profile describes; no public description of "
    "it to price a profile of its own from"
)
NO_SHAPES = re.compile(r"DeepSeek-V4")
"""MoE models whose shapes are in none of the sources the zoo's shapes come from."""
_NO_CONFIG = (
    "a hybrid model whose config is in none of the sources the model zoo is built from: Megatron-Bridge 0.6.2's"
)
HYBRID = {
    "Nemotron-3-Super": f"{_NO_CONFIG} recipes load its shapes from the Hugging Face config "
    "(recipes/nemotronh/h100/nemotron_3_super.py: AutoBridge.from_hf_pretrained), which no PyPI package carries",
    "Nemotron-3-Ultra": f"{_NO_CONFIG} recipes load its shapes from the Hugging Face config "
    "(recipes/nemotronh/h100/nemotron_3_ultra.py), which no PyPI package carries",
}
"""Hybrid Mamba/attention models the zoo cannot price, by name prefix, and why: Megatron-Bridge 0.3.1's providers
(models/nemotronh/nemotron_h_provider.py) and transformers 5.25's NemotronHConfig give Nemotron 3 Nano only;
nemo-automodel 0.7.0, transformers 5.23.0 (whose NemotronHConfig takes a moe_latent_size) and megatron-core 0.19.2
carry no Super or Ultra config either."""
MOE_MODELS = {
    "DeepSeek-V3": "deepseek-v3", "Qwen3-30B-A3B": "qwen3-30b-a3b", "Qwen3-235B-A22B": "qwen3-235b-a22b",
    "GPT-OSS-120B": "gpt-oss-120b", "Mixtral-8x7B": "mixtral-8x7b", "Mixtral-8x22B": "mixtral-8x22b",
    "Kimi-K2": "kimi-k2",
    "Nemotron-3-Nano-30B-A3B": "nemotron-3-nano-30b-a3b", "Llama4-Scout (LLM only)": "llama4-scout",
    "Nemotron-3.5-Lightning-30B-A3B": "nemotron-3.5-lightning-30b-a3b",
}  # fmt: skip
MOE_SOURCE = "Megatron-Bridge MoE"
"""Source label prefix of the bundled MoE rows (one group per model in `validate`)."""


def _read(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _int(text: str, default: int | None = None) -> int | None:
    return int(float(text)) if text.strip() else default


def _precision(text: str) -> str:
    key = text.strip().lower()
    if key not in PRECISIONS:
        raise Excluded(f"precision '{text}' has no recipe in perfmodel")
    return PRECISIONS[key]


def _number_format(text: str) -> str:
    return NUMBER_FORMATS.get(text.strip().lower(), "bf16")


def _released(text: str) -> str | None:
    """YYYY-MM of a 'NeMo 24.09 container' (the container a recipe ran, not the recipe's own version) or a paper's
    '2021-04'."""
    month = re.search(r"\b(\d{4})-(\d{2})\b", text)
    return container_month(text) or (f"{month.group(1)}-{month.group(2)}" if month else None)


def _accelerator(text: str) -> str:
    if text not in HARDWARE:
        raise Excluded(f"accelerator '{text}' is not in hardware_specs")
    return HARDWARE[text]


def _measured_model(row: dict[str, str]) -> str | dict[str, Any]:
    name, seq = row["model"], int(row["seq_len"])
    if NO_SHAPES.search(name):
        raise Excluded(f"{name}: its shapes are in none of the sources the model zoo is built from")
    hybrid = next((why for prefix, why in HYBRID.items() if name.startswith(prefix)), None)
    if hybrid:
        raise Excluded(f"{name}: {hybrid}")
    if name in MOE_MODELS:
        return _moe_model(name, row["notes"])
    proxy = re.fullmatch(r"Llama3\.1-405B \((\d+)-layer proxy\)", name)
    if proxy:
        return {"base": "llama3.1-405b", "layers": int(proxy.group(1))}
    if name in MODELS:
        return MODELS[name]
    shapes = re.search(r"h=(\d+), l=(\d+), heads=(\d+)", name)
    if shapes or name in MEGATRON_GPT_SHAPES:
        hidden, layers, heads = (
            (int(shapes.group(1)), int(shapes.group(2)), int(shapes.group(3))) if shapes else MEGATRON_GPT_SHAPES[name]
        )
        return _gpt_table(name, hidden, heads, layers, MEGATRON_GPT_VOCAB, seq, bias=True)
    if name in MPT_SHAPES:
        hidden, heads, layers = MPT_SHAPES[name]
        return _gpt_table(name, hidden, heads, layers, MPT_VOCAB, seq, bias=False)
    raise Excluded(f"model '{name}' is not in the zoo")


DROPPING_ROUTING = {"capacity_factor": 1.0, "pad_to_capacity": True, "dispatcher": "alltoall"}
"""A 'variant: tokendrop' row's routing: Megatron-Bridge's apply_moe_token_drop at its defaults,
moe_expert_capacity_factor 1.0 and moe_pad_expert_input_to_capacity True, which asserts the 'alltoall' dispatcher
(megatron-bridge 0.6.2 training/utils/moe_token_drop.py L25-72)."""
DROPPING_ASSUMPTION = (
    "token dropping at apply_moe_token_drop's defaults (capacity factor 1.0, every expert padded to it, 'alltoall' "
    "dispatcher; the table names the variant, not its settings)"
)


def _moe_model(name: str, notes: str) -> str | dict[str, Any]:
    """A MoE row's model: other optimizers are refused; 'w/o MTP' drops DeepSeek's MTP."""
    if "Muon" in notes:
        raise Excluded(f"{name}: trained with the Muon optimizer; perfmodel models Adam's state and step")
    model_id = MOE_MODELS[name]
    return {"base": model_id, "mtp_layers": 0} if "w/o MTP" in notes else model_id


def _with_recipe(
    row: dict[str, str], model: str | dict[str, Any], parallelism: dict[str, Any], assumptions: list[str]
) -> tuple[str | dict[str, Any], dict[str, Any]]:
    """A row's model with the settings of the sourced recipe its layout matches (fitting.recipes), and the scenario
    fields the recipe sets; the recipe's recompute goes into `parallelism` where the row leaves it out. A row that
    states another recompute than an offloading recipe's did not run it: Megatron-Core offloads activations only
    without recompute (physics/offload.py)."""
    found = recipe_for(row, parallelism)
    month = container_month(row["version_or_date"])
    if found is None or (found.since and (month is None or month < str(container_month(found.since)))):
        return model, {}
    if found.run_settings.get("activation_offload_layers") and parallelism["recompute"] not in (None, found.recompute):
        return model, {}
    recompute = {"recompute": found.recompute} if found.recompute and parallelism["recompute"] is None else {}
    parallelism |= recompute
    settings = ", ".join(f"{k} {v}" for k, v in {**found.model_settings, **found.run_settings, **recompute}.items())
    if month == container_month(RECIPES_CONTAINER):
        assumptions.append(f"{settings}: this container's recipe of the layout ({found.source})")
    else:
        assumptions.append(
            f"{settings}: the recipe of this layout as of {RECIPES_CONTAINER} ({found.source}); for "
            f"{row['version_or_date']} an assumption"
        )
    if not found.model_settings:
        return model, dict(found.run_settings)
    base = model if isinstance(model, dict) else {"base": model}
    return {**base, **found.model_settings}, dict(found.run_settings)


def _gpt_table(name: str, hidden: int, heads: int, layers: int, vocab: int, seq: int, bias: bool) -> dict[str, Any]:
    return {
        "id": name.split(" ")[0].lower(), "name": name.split(" (")[0], "layers": layers, "hidden": hidden,
        "ffn": 4 * hidden, "heads": heads, "kv_heads": heads, "vocab": vocab, "tied_embeddings": True, "mlp": "gelu",
        "norm": "layernorm", "bias": bias, "learned_positions": seq,
    }  # fmt: skip


GA_NOTE = re.compile(r"\bGA=(\d+)\b")
"""`GA=N` in a row's notes: the gradient-accumulation count a table gives, kept there (measured_runs_sources.md: 'GA
(gradient-accumulation count) is kept in the notes')."""


def _accumulation_contradiction(row: dict[str, str], parallelism: dict[str, Any]) -> str | None:
    """One line where the row's notes give a GA that its GBS, MBS and layout do not (GBS / (MBS x DP), DP the GPUs
    over TP x PP x CP): the source's columns disagree, and no one reading of them is sure, so the row is priced at
    its columns as stated, with this note. Three bundled rows do (measured_runs.csv lines 222, 243 and 249):
    Megatron-Bridge 25.11's Qwen3-235B-A22B on 256 GB300 (GA=32 against 64) and GPT-OSS-120B on 64 H100 (GA=2
    against 8), and 25.09's Llama 3 70B MXFP8 alternative on 64 GB200 (GA=16 against 8; MBS 1 or GBS 256 would
    agree: priced at either, it reads +4.3% or -0.9% against -4.9% as stated)."""
    found = GA_NOTE.search(row["notes"])
    if found is None or parallelism["mbs"] is None:
        return None
    dp = int(row["n_gpus"]) // (parallelism["tp"] * parallelism["pp"] * parallelism["cp"])
    implied = parallelism["gbs"] / (parallelism["mbs"] * dp)
    if implied == int(found.group(1)):
        return None
    return (
        f"the source gives GA={found.group(1)}, but its GBS {parallelism['gbs']}, MBS {parallelism['mbs']} and DP "
        f"{dp} make {implied:g}: its columns disagree; priced as the columns state"
    )


def _zero(text: str) -> int | None:
    text = text.lower().strip()
    if not text:
        return None  # not reported: the stack's setting (fitting.assumed)
    if "zero-3" in text or "full_shard" in text or text == "fsdp" or re.search(r"(megatron-fsdp|fsdp2) \([1-9]", text):
        return 3
    if "shard_grad_op" in text:
        return 2
    if text == "none":
        return 0  # Megatron-LM 2021: plain data-parallel all-reduce
    return 1  # "DDP" in NeMo/Megatron-Bridge tables: data parallel with the distributed optimizer


def _recompute(text: str) -> str | None:
    text = text.lower()
    for mode in ("full", "selective", "none"):
        if text.startswith(mode):
            return mode
    return None  # not reported: the stack's setting (fitting.assumed)


def _megatron_tokens_per_s(row: dict[str, str], model: dict[str, Any]) -> float:
    """Narayanan 2021 reports TFLOP/s by its Eq. 3, 96 B s l h^2 (1 + s/6h + V/16lh) FLOPs per iteration
    (recompute included, full attention); dividing by the FLOPs per token recovers the measured tokens/s/GPU."""
    s, h, layers, v = int(row["seq_len"]), model["hidden"], model["layers"], model["vocab"]
    flops_per_token = 96 * layers * h**2 * (1 + s / (6 * h) + v / (16 * layers * h))
    return float(row["tflops_per_gpu"]) * 1e12 / flops_per_token


def _source_label(source: str) -> str:
    for key, label in (
        ("Megatron-Bridge", "Megatron-Bridge"), ("NVIDIA/NeMo docs", "NeMo 24.07"),
        ("docs.nvidia.com", "NeMo docs"), ("dgxc-benchmarking", "DGX Cloud recipes"),
        ("Narayanan", "Narayanan et al. 2021"), ("Korthikanti", "Korthikanti et al. 2022"),
        ("[A100 40GB", FOUNDRY_40GB_SOURCE), ("llm-foundry", "llm-foundry"), ("DeepSeek", "DeepSeek-V3 report"),
    ):  # fmt: skip
        if key in source:
            return label
    return source.split(" ")[0]


def _from_measured_row(number: int, row: dict[str, str]) -> MeasuredRun:
    model = _measured_model(row)
    gpu = _accelerator(row["hardware"])
    precision = _precision(row["dtype"])
    assumptions = []
    if "405B" in row["model"] and re.search(r"v24\.11|v25\.02", row["version_or_date"]):
        model = {"base": "llama3.1-405b", **(model if isinstance(model, dict) else {}), "vocab": 50257}
        assumptions.append("GPT2BPE tokenizer proxy (~50K vocab) of DGXC 405B recipes through v25.02")
    parallelism: dict[str, Any] = {
        "seq_len": int(row["seq_len"]), "gbs": _int(row["gbs"]), "mbs": _int(row["mbs"]),
        "tp": _int(row["tp"], 1), "pp": _int(row["pp"], 1), "cp": _int(row["cp"], 1),
        "vp": _int(row["vp"], 1), "zero": _zero(row["fsdp_or_zero"]), "recompute": _recompute(row["recompute"]),
    }  # fmt: skip
    if parallelism["pp"] == 1:
        parallelism["vp"] = 1
    source = _source_label(row["source"])
    if row["model"] in MOE_MODELS:
        parallelism |= {"ep": _int(row["ep"], 1), "etp": 1}
        stage_gpus = int(row["n_gpus"]) // parallelism["pp"]
        if stage_gpus % parallelism["ep"]:
            raise Excluded(f"EP {parallelism['ep']} does not divide the {stage_gpus} GPUs of a pipeline stage")
        source = f"{MOE_SOURCE}: {row['model']}"
        assumptions.append("expert TP 1 (the tables do not list it); routing force-balanced (imbalance 1.0)")
        if row["model"] == "DeepSeek-V3" and "MTP" not in row["notes"]:
            assumptions.append("one MTP layer, the DeepSeek-V3 recipe's default (the row does not say)")
    model, run_settings = _with_recipe(row, model, parallelism, assumptions)
    if regression := KNOWN_REGRESSIONS.get((row["model"], row["version_or_date"])):
        run_settings |= regression.settings
        assumptions.append(regression.note)
    if row["model"] in MOE_MODELS and "variant: tokendrop" in row["notes"]:  # after the recipe's: it asserts 'alltoall'
        model = {**(model if isinstance(model, dict) else {"base": model}), **DROPPING_ROUTING}
        assumptions.append(DROPPING_ASSUMPTION)
    if parallelism["gbs"] is None:
        raise Excluded("global batch size not reported")
    if (contradiction := _accumulation_contradiction(row, parallelism)) is not None:
        assumptions.append(contradiction)
    if row["step_time_s"]:
        metric, measured = "step_time_s", float(row["step_time_s"])
    elif row["tokens_per_s_per_gpu"]:
        metric, measured = "tokens_per_s_per_gpu", float(row["tokens_per_s_per_gpu"])
    elif row["tflops_per_gpu"] and isinstance(model, dict):
        metric, measured = "tokens_per_s_per_gpu", _megatron_tokens_per_s(row, model)
        assumptions.append("tokens/s derived from the paper's TFLOP/s by its Eq. 3")
    else:
        raise Excluded("no step time or throughput reported")
    scenario = {
        "model": model, "gpu": gpu, "n_gpus": int(row["n_gpus"]), "precision": precision,
        "parallelism": {k: v for k, v in parallelism.items() if v is not None}, **run_settings,
    }  # fmt: skip
    if source in COMPOSER_SOURCES:
        scenario["stack"] = "composer"
    if "DeepSpeed" in row["fsdp_or_zero"]:
        scenario |= {"stack": "megatron-deepspeed", "vintage": row["version_or_date"]}
        assumptions.append(DEEPSPEED_IN_MEGATRON)
        source = DEEPSPEED_SOURCE
    return MeasuredRun(
        f"measured_runs.csv:{number}", source, scenario, metric, measured, tuple(assumptions),
        row["version_or_date"], released=_released(row["version_or_date"]) or _last_changed(row["source"]),
        number_format=_number_format(row["dtype"]),
    )  # fmt: skip


LONG_SEQUENCE = "long_sequence.csv"
LONG_SEQUENCE_SOURCE = "NeMo long sequences"
"""Source of NVIDIA NeMo's context-parallel table (Llama 2 7B on H100 in FP8, 4K to 1M tokens, CP up to 32): its own
group in validate, and the rows the `length` protocol holds out."""
LONG_SEQUENCE_DERIVED = "tokens/s derived from the published TFLOP/s by NeMo's FLOP formula then (full attention)"
LONG_SEQUENCE_MBS = (
    "MBS 1 (not published): one sequence of 4K-1M tokens per micro-batch, as NeMo's Llama 2 recipes set "
    "micro_batch_size=1 (recalled from the public code, not a stored copy)"
)


def _from_long_sequence_row(number: int, row: dict[str, str]) -> MeasuredRun:
    """A row of the context-parallel table, priced at its container's release (its `vintage` column), one sequence
    per micro-batch; recompute and ZeRO are not published, so they are the stack's setting."""
    run = parse_row(DATA / LONG_SEQUENCE, number, runs_csv_cells(row))
    scenario = run.scenario | {"parallelism": run.scenario["parallelism"] | {"mbs": 1}}
    detail, assumptions = row["version_or_date"], (LONG_SEQUENCE_DERIVED, LONG_SEQUENCE_MBS)
    return replace(run, source=LONG_SEQUENCE_SOURCE, detail=detail, scenario=scenario, assumptions=assumptions)


MAXTEXT = "maxtext_runs.csv"
MAXTEXT_SOURCE = "MaxText (JAX)"
"""Source of NVIDIA's DGX Cloud MaxText table (Llama 2 70B on H100, BF16 and FP8, 64-2,048 GPUs): its own group in
validate, predicted with the shared fitted values and no parameter of its own (six rows: issue 27 lets none inform
a fit of its own), and the stack the `stack` protocol's maxtext fold holds out."""
MAXTEXT_FSDP = {64: 64, 512: 128, 2048: 128}
"""The FSDP group of each bundled MaxText row by GPU count, the rest data-parallel across groups: the table's headers
('Throughput on 512x H100 GPUs (FSDP=128 GBS=1024)'; NVIDIA/dgxc-benchmarking v24.11.1 maxtext/README_70b.md)."""
MAXTEXT_RELEASE = re.compile(r"maxtext-(\d{4})-(\d{2})-\d{2}")
"""The container's date in its tag ('ghcr.io/nvidia/jax:maxtext-2024-12-09'): the row's release."""


def _from_maxtext_row(number: int, row: dict[str, str]) -> MeasuredRun:
    """A row of the MaxText table: hybrid FSDP over its group (MAXTEXT_FSDP), released with its container."""
    run = parse_row(DATA / MAXTEXT, number, runs_csv_cells(row))
    group = MAXTEXT_FSDP.get(run.n_gpus)
    if group is None:
        raise Excluded(f"no FSDP group published for {run.n_gpus} GPUs (MAXTEXT_FSDP)")
    scenario = run.scenario | {"parallelism": run.scenario["parallelism"] | {"shard_group": group}}
    found = MAXTEXT_RELEASE.search(row["version_or_date"])
    released = f"{found.group(1)}-{found.group(2)}" if found else None
    assumption = f"FSDP over {group} GPUs, data-parallel across {run.n_gpus // group} groups (the table's header)"
    return replace(
        run, source=MAXTEXT_SOURCE, detail=row["version_or_date"], scenario=scenario, released=released,
        assumptions=(assumption,),
    )  # fmt: skip


TORCHTITAN = "torchtitan_runs.csv"
TORCHTITAN_SOURCE = "torchtitan"
"""Source of torchtitan's async-TP and FP8 benchmark (Llama 3.1 8B and 70B on Grand Teton H100s): its own group in
validate, priced on the torchtitan stack at each row's knobs."""


def _from_torchtitan_row(number: int, row: dict[str, str]) -> MeasuredRun:
    """A row of torchtitan's benchmark: the measured-runs columns, on the torchtitan stack with the knobs its notes
    and dtype name (async or vanilla TP, torch.compile on, the FP8 scaling recipe)."""
    run = _from_measured_row(number, row)
    knobs: dict[str, bool | str] = {
        "async_tp": row["notes"].startswith("async TP"),
        "compile": "torch.compile" in row["notes"],
    }
    if run.scenario["precision"] == "fp8":
        knobs["fp8_recipe"] = row["dtype"].split()[-1].lower()
    scenario = run.scenario | {"stack": "torchtitan", **knobs}
    return replace(run, id=f"{TORCHTITAN}:{number}", source=TORCHTITAN_SOURCE, scenario=scenario)


LAST_CHANGE = re.compile(r"last change (\d{4})-(\d{2})-\d{2}")
"""A source's note of when its table last changed ('mosaicml/llm-foundry ... README.md (last change 2024-01-06,
#838)', measured_runs_sources.md): its numbers are no newer than that."""


def _last_changed(source: str) -> str | None:
    """YYYY-MM of the table's last change, for a row whose own date is no month (llm-foundry's '2023-2024'): the
    newest release its software can be, so that the row is not priced as software of the reference vintage."""
    found = LAST_CHANGE.search(source)
    return f"{found.group(1)}-{found.group(2)}" if found else None


NEMO_CONTAINER = re.compile(r"ngc(\d\d)\.(\d\d)|NeMo[^;]*?(\d\d)\.(\d\d)", re.IGNORECASE)
"""A NeMo container named in an MLPerf row's result path ('eos_n128_ngc24.09_nemo') or framework column ('NVIDIA
NeMo Framework Release 24.09', 'NVIDIA Nemo 24.09', 'PyTorch, NeMo Framework NVIDIA Release 25.04'). Only a release
named with NeMo counts: the column's other names are often a template's ('PyTorch NVIDIA Release 23.09' on GB200
systems, which no 23.09 container supports)."""


def _mlperf_released(row: dict[str, str]) -> str | None:
    """The month of the NeMo container an MLPerf row ran (NEMO_CONTAINER), no later than its round's publication;
    the round's publication where no container is named. v5.0 rows ran NeMo 24.09 to 25.04: the release, not the
    round, decides what the software did (efficiency.WARM_START_RELEASE)."""
    return _named_release(row) or ROUND_PUBLISHED.get(row["round"])


def _named_release(row: dict[str, str]) -> str | None:
    """The month of the NeMo container the row names, capped at its round's publication; None when it names none."""
    published = ROUND_PUBLISHED.get(row["round"])
    container = container_month(row["source"]) or container_month(row["framework"])
    if container is None:
        return None
    return container if published is None else min(container, published)


def container_month(text: str) -> str | None:
    """YYYY-MM of the first NeMo container `text` names (NEMO_CONTAINER: 'NeMo 24.09' is 2024-09), else None."""
    found = NEMO_CONTAINER.search(text)
    if found is None:
        return None
    year, month = (g for g in found.groups() if g is not None)
    return f"20{year}-{month}"


def round_releases(rows: Iterable[dict[str, str]]) -> dict[tuple[str, str], tuple[str, str]]:
    """The earliest and latest NeMo container (NEMO_CONTAINER) named by an MLPerf round's rows on each accelerator
    family, by (round, family): the span a row of that round and family naming none is priced over. The round and
    family, not the submitter: a submitter naming no container in a row names none in its other rows of the round
    either (Oracle's v4.1 and v5.0 rows), every submitter of a round ran software available for it, and a release
    runs only the accelerators it supports (v5.0: Hopper rows name NeMo 24.09 to 25.01, Blackwell rows 25.04 only).
    A family no row of the round names a container for (AMD's, run on ROCm) has no span."""
    from perfmodel.inputs.hardware import get_accelerator

    named: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        if (release := _named_release(row)) is not None and row["accelerator"] in HARDWARE:
            family = get_accelerator(HARDWARE[row["accelerator"]]).family
            named.setdefault((row["round"], family), []).append(release)
    return {key: (min(months), max(months)) for key, months in named.items()}


def round_precisions(rows: Iterable[dict[str, str]]) -> dict[tuple[str, str, str], set[str]]:
    """The precisions an MLPerf round's rows of a benchmark on an accelerator family name, by (round, benchmark,
    family): a row naming none could have run any of them. v5.1 Blackwell's LoRA and Llama 3.1 8B rows name FP8 and
    NVFP4 (NVIDIA's 8-GPU configs are `*_fp4.sh`, and Dell's and Supermicro's implementation folders hold both a
    `config_DGXB200_1x8x2xtp1pp1cp1_8b.sh` and its `_fp4.sh` twin: mlperf_training_llm.csv notes)."""
    from perfmodel.inputs.hardware import get_accelerator

    named: dict[tuple[str, str, str], set[str]] = {}
    for row in rows:
        if row["precision"] and row["accelerator"] in HARDWARE:
            family = get_accelerator(HARDWARE[row["accelerator"]]).family
            named.setdefault((row["round"], row["benchmark"], family), set()).add(row["precision"].upper())
    return named


def _mlperf_folder(row: dict[str, str]) -> str:
    """round/submitter/result folder of an MLPerf row: what the rows' notes name another row's logs by."""
    match = re.search(r"training_results_(v[\d.]+):([^/]+)/results/([^/]+)/", row["source"])
    return "/".join(match.groups()) if match else f"{row['round']}/{row['submitter']}/{row['system']}"


def _mlperf_id(row: dict[str, str]) -> str:
    """The row's run id: its result folder and benchmark. A folder holds one system's results of several benchmarks
    (v5.1 Cisco/hpf_n16: llama31_8b and llama2_70b_lora), and an id the two rows shared gave both the held-out error
    of whichever came last (fitting.validation.held_out_errors maps them by id)."""
    return f"{_mlperf_folder(row)}/{row['benchmark']}"


MLPERF_BENCHMARKS = {
    "gpt3": "mlperf-gpt3", "llama2_70b_lora": "mlperf-llama2-70b-lora", "llama31_405b": "mlperf-llama31-405b",
    "llama31_8b": "mlperf-llama31-8b",
}  # fmt: skip
"""The benchmark ids of mlperf_training_llm.csv's `benchmark` column (mlperf-logging's names)."""


def _from_mlperf_row(
    row: dict[str, str],
    spans: dict[tuple[str, str], tuple[str, str]],
    precisions: dict[tuple[str, str, str], set[str]],
) -> MeasuredRun:
    """The row as a MeasuredRun; `spans`: round_releases of the bundled rows, for a row naming no container;
    `precisions`: round_precisions, for a row naming no precision."""
    from perfmodel.inputs.hardware import get_accelerator
    from perfmodel.inputs.mlperf import get_benchmark

    if "deepspeed" in row["framework"].lower():
        raise Excluded(OTHER_STACK)
    if "llmboost" in row["framework"].lower():
        raise Excluded(LLMBOOST_STACK)
    benchmark_id = MLPERF_BENCHMARKS[row["benchmark"]]
    bench = get_benchmark(f"{benchmark_id}@{row['round']}")
    gpu = _accelerator(row["accelerator"])
    assumptions = []
    if row["precision"]:
        precision = _precision(row["precision"])
    else:
        named = precisions.get((row["round"], row["benchmark"], get_accelerator(gpu).family), set())
        if len(named) > 1:
            raise Excluded(AMBIGUOUS_PRECISION.format(", ".join(sorted(named))))
        precision = "fp8" if "fp8" in get_accelerator(gpu).precisions else "bf16"
        assumptions.append(f"precision not reported; {precision.upper()} assumed (the reference implementation's)")
    if not row["gbs"] or not row["time_to_train_min"]:
        raise Excluded("global batch size or score not reported")
    layout: dict[str, int | str | None] = {
        "tp": _int(row["tp"]),
        "pp": _int(row["pp"]),
        "cp": _int(row["cp"]),
        "mbs": _int(row["mbs"]),
    }
    if layout["tp"] is not None:
        layout = {k: (1 if v is None else v) for k, v in layout.items()}
        layout["vp"] = _int(row["vp"], 1)
    else:
        assumptions.append(UNPUBLISHED_LAYOUT)
    if (recompute := CONFIG_RECOMPUTE.get(row.get("config_file", ""))) is not None:
        layers, note = recompute
        layout |= {"recompute": "full", "recompute_layers": layers}
        assumptions.append(note)
    family = get_accelerator(gpu).family
    releases = spans.get((row["round"], family)) if _named_release(row) is None else None
    if releases is not None:
        first, last = releases
        assumptions.append(
            f"container not named: priced over the NeMo releases its round's {family} rows name, {first} to {last}"
        )
    scenario = {
        "benchmark": bench.id + "@" + bench.round, "gpu": gpu, "n_gpus": int(row["n_accelerators"]),
        "precision": precision, "parallelism": {"gbs": int(row["gbs"])} | {k: v for k, v in layout.items() if v},
    }  # fmt: skip
    samples, evaluations = scored_work(row)
    return MeasuredRun(
        f"mlperf:{_mlperf_id(row)}", f"MLPerf Training {row['round']}", scenario, "time_to_train_min",
        float(row["time_to_train_min"]), tuple(assumptions), f"{row['submitter']} {row['system']}",
        released=_mlperf_released(row), releases=releases,
        number_format=_number_format(row["precision"]) if row["precision"] else None,
        samples=samples, evaluations=evaluations,
    )  # fmt: skip


def scored_work(row: dict[str, str]) -> tuple[float | None, float | None]:
    """The samples and evaluations an MLPerf row's published score stands for: those of the runs its olympic mean
    keeps (fitting.scored, from the run logs; else the mean samples of all its runs and the round's cadence), times
    the RCP scaling factor the result summarizer applied to their time (> 1 only for runs that converged faster than
    the reference convergence points; mlperf_benchmarks.md, 'RCP normalisation'). A run that converged later is
    scored at its own samples, which the RCP mean would under-count: GPT-3's FP8 rows are scored at 1.01-1.05 x the
    RCP mean, one LoRA row at 1.86 x. The row's timed work is an input, like its layout; its time is predicted."""
    factor = float(row["rcp_scaling_factor"] or 1.0)
    logged = logged_work().get(result_folder(row["source"]))
    if logged is not None:
        return logged.samples * factor, logged.evaluations * factor
    if not row["samples_to_converge"]:
        return None, None
    return float(row["samples_to_converge"]) * factor, None


AMBIGUOUS_PRECISION = (
    "precision not reported, and its round's rows of this benchmark on this accelerator family ran {}: priced at "
    "either, the row would test a guess (the Llama 3.1 8B rows on 8 B200 naming none train 1.2x the samples a "
    "minute of University of Florida's FP8 row at the same layout)"
)
AMD_MI300X_LORA_RECOMPUTE = "AMD's MI300X LoRA config recomputes the first 21 of 80 layers (ACG=full ACM=block ACL=21)"
_AMD_MI300X_LORA_PARTNER = (21, AMD_MI300X_LORA_RECOMPUTE + "; assumed for this partner's config of the same name")
CONFIG_RECOMPUTE = {
    "AMD/benchmarks/llama2_70b_lora/implementations/MI300X_EPYC_9575F_pytorch/config_MI300X_1x8x1.sh": (
        21,
        AMD_MI300X_LORA_RECOMPUTE,
    ),
    "Dell/benchmarks/llama2_70b_lora/implementations/pytorch/config_MI300X_1x8x1.sh": _AMD_MI300X_LORA_PARTNER,
    "Oracle/benchmarks/llama2_70b_lora/implementations/1xBM.GPU.MI300X.8/config_MI300X_1x8x1.sh": (
        _AMD_MI300X_LORA_PARTNER
    ),
}
"""Leading layers an MLPerf row's configuration recomputes in full (Megatron's block method), where the row's columns
leave recompute out. AMD's MI300X LoRA config sets `ACG=full ACM=block ACL=21` (stack_notes.md; its 256 GB MI325X
config recomputes none, the stack default). Dell's and Oracle's MI300X rows run configs of the same name
(config_MI300X_1x8x1.sh) at AMD's time (28.99 and 30.42 against 29.25 min): taken to be AMD's implementation, an
assumption, labelled. MangoBoost's MI300X rows ran their own stack (LLMBOOST_STACK) and are left out. Without
this table the rows were priced at selective recompute (fitting.assumed's first setting that fits), 6% faster."""
UNPUBLISHED_LAYOUT = "layout not published; the fastest layout that fits is assumed"
LAYOUT_KEYS = ("tp", "pp", "cp", "vp", "mbs")


NO_PUBLISHED_LAYOUT = (
    "layout not published, and no published layout of this benchmark on this GPU divides its GPUs and batch: "
    "the parallel degrees have no stack default, and the model's best layout would flatter the fit"
)


def _at_published_layouts(runs: list[MeasuredRun]) -> tuple[list[MeasuredRun], list[Exclusion]]:
    """MLPerf rows without a published layout at the stack's configuration for them, not at the model's best: the
    layout the published submissions of the same benchmark on the same accelerator use at the nearest GPU count
    (the most common one there) that divides this row's GPUs and batch; rows with no such layout are excluded."""
    published = [r for r in runs if _round_of(r) and UNPUBLISHED_LAYOUT not in r.assumptions]
    placed, excluded = [], []
    for run in runs:
        if UNPUBLISHED_LAYOUT not in run.assumptions:
            placed.append(run)
            continue
        layout = _nearest_layout(run, [r for r in published if _same_setting(r, run)])
        if layout is None:
            excluded.append(Exclusion(run.id, NO_PUBLISHED_LAYOUT))
            continue
        par = run.scenario["parallelism"] | dict(zip(LAYOUT_KEYS, layout, strict=True))
        note = "layout not published; the nearest published layout of this benchmark on this GPU is assumed ({})"
        assumptions = tuple(
            note.format(" ".join(f"{k.upper()}{v}" for k, v in zip(LAYOUT_KEYS, layout, strict=True)))
            if a == UNPUBLISHED_LAYOUT
            else a
            for a in run.assumptions
        )
        placed.append(replace(run, scenario=run.scenario | {"parallelism": par}, assumptions=assumptions))
    return placed, excluded


def _round_of(run: MeasuredRun) -> bool:
    return run.source.startswith("MLPerf Training ")


def _same_setting(a: MeasuredRun, b: MeasuredRun) -> bool:
    return a.scenario["benchmark"].split("@")[0] == b.scenario["benchmark"].split("@")[0] and (
        a.scenario["gpu"] == b.scenario["gpu"]
    )


def _nearest_layout(run: MeasuredRun, others: list[MeasuredRun]) -> tuple[int, ...] | None:
    n, gbs = run.n_gpus, run.scenario["parallelism"]["gbs"]

    def fits(layout: tuple[int, ...]) -> bool:
        tp, pp, cp, _, mbs = layout
        ranks = tp * pp * cp
        return n % ranks == 0 and gbs % (n // ranks * mbs) == 0

    by_distance: dict[float, list[tuple[int, ...]]] = {}
    for other in others:
        layout = tuple(int(other.scenario["parallelism"][k]) for k in LAYOUT_KEYS)
        if fits(layout):
            by_distance.setdefault(abs(math.log(other.n_gpus / n)), []).append(layout)
    if not by_distance:
        return None
    nearest = by_distance[min(by_distance)]
    return max(sorted(set(nearest)), key=nearest.count)


def _duplicates(rows: list[dict[str, str]]) -> dict[int, str]:
    """Rows whose notes say they repeat another row's logs (power-measurement variants, resubmissions) when that
    row of the same benchmark is in the data too: the first one is kept."""
    ids = {(_mlperf_folder(r), r["benchmark"]): i for i, r in enumerate(rows)}
    dropped: dict[int, str] = {}
    for i, row in enumerate(rows):
        for other in re.findall(r"v\d\.\d/[\w.+-]+/[\w.+-]+", row["notes"]):
            j = ids.get((other, row["benchmark"]))
            if j is not None and j < i and j not in dropped:
                dropped[i] = f"duplicate of {other} (same logs)"
                break
    return dropped


@cache
def bundled_runs() -> tuple[tuple[MeasuredRun, ...], tuple[Exclusion, ...]]:
    """Every bundled measured row as a MeasuredRun, and every excluded row with its reason."""
    runs: list[MeasuredRun] = []
    excluded: list[Exclusion] = []

    def take(row_id: str, convert: Any) -> None:
        try:
            run = convert()
            check_scenario(run, row_id)
            runs.append(run)
        except (Excluded, PerfmodelError) as exc:
            excluded.append(Exclusion(row_id, str(exc)))

    for number, row in enumerate(_read("measured_runs.csv"), start=2):
        take(f"measured_runs.csv:{number}", lambda row=row, number=number: _from_measured_row(number, row))
    for number, row in enumerate(_read(TORCHTITAN), start=2):
        take(f"{TORCHTITAN}:{number}", lambda row=row, number=number: _from_torchtitan_row(number, row))
    for number, row in enumerate(_read(LONG_SEQUENCE), start=2):
        take(row["id"], lambda row=row, number=number: _from_long_sequence_row(number, row))
    for number, row in enumerate(_read(MAXTEXT), start=2):
        take(row["id"], lambda row=row, number=number: _from_maxtext_row(number, row))
    mlperf_rows = _read("mlperf_training_llm.csv")
    duplicates = _duplicates(mlperf_rows)
    spans, precisions = round_releases(mlperf_rows), round_precisions(mlperf_rows)
    for i, row in enumerate(mlperf_rows):
        if i in duplicates:
            excluded.append(Exclusion(f"mlperf:{_mlperf_id(row)}", duplicates[i]))
        else:
            take(f"mlperf:{_mlperf_id(row)}", lambda row=row: _from_mlperf_row(row, spans, precisions))
    placed, unplaced = _at_published_layouts(runs)
    from perfmodel.fitting.whole_runs import bundled_whole_runs

    return (*placed, *bundled_whole_runs()), tuple(excluded + unplaced)


@cache
def reference_vintage() -> str:
    """The newest release month among the bundled runs: the software vintage predictions are made for by default."""
    return max(r.released for r in bundled_runs()[0] if r.released is not None)


def vintage_years(run: MeasuredRun) -> float:
    """Years the run's software release is older than the reference vintage (0 where the release is unknown)."""
    return 0.0 if run.released is None else years_between(run.released, reference_vintage())


def release_years(run: MeasuredRun) -> tuple[float, ...]:
    """The vintage years the run is priced at: its span's two ends (MeasuredRun.releases), else its release."""
    if run.releases is None:
        return (vintage_years(run),)
    return tuple(years_between(month, reference_vintage()) for month in run.releases)


def select(runs: Iterable[MeasuredRun], pattern: str | None) -> list[MeasuredRun]:
    """Runs whose id, source or group contains `pattern` (all when None); none matching is an error."""
    runs = list(runs)
    if pattern is None:
        return runs
    chosen = [r for r in runs if _contains(pattern, r.id, r.source, r.group)]
    if runs and not chosen:
        raise PerfmodelError(
            f"--only {pattern}: no run's id, source or accelerator/precision group contains it "
            f"(e.g. '{runs[0].source}' or '{runs[0].group}')"
        )
    return chosen


def _contains(pattern: str, *fields: str) -> bool:
    return any(pattern.lower() in field.lower() for field in fields)


def collect_runs(
    data: str | Path | None,
    extra: Iterable[MeasuredRun] = (),
    only: str | None = None,
    with_bundled: bool = False,
    note: Callable[[str], None] = lambda _: None,
) -> tuple[list[MeasuredRun], list[Exclusion]]:
    """The runs a validation or a fit takes, for the CLI and the API alike: a CSV's (`data`) and `extra` (read from
    MLPerf logs), with the bundled rows when `with_bundled` or when neither is given, kept by `only` (`select`); the
    bundled exclusions come with the bundled rows, those whose id or reason contains `only` where it is given (the
    others are not what was asked about); `note` hears of the CSV's ignored columns (read_runs_csv)."""
    runs = [*(read_runs_csv(data, note) if data is not None else ()), *extra]
    excluded: tuple[Exclusion, ...] = ()
    if with_bundled or (data is None and not runs):
        bundled, excluded = bundled_runs()
        runs += bundled
    return select(runs, only), [e for e in excluded if only is None or _contains(only, e.id, e.reason)]
