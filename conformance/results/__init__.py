"""The results layer: the results file, the project's central contract, below both the runner (which writes
through it) and every view (reports, ``show``, fuzz, the pytest plugin: which read through it).

- :mod:`.schema`: which JSON types each field of each record type may hold, and the validators;
- :mod:`.records`: the typed records and what every view asks of a case record;
- :mod:`.files`: the header, the writer, the reader;
- :mod:`.merge`: a run from one results file or from the shard files of one run;
- :mod:`.tally`: the expectations tally, computed from records, and the summary lines that say it.

It imports only the types-and-specs layer.
"""

from __future__ import annotations

from ..domain import JSONValue
from .files import FLUSH_EVERY, ResultsWriter, header, read, unwritable
from .records import (
    MESSAGE_LIMIT,
    READ,
    CaseRecord,
    ExpectationRecord,
    ExpectationsStatus,
    FileRead,
    Header,
    MismatchRecord,
    PreviewRecord,
    Results,
    ShardFile,
    Shards,
    StaleEntry,
    Summary,
    Tally,
    case_record,
    expectation_of,
    is_expected,
    is_failing,
    is_harness_error,
    passed_against_entry,
    seen_status,
)
from .schema import FIELDS, FORMAT_PREFIX, Each, Number, Obj, ResultsError, Spec, check, valid

__all__ = [
    "FIELDS", "FLUSH_EVERY", "FORMAT_PREFIX", "MESSAGE_LIMIT", "READ", "CaseRecord", "Each",
    "ExpectationRecord", "ExpectationsStatus", "FileRead", "Header", "JSONValue", "MismatchRecord", "Number",
    "Obj", "PreviewRecord", "Results", "ResultsError", "ResultsWriter", "ShardFile", "Shards", "Spec",
    "StaleEntry", "Summary", "Tally", "case_record", "check", "expectation_of", "header", "is_expected",
    "is_failing", "is_harness_error", "passed_against_entry", "read", "seen_status", "unwritable", "valid",
]
