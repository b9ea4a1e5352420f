"""explain's data-parallel part of a MoE model: each quantity of the routed experts' group (suffix _E) says it is
theirs, so a reader can tell t_AG_w_E from t_AG_w; the dense group's texts stay as they were."""

from __future__ import annotations

import pytest

from perfmodel.inputs.scenario import load_scenario
from perfmodel.outputs.explain import explain
from perfmodel.planning.predict import predict


@pytest.mark.parametrize("zero", [1, 3])
def test_expert_group_quantities_name_their_group(zero: int) -> None:
    """Qwen3-30B-A3B on 16 H100, EP8: expert DP = 16 / 8 = 2."""
    keys = {"model": "qwen3-30b-a3b", "gpu": "h100-sxm", "n_gpus": 16, "precision": "fp8"}
    layout = {"tp": 1, "pp": 1, "cp": 1, "vp": 1, "ep": 8, "mbs": 1, "gbs": 64, "recompute": "none", "zero": zero}
    p = predict(load_scenario(None, keys | {f"parallelism.{k}": v for k, v in layout.items()}))
    part = next(part for part in explain(p).parts if part.key == "dp_comm_exposed_s")
    experts = [q for q in part.quantities if str(q.symbol).endswith("_E")]
    dense = [q for q in part.quantities if str(q.symbol).startswith(("t_AG", "t_RS", "n_buckets", "n_units"))]
    assert len(experts) == 3 and len(dense) == 2 * len(experts)  # ZeRO-1: RS, AG, buckets; ZeRO-3: AG, RS, layers
    assert all(q.meaning.endswith("(routed experts over expert DP = 2 ranks)") for q in experts)
    assert not any("routed experts" in q.meaning for q in dense if q not in experts)
