"""Results kept in the repository (``docs/results/<backend>.jsonl.gz``): the last compliance run of each
backend, so that the compliance table and the scoreboard keep the column of a backend the machine that
regenerates them does not have installed, with the date of its run.

A kept file is a results file (readable by ``results.read``, so by ``report``, ``findings``, ``diff`` and
``compliance``) without the fields the compliance table and the scoreboard do not read: each case's previews
of its inputs, expected and actual values and readings, its spec citation, attributes, repro and timing, and
an unsupported case's reason (a third of what is left, and no table reads it). A full run of both graph forms
is about 0.3-0.6 MB gzipped this way (40-100 MB as written by the run). The header keeps the
run's ``started`` date and backend version; ``kept_from`` says which fields were left out.

A release of a version matrix (``qdq-conformance matrix --keep``) is kept smaller still
(``docs/results/history/<backend>-<version>.jsonl.gz``, :func:`keep_subset`): only the records of the
case-forms that fail on some release of the matrix (what its history table reads; of a case-form that did not
fail on that release, only how it ended), the header saying so
(``kept_subset``) and the summary, whose counts give the run's totals.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ..domain import FAILING
from ..results import Results, ResultsError

#: Case-record fields a kept results file leaves out (the compliance table and the scoreboard read none of
#: them).
DROPPED = ("inputs", "expected", "actual", "readings", "spec", "attributes", "repro", "comparison",
           "duration")

#: Case-record fields a kept subset (:func:`keep_subset`) leaves out: it keeps the previews of expected and
#: actual values and the comparison, which tell a finding's kind of mismatch (``reports/signature.py``)
SUBSET_DROPPED = ("inputs", "readings", "spec", "attributes", "repro", "duration")
#: the previews a kept subset drops from a case that failed otherwise than with wrong values
PREVIEWS = ("expected", "actual", "mismatches")

#: the characters of a failing case's message a kept subset keeps (a finding's class is told by the message's
#: first words, and its description shows its first line)
MESSAGE_KEPT = 400

SUFFIX = ".jsonl.gz"


def kept_path(folder: Path, backend: str) -> Path:
    return folder / f"{backend}{SUFFIX}"


def keep(results: Path, dest: Path) -> Path:
    """Write ``results`` (a results file a run wrote) as a kept file ``dest`` (gzip, deterministic bytes)."""
    lines = []
    try:
        raw = results.read_bytes().splitlines()
    except OSError as e:
        raise ResultsError(f"{results}: cannot read: {e.strerror or e}") from None
    for n, line in enumerate(raw, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            raise ResultsError(f"{results}:{n}: not a JSON line") from None
        if rec.get("type") == "case":
            for k in DROPPED:
                rec.pop(k, None)
            if rec.get("status") == "unsupported":
                rec.pop("message", None)
        elif rec.get("type") == "header":
            rec["kept_from"] = (f"{results.name}, without the case fields {', '.join(DROPPED)} and "
                                "unsupported cases' messages")
        lines.append(json.dumps(rec, separators=(",", ":"), ensure_ascii=False))
    return _write(dest, lines)


def keep_subset(run: Results, dest: Path, cases: Collection[tuple[str, str]], note: str) -> Path:
    """Write the records of ``run`` (as ``results.read`` gave it) whose (id, form) is in ``cases`` as a kept
    file ``dest``, with its header (``kept_subset``: ``note``) and summary."""
    head, records, summary = run
    top: dict[str, Any] = {k: v for k, v in head.items() if k not in ("read", "shards")}
    top["kept_subset"] = note
    top["kept_from"] = f"without the case fields {', '.join(SUBSET_DROPPED)}"
    lines = [json.dumps(top, separators=(",", ":"), ensure_ascii=False)]
    for rec in records:
        if (rec["id"], rec.get("form") or "-") in cases:
            if rec["status"] in FAILING:  # (the previews tell only a wrong value's kind of mismatch)
                dropped = SUBSET_DROPPED if rec["status"] == "failed" else SUBSET_DROPPED + PREVIEWS
                kept = {k: v for k, v in rec.items() if k not in dropped}
                kept["message"] = str(rec.get("message") or "")[:MESSAGE_KEPT]
            else:  # (what the table asks of a case that did not fail here: how it ended)
                kept = {k: v for k, v in rec.items() if k in ("type", "id", "form", "status")}
            lines.append(json.dumps(kept, separators=(",", ":"), ensure_ascii=False))
    if summary is not None:
        lines.append(json.dumps(summary, separators=(",", ":"), ensure_ascii=False))
    return _write(dest, lines)


def _write(dest: Path, lines: list[str]) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    with open(tmp, "wb") as fh, gzip.GzipFile(filename="", fileobj=fh, mode="wb", compresslevel=9,
                                              mtime=0) as gz:
        gz.write(("\n".join(lines) + "\n").encode("utf-8"))
    tmp.replace(dest)
    return dest
