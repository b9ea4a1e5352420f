"""The mixture-of-experts block of one layer on one rank: router, token permutation, grouped expert GEMMs, shared
experts, the expert-parallel all-to-all, and what the block keeps for backward.

Megatron's MoE parallel folding: attention runs on the TP x CP x DP ranks of a pipeline stage, the experts on the
same ranks refolded as ETP x EP x EDP (expert TP fastest, then EP, then expert DP). Sequence parallelism leaves
T / tp tokens on each rank; the router sends top_k copies of each to the ranks holding their experts (dispatch,
an all-to-all over EP), expert TP all-gathers the copies of its ranks so that each holds 1/etp of every expert's
width, and the outputs travel back the same way (combine). With a balanced router (the published MoE rows force
balance) every EP rank receives as many copies as it sends; `imbalance` scales the busiest rank's share.

An expert's GEMM sees only the tokens routed to it, m = T/tp x top_k x etp / (experts / ep): one grouped GEMM runs
them all, and a small m loses to tile padding (a 128-row tile half full does half the work) and to the weights
read per group, which the roofline prices.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

from perfmodel.inputs import hybrid
from perfmodel.inputs.models import ModelSpec
from perfmodel.inputs.precision import BF16_BYTES, FP32_BYTES, Recipe
from perfmodel.physics import deltanet, mamba
from perfmodel.physics.algebra import Number, ceil, minimum, where
from perfmodel.physics.collectives import GroupLinks, all_gather, all_to_all, reduce_scatter, token_all_to_all
from perfmodel.physics.efficiency import Efficiency
from perfmodel.physics.memory import (
    indexer_bytes_per_token,
    qk_norm_saved_per_token,
    replicated_kv_bytes_per_token,
)
from perfmodel.physics.workload import (
    Op,
    Shard,
    _cast,
    _gemm,
    _linear_forward,
    _mem,
    activation_bytes,
    attention_io_widths,
    linear_backward,
    recomputed,
)

ROUTER_BYTES = 3 * FP32_BYTES
"""Top-k over the router logits: read the FP32 logits, write the scores and the routing map."""
FUSED_MLP_TILE_N = 256
"""The MMA tile width of cuDNN's fused grouped GEMMs (cudnn-frontend python/cudnn/grouped_gemm/grouped_gemm_glu/api.py
L124 and L506-507, grouped_gemm_dglu/api.py L130 and L541-542: n tiles of 256, m tiles of 128 or 256;
../shared/data/gpt_oss_blackwell_notes.md 2.5): GPT-OSS's 2,880 pads to 3,072 and its 5,760 to 5,888, where
Megatron-Core's grouped GEMM picks 128-wide tiles; Qwen3's and DeepSeek-V3's widths are multiples of 256."""
DGLU_DBIAS_REGRESSION = 1362.8 / 155.6
"""How many times slower cudnn-frontend 1.24-1.25 ran the fused grouped MLP's dGeGLU + dbias kernel (the experts' fc2
data gradient with the GeGLU backward and fc1's bias gradient in its epilogue, BlockScaledMoEGroupedGemmDgluDbiasKernel)
than the fixed one at the same shape: cudnn-frontend PR #322 (2026-06-23, 'dbias reduction DSL 4.5 regression')
measures 1,362.8 us with generate_dbias against 155.6 us after the fix (139.0 us without dbias); issue #256 reports
the kernel 10x slower from 1.24.0, still in 1.25.0, on GPT-OSS-20B's shapes. NVIDIA's footnote to NeMo 26.06.01's
GPT-OSS-120B rows names that issue (Megatron-Bridge docs/performance-summary-archive.md L57-58, L90, PR #4989;
../shared/data/gpt_oss_blackwell_notes.md 2.6). Only experts with biases run the dbias kernel. The ratio multiplies the
roofline time of the kernel's grouped GEMM (expert_fc2.dgrad; its GeGLU backward and dbias stay their own passes), an
assumption: it was measured at the benchmark's shape, not GPT-OSS-120B's, and the regressed reduction is taken to
scale with the kernel."""
EAGER_BIAS_PASSES = (6, 6)
"""Passes over the routed rows x hidden of Megatron-Core's eager per-expert fc2 bias, forward and backward
(experts.py _apply_bias, core_v0.17.0 L251-267 and core_v0.18.0 L296-313: torch.cat([t + b * p, ...]) over the local
experts, b the bias, p the router probability; ../shared/data/gpt_oss_blackwell_notes.md 2.7: about 12 passes, 4.5
GB for GPT-OSS-120B's 16,384-token micro-batch, a reading of eager autograd, +-30%). Forward: b * p written, t and it
read and their sum written, the concatenation read and written; backward: the probabilities' gradient and the bias's,
each a product of the output gradient written and read back by its sum, and the gradient read for it."""

EAGER_GLU_CLAMP_BYTES = (16, 30)
"""Bytes per element of the experts' activation output (routed rows x moe_ffn) that Megatron-Core's eager clamp of a
clamped GLU (ModelSpec.expert_glu_clamp) moves, forward and backward: fused_bias_geglu.py weighted_bias_quick_geglu_impl
(core_v0.15.0 to core_v0.18.0 L424-432) chunks fc1's BF16 output into its two halves, clamps each (a read and a write
of a half each) and concatenates them (both halves read, the whole written) before the fused weighted GeGLU, which
TEGroupedMLP calls under bias_activation_fusion (experts.py, core_v0.17.0 L292-299, core_v0.18.0 L724-731; megatron-
bridge 0.6.2 gpt_oss_bridge.py L73 sets it): 8 BF16 passes. Backward, as eager autograd runs it (PyTorch's
clamp_backward, FunctionsManual.cpp, recalled rather than a stored copy: where(mask, grad, 0), the mask a comparison
per bound in BOOL, two bounds' joined by logical_and_): the max-only half 8 bytes (compare 2 + 1, where 1 + 2 + 2),
the two-sided half 14 (two compares, the and, the where), and the chunk's backward concatenates the two gradients
(8); the concatenation's backward is a view. Moe_act's recompute re-runs the forward with the activation
(workload.SELECTIVE_RECOMPUTE). The fused grouped MLP clamps inside cuDNN's GeGLU (TE's ScaledClampedQGeGLU;
../shared/data/gpt_oss_blackwell_notes.md 2.5) and pays none of it."""


def tokens_in(sh: Shard) -> Number:
    """Tokens entering the MoE block on one rank (sequence-parallel share)."""
    return sh.tokens / sh.tp


def balanced_per_expert(sh: Shard) -> Number:
    """Token copies each expert of a perfectly balanced router gets from the ep x etp ranks that send to it."""
    return tokens_in(sh) * sh.model.top_k / sh.model.experts * sh.ep * sh.etp


def capacity(sh: Shard) -> Number:
    """Token copies an expert takes from each sending rank when the model drops tokens (ModelSpec.capacity_factor):
    megatron-core 0.16.1 moe_utils.get_capacity, ceil(capacity_factor x tokens x top_k / experts), over the tokens
    the rank's router sees (transformer/moe/token_dispatcher.py MoEAlltoAllTokenDispatcher.preprocess L485-493)."""
    md = sh.model
    return ceil(md.capacity_factor * tokens_in(sh) * md.top_k / md.experts)


def tokens_per_expert(sh: Shard) -> Number:
    """Rows of each local expert's GEMM on the busiest rank: the balanced share times the router's imbalance;
    with token dropping at most `capacity` from each of the ep x etp sending ranks, and exactly that when every
    expert is padded to it (ModelSpec.pad_to_capacity: preprocess L494-507 fixes every local expert at
    capacity x tp_size x ep_size, the dispatcher's expert-TP and EP sizes, whatever the routing)."""
    md, routed = sh.model, balanced_per_expert(sh) * sh.imbalance
    if not md.capacity_factor:
        return routed
    capped = capacity(sh) * sh.ep * sh.etp
    return capped if md.pad_to_capacity else minimum(routed, capped)


def load(sh: Shard) -> Number:
    """Token copies the busiest expert rank takes over the balanced share (what the all-to-all moves): the router's
    imbalance, capped by the capacity when the model drops tokens, the capacity itself when it pads to it."""
    if not sh.model.capacity_factor:
        return sh.imbalance
    return tokens_per_expert(sh) / balanced_per_expert(sh)


def routed_tokens(sh: Shard) -> Number:
    """Token copies the busiest rank's local experts process: each local expert's rows."""
    return tokens_per_expert(sh) * sh.model.experts / sh.ep


def _grouped(name: str, groups: Number, m: Number, n: Number, k: Number, recipe: Recipe, tile_n: int = 0) -> Op:
    """`groups` GEMMs of m x n x k in one kernel in the recipe's format: every group reads its own weights."""
    moved = (groups * m * k + groups * k * n) * recipe.element_bytes + groups * m * n * BF16_BYTES
    flops, fmt, loop = 2 * groups * m * n * k, recipe.gemm_format, recipe.expert_loop
    return Op(name, "grouped_gemm", flops, moved, fmt, m, n, groups=groups, tile_n=tile_n, expert_loop=loop)


def _expert_shapes(sh: Shard) -> list[tuple[str, Number, Number]]:
    md = sh.model
    return [("expert_fc1", md.hidden, md.expert_in_width / sh.etp), ("expert_fc2", md.moe_ffn / sh.etp, md.hidden)]


def _shared_shapes(sh: Shard) -> list[tuple[str, Number, Number, bool]]:
    """The shared experts: one dense MLP of width shared_experts x moe_ffn on the attention's TP ranks."""
    md = sh.model
    width = md.shared_experts * md.moe_ffn
    in_width = 2 * width if md.gated_mlp else width
    return [("shared_fc1", md.hidden, in_width / sh.tp, True), ("shared_fc2", width / sh.tp, md.hidden, False)]


def _shared_forward(sh: Shard, recipe: Recipe) -> list[Op]:
    """The shared experts' forward (none without them): a dense MLP on the attention's TP ranks."""
    md = sh.model
    if not md.shared_experts:
        return []
    fc1, fc2 = (_linear_forward(sh, recipe, *shape) for shape in _shared_shapes(sh))
    width = sh.tokens * md.shared_experts * md.moe_ffn / sh.tp
    return [*fc1, _mem("shared_activation", width, activation_bytes(md, False)), *fc2]


def _shared_backward(sh: Shard, recipe: Recipe) -> list[Op]:
    """The shared experts' backward (none without them)."""
    md = sh.model
    if not md.shared_experts:
        return []
    fc1, fc2 = _shared_shapes(sh)
    width = sh.tokens * md.shared_experts * md.moe_ffn / sh.tp
    return [
        *linear_backward(sh, recipe, fc2, False, sh.tokens),
        _mem("shared_activation.bwd", width, activation_bytes(md, True)),
        *linear_backward(sh, recipe, fc1, False, sh.tokens),
    ]


class _Sizes(NamedTuple):
    """What a MoE block's operations are sized by on one rank."""

    local_experts: Number
    rows: Number
    copies: Number
    per_expert: Number


def _sizes(sh: Shard) -> _Sizes:
    return _Sizes(sh.model.experts / sh.ep, routed_tokens(sh), tokens_in(sh), tokens_per_expert(sh))


def _expert_sort(sh: Shard, name: str, rows: Number, local: Number) -> list[Op]:
    """The 'alltoall' dispatcher's second permutation: the copies an all-to-all delivers arrive grouped by sending
    rank and are sorted by local expert for the grouped GEMM, and the outputs sorted back before the combine
    (megatron-core 0.16.1 transformer/moe/token_dispatcher.py dispatch_postprocess L732-738 and combine_preprocess
    L767-772, sort_chunks_by_idxs; with token dropping a transpose and copy, L708-730), a read and write of the routed
    rows in BF16 each way, and their gradients' in the backward; only with more than one local expert. The flex
    dispatcher's permutation groups them by expert as it receives them."""
    if sh.model.dispatcher != "alltoall":
        return []
    return [_mem(name, rows * sh.model.hidden, where(local > 1, 2 * BF16_BYTES, 0.0))]


def moe_block_forward(sh: Shard, recipe: Recipe) -> list[Op]:
    """Norm, router, top-k, permutation, the grouped expert GEMMs, shared experts, un-permutation and residual."""
    md, t, T, h = sh.model, sh.tp, sh.tokens, sh.model.hidden
    local, rows, copies, m = _sizes(sh)
    act_bytes = activation_bytes(md, False)
    fused = recipe.fused_grouped_mlp
    tile_n = FUSED_MLP_TILE_N if fused else 0
    ops = [
        _mem("norm2", T / t * h, 2 * BF16_BYTES),
        _gemm("router.fprop", copies, md.experts, h, "bf16", BF16_BYTES),
        _mem("topk", copies * md.experts, ROUTER_BYTES),
        _mem("permute", copies * h, (1 + md.top_k) * BF16_BYTES),
        *_expert_sort(sh, "sort_by_expert", rows, local),
    ]
    for name, k, n in _expert_shapes(sh):
        if recipe.quantised:
            ops.append(_cast(f"{name}.cast", rows * k, recipe))
        ops.append(_grouped(f"{name}.fprop", local, m, n, k, recipe, tile_n))
        if name == "expert_fc1":
            ops += _glu_clamp(sh, rows, fused, backward=False)
            ops.append(_mem("activation", rows * md.moe_ffn / sh.etp, act_bytes))
    if md.bias and not fused:
        ops.append(_mem("expert_fc2.bias", rows * h, EAGER_BIAS_PASSES[0] * BF16_BYTES))
    return [
        *ops,
        *_shared_forward(sh, recipe),
        *_expert_sort(sh, "unsort_by_expert", rows, local),
        _mem("unpermute", rows * h, BF16_BYTES + BF16_BYTES / md.top_k),
        _mem("residual2", T / t * h, 3 * BF16_BYTES),
    ]


def moe_block_backward(sh: Shard, recipe: Recipe) -> list[Op]:
    """Backward of the MoE block: dgrad and wgrad of every grouped GEMM, the shared experts and the router."""
    md, t, T, h = sh.model, sh.tp, sh.tokens, sh.model.hidden
    local, rows, copies, m = _sizes(sh)
    act_bytes = activation_bytes(md, True)
    fused = recipe.fused_grouped_mlp
    tile_n = FUSED_MLP_TILE_N if fused else 0
    ops = [
        _mem("residual2.bwd", T / t * h, 3 * BF16_BYTES),
        _mem("unpermute.bwd", rows * h, 2 * BF16_BYTES),
        *_expert_sort(sh, "unsort_by_expert.bwd", rows, local),
        *_shared_backward(sh, recipe),
    ]
    for name, k, n in reversed(_expert_shapes(sh)):
        if recipe.quantised:
            ops += [_cast(f"{name}.grad_cast", rows * n, recipe), _cast(f"{name}.input_cast", rows * k, recipe)]
        dgrad = _grouped(f"{name}.dgrad", local, m, k, n, recipe, tile_n)
        if name == "expert_fc2" and fused and md.bias and recipe.dglu_dbias_regressed:
            dgrad = dgrad._replace(slowdown=DGLU_DBIAS_REGRESSION)
        ops += [dgrad, _grouped(f"{name}.wgrad", local, k, n, m, recipe, tile_n)]
        if name == "expert_fc2":
            ops.append(_mem("activation.bwd", rows * md.moe_ffn / sh.etp, act_bytes))
            ops += _glu_clamp(sh, rows, fused, backward=True)
    if md.bias:
        ops += _expert_bias_backward(sh, fused)
    return [
        *ops,
        *_expert_sort(sh, "sort_by_expert.bwd", rows, local),
        _mem("permute.bwd", copies * h, (1 + md.top_k) * BF16_BYTES),
        _mem("topk.bwd", copies * md.experts, ROUTER_BYTES),
        _gemm("router.dgrad", copies, h, md.experts, "bf16", BF16_BYTES),
        _gemm("router.wgrad", h, md.experts, copies, "bf16", BF16_BYTES),
        _mem("norm2.bwd", T / t * h, 3 * BF16_BYTES),
        _mem("residual1.bwd", T / t * h, 3 * BF16_BYTES),
    ]


def _glu_clamp(sh: Shard, rows: Number, fused: bool, backward: bool) -> list[Op]:
    """Megatron-Core's eager clamp of a clamped GLU's halves (EAGER_GLU_CLAMP_BYTES), outside the fused grouped MLP."""
    if not sh.model.expert_glu_clamp or fused:
        return []
    name = "activation.clamp.bwd" if backward else "activation.clamp"
    return [_mem(name, rows * sh.model.moe_ffn / sh.etp, EAGER_GLU_CLAMP_BYTES[backward])]


def _expert_bias_backward(sh: Shard, fused: bool) -> list[Op]:
    """The experts' bias gradients (GPT-OSS): fc1's dbias, a column sum that reads its output gradient once (cuDNN's
    fused dGeGLU generates it at +12% of that kernel: cudnn-frontend PR #322, 155.6 against 139.0 us); fc2's bias,
    scaled by the router probabilities: in the fused grouped MLP its gradient and the probabilities' are a pass of
    their own that reads and writes the rows (TransformerEngine grouped_mlp.py L1893-1950, scale_bias: the Triton
    compute_grouped_dbias_dscales pass instead of the fused bgrad_group_quantize), elsewhere the backward of
    Megatron-Core's eager per-expert loop (EAGER_BIAS_PASSES; ../shared/data/gpt_oss_blackwell_notes.md 2.5, 2.7)."""
    (_, _, fc1_width), _ = _expert_shapes(sh)
    rows = routed_tokens(sh)
    fc2_passes = 2 if fused else EAGER_BIAS_PASSES[1]
    return [
        _mem("expert_fc2.dbias", rows * sh.model.hidden, fc2_passes * BF16_BYTES),
        _mem("expert_fc1.dbias", rows * fc1_width, BF16_BYTES),
    ]


def tp_blocks_per_layer(md: ModelSpec) -> float:
    """Sequence-parallel TP blocks (an all-gather in, a reduce-scatter out) of the mean layer: attention and the
    dense MLP in a dense layer; in a MoE layer attention, and the shared experts when it has them (a TP-sharded MLP
    on the attention's ranks). The routed experts take the T/tp tokens of each rank as they are: the dispatcher
    moves them over EP, and over expert TP with its own gather (expert_comm), not over the attention's TP. A
    parallel block (dense models only) is one TP block: attention and MLP share the gathered input, and their
    partial outputs add up before one reduce-scatter."""
    if md.parallel_block:
        return 1.0
    moe_share = md.moe_layers / md.layers if md.is_moe else 0.0
    moe_blocks = 2.0 if md.shared_experts else 1.0
    if md.hybrid_pattern:  # one block per layer: Mamba, DeltaNet, attention or MLP; a MoE layer its shared experts
        return (1 - moe_share) + moe_share * (moe_blocks - 1)
    return (1 - moe_share) * 2.0 + moe_share * moe_blocks


def _choose(n: Number, j: int) -> Number:
    """Binomial coefficient C(n, j) as a product, for a real (or array) n: 0 for a whole n below j."""
    out: Number = 1.0
    for i in range(j):
        out = out * (n - i) / (i + 1)
    return out


def domain_missed(md: ModelSpec, domains: Number) -> Number:
    """Probability that a token has no expert in a given one of the EP group's `domains` (each holding 1/domains of
    the experts, consecutive ones: Megatron places experts on EP ranks in order, and the ranks fill a domain in
    order). Without routing groups the top_k experts fall uniformly: (1 - 1/D)^top_k. With G groups of which a
    token takes g (DeepSeek-V3: 8 and 4, so at most 4 nodes per token), its top_k copies fall uniformly among the
    experts of the groups it took. A domain inside one group (D >= G) is missed when its group is not taken, or is
    and no copy lands in its G/(g D) share of the taken experts; a domain of G/D whole groups is missed with the
    chance of each number j of them taken (hypergeometric) times (1 - j/g)^top_k."""
    k, groups, taken = md.top_k, md.expert_groups or 1, md.group_top_k or 1
    within = (1 - taken / groups) + taken / groups * (1 - groups / (taken * domains)) ** k
    if groups == 1:
        return within
    per_domain = groups / domains
    whole = sum(
        _choose(per_domain, j)
        * _choose(groups - per_domain, taken - j)
        / math.comb(groups, taken)
        * (1 - j / taken) ** k
        for j in range(taken + 1)
    )
    return where(domains >= groups, within, whole)


def expert_comm(sh: Shard, ep_links: GroupLinks, etp_links: GroupLinks, full_share: Number) -> tuple[Number, Number]:
    """Dispatch and combine all-to-alls over EP, and with expert TP the all-gather of the copies and the
    reduce-scatter of the outputs over ETP, all in BF16: the dispatchers move the layer's BF16 hidden states
    (megatron-core's MoEAlltoAllTokenDispatcher all-to-alls the permuted hidden states; the flex dispatcher hands
    them to DeepEP/HybridEP as they are), and the expert GEMM quantises its input after the exchange, on the routed
    rows (`expert_fc1.cast` in `moe_block_forward`), not before it.

    Backward moves the gradients the reverse way, the same bytes; a full recompute repeats the forward exchange in
    the share of layers it re-runs (`full_share`).
    Returns (forward, forward + backward (+ recompute)) for one MoE layer.
    """
    md = sh.model
    token_bytes = tokens_in(sh) * md.hidden * load(sh) * BF16_BYTES
    if md.dispatcher == "alltoall":
        exchange = all_to_all(token_bytes * md.top_k, ep_links)
    else:
        exchange = token_all_to_all(token_bytes, md.top_k, ep_links, domain_missed(md, ep_links.domains))
    expert_tp = token_bytes * md.top_k * sh.etp
    forward = 2 * exchange + all_gather(expert_tp, etp_links) + reduce_scatter(expert_tp, etp_links)
    return forward, 2 * forward + recomputed(full_share, forward)


NOTHING_BESIDE = "the recipe overlaps neither two micro-batches' exchanges nor the shared experts"
"""Why an exchange that `exchange_beside` finds beside nothing is not hidden, as the outputs say it."""


def exchange_beside(md: ModelSpec) -> Literal["nothing", "layer", "shared experts"]:
    """What a MoE layer's EP exchange can run beside, the one place that decides it (`exchange_windows`, the Experts
    line, explain): nothing where the recipe runs no overlap (`ModelSpec.ep_exchange_exposed`); the layer's whole
    compute where the recipe overlaps the EP communication of two micro-batches (`ModelSpec.ep_microbatch_overlap`:
    one micro-batch's all-to-alls beside the other's compute, whatever the dispatcher) or with the flex dispatcher
    (no bundled source says which overlap the tables' flex runs turned on, so the fitted share prices it); else only
    the shared experts' compute."""
    if md.ep_exchange_exposed:
        return "nothing"
    return "layer" if md.dispatcher == "flex" or md.ep_microbatch_overlap else "shared experts"


def exchange_windows(
    md: ModelSpec, layer_s: tuple[Number, Number], shared_s: tuple[Number, Number], full_share: Number
) -> tuple[Number, Number]:
    """The compute a MoE layer's forward and backward EP exchange can run beside (`layer_s`: the layer's forward and
    its backward with any recompute; `shared_s`: its shared experts' forward and backward, as the layer timing
    priced them).

    Megatron's 'alltoall' dispatcher (MoEAlltoAllTokenDispatcher, megatron-core 0.16 token_dispatcher.py) issues
    its NCCL all-to-alls in the layer's own order, after copying the split sizes to the host, and the expert GEMMs
    wait for their output: within a micro-batch only the shared experts, which `moe_shared_expert_overlap` runs
    between dispatch and combine, compute beside them. The other window, the EP-communication overlap of two
    micro-batches (`overlap_moe_expert_parallel_comm`), Megatron-Bridge 0.3.1 turns off unless a recipe sets it
    (training/comm_overlap.py): GPT-OSS's base recipe leaves it unset, with no shared experts
    (recipes/gpt_oss/gpt_oss.py), and Kimi-K2's sets it False and overlaps its shared expert (recipes/kimi/kimi_k2.py).
    Some per-GPU recipes of megatron-bridge 0.6.2 set it with this dispatcher (Qwen3-235B-A22B's on H100,
    perf_recipes/qwen/h100/qwen3_moe.py; GPT-OSS-120B's BF16 one on GB200), and the bundled rows of their layouts run
    them (fitting.recipes): there the window is the layer's compute (`exchange_beside`), as for the flex
    dispatcher, at the fitted share. A recipe that runs neither overlap (`ModelSpec.ep_exchange_exposed`) leaves
    nothing beside it."""
    beside = exchange_beside(md)
    if beside == "nothing":
        return 0.0, 0.0
    if beside == "layer":
        return layer_s
    forward, backward = shared_s
    return forward, backward + recomputed(full_share, forward)


def ep_overlap(eff: Efficiency, ep_links: GroupLinks) -> Number:
    """Share of the compute window the EP all-to-alls hide behind: `overlap_ep` inside one scale-up domain,
    `overlap_dp` for a group whose all-to-alls cross the NICs (`ep_overlap_parameter` names which).

    Across NICs the exchange is a NIC-bound collective on its own stream beside compute, as the stack's DP collectives
    are: Megatron's EP overlap runs dispatch and combine on a communication stream beside the other micro-batch's
    attention and MLP (megatron-core 0.16.1 models/common/model_chunk_schedule_plan.py L163-164, L190-199), as its
    DDP issues the gradient buckets' collectives asynchronously beside the backward (distributed/
    param_and_grad_buffer.py start_grad_sync L364-456), and HybridEP's benchmark reaches 28-62 GB/s a rank over 2x8
    H100s' InfiniBand with 4-8 SMs (DeepEP hybrid-ep branch @94a9f8f6b146 docs/README_Hybrid-EP.md L70-71). Inside a
    domain the copies move at NVLink rate through the SMs, contending with the compute beside them for SMs and HBM:
    that share, `overlap_ep`, is fitted.
    The NIC share had been fitted too (`overlap_ep_scaleout`, 0.81-0.83), but once the H100 recipes that overlap
    nothing with their flex exchange priced it exposed (fitting.recipes `_FLEX_EXPOSED`), six fitted rows were
    left to inform it, under issue 27's ten."""
    return where(ep_links.domains > 1, eff.overlap_dp, eff.overlap_ep)


def ep_overlap_parameter(ep_links: GroupLinks) -> str:
    """The efficiency field `ep_overlap` takes for one (scalar) layout, for the outputs that name it."""
    return "overlap_dp" if float(ep_links.domains) > 1 else "overlap_ep"


def _block_saved(sh: Shard, recipe: Recipe, recompute: str) -> Number:
    """Bytes one MoE block keeps for backward on one rank: router input and scores, the permuted copies, the
    expert activations and the un-permutation's inputs (selective recompute re-runs norms and the activation).
    Without recompute, Megatron-Core's eager clamp of a clamped GLU (weighted_bias_quick_geglu_impl, core_v0.15.0 to
    core_v0.18.0 L424-432) leaves autograd a second fc1-sized BF16 tensor: the concatenation of the clamped halves,
    which the fused weighted GeGLU saves as its input beside fc1's output, which the clamps save."""
    md, rows, copies = sh.model, routed_tokens(sh), tokens_in(sh)
    q_in = recipe.element_bytes if recipe.quantised else BF16_BYTES
    saved = (
        copies * md.hidden * BF16_BYTES  # norm2 input
        + copies * md.experts * FP32_BYTES  # routing scores
        + rows * md.hidden * q_in  # permuted expert input
        + rows * md.expert_in_width / sh.etp * BF16_BYTES  # fc1 output
        + rows * md.hidden * BF16_BYTES  # expert output, weighted at un-permutation
    )
    shared = md.shared_experts * md.moe_ffn
    if shared:
        saved = saved + sh.tokens * (md.hidden * q_in + 2 * shared / sh.tp * BF16_BYTES)
    if recompute == "none":
        saved = saved + copies * md.hidden * BF16_BYTES + rows * md.moe_ffn / sh.etp * q_in
        saved = saved + sh.tokens * shared / sh.tp * q_in
        if md.expert_glu_clamp and not recipe.fused_grouped_mlp:  # the clamped concatenation (EAGER_GLU_CLAMP_BYTES)
            saved = saved + rows * md.expert_in_width / sh.etp * BF16_BYTES
    return saved


def _attention_saved_per_token(md: ModelSpec, recipe: Recipe, recompute: str, tp: Number) -> Number:
    """Bytes the attention block keeps per token before the TP split (as memory.activation_bytes_per_token):
    norm input, Q/K/V (and the QK norms' inputs), attention output (and its quantised copy), and the projection
    input without recompute. MLA's Q, K, V and output are the up-projected heads' (workload.attention_io_widths)."""
    q_in = recipe.element_bytes if recipe.quantised else BF16_BYTES
    if md.attention == "mla":
        queries, keys, values, out = attention_io_widths(md, tp)
        # selective recompute re-runs the up-projections: the latents stand in for Q, K and V
        latents = md.q_lora_rank + md.kv_lora_rank + md.qk_rope_dim
        qkv = latents if recompute == "selective" else queries + keys + values
    else:
        qkv, out = md.qkv_width, md.q_dim
    saved = (md.hidden + qkv + out) * BF16_BYTES + (out * q_in if recipe.quantised else 0.0)
    saved = saved + qk_norm_saved_per_token(md)
    return saved + (md.hidden * q_in if recompute == "none" else 0.0)


def _dense_mlp_saved_per_token(md: ModelSpec, recipe: Recipe, recompute: str) -> float:
    q_in = recipe.element_bytes if recipe.quantised else BF16_BYTES
    saved = (md.hidden + md.mlp_in_width) * BF16_BYTES
    return saved + ((md.hidden + md.ffn) * q_in if recompute == "none" else 0.0)


def mean_layer_saved(sh: Shard, recipe: Recipe, mode: str) -> Number:
    """What a mean layer of a MoE model (dense and MoE by their shares; a hybrid's by its pattern) keeps for its
    backward on one rank, one micro-batch, under recompute `mode` (`memory.held`'s `per_layer`): under a full
    recompute its input alone."""
    md, per_rank = sh.model, sh.tokens / sh.tp
    if mode == "full":
        return md.hidden * BF16_BYTES * per_rank
    attention = (
        _attention_saved_per_token(md, recipe, mode, sh.tp) + replicated_kv_bytes_per_token(md, sh.tp)
    ) * per_rank
    attention = attention + indexer_bytes_per_token(md) * sh.tokens  # whole on every TP rank
    dense = _dense_mlp_saved_per_token(md, recipe, mode) * per_rank
    if md.hybrid_pattern:
        moe = _block_saved(sh, recipe, mode) if md.is_moe else 0.0
        return hybrid_mean_saved(md, recipe, mode, per_rank, attention, dense, moe)
    share = md.moe_layers / md.layers
    return attention + (1 - share) * dense + share * _block_saved(sh, recipe, mode)


def hybrid_mean_saved(
    md: ModelSpec, recipe: Recipe, mode: str, per_rank: Number, attention: Number, dense: Number, moe: Number
) -> Number:
    """What a hybrid pattern's mean layer keeps for backward on one rank: each kind's block by its share (an 'M'
    layer's is mamba.saved_per_token, a 'G' layer's deltanet.saved_per_token; `attention`, `dense` and `moe` are
    the other kinds' blocks on this rank)."""
    kinds = hybrid.counts(md.hybrid_pattern)
    mamba_layer = mamba.saved_per_token(md, recipe, mode) * per_rank
    gdn_layer = deltanet.saved_per_token(md, recipe, mode) * per_rank
    mixers = kinds["M"] * mamba_layer + kinds["G"] * gdn_layer + kinds["*"] * attention
    held = mixers + kinds["-"] * dense + kinds["E"] * moe
    return held / md.layers


def expert_params_per_layer(model: ModelSpec, ep: Number, etp: Number) -> Number:
    """Routed-expert weights of one MoE layer held by one rank."""
    return model.routed_expert_params_per_layer / (ep * etp)
