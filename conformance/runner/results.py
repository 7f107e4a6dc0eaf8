"""Results files: JSON Lines, written as cases finish, so that an interrupted run keeps what ran (the file is
flushed at least every FLUSH_EVERY seconds, and when the run ends, however it ends).

Line 1 is the header (``"type": "header"``: backend name and version, onnx / suite / Python versions,
platform, start time); then one ``"type": "case"`` line per case; a final ``"type": "summary"`` line when the
run ends (with ``"interrupted": true`` and the signal when a signal stopped it, with ``"error"`` when the backend
could not be created; a run killed outright leaves none). :func:`read` loads a file, complete or not.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import onnx

from .. import __version__

#: seconds between flushes of a results file (a flush per case cost the pytest process a system call per case)
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


class ResultsWriter:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: TextIO | None = path.open("w", encoding="utf-8")
        self._header_written = False
        self._flushed = 0.0
        self.count = 0
        self.summary_extra: dict[str, Any] = {}  # added to the summary line (how an interrupted run ended)

    def write(self, record: dict[str, Any], head: dict[str, Any]) -> None:
        self.write_line(json.dumps(record, sort_keys=True), head)

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


def read(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]:
    """(header, case records, summary or None) of a results file.

    A run that was interrupted leaves no summary line and may leave a cut last line, which is ignored; anything
    else that is not a results record (a file that is not one, a corrupt line before the last, a record without
    an id or a status) raises :class:`ResultsError` naming the file and the line."""
    try:
        with path.open("rb") as fh:
            raw_lines = fh.read().split(b"\n")
    except OSError as e:
        raise ResultsError(f"{path}: cannot read: {e.strerror or e}") from None
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    if not raw_lines:
        raise ResultsError(f"{path}: empty file, not a results file")
    head: dict[str, Any] = {}
    cases: list[dict[str, Any]] = []
    summary = None
    last = len(raw_lines)
    for n, raw in enumerate(raw_lines, 1):
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            if n == last and n > 1:
                break  # an interrupted run: everything before this line is intact
            raise ResultsError(f"{path}:{n}: not a JSON line") from None
        if n == 1:
            if not isinstance(obj, dict) or obj.get("type") != "header" or \
                    not str(obj.get("format", "")).startswith(FORMAT_PREFIX):
                raise ResultsError(f"{path}:1: not a results file (line 1 is not a {FORMAT_PREFIX}* header)")
            head = obj
            continue
        if not isinstance(obj, dict):
            raise ResultsError(f"{path}:{n}: a record must be a JSON object")
        kind = obj.get("type")
        if kind == "case":
            if not isinstance(obj.get("id"), str) or not isinstance(obj.get("status"), str):
                raise ResultsError(f"{path}:{n}: a case record needs a string 'id' and 'status'")
            cases.append(obj)
        elif kind == "summary":
            summary = obj
        elif kind == "header":
            raise ResultsError(f"{path}:{n}: a second header (two results files concatenated?)")
        else:
            raise ResultsError(f"{path}:{n}: unknown record type {str(kind)[:40]!r}")
    return head, cases, summary
