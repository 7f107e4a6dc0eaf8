"""The case-status policy: whether a case is normative or implementation-defined.

The kernel computes the readings of the ambiguity catalogue
(:func:`qdq_conformance.reference.readings.readings`); this module decides what they mean for a case:
- a normative case whose answer changes under another reading of a catalogued entry is implementation-defined,
  naming the entry (the first such entry, in catalogue-computation order), never normative by accident;
- an implementation-defined case keeps the entry its template names;
- the case carries the readings of every entry that changes its answer (its own entry's always: the kernel's
  reading alone when the entry's question does not arise for the case's inputs), so the runner can tell which
  reading a backend follows, or that it follows none.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qdq_conformance.ambiguities import Reading
from qdq_conformance.compare import compare
from qdq_conformance.domain import CaseStatus
from qdq_conformance.reference.readings import kernel_reading, readings


def changes_answer(r: Reading, outputs: Sequence[np.ndarray]) -> bool:
    """Does reading ``r`` give another answer than the kernel's ``outputs`` (a rejection, a free element, or
    different values)?"""
    if r.outputs is None:
        return True
    if r.judged is not None and any(m is not None and not m.all() for m in r.judged):
        return True
    return len(r.outputs) != len(outputs) or any(compare(e, a) is not None
                                                  for e, a in zip(outputs, r.outputs, strict=False))


def catalogue_readings(domain: str, op: str, version: int, inputs: Sequence[np.ndarray | None],
                       attrs: dict[str, int], outputs: Sequence[np.ndarray],
                       ambiguity: str | None) -> list[Reading]:
    """The catalogue's readings for a case's node: every entry whose question arises, the entries asked only
    of a case that names them (its own), and its own entry's kernel reading when its question does not
    arise."""
    found = readings(domain, op, version, inputs, attrs, outputs, (ambiguity,) if ambiguity else ())
    if ambiguity is not None and not any(r.ambiguity == ambiguity for r in found):
        x = inputs[0]
        assert x is not None
        found.append(kernel_reading(op, x, outputs, ambiguity))
    return found


def decide(status: str, declared: str | None, found: Sequence[Reading],
           outputs: Sequence[np.ndarray]) -> tuple[str, str | None, list[Reading]]:
    """(status, ambiguity, readings the case carries) for a normative or implementation-defined case."""
    changing = [a for a in dict.fromkeys(r.ambiguity for r in found)
                if any(changes_answer(r, outputs) for r in found if r.ambiguity == a)]
    entries = ([declared] if declared else []) + [a for a in changing if a != declared]
    if status == CaseStatus.NORMATIVE and changing:
        status, declared = CaseStatus.IMPLEMENTATION_DEFINED.value, changing[0]
        entries = changing
    if status != CaseStatus.IMPLEMENTATION_DEFINED:
        return status, declared, []
    kept = [r for a in entries for r in found if r.ambiguity == a]
    return status, declared, kept


def declared_entry(domain: str, op: str, version: int, x_shape: Sequence[int],
                   scale_shape: Sequence[int] | None, zp_shape: Sequence[int] | None,
                   attrs: dict[str, int]) -> str | None:
    """The catalogue entry a case of this node configuration names, as the corpus's case files name them: the
    questions about which models are valid, which no input value raises, so that the kernel computes their
    readings only for a case that asks (``reference.readings``). None: the status policy decides alone."""
    if op == "DynamicQuantizeLinear" or scale_shape is None:
        return None
    scale, zp, x = tuple(scale_shape), None if zp_shape is None else tuple(zp_shape), tuple(x_shape)
    if zp is not None and {scale, zp} == {(), (1,)}:
        return "scalar-one-element-shapes"
    if domain == "com.microsoft" and op == "QuantizeLinear" and zp is None:
        return "ms-default-output"
    if scale == (1,):
        if domain == "ai.onnx" and version == 10:
            return "v10-one-element-scale"
        if domain == "com.microsoft" and "axis" not in attrs:
            return "ms-one-element-no-axis"
        axis, rank = attrs.get("axis", 1), len(x)
        if domain == "ai.onnx" and (not -rank <= axis < rank or x[axis % rank] != 1):
            return "one-element-scale"
    if (domain == "ai.onnx" and version >= 13 and len(x) == 1 and len(scale) == 1 and "axis" not in attrs
            and scale[0] == x[0] != 1):
        return "rank1-axis"
    block = attrs.get("block_size", 0)
    if block > 0 and len(scale) == len(x) > 0:
        axis = attrs.get("axis", 1) % len(x)
        if x[axis] == 0:
            return "block-size-empty-axis"
        if scale[axis] == 1 and block != x[axis]:
            return "block-size-si-1"
    return None
