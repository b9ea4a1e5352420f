"""Accelerators and systems, loaded from hardware_specs/*.toml (and the user's catalogues).

Every figure in those files is a `{value, source}` pair; the model only reads `.value`, the Assumptions export
and `perfmodel hardware list` show the sources. The classes here are records (inputs/record.py): a user's file is
checked by pydantic (inputs/hardware_check.py), a bundled file's checked form is read from the cache
(inputs/validated.py), so that a prediction on bundled hardware never imports pydantic.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Literal

from perfmodel.errors import PerfmodelError, did_you_mean, shown
from perfmodel.inputs import catalogue, validated
from perfmodel.inputs.files import parse_toml
from perfmodel.inputs.record import bounded, record, replaced

MAX_DOMAIN_GPUS = 576
"""GPUs in a scale-up domain, a node or a job's share of a domain, at most: the network graph has a node per GPU of a
domain and one max-flow per group size, so the domain sizes the work (576: the largest domain announced)."""
MAX_MESH_GPUS = 64
"""A full mesh (xGMI) of more GPUs would need more links per GPU than any part has (7 on MI300X), and its graph
grows with the square of its size: derived in seconds at 64 GPUs, minutes at 576."""
Family = Literal["ampere", "hopper", "blackwell", "blackwell-ultra", "cdna3", "cdna4"]


@record
class Sourced:
    value: float = bounded(allow_inf_nan=False)
    source: str = bounded(min_length=3)


@record
class SourcedPositive(Sourced):
    """A positive figure, a TOML number (not text, not true/false), within its field's range (README, limits)."""

    value: float = bounded(gt=0, allow_inf_nan=False, strict=True)


PriceBasis = Literal["list", "estimate", "quoted"]


@record
class PriceFigure(SourcedPositive):
    """A price per GPU-hour and its basis, which every output shows beside it: 'list' (a published on-demand
    price), 'estimate' (derived, e.g. GB300 = GB200's list price x 1.25) or 'quoted' (a price the user was offered:
    the default in the user's own file). `note` gives the basis in one line for tables; `source` in full."""

    basis: PriceBasis = "quoted"
    note: str | None = bounded(None, min_length=3, max_length=80, pattern=r"^[^\n]*$")


@record
class SourcedFlag:
    value: bool
    source: str = bounded(min_length=3)


@record
class PowerReference:
    """The same-silicon variant at the highest board power, whose sustained GEMM clock the fitted GEMM efficiencies
    describe: a lower-power variant runs its GEMMs at a lower clock (physics/compute.clock_share)."""

    id: str
    power_w: SourcedPositive
    bf16_tflops: SourcedPositive
    gemm_clock_mhz: SourcedPositive | None = None


@record
class Accelerator:
    id: str
    name: str
    vendor: str
    family: Family
    year: int = bounded(strict=True)
    default_system: str
    precisions: tuple[str, ...]
    bf16_tflops: SourcedPositive
    fp8_tflops: SourcedPositive | None = None
    fp4_tflops: SourcedPositive | None = None
    sms: SourcedPositive
    hbm_gb: SourcedPositive
    hbm_usable_gb: SourcedPositive | None = None
    hbm_tbps: SourcedPositive
    sfu_texp_per_s: SourcedPositive | None = None
    scaleup_name: str
    scaleup_gb_per_s_per_direction: SourcedPositive
    scaleup_peer_gb_per_s_per_direction: SourcedPositive | None = None
    scaleup_domain_gpus: SourcedPositive
    nic_gbit_per_s: SourcedPositive
    power_w: SourcedPositive
    gemm_clock_mhz: SourcedPositive | None = None
    """Median clock of dense BF16 GEMMs at the board power cap, where measured."""
    power_reference: PowerReference | None = None
    usd_per_gpu_hour: PriceFigure | None = None
    usd_per_gpu_hour_low: SourcedPositive | None = None
    usd_per_gpu_hour_high: SourcedPositive | None = None

    def peak_flops(self, fmt: str) -> float:
        """Dense peak FLOP/s for a tensor-core input format ('bf16', 'fp8' or 'fp4')."""
        figure = {"bf16": self.bf16_tflops, "fp8": self.fp8_tflops, "fp4": self.fp4_tflops}[fmt]
        if figure is None:
            raise PerfmodelError(f"{self.id}: no {fmt.upper()} tensor-core peak in hardware_specs")
        return figure.value * 1e12

    @property
    def memory_bytes(self) -> float:
        """Capacity a job can allocate: the usable figure where the vendor prints one.

        HBM capacities are binary: an "80 GB" H100 has 80 GiB (5 stacks of 16 GiB), 85.9 decimal GB.
        """
        return (self.hbm_usable_gb or self.hbm_gb).value * 2**30

    @property
    def hbm_bytes_per_s(self) -> float:
        return self.hbm_tbps.value * 1e12


@record
class Fabric:
    kind: Literal["rail-optimised fat tree"]
    name: str
    oversubscription: SourcedPositive
    domains_per_leaf: SourcedPositive
    in_network_reduction: SourcedFlag


@record
class Latency:
    scaleup_hop_us: SourcedPositive
    nic_us: SourcedPositive
    switch_hop_us: SourcedPositive
    collective_step_us: SourcedPositive


DEFAULT_STORAGE = SourcedPositive(
    value=1.0,
    source=(
        "estimate from a sourced figure: the Llama 3 paper (arXiv 2407.21783, section 3.3.1, Storage) gives its "
        "Tectonic store 2 TB/s sustained (7 TB/s peak); over the 2,048 nodes of its 16,384-GPU job about 1 GB/s "
        "per node"
    ),
)
"""Checkpoint write and read bandwidth per node, GB/s, where a system file gives none."""
DEFAULT_HOST_W = SourcedPositive(
    value=575.0,
    source=(
        "estimate: no system power in the project's data notes for this system; the DGX H100's share (NVIDIA DGX "
        "H100 datasheet, 10.2 kW max, less 8 x 700 W of GPU boards, per GPU)"
    ),
)
"""The system's power beside its GPU boards (CPUs, memory, NICs, fans, NVLink switches) per GPU, W, where a system
file gives none."""
DEFAULT_NETWORK_W = SourcedPositive(
    value=90.0,
    source=(
        "estimate: a non-blocking two-tier fat tree takes 3 switch ports per GPU (leaf down, leaf up, spine); a "
        "64-port 400G switch (NVIDIA Quantum-2 QM9700 datasheet: 1,720 W max with active modules) is ~27 W a port, "
        "81 W, plus the NIC-side transceiver (~9 W)"
    ),
)
"""The scale-out fabric's switches and optics per GPU, W, where a system file gives none."""


@record
class System:
    id: str
    name: str
    accelerator: str
    scaleup_kind: Literal["switch", "mesh"]
    gpus_per_node: SourcedPositive
    nics_per_gpu: SourcedPositive
    ranks_per_domain: SourcedPositive | None = None
    scaleup_in_network_reduction: SourcedFlag
    fabric: Fabric
    latency: Latency
    storage_gb_per_s_per_node: SourcedPositive = DEFAULT_STORAGE
    """Checkpoint storage bandwidth per node (GB/s, write and read), for the goodput model."""
    usd_per_system: SourcedPositive | None = None
    usd_per_system_low: SourcedPositive | None = None
    usd_per_system_high: SourcedPositive | None = None
    """Purchase price of one system (a node, or an NVL72 rack) with its range, for the cost of owning it."""
    host_w_per_gpu: SourcedPositive = DEFAULT_HOST_W
    """Power beside the GPU boards (CPUs, memory, NICs, fans, switch trays) per GPU at full load, W."""
    network_w_per_gpu: SourcedPositive = DEFAULT_NETWORK_W
    """The scale-out fabric's switches and optics per GPU, W."""
    host_link_gb_per_s_per_direction: SourcedPositive | None = None
    """Each GPU's link to host memory, GB/s each way (NVLink-C2C to Grace, PCIe to an x86 host): what activation
    offload copies over (physics/offload.py). None: not given, and a scenario that offloads is refused."""


@record
class Hardware:
    """A system with its accelerator resolved: what the model needs about the machine."""

    system: System
    accelerator: Accelerator

    @property
    def domain_gpus(self) -> int:
        return int(self.accelerator.scaleup_domain_gpus.value)

    @property
    def job_gpus_per_system(self) -> int:
        """GPUs a job takes of each system it uses: a node, or the GPUs of an NVL72 rack a job fills (64 of 72)."""
        if self.system.ranks_per_domain is not None:
            return self.ranks_per_domain
        return int(self.system.gpus_per_node.value)

    @property
    def it_power_w_per_gpu(self) -> float:
        """Power per GPU at the wall before the facility's PUE: its board, its share of the host and of the
        scale-out network (the board alone leaves out a third of what a cluster draws)."""
        s = self.system
        return self.accelerator.power_w.value + s.host_w_per_gpu.value + s.network_w_per_gpu.value

    @property
    def ranks_per_domain(self) -> int:
        """GPUs of one scale-up domain that a job fills before moving to the next (64 of 72 on NVL72)."""
        figure = self.system.ranks_per_domain
        return int(figure.value) if figure else self.domain_gpus


def _ids(kind: str) -> list[str]:
    return sorted(catalogue.entries()[kind])


def _get(kind: str, item_id: str) -> Accelerator | System:
    return _get_in(kind, item_id, catalogue.version())


def _unknown(kind: str, item_id: str) -> PerfmodelError:
    """An id that names no entry of `kind`, with what was likely meant: `compare --gpu` takes a system or a GPU with
    its precision (`gb300:nvfp4`), `predict --gpu` a GPU alone; else the nearest ids (errors.did_you_mean)."""
    label = {"accelerators": "GPU", "systems": "system"}[kind]
    other, other_label = {"accelerators": ("systems", "a system"), "systems": ("accelerators", "a GPU")}[kind]
    ident, colon, precision = item_id.partition(":")
    if colon and ident in catalogue.entries()[kind]:
        hint = f" (the precision is set on its own: '{shown(ident)}' and precision '{shown(precision)}')"
    elif item_id in catalogue.entries()[other]:
        hint = f" ('{shown(item_id)}' is {other_label}, not a {label})"
    else:
        hint = did_you_mean(shown(item_id), _ids(kind))
    return PerfmodelError(f"unknown {label} '{shown(item_id)}'{hint}; valid: {', '.join(_ids(kind))}")


def names_a_system(ident: object) -> bool:
    """Whether a `gpu` names a system and no accelerator (gb200-nvl72, bundled or of the user's hardware files): the
    one meaning it can have, which scenario_from reads as the system."""
    if not isinstance(ident, str):
        return False
    found = catalogue.entries()
    return ident not in found["accelerators"] and ident in found["systems"]


@cache
def _get_in(kind: str, item_id: str, _catalogues: tuple[str, ...]) -> Accelerator | System:
    """One accelerator or system, read from its own file (bundled ids are file names), so a prediction reads two
    files; cached per set of user catalogues in force. A bundled file's checked form comes from the cache."""
    entry = catalogue.entries()[kind].get(item_id)
    if entry is None:
        raise _unknown(kind, item_id)
    cls: type[Accelerator | System] = Accelerator if kind == "accelerators" else System
    if entry.bundled:
        text = catalogue.read_bundled(entry)
        loaded = validated.cached(kind, text, cls, lambda: _checked(entry, parse_toml(entry.path, text)))
    else:
        loaded = _checked(entry, entry.raw)
    if loaded.id != item_id:
        raise PerfmodelError(f"{entry.path}: field 'id' is '{loaded.id}', not the file name")
    return loaded


def _checked(entry: catalogue.Entry, raw: dict[str, Any]) -> Accelerator | System:
    """An entry's record as pydantic checks its tables (imported here, only when a file must be checked)."""
    from perfmodel.inputs.hardware_check import checked

    return checked(entry.kind, entry.path, raw)


def add_catalogue(path: str | Path, origin: str = "--hardware") -> None:
    """Use a user's hardware file or folder (README "Your own hardware"): every entry in it is validated now, so a
    mistake is one line naming its file and field before any work."""
    catalogue.add(path, origin)
    found = catalogue.entries()
    for kind, entries in found.items():
        for entry in entries.values():
            if not entry.bundled:
                _get(kind, entry.id)
    for entry in found["systems"].values():
        if not entry.bundled and get_system(entry.id).accelerator in found["accelerators"]:
            resolve(system=entry.id)


def get_accelerator(accelerator_id: str) -> Accelerator:
    return _get("accelerators", accelerator_id)  # type: ignore[return-value]


def get_system(system_id: str) -> System:
    return _get("systems", system_id)  # type: ignore[return-value]


def accelerators() -> dict[str, Accelerator]:
    return {i: get_accelerator(i) for i in _ids("accelerators")}


def systems() -> dict[str, System]:
    return {i: get_system(i) for i in _ids("systems")}


def resolve(gpu: str | None = None, system: str | None = None) -> Hardware:
    """The hardware for a `--gpu` and/or `--system`: an accelerator id alone picks its usual system."""
    return _resolve_in(gpu, system, catalogue.version())


@cache
def _resolve_in(gpu: str | None, system: str | None, _catalogues: tuple[str, ...]) -> Hardware:
    """`resolve`, once per set of user catalogues in force (a Hardware is frozen: every prediction can share it)."""
    follows = system is None
    if system is None:
        if gpu is None:
            raise PerfmodelError(
                "no hardware given: set gpu or system in the scenario, or pass --gpu ID or --system ID"
            )
        system = get_accelerator(gpu).default_system
    chosen = get_system(system)
    if follows and gpu != chosen.accelerator and not catalogue.entries()["accelerators"][str(gpu)].bundled:
        chosen = replaced(chosen, accelerator=gpu)  # a user's accelerator file alone: its default system follows it
    if gpu is not None and gpu != chosen.accelerator:
        get_accelerator(gpu)  # an unknown id is reported first
        raise PerfmodelError(f"gpu {gpu} does not match system {system}, which has {chosen.accelerator} GPUs")
    hardware = Hardware(system=chosen, accelerator=get_accelerator(chosen.accelerator))
    _check_pair(hardware)
    return hardware


def _check_pair(hw: Hardware) -> None:
    """What a system and its accelerator rule out together, in one line naming the file of the figure to change."""
    found = catalogue.entries()
    system_path, acc_path = found["systems"][hw.system.id].path, found["accelerators"][hw.accelerator.id].path
    ranks, domain = hw.system.ranks_per_domain, hw.domain_gpus
    if ranks is not None and ranks.value > domain:
        raise PerfmodelError(
            f"{system_path}: field 'ranks_per_domain.value': {ranks.value:g} GPUs, more than the {domain} of a "
            f"scale-up domain of {hw.accelerator.id} ({acc_path}); allowed: a whole number from 1 to {domain}"
        )
    if hw.system.scaleup_kind == "mesh" and domain > MAX_MESH_GPUS:
        raise PerfmodelError(
            f"{acc_path}: field 'scaleup_domain_gpus.value': {domain} GPUs in a full mesh (system {hw.system.id} has "
            f"scaleup_kind 'mesh'); allowed on a mesh: a whole number from 1 to {MAX_MESH_GPUS}"
        )
