"""What a mutant is, and the backend that runs one.

A mutant is the reference kernel with exactly one piece swapped for a shortcut a real implementation might
take. The kernel exposes its overridable steps on purpose (:class:`qdq_conformance.reference.steps.Steps`; the
spec's are ``reference.ops.SPEC``): a mutant builds ``dataclasses.replace(SPEC, <step>=<shortcut>)``, and its
backend puts those steps in force (``steps.using``) only while it runs a model. The kernel itself never
changes: the oracle's expected values were computed with the spec's steps, and every other caller in the
process (another thread included) sees the kernel as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import onnx

from .. import __version__, reference
from ..backends.base import Rejected
from ..errors import SpecViolation
from ..reference.graph_oracle import GraphError
from ..reference.ops import SPEC
from ..reference.steps import Steps, using

# dtypes for witnesses
F32, F16, U8, I8, I16, I32 = np.float32, np.float16, np.uint8, np.int8, np.int16, np.int32

#: a graph rewrite: (model, feeds) -> (the rewritten model, its feeds); it may change the model it is given
Rewrite = Callable[[onnx.ModelProto, dict[str, np.ndarray]], tuple[onnx.ModelProto, dict[str, np.ndarray]]]


@dataclass(frozen=True)
class Witness:
    """A small input on which the mutant and the kernel disagree: the proof that the shortcut takes effect,
    and the kind of value, type and granularity a case needs to kill the mutant."""

    op: str
    version: int
    inputs: Sequence[np.ndarray | None]
    attrs: Mapping[str, int]
    #: what is special about it, in words ("a tie at 2.5")
    note: str
    domain: str = "ai.onnx"

    def evaluate(self) -> list[np.ndarray]:
        return reference.evaluate(self.domain, self.op, self.version, list(self.inputs), dict(self.attrs))


@dataclass(frozen=True)
class Mutant:
    """One deliberately wrong implementation."""

    id: str
    #: the shortcut, in one line
    shortcut: str
    #: the spec sentence the shortcut violates
    violates: str
    #: builds the kernel's steps with the shortcut in place (called once per backend)
    steps: Callable[[], Steps]
    #: builds the witness (None only for a proved equivalent mutant)
    witness: Callable[[], Witness | GraphWitness] | None = None
    #: why no input the spec allows tells this mutant from the kernel, for a proved equivalent one
    equivalent: str | None = None
    #: "entry:reading" when the shortcut is a reading of the ambiguity catalogue; wherever it changes the
    #: answer the case is implementation-defined (generators/status.py), so no normative case can kill it
    reading: str | None = None
    #: a graph-rewrite mutant: the optimization it performs on the model (and its feeds) before the kernel
    #: runs it
    rewrite: Rewrite | None = None
    #: the shortcut is to accept models the spec makes invalid (a check left out): an invalid case it runs
    #: (invalid-accepted) kills it, and its witness is a model the kernel refuses and the mutant runs
    accepts_invalid: bool = False

    @property
    def kind(self) -> str:
        """What a verdict expects: "equivalent", "reading", or "defect" (a normative case should kill it)."""
        return "equivalent" if self.equivalent else "reading" if self.reading else "defect"


#: Every mutant, by id, in registration order (the modules of this package register theirs on import).
REGISTRY: dict[str, Mutant] = {}


def mutant(id: str, shortcut: str, violates: str, witness: Callable[[], Witness | GraphWitness] | None = None,
           equivalent: str | None = None, reading: str | None = None, accepts_invalid: bool = False
           ) -> Callable[[Callable[[], Steps]], Callable[[], Steps]]:
    """Decorator registering the steps builder it decorates as mutant ``id``."""
    if (witness is None) == (equivalent is None):
        raise ValueError(f"mutant {id!r}: give a witness, or the proof that it is equivalent (not both)")

    def register(build: Callable[[], Steps]) -> Callable[[], Steps]:
        _register(Mutant(id, shortcut, violates, build, witness, equivalent, reading,
                         accepts_invalid=accepts_invalid))
        return build
    return register


def _register(m: Mutant) -> None:
    if m.id in REGISTRY:
        raise ValueError(f"mutant {m.id!r} is registered twice")
    REGISTRY[m.id] = m


@dataclass(frozen=True)
class GraphWitness:
    """A small graph on which a rewrite mutant and the kernel disagree (the model before the rewrite)."""

    model: Callable[[], onnx.ModelProto]
    feeds: Mapping[str, np.ndarray]
    note: str

    def evaluate(self) -> list[np.ndarray]:
        return reference.run_any(self.model(), dict(self.feeds))


def rewrite_mutant(id: str, shortcut: str, violates: str, witness: Callable[[], GraphWitness]
                   ) -> Callable[[Rewrite], Rewrite]:
    """Decorator registering the graph rewrite it decorates as mutant ``id`` (the kernel's own steps)."""
    def register(rewrite: Rewrite) -> Rewrite:
        _register(Mutant(id, shortcut, violates, lambda: SPEC, witness, None, None, rewrite))
        return rewrite
    return register


class MutantBackend:
    """The reference kernel with one mutant's steps in force while it runs a model (``mutant:ID``)."""

    version = __version__

    def __init__(self, m: Mutant) -> None:
        self.mutant = m
        self.name = f"mutant:{m.id}"
        self.steps = m.steps()

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        if self.mutant.rewrite is not None:  # (on a copy: the caller may keep the model it hands over)
            copy = onnx.ModelProto()
            copy.CopyFrom(model)
            model, feeds = self.mutant.rewrite(copy, dict(feeds))
        with using(self.steps):
            try:
                return reference.run_any(model, feeds)
            except (SpecViolation, GraphError) as e:
                raise Rejected(str(e)) from None

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return (f"{model_code}\nfrom qdq_conformance.mutants import backend\n"
                f"for name, value in zip({output_names!r}, backend({self.mutant.id!r}).run(model, feeds)):\n"
                "    print(name, value.dtype, value)\n")


# Small numeric helpers shared by the mutant modules.

def wrap(v: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Integer-valued float64 ``v`` wrapped into [lo, hi] as two's-complement storage would (non-finite ->
    lo)."""
    span = float(hi - lo + 1)
    with np.errstate(invalid="ignore"):
        w = np.mod(v - lo, span) + lo
    return np.where(np.isfinite(v), w, lo)


def store_int(v: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Integer-valued float64 ``v`` already inside ``dtype``'s range, as ``dtype``."""
    return np.asarray(v, np.float64).astype(np.int64).astype(dtype)


def W(op: str, version: int, note: str, *inputs: np.ndarray | None, domain: str = "ai.onnx",
      **attrs: int) -> Callable[[], Witness]:
    """A witness builder for the :func:`mutant` decorator: ``op`` at ``version`` on ``inputs`` with
    ``attrs``."""
    return lambda: Witness(op, version, inputs, attrs, note, domain)


def a(values: npt.ArrayLike, dtype: npt.DTypeLike) -> np.ndarray:
    """An array of ``values`` as ``dtype`` (ml_dtypes dtypes included), for witnesses."""
    d = np.dtype(dtype)
    if d.name.startswith(("int", "uint")):
        return np.asarray(values, np.int64).astype(d)
    return np.asarray(values, np.float64).astype(np.float32 if d.itemsize < 4 else d).astype(d)
