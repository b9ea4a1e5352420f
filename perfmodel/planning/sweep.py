"""Sweeps: the cross product of models x systems x precisions x cluster sizes x what-ifs, one row per point.

A sweep file is TOML with one [sweep] table:

    [sweep]
    base = "../scenarios/default.toml"    # optional scenario file (relative to this file); default: built-in
    models = ["llama3.1-70b", "ours.toml"]    # zoo ids or model files (relative to this file)
    gpus = ["h100-sxm", "gb200-nvl72"]    # accelerator or system ids
    precisions = ["fp8", "bf16"]
    n_gpus = [512, 1024]
    whatifs = [{}, { nvlink_gbps = "x2" }, { hbm_tbps = "x1.5", nic_gbps = 800 }]
    [sweep.set]                           # optional scenario keys for every point (files relative to this file)
    tokens = 15e12
    parallelism = { seq_len = 8192 }

Every list is optional (the base scenario's value is used). Each point is a scenario built by `load_scenario` and
predicted with `predict` (its layout searched where open). A point that cannot run (the model does not fit, the GPU
lacks the precision) becomes a row with its `error`; a malformed sweep file stops everything with one line.
Points run in parallel processes (`jobs`) or as Ray tasks (`executor="ray"`), each a plain-data `Point`
(planning/workers.py).

A [sweep.layouts] table of layout axes makes the file a layouts sweep (planning/layout_sweep.py): every point above
crossed with every combination of the given layouts, priced as arrays, up to 1,000,000 points.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfmodel.errors import PerfmodelError, shown, unknown_key
from perfmodel.planning.request import RENTING, PurchaseRead
from perfmodel.planning.workers import spread

AXES = {"models": "model", "gpus": None, "precisions": "precision", "n_gpus": "n_gpus"}
SWEEP_KEYS = ("base", *AXES, "whatifs", "set", "layouts")
MAX_POINTS = 10_000
"""Checking a point takes ~0.5 ms and predicting one 0.05-2 s: 10,000 points are minutes to hours of work; a bigger
cross product is more likely a mistake than a plan, and is refused before any point is built. A layouts sweep, priced
as arrays, takes up to layout_sweep.MAX_LAYOUT_POINTS."""
IDENTITY = ("model", "accelerator", "system", "precision", "n_gpus")
"""What a row that cannot run still says about its point."""


@dataclass(frozen=True)
class Point:
    """One point of a sweep as plain data, so that it travels to worker processes and Ray tasks."""

    base: str | None
    overrides: Mapping[str, Any]
    gpu: str | None = None
    system: str | None = None
    settings: tuple[str, ...] = field(default=())
    origins: Mapping[str, str] = field(default_factory=dict)
    """The sweep list each axis override comes from (model: sweep.models), for error messages."""

    @property
    def whatif(self) -> str:
        return " ".join(self.settings) or "datasheet"

    def scenario(self) -> Any:
        """The point's scenario: the base with the overrides and, when the point names hardware, exactly it (a
        hardware override replaces the base's)."""
        from perfmodel.inputs.scenario import load_scenario

        named = {"gpu": self.gpu} if self.gpu else {"system": self.system} if self.system else {}
        origins = {k: f"sweep.set.{k}" for k in self.overrides} | dict(self.origins)
        origins |= dict.fromkeys(named, "sweep.gpus")
        return load_scenario(self.base, {**self.overrides, **named}, origins)


def _list(sweep: Mapping[str, Any], key: str, path: Path) -> list[Any]:
    values = sweep.get(key, [None])
    if not isinstance(values, list) or not values:
        raise PerfmodelError(f"{path}: field 'sweep.{key}' must be a non-empty list")
    return values


def _model_file(model: Any, path: Path) -> Any:
    """A model file in sweep.models is found next to the sweep file, as its `base` is (a zoo id stays as it is)."""
    if isinstance(model, str) and model.endswith(".toml") and not Path(model).is_absolute():
        return str((path.parent / model).resolve())
    return model


def load_points(path: str | Path, purchase_read: PurchaseRead = RENTING) -> list[Point]:
    """Every point of a sweep file of points (no [sweep.layouts]), each checked to be a valid scenario (a purchase
    key renting counts where the question reads it, `purchase_read`: an export's)."""
    loaded = load(path, purchase_read)
    if not isinstance(loaded, list):
        raise PerfmodelError(
            f"{loaded.path}: field 'sweep.layouts': this command takes a sweep of points; a layouts sweep runs "
            "with perfmodel sweep"
        )
    return loaded


def load(path: str | Path, purchase_read: PurchaseRead = RENTING) -> Any:
    """A sweep file's points, or its LayoutSweep (planning.layout_sweep) when it has a [sweep.layouts] table; every
    point checked to be a valid scenario (one line naming the problem if not; a purchase key renting is one unless
    the question reads it, `purchase_read`)."""
    from perfmodel.inputs.files import check_path, other_kind, remember
    from perfmodel.inputs.resources import bundled_file
    from perfmodel.inputs.scenario import calibration_beside, flatten, read_toml, single_phase
    from perfmodel.planning import layout_sweep
    from perfmodel.planning.compare import Target, parse_target
    from perfmodel.planning.request import check_whole_nodes
    from perfmodel.planning.whatif import parse_setting

    path = bundled_file(path, "sweeps")
    raw = read_toml(path, "sweep")
    sweep = raw.get("sweep")
    if set(raw) != {"sweep"} or not isinstance(sweep, dict):
        raise PerfmodelError(
            f"{path}: a sweep file has one [sweep] table (keys: {', '.join(SWEEP_KEYS)}){other_kind(raw, 'sweep')}"
        )
    unknown = sorted(set(sweep) - set(SWEEP_KEYS))
    if unknown:
        raise PerfmodelError(f"{path}: field 'sweep.{unknown[0]}': {unknown_key(unknown[0], SWEEP_KEYS)}")
    if not isinstance(sweep.get("base", ""), str) or not isinstance(sweep.get("set", {}), dict):
        raise PerfmodelError(f"{path}: 'sweep.base' must be a file name and [sweep.set] a table of scenario keys")
    named = check_path(sweep["base"], f"{path}: field 'sweep.base'") if sweep.get("base") else None
    base = str((path.parent / named).resolve()) if named else None
    common = flatten(sweep.get("set", {}))
    if "calibration" in common:  # relative to this file, as its base is
        common["calibration"] = calibration_beside(path, common["calibration"])
    if "model" in common:
        common["model"] = _model_file(common["model"], path)
    whatifs = []
    for entry in _list(sweep, "whatifs", path):
        if entry is not None and not isinstance(entry, dict):
            raise PerfmodelError(f"{path}: field 'sweep.whatifs': each entry is a table such as {{nvlink_gbps = 'x2'}}")
        settings = tuple(f"{k}={v}" for k, v in (entry or {}).items())
        for text in settings:
            try:
                parse_setting(text)
            except PerfmodelError as exc:
                raise PerfmodelError(f"{path}: sweep.whatifs: {exc}") from None
        whatifs.append(settings)
    axes = [_list(sweep, axis, path) for axis in AXES]
    models = list(AXES).index("models")
    axes[models] = [_model_file(model, path) for model in axes[models]]
    count = math.prod(len(values) for values in axes) * len(whatifs)
    sizes = " x ".join(str(len(values)) for values in [*axes, whatifs])
    layouts = layout_sweep.layout_axes(path, sweep["layouts"]) if "layouts" in sweep else None
    if layouts is None and count > MAX_POINTS:
        raise PerfmodelError(
            f"{path}: field 'sweep': {count:,} points ({' x '.join([*AXES, 'whatifs'])} = {sizes}); at most "
            f"{MAX_POINTS:,} per sweep file (or {layout_sweep.MAX_LAYOUT_POINTS:,} in a sweep of given layouts, "
            "[sweep.layouts]): split it"
        )
    if layouts is not None:
        layout_sweep.check_count(path, count, sizes, layouts)
    points = []
    for model, gpu, precision, n_gpus, settings in itertools.product(*axes, whatifs):
        overrides = dict(common)
        chosen = (("model", model, "models"), ("precision", precision, "precisions"), ("n_gpus", n_gpus, "n_gpus"))
        overrides |= {k: v for k, v, _ in chosen if v is not None}
        origins = {k: f"sweep.{axis}" for k, v, axis in chosen if v is not None}
        target = Target(None, None, None)
        if gpu is not None:
            target = parse_target(str(gpu), f"{path}: sweep.gpus: '{shown(str(gpu))}'")  # the entry, not a flag
            # compare's `@N` and `:PRECISION` would be dropped here: the sweep crosses its own lists
            given = {("GPU count", "n_gpus"): target.n_gpus, ("precision", "precisions"): target.precision}
            dropped = next((names for names, value in given.items() if value is not None), None)
            if dropped:
                raise PerfmodelError(
                    f"{path}: sweep.gpus: '{shown(str(gpu))}': a sweep takes the {dropped[0]} from its list, "
                    f"sweep.{dropped[1]}, crossed with every GPU; give the GPU alone (or with its ':$PRICE')"
                )
        if target.usd_per_gpu_hour is not None:  # the point's own quote
            overrides["cost.usd_per_gpu_hour"] = target.usd_per_gpu_hour
            origins["cost.usd_per_gpu_hour"] = "sweep.gpus"
        point = Point(base, overrides, target.gpu, target.system, settings, origins)
        try:
            scenario = point.scenario()
            single_phase(scenario, "a sweep", "sweep one-phase scenarios; compare or plan the campaign instead")
            if n_gpus is not None:
                check_whole_nodes(scenario, "sweep.n_gpus")
            check_owning_point(scenario, base, overrides, purchase_read)
        except PerfmodelError as exc:
            raise PerfmodelError(f"{path}: {exc}") from None
        if scenario.calibration and scenario.calibration.lower() != "none":
            remember(scenario.calibration)  # read by the workers: still an input that --out must not replace
        points.append(point)
    return points if layouts is None else layout_sweep.LayoutSweep.checked(path, tuple(points), layouts)


def check_owning_point(
    scenario: Any, base: str | None, overrides: Mapping[str, Any], purchase_read: PurchaseRead
) -> None:
    """A point that rents with a purchase key ([sweep.set] cost = {utilisation = 0.5}, or its base file's) priced
    nothing and said nothing: refused as load_request refuses it, naming the key in [sweep.set], else the base's,
    unless the question reads it (`purchase_read`: an export's)."""
    from perfmodel.inputs.record import given

    named = purchase_read.unread(scenario.cost, overrides)
    where = f"field 'sweep.set.{named}'"
    if named is None:
        named = purchase_read.unread(scenario.cost, (f"cost.{name}" for name in sorted(given(scenario.cost))))
        where = f"{base}: field '{named}'"
    if named is not None:
        raise PerfmodelError(f"{where}: prices owning the systems; it needs cost.mode = \"buy\" (in [sweep.set] or "
                             "the base); renting, the price is per GPU-hour: cost.usd_per_gpu_hour")  # fmt: skip


def point_hardware(point: Point, scenario: Any) -> Any:
    """The point's hardware: its scenario's, with the point's what-if settings applied."""
    from perfmodel.inputs.hardware import resolve
    from perfmodel.planning.whatif import apply, parse_setting

    return apply(resolve(scenario.gpu, scenario.system), [parse_setting(s) for s in point.settings])


def predict_point(point: Point) -> Any:
    """The point's Prediction (perfmodel.planning.predict.Prediction): its scenario on its (what-if) hardware."""
    from perfmodel.planning.predict import predict

    scenario = point.scenario()
    return predict(scenario, hardware=point_hardware(point, scenario))


def run_point(point: Point) -> dict[str, Any]:
    """One point's row: the prediction's flat record (`Prediction.to_record`, the one output schema) with the
    point's `whatif` and an empty `error`; a request that cannot run becomes its identity and its `error`."""
    try:
        prediction = predict_point(point)
    except PerfmodelError as exc:
        known = {"accelerator": point.gpu, "system": point.system} | dict(point.overrides)
        return {key: known.get(key) for key in IDENTITY} | {"whatif": point.whatif, "error": " ".join(str(exc).split())}
    return prediction.to_record() | {"whatif": point.whatif, "error": None}


def run(
    points: Sequence[Point],
    jobs: int = 1,
    executor: str = "local",
    address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Every point's row, in the order of `points`."""
    results = spread(run_point, points, jobs, executor, address)
    rows: list[dict[str, Any] | None] = [None] * len(points)
    for done, (i, row) in enumerate(results, 1):
        rows[i] = row
        if progress is not None:
            progress(done, len(points))
    return [row for row in rows if row is not None]
