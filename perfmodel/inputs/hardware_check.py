"""A hardware file's tables checked against the record classes of inputs/hardware.py, by pydantic, and each figure
against its range.

The ranges reach about 100x beyond every bundled part either way (the what-if ranges, planning/whatif.py), so that
the network graph stays small and every product of figures stays finite: half a GPU per node, a 1e300 TFLOP/s peak
or a domain of 100,000 GPUs ended in a traceback or minutes of work. They are checked here, where a file is checked,
rather than as a record class per unit: a prediction on bundled hardware reads its checked form from the cache, and
each record class costs its import about 0.4 ms.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from perfmodel.errors import PerfmodelError, shown
from perfmodel.inputs.catalogue import PRICED
from perfmodel.inputs.checking import check, model_of
from perfmodel.inputs.hardware import MAX_DOMAIN_GPUS, Accelerator, System

MODELS = {"accelerators": model_of(Accelerator), "systems": model_of(System)}
"""The pydantic models of an accelerator file and a system file (outputs/schemas.py prints their JSON Schema)."""


class Range(NamedTuple):
    low: float
    high: float
    whole: bool = False

    def holds(self, value: float) -> bool:
        return self.low <= value <= self.high and (not self.whole or value == int(value))

    @property
    def text(self) -> str:
        return f"{'a whole number' if self.whole else 'a number'} from {self.low:g} to {self.high:g}"


PEAK, WATTS, CLOCK = Range(1, 1e6), Range(1, 100_000), Range(10, 100_000)
GPUS, PRICE, LATENCY = Range(1, MAX_DOMAIN_GPUS, whole=True), Range(0.001, 10_000), Range(0.001, 100_000)
SCALEUP = Range(0.5, 5e5)
"""GB/s per direction: what-if nvlink_gbps, both directions, takes 1 to 1e6."""

RANGES: dict[str, dict[str, Range]] = {
    "accelerators": {
        "year": Range(1990, 2100, whole=True),
        "bf16_tflops": PEAK, "fp8_tflops": PEAK, "fp4_tflops": PEAK,
        "sms": Range(1, 100_000, whole=True),
        "hbm_gb": Range(1, 100_000), "hbm_usable_gb": Range(1, 100_000),  # GiB
        "hbm_tbps": Range(0.01, 1000),
        "sfu_texp_per_s": Range(0.01, 10_000),
        "scaleup_gb_per_s_per_direction": SCALEUP, "scaleup_peer_gb_per_s_per_direction": SCALEUP,
        "scaleup_domain_gpus": GPUS,
        "nic_gbit_per_s": Range(1, 100_000),
        "power_w": WATTS, "gemm_clock_mhz": CLOCK,
        "power_reference.power_w": WATTS, "power_reference.bf16_tflops": PEAK, "power_reference.gemm_clock_mhz": CLOCK,
        "usd_per_gpu_hour": PRICE, "usd_per_gpu_hour_low": PRICE, "usd_per_gpu_hour_high": PRICE,
    },
    "systems": {
        "gpus_per_node": GPUS, "ranks_per_domain": GPUS,
        "nics_per_gpu": Range(0.01, 16),
        "storage_gb_per_s_per_node": Range(0.001, 1e6),
        "host_w_per_gpu": WATTS, "network_w_per_gpu": WATTS,
        "host_link_gb_per_s_per_direction": Range(0.1, 100_000),
        "usd_per_system": Range(1, 1e10), "usd_per_system_low": Range(1, 1e10), "usd_per_system_high": Range(1, 1e10),
        "fabric.oversubscription": Range(0.5, 100),
        "fabric.domains_per_leaf": Range(1, 100_000, whole=True),
        "latency.scaleup_hop_us": LATENCY, "latency.nic_us": LATENCY, "latency.switch_hop_us": LATENCY,
        "latency.collective_step_us": LATENCY,
    },
}  # fmt: skip
"""The range of every number of a hardware file, by its dotted name (a {value, source} figure by its own name)."""


WITHOUT_BASE = (
    "a file without base is an accelerator (with accelerator = ID, a system) given in full (perfmodel schema "
    "hardware lists the fields); or start from a bundled entry: base = 'h100-sxm' or 'dgx-h100', say"
)
"""What a missing field of a hardware file says: catalogue._user_entry reads one without `base` as a whole entry."""


def checked(kind: str, path: Path, raw: dict[str, Any]) -> Any:
    """The record of an accelerator or system file, or one line naming the file, the field and the problem (for a
    number, its range)."""
    try:
        found = check(MODELS[kind], raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        if err["type"] == "extra_forbidden":  # a misspelt key, named with the keys allowed there
            from perfmodel.inputs.scenario_check import explain_error

            key, message = explain_error(exc, MODELS[kind])
            raise PerfmodelError(f"{path}: field '{key}': {message}") from None
        field = ".".join(str(p) for p in err["loc"])
        number = (
            RANGES[kind].get(field.removesuffix(".value")) if err["type"] not in ("model_type", "missing") else None
        )
        message = f"must be {number.text}, not {_given(err['input'])}" if number else _message(err)
        if err["type"] == "missing":  # only a file without `base` lacks a field: the base gives every one
            message += f"; {WITHOUT_BASE}"
        raise PerfmodelError(f"{path}: field '{field}': {message}") from None
    for name, allowed in RANGES[kind].items():
        item = _at(found, name)
        value = getattr(item, "value", item)
        if value is not None and not allowed.holds(value):
            field = f"{name}.value" if item is not value else name
            raise PerfmodelError(f"{path}: field '{field}': must be {allowed.text}, not {_given(value)}")
    if isinstance(found, Accelerator):
        _check_bounds(path, found)
    _check_price_range(path, found)
    return found


def _check_price_range(path: Path, found: Any) -> None:
    """A price's `_low`/`_high` hold it between them: a range above the price (a quote under a base's list range)
    prints a cost range that misses the cost."""
    for price in PRICED:
        value, low, high = (getattr(found, name, None) for name in (price, f"{price}_low", f"{price}_high"))
        if value is None:
            continue
        if low is not None and low.value > value.value:
            raise PerfmodelError(
                f"{path}: field '{price}_low.value': {low.value:g} is above {price} ({value.value:g}); allowed: at "
                "most it"
            )
        if high is not None and high.value < value.value:
            raise PerfmodelError(
                f"{path}: field '{price}_high.value': {high.value:g} is below {price} ({value.value:g}); allowed: at "
                "least it"
            )


def _at(item: Any, name: str) -> Any:
    """What a record holds at dotted `name` ('fabric.oversubscription'), None where the file gives nothing."""
    for part in name.split("."):
        item = getattr(item, part, None)
    return item


def _check_bounds(path: Path, acc: Accelerator) -> None:
    """Figures of a file that bound one another: what a job allocates is at most the memory there is, and one peer
    link at most the GPU's whole scale-up bandwidth."""
    usable, peer, scaleup = (
        acc.hbm_usable_gb,
        acc.scaleup_peer_gb_per_s_per_direction,
        acc.scaleup_gb_per_s_per_direction,
    )
    if usable is not None and usable.value > acc.hbm_gb.value:
        raise PerfmodelError(
            f"{path}: field 'hbm_usable_gb.value': {usable.value:g} GiB usable is more than hbm_gb "
            f"({acc.hbm_gb.value:g}); allowed: at most hbm_gb"
        )
    if peer is not None and peer.value > scaleup.value:
        raise PerfmodelError(
            f"{path}: field 'scaleup_peer_gb_per_s_per_direction.value': {peer.value:g} GB/s to one peer is more than "
            f"the GPU's whole scale-up bandwidth; allowed: at most scaleup_gb_per_s_per_direction ({scaleup.value:g})"
        )


def _given(value: Any) -> str:
    """The value a file gave, as an error line shows it: a 400-digit integer by its length, text quoted."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of about {value.bit_length() * math.log10(2):.0f} digits"
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:  # 8, not 8.0
        return str(int(value))
    return shown(repr(value) if isinstance(value, str) else value)


def _message(err: Any) -> str:
    """pydantic's message, but a figure given as a bare number names the {value, source} pair it must be rather
    than the record class a user never sees ('a valid dictionary or instance of SourcedPositive')."""
    if err["type"] != "model_type":
        return str(err["msg"])
    if str(err.get("ctx", {}).get("class_name", "")).startswith("Sourced"):
        return (
            f'must be a {{value, source}} pair, e.g. {{ value = {err["input"]!r}, source = "where it comes from" }}'
            if isinstance(err.get("input"), int | float) and not isinstance(err["input"], bool)
            else 'must be a {value, source} pair, e.g. { value = 1.0, source = "where it comes from" }'
        )
    return "must be a table"
