"""`grad_reduce_in_fp32`: Megatron-Core's FP32 gradient buffer (DistributedDataParallelConfig.grad_reduce_in_fp32,
megatron-core 0.7.0 distributed_data_parallel.py L106: the grad buffer's dtype is FP32 when it is set), as Llama 3
405B trained ("FP32 gradient accumulation and FP32 reduce-scatter": ../shared/data/campaigns.md section 1, row 1a,
arXiv:2407.21783 section 3.3.2). The data-parallel reduce-scatter moves 4 bytes per gradient instead of 2, and each
rank holds 4 bytes per gradient; nothing else changes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.scenario import load_scenario
from perfmodel.outputs.explain import explain
from perfmodel.physics.collectives import all_reduce, group_links, reduce_scatter
from perfmodel.planning.predict import Prediction, context_for, predict

LAYOUT = {"tp": 8, "pp": 2, "cp": 1, "vp": 1, "dp": 4, "mbs": 1, "gbs": 128, "recompute": "none", "zero": 1}
KEYS: dict[str, Any] = {"model": "llama3.1-70b", "gpu": "h100-sxm", "n_gpus": 64, "parallelism.seq_len": 8192} | {
    f"parallelism.{k}": v for k, v in LAYOUT.items()
}


def _predict(fp32: bool) -> Prediction:
    return predict(load_scenario(None, KEYS | {"grad_reduce_in_fp32": fp32}))


def _reduce_scatter(p: Prediction) -> tuple[float, float, float, str]:
    """(t_RS seconds, buckets, gradient bytes, dtype) of explain's data-parallel part."""
    part = next(part for part in explain(p).parts if part.key == "dp_comm_exposed_s")
    by_symbol = {str(q.symbol): q for q in part.quantities}
    rs = by_symbol["t_RS"]
    found = re.search(r"reduce-scatter of ([\d.]+) GB of (\w+) gradients", rs.meaning)
    assert found is not None, rs.meaning
    return rs.value, by_symbol["n_buckets"].value, float(found.group(1)) * 1e9, found.group(2)


def test_the_default_holds_and_reduces_in_bf16_and_the_key_in_fp32() -> None:
    """The key sets both: the buffer the rank holds and what the reduction moves (torchtitan's FSDP2 reduces in FP32
    from BF16 gradients: tests/test_stack_knobs.py)."""
    plain = context_for(load_scenario(None, KEYS))
    fp32 = context_for(load_scenario(None, KEYS | {"grad_reduce_in_fp32": True}))
    assert (plain.recipe.grad_buffer_bytes, plain.recipe.grad_reduce_bytes) == (2, 2)
    assert (fp32.recipe.grad_buffer_bytes, fp32.recipe.grad_reduce_bytes) == (4, 4)


def test_the_reduce_scatter_moves_twice_the_bytes() -> None:
    """Closed form: the same buckets, each of twice the bytes, over the same DP group (4 ranks at stride TP 8)."""
    bf16, fp32 = _predict(False), _predict(True)
    t_bf16, buckets, bytes_bf16, dtype_bf16 = _reduce_scatter(bf16)
    t_fp32, buckets_fp32, bytes_fp32, dtype_fp32 = _reduce_scatter(fp32)
    assert (dtype_bf16, dtype_fp32) == ("BF16", "FP32") and buckets_fp32 == buckets
    assert bytes_fp32 == pytest.approx(2 * bytes_bf16, rel=1e-2)  # explain prints 3 significant figures
    ctx = context_for(fp32.scenario)
    links = group_links(ctx.tiers, ctx.efficiency, 4.0, 8.0)
    doubled = 2 * bytes_bf16  # the rank's gradients at 4 bytes each instead of 2
    assert t_fp32 == pytest.approx(buckets * float(reduce_scatter(doubled / buckets, links)), rel=1e-2)
    assert t_fp32 > t_bf16


def test_explain_names_the_all_reduces_dtype_without_zero() -> None:
    """ZeRO-0 all-reduces the whole gradient buffer: explain says FP32 and twice the bytes, as it does for ZeRO-1's
    reduce-scatter."""
    meanings = []
    for fp32 in (False, True):
        keys = KEYS | {"parallelism.zero": 0, "grad_reduce_in_fp32": fp32}
        parts = explain(predict(load_scenario(None, keys))).parts
        part = next(part for part in parts if part.key == "dp_comm_exposed_s")
        meanings.append(next(q.meaning for q in part.quantities if str(q.symbol) == "t_AR"))
    found = [re.search(r"all-reduce of ([\d.]+) GB of (\w+) gradients", meaning) for meaning in meanings]
    assert all(found), meanings
    (gb_bf16, bf16), (gb_fp32, fp32) = (m.groups() for m in found if m)
    assert (bf16, fp32) == ("BF16", "FP32") and float(gb_fp32) == pytest.approx(2 * float(gb_bf16), rel=1e-2)


def test_each_rank_holds_fp32_gradients_and_nothing_else_moves() -> None:
    """ZeRO-1 keeps every rank's whole gradient buffer: it doubles; weights, optimizer state, activations and the
    compute do not change."""
    bf16, fp32 = _predict(False), _predict(True)
    assert fp32.layout == bf16.layout
    a, b = bf16.step.memory, fp32.step.memory
    assert float(b.gradients) == pytest.approx(2 * float(a.gradients), rel=1e-12)
    assert (b.weights, b.optimizer, b.activations, b.runtime) == (a.weights, a.optimizer, a.activations, a.runtime)
    assert fp32.step.compute_s == bf16.step.compute_s


def test_the_default_scenario_is_unchanged() -> None:
    assert _predict(False).step_time_s == predict(load_scenario(None, KEYS)).step_time_s


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('grad_reduce_in_fp32 = "yes"', "field 'grad_reduce_in_fp32': Input should be a valid boolean"),
        ('grad_reduce_in_fp32 = true\nstack = "torchtitan"', "grad_reduce_in_fp32 is Megatron-Core's gradient"),
    ],
)
def test_bad_values_are_refused_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(f'model = "llama3.1-8b"\ngpu = "h100-sxm"\n{text}\n')
    with pytest.raises(PerfmodelError) as raised:
        load_scenario(path)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_hybrid_sharding_all_reduces_the_shards_in_fp32_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """ZeRO-3 within groups of 8 ranks, replicated across 8 groups (shard_group): every gradient all-reduce, the
    shards' across the groups included, moves twice the bytes over the same ranks."""
    from perfmodel.physics import step

    calls: list[tuple[float, float]] = []

    def recorded(size_bytes: Any, links: Any, tiers: Any) -> Any:
        calls.append((float(size_bytes), float(links.size)))
        return all_reduce(size_bytes, links, tiers)

    monkeypatch.setattr(step, "all_reduce", recorded)
    layout = {"tp": 1, "pp": 1, "cp": 1, "vp": 1, "dp": 64, "mbs": 1, "gbs": 128, "recompute": "full", "zero": 3}
    keys = {"model": "llama3.1-8b", "gpu": "h100-sxm", "n_gpus": 64, "parallelism.seq_len": 8192} | {
        f"parallelism.{k}": v for k, v in (layout | {"shard_group": 8}).items()
    }
    seen = []
    for fp32 in (False, True):
        calls.clear()
        predict(load_scenario(None, keys | {"grad_reduce_in_fp32": fp32}))
        seen.append(sorted(calls))
    bf16, fp32_calls = seen
    assert len(bf16) == 2 and [ranks for _, ranks in fp32_calls] == [ranks for _, ranks in bf16] == [8.0, 8.0]
    assert [size for size, _ in fp32_calls] == pytest.approx([2 * size for size, _ in bf16], rel=1e-12)
