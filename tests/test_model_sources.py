"""Every model carries the source of its shapes as data (ModelSpec.source): a zoo entry its citation, a user's model
its file (or 'given'), and a model changed over a zoo base says so rather than claim the base's source."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

from perfmodel.inputs.models import ZOO, ModelSpec
from perfmodel.inputs.record import replaced
from perfmodel.inputs.scenario import load_scenario, table_spec

MIXTRAL = "transformers 5.24 MixtralConfig defaults (mistralai/Mixtral-8x7B-v0.1)"


def test_every_zoo_model_cites_its_shapes() -> None:
    """A zoo entry added without `source` keeps ModelSpec's default, '', and fails here."""
    assert ModelSpec.__dataclass_fields__["source"].default == ""
    missing = [model_id for model_id, model in ZOO.items() if not model.source.strip()]
    assert missing == []
    assert ZOO["mixtral-8x7b"].source == MIXTRAL
    assert ZOO["deepseek-v3"].source.startswith("Megatron-Bridge 0.3.1 DeepSeekV3ModelProvider (61 layers, 7168 wide")


def test_a_source_is_no_shape() -> None:
    """Two specs of the same shapes are one model to the physics (and to the caches keyed on it)."""
    model = ZOO["llama3.1-8b"]
    assert replaced(model, source="elsewhere") == model
    assert hash(replaced(model, source="elsewhere")) == hash(model)


def test_models_show_and_list_print_the_source_from_the_spec() -> None:
    shown = json.loads(run_cli("models", "show", "mixtral-8x7b", "--format", "json").out)
    assert shown["source"] == MIXTRAL
    listed = {m["id"]: m for m in json.loads(run_cli("models", "list", "--format", "json").out)}
    assert {model_id: m["source"] for model_id, m in listed.items()} == {i: m.source for i, m in ZOO.items()}
    table = run_cli("models", "show", "nemotron-3.5-lightning-30b-a3b").out.splitlines()
    at = next(n for n, line in enumerate(table) if line.startswith("source "))
    wrapped = [table[at].removeprefix("source")] + [line for line in table[at + 1 :] if line.startswith(" ")]
    assert " ".join(part.strip() for part in wrapped) == ZOO["nemotron-3.5-lightning-30b-a3b"].source
    assert max(len(line.rstrip()) for line in table) <= 23 + 120  # the prose wraps; no line runs the source out


def test_a_users_model_says_where_its_shapes_come_from(tmp_path: Path) -> None:
    """No source: 'given' inline, the file's path from a model file; over a zoo base, the base's citation while no
    shape changes and "<file>, based on <citation>" once one does; a source given is kept."""
    own = {"id": "tiny", "layers": 2, "hidden": 64, "ffn": 128, "heads": 2, "kv_heads": 2, "vocab": 100}
    assert table_spec(own).source == "given"
    assert table_spec(own | {"source": "our paper, table 3"}).source == "our paper, table 3"
    assert table_spec({"base": "mixtral-8x7b", "id": "same", "experts": 8}).source == MIXTRAL
    cited = table_spec({"base": "mixtral-8x7b", "source": "the model card"})  # a source alone changes no shape
    assert (cited.id, cited.name, cited.source) == ("mixtral-8x7b", "Mixtral 8x7B", "the model card")
    assert table_spec({"base": "mixtral-8x7b", "experts": 16}).source == f"given, based on {MIXTRAL}"
    changed = tmp_path / "moe16.toml"
    changed.write_text('base = "mixtral-8x7b"\nid = "moe16"\nexperts = 16\n')
    tiny = tmp_path / "tiny.toml"
    tiny.write_text("".join(f"{key} = {json.dumps(value)}\n" for key, value in own.items()))
    scenario = tmp_path / "run.toml"
    for model, source in ((changed, f"{changed}, based on {MIXTRAL}"), (tiny, str(tiny))):
        scenario.write_text(f'model = "{model.name}"\ngpu = "h100-sxm"\nn_gpus = 8\n')
        assert load_scenario(scenario).model_spec().source == source
