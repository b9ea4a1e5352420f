"""Activation offload to host memory: Megatron-Core's cpu_offloading (cpu_offloading_num_layers n) through
TransformerEngine's offload, as megatron-bridge 0.6.2's Llama 3 70B FP8 Megatron-FSDP recipes on GB200/GB300 run it.

What moves and when (transformer-engine 2.20.2 pytorch/cpu_offload.py; Megatron-Core 0.16.0
extensions/transformer_engine.py L2297-2331 passes it cpu_offloading_num_layers and the model's layers):
- every tensor the layer saves for its backward (saved_tensors_hooks, push_tensor), quantised ones in their FP8 form
  (QuantizedTensors decomposed into their data tensors, L366-401), all but parameters and tensors under 256k elements
  (L454-475): the layer's saved activations, as the memory estimate counts them;
- the first n layers (DefaultOffloadSynchronizer L602-626): layer i's copy to the host starts after its forward, on
  one side stream (OffloadableLayerState.start_offload L259-312), and the forward waits for it before layer
  L - n + i (release_activation_forward_gpu_memory L314-329); layer i's copy back starts before layer L - 1 - n + i's
  backward on the same stream (start_reload L331-364) and layer i's backward waits for it (pop_tensor L402-445).
  So the saved activations of n layers stay off the GPU at the end of the forward: (L - n) layers' worth in HBM (the
  docstring of L602).
- The copies of one pass run back to back on that stream from the end of the first layer: the last must end before
  the last layer starts, so n copies hide behind L - 2 layers of the pass (a copy longer than a layer only delays the
  later deadlines; a shorter one hides within its own). Not at n = L - 1: layer i's copy starts before layer i + 1
  and must end before it (L - n + i = i + 1), so none hides. The v1 path (transformer-engine 2.9.0 cpu_offload.py
  AsyncDoubleBufferGroupOffloadHandler L303-657, NVTE_CPU_OFFLOAD_V1=1 in 2.20.2) spreads the same n copies over the
  same pass, one group every L / n layers.
"""

from __future__ import annotations

from perfmodel.physics.algebra import Number
from perfmodel.physics.parallel import RECOMPUTE_MODES, Rule
from perfmodel.physics.schedule import exposed

OFFLOAD_RULE = Rule(
    lambda v, md, n: (v.pp == 1) & (v.recompute == 0),
    lambda v, md, n: (
        f"activation_offload_layers needs PP 1 and recompute none, not PP {v.pp} with recompute "
        f"{RECOMPUTE_MODES[v.recompute]} (Megatron-Core 0.16.0 transformer/transformer_config.py L1144-1152)"
    ),
    ("pp", "recompute"),
)
"""Megatron-Core refuses CPU offloading with pipeline parallelism or with activation recompute."""

BLIND_LAYERS = 2
"""Layers of a pass no copy hides behind: the first (the first copy starts when it ends) and the last (the forward
waits for the last copy to the host before it, the backward's first layer has no reload to wait for)."""


def offload_s(
    layer_bytes: Number,
    offloaded: int,
    layers: int,
    link_bytes_per_s: float,
    hbm_bytes_per_s: Number,
    forward_s: Number,
    backward_s: Number,
) -> Number:
    """Time one micro-batch's offload adds: the copies of `offloaded` layers' saved activations (`layer_bytes` each)
    to the host in the forward and back in the backward, less what hides behind the pass's other layers
    (`forward_s`, `backward_s` per layer, BLIND_LAYERS of them blind; none at `layers` - 1 offloaded), plus the HBM
    reads and writes of the copies, which the kernels beside them wait on (the link is a twentieth of HBM's
    bandwidth, so this is the smaller part)."""
    copies_s = offloaded * layer_bytes / link_bytes_per_s
    hidden_layers = layers - BLIND_LAYERS if offloaded < layers - 1 else 0
    passes = exposed(copies_s, hidden_layers * forward_s, 1.0) + exposed(copies_s, hidden_layers * backward_s, 1.0)
    return passes + 2 * offloaded * layer_bytes / hbm_bytes_per_s
