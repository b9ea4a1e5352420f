"""Measured kernels the model reads its per-format GEMM shares from, rather than fitting them to training rows.

perfmodel/data/kernels_gemm.csv holds rows of ../shared/data/kernels/gemm.csv (every column kept: `source` and
`locator` name the repository, commit, file and line each number was read from): GEMMs in several formats at the
same shapes on the same part. TransformerEngine's gemm_profiling of a 5B layer on B300 (M = 15,872 tokens; the
per-layer Fprop, Dgrad and Wgrad sums with pre-quantised inputs: kernel time only) and torchao PR 2427's B200 sweep
of BF16 against NVFP4 (squares of 4,096 to 8,192).

The mechanism is a ratio of two measurements on one part (a format's share of its peak over BF16's), so that what
the part's datasheet and the fitted efficiencies already carry (its BF16 GEMM share of peak, its clock) is not
counted twice. A family or format without rows keeps the model's assumption (compute.peak_power_share).

perfmodel/data/kernels_grouped_gemm.csv holds the contiguous and K-grouped grouped GEMM rows of the same file (every
column kept): DeepGEMM's FP8 on H800 and H100, torchao's MXFP8 CUTLASS kernels on B200; a check of the model's grouped
price (grouped_gemm_kernels), not a price.

perfmodel/data/kernels_attention.csv holds rows of ../shared/data/kernels/attention.csv (every column kept): fused
causal attention, head dim 128, forward and backward, BF16 and FP8, 1k to 32k tokens: each part's newest library
measured there (cuDNN 9.19 on H200, NGC 25.09 on B200, 25.11 on GB200 and GB300; AITER on MI355X) and B200's older NGC
25.06 (cuDNN 9.10.2) with the same benchmark file, from which physics.attention_kernels fits the families' attention
shares by release (the `reference` rows); and FlashAttention-2 on Hopper (PyTorch SDPA's flash backend in NGC 24.12,
causal, 4k to 64k tokens; cudnn-frontend's benchmark_results.csv, which prints TFLOP/s only: `time_us` is derived from
them by its causal_half convention, as each row's notes say), the kernel Megatron ran on Hopper before cuDNN's. The
non-causal rows of the same files and runs (H200 cuDNN 9.19 and FlashAttention-2, MI355X AITER; a non-causal row's FLOPs
not halved) price a context-parallel ring's off-diagonal steps; Blackwell's non-causal rows are of other cuDNN releases
than its causal ones, and are not bundled. GB300's NGC 25.09 rows (cuDNN 9.13.1: 11-70% slower forward at 1-8k tokens
than 25.11's) are not bundled: NVIDIA's v5.1 GB300 and GB200 submissions ran one container (ngc25.09) at one LoRA layout
(CP8 at 72 GPUs), whose GB300/GB200 time ratio the model prices within 0.1% with both at today's kernels and 9% off with
GB300's at 25.09's, so the MLPerf container did not run them (which cuDNN it carried is not public). The causal rows of
other shapes from cudnn-frontend's sdpa_benchmark_training results (cuDNN 9.19 and 9.22, 2026; H200, GB200, GB300) check
how the model carries those shares to them and fit what the shares cannot carry: GPT-OSS's head dim 64 with windows of
128 and 1,024 (the band), DeepSeek-V3's and Kimi's 192/128, Qwen3.5's 256, and MXFP8 at 64, 128 and 192 (the FP8
backward's quantising). perfmodel/data/kernels_attention_fa2.csv holds Blackwell's FlashAttention-2 rows of the same
benchmark files (`fa2_speeds`: FA2 against the fused kernel per family). Issue 27 extends these files to every kernel
class (collectives, elementwise) with the same columns.

perfmodel/data/kernels_collectives.csv holds the all-reduce, all-gather, reduce-scatter, all-to-all and permute rows
of ../shared/data/kernels/collectives.csv (every column kept) on the parts perfmodel bundles, inside one scale-up
domain: OpenXLA's tables (concurrent groups of 2-64 ranks; a group of 72 would span two of the model's 64-rank NVL72
domains and is left out), nccl-tests and rccl-tests. Left out: MoE dispatch/combine rows (each library's own
bandwidth), the single-number p2p rows, and B200's 4-node rows (AWS EFA, not the bundled system's InfiniBand).

perfmodel/data/kernels_memory.csv holds the rows of ../shared/data/kernels/elementwise.csv (every column kept) of the
well-written bandwidth-bound kernels a training step runs, from which physics.memory_kernels fits each family's share
of its datasheet HBM bandwidth: cuDNN's RMSNorm (H200, GB200, GB300: the norm TransformerEngine calls), CUB's
elementwise add (B200), torchao's MXFP8 casts (B200, CUDA and Triton) and blockwise FP8 casts (H100, Triton), and
HipKittens' fused residual LayerNorm and RoPE (MI355X, whose `bytes_moved` is the minimum traffic). Left out: eager
PyTorch and torch.compile variants (what a training stack does not run for these ops), cuDNN's LayerNorm (one
1,024-token shape, its backward at 18-20% of HBM), the MXFP8 scale-layout kernels (kilobytes), and the NVFP4 Hadamard
and quantise kernels (compute-bound on the transform, not streaming).
"""

from __future__ import annotations

import math
import re
from functools import cache
from pathlib import Path
from typing import NamedTuple

from perfmodel.errors import PerfmodelError

DATA = Path(__file__).resolve().parents[1] / "data"
GEMMS = "kernels_gemm.csv"
ATTENTIONS = "kernels_attention.csv"
ATTENTION_PARTS = {"H200": "h200-sxm", "B200": "b200", "GB200": "gb200", "GB300": "gb300", "MI355X": "mi355x"}
"""The attention rows' `gpu` names, as hardware_specs ids."""
PARTS = {"B200": "b200", "B300": "b300"}
"""The rows' `gpu` names, as hardware_specs ids."""
MEASURED_FAMILIES = frozenset(("blackwell", "blackwell-ultra"))
"""The families of PARTS (a test holds them equal): a prediction on another family never reads the file."""
GEMM_FORMATS = {"bf16": "bf16", "fp8": "fp8", "mxfp8": "fp8", "nvfp4": "fp4", "mxfp4": "fp4"}
"""A row's number format as the tensor-core input format whose dense peak it runs at (precision.Recipe.gemm_format)."""
DELAYED_SCALING = "delayed scaling"
"""TransformerEngine's per-tensor FP8 rows with delayed scaling, which `format_shares` does not read: the model prices
per-tensor FP8 GEMMs as current scaling's whatever the recipe (precision.py; a release or benchmark with delayed
scaling skips only the cast's amax pass). TE's 'pre-quantized' delayed sums run 11-21% over current scaling's on the
same shapes on both cards (B300, H200 NVL: ../shared/data/kernels/gemm.csv), but they time more than the kernels: the
delayed autocast sums, casts included, are faster on all six, and current scaling's GEMMs plus the model's
delayed-scaling casts give them within 3.4% (tests/test_kernels.py). A per-tensor GEMM reads one scale however the
recipe set it. Priced at the delayed rows' share instead (every MLPerf FP8 row, Megatron's before 25.09), a refit
got worse on validation (0.3 points of MAPE) and on every protocol but the stack one (precision 3 points)."""


def _read(name: str) -> list[dict[str, str]]:
    import csv  # only a prediction on a measured family reads the rows

    with (DATA / name).open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


class FormatShare(NamedTuple):
    ratio: float
    """Median over the shapes measured in both of (share of the format's dense peak) / (BF16's of the BF16 peak)."""
    part: str
    """The hardware_specs id of the part measured."""


@cache
def format_shares() -> dict[tuple[str, str], FormatShare]:
    """A GEMM format's share of its dense peak over BF16's share of the BF16 peak, at the same shapes on the same
    part, by (family, format). B300 (Blackwell Ultra) runs NVFP4 at 0.57 of BF16's share (4.9-5.3 PF of 13.5 PF
    against 1.44-1.50 of 2.25 PF: 1.7-1.9x FP8, not the datasheet's 3x) and FP8 at 0.94 (per-tensor current scaling
    2.7-3.0 PF and MXFP8 2.7 PF of 4.5 PF; not the delayed-scaling rows, DELAYED_SCALING); B200 (Blackwell) NVFP4 at
    0.95 (5.4-5.5 PF of 9 PF at 6,144-8,192 squares): Blackwell Ultra's 1.5x FP4 peak does not reach its GEMMs."""
    import statistics  # here: statistics pulls in fractions and decimal, ~3 ms of every CLI start that never asks

    from perfmodel.inputs.hardware import get_accelerator

    bf16: dict[tuple[str, ...], float] = {}
    others: list[tuple[str, str, tuple[str, ...], float]] = []
    for row in _read(GEMMS):
        if DELAYED_SCALING in row["scaling_recipe"]:
            continue
        acc = get_accelerator(PARTS[row["gpu"]])
        fmt = GEMM_FORMATS[row["precision"]]
        where = (acc.id, row["op"], row["m"], row["n"], row["k"])
        share = float(row["tflops"]) * 1e12 / acc.peak_flops(fmt)
        if fmt == "bf16":
            bf16[where] = share
        else:
            others.append((acc.family, fmt, where, share))
    ratios: dict[tuple[str, str], list[float]] = {}
    parts: dict[tuple[str, str], str] = {}
    for family, fmt, shape, format_share in others:
        ratios.setdefault((family, fmt), []).append(format_share / bf16[shape])
        parts.setdefault((family, fmt), shape[0])
    return {key: FormatShare(statistics.median(values), parts[key]) for key, values in ratios.items()}


GEMM_SHAPES = "kernels_gemm_shapes.csv"
LIBRARY_BENCH = "hipblaslt-bench"
"""The vendor library's own GEMM benchmark, whose shape rows measure both formats at each one's best (AMD's
max-achievable FLOPs method, rocm-blogs "Measuring Max-Achievable FLOPs - Part 2": MI300X and MI325X; HipKittens'
hipBLASLt baselines on MI355X, squares of 1,024 to 16,384)."""
BENCH_FORMAT_SHARES = {
    ("cdna3", "fp8"): FormatShare(0.899, "mi300x"),
    ("cdna4", "fp8"): FormatShare(1.043, "mi355x"),
}
"""A format's share over BF16's where the vendor library's benchmark measures both on the family's parts and
TransformerEngine's layer rows do not (`format_shares`): `bench_format_shares` of the bundled shape rows, rounded
(tests/test_kernels.py holds the two equal), kept here so that a prediction does not read the 1,000-row file.
hipBLASLt runs FP8 at 0.90 of BF16's share on CDNA3 (MI300X 1,273 of 2,615 TFLOP/s against 709 of 1,307; MI325X
1,519 against 843) and at 1.04 on CDNA4 (MI355X 3,293 of 5,033 against 1,579 of 2,517). Fitted instead (one AMD
FP8 factor, prior 1), the share traded against `gemm_sustained`: with BF16's rows held out only their product is
identified, and the fit priced BF16 4-7% fast (the precision protocol's BF16 fold 8.6% with the measured
collectives, 6.8% with these shares)."""


def bench_format_shares() -> dict[tuple[str, str], FormatShare]:
    """Per family, the median over its parts of the best FP8 share of FP8 peak over the best BF16 share of BF16 peak
    among the LIBRARY_BENCH shape rows (each format at its best shape, as the benchmark is run)."""
    import statistics

    from perfmodel.inputs.hardware import get_accelerator

    best: dict[tuple[str, str], float] = {}
    for row in _read(GEMM_SHAPES):
        if LIBRARY_BENCH not in row["library_kernel"] or row["precision"] not in ("bf16", "fp8"):
            continue
        acc = get_accelerator(SHAPE_PARTS[row["gpu"]])
        m, n, k = (int(row[d]) for d in "mnk")
        tflops = float(row["tflops"]) if row["tflops"] else 2 * m * n * k / float(row["time_us"]) / 1e6
        where = (acc.id, row["precision"])
        best[where] = max(best.get(where, 0.0), tflops * 1e12 / acc.peak_flops(row["precision"]))
    ratios: dict[str, dict[str, float]] = {}
    for (part, fmt), share in best.items():
        if fmt == "fp8" and (part, "bf16") in best:
            ratios.setdefault(get_accelerator(part).family, {})[part] = share / best[part, "bf16"]
    return {
        (family, "fp8"): FormatShare(statistics.median(by_part.values()), min(by_part))
        for family, by_part in sorted(ratios.items())
    }


MAMF_NOTE = "MAMF = best shape"
"""How the shape rows of ml-engineering's maximum-achievable-matmul-FLOPs table begin their notes: each the best
shape of a brute-force search (mamf-finder.py) at the part's own, unlocked clock."""


class SiblingRatio(NamedTuple):
    """A part's measured GEMM throughput over a lower-power part on the same silicon (`best_shape_ratios`)."""

    ratio: float
    part: str


class SiliconRatio(NamedTuple):
    """A part's measured best-GEMM share of its BF16 peak over another generation's part (`other_silicon_ratios`)."""

    part: str
    reference: str
    ratio: float


@cache
def _mamf_best() -> dict[tuple[str, str], float]:
    """Each part's and format's best TFLOP/s among ml-engineering's MAMF shape rows (MAMF_NOTE): the one reading that
    `other_silicon_ratios` and `best_shape_ratios` divide. Only the file's lines that hold the note are parsed (14 of
    1,064, each row one line): a prediction on a part with a power reference reads them (compute.clock_share), ~1 ms
    where the whole file took ~11. Cached: read once per process, for both ratios (validate prices Ampere and
    Blackwell alike)."""
    import csv

    with (DATA / GEMM_SHAPES).open(newline="", encoding="utf-8") as handle:
        lines = [next(handle), *(line for line in handle if MAMF_NOTE in line)]
    best: dict[tuple[str, str], float] = {}
    for row in csv.DictReader(lines):
        if row["notes"].startswith(MAMF_NOTE):
            key = (SHAPE_PARTS[row["gpu"]], row["precision"])
            best[key] = max(best.get(key, 0.0), float(row["tflops"]))
    return best


def other_silicon_ratios(references: dict[str, str]) -> dict[str, SiliconRatio]:
    """Per family in `references` (family: the part whose kernels price it) with a MAMF BF16 row of its own, its best
    shape's share of its BF16 peak over the reference part's best: the cross-generation share the kernels measure.
    A family whose rows measure two parts is refused (one line naming the file and the family), not priced from
    whichever came last: their shares differ where their clocks do (MI300X and MI325X, B200 and GB200)."""
    from perfmodel.inputs.hardware import get_accelerator

    best = {
        part: tflops / get_accelerator(part).bf16_tflops.value
        for (part, fmt), tflops in _mamf_best().items()
        if fmt == "bf16"
    }
    parts: dict[str, list[str]] = {}
    for part in sorted(best):
        parts.setdefault(get_accelerator(part).family, []).append(part)
    ratios: dict[str, SiliconRatio] = {}
    for family, reference in references.items():
        measured = parts.get(family, [])
        if len(measured) > 1:
            raise PerfmodelError(
                f"{GEMM_SHAPES}: family '{family}' has MAMF BF16 rows of {len(measured)} parts "
                f"({', '.join(measured)}); its GEMMs are priced from one part's ratio"
            )
        if measured and reference in best:
            ratios[family] = SiliconRatio(measured[0], reference, best[measured[0]] / best[reference])
    return ratios


@cache
def best_shape_ratios() -> dict[str, SiblingRatio]:
    """Per part that MAMF rows measure beside the lowest-power part on the same GEMM silicon (hardware_specs: the same
    `power_reference`), the geometric mean over the formats both measure of its best throughput over that part's: the
    sustained-clock ratio of the two, measured by one tool, where the power assumption would guess it
    (compute.clock_share). On Blackwell's BF16/FP8 silicon (every Blackwell part names GB300's as its power
    reference) GB200 at 1,200 W runs its best GEMM 4.4% faster than B200 at 1,000 W in BF16 (1,822 against 1,745
    TFLOP/s) and 5.3% in FP8 (3,616 against 3,433), and B300 at 1,100 W 1.4% faster in BF16 (1,769) and 2.3% slower
    in FP8 (3,353): 1.0487x and 0.9952x, where the power assumption (f ~ P^0.63) says 12.2% and 6.2%. Training rows of
    one layout and release read the same: GB200 over B200 1.01-1.045 measured (Megatron-Bridge 8B FP8/MXFP8 in NeMo
    25.09 and 25.11, MLPerf v5.0 Llama 2 70B LoRA) against 1.085 priced with the power assumption, B300 over B200
    1.03-1.04 (MLPerf v5.1 Llama 2 70B LoRA, Supermicro); and TransformerEngine's B300 layer GEMMs, 1,447-1,504
    TFLOP/s (kernels_gemm.csv), are priced at 1,564 with B300's measured ratio, at 1,669 with the power assumption.
    Cached: read once per process."""
    from perfmodel.inputs.hardware import get_accelerator

    best = _mamf_best()
    siblings: dict[str, list[str]] = {}
    for part in sorted({part for part, _ in best}):
        acc = get_accelerator(part)
        if acc.power_reference is not None:
            siblings.setdefault(acc.power_reference.id, []).append(part)
    ratios: dict[str, SiblingRatio] = {}
    for parts in siblings.values():
        anchor = min(parts, key=lambda part: get_accelerator(part).power_w.value)
        for part in parts:
            both = [fmt for p, fmt in best if p == part and (anchor, fmt) in best]
            if part != anchor and both:
                ratio = math.prod(best[part, fmt] / best[anchor, fmt] for fmt in both) ** (1 / len(both))
                ratios[part] = SiblingRatio(ratio, anchor)
    return ratios


SHAPE_PARTS = {
    "A100": "a100-sxm-80gb",
    "H100": "h100-sxm",
    "H200": "h200-sxm",
    "B200": "b200",
    "B300": "b300",
    "GB200": "gb200",
    "MI300X": "mi300x",
    "MI325X": "mi325x",
    "MI355X": "mi355x",
    "MI300X/MI325X": "mi300x",
    "MI350X/MI355X": "mi355x",
}
"""The shape rows' `gpu` names, as hardware_specs ids. OpenXLA's tables name only the architecture: gfx942 is read as
MI300X (its best BF16 GEMM, 583 TFLOP/s at 4,096 cubed, is below MI300X's own 668-709 in ml-engineering's MAMF table
and the ROCm blog, where MI325X reaches 785-843), gfx950 as MI355X (the part perfmodel bundles; MI350X is the same
silicon at a lower power). Both labels are assumptions, as the rows' `gpu` column says."""


class GemmKernel(NamedTuple):
    """One measured dense GEMM, C[m, n] = A[m, k] B[k, n], by the vendor's library (cuBLAS/cuBLASLt, hipBLASLt)."""

    part: str
    """The hardware_specs id of the part measured (SHAPE_PARTS)."""
    fmt: str
    """'bf16' or 'fp8' (per-tensor scaled e4m3, or e4m3 x e5m2)."""
    m: int
    n: int
    k: int
    time_s: float
    """2 m n k / the row's TFLOP/s (every source states TFLOP/s; not all state a time)."""
    where: str
    """The row's source and locator."""
    xla: bool = False
    """Whether OpenXLA's autotuned tables measured it (XLA's own lowering: the vendor library or Triton)."""


@cache
def gemm_kernels() -> tuple[GemmKernel, ...]:
    """The bundled dense GEMM rows of perfmodel/data/kernels_gemm_shapes.csv: every single (not batched or grouped)
    BF16 and FP8 GEMM of ../shared/data/kernels/gemm.csv on a bundled part run by the vendor's library (OpenXLA's
    autotuned tables: H100, B200, gfx942, gfx950 at m, n, k of 256 to 4,096; ml-engineering's MAMF best shapes;
    the ROCm blog's hipblaslt-bench; HipKittens' and torchao PR 2427's cuBLAS and hipBLASLt baselines), every column
    kept. Left out: TransformerEngine's per-layer sums (format_shares reads them), and kernels other than the
    vendor's (HipKittens, AITER, Triton, Composable Kernel, CUTLASS, hand-written): training stacks call the vendor
    library. Read by the fit of physics.gemm_kernels and its tests, not by a prediction."""
    return tuple(_gemm_kernel(row) for row in _read(GEMM_SHAPES))


def _gemm_kernel(row: dict[str, str]) -> GemmKernel:
    m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
    return GemmKernel(
        part=SHAPE_PARTS[row["gpu"]],
        fmt=row["precision"],
        m=m,
        n=n,
        k=k,
        time_s=2 * m * n * k / (float(row["tflops"]) * 1e12),
        where=f"{row['source']} {row['locator']}",
        xla=row["library_kernel"].startswith("XLA"),
    )


GROUPED_GEMMS = "kernels_grouped_gemm.csv"
GROUPED_PARTS = {"H100": "h100-sxm", "H800": "h800", "B200": "b200"}


class GroupedGemmKernel(NamedTuple):
    """One measured grouped GEMM: `groups` GEMMs of m x n x k each (the experts of a MoE layer), one kernel."""

    part: str
    fmt: str
    """'bf16' or 'fp8' (MXFP8 and DeepGEMM's 1x128/128x128 blockwise FP8 alike: the model's FP8 rate)."""
    m: int
    n: int
    k: int
    groups: int
    time_s: float
    where: str
    weight_gradient: bool
    """A K-grouped call: each expert's weight gradient, reduced over its tokens."""


@cache
def grouped_gemm_kernels() -> tuple[GroupedGemmKernel, ...]:
    """The bundled grouped GEMM rows of perfmodel/data/kernels_grouped_gemm.csv (every column of
    ../shared/data/kernels/gemm.csv kept): DeepGEMM's contiguous grouped FP8 GEMMs on H800 (its README) and on H100
    through torchao, and torch._scaled_grouped_mm's MXFP8 CUTLASS kernels on B200 (torchao's MoE training README),
    each as one expert's GEMM: a row whose M is the total over its groups (notes: 'total') is split evenly, and a
    weight-gradient (K-grouped) row's reduction runs over the tokens, its output being the other two sides. Left
    out: DeepGEMM's masked layout (decode batches padded to a maximum M) and torchao's forward-plus-backward timings,
    which include quantising kernels and autograd. Read by tests/test_grouped_gemm_kernels.py, not by a prediction."""
    return tuple(_grouped_gemm_kernel(row) for row in _read(GROUPED_GEMMS))


def _grouped_gemm_kernel(row: dict[str, str]) -> GroupedGemmKernel:
    m, n, k, groups = (int(row[d]) for d in ("m", "n", "k", "groups"))
    tflops = float(row["tflops"])
    flops = 2 * m * n * k * (1 if "total" in row["notes"] else groups)
    weight_gradient = "wgrad" in row["op"]
    if weight_gradient:
        tokens = max(m, n, k)
        m, n = (side for side in (m, n, k) if side != tokens)
        k = tokens // groups
    elif "total" in row["notes"]:
        m //= groups
    fmt = "bf16" if row["precision"] == "bf16" else "fp8"
    where = f"{row['source']} {row['locator']}"
    time_s = flops / (tflops * 1e12)
    return GroupedGemmKernel(GROUPED_PARTS[row["gpu"]], fmt, m, n, k, groups, time_s, where, weight_gradient)


class AttentionKernel(NamedTuple):
    """One measured fused-attention call: `batch` sequences of `seq` tokens, `heads` query heads."""

    part: str
    """The hardware_specs id of the part measured."""
    backward: bool
    fmt: str
    """The row's precision: 'bf16', 'fp8' (per-tensor scales) or 'mxfp8' (32-element blocks), its QK^T and PV
    multiplies'."""
    batch: int
    seq: int
    heads: int
    head_dim: int
    time_s: float
    where: str
    """The row's source and locator."""
    release: str | None
    """YYYY-MM of the NGC container the row ran ('NGC pytorch 25.06' in its `software`), the month a build was measured
    where UNCONTAINED_RELEASES dates it, or None where the row names none (a cuDNN or ROCm build alone)."""
    flash_attn_2: bool = False
    """Whether the row measures FlashAttention-2 (PyTorch SDPA's flash backend) rather than the vendor's fused kernel
    (cuDNN, AITER): the kernel older releases ran (efficiency.FLASH_ATTN_2_UNTIL), fitted on its own."""
    causal: bool = True
    """Whether the call is causal; a non-causal one (every query against every key) is the kernel of a context-parallel
    ring's off-diagonal steps (efficiency.NON_CAUSAL_ATTENTION), fitted on its own."""
    head_dim_v: int = 128
    """The value head dim (the context multiply's width): 128 beside a query/key head dim of 192 in MLA's shapes."""
    window: int = 0
    """The sliding window, tokens looked back; 0 for none. Not the row's `window` for a cudnn-frontend FP8 or MXFP8
    backward (`BAND_DROPPED`)."""

    @property
    def reference(self) -> bool:
        """Whether the call is of the shape the per-family shares are fitted on (physics.attention_kernels): head dim
        128, no window, BF16 or per-tensor FP8. The others (head dims 64, 192 and 256, windows, MXFP8) check how the
        model carries those shares to other shapes, and fit the band and the FP8 backward's terms."""
        return self.head_dim == self.head_dim_v == 128 and not self.window and self.fmt != "mxfp8"


@cache
def attention_kernels() -> tuple[AttentionKernel, ...]:
    """The bundled attention rows (read by the fit of physics.attention_kernels and its tests, not by a prediction:
    efficiency.DEFAULTS carries the fitted shares)."""
    return tuple(_attention_kernel(row) for row in _read(ATTENTIONS))


def _attention_kernel(row: dict[str, str]) -> AttentionKernel:
    return AttentionKernel(
        part=ATTENTION_PARTS[row["gpu"]],
        backward=row["pass"] == "bwd",  # noqa: S105 (a column name, not a password)
        fmt=row["precision"],
        batch=int(row["batch"]),
        seq=int(row["seq_q"]),
        heads=int(row["heads_q"]),
        head_dim=int(row["head_dim_qk"]),
        time_s=float(row["time_us"]) * 1e-6,
        where=f"{row['source']} {row['locator']}",
        release=_ngc_release(row["software"]) or UNCONTAINED_RELEASES.get((row["gpu"], row["software"])),
        flash_attn_2="FA2" in row["kernel_backend"],
        causal=row["causal"] == "True",
        head_dim_v=int(row["head_dim_v"]),
        window=0 if _band_dropped(row) else int(row["window"] or 0),
    )


FLASH_ATTN_2 = "kernels_attention_fa2.csv"


@cache
def fa2_speeds() -> dict[str, tuple[float, float]]:
    """FlashAttention-2's speed against the fused attention a family is priced at, (forward, backward) per family:
    the median over FA2's causal BF16 rows of head dim 128 of its FLOP rate over the `reference` row's of the same
    part, pass and sequence length at the part's newest bundled release (the kernel efficiency.DEFAULTS carries;
    FLOPs as batch x heads / time, the rest of the count being equal). The FA2 rows: Hopper's of
    kernels_attention.csv (H200, NGC 24.12, PyTorch SDPA's flash backend, against cuDNN 9.19: the FA2 rows and the
    newest cuDNN's differ in batch and heads, hence rates) and those of perfmodel/data/kernels_attention_fa2.csv (rows
    of ../shared/data/kernels/attention.csv, every column kept: B200 NGC 25.09, PyTorch SDPA's flash backend and
    flash-attn's own; GB200 and GB300 NGC 25.11, SDPA's flash backend; each the container of the part's newest cuDNN
    rows, the same shapes), at 4k to 32k tokens, the lengths both kernels were measured at on every part. Read by
    tests/test_kernels.py, not by a prediction (inputs/stacks.py FA2_SPEEDS carries the result)."""
    import statistics

    from perfmodel.inputs.hardware import get_accelerator

    fused = [k for k in attention_kernels() if k.reference and k.causal and k.fmt == "bf16" and not k.flash_attn_2]
    newest = {k.part: k.release for k in sorted(fused, key=lambda k: k.release or "")}
    rates = {(k.part, k.backward, k.seq): _rate(k) for k in fused if k.release == newest[k.part]}
    flash = [k for k in attention_kernels() if k.flash_attn_2 and k.causal]
    flash += [_attention_kernel(row) for row in _read(FLASH_ATTN_2)]
    ratios: dict[tuple[str, bool], list[float]] = {}
    for kernel in flash:
        if (reference := rates.get((kernel.part, kernel.backward, kernel.seq))) is not None:
            key = (get_accelerator(kernel.part).family, kernel.backward)
            ratios.setdefault(key, []).append(_rate(kernel) / reference)
    return {
        family: (statistics.median(ratios[family, False]), statistics.median(ratios[family, True]))
        for family, _ in sorted(ratios)
    }


def _rate(kernel: AttentionKernel) -> float:
    """A causal call's FLOP rate, up to the factor 4 x seq^2 x head dim / 2 (x 2.5 for a backward) its shape shares
    with the others of its sequence length, pass and head dim."""
    return kernel.batch * kernel.heads / kernel.time_s


BAND_DROPPED = "benchmark/sdpa_benchmark_training"
"""cudnn-frontend's SDPA training benchmark, whose driver passes the window to the forward (sdpa_fp8, sdpa_mxfp8) and to
the BF16 backward but not to `sdpa_fp8_backward` and `sdpa_mxfp8_backward` (benchmark_single_sdpa.py L696-719,
L805-827, state of 2026-05-08: `use_causal_mask` alone; ../shared/data/gpt_oss_blackwell_notes.md 2.2): its FP8 and
MXFP8 backward rows with a window are full causal backwards, and grow 4x per doubling of the sequence as one does."""


def _band_dropped(row: dict[str, str]) -> bool:
    return BAND_DROPPED in row["source"] and row["pass"] == "bwd" and row["precision"] != "bf16"  # noqa: S105


NGC_CONTAINER = re.compile(r"NGC pytorch (\d\d)\.(\d\d)")


UNCONTAINED_RELEASES = {("H200", "cudnn-frontend 1.19.0, cuDNN backend 91901"): "2026-02"}
"""The release of rows that name a cuDNN build but no NGC container, on a part whose other rows name one (so the two
are ordered and priced by release: physics.attention_kernels.fit_releases): H200's cuDNN 9.19.1 rows, measured on
2026-02-27 (their results file, llama3.1_20260227_034703.csv), after its NGC 24.12 container's. The month they were
measured, not a container's: a release before it is priced with the older rows' kernels (never a newer kernel carried
back). An assumption, labelled."""


def _ngc_release(software: str) -> str | None:
    found = NGC_CONTAINER.search(software)
    return f"20{found.group(1)}-{found.group(2)}" if found else None


COLLECTIVES = "kernels_collectives.csv"
COLLECTIVE_SYSTEMS = {
    "A100": "dgx-a100",
    "H100": "dgx-h100",
    "H200": "dgx-h200",
    "B200": "dgx-b200",
    "GB200": "gb200-nvl72",
    "GB300": "gb300-nvl72",
    "MI300X": "mi300x-8",
    "MI300X/MI325X": "mi300x-8",
    "MI350X/MI355X": "mi355x-8",
}
"""The collective rows' `gpu` names, as hardware_specs system ids. XLA's gfx942 and gfx950 tables do not name the part:
MI300X and MI325X share their xGMI links (hardware_specs), and gfx950's 8-GPU platform is priced as MI355X's."""
BUS_FACTOR = {"all_reduce": 2.0}
"""nccl-tests' busbw over algbw is factor x (n-1)/n: 2 for an all-reduce, 1 for the others."""


class CollectiveKernel(NamedTuple):
    """One measured collective: `ranks` GPUs in one scale-up domain on `system`, a `message_bytes` buffer (nccl-tests
    convention: the all-reduce buffer, the all-gather output, the reduce-scatter input, the all-to-all and permute
    per-rank buffer, which is what physics.collectives takes)."""

    system: str
    """The hardware_specs id of the system measured."""
    op: str
    """all_reduce, all_gather, reduce_scatter, all_to_all, or collective_permute (each rank sends to one peer)."""
    ranks: int
    message_bytes: float
    time_s: float
    in_switch: bool | None
    """Whether the all-reduce ran in-switch reduction (NVLS): True where the row says NVLS, False where it says Ring
    or NVLS disabled, and for XLA's 8-GPU HGX tables (XLA's lowering, no NVLS: kernels README); None where the library
    chose, as NCCL does per call (the model's choice, collectives._fastest)."""
    benchmark: str
    """'xla' (OpenXLA's cost-model tables: concurrent groups, runtime overhead at small messages), 'nccl-tests' or
    'rccl-tests' (the library alone)."""
    where: str


@cache
def collective_kernels() -> tuple[CollectiveKernel, ...]:
    """The bundled collective rows (read by physics.collective_kernels and its tests, not by a prediction)."""
    return tuple(_collective_kernel(row) for row in _read(COLLECTIVES))


def _collective_kernel(row: dict[str, str]) -> CollectiveKernel:
    ranks, size = int(row["n_gpus"]), float(row["message_bytes"])
    system = COLLECTIVE_SYSTEMS[row["gpu"]]
    if row["time_us"]:
        time_s = float(row["time_us"]) * 1e-6
    else:  # nccl-tests rows quote busbw alone: time = bytes / algbw
        algbw = float(row["busbw_gbps"]) * 1e9 / (BUS_FACTOR.get(row["op"], 1.0) * (ranks - 1) / ranks)
        time_s = size / algbw
    xla = "XLA" in row["library"]
    says = f"{row['algo']} {row['notes']}"
    in_switch = None
    if "NVLS_ENABLE=0" in says or row["algo"].startswith("Ring") or (xla and system in ("dgx-h100", "dgx-b200")):
        in_switch = False
    elif row["algo"].startswith("NVLS"):
        in_switch = True
    benchmark = "xla" if xla else ("rccl-tests" if "RCCL" in row["library"] else "nccl-tests")
    return CollectiveKernel(system, row["op"], ranks, size, time_s, in_switch, benchmark,
                            f"{row['source']} {row['locator']}")  # fmt: skip


MEMORY = "kernels_memory.csv"
MEMORY_PARTS = {"H100": "h100-sxm", "H200": "h200-sxm", "B200": "b200", "GB200": "gb200", "GB300": "gb300",
                "MI355X": "mi355x"}  # fmt: skip
"""The memory rows' `gpu` names, as hardware_specs ids."""


class MemoryKernel(NamedTuple):
    """One measured bandwidth-bound kernel: `bytes_moved` through HBM in `time_s` on the part `gpu`."""

    gpu: str
    """The hardware_specs id of the part measured."""
    kernel: str
    bytes_moved: float
    """The row's own count, or achieved bandwidth x time where it quotes only those (torchao's rows)."""
    time_s: float
    where: str


@cache
def memory_kernels() -> tuple[MemoryKernel, ...]:
    """The bundled memory-bound rows (read by physics.memory_kernels and its tests, not by a prediction)."""
    return tuple(_memory_kernel(row) for row in _read(MEMORY))


def _memory_kernel(row: dict[str, str]) -> MemoryKernel:
    time_s = float(row["time_us"]) * 1e-6
    size = float(row["bytes_moved"]) if row["bytes_moved"] else float(row["achieved_gbps"]) * 1e9 * time_s
    kernel = f"{row['kernel']} {row['pass']} ({row['backend']})".replace(" ()", "")
    return MemoryKernel(MEMORY_PARTS[row["gpu"]], kernel, size, time_s, f"{row['source']} {row['locator']}")
