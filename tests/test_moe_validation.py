"""The bundled MoE rows in validation: which are taken and why others are not, and one published row per model
predicted with the bundled calibration within the issue's leave-one-model-out tolerance (the dense parameters never
saw MoE rows; the MoE stage's entries did, and leave it out per model: docs/moe_validation.md)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from perfmodel.fitting.runs import DROPPING_ASSUMPTION, DROPPING_ROUTING, MOE_SOURCE, bundled_runs
from perfmodel.fitting.validation import NOT_FITTED, moe_fitted, prepare
from perfmodel.physics.calibration import resolve
from perfmodel.physics.step import evaluate
from perfmodel.planning.predict import layout_vars

TOLERANCE = 0.12
"""The issue's target for an MoE model held out of the fit."""


def _run(row: str):  # type: ignore[no-untyped-def]
    runs, _ = bundled_runs()
    return next(r for r in runs if r.id == f"measured_runs.csv:{row}")


def _predicted(run, calibration) -> float:  # type: ignore[no-untyped-def]
    item = prepare(run, calibration)
    return float(item.predicted(calibration.efficiency(item.family)))


def _error(row: str) -> float:
    run = _run(row)
    return _predicted(run, resolve(None)) / run.measured - 1


# Megatron-Bridge docs/performance-summary.md (commit 067f987df, 2026-08-22), NeMo 26.08 container, GB300, MXFP8,
# sequence 4096 (measured_runs.csv rows 2, 8, 10): DeepSeek-V3 on 256 GPUs TP1 PP2 VP8 EP32 MBS1 GBS4096, 6,288
# tokens/s/GPU; Qwen3-30B-A3B on 8 GPUs TP1 PP1 EP8 MBS8 GBS512, 44,544; Qwen3-235B-A22B on 256 GPUs TP1 PP4 VP12
# EP32 MBS2 GBS8192, 8,816. docs.nvidia.com NeMo 25.04 performance summary (stored excerpt, measured_runs.csv row 301):
# Mixtral 8x7B on 64 GB200s, FP8, TP1 PP1 EP8 MBS2 GBS256, 19,275 tokens/s/GPU.
@pytest.mark.parametrize(
    ("row", "model"),
    [
        ("2", "deepseek-v3"),
        ("8", "qwen3-30b-a3b"),
        ("10", "qwen3-235b-a22b"),
        ("301", "mixtral-8x7b"),
    ],
)
def test_one_published_row_per_model_within_tolerance(row: str, model: str) -> None:
    run = _run(row)
    assert run.source.startswith(MOE_SOURCE) and model in str(run.scenario["model"])
    assert abs(_error(row)) < TOLERANCE


MIXTRAL_8X22B_ROWS = {"293": ("b200", "2025-02", 2232.0), "302": ("gb200", "2025-04", 2731.0)}
"""docs.nvidia.com NeMo performance summary (stored excerpt), measured_runs.csv rows 293 and 302, beside Mixtral 8x7B's
292 and 301 of the same tables: Mixtral 8x22B on 256 B200s (NeMo 25.02 container) and 256 GB200s (25.04), FP8-CS,
sequence 65,536, TP2 PP4 CP8 VP14 EP8, MBS1 GBS64 (printed swapped; GA=16 = GBS / (DP 4 x MBS) settles them), 2,232
and 2,731 tokens/s/GPU: GPU, release and measured tokens/s/GPU by row."""


@pytest.mark.parametrize("row", sorted(MIXTRAL_8X22B_ROWS))
def test_mixtral_8x22b_rows_are_priced_as_mixtral_8x7b_rows_but_not_fitted(row: str) -> None:
    """Priced as 8x7B's rows are: the zoo entry (NeMo 2.4.0's MixtralConfig8x22B), FP8 at the container's release,
    the published layout, expert TP 1; once excluded as a model of no bundled source, which DeepSeek-V4 still is.
    Validated, not fitted (validation.MOE_NOT_FITTED; docs/moe.md): they read 22-32% fast, a gap the MoE stage cannot
    close."""
    gpu, released, measured = MIXTRAL_8X22B_ROWS[row]
    run, (_, excluded) = _run(row), bundled_runs()
    assert run.source == f"{MOE_SOURCE}: Mixtral-8x22B" and run.scenario["model"] == "mixtral-8x22b"
    assert (run.scenario["gpu"], run.scenario["precision"], run.released) == (gpu, "fp8", released)
    assert (run.metric, run.measured) == ("tokens_per_s_per_gpu", measured)
    layout = {"seq_len": 65536, "gbs": 64, "mbs": 1, "tp": 2, "pp": 4, "cp": 8, "vp": 14, "ep": 8, "etp": 1}
    assert {k: run.scenario["parallelism"][k] for k in layout} == layout
    assert not moe_fitted(prepare(run, resolve(None)))
    assert 0.15 < _error(row) < 0.35
    reasons = {e.id: e.reason for e in excluded}
    assert f"measured_runs.csv:{row}" not in reasons and "Mixtral" not in " ".join(reasons.values())
    assert reasons["measured_runs.csv:4"].startswith("DeepSeek-V4-Flash: its shapes are in none of the sources")


@pytest.mark.xfail(strict=True, reason="Mixtral 8x22B's 64K-token rows read 22-32% fast (docs/moe.md)")
@pytest.mark.parametrize("row", sorted(MIXTRAL_8X22B_ROWS))
def test_mixtral_8x22b_rows_within_tolerance(row: str) -> None:
    """Strict: this fails the day their gap is priced (full recompute, which no source states for them, would read
    both within 5%), so the marker comes off."""
    assert abs(_error(row)) < TOLERANCE


def test_gpt_oss_hopper_row_within_tolerance() -> None:
    """Megatron-Bridge performance summary (archive), NeMo 26.04.01 container, row 84: GPT-OSS-120B on 64 H100s, BF16,
    TP1 PP4 EP8 MBS1 GBS1280, 5,824 tokens/s/GPU. Its rows stay out of the MoE stage's fit
    (validation.MOE_NOT_FITTED), so this is a held-out prediction; its H100 recipe keeps the provider's 'alltoall'
    dispatcher without EP overlap and recomputes the norms and the experts' activation (megatron-bridge 0.6.2
    perf_recipes/gpt_oss/h100/gpt_oss.py L39-40: recompute_modules ['layernorm', 'moe_act']). It reads slow: -11.0%
    before the experts' eager fc2-bias loop it runs (moe.EAGER_BIAS_PASSES, BF16 without the fused MLP) and that
    recompute were priced, -13.6% after, -14.3% once the refit that dates Hopper's older attention kernels
    (efficiency.ATTENTION_RELEASES) moved the shared values, -2.3% once the fitted H100 rows of Qwen3-30B-A3B (EP16)
    and DeepSeek-V3 ran their recipes' flex exchange with nothing overlapping it (H100_FLEX_EXPOSED_ROWS) and no longer
    pushed Hopper's per-expert cost (moe_legacy_group_s@hopper) from 68 to 98 us, with the 'alltoall' dispatcher's
    expert sort priced (moe._expert_sort) and the NIC exchange hiding at overlap_dp (moe.ep_overlap), -9.1% once its
    clamped GLU's eager clamp was priced (moe.EAGER_GLU_CLAMP_BYTES: the same code runs on every GPU; its Blackwell
    BF16 rows moved 6-18 points nearer). The gate is the issue's 12%."""
    run = _run("84")
    assert "gpt-oss-120b" in str(run.scenario["model"]) and run.scenario["parallelism"]["pp"] == 4
    assert run.scenario["parallelism"]["recompute"] == "selective"
    assert abs(_error("84")) < 0.12


BLACKWELL_GAP = "GPT-OSS-120B on Blackwell misses a cost the model lacks (docs/moe_validation.md)"


@pytest.mark.xfail(strict=True, reason=BLACKWELL_GAP)
def test_gpt_oss_blackwell_row_within_tolerance() -> None:
    """Same source's newest table (NeMo 26.08), row 6: GPT-OSS-120B on 64 GB300s, MXFP8, TP1 PP1 EP16 MBS4 GBS1280,
    33,024 tokens/s/GPU. Priced as its recipe runs (fitting.recipes: flex on HybridEP with the EP overlap of two
    micro-batches) it reads about +27%, where Qwen3's newest rows under the same recipe settings are within 4%: every
    Blackwell GPT-OSS row misses 3 ms (MXFP8) to 9 ms (BF16) per layer and 16k-token micro-batch that no source
    names. Strict: this fails the day that cost is priced, so the marker comes off."""
    assert abs(_error("6")) < TOLERANCE


# Megatron-Bridge performance summary (archive), NeMo 26.04.01 container, H100, FP8, sequence 4096 (measured_runs.csv
# row 94): Qwen3-235B-A22B on 256 GPUs TP2 PP8 VP4 EP32 MBS1 GBS8192, 1,712 tokens/s/GPU; its EP group spans four
# DGX H100 nodes, so its all-to-alls cross the NICs (18% too fast when one overlap share served both tiers; its
# recipe's 'alltoall' dispatcher with the EP overlap of two micro-batches, fitting.recipes: +6% -> -5%).
def test_a_row_whose_all_to_all_crosses_nics_is_within_tolerance() -> None:
    run = _run("94")
    assert run.source.startswith(MOE_SOURCE) and "qwen3-235b-a22b" in str(run.scenario["model"])
    assert run.scenario["parallelism"]["ep"] == 32 and run.scenario["parallelism"]["tp"] == 2
    assert abs(_error("94")) < TOLERANCE


def test_moe_rows_are_validated_per_model_but_not_fitted() -> None:
    runs, excluded = bundled_runs()
    sources = {r.source for r in runs if r.source.startswith(MOE_SOURCE)}
    assert sources == {
        f"{MOE_SOURCE}: {m}"
        for m in (
            "DeepSeek-V3",
            "Qwen3-30B-A3B",
            "Qwen3-235B-A22B",
            "GPT-OSS-120B",
            "Mixtral-8x7B",
            "Mixtral-8x22B",
            "Nemotron-3-Nano-30B-A3B",
            "Llama4-Scout (LLM only)",
            "Nemotron-3.5-Lightning-30B-A3B",
        )
    }
    assert sources <= set(NOT_FITTED)
    reasons = " ".join(e.reason for e in excluded)
    for why in ("Muon", "a hybrid model whose config", "none of the sources"):
        assert why in reasons
    assert "token-dropping" not in reasons
    moe = [r for r in runs if r.source.startswith(MOE_SOURCE)]
    assert all(r.scenario["parallelism"]["ep"] >= 1 and r.scenario["parallelism"]["etp"] == 1 for r in moe)
    without_mtp = [r for r in moe if r.scenario["model"] == {"base": "deepseek-v3", "mtp_layers": 0}]
    dropping = [r for r in moe if DROPPING_ASSUMPTION in r.assumptions]
    with_recipe = [
        r
        for r in moe
        if (isinstance(r.scenario["model"], dict) and r not in [*without_mtp, *dropping])
        or "fused_grouped_mlp" in r.scenario
    ]
    assert without_mtp
    rows = (*H100_TP2_EP32, *GPT_OSS_RECIPE_ROWS, *QWEN3_FULL_ITERATION_ROWS, *DEEPSEEK_FULL_ITERATION_ROWS,
            *H100_FLEX_EXPOSED_ROWS)  # fmt: skip
    assert {r.id for r in with_recipe} == {f"measured_runs.csv:{n}" for n in rows}


DROPPING_ROWS = {252: "deepseek-v3", 262: "deepseek-v3", 263: "deepseek-v3", 254: "qwen3-30b-a3b",
                   255: "qwen3-30b-a3b", 264: "qwen3-30b-a3b", 272: "qwen3-30b-a3b", 256: "qwen3-235b-a22b",
                   257: "qwen3-235b-a22b", 265: "qwen3-235b-a22b", 266: "qwen3-235b-a22b"}  # fmt: skip
"""Megatron-Bridge performance summary (archive), NeMo 25.09 container, the rows marked 'tokendrop' (measured_runs.csv
rows 252-257, 262-266, 272-273): token dropping at Megatron-Bridge's apply_moe_token_drop defaults (megatron-bridge
0.6.2 training/utils/moe_token_drop.py L25-72: capacity factor 1.0, padded to it, 'alltoall' asserted). Row 273
(H100, TP2 PP8 VP4 EP32) also runs its layout's recipe (test_rows_of_a_sourced_recipe_run_its_dispatcher_and_ep_
overlap); row 253 (GB200 PP8 EP64 with DP32) is excluded: EP 64 cannot fold into a stage's 32 ranks."""


@pytest.mark.parametrize(("row", "model"), DROPPING_ROWS.items())
def test_token_dropping_rows_run_the_padded_capacity(row: int, model: str) -> None:
    run = _run(str(row))
    assert run.scenario["model"] == {"base": model, **DROPPING_ROUTING}
    assert DROPPING_ASSUMPTION in run.assumptions


def test_token_dropping_rows_are_validated_not_fitted() -> None:
    """validation.DROPPING_NOT_FITTED: the MoE stage holds them out, as it holds out GPT-OSS-120B's rows; the same
    layout's dropless row (25.11, row 238) it fits."""
    calibration = resolve(None)
    assert not moe_fitted(prepare(_run("264"), calibration))
    assert moe_fitted(prepare(_run("238"), calibration))


@pytest.mark.parametrize(("dropping", "dropless"), [("264", "238"), ("272", "244")])
def test_a_host_sync_per_moe_forward_cannot_explain_the_dropping_pairs(dropping: str, dropless: str) -> None:
    """Megatron-Bridge performance summary (archive), Qwen3-30B-A3B at one layout each: B200 TP1 PP1 EP8 MBS1,
    18,066 tokens/s/GPU with token dropping (NeMo 25.09, row 264) against 9,299 dropless (25.11, row 238); H100 PP2
    VP24 EP8 MBS2, 10,494 (25.09, row 272) against 5,275 (25.11, row 244). The dropless dispatcher blocks the host
    once per MoE layer's forward until the split sizes reach it, the padded one never (megatron-core 0.14.0-0.16.1
    token_dispatcher.py MoEAlltoAllTokenDispatcher.preprocess and _maybe_dtoh_and_synchronize: 0.16.1 L485-508 and
    L862-899). Priced as host-bound segments, each forward pass max(host, GPU) and the unsynced backward the same,
    against max(host, GPU) over the whole layer when nothing syncs, the dropless step is at most
    1 + max(k x forward, backward) / (k x forward + backward) times the dropping one (k forward passes: 2 with full
    recompute), whatever the host's time per launch: a ratio of 1.5-1.7 on the model's GPU split, where the pairs
    read 1.94 and 1.99. Both pairs also span two containers, and the same H100 layout ran 1.77x apart between
    26.02 and 26.02.01 dropless (rows 210, 175): the pairs do not identify a host-launch cost."""
    calibration = resolve(None)
    item = prepare(_run(dropping), calibration)
    trace: dict[str, object] = {}
    evaluate(item.context, layout_vars(item.layout), trace)
    layer = trace["layer"]
    forward_s, backward_s = float(layer.forward), float(layer.backward)  # type: ignore[attr-defined]
    passes = 1 + float(trace["recompute_s"]) / forward_s  # type: ignore[arg-type]
    bound = 1 + max(passes * forward_s, backward_s) / (passes * forward_s + backward_s)
    assert _run(dropping).measured / _run(dropless).measured > bound + 0.15


def test_the_token_dropping_row_of_a_sourced_recipe_keeps_both() -> None:
    run = _run("273")
    assert run.scenario["model"] == {"base": "qwen3-235b-a22b", "ep_microbatch_overlap": True, **DROPPING_ROUTING}
    _, excluded = bundled_runs()  # row 253: EP 64 cannot fold into the 32 GPUs of a PP 8 stage (256 GPUs)
    assert [e.reason for e in excluded if e.id == "measured_runs.csv:253"] == [
        "EP 64 does not divide the 32 GPUs of a pipeline stage"
    ]


H100_TP2_EP32 = (94, 137, 179, 215, 245)
"""Megatron-Bridge performance summary (archive), NeMo 25.11 to 26.04.01 containers: Qwen3-235B-A22B on 256 H100s,
FP8, TP2 PP8 VP4 EP32 MBS1 (measured_runs.csv rows 94, 137, 179, 215 and 245)."""


FUSED_MXFP8 = {"fp8_attention": True, "fused_grouped_mlp": True}
"""MXFP8 attention and the fused grouped MLP (scenario fields: precision.bridge_recipe)."""
FULL_ITERATION_MXFP8 = FUSED_MXFP8 | {"full_iteration_graph": True}
"""The TransformerEngine settings and CUDA graph scope of the FP8-MX full-iteration recipes (cuda_graph_impl
'full_iteration': megatron-bridge 0.6.2 perf_recipes/gpt_oss/common.py L55, qwen/common.py L39)."""
GPT_OSS_FULL_ITERATION_ROWS = (6, 7, 22, 23, 44, 45)

GPT_OSS_RECIPE_ROWS = {
    **{row: {"dispatcher": "flex", "ep_microbatch_overlap": True} for row in GPT_OSS_FULL_ITERATION_ROWS},
    **{row: {"ep_microbatch_overlap": True} for row in (81, 125, 167, 202)},
    **{row: {"dispatcher": "flex", "ep_exchange_exposed": True} for row in (46, 82, 126, 168)},
}
"""megatron-bridge 0.6.2 (PyPI sdist, 2026-09-18), perf_recipes/gpt_oss/: the GB300 (EP16) and GB200 (EP64) FP8-MX 120B
recipes apply common.py's _apply_gpt_oss_120b_full_iter_fp8mx_configs (moe_token_dispatcher_type 'flex',
overlap_moe_expert_parallel_comm True, fp8_output_proj True: the LM head in MXFP8; use_transformer_engine_op_fuser
True and NVTE_CUTEDSL_FUSED_GROUPED_MLP=1: the fused grouped MLP; fp8_dot_product_attention True: MXFP8 attention):
rows 6, 7, 22, 23, 44, 45; GB200's
BF16 one sets the overlap and keeps 'alltoall' (rows 81, 125, 167, 202); B300's (EP8) set 'flex' without the overlap
(rows 46, 82, 126, 168: no shared experts either, so every all-to-all is exposed), and leave TransformerEngine's op
fuser off (_benchmark_common L65-66: the experts loop, as B200's do). Rows of other layouts (25.11's, B300/B200 EP64)
and GPUs whose recipes keep the provider's settings match none."""


@pytest.mark.parametrize(("row", "settings"), GPT_OSS_RECIPE_ROWS.items())
def test_gpt_oss_rows_run_their_gpu_and_precision_recipe(row: int, settings: dict[str, object]) -> None:
    run = _run(str(row))
    assert run.scenario["model"] == {"base": "gpt-oss-120b", **settings}
    keys = ("fp8_output_proj", *FULL_ITERATION_MXFP8, "expert_loop")
    run_settings = {k: run.scenario[k] for k in keys if k in run.scenario}
    if row in GPT_OSS_FULL_ITERATION_ROWS:
        assert run_settings == {"fp8_output_proj": True, **FULL_ITERATION_MXFP8}
    else:  # B300's recipes leave TransformerEngine's op fuser off (_benchmark_common L65-66): the experts loop
        assert run_settings == ({"expert_loop": True} if settings.get("ep_exchange_exposed") else {})


def test_rows_of_a_sourced_recipe_run_its_dispatcher_and_ep_overlap() -> None:
    """megatron-bridge 0.6.2 (PyPI sdist, 2026-09-18), perf_recipes/qwen/h100/qwen3_moe.py,
    qwen3_235b_a22b_pretrain_256gpu_h100_fp8cs_config: TP2 PP8 VP4 EP32 MBS1, moe_token_dispatcher_type =
    "alltoall", CommOverlapConfig(overlap_moe_expert_parallel_comm=True). The H100 rows of that layout run it, noted
    as an assumption for their older containers; the GB200 row of the same model in NeMo 26.04.01 (its recipe: flex,
    before MXFP8 attention) keeps the zoo entry."""
    for n in H100_TP2_EP32:
        run = _run(str(n))
        assert run.scenario["model"] == {
            "base": "qwen3-235b-a22b", "dispatcher": "alltoall", "ep_microbatch_overlap": True
        }  # fmt: skip
        note = next(a for a in run.assumptions if "qwen3_235b_a22b_pretrain_256gpu_h100_fp8cs_config" in a)
        assert "NeMo 26.08" in note and "an assumption" in note
    assert _run("91").scenario["model"] == "qwen3-235b-a22b"


H100_FLEX_EXPOSED_ROWS = {50: "qwen3-30b-a3b", 89: "qwen3-30b-a3b", 133: "qwen3-30b-a3b", 270: "deepseek-v3"}
"""megatron-bridge 0.6.2 (PyPI wheel, 2026-09-18): perf_recipes/qwen/h100/qwen3_moe.py
qwen3_30b_a3b_pretrain_16gpu_h100_fp8cs_config (TP1 PP1 EP16 MBS1; flex on HybridEP, L88-90; CommOverlapConfig
without overlap_moe_expert_parallel_comm, L92) and perf_recipes/deepseek/h100/deepseek_v3.py
deepseek_v3_pretrain_1024gpu_h100_fp8cs_config (TP2 PP8 VP4 EP64 MBS1 on recipes/deepseek/h100/deepseek_v3.py's
provider: HybridEP through apply_flex_dispatcher_backend, L241, which turns the shared-expert overlap off;
overlap_moe_expert_parallel_comm False, L215). Their H100 FP8 rows (measured_runs.csv rows 50, 89, 133: NeMo 26.04 to
26.06; row 270: NeMo 25.09) run flex with nothing overlapping the exchange."""


@pytest.mark.parametrize(("row", "model"), H100_FLEX_EXPOSED_ROWS.items())
def test_h100_rows_of_a_flex_recipe_without_overlap_expose_the_exchange(row: int, model: str) -> None:
    run = _run(str(row))
    assert run.scenario["model"] == {"base": model, "dispatcher": "flex", "ep_exchange_exposed": True}
    note = next(a for a in run.assumptions if "ep_exchange_exposed True" in a)
    assert "h100" in note and "an assumption" in note  # every one of these rows predates NeMo 26.08


QWEN3_FULL_ITERATION_ROWS = {
    8: "qwen3-30b-a3b",
    9: "qwen3-30b-a3b",
    10: "qwen3-235b-a22b",
    11: "qwen3-235b-a22b",
    24: "qwen3-30b-a3b",
    25: "qwen3-30b-a3b",
    26: "qwen3-235b-a22b",
    27: "qwen3-235b-a22b",
    47: "qwen3-30b-a3b",
    48: "qwen3-30b-a3b",
    49: "qwen3-30b-a3b",
    51: "qwen3-235b-a22b",
    52: "qwen3-235b-a22b",
}
"""megatron-bridge 0.6.2 (PyPI wheel, 2026-09-18), perf_recipes/qwen/{gb300,gb200,b300,b200}/qwen3_moe.py: the FP8-MX
configs of Qwen3-30B-A3B (EP8, MBS 8 on GB300 and B300, 4 on GB200 and B200) and Qwen3-235B-A22B (GB300 PP4 VP12
EP32 MBS2, GB200 PP8 VP3 EP32 MBS1, B300/B200 256-GPU PP8 VP3 EP8) call qwen/common.py
_enable_hybridep_full_iteration_mxfp8 (L36-60: use_transformer_engine_op_fuser True, fp8_dot_product_attention True)
and set NVTE_CUTEDSL_FUSED_GROUPED_MLP=1. The MXFP8 rows of those layouts from NeMo 26.06 on (TransformerEngine 2.16,
the first with MXFP8 attention) run them."""


@pytest.mark.parametrize(("row", "model"), QWEN3_FULL_ITERATION_ROWS.items())
def test_qwen3_full_iteration_rows_run_mxfp8_attention_and_the_fused_mlp(row: int, model: str) -> None:
    run = _run(str(row))
    assert run.scenario["model"] == model
    assert {k: run.scenario[k] for k in FULL_ITERATION_MXFP8} == FULL_ITERATION_MXFP8
    assert run.scenario["precision"] == "mxfp8" and run.scenario["gpu"] in ("gb300", "gb200", "b300")


def test_the_26_06_01_gpt_oss_rows_carry_nvidias_regression_footnote() -> None:
    """Megatron-Bridge docs/performance-summary-archive.md L57-58 and L90 (snapshot 067f987df): NVIDIA's footnote to
    NeMo 26.06.01's GPT-OSS-120B rows (measured_runs.csv rows 22 and 23) names cudnn-frontend issue #256. Those rows
    carry it as an assumption and price the regressed kernel (dglu_dbias_regression); their 26.06 twins (rows 44, 45)
    and 26.06.01's other models (rows 20, 24) do neither."""
    for row in ("22", "23"):
        assert any("cudnn-frontend issue #256" in a for a in _run(row).assumptions), row
        assert _run(row).scenario["dglu_dbias_regression"] is True
    for row in ("44", "45", "20", "24"):
        assert not any("#256" in a for a in _run(row).assumptions), row
        assert "dglu_dbias_regression" not in _run(row).scenario


DEEPSEEK_FULL_ITERATION_ROWS = {2: True, 20: True, 40: True, 41: True, 3: False, 21: False, 42: False}
"""megatron-bridge 0.6.2 (PyPI sdist, 2026-09-18), perf_recipes/deepseek/gb300/deepseek_v3.py
deepseek_v3_pretrain_256gpu_gb300_fp8mx_config (TP1 PP2 VP8 EP32 MBS1) calls deepseek/common.py
_enable_deepseek_full_iteration_mxfp8(cfg, fp8_dot_product_attention=True, fp8_output_proj=True) (L154), and
gb200/deepseek_v3.py's (TP1 PP4 VP4 EP64 MBS1) with fp8_output_proj=True alone (L157); the function sets
cuda_graph_impl 'full_iteration' (common.py L59) and use_transformer_engine_op_fuser True (L69), and both set
NVTE_CUTEDSL_FUSED_GROUPED_MLP=1. Rows of those layouts from NeMo 26.06 on (value: the recipe's MXFP8 attention).
GB300's sets recompute_modules [] (L145: Megatron-Core's selective granularity with no module, nothing re-runs), so
its rows recompute nothing as a stated setting, not the stack's default; GB200's ['mla_up_proj'] (L146) has no
counterpart in the model's modes and stays the stack's choice."""


@pytest.mark.parametrize(("row", "attention"), DEEPSEEK_FULL_ITERATION_ROWS.items())
def test_deepseek_full_iteration_rows_run_their_recipe(row: int, attention: bool) -> None:
    run = _run(str(row))
    keys = (*FULL_ITERATION_MXFP8, "fp8_output_proj", "expert_loop")
    expected = {"fused_grouped_mlp": True, "fp8_output_proj": True, "full_iteration_graph": True}
    expected |= {"fp8_attention": True} if attention else {}
    assert {k: run.scenario[k] for k in keys if k in run.scenario} == expected
    assert run.scenario["model"] == "deepseek-v3"
    assert run.scenario["parallelism"].get("recompute") == ("none" if run.scenario["gpu"] == "gb300" else None)


NEMOTRON_LOOP_ROWS = {12: "gb300", 28: "gb300", 54: "gb300", 29: "gb200", 55: "gb200", 13: "gb200", 56: "b300"}
"""Megatron-Bridge performance summary, NeMo 26.06 to 26.08, Nemotron 3 Nano (rows 12, 28, 54 GB300 EP8 MBS4; 29, 55
GB200 EP8 MBS2; 56 B300 EP8 MBS4) and Nemotron 3.5 Lightning (row 13, GB200 EP8 MBS2), MXFP8."""


@pytest.mark.parametrize(("row", "gpu"), NEMOTRON_LOOP_ROWS.items())
def test_nemotron_fp8_mx_rows_keep_the_per_expert_loop(row: int, gpu: str) -> None:
    """megatron-bridge 0.6.0 (PyPI sdist, 2026-08-20: the tables' snapshot is 2026-08-22), perf_recipes/nemotronh/
    gb300/nemotronh.py nemotron_3_nano_pretrain_8gpu_gb300_fp8mx_config (L362-410), gb200/nemotronh.py's Nano
    (L357-405) and Lightning (L492-520) and b300/nemotronh.py's Nano (L276-326) FP8-MX configs set neither the op fuser
    nor fp8_dot_product_attention nor NVTE_CUTEDSL_FUSED_GROUPED_MLP, and _benchmark_common turns the op fuser off
    (perf_recipes/_common.py L65-66): their squared-ReLU experts loop (0.6.2, 2026-09-18, turns the fused MLP on; and
    TransformerEngine fuses squared ReLU only from 2.17 with cudnn-frontend 1.24, transformer-engine 2.17.1
    ops/fused/grouped_mlp.py fuse_srelu_ops). Priced so, each row reads slower than with the fused MLP and nearer its
    measured throughput (every such row reads optimistic with the fused MLP; looped, GB200's row 29 reads -1.2% once
    the 'alltoall' dispatcher's expert sort is priced, moe._expert_sort)."""
    run = _run(str(row))
    assert run.scenario["gpu"] == gpu
    keys = (*FULL_ITERATION_MXFP8, "fp8_output_proj", "expert_loop")
    assert {k: run.scenario[k] for k in keys if k in run.scenario} == {"expert_loop": True}
    assert any("megatron-bridge 0.6.0" in a and "_fp8mx_config" in a for a in run.assumptions)
    calibration = resolve(None)
    fused = replace(run, scenario={k: v for k, v in run.scenario.items() if k != "expert_loop"} | FUSED_MXFP8)
    looped_err, fused_err = (_predicted(r, calibration) / run.measured - 1 for r in (run, fused))
    assert abs(looped_err) < fused_err and looped_err < fused_err


def test_nemotron_nano_b300_rows_before_the_grouped_kernel_keep_the_zoo_entry() -> None:
    """Rows 98, 140 and 182 (Nemotron 3 Nano, B300, EP8 MBS4, NeMo 26.04.01, 26.04, 26.02.01) pay the per-expert loop
    at their release already (efficiency.GROUPED_KERNEL_RELEASE) and keep the zoo entry."""
    keys = (*FULL_ITERATION_MXFP8, "fp8_output_proj", "expert_loop")
    for row in ("98", "140", "182"):
        assert not {*keys} & _run(row).scenario.keys(), row


def test_rows_before_mxfp8_attention_keep_the_zoo_entry() -> None:
    """The same Qwen3, DeepSeek-V3 and Nemotron 3 Nano layouts in NeMo 26.04.01 (rows 85, 86, 90, 77, 96, 97:
    TransformerEngine before 2.16) ran neither MXFP8 attention nor the op fuser's grouped MLP, and no source says
    they captured the whole iteration: recipes.MXFP8_ATTENTION_CONTAINER."""
    rows = (("85", "qwen3-30b-a3b"), ("86", "qwen3-30b-a3b"), ("90", "qwen3-235b-a22b"), ("77", "deepseek-v3"),
            ("96", "nemotron-3-nano-30b-a3b"), ("97", "nemotron-3-nano-30b-a3b"))  # fmt: skip
    for row, model in rows:
        assert _run(row).scenario["model"] == model
        assert not {*FULL_ITERATION_MXFP8, "fp8_output_proj"} & _run(row).scenario.keys()


# Megatron-Bridge performance summary, NeMo 26.04.01 container, GB200, MXFP8, sequence 4096 (measured_runs.csv rows
# 77 and 91): DeepSeek-V3 on 256 GPUs TP1 PP4 VP4 EP64 MBS1 GBS4096, 4,256 tokens/s/GPU; Qwen3-235B-A22B on 256 GPUs
# TP1 PP8 VP3 EP32 MBS1 GBS8192, 5,680 (the same layouts ran at 4,969 and 7,376 in 26.06).
@pytest.mark.parametrize(("row", "newer"), [("77", 4969), ("91", 7376)])
def test_an_older_container_row_priced_at_its_release_is_within_tolerance(row: str, newer: float) -> None:
    """Rows from before the grouped expert kernel: priced at their release (the MoE stage fits every container);
    priced as today's software they come out faster by at least half the measured gain from 26.04.01 to 26.06 (the
    row's layout may be a range over recompute settings, so the gain is taken against the release's price)."""
    from dataclasses import replace

    run = _run(row)
    assert run.released == "2026-04"
    assert abs(_error(row)) < TOLERANCE
    calibration = resolve(None)
    item = prepare(replace(run, released=None), calibration)  # no release: priced at the reference vintage
    today = item.predicted(calibration.efficiency(item.family))
    assert today / (run.measured * (1 + _error(row))) - 1 > (newer / run.measured - 1) / 2


def test_a_recipe_is_an_assumption_only_for_older_containers() -> None:
    """megatron-bridge 0.6.x's recipes are NeMo 26.08's: its rows 6 and 7 (the performance summary's newest table) ran
    them, while 26.06's rows 44 and 45 of the same layouts are priced under them by assumption."""
    notes = {n: next(a for a in _run(str(n)).assumptions if "gpt_oss_120b_pretrain" in a) for n in (6, 7, 44, 45)}
    assert {n: "an assumption" in note for n, note in notes.items()} == {6: False, 7: False, 44: True, 45: True}


@pytest.mark.parametrize("row", ["81", "83", "84", "125", "127", "128", "167", "169", "170", "202", "205", "237"])
def test_gpt_oss_rows_recompute_as_their_recipe(row: str) -> None:
    """megatron-bridge 0.6.2 perf_recipes/gpt_oss/: the GB200 BF16 (EP64 MBS4, gb200/gpt_oss.py L196-197), B200 (EP8
    MBS4, b200/gpt_oss.py L39-40, L75-76) and H100 (PP4 EP8 MBS1, h100/gpt_oss.py L39-40) recipes set
    recompute_granularity 'selective' with recompute_modules ['layernorm', 'moe_act']: the model's selective recompute
    (the norms and the activation, workload.SELECTIVE_RECOMPUTE), where the tables leave recompute out. The GB300
    recipes and the GB200 FP8-MX one (recompute_modules [], L241-242) recompute nothing: the stack's default."""
    run = _run(row)
    assert run.scenario["parallelism"]["recompute"] == "selective"
    assert any("recompute_modules ['layernorm', 'moe_act']" in a for a in run.assumptions)
    for newest in ("6", "7"):
        assert _run(newest).scenario["parallelism"].get("recompute") is None


NEMOTRON_HYBRID_MOE = ("Nemotron-3-Nano-30B-A3B", "Nemotron-3.5-Lightning-30B-A3B")


def test_the_hybrid_moe_rows_hold_issue_32s_left_out_target() -> None:
    """Issue 32: the bundled hybrid-MoE rows within 12% leave-one-model-out. Nemotron 3 Nano's 20 Megatron-Bridge rows
    (NeMo 26.02-26.08 performance summaries, measured_runs.csv) and Lightning's one are validated and never fitted
    (validation.MOE_NOT_FITTED), so every live prediction here is left out by construction; MAPE 8.6% and 2.0% at
    the Mamba layers as Megatron-Core runs them and Hopper's exposed MoE exchanges (15.1% and 8.2% before)."""
    runs, _ = bundled_runs()
    calibration = resolve(None)
    for model in NEMOTRON_HYBRID_MOE:
        items = [prepare(r, calibration) for r in runs if r.source == f"{MOE_SOURCE}: {model}"]
        assert items and not any(moe_fitted(item) for item in items)
        errors = [abs(float(i.predicted(calibration.efficiency(i.family))) / i.run.measured - 1) for i in items]
        assert sum(errors) / len(errors) <= TOLERANCE, (model, sum(errors) / len(errors))
