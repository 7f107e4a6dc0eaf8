"""A backend's releases side by side: findings as rows, releases as columns, and for each finding the first
release it shows on (first bad) and the first release from which it is gone for good (first good).

The runs are one results file (or set of shard files) per release, read through ``results.merge``: a full run,
or a kept subset (``results/kept.py``'s ``keep_subset``: the records of the case-forms some release fails,
and the summary's counts). A finding is :func:`.findings.group`'s, so its identity is its signature: an
upgrade that only rewords an error makes no new row.

A cell is the finding's failing case-forms on that release; where it has none, what its case-forms did there:
*passed* (some passed: the release is good for it), *unsupported* (the release declines them all), *other*
(they fail under another signature), or nothing recorded. First good is the first release after the finding's
last bad one on which its cases pass; a finding on the newest release has none. A finding on the oldest
release run may be older than it (shown ``<= 1.16.3``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from qdq_conformance.domain import BOTH, FAILING, RunStatus
from qdq_conformance.results import Header, Results, StaleEntry, Summary, Tally

from .compliance import md
from .findings import group, known_versions
from .page import environment

#: a case whose run raised in this tool's own code (never a finding: counted apart)
HARNESS_ERROR = "harness-error"
#: the header key of a kept subset of a run (``results/kept.py``): its totals are the summary's counts
SUBSET = "kept_subset"
_GOOD = {RunStatus.PASSED.value, RunStatus.IMPLEMENTATION_DEFINED.value}

BAD, GOOD, UNSUPPORTED, OTHER, NONE = "bad", "passed", "unsupported", "other", "-"


@dataclass
class Release:
    """One column: a release's run and its totals."""

    version: str
    date: str
    counts: Counter[str]
    findings: int = 0
    exitstatus: int | None = None
    stale: list[StaleEntry] = field(default_factory=list)
    new_failures: int | None = None
    seconds: float | None = None
    scope: str = ""  # the graph forms run, and the shard: what the counts are of

    @property
    def failing(self) -> int:
        return sum(self.counts[s] for s in FAILING)

    @property
    def harness_errors(self) -> int:
        return self.counts[HARNESS_ERROR]


@dataclass
class Row:
    """One finding across the releases."""

    key: tuple[str, ...]
    id: str
    description: str = ""
    counts: dict[str, int] = field(default_factory=dict)  # release -> failing case-forms of this finding
    cases: set[tuple[str, str]] = field(default_factory=set)  # its case-forms on any release
    cells: list[str] = field(default_factory=list)  # per release: BAD, GOOD, UNSUPPORTED, OTHER or NONE
    first_bad: str | None = None
    first_good: str | None = None
    since_first: bool = False  # it shows on the oldest release run (it may be older)


@dataclass
class History:
    backend: str
    releases: list[Release]
    rows: list[Row]


def _order(version: str) -> tuple[int, Version | str]:
    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


def history(runs: Sequence[Results]) -> History:
    """The table of ``runs`` (one per release, any order)."""
    runs = sorted(runs, key=lambda r: _order(str(r[0].get("backend_version"))))
    releases: list[Release] = []
    rows: dict[tuple[str, ...], Row] = {}
    statuses: list[dict[tuple[str, str], str]] = []
    for head, cases, summary in runs:
        version = str(head.get("backend_version"))
        counts = Counter(c["status"] for c in cases)
        if head.get(SUBSET) and summary:
            counts = Counter(summary.get("counts") or {})
        found = group(cases)
        known = known_versions(cases)
        end: Summary = summary or {"counts": {}}
        tally: Tally | dict[str, int] = end.get("expectations") or {}
        releases.append(Release(version, str(head.get("started") or "?")[:10], counts, len(found),
                                end.get("exitstatus"), list(end.get("stale_expectations") or []),
                                tally.get("new_failures"), end.get("duration_s"), _scope(head)))
        statuses.append({(c["id"], c.get("form") or "-"): c["status"] for c in cases})
        for f in found:
            row = rows.setdefault(f.key, Row(f.key, f.id))
            row.counts[version] = f.count
            row.cases.update(f.cases)
            row.description = f.description(known)  # (the newest release's words)
    for row in rows.values():
        _judge(row, releases, statuses)
    ordered = sorted(rows.values(), key=lambda r: (_order(r.first_bad or ""), r.first_good is None,
                                                   _order(r.first_good or ""), -sum(r.counts.values()),
                                                   r.id))
    backend = str(runs[0][0].get("backend")) if runs else "?"
    return History(backend, releases, ordered)


def _scope(head: Header) -> str:
    """``both forms``, ``runtime form, shard 1/8``: what a run's counts are of."""
    forms = head.get("forms")
    names = forms if isinstance(forms, list) else [forms] if forms else []
    text = "both forms" if len(names) > 1 or names == [BOTH] else f"{names[0]} form" if names else "?"
    selection = head.get("selection") or {}
    shard = selection.get("--shard") or head.get("shard")
    picked = [f"{k} {v}" for k, v in selection.items() if k in ("-k", "-m")]
    return ", ".join([text, *([f"shard {shard}"] if shard else []), *picked])


def _judge(row: Row, releases: list[Release], statuses: list[dict[tuple[str, str], str]]) -> None:
    """The row's cells, first bad and first good."""
    for release, status in zip(releases, statuses, strict=True):
        if row.counts.get(release.version):
            row.cells.append(BAD)
            continue
        seen = {status[c] for c in row.cases if c in status}
        row.cells.append(GOOD if seen & _GOOD else OTHER if seen & FAILING else
                         UNSUPPORTED if RunStatus.UNSUPPORTED.value in seen else NONE)
    bad = [k for k, cell in enumerate(row.cells) if cell == BAD]
    row.first_bad = releases[bad[0]].version
    row.since_first = bad[0] == 0
    row.first_good = next((releases[k].version for k in range(bad[-1] + 1, len(releases))
                           if row.cells[k] == GOOD), None)


def first_bad_text(row: Row) -> str:
    return f"<= {row.first_bad}" if row.since_first else str(row.first_bad)


def first_good_text(row: Row) -> str:
    if row.first_good:
        return row.first_good
    return "(still fails)" if row.cells and row.cells[-1] == BAD else "(not judged since)"


def _cell(row: Row, k: int, release: Release) -> str:
    cell = row.cells[k]
    return str(row.counts[release.version]) if cell == BAD else {GOOD: "ok", UNSUPPORTED: "unsupp.",
                                                                  OTHER: "other", NONE: "-"}[cell]


def _time(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.0f} s"


def releases_table(h: History) -> list[str]:
    """Per release: the exit status with the expectations in force, counts, findings, harness errors, stale
    entries, time."""
    out = ["| release | run of | cases | exit | passed | failing case-forms | unsupported | findings | "
           "harness errors | stale entries | time |", "|---|---|---|" + "---:|" * 8]
    for r in h.releases:
        exit_text = "-" if r.exitstatus is None else r.exitstatus
        out.append(f"| {md(r.version)} | {md(r.date)} | {md(r.scope)} | {exit_text} | "
                   f"{r.counts[RunStatus.PASSED.value]} | {r.failing} | "
                   f"{r.counts[RunStatus.UNSUPPORTED.value]} | {r.findings} | "
                   f"{r.harness_errors} | {len(r.stale)} | {_time(r.seconds)} |")
    return out


def markdown(h: History, title: str | None = None, level: int = 1) -> str:
    """The history as Markdown: the releases, then the findings x releases table."""
    hashes = "#" * level
    out = [f"{hashes} {md(title or f'{h.backend}: findings across releases')}", ""]
    out += ["Exit: the run's exit status with the expectations in force (0: every failure expected). "
            "Stale entries: entries in force that no case showed on that release. Time: the run's wall time.",
            "", *releases_table(h), ""]
    out += [f"{hashes}# Findings by release", "",
            "Each finding's failing case-forms per release; where none: *ok* (its cases pass), *unsupp.* "
            "(the release declines them), *other* (they fail another way), *-* (not run). First bad: the "
            "first release it shows on (`<=`: already on the oldest release run); first good: the first "
            "release after its last bad one on which its cases pass.", ""]
    out.append("| finding | first bad | first good | " + " | ".join(md(r.version) for r in h.releases) + " |")
    out.append("|---|---|---|" + "---:|" * len(h.releases))
    for row in h.rows:
        cells = " | ".join(_cell(row, k, r) for k, r in enumerate(h.releases))
        out.append(f"| {md(row.id)}: {md(row.description)} | {md(first_bad_text(row))} | "
                   f"{md(first_good_text(row))} | {cells} |")
    if not h.rows:
        out.append("| no failing case on any release | | |" + " |" * len(h.releases))
    stale = [(r.version, s) for r in h.releases for s in r.stale]
    if stale:
        out += ["", f"{hashes}# Stale expectation entries per release", ""]
        out += [f"- {md(v)}: line {s.get('line')} ({md(', '.join((s.get('cases') or [])[:3]))})"
                for v, s in stale]
    return "\n".join(out) + "\n"


def html(h: History, title: str | None = None) -> str:
    """The same as a self-contained HTML page."""
    template = environment().get_template("history.html.j2")
    rows = [{"id": r.id, "description": r.description, "first_bad": first_bad_text(r),
             "first_good": first_good_text(r),
             "cells": [(c, _cell(r, k, h.releases[k])) for k, c in enumerate(r.cells)]} for r in h.rows]
    return template.render(title=title or f"{h.backend}: findings across releases", history=h, rows=rows,
                           time=_time, passed=RunStatus.PASSED.value, unsupported=RunStatus.UNSUPPORTED.value)


def write(h: History, out: Path) -> tuple[Path, Path]:
    """``out`` (.html) and the Markdown beside it (.md)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    page = out.with_suffix(".html")
    page.write_text(html(h), encoding="utf-8")
    text = out.with_suffix(".md")
    text.write_text(markdown(h), encoding="utf-8")
    return page, text
