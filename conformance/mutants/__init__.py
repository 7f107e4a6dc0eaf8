"""The mutant zoo: deliberately wrong implementations of the quantization operators, each the reference kernel
with one shortcut a real backend might take, run as backends (``--backend mutant:ID``) to measure how many of
them the corpus catches (``qdq-conformance mutants``).
"""

from __future__ import annotations

from . import (  # noqa: F401  (each registers its mutants)
    around,
    dequant,
    division,
    dynamic_mutants,
    floats,
    fused,
    history_rewrites,
    integer,
    layout_mutants,
    rewrites,
    scales,
    tables,
)
from .mutant import REGISTRY, Mutant, MutantBackend

__all__ = ["REGISTRY", "Mutant", "MutantBackend", "backend", "names"]


#: The zoo's order: the modules in the order of the computation.
ORDER = ("integer", "division", "floats", "dequant", "scales", "layout_mutants", "dynamic_mutants",
         "rewrites", "history_rewrites", "around", "fused", "tables")


def names() -> list[str]:
    """Every mutant id, module by module in :data:`ORDER`, each module's in registration order."""
    def module(mutant_id: str) -> int:
        m = REGISTRY[mutant_id]
        name = (m.rewrite or m.steps).__module__.rsplit(".", 1)[-1]
        return ORDER.index(name) if name in ORDER else len(ORDER)
    return sorted(REGISTRY, key=module)  # stable: registration order within a module


def backend(mutant_id: str) -> MutantBackend:
    """The backend running mutant ``mutant_id`` (ValueError naming the known ones otherwise)."""
    if mutant_id not in REGISTRY:
        raise ValueError(f"unknown mutant {mutant_id!r}; known: {', '.join(REGISTRY)}")
    return MutantBackend(REGISTRY[mutant_id])
