"""Collectives from measured kernels (perfmodel/data/kernels_collectives.csv, physics.collective_kernels): the bundled
scale-up efficiencies and collective constants are the fit of the bundled rows, and the model prices each row near
its measured time, also for a system left out of the fit."""

from __future__ import annotations

import statistics
from collections import defaultdict

import pytest

from perfmodel.inputs.kernels import collective_kernels
from perfmodel.physics import collectives
from perfmodel.physics.collective_kernels import (
    FIT_MIN_BYTES,
    bundled,
    errors,
    fit,
    fitted_rows,
    leave_one_system_out,
    predicted_s,
)
from perfmodel.physics.efficiency import DEFAULTS, KERNEL_SCALEUP, SCALEUP_LINKS

MIB = 2**20


def _mape(values: list[float]) -> float:
    return 100 * statistics.mean(abs(v) for v in values)


def _by(rows: object, key: object) -> dict[object, list[float]]:
    found: dict[object, list[float]] = defaultdict(list)
    for row, error in errors(rows):  # type: ignore[arg-type]
        found[key(row)].append(error)  # type: ignore[operator]
    return found


def test_the_bundled_values_are_the_fit_of_the_bundled_rows() -> None:
    found, today = fit(collective_kernels()), bundled()
    assert set(found.scaleup) == set(KERNEL_SCALEUP) == set(SCALEUP_LINKS.values())
    for generation, value in found.scaleup.items():
        assert KERNEL_SCALEUP[generation] == pytest.approx(value, rel=3e-3), generation
    for family, generation in SCALEUP_LINKS.items():
        assert DEFAULTS[family].scaleup == KERNEL_SCALEUP[generation]
    assert today.call_latency_s == pytest.approx(found.call_latency_s, rel=3e-3)
    assert today.step_latency_s == pytest.approx(found.step_latency_s, abs=1e-8)  # at its bound, 0
    assert today.half_bandwidth_s == pytest.approx(found.half_bandwidth_s, rel=3e-3)
    assert today.rack_half_bandwidth_s == pytest.approx(found.rack_half_bandwidth_s, rel=3e-3)
    assert today.in_switch_share == pytest.approx(found.in_switch_share, rel=3e-3)
    assert today.ramp_exponent == pytest.approx(found.ramp_exponent, rel=3e-3)
    assert today.mesh_half_bandwidth_s == pytest.approx(found.mesh_half_bandwidth_s, rel=3e-3)
    assert today.xla_runtime_s == pytest.approx(found.xla_runtime_s, rel=3e-3)
    assert today.pair_share == pytest.approx(found.pair_share, rel=3e-3)


def test_every_row_names_its_source_and_the_fitted_rows_are_priced_within_their_measured_error() -> None:
    """The all-reduce, all-gather and reduce-scatter rows of 8 MiB and more (1,188): MAPE 8.4% (8.9% before a
    baseboard pair's share, collectives.PAIR_SHARE; 9.5% with one switch ramp for baseboards and NVL72 racks), each
    (op, system) within 14% (H100 reduce-scatter the worst; 18% before the pair's share, H100 all-reduce). Those of
    1-8 MiB (330, fitted too): 18.4% (21.7%; GB200/GB300 all-gathers 12-14% slow on average and reduce-scatters 4%,
    against 23-25%; H100's 20-28% slow, B200's 10-11% fast, H100's all-reduces 31% slow; MI300X and MI355X within
    31%)."""
    rows = collective_kernels()
    assert len(rows) == 3863 and all("@" in row.where and (" line" in row.where or "rccl-tests" in row.where)
                                     for row in rows)  # fmt: skip
    fitted = fitted_rows(rows)
    large = [row for row in fitted if row.message_bytes >= 8 * MIB]
    small = [row for row in fitted if row.message_bytes < 8 * MIB]
    assert len(fitted) == 1518 and len(large) == 1188 and FIT_MIN_BYTES == MIB
    assert _mape([e for _, e in errors(large)]) < 8.7
    assert _mape([e for _, e in errors(small)]) < 19.0
    for (op, system), values in _by(large, lambda r: (r.op, r.system)).items():
        assert _mape(values) < 15.0, (op, system, _mape(values))


def test_a_system_left_out_is_priced_from_the_others_fit() -> None:
    """Each system's fitted rows priced by a fit on the other systems' rows (its link generation's efficiency from
    another system of that generation, else the median; an XLA ROCm table's runtime floor read from its own calls of
    64 KiB and less): 8.5% (H200) to 20.7% (H100: its baseboard ramp then comes from B200, H200 and A100 alone;
    22.6% before a baseboard pair's share, 17.4% while NVL72's faster ramp was the same parameter)."""
    found = leave_one_system_out(collective_kernels())
    assert len(found) == 8
    bounds = {"dgx-a100": 9.5, "dgx-b200": 16, "dgx-h100": 21.5, "dgx-h200": 16, "gb200-nvl72": 16,
              "gb300-nvl72": 16, "mi300x-8": 15, "mi355x-8": 15}  # fmt: skip
    for system, values in found.items():
        assert _mape(values) < bounds[system], (system, _mape(values))


def test_h100_all_reduce_of_512_mib_is_no_longer_priced_38_percent_fast() -> None:
    """ROCm/xla@dc6603221683 default_collective_perf_table.txtpb line 9646 (kernels_collectives.csv): 8x H100,
    all-reduce of 536,870,912 bytes (f32) in one group of 8, 2,431.62 us. The model priced it at NVLink SHARP's
    full link rate (1.5 ms, 38% fast); XLA runs a ring, which the model now prices at the fitted NVLink 4 efficiency
    and ramp: 2.75 ms, 13% slow (the 27 H100 all-reduce rows of 8 MiB and more: +6% on average, 13.5% MAPE). Held
    to that group's MAPE plus a margin, 16%, not to its own +13% (a figure the code printed): the NVLS price fails."""
    (row,) = [r for r in collective_kernels() if r.where.endswith("line 9646 (entries block)")]
    assert (row.system, row.op, row.ranks, row.message_bytes) == ("dgx-h100", "all_reduce", 8, 536870912)
    assert row.time_s == pytest.approx(2431.62e-6)
    assert abs(predicted_s(row) / row.time_s - 1) < 0.16


def test_in_switch_all_reduce_runs_at_the_measured_share_of_the_ring() -> None:
    """kernels_collectives.csv, stas00/ml-engineering@744d01e18b79 nccl-tests on 8x H200 at 16 GiB: all-reduce bus
    bandwidth 480.0 GB/s with NVLS, 367.2 GB/s ring (lines 978-979), a ratio of 1.31; 8x B200 (AWS, 8 GiB): 838.0
    against 682.2 (line 941), 1.23. The model's ratio is 1.75 x the fitted in-switch share (0.687): 1.20."""
    at = {r.where.rsplit(" ", 1)[1]: r for r in collective_kernels() if r.system == "dgx-h200" and r.op == "all_reduce"}
    h200_nvls, h200_ring = at["978"], at["979"]
    assert (h200_nvls.in_switch, h200_ring.in_switch) == (True, False)
    assert h200_ring.time_s / h200_nvls.time_s == pytest.approx(480.0 / 367.2, rel=0.02)
    model = predicted_s(h200_ring) / predicted_s(h200_nvls)
    assert model == pytest.approx(2 * 7 / 8 * collectives.IN_SWITCH_SHARE, rel=0.01)
    assert 1.1 < model < 1.31


def test_unfitted_ops_and_small_messages_are_reported_not_hidden() -> None:
    """All-to-all and permute rows of 8 MiB and more are priced, not fitted: all-to-all 8.0-15.2% MAPE per system
    (B200 15% fast), the permute (one send/recv per rank) 33-44% fast on NVIDIA, 11-23% slow on AMD's mesh. Below
    1 MiB, where the XLA rows carry XLA's runtime overhead (kernels README), the fitted ops are priced 18% fast on
    NVIDIA and 7% slow on AMD on average (MAPE 28% and 27%)."""
    rows = collective_kernels()
    large = [r for r in rows if r.message_bytes >= 8 * MIB]
    a2a = _by([r for r in large if r.op == "all_to_all"], lambda r: r.system)
    assert max(_mape(v) for v in a2a.values()) < 21.5
    permute = _by([r for r in large if r.op == "collective_permute"], lambda r: r.system)
    assert max(_mape(v) for v in permute.values()) < 45.0


def test_h100_reduce_scatter_of_two_ranks_is_priced_at_the_pair_share() -> None:
    """ROCm/xla@dc6603221683 default_collective_perf_table.txtpb line 13162 (kernels_collectives.csv): 8x H100,
    reduce-scatter of 134,217,728 bytes over 2 ranks, 406.34 us; line 14719, the same over 4 ranks, 404.45 us: half
    the data per rank in the same time. At one efficiency for every group size the pair priced 39% fast (the 4 ranks
    14%); at the fitted pair share (collectives.PAIR_SHARE) 24% fast. B200's pair (line 2600, 198.72 us) went from
    19% fast to within 1%."""
    table = "default_collective_perf_table.txtpb line "
    at = {r.where.split(table)[1].split(" ")[0]: r for r in collective_kernels() if table in r.where}
    pair, quad, b200 = at["13162"], at["14719"], at["2600"]
    assert [(r.system, r.op, r.ranks) for r in (pair, quad, b200)] == [
        ("dgx-h100", "reduce_scatter", 2), ("dgx-h100", "reduce_scatter", 4), ("dgx-b200", "reduce_scatter", 2)
    ]  # fmt: skip
    assert (pair.time_s, quad.time_s, b200.time_s) == pytest.approx((406.34e-6, 404.45e-6, 198.72e-6))
    one_share = bundled()._replace(pair_share=1.0)
    assert predicted_s(pair, one_share) / pair.time_s - 1 == pytest.approx(-0.39, abs=0.02)
    assert predicted_s(pair) / pair.time_s - 1 == pytest.approx(-0.24, abs=0.02)
    assert predicted_s(quad) / quad.time_s - 1 == pytest.approx(-0.14, abs=0.02)
    assert predicted_s(b200, one_share) / b200.time_s - 1 == pytest.approx(-0.19, abs=0.02)
    assert abs(predicted_s(b200) / b200.time_s - 1) < 0.02
