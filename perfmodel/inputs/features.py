"""Which software features each training stack had, from which release: what an older run could really run.

A scenario's `stack` and `vintage` (YYYY-MM) decide which layouts exist (a 2022 DeepSpeed pipeline has no
interleaving, Megatron had no context parallelism before 2024) and which kernels a step runs (attention before
FlashAttention materialises its scores; tensor parallelism before sequence parallelism replicates the norms). The
physics stays shared: a missing feature removes a mechanism (physics/parallel.feature_rules refuses its layouts,
era_recipe turns its kernels off); nothing is fitted per era. Without a vintage a run has every
feature its stack has today.

Dates are the first release the data notes or the paper introducing the feature show it in; 'recalled' marks a date
read from the public project history, not from a stored copy (an assumption, labelled).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from perfmodel.inputs.precision import Recipe
from perfmodel.inputs.stacks import STACKS


@dataclass(frozen=True)
class Feature:
    name: str
    what: str
    """What the feature is, as a refusal names it ('interleaved 1F1B pipeline schedule (VP > 1)')."""
    since: dict[str, str | None]
    """Stack -> first release month (YYYY-MM) with the feature; None: the stack never had it. A stack not listed
    has had it as long as it exists."""
    source: str

    def missing_in(self, stack: str, vintage: str | None) -> bool:
        """Whether a run of `stack` at release `vintage` (None: today's) lacks the feature."""
        if stack not in self.since:
            return False
        first = self.since[stack]
        return first is None or (vintage is not None and vintage < first)

    def why(self, stack: str, vintage: str | None) -> str:
        """Why a run of the stack at that release lacks the feature, in a refusal's words."""
        first = self.since.get(stack)
        if first is None:
            return f"the {stack} stack has no {self.what}"
        return f"the {stack} stack of {vintage} has no {self.what} (it came with its {first} release)"


_NARAYANAN = "Narayanan et al. 2021 (arXiv 2104.04473, April 2021; measured_runs_sources.md): PTD-P in Megatron-LM"
_KORTHIKANTI = "Korthikanti et al. 2022 (arXiv 2205.05198, May 2022; measured_runs_sources.md)"
_COMPOSER_FSDP = (
    "inputs/stacks.py: Composer/llm-foundry trains with PyTorch FSDP alone (no tensor or pipeline parallel)"
)
_DEEPSPEED_PIPE = (
    "DeepSpeed's PipelineEngine (3D parallelism with Megatron's tensor parallelism, DeepSpeed blog of 2020-09, "
    "recalled) runs one 1F1B schedule without virtual stages, and only ZeRO-1 with it; Megatron-DeepSpeed as BLOOM "
    "ran it (campaigns.md section 12: TP 4, PP 12, ZeRO stage 1)"
)
_DEEPSPEED_ZERO3 = (
    "DeepSpeed's sdists on PyPI: 0.3.13 (2021-03-16), 0.3.14, 0.4.0 and 0.5.0 gather each parameter by its own "
    "torch.distributed.all_gather after a torch.cuda.synchronize() (runtime/zero/partition_parameters.py, "
    "Init._allgather_param) and reduce-scatter each gradient by its own call (Init._reduce_scatter_gradient); 0.5.8 "
    "(2021-12) coalesces a module's gathers, still after the synchronize (Init._allgather_params_coalesced); 0.6.0 "
    "(2022-03-02) gathers through all_gather_coalesced, prefetched without one"
)
_MEGATRON_P2P = (
    "Megatron-LM of 2021 (p2p_communication._communicate) posts each step's sends and receives by "
    "batch_isend_irecv, waits on them and calls torch.cuda.synchronize() 'to protect against race condition', so no "
    "send overlaps compute; Megatron-Core's overlap_p2p_comm for the interleaved schedule came about 2023-05 "
    "(recalled, not a stored copy)"
)
_MEGATRON_FSDP = "measured_runs.csv: Megatron-Bridge's first Megatron-FSDP rows are of the NeMo 25.04 container"
_TORCHTITAN = "torchtitan's first public release (2024-04) and PyTorch 2.4's pipelining schedules (2024-07), recalled"
_MAXTEXT_MESH = (
    "MaxText shards by mesh axes (base.yml: data, fsdp, tensor, ... over ICI and DCN): the fsdp axes shard parameters, "
    "gradients and optimizer state together (ZeRO-3), the data axes replicate all three (ZeRO-0); no mode shards the "
    "optimizer state or gradients alone (recalled from the public code of 2024, not a stored copy)"
)

FEATURES: tuple[Feature, ...] = (
    Feature(
        "tensor_parallel",
        "tensor parallelism (TP > 1)",
        {"composer": None, "torchtitan": "2024-04"},
        f"{_COMPOSER_FSDP}; {_TORCHTITAN}",
    ),
    Feature(
        "pipeline",
        "pipeline parallelism (PP > 1)",
        {"megatron": "2021-04", "composer": None, "torchtitan": "2024-07"},
        f"{_NARAYANAN}; {_COMPOSER_FSDP}; {_TORCHTITAN}",
    ),
    Feature(
        "interleaved_pipeline",
        "interleaved 1F1B pipeline schedule (VP > 1)",
        {
            "megatron": "2021-04",
            "deepspeed": None,
            "megatron-deepspeed": None,
            "composer": None,
            "torchtitan": "2024-07",
        },
        f"{_NARAYANAN} introduced the interleaved schedule; {_DEEPSPEED_PIPE}; {_COMPOSER_FSDP}; {_TORCHTITAN}",
    ),
    Feature(
        "sequence_parallel",
        "sequence parallelism with TP (norms and dropouts sharded over the TP ranks)",
        {"megatron": "2022-05", "deepspeed": None, "megatron-deepspeed": None},
        f"{_KORTHIKANTI}; Megatron-DeepSpeed's pipeline runs of 2022 ran TP without it ({_DEEPSPEED_PIPE})",
    ),
    Feature(
        "selective_recompute",
        "selective activation recomputation",
        {"megatron": "2022-05", "deepspeed": None, "megatron-deepspeed": None, "composer": None},
        f"{_KORTHIKANTI}; DeepSpeed and Composer checkpoint whole layers only (inputs/stacks.py, their plausible "
        "recompute settings)",
    ),
    Feature(
        "flash_attention",
        "FlashAttention (fused attention that never writes the scores to HBM)",
        {stack: "2022-05" for stack in ("megatron", "deepspeed", "megatron-deepspeed", "composer", "torchtitan")},
        "Dao et al. 2022, 'FlashAttention' (arXiv 2205.14135, May 2022); LLaMA's xformers attention of 2022-12 uses "
        "its backward (Touvron et al. 2023, arXiv 2302.13971, section 2.4); BLOOM (2022-03) trained before it "
        "(whole_runs.csv: '2022 kernels: no flash attention')",
    ),
    Feature(
        "distributed_optimizer",
        "distributed optimizer (ZeRO-1)",
        {"megatron": "2022-07", "composer": None, "maxtext": None, "torchtitan": None},
        "Megatron-LM's --use-distributed-optimizer, 2022-07 (recalled); DeepSpeed has had ZeRO-1 since its first "
        "release (Rajbhandari et al. 2019, arXiv 1910.02054); FSDP shards gradients with the optimizer state "
        f"(SHARD_GRAD_OP, FULL_SHARD) or nothing (inputs/stacks.py); {_MAXTEXT_MESH}; torchtitan 0.2.0's "
        "parallelism options shard with FSDP2 (data_parallel_shard_degree) or replicate, no optimizer-only mode "
        "(torchtitan/config/job_config.py Parallelism)",
    ),
    Feature(
        "gradient_sharding",
        "ZeRO-2 (gradients reduce-scattered per micro-batch and sharded)",
        {"megatron": "2025-04", "maxtext": None, "torchtitan": None},
        f"Megatron's distributed optimizer keeps whole gradient buffers; {_MEGATRON_FSDP} (its optim_grads mode); "
        f"{_MAXTEXT_MESH}; torchtitan's FSDP2 shards parameters too (fsdp_reshard_after_forward 'never' keeps them "
        "gathered between forward and backward only, still all-gathered each step; job_config.py Parallelism)",
    ),
    Feature(
        "sharded_pipeline",
        "ZeRO-2 or ZeRO-3 with pipeline parallelism",
        {"deepspeed": None, "megatron-deepspeed": None},
        _DEEPSPEED_PIPE,
    ),
    Feature(
        "fsdp",
        "fully sharded data parallelism (ZeRO-3/FSDP)",
        {"megatron": "2025-04"},
        _MEGATRON_FSDP,
    ),
    Feature(
        "zero3_coalesced_prefetch",
        "ZeRO-3 gathers coalesced per module and prefetched behind compute",
        {"deepspeed": "2022-03", "megatron-deepspeed": "2022-03"},
        f"{_DEEPSPEED_ZERO3}; releases 0.5.8-0.5.10 are priced as the older ones (a call per tensor, not per module)",
    ),
    Feature(
        "pp_send_overlap",
        "pipeline sends overlapped with compute",
        {"megatron": "2023-05", "deepspeed": None, "megatron-deepspeed": None},
        f"{_MEGATRON_P2P}; DeepSpeed's PipelineEngine sends each activation and gradient by a blocking "
        "torch.distributed send (runtime/pipe/p2p.py, recalled)",
    ),
    Feature(
        "context_parallel",
        "context parallelism (CP > 1)",
        {
            "megatron": "2024-03",
            "deepspeed": None,
            "megatron-deepspeed": None,
            "composer": None,
            "torchtitan": "2024-07",
        },
        "whole_runs_sources.md: NVIDIA NeMo's long-sequence table, container 24.03.01, the first release in the data "
        f"notes with CP; DeepSpeed and Composer have no ring-attention CP; {_TORCHTITAN}",
    ),
    Feature(
        "tp_comm_overlap",
        "TP communication overlap (Transformer Engine userbuffers)",
        {"megatron": "2023-08", "deepspeed": None, "megatron-deepspeed": None, "maxtext": None},
        "Transformer Engine's userbuffers overlap in Megatron (NeMo 23.08, recalled); DeepSpeed has none "
        "(inputs/stacks.py); MaxText's TP collectives are XLA's, not Transformer Engine's userbuffers",
    ),
)
BY_NAME = {f.name: f for f in FEATURES}
assert all(stack in STACKS for f in FEATURES for stack in f.since)


@cache
def missing_features(stack: str, vintage: str | None) -> frozenset[str]:
    """Names of the features a run of `stack` at release `vintage` (None: today's) lacks."""
    return frozenset(f.name for f in FEATURES if f.missing_in(stack, vintage))


ERA_KERNELS = frozenset(
    ("flash_attention", "sequence_parallel", "tp_comm_overlap", "pp_send_overlap", "zero3_coalesced_prefetch")
)
"""The features whose absence changes what a step runs (era_recipe), not which layouts exist."""


@cache
def era_recipe(recipe: Recipe, missing: frozenset[str]) -> Recipe:
    """The recipe as a release lacking `missing` ran it: attention that writes its scores to HBM before
    FlashAttention, TP without sequence parallelism (and so without the weight gradient's re-gather of its input:
    precision.Recipe.tp_wgrad_regather), TP collectives not overlapped before userbuffers, blocking
    pipeline sends before their overlap, ZeRO-3 tensor by tensor before coalesced prefetch
    (precision.Recipe.zero3_per_tensor). Cached: one object per recipe and era, so contexts built from it are shared
    (planning.predict.context_for keys them by identity)."""
    if not missing & ERA_KERNELS:
        return recipe
    sequence_parallel = recipe.sequence_parallel and "sequence_parallel" not in missing
    return replace(
        recipe,
        flash_attention=recipe.flash_attention and "flash_attention" not in missing,
        sequence_parallel=sequence_parallel,
        tp_wgrad_regather=recipe.tp_wgrad_regather and sequence_parallel,
        tp_comm_overlap=recipe.tp_comm_overlap and "tp_comm_overlap" not in missing,
        pp_send_overlap=recipe.pp_send_overlap and "pp_send_overlap" not in missing,
        zero3_per_tensor=recipe.zero3_per_tensor or "zero3_coalesced_prefetch" in missing,
    )
