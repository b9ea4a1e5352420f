"""The CP ring's schedule (physics.ring), hop by hop, against cases worked by hand from TransformerEngine 2.8.0's
AttnFuncWithCPAndKVP2P: CP - 1 forward hops, each behind one step's attention (1/CP of the layer's); backward two
single hops and CP - 2 double ones (K, V with dK, dV), each behind one step's backward."""

import math

import pytest

from perfmodel.inputs.hardware import get_accelerator
from perfmodel.inputs.models import get_model
from perfmodel.inputs.precision import RECIPES, cp_comm_recipe
from perfmodel.physics.compute import op_time
from perfmodel.physics.efficiency import DEFAULTS
from perfmodel.physics.ring import RingHops, ring_exposed
from perfmodel.physics.workload import Shard, attention_backward, attention_forward


def test_without_cp_there_is_no_ring() -> None:
    assert ring_exposed(RingHops(5.0, 9.0), 1, 1.0, 2.0) == (0.0, 0.0)


def test_hops_shorter_than_their_steps_hide_whole() -> None:
    # CP 4: steps of 8 / 4 = 2 s forward and 16 / 4 = 4 s backward; hops of 1.9 s and 3.9 s hide whole
    assert ring_exposed(RingHops(1.9, 3.9), 4, 8.0, 16.0) == (0.0, 0.0)


def test_cp_4_exposes_what_each_hop_outlasts_its_step() -> None:
    # forward: 3 hops of 3 s behind steps of 8 / 4 = 2 s: 3 x 1 = 3 s;
    # backward: steps of 12 / 4 = 3 s; 2 single hops of 3 s hide, 2 double hops of 5 s expose 2 x 2 = 4 s
    forward, backward = ring_exposed(RingHops(3.0, 5.0), 4, 8.0, 12.0)
    assert math.isclose(forward, 3.0) and math.isclose(backward, 4.0)


def test_cp_2_has_no_double_hop() -> None:
    # forward: 1 hop of 3 s behind a step of 4 / 2 = 2 s: 1 s; backward: K, V at step 0 and dK, dV at step 1, each
    # 3 s behind a step of 5 / 2 = 2.5 s: 2 x 0.5 = 1 s; the double hop (100 s) is never sent
    forward, backward = ring_exposed(RingHops(3.0, 100.0), 2, 4.0, 5.0)
    assert math.isclose(forward, 1.0) and math.isclose(backward, 1.0)


def test_per_step_is_not_per_layer() -> None:
    # CP 8, 7 hops of 1.5 s: behind a 12 s forward each hides in its 1.5 s step; behind a 10 s forward (1.25 s
    # steps) each outlasts its step by 0.25 s: 1.75 s exposed, where one window of the whole forward would expose
    # 10.5 - 10 = 0.5 s
    assert ring_exposed(RingHops(1.5, 3.0), 8, 12.0, 100.0).forward_s == 0.0
    assert ring_exposed(RingHops(1.5, 3.0), 8, 10.0, 100.0).forward_s == pytest.approx(7 * 0.25)


@pytest.mark.parametrize("cp", [1, 2, 8])
def test_a_ring_calls_its_attention_kernel_once_a_step(cp: int) -> None:
    # TransformerEngine's loop calls the fused attention once per step, forward and backward: cp kernels, each with
    # the fixed cost of a kernel (4 us on Hopper's defaults), where a gather or an all-to-all calls one
    hopper, h100 = DEFAULTS["hopper"], get_accelerator("h100-sxm")
    p2p, gather = (cp_comm_recipe(RECIPES["bf16"], comm) for comm in ("p2p", "all_gather"))
    for ops in (attention_forward, attention_backward):
        (ring,), (whole,) = (ops(Shard(get_model("llama3.1-8b"), r, 1, cp, 1, 32768)) for r in (p2p, gather))
        assert (ring.calls, whole.calls) == (cp, 1)
        extra_s = op_time(ring, h100, hopper) - op_time(ring._replace(calls=1), h100, hopper)
        assert extra_s == pytest.approx((cp - 1) * 4e-6)
