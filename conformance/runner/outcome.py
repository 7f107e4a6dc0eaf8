"""From what a backend did to a status, following the case's status and comparison rule.

Statuses: passed, failed (wrong values, shape or type), unsupported (declined as not implemented: a skip),
error (accepted the model, then raised; or refused a valid model), crashed, timeout, invalid-accepted (ran a
model that must be rejected), implementation-defined (the case depends on an ambiguity-catalogue entry and the
backend followed one of its readings, named in ``reading``). An implementation-defined case whose output matches
none of the catalogued readings is failed (a rejection no reading allows: error), like a normative one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..compare import Mismatch, compare
from ..types import by_dtype
from .isolation import RawResult

FAILING = ("failed", "error", "crashed", "timeout", "invalid-accepted")
STATUSES = ("passed", "unsupported", "implementation-defined", *FAILING)


@dataclass
class Outcome:
    status: str
    message: str = ""
    seconds: float = 0.0
    actual: list[np.ndarray] | None = None
    mismatches: list[tuple[int, Mismatch]] = field(default_factory=list)
    behaviour: str | None = None  # implementation-defined: what the backend did
    reading: str | None = None  # implementation-defined: "entry:reading" the backend follows (None: none)

    def summary(self) -> dict[str, Any]:
        return {
            "mismatches": [
                {"output": k, "reason": m.reason, "count": m.count, "total": m.total,
                 "first_indices": [list(i) for i in m.indices[:5]], "max_ulp": m.max_ulp}
                for k, m in self.mismatches
            ],
        }


def _check_outputs(expected: Sequence[np.ndarray], actual: list[np.ndarray], ulp: int,
                   judged: Sequence[np.ndarray | None] | None = None) -> list[tuple[int, Mismatch]]:
    """Mismatches per output; ``judged`` masks the elements compared (a reading that leaves some free)."""
    if len(actual) != len(expected):
        return [(0, Mismatch(f"{len(actual)} outputs, expected {len(expected)}"))]
    out = []
    for k, (e, a) in enumerate(zip(expected, actual, strict=True)):
        mask = judged[k] if judged is not None else None
        if mask is not None and a.dtype == e.dtype and a.shape == e.shape:
            a = a.copy()
            a[~mask] = e[~mask]  # free elements: anything goes
        try:
            by_dtype(a.dtype)
        except KeyError:
            out.append((k, Mismatch(f"element type differs: expected {by_dtype(e.dtype).name}, got numpy {a.dtype}")))
            continue
        m = compare(e, a, ulp)
        if m:
            out.append((k, m))
    return out


def classify(raw: RawResult, *, status: str, expected: list[np.ndarray] | None, ulp: int = 0,
             readings: Sequence[Any] = ()) -> Outcome:
    """The outcome of one case: ``status`` is the case's (normative, implementation-defined or invalid);
    ``readings``: an implementation-defined case's catalogued readings (``reference.readings.Reading``)."""
    base = {"seconds": raw.seconds}
    if raw.kind in ("crashed", "timeout"):
        return Outcome(raw.kind, raw.message, **base)
    if raw.kind == "not-applicable":  # the adapter could not hand the case over: nothing is known of the backend
        return Outcome("unsupported", raw.message, **base)
    if status == "invalid":
        if raw.kind == "ok":
            return Outcome("invalid-accepted", "the backend ran a model that must be rejected", actual=raw.outputs,
                           **base)
        return Outcome("passed", f"rejected ({raw.kind}): {raw.message}", **base)
    if status == "implementation-defined" and readings:
        return _judge(raw, readings, ulp, raw.seconds)
    if status == "implementation-defined":  # no readings (an exported suite's case): recorded, not judged
        if raw.kind != "ok":
            return Outcome("implementation-defined", raw.message, behaviour=f"{raw.kind}: {raw.message}"[:300],
                           **base)
        assert expected is not None
        mismatches = _check_outputs(expected, raw.outputs, ulp)
        behaviour = "agrees with the kernel's reading" if not mismatches else \
            "differs from the kernel's reading: " + "; ".join(str(m) for _, m in mismatches)
        return Outcome("implementation-defined", behaviour, actual=raw.outputs, mismatches=mismatches,
                       behaviour=behaviour, **base)
    if raw.kind == "unsupported":
        return Outcome("unsupported", raw.message, **base)
    if raw.kind == "rejected":
        return Outcome("error", f"rejected a valid model: {raw.message}", **base)
    if raw.kind == "error":
        return Outcome("error", raw.message, **base)
    assert expected is not None
    mismatches = _check_outputs(expected, raw.outputs, ulp)
    if mismatches:
        return Outcome("failed", "; ".join(f"output {k}: {m}" for k, m in mismatches), actual=raw.outputs,
                       mismatches=mismatches, **base)
    return Outcome("passed", "", actual=raw.outputs, **base)


def _names(readings: Sequence[Any]) -> str:
    return ", ".join(f"{r.ambiguity}:{r.name}" for r in readings)


def _judge(raw: RawResult, readings: Sequence[Any], ulp: int, seconds: float) -> Outcome:
    """An implementation-defined case against its catalogued readings: the first reading the backend's answer
    matches (the kernel's first) is the one it follows; none matching is a failure (a rejection: an error)."""
    if raw.kind == "unsupported":
        return Outcome("unsupported", raw.message, seconds)
    if raw.kind != "ok":
        rejecting = [r for r in readings if r.outputs is None]
        if rejecting:
            name = f"{rejecting[0].ambiguity}:{rejecting[0].name}"
            return Outcome("implementation-defined", f"follows {name} ({raw.kind}: {raw.message})"[:2000], seconds,
                           behaviour=f"follows {name}: {raw.kind}", reading=name)
        return Outcome("error", f"{raw.kind}: {raw.message}; no catalogued reading rejects this model (readings: "
                       f"{_names(readings)})", seconds)
    for r in readings:
        if r.outputs is not None and not _check_outputs(r.outputs, raw.outputs, ulp, r.judged):
            name = f"{r.ambiguity}:{r.name}"
            free = r.judged is not None and any(m is not None and not m.all() for m in r.judged)
            note = " (the elements this reading leaves free are not judged)" if free else ""
            return Outcome("implementation-defined", f"follows {name}{note}", seconds, actual=raw.outputs,
                           behaviour=f"follows {name}", reading=name)
    kernel = next(r for r in readings if r.outputs is not None) if any(r.outputs is not None for r in readings) \
        else None
    mismatches = [] if kernel is None else _check_outputs(kernel.outputs, raw.outputs, ulp, kernel.judged)
    vs = "" if kernel is None else f"; against {kernel.ambiguity}:{kernel.name} (the kernel's): " + "; ".join(
        f"output {k}: {m}" for k, m in mismatches)
    return Outcome("failed", f"matches none of the catalogued readings ({_names(readings)}){vs}", seconds,
                   actual=raw.outputs, mismatches=mismatches, behaviour="follows no catalogued reading")
