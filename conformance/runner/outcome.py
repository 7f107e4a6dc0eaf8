"""From what a backend did to a status, following the case's status and comparison rule.

Statuses: passed, failed (wrong values, shape or type), unsupported (declined as not implemented: a skip),
error (accepted the model, then raised; or refused a valid model), crashed, timeout, invalid-accepted (ran a
model that must be rejected), implementation-defined (recorded, never a failure).
"""

from __future__ import annotations

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

    def summary(self) -> dict[str, Any]:
        return {
            "mismatches": [
                {"output": k, "reason": m.reason, "count": m.count, "total": m.total,
                 "first_indices": [list(i) for i in m.indices[:5]], "max_ulp": m.max_ulp}
                for k, m in self.mismatches
            ],
        }


def _check_outputs(expected: list[np.ndarray], actual: list[np.ndarray], ulp: int) -> list[tuple[int, Mismatch]]:
    if len(actual) != len(expected):
        return [(0, Mismatch(f"{len(actual)} outputs, expected {len(expected)}"))]
    out = []
    for k, (e, a) in enumerate(zip(expected, actual, strict=True)):
        try:
            by_dtype(a.dtype)
        except KeyError:
            out.append((k, Mismatch(f"element type differs: expected {by_dtype(e.dtype).name}, got numpy {a.dtype}")))
            continue
        m = compare(e, a, ulp)
        if m:
            out.append((k, m))
    return out


def classify(raw: RawResult, *, status: str, expected: list[np.ndarray] | None, ulp: int = 0) -> Outcome:
    """The outcome of one case: ``status`` is the case's (normative, implementation-defined or invalid)."""
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
    if status == "implementation-defined":
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
