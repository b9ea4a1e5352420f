"""Everything an exported result rests on, with where each number comes from.

Hardware figures are read from the {value, source} pairs of hardware_specs/*.toml, the efficiency parameters from the
set the prediction used, the run's own assumptions (price, PUE, electricity) from the scenario. A procurement reader can
trace every number in the workbook to a datasheet, a measurement or a stated assumption.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import re
from dataclasses import asdict, dataclass, is_dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfmodel.inputs import grids
from perfmodel.inputs.hardware import Sourced, SourcedFlag
from perfmodel.inputs.record import given, input_fields
from perfmodel.outputs.export.table import USD_PER_KWH_SOURCE, ExportRow
from perfmodel.outputs.report import layout_chosen
from perfmodel.physics.efficiency import Efficiency
from perfmodel.planning import carbon, goodput, losses, tco, variability

if TYPE_CHECKING:
    from perfmodel.inputs.scenario import ModelOverride

UNITS = (
    ("usd_per_system", "USD per system"),
    ("_w_per_gpu", "W per GPU"),
    ("_gb_per_s_per_node", "GB/s per node"),
    ("ranks_per_domain", "GPUs"),
    ("_clock_mhz", "MHz"),
    ("_tflops", "TFLOP/s (dense)"),
    ("_gb_per_s_per_direction", "GB/s per direction"),
    ("_gbit_per_s", "Gb/s"),
    ("_texp_per_s", "T exponentials/s"),
    ("_tbps", "TB/s"),
    ("_gb", "GB"),
    ("_w", "W"),
    ("_us", "microseconds"),
    ("usd_per_gpu_hour", "USD per GPU-hour"),
    ("_gpus", "GPUs"),
    ("gpus_per_node", "GPUs"),
    ("nics_per_gpu", "NICs"),
    ("domains_per_leaf", "scale-up domains"),
    ("oversubscription", "downlink:uplink ratio"),
    ("sms", "SMs"),
)


@dataclass(frozen=True)
class Assumption:
    section: str
    """What the figure belongs to: an accelerator, a system, an efficiency set, the run."""
    name: str
    value: Any
    unit: str
    source: str


@dataclass(frozen=True)
class Citation:
    """A public document an assumption cites by key (S1, S2, ... of hardware_specs/SOURCES.md)."""

    key: str
    document: str


LOCAL_NOTES = (
    (re.compile(r"accelerators\.csv '([^']+)', "), r"\1: "),  # the data sheet's row: keep the product's name
    (re.compile(r"accelerators\.csv \w+: "), ""),
    (
        re.compile(
            r",? ?(?:via )?accelerators_sources\.md(?: (?:section [\d/]+(?: item \d+)?|price table|[A-Z]+\d+X?))?"
        ),
        "",
    ),
    (re.compile(r"MODELLING\.md;? ?"), ""),
    (re.compile(r"see SOURCES\.md"), "see the Sources sheet"),
    (re.compile(r" ?\(mlperf_training_llm\.csv\)"), " (MLPerf Training results)"),
    (re.compile(r"\(\s*,?\s*\)|\(\s*,\s*"), lambda m: "" if ")" in m.group() else "("),
)
"""The project's own data notes a bundled source string names (files outside the repository), taken out: what stays
is the description and the keys of the public documents it rests on."""
CITED = re.compile(r"\bS(\d+)\b")


def public(source: str) -> str:
    """`source` naming only public documents (by key) and its own reasoning, never a local file."""
    for pattern, replacement in LOCAL_NOTES:
        source = pattern.sub(replacement, source)
    return " ".join(source.split())


def citations(found: list[Assumption]) -> list[Citation]:
    """The documents the assumptions cite, in key order, from the bundled hardware_specs/SOURCES.md."""
    from perfmodel.inputs.resources import data_dir

    listed = {}
    for line in (data_dir("hardware_specs") / "SOURCES.md").read_text(encoding="utf-8").splitlines():
        if (match := re.match(r"- (S\d+) (.+)", line)) is not None:
            listed[match.group(1)] = match.group(2)
    keys = {int(n) for a in found for n in CITED.findall(a.source)}
    return [Citation(f"S{n}", listed[f"S{n}"]) for n in sorted(keys) if f"S{n}" in listed]


def calibration_name(source: str) -> str:
    """A calibration as a reader elsewhere can know it: the bundled one by that name, a file by its name only (no
    folder of this machine)."""
    from perfmodel.physics.calibration import BUNDLED

    if source == "bundled" or Path(source).resolve() == BUNDLED.resolve():
        return "perfmodel's bundled calibration (perfmodel/data/calibration.json)"
    return f"the calibration file '{Path(source).name}'"


def _unit(name: str) -> str:
    """A figure's unit by its name's ending; a range's ends (usd_per_system_low, _high) in their figure's."""
    name = name.removesuffix("_low").removesuffix("_high")
    return next((unit for suffix, unit in UNITS if name.endswith(suffix)), "")


def sourced_figures(section: str, record: Any, prefix: str = "") -> list[Assumption]:
    """Every {value, source} figure of a hardware record, nested tables included (fabric.*, latency.*)."""
    found = []
    for name in (f.name for f in input_fields(type(record))):
        item = getattr(record, name)
        if isinstance(item, Sourced | SourcedFlag):
            found.append(Assumption(section, prefix + name, item.value, _unit(name), item.source))
        elif is_dataclass(item):
            found += sourced_figures(section, item, f"{prefix}{name}.")
    return found


@cache
def efficiency_docs() -> dict[str, str]:
    """The one-line docstrings written under each Efficiency field, read from its source."""
    cls = ast.parse(inspect.getsource(Efficiency)).body[0]
    assert isinstance(cls, ast.ClassDef)
    docs = {}
    for field, after in itertools.pairwise(cls.body):
        doc = after.value if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) else None
        if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name) and doc is not None:
            docs[field.target.id] = " ".join(str(doc.value).split())
    return docs


def efficiency_assumptions(section: str, efficiency: Efficiency, source: str, moe_source: str) -> list[Assumption]:
    """One row per efficiency field; those the calibration's MoE stage fits (physics/parameters.py, stage 'moe')
    cite that stage, which fits them on the MoE rows, not the dense fit's rows."""
    from perfmodel.physics.parameters import TABLE

    docs = efficiency_docs()
    moe_fields = {parameter.target for parameter in TABLE if parameter.stage == "moe"}
    return [
        Assumption(
            section,
            name,
            value,
            "s" if name.endswith("_s") else ("us" if name.endswith("_us") else "fraction"),
            f"{moe_source if name in moe_fields else source}. {docs.get(name, '')}".strip(),
        )
        for name, value in asdict(efficiency).items()
    ]


def run_assumptions(row: ExportRow, usd_per_kwh: float, given_usd_per_kwh: bool) -> list[Assumption]:
    p = row.prediction
    section = f"run: {row.label}"
    price_source = f"{p.price.basis}: {p.price.source}"
    found = [
        Assumption(section, "model", p.model.id, "", f"{p.model.name}, {p.model.params:,} parameters"),
        Assumption(section, "precision recipe", p.scenario.precision, "", "perfmodel/inputs/precision.py"),
        Assumption(section, "layout", p.layout.describe(), "", _layout_source(p.layouts_searched)),
        Assumption(section, "usd_per_gpu_hour", p.price.usd_per_gpu_hour, "USD per GPU-hour", price_source),
        Assumption(section, "pue", p.scenario.cost.pue, "", "scenario (perfmodel's default: 1.2)"),
        Assumption(
            section,
            "grid_gco2_per_kwh",
            p.scenario.cost.grid_gco2_per_kwh,
            "gCO2e/kWh",
            grids.source(p.scenario.cost.grid_gco2_per_kwh),
        ),
        Assumption(
            section,
            "embodied_gco2e_per_gpu_hour",
            carbon.EMBODIED_G_PER_GPU_HOUR,
            "gCO2e per GPU-hour",
            carbon.EMBODIED_SOURCE,
        ),
        Assumption(
            section,
            "usd_per_kwh",
            usd_per_kwh,
            "USD/kWh",
            "given by the user" if given_usd_per_kwh else USD_PER_KWH_SOURCE,
        ),
    ]
    if p.model.is_moe:
        found += _expert_assumptions(row, section)
    if p.run is not None:
        found.append(Assumption(section, "tokens_to_train", p.run.tokens, "tokens", "scenario"))
    given_sd = p.scenario.losses.run_to_run_sd is not None
    found.append(Assumption(section, "run_to_run_sd", p.spread.run_sd, "log standard deviation of time",
                            "given" if given_sd else variability.SOURCE))  # fmt: skip
    cost = p.scenario.cost
    found += [
        Assumption(section, "cost_mode", cost.mode, "", "rent: the price per GPU-hour; buy: planning/tco.py"),
        Assumption(section, "amortisation_years", cost.amortisation_years, "years", tco.YEARS_SOURCE),
        Assumption(section, "utilisation", cost.utilisation, "fraction", tco.UTILISATION_SOURCE),
        Assumption(
            section,
            "facility_usd_per_kw_month",
            cost.facility_usd_per_kw_month,
            "USD per kW-month",
            "scenario (default 0: not given)",
        ),
    ]
    return found + _goodput_assumptions(row, section) + _loss_assumptions(row, section)


def _expert_assumptions(row: ExportRow, section: str) -> list[Assumption]:
    """A MoE run's routing, folded expert layout, dispatcher, exchange overlap and imbalance (outputs/experts.py)."""
    from perfmodel.outputs.experts import experts

    p = row.prediction
    e = experts(p)
    x = e.exchange
    table = None if isinstance(p.scenario.model, str) else p.scenario.model
    zoo = "the zoo's model (perfmodel/inputs/models.py, with its source)"
    model = zoo if table is None else "scenario [model] table"
    where = f"its all-to-alls span {x.domains} scale-up domains" if x.domains > 1 else "inside one scale-up domain"
    return [
        Assumption(section, "experts", e.routing, "", model),
        Assumption(section, "expert layout", e.layout, "", _layout_source(p.layouts_searched)),
        Assumption(section, "dispatcher", x.dispatcher, "", _dispatcher_source(table)),
        Assumption(section, x.overlap_name, x.overlap, "fraction", f"efficiency section above: {where}; {e.hidden}"),
        Assumption(section, "moe_imbalance", x.imbalance, "", "scenario (default 1.0: the published rows are "
                   "force-balanced)"),
    ]  # fmt: skip


def _dispatcher_source(table: ModelOverride | None) -> str:
    """Where a MoE run's dispatcher comes from: the [model] table that gives it, else the zoo model it starts from (a
    zoo id, or the table's `base`), else ModelSpec's default."""
    if table is not None and "dispatcher" in given(table):
        return "scenario [model] table"
    if table is None or table.base:
        return "the recipe's, as the zoo's model records it (perfmodel/inputs/models.py)"
    return "scenario [model] table (default 'flex')"


def _goodput_assumptions(row: ExportRow, section: str) -> list[Assumption]:
    """The failure rates per class with their sources, the restart time and the checkpoint, where goodput is on."""
    g = row.prediction.goodput
    if g is None:
        return []
    given = row.prediction.scenario.goodput
    rates = goodput.Reliability.build(1e9, given.failure_scale, given.failures_per_million_gpu_hours).classes
    found = [
        Assumption(section, f"failures_{c.name}", c.per_million_gpu_hours, "per million GPU-hours", c.source)
        for c in rates
    ]
    restart_source = "scenario" if given.restart_s is not None else goodput.RESTART_SOURCE
    return [
        *found,
        Assumption(section, "restart_s", g.restart_s, "s", restart_source),
        Assumption(section, "checkpoint_gb", g.checkpoint_bytes / 1e9, "GB", goodput.CHECKPOINT_SOURCE),
        Assumption(
            section,
            "checkpoint_interval_s",
            g.interval_s,
            "s",
            "given" if g.interval_given else "Daly's optimum (planning/goodput.py)",
        ),
    ]


def _loss_assumptions(row: ExportRow, section: str) -> list[Assumption]:
    """What the real-world losses were priced from, and each loss with what it is made of and its source."""
    lost = row.prediction.losses
    if lost is None:
        return []
    sources = {loss.name: loss.source for loss in lost.items}
    settings = row.prediction.scenario.losses
    startup = "given" if settings.startup_s is not None else losses.STARTUP_SOURCE
    straggler = sources.get("stragglers", "given")
    return [
        Assumption(section, "straggler_share", lost.straggler_share, "fraction of step time at 128 GPUs", straggler),
        Assumption(section, "startup_s", lost.startup_s, "s per job start", startup),
        *(Assumption(section, f"losses.{loss.name}_gpu_hours", loss.gpu_hours, "GPU-hours",
                     loss.detail + ("" if loss.source in loss.detail else f"; {loss.source}")) for loss in lost.items),
    ]  # fmt: skip


def _layout_source(searched: int) -> str:
    return layout_chosen(searched) + ("" if searched == 1 else " (perfmodel search)")


def assumptions(rows: list[ExportRow], usd_per_kwh: float, given_usd_per_kwh: bool) -> list[Assumption]:
    """Hardware figures of every accelerator and system used (once each), efficiency sets, and each run's own."""
    from perfmodel.physics import calibration
    from perfmodel.planning.predict import context_for

    found: list[Assumption] = []
    seen: set[str] = set()
    for row in rows:
        hw = row.prediction.hardware
        for section, record in (
            (f"accelerator {hw.accelerator.id}", hw.accelerator),
            (f"system {hw.system.id}", hw.system),
        ):
            if section not in seen:
                seen.add(section)
                found += sourced_figures(section, record)
        efficiency = context_for(row.prediction.scenario).efficiency
        fitted = calibration.resolve(row.prediction.scenario.calibration)
        section = f"efficiency ({hw.accelerator.family})"
        if section not in seen:
            seen.add(section)
            fit = fitted.provenance.get("fit", {})
            source = (
                f"{calibration_name(fitted.source)} ({fit.get('rows', 0)} measured rows, in-sample MAPE "
                f"{fit.get('in_sample_mape_pct', float('nan')):.1f}%) over perfmodel/physics/efficiency.py defaults"
                if fit
                else f"perfmodel/physics/efficiency.py defaults for the {hw.accelerator.family} family "
                "(not fitted to runs)"
            )
            source = _user_fit(fitted.provenance.get("user"), hw.accelerator.family) + source
            moe_fit = fitted.provenance.get("moe", {}).get("fit", {})
            moe_source = (
                f"{calibration_name(fitted.source)}, MoE stage ({moe_fit.get('rows', 0)} MoE rows, in-sample MAPE "
                f"{moe_fit.get('in_sample_mape_pct', float('nan')):.1f}%; per model and leave-one-model-out: "
                "docs/moe_validation.md) over perfmodel/physics/efficiency.py defaults"
                if moe_fit
                else source
            )
            found += efficiency_assumptions(section, efficiency, source, moe_source)
    for row in rows:
        found += run_assumptions(row, usd_per_kwh, given_usd_per_kwh)
    return [replace(a, source=public(a.source)) for a in found]


def _user_fit(user: dict[str, Any] | None, family: str) -> str:
    """What a user calibration (fitting/user.py) refitted for `family`, ahead of the fit it started from: empty where
    it has none, or fitted other families only."""
    if not user or (user["applied_to"] != "every family" and family not in user["families"]):
        return ""
    refitted = ", ".join(user["fitted"]) or "nothing"
    return (
        f"your {len(user['rows'])} measured rows refitted {refitted} (MAPE on them {user['mape_before_pct']:.1f}% "
        f"before, {user['mape_after_pct']:.1f}% after, {user['leave_one_out_mape_pct']:.1f}% left out one at a "
        "time), over: "
    )
