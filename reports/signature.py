"""The signature of a failing case: what a person reading the failures would call "the same problem".

For wrong values (status failed, values differ) it is the operator (any version), the type pattern (the class
of the quantized side's element type and whether a zero point is given), granularity, graph form (``both``
when a case fails the same way in both forms: :func:`qdq_conformance.reports.findings.group`), the kind of
mismatch (the other end of the range, off by one, NaN, ...) and the message with its case-specific parts
masked (numbers, type names, node names, source paths, tracebacks). For a backend's own error (error, crashed,
timeout, outputs of the wrong kind, an invalid model accepted) its masked message says what the problem is:
the signature is the operator, graph form, status, the rule an invalid model breaks and the masked message.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import lru_cache

from qdq_conformance.domain import RunStatus
from qdq_conformance.results import CaseRecord
from qdq_conformance.types import TYPES, ElementType

from .casepage import marks

#: a graph case's ``operator`` in its record
GRAPH = "graph"
_TYPE_NAME = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(sorted(TYPES, key=len, reverse=True))
                        + r")(?![A-Za-z0-9_])")
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"'[A-Za-z0-9_.]+(?:-[A-Za-z0-9_.]+){2,}'"), "'<name>'"),  # node / case names
    (re.compile(r"(?:[A-Za-z]:)?(?:[/\\][\w.+-]+)+\.(?:cc|cpp|cxx|h|hpp|c|py)\b(?::\d+)?"), "<source>"),
    (re.compile(r"\[with [^\]]*\]"), "[with ...]"),  # C++ template arguments (one per element type)
    (re.compile(r"0x[0-9a-fA-F]+"), "N"),
    (re.compile(r"(?<![A-Za-z_])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"), "N"),
    (re.compile(r"(?<![\w:])[A-Za-z_:]*?(?:float|int)N\w*", re.IGNORECASE), "<type>"),  # FloatNENMNFN, intN_t
    (re.compile(r"\b-?(?:inf|nan|infinity)\b", re.IGNORECASE), "N"),
    (re.compile(r"\[[N,()\s\[\].]*\]"), "[N]"),  # index lists and shapes of any length
)
_TRACEBACK = re.compile(r"\s*Traceback \(most recent call last\)")
# digits the number mask masks (not those of int8, FLOAT16, _9)
_FREE_NUMBER = re.compile(r"(?<![A-Za-z0-9_])\d+")
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


def mask(rec: CaseRecord) -> str:
    """The message with what differs between cases of one problem masked: numbers, names, the runner's own
    words around a backend's error (``rejected a valid model: ...``, ``error: ...; no catalogued reading
    rejects this model``, which depend on the case's status, not on the problem); a long one keeps its start
    and its end."""
    m = first_part(rec.get("message") or "").replace(rec["id"], "<case>")
    # the numbers the masks below turn into N, as 0: messages that differ only in them share one masking
    return _mask_text(_FREE_NUMBER.sub("0", m))


@lru_cache(maxsize=4096)
def _mask_text(m: str) -> str:
    m = RUNNER_WORDS.sub("", m.split("; no catalogued reading rejects this model")[0])
    m = _TYPE_NAME.sub(lambda t: f"<{type_class(t.group(1))}>", m)
    for pattern, repl in _MASKS:
        m = pattern.sub(repl, m)
    return m if len(m) <= 400 else f"{m[:250]} … {m[-150:]}"


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


def signature(rec: CaseRecord, form: str) -> tuple[str, ...]:
    """(operator, type pattern, granularity, form, status, kind of mismatch, masked message); ``*`` where a
    backend's own error message stands for the problem (see the module's text)."""
    op, kind = f"{rec.get('domain')}::{rec.get('operator')}", mismatch_kind(rec)
    if rec.get("operator") == GRAPH:  # a graph case: grouped by its defect (rewrite or node) and family
        return (op, f"{GRAPH} {rec.get('defect') or '-'}", str(rec.get("family") or "-"), form, rec["status"],
                kind, mask(rec))
    if kind:
        return (op, type_pattern(rec), str(rec.get("granularity") or "-"), form, rec["status"], kind,
                mask(rec))
    rule = (f"rule {rec.get('rule')}: " if rec["status"] == RunStatus.INVALID_ACCEPTED and rec.get("rule")
            else "")
    return (op, "*", "*", form, rec["status"], "", rule + mask(rec))


