"""Results files: JSON Lines, written as cases finish, so that an interrupted run keeps what ran (the file is
flushed at least every FLUSH_EVERY seconds, and when the run ends, however it ends).

Line 1 is the header (``"type": "header"``: backend name and version, onnx / suite / Python versions,
platform, start time); then one ``"type": "case"`` line per case; a final ``"type": "summary"`` line when the
run ends (with ``"interrupted": true`` and the signal when a signal stopped it, with ``"error"`` when the
backend could not be created; a run killed outright leaves none). :func:`read` loads a file, complete or not,
and says in the header it returns (``"read"``) whether the file has its summary line and which lines it
skipped as malformed (not JSON: a line cut short or garbled); ``merge.incomplete`` turns that into the one
line every reader shows.

The format is versioned (``format`` in the header, :data:`FORMAT`); a file of another format version is
refused in one line that names the version of this tool that reads it (:data:`READ_BY`). Every record goes
through here both ways: :func:`encode_record` (which refuses a key the record may not have, or one it lacks)
and :func:`decode_record` for the one line a backend's worker hands back, :class:`ResultsWriter` and
:func:`read` for files.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import platform
import stat
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO, cast

import onnx

from .. import __version__
from ..gcpause import gc_paused
from .record_schema import (
    FORMAT,
    FORMAT_PREFIX,
    FORMAT_VERSION,
    ResultsError,
    check_keys,
    check_record,
    json_type,
)
from .records import READ, CaseRecord, Header, Results, Summary
from .standing import TABLE

#: seconds between flushes of a results file (flushing after every case would cost the pytest process a system
#: call per case)
FLUSH_EVERY = 0.25
#: format version -> the release of this tool that reads a file of it (a file of another format than
#: :data:`FORMAT` names it in the one line that refuses it)
READ_BY = {"1": "onnx-qdq-conformance 0.1.0"}


def header(backend: str, backend_version: str, extra: Mapping[str, object] | None = None) -> Header:
    """A results file's header (line 1): the keys every header has, and ``extra``; a key a header may not have
    is a :class:`ResultsError`, said before the run begins."""
    head: Header = {
        "type": "header",
        "format": FORMAT,
        "backend": backend,
        "backend_version": backend_version,
        "onnx_version": onnx.__version__,
        "suite_version": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **(extra or {}),  # type: ignore[typeddict-item]  # (checked next)
    }
    check_keys(cast(dict[str, object], head), "header", "results header")
    return head


def unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be written (None: it can), found by trying (permission bits say nothing to root); a
    file created to find out is removed. Said before a run (or a report) begins, not after it ends. A folder
    that does not exist is not made (``--results /missing/r.jsonl`` would make one at the filesystem's root
    unasked): it is "no such directory"."""
    try:
        mode = path.stat().st_mode
    except OSError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        return "is a directory"
    if mode is not None and not stat.S_ISREG(mode):
        return None  # a device or a pipe (/dev/null, a FIFO a reader waits on): opening it here could block
    folder = path.parent
    if not folder.exists():
        missing = folder
        while not missing.parent.exists() and missing.parent != missing:
            missing = missing.parent
        return f"no such directory: {missing} (make it first)"
    if not folder.is_dir():  # (a file where a folder of the path should be)
        return f"cannot write: {folder} is not a directory"
    try:
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


def encode_record(rec: CaseRecord, indent: int | None = None) -> str:
    """A case record as one results-file line (without the newline; ``indent``: as a file of its own, for a
    person to read: a fuzz finding's ``record.json``); a key the record may not have, or one it lacks, is a
    :class:`ResultsError` (its fields' values the reader checks)."""
    check_keys(cast(dict[str, object], rec), "case", f"case record {str(rec.get('id'))[:80]!r}")
    # (a record is a tree of plain values)
    return json.dumps(rec, sort_keys=True, check_circular=False, indent=indent)


def decode_record(line: str | bytes) -> CaseRecord:
    """The case record :func:`encode_record` made of ``line`` (a backend's worker hands its records back so,
    and the runner, the fuzzer and the plugin read them with this)."""
    rec = json.loads(line)
    if not isinstance(rec, dict) or rec.get("type") != "case":
        raise ResultsError(f"not a case record: {str(line)[:80]!r}")
    return cast(CaseRecord, rec)


class ResultsWriter:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: TextIO | None = path.open("w", encoding="utf-8")
        self._header_written = False
        self._flushed = 0.0
        self.count = 0
        self.summary_extra: dict[str, Any] = {}  # added to the summary line (how an interrupted run ended)

    def write_line(self, line: str, head: Header) -> None:
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

    def write_record(self, rec: CaseRecord, head: Header) -> None:
        """One case record (:func:`encode_record`)."""
        self.write_line(encode_record(rec), head)

    def close(self, summary: Summary, head: Header) -> None:
        if self._fh is None:
            return
        if not self._header_written:
            self._fh.write(json.dumps(head, sort_keys=True) + "\n")
        line = {**summary, **self.summary_extra, "type": "summary"}
        self._fh.write(json.dumps(line, sort_keys=True) + "\n")
        self._fh.close()
        self._fh = None
        # (a summary with a key it may not have still ends the file, and the reader will refuse it too)
        check_keys(line, "summary", "results summary")


def read(path: Path, check_fields: bool = True) -> Results:
    """(header, case records, summary or None) of a results file.

    A run killed outright leaves no summary line and may leave a cut last line; a line that is not JSON after
    the header (cut short, garbled) is skipped. Both are noted in the returned header's ``"read"``
    (:data:`READ`: a list with one entry per file, ``{"file", "summary", "malformed", "first_malformed"}``),
    which the readers report (``results.merge.incomplete``). Anything else that is not a results record (a
    file that is not one, a record that is not an object, without an id or a status, of an unknown type, with
    ``check_fields`` a field of a case record that breaks :data:`FIELDS`) raises :class:`ResultsError` naming
    the file and the line. ``check_fields=False`` is for a file this process has just written itself (the
    report at the end of a run): its records came from the runner, and checking every field of 64,000 of them
    is a tenth of the report's time."""
    try:
        with path.open("rb") as fh:
            data = fh.read()
        if path.name.endswith(".gz"):  # a kept results file (kept.py)
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
    head = cast(Header, {})
    case_kind = "case"
    cases: list[CaseRecord] = []
    summary: Summary | None = None
    malformed: list[int] = []  # numbers of the lines skipped
    for n, raw in enumerate(raw_lines, 1):
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            # (ValueError: JSON's, or an integer too long)
            if n > 1:
                # a line cut short (the last, of a run killed outright) or garbled: skipped
                malformed.append(n)
                continue
            raise ResultsError(f"{path}:{n}: not a JSON line") from None
        if n == 1:
            fmt = obj.get("format") if isinstance(obj, dict) and obj.get("type") == "header" else None
            if not isinstance(fmt, str) or not fmt.startswith(FORMAT_PREFIX):
                raise ResultsError(f"{path}:1: not a results file (line 1 is not a {FORMAT_PREFIX}* header)")
            if fmt != FORMAT:
                raise ResultsError(_other_format(path, fmt, obj.get("suite_version")))
            check_record(obj, "header", f"{path}:1")
            head = cast(Header, obj)
            case_kind = ("case-subset" if "kept_subset" in head else "case-kept" if "kept_from" in head
                         else "case")
            continue
        if not isinstance(obj, dict):
            raise ResultsError(f"{path}:{n}: a record must be a JSON object")
        kind = obj.get("type")
        if kind == "case":
            if not isinstance(obj.get("id"), str) or not isinstance(obj.get("status"), str):
                raise ResultsError(f"{path}:{n}: a case record needs a string 'id' and 'status'")
            if obj["status"] not in TABLE:
                raise ResultsError(f"{path}:{n}: status {json.dumps(obj['status'][:40])} is not a run status "
                                   f"({', '.join(TABLE)})")
            check_record(obj, case_kind, f"{path}:{n}", "case" if check_fields else "")
            cases.append(cast(CaseRecord, obj))
        elif kind == "summary":
            check_record(obj, "summary", f"{path}:{n}")
            summary = cast(Summary, obj)
        elif kind == "header":
            raise ResultsError(f"{path}:{n}: a second header (two results files concatenated?)")
        else:
            what = repr(kind[:40]) if isinstance(kind, str) else json_type(kind)
            raise ResultsError(f"{path}:{n}: unknown record type {what}")
    head[READ] = [{"file": str(path), "summary": summary is not None, "malformed": len(malformed),
                   "first_malformed": malformed[0] if malformed else None}]
    return head, cases, summary


def _other_format(path: Path, fmt: str, written_by: Any) -> str:
    """The one line that refuses a results file of another format version than this tool's."""
    version = fmt[len(FORMAT_PREFIX):]
    by = f" (written by onnx-qdq-conformance {written_by})" if isinstance(written_by, str) else ""
    reader = READ_BY.get(version)
    if reader is not None:
        return (f"{path}:1: results format {version}{by}: this version reads format {FORMAT_VERSION}; "
                f"{reader} reads format {version} (or run the cases again)")
    return (f"{path}:1: results format {json.dumps(version[:20])}{by}: this version reads format "
            f"{FORMAT_VERSION}; a newer onnx-qdq-conformance wrote it")
