"""Compose model, hardware, layout and run into a Prediction: the answer to one planning question."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from perfmodel import calibration
from perfmodel.efficiency import Efficiency
from perfmodel.hardware import Hardware, resolve
from perfmodel.mlperf import Benchmark, Score, get_benchmark, score
from perfmodel.models import ModelSpec
from perfmodel.parallel import RECOMPUTE_MODES, Layout, check
from perfmodel.precision import get_recipe
from perfmodel.scenario import Scenario
from perfmodel.search import candidate_layouts, search
from perfmodel.step import BREAKDOWN, Context, LayoutVars, StepResult, evaluate
from perfmodel.training import Price, Run, training_run

LAYOUT_FIELDS = ("tp", "pp", "cp", "dp", "vp", "ep", "mbs", "recompute", "zero")


@dataclass(frozen=True)
class Prediction:
    scenario: Scenario
    model: ModelSpec
    hardware: Hardware
    layout: Layout
    step: StepResult
    price: Price
    run: Run | None
    layouts_searched: int
    mlperf: Score | None = None
    interval: tuple[float, float] | None = None
    """Factors on a predicted time bounding the measured one with 80% probability (the calibration's held-out
    residuals), or None when uncalibrated."""

    @property
    def step_time_s(self) -> float:
        return float(self.step.step_time_s)

    @property
    def tokens_per_s(self) -> float:
        return self.layout.gbs * self.layout.seq_len / self.step_time_s

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.tokens_per_s / self.layout.n_gpus

    @property
    def model_tflops_per_gpu(self) -> float:
        return self.tokens_per_s_per_gpu * self.model.model_flops_per_token(self.layout.seq_len) / 1e12

    @property
    def mfu(self) -> float:
        """Model FLOP/s over the dense BF16 peak (the convention of NVIDIA's tables and the Llama 3 paper)."""
        return self.model_tflops_per_gpu * 1e12 / self.hardware.accelerator.peak_flops("bf16")

    @property
    def mfu_of_precision(self) -> float:
        """Model FLOP/s over the dense peak of the format the quantised GEMMs use."""
        recipe = get_recipe(self.scenario.precision, self.hardware.accelerator)
        return self.model_tflops_per_gpu * 1e12 / self.hardware.accelerator.peak_flops(recipe.gemm_format)

    def to_dict(self) -> dict[str, Any]:
        lo, st, run, mem = self.layout, self.step, self.run, self.step.memory
        return {
            "model": self.model.id,
            "accelerator": self.hardware.accelerator.id,
            "system": self.hardware.system.id,
            "n_gpus": lo.n_gpus,
            "precision": self.scenario.precision,
            "parallelism": {
                "tp": lo.tp,
                "pp": lo.pp,
                "cp": lo.cp,
                "dp": lo.dp,
                "vp": lo.vp,
                "ep": lo.ep,
                "mbs": lo.mbs,
                "gbs": lo.gbs,
                "seq_len": lo.seq_len,
                "recompute": lo.recompute,
                "zero": lo.zero,
            },
            "step_time_s": self.step_time_s,
            "tokens_per_s": self.tokens_per_s,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
            "model_tflops_per_gpu": self.model_tflops_per_gpu,
            "mfu": self.mfu,
            "mfu_of_precision": self.mfu_of_precision,
            "memory_per_gpu_gb": float(mem.total) / 1e9,
            "memory_capacity_gb": st.hbm_bytes / 1e9,
            "fits_in_memory": bool(st.fits),
            "memory_gb": {k: float(v) / 1e9 for k, v in mem._asdict().items()},
            "tokens_to_train": run.tokens if run else None,
            "time_to_train_s": run.time_s if run else None,
            "time_to_train_min": run.time_s / 60 if run else None,
            "time_to_train_days": run.time_s / 86400 if run else None,
            "gpu_hours": run.gpu_hours if run else None,
            "usd_per_gpu_hour": self.price.usd_per_gpu_hour,
            "usd_per_gpu_hour_low": self.price.low,
            "usd_per_gpu_hour_high": self.price.high,
            "cost_usd": run.cost_usd if run else None,
            "cost_usd_low": run.cost_usd_low if run else None,
            "cost_usd_high": run.cost_usd_high if run else None,
            "energy_kwh": run.energy_kwh if run else None,
            "pue": self.scenario.cost.pue,
            "layouts_searched": self.layouts_searched,
            **self._interval_dict(),
            **self._mlperf_dict(),
            "breakdown": {name: float(getattr(st, name)) for name in BREAKDOWN},
        }

    def _interval_dict(self) -> dict[str, Any]:
        if self.interval is None:
            return {}
        low, high = self.interval
        times = {"step_time_s": self.step_time_s}
        if self.run is not None:
            times |= {"time_to_train_s": self.run.time_s, "time_to_train_min": self.run.time_s / 60}
        return {f"{name}_{side}": value * factor for name, value in times.items()
                for side, factor in (("low", low), ("high", high))}  # fmt: skip

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
    def benchmark(self) -> Benchmark:
        return get_benchmark(self.scenario.benchmark or "")


def context_for(scenario: Scenario, efficiency: Efficiency | None = None) -> Context:
    """The layout-independent context; efficiencies from `efficiency`, else the scenario's calibration."""
    hw = resolve(scenario.gpu, scenario.system)
    recipe = get_recipe(scenario.precision, hw.accelerator)
    eff = efficiency or calibration.resolve(scenario.calibration).efficiency(hw.accelerator.family)
    return Context(scenario.model_spec(), hw, recipe, eff, scenario.parallelism.seq_len, scenario.lora_rank)


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
    )


def choose_layout(scenario: Scenario, ctx: Context) -> tuple[Layout, int]:
    """The scenario's layout when every dimension is given, else the fastest that fits; and how many were priced."""
    par = scenario.parallelism
    gbs = par.gbs or scenario.default_gbs()
    given = {name: getattr(par, name) for name in LAYOUT_FIELDS}
    n = scenario.n_gpus
    if all(given[name] is not None for name in ("tp", "pp", "cp", "vp", "mbs", "recompute", "zero")):
        dp = max(1, n // (par.tp * par.pp * par.cp))  # type: ignore[operator]
        layout = Layout(
            par.tp,
            par.pp,
            par.cp,
            par.dp or dp,
            par.vp,
            par.ep or 1,
            par.mbs,
            gbs,
            par.seq_len,  # type: ignore[arg-type]
            par.recompute,
            par.zero,  # type: ignore[arg-type]
        )
        check(layout, ctx.model, n)
        return layout, 1
    layouts = candidate_layouts(ctx.model, n, par.seq_len, gbs, ctx.hardware.ranks_per_domain, given)
    return search(ctx, layouts).best, len(layouts)


def predict(scenario: Scenario, efficiency: Efficiency | None = None) -> Prediction:
    ctx = context_for(scenario, efficiency)
    interval = None if efficiency else calibration.resolve(scenario.calibration).interval
    layout, searched = choose_layout(scenario, ctx)
    step = evaluate(ctx, layout_vars(layout))
    price = Price.for_run(ctx.hardware.accelerator, scenario.cost.usd_per_gpu_hour)
    prediction = Prediction(scenario, ctx.model, ctx.hardware, layout, step, price, None, searched, None, interval)
    mlperf = None
    if scenario.benchmark:
        bench = get_benchmark(scenario.benchmark)
        step_s, eval_batch_s = float(step.step_time_s), float(step.forward_only_s)
        mlperf = score(bench, layout.gbs, step_s, eval_batch_s, overhead_s=ctx.efficiency.run_overhead_s)
        tokens, time_s = mlperf.samples * layout.seq_len, mlperf.time_s
    elif scenario.tokens is not None:
        tokens, time_s = scenario.tokens, scenario.tokens / prediction.tokens_per_s
    else:
        return prediction
    run = training_run(tokens, time_s, layout.n_gpus, price, ctx.hardware.accelerator.power_w.value, scenario.cost.pue)
    return replace(prediction, run=run, mlperf=mlperf)
