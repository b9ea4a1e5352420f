"""Training logs as measured runs: the steady step time a Megatron, NeMo 2 or torchtitan run printed, line by line.

Formats, from the stacks' logging code of the versions `perfmodel launch` cites:
- Megatron-Bridge 0.3.1, megatron/bridge/training/utils/train_utils.py `training_log`, and Megatron-LM's
  megatron/training/training.py `training_log` (as megatron-core 0.17.1's sdist ships it; its date has
  microseconds): `[date] iteration {:8d}/{:8d} | consumed samples: ... | elapsed time per iteration (ms): {:.1f} |
  ... | global batch size: {:5d} | ...`, every `log_interval` iterations, the mean over that interval.
- NeMo 2 (nemo-toolkit 2.7.3), nemo/lightning/pytorch/callbacks/progress_printer.py `ProgressPrinter`:
  `Training epoch {e}, iteration {n}/{total} | {metric}: {value} | ...`, each metric averaged over the log interval,
  an integral float printed as an int and the others `{:.4}`; the recipes' TimingCallback logs `train_step_timing in
  s` (seconds) and the data sampler `global_batch_size`.
- torchtitan 0.2.0, torchtitan/components/metrics.py `MetricsProcessor.log`: `step: {step:2}  loss: ...  grad_norm:
  ...  memory: {:5.2f}GiB({:.2f}%)  tps: {round(tps):,}  tflops: ...  mfu: {:.2f}%`, tps being tokens per second per
  device, with ANSI colours when on a terminal, behind the logger's and torchrun's `[rankN]:` prefixes; its
  `log_validation` lines (`validate step: {step:2}  loss: ...`, L478) are not training steps and are passed over.
The log does not say which model, hardware or layout ran it (the Megatron line gives the global batch): that comes
from the caller, as a scenario. Memory stays bounded: one line at a time, 16 bytes per logged step. A folder is one
run's per-rank logs (torchrun's --log-dir writes one file per rank), merged step by step.
"""

from __future__ import annotations

import os
import re
import stat
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel.errors import PerfmodelError, shown
from perfmodel.fitting.runs import MeasuredRun, check_scenario
from perfmodel.inputs.files import check_path
from perfmodel.inputs.precision import TE_FP8_RECIPES
from perfmodel.inputs.scenario import option_flag

MAX_LINE_BYTES = 65_536
"""Real iteration lines are under 1 kB; a longer line is skipped and counted, never held whole."""
WARMUP_SHARE = 0.1
"""Logged steps skipped as warm-up when the caller names none: the first tenth (at least one), where compilation,
allocator growth and NCCL set-up land."""
OUTLIER_Z = 3.5
"""A step further than this many robust standard deviations (1.4826 MAD) from the median is flagged (Iglewicz and
Hoaglin's modified z-score cut-off): a straggler, a recompilation, a checkpoint write."""
OUTLIER_SHARE = 0.05
"""... and more than this share of it: steady steps of a healthy run sit within a few tenths of a percent, so the
z-score alone would flag noise."""
_ANSI = re.compile(rb"\x1b\[[0-9;]*m")
_MEGATRON = re.compile(rb"iteration\s+(\d+)/\s*\d+\s*\|.*?elapsed time per iteration \(ms\):\s*([0-9.]+)\s*\|")
_NEMO = re.compile(rb"epoch \d+, iteration (\d+)/\d+ \|.*?\| train_step_timing in s: ([0-9.]+)")
_TITAN = re.compile(rb"step:\s*(\d+)\s+loss:.*?tps:\s*([0-9,]+)\s")
_MEMORY_REPORT = b") memory ("
_MEMORY = (
    (b"memory (MB) |", re.compile(rb"\| max reserved: ([0-9.]+)"), 2**20),
    (b"memory (GB) |", re.compile(rb"\| peak_reserved_mem: ([0-9.]+)"), 1e9),
)
"""Peak reserved memory in Megatron's memory reports (marker, pattern, bytes per unit), lines of their own after
`_MEMORY_REPORT`: Megatron-LM's report_memory (megatron/training/utils.py L281-293 of megatron-core 0.17.1: `[Rank r]
(after n iterations) memory (MB) | ... | max reserved: X`, MiB) and Megatron-Bridge 0.3.1's (train_utils.py
L736-745, `memory (GB) | ... | peak_reserved_mem: X`, 1e9 bytes)."""
_TITAN_MEMORY = re.compile(rb"memory:\s*([0-9.]+)GiB")
"""torchtitan 0.2.0's step line carries the peak: `memory: {max_reserved_gib:5.2f}GiB(...)` (metrics.py L444)."""
_ARGUMENT = re.compile(rb"\s(\w+) \.+ (\S.*?)\s*$")
ARGUMENTS_START, ARGUMENTS_END = b"------------------------ arguments ---", b"-- end of arguments ---"
"""Megatron-LM's `_print_args("arguments", args)` (megatron/training/arguments.py L1626-1642 of megatron-core
0.17.1's sdist): rank 0 prints every argument after validation between these lines, as `  {arg} {dots} {value}`."""
LAYOUT_ARGUMENTS = {
    "tensor_model_parallel_size": "tp", "pipeline_model_parallel_size": "pp", "context_parallel_size": "cp",
    "virtual_pipeline_model_parallel_size": "vp", "expert_model_parallel_size": "ep",
    "expert_tensor_parallel_size": "etp", "micro_batch_size": "mbs", "global_batch_size": "gbs",
    "seq_length": "seq_len",
}  # fmt: skip
"""Megatron-LM's arguments (TransformerConfig / ModelParallelConfig fields, training arguments) that are a layout
dimension of perfmodel's, as printed after validation (the virtual pipeline size is derived there, None for 1)."""
_KEPT_ARGUMENTS = frozenset(LAYOUT_ARGUMENTS) | {
    "world_size", "recompute_granularity", "use_distributed_optimizer", "use_megatron_fsdp",
    "data_parallel_sharding_strategy", "bf16", "fp8", "fp8_recipe", "fp4", "fp4_recipe",
}  # fmt: skip


@dataclass(frozen=True)
class Format:
    name: str
    """The log's stack as a reader knows it."""
    stack: str
    """The stack profile (inputs/stacks.py) the run is priced with."""
    marker: bytes
    """Bytes every iteration line holds (a cheap test before the pattern)."""
    pattern: re.Pattern[bytes]
    metric: str
    """The MeasuredRun metric the line's number gives, after `scale`."""
    scale: float
    unit: str
    batch: re.Pattern[bytes] | None = None
    """The global batch size an iteration line prints (Megatron's, NeMo's), if it does."""
    memory: re.Pattern[bytes] | None = None
    """The peak reserved memory (GiB) an iteration line prints (torchtitan's), if it does."""
    ignore: bytes = b""
    """Bytes of lines that hold the marker but are not iteration lines (torchtitan's validation steps)."""


FORMATS = (
    Format("megatron", "megatron", b"] iteration ", _MEGATRON, "step_time_s", 1e-3, "ms",
           re.compile(rb"global batch size:\s*(\d+)\s*\|")),
    Format("NeMo 2", "megatron", b", iteration ", _NEMO, "step_time_s", 1.0, "s",
           re.compile(rb"\| global_batch_size: (\d+)")),
    Format("torchtitan", "torchtitan", b"step: ", _TITAN, "tokens_per_s_per_gpu", 1.0, "tokens/s/GPU",
           memory=_TITAN_MEMORY, ignore=b"validate step: "),
)  # fmt: skip


@dataclass(frozen=True)
class StepLog:
    """What a log says about its steady steps."""

    path: str
    format: Format
    steps: Sequence[int]
    """The logged steps used (after the warm-up), ascending."""
    values: Sequence[float]
    """The line's number at each used step, in the log's unit (ms per iteration; tokens/s per GPU)."""
    warmup: tuple[int, ...]
    """The logged steps skipped as warm-up."""
    outliers: tuple[int, ...]
    """Used steps flagged as outliers (kept in the median: it is robust to them)."""
    skipped_lines: int
    """Lines that held the format's marker but did not parse (truncated, interleaved) or were over-long."""
    gbs: int | None
    """Megatron's logged global batch size (the last one logged), None for torchtitan."""
    files: int = 1
    """Log files read: more than one for a folder of per-rank logs."""
    memory_gib: float | None = None
    """The largest peak reserved memory any rank logged (GiB); None when the log reports none."""
    arguments: tuple[tuple[str, str], ...] = ()
    """The Megatron-LM arguments the log printed that perfmodel reads (_KEPT_ARGUMENTS), as printed."""

    def header(self) -> dict[str, Any]:
        """What the log's printed arguments say of the run, as scenario fields: n_gpus, precision, the FP8 recipe
        where it is one Megatron's knob takes (inputs/stacks.py: delayed, tensorwise) and the layout."""
        given = dict(self.arguments)
        if not given:
            return {}
        number = {key: int(value) for key, value in given.items() if value.isdigit()}
        layout: dict[str, Any] = {name: number[key] for key, name in LAYOUT_ARGUMENTS.items() if key in number}
        if "virtual_pipeline_model_parallel_size" in given:
            layout["vp"] = number.get("virtual_pipeline_model_parallel_size", 1)  # None: no interleaving
        if "recompute_granularity" in given:
            layout["recompute"] = {"None": "none"}.get(given["recompute_granularity"], given["recompute_granularity"])
        if "use_megatron_fsdp" in given or "use_distributed_optimizer" in given:
            sharding = {"optim_grads": 2, "optim_grads_params": 3}
            fsdp = given.get("use_megatron_fsdp") == "True"
            layout["zero"] = sharding.get(given.get("data_parallel_sharding_strategy", ""), 0) if fsdp else int(
                given.get("use_distributed_optimizer") == "True")  # fmt: skip
        found: dict[str, Any] = {"parallelism": layout}
        if "world_size" in number:
            found["n_gpus"] = number["world_size"]
        if (precision := _precision(given)) is not None:
            found["precision"] = precision
        if precision == "fp8" and given.get("fp8_recipe") in TE_FP8_RECIPES:
            found["fp8_recipe"] = given["fp8_recipe"]  # a delayed-scaling run skips the amax pass in any release
        return found

    @property
    def median(self) -> float:
        return float(np.median(self.values))

    @property
    def spread(self) -> tuple[float, float]:
        """The 10th and 90th percentiles of the used steps, interpolated between them (statistics.quantiles'
        'inclusive' method)."""
        low, high = np.percentile(self.values, [10, 90])
        return float(low), float(high)

    def summary(self) -> str:
        """One line: which steps were used, median, spread, outliers and skipped lines."""
        low, high = self.spread
        unit = self.format.unit
        merged = f" ({self.files:,} rank files merged, the slowest rank per step)" if self.files > 1 else ""
        text = (
            f"{self.format.name} log{merged}: steps {self.steps[0]}-{self.steps[-1]} used ({len(self.steps)} of "
            f"{len(self.steps) + len(self.warmup)} logged), "
            f"warm-up step{'s' if len(self.warmup) > 1 else ''} {_steps(self.warmup)} skipped; "
            f"median {self.median:,.1f} {unit}, p10-p90 {low:,.1f}-{high:,.1f}"
        )
        if self.memory_gib is not None:
            text += f"; peak memory {self.memory_gib:,.1f} GiB reserved"
        if self.outliers:
            text += f"; outliers (stragglers, recompilation?) at steps {_steps(self.outliers)}"
        return text + (f"; unparsable lines skipped: {self.skipped_lines:,}" if self.skipped_lines else "")


def _steps(steps: tuple[int, ...]) -> str:
    shown_steps = ", ".join(map(str, steps[:10]))
    return (shown_steps + f" and {len(steps) - 10} more" if len(steps) > 10 else shown_steps) or "none"


MAX_LOG_FILES = 100_000
"""Files a log folder may hold: one per rank of the largest runs (torchrun's --log-dir writes a folder per rank)."""


class _Steps:
    """Each logged step's number, the slowest rank's where several ranks log one step: two flat arrays kept in step
    order (16 bytes a step, not a dict entry's ~100), appended to while the log runs forward, which it almost always
    does; a step seen before (another rank's line, another rank's file) is found by bisection."""

    def __init__(self, slowest: Callable[[float, float], float]) -> None:
        self.steps, self.values, self.slowest = array("q"), array("d"), slowest

    def add(self, step: int, value: float) -> None:
        if not self.steps or step > self.steps[-1]:
            self.steps.append(step)
            self.values.append(value)
            return
        at = bisect_left(self.steps, step)
        if self.steps[at] == step:
            self.values[at] = self.slowest(self.values[at], value)
        else:
            self.steps.insert(at, step)
            self.values.insert(at, value)


def read_steps(path: str | Path, warmup_steps: int | None = None) -> StepLog:
    """The steady steps of a Megatron, NeMo 2 or torchtitan log (the first format with an iteration line decides);
    a folder is one run's per-rank logs (every file in it, at any depth), merged step by step, the slowest rank's
    number the step's. `warmup_steps`: skip logged steps up to this one; None: the first WARMUP_SHARE of them. A log
    with no iteration line, or none after the warm-up, is one line naming the file."""
    where = shown(path, 200)
    files = _files(path, where)
    found: _Steps | None = None
    chosen: Format | None = None
    skipped = 0
    gbs: int | None = None
    arguments: dict[str, str] = {}
    in_arguments = False
    memory = 0.0  # the largest peak seen (GiB); none logged while 0
    for line in (line for file in files for line in _lines(file, shown(file, 200))):
        if line is None:
            skipped += 1
            continue
        if _MEMORY_REPORT in line:
            memory = max(memory, *_reported_gib(line))
            continue
        if in_arguments or ARGUMENTS_START in line:
            in_arguments = ARGUMENTS_END not in line
            if (argument := _ARGUMENT.search(line)) and (name := argument[1].decode()) in _KEPT_ARGUMENTS:
                arguments[name] = argument[2].decode(errors="replace")
            continue
        fmt = chosen or next((f for f in FORMATS if f.marker in line), None)
        if fmt is None or fmt.marker not in line or (fmt.ignore and fmt.ignore in line):
            continue
        plain = _ANSI.sub(b"", line)
        match = fmt.pattern.search(plain)
        if match is None:
            skipped += 1
            continue
        if fmt.memory is not None and (peak := fmt.memory.search(plain)):
            memory = max(memory, float(peak[1]))
        if found is None:
            chosen, found = fmt, _Steps(max if fmt.metric == "step_time_s" else min)
        found.add(int(match[1]), float(match[2].replace(b",", b"")))
        if fmt.batch is not None and (batch := fmt.batch.search(line)):
            gbs = int(batch[1])
    if chosen is None or found is None:
        names = " or ".join(f"'{f.marker.decode()}'" for f in FORMATS)
        raise PerfmodelError(f"{where}: no iteration lines (Megatron, NeMo 2 or torchtitan: a line with {names})")
    steps = found.steps
    cut = warmup_steps if warmup_steps is not None else steps[max(1, round(len(steps) * WARMUP_SHARE)) - 1]
    first = bisect_right(steps, cut)
    if first == len(steps):
        raise PerfmodelError(f"{where}: all {len(steps)} logged steps are warm-up (up to step {cut}); log more steps")
    used, values = steps[first:], found.values[first:]
    return StepLog(
        str(path), chosen, used, values, tuple(steps[:first]),
        _outliers(used, values), skipped, gbs, len(files), memory or None, tuple(sorted(arguments.items())),
    )  # fmt: skip


def _files(path: str | Path, where: str) -> list[str]:
    """The log file, or every regular file under a folder of per-rank logs (in name order), at most MAX_LOG_FILES."""
    text = check_path(path, where)
    try:
        if not os.path.isdir(text):
            return [text]
        found = sorted(str(p) for p in Path(text).rglob("*") if p.is_file() and not p.is_symlink())
    except OSError as exc:
        raise PerfmodelError(f"{where}: cannot read log folder ({exc.strerror or exc})") from None
    if not found or len(found) > MAX_LOG_FILES:
        held = f"{len(found):,}"
        raise PerfmodelError(f"{where}: a log folder holds 1 to {MAX_LOG_FILES:,} files (a log per rank), not {held}")
    return found


def _outliers(steps: Sequence[int], values: Sequence[float]) -> tuple[int, ...]:
    """Steps far from the median both robustly (OUTLIER_Z) and in share (OUTLIER_SHARE)."""
    numbers = np.asarray(values)  # an array('d') is read in place, not copied into Python floats
    middle = np.median(numbers)
    off = np.abs(numbers - middle)
    flagged = (off > OUTLIER_SHARE * middle) & (off > OUTLIER_Z * 1.4826 * np.median(off))
    return tuple(int(steps[int(k)]) for k in np.flatnonzero(flagged))


def _reported_gib(line: bytes) -> list[float]:
    """The peak reserved memory (GiB) of a Megatron memory report line (0 when it is cut or of another kind)."""
    return [0.0] + [float(peak[1]) * unit / 2**30 for marker, pattern, unit in _MEMORY
                    if marker in line and (peak := pattern.search(line))]  # fmt: skip


def _precision(given: dict[str, str]) -> str | None:
    """perfmodel's precision from Megatron-LM's printed fp4/fp8 format and recipe (None when neither is printed)."""
    if given.get("fp4", "None") != "None":
        return given.get("fp4_recipe", "nvfp4") if given.get("fp4_recipe") in ("nvfp4", None) else None
    if given.get("fp8", "None") != "None":
        return "mxfp8" if given.get("fp8_recipe") == "mxfp8" else "fp8"
    return "bf16" if given.get("bf16") == "True" else None


def _lines(text: str, where: str) -> Iterator[bytes | None]:
    """The file's lines as bytes, None for each over-long one (read past in chunks, never held whole)."""
    try:
        if not stat.S_ISREG(os.stat(text).st_mode):
            raise PerfmodelError(f"{where}: not a regular file; give a log file or a folder of per-rank logs")
        handle = open(text, "rb")  # noqa: SIM115 (closed below, after the generator is drained)
    except FileNotFoundError:
        raise PerfmodelError(f"{where}: no such log file") from None
    except OSError as exc:
        raise PerfmodelError(f"{where}: cannot read log file ({exc.strerror or exc})") from None
    with handle:
        while line := handle.readline(MAX_LINE_BYTES):
            if len(line) == MAX_LINE_BYTES and not line.endswith(b"\n"):
                while (rest := handle.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                    pass
                yield None
                continue
            yield line


def read_step_log(path: str | Path, scenario: dict[str, Any], warmup_steps: int | None = None) -> MeasuredRun:
    """A training log as a measured run: its median steady step, priced as `scenario` (model, hardware, layout: what
    the log does not say) on the log's stack. What the log says of the run (Megatron's global batch on every
    iteration line; Megatron-LM's printed arguments: GPU count, precision and FP8 recipe, layout) fills the scenario
    or, where the caller gave it too, must agree: a disagreement is one line naming both."""
    log = read_steps(path, warmup_steps)
    where = shown(path, 200)
    said = log.header()
    if log.gbs is not None:
        said.setdefault("parallelism", {})["gbs"] = log.gbs
    full = scenario | {"stack": log.format.stack}
    for key, value in said.items():
        if key != "parallelism":
            full[key] = _agreed(where, key, value, scenario.get(key))
    parallelism = dict(scenario.get("parallelism") or {})
    for key, value in said.get("parallelism", {}).items():
        parallelism[key] = _agreed(where, key, value, parallelism.get(key))
    full["parallelism"] = parallelism
    missing = next((key for key in ("n_gpus", "gbs") if (parallelism if key == "gbs" else full).get(key) is None), None)
    if missing is not None:
        what = {"n_gpus": "GPU count", "gbs": "global batch"}[missing]
        raise PerfmodelError(f"{where}: a {log.format.name} log does not say its {what}: pass {_flag(missing)}")
    full.setdefault("precision", "fp8")
    run = MeasuredRun(
        f"log:{Path(path).name}", f"{log.format.name} log", full, log.format.metric,
        log.median * log.format.scale, (log.summary(),), str(path), memory_gib=log.memory_gib,
    )  # fmt: skip
    check_scenario(run, str(path))
    return run


def _flag(key: str) -> str:
    return option_flag(key)


def _agreed(where: str, key: str, logged: Any, given: Any) -> Any:
    """The log's value of a scenario field, which the caller's (a flag) may repeat but not contradict."""
    if given is not None and given != logged:
        raise PerfmodelError(f"{where}: the log says {_flag(key)} {logged}, not {given} as given")
    return logged
