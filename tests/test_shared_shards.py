"""Shards' compute shared across contexts (`Context.shards`) and blocks across searches (`search.blocks`): only where
the inputs they are worked out from are equal, so that sharing changes no number."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from perfmodel.inputs.hardware import get_accelerator
from perfmodel.inputs.record import replaced
from perfmodel.inputs.scenario import checked_scenario
from perfmodel.physics import step
from perfmodel.physics.step import Context
from perfmodel.physics.workload import Shard
from perfmodel.planning import search as search_module
from perfmodel.planning.predict import context_for
from perfmodel.planning.search import Space, best_layout, blocks, search

SPEC = {"model": "llama3.1-70b", "gpu": "h100-sxm", "n_gpus": 256, "precision": "fp8"}


def _with_accelerator(ctx: Context, **updates: object) -> Context:
    accelerator = replaced(ctx.hardware.accelerator, **updates)
    return replace(ctx, hardware=replaced(ctx.hardware, accelerator=accelerator))


def _compute(ctx: Context) -> list[np.ndarray]:
    """Every field of `_shard_compute` over a few shards, priced afresh (no memo)."""
    tp, cp, mbs = np.array([1.0, 2.0, 4.0, 8.0]), np.array([1.0, 1.0, 2.0, 1.0]), np.array([1.0, 2.0, 1.0, 4.0])
    sh = Shard(ctx.model, ctx.recipe, tp, cp, mbs, ctx.seq_len, 1.0, 1.0, ctx.imbalance)
    found = step._shard_compute(ctx, sh)
    fields = [*found.layer, *found.head_forward.values(), *found.head_backward.values(), found.embedding]
    return [np.broadcast_to(f, tp.shape) for f in fields]


def test_links_and_prices_share_the_shards_and_change_no_compute() -> None:
    base = replace(context_for(checked_scenario(SPEC)))
    acc = base.hardware.accelerator
    other = _with_accelerator(
        base,
        nic_gbit_per_s=replaced(acc.nic_gbit_per_s, value=2 * acc.nic_gbit_per_s.value),
        scaleup_gb_per_s_per_direction=replaced(acc.scaleup_gb_per_s_per_direction, value=1.0),
        scaleup_domain_gpus=replaced(acc.scaleup_domain_gpus, value=72.0),
        scaleup_name="another",
        usd_per_gpu_hour=None,
    )
    assert other.shards is base.shards
    for a, b in zip(_compute(base), _compute(other), strict=True):  # the blanked fields are read by no compute
        assert np.array_equal(a, b)


class _Unread:
    """A field value that fails on any use but an identity test (`is None`)."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"a shard's compute read .{name} of a field blanked in its memo's key")

    def __eq__(self, other: object) -> bool:
        raise AssertionError("a shard's compute compared a field blanked in its memo's key")

    __hash__ = object.__hash__


@pytest.mark.parametrize("gpu", ["a100-sxm-80gb", "h100-sxm", "gb300", "mi355x"])
def test_no_shard_compute_reads_a_blanked_field(gpu: str) -> None:
    """Every field `step._NOT_COMPUTE` blanks from the shard memo's key, on every precision of the accelerator, for a
    dense and a MoE model: a field the compute came to read would price shards of other hardware from this memo."""
    for model in ("llama3.1-8b", "mixtral-8x7b"):
        for precision in get_accelerator(gpu).precisions:
            ctx = replace(context_for(checked_scenario(SPEC | {"gpu": gpu, "model": model,
                                                                      "precision": precision})))  # fmt: skip
            unread = _with_accelerator(ctx, **dict.fromkeys(step._NOT_COMPUTE, _Unread()))
            for a, b in zip(_compute(ctx), _compute(unread), strict=True):
                assert np.array_equal(a, b)


def test_a_compute_figure_or_a_numbers_change_gets_its_own_shards() -> None:
    base = replace(context_for(checked_scenario(SPEC)))
    acc = base.hardware.accelerator
    faster = _with_accelerator(base, hbm_tbps=replaced(acc.hbm_tbps, value=2 * acc.hbm_tbps.value))
    assert faster.shards is not base.shards
    assert not all(np.array_equal(a, b) for a, b in zip(_compute(base), _compute(faster), strict=True))
    assert replace(base, seq_len=4096).shards is not base.shards
    assert replace(base, imbalance=2.0).shards is not base.shards


def test_efficiencies_with_arrays_keep_their_own_shards() -> None:
    base = replace(context_for(checked_scenario(SPEC)))
    variants = replace(base.efficiency, memory=np.array([0.8, 0.9]))
    first, second = replace(base, efficiency=variants), replace(base, efficiency=variants)
    assert first.shards is not second.shards
    assert first.shards is first.shards


def test_arrays_under_variants_are_priced_whole_without_looking_for_their_shards(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under a fit's variants no shard table is kept, so the arrays' distinct shards (`_distinct`, an np.unique over
    every element) are not worked out only to be thrown away: the shard is priced as it stands."""
    base = context_for(checked_scenario(SPEC))
    ctx = replace(base, efficiency=replace(base.efficiency, memory=np.array([0.8, 0.9])))
    tp, cp, mbs = np.array([1.0, 2.0]), np.array([1.0, 2.0]), np.array([1.0, 2.0])
    sh = Shard(ctx.model, ctx.recipe, tp, cp, mbs, ctx.seq_len, 1.0, 1.0, ctx.imbalance)
    monkeypatch.setattr(step, "_distinct", lambda sh: pytest.fail("distinct shards looked for under variants"))
    found = step._distinct_shards(ctx, sh, (tp, cp, mbs, 1.0, 1.0))
    assert np.array_equal(
        np.broadcast_to(found.embedding, (2,)), np.broadcast_to(step._shard_compute(ctx, sh).embedding, (2,))
    )


def test_a_prediction_of_a_given_layout_imports_no_numpy() -> None:
    """Whether the efficiencies hold variants is asked before any shard is looked up, so it must not import numpy
    for a prediction of plain numbers (the CLI's start-up)."""
    layout = {"tp": 2, "pp": 1, "cp": 1, "dp": 32, "mbs": 1, "zero": 1, "recompute": "none"}
    spec = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 64, "precision": "bf16", "parallelism": layout}
    code = (
        "import sys\n"
        "from perfmodel.inputs.scenario import checked_scenario\n"
        "from perfmodel.planning.predict import predict\n"
        f"predict(checked_scenario({spec!r}))\n"
        "print('numpy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", done.stderr


def test_blocks_are_shared_by_equal_spaces_only() -> None:
    ctx = context_for(checked_scenario(SPEC))
    space = Space(((256, 512),), {"tp": None})
    again = blocks(replace(ctx), Space(((256, 512),), {"tp": None}))
    assert all(a is b and m is n for (a, m), (b, n) in zip(blocks(ctx, space), again, strict=True))
    fixed = blocks(ctx, Space(((256, 512),), {"tp": 4}))
    assert {int(t) for b, _ in fixed for t in b.rows[:, 0]} == {4}


def test_network_what_ifs_share_floors_and_find_their_own_best(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two contexts that differ in the network only: the second search reuses the first one's floors (the same
    objects) and still finds the exhaustive search's best layout for its own network (which differs here)."""
    monkeypatch.setattr(search_module, "FILTER_FROM", 0)
    base = replace(context_for(checked_scenario(SPEC | {"model": "llama3.1-405b", "n_gpus": 512})))
    link = base.hardware.accelerator.scaleup_gb_per_s_per_direction
    slow = _with_accelerator(base, scaleup_gb_per_s_per_direction=replaced(link, value=link.value / 16))
    space = Space(((512, 1024),), {})
    candidates = blocks(base, space)
    chosen = []
    for ctx in (base, slow):
        found = search(ctx, space, candidates=candidates)
        assert best_layout(ctx, space, candidates) == (found.best.layout, found.evaluated)
        chosen.append(found.best.layout)
    assert search_module._prepared(base, candidates) is search_module._prepared(slow, candidates)  # floors too
    assert chosen[0] != chosen[1]
    nic = base.hardware.accelerator.nic_gbit_per_s
    faster = _with_accelerator(slow, nic_gbit_per_s=replaced(nic, value=8 * nic.value))
    for block, mask in candidates:  # what makes the sharing right: the floor reads no link (a term that did, such as
        if mask.any():  # the exposed TP or the PP sends, would need floors per network)
            lv = block.trimmed(mask)[0].layout_vars()
            assert all(np.array_equal(step.step_floor(base, lv), step.step_floor(c, lv)) for c in (slow, faster))


def test_times_without_memory_are_evaluates_times() -> None:
    """`evaluate_times` prices every time `evaluate` does, bit for bit, and leaves the memory unpriced (NaN)."""
    ctx = context_for(checked_scenario(SPEC))
    block, mask = next((b, m) for b, m in blocks(ctx, Space(((256, 512),), {})) if m.any())
    block = block.trimmed(mask)[0]
    full, times = step.evaluate(ctx, block.layout_vars()), step.evaluate_times(ctx, block.layout_vars())
    for name in (*step.BREAKDOWN, "forward_only_s", "ep_comm_exposed_s"):
        expected, got = (np.broadcast_to(getattr(r, name), block.shape) for r in (full, times))
        assert np.array_equal(expected, got)
    assert all(np.isnan(part) for part in times.memory)


def test_few_rows_across_many_shards_are_gathered_from_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sub-block of a few rows whose TP, CP and micro-batches make more combinations than it has elements (4 x 3
    elements, 4 x 3 x 3 combinations) gathers its shards from the context's table, priced once, with the numbers
    `_shard_compute` gives on the arrays themselves."""
    ctx = replace(context_for(checked_scenario(SPEC)), seq_len=2048)
    ctx.shards.pop(("shard table",), None)  # a table other tests priced into stays in the memo while it is kept
    tp, cp = np.array([[1.0], [2.0], [4.0], [8.0]]), np.array([[1.0], [2.0], [4.0], [1.0]])
    mbs = np.array([[1.0, 2.0, 4.0]])
    sh = Shard(ctx.model, ctx.recipe, tp, cp, mbs, ctx.seq_len, 1.0, 1.0, ctx.imbalance)
    direct = step._shard_compute(ctx, sh)
    gathered = step._distinct_shards(ctx, sh, (tp, cp, mbs, 1.0, 1.0))
    assert len(ctx.shards["shard table",].position) == 12
    for a, b in zip(direct.layer, gathered.layer, strict=True):
        assert np.array_equal(np.broadcast_to(a, (4, 3)), np.broadcast_to(b, (4, 3)))
    assert np.array_equal(np.broadcast_to(direct.embedding, (4, 3)), np.broadcast_to(gathered.embedding, (4, 3)))
    monkeypatch.setattr(step, "_shard_compute", lambda *a: pytest.fail("priced again"))
    step._distinct_shards(ctx, sh, (tp[:2], cp[:2], mbs, 1.0, 1.0))


@pytest.mark.parametrize(
    "spec",
    [
        SPEC,
        {"model": "deepseek-v3", "gpu": "gb300", "n_gpus": 64, "precision": "mxfp8"},  # MoE with MTP
        {"model": "nemotron-h-56b", "gpu": "h100-sxm", "n_gpus": 64, "precision": "fp8"},  # hybrid Mamba
    ],
)
def test_a_plain_shard_a_search_priced_is_read_from_the_table(
    spec: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prediction after its search (choose_layout, then the scalar step) reads its shard's compute from the
    table the search priced it into, as floats, with the numbers `_shard_compute` gives that shard's plain values;
    a shard not in the table is priced as plain numbers."""
    ctx = replace(context_for(checked_scenario(spec)), seq_len=2048)
    ctx.shards.clear()
    shards = [(2, 1, 1, 1, 1), (4.0, 2.0, 2.0, 1.0, 1.0), (8.0, 1.0, 1.0, 1.0, 1.0)]
    priced = [step._shard_compute(ctx, ctx.shard(*shard)) for shard in shards]
    step.price_shards(ctx, [tuple(map(float, shard)) for shard in shards[:2]])
    unpriced = step._distinct_shards(ctx, ctx.shard(*shards[2]), shards[2])
    monkeypatch.setattr(step, "_shard_compute", lambda *a: pytest.fail("priced again"))
    for shard, expected in zip(shards[:2], priced[:2], strict=True):
        read = step._distinct_shards(ctx, ctx.shard(*shard), shard)
        assert read == expected
        assert all(type(v) is float for v in (*read.layer, *read.head_forward.values(), read.embedding))
    assert unpriced == priced[2]
