"""Rendering results files (JSON Lines from ``--results``) as one self-contained HTML report.

Case details are embedded as compact JSON and rendered on demand in the browser, so a 10,000-case report
stays small and opens quickly. The template is autoescaped; embedded JSON is escaped for a <script> element.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, cast

from qdq_conformance.ambiguities import ReadingKey
from qdq_conformance.domain import FAILING, FAILING_ORDER, HARNESS, JUDGED, CaseStatus, RunStatus
from qdq_conformance.gcpause import gc_paused
from qdq_conformance.results import CaseRecord, Header, Results, Standing, standing_of
from qdq_conformance.results.compact import expansion, short_names
from qdq_conformance.results.merge import load_run, load_runs, shards_text
from qdq_conformance.results.tally import needs_attention, summary_lines

from .casepage import page_data
from .compliance import KEPT, run_date
from .findings import Finding, index
from .overview import Overview, overview
from .page import environment, pack, write_page
from .page import unpack as unpack  # (re-exported: tests and tools read a rendered report with it)
from .wording import shorten

#: the statuses in the order the report lists them: the tool's own failures (harness errors, apart from every
#: backend result), then the backend's failures
ORDER = [RunStatus.HARNESS_ERROR.value, *FAILING_ORDER, RunStatus.UNSUPPORTED.value,
         RunStatus.IMPLEMENTATION_DEFINED.value, RunStatus.PASSED.value]
#: The record's fields each entry of the report's embedded case list holds (under the short names of
#: ``results.compact``, which the page's script expands back)
LISTED = ("id", "form", "status", "operator", "domain", "version", "types", "family", "granularity",
          "case_status", "message", "ambiguity", "expectation", "duration")
#: what an entry holds besides a record's fields: how the case stands against its expectation entry
#: (``results.standing``: the page shows it, it does not work it out), the position of the case's finding (its
#: row), and the details of a case that did not plainly pass (the record's fields under their own names)
STANDING, FINDING, DETAILS = "standing", "finding", "details"
#: long name -> short name of every key of an entry
NAMES = short_names((STANDING, FINDING, DETAILS))
_LISTED = tuple((name, NAMES[name]) for name in LISTED)
_SHORT_MESSAGE, _SHORT_STANDING, _SHORT_FINDING, _SHORT_DETAILS = (
    NAMES[k] for k in ("message", STANDING, FINDING, DETAILS))
#: (bound once: reading an enum member off its class costs 0.3 us on Python 3.11, and a report tests every
#: record)
_PASSED, _UNSUPPORTED = RunStatus.PASSED.value, RunStatus.UNSUPPORTED.value
_IMPLEMENTATION_DEFINED = RunStatus.IMPLEMENTATION_DEFINED.value
_CASE_IMPLEMENTATION_DEFINED = CaseStatus.IMPLEMENTATION_DEFINED.value
#: the fields of a case's details
DETAIL_FIELDS = ("spec", "attributes", "inputs", "expected", "actual", "mismatches", "repro", "behaviour",
                 "reading", "readings", "comparison", "rule", "defect", "defect_why", "source")




def unpack_cases(data: str) -> list[dict[str, object]]:
    """A rendered report's case list (the text of its data block), each entry under the record's own names,
    as the page's script reads it (for tests and tools reading a rendered report)."""
    back = expansion(NAMES)
    return [{back[k]: v for k, v in entry.items()} for entry in cast(list[dict[str, object]], unpack(data))]


def _entry(rec: CaseRecord, standing: Standing, finding: int | None) -> dict[str, Any]:
    """One entry of the page's case list, under the short names (:data:`NAMES`)."""
    get = cast(dict[str, Any], rec).get  # (read by the names of the tables above)
    message = rec.get("message") or ""
    out = {short: get(name) for name, short in _LISTED}
    out[_SHORT_MESSAGE] = shorten(message, 300, middle=False)
    out[_SHORT_STANDING] = standing.value
    if finding is not None:
        out[_SHORT_FINDING] = finding
    if rec["status"] != _PASSED:
        details = {k: v for k in DETAIL_FIELDS if (v := get(k))}
        failing = rec["status"] in FAILING or rec["status"] in HARNESS
        if failing and (len(message) > 300 or "Traceback" in message):
            details["message"] = message  # whole in the details; the list shows it cut at a word
        shown = failing or details.get("actual")
        out[_SHORT_DETAILS] = page_data(cast(CaseRecord, details)) if shown else details
    return out


_LATER: dict[str, int] = {RunStatus.IMPLEMENTATION_DEFINED: 3, RunStatus.UNSUPPORTED: 4}


def _rank(rec: CaseRecord, standing: Standing, finding: int | None) -> tuple[int, int]:
    """The case list's order: harness errors, unexpected failures (by finding), unexpected passes, expected
    failures (by finding), implementation-defined, unsupported, passed; the run's order within each (case
    id, graph form: :mod:`qdq_conformance.results.merge`)."""
    s = rec["status"]
    if standing is Standing.HARNESS_ERROR:  # (first of all: the tool's own fault)
        return (-1, 0)
    if s in FAILING:
        return (2 if standing is Standing.EXPECTED else 0, finding or 0)
    if standing is Standing.UNEXPECTED_PASS:
        return (1, 0)
    return (_LATER.get(s, 5), 0)


def packed_cases(cases: list[CaseRecord], findings: list[Finding]) -> str:
    """The page's case list: one entry per case-form, in the list's order (:func:`_rank`)."""
    where = index(findings)
    keyed = [(c, standing_of(c), where.get((c["id"], c.get("form") or "-"))) for c in cases]
    keyed.sort(key=lambda csf: _rank(*csf))  # stable: run order within a rank
    return pack([_entry(*csf) for csf in keyed])


def summarize(head: Header, cases: list[CaseRecord]) -> dict[str, object]:
    counts = Counter(c["status"] for c in cases)
    per_version: dict[str, Counter] = defaultdict(Counter)
    matrix: dict[tuple[str, str], Counter] = defaultdict(Counter)
    gmatrix: dict[tuple[str, str], Counter] = defaultdict(Counter)
    expected = dict.fromkeys(sorted(FAILING), 0)  # failing cases an expectation entry covers, per status
    for c in cases:
        key = f"{c.get('domain')}::{c.get('operator')}-{c.get('version')}"
        y = (c.get("types") or {}).get("y") or "?"
        # "expected": failing cases an expectation entry covers (shown apart from unexpected failures)
        expected_failure = c["status"] in FAILING and standing_of(c) is Standing.EXPECTED
        statuses = (c["status"], "expected") if expected_failure else (c["status"],)
        if len(statuses) == 2:
            expected[c["status"]] += 1
        for s in statuses:
            per_version[key][s] += 1
            matrix[(key, y)][s] += 1
            gmatrix[(key, c.get("granularity") or "?")][s] += 1
    scores = []
    for key, cnt in sorted(per_version.items()):
        judged = sum(cnt[s] for s in JUDGED)
        scores.append({"key": key, "counts": dict(cnt),
                       "score": (100.0 * cnt["passed"] / judged) if judged else None,
                       "unexpected": sum(cnt[s] for s in FAILING) - cnt["expected"]})
    types = sorted({y for _, y in matrix})
    return {"counts": {s: counts.get(s, 0) for s in ORDER}, "expected": expected, "total": len(cases),
            "scores": scores, "types": types,
            "matrix": {f"{k}|{y}": dict(v) for (k, y), v in matrix.items()},
            "granularities": sorted({g for _, g in gmatrix}),
            "gmatrix": {f"{k}|{g}": dict(v) for (k, g), v in gmatrix.items()},
            "readings": readings_table(cases), "readings_expected": readings_expected(cases),
            "expectations": expectations_table(cases)}


def followed(c: CaseRecord) -> tuple[str, str] | None:
    """(ambiguity entry, what the backend did) for an implementation-defined case: the catalogued reading it
    follows, or that it follows none (failed), or declined it; None for other cases."""
    if c.get("case_status") != _CASE_IMPLEMENTATION_DEFINED:
        return None
    reading = c.get("reading")
    if reading:
        try:
            return ReadingKey.parse(reading)
        except ValueError:  # (a record written by hand, or by another tool: its text, under no entry)
            return c.get("ambiguity") or "?", str(reading)
    amb = c.get("ambiguity") or "?"
    if c["status"] in FAILING:
        return amb, "none of the catalogued readings"
    if c["status"] == _IMPLEMENTATION_DEFINED:
        return amb, "not judged (no readings recorded)"
    return amb, c["status"]


def readings_table(cases: list[CaseRecord]) -> dict[str, list[tuple[str, int]]]:
    """Per ambiguity-catalogue entry: which reading the backend follows, with the number of case-forms."""
    table: dict[str, Counter] = defaultdict(Counter)
    for c in cases:
        f = followed(c)
        if f is not None:
            table[f[0]][f[1]] += 1
    return {a: v.most_common() for a, v in sorted(table.items())}


def readings_expected(cases: list[CaseRecord]) -> dict[str, int]:
    """Per ambiguity-catalogue entry, the case-forms that follow none of its readings that an expectation
    entry covers (the readings table colours them as expected failures)."""
    out: Counter[str] = Counter()
    for c in cases:
        f = followed(c)
        if f is not None and c["status"] in FAILING and standing_of(c) is Standing.EXPECTED:
            out[f[0]] += 1
    return dict(out)


def safe_link(link: object) -> str | None:
    """An http(s) URL from a results file, or None: a report never renders another scheme (javascript:, data:)
    as a link."""
    return link if isinstance(link, str) and re.fullmatch(r"https?://[^\s\"'<>]+", link) else None


#: the column of the expectations table a case that matched an entry counts in, by how it stands against it
_COLUMN = {Standing.EXPECTED: "met", Standing.NOT_JUDGED: "unsupported",
           Standing.UNEXPECTED_PASS: "unexpected", Standing.NEW_FAILURE: "unexpected",
           Standing.HARNESS_ERROR: "harness_errors"}


def expectations_table(cases: list[CaseRecord]) -> list[dict[str, object]]:
    """One row per expectation entry that matched a case (met / unexpected counts), plus one row for failing
    cases no entry covers; rows with unexpected results first."""
    rows: dict[int | None, dict[str, Any]] = {}
    for c in cases:
        e = c.get("expectation")
        if e:
            row = rows.setdefault(e.get("line"), {"line": e.get("line"), "status": e.get("status"),
                                                  "reason": e.get("reason"), "link": safe_link(e.get("link")),
                                                  "cases": 0, "met": 0, "unexpected": 0, "unsupported": 0,
                                                  "harness_errors": 0, "example": c["id"]})
            row["cases"] += 1
            # a case the backend does not run neither meets nor breaks its entry, nor one this tool's own code
            # failed on: each is counted as what it is
            row[_COLUMN[standing_of(c)]] += 1
        elif c["status"] in FAILING:
            row = rows.setdefault(None, {"line": None, "status": "(none)", "reason": "failing cases that no "
                                         "expectation entry covers", "link": None, "cases": 0, "met": 0,
                                         "unexpected": 0, "unsupported": 0, "harness_errors": 0,
                                         "example": c["id"]})
            row["cases"] += 1
            row["unexpected"] += 1
    return sorted(rows.values(), key=lambda r: (-r["unexpected"], r["line"] if r["line"] is not None else -1))


def finding_rows(ov: Overview, findings: list[Finding] | None = None) -> list[dict[str, object]]:
    """The findings table's rows (the report's and the scoreboard's); ``findings``: others than the run's (the
    baseline's findings that are gone)."""
    appeared = {f.key for f in ov.since.appeared} if ov.since else set()
    grown = {f.key: n for f, n in ov.since.grown} if ov.since else {}
    return [{"n": k, "id": f.id, "state": f.state, "count": f.count, "expected": f.expected, "what": f.what(),
             "plain": f.example.get("plain") or "",
             "operator": f.operator.split("::")[-1], "domain": f.operator.split("::")[0],
             "versions": f.version_span(ov.known), "where": f.where(), "types": f.types_text(),
             "nodes": f.nodes_text(),
             "example": f.example["id"], "example_form": f.example.get("form"),
             "since": "new since the baseline" if f.key in appeared else
                      f"was {grown[f.key]:,}" if f.key in grown else "",
             "entries": [{"line": e["line"], "reason": " ".join((e.get("reason") or "").split()),
                          "link": safe_link(e.get("link")), "cases": e["cases"]}
                         for e in sorted(f.entries.values(), key=lambda e: -e["cases"])]}
            for k, f in enumerate(ov.findings if findings is None else findings)]


def render(results: list[Results], out: Path, baseline: Results | None = None,
           baseline_name: str = "") -> Path:
    """One report (one results file, optionally against a baseline run) or a scoreboard (several)."""
    with gc_paused():  # (the page's data is tens of thousands of objects that live until it is written)
        html = _page(results, baseline, baseline_name)
    return write_page(out, html)


def _page(results: list[Results], baseline: Results | None, baseline_name: str) -> str:
    env = environment()
    if len(results) == 1:
        head, cases, summary = results[0]
        ov = overview(results[0], baseline, baseline_name)
        return env.get_template("report.html.j2").render(
            head=head, summary=summarize(head, cases), run_summary=summary or {},
            expectation_lines=summary_lines(head.get("expectations_status"),
                                            summary.get("expectations") if summary else None,
                                            summary.get("stale_unchecked") if summary else None),
            expectations_attention=needs_attention(head.get("expectations_status")),
            ov=ov, verdict=ov.verdict(), findings=pack(finding_rows(ov)), failing=FAILING,
            gone=pack(finding_rows(ov, ov.since.gone)) if ov.since else "",
            data=packed_cases(cases, ov.findings), names=json.dumps(expansion(NAMES), sort_keys=True),
            order=ORDER, shards=shards_text(head))
    return env.get_template("scoreboard.html.j2").render(**scoreboard(results), order=ORDER, failing=FAILING)


def scoreboard(results: list[Results]) -> dict[str, object]:
    backends = [f"{h.get('backend')} {h.get('backend_version')}"
                + (f" (kept results of {run_date(h)[:10]})" if h.get(KEPT) else "")
                for h, _, _ in results]
    table: dict[str, dict[int, str]] = defaultdict(dict)
    for k, (_, cases, _) in enumerate(results):
        for c in cases:
            table[f"{c['id']} [{c.get('form')}]"][k] = c["status"]
    keyed = []
    for cid, statuses in table.items():
        values = [statuses.get(k, "-") for k in range(len(results))]
        # A backend that did not run a case (unsupported, or absent) neither agrees nor disagrees.
        judged = {v for v in values if v not in (_UNSUPPORTED, "-")}
        keyed.append((len(judged) <= 1, cid, values))
    keyed.sort(key=lambda r: r[:2])
    rows = [{"id": cid, "statuses": values, "disagree": not agree} for agree, cid, values in keyed]
    sums = [summarize(h, cases) for h, cases, _ in results]
    per_backend = [readings_table(cases) for _, cases, _ in results]
    readings = {a: [dict(t.get(a, [])) for t in per_backend]
                for a in sorted({a for t in per_backend for a in t})}
    expected_readings = [readings_expected(cases) for _, cases, _ in results]
    overviews = [overview(r) for r in results]
    return {"backends": backends, "data": pack(rows), "totals": [s["counts"] for s in sums],
            "expected": [s["expected"] for s in sums], "readings": readings,
            "readings_expected": expected_readings, "disagreements": sum(not agree for agree, _, _ in keyed),
            "total": len(rows), "incomplete": [line for ov in overviews for line in ov.incomplete],
            "per_backend": [{"name": name, "verdict": ov.verdict(), "stats": ov.stats(),
                             "failing": ov.failing, "count": len(ov.findings),
                             "findings": pack(finding_rows(ov))}
                            for name, ov in zip(backends, overviews, strict=True)]}


def render_results_file(path: Path, out: Path) -> Path:
    """The report of the results file a run has just written (``--report``): its records came from this
    process's runner, so their fields are not checked again (``results.read``)."""
    return render([load_run([path], check_fields=False)], out)


def render_files(paths: list[Path], out: Path, baseline: list[Path] | None = None) -> Path:
    """A report of one run or a scoreboard of several (shard files merged:
    :mod:`qdq_conformance.results.merge`); ``baseline``: an earlier run (a results file or its shard files)
    the report (one run) compares against."""
    return render(load_runs(paths), out, load_run(baseline) if baseline else None,
                  ", ".join(map(str, baseline or [])))
