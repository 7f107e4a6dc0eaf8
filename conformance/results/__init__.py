"""The results layer: the results file, the project's central contract, below both the runner (which writes
through it) and every view (reports, ``show``, fuzz, the pytest plugin: which read through it). Every read and
write of a results file, and of a record a backend's worker hands back, goes through here.

- :mod:`.schema`: which keys each record type must and may have, which JSON types each field may hold, and
  the validators;
- :mod:`.records`: the typed records and the one constructor of a case record;
- :mod:`.standing`: how a case stands against its expectation entry (expected, unexpected pass, new failure,
  ...), decided once, by one table, for every view;
- :mod:`.files`: the header, the record's line (both ways), the writer, the reader;
- :mod:`.kept`: the kept results files (``docs/results/*.jsonl.gz``);
- :mod:`.compact`: a record under short names, for the report's embedded data;
- :mod:`.merge`: a run from one results file or from the shard files of one run;
- :mod:`.tally`: the expectations tally, computed from records, and the summary lines that say it.

It imports only the types-and-specs layer.
"""

from __future__ import annotations

from ..domain import JSONValue
from .files import (
    FLUSH_EVERY,
    READ_BY,
    ResultsWriter,
    decode_record,
    encode_record,
    header,
    read,
    unwritable,
)
from .record_schema import (
    FIELDS,
    FORMAT,
    FORMAT_PREFIX,
    KEYS,
    Each,
    Number,
    Obj,
    ResultsError,
    Spec,
    check,
    valid,
)
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
)
from .standing import Standing, standing, standing_of

__all__ = [
    "FIELDS", "FLUSH_EVERY", "FORMAT", "FORMAT_PREFIX", "KEYS", "MESSAGE_LIMIT", "READ", "READ_BY",
    "CaseRecord", "Each", "ExpectationRecord", "ExpectationsStatus", "FileRead", "Header", "JSONValue",
    "MismatchRecord", "Number", "Obj", "PreviewRecord", "Results", "ResultsError", "ResultsWriter",
    "ShardFile", "Shards", "Spec", "StaleEntry", "Standing", "Summary", "Tally", "case_record", "check",
    "decode_record", "encode_record", "expectation_of", "header", "read", "standing", "standing_of",
    "unwritable", "valid",
]
