"""The modules of the installed ``qdq_conformance`` namespace and their files, wherever its folders are: the
repository's ``conformance/``, ``generators/`` and ``reports/`` under an editable install (pyproject maps each
folder into the namespace, which tools that look for a ``qdq_conformance`` folder cannot see), site-packages
under a wheel. Used by the import-direction test (test_layers.py) and the type check (typecheck.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

#: The packages whose folders are walked (the subpackages pyproject maps from folders of their own included).
ROOTS = ("qdq_conformance", "qdq_conformance.generators", "qdq_conformance.reports")


def modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package), for every module under :data:`ROOTS`."""
    found: dict[str, tuple[Path, bool]] = {}
    for root in ROOTS:
        spec = importlib.util.find_spec(root)
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(f"{root} is not installed (python -m pip install -e .)")
        for folder in map(Path, spec.submodule_search_locations):
            for f in sorted(folder.rglob("*.py")):
                parts = list(f.relative_to(folder).with_suffix("").parts)
                is_package = parts[-1] == "__init__"
                if is_package:
                    parts = parts[:-1]
                found.setdefault(".".join([root, *parts]), (f, is_package))
    return found
