"""Compose model, hardware, layout and run into a Prediction: the answer to one planning question."""

from __future__ import annotations

import math
import operator
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

from perfmodel.errors import PerfmodelError
from perfmodel.inputs.documents import packing
from perfmodel.inputs.features import era_recipe, missing_features
from perfmodel.inputs.hardware import Hardware, resolve
from perfmodel.inputs.models import ModelSpec
from perfmodel.inputs.precision import (
    bridge_recipe,
    cp_comm_recipe,
    frozen_base_recipe,
    get_recipe,
    shard_group_recipe,
)
from perfmodel.inputs.record import as_dict, replaced
from perfmodel.inputs.scenario import Parallelism, Scenario, flatten, from_default, run_settings, single_phase
from perfmodel.inputs.stacks import get_stack, stack_recipe
from perfmodel.physics import calibration
from perfmodel.physics.bounded import Bounded
from perfmodel.physics.efficiency import Efficiency
from perfmodel.physics.parallel import RECOMPUTE_MODES, Layout, check
from perfmodel.physics.step import BREAKDOWN, Context, LayoutVars, StepResult, evaluate
from perfmodel.planning import carbon, goodput, losses, tco, variability
from perfmodel.planning import confidence as chance
from perfmodel.planning.losses import Losses
from perfmodel.planning.training import Price, Run, training_run
from perfmodel.planning.views import Shown

if TYPE_CHECKING:  # imported where they are used: a scenario that names a benchmark (inputs/mlperf.py), leaves its
    # layout open (planning/search.py) or runs a MoE model (physics/expert_exchange.py); a prediction of a dense model
    # at a given layout (the default scenario) needs none of them
    from perfmodel.inputs.mlperf import Benchmark, Score
    from perfmodel.physics.expert_exchange import ExpertExchange
    from perfmodel.planning.evidence import Evidence, Ground
    from perfmodel.planning.measured_moe import MeasuredRows
    from perfmodel.planning.search import Block, SearchResult, Space

LAYOUT_FIELDS = ("tp", "pp", "cp", "dp", "vp", "ep", "etp", "mbs", "recompute", "zero", "recompute_layers")


@dataclass(frozen=True, repr=False)
class Prediction(Shown):
    """The answer to one scenario: its layout, the step (time, breakdown, memory), the run it prices (tokens or an
    MLPerf benchmark), and the derived figures as properties; `to_dict()` is `perfmodel predict --format json`."""

    scenario: Scenario
    model: ModelSpec
    hardware: Hardware
    layout: Layout
    step: StepResult
    price: Price
    run: Run | None
    layouts_searched: int
    mlperf: Score | None = None
    interval: calibration.Interval | None = None
    """Factors on a predicted time bounding the measured one with 80% probability, from the calibration's held-out
    residuals of the out-of-sample protocol matching this question, and that protocol, widened where the question
    goes beyond the measured runs (`evidence`); None when uncalibrated."""
    goodput: goodput.Goodput | None = None
    """Failures, checkpoints and restarts (planning/goodput.py), or None with the goodput model off."""
    expert_exchange: ExpertExchange | None = None
    """A MoE model's token exchange as the step priced it (physics/expert_exchange.py); None for a dense model."""
    measured: MeasuredRows | None = None
    """How the calibration's bundled rows of this zoo model on this accelerator family read under the model
    (planning/measured_moe.py); None for a dense model, uncalibrated, or without such rows."""
    evidence: Evidence | None = None
    """How near the question is to the measured runs the calibration saw, and how its interval was widened beyond
    them (planning/evidence.py); None uncalibrated or with a calibration file that records none."""
    losses: Losses | None = None
    """The run's real-world losses beside failures (planning/losses.py); None without a token budget or with
    `losses.model = "none"`."""

    def _shown(self) -> list[dict[str, Any]]:
        return [self.to_record()]

    @property
    def step_time_s(self) -> float:
        return float(self.step.step_time_s)

    @cached_property
    def _rates(self) -> Rates:
        """Worked out once per prediction (a record reads all five)."""
        lo = self.layout
        return rates(lo.gbs, lo.seq_len, lo.n_gpus, float(self.step.step_time_s), self.model, self.scenario,
                     self.hardware)  # fmt: skip

    @property
    def tokens_per_s(self) -> float:
        return self._rates.tokens_per_s

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self._rates.tokens_per_s_per_gpu

    @property
    def model_tflops_per_gpu(self) -> float:
        return self._rates.model_tflops_per_gpu

    @property
    def mfu(self) -> float:
        """The ARCHITECTURE contract's MFU: model FLOP/s over the dense peak of the precision used (never above 1)."""
        return self._rates.mfu_of_precision

    @property
    def mfu_bf16(self) -> float:
        """Model FLOP/s over the dense BF16 peak (the convention of NVIDIA's tables and the Llama 3 paper)."""
        return self._rates.mfu_bf16

    @property
    def mfu_of_precision(self) -> float:
        """Model FLOP/s over the dense peak of the format the quantised GEMMs use."""
        return self._rates.mfu_of_precision

    @property
    def attention_keys_per_query(self) -> float:
        """Keys a query of a full-attention layer attends on average: s/2, or fewer with packed documents."""
        packed = packing(self.scenario.documents, self.layout.seq_len)
        return self.layout.seq_len / 2 if packed is None else packed.keys

    def to_dict(self) -> dict[str, Any]:
        lo, st, run, mem = self.layout, self.step, self.run, self.step.memory
        settings = run_settings(self.scenario)
        return {
            "model": self.model.id,
            "accelerator": self.hardware.accelerator.id,
            "system": self.hardware.system.id,
            "n_gpus": lo.n_gpus,
            "precision": self.scenario.precision,
            "documents": self.scenario.documents.label,
            "attention_keys_per_query": self.attention_keys_per_query,
            "lora_rank": self.scenario.lora_rank,
            "lora_modules": self.scenario.lora_modules if self.scenario.lora_rank else None,
            "parallelism": {
                "tp": lo.tp,
                "pp": lo.pp,
                "cp": lo.cp,
                "cp_comm": self.scenario.cp_exchange,
                "dp": lo.dp,
                "vp": lo.vp,
                "ep": lo.ep,
                **({"etp": lo.etp} if self.model.is_moe else {}),
                "mbs": lo.mbs,
                "gbs": lo.gbs,
                "seq_len": lo.seq_len,
                "recompute": lo.recompute,
                **({"recompute_layers": lo.recompute_layers} if lo.recompute_layers else {}),
                "zero": lo.zero,
                **({"shard_group": self.shard_group} if self.shard_group else {}),
            },
            "stack": self.scenario.stack,
            "stack_knobs": asdict(self.scenario.knobs),
            **settings,
            "run_settings": "; ".join(settings),
            **({"vintage": self.scenario.vintage} if self.scenario.vintage else {}),
            "step_time_s": self.step_time_s,
            "tokens_per_s": self.tokens_per_s,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
            "model_tflops_per_gpu": self.model_tflops_per_gpu,
            "mfu": self.mfu,
            "mfu_bf16": self.mfu_bf16,
            "mfu_of_precision": self.mfu_of_precision,
            "memory_per_gpu_gb": float(mem.total) / 1e9,
            "memory_capacity_gb": st.hbm_bytes / 1e9,
            "memory_per_gpu_gib": float(mem.total) / 2**30,
            "memory_capacity_gib": st.hbm_bytes / 2**30,
            "fits_in_memory": bool(st.fits),
            "memory_gb": {k: float(v) / 1e9 for k, v in mem._asdict().items()},
            "tokens_to_train": run.tokens if run else None,
            "tokens_from_default": "tokens" in from_default(self.scenario),
            "time_to_train_s": run.time_s if run else None,
            "time_to_train_min": run.time_s / 60 if run else None,
            "time_to_train_days": run.time_s / 86400 if run else None,
            "gpu_hours": run.gpu_hours if run else None,
            "usd_per_gpu_hour": self.price.usd_per_gpu_hour,
            "min_usd_per_gpu_hour": self.price.minimum,
            "max_usd_per_gpu_hour": self.price.maximum,
            "price_source": self.price.source,
            "price_basis": self.price.basis,
            "price_note": self.price.note,
            **self._price_distribution_dict(),
            "cost_usd": run.cost_usd if run else None,
            "cost_usd_at_min_price": run.cost_usd_at_min_price if run else None,
            "cost_usd_at_max_price": run.cost_usd_at_max_price if run else None,
            "energy_kwh": run.energy_kwh if run else None,
            "pue": self.scenario.cost.pue,
            **self._carbon_dict(),
            "layouts_searched": self.layouts_searched,
            **self._interval_dict(),
            **self._quantile_dict(),
            **({"evidence": self.evidence.to_dict()} if self.evidence else {}),
            **self._mlperf_dict(),
            "breakdown": {name: float(getattr(st, name)) for name in BREAKDOWN}
            | ({"ep_comm_exposed_s": float(st.ep_comm_exposed_s)} if self.model.is_moe else {}),
            **self._experts_dict(),
            **self._goodput_dict(),
            **self._losses_dict(),
            **self._cost_dict(),
        }

    def _experts_dict(self) -> dict[str, Any]:
        """A MoE model's dispatcher, EP overlap setting and share, and imbalance: what its exposed EP time
        (breakdown.ep_comm_exposed_s) rests on; absent for a dense model, as that column is."""
        e = self.expert_exchange
        if e is None:
            return {}
        return {
            "moe": {
                "dispatcher": e.dispatcher,
                "ep_microbatch_overlap": e.microbatch_overlap,
                "ep_exchange_exposed": e.exchange_exposed,
                "ep_overlap_fraction": e.overlap,
                "ep_overlap_parameter": e.overlap_name,
                "ep_scaleup_domains": e.domains,
                "imbalance": e.imbalance,
                "capacity_factor": self.model.capacity_factor,
                "pad_to_capacity": self.model.pad_to_capacity,
            }
            | (self.measured.to_dict() if self.measured else {})
        }

    def _cost_dict(self) -> dict[str, Any]:
        """How the cost is counted (rent or buy, with what owning is made of) and the cost per million tokens."""
        record: dict[str, Any] = {"cost_mode": self.scenario.cost.mode}
        if self.scenario.cost.mode == "buy":
            owned = tco.ownership(self.hardware, self.scenario.cost)
            assert owned is not None
            record["tco"] = owned.to_dict()
        run, failing = self.run, self.run_with_failures
        if run is not None and run.cost_usd is not None:
            record["usd_per_million_tokens"] = run.cost_usd / run.tokens * 1e6
            if failing is not None and failing.cost_usd is not None:
                record["usd_per_million_tokens_with_failures"] = failing.cost_usd / run.tokens * 1e6
        return record

    @property
    def run_with_failures(self) -> Run | None:
        """The run with its expected interruptions (None without a run, a goodput model, or when it never ends)."""
        if self.run is None or self.goodput is None:
            return None
        return goodput.with_failures(self.run, self.goodput)

    @property
    def run_with_losses(self) -> Run | None:
        """The run with its failures and every loss (None without losses, or when failures stop it from ever
        finishing: the losses then price no failures, and their sum would be a run that ends)."""
        if self.losses is None or (self.goodput is not None and self.goodput.goodput == 0):
            return None
        return self.losses.with_losses()

    def _losses_dict(self) -> dict[str, Any]:
        """New keys only: `losses.<name>_gpu_hours` and the `*_with_losses` family (failures and every loss; null
        when the run never finishes), with its P10, P50 and P90: the interval, the run-to-run variability and the
        failures' random count (read as a normal where they are many, `confidence.poisson_as_normal`), the P50 the
        point."""
        if self.losses is None:
            return {}
        figures = self.losses_figures()
        quantiles = chance.spread_quantiles(chance.poisson_as_normal(self.losses_spread), figures, chance.PRICED)
        return {"losses": self.losses.to_dict()} | figures | quantiles

    def losses_figures(self) -> dict[str, float | None]:
        """The run with losses' figures its quantiles are of, each proportional to its time (None: it never ends)."""
        run = self.run_with_losses
        return {
            "time_to_train_with_losses_s": run.time_s if run else None,
            "time_to_train_with_losses_days": run.time_s / 86400 if run else None,
            "gpu_hours_with_losses": run.gpu_hours if run else None,
            "cost_usd_with_losses": run.cost_usd if run else None,
            "energy_kwh_with_losses": run.energy_kwh if run else None,
        }

    def _goodput_dict(self) -> dict[str, Any]:
        """New keys only: the failure-free ones above keep their meaning."""
        if self.goodput is None:
            return {}
        record: dict[str, Any] = {"goodput": self.goodput.goodput, "reliability": self.goodput.to_dict()}
        if self.run is None:
            return record
        failing, counts = self.run_with_failures, self.goodput.interruptions(self.run.time_s)
        return record | {
            "expected_interruptions": counts[0] if counts else None,
            "expected_unexpected_interruptions": counts[1] if counts else None,
            "time_to_train_with_failures_s": failing.time_s if failing else None,
            "time_to_train_with_failures_days": failing.time_s / 86400 if failing else None,
            "gpu_hours_with_failures": failing.gpu_hours if failing else None,
            "cost_usd_with_failures": failing.cost_usd if failing else None,
            "cost_usd_with_failures_at_min_price": failing.cost_usd_at_min_price if failing else None,
            "cost_usd_with_failures_at_max_price": failing.cost_usd_at_max_price if failing else None,
            "energy_kwh_with_failures": failing.energy_kwh if failing else None,
        }

    def to_record(self) -> dict[str, Any]:
        """`to_dict` as one flat record (`parallelism.tp`, `breakdown.compute_s`): the row `--format csv` prints,
        and what a list of predictions needs to become a pandas DataFrame."""
        return flatten(self.to_dict())

    def _interval_dict(self) -> dict[str, Any]:
        if self.interval is None:
            return {}
        low, high, protocol = self.interval
        times = {"step_time_s": self.step_time_s}
        if self.run is not None:
            times |= {"time_to_train_s": self.run.time_s, "time_to_train_min": self.run.time_s / 60}
        record = {f"{name}_{side}": value * factor for name, value in times.items()
                  for side, factor in (("low", low), ("high", high))}  # fmt: skip
        return record | {"interval_protocol": protocol} | self._run_interval_dict(low, high)

    def _run_interval_dict(self, low: float, high: float) -> dict[str, Any]:
        """The time interval flowing into GPU-hours, energy and cost (at the quoted price; the price range's ends are
        `cost_usd_at_min_price/_at_max_price`), all proportional to the run's time; new keys after the time's."""
        if self.run is None:
            return {}
        run = self.run
        quantities = {"gpu_hours": run.gpu_hours, "energy_kwh": run.energy_kwh, "cost_usd": run.cost_usd}
        return {f"{name}_{side}": None if value is None else value * factor for name, value in quantities.items()
                for side, factor in (("low", low), ("high", high))}  # fmt: skip

    @cached_property
    def co2e_t(self) -> float | None:
        """The run's operational tCO2e at the grid's intensity (planning/carbon.py); None without a run."""
        run = self.run
        return None if run is None else carbon.operational_t(run.energy_kwh, self.scenario.cost.grid_gco2_per_kwh)

    def _carbon_dict(self) -> dict[str, Any]:
        """The grid's intensity and the run's operational and embodied tCO2e (planning/carbon.py)."""
        run = self.run
        return {
            "power_w_per_gpu_at_wall": self.hardware.it_power_w_per_gpu,
            "grid_gco2_per_kwh": self.scenario.cost.grid_gco2_per_kwh,
            "co2e_t": self.co2e_t,
            "co2e_embodied_t": None if run is None else carbon.embodied_t(run.gpu_hours),
        }

    @property
    def losses_spread(self) -> chance.Spread:
        """What the run with losses varies by: `spread`, and its failures as random interruptions (confidence.py)."""
        run = self.run_with_losses
        return failure_spread(self.spread, (self,), math.inf if run is None else run.time_s)

    @property
    def spread(self) -> chance.Spread:
        """What the failure-free run varies by: the interval and the run-to-run variability (confidence.py), and
        its cost by the price too where the user states a distribution of it."""
        return chance.Spread(self.interval, variability.run_sd(self.scenario.losses.run_to_run_sd),
                             price=self.price.drawn)  # fmt: skip

    def _price_distribution_dict(self) -> dict[str, Any]:
        """New keys only where the user states a price distribution: it, and that the cost's quantiles draw it."""
        stated = self.price.distribution
        if stated is None:
            return {}
        low, mode, high = stated
        return {"price_distribution": {"kind": "triangular", "low": low, "mode": mode, "high": high,
                                       "drawn_in": chance.PRICE_DRAWN_IN}}  # fmt: skip

    def _quantile_dict(self) -> dict[str, Any]:
        """P10, P50 and P90 of the failure-free run's time, GPU-hours, cost, energy and operational carbon: of the
        interval and the run-to-run variability combined (confidence.py), the P50 the point exactly; worked out
        here, as the record is written, not as the prediction is made."""
        figures = self.quantile_figures()
        return {} if figures is None else chance.spread_quantiles(self.spread, figures, chance.PRICED)

    def quantile_figures(self) -> dict[str, float | None] | None:
        """The failure-free run's figures its quantiles are of, each proportional to its time (None: no run)."""
        run = self.run
        if run is None:
            return None
        return {"time_to_train_s": run.time_s, "time_to_train_days": run.time_s / 86400, "gpu_hours": run.gpu_hours,
                "cost_usd": run.cost_usd, "energy_kwh": run.energy_kwh, "co2e_t": self.co2e_t}  # fmt: skip

    def _mlperf_dict(self) -> dict[str, Any]:
        if self.mlperf is None:
            return {}
        return {
            "benchmark": f"{self.scenario.benchmark.partition('@')[0]}@{self.benchmark.round}",  # type: ignore[union-attr]
            "samples_to_converge": self.mlperf.samples,
            "evaluations": self.mlperf.evaluations,
            "train_time_s": self.mlperf.train_s,
            "eval_time_s": self.mlperf.eval_s,
            "run_overhead_s": self.mlperf.overhead_s,
        }

    @property
    def shard_group(self) -> int | None:
        """The DP x CP ranks ZeRO-3 shards over with hybrid sharding (None: no hybrid sharding in this layout)."""
        group, lo = self.scenario.parallelism.shard_group, self.layout
        return group if group and lo.zero == 3 and group < lo.dp * lo.cp else None

    @property
    def benchmark(self) -> Benchmark:
        from perfmodel.inputs.mlperf import get_benchmark

        return get_benchmark(self.scenario.benchmark or "")


def failure_spread(base: chance.Spread, phases: Iterable[Prediction], time_s: float) -> chance.Spread:
    """`base` (a run's interval, run-to-run variability and price) with the failures of `phases` on a run of
    `time_s`: their expected interruptions as a Poisson count (every phase's), each costing the mean of the goodput
    model's loss to lost work, restarts and checkpoint reads, as a share of `time_s`."""
    count = lost_s = 0.0
    for phase in phases:
        loss = None if phase.run is None or phase.goodput is None else losses.failure_loss(phase.run, phase.goodput)
        if loss is not None:
            count, lost_s = count + loss.interruptions, lost_s + loss.rest_s
    share = lost_s / count / time_s if count and math.isfinite(time_s) else 0.0
    return replace(base, interruptions=count, interruption_share=share)


def context_for(scenario: Scenario, efficiency: Efficiency | None = None, hardware: Hardware | None = None) -> Context:
    """The layout-independent context; efficiencies from `efficiency`, else the scenario's calibration; `hardware`
    replaces the scenario's (what-if analysis)."""
    hw = hardware or resolve(scenario.gpu, scenario.system)
    fitted = None if efficiency else calibration.resolve(scenario.calibration)
    md = scenario.model_spec()
    inputs = (scenario, efficiency, hw, fitted, md)
    last: Context | None = _repeated(_LAST_CONTEXT, "context", inputs)
    if last is not None:
        return last
    recipe = stack_recipe(get_recipe(scenario.precision, hw.accelerator), get_stack(scenario.stack), scenario.knobs)
    recipe = era_recipe(recipe, missing_features(scenario.stack, scenario.vintage))
    bench = None
    if scenario.benchmark:
        from perfmodel.inputs.mlperf import benchmark_recipe, get_benchmark

        benchmark = get_benchmark(scenario.benchmark)
        bench, recipe = (
            benchmark.id,
            benchmark_recipe(
                recipe,
                benchmark.nvfp4_hadamard,
                hw.accelerator.vendor in benchmark.fp8_attention_vendors,
                hw.accelerator.vendor in benchmark.graph_captured_vendors,
                benchmark.lora_rank > 0,
            ),
        )
    if scenario.lora_rank:
        recipe = frozen_base_recipe(recipe)
    recipe = cp_comm_recipe(recipe, scenario.cp_exchange)
    recipe = shard_group_recipe(recipe, scenario.parallelism.shard_group or 0)
    recipe = bridge_recipe(
        recipe,
        scenario.fp8_attention,
        scenario.fused_grouped_mlp,
        scenario.fp8_output_proj,
        scenario.expert_loop,
        scenario.full_iteration_graph,
        scenario.fp8_attention_band == "masked",
        scenario.dglu_dbias_regression,
        scenario.activation_offload_layers,
        scenario.grad_reduce_in_fp32,
    )
    eff = efficiency or _efficiency(fitted, hw, scenario, bench)  # type: ignore[arg-type]
    parts = (md, hw.system, hw.accelerator, recipe)
    seq_len = scenario.parallelism.seq_len
    numbers = (eff, seq_len, scenario.lora_rank, scenario.moe_imbalance, scenario.stack, scenario.vintage,
               scenario.lora_modules, packing(scenario.documents, seq_len))  # fmt: skip
    try:
        key = (*map(id, parts), *numbers)
        found = _CONTEXTS.get(key)
    except TypeError:  # efficiencies with array fields (a fit's variants) are not kept
        return Context(md, hw, recipe, *numbers)
    if found is None or not all(a is b for a, b in zip(_parts(found), parts, strict=True)):
        found = _CONTEXTS.put(key, Context(md, hw, recipe, *numbers))
    return _keep(_LAST_CONTEXT, "context", inputs, (), found)


CONTEXTS_KEPT = 64
"""Contexts `context_for` keeps, oldest dropped first: a sweep or a what-if session needs a few dozen at once."""
_CONTEXTS: Bounded[tuple[Any, ...], Context] = Bounded(CONTEXTS_KEPT)
"""Contexts by the identity of their model, system, accelerator and recipe (the catalogue hands out one object per
file version, so an edited file gives a new context) and by their efficiencies and numbers: repeated predictions
share the context's tiers, memo and compiled scalar program."""
_LAST_CONTEXT: dict[Any, Any] = {}
"""The last context handed out, kept with what it was worked out from (the scenario, the efficiency and hardware passed,
and the hardware, calibration and model those resolved to, all by identity): a prediction repeated on the same
scenario object skips the recipe, efficiency and key work. Every input that can change under the same scenario
(a user catalogue, a calibration or model file) is resolved again first, so an edit still gives a new context."""
_LAST_LAYOUT = ("layout of the last scenario",)
_LAST_LAYOUT_FREE = ("layout free, last scenario",)
_LAST_LAYOUT_VARS = ("layout vars of the last layout",)


def _repeated(slot: dict[Any, Any], key: Any, same: tuple[Any, ...], equal: tuple[Any, ...] = ()) -> Any:
    """What `_keep` left in `slot[key]` when it was worked out from these very objects (`same`, compared by identity:
    a frozen scenario asked again) and values (`equal`), else None: the one rule of the last-call shortcuts."""
    kept = slot.get(key)
    if kept is not None and kept[1] == equal and all(map(operator.is_, kept[0], same)):
        return kept[2]
    return None


def _keep(slot: dict[Any, Any], key: Any, same: tuple[Any, ...], equal: tuple[Any, ...], value: Any) -> Any:
    """`value`, kept in `slot[key]` with the objects and values it was worked out from (for `_repeated`)."""
    slot[key] = same, equal, value
    return value


def _efficiency(fitted: calibration.Calibration, hw: Hardware, scenario: Scenario, bench: str | None) -> Efficiency:
    """The calibration's efficiencies for the scenario's family, stack, benchmark and vintage, worked out once per
    calibration object (the parameter table's lookup is most of a repeated prediction otherwise)."""
    key = (id(fitted), hw.accelerator.family, scenario.stack, bench, scenario.vintage)
    found = _EFFICIENCIES.get(key)
    if found is not None and found[0] is fitted:
        return found[1]
    eff = fitted.efficiency(hw.accelerator.family, scenario.stack, bench, scenario.vintage)
    _EFFICIENCIES.put(key, (fitted, eff))
    return eff


_EFFICIENCIES: Bounded[tuple[Any, ...], tuple[calibration.Calibration, Efficiency]] = Bounded(CONTEXTS_KEPT)
"""Efficiencies by calibration object (kept with them: an id is only unique while its object lives) and profile."""


def _parts(ctx: Context) -> tuple[Any, ...]:
    return (ctx.model, ctx.hardware.system, ctx.hardware.accelerator, ctx.recipe)


def layout_vars(layout: Layout) -> LayoutVars:
    return LayoutVars(
        float(layout.tp),
        float(layout.pp),
        float(layout.cp),
        float(layout.dp),
        float(layout.vp),
        float(layout.mbs),
        float(layout.gbs),
        float(RECOMPUTE_MODES.index(layout.recompute)),
        float(layout.zero),
        float(layout.ep),
        float(layout.etp),
        float(layout.recompute_layers or 0),
    )


def _layout_vars_of(ctx: Context, layout: Layout) -> LayoutVars:
    """`layout_vars`, kept on the context for the last layout object priced (a prediction repeated on one
    scenario prices the same one)."""
    found: LayoutVars | None = _repeated(ctx.memo, _LAST_LAYOUT_VARS, (layout,))
    return found if found is not None else _keep(ctx.memo, _LAST_LAYOUT_VARS, (layout,), (), layout_vars(layout))


def given_layout(scenario: Scenario) -> dict[str, Any]:
    """The layout dimensions the scenario fixes (None: to be searched)."""
    return {name: getattr(scenario.parallelism, name) for name in LAYOUT_FIELDS}


def given_degree(par: Parallelism, name: str) -> int | None:
    """The parallel degree `name` the scenario fixes: as given, and VP 1 at PP 1 (the only VP there is), so that a
    layout given in full but for VP at PP 1 is priced as given, not searched."""
    value: int | None = getattr(par, name)
    return 1 if name == "vp" and value is None and par.pp == 1 else value


def choose_layout(scenario: Scenario, ctx: Context) -> tuple[Layout, int]:
    """The scenario's layout when every dimension is given, else the fastest that fits; and how many were priced."""
    chosen: tuple[Layout, int] | None = _repeated(ctx.memo, _LAST_LAYOUT, (scenario,))
    if chosen is None:
        chosen = _keep(ctx.memo, _LAST_LAYOUT, (scenario,), (), _chosen_layout(scenario, ctx))
    return chosen


def given_full_layout(scenario: Scenario) -> Layout | None:
    """The scenario's layout when every dimension is given (DP filling the GPU count, EP and ETP 1, the default batch,
    uncapped where the capped one cannot feed the replicas); None when one is left to a search."""
    par = scenario.parallelism
    tp, pp, cp, mbs, recompute, zero = par.tp, par.pp, par.cp, par.mbs, par.recompute, par.zero
    vp = given_degree(par, "vp")
    if not (tp and pp and cp and vp and mbs and recompute is not None and zero is not None):  # degrees are >= 1
        return None
    gbs = par.gbs or scenario.default_gbs()
    dp = par.dp or max(1, scenario.n_gpus // (tp * pp * cp))
    if not par.gbs and gbs % (dp * mbs):  # the capped default batch cannot feed this many replicas
        gbs = scenario.default_gbs(capped=False)
    etp = par.etp or 1
    return Layout(tp, pp, cp, dp, vp, par.ep or 1, mbs, gbs, par.seq_len, recompute, zero, etp, par.recompute_layers)


def _chosen_layout(scenario: Scenario, ctx: Context) -> tuple[Layout, int]:
    """`choose_layout` itself."""
    n = scenario.n_gpus
    layout = given_full_layout(scenario)
    if layout is not None:
        if ("valid layout", layout, n) not in ctx.memo:  # the rules depend on the layout, model and count only
            check(layout, ctx.model, n, ctx.rules)
            ctx.memo["valid layout", layout, n] = True
        return layout, 1
    return searched_layout(scenario, ctx)


def searched_layout(scenario: Scenario, ctx: Context) -> tuple[Layout, int]:
    """The best layout (`search.best_layout`) of the dimensions the scenario leaves open at its GPU count and
    global batch (the default for the count where it leaves that open: `open_batch_space`), and how many layouts
    were searched: `choose_layout`'s search, and plan's at every count, which searches a layout given in full too
    (a count where it does not fit in memory runs no layout; an MoE's EP and ETP left open are searched).

    Kept on the context by GPU count, benchmark (its default batch) and parallel dimensions, all the search reads
    beside the context: the same open layout again (validation rows, repeated API calls) and the same work at
    another token count (the search ranks layouts per token: a plan's fleet of 405B jobs on 1T-15T tokens, 75
    searches where 273) are not searched again."""
    n = scenario.n_gpus
    key = ("searched layout", n, scenario.benchmark, *as_dict(scenario.parallelism).values())
    found: tuple[Layout, int] | None = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = _search_layout(scenario, ctx)
    return found


def _search_layout(scenario: Scenario, ctx: Context) -> tuple[Layout, int]:
    """`searched_layout` itself."""
    from perfmodel.planning.search import Space, best_layout

    par = scenario.parallelism
    n = scenario.n_gpus
    _refuse_partial_search(scenario)

    def space(capped: bool) -> Space:
        return Space(((n, par.gbs or scenario.default_gbs(capped)),), given_layout(scenario))

    searched, candidates = open_batch_space(ctx, scenario, space)
    return best_layout(ctx, searched, candidates)


def open_batch_space(
    ctx: Context, scenario: Scenario, build: Callable[[bool], Space]
) -> tuple[Space, list[tuple[Block, Any]]]:
    """The space `build(capped=True)` at the capped default batch; when no layout can use it (a cluster too large
    for 16M tokens per step) and the scenario leaves the batch open, `build(capped=False)`, at the batch that grows
    with the GPU count. Either way the space returned passed `check_size`, and comes with its blocks, enumerated
    once (search it with `sized=True` and them)."""
    from perfmodel.planning.search import blocks, check_size

    space = build(True)
    check_size(ctx, space)  # before enumerating the blocks: a refused search must not cost them
    candidates = blocks(ctx, space)
    fixed_batch = scenario.parallelism.gbs is not None
    if fixed_batch or space == (uncapped := build(False)) or any(mask.any() for _, mask in candidates):
        return space, candidates
    check_size(ctx, uncapped)
    return uncapped, blocks(ctx, uncapped)


def without_layout(scenario: Scenario) -> Scenario:
    """The scenario with its parallel layout left open (its global batch and sequence length kept)."""
    open_layout = dict.fromkeys(LAYOUT_FIELDS) | {"gbs": scenario.parallelism.gbs}
    return replaced(scenario, parallelism=replaced(scenario.parallelism, **open_layout))


def for_layout(scenario: Scenario, layout: Layout) -> Scenario:
    """The scenario with its GPU count and layout set to `layout` (a searched one, say)."""
    fields = {name: getattr(layout, name) for name in (*LAYOUT_FIELDS, "gbs", "seq_len")}
    parallelism = replaced(scenario.parallelism, **fields)
    return replaced(scenario, n_gpus=layout.n_gpus, parallelism=parallelism)


class LayoutFree(NamedTuple):
    """What a prediction needs that depends on the context, the GPU count and the scenario's cost, goodput and
    calibration settings, not on the layout, so the context keeps it."""

    price: Price
    interval: calibration.Interval | None
    reliability: goodput.Goodput | None
    measured: MeasuredRows | None
    """How the calibration's bundled rows of this MoE zoo model on this accelerator family read (None: a dense
    model, uncalibrated, or no such rows)."""
    ground: Ground | None
    """What the calibration's measured runs say of the question before its layout is known (None: uncalibrated, no
    interval, or a calibration file without evidence)."""
    straggler: tuple[float, str]
    """The losses' straggler share at 128 GPUs and its source (losses.straggler_share)."""


def layout_free(scenario: Scenario, ctx: Context, n_gpus: int, calibrated: bool) -> LayoutFree:
    """The price, time interval, goodput, measured MoE rows, measured ground and straggler share of a prediction
    (LayoutFree), kept by the context."""
    fitted = calibration.resolve(scenario.calibration)
    same, equal = (scenario, fitted), (n_gpus, calibrated)
    made: LayoutFree | None = _repeated(ctx.memo, _LAST_LAYOUT_FREE, same, equal)
    if made is None:
        made = _keep(ctx.memo, _LAST_LAYOUT_FREE, same, equal, _layout_free(scenario, ctx, n_gpus, calibrated, fitted))
    return made


def _layout_free(
    scenario: Scenario, ctx: Context, n_gpus: int, calibrated: bool, fitted: calibration.Calibration
) -> LayoutFree:
    """`layout_free` itself, kept per cost, goodput and calibration settings."""
    try:
        key = ("layout free", n_gpus, calibrated, id(fitted), scenario.precision, scenario.cost, scenario.goodput,
               scenario.losses)  # fmt: skip
        found = ctx.memo.get(key)
    except TypeError:  # goodput settings with their own failure rates (a dict) are not kept
        key, found = None, None
    if found is not None and found[0] is fitted:
        return found[1]
    family = ctx.hardware.accelerator.family
    interval = fitted.interval_for(family, scenario.precision, n_gpus, ctx.model.is_moe) if calibrated else None
    measured = None
    if calibrated and ctx.model.is_moe:  # imported here: a dense prediction does not load it
        from perfmodel.planning.measured_moe import measured_rows

        measured = measured_rows(fitted, scenario, family)
    made = LayoutFree(
        scenario_price(scenario, ctx.hardware),
        interval,
        goodput.for_scenario(scenario, ctx.hardware, ctx.model, n_gpus),
        measured,
        _ground(fitted, scenario, ctx, n_gpus) if interval else None,
        losses.straggler_share(scenario.losses, fitted if calibrated else None),
    )
    if key is not None:
        ctx.memo[key] = fitted, made  # the calibration kept with its id, which is unique only while it lives
    return made


def _ground(fitted: calibration.Calibration, scenario: Scenario, ctx: Context, n_gpus: int) -> Ground | None:
    """The question's measured ground in the calibration's evidence (planning/evidence.py), None without it."""
    from perfmodel.planning import evidence

    found = evidence.index(fitted)
    if found is None:
        return None
    md, fmt = ctx.model, calibration.number_format(scenario.precision)
    lora = scenario.lora_rank > 0
    accelerator = ctx.hardware.accelerator
    return evidence.ground(found, md.id, md.params / 1e9, md.is_moe, lora, accelerator.name, accelerator.family, fmt,
                           n_gpus)  # fmt: skip


def scenario_price(scenario: Scenario, hardware: Hardware) -> Price:
    """The price of a GPU-hour: owning the systems (--buy), else the user's rental price or the GPU's on-demand one
    (none where hardware_specs has none)."""
    if scenario.cost.mode == "buy":
        return tco.buy_price(hardware, scenario.cost)
    return Price.for_run(hardware.accelerator, scenario.cost.usd_per_gpu_hour, scenario.cost.usd_per_gpu_hour_range)


def prediction_for(scenario: Scenario, ctx: Context, layout: Layout, searched: int, calibrated: bool) -> Prediction:
    """The Prediction of one layout: step time, throughput, and the run (tokens or MLPerf benchmark) when set."""
    step = evaluate(ctx, _layout_vars_of(ctx, layout))
    n_gpus, rate = layout.n_gpus, tokens_per_s(layout, step)
    price, interval, reliability, measured, ground, straggler = layout_free(scenario, ctx, n_gpus, calibrated)
    evidence = None
    if ground is not None and interval is not None:
        flops = ctx.memo.get(("model flops per token", layout.seq_len))
        if flops is None:
            flops = ctx.model.model_flops_per_token(layout.seq_len, ctx.packing)
            ctx.memo["model flops per token", layout.seq_len] = flops
        evidence = ground.at(layout, rate / n_gpus * flops / 1e12, interval)
        interval = evidence.interval
    mlperf, run = None, None
    if scenario.benchmark:
        from perfmodel.inputs.mlperf import get_benchmark, score

        bench = get_benchmark(scenario.benchmark)
        step_s, eval_batch_s = float(step.step_time_s), float(step.forward_only_s)
        mlperf = score(bench, layout.gbs, step_s, eval_batch_s, overhead_s=ctx.efficiency.timed_overhead_s(step_s))
        tokens, time_s = mlperf.samples * layout.seq_len, mlperf.time_s
    elif scenario.tokens is not None:
        check_one_step(scenario.tokens, layout)
        tokens, time_s = scenario.tokens, scenario.tokens / rate
    if mlperf is not None or scenario.tokens is not None:
        power_w = ctx.hardware.it_power_w_per_gpu
        run = training_run(tokens, time_s, n_gpus, price, power_w, scenario.cost.pue)
    exchange = None
    if ctx.model.is_moe:  # imported here: a dense prediction does not load it
        from perfmodel.physics.expert_exchange import expert_exchange

        exchange = expert_exchange(ctx, layout)
    lost = None
    if run is not None and mlperf is None:
        lost = losses.losses(run, reliability, scenario.losses, n_gpus, straggler, run_steps(ctx, layout, step))
    made = (scenario, ctx.model, ctx.hardware, layout, step, price, run, searched, mlperf, interval, reliability)
    return Prediction(*made, exchange, measured, evidence, lost)


def check_one_step(tokens: float, layout: Layout, where: str = "tokens") -> None:
    """A token budget trains at least one global batch: `--tokens 15` priced a run of a 2-millionth of a step. The
    error begins with `where`: the field, or the flag or file that gave it where the question knows
    (request.check_tokens, before any search; a prediction does not)."""
    per_step = layout.gbs * layout.seq_len
    if tokens < per_step:
        raise PerfmodelError(
            f"{where}: {tokens:,.6g} is less than one global batch step, GBS {layout.gbs:,} x seq "
            f"{layout.seq_len:,} = {per_step / 1e6:,.2f}M tokens; allowed: at least {per_step:,} (e.g. 15T)"
        )


def run_steps(ctx: Context, layout: Layout, step: StepResult) -> losses.Steps:
    """The run's steps as its ramp and evaluation losses price them: the layout at other global batches."""

    def step_at(gbs: int) -> Any:
        return evaluate(ctx, _layout_vars_of(ctx, replace(layout, gbs=gbs))).step_time_s

    divisor = layout.dp * layout.mbs
    return losses.Steps(step_at, layout.gbs, layout.seq_len, float(step.forward_only_s), divisor)


def tokens_per_s(layout: Layout, step: StepResult) -> float:
    """Tokens trained per second: the global batch's tokens over the step time."""
    return layout.gbs * layout.seq_len / float(step.step_time_s)


class Rates(NamedTuple):
    """A step's throughput and model FLOP utilisation (the prediction record's rate columns)."""

    tokens_per_s: Any
    tokens_per_s_per_gpu: Any
    model_tflops_per_gpu: Any
    mfu_bf16: Any
    mfu_of_precision: Any


def model_flops_per_token(model: ModelSpec, scenario: Scenario, seq_len: int) -> float:
    """The model FLOPs of a token of the scenario's packed documents at `seq_len`, of its LoRA fine-tune where it is
    one (ModelSpec.model_flops_per_token: 6·N had NVIDIA's 8 x H100 LoRA run at 131% of the dense BF16 peak)."""
    packed = packing(scenario.documents, seq_len)
    return model.model_flops_per_token(seq_len, packed, scenario.lora_rank, scenario.lora_modules)


def rates(
    gbs: Any, seq_len: int, n_gpus: int, step_time_s: Any, model: ModelSpec, scenario: Scenario, hardware: Hardware
) -> Rates:
    """The rates of steps of `step_time_s` (floats or arrays alike: a prediction, or a layouts sweep's chunk):
    tokens per second, per GPU, model TFLOP/s per GPU, and MFU over the dense BF16 peak and over the peak of the
    format the quantised GEMMs use."""
    tokens = gbs * seq_len / step_time_s
    per_gpu = tokens / n_gpus
    tflops = per_gpu * model_flops_per_token(model, scenario, seq_len) / 1e12
    acc = hardware.accelerator
    gemm = get_recipe(scenario.precision, acc).gemm_format
    return Rates(tokens, per_gpu, tflops, tflops * 1e12 / acc.peak_flops("bf16"), tflops * 1e12 / acc.peak_flops(gemm))


def predict(scenario: Scenario, efficiency: Efficiency | None = None, hardware: Hardware | None = None) -> Prediction:
    ctx = context_for(scenario, efficiency, hardware)
    layout, searched = choose_layout(scenario, ctx)
    return prediction_for(scenario, ctx, layout, searched, calibrated=efficiency is None)


@dataclass(frozen=True, repr=False)
class SearchReport(Shown):
    """The best layouts of a scenario as full predictions, best first, and what the search covered."""

    results: list[Prediction]
    pareto: list[Prediction]
    found: SearchResult

    def to_dict(self, with_pareto: bool = False) -> dict[str, Any]:
        record: dict[str, Any] = {
            "results": [p.to_dict() for p in self.results],
            "layouts_evaluated": self.found.evaluated,
            "layouts_feasible": self.found.feasible,
            "layouts_priced_in_full": self.found.priced,
            "elapsed_s": self.found.elapsed_s,
            "objective": self.found.objective,
        }
        if with_pareto:
            record["pareto"] = [p.to_dict() for p in self.pareto]
        return record

    def to_records(self) -> list[dict[str, Any]]:
        """The ranked layouts as flat records, best first (the rows `search --format csv` prints)."""
        return [p.to_record() for p in self.results]

    def ranks(self) -> list[dict[str, int]]:
        """Each result's rank from 1, best first: the column `search --format csv` and `export search` add after
        the schema's, so that a sorted or filtered file keeps the order."""
        return [{"rank": rank} for rank in range(1, len(self.results) + 1)]

    def _shown(self) -> list[dict[str, Any]]:
        return self.to_records()


def _refuse_partial_search(scenario: Scenario) -> None:
    """A search does not enumerate partial recompute: one asked to keep it would silently drop it."""
    if scenario.parallelism.recompute_layers is not None:
        raise PerfmodelError(
            "parallelism.recompute_layers: a partial recompute is priced for a given layout only (give tp, pp, cp, "
            "vp, mbs and zero too); the layout search does not enumerate it"
        )


def search_space(scenario: Scenario, gpu_counts: Sequence[int] | None = None, capped: bool = True) -> Space:
    """The layouts to search for a scenario: its GPU count (or `gpu_counts`), its global batch or, when the scenario
    leaves it open, the batches of `gbs_choices` around each count's default (capped or not), and the dimensions it
    fixes."""
    from perfmodel.planning.search import Space, gbs_choices

    _refuse_partial_search(scenario)
    points = []
    for n in gpu_counts or (scenario.n_gpus,):
        gbs = scenario.parallelism.gbs
        choices = (gbs,) if gbs else gbs_choices(replaced(scenario, n_gpus=n).default_gbs(capped))
        if scenario.benchmark and not gbs:  # an MLPerf benchmark's scorable batches bound the choices
            from perfmodel.inputs.mlperf import get_benchmark

            low, high = get_benchmark(scenario.benchmark).gbs_bounds()
            choices = tuple(g for g in choices if low <= g <= high)
        points += [(n, g) for g in choices]
    return Space(tuple(points), given_layout(scenario))


def search_objective(p: Prediction, objective: str) -> float:
    """What search ranks by: seconds per token (time-to-train for an MLPerf benchmark, whose work depends on the
    batch), times the GPU count for cost."""
    seconds = p.run.time_s if p.mlperf and p.run else 1 / p.tokens_per_s
    return seconds * (p.layout.n_gpus if objective == "cost" else 1)


def search_scenario(
    scenario: Scenario,
    gpu_counts: Sequence[int] | None = None,
    top: int = 10,
    objective: str = "time",
    progress: Callable[[int, int], None] | None = None,
    hardware: Hardware | None = None,
) -> SearchReport:
    """Search a scenario's layouts and predict the `top` best and the Pareto front in full.

    The vectorised search ranks per token; the best of each (GPU count, global batch) are predicted too, and all are
    ranked by their full prediction, so that an MLPerf benchmark's batch-dependent work is accounted for.
    """
    from perfmodel.planning.search import pareto_front, search

    single_phase(
        scenario,
        "search",
        "predict, compare and plan search the layout each phase leaves open; to rank one "
        "phase's layouts, search a scenario of that phase alone",
    )
    start = time.perf_counter()
    ctx = context_for(scenario, hardware=hardware)
    if objective == "cost" and (price := scenario_price(scenario, ctx.hardware)).usd_per_gpu_hour is None:
        # it ranks GPU-time per token, cost per token only at a price: the header must not say cost without one
        raise PerfmodelError(f"search by cost: {price.source} (or --buy), or search by time")
    space, candidates = open_batch_space(ctx, scenario, lambda capped: search_space(scenario, gpu_counts, capped))
    found = search(ctx, space, top, objective, progress, sized=True, candidates=candidates)
    layouts = list(dict.fromkeys(f.layout for f in (*found.top, *found.best_per_point.values())))
    full = {lo: prediction_for(for_layout(scenario, lo), ctx, lo, found.evaluated, calibrated=True) for lo in layouts}
    results = sorted(full.values(), key=lambda p: search_objective(p, objective))[:top]
    pareto = pareto_front(
        [full[f.layout] for f in found.best_per_point.values()],
        time=lambda p: search_objective(p, "time"),
        cost=lambda p: search_objective(p, "cost"),
        gpus=lambda p: p.layout.n_gpus,
    )
    return SearchReport(results, pareto, replace(found, elapsed_s=time.perf_counter() - start))
