"""Collectives' bus efficiency, latencies and message-size ramp, fitted to measured collectives rather than assumed.

physics.collectives prices a collective as call latency + ring-step latencies + data / (link x scale-up efficiency)
x (1 + (half-rate time / data time)^exponent), an in-switch (NVLink SHARP) all-reduce at a share of the
ring's rate.
Before this fit the efficiency (0.80 NVIDIA, 0.70 AMD), the latencies and the in-switch rate were estimates and there
was no ramp: an 8x H100 all-reduce of 512 MiB priced 38% fast against XLA's measured 2,432 us (NVLS at the full link
rate, which XLA does not run and which nccl-tests measures at 0.61 of it), and every 1-256 MiB call 20-80% fast (the
bus bandwidth reaches half its peak only at 8-64 MiB on 8 GPUs, kernels README).

The rows are perfmodel/data/kernels_collectives.csv (inputs.kernels.collective_kernels): OpenXLA's measured tables
(H100, B200, GB200/GB300 NVL72 up to 64 ranks, gfx942, gfx950), nccl-tests (A100, H200, B200) and rccl-tests
(MI300X), each on its bundled system. `fit` takes the all-reduce, all-gather and reduce-scatter rows of FIT_MIN_BYTES
and more (the calls a training step makes: TP activations, DP buckets, FSDP layers; smaller XLA calls carry XLA's
runtime overhead, 55-370 us on ROCm by the kernels README) and fits, by least squares on log time with each (system,
op, benchmark) weighted alike: the scale-up efficiency per link generation, the call latency, the scale-up step
latency, the ramp's half-rate time through a switch (NCCL) and on a mesh (RCCL), its exponent, the in-switch
share, and the share of the ring's rate a pair of ranks reaches on a switched baseboard (collectives.PAIR_SHARE).
XLA's ROCm tables add their runtime's floor to every call, which is read from each table's own calls of
RUNTIME_MAX_BYTES and less, not fitted, and which no prediction pays. All-to-all and permute rows are priced, not
fitted.
efficiency.DEFAULTS and collectives' constants carry the rounded results; tests/test_collective_kernels.py holds them
equal and reports each row's error and the leave-one-system-out error.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import cache
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from perfmodel.inputs.hardware import resolve
from perfmodel.inputs.kernels import CollectiveKernel, collective_kernels
from perfmodel.physics import collectives
from perfmodel.physics.efficiency import DEFAULTS, SCALEUP_LINKS
from perfmodel.physics.topology import Tiers, tiers

FIT_OPS = frozenset(("all_reduce", "all_gather", "reduce_scatter"))
FIT_MIN_BYTES = 2**20
"""The smallest message fitted (1 MiB, a TP all-gather of 128 tokens x 4,096 in BF16): below it the XLA tables
measure their runtime's overhead more than the library's (kernels README); those rows are priced and reported, not
fitted."""
RUNTIME_MAX_BYTES = 2**16
"""The calls (64 KiB and less) from which an XLA table's runtime floor on ROCm is read: the library moves their data in
a few microseconds."""


class Fitted(NamedTuple):
    """Collectives as measured: the efficiency.Efficiency.scaleup of each link generation and collectives' constants."""

    scaleup: dict[str, float]
    call_latency_s: float
    step_latency_s: float
    half_bandwidth_s: float
    in_switch_share: float
    ramp_exponent: float
    mesh_half_bandwidth_s: float
    all_reduce_half_bandwidth_s: float
    xla_runtime_s: dict[str, float]
    """OpenXLA's own runtime cost per collective on ROCm, by system: its gfx942 and gfx950 tables carry it on every
    call (a 190-250 us floor at 0.25-4 MiB on 8 MI300X, where rccl-tests measures 20-60 us; the kernels README says
    55-370 us). Read from each table's own calls of RUNTIME_MAX_BYTES and less (their median time over the library's
    price), so that its larger rows price RCCL's ramp rather than XLA's overhead; no prediction pays it. NVIDIA's
    tables show none beyond the NCCL call latency fitted on them."""
    rack_half_bandwidth_s: float = collectives.RACK_HALF_BANDWIDTH_S
    """The ramp's half-rate time on a rack-scale switched domain (collectives.RACK_HALF_BANDWIDTH_S)."""
    pair_share: float = collectives.PAIR_SHARE
    """A two-member group's share of the ring's rate on a switched baseboard (collectives.PAIR_SHARE)."""


@cache
def bundled() -> Fitted:
    """What the model uses today (efficiency.DEFAULTS and physics.collectives' constants), with the XLA tables'
    runtime floors read from the bundled rows."""
    scaleup = {SCALEUP_LINKS[family]: DEFAULTS[family].scaleup for family in SCALEUP_LINKS}
    library = Fitted(scaleup, collectives.NCCL_CALL_LATENCY_S, collectives.SCALEUP_STEP_LATENCY_S,
                     collectives.HALF_BANDWIDTH_S, collectives.IN_SWITCH_SHARE, collectives.RAMP_EXPONENT,
                     collectives.MESH_HALF_BANDWIDTH_S, collectives.ALL_REDUCE_HALF_BANDWIDTH_S, {},
                     collectives.RACK_HALF_BANDWIDTH_S, collectives.PAIR_SHARE)  # fmt: skip
    return with_runtime(collective_kernels(), library)


def _on_xla_rocm(row: CollectiveKernel) -> bool:
    return row.benchmark == "xla" and _system(row)[1].scaleup_mesh


def with_runtime(rows: Iterable[CollectiveKernel], fitted: Fitted) -> Fitted:
    """`fitted` with each XLA ROCm table's runtime floor read from its calls of RUNTIME_MAX_BYTES and less."""
    gaps: dict[str, list[float]] = {}
    for row in rows:
        if _on_xla_rocm(row) and row.op in FIT_OPS and row.message_bytes <= RUNTIME_MAX_BYTES:
            gaps.setdefault(row.system, []).append(row.time_s - _library_s(row, fitted))
    return fitted._replace(xla_runtime_s={system: max(0.0, float(np.median(gap))) for system, gap in gaps.items()})


@cache
def _system(row: CollectiveKernel) -> tuple[str, Tiers]:
    """The row's family and its system's tiers, with in-switch reduction where the row ran it (or NCCL may have)."""
    hw = resolve(system=row.system)
    found = tiers(hw)
    if row.in_switch is not None:
        found = replace(found, scaleup_in_network_reduction=row.in_switch and found.scaleup_in_network_reduction)
    return hw.accelerator.family, found


def predicted_s(row: CollectiveKernel, fitted: Fitted | None = None) -> float:
    """The model's time of a measured collective (with today's values, or with `fitted`): the library's, and on ROCm
    the XLA runtime's floor where an XLA table measured it."""
    values = fitted or bundled()
    runtime_s = values.xla_runtime_s.get(row.system, 0.0) if _on_xla_rocm(row) else 0.0
    return runtime_s + _library_s(row, values)


def _library_s(row: CollectiveKernel, values: Fitted) -> float:
    """The collective library's time of a measured call."""
    family, found = _system(row)
    eff = replace(DEFAULTS[family], scaleup=values.scaleup[SCALEUP_LINKS[family]])
    links = collectives.group_links(found, eff, float(row.ranks), 1.0, values.pair_share)._replace(
        intra_latency_s=found.scaleup_latency_s + values.step_latency_s,
        call_latency_s=values.call_latency_s,
        half_bandwidth_s=collectives.switch_half_bandwidth_s(
            found, values.mesh_half_bandwidth_s, values.rack_half_bandwidth_s, values.half_bandwidth_s
        ),
        all_reduce_half_bandwidth_s=(
            values.mesh_half_bandwidth_s if found.scaleup_mesh else values.all_reduce_half_bandwidth_s
        ),
        in_switch_share=values.in_switch_share,
        ramp_exponent=values.ramp_exponent,
    )
    size = row.message_bytes
    if row.op == "all_reduce":
        return float(collectives.all_reduce(size, links, found))
    if row.op in ("all_gather", "reduce_scatter"):
        return float(collectives.reduce_scatter(size, links))
    if row.op == "all_to_all":
        return float(collectives.all_to_all(size, links))
    return float(collectives.send_recv(size, links))


def fitted_rows(rows: Iterable[CollectiveKernel]) -> list[CollectiveKernel]:
    return [row for row in rows if row.op in FIT_OPS and row.message_bytes >= FIT_MIN_BYTES]


def fit(rows: Iterable[CollectiveKernel], generations: Sequence[str] | None = None) -> Fitted:
    """The least-squares fit of log(predicted / measured) over the fitted rows, each (system, op, benchmark) group
    weighted alike; a generation without rows keeps the median of the others' efficiencies (its datasheet links
    carry the rest)."""
    from scipy.optimize import least_squares

    rows = tuple(rows)
    chosen = fitted_rows(rows)
    floors = [row for row in rows if _on_xla_rocm(row)]
    present = sorted({SCALEUP_LINKS[_system(row)[0]] for row in chosen})
    groups = Counter((row.system, row.op, row.benchmark) for row in chosen)
    weights = np.array([1 / math.sqrt(groups[row.system, row.op, row.benchmark]) for row in chosen])
    measured = np.array([row.time_s for row in chosen])

    def unpack(x: NDArray[np.float64]) -> Fitted:
        scaleup = dict(zip(present, (float(v) for v in x[: len(present)]), strict=True))
        call_us, step_us, half_us, share, power, mesh_us, reduce_us, rack_us, pair = (
            float(v) for v in x[len(present) :]
        )
        library = Fitted(scaleup, call_us * 1e-6, step_us * 1e-6, half_us * 1e-6, share, power, mesh_us * 1e-6,
                         reduce_us * 1e-6, {}, rack_us * 1e-6, pair)  # fmt: skip
        return with_runtime(floors, library)

    def residuals(x: NDArray[np.float64], /) -> NDArray[np.float64]:
        values = unpack(x)
        return weights * np.log(np.array([predicted_s(row, values) for row in chosen]) / measured)

    start = [0.8] * len(present) + [10.0, 1.0, 20.0, 0.8, 0.7, 20.0, 20.0, 20.0, 0.8]
    lower = [0.3] * len(present) + [0.0, 0.0, 0.0, 0.3, 0.2, 0.0, 0.0, 0.0, 0.3]
    upper = [1.0] * len(present) + [100.0, 10.0, 500.0, 1.0, 1.0, 500.0, 500.0, 500.0, 1.5]
    found = unpack(least_squares(residuals, start, bounds=(lower, upper)).x)
    median = float(np.median(list(found.scaleup.values())))
    every = generations or sorted(set(SCALEUP_LINKS.values()))
    return found._replace(scaleup={g: found.scaleup.get(g, median) for g in every})


def errors(rows: Iterable[CollectiveKernel], fitted: Fitted | None = None) -> list[tuple[CollectiveKernel, float]]:
    """(row, predicted / measured - 1) for each row."""
    return [(row, predicted_s(row, fitted) / row.time_s - 1) for row in rows]


def leave_one_system_out(rows: Sequence[CollectiveKernel]) -> dict[str, list[float]]:
    """Each system's fitted rows priced by a fit on the other systems' rows: its link generation's efficiency comes
    from another system of that generation where one is measured (B200 from GB200 and GB300), else the median of
    the others'; the latencies, ramp and in-switch share are the others'."""
    found: dict[str, list[float]] = {}
    for system in sorted({row.system for row in fitted_rows(rows)}):
        others = with_runtime(rows, fit([row for row in rows if row.system != system]))
        held = [row for row in fitted_rows(rows) if row.system == system]
        found[system] = [error for _, error in errors(held, others)]
    return found
