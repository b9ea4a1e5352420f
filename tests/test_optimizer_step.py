"""The optimizer step priced as the bytes Adam moves over HBM, checked against the count written out by hand."""

from __future__ import annotations

import perfmodel
from perfmodel.inputs.hardware import get_accelerator
from perfmodel.inputs.models import get_model
from perfmodel.physics import calibration


def test_adam_moves_38_bytes_per_parameter_of_its_zero_shard() -> None:
    """Megatron's distributed optimizer, BF16 weights: read master, m, v and the FP32 main gradient (4 x 4 B), write
    them back (4 x 4 B), read the BF16 gradient for the cast and the norm (2 x 2 B), write the BF16 weight (2 B): 38
    bytes per parameter of this rank's ZeRO-1 shard (Llama 3.1 8B over 8 data-parallel ranks), at the family's HBM
    bandwidth share; the few optimizer kernels' launches add well under 0.1 ms."""
    p = perfmodel.predict(model="llama3.1-8b", gpu="h100-sxm", n_gpus=8, precision="bf16", tp=1, pp=1, cp=1, zero=1,
                          mbs=1, gbs=8, seq_len=8192, recompute="none")  # fmt: skip
    shard = get_model("llama3.1-8b").params / 8
    bytes_per_param = 4 * 4 + 4 * 4 + 2 * 2 + 2
    bandwidth = get_accelerator("h100-sxm").hbm_bytes_per_s * calibration.bundled().efficiency("hopper").memory
    streamed_s = shard * bytes_per_param / bandwidth
    assert streamed_s < p.step.optimizer_s < streamed_s + 1e-4
