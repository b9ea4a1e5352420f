"""Training precision recipes: which GEMMs run in which number format and what the casts cost.

Sources: NVIDIA Transformer Engine recipes (FP8 per-tensor current scaling, MXFP8 32-element blocks) and the NVFP4
pretraining recipe of arXiv 2509.25149 (16-element E4M3-scaled blocks, 16x16 random Hadamard transform on the
weight-gradient inputs) as summarised in accelerators_sources.md section 7, run as NVIDIA's production recipes run it
(all layers in NVFP4, no userbuffers TP overlap: stack_notes.md). FP8 per-tensor scaling is priced as current
scaling (an amax pass before each cast); releases before efficiency.CURRENT_SCALING_RELEASE and the Composer stack
ran delayed scaling and skip that pass (Op.amax_bytes).
Attention (QK^T, softmax, PV), norms, the LM head and the optimizer stay in BF16/FP32 in every recipe.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from perfmodel.errors import PerfmodelError, shown
from perfmodel.inputs import FP8_RECIPE_NAMES, PRECISIONS
from perfmodel.inputs.hardware import Accelerator

BF16_BYTES = 2.0
FP32_BYTES = 4.0
GRAD_BYTES = BF16_BYTES
"""Bytes per gradient held and reduced where the run does not ask for FP32 (Megatron-Core's default
grad_reduce_in_fp32=False: its main gradients in the parameters' BF16)."""
_MXFP8 = 1.0 + 1 / 32  # E4M3 element + one E8M0 scale per 32
_NVFP4 = 0.5 + 1 / 16  # E2M1 element + one E4M3 scale per 16 (the FP32 tensor scale is negligible)
_MXFP4 = 0.5 + 1 / 32  # E2M1 element + one E8M0 scale per 32


@dataclass(frozen=True)
class Recipe:
    id: str
    gemm_format: str
    """Tensor-core input format of the quantised linear layers: its dense peak sets their speed ('bf16'/'fp8'/'fp4')."""
    element_bytes: float
    """Bytes per quantised element, block scales included (FP8 1; MXFP8 1 + 1/32; NVFP4 1/2 + 1/16 ...)."""
    amax_passes: int
    """Extra reads of the BF16 source before casting: per-tensor current scaling needs the tensor's amax first."""
    copies: int
    """Quantised copies written per tensor: row-wise for the forward GEMM, column-wise for the backward one."""
    hadamard_wgrad: bool
    """Random Hadamard transform on both Wgrad operands: an extra read of each, whose column-wise copy is cast from
    the transformed tensor (the input's in the forward, the output gradient's in the backward:
    workload._cast)."""
    bf16_first_layers: int
    bf16_last_layers: int
    tp_gather_bytes: float
    """Bytes per element of the sequence-parallel all-gather feeding a quantised linear layer."""
    param_gather_bytes: float
    """Bytes per parameter of the distributed optimizer's parameter all-gather."""
    weight_bytes: float
    """Bytes per parameter of model weights held on the GPU: the primary copy (FP8 itself when parameters are
    gathered in FP8, else BF16) plus the quantised copies the GEMMs read (row- and column-wise)."""
    tp_comm_overlap: bool = True
    """Transformer Engine's userbuffers overlap of TP collectives with the GEMMs, or torchtitan's async TP (the
    collectives decomposed into per-chunk sends run under the GEMMs they feed: torch.distributed's
    _micro_pipeline_tp pass). Off, only Megatron's async TP remains: the backward's input all-gathers and dgrad
    reduce-scatters hide behind the weight-gradient GEMMs (`tp_backward_overlap`)."""
    pp_send_overlap: bool = True
    """Whether the steady-state pipeline sends run beside compute (the shared `overlap_pp` of them hidden). False:
    blocking sends, each on the critical path (Megatron-LM before its p2p overlap: inputs/features.py)."""
    tp_decomposed: bool = False
    """torchtitan's async TP: PyTorch's micro-pipeline TP pass (torch._inductor micro_pipeline_tp:
    fused_all_gather_matmul, fused_matmul_reduce_scatter) splits each collective into per-rank chunks run under the
    matmul that consumes or produces it (Wang et al. 2023, ASPLOS, 'Overlap Communication with Dependent Computation
    via Decomposition'; recalled from the public code, not a stored copy), so a collective hides behind its own
    GEMM, not behind the layer's (step._decomposed_hiding); userbuffers' windows are the pass's GEMMs."""
    tp_backward_overlap: bool = True
    """Megatron-Core's backward overlap without userbuffers (its async all-gather/reduce-scatter beside the Wgrad
    GEMM). False: torchtitan's vanilla TP, whose DTensor collectives run on the compute stream before and after the
    GEMMs, so that every TP collective is on the critical path."""
    tp_layout_copies: bool = False
    """PyTorch's DTensor sequence parallelism (torchtitan): its activations are [batch, seq, hidden], sharded along
    the sequence (Shard(1)), and torch.distributed's functional collectives gather and scatter along dimension 0
    only, so each all-gather's output and each reduce-scatter's input is re-laid out by a chunk-and-cat copy on the
    compute stream (torch/distributed/_functional_collectives.py, all_gather_tensor and reduce_scatter_tensor with
    gather_dim/scatter_dim != 0; torch 2.7.1 wheel). Async TP's fused ops take those patterns over
    (torch/_inductor/fx_passes/micro_pipeline_tp.py matches the cat) and pay instead a copy of the local shard into
    the symmetric-memory buffer per all-gather and a reduction of the stacked partials per reduce-scatter
    (torch/distributed/_symmetric_memory/__init__.py, _fused_matmul_reduce_scatter_impl). Megatron's layout is
    [seq, batch, hidden]: no copy (step._tp_copies)."""
    tp_wgrad_regather: bool = True
    """Whether the backward all-gathers a column-parallel layer's input again for its weight gradient (Megatron-Core
    frees the gathered input after the forward and re-gathers it); False: PyTorch's autograd keeps the gathered
    input of the matmul for its weight gradient (torchtitan), unless a recompute drops it. Only under sequence
    parallelism, which frees the gathered input after the forward (features.era_recipe turns it off with it): without
    it each TP rank keeps the whole input (Megatron's `f` is the identity forward), and a TP block's backward is one
    all-reduce of the input gradient, its reduce-scatter and all-gather halves (Shoeybi et al. 2019, arXiv
    1909.08053, Figure 3: two all-reduces per layer forward, two backward)."""
    fsdp_copies: bool = False
    """PyTorch FSDP2's copies on the compute stream (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, torch
    2.7.1 wheel): each all-gather's output is split into the layer's parameters (foreach_all_gather_copy_out's
    split_with_sizes_copy, run by wait_for_unshard) and the gradients are copied into the reduce-scatter's input in
    its dtype (foreach_reduce_scatter_copy_in, before the reduce-scatter stream waits on the compute stream)
    (step.fsdp_copies_s)."""
    grad_reduce_bytes: float = GRAD_BYTES
    """Bytes per gradient the data-parallel reduce-scatter or all-reduce moves (step._data_parallel), and FSDP2's
    copy-in writes (step.fsdp_copies_s): FP32 where the stack reduces in FP32 (FSDP2's
    MixedPrecisionPolicy.reduce_dtype: torchtitan's training.mixed_precision_reduce defaults to 'float32', recalled
    from the public code, not a stored copy; stacks.stack_recipe) or the run keeps Megatron-Core's gradient buffer in
    FP32 (bridge_recipe's grad_reduce_in_fp32)."""
    grad_buffer_bytes: float = GRAD_BYTES
    """Bytes per gradient each rank holds and accumulates the micro-batches into (memory.model_state): FP32 where the
    run keeps Megatron-Core's DDP gradient buffer in FP32 (Scenario.grad_reduce_in_fp32,
    DistributedDataParallelConfig.grad_reduce_in_fp32: megatron-core 0.7.0 wheel, distributed/
    distributed_data_parallel.py L106 `grad_dtype = torch.float if ...grad_reduce_in_fp32`, param_and_grad_buffer.py
    L344 the grad buffer in that dtype, L369 `param.main_grad` a view of it), which it then reduces as it holds
    (`grad_reduce_bytes` FP32 too). FSDP2 keeps the parameters' BF16 gradients and casts them into its FP32
    reduce-scatter input (`grad_reduce_bytes` alone)."""
    zero3_per_tensor: bool = False
    """ZeRO-3 as DeepSpeed ran it before its 0.6.0 release (inputs/features.py 'zero3_coalesced_prefetch'): each
    parameter tensor all-gathered and its gradient reduce-scattered by a call of its own, each gather behind a
    `torch.cuda.synchronize()`, so that none of them overlaps compute, and the weights gathered again for a full
    recompute's forward (step.zero3_per_tensor_s)."""
    eager_elementwise: bool = False
    """The elementwise kernels as eager PyTorch runs them (torchtitan without torch.compile): rotary embedding and
    the SwiGLU product as separate kernels with their intermediates in HBM (workload.EAGER_PASSES), where Transformer
    Engine's fused kernels and torch.compile's Inductor fusion read and write each tensor once."""
    per_op_sac: bool = False
    """Selective recompute as torchtitan's per-op selective activation checkpointing runs it (activation_checkpoint
    mode 'selective', 'op'): the whole block's forward re-runs in the backward except the ops whose outputs its
    policy saves (SDPA, reduce-scatters, and every other matmul: 'Saves output of all compute ops, except every second
    mm'; torchtitan/models/llama3/infra/parallelize.py, recalled from the public code, not a stored copy), so every
    second matmul, the norms, rotary embedding, activation and the TP all-gathers feeding recomputed matmuls run
    again (step.sac_recomputed_gemm_share); False: Megatron's selective recompute of the attention core alone."""
    fp8_scaling: str = "tensorwise"
    """FP8 scaling granularity: 'tensorwise' (one scale per tensor: Transformer Engine's per-tensor scaling, torchao's
    tensorwise recipe) or 'rowwise' (torchao: one scale per row of each GEMM operand along its reduction axis)."""
    attention_format: str = "bf16"
    """Tensor-core input format of flash attention's QK^T and PV multiplies: 'fp8' or 'mxfp8' where the run sets
    Transformer Engine's FP8 dot-product attention (stack_notes.md: NVIDIA's MLPerf LoRA configs, FP8_DPA=1;
    bridge_recipe); the softmax exponentials run on the SFU either way, and the backward runs at the FP8 rate
    where kernels measure it, else BF16's (compute.attention_core_s)."""
    fp8_band_masked: bool = False
    """Whether an FP8/MXFP8 attention backward computes a sliding window's whole causal square and only masks its band
    (Scenario.fp8_attention_band 'masked'), the bound no public measurement settles: TransformerEngine 2.16 passes the
    band to cuDNN (fused_attn_fp8.cu set_diagonal_band_left_bound) but cudnn-frontend's benchmark drops it from those
    runs, and its open SM80 backward masked per element (PR #866: O(S^2) work for an O(S.W) problem); False: the
    backward skips the out-of-band tiles as the measured BF16 one does (../shared/data/gpt_oss_blackwell_notes.md
    2.3)."""
    separate_projections: bool = False
    """Whether the stack's model code runs the query, key and value projections and the gated MLP's gate and up
    projections as separate linear layers (torchtitan's Llama: wq, wk, wv; w1, w3), not as one fused GEMM each
    (Megatron-Core's linear_qkv, linear_fc1): workload.separate_widths."""
    tp_grad_gather_bytes: float = BF16_BYTES
    """Bytes per element of the backward's all-gather of a row-parallel layer's output gradient: BF16 where the stack
    gathers it as autograd hands it over; torchao's float8 TP (tensorwise only) casts it to FP8 first, on this rank's
    sequence-parallel rows (Float8RowwiseParallel's output goes through NoopFwToFloat8BwDynamic after its
    redistribute, so the backward casts before the all-gather; torchao 0.11.0 float8_tensor_parallel.py).
    Known wrong, kept for TransformerEngine's per-tensor FP8 and MXFP8, which cast the output gradient on this rank's
    rows and gather it quantised (transformer-engine 2.16 pytorch/module/base.py grad_output_preprocess L1518-1550):
    per-tensor FP8 its one row-wise copy (1 B), transposed after the gather on Hopper (distributed.py L1055-1062,
    linear.py's update_usage(columnwise_usage=True)) and read as gathered on Blackwell; MXFP8 the row-wise copy for
    the dgrad and, gathered again, the column-wise one for the wgrad (linear.py L807-817, L1058-1088: userbuffers
    carries one MXFP8 buffer at a time), 2 x 1.03 B. Priced that way on f6c9504 (branch fp8cs), a refit read
    validation 6.08% (6.07), held-out 5.08 (5.05), precision protocol 5.91 (5.77), scale 5.42 (5.36), stack 10.31
    (9.82), and moved overlap_tp from 0.50 to 0.43: the BF16 gradient gather stands in for a TP cost of the FP8 rows
    not found yet, as NVFP4's BF16 gathers do (RECIPES)."""
    fused_grouped_mlp: bool = False
    """Whether the experts run TransformerEngine's fused grouped MLP on cuDNN's CuTe-DSL kernels, MXFP8 on Blackwell
    only (Megatron-Bridge use_transformer_engine_op_fuser and NVTE_CUTEDSL_FUSED_GROUPED_MLP=1: the FP8-MX
    full-iteration recipes of GPT-OSS-120B on GB300/GB200 and of Qwen3): its grouped GEMMs' tiles are 256 wide and the
    experts' biases ride in its epilogues (moe.FUSED_MLP_TILE_N, moe.EAGER_BIAS_PASSES); otherwise Megatron-Core's
    grouped GEMM, whose experts' fc2 bias runs as an eager per-expert loop."""
    dglu_dbias_regressed: bool = False
    """Whether the fused grouped MLP's dGeGLU + dbias kernel runs as cudnn-frontend 1.24-1.25 built it (issue #256: its
    dbias reduction regressed with CuTe DSL 4.5, fixed by PR #322), the container NVIDIA's footnote names for it
    (Scenario.dglu_dbias_regression; moe.DGLU_DBIAS_REGRESSION); only with `fused_grouped_mlp`."""
    expert_loop: bool = False
    """Whether the experts run Megatron-Core's TEGroupedMLP with its per-expert cost in every release, as before the
    grouped kernel (efficiency.GROUPED_KERNEL_RELEASE; Efficiency.moe_group_loop): a Megatron-Bridge performance recipe
    leaves TransformerEngine's op fuser off unless it turns it back on (perf_recipes/_common.py _benchmark_common,
    L65-66), as GPT-OSS-120B's B200 and B300 recipes and Nemotron 3 Nano's B300 FP8-MX one do; Hopper rows, which
    never run the fused path, did not move at that release either."""
    fp8_output_proj: bool = False
    """Whether the LM head runs in the recipe's quantised format (Megatron-Bridge's fp8_output_proj, Megatron-Core
    0.18's is_mxfp8_output_proj_active: GPT-OSS's and DeepSeek-V3's full-iteration FP8-MX recipes); otherwise it stays
    in BF16 in every recipe (workload.head_forward)."""
    fused_cross_entropy: bool = False
    """Whether the loss is a fused cross entropy that keeps the logits in BF16 and writes their gradient in BF16
    (flash-attn's CrossEntropyLoss, llm-foundry's default); False: the loss casts the logits to FP32 and keeps its
    FP32 softmax for the backward, as Megatron-Core's vocab-parallel cross entropy does (memory.logits_bytes)."""

    flash_attention: bool = True
    """Fused attention that keeps the scores on chip (FlashAttention and its successors); False: the scores and their
    softmax go through HBM as a batched GEMM, a softmax kernel and another batched GEMM, and a layer keeps them for
    the backward (inputs/features.py: before 2022-05)."""
    sequence_parallel: bool = True
    """Tensor parallelism with sequence parallelism (Korthikanti et al. 2022): norms, residuals and their saved inputs
    sharded over the TP ranks; False: every TP rank runs and keeps them whole (inputs/features.py)."""

    fused_lora: bool = False
    """LoRA adapters fused into the frozen layer they adapt: no kernels of their own (their FLOPs are a fraction of a
    percent of the layer's), none of an unfused adapter's six passes over a token x width tensor per adapted layer.
    NVIDIA's and AMD's MLPerf llama2_70b_lora rows leave no room for those passes (inputs/mlperf.benchmark_recipe);
    Megatron-Bridge's LoRALinear, which runs the adapter beside the wrapped layer, pays them."""
    cp_comm: str = "p2p"
    """How context parallelism exchanges keys and values (Megatron-Core's `cp_comm_type`, CP_COMM): 'p2p', the ring
    that passes each rank's K and V chunk along in CP - 1 steps behind the attention of the chunk in hand;
    'all_gather', K and V gathered whole before the attention (Llama 3's, torchtitan's default) and their gradients
    reduce-scattered after; 'a2a', DeepSpeed-Ulysses's all-to-alls that trade the sequence split for a head split
    (Q, K, V in, the output back; each rank then runs whole-sequence attention on heads / CP heads)."""
    shard_group: int = 0
    """Hybrid sharding: ZeRO-3 shards over groups of this many DP x CP ranks and replicates across the groups
    (MaxText's ICI x DCN FSDP with outer data parallelism, FSDP's HYBRID_SHARD); 0: over every DP x CP rank."""

    delayed_scaling_capable: bool = False
    """Whether the recipe's amax pass is the per-tensor scale that delayed scaling takes from an amax history instead
    (FP8 per-tensor; not NVFP4, whose FP32 tensor scale NVIDIA's recipes compute from the current amax)."""
    current_scaling: bool = False
    """Whether the stack scales every cast from the tensor's current amax whatever the release, so that a release
    before efficiency.CURRENT_SCALING_RELEASE (Megatron's switch from delayed scaling) still pays the amax pass:
    torchao's float8 training has dynamic scaling alone (torchao 0.11.0 config.py: ScalingType DYNAMIC or DISABLED;
    float8_utils.py tensor_to_amax, a max(abs(x)) reduction before each cast)."""
    graph_captured: bool = False
    """Whether the run captures its whole training iteration (forward, backward, optimizer, gradient clipping) in
    one CUDA graph, replayed each step: no per-step host work remains (`Efficiency.step_overhead_s` is not paid from
    the release whose configs do so, physics.step.host_overhead_s). NVIDIA's MLPerf LoRA configs
    (MCORE_CUDA_GRAPH=1, ON_DEVICE_CLIP_GRAD=1; stack_notes.md; inputs.mlperf.Benchmark.graph_captured_vendors) and
    Megatron-Bridge's full-iteration performance recipes (cuda_graph_impl 'full_iteration': bridge_recipe)."""
    offload_layers: int = 0
    """The leading layers whose saved activations the run copies to host memory after their forward and back before
    their backward (Megatron-Core's cpu_offloading_num_layers through TransformerEngine's offload: Scenario's
    activation_offload_layers, bridge_recipe): they leave HBM (physics.step._rank_memory) and their copies cost what
    the layers' compute cannot hide (physics.step.offload_s)."""
    weight_transposed_in_backward: bool = False
    """A frozen base's dgrad reads a K-major copy of each weight that the backward makes from the one stored FP8 copy
    (a byte transpose: per-tensor scaling), layer by layer, instead of a second copy held for the whole step
    (`frozen_base_recipe`)."""
    norm_cast_fused: bool = True
    """Whether TransformerEngine's norm kernel writes the quantised input of a norm-fed linear layer itself (per-tensor
    FP8: the norm emits FP8, or its amax for the cast that follows), so the cast reads its BF16 input once
    (workload._cast `fused`); False: MXFP8, whose norm runs in BF16 and a separate quantize kernel reads its output
    again unless NVTE_NORM_FWD_USE_CUDNN=1 (transformer_engine_torch 2.9.0 and 2.12.0 csrc/extensions/
    normalization.cpp, layernorm_fwd/rmsnorm_fwd: an MXFP8 quantizer selects Impl::UNFUSED without cuDNN's norm),
    which no Megatron-Bridge Llama or Qwen3 MXFP8 pretraining recipe sets (perf_recipes/llama/*/llama3*.py,
    qwen/*/qwen3_moe.py, megatron-bridge 0.6.2). DeepSeek-V3's GB200/GB300/B300 FP8-MX recipes do, and are priced
    unfused all the same: their norm-fed layers are MLA's down-projections, under 0.2% of those rows' step."""

    @property
    def quantised(self) -> bool:
        return self.gemm_format != "bf16"

    def bf16_layer_fraction(self, layers: int) -> float:
        """Share of transformer layers whose linear layers the recipe keeps in BF16."""
        if not self.quantised:
            return 0.0
        return min(1.0, (self.bf16_first_layers + self.bf16_last_layers) / layers)


RECIPES: dict[str, Recipe] = {
    r.id: r
    for r in (
        Recipe("bf16", "bf16", BF16_BYTES, 0, 0, False, 0, 0, BF16_BYTES, BF16_BYTES, BF16_BYTES),
        Recipe("fp8", "fp8", 1.0, 1, 2, False, 0, 0, 1.0, 1.0, 2.0, delayed_scaling_capable=True),
        # MXFP8 parameters are all-gathered in BF16: Megatron-Bridge's MXFP8 recipe sets fp8_param_gather with
        # reuse_grad_buf_for_mxfp8_param_ag (required together: megatron-bridge 0.2.0rc6-0.6.2 training/
        # mixed_precision.py bf16_with_mxfp8_mixed), under which Megatron-Core gathers the updated BF16 parameters
        # into the gradient buffer and casts each into its MXFP8 parameter afterwards (megatron-core 0.14.0
        # distributed/distributed_data_parallel.py start_param_sync: "cast from bf16 to MXFP8 during copy";
        # param_and_grad_buffer.py finish_param_sync; 0.18.2 the same, _post_param_sync).
        Recipe("mxfp8", "fp8", _MXFP8, 0, 2, False, 0, 0, _MXFP8, BF16_BYTES, 2 * _MXFP8, norm_cast_fused=False),
        # NVFP4 weights use 16x16 blocks, so one quantised copy serves both Fprop and Dgrad (2509.25149 section 4.3).
        # As the production recipes run it (Megatron-Bridge perf recipes for Llama 3/3.1 on GB200/GB300, commit
        # 067f987df; MLPerf NeMo configs): every layer in NVFP4 (first_last_layers_bf16 defaults to False; the 12B
        # study of 2509.25149 kept 2 + 8 in BF16) and tp_comm_overlap = False ("TP overlap not supported yet").
        # Known wrong, kept: its TP gathers are priced in BF16, but TransformerEngine 2.8-2.16 gathers NVFP4 data
        # and scales (0.5625 B per element; the output gradient's two copies 1.125 B: transformer-engine wheel 2.16
        # pytorch/distributed.py _all_gather_nvfp4 L1316, module/layernorm_linear.py L274/283, module/base.py
        # L1487). Priced as TE runs them, a refit read the NVFP4 fold 8.5% (from 9.0) and stack 8.5 (from 9.45)
        # but held-out 6.1 (5.5), generation 6.1 (5.7), scale 5.7 (5.45), and GB200 NVFP4 / H100 FP8 12% off the
        # seed's ratio: the BF16 bytes stand in for an NVFP4 cost not found yet (TP1 and TP2 NVFP4 rows read 6-16%
        # fast with no TP traffic to price). docs/model.md 'Precision recipes' says the same.
        Recipe("nvfp4", "fp4", _NVFP4, 1, 2, True, 0, 0, BF16_BYTES, BF16_BYTES, BF16_BYTES + _NVFP4, False),
        Recipe("mxfp4", "fp4", _MXFP4, 0, 2, False, 0, 0, BF16_BYTES, BF16_BYTES, BF16_BYTES + 2 * _MXFP4),
    )
}
assert tuple(RECIPES) == PRECISIONS


NON_TN_FP8_FAMILIES = ("blackwell", "blackwell-ultra", "cdna3", "cdna4")
"""Families whose matrix cores take FP8 operands in either major order (Blackwell's tcgen05 MMAs, CDNA's MFMAs), so
that one row-wise FP8 copy of a per-tensor-scaled tensor serves the forward GEMM and the backward ones alike.
Hopper's FP8 wgmma takes K-major operands only (PTX ISA: transposes are supported for 16-bit types alone), so
Transformer Engine keeps a second, transposed FP8 copy of each weight and writes one of each cast activation there.
TE's `is_non_tn_fp8_gemm_supported()` is true from compute capability 10.0 (sm_100/sm_103) and then skips the
transpose (recalled from the public code, not a stored copy). CDNA3/CDNA4 MFMA instructions read both operands from
vector registers, which the GEMM kernel fills from LDS in the order it chose to load them (AMD CDNA3 ISA reference,
MFMA section), and hipBLASLt runs FP8 GEMMs with either operand transposed on gfx942 (recalled, not a stored copy):
there is no K-major rule to keep a transposed copy for. A sourced config agrees: AMD's MLPerf v5.0 MI325X LoRA
config trains Llama-2-70B in FP8 on 256 GB without recompute at TP1 (stack_notes.md), where a frozen base held twice
(138 GB) and its activations (140 GB) would not fit. Block-scaled formats (MXFP8, NVFP4) keep both copies on every
family: their scales run along the reduction dimension, which differs between the two GEMMs."""
_SINGLE_FP8_COPY = {
    r.id: replace(r, copies=1, weight_bytes=r.weight_bytes - r.element_bytes)
    for r in RECIPES.values()
    if r.delayed_scaling_capable  # per-tensor FP8: one scale for the whole tensor, in either layout
}


@cache
def frozen_base_recipe(recipe: Recipe) -> Recipe:
    """The recipe of a frozen base (LoRA): nothing takes a weight gradient, so no tensor needs the column-wise copy
    that only the wgrad GEMM reads (activations and output gradients are cast once), and a per-tensor FP8 weight on a
    K-major-only family (Hopper) is held once, its transposed copy for dgrad made in the backward layer by layer.
    Why not held: NVIDIA's MLPerf LoRA config for 8 x H200 runs Llama-2-70B at TP1 CP2
    (config_DGXH200_1x8x2xtp1pp1cp2.sh, mlperf_training_llm.csv), where one FP8 copy of the 69 B frozen weights is 69
    GB of 141 and two would be 138 GB, leaving no room for its activations or its whole-iteration CUDA graph
    (stack_notes.md). The cost is a transpose pass per weight per micro-batch (workload.linear_backward). Block-scaled
    formats re-quantise the weight along the other dimension from BF16 and keep both weight copies (`weight_bytes`),
    but cast activations and output gradients row-wise alone, without NVFP4's Hadamard pass on the column-wise copy:
    Transformer Engine's Linear sets its input quantizer's column-wise usage only when the weight trains
    (transformer-engine 2.8.0 pytorch/module/linear.py L135/L183, backward_needs_input = weight.requires_grad) and
    drops the output gradient's without a wgrad (L582-587). Cached: one object per recipe, so contexts built from it
    are shared (planning.predict.context_for keys them by identity)."""
    if not (recipe.quantised and recipe.copies == 2):
        return recipe
    if not recipe.delayed_scaling_capable:  # block scales: the weight keeps both copies
        return replace(recipe, copies=1, hadamard_wgrad=False)
    return replace(
        recipe, copies=1, weight_bytes=recipe.weight_bytes - recipe.element_bytes, weight_transposed_in_backward=True
    )


FP8_RECIPES = ("tensorwise", "rowwise")
"""torchao's float8 training recipes a stack knob can choose (Float8LinearRecipeName; MXFP8 is `--precision
mxfp8`)."""
TE_FP8_RECIPES = ("delayed", "tensorwise")
"""Megatron's per-tensor FP8 scaling as Megatron-Bridge names it (its mixed-precision configs' `fp8_recipe`:
'delayed', TransformerEngine's DelayedScaling, the scale from an amax history, no amax pass; 'tensorwise',
Float8CurrentScaling, an amax pass before each cast; Megatron-LM's --fp8-recipe the same; recalled from
megatron-bridge's training/mixed_precision.py, not a stored copy: labelled)."""
assert set(FP8_RECIPE_NAMES) == {*FP8_RECIPES, *TE_FP8_RECIPES}


@cache
def rowwise_recipe(recipe: Recipe) -> Recipe:
    """Per-tensor FP8 as torchao 0.11's rowwise recipe (Float8LinearRecipeName.ROWWISE: every operand AXISWISE-scaled,
    E4M3 throughout; torchao/float8/config.py) runs under torchtitan. Each operand is scaled along the reduction axis
    of the GEMM that reads it, which differs between the forward and the backward GEMMs, so a cast writes one copy
    (`copies` 1) and the backward casts the input, the weight and the output gradient again from BF16 along the other
    axis (workload.ROWWISE_BACKWARD_CASTS; float8_linear.py matmul_with_hp_or_float8_args.backward). The float8
    collectives are tensorwise-only: FSDP2 gathers BF16 weights (torchao `enable_fsdp_float8_all_gather`) and TP
    gathers BF16 activations and gradients, each rank casting all T gathered rows (torchtitan parallelize.py: 'For
    rowwise recipes, we use regular TP and all-gather happens in high precision', recalled from the public code, not a
    stored copy; torchao 0.11.0 float8_tensor_parallel.py: Float8ColwiseParallel 'currently assumes tensorwise
    scaling'). Cached: one object per recipe
    (planning.predict.context_for keys contexts by identity)."""
    if not recipe.delayed_scaling_capable:
        raise PerfmodelError(f"rowwise FP8 scaling applies to --precision fp8, not {recipe.id}")
    return replace(recipe, fp8_scaling="rowwise", copies=1, param_gather_bytes=BF16_BYTES, tp_gather_bytes=BF16_BYTES)


def float8_tp_recipe(recipe: Recipe) -> Recipe:
    """Per-tensor FP8 as torchao's tensorwise recipe runs under torchtitan's float8 TP (Float8ColwiseParallel,
    Float8RowwiseParallel; torchao 0.11.0 float8_tensor_parallel.py): a row-parallel layer's output gradient is cast
    to FP8 on this rank's sequence-parallel rows and all-gathered in FP8, as its inputs are in the forward
    (`tp_grad_gather_bytes`); the wgrad then reads each gathered FP8 operand in the other layout, a byte transpose of
    all T rows (float8_ops.py preprocess_addmm's .t().contiguous(); workload.linear_backward)."""
    return replace(recipe, tp_grad_gather_bytes=recipe.tp_gather_bytes)


@cache
def cp_comm_recipe(recipe: Recipe, cp_comm: str) -> Recipe:
    """The recipe with context parallelism exchanging as `cp_comm` does. Cached: one object per recipe and exchange,
    so contexts built from it are shared (planning.predict.context_for keys them by identity)."""
    return recipe if recipe.cp_comm == cp_comm else replace(recipe, cp_comm=cp_comm)


@cache
def bridge_recipe(
    recipe: Recipe,
    fp8_attention: bool = False,
    fused_grouped_mlp: bool = False,
    fp8_output_proj: bool = False,
    expert_loop: bool = False,
    graph_captured: bool = False,
    fp8_band_masked: bool = False,
    dglu_dbias_regressed: bool = False,
    offload_layers: int = 0,
    grad_reduce_in_fp32: bool = False,
) -> Recipe:
    """The recipe as a Megatron-Bridge performance recipe's settings run it (Scenario's RUN_SETTINGS: fp8_attention,
    fused_grouped_mlp, fp8_output_proj, expert_loop, full_iteration_graph, fp8_attention_band, dglu_dbias_regression,
    activation_offload_layers, grad_reduce_in_fp32), each where the format allows it (the experts' loop, the
    whole-iteration CUDA graph, the offload and Megatron-Core's FP32 gradient buffer in any; a regressed dGeGLU +
    dbias kernel with the fused grouped MLP that runs it): flash attention in the quantised format where the run sets
    FP8 dot-product attention (MXFP8 attention under the MXFP8 recipe, TransformerEngine 2.16, sm100 with cuDNN >=
    9.21: ../shared/data/gpt_oss_blackwell_notes.md 2.1; per-tensor FP8 under the others), the fused grouped MLP under
    MXFP8 alone (cuDNN's kernels take no other format), the LM head quantised under a quantised recipe; a BF16 recipe
    has nothing to quantise. The FP32 buffer is held and reduced in FP32 (Recipe.grad_buffer_bytes,
    grad_reduce_bytes). Cached, as cp_comm_recipe."""
    if fp8_attention and recipe.quantised:
        fmt = "mxfp8" if recipe.id == "mxfp8" else "fp8"
        recipe = replace(recipe, attention_format=fmt, fp8_band_masked=fp8_band_masked)
    if fused_grouped_mlp and recipe.id == "mxfp8":
        recipe = replace(recipe, fused_grouped_mlp=True, dglu_dbias_regressed=dglu_dbias_regressed)
    if fp8_output_proj and recipe.quantised:
        recipe = replace(recipe, fp8_output_proj=True)
    if expert_loop:
        recipe = replace(recipe, expert_loop=True)
    if graph_captured:
        recipe = replace(recipe, graph_captured=True)
    if offload_layers:
        recipe = replace(recipe, offload_layers=offload_layers)
    if grad_reduce_in_fp32:
        recipe = replace(recipe, grad_reduce_bytes=FP32_BYTES, grad_buffer_bytes=FP32_BYTES)
    return recipe


@cache
def shard_group_recipe(recipe: Recipe, shard_group: int) -> Recipe:
    """The recipe sharding ZeRO-3 over groups of `shard_group` ranks (0: all). Cached, as cp_comm_recipe."""
    return recipe if recipe.shard_group == shard_group else replace(recipe, shard_group=shard_group)


def get_recipe(precision: str, accelerator: Accelerator) -> Recipe:
    """The recipe on this accelerator: per-tensor FP8 without its transposed copies where the tensor cores do not
    need them (NON_TN_FP8_FAMILIES)."""
    if precision not in RECIPES:
        raise PerfmodelError(f"unknown precision '{shown(precision)}'; valid: {', '.join(RECIPES)}")
    if precision not in accelerator.precisions:
        raise unsupported(precision, accelerator)
    if accelerator.family in NON_TN_FP8_FAMILIES and precision in _SINGLE_FP8_COPY:
        return _SINGLE_FP8_COPY[precision]
    return RECIPES[precision]


def unsupported(precision: str, accelerator: Accelerator, said: str = "") -> PerfmodelError:
    """The refusal of a precision the accelerator's tensor cores lack; `said` tells where the precision came from
    (planning.request.check_precision: the built-in default scenario's FP8 on an A100)."""
    return PerfmodelError(
        f"{accelerator.id} has no tensor-core support for {precision}{said}; "
        f"supported: {', '.join(accelerator.precisions)}"
    )
