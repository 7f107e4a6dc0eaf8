"""Results files: JSON Lines, written as cases finish, so that an interrupted run keeps what ran (the file is
flushed at least every FLUSH_EVERY seconds, and when the run ends, however it ends).

Line 1 is the header (``"type": "header"``: backend name and version, onnx / suite / Python versions,
platform, start time); then one ``"type": "case"`` line per case; a final ``"type": "summary"`` line when the
run ends normally. :func:`read` loads a file, complete or not.
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
        self._fh.write(json.dumps({"type": "summary", **summary}, sort_keys=True) + "\n")
        self._fh.close()
        self._fh = None


def read(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]:
    """(header, case records, summary or None) of a results file; a truncated last line is ignored."""
    head: dict[str, Any] = {}
    cases: list[dict[str, Any]] = []
    summary = None
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                break  # an interrupted run: everything before this line is intact
            kind = obj.get("type")
            if kind == "header":
                head = obj
            elif kind == "case":
                cases.append(obj)
            elif kind == "summary":
                summary = obj
    return head, cases, summary
