"""The formulas behind a prediction: step time -> its parts -> the per-layer operations, with numbers substituted.

The step model (`step.evaluate`) hands over its intermediate quantities through its `trace`; each part of the step
time is then written as a sympy expression of named symbols. Where the model has a small formula of its own — the
exposed share of a communication (`schedule.exposed`), the pipeline bubble (`schedule.bubble_fraction`), the roofline
time of an operation (`compute.op_time`), a ZeRO stage's exposed DP collectives (`step.zero_exposed`) — that very
function is called with symbols, so the printed formula is the model's. Each part's formula, evaluated with the
substituted numbers, must give the model's own value (tests check every part on many layouts), so the explanation
cannot drift from the model unnoticed.

Security: expressions are built from `sympy.Symbol` objects only; no user-supplied text is ever parsed by sympy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sympy

from perfmodel.inputs import hybrid
from perfmodel.inputs.numbers import plain
from perfmodel.inputs.stacks import FA2_SPEEDS, get_stack
from perfmodel.outputs.experts import experts_text
from perfmodel.outputs.report import headline
from perfmodel.outputs.symbolic import S, tidy
from perfmodel.physics import deltanet, mamba, moe
from perfmodel.physics.collectives import GroupLinks, group_links, reduce_scatter
from perfmodel.physics.compute import Rates, clock_share, gemm_shape_share, gemm_share, grouped_efficiency, op_time
from perfmodel.physics.efficiency import KERNEL_MEMORY, Efficiency
from perfmodel.physics.parallel import Layout
from perfmodel.physics.ring import RingHops, ring_exposed
from perfmodel.physics.schedule import bubble_fraction, exposed
from perfmodel.physics.step import (
    BREAKDOWN,
    OPTIMIZER_KERNELS,
    Context,
    DpTerms,
    DpWindows,
    delayed_scaling,
    evaluate,
    host_overhead_s,
    pp_sends_hidden,
    sac_recomputed_gemm_share,
    straggler_s,
    zero_exposed,
)
from perfmodel.physics.workload import (
    FP32_BYTES,
    SELECTIVE_RECOMPUTE,
    Op,
    attention_block_backward,
    attention_block_forward,
    layer_backward,
    layer_forward,
    mlp_block_backward,
    mlp_block_forward,
    recompute_forward,
)
from perfmodel.planning.evidence import Evidence
from perfmodel.planning.predict import Prediction, context_for, layout_vars

BOUNDS = ("compute", "memory bandwidth", "scale-up", "scale-out", "bubble", "overhead")


@dataclass
class Quantity:
    """A named number of the explanation, possibly with its own formula."""

    symbol: sympy.Symbol
    value: float
    unit: str
    meaning: str
    formula: Any = None


@dataclass
class Part:
    """One part of the step time: its formula, the quantities it uses, and its share of each bound."""

    key: str
    title: str
    value: float
    formula: Any
    quantities: list[Quantity]
    bounds: dict[str, float]
    notes: list[str] = field(default_factory=list)

    def evaluated(self) -> float:
        """The formula with every quantity substituted: equals `value` (the model's own number)."""
        subs = {q.symbol: q.value for q in self.quantities}
        return float(self.formula.xreplace(subs))


@dataclass
class OpRow:
    phase: str
    name: str
    kind: str
    fmt: str
    flops: float
    bytes: float
    time_s: float
    bound: str
    wave: float
    """Wave-quantisation efficiency of a GEMM (1 for other operations)."""


@dataclass
class Explanation:
    title: str
    layout: str
    step_time_s: float
    parts: list[Part]
    bounds: dict[str, float]
    ops: list[OpRow]
    op_formulas: dict[str, Any]
    op_symbols: list[Quantity]
    experts: str = ""
    """A MoE model's expert assumptions, predict's Experts line (empty for a dense model)."""
    evidence: Evidence | None = None
    """How near the prediction is to the calibration's measured runs (planning/evidence.py), None without them."""
    workload: tuple[str, ...] = ()
    """What the layer's work is, where it is not plain pre-training: packed documents, LoRA adapters."""

    @property
    def dominant(self) -> str:
        return max(self.bounds, key=lambda b: self.bounds[b])


# The roofline of one operation, from compute.op_time evaluated on symbolic stand-ins.


class _Figure:
    def __init__(self, value: Any) -> None:
        self.value = value


class _SymbolicAccelerator:
    """Duck-typed Accelerator: peaks, HBM bandwidth and exponential rate as symbols, the SM count as a number."""

    def __init__(self, acc: Any) -> None:
        self.sms = acc.sms
        self.hbm_bytes_per_s = S("BW_mem")
        self.sfu_texp_per_s = None if acc.sfu_texp_per_s is None else _Figure(S("R_exp") / 1e12)
        self.power_reference = None  # P_fmt stands for the peak delivered at the sustained clock (clock_share)
        self.power_w = self.bf16_tflops = _Figure(1.0)  # eta_fmt holds the power share (compute.gemm_share)
        self.family = ""  # and the format's measured share (compute.format_share)

    def peak_flops(self, fmt: str) -> sympy.Symbol:
        return S(f"P_{fmt}")


class _SymbolicEfficiency:
    def __init__(self, unfused: bool, eff: Efficiency) -> None:
        self.attention_fwd_half_tokens = eff.attention_fwd_half_tokens  # numbers: the length curve of the kernels
        self.attention_bwd_half_tokens = eff.attention_bwd_half_tokens
        self.attention_fp8_ratio = eff.attention_fp8_ratio
        self.attention_band_fwd, self.attention_band_bwd = eff.attention_band_fwd, eff.attention_band_bwd
        self.attention_fp8_bwd_ps, self.attention_mxfp8_bwd_ps = eff.attention_fp8_bwd_ps, eff.attention_mxfp8_bwd_ps
        self.gemm_tiles_half = eff.gemm_tiles_half  # numbers: the shape curve of the GEMM kernels
        self.gemm_depth_half = eff.gemm_depth_half
        self.memory = S("eta_mem")
        self.unfused_factor = S("f_unfused") if unfused else 1  # a release older than the reference vintage
        self.kernel_overhead_us = S("kappa") * 1e6
        self.attention_fwd = S("eta_attn_fwd")
        self.attention_bwd = S("eta_attn_bwd")
        self.grouped_gemm = S("eta_grouped")
        self.legacy_group_s = S("t_group")
        self.moe_legacy_group_s = S("t_loop")
        self.delayed_scaling = S("d_delayed")
        self.before_eager_rope = float(eff.before_eager_rope)
        self.peak_power_exponent = 0

    def gemm(self, fmt: str) -> sympy.Symbol:
        return S(f"eta_{fmt}")


def _roofline_values(ctx: Context) -> dict[sympy.Symbol, float]:
    acc, eff = ctx.hardware.accelerator, ctx.efficiency
    values = {S("BW_mem"): acc.hbm_bytes_per_s, S("eta_mem"): eff.memory, S("kappa"): eff.kernel_overhead_us * 1e-6}
    values |= {S("eta_attn_fwd"): eff.attention_fwd, S("eta_attn_bwd"): eff.attention_bwd}
    values[S("d_delayed")] = delayed_scaling(ctx)
    if float(eff.unfused_factor) != 1:
        values[S("f_unfused")] = float(eff.unfused_factor)
    if acc.sfu_texp_per_s is not None:
        values[S("R_exp")] = acc.sfu_texp_per_s.value * 1e12
    if ctx.model.is_moe:
        values[S("eta_grouped")] = eff.grouped_gemm
        values[S("t_group")] = float(eff.legacy_group_s)
        if ctx.recipe.expert_loop:
            values[S("t_loop")] = float(eff.moe_legacy_group_s)
        if ctx.recipe.dglu_dbias_regressed and ctx.model.bias:
            values[S("s_regressed")] = moe.DGLU_DBIAS_REGRESSION
    for fmt in ("bf16", "fp8", "fp4"):
        figure = {"bf16": acc.bf16_tflops, "fp8": acc.fp8_tflops, "fp4": acc.fp4_tflops}[fmt]
        if figure is not None:
            values[S(f"P_{fmt}")] = figure.value * 1e12 * clock_share(acc)
            values[S(f"eta_{fmt}")] = gemm_share(acc, eff, fmt)
    return values


def _op_formula(op: Op, ctx: Context) -> Any:
    """compute.op_time on symbols; a GEMM's shape share (a number there) becomes the symbol w."""
    symbolic = op._replace(flops=S("F") if op.flops else 0, bytes=S("B"), exps=S("E") if op.exps else 0)
    if op.slowdown != 1:
        symbolic = symbolic._replace(slowdown=S("s_regressed"))
    unfused = float(ctx.efficiency.unfused_factor) != 1
    acc, eff = _SymbolicAccelerator(ctx.hardware.accelerator), _SymbolicEfficiency(unfused, ctx.efficiency)
    formula = tidy(op_time(symbolic, acc, eff))  # type: ignore[arg-type]
    tiled = op.kind in ("gemm", "grouped_gemm")
    return formula.xreplace({f: 1 / S("w") for f in formula.atoms(sympy.Float)}) if tiled else formula


def _tile_efficiency(op: Op, ctx: Context) -> float:
    """A GEMM's shape share (tiles, occupancy, depth), tile padding and waves of a grouped GEMM; 1 for other
    operations."""
    sms = ctx.hardware.accelerator.sms.value
    if op.kind == "grouped_gemm":
        return float(grouped_efficiency(op.m, op.n, op.groups, sms, op.tile_n))
    return float(gemm_shape_share(op.m, op.n, op.k, ctx.efficiency, sms)) if op.kind == "gemm" else 1.0


def _bound_of(formula: Any, values: dict[sympy.Symbol, float]) -> str:
    """Which roofline term binds: the largest argument of the Max (memory, compute or exponentials)."""
    terms = [formula]
    while any(isinstance(t, sympy.Max | sympy.Add) or _scaled_max(t) for t in terms):
        terms = [a for t in terms for a in _split(t)]
    timed = [t for t in terms if t.free_symbols - {S("kappa")}]
    best = max(timed, key=lambda t: float(t.xreplace(values)))
    if S("B") in best.free_symbols:
        return "memory"
    return "exponentials" if S("E") in best.free_symbols else "compute"


def _scaled_max(term: Any) -> bool:
    """A Max times a factor (a regressed kernel's `s_regressed`)."""
    return isinstance(term, sympy.Mul) and any(isinstance(a, sympy.Max) for a in term.args)


def _split(term: Any) -> tuple[Any, ...]:
    """The terms a roofline time is the largest or the sum of; a scaled Max, its arguments scaled alike."""
    if isinstance(term, sympy.Max | sympy.Add):
        return term.args
    if _scaled_max(term):
        inner = next(a for a in term.args if isinstance(a, sympy.Max))
        return tuple(term / inner * a for a in inner.args)
    return (term,)


def _formula_name(op: Op) -> str:
    if op.kind == "gemm":
        return f"GEMM in {op.fmt.upper()}"
    if op.kind == "grouped_gemm":
        return f"grouped GEMM in {op.fmt.upper()}" + (", regressed" if op.slowdown != 1 else "")
    if op.kind == "attention":
        return "attention backward" if op.name.endswith(".bwd") else "attention forward"
    return "memory-bound kernel"


def _phases(ctx: Context, trace: dict[str, Any], recompute: str) -> list[tuple[str, list[Op]]]:
    """The operations of one layer by phase; a MoE model lists its MoE layer, and its dense layers apart."""
    sh, rec = trace["shard"], ctx.recipe
    dense = [
        ("forward", layer_forward(sh, rec)),
        ("backward", layer_backward(sh, rec, ctx.frozen_base)),
        ("recompute", recompute_forward(sh, rec, recompute)),
    ]
    if ctx.model.hybrid_pattern:
        return _hybrid_phases(ctx, sh, recompute)
    if not ctx.model.is_moe:
        return dense
    forward = attention_block_forward(sh, rec) + moe.moe_block_forward(sh, rec)
    redone = {"full": forward, "selective": [op for op in forward if op.name in SELECTIVE_RECOMPUTE]}
    moe_phases = [
        ("MoE forward", forward),
        ("MoE backward", moe.moe_block_backward(sh, rec) + attention_block_backward(sh, rec, ctx.frozen_base)),
        ("MoE recompute", redone.get(recompute, [])),
    ]
    return moe_phases + ([(f"dense {name}", ops) for name, ops in dense] if ctx.model.dense_layer_count else [])


def _hybrid_phases(ctx: Context, sh: Any, recompute: str) -> list[tuple[str, list[Op]]]:
    """The operations of one layer of each kind a hybrid pattern has (the step prices them by their shares)."""
    rec, frozen = ctx.recipe, ctx.frozen_base
    blocks: dict[str, tuple[str, Callable[[], list[Op]], Callable[[], list[Op]]]] = {
        "M": ("Mamba", lambda: mamba.mamba_block_forward(sh, rec), lambda: mamba.mamba_block_backward(sh, rec, frozen)),
        "G": (
            "Gated DeltaNet",
            lambda: deltanet.gdn_block_forward(sh, rec),
            lambda: deltanet.gdn_block_backward(sh, rec, frozen),
        ),
        "*": ("attention", lambda: attention_block_forward(sh, rec), lambda: attention_block_backward(sh, rec, frozen)),
        "-": ("MLP", lambda: mlp_block_forward(sh, rec), lambda: mlp_block_backward(sh, rec, frozen)),
        "E": ("MoE", lambda: moe.moe_block_forward(sh, rec), lambda: moe.moe_block_backward(sh, rec)),
    }
    phases = []
    for kind, count in hybrid.counts(ctx.model.hybrid_pattern).items():
        if count:
            name, forward_ops, backward_ops = blocks[kind]
            forward = forward_ops()
            redone = {"full": forward, "selective": [op for op in forward if op.name in SELECTIVE_RECOMPUTE]}
            phases += [(f"{name} forward", forward), (f"{name} backward", backward_ops())]
            phases.append((f"{name} recompute", redone.get(recompute, [])))
    return phases


def _operations(ctx: Context, trace: dict[str, Any], recompute: str) -> tuple[list[OpRow], dict[str, Any]]:
    acc, eff = ctx.hardware.accelerator, ctx.efficiency
    rates = Rates(acc, eff)
    constants = _roofline_values(ctx)
    rows: list[OpRow] = []
    formulas: dict[str, Any] = {}
    for phase, ops in _phases(ctx, trace, recompute):
        for op in ops:
            formula = _op_formula(op, ctx)
            formulas.setdefault(_formula_name(op), formula)
            wave = _tile_efficiency(op, ctx)
            values = constants | {S("F"): op.flops, S("B"): op.bytes, S("E"): op.exps, S("w"): wave}
            bound = _bound_of(formula, values)
            seconds = float(op_time(op, acc, eff, rates))
            rows.append(OpRow(phase, op.name, op.kind, op.fmt, float(op.flops), float(op.bytes), seconds, bound, wave))
    return rows, formulas


def _op_symbols(ctx: Context) -> list[Quantity]:
    family = ctx.hardware.accelerator.family
    measured = f"; {family}'s measured kernels: {KERNEL_MEMORY[family]:.2f}" if family in KERNEL_MEMORY else ""
    meaning = {
        "BW_mem": ("B/s", "HBM bandwidth (datasheet)"),
        "eta_mem": ("", f"fraction of HBM bandwidth memory-bound kernels reach (fitted to training runs{measured})"),
        "kappa": ("s", "fixed cost per kernel (launch, prologue, tail)"),
        "eta_attn_fwd": ("", "fraction of the BF16 peak flash attention's forward reaches"),
        "eta_attn_bwd": ("", "fraction of the BF16 peak flash attention's backward reaches"),
        "R_exp": ("1/s", "softmax exponentials per second (SFU rate)"),
        "eta_grouped": ("", "grouped expert GEMMs' share of a dense GEMM's efficiency (MoE stage of the fit)"),
        "t_group": (
            "s",
            "per local expert of a grouped GEMM, in releases before the grouped kernel (0 from 26.06)",
        ),
        "t_loop": (
            "s",
            "per local expert of a grouped GEMM whose experts loop in every release (the op fuser off: expert_loop)",
        ),
        "s_regressed": ("", "how much slower cudnn-frontend 1.24-1.25 ran the dGeGLU + dbias kernel (#256, PR #322)"),
        "d_delayed": (
            "",
            "1 where the run's FP8 is delayed scaling (no amax pass: a Megatron release before 25.09, or fp8_recipe "
            "'delayed'), 0 where it is current scaling (25.09 on, or 'tensorwise')",
        ),
        "f_unfused": ("", "memory-bound time of this older release over today's (fewer fused passes)"),
    }
    quantities = []
    for symbol, value in _roofline_values(ctx).items():
        name = symbol.name
        if name.startswith("P_"):
            unit, text = "FLOP/s", f"dense {name[2:].upper()} tensor-core peak (datasheet x sustained-clock share)"
        elif name.startswith("eta_") and name[4:] in ("bf16", "fp8", "fp4"):
            unit, text = "", f"fraction of the {name[4:].upper()} peak large GEMMs sustain"
        else:
            unit, text = meaning[name]
        quantities.append(Quantity(symbol, value, unit, text))
    return quantities


# Shares of each bound inside compute and communication.


def _compute_shares(rows: list[OpRow], kernel_s: float) -> dict[str, float]:
    total = sum(r.time_s for r in rows)
    overhead = kernel_s * len(rows)
    memory_s = sum(r.time_s for r in rows if r.bound == "memory") - kernel_s * sum(r.bound == "memory" for r in rows)
    compute_s = total - overhead - memory_s
    return {"compute": compute_s / total, "memory bandwidth": memory_s / total, "overhead": overhead / total}


def _link_shares(links: GroupLinks, size_bytes: float) -> dict[str, float]:
    """Scale-up and scale-out shares of a group's collective: the scale-up hop alone, and what the NIC hop adds (its
    latency, and its data where it is the slower hop)."""
    total = reduce_scatter(size_bytes, links)
    if total <= 0:
        return {"scale-up": 1.0}
    inside = reduce_scatter(size_bytes, links._replace(domains=1.0))
    return {"scale-up": inside / total, "scale-out": 1 - inside / total}


def _scaled(shares: dict[str, float], seconds: float) -> dict[str, float]:
    return {bound: share * seconds for bound, share in shares.items()}


# The parts of the step time.


def _q(name: str, value: Any, unit: str, meaning: str, formula: Any = None) -> Quantity:
    return Quantity(S(name), float(value), unit, meaning, formula)


def _busiest_rank(ctx: Context, trace: dict[str, Any], pp: int) -> tuple[str, float, float, float]:
    """(which rank, its layers, its extra compute, its extra TP time): the rank `step.evaluate` priced."""
    st, layer = trace["stages"], trace["layer"]
    layer_compute = layer.forward + layer.backward + trace["recompute_s"]
    if pp == 1:
        return (
            "the only pipeline rank",
            ctx.model.layers,
            trace["head_compute"] + trace["embed_compute"],
            trace["head_comm"],
        )
    candidates = [
        ("an interior pipeline rank", st.interior, 0.0, 0.0),
        ("the first pipeline rank (with the embedding)", st.first, trace["embed_compute"], 0.0),
        ("the last pipeline rank (with the LM head and loss)", st.last, trace["head_compute"], trace["head_comm"]),
    ]
    return min(candidates, key=lambda c: abs(c[1] * layer_compute + c[2] - trace["mb_compute"]))


def _parts(p: Prediction, ctx: Context, trace: dict[str, Any], rows: list[OpRow]) -> list[Part]:
    lo, eff, step = p.layout, ctx.efficiency, p.step
    layer = trace["layer"]
    n_mb = trace["microbatches"]
    rank, layers, edge, edge_tp = _busiest_rank(ctx, trace, lo.pp)
    kernel_s = eff.kernel_overhead_us * 1e-6
    N = _q("N_mb", n_mb, "", f"micro-batches per pipeline per step: GBS/(MBS*DP) = {lo.gbs}/({lo.mbs}*{lo.dp})")
    L = _q("L", layers, "", f"transformer layers on the busiest rank: {rank}")
    parts = []

    t_f = _q("t_fwd", layer.forward, "s", "forward of one layer, one micro-batch (operations below)")
    t_b = _q("t_bwd", layer.backward, "s", "backward of one layer (data and weight gradients)")
    t_r = _q("t_rc", trace["recompute_s"], "s",
             f"recomputation in the backward pass ({_recompute_text(ctx, lo, trace)})")  # fmt: skip
    t_e = _q("t_edge", edge, "s", "embedding and/or LM head + loss on this rank, one micro-batch")
    formula = N.symbol * (L.symbol * (t_f.symbol + t_b.symbol + t_r.symbol) + t_e.symbol)
    shares = _compute_shares(rows, kernel_s)
    parts.append(
        Part(
            "compute_s",
            "Compute",
            step.compute_s,
            formula,
            [N, L, t_f, t_b, t_r, t_e],
            _scaled(shares, step.compute_s),
            ["compute-bound vs memory-bound split from the shares of one layer's operations"],
        )
    )

    windows, tp_comm, cp_comm = trace["windows"], trace["tp_comm"], trace["cp_comm"]
    c_f = _q(
        "c_TP_fwd", tp_comm.forward, "s", f"TP all-gathers and reduce-scatters of one layer's forward, TP = {lo.tp}"
    )
    c_b = _q("c_TP_bwd", tp_comm.layer - tp_comm.forward, "s", "the same for its backward (and recompute)")
    if ctx.recipe.tp_comm_overlap:
        how = "torchtitan's async TP" if ctx.stack == "torchtitan" else "userbuffers TP overlap"
        w_f = _q("w_TP_fwd", windows.tp_forward, "s", f"the forward GEMM time they can hide behind ({how})")
        w_b = _q("w_TP_bwd", windows.tp_backward, "s", "the backward (and recomputed) GEMM time")
    elif not ctx.recipe.tp_backward_overlap:
        w_f = _q("w_TP_fwd", windows.tp_forward, "s", f"none: {ctx.stack}'s vanilla TP (--no-async-tp)")
        w_b = _q("w_TP_bwd", windows.tp_backward, "s", "none: its collectives run on the compute stream")
    else:
        w_f = _q("w_TP_fwd", windows.tp_forward, "s", f"none: {ctx.recipe.id} runs without userbuffers TP overlap")
        w_b = _q("w_TP_bwd", windows.tp_backward, "s",
                 "the Wgrad GEMM time, up to the async collectives that can use it (input all-gathers, dgrad "
                 "reduce-scatters)")  # fmt: skip
    eta = _q("eta_TP", eff.overlap_tp, "", "share of that window really used for overlap")
    e_tp = _q("t_TP_edge", edge_tp, "s", "LM head's exposed TP communication on this rank")
    per_layer = exposed(c_f.symbol, w_f.symbol, eta.symbol) + exposed(c_b.symbol, w_b.symbol, eta.symbol)
    tp_quantities = [N, L, c_f, c_b, w_f, w_b, eta, e_tp]
    if trace["tp_hidden"] is not None:  # async TP decomposes each collective under its own GEMMs (step.decomposes)
        h_f = _q("h_TP_fwd", trace["tp_hidden"][0], "s",
                 "what async TP can hide of them: each collective up to its own GEMMs, sum of min(c, g) (input "
                 "all-gathers under QKV and fc1, reduce-scatters under proj and fc2)")  # fmt: skip
        h_b = _q("h_TP_bwd", trace["tp_hidden"][1], "s",
                 "the same backward: gradient all-gathers under the proj and fc2 dgrad, input all-gathers under "
                 "their wgrad where re-gathered, the recomputed forward's (input-gradient reduce-scatters: "
                 "none)")  # fmt: skip
        per_layer = c_f.symbol + c_b.symbol - eta.symbol * (h_f.symbol + h_b.symbol)
        tp_quantities = [N, L, c_f, c_b, h_f, h_b, eta, e_tp]
    if float(tp_comm.exposed_layer) > 0:  # TP exceeds the KV heads: Megatron-Core replicates them (workload.kv_width)
        c_kv = _q("c_TP_kv", tp_comm.exposed_layer, "s",
                  f"TP {lo.tp} exceeds the {ctx.model.kv_heads} KV heads: each rank holds a replicated K and V head; "
                  "the QKV output's all-gather (backward: reduce-scatter) that regroups them, exposed")  # fmt: skip
        per_layer, tp_quantities = per_layer + c_kv.symbol, [*tp_quantities, c_kv]
    if float(tp_comm.copies_layer) > 0:  # DTensor's TP (precision.Recipe.tp_layout_copies)
        how = (
            "its shard into the symmetric-memory buffer per fused all-gather, the stacked partials summed per fused "
            "reduce-scatter, the unfused input-gradient reduce-scatters' chunk-and-cat"
            if trace["tp_hidden"] is not None
            else "each all-gather's output and each reduce-scatter's input re-laid out whole (chunk and cat)"
        )
        c_copy = _q("c_TP_copy", tp_comm.copies_layer, "s",
                    f"HBM copies of {ctx.stack}'s DTensor TP on the compute stream, one layer: {how}")  # fmt: skip
        per_layer, tp_quantities = per_layer + c_copy.symbol, [*tp_quantities, c_copy]
    formula = N.symbol * (L.symbol * per_layer + e_tp.symbol)
    size = trace["shard"].tokens * ctx.model.hidden * 2.0
    parts.append(
        Part(
            "tp_comm_exposed_s",
            "Tensor-parallel communication, exposed",
            step.tp_comm_exposed_s,
            formula,
            tp_quantities,
            _scaled(_link_shares(trace["tp_links"], size), step.tp_comm_exposed_s),
        )
    )

    c_f = _q("c_CP_fwd", cp_comm.forward, "s", f"CP exchange of K and V in one layer's forward, CP = {lo.cp}")
    c_b = _q(
        "c_CP_bwd", cp_comm.layer - cp_comm.forward, "s", "K, V and their gradients in its backward (and recompute)"
    )
    hops = trace["cp_hops"]
    if hops is None or lo.cp == 1:  # a gather or an all-to-all (the attention waits for it), or no CP
        per_layer, cp_quantities = c_f.symbol + c_b.symbol, [N, L, c_f, c_b]
    else:  # the ring, step by step (physics.ring)
        t_1 = _q("t_hop", hops.kv_s, "s", "one ring hop of one K, V block")
        t_2 = _q("t_hop2", hops.kv_and_grad_s, "s", "one backward hop of a K, V block with its dK, dV")
        n = _q("CP", lo.cp, "", "ring steps: CP - 1 hops forward, 2 single and CP - 2 double ones backward")
        w_f = _q("w_CP_fwd", windows.cp_forward, "s", "the forward attention, 1/CP of it per step")
        w_b = _q("w_CP_bwd", windows.cp_backward, "s", "the backward attention, 1/CP of it per step")
        r = _q("r_full", trace["recompute_share"], "", "share of layers fully recomputed: their forward ring again")
        ring = ring_exposed(RingHops(t_1.symbol, t_2.symbol), n.symbol, w_f.symbol, w_b.symbol)
        per_layer = (1 + r.symbol) * ring.forward_s + ring.backward_s
        cp_quantities = [N, L, t_1, t_2, n, w_f, w_b, r]
    if float(cp_comm.exposed_layer) > 0:  # a hybrid model's Mamba layers: their CP all-to-alls hide behind nothing
        c_m = _q("c_CP_mamba", cp_comm.exposed_layer, "s",
                 "the Mamba layers' CP all-to-alls (forward and gradients), which their conv and scan wait for, "
                 "exposed; by their share of the layers")  # fmt: skip
        per_layer, cp_quantities = per_layer + c_m.symbol, [*cp_quantities, c_m]
    formula = N.symbol * L.symbol * per_layer
    if ctx.model.mtp_pattern and ("last" in rank or "only" in rank):  # each MTP depth's layers, as the mean layer's
        c_mtp = _q("t_CP_MTP", trace["mtp_cp"], "s", "the MTP depths' layers' exposed CP time on this rank")
        formula, cp_quantities = formula + N.symbol * c_mtp.symbol, [*cp_quantities, c_mtp]
    parts.append(
        Part(
            "cp_comm_exposed_s",
            "Context-parallel communication, exposed",
            step.cp_comm_exposed_s,
            formula,
            cp_quantities,
            _scaled(_link_shares(trace["cp_links"], size), step.cp_comm_exposed_s),
        )
    )

    pp, vp = _q("pp", lo.pp, "", "pipeline stages"), _q("vp", lo.vp, "", "virtual stages per rank (interleaving)")
    C = _q("C_mb", trace["mb_compute"], "s", "compute of one micro-batch on the busiest rank")
    T = _q("T_mb", trace["mb_tp"], "s", "its exposed TP communication")
    P = _q("P_mb", trace["mb_cp"], "s", "its exposed CP communication")
    per_mb = [C, T, P] + ([_q("E_mb", trace["mb_ep"], "s", "its exposed EP communication")] if ctx.model.is_moe else [])
    formula = bubble_fraction(pp.symbol, vp.symbol, N.symbol) * N.symbol * sum(q.symbol for q in per_mb)
    parts.append(
        Part(
            "pp_bubble_s",
            "Pipeline bubble",
            step.pp_bubble_s,
            formula,
            [pp, vp, N, *per_mb],
            {"bubble": step.pp_bubble_s},
            ["bubble fraction (pp-1)/(vp*N_mb) of the ideal step"],
        )
    )

    t_p = _q("t_p2p", trace["p2p"], "s", "one activation (or gradient) send between neighbouring stages")
    hidden = pp_sends_hidden(ctx)
    eta = _q("eta_PP", hidden, "", "share of steady-state sends hidden behind compute (0: blocking sends)")
    formula = 2 * (pp.symbol - 1) * t_p.symbol + (1 - eta.symbol) * 2 * N.symbol * vp.symbol * t_p.symbol
    if lo.pp == 1:
        formula = sympy.Integer(0)
    crosses = float(trace["pp_links"].domains) > 1
    parts.append(
        Part(
            "pp_comm_exposed_s",
            "Pipeline sends, exposed",
            step.pp_comm_exposed_s,
            formula,
            [pp, vp, N, t_p, eta],
            {"scale-out" if crosses else "scale-up": step.pp_comm_exposed_s},
            ["warm-up and cool-down sends are on the critical path"],
        )
    )

    parts.append(_data_parallel_part(p, ctx, trace, N))

    n_opt = _q("N_opt", trace["step_params"], "", "parameters this rank updates (its ZeRO shard)")
    b_opt = _q("b_opt", trace["optimizer_bytes_per_param"], "B", "bytes moved per parameter by the Adam step")
    bw = _q("BW_mem", ctx.hardware.accelerator.hbm_bytes_per_s, "B/s", "HBM bandwidth (datasheet)")
    eta = _q("eta_mem", eff.memory, "", "fraction of HBM bandwidth reached")
    k = _q("k_opt", OPTIMIZER_KERNELS, "", "optimizer kernel launches")
    kappa = _q("kappa", kernel_s, "s", "fixed cost per kernel")
    formula = n_opt.symbol * b_opt.symbol / (bw.symbol * eta.symbol) + k.symbol * kappa.symbol
    slower = float(eff.vintage_factor)  # the step's results are slowed (step.evaluate), its traced parts are not
    memory_s = slower * float(trace["step_params"]) * trace["optimizer_bytes_per_param"] / (bw.value * eff.memory)
    parts.append(
        Part(
            "optimizer_s",
            "Optimizer step",
            step.optimizer_s,
            formula,
            [n_opt, b_opt, bw, eta, k, kappa],
            {"memory bandwidth": memory_s, "overhead": step.optimizer_s - memory_s},
        )
    )

    host_s, host = float(host_overhead_s(ctx)), "data loader, logging, syncs"
    if ctx.recipe.graph_captured:
        captured = "none: the whole iteration replays as one CUDA graph"
        host = captured if host_s == 0 else f"{host}; a release before the whole-iteration CUDA graph"
    t_o = _q("t_step", host_s, "s", f"per-step work outside the model ({host})")
    sigma = _q("sigma_rank", eff.straggler_cv, "", "spread of one rank's compute time (lock-step straggler wait)")
    ranks = _q("n_ranks", lo.tp * lo.pp * lo.cp * lo.dp, "", "ranks in lock-step")
    t_c = _q("t_compute", n_mb * trace["mb_compute"], "s", "the step's compute on the busiest rank")
    wait = straggler_s(sigma.symbol, ranks.symbol, t_c.symbol)
    used_o, formula_o, notes_o = [t_o, sigma, ranks, t_c], t_o.symbol + wait, []
    if ctx.recipe.offload_layers:
        meaning = f"one micro-batch's activation offload of {ctx.recipe.offload_layers} layers"
        t_off = _q("t_offload", trace["offload_s"], "s", meaning)
        used_o, formula_o = [*used_o, N, t_off], formula_o + N.symbol * t_off.symbol
        notes_o.append(
            f"activation offload: {ctx.recipe.offload_layers} layers' saved activations to host memory and back "
            "over the host link, the part their pass's other layers cannot hide, plus the copies' HBM traffic "
            f"(physics/offload.py); they hold {float(trace['offloaded_bytes']) / 1e9:,.1f} GB of each GPU's host "
            "memory, which no system file gives to check"
        )
    parts.append(Part("other_s", "Other", step.other_s, formula_o, used_o, {"overhead": step.other_s}, notes_o))
    if ctx.model.is_moe:
        parts.append(_expert_parallel_part(p, ctx, trace, N, L, rank))
    for part in parts:
        part.notes += stack_notes(ctx).get(part.key, [])
    return _slowed(parts, eff) if slower != 1 else parts


def _slowed(parts: list[Part], eff: Efficiency) -> list[Part]:
    """The parts of a release older than the reference vintage: each formula times the factor step.evaluate applies
    to every part at its end (Efficiency.vintage_factor); the quantities above stay the reference vintage's."""
    factor = _q("f_vintage", eff.vintage_factor, "",
                f"step time of the priced release over the reference vintage's: software_gain_per_year "
                f"{eff.software_gain_per_year:.4g} ^ {eff.vintage_years:.3g} years")  # fmt: skip
    for part in parts:
        part.formula, part.quantities = factor.symbol * part.formula, [*part.quantities, factor]
    return parts


def stack_notes(ctx: Context) -> dict[str, list[str]]:
    """The stack mechanism behind each part a stack changes (inputs/stacks.py), by part key."""
    stack, recipe = get_stack(ctx.stack), ctx.recipe
    kernels = f"{stack.name} stack: attention by {stack.attention_kernel}"
    family = ctx.hardware.accelerator.family
    speeds = stack.attention_speeds(family)
    if speeds is not None:
        forward, backward = speeds
        kernels += f" at {forward:.2f} (forward) and {backward:.2f} (backward) of {family}'s fused attention speed"
        if stack.fa2 and family not in FA2_SPEEDS:
            kernels += f" (Hopper's measured ratio: no FlashAttention-2 kernel rows on {family})"
    if delayed_scaling(ctx):  # the stack's, knob's or release's
        kernels += ", FP8 with delayed scaling (no amax pass before a cast)"
    if recipe.quantised and not stack.fp8_weight_gather:
        kernels += ", BF16 weights gathered and quantised inside each GEMM"
    mechanism = "async TP" if stack.async_tp is not None else "userbuffers"
    overlap = f"{mechanism} overlap with the GEMMs" if recipe.tp_comm_overlap else f"no {mechanism} overlap"
    if recipe.tp_decomposed:
        overlap = "async TP: each collective decomposed under the GEMMs it feeds or drains"
    compute, tp = [kernels], [f"{stack.name} stack: TP collectives with {overlap}"]
    if recipe.quantised and recipe.current_scaling:
        how = "torchao's dynamic scaling" if stack.fp8_current_scaling else "fp8_recipe tensorwise: TE's"
        compute.append(f"FP8 scaled from each tensor's current amax in every release ({how})")
    if recipe.quantised and recipe.fp8_scaling == "rowwise":
        compute.append(
            "FP8 rowwise (torchao): weights cast per GEMM, each operand cast again along its other axis in the "
            "backward and each backward GEMM's output rescaled (ops *.weight_cast, *_recast, *_rescale)"
        )
        tp.append("FP8 rowwise: activations gathered in BF16 (torchao's float8 TP is tensorwise-only)")
    return {
        "compute_s": compute,
        "tp_comm_exposed_s": tp,
        "dp_comm_exposed_s": [
            f"{stack.name} stack: {DEEPSPEED_ZERO3 if recipe.zero3_per_tensor else stack.dp_overlap}"
        ],
    }


DEEPSPEED_ZERO3 = (
    "ZeRO-3 of DeepSpeed before 0.6.0 (inputs/features.py 'zero3_coalesced_prefetch'): each tensor gathered and "
    "reduce-scattered by its own call behind a torch.cuda.synchronize(), nothing overlapped"
)


def _recompute_text(ctx: Context, lo: Layout, trace: dict[str, Any]) -> str:
    """The recompute mode; for a partial (block) recompute, the share of a layer's forward it repeats on average;
    for per-op selective checkpointing (torchtitan's selective), what its policy keeps."""
    if lo.recompute == "selective" and ctx.recipe.per_op_sac:
        share = float(sac_recomputed_gemm_share(ctx.model, ctx.recipe, lo.tp))
        return f"per-op selective: the forward but attention and the matmuls kept, {share:.1%} of its GEMM FLOPs re-run"
    if not lo.recompute_layers:
        return f"recompute {lo.recompute}"
    per_chunk = float(trace["stages"].per_chunk)
    share = float(trace["recompute_share"])
    return f"recompute full, first {lo.recompute_layers} of each chunk's {per_chunk:g} layers: {share:.3g} of t_fwd"


_DISPATCH_NOTES = {
    "flex": "DeepEP-style dispatch: a token crosses the NICs once per remote domain holding one of its experts",
    "alltoall": "NCCL all-to-all dispatch (the recipe's 'alltoall' dispatcher): every copy goes to its expert's rank",
}


def _expert_parallel_part(
    p: Prediction, ctx: Context, trace: dict[str, Any], N: Quantity, L: Quantity, rank: str
) -> Part:
    """Exposed dispatch/combine all-to-alls (and expert-TP gathers) of the MoE layers: each pass's exchange hides
    behind that pass's compute up to the overlap share; the MTP modules' MoE layers add theirs on the last rank."""
    lo, md, eff, layer = p.layout, ctx.model, ctx.efficiency, trace["layer"]
    sh, full = trace["shard"], trace["recompute_share"]
    ep_links = group_links(ctx.tiers, eff, float(lo.ep), float(lo.etp))
    forward, whole = moe.expert_comm(sh, ep_links, group_links(ctx.tiers, eff, float(lo.etp), 1.0), full)
    s = _q("s_MoE", md.moe_layers / md.layers, "", f"share of MoE layers: {md.moe_layers} of {md.layers}")
    c_f = _q("c_EP_fwd", forward, "s", f"dispatch + combine all-to-alls of one MoE layer's forward, EP = {lo.ep}"
             + (f", expert TP = {lo.etp}" if lo.etp > 1 else ""))  # fmt: skip
    c_b = _q("c_EP_bwd", whole - forward, "s", "the same in its backward (and recompute)")
    layer_s = (layer.forward, layer.backward + trace["recompute_s"])
    windows = moe.exchange_windows(md, layer_s, (layer.shared_forward, layer.shared_backward), full)
    beside = {
        "nothing": f"no ({moe.NOTHING_BESIDE})",
        "layer": "the layer's" if md.dispatcher == "flex" else "the layer's (EP overlap of two micro-batches)",
        "shared experts": "the shared experts' ('alltoall' dispatcher)",
    }[moe.exchange_beside(md)]
    w_f = _q("w_EP_fwd", windows[0], "s", f"{beside} forward compute they can hide behind")
    w_b = _q("w_EP_bwd", windows[1], "s", "its backward (and recomputed) compute")
    crosses = float(ep_links.domains) > 1
    where = "across NICs" if crosses else "inside the scale-up domain"
    eta = _q(
        "eta_EP",
        float(moe.ep_overlap(eff, ep_links)),
        "",
        f"share of that window really used for overlap (MoE stage of the fit; {moe.ep_overlap_parameter(ep_links)}: "
        f"{where})",
    )
    with_mtp = md.mtp_layers and ("last" in rank or "only" in rank)
    e_mtp = _q("t_EP_MTP", trace["mtp_ep"] if with_mtp else 0.0, "s", "the MTP modules' exposed EP time on this rank")
    per_layer = s.symbol * (exposed(c_f.symbol, w_f.symbol, eta.symbol) + exposed(c_b.symbol, w_b.symbol, eta.symbol))
    formula = N.symbol * (L.symbol * per_layer + e_mtp.symbol)
    return Part(
        "ep_comm_exposed_s",
        "Expert-parallel communication, exposed",
        p.step.ep_comm_exposed_s,
        formula,
        [N, L, s, c_f, c_b, w_f, w_b, eta, e_mtp],
        {"scale-out" if crosses else "scale-up": p.step.ep_comm_exposed_s},
        [_DISPATCH_NOTES[md.dispatcher]] if crosses else [],
    )


def _data_parallel_part(p: Prediction, ctx: Context, trace: dict[str, Any], N: Quantity) -> Part:
    """Exposed DP communication for the ZeRO stage in use: each collective hides behind its window. A MoE model's
    routed experts reduce over expert DP, a second group with the same windows."""
    lo, step, links, w = p.layout, p.step, trace["dp_links"], trace["dp_windows"]
    f_mb = _q(
        "t_fwd_mb",
        w.mb_forward,
        "s",
        "forward of one micro-batch on the busiest rank (elapsed: with the TP/CP communication exposed in it)",
    )
    b_mb = _q("t_bwd_mb", w.mb_backward, "s", "backward of one micro-batch on the busiest rank (elapsed)")
    hb = _q("t_bubble_half", w.half_bubble, "s", "half the pipeline bubble, also usable as a window")
    passes = 1 + (lo.vp - 1) * min(lo.pp, int(trace["microbatches"]))
    sync_note = "one micro-batch" if lo.vp == 1 else f"{passes} chunk passes of 1/{lo.vp} micro-batch each"
    f_sync = _q("w_AG", w.sync_forward, "s", f"forward a parameter all-gather can hide behind ({sync_note})")
    b_sync = _q("w_RS", w.sync_backward, "s", f"backward a gradient sync can hide behind ({sync_note})")
    eta = _q("eta_DP", w.overlap, "", "share of the window really used for overlap")
    windows = DpWindows(N, f_mb, f_sync, b_mb, b_sync, hb, eta)
    trainable = float(trace["trainable"])
    group = f"over DP*CP = {lo.dp * lo.cp} ranks"
    if links.size < lo.dp * lo.cp:
        group = f"over groups of {links.size} of the DP*CP = {lo.dp * lo.cp} ranks (hybrid sharding)"
    dense = _Group(trace["dp_terms"], trainable, float(trace["weights"]), links, group, float(trace["gathers"]))
    formula, used = _zero_formula(ctx, lo.zero, dense, windows)
    notes = [group]
    if "experts" in trace:
        expert_group = f"routed experts over expert DP = {lo.expert_dp} ranks"
        experts = _Group(trace["edp_terms"], float(trace["expert_trainable"]), float(trace["experts"].most),
                         trace["edp_links"], expert_group, suffix="_E")  # fmt: skip
        extra, extra_used = _zero_formula(ctx, lo.zero, experts, windows)
        formula, used, notes = formula + extra, used + [q for q in extra_used if q not in used], [group, expert_group]
    return Part(
        "dp_comm_exposed_s",
        f"Data-parallel communication (ZeRO-{lo.zero}), exposed",
        step.dp_comm_exposed_s,
        formula,
        used,
        _scaled(_link_shares(links, trainable * ctx.recipe.grad_reduce_bytes), step.dp_comm_exposed_s),
        notes,
    )


@dataclass(frozen=True)
class _Group:
    """One DP group of the step (its dense one, or a MoE model's routed experts over expert DP): its collectives as
    the step traced them (step.dp_terms) and what their texts say."""

    terms: DpTerms
    trainable: float
    weights: float
    links: GroupLinks
    group: str
    gathers: float = 2.0
    """Weight gathers per micro-batch of a ZeRO-3 run tensor by tensor (step.zero3_gathers): the dense group's; the
    experts' take the default, as step.dp_terms does."""
    suffix: str = ""
    """'_E' for the routed experts' quantities."""


def _zero_formula(ctx: Context, zero: int, g: _Group, windows: DpWindows) -> tuple[Any, list[Quantity]]:
    """One group's exposed DP collectives at ZeRO stage `zero`, and the quantities it uses: step.zero_exposed called
    with symbols for the group's traced collectives (step.dp_terms) and the step's windows, so the formula is the
    step's own."""
    suffix, group = g.suffix, g.group
    grads = g.trainable * ctx.recipe.grad_reduce_bytes
    of = f" ({group})" if suffix else ""  # a second group's quantities (routed experts) say whose they are
    dtype = "FP32" if ctx.recipe.grad_reduce_bytes == FP32_BYTES else "BF16"
    tensors = g.weights / ctx.model.params_per_layer * ctx.model.tensors_per_layer
    t = g.terms
    named = DpTerms(
        reduce=_q(f"t_AR{suffix}", t.reduce, "s",
                  f"all-reduce of {plain(grads / 1e9, 3)} GB of {dtype} gradients, bucket by bucket ({group})"),
        scatter=_q(f"t_RS{suffix}", t.scatter, "s",
                   f"reduce-scatter of {plain(grads / 1e9, 3)} GB of {dtype} gradients, bucket by bucket ({group})"),
        gather_updates=_q(f"t_AG{suffix}", t.gather_updates, "s",
                          f"all-gather of the updated parameters, bucket by bucket{of}"),
        unit_gathers=_q(f"t_AG_w{suffix}", t.unit_gathers, "s",
                        f"all-gather of this rank's weights (FSDP), layer by layer{of}"),
        unit_scatters=_q(f"t_RS_w{suffix}", t.unit_scatters, "s",
                         f"reduce-scatter of {plain(grads / 1e9, 3)} GB of {dtype} gradients, layer by layer "
                         f"({group})"),
        per_tensor=_q(f"t_ZeRO3_mb{suffix}", t.per_tensor, "s",
                      f"one micro-batch's {g.gathers:g} weight gathers and gradient reduce-scatter, a call per tensor "
                      f"({tensors:,.0f} tensors), each with {g.links.size:,.0f} copy kernels and its ring latency, "
                      "none overlapped"),
        copies=_q(f"t_FSDP_copy{suffix}", t.copies, "s",
                  "FSDP2's copies on the compute stream: the gathered weights into the parameters, forward and "
                  "backward, and the gradients into the reduce-scatter's input"),
        replicas=_q(f"t_AR_groups{suffix}", t.replicas, "s",
                    "all-reduce of this rank's gradient shard across the groups"),
        units=_q(f"n_units{suffix}", t.units, "",
                 f"layers gathered and reduce-scattered one call each (FSDP units){of}"),
        buckets=_q(f"n_buckets{suffix}", t.buckets, "", f"Megatron DDP buckets (max(40M, 1M x ranks)){of}"),
    )  # fmt: skip
    symbols = (DpTerms(*(q.symbol for q in named)), DpWindows(*(q.symbol for q in windows)))
    formula = zero_exposed(ctx.recipe, *symbols)[zero]
    return formula, [q for q in (*named, *windows) if q.symbol in formula.free_symbols]


def explain(p: Prediction) -> Explanation:
    """The explanation of one prediction (the one `perfmodel predict` would print for the same flags)."""
    ctx = context_for(p.scenario)
    trace: dict[str, Any] = {}
    evaluate(ctx, layout_vars(p.layout), trace)
    rows, op_formulas = _operations(ctx, trace, p.layout.recompute)
    parts = _parts(p, ctx, trace, rows)
    bounds = dict.fromkeys(BOUNDS, 0.0)
    for part in parts:
        for bound, seconds in part.bounds.items():
            bounds[bound] += seconds
    title = headline(p)
    assert [part.key for part in parts] == list(BREAKDOWN) + (["ep_comm_exposed_s"] if ctx.model.is_moe else [])
    experts = experts_text(p) if p.model.is_moe else ""
    return Explanation(
        title,
        p.layout.describe(),
        p.step_time_s,
        parts,
        bounds,
        rows,
        op_formulas,
        _op_symbols(ctx),
        experts,
        p.evidence,
        workload_lines(p, ctx),
    )


def workload_lines(p: Prediction, ctx: Context) -> tuple[str, ...]:
    """'Attention: ...' when packed documents price it, 'LoRA: ...' when the base is frozen."""
    lines = []
    seq_len = p.layout.seq_len
    if ctx.packing is not None:
        lines.append(
            f"Attention: {p.scenario.documents.label} packed in {seq_len:,}-token sequences, document masking: "
            f"{ctx.packing.keys:,.0f} keys per query (not the sequence's {seq_len / 2:,.0f}), kernels over "
            f"{ctx.packing.length:,.0f}-token documents; MLP and projections over every token"
        )
    if ctx.lora_rank:
        md = ctx.model
        adapters = md.lora_params_per_layer(ctx.lora_rank, ctx.lora_modules)
        layers = [name for name in md.attention_linear_shapes | md.mlp_linear_shapes if name in ctx.adapters]
        lines.append(
            f"LoRA: rank {ctx.lora_rank} on {ctx.lora_modules} ({', '.join(layers)}), "
            f"{adapters:,} adapter parameters per layer train; the base is frozen (no weight gradients)"
        )
    return tuple(lines)
