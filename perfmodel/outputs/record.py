"""The one flat row of a prediction that every row-shaped output carries, under these names, in this order.

`Prediction.to_record()` is the row: `predict --format csv`, `search`/`compare --format csv`, `sweep` (its rows and
--out) and `export` (CSV, JSON and the workbook's key row) all carry its columns unrenamed, and may add their own
after them (compare's ratios, sweep's `whatif` and `error`, export's editable inputs). Some columns appear only where
they apply (an MoE model, an MLPerf benchmark, a calibration's interval, the goodput model, the losses, `--buy`); a
column a prediction lacks is empty in a table of many. The README's schema table is `markdown_table()` (a test keeps
it so).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.scenario import RUN_SETTINGS


class Field(NamedTuple):
    name: str
    unit: str
    meaning: str


_PARTS = {
    "compute_s": "compute (GEMMs, attention, elementwise)",
    "tp_comm_exposed_s": "tensor-parallel communication not hidden by compute",
    "cp_comm_exposed_s": "context-parallel communication not hidden by compute",
    "pp_bubble_s": "pipeline bubble",
    "pp_comm_exposed_s": "pipeline sends not hidden by compute",
    "dp_comm_exposed_s": "data-parallel communication not hidden by compute",
    "optimizer_s": "optimizer step",
    "other_s": "data loading, logging, syncs; activation offload not hidden by compute, if set",
    "ep_comm_exposed_s": "expert-parallel all-to-all not hidden by compute (MoE only)",
}
_MEMORY = {
    "weights": "parameters",
    "gradients": "gradients",
    "optimizer": "optimizer state (master weights, moments)",
    "activations": "activations kept for the backward pass",
    "runtime": "runtime reserve (CUDA context, allocator, communication buffers)",
}


def _bounds(name: str, unit: str, what: str = "") -> tuple[Field, Field]:
    """The low and high ends of a quantity's 80% interval (the calibration's, protocol in interval_protocol)."""
    meaning = f"{what or name} with the calibration's 80% interval"
    return Field(f"{name}_low", unit, f"{meaning}, low end"), Field(f"{name}_high", unit, f"{meaning}, high end")


_PRICE_DRAWN = "; with price_distribution: of time x the price drawn (the P50 too)"
_SOURCES = "the interval and run-to-run variability combined"


def _quantiles(
    name: str, unit: str, what: str = "", basis: str = "failure-free", sources: str = _SOURCES
) -> tuple[Field, ...]:
    """P10, P50 and P90 of a quantity (planning/confidence.py): its `sources` combined, the P50 the point."""
    ends = {"p10": sources, "p50": "the point exactly", "p90": sources}
    drawn = _PRICE_DRAWN if name.startswith("cost_usd") else ""
    return tuple(Field(f"{name}_{q}", unit, f"{what or name}, {q.upper()}: {end} ({basis}){drawn}")
                 for q, end in ends.items())  # fmt: skip


_FAILING = "expected with failures, checkpoints and restarts (goodput model)"
_LOSING = "with failures and every loss (planning/losses.py; losses model on, a token budget)"
_LOSSES_SOURCES = "the interval, run-to-run variability and the failures' random count combined"
_WITH_LOSSES = (
    ("time_to_train_with_losses_s", "s"),
    ("time_to_train_with_losses_days", "days"),
    ("gpu_hours_with_losses", "GPU-hours"),
    ("cost_usd_with_losses", "USD"),
    ("energy_kwh_with_losses", "kWh"),
)

FIELDS: tuple[Field, ...] = (
    Field("phase", "", "a campaign's phase, or 'total' on its own row (campaigns only: README, Campaigns)"),
    Field("model", "", "model id (perfmodel models list)"),
    Field("accelerator", "", "accelerator id (perfmodel hardware list)"),
    Field("system", "", "system id: the node or rack the accelerators sit in"),
    Field("n_gpus", "GPUs", "GPUs the job runs on"),
    Field("precision", "", "precision recipe (bf16, fp8, mxfp8, nvfp4, mxfp4)"),
    Field("documents", "", "what priced attention: 'pretrain' (whole sequences), documents of one length, a histogram"),
    Field("attention_keys_per_query", "keys", "mean keys per full-attention query: s/2, less with documents"),
    Field("lora_rank", "rank", "LoRA adapter rank (0: full training)"),
    Field("lora_modules", "", "linear layers LoRA adapts: attention, mlp or all-linear (LoRA only)"),
    Field("parallelism.tp", "ranks", "tensor-parallel size"),
    Field("parallelism.pp", "stages", "pipeline-parallel stages"),
    Field("parallelism.cp", "ranks", "context-parallel size"),
    Field("parallelism.cp_comm", "", "context parallelism's exchange: p2p (ring), all_gather or a2a (Ulysses)"),
    Field("parallelism.dp", "replicas", "data-parallel replicas"),
    Field("parallelism.shard_group", "ranks", "hybrid sharding: the DP x CP ranks ZeRO-3 shards over (when set)"),
    Field("parallelism.vp", "stages per rank", "virtual pipeline stages per pipeline rank"),
    Field("parallelism.ep", "ranks", "expert-parallel size (1 for a dense model)"),
    Field("parallelism.etp", "ranks", "expert tensor-parallel size (MoE only)"),
    Field("parallelism.mbs", "sequences", "micro-batch size"),
    Field("parallelism.gbs", "sequences", "global batch size"),
    Field("parallelism.seq_len", "tokens", "sequence length"),
    Field("parallelism.recompute", "", "activation recomputation: none, selective or full"),
    Field(
        "parallelism.recompute_layers",
        "layers",
        "partial (block) recompute: only the first k layers of each pipeline chunk recompute in full (only when set)",
    ),
    Field("parallelism.zero", "stage", "ZeRO stage (0 plain DP, 1 distributed optimizer, 2 gradients, 3 weights)"),
    Field("stack", "", "software stack the prediction priced (megatron, composer, torchtitan, ...)"),
    Field("stack_knobs.async_tp", "true/false", "torchtitan's async TP (true) or vanilla TP (false); empty: none"),
    Field("stack_knobs.compile", "true/false", "torch.compile fusion (true) or eager elementwise (false); empty: none"),
    Field(
        "stack_knobs.fp8_recipe",
        "",
        "FP8 scaling: torchao's tensorwise or rowwise (torchtitan), Megatron-Bridge's delayed or tensorwise "
        "(megatron); empty: no such knob, no FP8, or Megatron's release decides",
    ),
    *(Field(name, unit, f"{meaning} (scenario key; only when set)") for name, (unit, meaning) in RUN_SETTINGS.items()),
    Field(
        "run_settings",
        "",
        "the scenario keys above that the prediction set ('; '-separated; empty: none); a saved record without this "
        "column predates them, and launch --from says it prices their defaults",
    ),
    Field("vintage", "YYYY-MM", "the software release month priced (only when set; else the calibration's newest)"),
    Field("step_time_s", "s", "time of one optimizer step"),
    Field("tokens_per_s", "tokens/s", "cluster throughput"),
    Field("tokens_per_s_per_gpu", "tokens/s", "throughput per GPU"),
    Field("model_tflops_per_gpu", "TFLOP/s", "model FLOPs (6N per token plus attention) per second per GPU"),
    Field("mfu", "fraction", "the JSON contract's MFU, equal to mfu_of_precision (never above 1)"),
    Field("mfu_bf16", "fraction", "model FLOP/s over the dense BF16 peak (NVIDIA's and the Llama 3 paper's MFU)"),
    Field("mfu_of_precision", "fraction", "model FLOP/s over the dense peak of the format the GEMMs run in"),
    Field("memory_per_gpu_gb", "GB (1e9 B)", "memory one GPU needs"),
    Field("memory_capacity_gb", "GB (1e9 B)", "memory one GPU has"),
    Field("memory_per_gpu_gib", "GiB (2^30 B)", "memory one GPU needs"),
    Field("memory_capacity_gib", "GiB (2^30 B)", "memory one GPU has (what the datasheet calls GB)"),
    Field("fits_in_memory", "true/false", "memory_per_gpu_gb is within memory_capacity_gb"),
    *(Field(f"memory_gb.{part}", "GB (1e9 B)", f"per GPU: {what}") for part, what in _MEMORY.items()),
    Field("tokens_to_train", "tokens", "the training run's tokens (empty without a budget)"),
    Field("tokens_from_default", "true/false", "tokens_to_train is the default scenario's budget, not the question's"),
    Field("time_to_train_s", "s", "time to train, failure-free (empty without tokens or a benchmark)"),
    Field("time_to_train_min", "min", "time_to_train_s in minutes"),
    Field("time_to_train_days", "days", "time_to_train_s in days"),
    Field("gpu_hours", "GPU-hours", "n_gpus x time to train"),
    Field("usd_per_gpu_hour", "USD/GPU-hour", "the price the cost uses (empty: no public price, see price_source)"),
    Field("min_usd_per_gpu_hour", "USD/GPU-hour", "low end of the price's public range"),
    Field("max_usd_per_gpu_hour", "USD/GPU-hour", "high end of the price's public range"),
    Field("price_source", "", "where the price comes from, or why there is none (then every cost column is empty)"),
    Field("price_basis", "", "list (published on-demand), estimate (derived), quoted (yours), owned (--buy) or none"),
    Field("price_note", "", "the price's basis in one line (a table's price footnote)"),
    Field("price_distribution.kind", "", "triangular: the price distribution you stated (--price-range; else absent)"),
    Field("price_distribution.low", "USD/GPU-hour", "its low end"),
    Field("price_distribution.mode", "USD/GPU-hour", "its mode, the price the cost is quoted at"),
    Field("price_distribution.high", "USD/GPU-hour", "its high end"),
    Field("price_distribution.drawn_in", "", "the figures that draw it (cost quantiles and probabilities)"),
    Field("cost_usd", "USD", "gpu_hours x usd_per_gpu_hour"),
    Field("cost_usd_at_min_price", "USD", "gpu_hours x min_usd_per_gpu_hour"),
    Field("cost_usd_at_max_price", "USD", "gpu_hours x max_usd_per_gpu_hour"),
    Field("energy_kwh", "kWh", "facility energy: GPUs x power_w_per_gpu_at_wall x PUE x time"),
    Field("pue", "ratio", "facility power usage effectiveness"),
    Field("power_w_per_gpu_at_wall", "W", "power per GPU before PUE: board, host share, network (hardware_specs)"),
    Field("grid_gco2_per_kwh", "gCO2e/kWh", "the grid's carbon intensity (--grid-gco2-per-kwh; default: US average)"),
    Field("co2e_t", "tCO2e", "operational carbon: energy_kwh x grid_gco2_per_kwh"),
    Field("co2e_embodied_t", "tCO2e", "embodied carbon, the run's share by GPU-hours (estimate: planning/carbon.py)"),
    Field("layouts_searched", "layouts", "valid layouts the search considered to choose this one (1: given)"),
    *_bounds("step_time_s", "s"),
    *_bounds("time_to_train_s", "s"),
    *_bounds("time_to_train_min", "min"),
    Field("interval_protocol", "", "the out-of-sample protocol whose held-out residuals give the interval"),
    *_bounds("gpu_hours", "GPU-hours"),
    *_bounds("energy_kwh", "kWh"),
    *_bounds("cost_usd", "USD", "cost_usd at usd_per_gpu_hour"),
    *_quantiles("time_to_train_s", "s"),
    *_quantiles("time_to_train_days", "days"),
    *_quantiles("gpu_hours", "GPU-hours"),
    *_quantiles("cost_usd", "USD", "cost_usd at usd_per_gpu_hour"),
    *_quantiles("energy_kwh", "kWh"),
    *_quantiles("co2e_t", "tCO2e", "operational carbon"),
    Field("evidence.nearest_row", "", "id of the nearest measured run the calibration saw (as validate lists it)"),
    Field("evidence.nearest", "", "that run: model, GPUs, format, layout, source and measured throughput"),
    Field("evidence.model_class", "", "model class: dense and its size decade (LoRA: fine-tuning), or MoE"),
    Field("evidence.scale_band", "GPUs", "scale band: the GPU counts between two powers of four"),
    Field(
        "evidence.layout_class",
        "",
        "layout class: TP and PP banded (1, 2-4, 5+), VP, CP and EP used or not, ZeRO stage, full recompute",
    ),
    Field(
        "evidence.beyond",
        "",
        "axes on which no measured run is like the question ('; '-separated; empty: within the evidence)",
    ),
    Field(
        "evidence.best_measured_row",
        "",
        "id of the best measured run of the same model on the same family and format (by model TFLOP/s per GPU)",
    ),
    Field("evidence.best_measured_model_tflops_per_gpu", "TFLOP/s", "that run's model TFLOP/s per GPU"),
    Field("evidence.ratio_to_best_measured", "ratio", "model_tflops_per_gpu over that run's"),
    Field("evidence.widening", "ratio", "width of the 80% interval over its protocol's (1: not widened)"),
    Field("evidence.widened_by", "", "the axes that widened it ('; '-separated)"),
    Field("benchmark", "", "MLPerf benchmark and round (benchmark runs only)"),
    Field("samples_to_converge", "sequences", "samples the benchmark's reference convergence point needs"),
    Field("evaluations", "count", "evaluations the benchmark runs"),
    Field("train_time_s", "s", "benchmark: training part of the scored time"),
    Field("eval_time_s", "s", "benchmark: evaluation part of the scored time"),
    Field("run_overhead_s", "s", "benchmark: fixed run overhead inside the scored time"),
    *(Field(f"breakdown.{part}", "s", f"step time part: {what}") for part, what in _PARTS.items()),
    Field("moe.dispatcher", "", "MoE: how tokens reach their experts, 'flex' (DeepEP/HybridEP) or 'alltoall' (NCCL)"),
    Field(
        "moe.ep_microbatch_overlap",
        "true/false",
        "MoE: the recipe overlaps one micro-batch's all-to-alls with another's compute",
    ),
    Field(
        "moe.ep_exchange_exposed",
        "true/false",
        "MoE: the recipe overlaps nothing with the all-to-alls (neither micro-batches nor shared experts)",
    ),
    Field("moe.ep_overlap_fraction", "fraction", "MoE: share of the all-to-all's compute window that hides it"),
    Field(
        "moe.ep_overlap_parameter",
        "",
        "MoE: the calibrated efficiency that share is, overlap_ep, or overlap_dp across domains",
    ),
    Field(
        "moe.ep_scaleup_domains",
        "domains",
        "MoE: scale-up domains one EP group spans (1: all-to-alls on scale-up links)",
    ),
    Field("moe.imbalance", "ratio", "MoE: tokens of the busiest expert rank over the mean (moe_imbalance)"),
    Field(
        "moe.capacity_factor",
        "ratio",
        "MoE: expert capacity over the balanced share, tokens beyond it dropped (0: dropless)",
    ),
    Field("moe.pad_to_capacity", "true/false", "MoE: every expert padded to its capacity (grouped GEMMs, all-to-all)"),
    Field(
        "moe.measured_rows",
        "rows",
        "MoE: bundled measured rows of this zoo model on this accelerator family in the calibration (absent: none)",
    ),
    Field(
        "moe.measured_error_pct_median",
        "%",
        "MoE: median held-out throughput error of those rows (predicted / measured - 1; positive: too fast)",
    ),
    Field("moe.measured_min_error_pct", "%", "MoE: lowest held-out throughput error of those rows"),
    Field("moe.measured_max_error_pct", "%", "MoE: highest held-out throughput error of those rows"),
    Field("goodput", "fraction", "share of wall time that trains (goodput model on)"),
    Field("reliability.job_mtbf_h", "h", "mean time between unexpected interruptions of the whole job"),
    Field("reliability.unexpected_per_day", "per day", "unexpected interruptions per day of the job"),
    Field("reliability.planned_per_day", "per day", "planned interruptions per day of the job"),
    Field("reliability.checkpoint_gb", "GB (1e9 B)", "one checkpoint: weights and optimizer state"),
    Field("reliability.storage_gb_per_s_per_node", "GB/s per node", "checkpoint storage bandwidth"),
    Field("reliability.checkpoint_write_s", "s", "time to write one checkpoint"),
    Field("reliability.checkpoint_load_s", "s", "time to load one checkpoint on restart"),
    Field("reliability.checkpoint_interval_s", "s", "training time between checkpoints"),
    Field("reliability.checkpoint_interval", "", "how the interval was set: given or Young/Daly optimum"),
    Field("reliability.restart_s", "s", "restart time per interruption, before loading"),
    Field("expected_interruptions", "count", "interruptions expected over the run, planned and unexpected"),
    Field("expected_unexpected_interruptions", "count", "unexpected interruptions expected over the run"),
    Field("time_to_train_with_failures_s", "s", f"time to train {_FAILING}"),
    Field("time_to_train_with_failures_days", "days", f"time to train {_FAILING}"),
    Field("gpu_hours_with_failures", "GPU-hours", f"GPU-hours {_FAILING}"),
    Field("cost_usd_with_failures", "USD", f"cost {_FAILING}"),
    Field("cost_usd_with_failures_at_min_price", "USD", f"cost at the low price {_FAILING}"),
    Field("cost_usd_with_failures_at_max_price", "USD", f"cost at the high price {_FAILING}"),
    Field("energy_kwh_with_failures", "kWh", f"energy {_FAILING}"),
    Field("losses.failures_gpu_hours", "GPU-hours", "loss: lost work, restarts and checkpoint reads (goodput model)"),
    Field("losses.checkpoints_gpu_hours", "GPU-hours", "loss: synchronous checkpoint writes (goodput model)"),
    Field("losses.stragglers_gpu_hours", "GPU-hours", "loss: lock-step ranks waiting for slow ones over the run"),
    Field("losses.startup_gpu_hours", "GPU-hours", "loss: start-up of each job (initialisation, loader, compiling)"),
    Field("losses.ramp_gpu_hours", "GPU-hours", "loss: a batch ramp's tokens at their smaller batches (when set)"),
    Field("losses.evaluation_gpu_hours", "GPU-hours", "loss: in-loop evaluations (when set)"),
    Field("losses.spare_gpu_hours", "GPU-hours", "loss: GPUs held in reserve for the job's wall time (when set)"),
    Field("losses.total_gpu_hours", "GPU-hours", "every loss above together"),
    Field("time_to_train_with_losses_s", "s", f"time to train {_LOSING}"),
    Field("time_to_train_with_losses_days", "days", f"time to train {_LOSING}"),
    Field("gpu_hours_with_losses", "GPU-hours", f"GPU-hours {_LOSING}"),
    Field("cost_usd_with_losses", "USD", f"cost {_LOSING}"),
    Field("energy_kwh_with_losses", "kWh", f"energy {_LOSING}"),
    *(field for name, unit in _WITH_LOSSES for field in _quantiles(name, unit, "", "with losses", _LOSSES_SOURCES)),
    Field("cost_mode", "", "rent (price per GPU-hour) or buy (cost of owning, --buy)"),
    Field("tco.usd_per_system", "USD", "buy: purchase price of one node or rack"),
    Field("tco.min_usd_per_system", "USD", "buy: low end of the purchase price"),
    Field("tco.max_usd_per_system", "USD", "buy: high end of the purchase price"),
    Field("tco.usd_per_system_source", "", "buy: where the purchase price comes from"),
    Field("tco.gpus_per_system", "GPUs", "buy: GPUs a job uses per system bought"),
    Field("tco.amortisation_years", "years", "buy: years the purchase is spread over"),
    Field("tco.utilisation", "fraction", "buy: share of the hours the systems train"),
    Field("tco.usd_per_kwh", "USD/kWh", "buy: electricity price"),
    Field("tco.facility_usd_per_kw_month", "USD per kW-month", "buy: facility cost per kW of IT load"),
    Field("tco.capex_usd_per_gpu_hour", "USD/GPU-hour", "buy: purchase share of a GPU-hour"),
    Field("tco.power_usd_per_gpu_hour", "USD/GPU-hour", "buy: electricity share of a GPU-hour"),
    Field("tco.facility_usd_per_gpu_hour", "USD/GPU-hour", "buy: facility share of a GPU-hour"),
    Field("usd_per_million_tokens", "USD per 1e6 tokens", "cost_usd over tokens_to_train"),
    Field("usd_per_million_tokens_with_failures", "USD per 1e6 tokens", f"cost per million tokens {_FAILING}"),
)
NAMES = tuple(field.name for field in FIELDS)
_RANK = {name: index for index, name in enumerate(NAMES)}


def header(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The columns of a table of rows: the canonical ones any row has, in canonical order, then the others in the
    order they first appear."""
    seen: dict[str, None] = {}
    for row in rows:
        seen |= dict.fromkeys(row)
    return sorted(seen, key=lambda key: _RANK.get(key, len(_RANK)))  # sorted is stable: the others keep their order


def table(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows with the same keys, in `header` order (a column a row lacks is None)."""
    rows = list(rows)
    keys = header(rows)
    return [{key: row.get(key) for key in keys} for row in rows]


TEXT_UNIT, FLAG_UNIT = "", "true/false"
"""The units of the columns that are not numbers: text (an id, a name, a note) and flags."""
UNITS = {field.name: field.unit for field in FIELDS} | {
    # the columns compare and plan add that every row of a table may leave empty
    "scaling_efficiency": "fraction", "budget_share": "fraction", "p_within_budget": "fraction",
    "p_meet_deadline": "fraction", "deadline_share": "fraction", "reason": TEXT_UNIT, "binds": TEXT_UNIT,
}  # fmt: skip
"""Each column's unit: the schema's (FIELDS), and those of the columns compare and plan add to a prediction's."""


def frame(records: Iterable[Mapping[str, Any]]) -> Any:
    """Records as a pandas DataFrame of nullable dtypes (`convert_dtypes`: Int64, Float64, boolean, string), a
    column of the schema that every row leaves empty (a LoRA column of full-training runs) typed by its unit (text,
    flag or number) where pandas alone would make it `object`. pandas stays optional: the error says how to get it."""
    try:
        import pandas
    except ImportError:
        raise PerfmodelError("a DataFrame needs pandas: pip install pandas (or use .to_records())") from None
    data = pandas.DataFrame.from_records(table(records)).convert_dtypes()
    for column in data.columns[data.isna().all()]:
        if (unit := UNITS.get(column.removeprefix("plan."))) is not None:  # plan's rows nest the prediction
            kind = "string" if unit == TEXT_UNIT else "boolean" if unit == FLAG_UNIT else "Float64"
            data[column] = data[column].astype(kind)
    return data


def markdown_table() -> str:
    """The schema as the README shows it."""
    lines = ["| column | unit | meaning |", "|---|---|---|"]
    lines += [f"| `{f.name}` | {f.unit} | {f.meaning} |" for f in FIELDS]
    return "\n".join(lines) + "\n"


PRICE_MARKS = {"list": "list", "estimate": "est.", "quoted": "quote", "owned": "owned"}
"""A price's basis as a table cell marks it beside the figure."""
PRICE_PHRASES = {
    "list": "at on-demand list price",
    "estimate": "at estimated price",
    "quoted": "at the quoted price",
    "owned": "of owning",
    "none": "(no price)",
}


def price_cell(usd_per_gpu_hour: float | None, basis: str | None) -> str:
    """A '$/GPU-h' cell: '13.13 est.', '6.16 list', '9.50 quote', or 'none' without a price."""
    if usd_per_gpu_hour is None:
        return "none"
    return f"{usd_per_gpu_hour:,.2f} {PRICE_MARKS.get(str(basis), str(basis))}"


def price_basis(records: Iterable[Mapping[str, Any]]) -> str:
    """What rows' costs price, from their price_basis: 'at on-demand list price', 'at estimated price', 'at the
    quoted price' or 'of owning' (--buy), or 'at each row's price' when they differ; a cost labelled list must be
    one, and one resting on an estimate says so."""
    bases = {str(r.get("price_basis") or "none") for r in records} - {"none"}
    if not bases:
        return PRICE_PHRASES["none"]
    return PRICE_PHRASES[bases.pop()] if len(bases) == 1 else "at each row's own price"
