"""``matrix --write-expectations``: an expectation file rewritten from whole runs of several releases.

- The file's ``measured`` becomes every release it records: those it did, and the matrix's (whole runs).
- Each entry's ``measured`` becomes the releases it holds on (a case it matches ends in its status there, and
  no entry of that status already in force there explains it first):
  a range (``">=1.17.3,<1.20"``) when they are consecutive among the recorded releases, a list otherwise,
  none when it is all of them. Releases the matrix did not run keep what the entry said of them. An entry that
  holds on no recorded release is removed (said so).
- A failing case-form no entry in force explains on some release (none matches it, or the first that matches
  says another status) gets an entry at the top of the list (so that it is the first that matches where it is
  in force): its exact ids, the status, the releases, the graph form when only one, and as its reason the
  finding it belongs to, marked as recorded by this command and not yet explained by a person.

The file is edited as text (its comments, its order and its hand-written reasons stay), then read back for
every release: each must load, and on each the entries in force explain every failure of its run.
"""

from __future__ import annotations

import heapq
import re
import textwrap
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from ..cpu import cpu_features
from ..domain import FAILING, RunStatus
from ..generators.loader import EXPECTATION_FILE, line_of, load_yaml
from ..reports.findings import group, known_versions
from ..results import CaseRecord, Results
from ..runner.expectations import (
    EXPECTATIONS_DIR,
    Entry,
    ExpectationError,
    Expectations,
    load,
    parse_entry,
    parse_versions,
)

#: a case-form failing on a release, with the status it ended in: (id, form, status)
Failure = tuple[str, str, str]
MARK = "Recorded by `qdq-conformance matrix`, not yet explained by a person:"


@dataclass(frozen=True)
class NewEntry:
    """An entry the writer adds for failures no entry explains."""

    status: str
    releases: tuple[str, ...]
    reason: str
    forms: tuple[str, ...]  # empty: both
    ids: tuple[str, ...]


@dataclass
class _Plan:
    recorded: list[str]  # every release the file will record, oldest first
    measured: dict[int, list[str]] = field(default_factory=dict)  # entry line -> releases it holds on
    removed: list[Entry] = field(default_factory=list)
    new: list[NewEntry] = field(default_factory=list)


def target(backend: str, path: str | None) -> Path:
    if path == "none":
        raise ExpectationError("--write-expectations needs an expectation file (not --expectations none)")
    return Path(path) if path else EXPECTATIONS_DIR / f"{backend}.yaml"


def write(backend: str, path: str | None, runs: Sequence[Results]) -> Path:
    """Rewrite the expectation file of ``backend`` (or ``path``) from ``runs`` (whole runs, one per
    release)."""
    file = target(backend, path)
    doc = load_yaml(file, limits=EXPECTATION_FILE) if file.exists() else {"entries": []}
    old = parse_versions(doc["measured"], f"{file}:measured") if doc.get("measured") is not None else ()
    entries = [parse_entry(raw, f"{file}:{line_of(raw) or 0}", old) for raw in doc.get("entries") or []]
    ran = [str(h.get("backend_version")) for h, _, _ in runs]
    recorded = sorted({*old, *ran}, key=Version)
    plan = _plan(entries, runs, ran, recorded, old)
    text = file.read_text(encoding="utf-8") if file.exists() else f"backend: {backend}\nentries:\n"
    file.write_text(_edit(text, plan), encoding="utf-8")
    _check(file, runs)
    for e in plan.removed:
        print(f"removed the entry of line {e.line} ({e.shown()}): it holds on no recorded release")
    return file


def _failures(cases: list[CaseRecord]) -> list[Failure]:
    return [(c["id"], c.get("form") or "-", c["status"]) for c in cases
            if c["status"] in FAILING or c["status"] == RunStatus.UNSUPPORTED]


def _plan(entries: list[Entry], runs: Sequence[Results], ran: list[str], recorded: list[str],
          old: tuple[str, ...]) -> _Plan:
    plan = _Plan(recorded)
    features = cpu_features()
    entries = [e for e in entries if e.on_cpu(features)]  # (another processor's: left as it is)
    every = Expectations(None, entries)
    holds: dict[int, set[str]] = defaultdict(set)
    for version, (_, cases, _) in zip(ran, runs, strict=True):
        for case_id, form, status in _failures(cases):
            e = _explaining(every, case_id, form, status, version, old)
            if e is not None:
                holds[e.line].add(version)
    kept = []
    for e in entries:
        releases = holds[e.line] | {v for v in e.measured if v in old and v not in ran}
        if not releases:
            plan.removed.append(e)
            continue
        plan.measured[e.line] = sorted(releases, key=Version)
        kept.append(e)
    unexplained: dict[Failure, list[str]] = defaultdict(list)
    for version, (_, cases, _) in zip(ran, runs, strict=True):
        in_force = Expectations(None, [e for e in kept if version in plan.measured[e.line]])
        for failure in _failures(cases):
            case_id, form, status = failure
            e = in_force.lookup(case_id, form)
            if status in FAILING and (e is None or e.status != status):
                unexplained[failure].append(version)
    plan.new = _new_entries(unexplained, runs, ran)
    return plan


def _explaining(every: Expectations, case_id: str, form: str, status: str, version: str,
                old: tuple[str, ...]) -> Entry | None:
    """The entry a failure on ``version`` counts for: the first of its status the file already had in force on
    that release (one the file recorded), else the first of its status. An entry is not widened to a recorded
    release on which another entry explains the case: a broad entry ahead of a narrow one would otherwise take
    the narrow one's release, and be in force there for its other cases, which pass."""
    same = [x for x in _matching(every, case_id, form) if x.status == status]
    in_force = [x for x in same if version in old and version in x.measured]
    return next(iter(in_force or same), None)


def _matching(every: Expectations, case_id: str, form: str) -> list[Entry]:
    return [e for e in every.entries if e.matches(case_id, form)]


def _new_entries(unexplained: dict[Failure, list[str]], runs: Sequence[Results],
                 ran: list[str]) -> list[NewEntry]:
    """One entry per (status, releases, form): as its reason, the words of its findings (from the newest
    release each shows on), the three with the most case-forms."""
    words: dict[tuple[str, str], str] = {}
    for _, cases, _ in runs:
        mine = [c for c in cases if (c["id"], c.get("form") or "-", c["status"]) in unexplained]
        known = known_versions(cases)
        for f in group(mine):
            for case in f.cases:
                words[case] = f.description(known)
    groups: dict[tuple[str, tuple[str, ...]], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for (case_id, form, status), seen_on in unexplained.items():
        groups[(status, tuple(seen_on))][case_id].add(form)
    universe = {c["id"] for _, cases, _ in runs for c in cases}
    out = []
    for (status, releases), ids in sorted(groups.items()):
        by_forms: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for case_id, case_forms in ids.items():
            by_forms[tuple(sorted(case_forms))].append(case_id)
        for forms, case_ids in sorted(by_forms.items()):
            found = Counter(words.get((i, f), status) for i in case_ids for f in forms)
            reason = "; ".join(w for w, _ in found.most_common(3)) + (
                f"; and {len(found) - 3} more finding(s)" if len(found) > 3 else "")
            out.append(NewEntry(status, releases, reason, forms if len(forms) == 1 else (),
                                tuple(compress(set(case_ids), universe))))
    return out


def _globs(name: str) -> list[tuple[str, str]]:
    """The (first parts, last parts) a glob of ``name`` may keep: ``quantizelinear-23-*`` and
    ``quantizelinear-23-*-float16-float`` (the first two to four parts, the last none to four, one part at
    least in between; three first parts at least when no last one)."""
    parts = name.split("-")
    out = []
    for a in range(2, 5):
        for b in range(0, 5):
            if a + b < len(parts) and (b or a >= 3):
                out.append(("-".join(parts[:a]), "-".join(parts[len(parts) - b:]) if b else ""))
    return out


def compress(ids: set[str], universe: set[str]) -> list[str]:
    """``ids`` as few patterns: globs (:func:`_globs`) that take none of ``universe``'s other case ids, the
    one that takes the most of the ids not yet taken first (greedy set cover), then the ids no glob takes."""
    under: dict[tuple[str, str], int] = defaultdict(int)
    covers: dict[tuple[str, str], set[str]] = defaultdict(set)
    for name in universe | ids:
        for key in _globs(name):
            under[key] += 1
    for name in ids:
        for key in _globs(name):
            covers[key].add(name)
    heap = [(-len(names), key) for key, names in covers.items() if 1 < len(names) == under[key]]
    heapq.heapify(heap)
    left, out = set(ids), []
    while heap:
        gain, key = heapq.heappop(heap)
        now = len(covers[key] & left)
        if now < 2:
            continue
        if now < -gain:  # (taken in part already: back with what it takes now)
            heapq.heappush(heap, (-now, key))
            continue
        first, last = key
        out.append(f"{first}-*-{last}" if last else f"{first}-*")
        left -= covers[key]
    return sorted(out) + sorted(left)


def measured_text(releases: list[str], recorded: list[str]) -> str | None:
    """An entry's ``measured``: None (every recorded release), a range of consecutive ones, or a list."""
    if releases == recorded:
        return None
    first, last = recorded.index(releases[0]), recorded.index(releases[-1])
    if recorded[first:last + 1] != releases:
        return "[" + ", ".join(f'"{v}"' for v in releases) + "]"
    low = f">={releases[0]}" if first else ""
    high = f"<{recorded[last + 1]}" if last + 1 < len(recorded) else ""
    return '"' + ",".join(p for p in (low, high) if p) + '"'


_ENTRY_START = re.compile(r"^  - ")
_KEY = re.compile(r"^    ([a-z_]+):")


def _edit(text: str, plan: _Plan) -> str:
    """The file's text with the plan applied (see the module's docstring)."""
    lines = text.splitlines()
    starts = [k for k, line in enumerate(lines) if _ENTRY_START.match(line)]
    removed = {e.line for e in plan.removed}
    out: list[str] = []
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("measured:"):
            out.append("measured: [" + ", ".join(f'"{v}"' for v in plan.recorded) + "]")
            k += 1
            continue
        if line.startswith("entries:"):
            out.append(line)
            out += [row for new in plan.new for row in _new_text(new, plan.recorded)]
            k += 1
            continue
        if k in starts:
            end = next((s for s in starts if s > k), len(lines))
            while end > k + 1 and lines[end - 1].lstrip().startswith("#"):  # a comment before the next entry
                end -= 1
            block = lines[k:end]
            if k + 1 in plan.measured:
                out += _with_measured(block, measured_text(plan.measured[k + 1], plan.recorded))
            elif k + 1 not in removed:
                out += block
            k = end
            continue
        out.append(line)
        k += 1
    if not any(line.startswith("measured:") for line in lines):
        at = next((i for i, line in enumerate(out) if line.startswith("entries:")), 0)
        out.insert(at, "measured: [" + ", ".join(f'"{v}"' for v in plan.recorded) + "]")
    return "\n".join(out) + "\n"


def _with_measured(block: list[str], value: str | None) -> list[str]:
    """An entry's lines with its ``measured`` line replaced, removed (None) or added after ``status``."""
    out = []
    for line in block:
        m = _KEY.match(line)
        if m and m.group(1) == "measured":
            if value is not None:
                out.append(f"    measured: {value}")
            value = None
            continue
        out.append(line)
        if m and m.group(1) == "status" and value is not None:
            out.append(f"    measured: {value}")
            value = None
    return out


def _new_text(new: NewEntry, recorded: list[str]) -> list[str]:
    out = ["  - cases:", *[f'      - "{i}"' for i in new.ids], f"    status: {new.status}"]
    if new.forms:
        out.append(f"    forms: [{', '.join(new.forms)}]")
    value = measured_text(sorted(new.releases, key=Version), recorded)
    if value is not None:
        out.append(f"    measured: {value}")
    out.append("    reason: >-")
    out += textwrap.wrap(f"{MARK} {new.reason}", 104, initial_indent="      ", subsequent_indent="      ",
                         break_on_hyphens=False, break_long_words=False)
    return [*out, ""]


def _check(file: Path, runs: Sequence[Results]) -> None:
    """Read the written file back for each release: every failure of its run explained by an entry in
    force."""
    for head, cases, _ in runs:
        version = str(head.get("backend_version"))
        e = load(file, version)
        bad = [f for f in _failures(cases) if f[2] in FAILING
               and ((x := e.lookup(f[0], f[1])) is None or x.status != f[2])]
        if bad:
            raise ExpectationError(f"{file}: as written, {len(bad)} failure(s) of {version} are not "
                                   f"explained (e.g. {bad[0][0]} [{bad[0][1]}] {bad[0][2]}): a defect of "
                                   "--write-expectations")
