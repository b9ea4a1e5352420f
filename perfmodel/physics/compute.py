"""Time of one operation on one GPU: a roofline with achieved, not peak, rates.

time = max(FLOPs / (peak x efficiency x shape share), bytes / (HBM x efficiency)) + a fixed per-kernel overhead;
attention's compute is its MMAs plus its softmax exponentials at the SFU rate (`attention_core_s`).
A dense GEMM's shape share (`gemm_shape_share`: tile padding, the tiles' occupancy of the SMs, K depth) is fitted to
measured kernels (physics.gemm_kernels); a grouped GEMM runs in waves of output tiles, one tile per SM, a partly
filled last wave wasting the rest, the best of a few common tile shapes taken (`grouped_efficiency`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Sequence
from functools import cache, cached_property, lru_cache
from typing import Any, NamedTuple

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.hardware import Accelerator, get_accelerator
from perfmodel.inputs.kernels import (
    BENCH_FORMAT_SHARES,
    MEASURED_FAMILIES,
    FormatShare,
    SiliconRatio,
    best_shape_ratios,
    format_shares,
    other_silicon_ratios,
)
from perfmodel.physics.algebra import PLAIN, Number, ceil, maximum, minimum, where
from perfmodel.physics.bounded import Bounded
from perfmodel.physics.efficiency import (
    BAND_TILE_TOKENS,
    FP8_ATTENTION_BACKWARD,
    GEMM_OTHER_SILICON,
    KERNEL_GEMM,
    KERNEL_MEMORY,
    NON_CAUSAL_ATTENTION,
    Efficiency,
    attention_unaged,
    released_attention,
)
from perfmodel.physics.workload import Op

CLOCK_POWER_EXPONENT = math.log(1207 / 1447) / math.log(750 / 1000)
"""Sustained GEMM clock against board power, f ~ P^0.63, from the one sourced same-silicon pair: AMD ROCm blog
"Measuring Max-Achievable FLOPs - Part 2" (rocm-blogs), median BF16 GEMM clock MI300X (750 W) 1,207 MHz, MI325X
(1,000 W) 1,447 MHz."""
PEAK_POWER_CENTRE_W_PER_TFLOPS = 700 / 989.4
"""Board watts per dense BF16 TFLOP/s at which `peak_power_share` is 1: the H100 SXM's (hardware_specs), so the
vendor GEMM shares keep describing an H100-like power budget."""
BF16_OPS_PER_OP = {"bf16": 1.0, "fp8": 0.5, "fp4": 0.25}
"""BF16 operations one operation of a format stands for in power: the tensor cores' rate per clock doubles with each
halving of the operand width (parameters.FORMAT_SHARE), at about the same energy per clock."""
TILES = ((128, 256), (256, 128), (128, 128))
TILE_SIDES = (128, 256)
GEMM_TILE = 128
"""Side of the output tile a dense GEMM's shape share counts (`gemm_shape_share`)."""
GEMM_SATURATION = 4096
"""The dimension from which a dense GEMM runs at its family's share of peak: the sweeps' largest (OpenXLA's tables
stop at 4,096), and beyond it the best-shape rows are flat (B200 BF16 1,410-1,553 TFLOP/s from 4,096 to 16,384
cubed, HipKittens and torchao PR 2427; H100 794 at 2,048 x 2,048 x 13,312 in MAMF against 780 at 4,096 cubed in
OpenXLA's table: perfmodel/data/kernels_gemm_shapes.csv), where the ramps would extrapolate past the plateau."""
SATURATED_TILES = (GEMM_SATURATION / GEMM_TILE) ** 2
GEMM_REFERENCE = {
    "ampere": "h100-sxm",
    "hopper": "h100-sxm",
    "blackwell": "b200",
    "blackwell-ultra": "b300",
    "cdna3": "mi300x",
    "cdna4": "mi355x",
}
"""The part of each kernel-measured family whose datasheet its GEMM share is read against (`gemm_share`): Ampere's is
Hopper's, whose kernels price it (efficiency.GEMM_SILICON)."""


@cache
def silicon_ratios() -> dict[str, SiliconRatio]:
    """The measured best-GEMM share over GEMM_REFERENCE's of each family whose GEMMs another generation's kernels
    price (efficiency.GEMM_OTHER_SILICON), read from the MAMF rows (inputs.kernels.other_silicon_ratios): one tool's
    best shapes (ml-engineering's MAMF table, mamf-finder.py with torch 2.6) put A100 SXM at 271.2 TFLOP/s of 312
    (0.869) and H100 SXM at 794.5 of 989.4 (0.803), 1.0825x H100's share, where the power assumption
    (`peak_power_share`: 1.28 against 0.71 W per peak TFLOP/s) said 1.17x at its once fitted exponent (0.26). With A100
    held out (the generation protocol) its rows had read 4.3% fast on average (6.7% MAPE), 5.5% MAPE at the measured
    ratio. Cached: the rows are read once per process."""
    return other_silicon_ratios({family: GEMM_REFERENCE[family] for family in GEMM_OTHER_SILICON})


def clock_share(acc: Accelerator) -> float:
    """Delivered tensor-core throughput over the datasheet peak, relative to the same-silicon variant at the highest
    board power (1 for that variant and for parts without one): the measured sustained-clock ratio where one is
    sourced (clocks; or one tool's best GEMMs against a lower-power sibling's, inputs.kernels.best_shape_ratios),
    else the labelled power-limited assumption that the clock follows board power as f ~ P^0.63 (also from a
    measured part's share, for that part at another board power: a what-if's, a user's copy). At most 1: the
    datasheet peak is the boost clock's, which no board power passes (a what-if's power_w=x10 on MI300X would
    otherwise clock it 3.6x faster)."""
    ref = acc.power_reference
    if ref is None:
        return 1.0
    peak_ratio = ref.bf16_tflops.value / acc.bf16_tflops.value
    measured = _measured_part(acc)
    if measured is not None:  # as a share of the silicon's top peak, which a what-if's BF16 peak moves with the part's
        sibling = best_shape_ratios()[measured.id]
        anchor = get_accelerator(sibling.part)
        top = anchor.power_reference or anchor
        share = clock_share(anchor) * anchor.bf16_tflops.value / top.bf16_tflops.value * sibling.ratio * peak_ratio
        share *= _power_move(acc, measured)
    elif ref.gemm_clock_mhz is not None and acc.gemm_clock_mhz is not None:  # measured at the catalogued power
        share = acc.gemm_clock_mhz.value / ref.gemm_clock_mhz.value * peak_ratio * _power_move(acc, _catalogued(acc))
    else:
        share = (acc.power_w.value / ref.power_w.value) ** CLOCK_POWER_EXPONENT * peak_ratio
    return min(1.0, share)


def _measured_part(acc: Accelerator) -> Accelerator | None:
    """The bundled part whose best GEMMs the MAMF rows measure (inputs.kernels.best_shape_ratios) that this one is:
    itself (a what-if keeps its id), else one of the same silicon at the same board power and BF16 peak (a user's
    copy under its own id). A different board power moves the clock from the measured part by the power assumption."""
    ratios = best_shape_ratios()
    if acc.id in ratios:
        return get_accelerator(acc.id)
    ref = acc.power_reference
    for part in ratios:
        bundled = get_accelerator(part)
        same = (bundled.power_w.value, bundled.bf16_tflops.value) == (acc.power_w.value, acc.bf16_tflops.value)
        if same and bundled.power_reference is not None and ref is not None and bundled.power_reference.id == ref.id:
            return bundled
    return None


def _catalogued(acc: Accelerator) -> Accelerator | None:
    """The catalogue's part of this id (a what-if's part keeps the id it modifies), None for one built elsewhere."""
    try:
        return get_accelerator(acc.id)
    except PerfmodelError:
        return None


def _power_move(acc: Accelerator, measured: Accelerator | None) -> float:
    """The power assumption's clock ratio from the part whose clock was measured to this one at its board power (1
    where they match or none was)."""
    return 1.0 if measured is None else (acc.power_w.value / measured.power_w.value) ** CLOCK_POWER_EXPONENT


def peak_power_share(acc: Accelerator, eff: Efficiency, fmt: str = "bf16") -> Number:
    """Delivered share of a format's datasheet peak across generations, relative to a part with the H100's board
    watts per peak BF16 TFLOP/s: (W per BF16-equivalent peak TFLOP/s / centre)^beta, beta = `eff.peak_power_exponent`,
    read from the silicon's top-power variant (same-silicon variants differ by `clock_share`). A labelled assumption
    extending clock_share's f ~ P^0.63 across generations: a part whose peak needs more power than its cap sustains
    delivers less of it (A100 1.28 W per TFLOP/s, H100 0.71, GB300 0.56; GB300's FP4, 6x its BF16 rather than 4x,
    0.37). beta < 0.63 because newer process nodes spend less energy per FLOP, which board power over peak does not
    see. Per format, so that a higher peak in one format never slows another's GEMMs."""
    top = acc.power_reference or acc
    format_ratio = acc.peak_flops(fmt) / acc.peak_flops("bf16")
    bf16_equivalent_tflops = top.bf16_tflops.value * format_ratio * BF16_OPS_PER_OP[fmt]
    w_per_tflops = top.power_w.value / bf16_equivalent_tflops
    return (w_per_tflops / PEAK_POWER_CENTRE_W_PER_TFLOPS) ** eff.peak_power_exponent


def format_share(acc: Accelerator, eff: Efficiency, fmt: str) -> Number:
    """A GEMM format's delivered share of its peak over BF16's on this part. Where the bundled kernel rows measure
    its tensor cores in that format (`measured_share`: Blackwell Ultra NVFP4 0.57 of BF16's share, Blackwell NVFP4
    0.95, both families' FP8 0.94; CDNA3 FP8 0.90, CDNA4 1.04), the measured part's ratio; else the power
    assumption's (`peak_power_share` of the format over BF16's). A part other than the one measured (a what-if, a
    sibling at another power) moves from the measured ratio as the power assumption moves, so that more FLOP/s in one
    format never slows another's GEMMs."""
    if fmt == "bf16":
        return 1.0
    power = peak_power_share(acc, eff, fmt) / peak_power_share(acc, eff, "bf16")
    measured = measured_share(acc, fmt)
    if measured is None:
        return power
    part = get_accelerator(measured.part)
    return power * measured.ratio / (peak_power_share(part, eff, fmt) / peak_power_share(part, eff, "bf16"))


@lru_cache(maxsize=256)  # per distinct part: a what-if sweep makes many
def measured_share(acc: Accelerator, fmt: str) -> FormatShare | None:
    """The kernel-measured share of `fmt` on this part's tensor cores: its family's, else that of the GEMM silicon
    its `power_reference` names, where the format's peak over BF16's is the same on both parts. Every Blackwell part
    names GB300's BF16/FP8 silicon (hardware_specs: Blackwell Ultra keeps Blackwell's BF16 and FP8 tensor cores), so
    B200 and GB200 run FP8 at the share measured on B300; their FP4, at two thirds of Blackwell Ultra's peak ratio,
    runs on other cores and keeps B200's own measurement. CDNA3's and CDNA4's FP8, which no layer rows measure, is
    hipblaslt-bench's (inputs.kernels.BENCH_FORMAT_SHARES)."""
    if acc.family not in MEASURED_FAMILIES:
        return BENCH_FORMAT_SHARES.get((acc.family, fmt))
    shares = format_shares()
    own = shares.get((acc.family, fmt))
    if own is not None or acc.power_reference is None:
        return own
    silicon = get_accelerator(acc.power_reference.id)
    same_cores = acc.peak_flops(fmt) / acc.peak_flops("bf16") == silicon.peak_flops(fmt) / silicon.peak_flops("bf16")
    return shares.get((silicon.family, fmt)) if same_cores else None


def gemm_share(acc: Accelerator, eff: Efficiency, fmt: str) -> Number:
    """Share of the peak at the sustained clock (`clock_share`) that a large GEMM in `fmt` reaches on this part.
    Where kernel rows measure the family (efficiency.KERNEL_GEMM), its measured BF16 share (efficiency.GEMM_KERNELS,
    scaled by the fitted kernel-to-training factor) times `format_share`, one basis for every format; Ampere at its
    measured best GEMM's share over GEMM_REFERENCE's (`silicon_ratios`), and a part at other board
    watts per peak FLOP/s than the measured one (a what-if, your own hardware) moving from it as `peak_power_share`
    says. Elsewhere its vendor library's fitted share times the part's power share and
    `format_share`. Attention is not scaled: its kernel shares are per-family measurements (efficiency.DEFAULTS),
    taken on the part itself."""
    power = peak_power_share(acc, eff, "bf16")
    if acc.family in KERNEL_GEMM:  # from the part whose share is measured, as the power law says for another part
        measured = silicon_ratios()[acc.family] if acc.family in GEMM_OTHER_SILICON else None
        base, ratio = (measured.part, measured.ratio) if measured else (GEMM_REFERENCE[acc.family], 1.0)
        power = ratio * power / peak_power_share(get_accelerator(base), eff, "bf16")
    return eff.gemm(fmt) * power * format_share(acc, eff, fmt)


def gemm_shape_share(m: Number, n: Number, k: Number, eff: Efficiency, sms: float) -> Number:
    """Share of a large GEMM's rate that an m x n x k GEMM reaches, in closed form (numpy arrays flow through): a
    grid of at least one wave of 128 x 128 output tiles pays its padded tiles and its tail wave (`grouped_efficiency`
    with one group), a smaller grid its padding alone; times two ramps fitted to measured kernels
    (physics.gemm_kernels), each 1 from GEMM_SATURATION on: the tiles' occupancy of the SMs against
    `gemm_tiles_half` x SMs, and the depth K against `gemm_depth_half` (`_ramp`). Libraries pick smaller tiles, split
    K or stream K for a small grid, so measured speed rises smoothly there, not in whole waves; a grid of several
    waves cannot hide a partly filled last one. Without the tail wave a training step's large GEMMs all ran at the
    plateau, and the fit took the gap up in the straggler spread and the software trend (the length protocol 9.0%
    against 7.4% with it; the kernel rows price 7.4% against 7.7% with it)."""
    tiles, waves = _grid(m, n, sms)
    return waves * _ramp(tiles, eff.gemm_tiles_half * sms, SATURATED_TILES) * _ramp(k, eff.gemm_depth_half)


GRIDS_KEPT = 4096
"""Output grids (`_grid`) of numpy arrays kept, oldest dropped first: a fit's rows have ~1,000 stacked GEMMs."""
_GRIDS: Bounded[tuple[Any, ...], tuple[Number, Number]] = Bounded(GRIDS_KEPT)


def _grid(m: Number, n: Number, sms: float) -> tuple[Number, Number]:
    """An m x n output's 128 x 128 tiles, and the useful share of the tile slots it occupies (its waves where the
    grid fills the SMs at least once, else its padding alone). The shape's alone, not the efficiencies': for numpy
    arrays, remembered by their values (a fit prices the same rows' GEMMs ~400 times, ~75 numpy calls each)."""
    key = None
    if type(m).__module__ == "numpy" and type(n).__module__ == "numpy":
        key = (m.shape, m.dtype.str, m.tobytes(), n.shape, n.dtype.str, n.tobytes(), sms)
        found = _GRIDS.get(key)
        if found is not None:
            return found
    tiles = ceil(m / GEMM_TILE) * ceil(n / GEMM_TILE)
    padding = m * n / (tiles * GEMM_TILE * GEMM_TILE)
    grid = tiles, where(tiles >= sms, grouped_efficiency(m, n, 1, sms), padding)
    return grid if key is None else _GRIDS.put(key, grid)


def _ramp(x: Number, half: Number, saturation: float = GEMM_SATURATION) -> Number:
    """x^2 / (x^2 + half^2), scaled to reach 1 at `saturation` and held there. Second order: the rows rise to their
    plateau faster than x / (x + half) allows, which prices the 4,096-cubed rows 10-13% fast and a family left out
    at 12.8% MAPE, against 9.7% (9.3% with the tail wave; physics.gemm_kernels.leave_one_out)."""
    return minimum(1.0, x * x / (x * x + half * half) * (saturation**2 + half * half) / saturation**2)


def grouped_efficiency(m: Number, n: Number, groups: Number, sms: float, fixed_n: int = 0) -> Number:
    """Useful share of a grouped GEMM's tile slots: `groups` GEMMs of m x n each pad m and n to whole tiles (a
    16-token expert fills an eighth of a 128-row tile), and all their tiles share the waves. A kernel that fixes its
    tile's width (`fixed_n`, Op.tile_n) takes the best of TILE_SIDES rows at that width."""
    best: Number = 0.0
    for tile_m, tile_n in TILES if not fixed_n else tuple((side, fixed_n) for side in TILE_SIDES):
        m_tiles, n_tiles = ceil(m / tile_m), ceil(n / tile_n)
        tiles = groups * m_tiles * n_tiles
        padding = m / (m_tiles * tile_m) * n / (n_tiles * tile_n)
        best = maximum(best, padding * tiles / (ceil(tiles / sms) * sms))
    return best


class Rates:
    """What `op_time` takes from the part and the efficiencies whatever the operation, worked out once per batch of
    operations (`times_by`) rather than once per operation: the release switches and trends are
    properties of `Efficiency`, and a format's power share (`gemm_share`) a power of board watts."""

    def __init__(self, acc: Accelerator, eff: Efficiency) -> None:
        self.acc, self.eff = acc, eff
        self.delayed_scaling = eff.delayed_scaling
        self.before_eager_rope = eff.before_eager_rope
        self.memory_bytes_per_s = acc.hbm_bytes_per_s * eff.memory
        self.kernel_memory_bytes_per_s = acc.hbm_bytes_per_s * minimum(eff.memory, KERNEL_MEMORY.get(acc.family, 1.0))
        self.overhead_s = eff.kernel_overhead_us * 1e-6
        self.unfused_factor = eff.unfused_factor
        self.legacy_group_s = eff.legacy_group_s
        self.loop_group_s = eff.moe_legacy_group_s
        self.attention = released_attention(eff, acc.family)
        self.ring_attention = released_attention(eff, acc.family, ring=1.0)
        self.unaged = attention_unaged(eff, acc.family), attention_unaged(eff, acc.family, ring=1.0)
        self.non_causal = acc.family in NON_CAUSAL_ATTENTION
        self._formats: dict[str, tuple[Number, Number]] = {}

    @cached_property
    def non_causal_attention(self) -> tuple[tuple[Number, ...], tuple[Number, ...]]:
        """The non-causal kernel's fields (a ring step's, a plain call's): worked out only for a ring's steps."""
        eff, family = self.eff, self.acc.family
        return released_attention(eff, family, 1.0, causal=False), released_attention(eff, family, causal=False)

    def of_format(self, fmt: str) -> tuple[Number, Number]:
        """(the datasheet peak of `fmt` at the sustained clock, a large GEMM's rate in it): the GEMM's share at most
        the whole peak, which the power law's share of a part with more watts per peak FLOP/s than H100's would pass
        (a what-if's power_w=x10 on H100: 0.72 x 10^0.3). An integer 1, so that explain's formula keeps it as it is
        (a float there is the shape share w)."""
        found = self._formats.get(fmt)
        if found is None:
            peak = self.acc.peak_flops(fmt) * clock_share(self.acc)
            found = self._formats[fmt] = (peak, peak * minimum(1, gemm_share(self.acc, self.eff, fmt)))
        return found


def op_time(op: Op, acc: Accelerator, eff: Efficiency, rates: Rates | None = None) -> Number:
    """Time of `op`; `rates`: those of `acc` and `eff`, when a batch of operations keeps them."""
    r = Rates(acc, eff) if rates is None else rates
    memory_s = (op.bytes - op.amax_bytes * r.delayed_scaling - op.eager_bytes * r.before_eager_rope) / (
        r.kernel_memory_bytes_per_s if op.measured_bandwidth else r.memory_bytes_per_s
    )
    if op.kind == "memory":
        return memory_s * (1.0 if op.as_released else r.unfused_factor) + r.overhead_s
    if op.kind == "gemm":
        _, gemm_rate = r.of_format(op.fmt)
        rate = gemm_rate * gemm_shape_share(op.m, op.n, op.k, eff, acc.sms.value)
        return maximum(op.flops / rate, memory_s) + r.overhead_s
    if op.kind == "grouped_gemm":
        _, gemm_rate = r.of_format(op.fmt)
        tiles = grouped_efficiency(op.m, op.n, op.groups, acc.sms.value, op.tile_n)
        rate = gemm_rate * eff.grouped_gemm * tiles
        per_group_s = r.loop_group_s if op.expert_loop else r.legacy_group_s
        return maximum(op.flops / rate, memory_s) * op.slowdown + r.overhead_s + op.groups * per_group_s
    unaged = where(op.ring > 0.5, r.unaged[1], r.unaged[0])  # a kernel measured at its release: not aged again
    return maximum(attention_core_s(op, acc, eff, r), memory_s) * unaged + op.calls * r.overhead_s


def attention_core_s(op: Op, acc: Accelerator, eff: Efficiency, rates: Rates | None = None) -> Number:
    """Flash attention's tensor-core and SFU work: the QK^T and PV multiplies at the attention format's tensor-core
    rate PLUS the softmax exponentials at the SFU (MUFU) rate, both at the kernel's achieved share. A sum, not the
    max: within a tile the exponentials wait for S = QK^T and the PV multiply waits for them (FlashAttention-3,
    Shah et al. 2024, section 3: ping-pong and intra-warpgroup pipelining hide only part of the 3.9 TFLOP/s of
    exponentials behind the 989 TFLOP/s of MMAs on H100), so FP8 attention speeds up only the MMA term (its FP8
    forward is ~1.5-1.6x BF16, not 2x). A part without a sourced SFU figure prices the MMAs alone. The kernel's
    share falls for short sequences (a CP chunk) as length / (length + half tokens), both per pass and, where
    kernels measure the family, fitted to them, release by release (efficiency.released_attention; a CP ring step,
    `Op.ring`, by the kernel its release ran in the ring). A ring's off-diagonal steps (all but `Op.diagonal` of the
    work) run the non-causal kernel at `Op.off_diagonal_m` tokens where kernels measure it; elsewhere the whole ring
    is priced as one causal kernel at `m`, as before (the causal fields at the shorter length would count the
    diagonal's cost the off-diagonal steps do not pay). An FP8 backward, where kernels measure it, runs its multiplies
    at the FP8 peak and quantises P and dS per score element (`Efficiency.attention_fp8_bwd_ps`); elsewhere it is
    priced at BF16's rate."""
    r = Rates(acc, eff) if rates is None else rates
    backward = op.name.endswith(".bwd")
    fp8 = op.fmt in FP8_ATTENTION and (not backward or acc.family in FP8_ATTENTION_BACKWARD)
    peak, _ = r.of_format("fp8" if fp8 else "bf16")
    mma_s = op.flops / peak
    exp_s = 0.0 if acc.sfu_texp_per_s is None else op.exps / (acc.sfu_texp_per_s.value * 1e12)
    if backward and fp8:  # quantising P and dS, per score element
        exp_s = exp_s + op.exps * _fp8_backward_ps(eff, op.fmt) * 1e-12
    causal_s = (mma_s + exp_s) / _attention_share(op, op.m, r.ring_attention, r.attention, eff)
    if not r.non_causal or (isinstance(op.diagonal, float) and op.diagonal == 1.0):
        return causal_s
    off_s = (mma_s + exp_s) / _attention_share(op, op.off_diagonal_m, *r.non_causal_attention, eff)
    return op.diagonal * causal_s + (1 - op.diagonal) * off_s


FP8_ATTENTION = ("fp8", "mxfp8")
"""Attention formats whose multiplies run at the FP8 peak: per-tensor scales and MXFP8's 32-element blocks."""


def _fp8_backward_ps(eff: Efficiency, fmt: str) -> float:
    return eff.attention_mxfp8_bwd_ps if fmt == "mxfp8" else eff.attention_fp8_bwd_ps


def _attention_share(
    op: Op, length: Number, ring: tuple[Number, ...], plain: tuple[Number, ...], eff: Efficiency
) -> Number:
    """The kernel's achieved share of the MMA and exponential rate at `length` tokens: its pass's share (with the FP8
    forward's ratio) x length / (length + half tokens), from the ring's fields in a ring step, else the plain ones.
    A sliding window's kernel (`Op.band`; `length` its keys per query) computes whole tiles along its band and pays
    its fixed work per query over them: length / (length + BAND_TILE_TOKENS + its share of the half tokens)."""
    fields = zip(ring, plain, strict=True)
    fwd, fwd_half, bwd, bwd_half, fp8_ratio = (where(op.ring > 0.5, on, off) for on, off in fields)
    if op.name.endswith(".bwd"):
        share, half, band = bwd, bwd_half, eff.attention_band_bwd
    else:
        share, half, band = fwd * (fp8_ratio if op.fmt in FP8_ATTENTION else 1.0), fwd_half, eff.attention_band_fwd
    if op.band:
        return share * length / (length + BAND_TILE_TOKENS + band * half)
    return share * length / (length + half)


def times_by(
    ops: Iterable[Op] | Batched, rates: Rates, named: frozenset[str] = frozenset(), **groups: Callable[[Op], bool]
) -> dict[str, Number]:
    """Time of all `ops` under 'total', of the subsets each named predicate selects and of the operations `named`
    names (under their names), pricing every op once (`op_times`) at `rates` (a shard's passes share one: `Rates`
    of array efficiencies costs many numpy calls)."""
    plan = ops if isinstance(ops, Batched) else batched(ops)
    sums: dict[str, Number] = {"total": 0.0} | dict.fromkeys(groups, 0.0) | dict.fromkeys(named, 0.0)
    for op, seconds in zip(plan.ops, op_times(plan, rates), strict=True):
        sums["total"] = sums["total"] + seconds
        if op.name in named:
            sums[op.name] = sums[op.name] + seconds
        for name, keep in groups.items():
            if keep(op):
                sums[name] = sums[name] + seconds
    return sums


class Batched(NamedTuple):
    """Operations arranged for pricing (`batched`, `op_times`)."""

    ops: tuple[Op, ...]
    priced: tuple[tuple[tuple[int, ...], Op], ...]
    """(positions in `ops`, the operation priced for them): one operation, or several stacked into one."""


STACKED_FIELDS = ("flops", "bytes", "amax_bytes", "eager_bytes", "m", "n", "k", "groups")
"""The numeric fields `op_time` reads of a GEMM, grouped GEMM or memory operation (what `batched` stacks)."""


def batched(ops: Iterable[Op]) -> Batched:
    """`ops` arranged for `op_times`. Where operations hold numpy arrays (a search's shards, a fit's rows), those of
    one kind, format, release, tile width, bandwidth share and slowdown other than attention are stacked into one
    operation whose fields hold theirs along a new first axis: `op_time` is element-wise, so each gets the same numbers
    as alone, and a shard's ~15 GEMMs cost one pass of numpy calls instead of 15. Plain numbers and symbols are priced
    one at a time, as before."""
    ops = tuple(ops)
    numpy = sys.modules.get("numpy")  # not imported: no operation holds an array (and a prediction never imports it)
    array = numpy.ndarray if numpy is not None else ()
    alone: list[tuple[tuple[int, ...], Op]] = []
    batches: dict[tuple[str, str, bool, int, bool, float], list[int]] = {}
    for index, op in enumerate(ops):
        if op.kind != "attention" and isinstance(op.bytes, array):
            key = (op.kind, op.fmt, op.as_released, op.tile_n, op.measured_bandwidth, op.slowdown)
            batches.setdefault(key, []).append(index)
        else:
            alone.append(((index,), op))
    stacked = [
        (tuple(members), _stacked([ops[i] for i in members]) if len(members) > 1 else ops[members[0]])
        for members in batches.values()
    ]
    return Batched(ops, (*alone, *stacked))


def op_times(plan: Batched, rates: Rates) -> list[Number]:
    """`op_time` of each of the plan's operations, in order."""
    acc, eff = rates.acc, rates.eff
    times: list[Number] = [0.0] * len(plan.ops)
    for positions, op in plan.priced:
        seconds = op_time(op, acc, eff, rates)
        if len(positions) == 1:
            times[positions[0]] = seconds
            continue
        for row, index in enumerate(positions):
            times[index] = seconds[row]
    return times


def _stacked(ops: Sequence[Op]) -> Op:
    """One operation whose STACKED_FIELDS hold those of `ops` along a new first axis, each broadcast to their common
    shape (a field equal in every operation stays as it is)."""
    import numpy as np

    columns = {name: [getattr(op, name) for op in ops] for name in STACKED_FIELDS}
    varying = {
        name: values for name, values in columns.items() if not all(type(v) in PLAIN and v == values[0] for v in values)
    }
    shape = np.broadcast_shapes(*(np.shape(v) for values in varying.values() for v in values))
    fields: dict[str, Any] = {}
    for name, values in varying.items():
        column = fields[name] = np.empty((len(values), *shape))
        for row, value in enumerate(values):
            column[row] = value
    return ops[0]._replace(**fields)
