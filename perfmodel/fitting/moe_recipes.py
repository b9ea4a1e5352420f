"""The Megatron-Bridge performance recipe settings of bundled MoE rows that the model prices differently from its
zoo entry: a row whose model, GPU and parallel layout match a sourced recipe exactly runs that recipe's dispatcher
and EP overlap (`ModelSpec.dispatcher`, `ModelSpec.ep_microbatch_overlap`).

The recipes are megatron-bridge 0.6.x's per-GPU performance recipes (PyPI sdists 0.6.0 and 0.6.2, the latter
uploaded 2026-09-18), i.e. the recipes as of NeMo 26.08. The tables' rows of older containers ran the same layout;
that they ran the same settings is an assumption, noted on each row it is applied to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RecipeSettings:
    model: str
    """measured_runs.csv model name."""
    hardware: str
    """measured_runs.csv hardware."""
    layout: tuple[int, ...]
    """TP, PP, VP, EP and micro-batch size of the recipe (the global batch only sets the micro-batch count)."""
    settings: dict[str, Any]
    """ModelSpec fields the recipe sets otherwise than the zoo entry."""
    source: str


MOE_RECIPES = (
    RecipeSettings(
        "Qwen3-235B-A22B",
        "H100-SXM5-80GB",
        (2, 8, 4, 32, 1),
        {"dispatcher": "alltoall", "ep_microbatch_overlap": True},
        "megatron-bridge 0.6.2 (PyPI sdist, 2026-09-18; 0.6.0 the same), perf_recipes/qwen/h100/qwen3_moe.py, "
        "qwen3_235b_a22b_pretrain_256gpu_h100_fp8cs_config and _bf16_config: TP2 PP8 VP4 EP32 MBS1, "
        "moe_token_dispatcher_type 'alltoall', moe_a2a_overlap True, "
        "CommOverlapConfig(overlap_moe_expert_parallel_comm=True)",
    ),
)
"""Only rows whose settings move the prediction: the Blackwell recipes of these models (flex dispatcher, and in
the MXFP8 ones the EP overlap of two micro-batches too) price as the zoo entries already do."""


def recipe_for(model: str, hardware: str, layout: tuple[int, ...]) -> RecipeSettings | None:
    """The sourced recipe a row with this model, GPU and layout ran, if one matches it exactly."""
    return next((r for r in MOE_RECIPES if (r.model, r.hardware, r.layout) == (model, hardware, layout)), None)
