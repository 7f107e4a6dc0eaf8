"""From what a backend did to a run status (``domain.RunStatus``), following the case status and comparison
rule.

Statuses: passed, failed (wrong values, shape or type), unsupported (declined as not implemented: a skip),
error (accepted the model, then raised; or refused a valid model), crashed, timeout, invalid-accepted (ran a
model that must be rejected), implementation-defined (the case depends on an ambiguity-catalogue entry and the
backend followed one of its readings, named in ``reading``), harness-error (this tool's own code raised:
whatever the case, nothing is known of the backend). An implementation-defined case whose output matches none
of the catalogued readings is failed (a rejection no reading allows: error), like a normative one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ambiguities import Reading
from ..compare import Bounds, Mismatch, compare
from ..domain import CaseStatus, RunStatus
from ..results.records import MismatchRecord
from .outputs import Opaque, RawResult, describe, expected_outputs


@dataclass
class Structural(Mismatch):
    """Outputs of the wrong kind, element type, shape or count (nothing compared element by element);
    ``subject`` names the output ("output y"), empty for the list of outputs as a whole."""

    subject: str = ""


@dataclass
class Outcome:
    """How one case ended: its :class:`RunStatus` (kept as its plain string value: an outcome's status travels
    to pytest-xdist's controller, whose serializer takes no ``str`` subclass), what to say, and what to
    show."""

    status: str
    message: str = ""
    seconds: float = 0.0
    actual: list[Any] | None = None  # arrays, or outputs.Opaque for what was not one (None: not needed)
    mismatches: list[tuple[int, Mismatch]] = field(default_factory=list)
    behaviour: str | None = None  # implementation-defined: what the backend did
    reading: str | None = None  # implementation-defined: "entry:reading" the backend follows (None: none)

    def __post_init__(self) -> None:
        self.status = RunStatus(self.status).value

    def mismatch_records(self) -> list[MismatchRecord]:
        """The record's ``mismatches``: per output, why, how many elements of how many, where the first
        are."""
        return [{"output": k, "reason": m.reason, "count": m.count, "total": m.total,
                 "first_indices": [list(i) for i in m.indices[:5]], "max_ulp": m.max_ulp}
                for k, m in self.mismatches]


def explain(mismatches: Sequence[tuple[int, Mismatch]]) -> str:
    """One clause per mismatch: ``output 0: values differ ...``, ``output y: expected int8 [2,3], got
    ...``."""
    return "; ".join((f"{m.subject}: {m}" if m.subject else str(m)) if isinstance(m, Structural)
                     else f"output {k}: {m}" for k, m in mismatches)


def _check_outputs(expected: Sequence[np.ndarray], raw: RawResult, ulp: int,
                   judged: Sequence[np.ndarray | None] | None = None,
                   names: Sequence[str] = (),
                   bounds: Sequence[Bounds | None] | None = None) -> list[tuple[int, Mismatch]]:
    """Mismatches per output; ``judged`` masks the elements compared (a reading that leaves some free);
    ``names``: the outputs' names, for the messages; ``bounds``: per output its interval (the ``interval``
    rule), or None."""
    actual = raw.outputs
    if raw.returned is not None or len(actual) != len(expected):
        got = raw.returned if raw.returned is not None else \
            f"{len(actual)}" + (f" ({', '.join(describe(a) for a in actual[:4])})" if actual else "")
        return [(0, Structural(f"expected {expected_outputs(expected, names)}, got {got}"))]
    out: list[tuple[int, Mismatch]] = []
    for k, (e, a) in enumerate(zip(expected, actual, strict=True)):
        if isinstance(a, Opaque) or a.dtype != e.dtype or a.shape != e.shape:
            name = names[k] if k < len(names) else str(k)
            out.append((k,
                        Structural(f"expected {describe(e)}, got {describe(a)}", subject=f"output {name}")))
            continue
        mask = judged[k] if judged is not None else None
        if mask is not None:
            a = a.copy()
            a[~mask] = e[~mask]  # free elements: anything goes
        m = compare(e, a, ulp, bounds[k] if bounds is not None and k < len(bounds) else None)
        if m:
            out.append((k, m))
    return out


def classify(raw: RawResult, *, case_status: str, expected: list[np.ndarray] | None, ulp: int = 0,
             readings: Sequence[Reading] = (), names: Sequence[str] = (),
             bounds: Sequence[Bounds | None] | None = None) -> Outcome:
    """The outcome of one case: ``case_status`` is the case's :class:`CaseStatus` (normative,
    implementation-defined or invalid);
    ``readings``: an implementation-defined case's catalogued readings;
    ``names``: the model's output names (for the messages);
    ``bounds``: per output, the interval of acceptable values (a graph case around a compute op), or None."""
    if raw.kind in (RunStatus.CRASHED, RunStatus.TIMEOUT, RunStatus.HARNESS_ERROR):
        return Outcome(raw.kind, raw.message, seconds=raw.seconds)
    # the adapter could not hand the case over: nothing is known of the backend
    if raw.kind == "not-applicable":
        return Outcome(RunStatus.UNSUPPORTED, raw.message, seconds=raw.seconds)
    if case_status == CaseStatus.INVALID:
        if raw.kind == "ok":
            return Outcome(RunStatus.INVALID_ACCEPTED, "the backend ran a model that must be rejected",
                           actual=raw.outputs, seconds=raw.seconds)
        return Outcome(RunStatus.PASSED, f"rejected ({raw.kind}): {raw.message}", seconds=raw.seconds)
    if case_status == CaseStatus.IMPLEMENTATION_DEFINED:
        return _judge(raw, readings, ulp, raw.seconds, names)
    if raw.kind == "unsupported":
        return Outcome(RunStatus.UNSUPPORTED, raw.message, seconds=raw.seconds)
    if raw.kind == "rejected":
        return Outcome(RunStatus.ERROR, f"rejected a valid model: {raw.message}", seconds=raw.seconds)
    if raw.kind == "error":
        return Outcome(RunStatus.ERROR, raw.message, seconds=raw.seconds)
    assert expected is not None
    mismatches = _check_outputs(expected, raw, ulp, names=names, bounds=bounds)
    if mismatches:
        return Outcome(RunStatus.FAILED, explain(mismatches), actual=raw.outputs, mismatches=mismatches,
                       seconds=raw.seconds)
    return Outcome(RunStatus.PASSED, "", actual=raw.outputs, seconds=raw.seconds)


def _names(readings: Sequence[Reading]) -> str:
    return ", ".join(r.key for r in readings)


def _judge(raw: RawResult, readings: Sequence[Reading], ulp: int, seconds: float,
           names: Sequence[str] = ()) -> Outcome:
    """An implementation-defined case against its catalogued readings: the first reading the backend's answer
    matches (the kernel's first) is the one it follows; none matching is a failure (a rejection: an error). A
    case that carries no reading cannot be judged: an error of the case, never a pass."""
    if not readings:
        return Outcome(RunStatus.ERROR,
                       "an implementation-defined case that carries no catalogued reading cannot be "
                       f"judged (the backend's answer: {raw.kind})", seconds)
    if raw.kind == "unsupported":
        return Outcome(RunStatus.UNSUPPORTED, raw.message, seconds)
    if raw.kind != "ok":
        rejecting = [r for r in readings if r.outputs is None]
        if rejecting:
            name = rejecting[0].key
            return Outcome(RunStatus.IMPLEMENTATION_DEFINED,
                           f"follows {name} ({raw.kind}: {raw.message})"[:2000], seconds,
                           behaviour=f"follows {name}: {raw.kind}", reading=name)
        return Outcome(RunStatus.ERROR,
                       f"{raw.kind}: {raw.message}; no catalogued reading rejects this model (readings: "
                       f"{_names(readings)})", seconds)
    for r in readings:
        if r.outputs is not None and not _check_outputs(r.outputs, raw, ulp, r.judged):
            name = r.key
            free = r.judged is not None and any(m is not None and not m.all() for m in r.judged)
            note = " (the elements this reading leaves free are not judged)" if free else ""
            return Outcome(RunStatus.IMPLEMENTATION_DEFINED, f"follows {name}{note}", seconds,
                           actual=raw.outputs, behaviour=f"follows {name}", reading=name)
    kernel = next((r for r in readings if r.outputs is not None), None)
    mismatches = [] if kernel is None or kernel.outputs is None else \
        _check_outputs(kernel.outputs, raw, ulp, kernel.judged, names)
    vs = "" if kernel is None else f"; against {kernel.key} (the kernel's): " + explain(mismatches)
    return Outcome(RunStatus.FAILED, f"matches none of the catalogued readings ({_names(readings)}){vs}",
                   seconds, actual=raw.outputs, mismatches=mismatches,
                   behaviour="follows no catalogued reading")
