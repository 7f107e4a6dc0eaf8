"""Results files for the tests, made as the runner makes them: every record through ``results.case_record``
(the one constructor), every file through ``results.ResultsWriter`` (which refuses a record with a key it may
not have, or without one it must have). Only the tests of hostile input write lines by hand."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from qdq_conformance.results import (
    CaseRecord,
    ExpectationRecord,
    Header,
    ResultsWriter,
    Summary,
    case_record,
    header,
)

BACKEND = ("demo", "1.0")


def record(case_id: str, status: str = "failed", *, form: str = "runtime", message: str = "",
           backend: tuple[str, str] = BACKEND, **fields: Any) -> CaseRecord:
    """A case record with ``fields`` (the others null or empty, as for a case the runner knows nothing of)."""
    return case_record(case_id, form, status, message, backend, **fields)


def entry(status: str = "failed", line: int = 3, reason: str = "a known deviation",
          link: str | None = None) -> ExpectationRecord:
    """A record's ``expectation``: the entry that matched the case."""
    return {"status": status, "reason": reason, "link": link, "line": line}


def write(path: Path, records: Iterable[CaseRecord], head: Header | None = None,
          summary: Summary | None = None, complete: bool = True) -> Path:
    """A results file of ``records``: ``head`` (default: the ``demo 1.0`` backend's), then the records, then
    ``summary`` (default: the counts per status; ``complete=False``: none, as a run killed outright
    leaves)."""
    head = head if head is not None else header(*BACKEND)
    writer = ResultsWriter(path)
    counts: Counter[str] = Counter()
    for rec in records:
        writer.write_record(rec, head)
        counts[rec["status"]] += 1
    writer.close(summary if summary is not None else {"counts": dict(sorted(counts.items()))}, head)
    if not complete:  # the summary line cut off, as a run killed outright leaves its file
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:-1]))
    return path
