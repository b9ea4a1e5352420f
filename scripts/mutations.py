"""Deliberate physics bugs, one at a time: does the suite see each one?

Each mutation is a text substitution in one source file (its old text must occur exactly once, so a mutation gone
stale with the code fails loudly instead of testing nothing). The script copies the tracked tree to a temporary
folder, checks that the chosen tests pass there unchanged, then applies each mutation alone, runs the tests against
the copy (its own import path and cache folder) and reports which tests failed. The tree itself is never touched.

The tests run are TESTS: the accuracy gate (live validation and protocols against the figures stored with the
calibration), the stored-accuracy limits, the live predictions compared with cited measured figures, and the closed
forms of the collectives and the pipeline schedule (costs too small in any bundled row for its error to show them).
It exits 1 when a mutation survives (no test fails), 2 when a mutation does not apply or the unmutated copy fails.

    python scripts/mutations.py              # every mutation, the gate as the suite runs it (~12 minutes)
    python scripts/mutations.py --fast       # without the protocol refits (their stored fits still priced; ~4 min)
    python scripts/mutations.py --every-refit  # with generation and precision refitted too (~30 minutes)
    python scripts/mutations.py --only hbm   # the mutations whose name contains 'hbm'
    python scripts/mutations.py --tests tests --only bubble   # against the whole suite
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = (
    "tests/test_accuracy_gate.py",
    "tests/test_validation.py",
    "tests/test_long_sequence.py",
    "tests/test_seed_ratios.py",
    "tests/test_attention_kernels.py",
    "tests/test_collectives.py",  # closed forms of what few rows see: ZeRO-0's all-reduce, pipeline fill sends
    "tests/test_schedule.py",  # the pipeline sends: fill and drain whole, the steady state's unhidden share
    "tests/test_pipeline_schedule_rows.py",  # a 2021 Megatron run's blocking sends, in no bundled row
    "tests/test_dp_buckets.py",  # ZeRO-1's and ZeRO-3's collectives, which the gate sees only through few rows
    "tests/test_optimizer_step.py",  # Adam's bytes per parameter, which moves rows less than the gate's half point
)
SLOW = "test_every_protocol_holds_refitted"
"""The protocol refits (25 s per run, 75 s with --every-refit): --fast leaves them out."""


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str


MUTATIONS = (
    Mutation(
        "all-reduce moves its data twice",
        "perfmodel/physics/collectives.py",
        "data = _ramped(maximum(intra_data, inter_data), g, g.all_reduce_half_bandwidth_s)",
        "data = _ramped(2 * maximum(intra_data, inter_data), g, g.all_reduce_half_bandwidth_s)",
    ),
    Mutation(
        "no pipeline bubble",
        "perfmodel/physics/schedule.py",
        "return (pp - 1) / (vp * microbatches)",
        "return 0 * (pp - 1) / (vp * microbatches)",
    ),
    Mutation(
        "HBM bandwidth doubled",
        "perfmodel/inputs/hardware.py",
        "return self.hbm_tbps.value * 1e12",
        "return 2 * self.hbm_tbps.value * 1e12",
    ),
    Mutation(
        "KV heads = query heads (GQA ignored)",
        "perfmodel/inputs/models.py",
        "return self.kv_heads * self.head_dim",
        "return self.heads * self.head_dim",
    ),
    Mutation(
        "B300 NVFP4 peak cut by a third",
        "hardware_specs/accelerators/b300.toml",
        "fp4_tflops = { value = 13500.0,",
        "fp4_tflops = { value = 9000.0,",
    ),
    Mutation(
        "one TP all-gather per block dropped (backward)",
        "perfmodel/physics/step.py",
        "layer = forward + blocks * (regather + gather + scatter_back)",
        "layer = forward + blocks * (regather + scatter_back)",
    ),
    Mutation(
        "attention backward at the forward's FLOPs",
        "perfmodel/physics/workload.py",
        "flops = ATTENTION_BWD_FLOP_RATIO\n",
        "flops = 1.0\n",
    ),
    Mutation(
        "optimizer reads of master, m and v not counted",
        "perfmodel/physics/step.py",
        "OPTIMIZER_BYTES_PER_PARAM = 4 * FP32_BYTES + 4 * FP32_BYTES",
        "OPTIMIZER_BYTES_PER_PARAM = 1 * FP32_BYTES + 4 * FP32_BYTES",
    ),
    Mutation(
        "CP ring volume doubled",
        "perfmodel/physics/step.py",
        "return RingHops(send_recv(kv_bytes, links), send_recv(2 * kv_bytes, links))",
        "return RingHops(send_recv(2 * kv_bytes, links), send_recv(4 * kv_bytes, links))",
    ),
    Mutation(
        "DP communication fully overlapped",
        "perfmodel/physics/step.py",
        "sync_backward, pp_bubble / 2, eff.overlap_dp",
        "sync_backward, pp_bubble / 2, 1.0",
    ),
    Mutation(
        "recompute not priced",
        "perfmodel/physics/step.py",
        "    return where(selective, _selective_s(ctx, lt, tp), recomputed(full, lt.forward))",
        "    return 0.0 * where(selective, _selective_s(ctx, lt, tp), recomputed(full, lt.forward))",
    ),
    Mutation(
        "GEMM shape share off (tiles, occupancy, depth)",
        "perfmodel/physics/compute.py",
        "rate = gemm_rate * gemm_shape_share(op.m, op.n, op.k, eff, acc.sms.value)",
        "rate = gemm_rate",
    ),
    Mutation(
        "LM head forward GEMM dropped",
        "perfmodel/physics/workload.py",
        "        *_linear_forward(sh, recipe, *shape),\n",
        "",
    ),
    Mutation(
        "expert all-to-all halved (dispatch only)",
        "perfmodel/physics/moe.py",
        "forward = 2 * exchange + all_gather(expert_tp, etp_links)",
        "forward = exchange + all_gather(expert_tp, etp_links)",
    ),
    Mutation(
        "SwiGLU gate GEMM dropped",
        "perfmodel/inputs/models.py",
        "return 2 * self.ffn if self.gated_mlp else self.ffn",
        "return self.ffn",
    ),
    Mutation(
        "H100 FP8 peak doubled",
        "hardware_specs/accelerators/h100-sxm.toml",
        "fp8_tflops = { value = 1978.9,",
        "fp8_tflops = { value = 3957.8,",
    ),
    Mutation(
        "gradients reduced in FP32 bytes",
        "perfmodel/inputs/precision.py",
        "GRAD_BYTES = BF16_BYTES",
        "GRAD_BYTES = 2 * BF16_BYTES",
    ),
    Mutation(
        "pipeline warm-up sends not on the critical path",
        "perfmodel/physics/step.py",
        "pp_comm = where(pp > 1, 2 * (pp - 1) * p2p +",
        "pp_comm = where(pp > 1, 0 * (pp - 1) * p2p +",
    ),
    Mutation(
        "kernel launch overhead dropped",
        "perfmodel/physics/compute.py",
        "self.overhead_s = eff.kernel_overhead_us * 1e-6",
        "self.overhead_s = 0.0 * eff.kernel_overhead_us",
    ),
    Mutation(
        "TP reduce-scatter in FP8 bytes",
        "perfmodel/physics/step.py",
        "scatter = reduce_scatter(activation * BF16_BYTES, links)",
        "scatter = reduce_scatter(activation * BF16_BYTES / 2, links)",
    ),
    Mutation(
        "ZeRO-1 parameter all-gather dropped",
        "perfmodel/physics/step.py",
        "zero1 = bucketed_exposed(t.scatter, t.buckets, step_backward, w.overlap) + gather_first",
        "zero1 = bucketed_exposed(t.scatter, t.buckets, step_backward, w.overlap)",
    ),
    Mutation(
        "steady-state pipeline sends hidden",
        "perfmodel/physics/step.py",
        "+ (1 - hidden) * 2 * microbatches * vp * p2p, 0.0)",
        "+ 0 * (1 - hidden) * 2 * microbatches * vp * p2p, 0.0)",
    ),
    Mutation(
        "blocking pipeline sends hidden",
        "perfmodel/physics/step.py",
        "return ctx.efficiency.overlap_pp if ctx.recipe.pp_send_overlap else 0.0",
        "return ctx.efficiency.overlap_pp",
    ),
    Mutation(
        "attention FLOPs at the KV heads",
        "perfmodel/inputs/models.py",
        "return 2 * self.q_dim",
        "return 2 * self.kv_dim",
    ),
    Mutation(
        "optimizer step not sharded by ZeRO",
        "perfmodel/physics/step.py",
        "step_params = where(zero >= 1, trainable / shards, trainable)",
        "step_params = trainable",
    ),
    Mutation(
        "ZeRO-3 backward weight gather dropped",
        "perfmodel/physics/step.py",
        "t.unit_gathers + t.unit_scatters, t.units, w.mb_backward, w.overlap",
        "t.unit_scatters, t.units, w.mb_backward, w.overlap",
    ),
    Mutation(
        "pipeline sends at half the bytes",
        "perfmodel/physics/step.py",
        "p2p = send_recv(sh.tokens * md.hidden / tp * BF16_BYTES, pp_links)",
        "p2p = send_recv(sh.tokens * md.hidden / tp * BF16_BYTES / 2, pp_links)",
    ),
)


def copy_tree(target: Path) -> None:
    """The tracked files and the untracked ones git does not ignore (what a commit would hold), copied to `target`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def apply(tree: Path, mutation: Mutation) -> str:
    """Write the mutated file into `tree`; return its original text (to restore)."""
    path = tree / mutation.path
    text = path.read_text()
    found = text.count(mutation.old)
    if found != 1:
        sys.exit(f"mutation '{mutation.name}': {mutation.path} holds its old text {found} times, not once (stale?)")
    path.write_text(text.replace(mutation.old, mutation.new))
    return text


def failing_tests(tree: Path, tests: list[str], fast: bool, every_refit: bool) -> tuple[list[str], float]:
    """The `tests` that fail (or error) in `tree`, and the seconds they took."""
    with tempfile.TemporaryDirectory(prefix="perfmodel-mutation-") as scratch:
        env = os.environ | {"PYTHONPATH": str(tree), "PERFMODEL_CACHE_DIR": str(Path(scratch) / "cache")}
        env |= {"HYPOTHESIS_PROFILE": "ci", "PYTHONDONTWRITEBYTECODE": "1"}
        env |= {"PERFMODEL_GATE_EVERY_REFIT": "1" if every_refit else "0"}
        command = [sys.executable, "-m", "pytest", "-q", "-rfE", "--tb=no", "-p", "no:cacheprovider", *tests]
        if fast:
            command += ["-k", f"not {SLOW}"]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    failed = [line.split()[1] for line in done.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    if done.returncode not in (0, 1):  # 1: tests failed; anything else: pytest itself could not run them
        failed.append(f"(pytest exit {done.returncode}: {done.stdout.strip().splitlines()[-1:]})")
    return [name.removeprefix("tests/") for name in failed], seconds


def summary(failed: list[str]) -> str:
    """The failed tests by test function (parametrised cases counted), or SURVIVED."""
    counts: dict[str, int] = {}
    for name in failed:
        function = name.split("[")[0].replace(".py::", "::")
        counts[function] = counts.get(function, 0) + 1
    found = ", ".join(f"{f} (x{n})" if n > 1 else f for f, n in counts.items())
    return f"caught by {len(failed)}: {found}" if failed else "SURVIVED"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true", help=f"leave out the protocol refits ({SLOW})")
    parser.add_argument("--every-refit", action="store_true", help="refit generation and precision too")
    parser.add_argument("--only", action="append", help="only the mutations whose name contains this text (repeatable)")
    parser.add_argument("--tests", nargs="+", default=list(TESTS), help="test files or ids to run (default: TESTS)")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if args.only is None or any(o.lower() in m.name.lower() for o in args.only)]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="perfmodel-mutants-") as folder:
        tree = Path(folder)
        copy_tree(tree)
        for mutation in chosen:  # every mutation applies before any test runs
            (tree / mutation.path).write_text(apply(tree, mutation))
        failed, seconds = failing_tests(tree, args.tests, args.fast, args.every_refit)
        if failed:
            print(f"the unmutated tree fails {', '.join(failed)}: fix that first", file=sys.stderr)
            return 2
        print(f"unmutated: every test passes ({seconds:.0f} s)", flush=True)
        survivors = []
        for mutation in chosen:
            original = apply(tree, mutation)
            try:
                failed, seconds = failing_tests(tree, args.tests, args.fast, args.every_refit)
            finally:
                (tree / mutation.path).write_text(original)
            print(f"{mutation.name} ({seconds:.0f} s): {summary(failed)}", flush=True)
            if not failed:
                survivors.append(mutation.name)
    print(f"{len(chosen) - len(survivors)}/{len(chosen)} caught in {time.perf_counter() - start:.0f} s")
    return 1 if survivors else 0


if __name__ == "__main__":
    raise SystemExit(main())
