"""`perfmodel models list` shows what a MoE planner sizes by: experts, routing, expert width, dense layers, MTP,
attention kind, dispatcher, and the main and active parameter counts; the JSON carries the two counts too."""

from __future__ import annotations

import json

from conftest import run_cli


def test_the_moe_table_lists_every_moe_model_with_its_routing() -> None:
    out = run_cli("models", "list").out
    dense, _, moe = out.partition("\nMixture-of-experts models")
    rows = {line.split()[0]: line.split() for line in moe.splitlines()[3:]}
    assert set(rows) == {"deepseek-v3", "deepseek-v3.2", "llama4-scout", "llama4-maverick", "kimi-k2", "qwen3-30b-a3b",
                         "qwen3-235b-a22b", "gpt-oss-20b", "gpt-oss-120b", "mixtral-8x7b", "mixtral-8x22b",
                         "nemotron-3-nano-30b-a3b", "nemotron-3.5-lightning-30b-a3b", "qwen3-next-80b-a3b"}  # fmt: skip
    assert rows["deepseek-v3.2"][-2] == "mla+dsa"  # sparse attention (ModelSpec.index_topk)
    # DeepSeek-V3 (arXiv:2412.19437, section 4.2): 671B total, 37B active, 256 routed experts top-8 + 1 shared,
    # expert width 2048, first 3 layers dense, one MTP module; MLA.
    assert rows["deepseek-v3"][1:] == ["671,026,404,352", "37,552,282,624", "256", "8", "1", "2048", "3", "1", "mla",
                                       "flex"]  # fmt: skip
    assert rows["nemotron-3.5-lightning-30b-a3b"][-4:] == ["2x*E", "shared", "gqa", "alltoall"]  # one '*E' module
    assert rows["gpt-oss-120b"][3:5] == ["128", "4"] and rows["gpt-oss-120b"][-1] == "alltoall"
    assert "llama3.1-8b" in dense and "llama3.1-8b" not in moe


def test_the_json_has_main_and_active_counts() -> None:
    models = {m["id"]: m for m in json.loads(run_cli("models", "list", "--format", "json").out)}
    assert models["deepseek-v3"]["main_params"] == 671_026_404_352
    assert models["deepseek-v3"]["params"] > models["deepseek-v3"]["main_params"]  # with the MTP module
    assert models["llama3.1-8b"]["active_params"] == models["llama3.1-8b"]["params"]


def test_models_show_gives_one_models_shapes_counts_and_source() -> None:
    """`models show ID` as `hardware show ID`: DeepSeek-V3 (arXiv:2412.19437, section 4.2: 671B total, 37B active,
    61 layers, 7168 wide, 256 routed experts top-8) with every shape, the counts models list prints, and the config
    its shapes come from (ModelSpec.source); an unknown id is one line naming the nearest."""
    listed = {m["id"]: m for m in json.loads(run_cli("models", "list", "--format", "json").out)}
    shown = json.loads(run_cli("models", "show", "deepseek-v3", "--format", "json").out)
    assert shown["source"].startswith("Megatron-Bridge 0.3.1 DeepSeekV3ModelProvider (61 layers, 7168 wide")
    assert "transformers 5.24 DeepseekV3Config (128 heads" in shown["source"]
    assert shown == listed["deepseek-v3"] and (shown["layers"], shown["hidden"], shown["experts"]) == (61, 7168, 256)
    lines = run_cli("models", "show", "deepseek-v3").out.splitlines()[2:]
    table = dict(line.split(maxsplit=1) for line in lines if not line.startswith(" "))  # not the source's wrapped lines
    assert table["main_params"] == "671,026,404,352" and table["active_params"] == "37,552,282,624"
    assert table["top_k"] == "8" and table["tied_embeddings"] == "false"
    unknown = run_cli("models", "show", "llama3-8b")
    assert unknown.code == 2 and unknown.err.startswith("error: models show: unknown model 'llama3-8b' (did you mean")
