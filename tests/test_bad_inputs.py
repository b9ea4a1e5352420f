"""The bad-input corpus: every command refuses malformed, mistyped, out-of-range or absurd input the same way.

Exit code 2, one line on stderr that names the file, field or flag and what is allowed, no traceback, nothing on
stdout and no file written. Absurd but valid requests (a million GPUs, a billion-sequence batch) either work or are
refused, within seconds.

Each case is a row: an id, the command line, the text its error line must contain, and the files it needs (written
to the test's folder first; `{tmp}` in arguments and messages is that folder). Add a row to extend the corpus.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import json_numbers, run_cli

TIME_LIMIT_S = 10.0
"""Every case, refused or answered, within this (they take milliseconds to a few seconds)."""


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    message: str
    files: dict[str, str | bytes] = field(default_factory=dict)
    special: dict[str, str] = field(default_factory=dict)
    """Special files made in the test's folder: name -> 'fifo', 'symlink:TARGET' or 'hardlink:TARGET'."""


def layout(gpus: int = 8, model: str | None = "llama3.1-8b", **dims: object) -> tuple[str, ...]:
    """`predict` of Llama 3.1 8B (or the scenario file's model) on H100s with every layout dimension fixed (TP1 PP1
    CP1 VP1 MBS1 GBS64, no recompute, ZeRO-1) except those given, so that the layout is checked as given."""
    fixed = {"tp": 1, "pp": 1, "cp": 1, "vp": 1, "mbs": 1, "gbs": 64, "recompute": "none", "zero": 1} | dims
    flags = ["predict", *(["--model", model] if model else []), "--gpu", "h100-sxm", "--gpus", str(gpus)]
    for name, value in fixed.items():
        flags += [f"--{name.replace('_', '-')}", str(value)]
    return tuple(flags)


def mllog(*overrides: str, gbs: object = 8, status: str = "success") -> str:
    """A small MLPerf result log of the Llama 2 70B LoRA benchmark; `overrides` replace lines by key."""
    start = 1_700_000_000_000

    def line(key: str, value: object, ms: float, metadata: object = None) -> str:
        record = {"namespace": "", "time_ms": ms, "event_type": "POINT_IN_TIME", "key": key, "value": value,
                  "metadata": {} if metadata is None else metadata}  # fmt: skip
        return ":::MLLOG " + json.dumps(record)

    lines = {
        "submission_benchmark": line("submission_benchmark", "llama2_70b_lora", start - 10),
        "global_batch_size": line("global_batch_size", gbs, start - 5),
        "run_start": line("run_start", None, start),
        "eval_accuracy": line("eval_accuracy", 0.93, start + 600_000, {"samples_count": 3072}),
        "run_stop": line("run_stop", None, start + 1_200_000, {"status": status}),
    }
    for text in overrides:
        key, _, replacement = text.partition("=")
        lines[key] = replacement
    return "\n".join(line for line in lines.values() if line) + "\n"


CSV_HEADER = "id,model,gpu,n_gpus,precision,metric,measured"
GOOD_ROW = "r1,llama3.1-8b,h100-sxm,8,bf16,step_time_s,1.2"
LOG_FLAGS = ("--gpu", "h100-sxm", "--gpus", "8", "--tp", "4", "--pp", "1", "--cp", "1", "--round", "v5.0")
PREDICTION = {
    "model": "llama3.1-8b", "accelerator": "h100-sxm", "precision": "bf16", "n_gpus": 8, "tokens_per_s": 8.0e4,
    "tokens_per_s_per_gpu": 1.0e4, "time_to_train_days": 2.0,
    "breakdown": dict.fromkeys(("compute_s", "tp_comm_exposed_s", "cp_comm_exposed_s", "pp_bubble_s",
                                "pp_comm_exposed_s", "dp_comm_exposed_s", "optimizer_s", "other_s"), 0.1),
}  # fmt: skip
CALIBRATION = '{"format": "perfmodel-calibration/1", "parameters": %s}'


def toml(text: str) -> dict[str, str | bytes]:
    return {"s.toml": text}


S = "{tmp}/s.toml"

CASES: list[Case] = [
    # ---- scenario files: syntax, typos, types, ranges, ids -------------------------------------------------------
    Case("toml-syntax", ("predict", S), "{tmp}/s.toml: not valid TOML", toml("model = [1, 2\n")),
    Case("toml-unquoted-suffix", ("predict", S),  # README's '"15T" too' written without the quotes
         "{tmp}/s.toml: not valid TOML: Expected newline or end of document after a statement (at line 1, column 12); "
         "tokens = 15T: TOML takes a number with a suffix as text only in quotes (tokens = \"15T\")",
         toml("tokens = 15T  # the README's budget\n")),
    Case("toml-unquoted-word", ("predict", S), "(at line 2, column 9); model = llama3.1-8b: TOML takes text in quotes: "
         "model = \"llama3.1-8b\"", toml("gpu = 'h100-sxm'\nmodel = llama3.1-8b\n")),
    Case("toml-capital-true", ("predict", S),
         "fp8_attention = True: TOML's true and false are lower case: fp8_attention = true",
         toml("fp8_attention = True\n")),
    Case("toml-binary", ("predict", S), "{tmp}/s.toml: cannot read scenario file", {"s.toml": b"\xff\xfe\x00\x81"}),
    Case("scenario-missing", ("predict", "{tmp}/none.toml"), "{tmp}/none.toml: no such scenario file"),
    Case("scenario-is-folder", ("predict", "{tmp}"), "File '{tmp}' is a directory"),
    Case("scenario-empty", ("predict", S),  # an empty file, or one without gpu or system: which file lacks it
         "{tmp}/s.toml: no hardware given: set gpu or system in the file, or pass --gpu ID or --system ID", toml("")),
    Case("typo-top-level", ("predict", S),
         "{tmp}/s.toml: field 'modle': unknown key (did you mean 'model'?); allowed: name",
         toml("modle = 'llama3.1-8b'\n")),
    Case("typo-parallelism", ("predict", S),
         "{tmp}/s.toml: field 'parallelism.tpp': unknown key (did you mean 'tp'?); allowed: tp",
         toml("gpu = 'h100-sxm'\n[parallelism]\ntpp = 2\n")),
    Case("typo-model-table", ("predict", S),
         "field 'model.hiden': unknown key (did you mean 'hidden'?); allowed: base, id",
         toml("gpu = 'h100-sxm'\n[model]\nbase = 'llama3.1-8b'\nhiden = 4096\n")),
    Case("typo-cost", ("predict", S),
         "field 'cost.usd_per_hour': unknown key (did you mean 'usd_per_gpu_hour'?); allowed: usd_per_gpu_hour",
         toml("gpu = 'h100-sxm'\n[cost]\nusd_per_hour = 2\n")),
    Case("string-for-int", ("predict", S), "field 'n_gpus': must be a whole number, unquoted and without a unit",
         toml("gpu = 'h100-sxm'\nn_gpus = 'eight'\n")),
    Case("bool-for-int", ("predict", S), "field 'parallelism.tp': Input should be a valid integer (got True)",
         toml("gpu = 'h100-sxm'\n[parallelism]\ntp = true\n")),
    Case("bool-for-zero", ("predict", S), "field 'parallelism.zero': must be 0, 1, 2 or 3",
         toml("gpu = 'h100-sxm'\n[parallelism]\nzero = true\n")),
    Case("float-for-int", ("predict", S), "field 'n_gpus': Input should be a valid integer (got 8.5)",
         toml("gpu = 'h100-sxm'\nn_gpus = 8.5\n")),
    Case("number-for-model", ("predict", S), "field 'model': must be a string or a table (got 5)", toml("model = 5\n")),
    Case("number-for-table", ("predict", S), "field 'parallelism': must be a table (got 3)", toml("parallelism = 3\n")),
    Case("negative-gpus", ("predict", S), "field 'n_gpus': Input should be greater than or equal to 1 (got -8)",
         toml("gpu = 'h100-sxm'\nn_gpus = -8\n")),
    Case("huge-gpus-in-file", ("predict", S), "field 'n_gpus': Input should be a valid integer (got 1e+30)",
         toml("gpu = 'h100-sxm'\nn_gpus = 1e30\n")),
    Case("nan-tokens", ("predict", S), "field 'tokens': must be a finite number of tokens", toml("tokens = nan\n")),
    Case("inf-tokens", ("predict", S), "field 'tokens': must be a finite number of tokens", toml("tokens = inf\n")),
    Case("zero-tokens", ("predict", S), "field 'tokens': Input should be greater than 0", toml("tokens = 0\n")),
    Case("nan-price", ("predict", S), "field 'cost.usd_per_gpu_hour': Input should be a finite number",
         toml("[cost]\nusd_per_gpu_hour = nan\n")),
    Case("pue-below-one", ("predict", S), "field 'cost.pue': Input should be greater than or equal to 1",
         toml("[cost]\npue = 0.5\n")),
    Case("unknown-recompute-in-file", ("predict", S), "field 'parallelism.recompute': must be 'none', 'selective'",
         toml("[parallelism]\nrecompute = 'some'\n")),
    Case("short-sequence", ("predict", S), "field 'parallelism.seq_len': Input should be greater than or equal to 16",
         toml("[parallelism]\nseq_len = 8\n")),
    Case("unknown-precision", ("predict", S),
         "field 'precision': must be 'bf16', 'fp8', 'mxfp8', 'nvfp4' or 'mxfp4' (got 'fp6')",
         toml("precision = 'fp6'\n")),
    Case("precision-misspelt", ("predict", S),  # as `--gpu H100-SXM` is answered: the choice it misspells
         "field 'precision': must be 'bf16', 'fp8', 'mxfp8', 'nvfp4' or 'mxfp4' (did you mean 'fp8'?)",
         toml("precision = 'fp_8'\n")),
    Case("model-file-mlp-upper-case", ("predict", "--model", "{tmp}/m.toml", "--gpu", "h100-sxm"),
         "{tmp}/m.toml: field 'mlp': must be 'swiglu', 'geglu', 'gelu' or 'squared_relu' (did you mean 'swiglu'?)",
         {"m.toml": "base = 'llama3.1-8b'\nmlp = 'SwiGLU'\n"}),
    Case("unknown-model-in-file", ("predict", S), "{tmp}/s.toml: field 'model': unknown model 'gpt5'; valid:",
         toml("model = 'gpt5'\n")),
    Case("unknown-gpu-in-file", ("predict", S),
         "{tmp}/s.toml: field 'gpu': unknown GPU 'h300'; valid: a100-40gb, a100-sxm-80gb",
         toml("gpu = 'h300'\n")),
    Case("unknown-system-in-file", ("predict", S), "{tmp}/s.toml: field 'system': unknown system 'dgx-z'; valid:",
         toml("system = 'dgx-z'\n")),
    Case("model-shapes-disagree", ("predict", S), "s.toml: field 'model.heads': hidden (4096) must be a multiple",
         toml("gpu = 'h100-sxm'\n[model]\nbase = 'llama3.1-8b'\nheads = 7\n")),
    Case("unknown-benchmark-in-file", ("predict", S), "{tmp}/s.toml: unknown benchmark 'mlperf-foo'; valid:",
         toml("gpu = 'h100-sxm'\nbenchmark = 'mlperf-foo'\n")),
    Case("no-hardware", ("predict", S), "{tmp}/s.toml: no hardware given: set gpu or system in the file, or pass --gpu",
         toml("model = 'llama3.1-8b'\n")),
    Case("no-hardware-with-count", ("predict", S, "--gpus", "16"),  # was the hardware lookup's, naming no file
         "{tmp}/s.toml: no hardware given: set gpu or system in the file, or pass --gpu", toml("n_gpus = 8\n")),
    Case("no-hardware-compare", ("compare", S),  # --gpu gives compare's and plan's hardware: without one, the file's
         "{tmp}/s.toml: no hardware given: set gpu or system in the file, or pass --gpu", toml("n_gpus = 8\n")),
    Case("no-hardware-plan", ("plan", S, "--tokens", "1e12", "--deadline", "30d"),
         "{tmp}/s.toml: no hardware given: set gpu or system in the file, or pass --gpu", toml("n_gpus = 8\n")),
    # ---- flags: types, ranges, ids --------------------------------------------------------------------------------
    Case("unknown-model-flag", ("predict", "--model", "llama9"), "--model: unknown model 'llama9'; valid: llama3.1-8b"),
    Case("unknown-gpu-flag", ("predict", "--gpu", "h300"), "--gpu: unknown GPU 'h300'; valid:"),
    Case("unknown-system-flag", ("predict", "--system", "dgx-z"), "--system: unknown system 'dgx-z'; valid:"),
    Case("system-as-gpu", ("predict", "--gpu", "dgx-h100", "--system", "dgx-h100"),  # alone, it is the system
         "--gpu: unknown GPU 'dgx-h100' ('dgx-h100' is a system, not a GPU); valid:"),
    Case("hardware-file-typo", ("predict", "--hardware", "{tmp}/ours.toml", "--system", "ours"),  # README example
         "{tmp}/ours.toml: field 'fabric.oversubscripton': unknown key (did you mean 'oversubscription'?); allowed: ",
         {"ours.toml": "id = 'ours'\nbase = 'dgx-h100'\n[fabric]\noversubscripton = { value = 2.0, source = 'x' }\n"}),
    Case("hardware-file-no-base", ("predict", "--hardware", "{tmp}/ours.toml", "--system", "ours"),  # base left out
         "{tmp}/ours.toml: field 'name': Field required; a file without base is an accelerator (with accelerator = "
         "ID, a system) given in full",
         {"ours.toml": "id = 'ours'\nnics_per_gpu = { value = 0.5, source = 'x' }\n"}),
    Case("hardware-file-as-scenario", ("predict", "{tmp}/ours.toml"),  # README's hardware example, without --hardware
         "{tmp}/ours.toml: field 'id': unknown key (this looks like a hardware file: pass it with --hardware FILE, and "
         "its id with --gpu or --system); allowed: name",
         {"ours.toml": "id = 'ours'\nbase = 'dgx-h100'\nnics_per_gpu = { value = 0.5, source = 'x' }\n"}),
    Case("scenario-as-hardware-file", ("predict", "--hardware", S),
         "{tmp}/s.toml: field 'id' is required: the name commands use for this entry (--gpu, --system) (this looks "
         "like a scenario file: give it as the command's SCENARIO argument)", toml("model = 'llama3.1-8b'\n")),
    Case("scenario-as-model-file", ("predict", "--model", S),
         "{tmp}/s.toml: field 'gpu': unknown key (this looks like a scenario file: give it as the command's SCENARIO "
         "argument); allowed: base", toml("gpu = 'h100-sxm'\n")),
    Case("gpu-as-system", ("predict", "--system", "h100-sxm"),
         "--system: unknown system 'h100-sxm' ('h100-sxm' is a GPU, not a system); valid:"),
    Case("gpu-with-precision", ("predict", "--gpu", "gb300:nvfp4"),  # compare's and plan's ID:PRECISION
         "--gpu: unknown GPU 'gb300:nvfp4' (the precision is set on its own: 'gb300' and precision 'nvfp4'); valid:"),
    Case("gpu-id-upper-case", ("predict", "--gpu", "H100-SXM"), "unknown GPU 'H100-SXM' (did you mean 'h100-sxm'?)"),
    Case("gpu-id-cut-short", ("predict", "--gpu", "h100"),
         "unknown GPU 'h100' (did you mean 'h100-grand-teton' or 'h100-sxm'?); valid:"),
    Case("model-id-misspelt", ("predict", "--model", "llama-3.1-405b"),
         "--model: unknown model 'llama-3.1-405b' (did you mean 'llama3.1-405b'?); valid:"),
    Case("gpu-system-mismatch", ("predict", "--gpu", "h100-sxm", "--system", "gb200-nvl72"),
         "--gpu: gpu h100-sxm does not match system gb200-nvl72, which has gb200 GPUs"),
    Case("unsupported-precision", ("predict", "--precision", "mxfp8"),
         "--precision: h100-sxm has no tensor-core support for mxfp8; supported: bf16, fp8; pass --precision bf16"),
    Case("default-precision-unsupported", ("predict", "--gpu", "a100-sxm-80gb"),  # the default scenario's FP8
         "a100-sxm-80gb has no tensor-core support for fp8 (the default precision); supported: bf16; pass --precision "
         "bf16"),
    Case("file-precision-unsupported", ("predict", S, "--gpu", "a100-sxm-80gb"),
         "{tmp}/s.toml: field 'precision': a100-sxm-80gb has no tensor-core support for fp8; supported: bf16; pass "
         "--precision bf16", toml("model = 'llama3.1-8b'\nprecision = 'fp8'\n")),
    Case("invalid-precision-flag", ("predict", "--precision", "fp16"), "Invalid value for '--precision': 'fp16'"),
    Case("unknown-flag", ("predict", "--tpp", "2"), "No such option '--tpp'. (Did you mean one of: '--etp', '--pp'"),
    Case("zero-degree", ("predict", "--tp", "0"), "Invalid value for '--tp': 0 is not in the range x>=1"),
    Case("ten-million-gpus", ("predict", "--gpus", "10000000"), "'--gpus': 10000000 is not in the range 1<=x<=1000000"),
    Case("fractional-gpus", ("predict", "--gpus", "1.5"), "'--gpus': '1.5' is not a whole number of GPUs"),
    Case("fractional-degree", ("predict", "--pp", "2.0"), "'--pp': '2.0' is not a whole number of stages"),
    Case("fractional-batch", ("predict", "--gbs", "1e3"), "'--gbs': '1e3' is not a whole number of sequences"),
    Case("suffixed-seq-len", ("predict", "--seq-len", "8k"), "'--seq-len': '8k' is not a whole number of tokens: a "
         "suffix is read only where a flag takes a count (--tokens 15T); write it in digits (--seq-len 8192 or 8000)"),
    Case("tokens-split-by-a-space", ("predict", "--tokens", "15", "T"),  # read 'T: no such scenario file'
         "'T' is a count's suffix, not a scenario file: a count takes no space (--tokens 15T, not --tokens 15 T)"),
    Case("budget-split-by-a-space", ("plan", "--deadline", "30d", "--budget", "$40", "M"),
         "a count takes no space (--budget 40M, not --budget 40 M)"),
    Case("fractional-max-gpus", ("plan", "--max-gpus", "1.5"), "'--max-gpus': '1.5' is not a whole number of GPUs"),
    Case("separated-max-gpus", ("plan", "--max-gpus", "1,024"),  # as the tables print counts
         "'--max-gpus': '1,024' is not a whole number of GPUs: write it in digits (--max-gpus 1024)"),
    Case("fractional-top", ("search", "--top", "two"), "'--top': 'two' is not a whole number of layouts"),
    Case("tokens-1e20", ("predict", "--tokens", "1e20"), "--tokens: at most 1e+18 tokens"),
    Case("tokens-inf", ("predict", "--tokens", "inf"), "'--tokens': 'inf' must be a positive finite number"),
    Case("tokens-negative", ("predict", "--tokens", "-5"), "'--tokens': '-5' must be a positive finite number"),
    Case("tokens-garbage", ("predict", "--tokens", "lots"), "'--tokens': 'lots' is not a number (examples: 15T"),
    Case("price-nan", ("predict", "--usd-per-gpu-hour", "nan"), "'--usd-per-gpu-hour': 'nan' must be a positive"),
    Case("price-absurd", ("predict", "--usd-per-gpu-hour", "1e9"), "--usd-per-gpu-hour: Input should be less than"),
    Case("pue-flag", ("predict", "--pue", "0.5"), "--pue: Input should be greater than or equal to 1 (got 0.5)"),
    Case("goodput-mode", ("predict", "--goodput", "sometimes"), "Invalid value for '--goodput': 'sometimes'"),
    Case("failure-scale-zero", ("predict", "--failure-scale", "0"), "'--failure-scale': '0' must be a positive"),
    Case("failure-scale-absurd", ("predict", "--failure-scale", "1e6"), "--failure-scale: Input should be less than"),
    Case("restart-negative", ("predict", "--restart-s", "-1"), "Invalid value for '--restart-s': -1.0 is not in"),
    Case("plan-deadline-unit", ("plan", "--deadline", "30x"),
         "Invalid value for '--deadline': '30x': the unit must be h, d or w, not 'x'"),
    Case("plan-deadline-word", ("plan", "--deadline", "60days"), "'60days': the unit must be h, d or w, not 'days'"),
    Case("plan-deadline-no-unit", ("plan", "--deadline", "30"), "'--deadline': '30' needs a unit: h, d or w"),
    Case("plan-deadline-negative", ("plan", "--deadline=-5d"), "'--deadline': '-5d' must be a positive finite"),
    Case("plan-deadline-garbage", ("plan", "--deadline", "soond"), "'--deadline': 'soond' is not a number of hours"),
    Case("plan-confidence-garbage", ("plan", "--deadline", "60d", "--confidence", "high"),
         "'--confidence': 'high' is not a probability (examples: 0.9, 90%)"),
    Case("plan-confidence-percent-above", ("plan", "--deadline", "60d", "--confidence", "150%"),
         "--confidence 1.5: allowed a probability strictly between 0 and 1"),
    Case("plan-budget-negative", ("plan", "--budget=-4e7"), "'--budget': '-4e7' must be a positive finite number"),
    Case("plan-budget-below-one-step", ("plan", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--budget", "0.01"),
         "--budget 0.01: below the cost of one training step ($"),
    Case("plan-no-goal", ("plan", "--gpu", "h100-sxm"), "plan needs a goal: --deadline (e.g. 30d) and/or --budget"),
    Case("plan-max-gpus-below-a-rack", ("plan", "--gpu", "gb200:fp8", "--deadline", "30d", "--max-gpus", "8"),
         "--max-gpus 8: below one unit of gb200-nvl72 (64 GPUs)"),
    Case("plan-unknown-precision", ("plan", "--gpu", "h100-sxm:fp9", "--deadline", "30d"),
         "--gpu h100-sxm:fp9: unknown precision 'fp9'"),
    Case("export-plan-no-goal", ("export", "plan", "--out", "{tmp}/p.csv"), "plan needs a goal: --deadline"),
    Case("buy-and-rent", ("predict", "--buy", "--usd-per-gpu-hour", "2"), "buying (--buy, mode = 'buy') and a rental"),
    Case("utilisation-above-one", ("predict", "--buy", "--utilisation", "1.5"), "--utilisation: Input should be less"),
    Case("usd-per-system-zero", ("predict", "--buy", "--usd-per-system", "0"), "'--usd-per-system': '0' must be a"),
    Case("failure-class-typo", ("predict", S), "field 'goodput.failures_per_million_gpu_hours': unknown failure "
         "class 'gpux'; valid: gpu, host", toml("[goodput.failures_per_million_gpu_hours]\ngpux = 1.0\n")),
    Case("unknown-benchmark", ("predict", "--benchmark", "mlperf-foo"), "--benchmark: unknown benchmark 'mlperf-foo'"),
    # a flag the file's benchmark excludes is named, not the file (which gave neither tokens nor a model)
    Case("tokens-beside-a-files-benchmark", ("predict", S, "--tokens", "15.6T"),
         "--tokens: tokens and benchmark exclude", toml("gpu = 'gb300'\nbenchmark = 'mlperf-llama31-405b'\n")),
    Case("model-beside-a-files-benchmark", ("predict", S, "--model", "llama3.1-70b"),
         "--model: model: mlperf-llama31-405b trains", toml("gpu = 'gb300'\nbenchmark = 'mlperf-llama31-405b'\n")),
    Case("benchmark-misspelt", ("predict", "--benchmark", "mlperf-llama3-405b"),
         "--benchmark: unknown benchmark 'mlperf-llama3-405b' (did you mean 'mlperf-llama31-405b'?); valid: "),
    Case("round-without-v", ("predict", "--benchmark", "mlperf-llama31-405b@5.1"),
         "--benchmark: mlperf-llama31-405b has no round '5.1' (did you mean 'v5.1'?); valid: v5.0"),
    Case("unknown-round", ("predict", "--benchmark", "mlperf-llama31-405b@v9"),
         "--benchmark: mlperf-llama31-405b has no round 'v9'; valid: v5.0"),
    Case("benchmark-and-tokens", ("predict", "--benchmark", "mlperf-llama31-8b", "--tokens", "1T"),
         "tokens and benchmark exclude each other"),
    Case("benchmark-other-model", ("predict", "--benchmark", "mlperf-llama31-8b", "--model", "llama3.1-70b"),
         "model: mlperf-llama31-8b trains llama3.1-8b; leave the model out"),
    Case("benchmark-gbs-above-rules", ("predict", "--benchmark", "mlperf-llama31-405b@v5.0", "--gpu", "h100-sxm",
                                       "--gpus", "512", "--gbs", "10240"), "GBS 10240 is above the rules' maximum"),
    # ---- layouts breaking each validity rule (perfmodel/physics/parallel.py RULES) --------------------------------
    Case("rule-model-parallel-divides-gpus", layout(tp=3, gpus=8), "TP 3 x PP 1 x CP 1 = 3 does not divide the 8 GPUs"),
    Case("rule-product-equals-gpus", layout(dp=3), "TP x PP x CP x DP = 3 must equal the 8 GPUs"),
    Case("rule-heads", layout(tp=3, gpus=3, gbs=3), "TP 3 must divide the 32 attention heads"),
    Case("rule-kv-heads", (*layout(tp=8, model=None), S), "TP 8 must divide the 12 KV heads (query groups) or be a "
         "multiple of them", toml("[model]\nbase = 'llama3.1-8b'\nheads = 48\nkv_heads = 12\nhead_size = 128\n")),
    Case("rule-ffn", (*layout(tp=2, model=None), S), "TP 2 must divide the FFN width 14335",
         toml("[model]\nbase = 'llama3.1-8b'\nffn = 14335\n")),
    Case("rule-sequence", layout(tp=4, seq_len=8190), "TP 4 must divide the sequence length 8190"),
    Case("rule-context-chunks", layout(cp=8, seq_len=8200), "CP 8 needs the sequence length 8200 divisible by 2 x"),
    Case("sequence-flag-against-default-tp", ("predict", "--seq-len", "8191"),  # the default scenario's TP 4
         "error: --seq-len: invalid layout TP4 PP8 VP5 CP1 DP32, MBS 1, GBS 1024, seq 8191"),
    Case("rule-stages", layout(pp=8, vp=5), "PP 8 x VP 5 = 40 stages exceed the 32 layers"),
    Case("rule-interleaving", layout(vp=2), "VP 2 (interleaving) needs PP > 1"),
    Case("rule-interleaving-micro-batches", layout(pp=4, vp=2, dp=2, gbs=6, mbs=1),
         "VP 2 (interleaving) needs at least PP 4 micro-batches per step; GBS 6 / (MBS 1 x DP 2) gives 3"),
    Case("rule-batch", layout(gbs=60, mbs=8), "GBS 60 must be divisible by MBS 8 x DP 8 = 64"),
    Case("rule-experts", layout(ep=8), "EP 8 needs a mixture-of-experts model; llama3.1-8b is dense"),
    Case("rule-ep-divides-experts", layout(model="qwen3-30b-a3b", gpus=48, dp=48, ep=3, gbs=48),
         "--ep: invalid layout TP1 PP1 VP1 CP1 DP48 EP3, MBS 1, GBS 48, seq 8192, recompute none, ZeRO-1: EP 3 must "
         "divide the 128 experts of qwen3-30b-a3b; on 48 GPUs: EP 1, 2, 4, 8 or 16"),
    Case("rule-fsdp-with-pp", layout(pp=2, zero=3), "ZeRO-3/FSDP is not combined with pipeline parallelism (PP 2)"),
    Case("rule-recompute-mode", layout(recompute="some"), "Invalid value for '--recompute': 'some'"),
    Case("buy-and-rental-price", ("predict", "--buy", "--usd-per-gpu-hour", "2"),
         "error: --usd-per-gpu-hour, --buy: buying (--buy, mode = 'buy') and a rental price"),
    Case("partial-recompute-not-full", layout(recompute="selective", recompute_layers=3),
         "error: --recompute, --recompute-layers: recompute_layers needs recompute 'full'"),
    Case("rule-zero-stage", layout(zero=4), "Invalid value for '--zero': 4 is not in the range 0<=x<=3"),
    Case("searched-pp-against-count", ("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8",
                                       "--pp", "3"),  # no degree searched around it divides 8: the flag is named
         "error: --pp: TP 1 x PP 3 x CP 1 = 3 does not divide the 8 GPUs"),
    Case("searched-tp-above-count", ("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8",
                                     "--tp", "16"), "error: --tp: TP 16 x PP 1 x CP 1 = 16 does not divide the 8 GPUs"),
    Case("searched-mbs-under-gbs-and-dp", ("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "64",
                                          "--gbs", "12", "--dp", "8"),  # no MBS searched makes MBS x DP divide 12
         "error: --gbs: GBS 12 must be divisible by MBS 1 x DP 8 = 8"),
    Case("searched-tp-against-heads", ("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8",
                                       "--tp", "3"), "error: --tp: TP 3 must divide the 32 attention heads; TP 3"),
    Case("searched-tp-in-file", ("predict", S), "{tmp}/s.toml: field 'parallelism.tp': TP 64 must divide the 32 "
         "attention heads", toml("model = 'llama3.1-8b'\ngpu = 'h100-sxm'\nn_gpus = 64\n[parallelism]\ntp = 64\n")),
    Case("search-tp-in-file", ("search", S, "--gpus", "64,128"), "{tmp}/s.toml: field 'parallelism.tp': TP 64 must "
         "divide the 32 attention heads", toml("model = 'llama3.1-8b'\ngpu = 'h100-sxm'\n[parallelism]\ntp = 64\n")),
    Case("no-layout-fits", ("predict", "--model", "llama3.1-405b", "--gpu", "h100-sxm", "--gpus", "8", "--gbs", "8"),
         "no layout fits in memory: of"),
    Case("only-layout-does-not-fit", ("predict", "--model", "llama3.1-405b", "--gpu", "h100-sxm", "--gpus", "8",
                                      "--precision", "bf16", "--tp", "8", "--pp", "1", "--mbs", "1",  # CP searched
                                      "--gbs", "64", "--recompute", "none", "--zero", "1"),
         "no layout fits in memory: the only valid layout needs "),
    # ---- calibration files --------------------------------------------------------------------------------------
    Case("calibration-missing", ("predict", "--calibration", "{tmp}/c.json"), "{tmp}/c.json: no such calibration"),
    Case("calibration-missing-in-file", ("predict", S),  # the scenario names it: its field, then the file's path
         "{tmp}/s.toml: field 'calibration': {tmp}/c.json: no such calibration file",
         toml("gpu = 'h100-sxm'\ncalibration = 'c.json'\n")),
    Case("vintage-after-calibration", ("predict", "--vintage", "2099-01"),  # the flag that set it, before predicting
         "--vintage: vintage 2099-01: after the newest release this calibration fitted ("),
    Case("vintage-after-calibration-in-file", ("predict", S), "{tmp}/s.toml: vintage 2099-01: after the newest release",
         toml("gpu = 'h100-sxm'\nvintage = '2099-01'\n")),
    Case("calibration-not-json", ("predict", "--calibration", "{tmp}/c.json"), "not a calibration JSON file",
         {"c.json": "{parameters: 1"}),
    Case("calibration-family-not-table", ("predict", "--calibration", "{tmp}/c.json"),
         "{tmp}/c.json: field 'parameters.hopper' must map parameter names to numbers",
         {"c.json": CALIBRATION % '{"hopper": [0.7]}'}),
    Case("calibration-out-of-bounds", ("predict", "--calibration", "{tmp}/c.json"),
         "parameters.hopper.gemm_bf16 = 2.0; allowed 0.35 to 0.85",
         {"c.json": CALIBRATION % '{"hopper": {"gemm_bf16": 2.0}}'}),
    Case("calibration-bool", ("predict", "--calibration", "{tmp}/c.json"), "parameters.hopper.run_overhead_s = True",
         {"c.json": CALIBRATION % '{"hopper": {"run_overhead_s": true}}'}),
    Case("calibration-interval", ("predict", "--calibration", "{tmp}/c.json"), "field 'interval' must hold positive",
         {"c.json": '{"format": "perfmodel-calibration/1", "parameters": {}, "interval": {"coverage": 0.8}}'}),
    # ---- compare, search --------------------------------------------------------------------------------------
    Case("compare-precision", ("compare", "--gpu", "h100-sxm:fp16"), "--gpu h100-sxm:fp16: unknown precision 'fp16'"),
    Case("compare-unknown-target", ("compare", "--gpu", "h300"), "--gpu h300: unknown accelerator or system 'h300'"),
    Case("compare-count-garbage", ("compare", "--gpus", "256,x"), "'x' in '256,x' is not a whole number"),
    Case("compare-own-count-part-node", ("compare", "--gpu", "h100-sxm@12", "--gpu", "b200"),  # not --gpus'
         "--gpu h100-sxm@12: 12 GPUs is 1.5 dgx-h100 nodes of 8 GPUs each; allowed: whole nodes, such as 8 or 16"),
    Case("compare-second-own-count-part-node", ("compare", "--gpu", "h100-sxm@16", "--gpu", "b200@12"),
         "--gpu b200@12: 12 GPUs is 1.5 dgx-b200 nodes of 8 GPUs each; allowed: whole nodes, such as 8 or 16"),
    Case("compare-counts-part-node-beside-own-count", ("compare", "--gpu", "h100-sxm@16", "--gpu", "b200", "--gpus",
         "12"), "--gpus: 12 GPUs is 1.5 dgx-b200 nodes"),  # b200's count is --gpus', not the first row's @16
    Case("compare-count-thousands-separator", ("compare", "--gpus", "256,1,024"),  # was 256, 1 and 24 GPUs
         "'024' in '256,1,024' begins with 0: a comma separates GPU counts (256,512,1024); write 1024 for 1,024 GPUs"),
    Case("compare-too-many-counts", ("compare", "--gpus", ",".join(str(8 * i) for i in range(1, 100))),
         "99 GPU counts; at most 64"),
    Case("compare-unsupported", ("compare", "--gpu", "h100-sxm", "--gpu", "mi300x:nvfp4"),
         "--gpu mi300x:nvfp4: mi300x has no tensor-core support for nvfp4; supported: bf16, fp8; pass --gpu "
         "mi300x:bf16"),
    Case("compare-default-precision", ("compare", "--gpu", "a100-sxm-80gb", "--gpu", "h100-sxm"),
         "--gpu a100-sxm-80gb: a100-sxm-80gb has no tensor-core support for fp8 (the default precision); supported: "
         "bf16; pass --gpu a100-sxm-80gb:bf16"),
    Case("plan-default-precision", ("plan", "--gpu", "h100-sxm", "--gpu", "a100-sxm-80gb", "--deadline", "30d"),
         "--gpu a100-sxm-80gb: a100-sxm-80gb has no tensor-core support for fp8 (the default precision)"),
    Case("search-top-zero", ("search", "--top", "0"), "Invalid value for '--top': 0 is not in the range 1<=x<=10000"),
    Case("search-objective", ("search", "--objective", "speed"), "Invalid value for '--objective': 'speed'"),
    Case("search-nothing-fits", ("search", "--model", "llama3.1-405b", "--gpu", "h100-sxm", "--gpus", "8"),
         "no layout fits in memory"),
    Case("search-count-zero", ("search", "--gpus", "0,8"), "'--gpus': 0 must be between 1 and 1,000,000 GPUs"),
    # ---- whatif, sensitivity ------------------------------------------------------------------------------------
    Case("whatif-unknown", ("whatif", "--set", "nvlnk_gbps=1800"),
         "--set nvlnk_gbps=1800: unknown hardware parameter 'nvlnk_gbps' (did you mean 'nvlink_gbps'?); settable: "),
    Case("whatif-no-value", ("whatif", "--set", "hbm_tbps"), "--set hbm_tbps: the value must be a positive number"),
    Case("whatif-nan", ("whatif", "--set", "hbm_tbps=nan"), "--set hbm_tbps=nan: the value must be a positive number"),
    Case("whatif-negative", ("whatif", "--set", "nic_gbps=-400"), "--set nic_gbps=-400: the value must be a positive"),
    Case("whatif-absurd", ("whatif", "--set", "nvlink_gbps=1e300"), "nvlink_gbps would be 1e+300 GB/s; allowed 1 to"),
    Case("whatif-absurd-multiplier", ("whatif", "--set", "hbm_tbps=x1e9"), "hbm_tbps would be 3.35e+09 TB/s"),
    Case("whatif-huge-domain", ("whatif", "--set", "domain_gpus=1000000000"), "allowed 1 to 576"),
    Case("whatif-fractional-gpus", ("whatif", "--set", "domain_gpus=1.5"), "domain_gpus takes a whole number of GPUs"),
    Case("whatif-missing-figure", ("whatif", "--set", "fp4_tflops=x2"), "h100-sxm has no fp4_tflops figure"),
    Case("sensitivity-step", ("sensitivity", "--step", "2"), "--step 2: must be from 0.0001 to below 1"),
    Case("sensitivity-step-nan", ("sensitivity", "--step", "nan"), "--step nan: must be from 0.0001 to below 1"),
    # ---- sweep ---------------------------------------------------------------------------------------------------
    Case("sweep-missing", ("sweep", "{tmp}/w.toml"), "{tmp}/w.toml: no such sweep file"),
    Case("sweep-no-table", ("sweep", "{tmp}/w.toml"), "{tmp}/w.toml: a sweep file has one [sweep] table",
         {"w.toml": "models = ['llama3.1-8b']\n"}),
    Case("scenario-as-sweep", ("sweep", S),
         "{tmp}/s.toml: a sweep file has one [sweep] table (keys: base, models, gpus, precisions, n_gpus, whatifs, "
         "set, layouts) (this looks like a scenario file: give it as the command's SCENARIO argument)",
         toml("model = 'llama3.1-8b'\n")),
    Case("sweep-typo", ("sweep", "{tmp}/w.toml"),
         "field 'sweep.modelz': unknown key (did you mean 'models'?); allowed: base",
         {"w.toml": "[sweep]\nmodelz = ['llama3.1-8b']\n"}),
    Case("sweep-not-a-list", ("sweep", "{tmp}/w.toml"), "field 'sweep.models' must be a non-empty list",
         {"w.toml": "[sweep]\nmodels = 'llama3.1-8b'\n"}),
    Case("sweep-bad-count", ("sweep", "{tmp}/w.toml"), "{tmp}/w.toml: sweep.n_gpus: Input should be greater than",
         {"w.toml": "[sweep]\nn_gpus = [0]\n"}),
    Case("sweep-gpu-typo", ("sweep", "{tmp}/w.toml"),  # an entry of the file's list, not a --gpu flag
         "{tmp}/w.toml: sweep.gpus: 'b20': unknown accelerator or system 'b20' (did you mean 'b200'?); valid: ",
         {"w.toml": "[sweep]\ngpus = ['h100-sxm', 'b20']\n"}),
    Case("sweep-gpu-count", ("sweep", "{tmp}/w.toml"),  # compare's @N: it was dropped, every point at n_gpus
         "{tmp}/w.toml: sweep.gpus: 'b200@16': a sweep takes the GPU count from its list, sweep.n_gpus, crossed with",
         {"w.toml": "[sweep]\ngpus = ['b200@16']\nn_gpus = [8]\n"}),
    Case("sweep-gpu-precision", ("sweep", "{tmp}/w.toml"),  # compare's :PRECISION: it was dropped
         "{tmp}/w.toml: sweep.gpus: 'b200:nvfp4': a sweep takes the precision from its list, sweep.precisions, crossed",
         {"w.toml": "[sweep]\ngpus = ['b200:nvfp4']\nn_gpus = [8]\n"}),
    Case("sweep-set-typo", ("sweep", "{tmp}/w.toml"),
         "sweep.set.tokenz: unknown key (did you mean 'tokens'?); allowed: name",
         {"w.toml": "[sweep]\n[sweep.set]\ntokenz = 1e12\n"}),
    Case("sweep-whatif-entry", ("sweep", "{tmp}/w.toml"), "field 'sweep.whatifs': each entry is a table",
         {"w.toml": "[sweep]\nwhatifs = [5]\n"}),
    Case("sweep-too-many-points", ("sweep", "{tmp}/w.toml"), "20,000 points (models x gpus x precisions x n_gpus",
         {"w.toml": f"[sweep]\nn_gpus = {list(range(8, 8 * 2001, 8))}\nprecisions = ['bf16', 'fp8', 'mxfp8', 'nvfp4',"
                    " 'mxfp4']\nwhatifs = [{}, {nvlink_gbps = 'x2'}]\n"}),
    Case("sweep-out-suffix", ("sweep", "{tmp}/w.toml", "--out", "{tmp}/rows.txt"), "unknown format ('.txt')",
         {"w.toml": "[sweep]\nn_gpus = [8]\n"}),
    Case("sweep-out-folder", ("sweep", "{tmp}/w.toml", "--out", "{tmp}/no/rows.csv"), "{tmp}/no does not exist",
         {"w.toml": "[sweep]\nn_gpus = [8]\n"}),
    # ---- validate: measured-runs CSVs and MLPerf logs ------------------------------------------------------------
    Case("csv-garbage", ("validate", "--data", "{tmp}/r.csv"), "{tmp}/r.csv: missing column(s) n_gpus, precision",
         {"r.csv": "garbage,,,\n\x01\x02\n"}),
    Case("csv-binary", ("validate", "--data", "{tmp}/r.csv"), "{tmp}/r.csv: not a readable CSV",
         {"r.csv": b"\x89PNG\r\n\x1a\n\xff\xfe"}),
    Case("csv-missing", ("validate", "--data", "{tmp}/r.csv"), "{tmp}/r.csv: no such runs CSV file"),
    Case("csv-header-only", ("validate", "--data", "{tmp}/r.csv"), "{tmp}/r.csv: no rows",
         {"r.csv": CSV_HEADER + "\n"}),
    Case("csv-unknown-column", ("validate", "--data", "{tmp}/r.csv"),
         "unknown column 'tpp' (did you mean 'tp'?); allowed: id, source",
         {"r.csv": f"{CSV_HEADER},tpp\n{GOOD_ROW},2\n"}),
    Case("csv-semicolons", ("validate", "--data", "{tmp}/r.csv"),  # a European spreadsheet's CSV
         "{tmp}/r.csv: its columns are separated by ';'; a runs CSV separates them with commas",
         {"r.csv": CSV_HEADER.replace(",", ";") + "\n" + GOOD_ROW.replace(",", ";") + "\n"}),
    Case("csv-misspelt-required-column", ("validate", "--data", "{tmp}/r.csv"),
         "{tmp}/r.csv: missing column(s) measured; 'measure' is no column (did you mean 'measured'?); columns: id",
         {"r.csv": CSV_HEADER.replace("measured", "measure") + "\n" + GOOD_ROW + "\n"}),
    Case("csv-repeated-column", ("validate", "--data", "{tmp}/r.csv"), "column 'gpu' appears more than once",
         {"r.csv": f"{CSV_HEADER},gpu\n{GOOD_ROW},h100-sxm\n"}),
    Case("csv-nan", ("validate", "--data", "{tmp}/r.csv"), "row 2: column 'measured' is 'nan'; it must be a positive",
         {"r.csv": f"{CSV_HEADER}\n{GOOD_ROW.replace('1.2', 'nan')}\n"}),
    # a spreadsheet's formatted counts: how to write them, as a flag's '--seq-len 8k' is told
    Case("csv-thousands-separator", ("validate", "--data", "{tmp}/r.csv"),
         "row 2: column 'n_gpus' is '1,024', not a number: write it in digits (1024)",
         {"r.csv": CSV_HEADER + "\n" + GOOD_ROW.replace(",8,", ',"1,024",') + "\n"}),
    Case("csv-suffixed-count", ("validate", "--data", "{tmp}/r.csv"),
         "row 2: column 'n_gpus' is '1k', not a number: write it in digits (1024 or 1000)",
         {"r.csv": f"{CSV_HEADER}\n{GOOD_ROW.replace(',8,', ',1k,')}\n"}),
    Case("csv-extra-cells", ("validate", "--data", "{tmp}/r.csv"), "{tmp}/r.csv, row 2: more cells than columns",
         {"r.csv": f"{CSV_HEADER}\n{GOOD_ROW},extra\n"}),
    Case("csv-unknown-gpu", ("validate", "--data", "{tmp}/r.csv"), "{tmp}/r.csv, row 3: unknown GPU 'h900'",
         {"r.csv": f"{CSV_HEADER}\n{GOOD_ROW}\n{GOOD_ROW.replace('h100-sxm', 'h900')}\n"}),
    Case("csv-huge-count", ("validate", "--data", "{tmp}/r.csv"), "field 'n_gpus': Input should be less than or equal",
         {"r.csv": f"{CSV_HEADER}\n{GOOD_ROW.replace(',8,', ',1e300,')}\n"}),
    Case("csv-time-to-train-without-benchmark", ("validate", "--data", "{tmp}/r.csv"),
         "row 2: metric time_to_train_min needs a 'benchmark'",
         {"r.csv": f"{CSV_HEADER}\n{GOOD_ROW.replace('step_time_s', 'time_to_train_min')}\n"}),
    Case("csv-zero-stage", ("validate", "--data", "{tmp}/r.csv"), "column 'zero' is '1.5'; it must be 0, 1, 2 or 3",
         {"r.csv": f"{CSV_HEADER},zero\n{GOOD_ROW},1.5\n"}),
    Case("csv-nothing-predictable", ("validate", "--data", "{tmp}/r.csv"), "nothing to validate: none of the 1 runs",
         {"r.csv": f"{CSV_HEADER},tp\n{GOOD_ROW},3\n"}),
    Case("validate-only-nothing", ("validate", "--only", "zzz-no-such-run"), "--only zzz-no-such-run: no run's id"),
    Case("log-garbled-line", ("validate", "{tmp}/result_0.txt", *LOG_FLAGS), "unparsable :::MLLOG line",
         {"result_0.txt": mllog('eval_accuracy=:::MLLOG {"key": "eval_accuracy", "value": 0.9')}),
    Case("log-not-a-log", ("validate", "{tmp}/result_0.txt", *LOG_FLAGS), "no 'submission_benchmark' event",
         {"result_0.txt": b"\x00\x01 not a log \xff"}),
    Case("log-gbs-string", ("validate", "{tmp}/result_0.txt", *LOG_FLAGS),
         "{tmp}/result_0.txt: line 2: global_batch_size is 'abc'; it must be a positive whole number",
         {"result_0.txt": mllog(gbs="abc")}),
    Case("log-gbs-huge", ("validate", "{tmp}/result_0.txt", *LOG_FLAGS),
         "line 2: global_batch_size is 1000000000000000000000000000000; it must be a positive whole number up to 1e+18",
         {"result_0.txt": mllog(gbs=10**30)}),
    Case("log-aborted", ("validate", "{tmp}/result_0.txt", *LOG_FLAGS), "line 5: run_stop status is 'aborted'",
         {"result_0.txt": mllog(status="aborted")}),
    Case("log-without-hardware", ("validate", "{tmp}/result_0.txt"), "MLPerf logs do not say what ran them",
         {"result_0.txt": mllog()}),
    # ---- calibrate --------------------------------------------------------------------------------------------
    Case("calibrate-out-folder", ("calibrate", "--out", "{tmp}/no/c.json"), "--out {tmp}/no/c.json: {tmp}/no does not"),
    Case("calibrate-out-exists", ("calibrate", "--out", "{tmp}/c.json"), "file exists; pass --force to overwrite it",
         {"c.json": "{}"}),
    Case("calibrate-garbage-csv", ("calibrate", "--data", "{tmp}/r.csv", "--out", "{tmp}/c.json"),
         "{tmp}/r.csv: missing column(s)", {"r.csv": "a,b\n1,2\n"}),
    # ---- export -------------------------------------------------------------------------------------------------
    Case("export-suffix", ("export", "predict", "--out", "{tmp}/plan.txt"), "unknown format ('.txt'); use a .xlsx"),
    Case("export-folder-missing", ("export", "predict", "--out", "{tmp}/no/plan.xlsx"), "{tmp}/no does not exist"),
    Case("export-parent-is-file", ("export", "predict", "--out", "{tmp}/f/plan.csv"), "{tmp}/f is not a folder",
         {"f": "a file"}),
    Case("export-bad-layout", ("export", "predict", "--tp", "3", "--out", "{tmp}/plan.xlsx"), "TP 3 must divide"),
    Case("export-compare-unknown", ("export", "compare", "--gpu", "h300", "--out", "{tmp}/c.json"), "--gpu h300:"),
    Case("export-search-nothing-fits", ("export", "search", "--model", "llama3.1-405b", "--gpu", "h100-sxm", "--gpus",
                                        "8", "--out", "{tmp}/s.xlsx"), "no layout fits in memory"),
    Case("export-energy-price", ("export", "predict", "--usd-per-kwh", "-1", "--out", "{tmp}/p.csv"),
         "'--usd-per-kwh': '-1' must be a positive finite number"),
    # ---- explain, plot ------------------------------------------------------------------------------------------
    Case("explain-format", ("explain", "--format", "pdf"), "Invalid value for '--format': 'pdf'"),
    Case("explain-bad-layout", ("explain", *layout(vp=2)[1:]), "VP 2 (interleaving) needs PP > 1"),
    Case("plot-suffix", ("plot", "breakdown", "--out", "{tmp}/p.jpg"), "unknown image format ('.jpg'); use a .png"),
    Case("plot-from-not-json", ("plot", "breakdown", "--from", "{tmp}/p.json", "--out", "{tmp}/p.png"),
         "--from {tmp}/p.json: not valid JSON", {"p.json": "[1, 2"}),
    Case("plot-from-bad-field", ("plot", "breakdown", "--from", "{tmp}/p.json", "--out", "{tmp}/p.png"),
         "result 1: field 'breakdown.compute_s': must be a number of seconds (the _s in its name)",
         {"p.json": json.dumps({**PREDICTION, "breakdown": {**PREDICTION["breakdown"], "compute_s": "x"}})}),
    Case("plot-from-nan", ("plot", "compare", "--from", "{tmp}/p.json", "--out", "{tmp}/p.png"),
         "result 1: field 'tokens_per_s': Input should be a finite number",
         {"p.json": json.dumps({**PREDICTION, "tokens_per_s": math.nan})}),
    Case("plot-scaling-one-count", ("plot", "scaling", "--from", "{tmp}/p.json", "--out", "{tmp}/p.png"),
         "a scaling plot needs at least two GPU counts", {"p.json": json.dumps(PREDICTION)}),
    Case("plot-validation-rows", ("plot", "validation", "--from", "{tmp}/v.json", "--out", "{tmp}/p.png"),
         "field 'rows[0].measured': Input should be greater than 0",
         {"v.json": '{"rows": [{"measured": -1, "predicted": 2}]}'}),
    Case("plot-validation-needs-from", ("plot", "validation", "--out", "{tmp}/p.png"), "needs --from FILE.json"),
    # ---- catalog and the command line itself --------------------------------------------------------------------
    Case("hardware-format", ("hardware", "list", "--format", "xml"), "Invalid value for '--format': 'xml'"),
    Case("hardware-show-cut-short", ("hardware", "show", "h100"),  # as --gpu h100 is answered
         "hardware show: unknown accelerator or system 'h100' (did you mean 'h100-grand-teton' or 'h100-sxm'?); "),
    Case("hardware-typo", ("hardware", "lst"), "No such command 'lst'"),
    Case("models-format", ("models", "list", "--format", "csv"), "Invalid value for '--format': 'csv'"),
    Case("models-extra-argument", ("models", "list", "extra"), "Got unexpected extra argument (extra)"),
    Case("unknown-command", ("frobnicate",), "No such command 'frobnicate'"),
    # ---- hostile text: control characters, length caps, long unknown ids (issue 11) ------------------------------
    Case("name-control-character", ("predict", S), "{tmp}/s.toml: field 'name': contains U+0001 (a control character)",
         toml('name = "a\\u0001b"\n')),
    Case("model-id-nul", ("predict", S), "field 'model.id': contains U+0000 (a control character); allowed: printable",
         toml('[model]\nbase = "llama3.1-8b"\nid = "a\\u0000b"\n')),
    Case("model-name-newline", ("predict", S), "field 'model.name': contains U+000A",
         toml('[model]\nbase = "llama3.1-8b"\nname = "x\\n\\\\write18{rm}"\n')),
    Case("name-bidi-override", ("predict", S), "field 'name': contains U+202E (right-to-left override)",
         toml('name = "txt.\\u202Eexe"\n')),
    Case("name-too-long", ("predict", S), "field 'name': is 300 characters long; at most 200",
         toml(f"name = '{'x' * 300}'\n")),
    Case("description-too-long", ("predict", S), "field 'description': is 3,000 characters long; at most 2,000",
         toml(f"description = '{'x' * 3000}'\n")),
    Case("unknown-model-100k-chars", ("predict", S), "field 'model': is 100,000 characters long; at most 200",
         toml(f"model = '{'x' * 100_000}'\n")),
    Case("gpu-flag-control-character", ("predict", "--gpu", "h\x07x"), "--gpu: contains U+0007"),
    Case("compare-unknown-long-id", ("compare", "--gpu", "z" * 5000), "unknown accelerator or system 'zzzzzzzzzz"),
    Case("whatif-unknown-long-name", ("whatif", "--set", "q" * 5000 + "=1"),
         "(5,002 characters): unknown hardware parameter 'qqq"),
    Case("csv-id-escape-sequence", ("validate", "--data", "{tmp}/r.csv"),
         "{tmp}/r.csv, row 2: column 'id' contains U+001B (a control character)",
         {"r.csv": f"{CSV_HEADER}\n\x1b[31mr1{GOOD_ROW[2:]}\n"}),
    Case("csv-source-too-long", ("validate", "--data", "{tmp}/r.csv"),
         "row 2: column 'source' is 3,000 characters long; at most 2,000",
         {"r.csv": f"source,{CSV_HEADER}\n{'s' * 3000},{GOOD_ROW}\n"}),
    Case("csv-model-nul", ("validate", "--data", "{tmp}/r.csv"), "row 2: column 'model' contains U+0000",
         {"r.csv": CSV_HEADER + "\n" + GOOD_ROW.replace("llama3.1-8b", "llama\x00") + "\n"}),
    # ---- clobbered inputs: --force never replaces a file the same command reads (issue 11) ----------------------
    Case("calibrate-out-is-its-data", ("calibrate", "--data", "{tmp}/r.csv", "--out", "{tmp}/r.csv", "--force"),
         "--out {tmp}/r.csv: is {tmp}/r.csv, an input of this command", {"r.csv": f"{CSV_HEADER}\n{GOOD_ROW}\n"}),
    Case("calibrate-out-hard-link-to-data", ("calibrate", "--data", "{tmp}/r.csv", "--out", "{tmp}/c.json", "--force"),
         "--out {tmp}/c.json: is {tmp}/r.csv, an input", {"r.csv": f"{CSV_HEADER}\n{GOOD_ROW}\n"},
         {"c.json": "hardlink:r.csv"}),
    Case("calibrate-out-symlink-to-data", ("calibrate", "--data", "{tmp}/r.csv", "--out", "{tmp}/c.json", "--force"),
         "--out {tmp}/c.json: is {tmp}/r.csv, an input", {"r.csv": f"{CSV_HEADER}\n{GOOD_ROW}\n"},
         {"c.json": "symlink:r.csv"}),
    Case("export-out-is-its-calibration", ("export", "predict", "--calibration", "{tmp}/c.json", "--out",
                                           "{tmp}/c.json", "--force"), "--out {tmp}/c.json: is {tmp}/c.json, an input",
         {"c.json": CALIBRATION % "{}"}),
    Case("export-out-is-its-scenario", ("export", "predict", "{tmp}/s.csv", "--out", "{tmp}/s.csv", "--force"),
         "--out {tmp}/s.csv: is {tmp}/s.csv, an input", {"s.csv": "gpu = 'h100-sxm'\nmodel = 'llama3.1-8b'\n"}),
    Case("plot-out-is-its-from", ("plot", "breakdown", "--from", "{tmp}/p.svg", "--out", "{tmp}/p.svg", "--force"),
         "--out {tmp}/p.svg: is {tmp}/p.svg, an input", {"p.svg": json.dumps(PREDICTION)}),
    Case("sweep-out-is-its-sweep-file", ("sweep", "{tmp}/w.csv", "--out", "{tmp}/w.csv", "--force"),
         "--out {tmp}/w.csv: is {tmp}/w.csv, an input", {"w.csv": "[sweep]\nn_gpus = [8]\n"}),
    Case("export-sweep-out-is-its-sweep-file", ("export", "sweep", "{tmp}/w.json", "--out", "{tmp}/w.json", "--force"),
         "--out {tmp}/w.json: is {tmp}/w.json, an input", {"w.json": "[sweep]\nn_gpus = [8]\n"}),
    # ---- work caps that refuse before working (issue 11) ---------------------------------------------------------
    Case("model-ten-thousand-layers", ("predict", S), "'model.layers': Input should be less than or equal to 1000",
         toml("gpu = 'h100-sxm'\n[model]\nbase = 'llama3.1-8b'\nlayers = 10000\n")),
    Case("search-many-divisible-counts", ("search", "--model", "llama3.1-70b", "--gpu", "h100-sxm", "--gpus",
                                          ",".join(str(5040 * k) for k in range(1, 65))),
         "--gpus: 64 GPU count(s) give 11,800,000 layout shapes (GPU counts x global batches x TP x CP x PP) to "
         "search; at most 4,000,000"),
    Case("compare-too-many-systems", ("compare", *("--gpu", "h100-sxm") * 17), "--gpu given 17 times; at most 16"),
    Case("compare-too-many-rows", ("compare", *("--gpu", "h100-sxm") * 8, "--gpus", "8,16,24,32,40,48,56,64,72"),
         "--gpu x --gpus: 8 systems x 9 GPU counts = 72 rows; at most 64"),
    Case("compare-counts-no-row-uses", ("compare", "--gpu", "h100-sxm@64", "--gpu", "b200@32", "--gpus", "128"),
         "--gpus: no row would use it, each --gpu has its own count (h100-sxm@64, b200@32); drop --gpus or an @N"),
    Case("export-compare-too-many-rows", ("export", "compare", *("--gpu", "b200") * 16, "--gpus", "8,16,24,32,40",
                                          "--out", "{tmp}/c.xlsx"), "16 systems x 5 GPU counts = 80 rows"),
    Case("plot-compare-too-many-systems", ("plot", "compare", *("--gpu", "b200") * 40, "--out", "{tmp}/p.png"),
         "--gpu given 40 times; at most 16"),
    Case("csv-too-many-rows", ("validate", "--data", "{tmp}/r.csv"), "{tmp}/r.csv: more than 10,000 rows; at most",
         {"r.csv": CSV_HEADER + "\n" + f"{GOOD_ROW}\n" * 10_001}),
    Case("csv-too-big", ("validate", "--data", "{tmp}/r.csv"), "{tmp}/r.csv: more than 16 MiB; a runs CSV file is at",
         {"r.csv": CSV_HEADER + "\n" + f"{GOOD_ROW}\n" * 400_000}),
    # ---- numbers from files: finite and in range (issue 11) ------------------------------------------------------
    Case("csv-measured-subnormal", ("validate", "--data", "{tmp}/r.csv"),
         "row 2: column 'measured' is '5e-324'; it must be a finite number from 1e-06 to 1e+09",
         {"r.csv": f"{CSV_HEADER}\n{GOOD_ROW.replace('1.2', '5e-324')}\n"}),
    Case("csv-measured-1e308", ("validate", "--data", "{tmp}/r.csv"), "column 'measured' is '1e308'; it must be a",
         {"r.csv": f"{CSV_HEADER}\n{GOOD_ROW.replace('1.2', '1e308')}\n"}),
    Case("calibration-interval-1e308", ("predict", "--calibration", "{tmp}/c.json"),
         "field 'interval' must hold positive numbers time_factor_low <= time_factor_high, each a finite number from "
         "0.01 to 100", {"c.json": CALIBRATION[:-1] % "{}" + ', "interval": {"time_factor_low": 0.9, '
                                                              '"time_factor_high": 1e308}}'}),
    Case("calibration-interval-subnormal", ("predict", "--calibration", "{tmp}/c.json"), "each a finite number from",
         {"c.json": CALIBRATION[:-1] % "{}" + ', "interval": {"time_factor_low": 5e-324, "time_factor_high": 1}}'}),
    Case("calibration-fit-huge", ("predict", "--calibration", "{tmp}/c.json"),
         "field 'fit.in_sample_mape_pct' must be a finite number from 0 to 1e+09",
         {"c.json": CALIBRATION[:-1] % "{}" + ', "fit": {"in_sample_mape_pct": 1e308}}'}),
    Case("log-nan-timestamp", ("validate", "{tmp}/result_0.txt", *LOG_FLAGS),
         "line 5: run_start to run_stop is nan minutes; it must be a finite number from 0.001 to 1e+07",
         {"result_0.txt": mllog('run_stop=:::MLLOG {"namespace": "", "time_ms": NaN, "event_type": "POINT_IN_TIME", '
                                '"key": "run_stop", "value": null, "metadata": {"status": "success"}}')}),
    Case("log-huge-samples", ("validate", "{tmp}/result_0.txt", *LOG_FLAGS),
         "line 4: samples_count is 1e+308; it must be a positive number up to 1e+18",
         {"result_0.txt": mllog('eval_accuracy=:::MLLOG {"namespace": "", "time_ms": 1700000600000, "event_type": '
                                '"POINT_IN_TIME", "key": "eval_accuracy", "value": 0.9, "metadata": '
                                '{"samples_count": 1e308}}')}),
    Case("sensitivity-step-1e-300", ("sensitivity", "--step", "1e-300"), "--step 1e-300: must be from 0.0001 to"),
    Case("plot-from-1e308", ("plot", "compare", "--from", "{tmp}/p.json", "--out", "{tmp}/p.png"),
         "field 'tokens_per_s': Input should be less than or equal to 1000000000000000000000000000000 (got 1e+308)",
         {"p.json": json.dumps({**PREDICTION, "tokens_per_s": 1e308})}),
    Case("plot-from-with-scenario-flags", ("plot", "breakdown", "--from", "{tmp}/p.json", "--gpu", "b200", "--gpus",
                                           "8,16", "--out", "{tmp}/p.png"),
         "--from {tmp}/p.json: plots saved results as they are; --gpu, --gpus would be ignored",
         {"p.json": json.dumps(PREDICTION)}),
    Case("plot-from-with-scenario-file", ("plot", "breakdown", S, "--from", "{tmp}/p.json", "--out", "{tmp}/p.png"),
         "a scenario file would be ignored", {"p.json": json.dumps(PREDICTION), "s.toml": "gpu = 'b200'\n"}),
    # ---- special files and paths, sizes and nesting (issue 11) ---------------------------------------------------
    Case("scenario-fifo", ("predict", "{tmp}/f.toml"), "{tmp}/f.toml: not a regular file (a FIFO, device or socket)",
         special={"f.toml": "fifo"}),
    Case("csv-fifo", ("validate", "--data", "{tmp}/f.csv"), "{tmp}/f.csv: not a regular file",
         special={"f.csv": "fifo"}),
    Case("log-fifo", ("validate", "{tmp}/f.txt", *LOG_FLAGS), "{tmp}/f.txt: not a regular file; give a log file"[:30],
         special={"f.txt": "fifo"}),
    Case("scenario-dev-zero", ("predict", "/dev/zero"), "/dev/zero: not a regular file (a FIFO, device or socket)"),
    Case("calibration-dev-zero", ("predict", "--calibration", "/dev/zero"), "/dev/zero: not a regular file"),
    Case("plot-from-dev-zero", ("plot", "breakdown", "--from", "/dev/zero", "--out", "{tmp}/p.png"),
         "--from /dev/zero: not a regular file"),
    Case("sweep-dev-zero", ("sweep", "/dev/zero"), "/dev/zero: not a regular file; give a sweep file"[:29]),
    Case("scenario-symlink-loop", ("predict", "{tmp}/a.toml"), "{tmp}/a.toml: cannot read scenario file (too many",
         special={"a.toml": "symlink:b.toml", "b.toml": "symlink:a.toml"}),
    Case("scenario-name-too-long", ("predict", "{tmp}/" + "n" * 300 + ".toml"), "cannot read scenario file (file name"),
    Case("path-too-long", ("validate", "--data", "a/" * 3000), "a file name of 5,999 characters; at most 4,096"),
    Case("scenario-path-nul", ("predict", "{tmp}/a\x00.toml"), "a file name cannot contain a NUL byte"),
    Case("calibration-path-nul", ("predict", "--calibration", "c\x00.json"), "--calibration: contains U+0000"),
    Case("out-path-nul", ("export", "predict", "--out", "{tmp}/p\x00.csv"), "a file name cannot contain a NUL byte"),
    Case("scenario-too-big", ("predict", S), "{tmp}/s.toml: more than 1 MiB; a scenario file is at most 1 MiB",
         toml("# " + "x" * (2**20) + "\n")),
    Case("campaign-phase-precision-unsupported", ("predict", S),  # a phase's own precision names file and phase
         "{tmp}/s.toml: phase 'long': field 'precision': h100-sxm has no tensor-core support for nvfp4; supported: "
         "bf16, fp8; set the phase's precision to 'bf16'",
         toml("model = 'llama3.1-8b'\ngpu = 'h100-sxm'\nn_gpus = 8\nprecision = 'fp8'\ntokens = 2e9\n"
              "[[phase]]\nname = 'main'\n[[phase]]\nname = 'long'\ntokens = 1e9\nprecision = 'nvfp4'\n")),
    Case("campaign-too-many-phases", ("predict", S), "{tmp}/s.toml: field 'phase': has 101 entries; at most 100",
         toml("model = 'llama3.1-8b'\n" + "".join(f"[[phase]]\nname = 'p{i}'\n" for i in range(101)))),
    Case("documents-shares", ("predict", S),  # the table's own check names its key as the dotted field
         "{tmp}/s.toml: field 'documents.shares': the shares of documents must sum to 1 (they sum to 1.1)",
         toml("gpu = 'h100-sxm'\n[documents]\nlengths = [512, 2048]\nshares = [0.5, 0.6]\n")),
    Case("documents-too-many-lengths", ("predict", S), "field 'documents.lengths': has 10,001 entries; at most 10,000",
         toml("model = 'llama3.1-8b'\n[documents]\nlengths = [" + "64, " * 10_001 + "]\nshares = [1.0]\n")),
    Case("documents-length-of-500-digits", ("predict", S),
         "field 'documents.lengths[0]': Input should be less than or equal to 10000000"
         " (got <an integer of about 501 digits>)",
         toml("model = 'llama3.1-8b'\n[documents]\nlengths = [1" + "0" * 500 + "]\nshares = [1.0]\n")),
    Case("toml-nested-deep", ("predict", S), "{tmp}/s.toml: nested more than 32 levels deep",
         toml("x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n")),
    Case("sweep-nested-deep", ("sweep", "{tmp}/w.toml"), "{tmp}/w.toml: nested more than 32 levels deep",
         {"w.toml": "[sweep]\nn_gpus = " + "[" * 5000 + "]" * 5000 + "\n"}),
    Case("calibration-nested-deep", ("predict", "--calibration", "{tmp}/c.json"), "c.json: nested more than 32 levels",
         {"c.json": CALIBRATION % ("[" * 100_000 + "]" * 100_000)}),
    Case("plot-from-nested-deep", ("plot", "breakdown", "--from", "{tmp}/p.json", "--out", "{tmp}/p.png"),
         "--from {tmp}/p.json: nested more than 32 levels deep", {"p.json": "[" * 100_000 + "]" * 100_000}),
    Case("log-metadata-nested-deep", ("validate", "{tmp}/result_0.txt", *LOG_FLAGS),
         "result_0.txt: line 3: nested more than 32 levels deep",
         {"result_0.txt": mllog('run_start=:::MLLOG {"key": "x", "metadata": ' + "[" * 5000 + "]" * 5000 + "}")}),
    Case("log-line-too-long", ("validate", "{tmp}/result_0.txt", *LOG_FLAGS),
         "result_0.txt: line 3: an :::MLLOG line of 150,010 characters; at most 16,384",
         {"result_0.txt": mllog("run_start=:::MLLOG {" + "x" * 150_000)}),
]  # fmt: skip


def _prepare(case: Case, tmp_path: Path) -> tuple[list[str], str]:
    for name, content in case.files.items():
        target = tmp_path / name
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    for name, kind in case.special.items():
        what, _, other = kind.partition(":")
        if what == "fifo":
            os.mkfifo(tmp_path / name)
        elif what == "symlink":
            (tmp_path / name).symlink_to(other)
        else:
            (tmp_path / name).hardlink_to(tmp_path / other)
    fill = str(tmp_path)
    return [a.replace("{tmp}", fill) for a in case.args], case.message.replace("{tmp}", fill)


def _tree(folder: Path) -> dict[str, float]:
    return {str(p): p.lstat().st_mtime for p in folder.rglob("*")}


def test_the_corpus_covers_every_command() -> None:
    groups = ("export", "hardware", "models")
    commands = {" ".join(case.args[:2]) if case.args[0] in groups else case.args[0] for case in CASES}
    expected = {"predict", "compare", "search", "whatif", "sensitivity", "sweep", "validate", "calibrate", "explain",
                "plot", "export predict", "export compare", "export search", "hardware list",
                "models list", "plan", "export plan"}  # fmt: skip
    assert expected <= commands
    assert len(CASES) >= 40 and len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_is_one_line_and_exit_code_2(case: Case, tmp_path: Path) -> None:
    args, message = _prepare(case, tmp_path)
    before = _tree(tmp_path)
    start = time.perf_counter()
    result = run_cli(*args)
    elapsed = time.perf_counter() - start
    assert result.code == 2, (result.code, result.out[:300], result.err)
    assert result.out == ""
    assert result.err.startswith("error: ") and result.err.count("\n") == 1 and result.err.endswith("\n"), result.err
    assert "Traceback" not in result.err and len(result.err) < 2100
    assert all(c.isprintable() for c in result.err[:-1]), "an error line carries a control character"
    assert message in result.err, result.err
    assert _tree(tmp_path) == before, "a refused command wrote or changed a file"
    assert elapsed < TIME_LIMIT_S


SUBPROCESS_CASES = [
    "log-gbs-string",
    "calibration-family-not-table",
    "plot-from-bad-field",
    "whatif-absurd",
    "plan-deadline-unit",
    "scenario-fifo",
    "calibrate-out-is-its-data",
    "log-line-too-long",
]


@pytest.mark.parametrize("case_id", SUBPROCESS_CASES)
def test_a_real_process_prints_one_line_and_exits_2(case_id: str, tmp_path: Path) -> None:
    """The same contract through `python -m perfmodel` in a fresh interpreter: the exit code and stderr as a shell
    sees them (nothing relies on the in-process runner)."""
    case = next(c for c in CASES if c.id == case_id)
    args, message = _prepare(case, tmp_path)
    proc = subprocess.run([sys.executable, "-m", "perfmodel", *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and message in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_an_unwritable_folder_is_refused_before_any_work() -> None:
    """/proc takes no new files even for root (who passes os.access checks): the fit would take minutes."""
    start = time.perf_counter()
    result = run_cli("calibrate", "--out", "/proc/perfmodel-calibration.json")
    assert result.code == 2 and "folder /proc is not writable" in result.err and result.err.count("\n") == 1
    assert time.perf_counter() - start < 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        result = run_cli("export", "predict", "--out", str(folder / "plan.xlsx"))
    finally:
        folder.chmod(0o700)
    assert result.code == 2 and "is not writable" in result.err and not list(folder.iterdir())


# ---- absurd but valid: answered, with finite numbers, within the time limit --------------------------------------

ABSURD_BUT_VALID = [
    ("a-million-gpus", ("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "1000000")),
    ("highly-divisible-gpu-count", ("predict", "--model", "llama3.1-405b", "--gpu", "gb200", "--gpus", "720720")),
    ("billion-sequence-batch", ("predict", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "8",
                                "--gbs", "999999999")),
    ("million-token-sequences", ("predict", "--model", "llama3.1-8b", "--gpu", "gb200", "--gpus", "1024",
                                 "--seq-len", "1048576")),
    ("the-token-cap", ("predict", "--tokens", "1e18")),
    ("search-two-huge-clusters", ("search", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--gpus", "500000,1000000",
                                  "--top", "3")),
    ("whatif-at-the-bounds", ("whatif", "--set", "nvlink_gbps=1000000", "--set", "hbm_tbps=0.01")),
    ("whatif-domain-of-one-gpu", ("whatif", "--set", "domain_gpus=1")),
    ("whatif-domain-of-one-gpu-searched", ("whatif", "--model", "llama3.1-8b", "--gpu", "gb200", "--gpus", "72",
                                           "--set", "domain_gpus=1")),
]  # fmt: skip


def _strict_json(text: str) -> object:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in JSON output")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("args", [a for _, a in ABSURD_BUT_VALID], ids=[i for i, _ in ABSURD_BUT_VALID])
def test_absurd_but_valid_requests_are_answered_quickly(args: tuple[str, ...]) -> None:
    start = time.perf_counter()
    result = run_cli(*args, "--format", "json")
    elapsed = time.perf_counter() - start
    assert result.code == 0, result.err
    numbers = json_numbers(_strict_json(result.out))
    assert numbers and all(math.isfinite(n) for n in numbers)
    assert elapsed < TIME_LIMIT_S
