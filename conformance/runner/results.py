"""Results files: JSON Lines, written as cases finish, so that an interrupted run keeps what ran (the file is
flushed at least every FLUSH_EVERY seconds, and when the run ends, however it ends).

Line 1 is the header (``"type": "header"``: backend name and version, onnx / suite / Python versions,
platform, start time); then one ``"type": "case"`` line per case; a final ``"type": "summary"`` line when the
run ends (with ``"interrupted": true`` and the signal when a signal stopped it, with ``"error"`` when the backend
could not be created; a run killed outright leaves none). :func:`read` loads a file, complete or not, and says in
the header it returns (``"read"``) whether the file has its summary line and which lines it skipped as malformed
(not JSON: a line cut short or garbled); ``merge.incomplete`` turns that into the one line every reader shows.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import platform
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypedDict, Union, cast

import onnx

from .. import __version__
from ..domain import FAILING, RunStatus
from ..gcpause import gc_paused

#: seconds between flushes of a results file (flushing after every case would cost the pytest process a system
#: call per case)
FLUSH_EVERY = 0.25


def header(backend: str, backend_version: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "header",
        "format": "onnx-qdq-conformance-results/1",
        "backend": backend,
        "backend_version": backend_version,
        "onnx_version": onnx.__version__,
        "suite_version": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **(extra or {}),
    }


def unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be written (None: it can), found by trying (permission bits say nothing to root); a
    file created to find out is removed. Said before a run (or a report) begins, not after it ends."""
    try:
        mode = path.stat().st_mode
    except OSError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        return "is a directory"
    if mode is not None and not stat.S_ISREG(mode):
        return None  # a device or a pipe (/dev/null, a FIFO a reader waits on): opening it here could block
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except (FileExistsError, NotADirectoryError) as e:  # (a file where a folder of the path should be)
        return f"cannot write: {e.filename or path.parent} is not a directory"
    except OSError as e:
        return f"cannot write: {e.strerror or e}"
    if mode is None:
        with contextlib.suppress(OSError):
            path.unlink()
    return None


class ResultsWriter:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: TextIO | None = path.open("w", encoding="utf-8")
        self._header_written = False
        self._flushed = 0.0
        self.count = 0
        self.summary_extra: dict[str, Any] = {}  # added to the summary line (how an interrupted run ended)

    def write_line(self, line: str, head: dict[str, Any]) -> None:
        """One case record, already JSON-encoded (the backend's worker encodes it)."""
        assert self._fh is not None
        if not self._header_written:
            self._fh.write(json.dumps(head, sort_keys=True) + "\n")
            self._header_written = True
        self._fh.write(line + "\n")
        now = time.monotonic()
        if now - self._flushed >= FLUSH_EVERY:
            self._fh.flush()
            self._flushed = now
        self.count += 1

    def close(self, summary: dict[str, Any], head: dict[str, Any]) -> None:
        if self._fh is None:
            return
        if not self._header_written:
            self._fh.write(json.dumps(head, sort_keys=True) + "\n")
        self._fh.write(json.dumps({"type": "summary", **summary, **self.summary_extra}, sort_keys=True) + "\n")
        self._fh.close()
        self._fh = None


class ResultsError(Exception):
    """A results file that cannot be read: the message names the file (and line) and the problem."""


FORMAT_PREFIX = "onnx-qdq-conformance-results/"


@dataclass(frozen=True)
class Obj:
    """A JSON object whose fields follow ``FIELDS[kind]``."""

    kind: str


@dataclass(frozen=True)
class Each:
    """A JSON list (``container`` list) or object (dict) whose every element or value follows ``spec``."""

    container: type[list[Any]] | type[dict[str, Any]]
    spec: Spec
    nullable: bool = True


@dataclass(frozen=True)
class Number:
    """A JSON number a float can hold (a report formats it as one)."""


Spec = Union[tuple[type, ...], Obj, Each, Number]  # noqa: UP007 - a runtime alias (Python 3.10)
_TEXT, _INT, _NUMBER = (str,), (int,), Number()
_FLOAT_MAX = 2.0**1023
_PREVIEW, _TEXTS = Obj("preview"), Each(list, _TEXT, nullable=False)
#: What the reports, the diff and the compliance table read of each record type, and the JSON types each field may
#: hold (null always may, unless an Each says otherwise for its elements): a record that breaks it is an error
#: naming its line and field, where the reader's code would have failed with a traceback.
FIELDS: dict[str, dict[str, Spec]] = {
    "header": {"backend": _TEXT, "backend_version": _TEXT, "started": _TEXT, "expectations": _TEXT,
               "expectations_status": Obj("expectations_status")},
    "case": {**dict.fromkeys(("form", "message", "operator", "domain", "family", "granularity", "behaviour",
                              "reading", "case_status", "ambiguity", "repro", "comparison", "rule", "defect",
                              "defect_why", "template"), _TEXT),
             "version": (int, str), "duration": _NUMBER, "types": Each(dict, _TEXT), "spec": (dict,),
             "expectation": Obj("expectation"), "mismatches": Each(list, Obj("mismatch"), nullable=False),
             "inputs": Each(dict, _PREVIEW), "expected": Each(list, _PREVIEW), "actual": Each(list, _PREVIEW),
             "readings": Each(dict, Each(list, _PREVIEW)), "attributes": (dict,)},
    "summary": {"expectations": Obj("tally"), "duration_s": _NUMBER, "counts": (dict,),
                "stale_expectations": Each(list, Obj("stale"), nullable=False), "stale_markers": _TEXTS},
    "expectation": {"status": _TEXT, "reason": _TEXT, "line": _INT},
    "expectations_status": {"backend": _TEXT, "running": _TEXT, "path": _TEXT, "recorded": _TEXTS, "in_force": _INT,
                            "total": _INT, "applied": _TEXT, "mode": _TEXT, "cpu": Each(dict, (bool,)),
                            "other_cpu": _INT},
    "tally": dict.fromkeys(("in_force", "held", "stale", "changed", "new_failures", "unexpected_passes"), _INT),
    "stale": {"line": _INT},
    "preview": {"type": _TEXT, "shape": Each(list, _INT, nullable=False), "values": _TEXTS,
                "codes": Each(list, _INT, nullable=False), "truncated": (bool,)},
    "mismatch": {"output": _INT, "reason": _TEXT, "count": _INT, "total": _INT, "first_indices": (list,),
                 "labels": (list,), "max_ulp": _INT, "explained": (list,)},
}
_NAMES = {dict: "an object", list: "a list", str: "text", int: "a whole number", float: "a number",
          bool: "true or false", type(None): "null"}


def _json_type(value: Any) -> str:
    return _NAMES.get(type(value), type(value).__name__)


def valid(value: Any, spec: Spec) -> bool:
    """Whether ``value`` (not null) follows ``spec``: the fast pass over every record (:func:`check` says where
    a record that fails it goes wrong)."""
    return _validator(spec)(value)


Validator = Callable[[Any], bool]
_VALIDATORS: dict[Spec, Validator] = {}


def _validator(spec: Spec) -> Validator:
    """``spec`` as one function, made once: a report reads tens of thousands of records, and deciding what each
    part of a spec is, part by part and record by record, was most of the time the check took."""
    fn = _VALIDATORS.get(spec)
    if fn is None:
        fn = _VALIDATORS[spec] = _make(spec)
    return fn


def _make(spec: Spec) -> Validator:
    if type(spec) is tuple:
        kinds = spec
        return lambda value: isinstance(value, kinds)
    if type(spec) is Number:
        return lambda value: isinstance(value, float) or (isinstance(value, int) and abs(value) < _FLOAT_MAX)
    if type(spec) is Obj:
        return _make_obj(spec)
    assert isinstance(spec, Each)
    return _make_each(spec)


def _make_obj(spec: Obj) -> Validator:
    """An object's validator: fields of plain JSON types tested in place, the others by their validators."""
    plain = [(key, sub) for key, sub in FIELDS[spec.kind].items() if type(sub) is tuple]
    nested = [(key, _validator(sub)) for key, sub in FIELDS[spec.kind].items() if type(sub) is not tuple]

    def obj(value: Any) -> bool:
        if not isinstance(value, dict):
            return False
        get = value.get
        for key, kinds in plain:
            item = get(key)
            if item is not None and not isinstance(item, kinds):
                return False
        for key, sub in nested:
            item = get(key)
            if item is not None and not sub(item):
                return False
        return True
    return obj


def _make_each(spec: Each) -> Validator:
    """A list's or a map's validator: every item (null only where ``nullable``) follows the inner spec."""
    container, inner, nullable = spec.container, spec.spec, spec.nullable
    if type(inner) is tuple:
        kinds = (*inner, type(None)) if nullable else inner
        # the JSON types that pass, to test a list's element types at C speed (set(map(type, ...)))
        passing = frozenset(t for t in (dict, list, str, int, float, bool, type(None)) if issubclass(t, kinds))

        def each_of(value: Any) -> bool:
            if not isinstance(value, container):
                return False
            items = value.values() if isinstance(value, dict) else value
            return passing.issuperset(map(type, items)) or all(isinstance(item, kinds) for item in items)
        return each_of
    sub = _validator(inner)

    def each(value: Any) -> bool:
        if not isinstance(value, container):
            return False
        for item in value.values() if isinstance(value, dict) else value:
            if item is None:
                if not nullable:
                    return False
            elif not sub(item):
                return False
        return True
    return each


def check(value: Any, spec: Spec, where: str) -> None:
    """Raise ResultsError naming ``where`` and what is wrong when ``value`` (not null) does not follow ``spec``."""
    if isinstance(spec, tuple):
        if not isinstance(value, spec):
            raise ResultsError(f"{where} must be {' or '.join(_NAMES[t] for t in spec)}, not {_json_type(value)}")
    elif isinstance(spec, Number):
        if not valid(value, spec):
            raise ResultsError(f"{where} must be a number a float can hold, not {_json_type(value)}"
                               + (" of that size" if isinstance(value, int) else ""))
    elif isinstance(spec, Obj):
        if not isinstance(value, dict):
            raise ResultsError(f"{where} must be an object, not {_json_type(value)}")
        for key, sub in FIELDS[spec.kind].items():
            item = value.get(key)
            if item is not None:
                check(item, sub, f"{where}.{key}")
    else:
        if not isinstance(value, spec.container):
            raise ResultsError(f"{where} must be {_NAMES[spec.container]}, not {_json_type(value)}")
        for k, item in value.items() if isinstance(value, dict) else enumerate(value):
            if item is not None:
                check(item, spec.spec, f"{where}[{json.dumps(k)}]")
            elif not spec.nullable:
                raise ResultsError(f"{where}[{json.dumps(k)}] must not be null")


class ExpectationRecord(TypedDict, total=False):
    """A case record's ``expectation``: the entry in force that matched the case (``expectations.Expectation``)."""

    status: str  # a RunStatus value: failed, error, crashed, timeout, invalid-accepted or unsupported
    reason: str
    link: str | None
    line: int


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
    version: int
    family: str
    granularity: str
    attributes: dict[str, Any]
    ambiguity: str | None
    rule: str | None
    comparison: str  # exact, ulp<=N, must-reject
    case_status: str  # a CaseStatus value: what the corpus says of the case
    types: dict[str, str | None]  # formal input / output name -> element type
    spec: dict[str, Any]  # the clause: operator, versions, text
    behaviour: str | None  # implementation-defined: what the backend did
    reading: str | None  # implementation-defined: "entry:reading" the backend follows
    expectation: ExpectationRecord | None
    mismatches: list[dict[str, Any]]  # per output: reason, count, total, first_indices, labels, max_ulp
    inputs: dict[str, dict[str, Any] | None]  # previews: type, shape, values, codes, truncated
    expected: list[dict[str, Any] | None]
    actual: list[dict[str, Any] | None]
    readings: dict[str, list[dict[str, Any] | None] | None]
    repro: str
    defect: str | None  # a failing graph case: "rewrite" (node by node the backend is right) or "node"
    defect_why: str | None  # what the node-by-node run showed
    template: str  # a graph case: its template, "file#id"


#: the key :func:`read` adds to the header it returns: what it found of each file read (a file's own is replaced)
READ = "read"

#: (header, case records, summary or None): a results file as :func:`read` returns it
Results = tuple[dict[str, Any], list[CaseRecord], "dict[str, Any] | None"]


#: (bound once: reading an enum member off its class costs 0.3 us on Python 3.11, and reports test every record)
_PASSED = RunStatus.PASSED.value


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


def read(path: Path, check_fields: bool = True) -> Results:
    """(header, case records, summary or None) of a results file.

    A run killed outright leaves no summary line and may leave a cut last line; a line that is not JSON after the
    header (cut short, garbled) is skipped. Both are noted in the returned header's ``"read"`` (:data:`READ`: a
    list with one entry per file, ``{"file", "summary", "malformed", "first_malformed"}``), which the readers
    report (``merge.incomplete``). Anything else that is not a results record (a file that is not one, a record
    that is not an object, without an id or a status, of an unknown type, with ``check_fields`` a field of a
    case record that breaks :data:`FIELDS`) raises :class:`ResultsError` naming the file and the line. ``check_fields=False`` is for a file this process has
    just written itself (the report at the end of a run): its records came from the runner, and checking every
    field of 64,000 of them is a tenth of the report's time."""
    try:
        with path.open("rb") as fh:
            data = fh.read()
        if path.name.endswith(".gz"):  # a kept results file (runner/archive.py)
            data = gzip.decompress(data)
    except OSError as e:  # (gzip.BadGzipFile is one)
        raise ResultsError(f"{path}: cannot read: {e.strerror or e}") from None
    except EOFError:
        raise ResultsError(f"{path}: cannot read: a cut gzip file") from None
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    if not raw_lines:
        raise ResultsError(f"{path}: empty file, not a results file")
    with gc_paused():  # (every record made lives on: gcpause.py)
        return _parse(path, raw_lines, check_fields)


def _parse(path: Path, raw_lines: list[bytes], check_fields: bool) -> Results:
    head: dict[str, Any] = {}
    cases: list[CaseRecord] = []
    summary = None
    malformed: list[int] = []  # numbers of the lines skipped
    for n, raw in enumerate(raw_lines, 1):
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):  # (ValueError: JSON's, or an integer too long)
            if n > 1:
                malformed.append(n)  # a line cut short (the last, of a run killed outright) or garbled: skipped
                continue
            raise ResultsError(f"{path}:{n}: not a JSON line") from None
        if n == 1:
            fmt = obj.get("format") if isinstance(obj, dict) and obj.get("type") == "header" else None
            if not isinstance(fmt, str) or not fmt.startswith(FORMAT_PREFIX):
                raise ResultsError(f"{path}:1: not a results file (line 1 is not a {FORMAT_PREFIX}* header)")
            _check_record(obj, "header", f"{path}:1")
            head = obj
            continue
        if not isinstance(obj, dict):
            raise ResultsError(f"{path}:{n}: a record must be a JSON object")
        kind = obj.get("type")
        if kind == "case":
            if not isinstance(obj.get("id"), str) or not isinstance(obj.get("status"), str):
                raise ResultsError(f"{path}:{n}: a case record needs a string 'id' and 'status'")
            if check_fields:
                _check_record(obj, "case", f"{path}:{n}")
            cases.append(cast(CaseRecord, obj))
        elif kind == "summary":
            _check_record(obj, "summary", f"{path}:{n}")
            summary = obj
        elif kind == "header":
            raise ResultsError(f"{path}:{n}: a second header (two results files concatenated?)")
        else:
            what = repr(kind[:40]) if isinstance(kind, str) else _json_type(kind)
            raise ResultsError(f"{path}:{n}: unknown record type {what}")
    head[READ] = [{"file": str(path), "summary": summary is not None, "malformed": len(malformed),
                   "first_malformed": malformed[0] if malformed else None}]
    return head, cases, summary


def _check_record(obj: dict[str, Any], kind: str, where: str) -> None:
    if _validator(Obj(kind))(obj):
        return
    for key, spec in FIELDS[kind].items():
        value = obj.get(key)
        if value is not None and not valid(value, spec):
            check(value, spec, f"{where}: {key}")
            raise ResultsError(f"{where}: {key} is not what a results file holds")  # (check found it first)
