"""The signature of a failing case: what a person reading the failures would call "the same problem".

It is the operator (any version), the type pattern (the class of the quantized side's element type and
whether a zero point is given), granularity, graph form (``both`` when a case fails the same way in both
forms: :func:`qdq_conformance.reports.findings.group`), status, the kind of mismatch for wrong values (the
other end of the range, off by one, NaN, ...) and the class of failure (:func:`failure_class`: refused at
load, raised at run, crashed, wrong values, ...). A backend's error message is never part of it: a release
that only rewords an error shows no new finding. A graph case's signature names its defect (rewrite or node)
and family instead of its types.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from qdq_conformance.domain import CaseStatus, RunStatus
from qdq_conformance.results import CaseRecord
from qdq_conformance.types import TYPES, ElementType

from .casepage import marks

#: a graph case's ``operator`` in its record
GRAPH = "graph"
_TRACEBACK = re.compile(r"\s*Traceback \(most recent call last\)")
RUNNER_WORDS = re.compile(r"^(?:rejected a valid model|rejected|error|crashed|timeout): ")


def type_class(name: str | None) -> str:
    """The class of an element type that a type pattern keeps (the concrete type is spanned)."""
    t: ElementType | None = TYPES.get(name or "")
    if t is None:
        return name or "-"
    if t.is_float:
        return {32: "float", 16: "16-bit float", 8: "float8"}.get(t.bits, "float4/6")
    return "sub-byte integer" if t.is_sub_byte else "integer"


def quantized_role(operator: str | None) -> str:
    """The formal of the quantized side: ``x`` of a DequantizeLinear, ``y`` of a QuantizeLinear."""
    return "x" if "Dequantize" in (operator or "") else "y"


def type_pattern(rec: CaseRecord) -> str:
    """``y integer, zero point``: the quantized side's type class, and whether a zero point is given."""
    types = rec.get("types") or {}
    role = quantized_role(rec.get("operator"))
    return f"{role} {type_class(types.get(role))}" + (", zero point" if has_zero_point(types) else "")


def has_zero_point(types: Mapping[str, str | None]) -> bool:
    return any(k.endswith("zero_point") and v for k, v in types.items())


def first_part(message: str) -> str:
    """A message without the traceback a backend's error may carry, its whitespace collapsed."""
    return " ".join(_TRACEBACK.split(message or "", maxsplit=1)[0].split())


def _number(text: object) -> float | None:
    try:
        return float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _element_kind(t: ElementType, e: float, a: float) -> str:
    if t.is_integer:
        bounds = {t.int_min, t.int_max}
        if e in bounds and a in bounds:
            return "wrong saturation bound"
        return "off by one" if abs(e - a) == 1 else "other values"
    if math.isnan(e) != math.isnan(a):
        return "NaN"
    return "infinity" if math.isinf(e) or math.isinf(a) else "other values"


#: the kind a case gets when its elements differ in several ways: the first of these it shows; and how it
#: reads
_KIND_ORDER = ("wrong saturation bound", "NaN", "infinity", "other values", "off by one")
KIND_TEXT = {"wrong saturation bound": "values differ: the other end of the range",
             "off by one": "values differ by one",
             "NaN": "values differ: NaN where a number is expected, or the reverse",
             "infinity": "values differ at an infinity", "other values": "values differ"}


def mismatch_kind(rec: CaseRecord) -> str:
    """How a failed case's values differ, from the previews of its mismatching outputs: ``wrong saturation
    bound`` (one end of the range for the other), ``NaN``, ``infinity``, ``off by one`` (every differing
    element), ``other values``; ``""`` for other statuses and mismatches that are not about values."""
    if rec.get("status") != "failed":
        return ""
    kinds: set[str] = set()
    expected, actual = rec.get("expected") or [], rec.get("actual") or []
    differing = marks(rec)  # (by the verdict's comparison: NaN by class, ULP bound)
    for m in rec.get("mismatches") or ():
        if m.get("reason") != "values differ":
            continue
        k = m.get("output") or 0
        e = expected[k] if k < len(expected) else None
        a = actual[k] if k < len(actual) else None
        t = TYPES.get(e.get("type") or "") if e else None
        if not e or not a or t is None:
            kinds.add("other values")
            continue
        ev, av = e.get("values") or (), a.get("values") or ()
        for j in differing[k] if k < len(differing) else ():  # (over the elements both previews hold)
            x = _number(ev[j]) if j < len(ev) else None
            y = _number(av[j]) if j < len(av) else None
            kinds.add("other values" if x is None or y is None else _element_kind(t, x, y))
            if _KIND_ORDER[0] in kinds:
                return _KIND_ORDER[0]
        if not kinds:  # the differing elements are beyond the preview
            kinds.add("other values")
    return next((k for k in _KIND_ORDER if k in kinds), "")


#: a run's own words at the start of an error's message (``runner/outcome.py``), which say at which stage the
#: backend failed: a refusal when it loaded the model, an exception once it ran it
_REFUSED = ("rejected a valid model: ", "rejected: ", "rejected (")
_NO_READINGS = "an implementation-defined case that carries no catalogued reading"


def failure_class(rec: CaseRecord) -> str:
    """What kind of failure a failing case is, from its status and the runner's own words, never from the
    backend's: ``refused at load`` (a valid model refused when loaded), ``raised at run`` (it loaded the
    model, then raised), ``crashed``, ``timed out``, ``wrong values``, ``wrong outputs`` (of the wrong kind,
    type, shape or count), ``follows no reading of ENTRY`` (an implementation-defined case's values, and its
    catalogue entry), ``accepted an invalid model`` (with the rule it breaks), ``not judged`` (a case that
    carries no reading)."""
    status, message = rec["status"], rec.get("message") or ""
    if status == RunStatus.CRASHED:
        return "crashed"
    if status == RunStatus.TIMEOUT:
        return "timed out"
    if status == RunStatus.INVALID_ACCEPTED:
        return "accepted an invalid model" + (f" (rule {rec.get('rule')})" if rec.get("rule") else "")
    if status == RunStatus.FAILED:
        reasons = {m.get("reason") for m in rec.get("mismatches") or ()}
        if reasons and reasons != {"values differ"}:
            return "wrong outputs"
        if rec.get("case_status") == CaseStatus.IMPLEMENTATION_DEFINED:  # (of its catalogue entry)
            return f"follows no reading of {rec.get('ambiguity') or '-'}"
        return "wrong values"
    if message.startswith(_NO_READINGS):
        return "not judged"
    return "refused at load" if message.startswith(_REFUSED) else "raised at run"


def signature(rec: CaseRecord, form: str) -> tuple[str, ...]:
    """(operator, type pattern, granularity, form, status, kind of mismatch, class of failure): what the
    backend did, classified (:func:`failure_class`), never the wording of its error, so that a release that
    only rewords an error (ONNX Runtime 1.27's ``Fail`` for ``RuntimeException``) makes no new finding."""
    op, kind = f"{rec.get('domain')}::{rec.get('operator')}", mismatch_kind(rec)
    if rec.get("operator") == GRAPH:  # a graph case: grouped by its defect (rewrite or node) and family
        return (op, f"{GRAPH} {rec.get('defect') or '-'}", str(rec.get("family") or "-"), form, rec["status"],
                kind, failure_class(rec))
    return (op, type_pattern(rec), str(rec.get("granularity") or "-"), form, rec["status"], kind,
            failure_class(rec))
