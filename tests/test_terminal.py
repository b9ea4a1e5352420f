"""Terminal and text injection (issue 30, class 2): user text reaches every text output with its control characters
shown escaped (errors.visible), never sent to the terminal, and a newline in it never forges a line; ids with control
characters are refused with one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from perfmodel.errors import visible

HOSTILE_NAME = "EVIL\u001b]0;pwned\u0007\u001b[2J\nforged | line\u009b31m\u2028\r"
"""An OSC retitle, a bell, a clear-screen, a newline starting a forged row, a C1 CSI, a Unicode line separator and a
carriage return."""
SHOWN_NAME = r"EVIL\x1b]0;pwned\x07\x1b[2J\nforged | line\x9b31m\u2028\r"
FLAGS = ("--gpus", "64", "--model", "llama3.1-8b")


def _hardware(tmp_path: Path) -> str:
    folder = tmp_path / "hw"
    folder.mkdir()
    escaped = HOSTILE_NAME.encode("unicode_escape").decode().replace("\\x", "\\u00")
    (folder / "evil.toml").write_text(
        f'base = "h100-sxm"\nid = "evil-gpu"\nname = "{escaped}"\ndefault_system = "evil-box"\n'
        f'scaleup_name = "{escaped}"\n'
    )
    (folder / "box.toml").write_text(
        f'base = "dgx-h100"\nid = "evil-box"\naccelerator = "evil-gpu"\nname = "{escaped}"\n'
    )
    return str(folder)


def _only_layout_characters(text: str) -> None:
    """Nothing but printable characters and the output's own line breaks; no line begins with the forged text."""
    assert all(c.isprintable() or c == "\n" for c in text), repr([c for c in text if not c.isprintable()][:5])
    assert not any(line.lstrip().startswith("forged") for line in text.splitlines()), text


SHOWN = SHOWN_NAME[:20]
LATEX = r"EVIL\textbackslash{}x1b]0;pwned"


@pytest.mark.parametrize(
    "args, expected",
    [
        (("predict", "--gpu", "evil-gpu", *FLAGS), SHOWN),
        (("compare", "--gpu", "evil-gpu", "--gpu", "h100-sxm", *FLAGS), "evil-box"),
        (("search", "--gpu", "evil-gpu", *FLAGS, "--top", "2"), SHOWN),
        (("explain", "--gpu", "evil-gpu", *FLAGS), SHOWN),
        (("explain", "--gpu", "evil-gpu", *FLAGS, "--format", "latex"), LATEX),
        (("whatif", "--gpu", "evil-gpu", *FLAGS, "--set", "nic_gbps=x2"), SHOWN),
        (("predict", "--gpu", "evil-gpu", *FLAGS, "--format", "csv"), "evil-box"),
        (("sweep", "{tmp}/sweep.toml", "--jobs", "1", "--format", "csv"), "evil-box"),
        (("hardware", "list"), SHOWN),
        (("hardware", "show", "evil-gpu"), SHOWN),
        (("hardware", "show", "evil-box"), SHOWN),
    ],
    ids=lambda a: " ".join(a[:3]) if isinstance(a, tuple) else "",
)
def test_a_hostile_hardware_name_is_shown_escaped(tmp_path: Path, args: tuple[str, ...], expected: str) -> None:
    (tmp_path / "sweep.toml").write_text('[sweep]\nmodels = ["llama3.1-8b"]\ngpus = ["evil-gpu"]\nn_gpus = [64]\n')
    result = run_cli(*(arg.replace("{tmp}", str(tmp_path)) for arg in args), "--hardware", _hardware(tmp_path))
    assert result.code == 0, result.err
    _only_layout_characters(result.out)
    assert expected in result.out


def test_a_hostile_name_in_an_error_is_one_escaped_line(tmp_path: Path) -> None:
    result = run_cli("predict", "--gpu", "evil-gpu", "--system", "dgx-h100", *FLAGS, "--hardware", _hardware(tmp_path))
    assert result.code == 2 and result.out == ""
    _only_layout_characters(result.err)
    assert result.err.count("\n") == 1


def test_a_hostile_output_file_name_is_refused_escaped(tmp_path: Path) -> None:
    out = tmp_path / "plan\u001b[2J\nforged.csv"
    result = run_cli("export", "predict", "--model", "llama3.1-8b", "--out", str(out))
    assert result.code == 2 and result.out == "" and not out.exists()
    _only_layout_characters(result.err)
    assert "plan\\x1b[2J" in result.err and result.err.count("\n") == 1


@pytest.mark.parametrize("kind", ["accelerator", "system"])
@pytest.mark.parametrize("bad", ["evil\u001b[2J", "two\nlines", "nul\u0000", "csi\u009b", "sep\u2028"])
def test_an_id_with_a_control_character_is_refused(tmp_path: Path, kind: str, bad: str) -> None:
    base = "h100-sxm" if kind == "accelerator" else "dgx-h100"
    escaped = bad.encode("unicode_escape").decode().replace("\\x", "\\u00")
    (tmp_path / "x.toml").write_text(f'base = "{base}"\nid = "{escaped}"\n')
    result = run_cli("hardware", "list", "--hardware", str(tmp_path / "x.toml"))
    assert result.code == 2 and result.out == ""
    assert result.err.startswith(f"error: {tmp_path / 'x.toml'}: field 'id' contains U+"), result.err
    assert "no control characters" in result.err and result.err.count("\n") == 1
    _only_layout_characters(result.err)


def test_visible_escapes_every_non_printable_character_and_keeps_what_it_is_told() -> None:
    assert visible("plain text, ünïcødé, 漢字") == "plain text, ünïcødé, 漢字"
    assert visible("a\u001b[2Jb\nc\td\u2028\u200b") == r"a\x1b[2Jb\nc\td\u2028\u200b"
    assert visible("table\nrow\u001b", keep="\n") == "table\nrow\\x1b"
    for code in range(0x110000):
        c = chr(code)
        if not c.isprintable() and not 0xD800 <= code <= 0xDFFF:
            assert visible(c).isprintable() and visible(c).isascii(), hex(code)


def test_csv_text_cells_are_visible_and_never_formulas() -> None:
    from perfmodel.outputs.cells import csv_cell

    assert csv_cell("EVIL\u001b[2J\nforged") == r"EVIL\x1b[2J\nforged"
    assert csv_cell("\t=cmd\u0007") == r"'\t=cmd\x07"
    assert csv_cell("=1+1") == "'=1+1" and csv_cell("漢字 ok") == "漢字 ok" and csv_cell(1.5) == 1.5
