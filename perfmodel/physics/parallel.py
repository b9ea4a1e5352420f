"""Parallel layouts (TP, CP, DP, PP with interleaving, EP) and the rules a valid layout follows.

Ranks are placed in Megatron order: TP fastest, then CP, then DP, then PP, so a group's stride is the product of
the sizes placed before it. CP ranks hold the same weights, so gradients are reduced over DP x CP.

The rules are written once, as arithmetic on `LayoutNumbers`, so the same rule checks one layout (ints, with its
one-line explanation for `predict`) and a whole search space at once (numpy arrays that broadcast, for `search`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

from perfmodel.errors import InfeasibleLayout
from perfmodel.inputs.features import BY_NAME, missing_features
from perfmodel.inputs.models import ModelSpec
from perfmodel.physics.schedule import UNEVEN_EXTRA_UNITS

RECOMPUTE_MODES = ("none", "selective", "full")
ZERO_STAGES = (0, 1, 2, 3)


class LayoutNumbers(NamedTuple):
    """A layout as numbers: ints for one layout, broadcastable numpy arrays for many. recompute is the index into
    RECOMPUTE_MODES (-1 for an unknown mode); recompute_layers 0 for every layer (see Layout)."""

    tp: Any
    pp: Any
    cp: Any
    dp: Any
    vp: Any
    ep: Any
    mbs: Any
    gbs: Any
    seq_len: Any
    recompute: Any
    zero: Any
    etp: Any = 1
    recompute_layers: Any = 0


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int
    cp: int
    dp: int
    vp: int
    ep: int
    mbs: int
    gbs: int
    seq_len: int
    recompute: str
    zero: int
    etp: int = 1
    """Expert tensor parallelism (MoE): the experts' own TP degree, folded with EP over the TP x CP x DP ranks."""
    recompute_layers: int | None = None
    """Partial (block) recompute with recompute 'full': only the first k layers of each pipeline chunk recompute, the
    others keep their activations (Megatron's recompute_method=block, recompute_num_layers=k). None: every layer."""

    @property
    def n_gpus(self) -> int:
        return self.tp * self.pp * self.cp * self.dp

    @property
    def microbatches(self) -> int:
        """Micro-batches each pipeline runs per step (gradient-accumulation steps without PP)."""
        return self.gbs // (self.mbs * self.dp)

    @property
    def expert_dp(self) -> int:
        """Expert data-parallel ranks (MoE): a stage's TP x CP x DP ranks refolded as EP x ETP x expert DP."""
        return self.tp * self.cp * self.dp // (self.ep * self.etp)

    def numbers(self) -> LayoutNumbers:
        mode = RECOMPUTE_MODES.index(self.recompute) if self.recompute in RECOMPUTE_MODES else -1
        lo = self
        return LayoutNumbers(
            lo.tp, lo.pp, lo.cp, lo.dp, lo.vp, lo.ep, lo.mbs, lo.gbs, lo.seq_len, mode, lo.zero, lo.etp,
            lo.recompute_layers or 0,
        )  # fmt: skip

    def describe(self) -> str:
        return (
            f"TP{self.tp} PP{self.pp} VP{self.vp} CP{self.cp} DP{self.dp}"
            + (f" EP{self.ep}" if self.ep > 1 else "")
            + (f" ETP{self.etp}" if self.etp > 1 else "")
            + f", MBS {self.mbs}, GBS {self.gbs}, seq {self.seq_len}, recompute {self.recompute}"
            + (f" (first {self.recompute_layers} layers per chunk)" if self.recompute_layers else "")
            + f", ZeRO-{self.zero}"
        )


Check = Callable[[LayoutNumbers, ModelSpec, int], Any]


def divisors(n: int) -> list[int]:
    """Every divisor of n, ascending; trial division up to sqrt(n), so that a global batch of a billion costs
    milliseconds, not a minute."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]


def _expert_parallel_sizes(md: ModelSpec, n_gpus: int) -> str:
    """The EP sizes that divide both the experts and the GPUs (EP divides a stage's ranks, which divide the GPUs),
    as an error lists them: 'EP 1, 2, 4 or 8'."""
    sizes = [str(d) for d in divisors(math.gcd(md.experts, n_gpus))]
    return "EP " + (f"{', '.join(sizes[:-1])} or {sizes[-1]}" if len(sizes) > 1 else sizes[0])


@dataclass(frozen=True)
class Rule:
    """`holds` is element-wise arithmetic (`|`, `&`, `%`, comparisons) so it works on ints and arrays alike;
    `explain` says what is broken, naming the numbers of one layout; `dims` names the scenario options it constrains,
    in the order its sentence names them, so that an error can point at the flag or field that set one. `open_dims`,
    of a divisibility rule, are the degrees of its divisor that a partly given layout may leave to the search: at 1
    they are the weakest test (a searched degree only multiplies them), so a layout whose other dims are given is
    held to it (request.check_given_layout)."""

    holds: Check
    explain: Callable[[LayoutNumbers, ModelSpec, int], str]
    dims: tuple[str, ...]
    open_dims: tuple[str, ...] = ()


HYBRID_RULES: tuple[Rule, ...] = (
    Rule(
        lambda v, md, n: (md.mamba_heads == 0) | ((md.mamba_heads % v.tp == 0) & (md.mamba_groups % v.tp == 0)),
        lambda v, md, n: (
            f"TP {v.tp} must divide the {md.mamba_heads} Mamba heads and {md.mamba_groups} groups (Megatron-Core's "
            "MambaMixer splits both: megatron-core 0.16.1 ssm/mamba_mixer.py L250, L258)"
        ),
        ("tp",),
    ),
    Rule(
        lambda v, md, n: (
            (md.mamba_heads == 0)
            | (
                (md.mamba_heads % (v.tp * v.cp) == 0)
                & ((md.mamba_groups % (v.tp * v.cp) == 0) | ((v.tp * v.cp) % md.mamba_groups == 0))
            )
        ),
        lambda v, md, n: (
            f"TP {v.tp} x CP {v.cp} must divide the {md.mamba_heads} Mamba heads, and divide or be a multiple of its "
            f"{md.mamba_groups} groups (CP splits them: megatron-core 0.16.1 ssm/mamba_context_parallel.py L99-125)"
        ),
        ("tp", "cp"),
    ),
    Rule(
        lambda v, md, n: (md.gdn_key_heads % v.tp == 0) & (md.gdn_value_heads % v.tp == 0),
        lambda v, md, n: (
            f"TP {v.tp} must divide the {md.gdn_key_heads} Gated DeltaNet key heads and {md.gdn_value_heads} value "
            "heads (Megatron-Core splits both: megatron-core 0.16.1 transformer_config.py L975-980)"
        ),
        ("tp",),
    ),
    Rule(
        lambda v, md, n: (md.gdn_value_heads == 0) | (v.cp == 1),
        lambda v, md, n: (
            f"CP {v.cp}: Megatron-Core's Gated DeltaNet does not support context parallelism (megatron-core 0.16.1 "
            "transformer_config.py L983-986); use CP 1"
        ),
        ("cp",),
    ),
    Rule(
        lambda v, md, n: (md.mamba_heads == 0) | (v.vp == 1),
        lambda v, md, n: (
            f"VP {v.vp}: Megatron-Core runs a Mamba hybrid without interleaving unless its pattern marks the stage "
            "boundaries, which perfmodel's patterns do not (megatron-core 0.16.1 ssm/mamba_block.py L173-176; "
            "0.19.2 models/hybrid/hybrid_layer_allocation.py L385-391); use VP 1"
        ),
        ("vp",),
    ),
)
"""Hybrid (Mamba-2, Gated DeltaNet) layouts, as Megatron-Core's MambaMixer, GatedDeltaNet and MambaStack accept
them. A Gated DeltaNet hybrid without Mamba layers (Qwen3-Next) is a GPT model, whose block spec takes each virtual
stage's layers as any GPT model's (megatron-core 0.19.2 models/gpt/experimental_attention_variant_module_specs.py
L273-323, get_transformer_block_with_experimental_attention_variant_spec), so it interleaves."""


RULES: tuple[Rule, ...] = (
    Rule(
        lambda v, md, n: n % (v.tp * v.pp * v.cp) == 0,
        lambda v, md, n: f"TP {v.tp} x PP {v.pp} x CP {v.cp} = {v.tp * v.pp * v.cp:,} does not divide the {n:,} GPUs",
        ("tp", "pp", "cp", "n_gpus"),
        open_dims=("tp", "pp", "cp"),
    ),
    Rule(
        lambda v, md, n: (n % (v.tp * v.pp * v.cp) != 0) | (v.tp * v.pp * v.cp * v.dp == n),
        lambda v, md, n: f"TP x PP x CP x DP = {v.tp * v.pp * v.cp * v.dp:,} must equal the {n:,} GPUs",
        ("tp", "pp", "cp", "dp", "n_gpus"),
    ),
    Rule(
        lambda v, md, n: md.heads % v.tp == 0,
        lambda v, md, n: f"TP {v.tp} must divide the {md.heads} attention heads",
        ("tp",),
    ),
    Rule(
        lambda v, md, n: (md.kv_heads % v.tp == 0) | ((v.tp % md.kv_heads == 0) & ((2 * md.kv_dim) % v.tp == 0)),
        lambda v, md, n: (
            f"TP {v.tp} must divide the {md.kv_heads} KV heads (query groups) or be a multiple of them (Megatron-Core "
            f"then replicates each KV head over TP / {md.kv_heads} ranks)"
        ),
        ("tp",),
    ),
    Rule(
        lambda v, md, n: md.ffn % v.tp == 0,
        lambda v, md, n: f"TP {v.tp} must divide the FFN width {md.ffn}",
        ("tp",),
    ),
    Rule(
        lambda v, md, n: v.seq_len % v.tp == 0,
        lambda v, md, n: f"TP {v.tp} must divide the sequence length {v.seq_len} (sequence parallelism)",
        ("tp", "seq_len"),
    ),
    Rule(
        lambda v, md, n: (v.cp == 1) | (v.seq_len % (2 * v.cp * v.tp) == 0),
        lambda v, md, n: (
            f"CP {v.cp} needs the sequence length {v.seq_len} divisible by 2 x CP x TP = "
            f"{2 * v.cp * v.tp} (load-balanced causal chunks)"
        ),
        ("cp", "seq_len", "tp"),
    ),
    Rule(
        lambda v, md, n: (v.cp == 1) | (md.index_topk == 0),
        lambda v, md, n: f"CP {v.cp} is not priced with sparse attention (the model's index_topk {md.index_topk})",
        ("cp",),
    ),
    Rule(
        lambda v, md, n: v.pp * v.vp <= md.layers + UNEVEN_EXTRA_UNITS,
        lambda v, md, n: (
            f"PP {v.pp} x VP {v.vp} = {v.pp * v.vp} stages exceed the {md.layers} layers "
            f"(+{UNEVEN_EXTRA_UNITS} for the embedding and loss stages)"
        ),
        ("pp", "vp"),
    ),
    Rule(
        lambda v, md, n: (v.vp == 1) | (v.pp > 1),
        lambda v, md, n: f"VP {v.vp} (interleaving) needs PP > 1",
        ("vp", "pp"),
    ),
    Rule(
        lambda v, md, n: v.gbs % (v.mbs * v.dp) == 0,
        lambda v, md, n: f"GBS {v.gbs} must be divisible by MBS {v.mbs} x DP {v.dp} = {v.mbs * v.dp}",
        ("gbs", "mbs", "dp"),
        open_dims=("mbs",),
    ),
    # Megatron-Core's interleaved schedule refuses fewer micro-batches than stages (schedules.py,
    # forward_backward_pipelining_with_interleaving: 0.9.0 needs a multiple of PP; from 0.10.0 its
    # microbatch_group_size_per_vp_stage, PP by default, may not exceed them); torchtitan's PyTorch schedules likewise
    # (recalled). With fewer, no schedule fills the pipeline: the step waits (pp - 1) micro-batches, not (pp - 1) / vp.
    Rule(
        lambda v, md, n: (v.vp == 1) | (v.gbs >= v.pp * v.mbs * v.dp),
        lambda v, md, n: (
            f"VP {v.vp} (interleaving) needs at least PP {v.pp} micro-batches per step; GBS {v.gbs} / (MBS {v.mbs} x "
            f"DP {v.dp}) gives {v.gbs // max(1, v.mbs * v.dp)}"
        ),
        ("vp", "pp", "gbs", "mbs", "dp"),
    ),
    Rule(
        lambda v, md, n: (v.ep == 1) | (md.experts > 0),
        lambda v, md, n: f"EP {v.ep} needs a mixture-of-experts model; {md.id} is dense (use EP 1)",
        ("ep",),
    ),
    Rule(
        lambda v, md, n: (v.etp == 1) | (md.experts > 0),
        lambda v, md, n: f"expert TP {v.etp} needs a mixture-of-experts model; {md.id} is dense (use ETP 1)",
        ("etp",),
    ),
    Rule(
        lambda v, md, n: (md.experts == 0) | (md.experts % v.ep == 0),
        lambda v, md, n: (
            f"EP {v.ep} must divide the {md.experts} experts of {md.id}; on {n:,} GPUs: {_expert_parallel_sizes(md, n)}"
        ),
        ("ep",),
    ),
    Rule(
        lambda v, md, n: (md.experts == 0) | ((v.tp * v.cp * v.dp) % (v.ep * v.etp) == 0),
        lambda v, md, n: (
            f"EP {v.ep} x expert TP {v.etp} = {v.ep * v.etp} must divide the TP x CP x DP = "
            f"{v.tp * v.cp * v.dp} ranks of a pipeline stage (MoE parallel folding)"
        ),
        ("ep", "etp", "tp", "cp", "dp"),
    ),
    Rule(
        lambda v, md, n: (md.experts == 0) | (md.moe_ffn % v.etp == 0),
        lambda v, md, n: f"expert TP {v.etp} must divide the expert width {md.moe_ffn}",
        ("etp",),
    ),
    Rule(
        lambda v, md, n: (v.zero < 3) | (v.pp == 1),
        lambda v, md, n: f"ZeRO-3/FSDP is not combined with pipeline parallelism (PP {v.pp})",
        ("zero", "pp"),
    ),
    Rule(
        lambda v, md, n: (v.recompute >= 0) & (v.recompute < len(RECOMPUTE_MODES)),
        lambda v, md, n: f"recompute must be one of {', '.join(RECOMPUTE_MODES)}",
        ("recompute",),
    ),
    Rule(
        lambda v, md, n: (v.recompute_layers == 0) | ((v.recompute == 2) & (v.recompute_layers >= 1)),
        lambda v, md, n: (
            f"recompute_layers {v.recompute_layers} (partial block recompute) needs recompute full and at least 1 layer"
        ),
        ("recompute_layers", "recompute"),
    ),
    Rule(
        lambda v, md, n: (v.zero >= 0) & (v.zero <= ZERO_STAGES[-1]),
        lambda v, md, n: f"ZeRO stage {v.zero} must be one of 0, 1, 2, 3",
        ("zero",),
    ),
    *HYBRID_RULES,
)


HEAD_SPLIT_RULE = Rule(
    lambda v, md, n: (md.heads % (v.tp * v.cp) == 0) & (md.kv_heads % (v.tp * v.cp) == 0),
    lambda v, md, n: (
        f"CP {v.cp} with the all-to-all exchange (cp_comm 'a2a') splits heads: TP x CP = {v.tp * v.cp} must divide "
        f"the {md.heads} attention heads and the {md.kv_heads} KV heads"
    ),
    ("cp", "tp"),
)
"""Ulysses's all-to-all (precision.Recipe.cp_comm 'a2a') gives each rank heads / (TP x CP) whole heads."""


FEATURE_CHECKS: dict[str, tuple[Check, str, tuple[str, ...]]] = {
    "tensor_parallel": (lambda v, md, n: v.tp == 1, "TP {v.tp}", ("tp",)),
    "pipeline": (lambda v, md, n: v.pp == 1, "PP {v.pp}", ("pp",)),
    "interleaved_pipeline": (lambda v, md, n: v.vp == 1, "VP {v.vp}", ("vp",)),
    "context_parallel": (lambda v, md, n: v.cp == 1, "CP {v.cp}", ("cp",)),
    "selective_recompute": (lambda v, md, n: v.recompute != 1, "selective recompute", ("recompute",)),
    "distributed_optimizer": (lambda v, md, n: v.zero != 1, "ZeRO-1", ("zero",)),
    "gradient_sharding": (lambda v, md, n: v.zero != 2, "ZeRO-2", ("zero",)),
    "sharded_pipeline": (lambda v, md, n: (v.pp == 1) | (v.zero < 2), "ZeRO-{v.zero} with PP {v.pp}", ("zero", "pp")),
    "fsdp": (lambda v, md, n: v.zero != 3, "ZeRO-3", ("zero",)),
}
"""The layout a software feature makes possible (inputs/features.py), as a rule's check: what a release without it
cannot run. Features that change kernels rather than layouts (flash attention, sequence parallelism, TP overlap) are
not here: precision.era_recipe prices their absence (and that of ZeRO-3's coalesced prefetch)."""


@cache
def feature_rules(stack: str, vintage: str | None) -> tuple[Rule, ...]:
    """RULES and the rules of the features a run of `stack` at release `vintage` lacks (None: today's release)."""
    missing = missing_features(stack, vintage)

    def rule(name: str) -> Rule:
        holds, asks, dims = FEATURE_CHECKS[name]
        why = BY_NAME[name].why(stack, vintage)
        return Rule(holds, lambda v, md, n: f"{asks.format(v=v)}: {why}", dims)

    return RULES + tuple(rule(name) for name in FEATURE_CHECKS if name in missing)


def valid(v: LayoutNumbers, model: ModelSpec, n_gpus: int, rules: tuple[Rule, ...] = RULES) -> Any:
    """True where a layout breaks no rule: a bool for ints, a broadcast boolean array for arrays.

    The rules' results are and-ed smallest first (`&` on booleans gives the same in any order): each rule depends on
    a few of a search block's axes, and in the rules' own order the first one over the micro-batch, recompute and
    ZeRO axes made every later `&` one over the whole block (a 405B block of 940,000 layouts: 6 ms against 3); those
    of one shape first (most rules read the rows alone), so that no `&` broadcasts before it must."""
    return all_hold([rule.holds(v, model, n_gpus) for rule in rules])


def all_hold(held: list[Any]) -> Any:
    """`valid` of the rules' results (`Rule.holds`, bools or arrays): and-ed smallest first."""
    shapes: dict[Any, Any] = {}
    for holds in held:
        shape = getattr(holds, "shape", ())
        shapes[shape] = shapes[shape] & holds if shape in shapes else holds
    ok: Any = True
    for holds in sorted(shapes.values(), key=_size):
        ok = ok & holds
    return ok


def _size(held: Any) -> int:
    return getattr(held, "size", 1)


def broken_rules(layout: Layout, model: ModelSpec, n_gpus: int, rules: tuple[Rule, ...] = RULES) -> list[Rule]:
    """Every rule the layout breaks, in the rules' order (empty when valid)."""
    v = layout.numbers()
    return [rule for rule in rules if not rule.holds(v, model, n_gpus)]


def violations(layout: Layout, model: ModelSpec, n_gpus: int, rules: tuple[Rule, ...] = RULES) -> list[str]:
    """Every rule the layout breaks, each as a sentence naming the numbers involved (empty when valid)."""
    v = layout.numbers()
    return [rule.explain(v, model, n_gpus) for rule in broken_rules(layout, model, n_gpus, rules)]


def most_broken(
    v: LayoutNumbers, model: ModelSpec, n_gpus: int, shape: tuple[int, ...], rules: tuple[Rule, ...] = RULES
) -> tuple[str, float]:
    """For a space of layouts (arrays broadcasting to `shape`): the rule broken by the most of them, explained on
    one example, and the share of the space that breaks it."""
    import numpy as np

    broken = [np.broadcast_to(~np.asarray(rule.holds(v, model, n_gpus), dtype=bool), shape) for rule in rules]
    counts = [int(b.sum()) for b in broken]
    worst = int(np.argmax(counts))
    index = np.unravel_index(int(np.argmax(broken[worst])), shape)
    example = LayoutNumbers(*(int(np.broadcast_to(x, shape)[index]) for x in v))
    return rules[worst].explain(example, model, n_gpus), counts[worst] / max(1, int(np.prod(shape)))


def check(layout: Layout, model: ModelSpec, n_gpus: int, rules: tuple[Rule, ...] = RULES) -> None:
    broken = violations(layout, model, n_gpus, rules)
    if broken:
        raise InfeasibleLayout(f"invalid layout {layout.describe()}: {'; '.join(broken)}")
