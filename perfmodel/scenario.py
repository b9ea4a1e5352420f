"""What the user asks for: a scenario from a TOML file and/or command-line flags, validated by pydantic.

Flags override the file. Every problem becomes one line naming the file (or flag), the field and what is allowed.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from perfmodel.errors import PerfmodelError
from perfmodel.models import ModelSpec, get_model
from perfmodel.resources import data_dir

MAX_GPUS = 1_000_000
TOKENS_PER_STEP_TARGET = 4 * 2**20
"""Default global batch: about 4M tokens per step (Llama 3's first stage), rounded to a multiple of the GPU count."""

PositiveInt = Annotated[int, Field(ge=1, le=MAX_GPUS)]
Degree = Annotated[int, Field(ge=1, le=MAX_GPUS)]


class _Strict(BaseModel):
    """Unknown keys are errors (a typo is never ignored), and values must have the right type: strict mode refuses
    `tp = true` or `n_gpus = "8"` rather than reading them as 1 and 8."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, strict=True)


class ModelOverride(_Strict):
    """A model given in the scenario: a zoo id to start from (`base`), and/or shapes that replace its own."""

    base: str | None = None
    id: str | None = None
    name: str | None = None
    layers: int | None = Field(default=None, ge=1, le=10_000)
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


class Parallelism(_Strict):
    tp: Degree | None = None
    pp: Degree | None = None
    cp: Degree | None = None
    vp: Degree | None = None
    ep: Degree | None = None
    dp: Degree | None = None
    mbs: PositiveInt | None = None
    gbs: Annotated[int, Field(ge=1, le=10**9)] | None = None
    seq_len: Annotated[int, Field(ge=16, le=10_000_000)] = 8192
    recompute: Literal["none", "selective", "full"] | None = None
    zero: Literal[0, 1, 2, 3] | None = None

    @field_validator("zero", mode="before")
    @classmethod
    def _zero_is_a_number(cls, value: Any) -> Any:
        if isinstance(value, bool):  # a Literal[1] would take true
            raise ValueError("must be 0, 1, 2 or 3, not true/false")
        return value


class Cost(_Strict):
    usd_per_gpu_hour: Annotated[float, Field(gt=0, le=10_000, allow_inf_nan=False)] | None = None
    pue: Annotated[float, Field(ge=1.0, le=5.0, allow_inf_nan=False)] = 1.2


class Scenario(_Strict):
    name: str | None = None
    description: str | None = None
    model: str | ModelOverride = "llama3.1-70b"
    gpu: str | None = None
    system: str | None = None
    n_gpus: PositiveInt = 8
    precision: Literal["bf16", "fp8", "mxfp8", "nvfp4", "mxfp4"] = "bf16"
    tokens: Annotated[float, Field(gt=0, le=1e18, allow_inf_nan=False)] | None = None
    lora_rank: Annotated[int, Field(ge=0, le=65536)] = 0
    """0: full training; r > 0: LoRA adapters of rank r on the attention projections, base model frozen."""
    parallelism: Parallelism = Parallelism()
    cost: Cost = Cost()
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
        from perfmodel.mlperf import get_benchmark

        bench = get_benchmark(str(raw["benchmark"]))
        par = dict(raw.get("parallelism") or {})
        if raw.get("tokens") is not None:
            raise ValueError(f"tokens and benchmark exclude each other: {bench.id} defines the work to train")
        if raw.get("model") not in (None, bench.model):
            raise ValueError(f"model: {bench.id} trains {bench.model}; leave the model out")
        if par.get("seq_len") not in (None, bench.seq_len):
            raise ValueError(f"parallelism.seq_len: {bench.id} uses sequences of {bench.seq_len} tokens")
        return raw | {
            "model": bench.model,
            "lora_rank": bench.lora_rank,
            "parallelism": par | {"seq_len": bench.seq_len},
        }

    @field_validator("tokens", mode="before")
    @classmethod
    def _finite_tokens(cls, value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("must be a finite number of tokens")
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
            raise PerfmodelError(f"model: {describe_error(exc)}") from None

    def default_gbs(self) -> int:
        steps = math.ceil(TOKENS_PER_STEP_TARGET / (self.parallelism.seq_len * self.n_gpus))
        return self.n_gpus * steps


def describe_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    message = err["msg"].removeprefix("Value error, ")
    if not err["loc"]:
        return message
    field = ".".join(str(p) for p in err["loc"] if not isinstance(p, int) or len(err["loc"]) == 1)
    if err["type"] == "extra_forbidden":
        parent = err["loc"][:-1]
        allowed = _allowed_keys(parent)
        return f"field '{field}': unknown key; allowed: {', '.join(allowed)}"
    if err["type"] == "literal_error":
        return f"field '{field}': {err['msg'].replace('Input should be', 'must be')}"
    given = err.get("input")
    shown = f" (got {given!r})" if isinstance(given, str | int | float | bool) else ""
    return f"field '{field}': {message}{shown}"


def _allowed_keys(parent: tuple[Any, ...]) -> list[str]:
    model: type[BaseModel] = Scenario
    for key in parent:
        annotation = model.model_fields[str(key)].annotation
        candidates = [a for a in getattr(annotation, "__args__", (annotation,)) if isinstance(a, type)]
        model = next(a for a in candidates if issubclass(a, BaseModel))
    return list(model.model_fields)


LAYOUT_KEYS = ("tp", "pp", "cp", "vp", "ep", "dp", "mbs", "gbs", "recompute", "zero")
WORKLOAD_KEYS = ("model", "gpu", "system", "n_gpus", "benchmark")


def read_toml(source: Path, kind: str) -> dict[str, Any]:
    """A TOML file's tables, or one line saying why the `kind` file (scenario, sweep) cannot be read."""
    try:
        with source.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise PerfmodelError(f"{source}: no such {kind} file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise PerfmodelError(f"{source}: cannot read {kind} file ({type(exc).__name__})") from None
    except tomllib.TOMLDecodeError as exc:
        raise PerfmodelError(f"{source}: not valid TOML: {exc}") from None


def load_scenario(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Scenario:
    """A scenario from a TOML file, with flag overrides applied.

    `overrides` maps dotted keys ("parallelism.tp", "n_gpus") to values; None values are ignored. Without a file the
    default scenario is the base; when the overrides change its model, hardware or GPU count, its layout and global
    batch (tuned for 70B on 1,024 H100s) are dropped, so that they are chosen for the new question.
    """
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    source = Path(path) if path is not None else data_dir("scenarios") / "default.toml"
    raw = read_toml(source, "scenario")
    if path is None and any(key in overrides for key in WORKLOAD_KEYS):
        layout = raw.get("parallelism", {})
        raw["parallelism"] = {k: v for k, v in layout.items() if k not in LAYOUT_KEYS}
        if "benchmark" in overrides:  # the benchmark defines the model and the work
            raw = {k: v for k, v in raw.items() if k not in ("model", "tokens")}
            raw["parallelism"].pop("seq_len", None)
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        table = raw
        for parent in parents:
            table = table.setdefault(parent, {})
            if not isinstance(table, dict):
                raise PerfmodelError(f"{source}: field '{parent}' must be a table")
        table[leaf] = value
    try:
        scenario = Scenario.model_validate(raw)
        scenario.model_spec()
    except ValidationError as exc:
        raise PerfmodelError(f"{source}: {describe_error(exc)}") from None
    except PerfmodelError as exc:
        raise PerfmodelError(f"{source}: {exc}") from None
    return scenario
