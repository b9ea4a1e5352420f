"""The CP ring's schedule (physics.ring), hop by hop, against cases worked by hand from TransformerEngine 2.8.0's
AttnFuncWithCPAndKVP2P: CP - 1 forward hops, each behind one step's attention (1/CP of the layer's); backward two
single hops and CP - 2 double ones (K, V with dK, dV), each behind one step's backward."""

import math

import pytest

from perfmodel.physics.ring import RingHops, ring_exposed


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
