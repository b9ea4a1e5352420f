"""The sourced Megatron-Bridge performance recipes (fitting.recipes): one matcher, one note, dense and MoE rows."""

import csv
import itertools

from perfmodel.fitting.recipes import recipe_for
from perfmodel.fitting.runs import DATA, _with_recipe, bundled_runs

LLAMA_LAYOUT = {"tp": 1, "pp": 1, "vp": 1, "mbs": 2}
"""measured_runs.csv line 155's parallelism as fitting.runs reads it: a dense row, with no EP."""


def _row(line: int) -> dict[str, str]:
    """measured_runs.csv's row at this line (the header is line 1), as the bundled runs' ids number them."""
    with (DATA / "measured_runs.csv").open(newline="", encoding="utf-8") as handle:
        return next(itertools.islice(csv.DictReader(handle), line - 2, None))


def test_a_dense_recipe_matches_its_precision_layout_and_sharding_only() -> None:
    """measured_runs.csv line 155 (NeMo 26.02.01, Llama 3 70B on 64 GB200, FP8, TP1 PP1 MBS 2, Megatron-FSDP (64))
    runs megatron-bridge 0.6.2 perf_recipes/llama/gb200/llama3.py llama3_70b_pretrain_64gpu_gb200_fp8cs_config: no
    recompute, 40 layers' activations offloaded (L276-278). The same row under DDP, in MXFP8, at MBS 1 or with experts
    split over EP 2 runs no sourced recipe."""
    row = _row(155)
    found = recipe_for(row, LLAMA_LAYOUT)
    assert found is not None and "llama3_70b_pretrain_64gpu_gb200_fp8cs_config" in found.source
    assert (found.run_settings, found.recompute) == ({"activation_offload_layers": 40}, "none")
    assert recipe_for(row | {"fsdp_or_zero": "DDP (FSDP=0)"}, LLAMA_LAYOUT) is None
    assert recipe_for(row | {"dtype": "MXFP8"}, LLAMA_LAYOUT) is None
    assert recipe_for(row, LLAMA_LAYOUT | {"mbs": 1}) is None
    assert recipe_for(row, LLAMA_LAYOUT | {"ep": 2}) is None


def test_dense_and_moe_rows_note_their_recipe_alike() -> None:
    """Line 155 (NeMo 26.02.01, the GB200 Llama 3 70B recipe above) and line 94 (NeMo 26.04.01, Qwen3-235B-A22B on
    256 H100s, FP8, TP2 PP8 VP4 EP32 MBS1: perf_recipes/qwen/h100/qwen3_moe.py, 'alltoall' with the EP overlap) both
    predate the recipes' NeMo 26.08: each notes the settings it runs, then the recipe, as an assumption."""
    runs = {r.id: r for r in bundled_runs()[0]}
    for line, settings, container in (
        (155, "activation_offload_layers 40, recompute none", "NeMo 26.02.01 container"),
        (94, "dispatcher alltoall, ep_microbatch_overlap True", "NeMo 26.04.01 container"),
    ):
        (note,) = [a for a in runs[f"measured_runs.csv:{line}"].assumptions if "megatron-bridge 0.6.2" in a]
        assert note.startswith(f"{settings}: the recipe of this layout as of NeMo 26.08 (megatron-bridge 0.6.2")
        assert note.endswith(f"); for {container} an assumption")


def test_a_row_stating_a_recompute_does_not_run_an_offloading_recipe() -> None:
    """Megatron-Core offloads activations only without recompute (physics/offload.py): line 155's layout stated with a
    full recompute did not run the GB200 recipe's offload of 40 layers, and is not given it; left blank, it is."""
    row = _row(155)
    for recompute, settings in (("full", {}), (None, {"activation_offload_layers": 40})):
        parallelism = LLAMA_LAYOUT | {"recompute": recompute}
        assert _with_recipe(row, "llama3.1-70b", parallelism, [])[1] == settings
