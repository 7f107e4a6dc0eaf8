"""Expectation files: per backend, case-id patterns with the status they are known to end in, each entry
recorded on the backend versions it was measured on.

``expectations/<backend>.yaml``::

    backend: ort
    measured: ["1.31.1", "1.32.0"]   # the backend versions whole runs were recorded on (the entries' default)
    entries:
      - cases: "dequantizelinear-*-int32-extremes-zero-*"   # glob, or a list of globs, on case ids
        status: failed           # failed, error, crashed, timeout, invalid-accepted, unsupported
        reason: "x - x_zero_point is computed in int32 and wraps (spec: y = (x - x_zero_point) * x_scale)"
        link: https://github.com/microsoft/onnxruntime/issues/...
        forms: [initializer]     # optional: only these graph forms (default: both)
        measured: ["1.31.1"]     # optional: the versions this entry holds on (default: the file's list),
                                 # or a PEP 440 range of them: ">=1.20,<1.30" (the file's versions it takes)
        cpu: {avx512f: true}     # optional: only on a processor with (true) / without (false) these features

Which entries are in force for the running backend version V (versions compare as PEP 440 releases, with dev /
a / b / rc / post suffixes and local labels such as quark's ``0.13+ort1.31.1``):

- V is recorded (in the file's or an entry's ``measured``): the entries measured on V.
- V is newer than every recorded version: the entries of the newest recorded one, and the run says so in the
  terminal summary, the results file and the report (how many held, how many are stale, how many failures are
  new). Between two recorded versions: those of the nearest older one, said the same way.
- V is older than every recorded version: none (said so; every failure is new).
- V cannot be read (``unknown``): those of the newest recorded version, said so.
- A file that records no version at all: every entry, whatever V.

An entry with ``cpu`` is in force only on a processor whose features (``cpu.cpu_features``: /proc/cpuinfo's
flags) are as it says, for a backend whose answers depend on the processor; the results file's header records
the features the file's entries name.

An entry without ``measured`` holds on every version the file records; one whose ``measured`` is a range (a
PEP 440 specifier set such as ``">=1.20.1,<1.30"``, read by ``packaging``) holds on the file's versions within
it, and names at least one of them. A case ending in the expected status is
an expected failure (listed, not a failure of the run). One ending better (passed) is an unexpected pass; one
ending in another failing status is a surprise. Entries in force that match no case, or whose cases all pass,
are stale and warned about; entries not in force are neither applied nor stale.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ..cpu import FEATURE, cpu_features
from ..generators.file_schemas import check_document, expectation_schema
from ..generators.loader import EXPECTATION_FILE, CaseFileError, line_of, load_yaml
from ..resources import expectations_dir
from ..results.records import ExpectationRecord, ExpectationsStatus, Tally
from ..results.standing import UNEXPECTED, Standing, standing
from ..results.tally import applicability_message, standings_by_entry, tally

EXPECTATIONS_DIR = expectations_dir()
_VERSION = re.compile(r"v?(\d+(?:\.\d+)*)(?:[-_.]?(dev|a|alpha|b|beta|rc|c|post)[-_.]?(\d*))?"
                      r"(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?", re.IGNORECASE)
_PHASE = {"dev": 0, "a": 1, "alpha": 1, "b": 2, "beta": 2, "rc": 3, "c": 3, "": 4, "post": 5}


#: A backend version as :func:`version_key` orders it: release, phase, its number, the local label's parts.
VersionKey = tuple[tuple[int, ...], int, int, tuple[tuple[int, int, str], ...]]


class ExpectationError(Exception):
    pass


def version_key(version: str | None) -> VersionKey | None:
    """A sortable key of a backend version (release numbers, then dev < a < b < rc < final < post, then a
    local label ``+...`` as PEP 440 orders it), or None when it is not a version ("unknown", "not
    installed")."""
    m = _VERSION.fullmatch((version or "").strip())
    if m is None:
        return None
    release = tuple(int(p) for p in m.group(1).split("."))
    while len(release) > 1 and release[-1] == 0:
        release = release[:-1]
    phase = (m.group(2) or "").lower()
    local = tuple((1, int(p), "") if p.isdigit() else (0, 0, p.lower())
                  for p in re.split(r"[-_.]", m.group(4) or "")
                  if p)
    return release, _PHASE[phase], int(m.group(3) or 0), local


@dataclass(frozen=True)
class Expectation:
    """What an entry says of one case, as it travels with the case's result and into its record: the status it
    is known to end in, why, a link (an issue), and the entry's line in the expectations file."""

    status: str
    reason: str
    link: str | None
    line: int

    def as_record(self) -> ExpectationRecord:
        """The ``expectation`` field of a results record."""
        return {"status": self.status, "reason": self.reason, "link": self.link, "line": self.line}


@dataclass
class Entry:
    patterns: list[str]
    status: str
    reason: str
    link: str | None = None
    line: int = 0
    forms: tuple[str, ...] = ()  # empty: every form
    measured: tuple[str, ...] = ()  # empty: every version
    cpu: tuple[tuple[str, bool], ...] = ()  # (feature, present): the processors it holds on (empty: any)
    _exact: frozenset[str] = frozenset()
    _globs: re.Pattern[str] | None = None

    def __post_init__(self) -> None:
        # Exact ids go in a set and the globs into one regex: thousands of ids cost one lookup per case.
        globs = [p for p in self.patterns if any(c in p for c in "*?[")]
        self._exact = frozenset(p for p in self.patterns if p not in globs)
        self._globs = re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs)) if globs else None

    def matches(self, case_id: str, form: str | None = None) -> bool:
        if form is not None and self.forms and form not in self.forms:
            return False
        return case_id in self._exact or bool(self._globs and self._globs.match(case_id))

    def on_cpu(self, features: frozenset[str]) -> bool:
        """Whether the entry holds on a processor with ``features``."""
        return all((name in features) is present for name, present in self.cpu)

    def shown(self) -> str:
        """Its patterns, the first few."""
        return ", ".join(self.patterns[:4]) + (f" and {len(self.patterns) - 4} more" if len(self.patterns) > 4
                                               else "")

    def expectation(self) -> Expectation:
        return Expectation(self.status, self.reason, self.link, self.line)


@dataclass(frozen=True)
class Applicability:
    """Which recorded backend version a run is judged against, and why."""

    backend: str
    running: str | None
    recorded: tuple[str, ...]  # oldest first
    applied: str | None  # the recorded version whose entries are in force (None: unversioned file, or none)
    mode: str  # exact, newer, between, older, unknown, unversioned, none (no file)
    in_force: int
    total: int
    path: str | None
    cpu: tuple[tuple[str, bool], ...] = ()  # the features the file's entries name: present on this processor?
    other_cpu: int = 0  # entries recorded for another processor (not in force)

    def as_dict(self) -> ExpectationsStatus:
        """The results file's ``expectations_status`` header record (what ``results.tally.summary_lines``
        reads)."""
        plain = cast(ExpectationsStatus, {
            "backend": self.backend, "running": self.running, "recorded": list(self.recorded),
            "applied": self.applied, "mode": self.mode, "in_force": self.in_force, "total": self.total,
            "path": self.path, "cpu": dict(self.cpu), "other_cpu": self.other_cpu})  # (its message: next)
        return {**plain, "message": applicability_message(plain)}


@dataclass
class Expectations:
    path: Path | None = None
    entries: list[Entry] = field(default_factory=list)  # the entries in force
    applicability: Applicability | None = None

    _index: dict[str | None, tuple[dict[str, int], re.Pattern[str] | None]] = field(
        default_factory=dict, repr=False, compare=False)

    def lookup(self, case_id: str, form: str | None = None) -> Entry | None:
        """The first entry in force (in file order) that matches ``case_id`` in ``form``."""
        index = self._index.get(form)
        if index is None:
            index = self._index[form] = self._build_index(form)
        exact, globs = index
        k = exact.get(case_id, len(self.entries))
        if globs is not None:
            m = globs.match(case_id)
            if m is not None and m.lastgroup is not None:
                k = min(k, int(m.lastgroup[1:]))
        return self.entries[k] if k < len(self.entries) else None

    def _build_index(self, form: str | None) -> tuple[dict[str, int], re.Pattern[str] | None]:
        """For one form: exact ids -> their first entry, and every glob entry in one regex whose alternatives
        (one named group per entry, in file order) tell the first glob entry that matches."""
        exact: dict[str, int] = {}
        alternatives = []
        for k, e in enumerate(self.entries):
            if form is not None and e.forms and form not in e.forms:
                continue
            for p in e._exact:
                exact.setdefault(p, k)
            if e._globs is not None:
                alternatives.append(f"(?P<e{k}>{e._globs.pattern})")
        return exact, re.compile("|".join(alternatives)) if alternatives else None

    def status(self, backend: str = "", running: str | None = None) -> ExpectationsStatus:
        """The ``expectations_status`` record (an empty set of expectations: mode ``none``)."""
        a = self.applicability or Applicability(backend, running, (), None, "none", 0, 0, None)
        return a.as_dict()

    def expected(self, case_id: str, form: str | None = None) -> Expectation | None:
        """What the first entry in force that matches ``case_id`` in ``form`` expects (None: no entry)."""
        e = self.lookup(case_id, form)
        return None if e is None else e.expectation()

    def stale_sentence(self, entry: Entry, why: str) -> str:
        return f"stale expectation {self.path}:{entry.line} ({entry.shown()}): {why}"


#: What the live run keeps of a case for the tally: its status, and its entry's status and line (a record's
#: ``status`` and ``expectation``, the keys :func:`qdq_conformance.results.tally.tally` reads).
Noted = dict[str, Any]


@dataclass
class Tracker:
    """How a run's cases meet the expectations in force, as their results arrive: the cases per status, what
    the tally reads of each (:func:`qdq_conformance.results.tally.tally`), the surprises (a case that stands
    against its entry: it passed, or failed in another status than the entry records:
    :data:`qdq_conformance.results.standing.UNEXPECTED`); at the end the stale entries and the tally."""

    counts: dict[str, int] = field(default_factory=dict)
    cases: list[Noted] = field(default_factory=list)  # what the tally reads of each case
    surprises: list[str] = field(default_factory=list)  # "id [form]: expected failed, got passed"
    _plain: dict[str, Noted] = field(default_factory=dict)  # one shared record per status, for no entry

    def note(self, case_id: str, form: str, status: str, expected: str | None, line: int | None) -> None:
        """One case's result: ``status`` it ended in; ``expected``, ``line``: its entry's status and line
        (None: no entry)."""
        self.counts[status] = self.counts.get(status, 0) + 1
        if expected and line is not None:
            self.cases.append({"status": status, "expectation": {"status": expected, "line": line}})
            if standing(status, expected) in UNEXPECTED:
                self.surprises.append(f"{case_id} [{form}]: expected {expected}, got {status}")
        else:
            plain = self._plain.get(status)
            if plain is None:
                plain = self._plain[status] = {"status": status, "expectation": None}
            self.cases.append(plain)

    def stale(self, expectations: Expectations, subset: bool,
              forms: Iterable[str]) -> list[tuple[Entry, str]]:
        """Entries in force none of whose cases ended as recorded or failed otherwise (they pass, or are
        unsupported, now), or (a whole run: ``subset`` false) that matched no case of the graph ``forms`` that
        ran; with why."""
        ran = set(forms)
        matched = standings_by_entry(self.cases)
        out = []
        for e in expectations.entries:
            seen = matched.get(e.line)
            if seen is None:
                if not subset and (not e.forms or ran & set(e.forms)):
                    out.append((e, "matches no collected case"))
            # (a case this tool's own code failed on says nothing of its entry: never stale for it)
            elif not {Standing.EXPECTED, Standing.NEW_FAILURE, Standing.HARNESS_ERROR} & set(seen):
                passed = seen.count(Standing.UNEXPECTED_PASS)
                out.append((e, "all its cases pass now" if passed == len(seen) else
                            "all its cases are unsupported now" if not passed else
                            "its cases pass or are unsupported now"))
        return out

    def tally(self, expectations: Expectations, stale: int | None) -> Tally:
        """The run against its expectations (:func:`qdq_conformance.results.tally.tally`, over the cases
        noted)."""
        return tally(self.cases, len(expectations.entries), stale)


def parse_versions(value: object, where: str) -> tuple[str, ...]:
    """A ``measured`` value: one version or a list of them, each a readable version."""
    items = value if isinstance(value, list) else [value]
    out = tuple(str(v) for v in items)
    bad = [v for v in out if version_key(v) is None]
    if bad or not out:
        raise ExpectationError(f"{where}: measured must list backend versions such as \"1.31.1\" or be a "
                               f"range such as \">=1.20,<1.30\" (got {bad or value})")
    return out


def version_range(text: str) -> SpecifierSet | None:
    """``">=1.20,<1.30"`` as a PEP 440 specifier set; None when ``text`` is not one (a plain version)."""
    if version_key(text) is not None:
        return None
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        return None


def in_range(spec: SpecifierSet, version: str) -> bool:
    """Whether ``version`` is within ``spec`` (pre-releases and local labels included)."""
    try:
        return spec.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def _entry_versions(raw: Any, where: str, file_measured: tuple[str, ...]) -> tuple[str, ...]:
    """An entry's ``measured``: the versions it holds on, of the file's (its list, or the file's within its
    range); the file's list when it has none."""
    if "measured" not in raw:
        return file_measured
    value = raw["measured"]
    spec = version_range(value) if isinstance(value, str) else None
    if spec is None:
        measured = parse_versions(value, where)
        known = {version_key(v) for v in file_measured}
        if file_measured and not {version_key(v) for v in measured} <= known:
            raise ExpectationError(f"{where}: measured {list(measured)} names a version the file's measured "
                                   f"list ({list(file_measured)}) does not")
        return measured
    inside = tuple(v for v in file_measured if in_range(spec, v))
    if not inside:
        raise ExpectationError(f"{where}: measured {value!r} takes none of the file's measured versions "
                               f"({list(file_measured) or 'none: a range needs the file to list them'})")
    return inside


def parse_entry(entry: Mapping[str, object], where: str, file_measured: tuple[str, ...]) -> Entry:
    """One entry, already valid against the schema (keys, types, vocabularies); what the schema cannot say is
    checked here: versions that parse, and an entry's versions among the file's."""
    raw = cast(dict[str, Any], entry)  # (its keys and types are the schema's)
    patterns = raw["cases"] if isinstance(raw["cases"], list) else [raw["cases"]]
    forms = raw.get("forms") or []
    forms = [forms] if isinstance(forms, str) else forms
    measured = _entry_versions(raw, where, file_measured)
    return Entry([str(p) for p in patterns], raw["status"], str(raw["reason"]).strip(), raw.get("link"),
                  line_of(raw) or 0, forms=tuple(forms), measured=measured, cpu=_cpu(raw.get("cpu"), where))


def _cpu(value: Any, where: str) -> tuple[tuple[str, bool], ...]:
    """An entry's ``cpu``: processor features, each true (present) or false (absent)."""
    if value is None:
        return ()
    items = dict(value) if isinstance(value, dict) else {}
    if not items or not all(isinstance(k, str) and FEATURE.fullmatch(k) and isinstance(v, bool)
                            for k, v in items.items()):
        raise ExpectationError(f"{where}: cpu must map processor features (as /proc/cpuinfo names them, e.g. "
                               "avx512f) to true or false")
    return tuple(sorted(items.items()))


def resolve(recorded: Iterable[str], running: str | None) -> tuple[str | None, str]:
    """(the recorded version whose entries apply, mode) for ``running``; see the module's docstring."""
    ordered = sorted(set(recorded), key=version_key)  # type: ignore[arg-type]
    if not ordered:
        return None, "unversioned"
    key = version_key(running)
    if key is None:
        return ordered[-1], "unknown"
    older = [v for v in ordered if version_key(v) <= key]  # type: ignore[operator]
    if not older:
        return None, "older"
    if version_key(older[-1]) == key:
        return older[-1], "exact"
    return older[-1], "newer" if older[-1] == ordered[-1] else "between"


def load(path: Path, backend_version: str | None = None, backend: str | None = None) -> Expectations:
    """Read one expectation file and keep the entries in force for ``backend_version``; a malformed entry is
    an error naming its line."""
    try:
        doc = load_yaml(path, limits=EXPECTATION_FILE)
        if isinstance(doc, dict) and "versions" in doc:
            raise ExpectationError(f"{path}: 'versions' (a glob) is replaced by 'measured', the backend "
                                   "versions the entries were recorded on, e.g. measured: [\"1.31.1\"]")
        if not isinstance(doc, dict):
            raise ExpectationError(f"{path}: expected a mapping with an 'entries' list")
        check_document(doc, expectation_schema(), path)
    except CaseFileError as e:
        raise ExpectationError(str(e)) from None
    file_measured = (parse_versions(doc["measured"], f"{path}:measured") if doc.get("measured") is not None
                     else ())
    every = [parse_entry(raw, f"{path}:{line_of(raw) or 0}", file_measured)
             for raw in doc.get("entries") or []]
    recorded = {v for e in every for v in e.measured} | set(file_measured)
    applied, mode = resolve(recorded, backend_version)
    key = version_key(applied) if applied else None
    versioned = [e for e in every
                 if not e.measured or (key is not None and key in {version_key(v) for v in e.measured})]
    features = cpu_features()
    entries = [e for e in versioned if e.on_cpu(features)]
    named = sorted({name for e in every for name, _ in e.cpu})
    ordered = tuple(sorted(recorded, key=version_key))  # type: ignore[arg-type]
    applicability = Applicability(backend or str(doc.get("backend") or path.stem), backend_version, ordered,
                                  applied, mode, len(entries), len(every), str(path),
                                  tuple((name, name in features) for name in named),
                                  len(versioned) - len(entries))
    return Expectations(path, entries, applicability)


def for_file(path: str | None, version: str) -> Expectations:
    """The expectations of a file a worker's records refer to (None: no expectations)."""
    return load(Path(path), version) if path else Expectations()


def find(backend_name: str, backend_version: str | None) -> Expectations:
    """The bundled expectations of a backend (none when no file exists)."""
    safe = backend_name.replace(":", "_").replace("/", "_")
    path = EXPECTATIONS_DIR / f"{safe}.yaml"
    if not path.exists():
        return Expectations(None, [],
                            Applicability(backend_name, backend_version, (), None, "none", 0, 0, None))
    return load(path, backend_version, backend_name)
