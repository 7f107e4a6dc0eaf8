"""Results kept in the repository (``docs/results/<backend>.jsonl.gz``): the last compliance run of each
backend, so that the compliance table and the scoreboard keep the column of a backend the machine that
regenerates them does not have installed, with the date of its run.

A kept file is a results file (readable by ``results.read``, so by ``report``, ``findings``, ``diff`` and
``compliance``) without the fields the compliance table and the scoreboard do not read: each case's previews
of its inputs, expected and actual values and readings, its spec citation, attributes, repro and timing, and
an unsupported case's reason (a third of what is left, and no table reads it). A full run of both graph forms
is about 0.3-0.6 MB gzipped this way (40-100 MB as written by the run). The header keeps the
run's ``started`` date and backend version; ``kept_from`` says which fields were left out.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from ..results import ResultsError

#: Case-record fields a kept results file leaves out (the compliance table and the scoreboard read none of
#: them).
DROPPED = ("inputs", "expected", "actual", "readings", "spec", "attributes", "repro", "comparison",
           "duration")

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
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    with open(tmp, "wb") as fh, gzip.GzipFile(filename="", fileobj=fh, mode="wb", compresslevel=9,
                                              mtime=0) as gz:
        gz.write(("\n".join(lines) + "\n").encode("utf-8"))
    tmp.replace(dest)
    return dest
