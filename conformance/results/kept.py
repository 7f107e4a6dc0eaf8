"""Results kept in the repository (``docs/results/<backend>.jsonl.gz``): the last compliance run of each
backend, so that the compliance table and the scoreboard keep the column of a backend the machine that
regenerates them does not have installed, with the date of its run.

A kept file is a results file (read by :func:`.files.read`, so by ``report``, ``findings``, ``diff`` and
``compliance``), gzipped, without the fields the compliance table and the scoreboard do not read
(:data:`.schema.KEPT_LEAVES_OUT`: each case's previews of its inputs, expected and actual values and readings,
its spec citation, attributes, repro, comparison and timing) and an unsupported case's message (a third of
what is left, and no table reads it). A full run of both graph forms is about 0.3-0.8 MB gzipped this way
(40-100 MB as written by the run). The header keeps the run's ``started`` date and backend version;
``kept_from`` says which file it was kept from and what it leaves out (and tells the reader that those keys
may be missing).

A release of a version matrix (``qdq-conformance matrix --keep``) is kept smaller still
(``docs/results/history/<backend>-<version>.jsonl.gz``, :func:`keep_subset`): only the records of the
case-forms that fail on some release of the matrix (what its history table reads; of a case-form that did not
fail on that release, only how it ended: :data:`.schema.SUBSET_KEEPS`), the header saying so
(``kept_subset``) and the summary, whose counts give the run's totals.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Collection
from pathlib import Path

from ..domain import FAILING, RunStatus
from .files import read
from .record_schema import KEPT_LEAVES_OUT, SUBSET_KEEPS, SUBSET_LEAVES_OUT, ResultsError
from .records import CaseRecord, Header, Results, Summary

SUFFIX = ".jsonl.gz"
_UNSUPPORTED, _FAILED = RunStatus.UNSUPPORTED.value, RunStatus.FAILED.value
#: the previews a kept subset drops from a case that failed otherwise than with wrong values
PREVIEWS = ("expected", "actual", "mismatches")
#: the characters of a failing case's message a kept subset keeps (a finding's class is told by the message's
#: first words, and its description shows its first line)
MESSAGE_KEPT = 400


def kept_path(folder: Path, backend: str) -> Path:
    return folder / f"{backend}{SUFFIX}"


def keep(results: Path, dest: Path) -> Path:
    """Write ``results`` (a results file a run wrote, read and checked by :func:`.files.read`) as a kept file
    ``dest`` (gzip, deterministic bytes). Raises ``ResultsError`` on a file :func:`.files.read` refuses."""
    head, cases, summary = read(results)
    skipped = [f for f in head.get("read") or [] if f["malformed"]]
    if skipped:
        raise ResultsError(f"{results}:{skipped[0]['first_malformed']}: not a JSON line (a kept file keeps a "
                           "whole run)")
    kept_head: Header = {**head, "kept_from": f"{results.name}, without the case fields "
                         f"{', '.join(KEPT_LEAVES_OUT)} and unsupported cases' messages"}
    kept_head.pop("read", None)  # (what the reader found: never in a file)
    write_kept(dest, kept_head, [_lean(c) for c in cases], summary)
    return dest


def _lean(rec: CaseRecord) -> CaseRecord:
    out = {k: v for k, v in rec.items() if k not in KEPT_LEAVES_OUT}
    if rec["status"] == _UNSUPPORTED:
        out.pop("message", None)
    return out  # type: ignore[return-value]  # (a kept file's record: results.schema's case-kept keys)


def keep_subset(run: Results, dest: Path, cases: Collection[tuple[str, str]], note: str) -> Path:
    """Write the records of ``run`` (as :func:`.files.read` gave it) whose (id, form) is in ``cases`` as a
    kept file ``dest``, with its header (``kept_subset``: ``note``) and summary."""
    head, records, summary = run
    top: Header = {**head, "kept_subset": note,
                   "kept_from": f"without the case fields {', '.join(SUBSET_LEAVES_OUT)}"}
    for key in ("read", "shards", "kept_results"):  # (what a reader adds: never in a file)
        top.pop(key, None)  # type: ignore[misc]
    kept: list[CaseRecord] = []
    for rec in records:
        if (rec["id"], rec.get("form") or "-") in cases:
            if rec["status"] in FAILING:  # (the previews tell only a wrong value's kind of mismatch)
                dropped = SUBSET_LEAVES_OUT if rec["status"] == _FAILED else SUBSET_LEAVES_OUT + PREVIEWS
                one = {k: v for k, v in rec.items() if k not in dropped}
                one["message"] = str(rec.get("message") or "")[:MESSAGE_KEPT]
            else:  # (what the table asks of a case that did not fail here: how it ended)
                one = {k: v for k, v in rec.items() if k in SUBSET_KEEPS}
            kept.append(one)  # type: ignore[arg-type]  # (a kept subset's record: schema's case-subset keys)
    write_kept(dest, top, kept, summary)
    return dest


def write_kept(dest: Path, head: Header, cases: list[CaseRecord], summary: Summary | None) -> None:
    """A kept file's bytes: one compact JSON line per record (keys sorted), gzip without a timestamp, written
    beside ``dest`` and moved over it."""
    lines = [head, *cases, *([] if summary is None else [summary])]
    text = "".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False, sort_keys=True) + "\n"
                   for r in lines)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    with open(tmp, "wb") as fh, gzip.GzipFile(filename="", fileobj=fh, mode="wb", compresslevel=9,
                                              mtime=0) as gz:
        gz.write(text.encode("utf-8"))
    tmp.replace(dest)
