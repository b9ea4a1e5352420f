"""Hybrid layer patterns: which mixer each layer of a hybrid model has, as Megatron-Core writes it.

A pattern is Megatron's `hybrid_override_pattern` (megatron-core 0.16.1 ssm/mamba_hybrid_layer_allocation.py;
transformers 5.25 NemotronHConfig._pattern_to_list): one character per layer, `M` a Mamba-2 mixer, `*` self-attention,
`-` a dense MLP, `E` a mixture-of-experts MLP, each with its own pre-norm and residual. `G`, a Gated DeltaNet
linear-attention mixer (Qwen3-Next), is perfmodel's own: megatron-core 0.16.1's pattern symbols stop at those four
(mamba_hybrid_layer_allocation.py L25-32) and it places Gated DeltaNet by `linear_attention_freq` in a GPT model
instead (transformer_config.py L275), which a pattern writes as `GEGEGE*E...`. A hybrid model's layers are
priced by kind and summed; a pipeline stage holds consecutive pattern positions (megatron-core 0.16.1
ssm/mamba_block.py L214-219: `num_layers // pp` layers from `pp_rank x that`), so stages of unequal mix cost
unequally and the slowest sets the step (`stage_layer_equivalents`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from itertools import pairwise
from typing import Any

KINDS = {"M": "mamba", "G": "gated_deltanet", "*": "attention", "-": "mlp", "E": "moe"}
"""Pattern characters and the layer kind each stands for."""


def pattern_problem(pattern: str, layers: int) -> str | None:
    """What is wrong with a pattern for a model of `layers` layers (None: nothing), as an error line's detail."""
    unknown = sorted(set(pattern) - set(KINDS))
    if unknown:
        allowed = ", ".join(f"'{c}' {k}" for c, k in KINDS.items())
        return f"unknown layer kind {unknown[0]!r} in the pattern; allowed: {allowed}"
    if len(pattern) != layers:
        return f"has {len(pattern)} layers but layers is {layers}: one character per layer"
    return None


def counts(pattern: str) -> dict[str, int]:
    """Layers of each kind ('M', 'G', '*', '-', 'E')."""
    return {c: pattern.count(c) for c in KINDS}


def stage_layer_equivalents(
    pattern: str, weights: Mapping[str, float], max_pp: int
) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """Per pipeline shape, indexed `stage_index(pp, vp, max_pp)`, the first, last and busiest interior rank's layers
    in mean-layer units: the sum of their positions' `weights` (a cost per kind) over the mean weight, so that a
    stage of n layers whose mix costs more than the model's mean counts for more than n. The pattern splits into
    pp x vp chunks of consecutive positions, the first and last one fewer than the others when they do not divide
    the layers (schedule.stage_layers' uneven split, which counts the embedding and the loss as a layer each), and
    rank r holds chunks r, r + pp, ... (Megatron's interleaved schedule; vp is 1 for a Mamba hybrid: the VP rule)."""
    return _tables(pattern, tuple(sorted(weights.items())), max_pp)


def stage_index(pp: Any, vp: Any, max_pp: int) -> Any:
    """Where `stage_layer_equivalents`' tables keep a pipeline of pp ranks with vp chunks each."""
    return (vp - 1) * (max_pp + 1) + pp


@cache
def _tables(
    pattern: str, weights: tuple[tuple[str, float], ...], max_pp: int
) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    cost = dict(weights)
    costs = [cost[c] for c in pattern]
    mean = sum(costs) / len(costs)
    size = stage_index(max_pp, max_pp, max_pp) + 1
    first, last, interior = [0.0] * size, [0.0] * size, [0.0] * size
    for vp in range(1, max_pp + 1):
        for pp in range(1, max_pp // vp + 1):
            sizes = _stage_sizes(len(costs), pp * vp)
            bounds = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
            chunks = [sum(costs[a:b]) / mean for a, b in pairwise(bounds)]
            ranks = [sum(chunks[r::pp]) for r in range(pp)]
            at = stage_index(pp, vp, max_pp)
            first[at], last[at] = ranks[0], ranks[-1]
            interior[at] = max(ranks[1:-1]) if pp > 2 else max(ranks)
    return tuple(first), tuple(last), tuple(interior)


def _stage_sizes(layers: int, pp: int) -> list[int]:
    """Layers of each stage, first to last: even when pp divides them, else ceil((layers + 2) / pp) for the interior
    stages and one fewer at each end, the last taking what is left (at least none)."""
    if layers % pp == 0:
        return [layers // pp] * pp
    per = -(-(layers + 2) // pp)
    sizes = [per - 1] + [per] * (pp - 2)
    sizes = [min(s, layers - sum(sizes[:i])) for i, s in enumerate(sizes)]
    return [*sizes, max(layers - sum(sizes), 0)]
