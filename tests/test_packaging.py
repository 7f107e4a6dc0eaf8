"""The wheel ships every package of the repository's stage folders (pyproject lists them explicitly, under one
namespace), so a new subpackage cannot be left out of an installed tool."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_python_package_is_listed_in_pyproject():
    tomllib = pytest.importorskip("tomllib")  # (Python 3.11+)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapped = {folder: name for name, folder in config["package-dir"].items()}
    found = set()
    for folder, name in mapped.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([name, *rel.parts]))
    assert (found - listed
            == set()), f"packages missing from pyproject's [tool.setuptools] packages: {found - listed}"
    assert listed - found == set(), f"listed packages with no folder: {listed - found}"
