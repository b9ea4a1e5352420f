"""Hardware files that break arithmetic or size unbounded work (issue 30, classes 4 and 5): half a GPU, a 1e300
TFLOP/s peak, a 400-digit integer, an integer past Python's 4,300-digit limit, a domain of 100,000 GPUs. Each is
one line naming the file, the field and the allowed range, exit 2, through the CLI and the Python API alike; the
figures at the edges of the documented limits (README "Limits") answer with finite numbers."""

from __future__ import annotations

import dataclasses
import json
import math
import time
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import json_numbers, run_cli

import perfmodel
from perfmodel.errors import PerfmodelError
from perfmodel.inputs.hardware import Accelerator, SourcedPositive, System
from perfmodel.inputs.hardware_check import RANGES
from perfmodel.inputs.record import input_fields

GPU = 'id = "ours-gpu"\nbase = "{base}"\ndefault_system = "ours-node"\n'
NODE = 'id = "ours-node"\nbase = "{base}"\naccelerator = "ours-gpu"\n'
WORKLOAD = ("--model", "llama3.1-8b", "--gpus", "64", "--gbs", "128", "--format", "json")
TIME_LIMIT_S = 10.0
"""The bad-input time limit of tests/test_bad_inputs.py, in CPU seconds (the issue's measure: a 100,000-GPU domain
ran past 12 s of CPU), so that a loaded machine does not fail it: a refusal comes before any work, and the largest
domain allowed (576 GPUs) derives its network tiers in about 4 s."""


def figure(name: str, value: str) -> str:
    return f'{name} = {{ value = {value}, source = "hostile test" }}\n'


def _files(tmp_path: Path, gpu: str = "", node: str = "", mesh: bool = False) -> list[str]:
    """An accelerator file and a system file based on a bundled pair, each with the given lines added."""
    bases = ("mi300x", "mi300x-8") if mesh else ("h100-sxm", "dgx-h100")
    (tmp_path / "gpu.toml").write_text(GPU.format(base=bases[0]) + gpu)
    (tmp_path / "node.toml").write_text(NODE.format(base=bases[1]) + node)
    return ["--hardware", str(tmp_path / "gpu.toml"), "--hardware", str(tmp_path / "node.toml")]


CASES = [
    # (id, accelerator lines, system lines, mesh, the message after the file name)
    ("half-a-gpu-per-node", "", figure("gpus_per_node", "0.5"), False,
     "node.toml: field 'gpus_per_node.value': must be a whole number from 1 to 576, not 0.5"),
    ("half-a-gpu-domain", figure("scaleup_domain_gpus", "0.5"), "", False,
     "gpu.toml: field 'scaleup_domain_gpus.value': must be a whole number from 1 to 576, not 0.5"),
    ("peak-1e300", figure("bf16_tflops", "1e300"), "", False,
     "gpu.toml: field 'bf16_tflops.value': must be a number from 1 to 1e+06, not 1e+300"),
    ("peak-400-digits", figure("fp8_tflops", "9" * 400), "", False,
     "gpu.toml: field 'fp8_tflops.value': must be a number from 1 to 1e+06, not an integer of about 400 digits"),
    ("hbm-5000-digits", figure("hbm_gb", "9" * 5000), "", False,
     "gpu.toml: an integer of more than 4,300 digits; a number must be at most 1e308"),
    ("domain-100000", figure("scaleup_domain_gpus", "100000"), "", False,
     "gpu.toml: field 'scaleup_domain_gpus.value': must be a whole number from 1 to 576, not 100000"),
    ("mesh-domain-576", figure("scaleup_domain_gpus", "576"), "", True,
     "gpu.toml: field 'scaleup_domain_gpus.value': 576 GPUs in a full mesh (system ours-node has scaleup_kind "
     "'mesh'); allowed on a mesh: a whole number from 1 to 64"),
    ("job-share-beyond-domain", "", figure("ranks_per_domain", "16"), False,
     "node.toml: field 'ranks_per_domain.value': 16 GPUs, more than the 8 of a scale-up domain of ours-gpu "
     "({dir}/gpu.toml); allowed: a whole number from 1 to 8"),
    ("leaf-of-half-a-domain", "", "[fabric]\n" + figure("domains_per_leaf", "0.5"), False,
     "node.toml: field 'fabric.domains_per_leaf.value': must be a whole number from 1 to 100000, not 0.5"),
    ("latency-zero", "", "[latency]\n" + figure("nic_us", "0"), False,
     "node.toml: field 'latency.nic_us.value': must be a number from 0.001 to 100000, not 0"),
    ("nics-subnormal", "", figure("nics_per_gpu", "5e-324"), False,
     "node.toml: field 'nics_per_gpu.value': must be a number from 0.01 to 16, not 5e-324"),
    ("power-1e300", figure("power_w", "1e300"), "", False,
     "gpu.toml: field 'power_w.value': must be a number from 1 to 100000, not 1e+300"),
    ("peak-as-text", figure("bf16_tflops", '"1e3"'), "", False,
     "gpu.toml: field 'bf16_tflops.value': must be a number from 1 to 1e+06, not '1e3'"),
    ("peak-as-flag", figure("bf16_tflops", "true"), "", False,
     "gpu.toml: field 'bf16_tflops.value': must be a number from 1 to 1e+06, not true"),
    ("sms-fraction", figure("sms", "131.5"), "", False,
     "gpu.toml: field 'sms.value': must be a whole number from 1 to 100000, not 131.5"),
    ("year-400-digits", "year = " + "9" * 400 + "\n", "", False,
     "gpu.toml: field 'year': must be a whole number from 1990 to 2100, not an integer of about 400 digits"),
    ("usable-beyond-capacity", figure("hbm_usable_gb", "96"), "", False,
     "gpu.toml: field 'hbm_usable_gb.value': 96 GiB usable is more than hbm_gb (80); allowed: at most hbm_gb"),
    ("peer-beyond-aggregate", figure("scaleup_peer_gb_per_s_per_direction", "900"), "", False,
     "gpu.toml: field 'scaleup_peer_gb_per_s_per_direction.value': 900 GB/s to one peer is more than the GPU's "
     "whole scale-up bandwidth; allowed: at most scaleup_gb_per_s_per_direction (450)"),
    ("reference-peak-nan", "[power_reference]\nid = 'x'\n" + figure("power_w", "700") + figure("bf16_tflops", "nan"),
     "", False, "gpu.toml: field 'power_reference.bf16_tflops.value': must be a number from 1 to 1e+06, not nan"),
]  # fmt: skip


@pytest.mark.parametrize(("gpu", "node", "mesh", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_hardware_file_that_breaks_arithmetic_is_one_line(
    tmp_path: Path, gpu: str, node: str, mesh: bool, message: str
) -> None:
    start = time.process_time()
    result = run_cli("predict", *_files(tmp_path, gpu, node, mesh), "--system", "ours-node", *WORKLOAD)
    assert time.process_time() - start < TIME_LIMIT_S
    assert result.code == 2 and result.out == "", result.err
    assert result.err == f"error: {tmp_path}/{message.format(dir=tmp_path)}\n"


@pytest.mark.parametrize(("gpu", "node", "mesh", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_api_refuses_it_with_the_same_line(tmp_path: Path, gpu: str, node: str, mesh: bool, message: str) -> None:
    _files(tmp_path, gpu, node, mesh)
    with pytest.raises(PerfmodelError) as caught:  # the folder holds both files
        perfmodel.predict(hardware=tmp_path, system="ours-node", model="llama3.1-8b", n_gpus=64, gbs=128)
    assert str(caught.value) == f"{tmp_path}/{message.format(dir=tmp_path)}"


@pytest.mark.parametrize(
    ("gpu", "node", "mesh"),
    [
        (figure("scaleup_domain_gpus", "576"), figure("ranks_per_domain", "576"), False),  # the largest switch domain
        (figure("scaleup_domain_gpus", "64"), "", True),  # the largest full mesh
        (figure("bf16_tflops", "1e6") + figure("fp8_tflops", "1e6") + figure("hbm_tbps", "0.01"), "", False),
        (figure("bf16_tflops", "1") + figure("fp8_tflops", "1") + figure("hbm_tbps", "1000"), "", False),
        ("", figure("nics_per_gpu", "0.01") + "[latency]\n" + figure("collective_step_us", "100000"), False),
        ("", figure("gpus_per_node", "1") + "[fabric]\n" + figure("domains_per_leaf", "100000"), False),
    ],
    ids=["switch-576", "mesh-64", "fast-compute-slow-memory", "slow-compute-fast-memory", "slow-network", "wide-leaf"],
)
def test_figures_at_the_limits_answer_with_finite_numbers(tmp_path: Path, gpu: str, node: str, mesh: bool) -> None:
    start = time.process_time()
    result = run_cli("predict", *_files(tmp_path, gpu, node, mesh), "--system", "ours-node", *WORKLOAD)
    assert time.process_time() - start < TIME_LIMIT_S
    assert result.code == 0, result.err
    row = json.loads(result.out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON output"))
    assert row["step_time_s"] > 0 and all(math.isfinite(n) for n in json_numbers(row))


def test_a_what_if_cannot_grow_a_mesh_past_its_limit() -> None:
    """A full mesh's graph grows with the square of its size: domain_gpus=576 on MI300X ran for minutes."""
    start = time.process_time()
    result = run_cli("whatif", "--model", "llama3.1-8b", "--gpu", "mi300x", "--gpus", "64", "--set", "domain_gpus=576")
    assert time.process_time() - start < TIME_LIMIT_S
    assert result.code == 2 and result.out == ""
    assert result.err == "error: --set domain_gpus=576: mi300x-8 is a full mesh; allowed on a mesh: 1 to 64 GPUs\n"


def _figures(cls: type, prefix: str = "") -> Iterator[str]:
    """The dotted names of the positive figures of a record class and of the tables it nests."""
    hints = typing.get_type_hints(cls)
    for f in input_fields(cls):
        for arm in typing.get_args(hints[f.name]) or (hints[f.name],):
            if isinstance(arm, type) and issubclass(arm, SourcedPositive):  # a price too (PriceFigure)
                yield prefix + f.name
            elif dataclasses.is_dataclass(arm) and "value" not in {g.name for g in dataclasses.fields(arm)}:
                yield from _figures(arm, f"{prefix}{f.name}.")  # type: ignore[arg-type]


def test_every_figure_of_a_hardware_file_has_a_range() -> None:
    """A figure added to the records without a range would let a file size unbounded work again."""
    assert set(RANGES["accelerators"]) == {*_figures(Accelerator), "year"}
    assert set(RANGES["systems"]) == set(_figures(System))
