"""The records of a results file, typed (:class:`Header`, :class:`CaseRecord` and the objects in it,
:class:`Summary`; :data:`Results`, a file as read): which keys each must have and which it may have (a key
annotated in a ``total=False`` class may be left out, one in its base class may not; :mod:`.schema` reads
both from these classes), and the one constructor of a case record (:func:`case_record`). How a case stands
against its expectation entry is :mod:`.standing`'s to say."""

from __future__ import annotations

from typing import Any, Final, TypedDict, Union, cast

from ..domain import JSONValue, SourceText, SpecText


class ExpectationRecord(TypedDict):
    """A case record's ``expectation``: the entry in force that matched the case
    (``expectations.Expectation``)."""

    status: str  # a RunStatus value: failed, error, crashed, timeout, invalid-accepted or unsupported
    reason: str
    link: str | None
    line: int


class ExpectationsStatus(TypedDict):
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


class _Mismatch(TypedDict):
    output: int
    reason: str
    count: int | None
    total: int | None
    first_indices: list[list[int]]  # the first (up to 5) indices that differ
    max_ulp: int | None


class MismatchRecord(_Mismatch, total=False):
    """One output's mismatch in a case record's ``mismatches`` (``labels`` and ``explained`` where the case
    knows where its x elements sit)."""

    labels: list[str]  # the boundary each first index's x element sits on
    explained: list[list[Any]]  # [flat index, label] of each differing element of the preview


class _Preview(TypedDict):
    type: str
    shape: list[int]
    values: list[str]
    codes: list[int]
    truncated: bool


class PreviewRecord(_Preview, total=False):
    """The first values of an array, and their bit patterns (``inputs``, ``expected``, ``actual``,
    ``readings``); an expected output of the ``interval`` rule also the bit patterns of each element's lowest
    and highest acceptable value (``low``, ``high``)."""

    low: list[int]
    high: list[int]


class _CaseKeys(TypedDict):
    """The keys every case record has (null where the case is not known: a case that could not be read, a case
    file that could not be loaded)."""

    type: str  # "case"
    id: str
    form: str  # a Form value; "load" for a case file that could not be loaded
    status: str  # a RunStatus value: how the case ended
    message: str
    backend: str
    backend_version: str
    duration: float | None  # seconds
    operator: str | None
    domain: str | None
    version: int | str | None  # the operator version; "load" in a case file's load-error record
    family: str | None
    granularity: str | None
    attributes: dict[str, Any]
    ambiguity: str | None
    rule: str | None
    comparison: str | None  # exact, ulp<=N, interval, must-reject
    case_status: str | None  # a CaseStatus value: what the corpus says of the case
    types: dict[str, str | None]  # formal input / output name -> element type
    spec: SpecText | None  # the clause: operator, versions, text
    behaviour: str | None  # implementation-defined: what the backend did
    reading: str | None  # implementation-defined: "entry:reading" the backend follows
    expectation: ExpectationRecord | None
    mismatches: list[MismatchRecord]  # per output: reason, count, total, first_indices, labels, max_ulp


class CaseRecord(_CaseKeys, total=False):
    """One ``"type": "case"`` line: one case in one graph form on one backend (``record.build`` writes it).

    The keys of :class:`_CaseKeys` are in every record; the values besides a plain pass (``inputs``,
    ``expected``, ``actual``, ...) are written for anything but a plain pass; ``readings`` and ``repro`` for a
    failure. :data:`FIELDS` says which JSON types each field may hold, and :func:`read` checks them."""

    inputs: dict[str, PreviewRecord | None]  # previews: type, shape, values, codes, truncated
    expected: list[PreviewRecord | None]
    actual: list[PreviewRecord | None]
    readings: dict[str, list[PreviewRecord | None] | None]
    repro: str
    interval_why: str | None  # an ``interval`` case: why its elements may have more than one value
    defect: str | None  # a failing graph case: "rewrite" (node by node the backend is right) or "node"
    defect_why: str | None  # what the node-by-node run showed
    template: str  # a graph case: its template, "file#id"
    source: SourceText | None  # a case generated from a model: the models and nodes behind it
    file: str  # a case file that could not be loaded: its path
    line: int | None  # ... and the line of the problem


#: characters of a case's message a record keeps
MESSAGE_LIMIT = 2000


def case_record(case_id: str, form: str, status: str, message: str, backend: tuple[str, str],
                **fields: object) -> CaseRecord:
    """A ``"type": "case"`` record (the one constructor: the runner's record of a case, of a case that could
    not be read, of a case file that could not be loaded, and every test's, start here): the keys every record
    has, null (or empty) where ``fields`` does not give them, and ``fields``. The writer
    (``results.encode_record``) refuses a key :class:`CaseRecord` does not have."""
    rec: CaseRecord = {
        "type": "case", "id": case_id, "form": form, "status": status, "message": message[:MESSAGE_LIMIT],
        "backend": backend[0], "backend_version": backend[1], "duration": None, "operator": None,
        "domain": None, "version": None, "family": None, "granularity": None, "attributes": {},
        "ambiguity": None, "rule": None, "comparison": None, "case_status": None, "types": {}, "spec": None,
        "behaviour": None, "reading": None, "expectation": None, "mismatches": []}
    rec.update(fields)  # type: ignore[typeddict-item]  # (the writer checks the keys)
    return rec


#: the key :func:`read` adds to the header it returns: what it found of each file read (a file's own is
#: replaced)
READ: Final = "read"

class FileRead(TypedDict):
    """What ``read`` found of one file (the header's ``read``): whether it has its summary line, how many
    lines it skipped as malformed and the first of them."""

    file: str
    summary: bool
    malformed: int
    first_malformed: int | None


class ShardFile(TypedDict):
    """One shard file of a merged run (the header's ``shards.given``)."""

    k: int
    file: str
    started: str | None
    duration_s: float | None
    cases: int


class Shards(TypedDict):
    """The header of a run merged from shard files: N, the files given, the shards missing, the warnings."""

    n: int
    given: list[ShardFile]
    missing: list[int]
    warnings: list[str]


class _HeaderKeys(TypedDict):
    type: str  # "header"
    format: str  # FORMAT_PREFIX and the format's version
    backend: str
    backend_version: str
    onnx_version: str
    suite_version: str
    python: str
    platform: str
    started: str  # UTC, ISO 8601


class Header(_HeaderKeys, total=False):
    """Line 1 of a results file (``results.header`` writes it): the keys of :class:`_HeaderKeys` always, the
    others where the run knows them; the last three are never in a file (:data:`IN_MEMORY`): ``read`` adds
    ``read``, a merge ``shards``, ``reports.compliance`` ``kept_results``."""

    expectations: str | None  # the expectations file in force
    expectations_status: ExpectationsStatus
    strict_expectations: bool
    forms: str | list[str] | None  # the graph form(s) run
    tier: str | None
    suite: str | None  # an exported suite's folder (a run of ``--suite``)
    shard: str | None  # K/N
    selection: dict[str, str | list[str] | bool]  # what selected the cases (-k, -m, --shard, ...)
    optimization: str  # how the backend runs a model (``backends.registry.settings``)
    backend_options: dict[str, str]  # --backend-option's settings (absent: none)
    fuzz: dict[str, JSONValue]  # a fuzz run's seed, forms, operators and versions
    reconstructed: str  # a kept run rebuilt from other files: from what
    kept_from: str  # a kept results file (results.kept): the file it was kept from, and what it leaves out
    kept_subset: str  # a kept run of some case-forms (results.kept.keep_subset): which (totals: summary)
    read: list[FileRead]  # (:data:`READ`)
    shards: Shards | None
    kept_results: str  # a run a report read from a kept results file: that file (reports.compliance.KEPT)


#: the header keys a reader adds to the header it returns, never in a file
IN_MEMORY: Final = frozenset({"read", "shards", "kept_results"})


class StaleEntry(TypedDict):
    """An expectation entry that matched no case's result (the summary's ``stale_expectations``)."""

    line: int
    cases: list[str]


class _TallyKeys(TypedDict):
    in_force: int | None
    held: int
    stale: int | None  # None: not checked (the summary's ``stale_unchecked`` says why)
    changed: int
    new_failures: int
    unexpected_passes: int


class Tally(_TallyKeys, total=False):
    """A summary's ``expectations``: the run against the expectation entries in force, and the cases this
    tool's own code failed on (``harness_errors``: never a failure of the backend; missing in files written
    before the count was)."""

    harness_errors: int


class _SummaryKeys(TypedDict):
    counts: dict[str, int]  # status -> cases


class Summary(_SummaryKeys, total=False):
    """The last line of a finished run's results file (what a run that could not start, or a fuzz run, knows
    of it: ``counts`` and some of the others; ``type``, which every line has, the writer adds)."""

    type: str  # "summary"
    surprises: list[str]  # "id [form]: expected failed, got passed"
    stale_expectations: list[StaleEntry]
    stale_unchecked: str  # why the run did not check which entries are stale (a subset, stopped early)
    stale_in_shard: list[StaleEntry]  # a shard's: entries all of whose cases there pass (merge.py reads them)
    stale_markers: list[str]
    expectations: Tally | None
    exitstatus: int | None
    all_unsupported: bool
    finished: str
    duration_s: float
    interrupted: bool  # a signal stopped the run ...
    signal: str  # ... this one
    error: str  # the backend could not be created
    fuzz: dict[str, JSONValue]  # a fuzz run's statistics


#: (header, case records, summary or None): a results file as :func:`read` returns it
Results = tuple[Header, list[CaseRecord], Union[Summary, None]]  # noqa: UP007 - a runtime alias (Python 3.10)


#: what a record no expectation entry matched has of one
_NO_ENTRY = cast(ExpectationRecord, {})


def expectation_of(rec: CaseRecord) -> ExpectationRecord:
    """The record's expectation entry (empty when no entry matched the case)."""
    return rec.get("expectation") or _NO_ENTRY
