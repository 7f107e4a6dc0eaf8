"""What a run's first screen says: the verdict, its findings, and what changed since a baseline run.

The HTML report renders :func:`overview`; ``qdq-conformance findings`` (:mod:`.commands`) prints
:func:`render_text` or :func:`to_json`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..domain import FAILING, HARNESS, RunStatus
from ..results import Header, Results, Standing, standing_of
from ..results.merge import gap, incomplete, shards_text
from .diff import CATEGORIES, diff_records, selection_text
from .findings import Finding, group, known_versions
from .wording import shorten


def n_of(n: int, what: str) -> str:
    """``1 finding``, ``2,340 findings``."""
    return f"{n:,} {what}{'' if n == 1 else 's'}"


@dataclass
class Since:
    """Changes against a baseline run: case categories (``diff``) and findings that appeared or are gone."""

    baseline: str
    counts: dict[str, int]
    appeared: list[Finding] = field(default_factory=list)  # signatures the baseline did not have
    gone: list[Finding] = field(default_factory=list)  # the baseline's findings this run does not have
    grown: list[tuple[Finding, int]] = field(default_factory=list)  # (finding, count in the baseline)

    def line(self) -> str:
        cats = ", ".join(f"{n:,} {k}" for k, n in self.counts.items() if n) or "no case changed status"
        return (f"Since {self.baseline}: {cats}; {n_of(len(self.appeared), 'finding')} new, {len(self.gone)} "
                f"gone, {len(self.grown)} grown.")


@dataclass
class Overview:
    findings: list[Finding]
    known: dict[str, list[Any]]
    counts: Counter[str]
    expected_failing: int
    unexpected_passes: int
    complete: bool
    since: Since | None = None
    gap: str = ""  # what a run merged from shard files lacks ("shard 2 of 3 is missing"), or ""
    subset: str = ""  # what selected the run's cases when it ran a subset of the corpus (diff.selection_text)
    incomplete: list[str] = field(default_factory=list)  # why the run is incomplete, one line each (merge.py)

    @property
    def failing(self) -> int:
        return sum(self.counts[s] for s in FAILING)

    @property
    def harness_errors(self) -> int:
        """Case-forms this tool's own code failed on: the tool's fault, apart from every backend result."""
        return sum(self.counts[s] for s in HARNESS)

    def harness_line(self) -> str:
        """The sentence that says whose fault the harness errors are ("" when there are none)."""
        n = self.harness_errors
        return "" if not n else (
            f"HARNESS ERRORS: qdq-conformance's own code raised on {n_of(n, 'case-form')}: the fault is the "
            "tool's, not the backend's; they say nothing of the backend and are no finding (status "
            "harness-error, each with its traceback).")

    @property
    def judged(self) -> int:
        return self.counts[RunStatus.PASSED] + self.failing

    @property
    def new_failing(self) -> int:
        return self.failing - self.expected_failing

    def verdict(self) -> tuple[str, str]:
        """(``ok`` / ``known`` / ``bad`` / ``none``, the sentence that answers "does this backend
        conform?")."""
        n, failing, judged = len(self.findings), self.failing, self.judged
        if not judged:
            kind, text = "none", "Nothing was judged: every case was unsupported or implementation-defined."
        elif not failing:
            kind, text = "ok", f"Conforms: all {n_of(judged, 'judged case-form')} pass."
        elif not self.new_failing:
            kind, text = "known", (f"Does not conform in {n_of(n, 'finding')} ({failing:,} of "
                                   f"{n_of(judged, 'judged case-form')} fail), all of them expected: an "
                                   "expectation entry covers every failing case. Nothing new.")
        else:
            new = [f for f in self.findings if f.new]
            known = n - len(new)
            text = (f"Does not conform: {len(new)} new finding{'s' * (len(new) != 1)} "
                    f"({n_of(self.new_failing, 'failing case-form')} no expectation entry covers)")
            if self.expected_failing:
                text += f", and {n_of(self.expected_failing, 'expected failing case-form')}" + \
                    (f" in {n_of(known, 'known finding')}" if known else "")
            kind, text = "bad", text + f"; {failing:,} of {n_of(judged, 'judged case-form')} fail."
        if self.unexpected_passes:
            text += (f" {n_of(self.unexpected_passes, 'case-form')} passed against an expectation entry (one "
                     "that records a failure, or unsupported).")
        if self.harness_errors:  # (never a green verdict: the cases the tool failed on are not known)
            kind, text = ("bad" if kind in ("ok", "known", "none") else kind), f"{self.harness_line()} {text}"
        if self.gap:
            text += f" The run is incomplete ({self.gap}): cases of missing shards are not counted."
        if not self.complete:
            text += " The run did not finish: cases it did not reach are not counted."
        elif self.incomplete and not self.gap:
            text += " The results are incomplete: cases of the lines skipped are not counted."
        if self.subset:
            text += f" Subset of the corpus ({self.subset}): a verdict on the selected cases only."
        return kind, text

    def stats(self) -> str:
        c, judged = self.counts, self.judged
        share = f" ({100 * c['passed'] / judged:.1f}%)" if judged else ""
        harness = f"; {n_of(self.harness_errors, 'harness error')} (the tool's fault)" \
            if self.harness_errors else ""
        return (f"{c['passed']:,} of {n_of(judged, 'judged case-form')} pass{share}; {c['unsupported']:,} "
                f"unsupported, {c['implementation-defined']:,} implementation-defined (not scored){harness}.")


def overview(results: Results, baseline: Results | None = None, baseline_name: str = "") -> Overview:
    head, cases, summary = results
    counts = Counter(c["status"] for c in cases)
    standings = Counter((standing_of(c), c["status"] in FAILING) for c in cases)
    ov = Overview(group(cases), known_versions(cases), counts,
                  expected_failing=standings[Standing.EXPECTED, True],
                  unexpected_passes=standings[Standing.UNEXPECTED_PASS, False],
                  complete=summary is not None and not summary.get("interrupted")
                  and not summary.get("error"), gap=gap(head), subset=selection_text(head),
                  incomplete=incomplete(results))
    if baseline is not None:
        ov.since = since(baseline, results, ov.findings, baseline_name)
    return ov


def since(baseline: Results, results: Results, findings: list[Finding], name: str = "") -> Since:
    d = diff_records(baseline, results)
    old = {f.key: f for f in group(baseline[1])}
    new = {f.key: f for f in findings}
    head = baseline[0]
    label = (name
             or f"{head.get('backend', '?')} {head.get('backend_version', '?')} ({head.get('started', '?')})")
    return Since(label, {k: d.counts()[k] for k in CATEGORIES},
                 appeared=[f for f in findings if f.key not in old],
                 gone=[f for k, f in old.items() if k not in new],
                 grown=[(f, old[f.key].count) for f in findings
                        if f.key in old and f.count > old[f.key].count])


def _entry_text(f: Finding, limit: int = 160) -> str:
    if not f.entries:
        return "none (new)"
    parts = [f"line {e['line']}: {shorten(' '.join((e.get('reason') or '').split()), limit, middle=False)}"
             for e in sorted(f.entries.values(), key=lambda e: -e["cases"])[:2]]
    more = len(f.entries) - 2
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def render_text(head: Header, ov: Overview, limit: int = 50, repro: bool = False) -> str:
    """``qdq-conformance findings``: verdict, then each finding in a few lines."""
    lines = [f"{head.get('backend', '?')} {head.get('backend_version', '?')} (onnx "
             f"{head.get('onnx_version', '?')})",
             *(f"INCOMPLETE: {line}" for line in ov.incomplete), ov.verdict()[1], ov.stats()]
    if head.get("shards"):
        lines.append(shards_text(head))
    if ov.since:
        lines.append(ov.since.line())
    shown = ov.findings if not limit else ov.findings[:limit]
    appeared = {f.key for f in ov.since.appeared} if ov.since else set()
    for k, f in enumerate(shown, 1):
        tag = " NEW SINCE BASELINE" if f.key in appeared else ""
        state = f"{f.state} ({f.expected} of {f.count})" if f.state == "partly expected" else f.state
        lines += ["", f"{k:3}. {f.id} {state}: {n_of(f.count, 'case-form')}{tag}",
                  f"     {f.operator} {f.version_span(ov.known)}; {f.where()}",
                  *([f"     {f.example['plain']}"] if f.example.get("plain") else []),
                  f"     raw: {f.what()}", f"     types: {f.types_text()}",
                  *([f"     model nodes: {f.nodes_text()}"] if f.nodes else []),
                  f"     expectation: {_entry_text(f)}",
                  f"     example: {f.example['id']} [{f.example.get('form')}]"]
        if repro and f.example.get("repro"):
            lines += ["     repro:", *("       " + ln for ln in str(f.example["repro"]).splitlines())]
    if len(shown) < len(ov.findings):
        rest = ov.findings[len(shown):]
        lines += ["", f"... and {n_of(len(rest), 'more finding')} "
                      f"({n_of(sum(f.count for f in rest), 'case-form')}; "
                  "--limit 0 lists them all)"]
    if ov.since and ov.since.gone:
        lines += ["", f"Gone since the baseline ({len(ov.since.gone)}):"]
        lines += [f"  {f.id} {f.count:,} case-forms: {f.description()}"
                  for f in ov.since.gone[: limit or None]]
    return "\n".join(lines)


def to_json(head: Header, ov: Overview) -> dict[str, object]:
    kind, text = ov.verdict()
    out: dict[str, object] = {
        "backend": head.get("backend"), "backend_version": head.get("backend_version"),
        "verdict": {"kind": kind, "text": text, "stats": ov.stats()},
        "counts": dict(ov.counts), "failing": ov.failing, "expected_failing": ov.expected_failing,
        "new_failing": ov.new_failing, "harness_errors": ov.harness_errors, "incomplete": ov.incomplete,
        "findings": [f.to_json(ov.known) for f in ov.findings]}
    shards = head.get("shards")
    if shards:
        out["shards"] = {**shards, "complete": not ov.gap}
    out["subset"] = ov.subset or None
    if ov.since:
        out["since"] = {"baseline": ov.since.baseline, "counts": ov.since.counts,
                        "appeared": [f.id for f in ov.since.appeared],
                        "gone": [f.to_json() for f in ov.since.gone],
                        "grown": [{"id": f.id, "count": f.count, "baseline_count": n}
                                  for f, n in ov.since.grown]}
    return out


DESCRIPTION = """A signature is, for wrong values, the operator (any version), the type pattern (the quantized
side's type class, whether a zero point is given), granularity, graph form and kind of mismatch; for a
backend's own error (error, crashed, timeout, an invalid model run), the operator, type pattern, granularity,
graph form, status and the class of the error (refused at load, raised at run, crashed, timed out; never its
wording, so a release that only rewords an error makes no new finding). Each finding: its count of
case-forms, whether an expectation entry covers its cases (expected) or not (new), the operator versions,
types, granularities and families it spans, and an example case; new findings first, then by count; the counts
add up to the failing case-forms. Harness errors (this tool's own code raised) are no finding: they are
counted apart, in a line that says the fault is the tool's."""

