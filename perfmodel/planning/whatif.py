"""What-if hardware: named, settable hardware parameters, and modified copies of the (frozen) hardware objects.

A setting is `NAME=VALUE` (absolute, in the parameter's unit) or `NAME=xF` (F times the datasheet figure). Settings
build a modified copy of the Accelerator/System with `record.replaced`; every figure they replace says so in its source.
The topology tiers are derived from the hardware (and cached per hardware description), so a faster NVLink or NIC
flows through the networkx graph like any datasheet figure.

Settable parameters (see KNOBS): bf16_tflops, fp8_tflops, fp4_tflops (dense TFLOP/s), hbm_tbps (TB/s), hbm_gb (GiB, as
the datasheet's '80 GB' means; the usable share of a part that reserves some is kept), nvlink_gbps (scale-up GB/s per
GPU, bidirectional as NVIDIA and AMD quote it: 900 for H100, 1800 for B200; on an xGMI mesh every peer link scales with
it), domain_gpus (GPUs per scale-up domain; a job fills the same share of a bigger domain), nic_gbps (Gb/s per NIC),
nics_per_gpu, oversubscription (leaf-to-spine taper, 1 = non-blocking), scaleup_latency_us, nic_latency_us,
switch_latency_us, collective_step_us (latencies in microseconds), power_w (W per GPU: energy, and the GEMMs' share of
peak through W per peak FLOP/s), usd_per_gpu_hour (price; a multiplier scales the low-high range too).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from perfmodel.errors import PerfmodelError, did_you_mean, shown
from perfmodel.inputs.hardware import MAX_DOMAIN_GPUS, MAX_MESH_GPUS, Hardware, PriceFigure, SourcedPositive, resolve
from perfmodel.inputs.record import replaced
from perfmodel.inputs.scenario import Scenario, single_phase
from perfmodel.planning.predict import Prediction, for_layout, predict

FORMATS = ("bf16", "fp8", "fp4")
FORMAT_PRECISIONS = {"fp8": ("fp8", "mxfp8"), "fp4": ("nvfp4", "mxfp4")}
"""The precisions a tensor-core format serves: giving a GPU a peak it lacks makes them available."""


@dataclass(frozen=True)
class Knob:
    """One settable hardware parameter: where it lives, its unit, and whether it shapes the network."""

    name: str
    unit: str
    description: str
    owner: str  # "accelerator", "system", "fabric" or "latency"
    field: str
    allowed: tuple[float, float]
    """The range a what-if may set, in the parameter's unit: about 100x beyond every part in hardware_specs either
    way (576 GPUs per domain, the largest announced), so that the network graph and the numbers stay meaningful."""
    scale: float = 1.0
    """Datasheet field = parameter / scale (nvlink_gbps is bidirectional, the field one direction)."""
    whole: bool = False
    """Takes whole numbers only (GPU and NIC counts)."""
    timing: bool = True
    """Changes step time (price does not; board power does, through the GEMMs' share of peak:
    physics/compute.peak_power_share); sensitivity covers these."""


KNOBS: dict[str, Knob] = {
    k.name: k
    for k in (
        Knob("bf16_tflops", "TFLOP/s", "dense BF16 tensor-core peak", "accelerator", "bf16_tflops", (1, 1e6)),
        Knob("fp8_tflops", "TFLOP/s", "dense FP8 tensor-core peak", "accelerator", "fp8_tflops", (1, 1e6)),
        Knob("fp4_tflops", "TFLOP/s", "dense FP4 tensor-core peak", "accelerator", "fp4_tflops", (1, 1e6)),
        Knob("hbm_tbps", "TB/s", "HBM bandwidth", "accelerator", "hbm_tbps", (0.01, 1000)),
        Knob(
            "hbm_gb",
            "GiB",
            "HBM capacity, binary (Accelerator.memory_bytes): the datasheet's '80 GB' is 80 GiB",
            "accelerator",
            "hbm_gb",
            (1, 100_000),
        ),
        Knob(
            "nvlink_gbps",
            "GB/s",
            "scale-up bandwidth per GPU, both directions (NVLink/xGMI)",
            "accelerator",
            "scaleup_gb_per_s_per_direction",
            (1, 1e6),
            scale=2.0,
        ),
        Knob(
            "domain_gpus",
            "GPUs",
            "GPUs per scale-up domain",
            "accelerator",
            "scaleup_domain_gpus",
            (1, MAX_DOMAIN_GPUS),
            whole=True,
        ),
        Knob("nic_gbps", "Gb/s", "scale-out bandwidth per NIC", "accelerator", "nic_gbit_per_s", (1, 100_000)),
        Knob("nics_per_gpu", "NICs", "scale-out NICs per GPU", "system", "nics_per_gpu", (1, 16), whole=True),
        Knob(
            "oversubscription",
            "x",
            "leaf-to-spine oversubscription (1 = non-blocking)",
            "fabric",
            "oversubscription",
            (0.5, 100),
        ),
        Knob(
            "scaleup_latency_us",
            "us",
            "scale-up hop latency (GPU to NVSwitch or peer)",
            "latency",
            "scaleup_hop_us",
            (0.001, 100_000),
        ),
        Knob("nic_latency_us", "us", "PCIe + NIC traversal latency", "latency", "nic_us", (0.001, 100_000)),
        Knob(
            "switch_latency_us",
            "us",
            "scale-out switch port-to-port latency",
            "latency",
            "switch_hop_us",
            (0.001, 100_000),
        ),
        Knob(
            "collective_step_us",
            "us",
            "NCCL/RCCL software cost per collective step across NICs",
            "latency",
            "collective_step_us",
            (0.001, 100_000),
        ),
        Knob("power_w", "W", "board power per GPU", "accelerator", "power_w", (1, 100_000)),
        Knob(
            "usd_per_gpu_hour",
            "$/GPU-h",
            "price per GPU-hour",
            "accelerator",
            "usd_per_gpu_hour",
            (0.001, 10_000),
            timing=False,
        ),
    )
}


@dataclass(frozen=True)
class Setting:
    knob: Knob
    value: float
    multiplier: bool

    @property
    def text(self) -> str:
        return f"{self.knob.name}=" + (f"x{self.value:g}" if self.multiplier else f"{self.value:g}")


def parse_setting(text: str) -> Setting:
    """`NAME=VALUE` or `NAME=xF` (`NAME=Fx` too); one line naming what is allowed otherwise."""
    name, sep, raw = text.partition("=")
    name, raw = name.strip(), raw.strip()
    if name not in KNOBS:
        raise PerfmodelError(
            f"--set {shown(text)}: unknown hardware parameter '{shown(name)}'{did_you_mean(name, KNOBS)}; settable: "
            f"{', '.join(KNOBS)}"
        )
    knob = KNOBS[name]
    leading, trailing = raw[:1].lower() == "x", raw[-1:].lower() == "x"  # x2, or 2x as people write twice
    multiplier = leading or trailing
    try:
        value = float(raw[1:] if leading else raw[:-1] if trailing else raw) if sep else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise PerfmodelError(
            f"--set {shown(text)}: the value must be a positive number in {knob.unit} or a multiplier xF "
            f"(e.g. {name}=x1.5)"
        )
    if knob.whole and not multiplier and value != int(value):
        raise PerfmodelError(f"--set {text}: {name} takes a whole number of {knob.unit}")
    setting = Setting(knob, value, multiplier)
    if not multiplier:
        _check_allowed(setting, value, None)
    return setting


def _check_allowed(setting: Setting, value: float, before: float | None) -> None:
    low, high = setting.knob.allowed
    if not low <= value <= high:
        raise PerfmodelError(
            f"--set {setting.text}: {setting.knob.name} would be {value:g} {setting.knob.unit}; allowed {low:g} to "
            f"{high:g}" + (f" (datasheet: {before:g})" if before else "")
        )


def current(hw: Hardware, knob: Knob) -> float | None:
    """The parameter's value on this hardware, in its unit (None when the part has no such figure)."""
    figure = getattr(_owner(hw, knob.owner), knob.field)
    return None if figure is None else figure.value * knob.scale


def _owner(hw: Hardware, owner: str) -> Any:
    return {
        "accelerator": hw.accelerator,
        "system": hw.system,
        "fabric": hw.system.fabric,
        "latency": hw.system.latency,
    }[owner]


def _with(hw: Hardware, owner: str, updates: dict[str, Any]) -> Hardware:
    """A copy of the hardware with fields of one of its parts replaced."""
    if owner == "accelerator":
        return replaced(hw, accelerator=replaced(hw.accelerator, **updates))
    system = hw.system
    if owner in ("fabric", "latency"):
        updates = {owner: replaced(getattr(system, owner), **updates)}
    return replaced(hw, system=replaced(system, **updates))


def apply(hw: Hardware, settings: Sequence[Setting]) -> Hardware:
    """The hardware with every setting applied, in order."""
    for setting in settings:
        hw = _apply_one(hw, setting)
    return hw


def _apply_one(hw: Hardware, setting: Setting) -> Hardware:
    knob = setting.knob
    before = current(hw, knob)
    if setting.multiplier and before is None:
        raise PerfmodelError(
            f"--set {setting.text}: {hw.accelerator.id} has no {knob.name} figure to multiply; give an absolute value"
        )
    value = before * setting.value if setting.multiplier and before is not None else setting.value
    if knob.whole:
        value = float(max(1, round(value)))
    _check_allowed(setting, value, before)
    if knob.name == "domain_gpus" and hw.system.scaleup_kind == "mesh" and value > MAX_MESH_GPUS:
        raise PerfmodelError(
            f"--set {setting.text}: {hw.system.id} is a full mesh; allowed on a mesh: 1 to {MAX_MESH_GPUS} GPUs"
        )
    ratio = value / before if before else 1.0
    source = (
        f"what-if --set {setting.text} (datasheet: {before:g} {knob.unit})" if before else f"what-if {setting.text}"
    )

    def figure(number: float) -> SourcedPositive:
        return SourcedPositive(value=number, source=source)

    updates: dict[str, Any] = {knob.field: figure(value / knob.scale)}
    acc, system = hw.accelerator, hw.system
    if knob.name == "hbm_gb" and acc.hbm_usable_gb is not None:
        updates["hbm_usable_gb"] = figure(acc.hbm_usable_gb.value * ratio)
    if knob.name == "nvlink_gbps" and acc.scaleup_peer_gb_per_s_per_direction is not None:
        updates["scaleup_peer_gb_per_s_per_direction"] = figure(acc.scaleup_peer_gb_per_s_per_direction.value * ratio)
    if knob.name == "bf16_tflops" and acc.power_reference is not None:  # the same clock share (compute.clock_share)
        reference = acc.power_reference
        scaled = figure(reference.bf16_tflops.value * ratio)
        updates["power_reference"] = replaced(reference, bf16_tflops=scaled)
    if knob.name == "usd_per_gpu_hour":  # a price the user sets is their quote
        note = f"what-if --set {setting.text}"
        updates[knob.field] = PriceFigure(value=value / knob.scale, source=source, basis="quoted", note=note)
        for field in ("usd_per_gpu_hour_low", "usd_per_gpu_hour_high"):
            low_or_high = getattr(acc, field)
            updates[field] = figure(low_or_high.value * ratio if setting.multiplier and low_or_high else value)
    if knob.name in ("fp8_tflops", "fp4_tflops"):
        added = FORMAT_PRECISIONS[knob.name.removesuffix("_tflops")]
        updates["precisions"] = tuple(dict.fromkeys((*acc.precisions, *added)))
    hw = _with(hw, knob.owner, updates)
    if knob.name == "domain_gpus" and system.ranks_per_domain is not None:
        # A job fills the same share of a bigger domain, in whole nodes (64 of 72 -> 128 of 144).
        per_node = system.gpus_per_node.value
        ranks = max(per_node, math.floor(system.ranks_per_domain.value * ratio / per_node) * per_node)
        hw = _with(hw, "system", {"ranks_per_domain": figure(min(ranks, value))})
    return hw


def changes(base: Hardware, settings: Sequence[Setting]) -> dict[str, dict[str, float | None]]:
    """{name: {from, to}} of every parameter the settings touch, in its unit."""
    modified = apply(base, settings)
    return {s.knob.name: {"from": current(base, s.knob), "to": current(modified, s.knob)} for s in settings}


def timing_knobs(hw: Hardware, used_formats: Sequence[str]) -> list[Knob]:
    """The parameters that can change this hardware's step time: continuous, present on the part, and for compute
    peaks only the formats the recipe uses."""
    peaks = {f"{fmt}_tflops" for fmt in used_formats}
    return [
        k
        for k in KNOBS.values()
        if k.timing
        and not k.whole
        and current(hw, k) is not None
        and (not k.name.endswith("_tflops") or k.name in peaks)
    ]


def cases(scenario: Scenario, settings: Sequence[Setting]) -> list[tuple[str, Prediction]]:
    """The scenario on its datasheet hardware, on the modified hardware with the same layout, and (when the
    scenario leaves layout dimensions open) on the modified hardware with the layout searched again."""
    single_phase(scenario, "whatif", "ask it of one phase's scenario, or compare the campaign's systems with compare")
    base_hw = resolve(scenario.gpu, scenario.system)
    modified = apply(base_hw, settings)
    base = predict(scenario, hardware=base_hw)
    out = [("baseline", base), ("what-if, same layout", predict(for_layout(scenario, base.layout), hardware=modified))]
    if base.layouts_searched > 1:
        out.append(("what-if, best layout", predict(scenario, hardware=modified)))
    return out
