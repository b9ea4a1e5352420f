"""Measured runs: the documented CSV format, its errors, and the bundled rows with their exclusions."""

import json
import re
from pathlib import Path

import pytest
from conftest import run_cli

import perfmodel
from perfmodel.errors import PerfmodelError
from perfmodel.fitting.runs import CSV_COLUMNS, MPT_SHAPES, bundled_runs, read_runs_csv
from perfmodel.inputs.models import ModelSpec

GOOD = (
    "id,model,gpu,n_gpus,precision,seq_len,gbs,mbs,tp,pp,cp,vp,zero,recompute,metric,measured\n"
    "a,llama3.1-70b,h100-sxm,64,fp8,8192,128,1,4,8,1,5,1,none,tokens_per_s_per_gpu,1602\n"
)


def _csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "runs.csv"
    path.write_text(text)
    return path


def test_reads_the_documented_columns(tmp_path: Path) -> None:
    (run,) = read_runs_csv(_csv(tmp_path, GOOD))
    assert run.metric == "tokens_per_s_per_gpu" and run.measured == 1602
    assert run.scenario["parallelism"]["tp"] == 4 and run.group == "h100-sxm/fp8"
    assert set(GOOD.splitlines()[0].split(",")) <= set(CSV_COLUMNS)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,model,gpu\nx,llama3.1-8b,h100-sxm\n", "missing column(s) n_gpus, precision, metric, measured"),
        (
            GOOD.replace("metric,measured", "tokens_per_s_per_gpus").replace("tokens_per_s_per_gpu,", ""),
            "unknown column 'tokens_per_s_per_gpus': a metric (tokens_per_s_per_gpu, step_time_s, time_to_train_min, "
            "gpu_hours) is a value of the 'metric' column, with its number in 'measured'",
        ),
        (
            GOOD.replace("measured\n", "measured,recomput\n").replace("1602\n", "1602,full\n"),
            "unknown column 'recomput' (did you mean 'recompute'?)",
        ),
        (GOOD.replace(",1602", ",fast"), "row 2: column 'measured' is 'fast', not a number"),
        (GOOD.replace(",1602", ",-3"), "row 2: column 'measured' is '-3'; it must be a positive finite number"),
        (GOOD.replace(",1602", ",nan"), "row 2: column 'measured' is 'nan'"),
        (GOOD.replace(",64,", ",6.5,"), "row 2: column 'n_gpus' is '6.5'; it must be a positive integer"),
        (GOOD.replace("tokens_per_s_per_gpu", "speed"), "row 2: column 'metric' is 'speed'; allowed:"),
        (GOOD.replace("llama3.1-70b", "llama9"), "row 2: unknown model 'llama9'"),
        (GOOD.replace(",fp8,", ",fp16,"), "row 2: field 'precision'"),
        (GOOD + "b,llama3.1-70b,h100-sxm,64,fp8,8192,128,1,4,8,1,5,1,none,step_time_s,3,extra\n", "row 3: more cells"),
        (GOOD.splitlines()[0] + "\n", "no rows"),
    ],
)
def test_bad_csv_names_file_row_and_column(tmp_path: Path, text: str, message: str) -> None:
    path = _csv(tmp_path, text)
    with pytest.raises(PerfmodelError) as err:
        read_runs_csv(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_a_column_near_none_of_the_set_is_ignored_and_noted_once(tmp_path: Path) -> None:
    """A spreadsheet export's own columns (`notes`, a blank header of a trailing comma) were refused; they are read
    past and named once, while a near-miss of a column (above) is still refused."""
    header, row = GOOD.splitlines()
    path = _csv(tmp_path, f"notes,{header},\nfirst try,{row},\nsecond,{row.replace('a,', 'b,', 1)},\n")
    heard: list[str] = []
    runs = read_runs_csv(path, heard.append)
    assert [run.id for run in runs] == ["a", "b"] and runs[0].measured == 1602
    assert heard == [f"{path}: ignored columns: 'notes', ''"]
    result = run_cli("validate", "--data", str(path))
    assert result.code == 0 and result.err == f"note: {path}: ignored columns: 'notes', ''\n"
    with pytest.warns(UserWarning, match="ignored columns: 'notes', ''") as caught:  # the API's notebook says so too
        perfmodel.validate(data=path)
    assert caught[0].filename == __file__  # pointed at the caller's line, not the API's


def test_a_row_no_layout_rule_allows_is_listed_with_its_id_and_rule(tmp_path: Path) -> None:
    """Your own CSV's few excluded rows are listed whole: which row, and which rule it breaks (not a cut-off layout)."""
    path = _csv(tmp_path, GOOD + GOOD.splitlines()[1].replace("a,", "b,", 1).replace(",4,8,", ",3,8,") + "\n")
    result = run_cli("validate", "--data", str(path))
    assert result.code == 0 and "MAPE" in result.out
    assert "Excluded 1 rows:\n  b: column 'tp': invalid layout TP3 PP8" in result.out
    assert "TP 3 must divide the 64 attention heads" in result.out
    good = "".join(GOOD.splitlines(keepends=True)[1].replace("a,", f"a{k},", 1) for k in range(5))
    path.write_text(path.read_text() + good)  # a user calibration needs 5 rows per parameter (fitting/user.py)
    fitted = run_cli("calibrate", "--data", str(path), "--out", str(tmp_path / "c.json"))
    assert fitted.code == 0 and "Excluded 1 rows:\n  b: column 'tp': invalid layout TP3 PP8" in fitted.out


def test_a_row_whose_partly_given_layout_breaks_a_rule_names_its_column(tmp_path: Path) -> None:
    """`tp=3` with the rest left to the search was excluded with the search's 'TP 3 x PP 2 x CP 1 = 6 does not divide
    the 8 GPUs', a PP no column gave; a question's given layout is checked so (request.check_given_layout)."""
    header = "id,model,gpu,n_gpus,precision,tp,metric,measured\n"
    rows = "".join(f"{tp},llama3.1-8b,h100-sxm,8,bf16,{tp},tokens_per_s_per_gpu,9000\n" for tp in (2, 3, 16))
    result = run_cli("validate", "--data", str(_csv(tmp_path, header + rows)), "--format", "json")
    excluded = {row["id"]: row["reason"] for row in json.loads(result.out)["excluded"]}
    assert excluded["3"].startswith("column 'tp': TP 3 must divide the 32 attention heads;")
    assert excluded == {"3": excluded["3"], "16": "column 'tp': TP 16 x PP 1 x CP 1 = 16 does not divide the 8 GPUs"}


def test_a_row_giving_part_of_its_layout_says_which_part_the_search_kept(tmp_path: Path) -> None:
    """The layout column said 'searched' of a row giving TP and PP as of one giving none; it names the given ones."""
    header = "id,model,gpu,n_gpus,precision,tp,pp,metric,measured\n"
    rows = "both,llama3.1-8b,h100-sxm,8,bf16,2,2,tokens_per_s_per_gpu,9000\n"
    rows += "none,llama3.1-8b,h100-sxm,8,bf16,,,tokens_per_s_per_gpu,9000\n"
    result = run_cli("validate", "--data", str(_csv(tmp_path, header + rows)), "--format", "json")
    basis = {row["id"]: row["layout_basis"] for row in json.loads(result.out)["rows"]}
    assert basis == {"both": "partly given (tp/pp)", "none": "searched"}


def test_a_row_whose_layout_cannot_fit_is_flagged(tmp_path: Path) -> None:
    """70B unsharded on 8 H100s cannot have run: validate prices it but says so, naming the row and the memory."""
    row = GOOD.splitlines()[1].replace(",64,fp8,8192,128,1,4,8,1,5,1,", ",8,fp8,8192,128,1,1,1,1,1,0,")
    result = run_cli("validate", "--data", str(_csv(tmp_path, GOOD + row.replace("a,", "b,", 1) + "\n")))
    assert result.code == 0 and "Warning: 1 rows' layouts exceed the memory estimate" in result.out
    assert re.search(r"b needs [\d,.]+ of 80\.0 GiB per GPU$", result.out.rstrip())
    assert "Warning" not in run_cli("validate", "--data", str(_csv(tmp_path, GOOD))).out


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(PerfmodelError, match="no such runs CSV file"):
        read_runs_csv(tmp_path / "none.csv")
    binary = tmp_path / "b.csv"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(PerfmodelError, match="not a readable CSV"):
        read_runs_csv(binary)


def test_bundled_rows_and_their_exclusions() -> None:
    runs, excluded = bundled_runs()
    assert len(runs) >= 400
    assert {r.source for r in runs} >= {"Megatron-Bridge", "DGX Cloud recipes", "MLPerf Training v5.0", "llm-foundry",
                                         "Narayanan et al. 2021", "Korthikanti et al. 2022"}  # fmt: skip
    reasons = " ".join(e.reason for e in excluded)
    assert "a hybrid model whose config" in reasons and "not in hardware_specs" in reasons and "duplicate of" in reasons
    # mlperf_training_llm.csv: the smc-ac-power/smc-dc-power rows repeat smc's logs (their notes say so).
    dropped = {e.id for e in excluded if e.reason.startswith("duplicate")}
    for benchmark in ("gpt3", "llama2_70b_lora"):
        assert f"mlperf:v4.0/smc-dc-power/64xSMC-H100-SXM-80GB/{benchmark}" in dropped
        assert f"mlperf:v4.0/smc/64xSMC-H100-SXM-80GB/{benchmark}" not in dropped


def test_every_bundled_run_has_its_own_id() -> None:
    """Held-out errors are mapped back to rows by id (fitting.validation.held_out_errors). One MLPerf result folder
    holds a system's results of several benchmarks (mlperf_training_llm.csv, v5.1 Cisco hpf_n16: llama31_8b at
    32.896 min and llama2_70b_lora at 2.945 min), so a folder-only id gave both rows the same held-out error."""
    runs, _ = bundled_runs()
    ids = [r.id for r in runs]
    assert len(ids) == len(set(ids))
    cisco = {r.scenario["benchmark"]: r.measured for r in runs if r.id.startswith("mlperf:v5.1/Cisco/hpf_n16/")}
    assert cisco == {"mlperf-llama31-8b@v5.1": 32.896, "mlperf-llama2-70b-lora@v5.1": 2.945}


def test_mlperf_405b_rows_use_the_32k_vocabulary_benchmark() -> None:
    runs, _ = bundled_runs()
    h100 = next(r for r in runs if r.id == "mlperf:v5.0/NVIDIA/eos-dfw_n64_ngc25.01_nemo/llama31_405b")
    assert h100.scenario["benchmark"] == "mlperf-llama31-405b@v5.0" and h100.measured == 269.122


@pytest.mark.parametrize(("name", "params_b"), [("MPT-1b", 1.316), ("MPT-7b", 6.659), ("MPT-30b", 29.975),
                                                ("MPT-70b", 64.862)])  # fmt: skip
def test_mpt_shapes_reproduce_llm_foundry_parameter_counts(name: str, params_b: float) -> None:
    # measured_runs.csv params_b column (llm-foundry benchmarking README) at max_seq_len 2048.
    hidden, heads, layers = MPT_SHAPES[name]
    spec = ModelSpec(layers=layers, hidden=hidden, ffn=4 * hidden, heads=heads, kv_heads=heads, vocab=50368,
                     tied_embeddings=True, mlp="gelu", norm="layernorm", learned_positions=2048)  # fmt: skip
    assert spec.params / 1e9 == pytest.approx(params_b, rel=2e-3)


def test_bundled_mlperf_rows_are_priced_at_the_samples_their_score_stands_for() -> None:
    from perfmodel.inputs.mlperf import get_benchmark

    runs = {r.id: r for r in bundled_runs()[0]}
    # mlperf_training_llm.csv, v4.0 NVIDIA Eos_n64 GPT-3: 591,360 samples, RCP scaling factor 1.0 (it converged
    # later than the RCP mean of 580,608 at GBS 2304, so it is scored at its own samples).
    gpt3 = runs["mlperf:v4.0/NVIDIA/eos_n64_ngc24.04_nemo/gpt3"]
    assert gpt3.samples == 591360
    assert gpt3.samples > get_benchmark("mlperf-gpt3@v4.0").samples_to_converge(2304)
    # v5.0 NVIDIA Tyche 512 GPUs, Llama 3.1 405B: 279,552 samples x factor 1.153846 = the RCP mean at GBS 896.
    fast = runs["mlperf:v5.0/NVIDIA/tyche_ngpu512_ngc25.04_nemo/llama31_405b"]
    rcp = get_benchmark("mlperf-llama31-405b@v5.0").samples_to_converge(896)
    assert fast.samples == pytest.approx(rcp, rel=1e-6)


RESULTS = "mlcommons/training_results_"


@pytest.mark.parametrize(
    ("source", "framework", "round_", "released"),
    [
        # mlperf_training_llm.csv, v4.1 NVIDIA Eos_n128 (llama2_70b_lora): the result path names the container
        (f"{RESULTS}v4.1:NVIDIA/results/eos_n128_ngc24.09_nemo/", "NVIDIA NeMo Framework Release 24.09", "v4.1",
         "2024-09"),
        # v5.0 HPE Cray XD670 (8x H200-SXM-141GB), n4: a 24.09 NeMo container in a v5.0 round
        (f"{RESULTS}v5.0:HPE/results/HPE-Cray-XD670-H200-SXM5-141GB_n4_24.09/",
         "PyTorch, NeMo, HugeCTR, DGL NVIDIA Release 24.09", "v5.0", "2024-09"),
        # v5.0 Supermicro AS-A126GS-TNBR (B200): the NeMo release, not the DGL one before it
        (f"{RESULTS}v5.0:Supermicro/results/AS-A126GS-TNBR/",
         "DGL, Merlin HugeCTR NVIDIA Release 25.03; PyTorch, NeMo Framework NVIDIA Release 25.04", "v5.0", "2025-04"),
        # v5.0 Oracle BM.GPU.GB200.4: no NeMo release named (a 23.09 PyTorch template on GB200): the round's month
        (f"{RESULTS}v5.0:Oracle/results/BM.GPU.GB200.4/", "PyTorch NVIDIA Release 23.09", "v5.0", "2025-06"),
    ],
)  # fmt: skip
def test_mlperf_row_dated_by_its_nemo_container(source: str, framework: str, round_: str, released: str) -> None:
    from perfmodel.fitting.runs import _mlperf_released

    assert _mlperf_released({"source": source, "framework": framework, "round": round_}) == released


def test_mlperf_container_never_after_its_round() -> None:
    from perfmodel.fitting.runs import ROUND_PUBLISHED, _mlperf_released

    row = {"source": "x/results/sys_ngc25.12_nemo/", "framework": "", "round": "v5.0"}
    assert _mlperf_released(row) == ROUND_PUBLISHED["v5.0"]


def test_mlperf_row_naming_no_container_spans_its_round_and_family_releases() -> None:
    from perfmodel.fitting.runs import _read, round_releases

    spans = round_releases(_read("mlperf_training_llm.csv"))
    # mlperf_training_llm.csv v5.0: Hopper rows name NeMo 24.09 (HPE/Dell/SCITIX LoRA) to 25.01 (NVIDIA and Nebius
    # Llama 3.1 405B); every Blackwell row naming one names 25.04 (NVIDIA, Dell, Lambda, Supermicro).
    assert spans[("v5.0", "hopper")] == ("2024-09", "2025-01")
    assert spans[("v5.0", "blackwell")] == ("2025-04", "2025-04")
    assert ("v5.0", "cdna3") not in spans  # AMD's rows run ROCm and name no NeMo container
    runs = {r.id: r for r in bundled_runs()[0]}
    assert runs["mlperf:v5.0/Oracle/64xBM.GPU.H200.8/llama2_70b_lora"].releases == spans[("v5.0", "hopper")]
    assert runs["mlperf:v5.0/NVIDIA/nyx_n1_ngc25.04_nemo/llama2_70b_lora"].releases is None  # names its container


def test_amd_mi300x_lora_rows_recompute_as_their_config() -> None:
    # stack_notes.md: AMD's MI300X LoRA config (training_results_v5.0 AMD/benchmarks/llama2_70b_lora/implementations/
    # MI300X_EPYC_9575F_pytorch/config_MI300X_1x8x1.sh) recomputes 21 of 80 layers, ACG=full ACM=block ACL=21; its
    # MI325X config recomputes none; Krai's v5.1 MI300X rows name no config of AMD's.
    runs = {r.id: r for r in bundled_runs()[0]}
    mi300x = runs["mlperf:v5.0/AMD/MI300X_EPYC_9575F_pytorch/llama2_70b_lora"].scenario["parallelism"]
    assert (mi300x["recompute"], mi300x["recompute_layers"]) == ("full", 21)
    for partner in (
        "mlperf:v5.0/Dell/1xXE9680x8MI300X/llama2_70b_lora",
        "mlperf:v5.0/Oracle/1xBM.GPU.MI300X.8/llama2_70b_lora",
    ):
        assert runs[partner].scenario["parallelism"]["recompute_layers"] == 21
        assert any("assumed for this partner" in a for a in runs[partner].assumptions)
    for other in (
        "mlperf:v5.0/AMD/MI325X_EPYC_9575F_pytorch/llama2_70b_lora",
        "mlperf:v5.1/Krai/PowerEdge-XE9680-MI300X-192GB_n1_v5.1/llama2_70b_lora",
    ):
        assert "recompute" not in runs[other].scenario["parallelism"]


def test_megatron_bridge_70b_fsdp_rows_recompute_and_offload_as_their_recipe() -> None:
    # fitting.recipes: megatron-bridge 0.6.2 perf_recipes/llama/gb200/llama3.py
    # llama3_70b_pretrain_64gpu_gb200_fp8cs_config (TP1 PP1 MBS2 Megatron-FSDP) sets no recompute and offloads 40
    # layers' activations (L276-278; gb300/llama3.py L283-285: 20); measured_runs.csv line 155 (NeMo 26.02.01,
    # GB200, FP8), line 248 (NeMo 25.09, FP8-CS) and line 154 (NeMo 26.02.01, GB300, FP8) leave recompute blank.
    # Line 152 (GB300 MXFP8, TP1 PP4, MBS 2) matches no recipe (0.6.2's is MBS 1 VP 5).
    runs = {r.id: r for r in bundled_runs()[0]}
    for line in (155, 248):
        run = runs[f"measured_runs.csv:{line}"]
        assert run.scenario["parallelism"]["recompute"] == "none"
        assert run.scenario["activation_offload_layers"] == 40
        assert any("llama3_70b_pretrain_64gpu_gb200_fp8cs_config" in a for a in run.assumptions)
    assert runs["measured_runs.csv:154"].scenario["activation_offload_layers"] == 20
    assert any("for NeMo 25.09 container an assumption" in a for a in runs["measured_runs.csv:248"].assumptions)
    assert "recompute" not in runs["measured_runs.csv:152"].scenario["parallelism"]
    assert "activation_offload_layers" not in runs["measured_runs.csv:152"].scenario


def test_every_llmboost_row_is_left_out_as_another_stack() -> None:
    # mlperf_training_llm.csv: MangoBoost's LoRA rows name the framework 'LLMBoost 1.1.0' (v5.0) or 'LLMBoost 1.2.0'
    # (v5.1, one with 'and ROCm 7.0.1'): MangoBoost's own stack, whatever their GPU count or accelerator.
    from perfmodel.fitting.runs import LLMBOOST_STACK, _mlperf_id, _read

    llmboost = {_mlperf_id(row) for row in _read("mlperf_training_llm.csv") if "LLMBoost" in row["framework"]}
    runs, excluded = bundled_runs()
    assert len(llmboost) == 8
    assert {e.id for e in excluded if e.reason == LLMBOOST_STACK} == {f"mlperf:{i}" for i in llmboost}
    assert not any("MangoBoost" in r.id for r in runs)


def test_only_narrows_the_excluded_rows_as_it_narrows_the_runs() -> None:
    """`validate --only "Megatron-Bridge MoE"` listed all 199 bundled exclusions (A100 rows, TPUs, MLPerf duplicates)
    under the 123 rows it validated; an exclusion is listed only where its id or reason contains the pattern."""
    from perfmodel.fitting.runs import collect_runs

    _, everything = collect_runs(None)
    _, moe = collect_runs(None, only="Megatron-Bridge MoE")
    _, mlperf = collect_runs(None, only="mlperf:")
    assert len(everything) > len(mlperf) > 0 and not moe
    assert all(e.id.startswith("mlperf:") for e in mlperf)


def test_every_v51_row_is_priced_or_excluded_with_a_reason() -> None:
    """mlperf_training_llm.csv holds 110 MLPerf Training v5.1 rows (63 LoRA, 39 Llama 3.1 8B, 8 Llama 3.1 405B):
    each is a priced run or an exclusion that says why."""
    from perfmodel.fitting.runs import ROUND_PUBLISHED, _mlperf_id, _read

    rows = [r for r in _read("mlperf_training_llm.csv") if r["round"] == "v5.1"]
    assert len(rows) == 110 and ROUND_PUBLISHED["v5.1"] == "2025-11"  # MLCommons published v5.1 on 2025-11-12
    runs, excluded = bundled_runs()
    priced = [r for r in runs if r.source == "MLPerf Training v5.1"]
    left_out = [e for e in excluded if e.id.startswith("mlperf:v5.1/")]
    assert len(priced) + len(left_out) == len(rows) and all(e.reason for e in left_out)
    assert {f"mlperf:{_mlperf_id(r)}" for r in rows} == {r.id for r in priced} | {e.id for e in left_out}
    benchmarks = {r.scenario["benchmark"] for r in priced}
    assert benchmarks == {"mlperf-llama31-8b@v5.1", "mlperf-llama2-70b-lora@v5.1", "mlperf-llama31-405b@v5.1"}
    reasons = {e.id: e.reason for e in left_out}
    # v5.1 Nebius H200 n64/n128 (405B) repeat v5.0's logs: their notes name the v5.0 rows.
    assert reasons["mlperf:v5.1/Nebius/nebius_h200_n64/llama31_405b"].startswith("duplicate of v5.0/Nebius/")
    assert "MI350X" in reasons["mlperf:v5.1/AMD/MI350X_EPYC_9575F_pytorch/llama31_8b"]  # no datasheet in hardware_specs
    # v5.1 NVIDIA Theia (8x GB300 NVL72), 512 GPUs, NVFP4, TP2 PP8 CP2 VP8, GBS 1152: 64.605 min.
    (gb300,) = [r for r in priced if r.id == "mlperf:v5.1/NVIDIA/theia_ngpu512_ngc25.09_nemo/llama31_405b"]
    assert (gb300.precision, gb300.measured, gb300.scenario["parallelism"]["tp"]) == ("nvfp4", 64.605, 2)


def test_university_of_florida_rows_are_dated_by_their_round_and_family() -> None:
    """University of Florida's v5.1 B200 rows run NVIDIA's NeMo recipes (their configs source b200_nemo/) but name
    only 'PyTorch NVIDIA Release 25.09', which container_month does not read as a NeMo release (the column's PyTorch
    names are often a template's); they are priced over the NeMo releases v5.1's Blackwell rows name: 25.09 alone."""
    from perfmodel.fitting.runs import _read, container_month, round_releases

    assert container_month("PyTorch NVIDIA Release 25.09") is None
    spans = round_releases(_read("mlperf_training_llm.csv"))
    assert spans[("v5.1", "blackwell")] == ("2025-09", "2025-09")
    runs = {r.id: r for r in bundled_runs()[0]}
    assert runs["mlperf:v5.1/University-of-Florida/hpg.dgxb200x8.n32/llama31_8b"].releases == ("2025-09", "2025-09")


def test_a_row_naming_no_precision_where_its_round_ran_several_is_excluded() -> None:
    """mlperf_training_llm.csv, v5.1: the Llama 3.1 8B rows on 8 B200 that name no precision (Lenovo, Nebius,
    Oracle, Supermicro; Dell's notes list both config_DGXB200_1x8x2xtp1pp1cp1_8b.sh and its _fp4.sh twin) score
    84.4-86.7 min at 174,490-178,176 samples, where University of Florida's FP8 row at the same TP1 MBS2 GBS16 layout
    scores 93.687 min at 159,744: priced as FP8 they read 23-27% too slow. The round's Blackwell rows of both
    benchmarks name FP8 and NVFP4, so such a row's format is unknown; AMD's v5.1 8B rows name none either, but no
    CDNA4 row names a precision other than the one assumed, so they stay (FP8)."""
    from perfmodel.fitting.runs import _read, round_precisions

    named = round_precisions(_read("mlperf_training_llm.csv"))
    assert named[("v5.1", "llama31_8b", "blackwell")] == {"FP8", "NVFP4"}
    assert ("v5.1", "llama31_8b", "cdna4") not in named
    runs, excluded = bundled_runs()
    reasons = {e.id: e.reason for e in excluded}
    assert "FP8, NVFP4" in reasons["mlperf:v5.1/Lenovo/SR680aV3-8xB200_SXM_180GB/llama31_8b"]
    assert "FP8, NVFP4" in reasons["mlperf:v5.1/Wiwynn/1xKinabalux18x4GB200/llama2_70b_lora"]  # LoRA on GB200 NVL72
    ambiguous = [e for e in excluded if e.reason.startswith("precision not reported")]
    assert len(ambiguous) == 22 and all(e.id.startswith("mlperf:v5.1/") for e in ambiguous)
    amd = next(r for r in runs if r.id == "mlperf:v5.1/AMD/MI355X_EPYC_9575F_pytorch/llama31_8b")
    assert amd.precision == "fp8" and any("precision not reported" in a for a in amd.assumptions)
