"""How near a prediction is to the measured runs its calibration saw, and how much wider its interval is beyond them.

A calibration keeps a compact row for every run it was fitted on or validated against (section 'evidence', written by
fitting/evidence.py): model, accelerator family, number format, GPU count, layout, stack and measured throughput. A
prediction reports the nearest of them and the axes on which it goes beyond every one: its accelerator family, its
number format on that family, and, among the rows on its family, its model class (dense by size decade, LoRA, MoE),
its scale band (GPU counts between powers of four) and its layout class (which parallel dimensions it uses, banded,
its ZeRO stage, full recompute or not) within that model class; and the ratio of its model TFLOP/s per GPU to the
best measured run of the same model on the same family and format.

Beyond a model class, scale band or layout class, the 80% interval widens by that axis's powers on its log-widths,
derived at calibration from the out-of-sample protocols' held-out rows that were beyond their own fit's rows on the
same axis (the smallest powers that bring 90% of them within each end). A family or a format without rows is
already answered by its own protocol's interval (generation, precision) and is named, not widened again. Above the
best measured run by more than the interval's high factor, the slow end reaches that run's throughput: nothing
measured supports the rest. A MoE interval (every MoE model held out of its own fit) takes only that last rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from typing import Any, NamedTuple

from perfmodel.errors import PerfmodelError
from perfmodel.physics.bounded import Bounded
from perfmodel.physics.calibration import Calibration, Interval
from perfmodel.physics.parallel import Layout

COLUMNS = (
    "id", "model", "name", "moe", "lora", "params_b", "accelerator", "family", "format", "n_gpus", "tp", "pp", "cp",
    "vp", "ep", "zero", "recompute", "seq_len", "stack", "source", "released", "metric", "measured",
    "tokens_per_s_per_gpu", "model_tflops_per_gpu",
)  # fmt: skip
"""A row of the calibration's 'evidence.rows': the run, as predicted (its layout where the source leaves some of it
to the stack), its measured metric and, where the metric is a steady step (not an MLPerf time to train), its
throughput per GPU and model TFLOP/s per GPU (perfmodel's convention: ModelSpec.model_flops_per_token)."""
FIELD = "evidence"
DOC = 'docs/validation.md, "How far from evidence"'

FAMILY, FORMAT, MODEL_CLASS, SCALE, LAYOUT, ABOVE = (
    "accelerator family", "number format", "model class", "scale band", "layout class", "above best measured",
)  # fmt: skip
WIDENED = (MODEL_CLASS, SCALE, LAYOUT)
"""The axes whose powers the calibration derives from held-out rows."""


def _billions(value: float) -> str:
    if value < 1:
        return f"{value * 1000:.0f}M"
    if value < 10:
        return f"{value:.1f}B"
    return f"{value:.0f}B" if value < 1000 else f"{value / 1000:.1f}T"


@cache
def model_class(params_b: float, moe: bool, lora: bool) -> str:
    """'MoE', or 'dense' and the parameter decade around the model's size (edges at 10^(k +- 1/2) billion), with
    ' LoRA' for fine-tuning: 'dense 32B-316B'."""
    if moe:
        kind = "MoE"
    else:
        decade = round(math.log10(params_b))
        kind = f"dense {_billions(10 ** (decade - 0.5))}-{_billions(10 ** (decade + 0.5))}"
    return kind + (" LoRA" if lora else "")


@cache
def scale_band(n_gpus: int) -> str:
    """The GPU counts between two powers of four holding `n_gpus`: '257-1,024 GPUs'."""
    high = 1
    while high < n_gpus:
        high *= 4
    return f"{high // 4 + 1:,}-{high:,} GPUs" if high > 1 else "1 GPU"


def _band(degree: int) -> str:
    return "1" if degree == 1 else "2-4" if degree <= 4 else "5+"


@cache
def layout_class(tp: int, pp: int, cp: int, vp: int, ep: int, zero: int, recompute: str) -> str:
    """Which parallel dimensions a layout uses, TP and PP banded (1, 2-4, 5+), VP, CP and EP used or not, its ZeRO
    stage (0 and 1 keep whole weights) and full recompute: 'TP2-4 PP5+ VP ZeRO-0/1'."""
    parts = [f"TP{_band(tp)}", f"PP{_band(pp)}"]
    parts += ["VP"] if vp > 1 else []
    parts += ["CP2+"] if cp > 1 else []
    parts += ["EP2+"] if ep > 1 else []
    parts += ["ZeRO-0/1" if zero <= 1 else f"ZeRO-{zero}"]
    return " ".join(parts + (["full recompute"] if recompute == "full" else []))


def of_layout(layout: Layout) -> str:
    return layout_class(layout.tp, layout.pp, layout.cp, layout.vp, layout.ep, layout.zero, layout.recompute)


def family_name(family: str) -> str:
    """An accelerator family as prose: 'blackwell-ultra' -> 'Blackwell Ultra', 'cdna3' -> 'CDNA3'."""
    return family.upper() if family.startswith("cdna") else family.replace("-", " ").title()


def format_name(fmt: str) -> str:
    return {"fp8-tensor": "FP8", "fp8-blockwise": "FP8 blockwise"}.get(fmt, fmt.upper())


class Row(NamedTuple):
    """One measured run of the calibration's evidence (COLUMNS)."""

    id: str
    model: str
    name: str
    moe: bool
    lora: bool
    params_b: float
    accelerator: str
    family: str
    format: str
    n_gpus: int
    tp: int
    pp: int
    cp: int
    vp: int
    ep: int
    zero: int
    recompute: str
    seq_len: int
    stack: str
    source: str
    released: str | None
    metric: str
    measured: float
    tokens_per_s_per_gpu: float | None
    model_tflops_per_gpu: float | None

    @property
    def model_class(self) -> str:
        return model_class(self.params_b, self.moe, self.lora)

    @property
    def layout_class(self) -> str:
        return layout_class(self.tp, self.pp, self.cp, self.vp, self.ep, self.zero, self.recompute)

    @property
    def scale_band(self) -> str:
        return scale_band(self.n_gpus)

    def describe(self) -> str:
        """'Llama 3.1 70B on 64 x NVIDIA H100 SXM 80GB, FP8, TP4 PP8 VP5 CP1 ZeRO-1, Megatron-Bridge, NeMo 25.11
        container: 1,602 tokens/s/GPU (row measured_runs.csv:121)'."""
        layout = f"TP{self.tp} PP{self.pp} VP{self.vp} CP{self.cp}" + (f" EP{self.ep}" if self.ep > 1 else "")
        layout += f" ZeRO-{self.zero}" + (" full recompute" if self.recompute == "full" else "")
        what = f"{self.name}{' (LoRA)' if self.lora else ''} on {self.n_gpus:,} x {self.accelerator}"
        if self.tokens_per_s_per_gpu is not None:
            measured = f"{self.tokens_per_s_per_gpu:,.0f} tokens/s/GPU"
        else:
            measured = f"{self.measured:,.1f} min to train"
        return f"{what}, {format_name(self.format)}, {layout}, {self.source}: {measured} (row {self.id})"


class Kind(NamedTuple):
    """What a column of the evidence rows holds: text, true/false, a count (a whole number >= 1), a ZeRO stage (0 to
    3) or a positive finite number; `nullable`: or null."""

    kind: str
    nullable: bool = False

    def allowed(self) -> str:
        words = {"text": "text", "flag": "true or false", "count": "a whole number >= 1", "stage": "0, 1, 2 or 3",
                 "number": "a positive number"}  # fmt: skip
        return words[self.kind] + (" or null" if self.nullable else "")

    def cell_ok(self, value: object) -> bool:
        return self.column_ok([value])

    def column_ok(self, values: list[Any]) -> bool:
        """Whether every value passes, tested on the column at once (its types, its least and largest values): a
        cell at a time, the bundled file's 15,000 cells cost a millisecond of every prediction."""
        present = [v for v in values if v is not None] if self.nullable else values
        types = {type(v) for v in present}
        if self.kind in ("text", "flag"):
            return types <= ({str} if self.kind == "text" else {bool})
        if not present:
            return True
        if self.kind in ("count", "stage"):
            low, high = (1, math.inf) if self.kind == "count" else (0, 3)
            return types == {int} and low <= min(present) and max(present) <= high
        return types <= {int, float} and min(present) > 0 and math.isfinite(math.fsum(present))


KINDS: dict[str, Kind] = {
    **dict.fromkeys(("id", "model", "name", "accelerator", "family", "format", "recompute", "stack", "source",
                     "metric"), Kind("text")),
    **dict.fromkeys(("moe", "lora"), Kind("flag")),
    **dict.fromkeys(("n_gpus", "tp", "pp", "cp", "vp", "ep", "seq_len"), Kind("count")),
    "zero": Kind("stage"),
    **dict.fromkeys(("params_b", "measured"), Kind("number")),
    "released": Kind("text", nullable=True),
    **dict.fromkeys(("tokens_per_s_per_gpu", "model_tflops_per_gpu"), Kind("number", nullable=True)),
}  # fmt: skip
"""What each column of a row holds."""


class Widening(NamedTuple):
    """Powers on an interval's log-widths (low end, high end) for a question beyond the evidence on one axis."""

    low: float
    high: float


class Keys(NamedTuple):
    """A row with the keys `_nearest` ranks it by, worked out once per index rather than once per question."""

    row: Row
    model: str
    accelerator: str
    model_class: str
    format: str
    scale_band: str
    log_n: float
    age: int
    """The rank of its release, newest 0 (rows of one release share it; a row without one is the oldest)."""
    layout_class: str


class Index(NamedTuple):
    """A calibration's evidence rows, by accelerator family, and its widening powers (`make_index`)."""

    rows: tuple[Row, ...]
    widening: dict[str, Widening]
    by_family: dict[str, list[Row]]
    keys: tuple[Keys, ...]
    keys_by_family: dict[str, list[Keys]]


def make_index(rows: Sequence[Row], widening: dict[str, Widening]) -> Index:
    releases = sorted({r.released or "" for r in rows}, reverse=True)
    age = {release: rank for rank, release in enumerate(releases)}
    by_family: dict[str, list[Row]] = {}
    keys_by_family: dict[str, list[Keys]] = {}
    keys = []
    for r in rows:
        key = Keys(r, r.model, r.accelerator, r.model_class, r.format, r.scale_band, math.log(r.n_gpus),
                   age[r.released or ""], r.layout_class)  # fmt: skip
        keys.append(key)
        by_family.setdefault(r.family, []).append(r)
        keys_by_family.setdefault(r.family, []).append(key)
    return Index(tuple(rows), widening, by_family, tuple(keys), keys_by_family)


class Ground(NamedTuple):
    """A question's measured ground, worked out once per model, family, format and GPU count (`ground`): the axes
    it goes beyond whatever its layout, the layout classes measured for its model class on its family, the best
    measured run of its model there, and the nearest rows; `at` finishes it for a layout."""

    widening: dict[str, Widening]
    model_class: str
    scale_band: str
    family: str
    format: str
    moe: bool
    beyond: tuple[str, ...]
    layouts: frozenset[str] | None
    """Layout classes of the rows of the question's model class on its family (None: no rows on the family)."""
    best: Row | None
    nearest: Row | None
    nearest_by_layout: dict[str, Row]
    """The nearest row of each layout class among the rows as near as the nearest but for their layout."""

    def at(self, layout: Layout, model_tflops_per_gpu: float | None, interval: Interval) -> Evidence:
        """The evidence of the question at `layout`, predicted at `model_tflops_per_gpu` (None: not known, a held-out
        MLPerf row's), with `interval` (its protocol's) widened where it goes beyond."""
        cls = of_layout(layout)
        beyond = self.beyond + ((LAYOUT,) if self.layouts is not None and cls not in self.layouts else ())
        best = self.best.model_tflops_per_gpu if self.best else None
        ratio = model_tflops_per_gpu / best if best and model_tflops_per_gpu else None
        beyond += (ABOVE,) if ratio is not None and ratio > interval.high else ()
        widened = widen(interval, beyond, ratio, self.widening, self.moe) if beyond else interval
        nearest = self.nearest_by_layout.get(cls, self.nearest)
        return Evidence(nearest, self.model_class, self.scale_band, cls, self.family, self.format, beyond, self.best,
                        ratio, interval, widened, self.widening, self.moe)  # fmt: skip


def ground(index: Index, model: str, params_b: float, moe: bool, lora: bool, accelerator: str, family: str, fmt: str,
           n_gpus: int) -> Ground:  # fmt: skip
    """What the evidence says of a question before its layout is known (Ground); `accelerator` its name (Row's),
    `fmt` its number format (physics.calibration.number_format of its precision). Kept per question (GROUNDS),
    whatever the context asking: a campaign's phases, a sweep's sequence lengths and a plan's batches ask the same
    one."""
    question = (id(index), model, params_b, moe, lora, accelerator, family, fmt, n_gpus)
    kept = GROUNDS.get(question)
    if kept is not None and kept[0] is index:
        return kept[1]
    made = _ground(index, model, params_b, moe, lora, accelerator, family, fmt, n_gpus)
    return GROUNDS.put(question, (index, made))[1]


GROUNDS: Bounded[tuple[Any, ...], tuple[Index, Ground]] = Bounded(256)
"""Grounds by question, kept with their index (an id is unique only while its object lives)."""


def _ground(index: Index, model: str, params_b: float, moe: bool, lora: bool, accelerator: str, family: str,
            fmt: str, n_gpus: int) -> Ground:  # fmt: skip
    """`ground` itself."""
    cls, band = model_class(params_b, moe, lora), scale_band(n_gpus)
    on_family = index.by_family.get(family, [])
    mine = [r for r in on_family if r.model_class == cls]
    if on_family:
        checks = ((FORMAT, fmt not in {r.format for r in on_family}), (MODEL_CLASS, not mine),
                  (SCALE, not any(r.scale_band == band for r in mine)))  # fmt: skip
        beyond, layouts = tuple(axis for axis, out in checks if out), frozenset(r.layout_class for r in mine)
    else:
        beyond, layouts = (FAMILY,), None
    same = [r for r in mine if r.model == model and r.format == fmt and r.model_tflops_per_gpu is not None]
    best = max(same, key=lambda r: r.model_tflops_per_gpu or 0.0, default=None)
    keys = index.keys_by_family.get(family) or index.keys
    nearest, by_layout = _nearest(keys, model, accelerator, cls, fmt, band, n_gpus)
    return Ground(index.widening, cls, band, family, fmt, moe, beyond, layouts, best, nearest, by_layout)


def _nearest(
    keys: Sequence[Keys], model: str, accelerator: str, cls: str, fmt: str, band: str, n_gpus: int
) -> tuple[Row | None, dict[str, Row]]:
    """The nearest row: of the question's model, else of its model class, else any (on its family where it has
    rows); then of its format, of the layout class asked (`Ground.at`), of its scale band, of the nearest GPU
    count, of its accelerator (a B200 question's own B200 row before its family's newer GB200 one), the newest.
    Returns the nearest whatever the layout, and the nearest of each layout class among the rows tied with it on
    model and format."""
    log_n = math.log(n_gpus)

    def tier(k: Keys) -> tuple[bool, bool, bool]:
        return k.model != model, k.model_class != cls, k.format != fmt

    def rank(k: Keys) -> tuple[Any, ...]:
        return *tier(k), k.scale_band != band, abs(k.log_n - log_n), k.accelerator != accelerator, k.age

    ranked = sorted(keys, key=rank)
    if not ranked:
        return None, {}
    by_layout: dict[str, Row] = {}
    first = tier(ranked[0])
    for k in ranked:
        if tier(k) != first:
            break
        by_layout.setdefault(k.layout_class, k.row)
    return ranked[0].row, by_layout


def widen(
    interval: Interval, beyond: Sequence[str], ratio: float | None, powers: dict[str, Widening], moe: bool = False
) -> Interval:
    """`interval` widened for a question beyond the evidence on the axes `beyond`: each sized axis (`powers`) raises
    the interval's distance from 1 on each side, in log terms, to its power, the largest of the axes beyond; above
    the best measured run (`ratio`: the prediction's model TFLOP/s over the best's), the slow end reaches that
    run's throughput. A MoE interval (`moe`) takes only the last rule."""
    low, high, protocol = interval
    sized = () if moe else [powers[a] for a in beyond if a in powers]
    if sized:
        low = low ** max(w.low for w in sized) if low < 1 else low
        high = high ** max(w.high for w in sized) if high > 1 else high
    if ratio is not None and ABOVE in beyond:
        high = max(high, ratio)
    return Interval(low, high, protocol)


class Evidence(NamedTuple):
    """How near a prediction is to the measured runs, and its interval widened where it goes beyond them."""

    nearest: Row | None
    model_class: str
    scale_band: str
    layout_class: str
    family: str
    format: str
    beyond: tuple[str, ...]
    best: Row | None
    ratio: float | None
    """The prediction's model TFLOP/s per GPU over the best measured run's (same model, family and format)."""
    base: Interval
    """The interval of the question's protocol, before widening."""
    interval: Interval
    powers: dict[str, Widening]
    """The calibration's widening powers per axis."""
    moe: bool

    @property
    def widened_by(self) -> dict[str, float]:
        """The axes that widen the interval, each with the widening it alone brings (width over `base`'s)."""
        width = self.base.high - self.base.low
        alone = {a: widen(self.base, [a], self.ratio, self.powers, self.moe) for a in self.beyond}
        return {a: (w.high - w.low) / width for a, w in alone.items() if w != self.base and width > 0}

    @property
    def widening(self) -> float:
        """The widened interval's width over the protocol's (1: not widened)."""
        width = self.base.high - self.base.low
        return (self.interval.high - self.interval.low) / width if width > 0 else 1.0

    def to_dict(self) -> dict[str, Any]:
        """The `evidence` record's fields (outputs/record.py)."""
        return {
            "nearest_row": self.nearest.id if self.nearest else None,
            "nearest": self.nearest.describe() if self.nearest else None,
            "model_class": self.model_class,
            "scale_band": self.scale_band,
            "layout_class": self.layout_class,
            "beyond": "; ".join(self.beyond),
            "best_measured_row": self.best.id if self.best else None,
            "best_measured_model_tflops_per_gpu": self.best.model_tflops_per_gpu if self.best else None,
            "ratio_to_best_measured": self.ratio,
            "widening": self.widening,
            "widened_by": "; ".join(self.widened_by),
        }

    def axis_text(self, axis: str) -> str:
        family, fmt = family_name(self.family), format_name(self.format)
        return {
            FAMILY: f"no measured run on {family} (interval: generation protocol)",
            FORMAT: f"no {fmt} run on {family} (interval: precision protocol)",
            MODEL_CLASS: f"no {self.model_class} model measured on {family}",
            SCALE: f"no {self.model_class} model measured on {self.scale_band} of {family}",
            LAYOUT: f"layout class {self.layout_class} never measured for {self.model_class} models on {family}",
            ABOVE: f"{self.ratio or 0:.2f}x the model TFLOP/s per GPU of the best measured run of this model on "
            f"{family} in {fmt} ({self._best_text()})",
        }[axis]

    def _best_text(self) -> str:
        best = self.best
        if best is None or best.tokens_per_s_per_gpu is None:
            return ""
        return f"{best.tokens_per_s_per_gpu:,.0f} tokens/s/GPU on {best.n_gpus:,} GPUs, row {best.id}"

    def lines(self) -> list[str]:
        """The evidence in full (`perfmodel explain`): the question's classes, nearest and best measured runs, the
        axes beyond and how the interval was widened."""
        family, fmt = family_name(self.family), format_name(self.format)
        found = [
            f"question: {self.model_class}, {self.scale_band}, layout class {self.layout_class}, on {family} in {fmt}",
            f"nearest measured: {self.nearest.describe() if self.nearest else 'none'}",
        ]
        if self.best is not None and self.ratio is not None:
            found.append(f"best measured of this model on {family} in {fmt}: {self.best.describe()}; this prediction "
                         f"is {self.ratio:.2f}x its model TFLOP/s per GPU")  # fmt: skip
        found += [f"beyond: {self.axis_text(a)}" for a in self.beyond] or ["beyond: nothing (within the evidence)"]
        base, widened = self.base, self.interval
        rule = "; ".join(f"{a} {f:.2f}x" for a, f in self.widened_by.items()) or "not widened"
        found.append(f"80% interval on a predicted time: x{base.low:.3f}-x{base.high:.3f} ({base.protocol} "
                     f"residuals) -> x{widened.low:.3f}-x{widened.high:.3f} ({rule})")  # fmt: skip
        return found

    def note(self) -> str:
        """The nearest measured run, one line under the table."""
        return f"Nearest measured: {self.nearest.describe()}" if self.nearest else "Nearest measured: none"

    def warning(self) -> list[str]:
        """Lines under the table when the question goes beyond the evidence: each axis, and what the interval
        became (none within it)."""
        if not self.beyond:
            return []
        lines = [f"Warning: beyond the measured runs ({DOC}):", *(f"  - {self.axis_text(a)}" for a in self.beyond)]
        if self.moe and not self.widened_by:
            lines.append("  80% interval not widened: its MoE models are each predicted by a fit without them")
        if self.widened_by:
            low, high = self.base.low, self.base.high
            each = ", ".join(f"{axis} {factor:.2f}x" for axis, factor in self.widened_by.items())
            lines.append(
                f"  80% interval {self.widening:.2f}x as wide: x{low:.3f}-x{high:.3f} -> "
                f"x{self.interval.low:.3f}-x{self.interval.high:.3f} on a predicted time ({each})"
            )
        return lines


def index(calibration: Calibration) -> Index | None:
    """The calibration's evidence (None: a file without the section), checked; kept per calibration object."""
    found = _INDEXES.get(id(calibration))
    if found is not None and found[0] is calibration:
        return found[1]
    return _INDEXES.put(id(calibration), (calibration, _index(calibration)))[1]


_INDEXES: Bounded[int, tuple[Calibration, Index | None]] = Bounded(8)
"""Indexes by calibration object (kept with it: an id is unique only while its object lives)."""


def _index(calibration: Calibration) -> Index | None:
    section = calibration.provenance.get(FIELD)
    if section is None:
        return None
    where = calibration.source
    if not isinstance(section, dict) or section.get("columns") != list(COLUMNS):
        raise PerfmodelError(f"{where}: field '{FIELD}.columns' must be {list(COLUMNS)}")
    rows = section.get("rows")
    if not isinstance(rows, list) or not all(type(r) is list and len(r) == len(COLUMNS) for r in rows):
        raise PerfmodelError(f"{where}: field '{FIELD}.rows' must list rows of {len(COLUMNS)} values (its columns)")
    for column, name in enumerate(COLUMNS):
        kind = KINDS[name]
        if not kind.column_ok([r[column] for r in rows]):
            number = next(k for k, r in enumerate(rows) if not kind.cell_ok(r[column]))
            value = rows[number][column]
            raise PerfmodelError(
                f"{where}: field '{FIELD}.rows[{number}].{name}' is {value!r}; allowed: {kind.allowed()}"
            )
    return make_index([Row(*r) for r in rows], _widening(where, section.get("widening", {})))


def _widening(where: str, section: object) -> dict[str, Widening]:
    if not isinstance(section, dict) or not set(section) <= set(WIDENED):
        raise PerfmodelError(f"{where}: field '{FIELD}.widening' must map axes ({', '.join(WIDENED)}) to powers")
    powers = {}
    for axis, entry in section.items():
        low, high = (entry.get(k) if isinstance(entry, dict) else None for k in ("low_power", "high_power"))
        if not all(isinstance(v, int | float) and not isinstance(v, bool) and 1 <= v <= 10 for v in (low, high)):
            raise PerfmodelError(
                f"{where}: field '{FIELD}.widening.{axis}' must hold low_power and high_power, each from 1 to 10"
            )
        powers[axis] = Widening(float(low), float(high))  # type: ignore[arg-type]
    return powers
