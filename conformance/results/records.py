"""The records of a results file, typed (:class:`CaseRecord`, :class:`ExpectationRecord`), and what every view
asks of a case record: whether an expectation entry covers how it ended, whether it failed, whether it passed
against its entry, and the status it counts as against its entry (:func:`seen_status`: an implementation-defined
case that follows a catalogued reading has passed, as far as its entry goes; decided here, once)."""

from __future__ import annotations

from typing import Any, TypedDict

from ..domain import FAILING, RunStatus


class ExpectationRecord(TypedDict, total=False):
    """A case record's ``expectation``: the entry in force that matched the case (``expectations.Expectation``)."""

    status: str  # a RunStatus value: failed, error, crashed, timeout, invalid-accepted or unsupported
    reason: str
    link: str | None
    line: int


class ExpectationsStatus(TypedDict, total=False):
    """The header's ``expectations_status``: which expectation entries are in force for the running backend
    version and processor (``runner.expectations.Applicability``), and the sentence that says it."""

    backend: str
    running: str | None  # the backend version that ran
    recorded: list[str]  # the versions the file records, oldest first
    applied: str | None  # the recorded version whose entries are in force
    mode: str  # exact, newer, between, older, unknown, unversioned, none (no file)
    in_force: int
    total: int
    path: str | None
    cpu: dict[str, bool]  # the features the file's entries name: present on this processor?
    other_cpu: int  # entries recorded for another processor (not in force)
    message: str


class MismatchRecord(TypedDict, total=False):
    """One output's mismatch in a case record's ``mismatches``."""

    output: int
    reason: str
    count: int
    total: int
    first_indices: list[list[int]]  # the first (up to 5) indices that differ
    max_ulp: int | None
    labels: list[str]  # the boundary each first index's x element sits on
    explained: list[list[Any]]  # [flat index, label] of each differing element of the preview


class PreviewRecord(TypedDict):
    """The first values of an array, and their bit patterns (``inputs``, ``expected``, ``actual``, ``readings``)."""

    type: str
    shape: list[int]
    values: list[str]
    codes: list[int]
    truncated: bool


class CaseRecord(TypedDict, total=False):
    """One ``"type": "case"`` line: one case in one graph form on one backend (``record.build`` writes it).

    Every record has ``type``, ``id``, ``form``, ``status``, ``message``, ``backend``, ``backend_version``; a
    record of a case that could not even be read has no more. The values besides a plain pass (``inputs``,
    ``expected``, ``actual``, ...) are written for anything but a plain pass; ``readings`` and ``repro`` for a
    failure. :data:`FIELDS` says which JSON types each field may hold, and :func:`read` checks them."""

    type: str  # "case"
    id: str
    form: str  # a Form value; "load" for a case file that could not be loaded
    status: str  # a RunStatus value: how the case ended
    duration: float  # seconds
    message: str
    backend: str
    backend_version: str
    operator: str
    domain: str
    version: int | str  # the operator version; "load" in a case file's load-error record
    family: str | None
    granularity: str | None
    attributes: dict[str, Any]
    ambiguity: str | None
    rule: str | None
    comparison: str | None  # exact, ulp<=N, must-reject
    case_status: str  # a CaseStatus value: what the corpus says of the case
    types: dict[str, str | None]  # formal input / output name -> element type
    spec: dict[str, Any] | None  # the clause: operator, versions, text
    behaviour: str | None  # implementation-defined: what the backend did
    reading: str | None  # implementation-defined: "entry:reading" the backend follows
    expectation: ExpectationRecord | None
    mismatches: list[MismatchRecord]  # per output: reason, count, total, first_indices, labels, max_ulp
    inputs: dict[str, PreviewRecord | None]  # previews: type, shape, values, codes, truncated
    expected: list[PreviewRecord | None]
    actual: list[PreviewRecord | None]
    readings: dict[str, list[PreviewRecord | None] | None]
    repro: str
    defect: str | None  # a failing graph case: "rewrite" (node by node the backend is right) or "node"
    defect_why: str | None  # what the node-by-node run showed
    template: str  # a graph case: its template, "file#id"
    file: str  # a case file that could not be loaded: its path
    line: int | None  # ... and the line of the problem


#: characters of a case's message a record keeps
MESSAGE_LIMIT = 2000


def case_record(case_id: str, form: str, status: str, message: str, backend: tuple[str, str]) -> CaseRecord:
    """A ``"type": "case"`` record with the fields every record has (the one constructor: the runner's record of
    a case, of a case that could not be read, of a case file that could not be loaded all start here); the rest
    of :class:`CaseRecord`'s fields are added to it by who knows them."""
    return {"type": "case", "id": case_id, "form": form, "status": status, "message": message[:MESSAGE_LIMIT],
            "backend": backend[0], "backend_version": backend[1]}


#: the key :func:`read` adds to the header it returns: what it found of each file read (a file's own is replaced)
READ = "read"

#: (header, case records, summary or None): a results file as :func:`read` returns it
Results = tuple[dict[str, Any], list[CaseRecord], "dict[str, Any] | None"]


#: (bound once: reading an enum member off its class costs 0.3 us on Python 3.11, and reports test every record)
_PASSED, _IMPLEMENTATION_DEFINED = RunStatus.PASSED.value, RunStatus.IMPLEMENTATION_DEFINED.value


def expectation_of(rec: CaseRecord) -> ExpectationRecord:
    """The record's expectation entry (empty when no entry matched the case)."""
    return rec.get("expectation") or {}


def is_expected(rec: CaseRecord) -> bool:
    """A case that ended as the expectation entry matching it says (a failure it covers)."""
    e = expectation_of(rec)
    return bool(e) and e.get("status") == rec["status"]


def is_failing(rec: CaseRecord) -> bool:
    """A case that ended in a failing status, expected or not."""
    return rec["status"] in FAILING


def passed_against_entry(rec: CaseRecord) -> bool:
    """A case that passed though an expectation entry says it fails (an unexpected pass)."""
    return rec["status"] == _PASSED and expectation_of(rec).get("status") in FAILING


def seen_status(status: str) -> str:
    """The status a case that ended in ``status`` counts as against its expectation entry: an
    implementation-defined case that follows a catalogued reading has passed, as far as its entry goes."""
    return _PASSED if status == _IMPLEMENTATION_DEFINED else status
