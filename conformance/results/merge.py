"""Runs from results files: one file, or the N shard files of one run (``--shard K/N``) merged into one.

``report``, ``findings``, ``diff`` and ``compliance`` read results through :func:`load_run` (exactly one run)
or :func:`load_runs` (one run per backend: a scoreboard), never file by file, so a run spread over N machines
reads as the run on one:

- a file whose header names no shard is a run of its own (several of one backend: several runs, as ever);
- files whose headers name a shard are grouped by backend; a group must share the backend version and N, and
  give each shard once (else :class:`ResultsError`, one line naming the files); a case in two shard files is
  an error too (a case file's load-error record, which every shard carries, is kept once);
- shards missing from a group (1/3 and 3/3 given, 2/3 not) are not an error: the run is reported as
  incomplete (:func:`gap`: on the report's first screen, in ``findings``, and ``diff`` fails its gate), as an
  interrupted run is, since what did run is still worth reading;
- headers that differ in what should not (onnx or suite version, graph forms, tier, expectations file) give
  warnings kept in the merged header (``shards.warnings``) and shown with the shards.

Every run's cases come back in one canonical order, (case id, graph form), whatever order the workers of one
machine or the shards of several finished them in: so the report, ``findings`` and ``diff`` of the same cases
are the same however the run was spread (a finding's example is its first case in that order).

The merged header is the first shard's, with ``started`` the earliest start, ``shard`` null and ``shards``
(N, each file's shard, start, duration and case count, the missing shards, the warnings); the merged summary
(null when a shard has none) has the counts of the merged cases, the longest shard's duration (the wall time
of shards run side by side), the expectations tally recomputed over all shards (an entry holds when any
shard's case ended as recorded; it is stale only when no shard's case did) and how each shard ended.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import cast

from ..domain import parse_shard
from ..gcpause import gc_paused
from .files import read
from .record_schema import ResultsError
from .records import READ, CaseRecord, ExpectationRecord, Header, Results, Shards, StaleEntry, Summary, Tally
from .tally import SUBSET, tally

#: header fields the shards of one run should share; a difference is a warning shown with the shards
_SHOULD_MATCH = ("onnx_version", "suite_version", "forms", "tier", "suite", "expectations",
                 "strict_expectations")
#: what a case no expectation entry matched has of one
_NO_ENTRY = cast(ExpectationRecord, {})
#: what a shard without a summary line has of one
_NO_SUMMARY = cast(Summary, {})
#: the graph form of a case file's load-error record: every shard carries it (it is never deselected)
_LOAD_FORM = "load"


@dataclass(frozen=True)
class _Part:
    path: Path
    head: Header
    cases: list[CaseRecord]
    summary: Summary | None
    k: int
    n: int

    @property
    def label(self) -> str:
        return f"{self.path} ({self.k}/{self.n})"


def _shard(path: Path, head: Header) -> tuple[int, int] | None:
    value = head.get("shard")
    if value is None:
        return None
    try:
        return parse_shard(value) if isinstance(value, str) else parse_shard("")
    except ValueError:
        raise ResultsError(f"{path}:1: shard must be K/N with 1 <= K <= N, not "
                           f"{json.dumps(value)[:40]}") from None


def _canonical(run: Results) -> Results:
    head, cases, summary = run
    return head, sorted(cases, key=lambda c: (c["id"], c.get("form") or "")), summary


def _name(head: Header) -> str:
    return f"{head.get('backend', '?')} {head.get('backend_version', '?')}"


def load_runs(paths: Sequence[Path], check_fields: bool = True) -> list[Results]:
    """The runs ``paths`` hold, in the order their first file was given: each unsharded file one run, the
    shard files of each backend one merged run (``check_fields``: see ``results.read``)."""
    with gc_paused():  # (the records made live on: gcpause.py)
        return _load_runs(paths, check_fields)


def _load_runs(paths: Sequence[Path], check_fields: bool) -> list[Results]:
    runs: list[Results | list[_Part]] = []
    groups: dict[str, list[_Part]] = {}
    for path in paths:
        head, cases, summary = read(path, check_fields)
        shard = _shard(path, head)
        if shard is None:
            runs.append(_canonical((head, cases, summary)))
            continue
        part = _Part(path, head, cases, summary, *shard)
        backend = str(head.get("backend"))
        if backend not in groups:
            groups[backend] = []
            runs.append(groups[backend])
        groups[backend].append(part)
    return [_merge(r) if isinstance(r, list) else r for r in runs]


def load_run(paths: Sequence[Path], check_fields: bool = True) -> Results:
    """The one run ``paths`` hold: one results file, or shard files of one backend and version (merged)."""
    runs = load_runs(paths, check_fields)
    if not runs:
        raise ResultsError("no results file given")
    if len(runs) > 1:
        names = ", ".join(str(p) for p in paths)
        backends = sorted({str(h.get("backend")) for h, _, _ in runs})
        why = (f"results of different backends ({', '.join(backends)})" if len(backends) > 1 else
               "not the shard files of one run (a file without a shard in its header is a whole run)")
        raise ResultsError(f"{names}: {why}; give one results file, or the --shard K/N files of one run")
    return runs[0]


def gap(head: Header) -> str:
    """What a merged run lacks ("shard 2 of 3 is missing"), or "" (a whole run, or every shard given)."""
    shards = head.get("shards") or cast(Shards, {})
    missing, n = shards.get("missing") or [], shards.get("n")
    if not missing:
        return ""
    listed = ", ".join(map(str, missing[:-1])) + (" and " if len(missing) > 1 else "") + str(missing[-1])
    return f"shard{'s' * (len(missing) > 1)} {listed} of {n} {'are' if len(missing) > 1 else 'is'} missing"


def incomplete(run: Results) -> list[str]:
    """Why a run is incomplete, one line each (none: it is whole): a file without its summary line (a run
    killed outright, or still running) or with malformed lines skipped (how many, the first one's number), a
    run stopped by a signal or before its first case, shards missing. Every reader of results files says these
    (``report`` on its first screen and on stderr, ``findings``, ``diff``, which fails its gate on them)."""
    head, _, summary = run
    lines = []
    for f in head.get(READ) or []:
        problems = []
        if not f.get("summary"):
            problems.append("no summary line (the run was killed, crashed or is still running: the cases it "
                            "had not finished are missing)")
        n = f.get("malformed") or 0
        if n:
            problems.append(f"{n:,} malformed line{'s' * (n != 1)} skipped (not JSON: cut short or garbled), "
                            f"the first at line {f.get('first_malformed')}")
        if problems:
            lines.append(f"{f.get('file')}: incomplete: {'; '.join(problems)}")
    if summary and summary.get("interrupted"):
        lines.append(f"{_name(head)}: incomplete: the run was interrupted "
                     f"({summary.get('signal') or 'a signal'})")
    if summary and summary.get("error"):
        lines.append(f"{_name(head)}: incomplete: the run ended before its first case "
                     f"({' '.join(str(summary['error']).split())[:300]})")
    if gap(head):
        lines.append(f"{_name(head)}: incomplete: {gap(head)}")
    return lines


def shards_text(head: Header) -> str:
    """One line on the shard files of a merged run ("" for a whole run)."""
    shards = head.get("shards")
    if not shards:
        return ""
    given = "; ".join(f"{g['k']}/{shards['n']} {g['file']} ({g['cases']:,} case-forms"
                      + (f", {g['duration_s']:.0f} s)" if g.get("duration_s") is not None
                         else ", did not finish)")
                      for g in shards["given"])
    text = f"{len(shards['given'])} of {shards['n']} shards merged: {given}"
    missing = gap(head)
    return text + (f". {missing[0].upper()}{missing[1:]}." if missing else "") + "".join(
        f" Warning: {w}." for w in shards.get("warnings") or [])


def _merge(parts: list[_Part]) -> Results:
    parts = sorted(parts, key=lambda p: p.k)
    first = parts[0]
    for p in parts[1:]:
        if p.head.get("backend_version") != first.head.get("backend_version"):
            raise ResultsError(f"{first.path} ({_name(first.head)}) and {p.path} ({_name(p.head)}): the "
                               "shards of one run must share the backend version")
        if p.n != first.n:
            raise ResultsError(f"{first.label} and {p.label}: shards of different runs (the shards of one "
                               "run share N)")
    for a, b in pairwise(parts):
        if a.k == b.k:
            raise ResultsError(f"{a.path} and {b.path}: shard {a.k}/{a.n} given twice")
    cases = _union(parts)
    started = min(str(p.head.get("started") or "") for p in parts)
    head: Header = {**first.head, "started": started, "shard": None,
            READ: [f for p in parts for f in p.head.get(READ) or []],
            "shards": {"n": first.n,
                       "given": [{"k": p.k, "file": str(p.path), "started": p.head.get("started"),
                                  "duration_s": (p.summary or _NO_SUMMARY).get("duration_s"),
                                  "cases": len(p.cases)}
                                 for p in parts],
                       "missing": sorted(set(range(1, first.n + 1)) - {p.k for p in parts}),
                       "warnings": _differences(parts)}}
    return _canonical((head, cases, _summary(parts, cases)))


def _union(parts: list[_Part]) -> list[CaseRecord]:
    """Every shard's cases once; a case in two shards is an error naming it and both files."""
    owner: dict[tuple[str, str], _Part] = {}
    cases: list[CaseRecord] = []
    for p in parts:
        keys = [(c["id"], c.get("form") or "") for c in p.cases]
        twice = sorted({k for k in keys if k in owner and k[1] != _LOAD_FORM})
        if twice:
            cid, form = twice[0]
            raise ResultsError(f"{owner[twice[0]].label} and {p.label} both hold case {cid} [{form}]"
                               + (f" (and {len(twice) - 1:,} more)" if len(twice) > 1 else "")
                               + ": the shards of one run hold each case once")
        for key, c in zip(keys, p.cases, strict=True):
            if key not in owner:  # (a case file's load-error record is in every shard: kept once)
                owner[key] = p
                cases.append(c)
    return cases


def _differences(parts: list[_Part]) -> list[str]:
    out = []
    for key in _SHOULD_MATCH:
        values = {_text(p.head.get(key)) for p in parts}
        if len(values) > 1:
            out.append(f"the shards differ in {key}: " + ", ".join(f"{p.path} {_text(p.head.get(key))}"
                                                                    for p in parts))
    return out


def _text(value: object) -> str:
    return "null" if value is None else str(value)


def _summary(parts: list[_Part], cases: list[CaseRecord]) -> Summary | None:
    if any(p.summary is None for p in parts):
        return None  # a shard did not finish: nor did the run
    sums = [p.summary for p in parts if p.summary is not None]
    counts = Counter(c["status"] for c in cases)
    out: Summary = {
        "type": "summary", "counts": dict(sorted(counts.items())),
        "duration_s": max(float(s.get("duration_s") or 0) for s in sums),
        "finished": max(str(s.get("finished") or "") for s in sums),
        "exitstatus": max((int(e) for s in sums if isinstance(e := s.get("exitstatus"), int)), default=None),
        "surprises": [x for s in sums for x in (s.get("surprises") or [])][:1000]}
    for p in parts:
        s = p.summary or _NO_SUMMARY
        if s.get("interrupted") and "interrupted" not in out:
            out["interrupted"] = True
            out["signal"] = f"{s.get('signal') or 'signal'} in shard {p.k}/{p.n}"
        if s.get("error") and "error" not in out:
            out["error"] = f"shard {p.k}/{p.n}: {s['error']}"
    # a shard that did not check its entries for a reason besides being a shard (stopped early, -k): nor did
    # the run
    unchecked = next((r for r in sorted({_besides_shard(str(s.get("stale_unchecked") or "")) for s in sums})
                      if r), "")
    if not unchecked and len({p.k for p in parts}) < parts[0].n:  # shards missing: a subset of the corpus
        unchecked = f"{SUBSET}{len({p.k for p in parts})} of {parts[0].n} shards"
    stale, tally = _expectations(parts, cases, checked=not unchecked)
    out["stale_expectations"] = stale
    if unchecked:
        out["stale_unchecked"] = unchecked
    if tally is not None:
        out["expectations"] = tally
    return out


def _besides_shard(reason: str) -> str:
    """A shard's ``stale_unchecked`` without its shard ("" when being a shard was the only reason)."""
    if not reason.startswith(SUBSET):
        return reason
    rest = re.sub(r"(^|, )--shard \d+/\d+", "", reason[len(SUBSET):]).removeprefix(", ")
    return f"{SUBSET}{rest}" if rest else ""


def _shard_stale(summary: Summary) -> list[StaleEntry]:
    return list(summary.get("stale_in_shard") or summary.get("stale_expectations") or [])


def _expectations(parts: list[_Part], cases: list[CaseRecord],
                  checked: bool = True) -> tuple[list[StaleEntry], Tally | None]:
    """The stale entries and the tally of the whole run: an entry is stale when every shard that matched it
    (or every shard: one that matches none) lists it stale; the rest counted over the cases of all shards, as
    the run counts them (:func:`qdq_conformance.results.tally.tally`)."""
    # (a shard checks no entry itself, being a subset: its stale_in_shard are the entries all of whose cases
    # passed there; a results file written before says them in stale_expectations)
    lists = [{e.get("line"): e for e in _shard_stale(p.summary or _NO_SUMMARY)} for p in parts]
    shard_matched = [{(c["expectation"] or _NO_ENTRY).get("line") for c in p.cases} for p in parts]
    candidates = {line: e for lst in lists for line, e in lst.items()}
    stale = [e for line, e in sorted(candidates.items(), key=lambda kv: kv[0] or 0)
             if all(line in lst or line not in m for lst, m in zip(lists, shard_matched, strict=True))] \
        if checked else []
    tallies = [(p.summary or _NO_SUMMARY).get("expectations") for p in parts]
    if any(not isinstance(t, dict) for t in tallies):
        return stale, None
    in_force = tallies[0].get("in_force") if tallies[0] else None
    return stale, tally(cases, in_force if isinstance(in_force, int) else None,
                        len(stale) if checked else None)
