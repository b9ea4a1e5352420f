"""The exported table: one row per result, one column per quantity, units in the column names.

Every column says where it lives in the workbook (Inputs, Results or Breakdown sheet), how to read its value from a
prediction, and, for derived quantities, its formula. Formulas are sympy expressions in the other columns' symbols,
built by the model's own functions (`training.training_run` for time, GPU-hours, cost and energy; goodput.py's and
losses.py's for the run with failures and with losses), so the spreadsheet's live formulas are the model's arithmetic,
not a second copy of it. CSV, JSON and XLSX all come from this one table.

Editing the GPU count: the workbook keeps each result's modelled throughput per GPU and scales the cluster around it
(more or fewer data-parallel replicas at the same per-GPU speed). Time-to-train changes inversely with the GPU count;
GPU-hours, cost and energy do not. perfmodel itself would re-price the layout at the new size (communication grows with
it): for an exact answer at another size, export again with --gpus.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from perfmodel.inputs.precision import get_recipe
from perfmodel.inputs.scenario import TOTAL, flatten
from perfmodel.outputs import record
from perfmodel.outputs.export import printing
from perfmodel.physics.step import BREAKDOWN
from perfmodel.planning import carbon, compare, goodput, losses, tco
from perfmodel.planning import confidence as chance
from perfmodel.planning.campaign import Campaign, Result, totals
from perfmodel.planning.losses import Losses
from perfmodel.planning.predict import Prediction, model_flops_per_token
from perfmodel.planning.tco import DEFAULT_USD_PER_KWH, USD_PER_KWH_SOURCE
from perfmodel.planning.training import (
    AT_MAX_PRICE,
    AT_MIN_PRICE,
    JOULES_PER_KWH,
    SECONDS_PER_HOUR,
    Price,
    Run,
    training_run,
)

__all__ = [
    "DEFAULT_USD_PER_KWH", "USD_PER_KWH_SOURCE", "Column", "ExportRow", "Line", "TotalRow", "all_columns",
    "campaign_lines", "records",
]  # fmt: skip

OPTIONAL_INPUTS = (
    "tokens_to_train", "usd_per_gpu_hour", "min_usd_per_gpu_hour", "max_usd_per_gpu_hour", "goodput",
    "usd_per_system", "failures_per_million_gpu_hours", "interval_factor_low", "interval_factor_high",
    "time_to_train_s", "time_to_train_with_failures_s", "gpu_hours", "cost_usd", "cost_usd_at_min_price",
    "cost_usd_at_max_price", "energy_kwh",
)  # fmt: skip
"""Inputs a result may lack (no token budget given; no public price; the goodput model off, or a run that never
ends), and the results empty without them that the loss formulas read: formulas that need them show empty."""

Sheet = Literal["inputs", "results", "breakdown", "details"]
Symbols = Mapping[str, Any]  # column key -> sympy Symbol


@dataclass(frozen=True)
class ExportRow:
    """One result to export: a prediction, its label, and extra columns its command adds (compare's ratios)."""

    label: str
    prediction: Prediction
    extra: Mapping[str, Any] = field(default_factory=dict)

    @cached_property
    def data(self) -> dict[str, Any]:
        """The prediction's JSON record, computed once per row."""
        return self.prediction.to_dict()

    @cached_property
    def record(self) -> dict[str, Any]:
        """`data` flattened: the row of the one output schema."""
        return flatten(self.data)


@dataclass(frozen=True)
class TotalRow:
    """A campaign's total row in an export, under its phases' rows (`phases`: their places among the export's
    lines): each cell their total by the campaign's one rule (planning/campaign.py, total_rule), in the workbook a
    live formula over their cells; `extra`: the columns the total carries beyond (compare's ratios, plan's verdict)."""

    campaign: Campaign
    label: str
    phases: range
    extra: Mapping[str, Any] = field(default_factory=dict)


Line = ExportRow | TotalRow
"""A line of an export: a result (a prediction, or a campaign's phase), or a campaign's total."""


def campaign_lines(
    campaign: Campaign,
    start: int = 0,
    label: str = "",
    extra: Mapping[str, Any] | None = None,
    every: Mapping[str, Any] | None = None,
) -> list[Line]:
    """A campaign as the lines of an export that begin at place `start`: a row per phase, then its total row, each
    labelled by its phase (after `label`, when given: the system or candidate); `every`: columns of every line (a
    plan's candidate), `extra`: of the total row only (compare's ratios)."""
    every = every or {}

    def named(phase: str) -> str:
        return f"{label}: {phase}" if label else phase

    rows: list[Line] = [ExportRow(named(name), p, {"phase": name, **every}) for name, p in campaign.phases.items()]
    total = TotalRow(campaign, named(TOTAL), range(start, start + len(rows)), {**every, **(extra or {})})
    return [*rows, total]


@dataclass(frozen=True)
class Column:
    key: str
    """Name in CSV/JSON, with its unit (`_s`, `_gb`, `_usd`, `_kwh`, ...)."""
    header: str
    """Heading in the workbook, with the unit spelled out."""
    sheet: Sheet
    value: Callable[[ExportRow, float], Any]
    """perfmodel's own number for a row (the second argument is the electricity price in USD/kWh)."""
    formula: Callable[[Symbols], Any] | None = None
    """The live spreadsheet formula, as a sympy expression in other columns' symbols (None: a plain value)."""
    number_format: str = "General"
    editable: bool = False
    shared_default: bool = False
    """An input usually equal across rows: the workbook links each row's cell to one default cell."""
    blank_when_none: bool = False
    """A row without a value gets no formula either (scaling efficiency of a system compared at one size)."""
    total: Callable[[Symbols], Any] | None = None
    """A quantity of a campaign as a whole (compare's ratios): on its total row, this formula in the total row's own
    cells (`first.KEY`: the first campaign's total row); its phases' rows are blank. None: the column's total is
    its phases' by the campaign's rule."""


RATIO_FORMAT = '0.00"x"'
"""A ratio that may exceed 1 where a percentage above 100% would read as more than the whole (MFU over a peak the
run does not use)."""


def _over_bf16_peak(s: Symbols) -> Any:
    return s["model_tflops_per_gpu"] / s["bf16_dense_peak_tflops"]


def _gemm_format(row: ExportRow) -> str:
    """The tensor-core format a row's GEMMs run in ('bf16', 'fp8' or 'fp4'), whose dense peak its MFU divides by."""
    p = row.prediction
    return get_recipe(p.scenario.precision, p.hardware.accelerator).gemm_format


def _run(s: Symbols) -> Run:
    """The model's own run arithmetic on symbols: throughput per GPU is kept, the GPU count is an input; the time is
    the tokens over the throughput plus what a benchmark adds (evaluations, run overhead), as in predict.py."""
    price = Price(s["usd_per_gpu_hour"], s["min_usd_per_gpu_hour"], s["max_usd_per_gpu_hour"], "symbolic")
    time_s = s["tokens_to_train"] / (s["tokens_per_s_per_gpu"] * s["n_gpus"]) + s["extra_time_s"]
    return training_run(s["tokens_to_train"], time_s, s["n_gpus"], price, s["power_w_per_gpu"], s["pue"])


def _extra_time(row: ExportRow, _usd_per_kwh: float) -> float | None:
    run = row.prediction.run
    return None if run is None else run.time_s - run.tokens / row.prediction.tokens_per_s


def electricity_cost_usd(energy_kwh: Any, usd_per_kwh: Any) -> Any:
    """What the energy costs an owner who pays for power (a rental price already includes it)."""
    return energy_kwh * usd_per_kwh


def _d(key: str, *path: str) -> Callable[[ExportRow, float], Any]:
    def read(row: ExportRow, _usd_per_kwh: float) -> Any:
        value: Any = row.data
        for part in (*path, key):
            value = value[part]
        return value

    return read


def _run_value(name: str) -> Callable[[ExportRow, float], Any]:
    def read(row: ExportRow, _usd_per_kwh: float) -> Any:
        run = row.prediction.run
        return None if run is None else getattr(run, name)

    return read


def _electricity(row: ExportRow, usd_per_kwh: float) -> float | None:
    run = row.prediction.run
    return None if run is None else electricity_cost_usd(run.energy_kwh, usd_per_kwh)


def _breakdown_column(part: str) -> Column:
    """A part of the step time, headed by its name alone: its cells carry the unit (0.4570 s), and its heading,
    repeated atop each printed page of the Breakdown, heads its share's column too (82.4%) where the shares under
    the parts go on from a page to the next ('Compute (s)' read over 91.7%)."""
    from perfmodel.outputs.report import BREAKDOWN_LABELS

    label = BREAKDOWN_LABELS[part]
    return Column(f"breakdown.{part}", label[0].upper() + label[1:], "breakdown", _d(part, "breakdown"), None, "0.0000")


def _memory_column(part: str) -> Column:
    """A part of the memory per GPU, on Results beside their sum (Breakdown's columns print one page wide)."""
    return Column(f"memory_gb.{part}", f"Memory: {part} (GB)", "results", _d(part, "memory_gb"), None, "0.00")


def _layout(name: str) -> Callable[[ExportRow, float], Any]:
    return lambda row, _k: getattr(row.prediction.layout, name)


def _in_gib(key: str) -> Callable[[Symbols], Any]:
    """A size in GB (1e9 bytes) in GiB (2^30 bytes), the unit memory capacities are really in."""
    return lambda s: s[key] * 1e9 / 2**30


def _time(seconds_per_unit: float) -> Callable[[Symbols], Any]:
    return lambda s: _run(s).time_s / seconds_per_unit


COLUMNS: tuple[Column, ...] = (
    Column("label", "Result", "results", lambda row, _k: row.label),
    Column("model", "Model", "results", _d("model")),
    Column("accelerator", "Accelerator", "results", _d("accelerator")),
    Column("system", "System", "results", _d("system")),
    Column("precision", "Precision", "results", _d("precision")),
    Column("parallelism.tp", "TP", "results", _layout("tp")),
    Column("parallelism.pp", "PP", "results", _layout("pp")),
    Column("parallelism.vp", "VP", "results", _layout("vp")),
    Column("parallelism.cp", "CP", "results", _layout("cp")),
    Column("parallelism.dp", "DP", "results", _layout("dp")),
    Column("parallelism.ep", "EP", "results", _layout("ep")),
    Column("parallelism.mbs", "Micro-batch (sequences)", "results", _layout("mbs")),
    Column("parallelism.gbs", "Global batch (sequences)", "results", _layout("gbs")),
    Column("parallelism.seq_len", "Sequence length (tokens)", "results", _layout("seq_len")),
    Column("parallelism.recompute", "Recompute", "results", _layout("recompute")),
    Column("parallelism.zero", "ZeRO stage", "results", _layout("zero")),
    Column("n_gpus_modelled", "GPUs modelled", "results", _d("n_gpus"), None, "#,##0"),
    # Per-step results of the model: the step time is the sum of its parts on the Breakdown sheet.
    *(_breakdown_column(part) for part in BREAKDOWN),
    Column(
        "breakdown.ep_comm_exposed_s",
        "Expert-parallel all-to-all, exposed",
        "breakdown",
        lambda row, _k: row.data["breakdown"].get("ep_comm_exposed_s", 0.0),  # 0 for a dense model
        None,
        "0.0000",
    ),
    Column(
        "step_time_s",
        "Step time (s)",
        "results",
        _d("step_time_s"),
        lambda s: sum(s[f"breakdown.{part}"] for part in (*BREAKDOWN, "ep_comm_exposed_s")),
        "0.000",
    ),
    *(_memory_column(part) for part in ("weights", "gradients", "optimizer", "activations", "runtime")),
    Column("memory_per_gpu_gb", "Memory per GPU (GB)", "results", _d("memory_per_gpu_gb"), None, "0.0"),
    Column("memory_capacity_gb", "GPU memory (GB)", "results", _d("memory_capacity_gb"), None, "0.0"),
    Column("fits_in_memory", "Fits in memory", "results", _d("fits_in_memory")),
    Column(
        "tokens_per_step",
        "Tokens per step",
        "results",
        lambda row, _k: row.prediction.layout.gbs * row.prediction.layout.seq_len,
        lambda s: s["parallelism.gbs"] * s["parallelism.seq_len"],
        "#,##0",
    ),
    Column(
        "tokens_per_s_per_gpu",
        "Throughput per GPU (tokens/s)",
        "results",
        _d("tokens_per_s_per_gpu"),
        lambda s: s["tokens_per_step"] / (s["step_time_s"] * s["n_gpus_modelled"]),
        "#,##0",
    ),
    Column(
        "model_flops_per_token",
        "Model FLOPs per token",
        "results",
        lambda row, _k: model_flops_per_token(
            row.prediction.model, row.prediction.scenario, row.prediction.layout.seq_len
        ),
        None,
        '#,##0.0,,," GFLOP"',  # 291.8 GFLOP, not 2.918E+11
    ),
    Column(
        "model_tflops_per_gpu",
        "Model TFLOP/s per GPU",
        "results",
        _d("model_tflops_per_gpu"),
        lambda s: s["tokens_per_s_per_gpu"] * s["model_flops_per_token"] / 1e12,
        "0.0",
    ),
    Column(
        "bf16_dense_peak_tflops",
        "Dense BF16 peak (TFLOP/s)",
        "results",
        lambda row, _k: row.prediction.hardware.accelerator.bf16_tflops.value,
        None,
        "0.0",
    ),
    Column(
        "gemm_dense_peak_tflops",
        "Dense peak of the GEMMs' format (TFLOP/s)",
        "results",
        lambda row, _k: row.prediction.hardware.accelerator.peak_flops(_gemm_format(row)) / 1e12,
        None,
        "0.0",
    ),
    *(
        Column(
            key, header, "results", _d(key), lambda s: s["model_tflops_per_gpu"] / s["gemm_dense_peak_tflops"], "0.0%"
        )
        for key, header in (
            ("mfu_of_precision", "MFU (of its format's dense peak)"),
            ("mfu", "The same, under the JSON contract's key mfu"),
        )
    ),
    Column(
        "mfu_bf16",
        "MFU of the BF16 peak (x; NVIDIA's basis, above 1 below BF16)",
        "results",
        _d("mfu_bf16"),
        _over_bf16_peak,
        RATIO_FORMAT,
    ),
    *(
        Column(f"{name}_gib", f"{header} (GiB)", "results", _d(f"{name}_gib"), _in_gib(f"{name}_gb"), "0.0")
        for name, header in (("memory_per_gpu", "Memory per GPU"), ("memory_capacity", "GPU memory"))
    ),
    # What a planner edits: the Inputs sheet.
    Column("n_gpus", "GPUs", "inputs", _d("n_gpus"), None, "#,##0", editable=True),
    Column("usd_per_gpu_hour", "Price (USD per GPU-hour)", "inputs", _d("usd_per_gpu_hour"), None, "0.00", True),
    Column(
        "min_usd_per_gpu_hour",
        "Price, low end of its range (USD per GPU-hour)",
        "inputs",
        _d("min_usd_per_gpu_hour"),
        None,
        "0.00",
        True,
    ),
    Column(
        "max_usd_per_gpu_hour",
        "Price, high end of its range (USD per GPU-hour)",
        "inputs",
        _d("max_usd_per_gpu_hour"),
        None,
        "0.00",
        True,
    ),
    Column("price_source", "Price source (why a cost is empty)", "inputs", _d("price_source")),
    Column("price_basis", "Price basis as exported: list, estimate, quoted, owned", "inputs", _d("price_basis")),
    Column("price_note", "Price basis in one line", "inputs", _d("price_note")),
    Column("tokens_to_train", "Tokens to train", "inputs", _d("tokens_to_train"), None, "#,##0", True, True),
    Column("pue", "PUE", "inputs", _d("pue"), None, "0.00", True, True),
    Column("usd_per_kwh", "Electricity (USD/kWh)", "inputs", lambda _row, k: k, None, "0.000", True, True),
    Column(
        "grid_gco2_per_kwh",
        "Grid carbon intensity (gCO2e/kWh)",
        "inputs",
        _d("grid_gco2_per_kwh"),
        None,
        "#,##0",
        True,
        True,
    ),
    Column(
        "embodied_gco2e_per_gpu_hour",
        "Embodied carbon (gCO2e per GPU-hour; estimate, see Assumptions)",
        "inputs",
        lambda _row, _k: carbon.EMBODIED_G_PER_GPU_HOUR,
        None,
        "0.0",
        True,
        True,
    ),
    # The run: live formulas on the inputs and the per-step results.
    Column(
        "tokens_per_s",
        "Cluster throughput (tokens/s)",
        "results",
        _d("tokens_per_s"),
        lambda s: s["tokens_per_s_per_gpu"] * s["n_gpus"],
        "#,##0",
    ),
    Column("extra_time_s", "Evaluations and run overhead (s)", "results", _extra_time, None, "#,##0"),
    Column("time_to_train_s", "Time to train (s)", "results", _run_value("time_s"), lambda s: _run(s).time_s, "#,##0"),
    Column("time_to_train_min", "Time to train (min)", "results", _d("time_to_train_min"), _time(60.0), "#,##0.0"),
    Column(
        "time_to_train_days", "Time to train (days)", "results", _d("time_to_train_days"), _time(86400.0), "#,##0.00"
    ),
    Column("gpu_hours", "GPU-hours", "results", _run_value("gpu_hours"), lambda s: _run(s).gpu_hours, "#,##0"),
    Column("cost_usd", "Cost (USD)", "results", _run_value("cost_usd"), lambda s: _run(s).cost_usd, "$#,##0"),
    Column(
        "cost_usd_at_min_price",
        "Cost at the low price (USD)",
        "results",
        _run_value("cost_usd_at_min_price"),
        lambda s: _run(s).cost_usd_at_min_price,
        "$#,##0",
    ),
    Column(
        "cost_usd_at_max_price",
        "Cost at the high price (USD)",
        "results",
        _run_value("cost_usd_at_max_price"),
        lambda s: _run(s).cost_usd_at_max_price,
        "$#,##0",
    ),
    Column(
        "power_w_per_gpu",
        "Power per GPU at the wall before PUE (W): board, host share, network",
        "results",
        lambda row, _k: row.prediction.hardware.it_power_w_per_gpu,
        None,
        "#,##0",
    ),
    Column("energy_kwh", "Energy (kWh)", "results", _run_value("energy_kwh"), lambda s: _run(s).energy_kwh, "#,##0"),
    Column(
        "electricity_cost_usd",
        "Electricity cost (USD)",
        "results",
        _electricity,
        lambda s: electricity_cost_usd(_run(s).energy_kwh, s["usd_per_kwh"]),
        "$#,##0",
    ),
    Column(
        "co2e_t",
        "Operational carbon (tCO2e)",
        "results",
        _d("co2e_t"),
        lambda s: carbon.operational_t(_run(s).energy_kwh, s["grid_gco2_per_kwh"]),
        "#,##0.0",
    ),
    Column(
        "co2e_embodied_t",
        "Embodied carbon (tCO2e; estimate)",
        "results",
        _d("co2e_embodied_t"),
        lambda s: carbon.embodied_t(_run(s).gpu_hours, s["embodied_gco2e_per_gpu_hour"]),
        "#,##0.0",
    ),
)


def _goodput(row: ExportRow, _usd_per_kwh: float) -> float | None:
    found = row.prediction.goodput
    return None if found is None or found.goodput == 0 else found.goodput


def _failing(name: str) -> Callable[[ExportRow, float], Any]:
    def read(row: ExportRow, _usd_per_kwh: float) -> Any:
        run = row.prediction.run_with_failures
        return None if run is None else getattr(run, name)

    return read


def _over_goodput(key: str, scale: float = 1.0) -> Callable[[Symbols], Any]:
    """A run quantity as it is expected to go with failures: the failure-free one over the goodput."""
    return lambda s: getattr(_run(s), key) / scale / s["goodput"]


def _g(read: Callable[[Any, Any], Any]) -> Callable[[ExportRow, float], Any]:
    """A figure of the row's goodput model (None with the model off)."""

    def value(row: ExportRow, _usd_per_kwh: float) -> Any:
        found = row.prediction.goodput
        return None if found is None else read(found, row.prediction)

    return value


def _mtbf(s: Symbols) -> Any:
    return goodput.mtbf_s(s["failures_per_million_gpu_hours"], s["n_gpus"])


def _write_time(s: Symbols) -> Any:
    return goodput.write_s(
        s["checkpoint_gb"] * 1e9, s["n_gpus"], s["gpus_per_node"], s["storage_gb_per_s_per_node"] * 1e9
    )


def _planned_per_s(s: Symbols) -> Any:
    """Planned interruptions per second of the job."""
    return s["planned_per_million_gpu_hours"] * s["n_gpus"] / (1e6 * goodput.SECONDS_PER_HOUR)


def _goodput_formula(s: Symbols) -> Any:
    """The goodput model's own arithmetic on the cells: Daly's wall time at the (editable) checkpoint interval."""
    write = _write_time(s)
    restart = s["restart_s"] + write
    stretch = goodput.wall_per_train(_mtbf(s), write, restart, s["checkpoint_interval_s"])
    return goodput.goodput_ratio(stretch, _planned_per_s(s), restart, write)


def _per_million(g: Any, p: Any, planned: bool = False) -> float:
    return (g.planned_per_s if planned else g.unexpected_per_s) * goodput.SECONDS_PER_HOUR * 1e6 / p.layout.n_gpus


GOODPUT_COLUMNS: tuple[Column, ...] = (
    Column(
        "failures_per_million_gpu_hours",
        "Unexpected interruptions per million GPU-hours",
        "inputs",
        _g(_per_million),
        None,
        "0.000",
        editable=True,
    ),
    Column(
        "planned_per_million_gpu_hours",
        "Planned interruptions per million GPU-hours",
        "inputs",
        _g(lambda g, p: _per_million(g, p, planned=True)),
        None,
        "0.000",
        editable=True,
    ),
    Column(
        "storage_gb_per_s_per_node",
        "Checkpoint storage (GB/s per node)",
        "inputs",
        _g(lambda g, _p: g.storage_bytes_per_s_per_node / 1e9),
        None,
        "0.00",
        editable=True,
    ),
    Column("restart_s", "Restart per interruption (s)", "inputs", _g(lambda g, _p: g.restart_s), None, "#,##0", True),
    Column(
        "checkpoint_interval_s",
        "Checkpoint interval (s of training)",
        "inputs",
        _g(lambda g, _p: g.interval_s),
        None,
        "#,##0.0",
        editable=True,
    ),
    Column("checkpoint_gb", "Checkpoint (GB)", "results", _g(lambda g, _p: g.checkpoint_bytes / 1e9), None, "#,##0.0"),
    Column(
        "gpus_per_node",
        "GPUs per node",
        "results",
        lambda row, _k: row.prediction.hardware.system.gpus_per_node.value,
        None,
        "#,##0",
    ),
    Column("job_mtbf_s", "Job MTBF (s)", "results", _g(lambda g, _p: g.mtbf_s), _mtbf, "#,##0"),
    Column("checkpoint_write_s", "Checkpoint write (s)", "results", _g(lambda g, _p: g.write_s), _write_time, "0.00"),
    Column(
        "young_daly_interval_s",
        "Optimum checkpoint interval for these inputs (s)",
        "results",
        _g(lambda g, _p: goodput.young_daly_interval(g.write_s, g.mtbf_s)),
        lambda s: goodput.young_daly_interval(_write_time(s), _mtbf(s)),
        "#,##0.0",
    ),
    Column("goodput", "Goodput (share of wall time that trains)", "results", _goodput, _goodput_formula, "0.0%"),
    Column(
        "time_to_train_with_failures_days",
        "Time to train with failures (days)",
        "results",
        lambda row, k: None if (run := _failing("time_s")(row, k)) is None else run / 86400,
        _over_goodput("time_s", 86400.0),
        "#,##0.00",
    ),
    Column(
        "gpu_hours_with_failures",
        "GPU-hours with failures",
        "results",
        _failing("gpu_hours"),
        _over_goodput("gpu_hours"),
        "#,##0",
    ),
    Column(
        "cost_usd_with_failures",
        "Cost with failures (USD)",
        "results",
        _failing("cost_usd"),
        _over_goodput("cost_usd"),
        "$#,##0",
    ),
    Column(
        "energy_kwh_with_failures",
        "Energy with failures (kWh)",
        "results",
        _failing("energy_kwh"),
        _over_goodput("energy_kwh"),
        "#,##0",
    ),
    Column("time_to_train_with_failures_s", "Time to train with failures (s)", "results", _failing("time_s"),
           _over_goodput("time_s"), "#,##0"),
    *(Column(f"cost_usd_with_failures{side}", f"Cost with failures at the {end} price (USD)", "results",
             _failing(f"cost_usd{side}"), _over_goodput(f"cost_usd{side}"), "$#,##0")
      for side, end in ((AT_MIN_PRICE, "low"), (AT_MAX_PRICE, "high"))),
    Column("usd_per_million_tokens_with_failures", "Cost per million tokens with failures (USD)", "results",
           lambda row, _k: row.data.get("usd_per_million_tokens_with_failures"),
           lambda s: _run(s).cost_usd / s["goodput"] / s["tokens_to_train"] * 1e6, "0.000"),
)  # fmt: skip


def _lost(read: Callable[[Losses], Any]) -> Callable[[ExportRow, float], Any]:
    """A figure of the row's real-world losses (None with the losses model off)."""

    def value(row: ExportRow, _usd_per_kwh: float) -> Any:
        found = row.prediction.losses
        return None if found is None else read(found)

    return value


def _loss(name: str) -> Callable[[ExportRow, float], Any]:
    """The GPU-hours of the row's loss `name` (None where it has none)."""
    return _lost(lambda found: next((loss.gpu_hours for loss in found.items if loss.name == name), None))


def _share_here(row: ExportRow, _usd_per_kwh: float) -> float | None:
    """The straggler share at the row's GPU count, as the losses priced it."""
    found = row.prediction.losses
    return None if found is None else found.straggler_share * losses.straggler_scale(row.prediction.layout.n_gpus)


def _writes(row: ExportRow, _usd_per_kwh: float) -> float | None:
    """The checkpoint writes the goodput model's loss counts (None with it off, or a run that never ends)."""
    p, failing = row.prediction, row.prediction.run_with_failures
    if p.goodput is None or p.run is None or failing is None or p.losses is None:
        return None
    g = p.goodput
    return float(losses.failure_split(p.run.time_s, failing.time_s, g.interval_s or math.inf, g.planned_per_s,
                                      g.write_s)[0])  # fmt: skip


def _split(part: int) -> Callable[[Symbols], Any]:
    """losses.failure_split on the cells: 0 the checkpoint writes, 1 their time, 2 the rest of the failures' time."""

    def formula(s: Symbols) -> Any:
        train_s, wall_s = s["time_to_train_s"], s["time_to_train_with_failures_s"]
        split = losses.failure_split(
            train_s, wall_s, s["checkpoint_interval_s"], _planned_per_s(s), s["checkpoint_write_s"]
        )
        return split[part]

    return formula


def _lost_hours(time_s: Callable[[Symbols], Any]) -> Callable[[Symbols], Any]:
    """The GPU-hours of a loss of `time_s` of wall time on the row's GPUs."""
    return lambda s: losses.loss_gpu_hours(time_s(s), s["n_gpus"])


def _number(cell: Any) -> Any:
    """Excel's N(): the cell's number, 0 where it is empty (a loss the row does not have) or empty text."""
    import sympy

    return sympy.Function("N")(cell)


def _with_losses(s: Symbols) -> Run:
    """losses.run_with_losses on the cells: the run with every loss, each adding its GPU-hours over the row's GPUs
    to the wall time but spare GPUs (held beside the job)."""
    run = Run(s["tokens_to_train"], s["time_to_train_s"], s["gpu_hours"], s["cost_usd"], s["cost_usd_at_min_price"],
              s["cost_usd_at_max_price"], s["energy_kwh"])  # fmt: skip
    lost = s["losses.total_gpu_hours"]
    spare = _number(s["losses.spare_gpu_hours"]) if "losses.spare_gpu_hours" in s else 0
    return losses.run_with_losses(run, lost, (lost - spare) * SECONDS_PER_HOUR / s["n_gpus"])


VALUED_LOSSES = {
    "ramp": "Loss: batch ramp (GPU-hours; perfmodel's, priced at the ramp's batches)",
    "evaluation": "Loss: in-loop evaluations (GPU-hours; perfmodel's, priced as forward passes)",
    "spare": "Loss: spare GPUs held (GPU-hours; perfmodel's, over its wall time)",
}
"""Losses the step model prices at other batches, or over the wall time with every other loss: values, which an edit
does not move; a column only where a row has the loss."""

LOSS_COLUMNS: tuple[Column, ...] = (
    Column("straggler_share", "Stragglers: share of step time at 128 GPUs", "inputs",
           _lost(lambda found: found.straggler_share), None, "0.0%", True, True),
    Column("startup_s", "Start-up per job (s)", "inputs", _lost(lambda found: found.startup_s), None, "#,##0", True,
           True),
    Column("straggler_share_at_n_gpus", "Stragglers: share of step time at these GPUs", "results",
           _share_here,
           lambda s: s["straggler_share"] * losses.straggler_scale(s["n_gpus"]), "0.0%", blank_when_none=True),
    Column("losses.stragglers_gpu_hours", "Loss: stragglers (GPU-hours)", "results", _loss("stragglers"),
           _lost_hours(lambda s: s["time_to_train_s"] * s["straggler_share_at_n_gpus"]), "#,##0",
           blank_when_none=True),
    Column("job_starts", "Job starts (perfmodel's count)", "results",
           _lost(lambda found: found.job_starts), None, "#,##0", blank_when_none=True),
    Column("losses.startup_gpu_hours", "Loss: start-up (GPU-hours)", "results", _loss("startup"),
           _lost_hours(lambda s: s["job_starts"] * s["startup_s"]), "#,##0", blank_when_none=True),
    Column("checkpoint_writes", "Checkpoint writes over the run", "results", _writes, _split(0), "#,##0",
           blank_when_none=True),
    Column("losses.checkpoints_gpu_hours", "Loss: checkpoint writes (GPU-hours)", "results", _loss("checkpoints"),
           _lost_hours(_split(1)), "#,##0", blank_when_none=True),
    Column("losses.failures_gpu_hours", "Loss: failures: lost work, restarts, checkpoint reads (GPU-hours)",
           "results", _loss("failures"), _lost_hours(_split(2)), "#,##0", blank_when_none=True),
    *(Column(f"losses.{name}_gpu_hours", header, "results", _loss(name), None, "#,##0", blank_when_none=True)
      for name, header in VALUED_LOSSES.items()),
    Column("losses.total_gpu_hours", "Losses together (GPU-hours)", "results", _lost(lambda found: found.gpu_hours),
           lambda s: sum(_number(s[key]) for name in losses.NAMES if (key := f"losses.{name}_gpu_hours") in s), "#,##0",
           blank_when_none=True),
    Column("time_to_train_with_losses_s", "Time to train with losses (s)", "results",
           _d("time_to_train_with_losses_s"), lambda s: _with_losses(s).time_s, "#,##0", blank_when_none=True),
    Column("time_to_train_with_losses_days", "Time to train with losses (days)", "results",
           _d("time_to_train_with_losses_days"), lambda s: _with_losses(s).time_s / 86400, "#,##0.00",
           blank_when_none=True),
    Column("gpu_hours_with_losses", "GPU-hours with losses", "results", _d("gpu_hours_with_losses"),
           lambda s: _with_losses(s).gpu_hours, "#,##0", blank_when_none=True),
    Column("cost_usd_with_losses", "Cost with losses (USD)", "results", _d("cost_usd_with_losses"),
           lambda s: _with_losses(s).cost_usd, "$#,##0", blank_when_none=True),
    Column("energy_kwh_with_losses", "Energy with losses (kWh)", "results", _d("energy_kwh_with_losses"),
           lambda s: _with_losses(s).energy_kwh, "#,##0", blank_when_none=True),
)  # fmt: skip
"""The real-world losses (planning/losses.py) as live formulas where they are closed forms of the sheet's cells:
stragglers (a share of the step time at 128 GPUs, growing with the GPU count), start-up (per job start), the goodput
model's checkpoint writes and failures; the ramp, evaluations and spare GPUs as perfmodel's values; their sum and the
`*_with_losses` run. Only in an export whose rows price losses."""


def _ownership(row: ExportRow) -> Any:
    p = row.prediction
    return tco.ownership(p.hardware, p.scenario.cost)


def _owned_rate(row: ExportRow, usd_per_kwh: float) -> float | None:
    owned, p = _ownership(row), row.prediction
    if owned is None:
        return None
    c = p.scenario.cost
    return tco.owned_usd_per_gpu_hour(
        owned.usd_per_system, owned.gpus_per_system, c.amortisation_years, c.utilisation,
        p.hardware.it_power_w_per_gpu, c.pue, usd_per_kwh, c.facility_usd_per_kw_month,
    )  # fmt: skip


def _owned_cost(failures: bool) -> Callable[[ExportRow, float], Any]:
    def read(row: ExportRow, usd_per_kwh: float) -> Any:
        rate, run = _owned_rate(row, usd_per_kwh), row.prediction.run_with_failures if failures else row.prediction.run
        return None if rate is None or run is None else run.gpu_hours * rate

    return read


def _owned_rate_formula(s: Symbols) -> Any:
    return tco.owned_usd_per_gpu_hour(
        s["usd_per_system"], s["gpus_per_system"], s["amortisation_years"], s["utilisation"], s["power_w_per_gpu"],
        s["pue"], s["usd_per_kwh"], s["facility_usd_per_kw_month"],
    )  # fmt: skip


def _cost(name: str) -> Callable[[ExportRow, float], Any]:
    return lambda row, _k: getattr(row.prediction.scenario.cost, name)


def _per_million_tokens(row: ExportRow, _usd_per_kwh: float) -> float | None:
    run = row.prediction.run
    return None if run is None or run.cost_usd is None else run.cost_usd / run.tokens * 1e6


TCO_COLUMNS: tuple[Column, ...] = (
    Column(
        "usd_per_system",
        "Purchase price per system (USD)",
        "inputs",
        lambda row, _k: None if (owned := _ownership(row)) is None else owned.usd_per_system,
        None,
        "$#,##0",
        editable=True,
    ),
    Column(
        "amortisation_years", "Amortisation (years)", "inputs", _cost("amortisation_years"), None, "0.0", True, True
    ),
    Column(
        "utilisation", "Utilisation (share of hours training)", "inputs", _cost("utilisation"), None, "0%", True, True
    ),
    Column(
        "facility_usd_per_kw_month",
        "Facility (USD per kW-month)",
        "inputs",
        _cost("facility_usd_per_kw_month"),
        None,
        "0.00",
        True,
        True,
    ),
    Column(
        "gpus_per_system",
        "GPUs a job uses per system",
        "results",
        lambda row, _k: row.prediction.hardware.job_gpus_per_system,
        None,
        "#,##0",
    ),
    Column(
        "owned_usd_per_gpu_hour",
        "Owning: USD per GPU-hour (capex + power + facility)",
        "results",
        _owned_rate,
        _owned_rate_formula,
        "0.000",
    ),
    Column(
        "cost_usd_owned",
        "Cost owned (USD)",
        "results",
        _owned_cost(False),
        lambda s: _run(s).gpu_hours * _owned_rate_formula(s),
        "$#,##0",
    ),
    Column(
        "cost_usd_owned_with_failures",
        "Cost owned with failures (USD)",
        "results",
        _owned_cost(True),
        lambda s: _run(s).gpu_hours * _owned_rate_formula(s) / s["goodput"],
        "$#,##0",
    ),
    Column(
        "usd_per_million_tokens",
        "Cost per million tokens (USD)",
        "results",
        _per_million_tokens,
        lambda s: _run(s).cost_usd / s["tokens_to_train"] * 1e6,
        "0.000",
    ),
)


def _factor(side: str) -> Callable[[ExportRow, float], Any]:
    def read(row: ExportRow, _usd_per_kwh: float) -> float | None:
        found = row.prediction.interval
        return None if found is None else float(found.low if side == "low" else found.high)

    return read


def _data(name: str) -> Callable[[ExportRow, float], Any]:
    """A row's value of `name` as perfmodel computed it, empty where the row has none (no interval, no run)."""
    return lambda row, _k: row.data.get(name)


def _bounds(key: str, header: str, formula: Callable[[Symbols], Any], number_format: str) -> list[Column]:
    """A quantity's 80% interval as live formulas: the quantity times the calibration's factor on a time."""

    def bound(side: str) -> Callable[[Symbols], Any]:
        return lambda s: formula(s) * s[f"interval_factor_{side}"]

    return [Column(f"{key}_{side}", f"{header}, 80% interval {side}", "results", _data(f"{key}_{side}"),
                   bound(side), number_format) for side in ("low", "high")]  # fmt: skip


def _quantile_factor(q: float) -> Callable[[ExportRow, float], Any]:
    """The failure-free run's factor on its time at `q`: a value (planning/confidence.py), as perfmodel gives it."""
    return lambda row, _k: chance.spread_factor(row.prediction.spread, q)


def _cost_quantile_factor(q: float) -> Callable[[ExportRow, float], Any]:
    """The failure-free run's factor on its cost at the quoted price at `q`: the time's, or time x price where a
    price distribution is stated (planning/confidence.py; a value, as perfmodel gives it)."""
    return lambda row, _k: chance.cost_factor(row.prediction.spread, q)


TIME_FACTORS: dict[str, str | None] = {"p10": "quantile_factor_p10", "p50": None, "p90": "quantile_factor_p90"}
COST_FACTORS: dict[str, str | None] = {q: f"cost_quantile_factor_{q}" for q in ("p10", "p50", "p90")}


def _quantiles(
    key: str, header: str, formula: Callable[[Symbols], Any], number_format: str, factors: dict[str, str | None]
) -> list[Column]:
    """A quantity's P10, P50 and P90 as live formulas: the quantity times the distribution's P10 factor, itself (or
    its P50 factor), times its P90 factor (those factors values: quadrature or draws, not arithmetic)."""

    def at(factor: str | None) -> Callable[[Symbols], Any]:
        return formula if factor is None else lambda s: formula(s) * s[factor]

    return [Column(f"{key}_{q}", f"{header}, {q.upper()}", "results", _data(f"{key}_{q}"), at(factor),
                   number_format) for q, factor in factors.items()]  # fmt: skip


FACTOR_FORMAT = '0.000"x"'
"""A factor on a predicted figure (0.953x): three decimals, as the interval's low and high ends differ in the second."""
QUANTILE_METHOD = "the 80% interval and run-to-run variability combined, planning/confidence.py"
"""How the P10 and P90 factors are worked out, where the workbook shows them."""
COST_QUANTILE_METHOD = f"{QUANTILE_METHOD}; times a stated price distribution, drawn"
"""How the cost's factors are: the time's, unless a price distribution is stated."""

INTERVAL_COLUMNS: tuple[Column, ...] = (
    *(
        Column(
            f"interval_factor_{side}",
            f"80% interval: factor on a predicted time, {side}",
            "results",
            _factor(side),
            number_format=FACTOR_FORMAT,
        )
        for side in ("low", "high")
    ),
    *_bounds("step_time_s", "Step time (s)", lambda s: s["step_time_s"], "0.000"),
    *_bounds("time_to_train_s", "Time to train (s)", lambda s: _run(s).time_s, "#,##0"),
    *_bounds("time_to_train_min", "Time to train (min)", _time(60.0), "#,##0.0"),
    *_bounds("gpu_hours", "GPU-hours", lambda s: _run(s).gpu_hours, "#,##0"),
    *_bounds("energy_kwh", "Energy (kWh)", lambda s: _run(s).energy_kwh, "#,##0"),
    *_bounds("cost_usd", "Cost (USD)", lambda s: _run(s).cost_usd, "$#,##0"),
    *(
        Column(
            f"quantile_factor_{q}",
            f"{q.upper()}: factor on a predicted time (value: {QUANTILE_METHOD})",
            "results",
            _quantile_factor(level),
            number_format=FACTOR_FORMAT,
        )
        for q, level in (("p10", 0.1), ("p90", 0.9))
    ),
    *(
        Column(
            f"cost_quantile_factor_{q}",
            f"{q.upper()}: factor on the cost at the quoted price (value: {COST_QUANTILE_METHOD})",
            "results",
            _cost_quantile_factor(level),
            number_format=FACTOR_FORMAT,
        )
        for q, level in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9))
    ),
    *_quantiles("time_to_train_s", "Time to train (s)", lambda s: _run(s).time_s, "#,##0", TIME_FACTORS),
    *_quantiles("time_to_train_days", "Time to train (days)", _time(86400.0), "#,##0.00", TIME_FACTORS),
    *_quantiles("gpu_hours", "GPU-hours", lambda s: _run(s).gpu_hours, "#,##0", TIME_FACTORS),
    *_quantiles("cost_usd", "Cost (USD)", lambda s: _run(s).cost_usd, "$#,##0", COST_FACTORS),
    *_quantiles("energy_kwh", "Energy (kWh)", lambda s: _run(s).energy_kwh, "#,##0", TIME_FACTORS),
    *_quantiles(
        "co2e_t",
        "Operational carbon (tCO2e)",
        lambda s: carbon.operational_t(_run(s).energy_kwh, s["grid_gco2_per_kwh"]),
        "#,##0.0",
        TIME_FACTORS,
    ),
)


PRICE_KEYS = {"": "usd_per_gpu_hour", AT_MIN_PRICE: "min_usd_per_gpu_hour", AT_MAX_PRICE: "max_usd_per_gpu_hour"}
"""The price column a figure's suffix prices it at: the quoted price, or its range's low or high end."""


def _tokens_per_usd(suffix: str) -> Callable[..., Any]:
    """Tokens bought by one US dollar at the price (compare.py's tokens_per_usd on the cells)."""

    def formula(s: Symbols, prefix: str = "") -> Any:
        return s[f"{prefix}tokens_per_s_per_gpu"] * SECONDS_PER_HOUR / s[f"{prefix}{PRICE_KEYS[suffix]}"]

    return formula


def _joules_per_token(s: Symbols, prefix: str = "") -> Any:
    """compare.py's joules_per_token on the cells: power at the wall x PUE over the throughput per GPU."""
    return s[f"{prefix}power_w_per_gpu"] * s[f"{prefix}pue"] / s[f"{prefix}tokens_per_s_per_gpu"]


def _priced(suffix: str) -> Callable[[ExportRow, float], Any]:
    def read(row: ExportRow, _usd_per_kwh: float) -> float | None:
        price = row.prediction.price
        at = {"": price.usd_per_gpu_hour, AT_MIN_PRICE: price.minimum, AT_MAX_PRICE: price.maximum}
        return compare.tokens_per_usd(row.prediction, at[suffix])

    return read


VALUE_COLUMNS: tuple[Column, ...] = (
    *(Column(f"tokens_per_usd{sfx}", f"Tokens per USD{label}", "results", _priced(sfx), _tokens_per_usd(sfx),
             "#,##0")
      for sfx, label in (("", ""), (AT_MIN_PRICE, " at the low price"), (AT_MAX_PRICE, " at the high price"))),
    Column("joules_per_token", "Energy per token (J)", "results",
           lambda row, _k: compare.joules_per_token(row.prediction), _joules_per_token, "0.000"),
    Column("kwh_per_million_tokens", "Energy per million tokens (kWh)", "results",
           lambda row, _k: compare.joules_per_token(row.prediction) * 1e6 / JOULES_PER_KWH,
           lambda s: _joules_per_token(s) * 1e6 / JOULES_PER_KWH, "0.000"),
)  # fmt: skip
"""Perf per dollar and energy per token of every result, as formulas (so an edited price moves them)."""


def _vs_first(quantity: Callable[..., Any]) -> Callable[[Symbols], Any]:
    return lambda s: quantity(s) / quantity(s, prefix="first.")


def _ratio(key: str) -> Callable[[ExportRow, float], Any]:
    return lambda row, _k: row.extra.get(key)


def _tokens_per_s(s: Symbols, prefix: str = "") -> Any:
    return s[f"{prefix}tokens_per_s_per_gpu"] * s[f"{prefix}n_gpus"]


def _of_totals(key: str) -> Callable[[Symbols], Any]:
    """A campaign's ratio to the first campaign's, of their totals of `key` (which follow their phases' cells)."""
    return lambda s: s[key] / s[f"first.{key}"]


def _scaling(s: Symbols) -> Any:
    return s["tokens_per_s_per_gpu"] / s["base.tokens_per_s_per_gpu"]


RATIO_COLUMNS: tuple[Column, ...] = (
    Column("speedup_vs_first", "Speedup vs first (throughput)", "results", _ratio("speedup_vs_first"),
           _vs_first(_tokens_per_s), '0.00"x"', total=_of_totals("tokens_per_s")),
    *(Column(f"perf_per_usd_vs_first{sfx}", f"Perf per USD vs first{label}", "results",
             _ratio(f"perf_per_usd_vs_first{sfx}"), _vs_first(_tokens_per_usd(sfx)), '0.00"x"',
             total=_of_totals(f"tokens_per_usd{sfx}"))
      for sfx, label in (("", ""), (AT_MIN_PRICE, ", both at low prices"), (AT_MAX_PRICE, ", both at high prices"))),
    Column("energy_per_token_vs_first", "Energy per token vs first", "results", _ratio("energy_per_token_vs_first"),
           _vs_first(_joules_per_token), '0.00"x"', total=_of_totals("joules_per_token")),
    Column("scaling_efficiency", "Scaling efficiency (per-GPU throughput vs the system's smallest size)", "results",
           _ratio("scaling_efficiency"), _scaling, "0.0%", blank_when_none=True, total=_scaling),
)  # fmt: skip
"""compare's ratios to the first row (and scaling efficiency to the smallest size of the row's system), live; of
campaigns, on their total rows: the ratios of their totals (throughput, tokens per USD, energy per token)."""

COLUMNS = (*COLUMNS, *INTERVAL_COLUMNS, *GOODPUT_COLUMNS, *TCO_COLUMNS, *VALUE_COLUMNS)
BY_KEY = {column.key: column for column in (*COLUMNS, *LOSS_COLUMNS, *RATIO_COLUMNS)}


def scaling_bases(lines: list[Line]) -> list[int]:
    """Per line, the index of the line its scaling efficiency is relative to (itself when there is none): among
    campaigns, the total row of the one at the system's smallest size."""
    results: dict[int, Result] = {i: line.campaign for i, line in enumerate(lines) if isinstance(line, TotalRow)}
    results = results or {i: line.prediction for i, line in enumerate(lines) if isinstance(line, ExportRow)}
    at = list(results)
    bases = dict(zip(at, compare.scaling_bases(list(results.values())), strict=True))
    return [index if (base := bases.get(index)) is None else at[base] for index in range(len(lines))]


def firsts(lines: list[Line]) -> list[int]:
    """Per line, the index of the line its ratios are to: the first line, or among campaigns the first total row."""
    first = next((index for index, line in enumerate(lines) if isinstance(line, TotalRow)), 0)
    return [first] * len(lines)


def export_rows(lines: list[Line]) -> list[ExportRow]:
    """The lines that are results (predictions, or campaigns' phases), not totals."""
    return [line for line in lines if isinstance(line, ExportRow)]


def record_columns(rows: list[ExportRow]) -> list[Column]:
    """The rest of each prediction's record (outputs/record.py) under its own name, as perfmodel computed it, on
    the Details sheet: every export carries the one output schema whole."""
    keys: dict[str, None] = {}
    for row in rows:
        keys |= dict.fromkeys(k for k in row.record if k not in BY_KEY)
    return [
        Column(k, _heading(k), "details", _recorded(k), None, record_format(k, [row.record.get(k) for row in rows]))
        for k in keys
    ]


UNIT_TEXT = {"GPU-hours": " GPU-h", "tokens/s": " tok/s", "per day": "/day", "count": "", "ratio": "x", "%": "%",
             "GB/s per node": " GB/s", "rank": "", "stage": "", "stages per rank": ""}  # fmt: skip
"""How a record unit (outputs/record.py) prints after a Details number where its own text would not read (a count
is bare, a ratio `x`); any other unit prints as itself less its gloss ('GB (1e9 B)': GB)."""
USD_UNIT_TEXT = {"USD": "", "USD/GPU-hour": "/GPU-h", "USD per 1e6 tokens": "/M tokens", "USD/kWh": "/kWh",
                 "USD per kW-month": "/kW-month"}  # fmt: skip
"""A price's or cost's text after its `$` and digits."""


def record_format(key: str, values: Sequence[Any]) -> str:
    """The number format of a Details row from its schema unit and its values: whole numbers with thousands
    separators, dollars to the cent below $100, shares as percentages, any other number to three significant
    digits or more with its unit, so that no cell prints 17 digits (0.30000000000000004, 10438424.9266801 s); text
    and true/false keep General (xlsx.py prints a flag Yes/No)."""
    unit = record.UNITS.get(key, record.TEXT_UNIT)
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if not numbers or unit in (record.TEXT_UNIT, record.FLAG_UNIT):
        return "General"
    if unit == "fraction":
        return "0.0%"
    if unit in USD_UNIT_TEXT:
        after = f'"{USD_UNIT_TEXT[unit]}"' if USD_UNIT_TEXT[unit] else ""
        return f'[>=100]"$"#,##0{after};"$"#,##0.00{after}'
    text = UNIT_TEXT.get(unit, f" {unit.split(' (')[0]}")
    after = f'"{text}"' if text else ""
    if all(v == int(v) for v in numbers):
        return f"#,##0{after}"
    if min(numbers) < 0:  # a format's conditions would drop the minus sign: decimals for the smallest figure
        smallest = min((abs(v) for v in numbers if v), default=1.0)
        return f"{printing.significant(smallest, 4, most=4)}{after}"
    return f"[>=10]#,##0.0{after};[>=0.1]0.000{after};0.0000{after}"


def _heading(key: str) -> str:
    field = record.FIELDS[record.NAMES.index(key)] if key in record.NAMES else record.Field(key, "", key)
    meaning = field.meaning[0].upper() + field.meaning[1:]
    return f"{meaning} ({field.unit})" if field.unit else meaning


def _recorded(key: str) -> Callable[[ExportRow, float], Any]:
    return lambda row, _usd_per_kwh: row.record.get(key)


def extra_columns(lines: list[Line], own: Sequence[Column] = ()) -> list[Column]:
    """Columns a command adds to its rows (e.g. compare's speedup_vs_first), in order of first appearance; those
    with a column of their own (`own`: a fleet plan's mix) are left to it."""
    keys: dict[str, None] = {}
    taken = {column.key for column in own}
    for line in lines:
        recorded = line.record if isinstance(line, ExportRow) else {}
        keys |= dict.fromkeys(k for k in line.extra if k not in BY_KEY and k not in recorded and k not in taken)
    return [Column(k, k.replace("_", " "), "results", _extra(k), None, _extra_format(k)) for k in keys]


def _extra_format(key: str) -> str:
    """A ratio to the first row as the RATIO_COLUMNS show theirs (compare's perf per USD range printed
    0.6077105222493.23243943433, two General numbers filling their columns), a fraction (a plan's chance of meeting
    its deadline, record.UNITS) as a percentage, any other number to three decimals at most (a plan's power_mw printed
    10.865664)."""
    if "_vs_first" in key:
        return RATIO_FORMAT
    return "0.0%" if record.UNITS.get(key) == "fraction" else "#,##0.0##"


def _extra(key: str) -> Callable[[ExportRow, float], Any]:
    """The value of an extra column of a row."""

    def value(row: ExportRow, _usd_per_kwh: float) -> Any:
        return row.extra.get(key)

    return value


MIX_SPLIT = {"owned": "cost_usd_owned", "rent": "cost_usd_rented", "buy": "cost_usd_bought"}
"""A fleet plan's cost split: each kind of source's share's key in the plan, `mix_` before it in an export."""
MIX_SOURCE = ("kind", "billing", "gpus", "usd_per_gpu_hour", "cost_usd")
MIX_KEPT = ("reason", "owned_gpus", "offered_gpus")


def mix_extra(plan: Mapping[str, Any]) -> dict[str, Any]:
    """A feasible fleet plan's record (planning/fleet.py, FleetPlan.to_dict) as an export's columns: each source's
    kind, GPUs, rate and cost as `mix.NAME.*`, the split, and the mix's start, finish and cost as `mix_*` (the
    prediction's own `cost_usd` is at the scenario's price, not the mix's)."""
    sources = {f"mix.{s['name']}.{key}": s[key] for s in plan["sources"] for key in MIX_SOURCE}
    kept = {key: plan[key] for key in MIX_KEPT} | {f"mix_{key}": plan[key] for key in ("p_deadline", "p_budget")}
    return (
        {"candidate": plan["system"], "goal_basis": plan["plan"]["goal_basis"]}
        | kept
        | sources
        | {
            "mix_start_after_days": plan["start_after_days"],
            "mix_finish_days": plan["finish_days"],
            **{f"mix_{key}": plan[key] for key in MIX_SPLIT.values()},
            "mix_cost_usd": plan["cost_usd"],
            "mix_cost_usd_at_confidence": plan["cost_usd_at_confidence"],
        }
    )


def mix_columns(lines: list[Line]) -> list[Column]:
    """A fleet plan's mix (`mix_extra`), live where it is arithmetic: each held source's cost its GPUs x the run's
    hours on the goal's basis x its rate (an on-demand offer's, billed per phase, a value), the split and the mix's
    cost their sums, the finish the start plus the time; the probabilities are values (planning/confidence.py's
    method, as on a plan's rows). A campaign's mix is on its total row, as values."""
    from perfmodel.planning.plan import FAILURE_FREE, WITH_FAILURES, WITH_LOSSES

    extras = [line.extra for line in lines if "mix_cost_usd" in line.extra]
    if not extras:
        return []
    bases = {extra["goal_basis"] for extra in extras}
    time_key = {WITH_LOSSES: "time_to_train_with_losses_s", WITH_FAILURES: "time_to_train_with_failures_s",
                FAILURE_FREE: "time_to_train_s"}[bases.pop()] if len(bases) == 1 else ""  # fmt: skip
    kinds = {key[4:-5]: value for extra in extras for key, value in extra.items() if key.startswith("mix.")
             and key.endswith(".kind")}  # fmt: skip
    on_demand = {name for extra in extras for name in kinds if extra.get(f"mix.{name}.billing") == "on_demand"}

    def live(formula: Callable[[Symbols], Any]) -> Callable[[Symbols], Any] | None:
        return formula if time_key else None  # rows on different bases: values only

    def cost(name: str) -> Callable[[Symbols], Any]:
        return lambda s: s[f"mix.{name}.gpus"] * s[time_key] / SECONDS_PER_HOUR * s[f"mix.{name}.usd_per_gpu_hour"]

    def split(kind: str) -> Callable[[Symbols], Any]:
        return lambda s: sum(s[f"mix.{name}.cost_usd"] for name, of in kinds.items() if of == kind)

    columns = [
        Column("owned_gpus", "Owned GPUs used", "results", _extra("owned_gpus"), None, "#,##0"),
        Column("offered_gpus", "GPUs rented or bought", "results", _extra("offered_gpus"), None, "#,##0"),
    ]
    for name in kinds:
        columns += [
            Column(f"mix.{name}.kind", f"{name}: owned, rent or buy", "results", _extra(f"mix.{name}.kind")),
            Column(f"mix.{name}.gpus", f"{name}: GPUs", "results", _extra(f"mix.{name}.gpus"), None, "#,##0"),
            Column(f"mix.{name}.usd_per_gpu_hour", f"{name}: USD per GPU-hour", "results",
                   _extra(f"mix.{name}.usd_per_gpu_hour"), None, "0.00"),
            Column(f"mix.{name}.cost_usd", f"{name}: cost (USD)", "results", _extra(f"mix.{name}.cost_usd"),
                   live(cost(name)) if name not in on_demand else None, "$#,##0", blank_when_none=True),
        ]  # fmt: skip
    used = set(kinds.values())
    columns += [
        Column(f"mix_{key}", f"Cost, {key.removeprefix('cost_usd_')} (USD)", "results", _extra(f"mix_{key}"),
               live(split(kind)) if kind in used else None, "$#,##0", blank_when_none=True)
        for kind, key in MIX_SPLIT.items()
    ]  # fmt: skip
    return [
        *columns,
        Column("mix_cost_usd", "Cost of the mix (USD)", "results", _extra("mix_cost_usd"),
               live(lambda s: sum(s[f"mix_{key}"] for key in MIX_SPLIT.values())), "$#,##0", blank_when_none=True),
        Column("mix_cost_usd_at_confidence", "Cost of the mix at the confidence (USD, value)", "results",
               _extra("mix_cost_usd_at_confidence"), None, "$#,##0"),
        Column("mix_p_deadline", "P(meet the deadline), value", "results", _extra("mix_p_deadline"), None, "0.00"),
        Column("mix_p_budget", "P(within the budget), value", "results", _extra("mix_p_budget"), None, "0.00"),
        Column("mix_start_after_days", "Starts after (days: the offers' lead time)", "results",
               _extra("mix_start_after_days"), None, "0.00"),
        Column("mix_finish_days", "Finishes after (days)", "results", _extra("mix_finish_days"),
               live(lambda s: s["mix_start_after_days"] + s[time_key] / 86400), "0.00", blank_when_none=True),
    ]  # fmt: skip


def _has(column: Column, row: ExportRow) -> bool:
    """Whether a loss column belongs in an export with `row`: the row prices losses (and, for a valued loss, has
    it)."""
    valued = column.key.removeprefix("losses.").removesuffix("_gpu_hours") in VALUED_LOSSES
    return row.prediction.losses is not None and (not valued or column.value(row, 0.0) is not None)


def all_columns(lines: list[Line]) -> list[Column]:
    """Every column of an export of `lines`: the workbook's (with the losses when the rows price them, compare's
    ratios when the lines carry them), then the rest of the record, then the command's own."""
    lossy = [column for column in LOSS_COLUMNS if any(_has(column, row) for row in export_rows(lines))]
    ratios = list(RATIO_COLUMNS) if any("speedup_vs_first" in line.extra for line in lines) else []
    mix = mix_columns(lines)
    return [*COLUMNS, *lossy, *ratios, *mix, *record_columns(export_rows(lines)), *extra_columns(lines, mix)]


def records(lines: list[Line], usd_per_kwh: float) -> list[dict[str, Any]]:
    """The table as flat dicts, one per line, what CSV and JSON hold: the one output schema's columns first, in its
    order (outputs/record.py), then the export's own (label, editable inputs, electricity), then the command's; a
    campaign's total row under its phases' (`total_row`)."""
    columns = all_columns(lines)
    results = iter(record.table({c.key: c.value(row, usd_per_kwh) for c in columns} for row in export_rows(lines)))
    table: list[dict[str, Any]] = []
    for line in lines:
        table.append(next(results) if isinstance(line, ExportRow) else total_row([table[i] for i in line.phases], line))
    return table


def total_row(phases: list[dict[str, Any]], line: TotalRow) -> dict[str, Any]:
    """A campaign's total row from its phases' rows: every column totalled by the campaign's one rule
    (planning/campaign.py, total_rule), its label, phase 'total' and the line's own columns."""
    return totals(phases) | {"label": line.label, "phase": TOTAL} | dict(line.extra)
