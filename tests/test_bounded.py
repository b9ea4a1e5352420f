"""The bounded memo (physics/bounded.py): its size bound and eviction order, and the caches that keep by it."""

from __future__ import annotations

import pytest

from perfmodel.inputs.scenario import checked_scenario
from perfmodel.physics import step
from perfmodel.physics.bounded import Bounded
from perfmodel.planning import predict, search


def test_a_full_memo_drops_the_oldest_key_added_first() -> None:
    memo: Bounded[str, int] = Bounded(3)
    for key in "abc":
        assert memo.put(key, ord(key)) == ord(key)
    assert list(memo) == ["a", "b", "c"] and len(memo) == 3
    memo.put("d", 4)
    assert list(memo) == ["b", "c", "d"] and memo.get("a") is None
    memo.put("b", 20)  # a key kept already: replaced where it stands, nothing dropped
    assert list(memo) == ["b", "c", "d"] and memo.get("b") == 20
    memo.get("b")  # reading does not refresh: the order is the order of adding
    memo.put("e", 5)
    assert list(memo) == ["c", "d", "e"]
    for n in range(100):
        memo.put(str(n), n)
    assert len(memo) == 3 and list(memo) == ["97", "98", "99"]
    memo.clear()
    assert len(memo) == 0


def test_an_unhashable_key_raises_as_a_dict_does_and_a_memo_keeps_something() -> None:
    memo: Bounded[object, int] = Bounded(1)
    with pytest.raises(TypeError):
        memo.get([1, 2])  # callers that may meet array efficiencies catch this
    with pytest.raises(ValueError, match="at least one"):
        Bounded(0)


@pytest.mark.parametrize(
    ("memo", "size"),
    [
        (step._SHARDS, step.SHARDS_KEPT),
        (predict._CONTEXTS, predict.CONTEXTS_KEPT),
        (predict._EFFICIENCIES, predict.CONTEXTS_KEPT),
        (search._BLOCKS, search.BLOCKS_KEPT),
        (search._FLOORS, search.FLOORS_KEPT),
    ],
)
def test_the_caches_keep_by_the_bounded_memo(memo: Bounded[object, object], size: int) -> None:
    assert isinstance(memo, Bounded) and memo.size == size


def test_more_contexts_than_kept_stay_within_the_bound() -> None:
    """Contexts for more sequence lengths than CONTEXTS_KEPT: the memo holds the newest, the first is made anew."""
    predict._CONTEXTS.clear()
    spec = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 8, "precision": "bf16"}
    scenarios = [checked_scenario(spec | {"parallelism": {"seq_len": 1024 + 8 * k}})
                 for k in range(predict.CONTEXTS_KEPT + 3)]  # fmt: skip
    contexts = [predict.context_for(s) for s in scenarios]
    assert len(predict._CONTEXTS) == predict.CONTEXTS_KEPT
    assert predict.context_for(scenarios[-1]) is contexts[-1]
    predict._LAST_CONTEXT.clear()
    assert predict.context_for(scenarios[0]) is not contexts[0]  # dropped, made again
    assert predict.context_for(scenarios[0]) == contexts[0]
