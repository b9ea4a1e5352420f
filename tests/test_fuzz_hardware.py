"""Fuzzing the hardware reader (issue 30): an accelerator file and a system file, each a bundled part's `base` with
figures replaced by hostile values (zero, negatives, halves, subnormals, 1e300, 400- and 5,000-digit integers, NaN,
text, tables) or the pair's text mutated as tests/test_fuzz_inputs.py mutates scenarios. Whatever comes in,
`perfmodel predict --hardware` answers with finite strict JSON or refuses with exit 2 and one line, never a
traceback, within the bad-input time limit. CI runs a fixed (derandomised) set of a few seconds;
`PERFMODEL_FUZZ_EXAMPLES=2000 pytest tests/test_fuzz_hardware.py` runs a longer campaign.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_inputs import FUZZ, _answered_or_refused, mutated

from perfmodel.inputs import catalogue
from perfmodel.inputs.hardware_check import RANGES

ACCELERATOR = 'id = "fz-gpu"\nbase = "{base}"\ndefault_system = "fz-node"\n'
SYSTEM = 'id = "fz-node"\nbase = "{base}"\naccelerator = "fz-gpu"\n'
PAIRS = [("h100-sxm", "dgx-h100"), ("gb200", "gb200-nvl72"), ("b300", "dgx-b300"), ("mi300x", "mi300x-8")]
HOSTILE = [
    "0", "-1", "-0.0", "0.5", "1", "2", "7", "8", "64", "65", "72", "577", "100000", "1e-300", "5e-324",
    "1e300", "1.7976931348623157e308", "9" * 400, "9" * 5000, "nan", "inf", "-inf", '"8"', '""', "true", "[]", "{}",
]  # fmt: skip


ACCELERATOR_FIGURES = [name for name in RANGES["accelerators"] if name != "year"]  # every figure of both files
SYSTEM_FIGURES = list(RANGES["systems"])


def _line(name: str, value: str) -> str:
    """A figure as a TOML line: `name = { value = ..., source = ... }`, a dotted name in its table inline."""
    return f'{name} = {{ value = {value}, source = "fuzz" }}\n'


@st.composite
def hardware_pair(draw: st.DrawFn) -> tuple[str, str]:
    """An accelerator and a system file with one to three figures set to hostile, random or plausible values."""
    gpu, node = draw(st.sampled_from(PAIRS))
    accelerator, system = ACCELERATOR.format(base=gpu), SYSTEM.format(base=node)
    # answered where the field allows it (domains of hundreds of GPUs, seconds of work each, are
    # tests/test_hardware_limits.py's)
    plausible = st.floats(0.01, 1e5).map(repr) | st.integers(1, 128).map(str)
    numbers = st.floats(allow_nan=False, allow_infinity=False).map(repr) | st.integers(-(10**30), 10**30).map(str)
    for _ in range(draw(st.integers(1, 3))):
        value = draw(st.sampled_from(HOSTILE) | numbers | plausible | plausible)
        if draw(st.booleans()):
            accelerator += _line(draw(st.sampled_from(ACCELERATOR_FIGURES)), value)
        else:
            system += _line(draw(st.sampled_from(SYSTEM_FIGURES)), value)
    return accelerator, system


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-hardware")


def _predict(folder: Path, accelerator: bytes, system: bytes) -> None:
    """Predict on the pair, written to a folder of their own: a process reads a catalogue once (as the CLI does,
    once per run), so each example is a new catalogue."""
    pair = folder / str(len(list(folder.iterdir())))
    pair.mkdir()
    (pair / "gpu.toml").write_bytes(accelerator)
    (pair / "node.toml").write_bytes(system)
    args = ["--system", "fz-node", "--model", "llama3.1-8b", "--gpus", "64", "--gbs", "128"]
    try:
        _answered_or_refused(["predict", "--hardware", str(pair), *args], "json")
    finally:
        catalogue.clear()


@FUZZ
@given(pair=hardware_pair())
def test_any_hardware_figure_is_answered_or_refused_in_one_line(folder: Path, pair: tuple[str, str]) -> None:
    _predict(folder, pair[0].encode(), pair[1].encode())


@FUZZ
@given(
    accelerator=mutated(ACCELERATOR.format(base="h100-sxm") + _line("bf16_tflops", "989.4")),
    system=mutated(SYSTEM.format(base="dgx-h100") + "[fabric]\n" + _line("oversubscription", "2.0")),
)
def test_any_hardware_text_is_answered_or_refused_in_one_line(folder: Path, accelerator: bytes, system: bytes) -> None:
    _predict(folder, accelerator, system)
