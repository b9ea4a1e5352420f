"""What the user asks for: a scenario from a TOML file and/or command-line flags, validated by pydantic.

Flags override the file. Every problem becomes one line naming the file (or flag), the field and what is allowed.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.files import MAX_PATH_CHARS, check_depth, read_text
from perfmodel.inputs.hardware import get_accelerator, get_system, resolve
from perfmodel.inputs.models import MAX_LAYERS, ModelSpec, get_model
from perfmodel.inputs.resources import bundled_file, bundled_names, data_dir
from perfmodel.inputs.text import MAX_NAME_CHARS, MAX_TEXT_CHARS, check_text

MAX_GPUS = 1_000_000
MAX_TOKENS = 1e18
TOKENS_PER_STEP_TARGET = 4 * 2**20
"""Default global batch: about 4M tokens per step (Llama 3's first stage), rounded to a multiple of the GPU count."""
TOKENS_PER_STEP_CAP = 16 * 2**20
"""...but at most 16M tokens per step: the largest batch of Llama 3 405B's pre-training (Llama 3 paper, arXiv
2407.21783, section 3.4.1: 4M tokens, then 8M after 252M tokens, then 16M after 2.87T tokens; Table 4: 16M tokens
per batch on 16,384 GPUs). A batch that grew with the cluster (134M tokens on 16,384 GPUs) is beyond what anyone
has shown to converge."""
TOKENS_PER_STEP_PUBLISHED = 9216 * 8192
"""The largest batch with published convergence data the project carries: MLPerf Training v5.0 Llama 3.1 405B
allows GBS 1,152 to 9,216 sequences of 8,192 tokens, with reference convergence points (75.5M tokens; continued
pre-training from Meta's checkpoint, mlperf_benchmarks.md). Beyond it a prediction warns."""

TEXT_LIMITS = {"description": MAX_TEXT_CHARS, "calibration": MAX_PATH_CHARS}
"""Characters a scenario's string may have: a name or id MAX_NAME_CHARS, these more."""
PositiveInt = Annotated[int, Field(ge=1, le=MAX_GPUS)]
Degree = Annotated[int, Field(ge=1, le=MAX_GPUS)]


class _Strict(BaseModel):
    """Unknown keys are errors (a typo is never ignored), and values must have the right type: strict mode refuses
    `tp = true` or `n_gpus = "8"` rather than reading them as 1 and 8."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, strict=True)

    @field_validator("*", mode="before")
    @classmethod
    def _printable_text(cls, value: Any, info: ValidationInfo) -> Any:
        """Every string of a scenario (names, ids, file names) is printable text of bounded length: it reaches
        tables, CSV/XLSX cells, LaTeX and error lines."""
        if isinstance(value, str):
            return check_text(value, TEXT_LIMITS.get(info.field_name or "", MAX_NAME_CHARS))
        return value


class ModelOverride(_Strict):
    """A model given in the scenario: a zoo id to start from (`base`), and/or shapes that replace its own."""

    base: str | None = None
    id: str | None = None
    name: str | None = None
    layers: int | None = Field(default=None, ge=1, le=MAX_LAYERS)
    hidden: int | None = Field(default=None, ge=1, le=1_000_000)
    ffn: int | None = Field(default=None, ge=1, le=10_000_000)
    heads: int | None = Field(default=None, ge=1, le=100_000)
    kv_heads: int | None = Field(default=None, ge=1, le=100_000)
    vocab: int | None = Field(default=None, ge=1, le=100_000_000)
    tied_embeddings: bool | None = None
    mlp: Literal["swiglu", "gelu"] | None = None
    norm: Literal["rmsnorm", "layernorm"] | None = None
    bias: bool | None = None
    learned_positions: int | None = Field(default=None, ge=0, le=10_000_000)
    head_size: int | None = Field(default=None, ge=0, le=100_000)
    qk_norm: bool | None = None
    attention: Literal["gqa", "mla"] | None = None
    q_lora_rank: int | None = Field(default=None, ge=0, le=1_000_000)
    kv_lora_rank: int | None = Field(default=None, ge=0, le=1_000_000)
    qk_nope_dim: int | None = Field(default=None, ge=0, le=100_000)
    qk_rope_dim: int | None = Field(default=None, ge=0, le=100_000)
    v_head_dim: int | None = Field(default=None, ge=0, le=100_000)
    sliding_window: int | None = Field(default=None, ge=0, le=100_000_000)
    sliding_layers: int | None = Field(default=None, ge=0, le=10_000)
    attention_sinks: bool | None = None
    experts: int | None = Field(default=None, ge=0, le=100_000)
    top_k: int | None = Field(default=None, ge=0, le=100_000)
    shared_experts: int | None = Field(default=None, ge=0, le=1_000)
    moe_ffn: int | None = Field(default=None, ge=0, le=10_000_000)
    dense_layers: int | None = Field(default=None, ge=0, le=10_000)
    mtp_layers: int | None = Field(default=None, ge=0, le=100)
    expert_groups: int | None = Field(default=None, ge=0, le=100_000)
    group_top_k: int | None = Field(default=None, ge=0, le=100_000)
    dispatcher: Literal["flex", "alltoall"] | None = None


class Parallelism(_Strict):
    tp: Degree | None = None
    pp: Degree | None = None
    cp: Degree | None = None
    vp: Degree | None = None
    ep: Degree | None = None
    etp: Degree | None = None
    """Expert tensor-parallel size (MoE models): the experts' TP, separate from the attention's."""
    dp: Degree | None = None
    mbs: PositiveInt | None = None
    gbs: Annotated[int, Field(ge=1, le=10**9)] | None = None
    seq_len: Annotated[int, Field(ge=16, le=10_000_000)] = 8192
    recompute: Literal["none", "selective", "full"] | None = None
    recompute_layers: PositiveInt | None = None
    """Partial (block) recompute: only the first k layers of each pipeline chunk recompute in full, the others keep
    their activations (Megatron's recompute_method=block, recompute_num_layers=k); implies recompute 'full'. None:
    every layer that recomputes does."""
    zero: Literal[0, 1, 2, 3] | None = None

    @field_validator("zero", mode="before")
    @classmethod
    def _zero_is_a_number(cls, value: Any) -> Any:
        if isinstance(value, bool):  # a Literal[1] would take true
            raise ValueError("must be 0, 1, 2 or 3, not true/false")
        return value

    @model_validator(mode="before")
    @classmethod
    def _partial_recompute_is_full(cls, data: Any) -> Any:
        """recompute_layers is a full recompute of some layers: it sets recompute 'full' and excludes the others."""
        if isinstance(data, dict) and data.get("recompute_layers") is not None:
            if data.get("recompute") not in (None, "full"):
                raise ValueError(f"recompute_layers needs recompute 'full' (got {data.get('recompute')!r})")
            data = data | {"recompute": "full"}
        return data


class Cost(_Strict):
    usd_per_gpu_hour: Annotated[float, Field(gt=0, le=10_000, allow_inf_nan=False)] | None = None
    pue: Annotated[float, Field(ge=1.0, le=5.0, allow_inf_nan=False)] = 1.2
    mode: Literal["rent", "buy"] = "rent"
    """rent: the price per GPU-hour; buy: the cost of owning the systems (planning/tco.py)."""
    usd_per_system: Annotated[float, Field(gt=0, le=1e9, allow_inf_nan=False)] | None = None
    amortisation_years: Annotated[float, Field(gt=0, le=30, allow_inf_nan=False)] = 4.0
    utilisation: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 0.8
    usd_per_kwh: Annotated[float, Field(gt=0, le=10, allow_inf_nan=False)] = 0.08
    facility_usd_per_kw_month: Annotated[float, Field(ge=0, le=100_000, allow_inf_nan=False)] = 0.0

    @model_validator(mode="after")
    def _one_price(self) -> Cost:
        if self.mode == "buy" and self.usd_per_gpu_hour is not None:
            raise ValueError("buying (--buy, mode = 'buy') and a rental price (--usd-per-gpu-hour) exclude each other")
        return self


FAILURE_CLASSES = ("gpu", "host", "network", "software", "maintenance", "unknown", "planned")
"""The component classes of the goodput model (planning/goodput.py holds their rates and sources)."""


class Goodput(_Strict):
    """The failure and checkpoint model of a run (planning/goodput.py); every key optional."""

    rates: Literal["llama3", "none"] = "llama3"
    """llama3: the Llama 3 paper's interruption rates; none: a run that never fails (no goodput keys)."""
    failure_scale: Annotated[float, Field(gt=0, le=1000, allow_inf_nan=False)] = 1.0
    failures_per_million_gpu_hours: dict[str, Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)]] | None = None
    storage_gb_per_s_per_node: Annotated[float, Field(gt=0, le=10_000, allow_inf_nan=False)] | None = None
    restart_s: Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)] | None = None
    checkpoint_interval_s: Annotated[float, Field(gt=0, le=1e9, allow_inf_nan=False)] | None = None

    @field_validator("failures_per_million_gpu_hours")
    @classmethod
    def _known_classes(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        unknown = sorted(set(value or {}) - set(FAILURE_CLASSES))
        if unknown:
            raise ValueError(f"unknown failure class '{unknown[0]}'; valid: {', '.join(FAILURE_CLASSES)}")
        return value


class Scenario(_Strict):
    """One planning question: model, hardware, GPU count, precision, layout (what is left out is searched), the
    work to train (tokens or an MLPerf benchmark), cost and calibration. A scenario TOML file has these keys."""

    name: str | None = None
    description: str | None = None
    model: str | ModelOverride = "llama3.1-70b"
    gpu: str | None = None
    system: str | None = None
    n_gpus: PositiveInt = 8
    precision: Literal["bf16", "fp8", "mxfp8", "nvfp4", "mxfp4"] = "bf16"
    tokens: Annotated[float, Field(gt=0)] | None = None
    moe_imbalance: Annotated[float, Field(ge=1.0, le=64.0, allow_inf_nan=False)] = 1.0
    """MoE: tokens the busiest expert rank receives over the mean (1.0: balanced, as the published rows force)."""
    lora_rank: Annotated[int, Field(ge=0, le=65536)] = 0
    """0: full training; r > 0: LoRA adapters of rank r on the attention projections, base model frozen."""
    parallelism: Parallelism = Parallelism()
    cost: Cost = Cost()
    goodput: Goodput = Goodput()
    stack: Literal["megatron", "composer", "torchtitan", "deepspeed"] = "megatron"
    """The software stack (inputs/stacks.py): its attention kernel, TP overlap, FP8 support and fitted overheads."""
    vintage: Annotated[str, Field(pattern=r"^20\d\d-(0[1-9]|1[0-2])$")] | None = None
    """Software release month (YYYY-MM) to predict for: older releases are slower by the fitted software trend.
    Default: the calibration's reference vintage, the newest release in its data."""
    calibration: str | None = None
    """A calibration JSON (perfmodel calibrate), 'none' for the physical defaults; the bundled fit when left out."""
    benchmark: str | None = None
    """An MLPerf benchmark id (`mlperf-llama31-405b`, optionally `@v5.0`): it sets the model, sequence length and
    the work to train (samples to converge at the chosen GBS, plus evaluations) instead of `tokens`."""

    @model_validator(mode="before")
    @classmethod
    def _apply_benchmark(cls, raw: Any) -> Any:
        if not isinstance(raw, dict) or not raw.get("benchmark"):
            return raw
        from perfmodel.inputs.mlperf import get_benchmark

        bench = get_benchmark(str(raw["benchmark"]))
        par = dict(raw.get("parallelism") or {})
        if raw.get("tokens") is not None:
            raise ValueError(f"tokens and benchmark exclude each other: {bench.id} defines the work to train")
        if raw.get("model") not in (None, bench.model):
            trains = bench.model if isinstance(bench.model, str) else bench.model.get("id", bench.model.get("base"))
            raise ValueError(f"model: {bench.id} trains {trains}; leave the model out")
        if par.get("seq_len") not in (None, bench.seq_len):
            raise ValueError(f"parallelism.seq_len: {bench.id} uses sequences of {bench.seq_len} tokens")
        return raw | {
            "model": bench.model,
            "lora_rank": bench.lora_rank,
            "parallelism": par | {"seq_len": bench.seq_len},
        }

    @field_validator("vintage", mode="before")
    @classmethod
    def _release_month(cls, value: Any) -> Any:
        if isinstance(value, str) and not re.fullmatch(r"20\d\d-(0[1-9]|1[0-2])", value):
            raise ValueError("a software release month YYYY-MM, e.g. 2025-06")
        return value

    @field_validator("tokens", mode="before")
    @classmethod
    def _finite_tokens(cls, value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("must be a finite number of tokens")
        if isinstance(value, int | float) and not isinstance(value, bool) and value > MAX_TOKENS:
            raise ValueError(f"at most {MAX_TOKENS:.0e} tokens (Llama 3 trained on 1.5e13)")
        return value

    def model_spec(self) -> ModelSpec:
        if isinstance(self.model, str):
            return get_model(self.model)
        given = self.model.model_dump(exclude_none=True)
        base = given.pop("base", None)
        start = get_model(base).model_dump() if base else {"id": "custom", "name": "custom model"}
        if base and "id" not in given:
            start["id"] = f"{base}-custom" if given else base
        try:
            return ModelSpec.model_validate(start | given)
        except ValidationError as exc:
            raise PerfmodelError(f"model: {describe_error(exc, ModelSpec)}") from None

    def default_gbs(self, capped: bool = True) -> int:
        """About 4M tokens per step as a multiple of the GPU count, unless that passes 16M tokens: then the largest
        power of two of sequences within 16M tokens (2,048 of 8,192), which the search gives layouts that divide.
        `capped=False`: the multiple of the GPU count regardless, for a cluster too large for any layout to use
        the capped batch (the prediction then warns beyond published convergence data). Never below an MLPerf
        benchmark's minimum batch."""
        seq = self.parallelism.seq_len
        gbs = self.n_gpus * math.ceil(TOKENS_PER_STEP_TARGET / (seq * self.n_gpus))
        cap = max(1, TOKENS_PER_STEP_CAP // seq)
        chosen = gbs if gbs <= cap or not capped else 2 ** (cap.bit_length() - 1)
        if self.benchmark:
            from perfmodel.inputs.mlperf import get_benchmark

            minimum = get_benchmark(self.benchmark).min_gbs or 0
            chosen = chosen if chosen >= minimum else self.n_gpus * math.ceil(minimum / self.n_gpus)
        return chosen


TYPE_MISMATCH = frozenset(("string_type", "model_type", "dict_type", "model_attributes_type"))
"""Errors of a union branch the value's type does not match (a string where a table is allowed, or the reverse)."""
BRANCHES = {"str": "a string", "int": "a whole number", "float": "a number", "bool": "true or false"}


def describe_error(exc: ValidationError, root: type[BaseModel] | None = None) -> str:
    """The first problem of a validation error as one line: "field 'parallelism.tp': ..." (or the bare message)."""
    field, message = explain_error(exc, root)
    return f"field '{field}': {message}" if field else message


def explain_error(exc: ValidationError, root: type[BaseModel] | None = None) -> tuple[str | None, str]:
    """The first problem of a validation error: the dotted field (None for the whole scenario) and what is wrong.

    A value that fails every branch of a union (model = 5) says which types the field takes; a value that matches one
    branch (a [model] table) gets that branch's error, not the other branch's "should be a valid string".
    """
    errors = exc.errors()
    located = [(err, *_walk(err["loc"], err["type"], root or Scenario)) for err in errors]
    real = [item for item in located if not (item[2] and item[0]["type"] in TYPE_MISMATCH)]
    if not real:
        err, path, _, _ = located[0]
        branches = [BRANCHES.get(tag, "a table") for _, p, tags, _ in located if p == path for tag in tags[-1:]]
        return ".".join(path), f"must be {' or '.join(dict.fromkeys(branches))}{_shown(err.get('input'))}"
    err, path, _, parent = real[0]
    field = ".".join(path) or None
    if err["type"] == "extra_forbidden":
        return field, f"unknown key; allowed: {', '.join(parent.model_fields) if parent else ''}"
    if err["type"] in ("model_type", "dict_type"):
        return field, f"must be a table{_shown(err.get('input'))}"
    if err["type"] == "literal_error":
        return field, err["msg"].replace("Input should be", "must be")
    return field, err["msg"].removeprefix("Value error, ") + _shown(err.get("input"))


def _walk(
    loc: tuple[Any, ...], kind: str, root: type[BaseModel]
) -> tuple[list[str], list[str], type[BaseModel] | None]:
    """A pydantic error location as (field path, union branch tags, the model holding the last field)."""
    model: type[BaseModel] | None = root
    path: list[str] = []
    tags: list[str] = []
    for index, part in enumerate(loc):
        fields = model.model_fields if model is not None else {}
        if kind == "extra_forbidden" and index == len(loc) - 1:
            return [*path, str(part)], tags, model
        if isinstance(part, int) and path:  # an item of a list field: the list's own item model continues
            path[-1] += f"[{part}]"
        elif isinstance(part, str) and part in fields:
            path.append(part)
            annotation = fields[part].annotation
            candidates = [a for a in getattr(annotation, "__args__", (annotation,)) if isinstance(a, type)]
            model = next((a for a in candidates if issubclass(a, BaseModel)), None)
        else:
            tags.append(str(part))
            model = next((c for c in _Strict.__subclasses__() if c.__name__ == part), None)
    return path, tags, model


def _shown(value: Any) -> str:
    """' (got VALUE)' for a plain value, short: a 300-digit integer is shown as 1e+300."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return f" (got {value!r})" if isinstance(value, bool) else ""
    text = repr(value)
    if len(text) > 40:
        text = f"{float(value):.3g}" if isinstance(value, int | float) else repr(value[:37] + "...")
    return f" (got {text})"


LAYOUT_KEYS = ("tp", "pp", "cp", "vp", "ep", "etp", "dp", "mbs", "gbs", "recompute", "recompute_layers", "zero")
WORKLOAD_KEYS = ("model", "gpu", "system", "n_gpus", "benchmark")


def read_toml(source: Path, kind: str) -> dict[str, Any]:
    """A TOML file's tables, or one line saying why the `kind` file (scenario, sweep) cannot be read: it must be a
    regular file within its size cap and nesting depth (inputs/files.py). A bare name that is no file lists the
    bundled ones of its kind (they run by name: see bundled_file)."""
    names = bundled_names(f"{kind}s") if source.suffix == "" and not source.exists() else []
    if names:
        raise PerfmodelError(f"{source}: no such {kind} file (bundled {kind}s: {', '.join(names)})")
    text = read_text(source, kind)
    check_depth(text, str(source))
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PerfmodelError(f"{source}: not valid TOML: {exc}") from None


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as flat columns: {'breakdown': {'compute_s': 1}} -> {'breakdown.compute_s': 1}."""
    flat: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, dict):
            flat |= flatten(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


OPTION_FIELDS: dict[str, str] = {
    "model": "model",
    "gpu": "gpu",
    "system": "system",
    "n_gpus": "n_gpus",
    "precision": "precision",
    **{name: f"parallelism.{name}" for name in ("tp", "pp", "cp", "vp", "ep", "etp", "dp", "mbs", "gbs", "seq_len")},
    "recompute": "parallelism.recompute",
    "recompute_layers": "parallelism.recompute_layers",
    "zero": "parallelism.zero",
    "tokens": "tokens",
    "benchmark": "benchmark",
    "calibration": "calibration",
    "stack": "stack",
    "vintage": "vintage",
    "usd_per_gpu_hour": "cost.usd_per_gpu_hour",
    "pue": "cost.pue",
    "goodput": "goodput.rates",
    "failure_scale": "goodput.failure_scale",
    "checkpoint_gbps": "goodput.storage_gb_per_s_per_node",
    "restart_s": "goodput.restart_s",
    "checkpoint_interval_s": "goodput.checkpoint_interval_s",
    "buy": "cost.mode",
    "usd_per_system": "cost.usd_per_system",
    "amortisation_years": "cost.amortisation_years",
    "utilisation": "cost.utilisation",
    "electricity_usd_per_kwh": "cost.usd_per_kwh",
    "facility_usd_per_kw_month": "cost.facility_usd_per_kw_month",
}
"""The scenario fields that a command's flags and the Python API's keywords set, by keyword (the flag is --gpus
for n_gpus, --seq-len for seq_len): one table, so the CLI and the API cannot drift apart."""


def _model_file(path: Path) -> dict[str, Any]:
    """A model TOML file (the keys of a scenario's [model] table) as that table, checked here so that an error names
    the model file."""
    table = read_toml(path, "model")
    try:
        ModelOverride.model_validate(table)
    except ValidationError as exc:
        field, message = explain_error(exc, ModelOverride)
        raise PerfmodelError(f"{path}: field '{field}': {message}" if field else f"{path}: {message}") from None
    return table


def load_scenario(
    path: str | Path | None = None, overrides: dict[str, Any] | None = None, origins: dict[str, str] | None = None
) -> Scenario:
    """A scenario from a TOML file, with flag overrides applied.

    `overrides` maps dotted keys ("parallelism.tp", "n_gpus") to values; None values are ignored. `origins` names
    where each override came from ("--tp"), so that an error about it names the flag rather than the file. Without a
    file the default scenario is the base; when the overrides change its model, hardware or GPU count, its layout
    and global batch (tuned for 70B on 1,024 H100s) are dropped, so that they are chosen for the new question. A
    GPU or system override replaces the file's hardware as a whole (--system gb200-nvl72 on a file naming an H100).
    """
    source = bundled_file(path, "scenarios") if path is not None else data_dir("scenarios") / "default.toml"
    return scenario_from(read_toml(source, "scenario"), str(source), overrides, origins, default=path is None)


def with_overrides(scenario: Scenario, overrides: dict[str, Any], origins: dict[str, str] | None = None) -> Scenario:
    """A Scenario object with overrides applied and validated again, as a file's would be (the Python API's path)."""
    if all(value is None for value in overrides.values()):
        return scenario
    return scenario_from(scenario.model_dump(exclude_unset=True), "scenario", overrides, origins, default=False)


def scenario_from(
    raw: dict[str, Any], source: str, overrides: dict[str, Any] | None, origins: dict[str, str] | None, default: bool
) -> Scenario:
    """The scenario of `raw` tables (read from `source`) with overrides applied; `default`: `raw` is the built-in
    default scenario, whose layout is dropped when the overrides change the workload (see load_scenario)."""
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    if default and any(key in overrides for key in WORKLOAD_KEYS):
        layout = raw.get("parallelism", {})
        raw["parallelism"] = {k: v for k, v in layout.items() if k not in LAYOUT_KEYS}
        if "benchmark" in overrides:  # the benchmark defines the model and the work
            raw = {k: v for k, v in raw.items() if k not in ("model", "tokens")}
            raw["parallelism"].pop("seq_len", None)
    if "gpu" in overrides or "system" in overrides:
        raw = {k: v for k, v in raw.items() if k not in ("gpu", "system")}
    named = overrides.get("model", raw.get("model"))
    if isinstance(named, str) and named.endswith(".toml"):  # a model file: relative to the scenario file's folder
        folder = Path.cwd() if overrides.pop("model", None) else Path(source).parent
        raw["model"] = _model_file(folder / named)
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        table = raw
        for parent in parents:
            table = table.setdefault(parent, {})
            if not isinstance(table, dict):
                raise PerfmodelError(f"{source}: field '{parent}' must be a table")
        table[leaf] = value

    def located(field: str | None, message: str, named: bool = True) -> PerfmodelError:
        """The error with where the bad value came from: the flag that set the field, else the file (and the field,
        unless the message names it)."""
        given = next((k for k in overrides if field and (field == k or field.startswith(f"{k}."))), None)
        if given is not None:
            return PerfmodelError(f"{(origins or {}).get(given, f'override {given!r}')}: {message}")
        return PerfmodelError(f"{source}: field '{field}': {message}" if field and named else f"{source}: {message}")

    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        field, message = explain_error(exc)
        if field is None:  # the benchmark's check of the whole scenario
            raise located("benchmark", message, named=False) from None
        raise located(field, message) from None
    checks: list[tuple[str, Any]] = [("model", scenario.model_spec)]  # here, so that an error names file or flag
    if scenario.gpu is not None:
        checks.append(("gpu", lambda: get_accelerator(scenario.gpu)))
    if scenario.system is not None:
        checks += [
            ("system", lambda: get_system(scenario.system)),
            ("gpu", lambda: resolve(scenario.gpu, scenario.system)),
        ]
    for field, check in checks:
        try:
            check()
        except PerfmodelError as exc:
            raise located(field, str(exc), named=not str(exc).startswith(f"{field}:")) from None
    return scenario
