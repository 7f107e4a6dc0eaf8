"""Run-to-run diff of two results files: the regression view a vendor runs in CI.

Cases are matched by (case id, graph form). Every case lands in one category:

- ``regressed``: it was not a failure and now is (failed, error, crashed, timeout, invalid-accepted), and no
  expectation entry of the new run says it fails so;
- ``now failing (expected)``: it was not a failure and now is, as an expectation entry of the new run says;
- ``fixed``: it was a failure and now is not;
- ``harness-error``: this tool's own code raised on it in the new run (whatever it was before): the tool's
  fault, not the backend's, listed apart from every backend result (and failing the gate: the case is not
  known to pass);
- ``changed``: any other change of status, or an implementation-defined case whose recorded behaviour changed;
- ``appeared`` / ``disappeared``: present in only one of the two files;
- unchanged cases are counted, not listed.

Two runs of different backends, backend versions, optimization levels, backend options (``--backend-option``)
or selections (``-k``, ``-m``, ``--shard``, ``--form``) are still compared, and the diff says so first
(:meth:`Diff.warnings`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from qdq_conformance.domain import FAILING, RunStatus
from qdq_conformance.results import CaseRecord, Header, Results, Standing, Summary, standing_of
from qdq_conformance.results.merge import gap, incomplete, load_run

from .page import environment, pack, write_page

#: (bound once: reading an enum member off its class costs 0.3 us on Python 3.11, and a diff tests every
#: record)
_IMPLEMENTATION_DEFINED = RunStatus.IMPLEMENTATION_DEFINED.value
EXPECTED_NOW = "now failing (expected)"
HARNESS_ERROR = RunStatus.HARNESS_ERROR.value
CATEGORIES = (HARNESS_ERROR, "regressed", EXPECTED_NOW, "fixed", "changed", "appeared", "disappeared")


@dataclass(frozen=True)
class Change:
    category: str
    id: str
    form: str
    old: str | None
    new: str | None
    message: str = ""  # the new run's message (or the old one for a disappeared case)


@dataclass
class Diff:
    old_head: Header
    new_head: Header
    changes: list[Change] = field(default_factory=list)
    unchanged: int = 0
    new_cases: int = 0
    new_complete: bool = True  # the new run ended normally (its file has a summary line)
    new_stopped: str = ""  # how the new run ended early, when its summary says so (a signal, a backend error)
    # merge.incomplete of each run: one line per problem
    old_incomplete: list[str] = field(default_factory=list)
    new_incomplete: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        """The new run holds no case (nothing to compare: a gate never passes it)."""
        return self.new_cases == 0

    def incomplete(self) -> str | None:
        """Why the runs cannot pass a regression gate (the new one empty, interrupted, crashed or with
        malformed lines; the old one incomplete, so that a case it lacks, failing now, counts as appeared, not
        regressed), or None."""
        if gap(self.new_head):
            return (f"the new run is incomplete ({gap(self.new_head)}), so the cases of missing shards are "
                    "not known to pass")
        if self.new_stopped:
            return f"the new run {self.new_stopped}, so cases it did not reach are not known to pass"
        if self.new_cases == 0:
            return "the new results file has no case records (an empty run, or the wrong file)"
        if not self.new_complete:
            return ("the new run did not finish (no summary line: interrupted or crashed), so cases it did "
                    "not reach are not known to pass")
        if self.new_incomplete:
            return (f"the new run is incomplete ({self.new_incomplete[0]}), so cases it lost are not known "
                    "to pass")
        if self.old_incomplete:
            return (f"the old run is incomplete ({self.old_incomplete[0]}), so a case it lacks that fails "
                    "now is counted as appeared, not as regressed")
        return None

    def warnings(self) -> list[str]:
        """What makes the two runs not like for like: another backend, backend version, optimization, backend
        options or selection."""
        out = []
        a, b = self.old_head, self.new_head
        if a.get("backend") != b.get("backend"):
            out.append(f"the runs are of different backends ({a.get('backend')} and {b.get('backend')}): a "
                       "change says how the backends differ, not that one changed")
        elif a.get("backend_version") != b.get("backend_version"):
            out.append(f"the backend versions differ ({a.get('backend_version')} and "
                       f"{b.get('backend_version')})")
        if (a.get("optimization") or "") != (b.get("optimization") or ""):
            out.append(f"the runs used different optimization ({a.get('optimization') or 'not recorded'} and "
                       f"{b.get('optimization') or 'not recorded'}): graph cases are judged as the backend "
                       "optimized them, so a change there may be the setting's")
        oa, ob = options_text(a), options_text(b)
        if oa != ob:
            out.append(f"the runs used different backend options ({oa or 'none'} and {ob or 'none'}): a "
                       "change may be the options'")
        sa, sb = selection_text(a), selection_text(b)
        if sa != sb:
            out.append(f"the runs selected different cases ({sa or 'the whole corpus'} and "
                       f"{sb or 'the whole corpus'}): cases only one of them ran are listed as appeared or "
                       "disappeared")
        elif sa:
            out.append(f"both runs are a subset of the corpus ({sa})")
        return out

    def counts(self) -> dict[str, int]:
        c = Counter(ch.category for ch in self.changes)
        return {k: c.get(k, 0) for k in CATEGORIES}

    def transitions(self) -> list[tuple[str, str, int]]:
        """(old status, new status, count) for every status change, most frequent first."""
        c = Counter((ch.old or "-", ch.new or "-") for ch in self.changes)
        return [(a, b, n) for (a, b), n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))]


def selection_text(head: Header) -> str:
    """What selected a run's cases (``-k X, --form runtime``), "" for the whole corpus (a merged run's shards
    are no selection)."""
    sel = dict(head.get("selection") or {})
    if head.get("shards"):
        sel.pop("--shard", None)
    elif (shard := head.get("shard")) and "--shard" not in sel:  # (written before the header recorded it)
        sel["--shard"] = shard
    return ", ".join(k if v is True else f"{k} {' '.join(v) if isinstance(v, list) else v}"
                     for k, v in sel.items() if v)


def options_text(head: Header) -> str:
    """A run's --backend-option settings (``k=v, k=v``), "" for none."""
    return ", ".join(f"{k}={v}" for k, v in sorted((head.get("backend_options") or {}).items()))


def _key(rec: CaseRecord) -> tuple[str, str]:
    return rec["id"], rec.get("form") or ""


def _category(old: CaseRecord, new: CaseRecord) -> str | None:
    a, b = old["status"], new["status"]
    if standing_of(new) is Standing.HARNESS_ERROR:
        return HARNESS_ERROR
    if a == b:
        if a == _IMPLEMENTATION_DEFINED and (old.get("behaviour") or "") != (new.get("behaviour") or ""):
            return "changed"
        return None
    if b in FAILING and a not in FAILING:
        return EXPECTED_NOW if standing_of(new) is Standing.EXPECTED else "regressed"
    if a in FAILING and b not in FAILING:
        return "fixed"
    return "changed"


def diff_records(old: Results, new: Results) -> Diff:
    old_cases = {_key(c): c for c in old[1]}
    new_cases = {_key(c): c for c in new[1]}
    result = Diff(old[0], new[0], new_cases=len(new[1]), new_complete=new[2] is not None,
                  new_stopped=_stopped(new[2]), old_incomplete=incomplete(old),
                  new_incomplete=incomplete(new))
    for key in sorted(old_cases.keys() | new_cases.keys()):
        a, b = old_cases.get(key), new_cases.get(key)
        if a is None:
            assert b is not None
            came = HARNESS_ERROR if standing_of(b) is Standing.HARNESS_ERROR else "appeared"
            result.changes.append(Change(came, key[0], key[1], None, b["status"], b.get("message") or ""))
        elif b is None:
            result.changes.append(Change("disappeared", key[0], key[1], a["status"], None,
                                         a.get("message") or ""))
        else:
            cat = _category(a, b)
            if cat is None:
                result.unchanged += 1
            else:
                msg = b.get("message") or ""
                if cat == "changed" and a["status"] == b["status"]:
                    msg = f"behaviour: {a.get('behaviour') or '-'} -> {b.get('behaviour') or '-'}"
                result.changes.append(Change(cat, key[0], key[1], a["status"], b["status"], msg))
    order = {c: i for i, c in enumerate(CATEGORIES)}
    result.changes.sort(key=lambda ch: (order[ch.category], ch.id, ch.form))
    return result


def _stopped(summary: Summary | None) -> str:
    """How a run ended early, from its summary line ("" when it ended normally or left no summary)."""
    if not summary:
        return ""
    if summary.get("interrupted"):
        return f"was interrupted ({summary.get('signal') or 'signal'})"
    if summary.get("error"):
        return f"failed before its first case ({' '.join(str(summary['error']).split())[:200]})"
    return ""


def diff_files(old: Path, new: Path) -> Diff:
    return diff_records(load_run([old]), load_run([new]))


def _run_name(head: Header) -> str:
    shards = head.get("shards")
    merged = f", {len(shards['given'])} of {shards['n']} shards" if shards else ""
    missing = f", INCOMPLETE: {gap(head)}" if gap(head) else ""
    return (f"{head.get('backend', '?')} {head.get('backend_version', '?')} "
            f"({head.get('started', '?')}{merged}{missing})")


def render_text(d: Diff, limit: int = 50, accepted: bool = False) -> str:
    """Plain-text diff: header, one line per category, then up to ``limit`` cases per category (``accepted``:
    an incomplete run does not fail the gate, --allow-incomplete)."""
    lines = [f"old: {_run_name(d.old_head)}", f"new: {_run_name(d.new_head)}"]
    lines += [f"WARNING: {w}" for w in d.warnings()]
    counts = d.counts()
    lines.append(", ".join(f"{n} {k}" for k, n in counts.items()) + f", {d.unchanged} unchanged")
    if counts[HARNESS_ERROR]:
        lines.append(f"HARNESS ERRORS: qdq-conformance's own code raised on {counts[HARNESS_ERROR]} case(s) "
                     "of the new run: the fault is the tool's, not the backend's; they say nothing of the "
                     "backend")
    why = d.incomplete()
    if why:
        lines.append(f"INCOMPLETE{' (accepted: --allow-incomplete)' if accepted and not d.empty() else ''}: "
                     f"{why}")
    for old, new, n in d.transitions():
        lines.append(f"  {old:>22} -> {new:<22} {n}")
    for cat in CATEGORIES:
        items = [ch for ch in d.changes if ch.category == cat]
        if not items:
            continue
        lines.append(f"\n{cat.upper()} ({len(items)})")
        for ch in items[:limit]:
            msg = " ".join(ch.message.split())[:120]
            lines.append(f"  {ch.id} [{ch.form}]  {ch.old or '-'} -> {ch.new or '-'}"
                         + (f"  {msg}" if msg else ""))
        if len(items) > limit:
            lines.append(f"  ... and {len(items) - limit} more (--limit 0 lists them all)")
    return "\n".join(lines)


def render_html(d: Diff, out: Path, report: str = "") -> Path:
    """The diff as an HTML page; ``report``: the new run's report, which each case links to
    (``REPORT#case=ID&form=F``, the report's own deep link)."""
    rows = [{"c": ch.category, "i": ch.id, "f": ch.form, "o": ch.old, "n": ch.new, "m": ch.message[:300]}
            for ch in d.changes]
    html = environment().get_template("diff.html.j2").render(
        old=_run_name(d.old_head), new=_run_name(d.new_head), counts=d.counts(), unchanged=d.unchanged,
        transitions=d.transitions(), data=pack(rows), categories=CATEGORIES, warnings=d.warnings(),
        report=report)
    return write_page(out, html)
