"""Layouts sweeps: given layouts priced as arrays, up to a million points per sweep file.

A sweep file with a [sweep.layouts] table of layout axes crosses every point of its [sweep] (model x GPU x
precision x GPU count x what-if: a context and a cluster size) with every combination of the listed layouts:

    [sweep]
    models = ["llama3.1-70b"]
    gpus = ["h100-sxm", "b200"]
    n_gpus = [1024]
    [sweep.set]
    tokens = 15e12
    [sweep.layouts]                       # tp, pp, cp, dp, vp, ep, etp, mbs, gbs, recompute, zero
    tp = [1, 2, 4, 8]
    pp = [1, 2, 4, 8, 16]
    cp = [1, 2]
    vp = [1, 2]
    mbs = [1, 2]
    recompute = ["none", "selective", "full"]
    zero = [0, 1]

A dimension not listed comes from [sweep.set] or the base scenario; tp, pp, cp, vp, mbs, recompute and zero must
be given there or here, and the rest follow `predict` for a given layout: DP fills the GPU count, EP and ETP are 1,
the global batch is the scenario's default. The layouts of one point share its context, so they are priced by one
array call of the step model per chunk of at most CHUNK layouts (planning.batch.price_layouts) rather than one
prediction each; a chunk is plain data, so chunks run on processes or as Ray tasks. Each point's row has the
prediction record's columns up to the run's cost (`COLUMNS`; no interval or goodput columns); a layout that breaks a
rule keeps its identity and layout and says which rules in `error`, as `predict` would; one that does not fit in
memory keeps its prices and says so in `error`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel.errors import PerfmodelError
from perfmodel.physics.parallel import RECOMPUTE_MODES, ZERO_STAGES, Layout, LayoutNumbers, Rule, valid
from perfmodel.physics.step import BREAKDOWN, LayoutVars
from perfmodel.planning.batch import price_layouts
from perfmodel.planning.predict import context_for, layout_free, rates
from perfmodel.planning.sweep import MAX_POINTS, Point, point_hardware
from perfmodel.planning.training import training_run
from perfmodel.planning.workers import spread

LAYOUT_AXES = ("tp", "pp", "cp", "dp", "vp", "ep", "etp", "mbs", "gbs", "recompute", "zero")
REQUIRED = ("tp", "pp", "cp", "vp", "mbs", "recompute", "zero")
"""What `predict` needs given to take a layout as it is rather than search it."""
MAX_LAYOUT_POINTS = 1_000_000
"""Points of one layouts sweep: ~10 s of pricing and ~100 MB of rows per chunk written out as it comes."""
CHUNK = 16_384
"""Layouts priced in one array call: tens of MB of intermediate arrays, and a Ray task's worth of work."""
Columns = dict[str, list[Any]]
"""A chunk's rows as columns: name -> one value per layout (None where it does not apply)."""


def layout_axes(path: Path, table: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """The [sweep.layouts] table as (dimension, values) pairs in the file's order, each value checked."""

    if not isinstance(table, dict) or not table:
        raise PerfmodelError(f"{path}: field 'sweep.layouts' must be a table of layout lists, e.g. tp = [1, 2, 4]")
    axes = []
    for name, values in table.items():
        field = f"{path}: field 'sweep.layouts.{name}'"
        if name not in LAYOUT_AXES:
            raise PerfmodelError(f"{field}: unknown layout dimension; allowed: {', '.join(LAYOUT_AXES)}")
        if not isinstance(values, list) or not values:
            raise PerfmodelError(f"{field} must be a non-empty list")
        if name == "recompute":
            allowed, what = set(RECOMPUTE_MODES), f"one of {', '.join(RECOMPUTE_MODES)}"
            ok = all(isinstance(v, str) and v in allowed for v in values)
        elif name == "zero":
            what = "ZeRO stages 0, 1, 2 or 3"
            ok = all(type(v) is int and v in ZERO_STAGES for v in values)
        else:
            what = "whole numbers >= 1"
            ok = all(type(v) is int and v >= 1 for v in values)
        if not ok:
            raise PerfmodelError(f"{field}: each value must be {what} (got {values})")
        axes.append((name, tuple(values)))
    return tuple(axes)


def check_count(path: Path, points: int, sizes: str, axes: Sequence[tuple[str, Sequence[Any]]]) -> None:
    """Refuse, before any point is built, a layouts sweep of more than MAX_LAYOUT_POINTS points, or of more than
    MAX_POINTS points of the [sweep] (each is a scenario, checked and priced on its own)."""
    if points > MAX_POINTS:
        raise PerfmodelError(
            f"{path}: field 'sweep': {points:,} points ({sizes}) to cross with [sweep.layouts]; at most "
            f"{MAX_POINTS:,}: list more layouts and fewer points, or split it"
        )
    layouts = math.prod(len(values) for _, values in axes)
    if points * layouts > MAX_LAYOUT_POINTS:
        raise PerfmodelError(
            f"{path}: field 'sweep.layouts': {points * layouts:,} points ({points:,} points of the sweep ({sizes}) x "
            f"{layouts:,} layouts ({' x '.join(str(len(v)) for _, v in axes)})); at most {MAX_LAYOUT_POINTS:,} per "
            "sweep file: split it"
        )


@dataclass(frozen=True)
class Chunk:
    """Layouts start..stop (in the order of the layout axes' cross product) of one point: plain data for a task."""

    point: Point
    axes: tuple[tuple[str, tuple[Any, ...]], ...]
    start: int
    stop: int


@dataclass(frozen=True)
class LayoutSweep:
    """The points of a sweep file, each crossed with every combination of `axes`."""

    path: Path
    points: tuple[Point, ...]
    axes: tuple[tuple[str, tuple[Any, ...]], ...]

    @classmethod
    def checked(cls, path: Path, points: tuple[Point, ...], axes: tuple[tuple[str, tuple[Any, ...]], ...]) -> Any:
        """The sweep, once every point is known to leave nothing to search and to price a token budget."""
        listed = {name for name, _ in axes}
        for point in points:
            scenario = point.scenario()
            missing = [n for n in REQUIRED if n not in listed and getattr(scenario.parallelism, n) is None]
            if missing:
                raise PerfmodelError(
                    f"{path}: field 'sweep.layouts': a layouts sweep prices given layouts; give {missing[0]} (a list "
                    f"here, or parallelism.{missing[0]} in [sweep.set] or the base scenario)"
                )
            if scenario.benchmark:
                raise PerfmodelError(
                    f"{path}: field 'sweep.layouts': a layouts sweep prices token budgets, not MLPerf benchmarks "
                    f"({scenario.benchmark}); sweep a benchmark without [sweep.layouts]"
                )
        return cls(path, points, axes)

    @property
    def layouts(self) -> int:
        return math.prod(len(values) for _, values in self.axes)

    @property
    def size(self) -> int:
        return len(self.points) * self.layouts

    def chunks(self, size: int = CHUNK) -> list[Chunk]:
        """The sweep in chunks of at most `size` layouts of one point, in the order of the rows."""
        return [Chunk(point, self.axes, start, min(start + size, self.layouts))
                for point in self.points for start in range(0, self.layouts, size)]  # fmt: skip


def run(
    sweep: LayoutSweep,
    jobs: int = 1,
    executor: str = "local",
    address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    size: int = CHUNK,
) -> Iterator[Columns]:
    """Every chunk's columns, in the order of the rows, each as soon as it and those before it are priced."""
    chunks = sweep.chunks(size)
    waiting: dict[int, Columns] = {}
    following = 0
    for done, (index, columns) in enumerate(spread(price_chunk, chunks, jobs, executor, address), 1):
        waiting[index] = columns
        if progress is not None:
            progress(done, len(chunks))
        while following in waiting:
            yield waiting.pop(following)
            following += 1


def _axis_columns(chunk: Chunk) -> dict[str, Any]:
    """The listed dimensions' values of every layout of the chunk (recompute as its index)."""

    sizes = [len(values) for _, values in chunk.axes]
    index = np.unravel_index(np.arange(chunk.start, chunk.stop), sizes)
    columns = {}
    for (name, values), picks in zip(chunk.axes, index, strict=True):
        codes = [RECOMPUTE_MODES.index(v) for v in values] if name == "recompute" else values
        columns[name] = np.asarray(codes, dtype=np.int64)[picks]
    return columns


def _layout_numbers(chunk: Chunk, scenario: Any) -> Any:
    """The chunk's layouts as LayoutNumbers of int arrays: a listed dimension from its axis, the others as `predict`
    takes a given layout (planning.predict.choose_layout): the scenario's value, DP filling the GPU count, EP and ETP
    1, the default batch (uncapped where the capped one does not divide among the replicas)."""

    listed = _axis_columns(chunk)
    par, n, count = scenario.parallelism, scenario.n_gpus, chunk.stop - chunk.start

    def column(name: str, default: Any) -> Any:
        return listed[name] if name in listed else np.full(count, default, dtype=np.int64)

    tp, pp, cp, vp, mbs, zero = (column(k, getattr(par, k)) for k in ("tp", "pp", "cp", "vp", "mbs", "zero"))
    rc = column("recompute", RECOMPUTE_MODES.index(par.recompute) if par.recompute is not None else 0)
    dp = listed["dp"] if "dp" in listed else np.full(count, par.dp) if par.dp else np.maximum(1, n // (tp * pp * cp))
    ep, etp = column("ep", par.ep or 1), column("etp", par.etp or 1)
    if "gbs" in listed or par.gbs:
        gbs = column("gbs", par.gbs)
    else:
        capped, uncapped = scenario.default_gbs(), scenario.default_gbs(capped=False)
        gbs = np.where(capped % (dp * mbs) != 0, uncapped, capped)
    return LayoutNumbers(tp, pp, cp, dp, vp, ep, mbs, gbs, par.seq_len, rc, zero, etp)


def _rule_errors(numbers: Any, invalid: Any, model: Any, n_gpus: int, rules: tuple[Rule, ...]) -> list[str]:
    """The error of each invalid layout: the rules it breaks, in the words `predict` uses for a given layout."""

    broken = np.stack([np.broadcast_to(~np.asarray(r.holds(numbers, model, n_gpus), bool), invalid.shape)
                       for r in rules])[:, invalid]  # fmt: skip
    codes = (broken.astype(np.int64) << np.arange(len(rules), dtype=np.int64)[:, None]).sum(axis=0)  # rules as bits
    patterns, which = np.unique(codes, return_inverse=True)
    explains = [[rule.explain for i, rule in enumerate(rules) if int(code) >> i & 1] for code in patterns]
    values = zip(*(np.broadcast_to(np.asarray(x), invalid.shape)[invalid].tolist() for x in numbers), strict=True)
    errors = []
    for one, pattern in zip(map(LayoutNumbers._make, values), which.reshape(-1).tolist(), strict=True):
        layout = Layout(one.tp, one.pp, one.cp, one.dp, one.vp, one.ep, one.mbs, one.gbs, one.seq_len,
                        RECOMPUTE_MODES[one.recompute], one.zero, one.etp)  # fmt: skip
        reasons = "; ".join(explain(one, model, n_gpus) for explain in explains[pattern])
        errors.append(f"invalid layout {layout.describe()}: {reasons}")
    return errors


def price_chunk(chunk: Chunk) -> Columns:
    """The rows of a chunk's layouts, as columns: identity, layout, then the priced figures of the valid ones."""

    scenario = chunk.point.scenario()
    ctx = context_for(scenario, hardware=point_hardware(chunk.point, scenario))
    numbers, n, count = _layout_numbers(chunk, scenario), scenario.n_gpus, chunk.stop - chunk.start
    ok = np.broadcast_to(np.asarray(valid(numbers, ctx.model, n, ctx.rules), bool), (count,))
    hw, md = ctx.hardware, ctx.model
    columns: Columns = {
        "model": [md.id] * count,
        "accelerator": [hw.accelerator.id] * count,
        "system": [hw.system.id] * count,
        "n_gpus": [n] * count,
        "precision": [scenario.precision] * count,
    }
    dims = ("tp", "pp", "cp", "dp", "vp", "ep", *(("etp",) if md.is_moe else ()), "mbs", "gbs")
    for name in dims:
        columns[f"parallelism.{name}"] = np.broadcast_to(getattr(numbers, name), (count,)).tolist()
    columns["parallelism.seq_len"] = [numbers.seq_len] * count
    modes = np.array(RECOMPUTE_MODES, dtype=object)
    columns["parallelism.recompute"] = modes[np.broadcast_to(numbers.recompute, (count,))].tolist()
    columns["parallelism.zero"] = np.broadcast_to(numbers.zero, (count,)).tolist()
    kept = np.flatnonzero(ok)
    order = LayoutVars._fields  # LayoutNumbers has each (recompute_layers 0: not swept)
    lv = LayoutVars(*(np.broadcast_to(np.asarray(getattr(numbers, k), float), (count,))[kept] for k in order))
    figures = _figures(scenario, ctx, lv, price_layouts(ctx, lv, len(kept)))  # none kept: the columns, empty
    for name, values in figures.items():
        if isinstance(values, np.ndarray) and values.dtype.kind == "f" and not np.isfinite(values).all():
            raise PerfmodelError(f"{name} is {values[~np.isfinite(values)][0]}: not written (no output holds a "
                                 "non-finite number)")  # fmt: skip
        full = np.full(count, None, dtype=object)
        full[kept] = values.tolist() if isinstance(values, np.ndarray) else values
        columns[name] = full.tolist()
    errors = np.full(count, None, dtype=object)
    if not ok.all():
        invalid = ~ok
        errors[invalid] = _rule_errors(numbers, invalid, md, n, ctx.rules)
    if len(kept):
        need, capacity = np.asarray(figures["memory_per_gpu_gb"]), np.asarray(figures["memory_capacity_gb"])
        for k in np.flatnonzero(~np.asarray(figures["fits_in_memory"])):
            errors[kept[k]] = (
                f"does not fit in memory: needs {need[k]:,.1f} GB per GPU, the {hw.accelerator.id} has "
                f"{capacity[k]:,.1f} GB"
            )
    columns["whatif"] = [chunk.point.whatif] * count
    columns["error"] = errors.tolist()
    return columns


def _figures(scenario: Any, ctx: Any, lv: Any, step: Any) -> Mapping[str, Any]:
    """The prediction record's priced columns (Prediction.to_dict, up to the run's cost) for priced layouts."""

    n = scenario.n_gpus
    step_s = step.step_time_s
    rate = rates(lv.gbs, ctx.seq_len, n, step_s, ctx.model, scenario, ctx.hardware)
    tokens_per_s = rate.tokens_per_s
    price = layout_free(scenario, ctx, n, calibrated=True).price
    figures: dict[str, Any] = {
        "step_time_s": step_s,
        "tokens_per_s": tokens_per_s,
        "tokens_per_s_per_gpu": rate.tokens_per_s_per_gpu,
        "model_tflops_per_gpu": rate.model_tflops_per_gpu,
        "mfu": rate.mfu_of_precision,
        "mfu_bf16": rate.mfu_bf16,
        "mfu_of_precision": rate.mfu_of_precision,
        "memory_per_gpu_gb": step.memory.total / 1e9,
        "memory_capacity_gb": np.full(len(step_s), step.hbm_bytes / 1e9),
        "fits_in_memory": step.memory.total <= step.hbm_bytes,
    }
    figures |= {f"memory_gb.{k}": v / 1e9 for k, v in step.memory._asdict().items()}
    if scenario.tokens is not None:
        run = training_run(scenario.tokens, scenario.tokens / tokens_per_s, n, price,
                           ctx.hardware.it_power_w_per_gpu, scenario.cost.pue)  # fmt: skip
        figures |= {
            "tokens_to_train": [run.tokens] * len(step_s),
            "time_to_train_s": run.time_s,
            "time_to_train_min": run.time_s / 60,
            "time_to_train_days": run.time_s / 86400,
            "gpu_hours": run.gpu_hours,
        }
    rows = len(step_s)
    constant = {"usd_per_gpu_hour": price.usd_per_gpu_hour, "min_usd_per_gpu_hour": price.minimum,
                "max_usd_per_gpu_hour": price.maximum, "price_source": price.source, "price_basis": price.basis,
                "price_note": price.note}  # fmt: skip
    figures |= {k: [v] * rows for k, v in constant.items()}
    if scenario.tokens is not None:
        costs = {"cost_usd": run.cost_usd, "cost_usd_at_min_price": run.cost_usd_at_min_price,
                 "cost_usd_at_max_price": run.cost_usd_at_max_price}  # fmt: skip
        figures |= {k: [None] * rows if v is None else v for k, v in costs.items()} | {"energy_kwh": run.energy_kwh}
    figures["pue"] = [scenario.cost.pue] * rows
    parts = (*BREAKDOWN, *(("ep_comm_exposed_s",) if ctx.model.is_moe else ()))
    figures |= {f"breakdown.{name}": getattr(step, name) for name in parts}
    figures["cost_mode"] = [scenario.cost.mode] * rows
    return figures
