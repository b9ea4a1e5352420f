"""The lock-step straggler wait: zero for one rank, monotone in ranks, the expected maximum of N normals."""

import itertools
import math

import pytest

from perfmodel.physics.step import straggler_s


def test_straggler_wait_grows_with_ranks_and_is_zero_for_one() -> None:
    ranks = [1, 2, 8, 64, 512, 4096, 16384, 100_000]
    waits = [straggler_s(0.01, n, 2.0) for n in ranks]
    assert waits[0] == 0
    assert all(b > a for a, b in itertools.pairwise(waits))
    # closed form: expected maximum of N normals ~ mean + sigma sqrt(2 ln N)
    assert waits[-2] == pytest.approx(0.01 * math.sqrt(2 * math.log(16384)) * 2.0, rel=1e-12)
