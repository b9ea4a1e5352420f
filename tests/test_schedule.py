"""Pipeline schedule formulas."""

import pytest

from perfmodel.physics.schedule import bubble_fraction, chunk_sync_window, chunks_in_flight, exposed, stage_layers


@pytest.mark.parametrize(("pp", "vp", "m", "expected"), [(8, 1, 64, 7 / 64), (8, 5, 64, 7 / 320), (1, 1, 16, 0)])
def test_bubble_is_pp_minus_1_over_vp_m(pp, vp, m, expected) -> None:
    # Narayanan et al. 2021, section 2.2: bubble time fraction (p - 1) / (v * m).
    assert bubble_fraction(pp, vp, m) == pytest.approx(expected)


def test_in_flight_chunks() -> None:
    assert chunks_in_flight(8, 1, 64) == 8  # 1F1B: pp micro-batches
    assert chunks_in_flight(8, 5, 64) == 2 * 7 + 4 * 8 + 1  # Megatron interleaved warm-up + 1
    assert chunks_in_flight(8, 1, 4) == 4  # never more than the step has


def test_chunk_sync_window() -> None:
    """Megatron-Core's interleaved schedule (schedules.py, grad_sync_func per model chunk) syncs a chunk's gradients
    once its last backward pass ends; the backward runs the vp chunks in turn, min(pp, m) micro-batches each."""
    assert chunk_sync_window(2.0, 8, 1, 64) == 2.0  # 1F1B: the last micro-batch's backward
    # PP6 x VP8, 6 micro-batches (MLPerf GPT-3 at 11,616 GPUs): the first chunk is done 7 x 6 chunk passes of 1/8
    # micro-batch before the end, plus its own pass: 43/8 micro-batches.
    assert chunk_sync_window(1.0, 6, 8, 6) == pytest.approx(43 / 8)
    assert chunk_sync_window(1.0, 8, 4, 2) == pytest.approx((1 + 3 * 2) / 4)  # fewer micro-batches than stages


def test_even_and_uneven_stages() -> None:
    even = stage_layers(80, 8, 5)
    assert (even.interior, even.first, even.last, even.per_chunk) == (10, 10, 10, 2)
    # 126 layers on PP8 x VP8: embedding and loss count as layers -> 128 units, 2 per chunk, 16 per rank,
    # the first and last ranks hold 15 transformer layers.
    uneven = stage_layers(126, 8, 8)
    assert (uneven.interior, uneven.first, uneven.last, uneven.per_chunk) == (16, 15, 15, 2)


def test_an_mtp_module_takes_layers_from_the_last_rank() -> None:
    """DeepSeek-V3 (61 layers, one MTP module) on PP2 x VP8: 4 layers per chunk; the last rank gives up the loss and
    the MTP module's 2 units, 32 - 1 - 2 = 29 layers, as Megatron-Bridge's layout with one decoder layer, the MTP
    module and the loss in the last chunk (7 x 4 + 1)."""
    stages = stage_layers(61, 2, 8, mtp_layers=1)
    assert (stages.interior, stages.first, stages.last, stages.per_chunk) == (32, 31, 29, 4)
    assert stage_layers(61, 2, 8).last == 31


def test_exposed_communication() -> None:
    assert exposed(1.0, 10.0, 0.9) == pytest.approx(0.1)  # short comm: only the overlap loss shows
    assert exposed(10.0, 1.0, 1.0) == pytest.approx(9.0)  # long comm: what the window cannot hide


@pytest.mark.parametrize("overlap_pp", [1.0, 0.25])
def test_pipeline_fill_and_drain_sends_are_on_the_critical_path(overlap_pp: float) -> None:
    """Megatron's 1F1B (Narayanan et al. 2021, section 2.2): the warm-up forwards and cool-down backwards cross the
    pp - 1 stage boundaries in turn, 2 (pp - 1) sends nothing hides; in the steady state each of the 16 micro-batches
    sends its activations forward and its gradients back, 2 x 16 sends of which only the share 1 - overlap_pp the
    compute does not hide shows (overlap_pp 1: none; 0.25: three quarters, which a bug hiding them all or counting
    one direction only would halve or zero). Counted by hand: Llama 3.1 8B, one micro-batch of 8,192 tokens, hidden
    4,096 in BF16 is 67.1 MB a send, over NVLink 4 at 450 GB/s per direction times the collective share of the link
    (efficiency.DEFAULTS), slowed by the message-size ramp (1.34 at its 179 us of data) and after NCCL's call latency
    (collectives, fitted to measured collectives)."""
    from dataclasses import replace

    from perfmodel.inputs.hardware import resolve
    from perfmodel.inputs.models import get_model
    from perfmodel.inputs.precision import get_recipe
    from perfmodel.physics.collectives import HALF_BANDWIDTH_S, NCCL_CALL_LATENCY_S, RAMP_EXPONENT
    from perfmodel.physics.efficiency import DEFAULTS
    from perfmodel.physics.parallel import Layout
    from perfmodel.physics.step import Context, evaluate
    from perfmodel.planning.predict import layout_vars

    hw, efficiency = resolve("h100-sxm"), replace(DEFAULTS["hopper"], overlap_pp=overlap_pp)
    ctx = Context(get_model("llama3.1-8b"), hw, get_recipe("bf16", hw.accelerator), efficiency, 8192)
    size = 8192 * 4096 * 2
    data_s = size / (450e9 * efficiency.scaleup)
    ramp = 1 + (HALF_BANDWIDTH_S / data_s) ** RAMP_EXPONENT
    assert ramp == pytest.approx(1.34, abs=0.01)  # an 8-GPU baseboard's ramp (39 us half-rate time)
    send_s = NCCL_CALL_LATENCY_S + data_s * ramp
    for pp in (2, 4):
        step = evaluate(ctx, layout_vars(Layout(1, pp, 1, 1, 1, 1, 1, 16, 8192, "none", 1)))
        sends = 2 * (pp - 1) + (1 - overlap_pp) * 2 * 16
        assert step.pp_comm_exposed_s == pytest.approx(sends * send_s, rel=0.02)  # + 1.4 us of link hops


def _megatron_interleaved_makespan(pp: int, vp: int, m: int, chunk_s: float, last_extra_s: float) -> float:
    """Makespan of Megatron-Core's interleaved 1F1B order (megatron-core 0.12.0 PyPI wheel,
    pipeline_parallel/schedules.py: get_pp_rank_microbatches L574-613 gives rank r (pp - r - 1) x 2 + (vp - 1) x pp
    warm-up forwards, get_schedule_table L616-643 the (micro-batch, chunk) of each pass in groups of pp micro-batches,
    a backward running the chunks in reverse), every rank running its passes in that order, each as soon as the pass
    feeding it has ended (no transfer time). A chunk pass takes `chunk_s` (a third forward, two thirds backward); the
    last rank's last chunk, which holds the LM head and loss, `last_extra_s` more."""
    table = [(i, c) for g in range(0, m, pp) for c in range(vp) for i in range(g, min(g + pp, m))]
    ends: dict[tuple[str, int, int, int], float] = {}
    orders, free = [], [0.0] * pp
    for r in range(pp):
        warm = min((pp - r - 1) * 2 + (vp - 1) * pp, m * vp)
        fwd = [("F", i, c) for i, c in table]
        bwd = [("B", i, vp - 1 - c) for i, c in table]
        steady = [p for k in range(m * vp - warm) for p in (fwd[warm + k], bwd[k])]
        orders.append(fwd[:warm] + steady + bwd[m * vp - warm :])
    done = [0] * pp
    while any(done[r] < len(orders[r]) for r in range(pp)):
        for r in range(pp):
            while done[r] < len(orders[r]):
                kind, i, c = orders[r][done[r]]
                if kind == "F":
                    dep = ("F", i, c, r - 1) if r > 0 else ("F", i, c - 1, pp - 1) if c > 0 else None
                else:
                    dep = ("B", i, c, r + 1) if r < pp - 1 else ("B", i, c + 1, 0) if c < vp - 1 else ("F", i, c, r)
                if dep is not None and dep not in ends:
                    break
                share = 1 / 3 if kind == "F" else 2 / 3
                cost = share * (chunk_s + (last_extra_s if (r, c) == (pp - 1, vp - 1) else 0.0))
                free[r] = max(free[r], ends[dep] if dep else 0.0) + cost
                ends[kind, i, c, r] = free[r]
                done[r] += 1
    return max(free)


@pytest.mark.parametrize(("pp", "vp", "m"), [(4, 5, 32), (4, 5, 16), (8, 8, 32), (8, 5, 64), (16, 4, 96)])
@pytest.mark.parametrize("head_share", [0.0, 0.1, 0.2])
def test_interleaved_step_is_the_busiest_rank_plus_its_bubble(pp, vp, m, head_share) -> None:
    """The step prices an interleaved pipeline as m micro-batches of the busiest rank plus the bubble
    (pp - 1) / (vp m) of them (physics.step). Megatron-Core's own order, with the LM head on the last virtual stage
    making the last rank `head_share` busier (Llama 3.1 70B on PP4 x VP5: 20 layers and a head of about 1.8), runs
    within 1% of that, never slower: the 5-15% fast Llama 3.1 70B GB200 TP2 PP4 VP5 Megatron-Bridge rows (m = 32)
    do not read fast for their schedule."""
    chunk_s, extra_s = 1.0, head_share * vp
    busiest_s = vp * chunk_s + extra_s
    priced = m * busiest_s * (1 + bubble_fraction(pp, vp, m))
    simulated = _megatron_interleaved_makespan(pp, vp, m, chunk_s, extra_s)
    assert priced * 0.99 <= simulated <= priced * (1 + 1e-9)
