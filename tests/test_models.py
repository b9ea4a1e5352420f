"""Model zoo: exact parameter counts and training FLOPs per token."""

import pytest

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.models import ZOO, ModelSpec, get_model
from perfmodel.inputs.record import replaced


@pytest.mark.parametrize(
    ("model_id", "params"),
    [
        # Exact counts of the Hugging Face checkpoints (meta-llama/Llama-3.1-{8B,70B,405B}), as the issue states.
        ("llama3.1-8b", 8_030_261_248),
        ("llama3.1-70b", 70_553_706_496),
        ("llama3.1-405b", 405_853_388_800),
        # meta-llama/Llama-2-70b-hf: 68,976,648,192 parameters (its safetensors index, total_size / 2 bytes).
        ("llama2-70b", 68_976_648_192),
    ],
)
def test_exact_parameter_counts(model_id: str, params: int) -> None:
    assert get_model(model_id).params == params


def test_gpt3_is_the_175b_model() -> None:
    # Brown et al. 2020 Table 2.1: "GPT-3 175B" with 96 layers, d_model 12288, 96 heads (174.6B with the 50,257 vocab).
    assert 174e9 < get_model("gpt3-175b").params < 175.5e9


def test_llama3_8b_flops_per_token_match_megatron_bridge() -> None:
    # measured_runs_sources.md: Megatron-Bridge counts 51.5 GFLOP/token for Llama3-8B (31357 tok/s -> 1614 TF/s),
    # i.e. 6 x (non-embedding params + LM head) + causal attention at seq 8192.
    assert get_model("llama3.1-8b").model_flops_per_token(8192) / 1e9 == pytest.approx(51.5, rel=0.005)


def test_flops_per_token_is_6n_plus_causal_attention() -> None:
    m = get_model("llama3.1-70b")
    s = 8192
    non_embedding = m.params - m.vocab * m.hidden - m.vocab * m.hidden - m.hidden - 2 * m.layers * m.hidden
    six_n = 6 * (non_embedding + m.vocab * m.hidden)  # matmul weights + LM head
    causal_attention = 3 * m.layers * (2 * 2 * s * m.hidden) / 2
    assert m.model_flops_per_token(s) == pytest.approx(six_n + causal_attention, rel=1e-12)


def test_mlperf_405b_vocabulary_override() -> None:
    # mlperf_benchmarks.md: MLPerf's Llama 3.1 405B uses the 32,000-token Mixtral tokenizer.
    base = get_model("llama3.1-405b")
    mlperf = replaced(base, vocab=32000)
    assert base.params - mlperf.params == 2 * (128256 - 32000) * 16384


def test_unknown_model_lists_valid_ids() -> None:
    with pytest.raises(PerfmodelError) as err:
        get_model("llama4")
    assert all(model_id in str(err.value) for model_id in ZOO)


def test_inconsistent_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="multiple of heads"):
        ModelSpec(layers=2, hidden=100, ffn=400, heads=3, kv_heads=1, vocab=10)


def test_a_model_table_is_held_to_the_limits_of_model_spec() -> None:
    """A scenario's [model] table (ModelOverride, derived by record.overriding) refuses a value past any of
    ModelSpec's limits with the message ModelSpec's own check gives, and takes the value at the limit."""
    from pydantic import ValidationError

    from perfmodel.inputs.checking import check, model_of
    from perfmodel.inputs.record import as_dict, input_fields
    from perfmodel.inputs.scenario_check import MODEL_OVERRIDE

    def message(model: object, raw: dict[str, object]) -> str:
        with pytest.raises(ValidationError) as caught:
            check(model, raw)
        return str(caught.value.errors()[0]["msg"])

    spec, shapes = model_of(ModelSpec), as_dict(ZOO["llama3.1-8b"])
    bounded = [(f.name, limits) for f in input_fields(ModelSpec) if (limits := f.metadata.get("limits", {}))]
    assert len(bounded) == 48
    for name, limits in bounded:
        for key, past in (("gt", 0), ("ge", -1), ("le", 1)):
            if key in limits:
                assert message(spec, shapes | {name: limits[key] + past}) == message(
                    MODEL_OVERRIDE, {name: limits[key] + past}
                )
                if key != "gt":
                    assert getattr(check(MODEL_OVERRIDE, {name: limits[key]}), name) == limits[key]


def test_a_changed_zoo_model_is_not_named_as_the_zoo_one() -> None:
    """A model file `base = "mixtral-8x7b"` with 16 experts and its own id printed 'Mixtral 8x7B on 64 x ...', the
    zoo model's heading: a comparison of the two read alike. A changed base names the model it is; one that changes
    nothing, or gives its own name, keeps it."""
    from perfmodel.inputs.scenario import table_spec

    assert table_spec({"base": "mixtral-8x7b", "id": "my-moe", "experts": 16}).name == "Mixtral 8x7B (my-moe)"
    assert table_spec({"base": "llama3.1-405b", "vocab": 32000}).name == "Llama 3.1 405B (llama3.1-405b-custom)"
    assert table_spec({"base": "llama3.1-8b", "id": "ours"}).name == "Llama 3.1 8B"
    assert table_spec({"base": "llama3.1-8b", "layers": 16, "name": "Half 8B"}).name == "Half 8B"
