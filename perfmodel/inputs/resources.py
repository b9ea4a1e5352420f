"""Where the bundled data lives: next to the package in a wheel, at the repository root in a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


def data_dir(name: str) -> Path:
    """`hardware_specs`, `scenarios` or another top-level data folder shipped with perfmodel."""
    bundled = _PACKAGE / "_bundled" / name
    return bundled if bundled.is_dir() else _PACKAGE.parent / name
