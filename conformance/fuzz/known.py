"""Whether a fuzz finding is a deviation the backend's bundled expectations already record.

A fuzzed example has an id of its own, which no expectation entry's case-id patterns name; what it shares with
the corpus is its root cause (``export.root_cause``: the signature ``qdq-conformance findings`` groups by). So
a finding is *known* when a corpus case that an expectation entry says fails (in the finding's status) fails
on the backend with the same root cause. The candidates are the corpus cases of the finding's operator,
granularity and quantized type class that an entry covers (from the selection index, ``plugin/selection.py``:
no expansion), at most ``PER_FINDING`` of them, the first case of each entry first; each runs once on the fuzz
run's own backend workers (a few seconds at most, after the search).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..domain import Tier, tiers_of
from ..generators.cache import load_file_cached
from ..plugin.selection import case_index
from ..reports.signature import type_class
from ..resources import cases_dir
from ..results import decode_record
from ..runner.execute import ObjRef
from ..runner.expectations import Expectations
from ..runner.pool import CasePool
from .fuzz_output import FindingRow, root_cause

#: corpus cases run per finding to look for its root cause among the expected failures
PER_FINDING = 4


def _wanted(parts: dict[str, Any], marks: Sequence[str], cause: tuple[str, ...]) -> bool:
    """Whether a corpus case (its markers) can share the root cause ``cause`` of a finding (``parts``: its
    signature's parts): the same operator and domain, and for wrong values the same granularity and quantized
    type class (an error's root cause names neither)."""
    domain, _, op = str(parts.get("operator", "")).rpartition("::")
    op = op.rsplit("-", 1)[0].lower()
    if op not in marks or domain.replace(".", "_") not in marks:
        return False
    if len(cause) < 3 or cause[1] == "*":
        return True
    if cause[2].replace("-", "_") not in marks:
        return False
    quantized = cause[1].split(" ", 1)[1].split(",")[0] if " " in cause[1] else ""
    role = "x_" if "dequantize" in op else "y_"
    types = [m[2:] for m in marks if m.startswith(role)]
    return not types or not quantized or type_class(types[0]) == quantized


def known(rows: list[FindingRow], pool: CasePool, exp: Expectations | None,
          folder: Path | None = None) -> None:
    """Mark each finding row (``export.write_finding``'s) ``known``: None, or the expectation entry (line,
    status, reason) and the corpus case that fails with the row's root cause as that entry says."""
    for row in rows:
        row["known"] = None
    if not rows or exp is None or not getattr(exp, "entries", None):
        return
    tiers = tiers_of(Tier.DEFAULT.value)
    index = [(path, entries) for path in sorted((folder or cases_dir()).glob("*.yaml"))
             if (entries := case_index(path, tiers))]
    loaded: dict[Path, dict[str, Any]] = {}
    for row in rows:
        # (write_finding gives every row its form)
        cause, status, form = tuple(row.get("root_cause") or ()), row.get("status"), row["form"]
        # candidates: the first case of each entry first (every entry a chance), then further cases
        first: list[tuple[Path, str, Any]] = []
        more: list[tuple[Path, str, Any]] = []
        entries_seen: set[int] = set()
        for path, cases in index:
            for case_id, _, marks in cases:
                if len(first) >= PER_FINDING:
                    break
                if not _wanted(row.get("parts") or {}, marks, cause):
                    continue
                entry = exp.lookup(case_id, form)
                if entry is None or entry.status != status:
                    continue
                if entry.line in entries_seen:
                    if len(more) < PER_FINDING:
                        more.append((path, case_id, entry))
                    continue
                entries_seen.add(entry.line)
                first.append((path, case_id, entry))
        picked = (first + more)[:PER_FINDING]
        for path, case_id, entry in picked:
            if path not in loaded:
                loaded[path] = {c.id: c for c in load_file_cached(path, tiers)}
            case = loaded[path].get(case_id)
            if case is None:
                continue
            result = pool.get(ObjRef(case), form)
            if result.status == status and tuple(root_cause(decode_record(result.record))) == cause:
                row["known"] = {"line": entry.line, "status": entry.status,
                                "reason": " ".join(entry.reason.split()), "case": case_id, "form": form}
                break
