"""Write the training-log fixtures in the stacks' exact line formats (python tests/data/logs/write_fixtures.py).

megatron_bridge.log: Megatron-Bridge 0.3.1 megatron/bridge/training/utils/train_utils.py `training_log` (log_interval
10, log_throughput on), with start-up lines, a non-UTF-8 byte and a line cut short; megatron_lm.log: the same from
Megatron-LM's megatron/training/training.py `training_log` (megatron-core 0.17.1's sdist), whose date has
microseconds. torchtitan.log: torchtitan 0.2.0 torchtitan/components/metrics.py `MetricsProcessor.log` (colours
on), two ranks interleaved behind torchrun's `[rankN]:` prefix, with a cut line. nemo2.log: NeMo 2's
ProgressPrinter (nemo-toolkit 2.7.3). Each has a slow first interval
(warm-up) and one slow step (an outlier).
"""

# ruff: noqa: UP032 (the stack's own str.format calls, copied verbatim)
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
MEGATRON_MS = [13512.6, 6322.8, 6301.5, 6298.2, 6305.9, 6300.7, 6299.9, 9850.3, 6302.4, 6301.1]
TITAN_TPS = {1: 1200, 10: 8410, 20: 8452, 30: 8449, 40: 8461, 50: 8455, 60: 8450, 70: 3100, 80: 8458, 90: 8451}


def arguments(args: dict[str, object]) -> list[bytes]:
    """Megatron-LM's `_print_args("arguments", args)` as rank 0 prints it after validation (megatron/training/
    arguments.py L1631-1642 of megatron-core 0.17.1's sdist): one `  {arg} {dots} {value}` line per argument, sorted
    case-blind, between two rules."""
    str_list = ["  {} {} {}".format(arg, "." * (48 - len(arg)), value) for arg, value in args.items()]
    lines = ["------------------------ arguments ------------------------"]
    lines += sorted(str_list, key=lambda x: x.lower())
    lines.append("-------------------- end of arguments ---------------------")
    return [line.encode() for line in lines]


MEMORY_LM = (
    "[Rank 0] (after 10 iterations) memory (MB) | allocated: {:.2f} | max allocated: {:.2f} | reserved: {:.2f} | "
    "max reserved: {:.2f}".format(41234.56, 60123.45, 61000.00, 62976.00)
)
"""Megatron-LM's report_memory after the first logged interval (megatron/training/utils.py L281-293, megatron-core
0.17.1): MiB; the peak reserved 62,976 MiB = 61.5 GiB."""
MEMORY_BRIDGE = (
    "[Rank 0] (after 10 iterations) memory (GB) | current_allocated_mem: 43.237 | peak_allocated_mem: 63.044 | "
    "current_reserved_mem: 63.963 | peak_reserved_mem: 66.035 | alloc_retries: 0"
)
"""Megatron-Bridge 0.3.1's memory report (training/utils/train_utils.py L736-745, report_memory's default keys, GB of
1e9 bytes at 5 significant digits): the peak reserved 66.035e9 B = 61.5 GiB."""


def megatron(
    date: str, header: list[bytes] | None = None, gbs: int = 64, scale: float = 1.0, memory: str = ""
) -> bytes:
    """The iteration lines (of global batch `gbs`, MEGATRON_MS x `scale`) after `header` (a Megatron-LM arguments
    block, say), with a `memory` report after the first."""
    lines = [
        *(header or []),
        b"[2026-03-02 10:00:00] building GPT model ...",
        b"> number of parameters on (tensor, pipeline) model parallel rank (0, 0): 8030261248",
        b"WARNING: a non-UTF-8 byte \xff follows",
    ]
    consumed = 0
    for k, elapsed_ms in enumerate(ms * scale for ms in MEGATRON_MS):
        consumed += 10 * gbs
        s = f" [{date.format(k)}]"
        s += " iteration {:8d}/{:8d} |".format(10 * (k + 1), 100)
        s += " consumed samples: {:12d} |".format(consumed)
        s += " elapsed time per iteration (ms): {:.1f} |".format(elapsed_ms)
        s += f" throughput per GPU (TFLOP/s/GPU): {431.2:.1f} |"
        s += f" learning rate: {3e-4:.6E} |"
        s += f" global batch size: {gbs:5d} |"
        s += " {}: {:.6E} |".format("lm loss", 2.5 - k * 0.01)
        s += f" loss scale: {1.0:.1f} |"
        s += f" grad norm: {1.234:.3f} |"
        s += " number of skipped iterations: {:3d} |".format(0)
        s += " number of nan iterations: {:3d} |".format(0)
        lines.append(s.encode())
        if k == 0 and memory:
            lines.append(memory.encode())
        if k == 4:
            lines.append(s[:70].encode())  # cut short, as a killed writer leaves it
    return b"\n".join(lines) + b"\n"


def nemo(gbs: int = 64) -> bytes:
    """NeMo 2's ProgressPrinter lines (nemo-toolkit 2.7.3 nemo/lightning/pytorch/callbacks/progress_printer.py
    `on_train_batch_end` and `format_string`: an integral float printed as an int, the others `{:.4}`), the metrics
    the recipes log (TimingCallback's `train_step_timing in s`, the data sampler's `global_batch_size`), log interval
    10, MEGATRON_MS in seconds; a validation line and a line cut short among them."""
    lines = [b"[NeMo I 2026-03-02 10:00:00 nemo_logging:393] Experiments will be logged at /results/llama"]
    total = 100
    for k, elapsed_ms in enumerate(MEGATRON_MS):
        n = 10 * (k + 1)
        metrics = {"lr": 3e-4, "global_batch_size": float(gbs), "global_step": float(n - 1),
                   "reduced_train_loss": 2.5 - k * 0.01, "train_step_timing in s": elapsed_ms / 1000,
                   "consumed_samples": float(n * gbs)}  # fmt: skip
        log_string = "Training" + f" epoch {0}, iteration {n - 1}/{total - 1}"
        for metric, val in metrics.items():
            log_string += f" | {metric}: {int(val)}" if val.is_integer() else f" | {metric}: {val:.4}"
        lines.append(log_string.encode())
        if k == 4:
            lines += [b"Validation: iteration 1/10", log_string[:60].encode()]
    return b"\n".join(lines) + b"\n"


def torchtitan() -> bytes:
    red, green, orange, turquoise, blue, cyan, magenta, reset = (f"\033[{c}m" for c in (31, 32, 33, 36, 34, 36, 35, 39))
    out = ["[rank0]:[titan] 2026-03-02 10:00:00,000 - root - INFO - Training starts at step 1"]
    for step, tps_rank0 in TITAN_TPS.items():
        for rank in (0, 1):
            tps = tps_rank0 - 3 * rank
            tflops = tps * 6 * 8.03e9 / 1e12
            line = (
                f"{red}step: {step:2}  {green}loss: {2.3456:7.4f}  {orange}grad_norm: {0.9876:7.4f}  "
                f"{turquoise}memory: {61.23:5.2f}GiB({64.45:.2f}%)  {blue}tps: {round(tps):,}  "
                f"{cyan}tflops: {tflops:,.2f}  {magenta}mfu: {tflops / 989 * 100:.2f}%{reset}"
            )
            out.append(f"[rank{rank}]:[titan] 2026-03-02 10:00:{step % 60:02d},000 - root - INFO - {line}")
    out.append(f"[rank1]:[titan] 2026-03-02 10:01:40,000 - root - INFO - {red}step: 100  {green}loss:  2.34")
    return ("\n".join(out) + "\n").encode()


if __name__ == "__main__":
    (HERE / "megatron_bridge.log").write_bytes(megatron("2026-03-02 10:{:02d}:00", memory=MEMORY_BRIDGE))
    (HERE / "megatron_lm.log").write_bytes(megatron("2026-03-02 10:{:02d}:00.123456", memory=MEMORY_LM))
    (HERE / "torchtitan.log").write_bytes(torchtitan())
    (HERE / "nemo2.log").write_bytes(nemo())
