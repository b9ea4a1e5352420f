"""Where the bundled data lives: next to the package in a wheel, at the repository root in a checkout."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from perfmodel.inputs.files import parse_toml, read_text

_PACKAGE = Path(__file__).resolve().parents[1]


def bundled_file(path: str | Path, folder: str) -> Path:
    """`path` itself, or the bundled file of that name (`mlperf-405b-h100-512` is scenarios/mlperf-405b-h100-512.toml)
    when no such file exists: the ready-made inputs are reachable from an installed wheel too."""
    given = Path(path)
    bundled = bundled_path(folder, given.name)
    return bundled if is_a_name(given) and not given.exists() and bundled.is_file() else given


def bundled_path(folder: str, name: str) -> Path:
    """The bundled file `name` of `folder` ("scenarios", "sweeps"), whether or not it exists: the one place that
    spells a bundled file's name from the name commands take."""
    return data_dir(folder) / f"{name}.toml"


def is_a_name(path: Path) -> bool:
    """Whether `path` can name a bundled file: a bare name, not a .toml file's (a name may hold dots, as
    `llama3.1-8b-1node` does: its "suffix" is no file type)."""
    return path.name == str(path) and path.suffix != ".toml"


def bundled_names(folder: str) -> list[str]:
    return sorted(p.stem for p in data_dir(folder).glob("*.toml"))


def bundled_descriptions(folder: str) -> dict[str, str]:
    """The bundled files of `folder` ("scenarios", "sweeps") by the name commands take, each with its description
    (`perfmodel scenarios list`, and the page's list of scenarios): its `description` key, else the first sentence
    of its leading comment block (a sweep file has no description key)."""
    found = {}
    for name in bundled_names(folder):
        path = bundled_path(folder, name)
        text = read_text(path, folder[:-1], user=False)
        found[name] = parse_toml(path, text).get("description") or _first_sentence(text)
    return found


def _first_sentence(text: str) -> str:
    """The first sentence of a file's leading comment block, which may wrap over several lines: its first line
    alone can stop mid-phrase."""
    comment = []
    for line in text.splitlines():
        if line[:1] != "#":
            break
        comment.append(line[1:].strip())
    joined = " ".join(comment)
    end = joined.find(". ")
    return joined if end < 0 else joined[: end + 1]


@cache
def data_dir(name: str) -> Path:
    """`hardware_specs`, `scenarios` or another top-level data folder shipped with perfmodel."""
    bundled = _PACKAGE / "_bundled" / name
    return bundled if bundled.is_dir() else _PACKAGE.parent / name


def user_folder(kind: str) -> Path:
    """perfmodel's folder of the user's `kind` ("cache" or "config"), by the XDG convention that Linux desktops and
    most clusters follow: $XDG_CACHE_HOME or ~/.cache, $XDG_CONFIG_HOME or ~/.config, then perfmodel/."""
    variable, default = {"cache": ("XDG_CACHE_HOME", "~/.cache"), "config": ("XDG_CONFIG_HOME", "~/.config")}[kind]
    return Path(os.environ.get(variable) or os.path.expanduser(default)) / "perfmodel"
