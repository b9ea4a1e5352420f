"""Multi-token prediction on a hybrid model (issue 32): Nemotron 3.5 Lightning, Nemotron 3 Nano with two MTP depths
of one shared attention + MoE module kept in BF16. Its parameter count against the config arithmetic, the MTP passes'
FLOPs against their closed form, shared weights held once, their compute at BF16, and bad patterns refused."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from perfmodel.errors import FieldError
from perfmodel.inputs.models import ZOO, ModelSpec
from perfmodel.inputs.precision import RECIPES

NANO, LIGHTNING = ZOO["nemotron-3-nano-30b-a3b"], ZOO["nemotron-3.5-lightning-30b-a3b"]
_GB200_ROW: dict[str, Any] = {
    "gpu": "gb200", "n_gpus": 8, "precision": "mxfp8", "tp": 1, "pp": 1, "cp": 1, "ep": 8, "mbs": 2, "gbs": 512,
    "seq_len": 8192,
}  # fmt: skip
"""measured_runs.csv's Nemotron-3.5-Lightning-30B-A3B row (Megatron-Bridge performance-summary.md, NeMo 26.08)."""


def _mtp_module_params(hidden: int = 2688) -> int:
    """One MTP module of the Lightning recipe, module by module as megatron-core 0.19.2 builds it
    (transformer/multi_token_prediction.py MultiTokenPredictionLayer: enorm, hnorm, eh_proj 2h -> h without bias,
    a HybridStack of the pattern '*E' with no post-norm, final_layernorm), with Nano's shapes (Nemotron3NanoProvider:
    32 query heads of 128 in 2 groups, 128 experts of 1856 and a shared expert of 3712, squared ReLU, no biases;
    each hybrid layer a pre-norm and its mixer)."""
    attention = hidden * 32 * 128 + 2 * hidden * 2 * 128 + 32 * 128 * hidden
    moe = 128 * hidden + 128 * 2 * hidden * 1856 + 2 * hidden * 3712
    return 3 * hidden + 2 * hidden * hidden + (hidden + attention) + (hidden + moe)


def test_lightning_is_nano_and_one_mtp_module_held_once() -> None:
    """mtp_use_repeated_layer: MultiTokenPredictionBlock._build_layers builds one layer for both depths."""
    assert LIGHTNING.main_params == NANO.params
    assert LIGHTNING.params == NANO.params + _mtp_module_params()  # 32,913,263,168
    assert LIGHTNING.params == 32_913_263_168
    assert LIGHTNING.active_params == NANO.active_params  # the main model's, as DeepSeek-V3's 37B
    unshared = ModelSpec(**_fields(False))
    assert unshared.params == NANO.params + 2 * _mtp_module_params()
    assert unshared.mtp_params == 2 * LIGHTNING.mtp_params


def _fields(shared: bool) -> dict[str, Any]:
    from dataclasses import fields

    return {f.name: getattr(LIGHTNING, f.name) for f in fields(LIGHTNING) if f.init} | {"mtp_shared_weights": shared}


def test_the_mtp_passes_add_their_closed_form_flops() -> None:
    """Per depth: 6 x (the eh_proj 2h x h, attention's Q, K, V and output, the router with 6 routed and 2 shared
    experts of 1856 (squared ReLU: two matrices each), the LM head h x vocab) plus 3 x its one attention layer's
    causal scores and context (2 x 2 x s x q_dim / 2 forward)."""
    h, seq, vocab, q_dim, kv_dim = 2688, 8192, 131072, 32 * 128, 2 * 128
    gemms = 2 * h * h + (2 * h * q_dim + 2 * h * kv_dim) + (128 * h + 8 * 2 * h * 1856) + h * vocab
    per_depth = 6 * gemms + 3 * seq * 2 * q_dim
    added = LIGHTNING.model_flops_per_token(seq) - NANO.model_flops_per_token(seq)
    assert added == pytest.approx(2 * per_depth, rel=1e-12)
    # Megatron-Bridge's table: 807 TFLOP/s at 28,672 tokens/s per GPU is 28.15 GFLOP a token for Lightning, 776 at
    # 34,816 (NeMo 26.06.01, GB200) 22.29 for Nano (measured_runs.csv): both count the vocabulary padded and no
    # eh_proj; the MTP passes add 3.2% less than they add here, 3.0% of it the eh_proj (6 x 2h x h a token at each
    # of the 2 depths): within 5%.
    assert added == pytest.approx(28.15e9 - 22.29e9, rel=0.05)


def test_shared_mtp_weights_are_held_once() -> None:
    """Each set of MTP weights adds the same weights, gradients and optimizer state per rank: Lightning's one set
    sits halfway between Nano's none and two unshared ones."""
    import perfmodel

    memory = {
        name: perfmodel.predict(model=model, **_GB200_ROW).to_dict()["memory_gb"]
        for name, model in (
            ("none", NANO.id),
            ("shared", LIGHTNING.id),
            ("two", {"base": LIGHTNING.id, "mtp_shared_weights": False}),
        )
    }
    for part in ("weights", "gradients", "optimizer"):
        one = memory["shared"][part] - memory["none"][part]
        assert one > 0
        assert memory["two"][part] - memory["shared"][part] == pytest.approx(one, rel=1e-9)


def test_each_mtp_depth_keeps_its_layers_and_its_logits() -> None:
    """On the last rank (here the only one) each depth holds its module's two layers' activations (in mean-layer
    units) for the backward, and its own logits: its loss saves its softmax as the main head's does."""
    import perfmodel
    from perfmodel.physics import memory, moe
    from perfmodel.physics.workload import padded_vocab
    from perfmodel.planning.predict import context_for

    ctx = context_for(perfmodel.load_scenario(model=LIGHTNING.id, **_GB200_ROW))
    sh = ctx.shard(1.0, 1.0, 2.0, 8.0, 1.0)
    logits = memory.logits_bytes(sh.tokens, padded_vocab(LIGHTNING, 1.0))
    saved = partial(moe.mean_layer_saved, sh, ctx.recipe)
    layers = memory.held(saved, "none", 52.0 + 4) - memory.held(saved, "none", 52.0)
    held = {
        m: perfmodel.predict(model=m, **_GB200_ROW).to_dict()["memory_gb"]["activations"]
        for m in (NANO.id, LIGHTNING.id)
    }
    assert (held[LIGHTNING.id] - held[NANO.id]) * 1e9 == pytest.approx(2 * logits + layers, rel=1e-9)


def test_the_mtp_module_is_priced_by_its_layer_kinds_in_bf16() -> None:
    """Under MXFP8 the module's attention and MoE layers run at BF16 speed (keep_mtp_spec_in_bf16), each priced as
    the main pattern's layer of its kind; each depth adds the module and one more LM head pass to the last rank."""
    import perfmodel
    from perfmodel.physics import step
    from perfmodel.physics.compute import Rates
    from perfmodel.planning.predict import context_for

    ctx = context_for(perfmodel.load_scenario(model=LIGHTNING.id, **_GB200_ROW))
    sh, rates = ctx.shard(1.0, 1.0, 2.0, 8.0, 1.0), Rates(ctx.hardware.accelerator, ctx.efficiency)
    compute = step._shard_compute(ctx, sh)
    attention, moe_layer = (step._pattern_times(ctx, sh, RECIPES["bf16"], rates, kind, 1) for kind in "*E")
    assert compute.mtp.forward == pytest.approx(attention.forward + moe_layer.forward, rel=1e-12)
    assert compute.mtp.backward == pytest.approx(attention.backward + moe_layer.backward, rel=1e-12)
    quantised = step._pattern_times(ctx, sh, ctx.recipe, rates, "*E", 1)
    assert compute.mtp.forward > quantised.forward
    without = perfmodel.predict(model=NANO.id, **_GB200_ROW).to_dict()
    with_mtp = perfmodel.predict(model=LIGHTNING.id, **_GB200_ROW).to_dict()
    head = compute.head_forward["total"] + compute.head_backward["total"]
    microbatches = 512 / (2 * 8)
    added = with_mtp["breakdown"]["compute_s"] - without["breakdown"]["compute_s"]
    expected = microbatches * 2 * (compute.mtp.forward + compute.mtp.backward + head)
    assert added == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"mtp_pattern": "*Q"}, "mtp_pattern"),  # not a layer kind
        ({"mtp_pattern": "*-"}, "mtp_pattern"),  # Nano has no dense MLP layer to take the shapes of
        ({"mtp_pattern": ""}, "mtp_pattern"),  # a hybrid's MTP module is a pattern
        ({"mtp_layers": 0}, "mtp_pattern"),  # MTP settings without modules
        ({"mtp_layers": 0, "mtp_pattern": "", "mtp_shared_weights": False}, "mtp_bf16"),
    ],
)
def test_an_mtp_pattern_the_physics_cannot_price_is_refused_by_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(FieldError) as caught:
        ModelSpec(**(_fields(True) | change))
    assert caught.value.field == field


def test_an_mtp_pattern_needs_a_hybrid_model() -> None:
    with pytest.raises(FieldError) as caught:
        ModelSpec(**{"layers": 2, "hidden": 64, "ffn": 128, "heads": 4, "kv_heads": 4, "vocab": 100},
                  mtp_layers=1, mtp_pattern="*-")  # fmt: skip
    assert caught.value.field == "mtp_pattern"


def test_a_bad_mtp_pattern_in_a_model_file_is_one_line_with_exit_code_2(tmp_path: Path) -> None:
    model = tmp_path / "lightning.toml"
    model.write_text('base = "nemotron-3.5-lightning-30b-a3b"\nmtp_pattern = "*X"\n')
    result = run_cli("predict", "--model", str(model), "--gpu", "gb200", "--gpus", "8")
    assert (result.code, result.out) == (2, "")
    assert result.err.count("\n") == 1 and "mtp_pattern" in result.err and "'X'" in result.err


def test_the_experts_line_names_the_mtp_depths() -> None:
    import perfmodel
    from perfmodel.outputs.experts import experts_text

    text = experts_text(perfmodel.predict(model=LIGHTNING.id, **_GB200_ROW))
    assert "in 23 of 52 layers, and 2 MTP depths of '*E' sharing one set of weights;" in text
