"""Training logs as measured runs: the steady step time a Megatron or torchtitan run printed, read line by line.

Formats, from the stacks' logging code of the versions `perfmodel launch` cites:
- Megatron-Bridge 0.3.1, megatron/bridge/training/utils/train_utils.py `training_log`, and Megatron-LM's
  megatron/training/training.py `training_log` (as megatron-core 0.17.1's sdist ships it; its date has
  microseconds): `[date] iteration {:8d}/{:8d} | consumed samples: ... | elapsed time per iteration (ms): {:.1f} |
  ... | global batch size: {:5d} | ...`, every `log_interval` iterations, the mean over that interval.
- torchtitan 0.2.0, torchtitan/components/metrics.py `MetricsProcessor.log`: `step: {step:2}  loss: ...  grad_norm:
  ...  memory: {:5.2f}GiB({:.2f}%)  tps: {round(tps):,}  tflops: ...  mfu: {:.2f}%`, tps being tokens per second per
  device, with ANSI colours when on a terminal, behind the logger's and torchrun's `[rankN]:` prefixes.
The log does not say which model, hardware or layout ran it (the Megatron line gives the global batch): that comes
from the caller, as a scenario. Memory stays bounded: one line at a time, one number per logged step.
"""

from __future__ import annotations

import os
import re
import stat
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfmodel.errors import PerfmodelError, shown
from perfmodel.fitting.runs import MeasuredRun, check_scenario
from perfmodel.inputs.files import check_path

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
_MEGATRON = re.compile(
    rb"iteration\s+(\d+)/\s*\d+\s*\|.*?elapsed time per iteration \(ms\):\s*([0-9.]+)\s*\|"
    rb"(?:.*?global batch size:\s*(\d+)\s*\|)?"
)
_TITAN = re.compile(rb"step:\s*(\d+)\s+loss:.*?tps:\s*([0-9,]+)\s")


@dataclass(frozen=True)
class Format:
    stack: str
    """The stack profile (inputs/stacks.py) the run is priced with."""
    marker: bytes
    """Bytes every iteration line holds (a cheap test before the pattern)."""
    pattern: re.Pattern[bytes]
    metric: str
    """The MeasuredRun metric the line's number gives, after `scale`."""
    scale: float
    unit: str


FORMATS = (
    Format("megatron", b"] iteration ", _MEGATRON, "step_time_s", 1e-3, "ms"),
    Format("torchtitan", b"step: ", _TITAN, "tokens_per_s_per_gpu", 1.0, "tokens/s/GPU"),
)


@dataclass(frozen=True)
class StepLog:
    """What a log says about its steady steps."""

    path: str
    format: Format
    steps: tuple[int, ...]
    """The logged steps used (after the warm-up), ascending."""
    values: tuple[float, ...]
    """The line's number at each used step, in the log's unit (ms per iteration; tokens/s per GPU)."""
    warmup: tuple[int, ...]
    """The logged steps skipped as warm-up."""
    outliers: tuple[int, ...]
    """Used steps flagged as outliers (kept in the median: it is robust to them)."""
    skipped_lines: int
    """Lines that held the format's marker but did not parse (truncated, interleaved) or were over-long."""
    gbs: int | None
    """Megatron's logged global batch size (the last one logged), None for torchtitan."""

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def spread(self) -> tuple[float, float]:
        """The 10th and 90th percentiles of the used steps (both the median with fewer than two)."""
        if len(self.values) < 2:
            return self.median, self.median
        deciles = statistics.quantiles(self.values, n=10, method="inclusive")
        return deciles[0], deciles[-1]

    def summary(self) -> str:
        """One line: which steps were used, median, spread, outliers and skipped lines."""
        low, high = self.spread
        unit = self.format.unit
        text = (
            f"{self.format.stack} log: steps {self.steps[0]}-{self.steps[-1]} used ({len(self.steps)} of "
            f"{len(self.steps) + len(self.warmup)} logged), "
            f"warm-up {_steps(self.warmup)} skipped; median {self.median:,.1f} {unit}, p10-p90 {low:,.1f}-{high:,.1f}"
        )
        if self.outliers:
            text += f"; outliers (stragglers, recompilation?) at steps {_steps(self.outliers)}"
        return text + (f"; unparsable lines skipped: {self.skipped_lines:,}" if self.skipped_lines else "")


def _steps(steps: tuple[int, ...]) -> str:
    shown_steps = ", ".join(map(str, steps[:10]))
    return (shown_steps + f" and {len(steps) - 10} more" if len(steps) > 10 else shown_steps) or "none"


def read_steps(path: str | Path, warmup_steps: int | None = None) -> StepLog:
    """The steady steps of a Megatron or torchtitan log (the first format with an iteration line decides).
    `warmup_steps`: skip logged steps up to this one; None: the first WARMUP_SHARE of them. A log with no iteration
    line, or none after the warm-up, is one line naming the file."""
    where = shown(path, 200)
    found: dict[int, float] = {}
    chosen: Format | None = None
    skipped = 0
    gbs: int | None = None
    for line in _lines(path, where):
        if line is None:
            skipped += 1
            continue
        fmt = chosen or next((f for f in FORMATS if f.marker in line), None)
        if fmt is None or fmt.marker not in line:
            continue
        match = fmt.pattern.search(_ANSI.sub(b"", line))
        if match is None:
            skipped += 1
            continue
        chosen = fmt
        step, value = int(match[1]), float(match[2].replace(b",", b""))
        previous = found.get(step)  # a step several ranks logged: the slowest rank's number is the step's
        found[step] = value if previous is None else (max if fmt.metric == "step_time_s" else min)(previous, value)
        if fmt.stack == "megatron" and match[3]:
            gbs = int(match[3])
    if chosen is None or not found:
        names = " or ".join(f"'{f.marker.decode()}'" for f in FORMATS)
        raise PerfmodelError(f"{where}: no iteration lines (Megatron or torchtitan: a line with {names})")
    steps = sorted(found)
    cut = warmup_steps if warmup_steps is not None else steps[max(1, round(len(steps) * WARMUP_SHARE)) - 1]
    used = [s for s in steps if s > cut]
    if not used:
        raise PerfmodelError(f"{where}: all {len(steps)} logged steps are warm-up (up to step {cut}); log more steps")
    values = [found[s] for s in used]
    return StepLog(
        str(path), chosen, tuple(used), tuple(values), tuple(s for s in steps if s <= cut),
        _outliers(used, values), skipped, gbs,
    )  # fmt: skip


def _outliers(steps: list[int], values: list[float]) -> tuple[int, ...]:
    """Steps far from the median both robustly (OUTLIER_Z) and in share (OUTLIER_SHARE)."""
    middle = statistics.median(values)
    robust_sd = 1.4826 * statistics.median(abs(v - middle) for v in values)
    return tuple(
        s
        for s, v in zip(steps, values, strict=True)
        if abs(v - middle) > OUTLIER_SHARE * middle and abs(v - middle) > OUTLIER_Z * robust_sd
    )


def _lines(path: str | Path, where: str) -> Iterator[bytes | None]:
    """The file's lines as bytes, None for each over-long one (read past in chunks, never held whole)."""
    text = check_path(path, where)
    try:
        if not stat.S_ISREG(os.stat(text).st_mode):
            raise PerfmodelError(f"{where}: not a regular file; give a log file")
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
    the log does not say) on the log's stack; Megatron's logged global batch fills or checks the scenario's."""
    log = read_steps(path, warmup_steps)
    parallelism = dict(scenario.get("parallelism") or {})
    given = parallelism.get("gbs")
    if log.gbs is not None and given is not None and given != log.gbs:
        raise PerfmodelError(f"{shown(path, 200)}: the log's global batch size is {log.gbs}, not --gbs {given}")
    if log.gbs is None and given is None:
        raise PerfmodelError(f"{shown(path, 200)}: a {log.format.stack} log does not say its global batch: pass --gbs")
    parallelism["gbs"] = given or log.gbs
    full = scenario | {"stack": log.format.stack, "parallelism": parallelism}
    run = MeasuredRun(
        f"log:{Path(path).name}", f"{log.format.stack} log", full, log.format.metric,
        log.median * log.format.scale, (log.summary(),), str(path),
    )  # fmt: skip
    check_scenario(run, str(path))
    return run
