"""A context-parallel ring's exchange, step by step, as TransformerEngine schedules it.

TransformerEngine 2.8.0, transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py,
AttnFuncWithCPAndKVP2P (Megatron-Core's `cp_comm_type="p2p"`, the default):
- forward (L1356-1380): CP steps; at step i the rank waits for block i's K and V, posts the send of block i to the
  next rank and the receive of block i+1, then runs block i's attention, alternating two streams. Block 0 is the
  rank's own, so it waits for nothing, and the last step posts no transfer: CP - 1 hops, each hidden behind one
  step's attention and exposed by what it outlasts it.
- backward (L2071-2107, L2314-2316; send and receive reversed, L1838-1839): CP steps; step i posts one transfer of
  K and V for the next step together with the dK and dV accumulated so far (one buffer of both, L2003-2006), then
  runs block i's attention backward, then waits for the dK and dV it received before adding its own. Step 0 sends
  K and V only, the last step dK and dV only (which ends the gradients at their owner): two hops of one K, V block,
  CP - 2 of two, each hidden behind one step's backward.
- causal load balancing: the sequence in 2 x CP chunks, rank r holding chunks r and 2CP - 1 - r, so that every step
  computes the same half of a block (the diagonal, lower- and upper-triangle sections, L1432-1510): each step is
  1/CP of the layer's attention.

The kernels of a ring step run at compute.py's rates, one attention call a step (workload: `Op.calls`, CP kernels'
fixed cost a pass, not one); what the ring's exchange adds is every hop that outlasts its step. The transfer is NCCL
send/recv on its own stream, so a hop shorter than its step hides whole: no share of the window is assumed lost.
Not priced: the per-step merges of the outputs' softmax statistics and the dQ, dK, dV sums (L1587, L1629,
L2245-2406), small elementwise kernels (the statistics' merge on the other stream, beside the next step's attention):
priced as memory kernels of a kernel's fixed cost each, they made the 8K-token CP 8 MLPerf rows too slow (GB300 FP8
MAPE 7.0% -> 10.6%).
"""

from __future__ import annotations

from typing import NamedTuple

from perfmodel.physics.algebra import Number, maximum, minimum


class RingHops(NamedTuple):
    """One ring hop's transfer time: one K, V block, and a K, V block with the dK, dV one in the same call."""

    kv_s: Number
    kv_and_grad_s: Number


class RingExposed(NamedTuple):
    """A layer's ring transfer time left on the critical path, forward and backward."""

    forward_s: Number
    backward_s: Number


def ring_exposed(hops: RingHops, cp: Number, forward_attention_s: Number, backward_attention_s: Number) -> RingExposed:
    """What each hop outlasts of its step's attention, summed over the ring's steps (module docstring): CP - 1
    hops of K, V forward; backward two single hops (K, V at step 0, dK, dV at the last) and CP - 2 double ones.
    None without CP (CP 1)."""
    forward_step, backward_step = forward_attention_s / cp, backward_attention_s / cp
    forward = (cp - 1) * maximum(hops.kv_s - forward_step, 0.0)
    single = minimum(2 * cp - 2, 2.0) * maximum(hops.kv_s - backward_step, 0.0)
    double = maximum(cp - 2, 0.0) * maximum(hops.kv_and_grad_s - backward_step, 0.0)
    return RingExposed(forward, single + double)
