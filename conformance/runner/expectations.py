"""Expectation files: per backend (and version), case-id patterns with the status they are known to end in.

``expectations/<backend>.yaml``::

    backend: ort
    versions: "1.31.*"           # fnmatch pattern on the backend's version (default: any)
    entries:
      - cases: "dequantizelinear-*-int32-extremes-zero-*"   # glob, or a list of globs, on case ids
        status: failed           # failed, error, crashed, timeout, invalid-accepted, unsupported
        reason: "x - x_zero_point is computed in int32 and wraps (spec: y = (x - x_zero_point) * x_scale)"
        link: https://github.com/microsoft/onnxruntime/issues/...
        forms: [initializer]     # optional: only these graph forms (default: both)

A case ending in the expected status is an expected failure (listed, not a failure of the run). One ending
better (passed) is an unexpected pass; one ending in another failing status is a surprise. Entries that match no
case, or whose cases all pass, are stale and warned about.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..resources import expectations_dir
from .outcome import FAILING

EXPECTATIONS_DIR = expectations_dir()
_STATUSES = set(FAILING) | {"unsupported"}


class ExpectationError(Exception):
    pass


@dataclass
class Entry:
    patterns: list[str]
    status: str
    reason: str
    link: str | None = None
    line: int = 0
    matched: int = 0
    passed: int = 0
    forms: tuple[str, ...] = ()  # empty: every form
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


@dataclass
class Expectations:
    path: Path | None = None
    entries: list[Entry] = field(default_factory=list)

    _index: dict[str | None, tuple[dict[str, int], re.Pattern[str] | None]] = field(
        default_factory=dict, repr=False, compare=False)

    def lookup(self, case_id: str, form: str | None = None) -> Entry | None:
        """The first entry (in file order) that matches ``case_id`` in ``form``."""
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

    def stale(self) -> list[Entry]:
        return [e for e in self.entries if e.matched == 0 or e.passed == e.matched]


def _loader_with_lines() -> type[yaml.SafeLoader]:
    class Loader(yaml.SafeLoader):
        pass

    def construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict:
        mapping = loader.construct_mapping(node, deep=True)
        mapping["__line__"] = node.start_mark.line + 1
        return mapping

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return Loader


def load(path: Path, backend_version: str | None = None) -> Expectations:
    """Read one expectation file; an entry without a status, a reason or case patterns is an error."""
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_loader_with_lines())  # noqa: S506 - SafeLoader
    except yaml.YAMLError as e:
        raise ExpectationError(f"{path}: invalid YAML: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("entries", []), list):
        raise ExpectationError(f"{path}: expected a mapping with an 'entries' list")
    versions = doc.get("versions")
    if versions and backend_version and not fnmatch.fnmatchcase(backend_version, str(versions)):
        return Expectations(path, [])
    entries = []
    for raw in doc.get("entries", []):
        line = raw.get("__line__", 0)
        unknown = set(raw) - {"cases", "status", "reason", "link", "forms", "__line__"}
        if unknown:
            raise ExpectationError(f"{path}:{line}: unknown key(s) {sorted(unknown)}")
        if raw.get("status") not in _STATUSES:
            raise ExpectationError(f"{path}:{line}: status must be one of {sorted(_STATUSES)}")
        if not raw.get("reason") or not raw.get("cases"):
            raise ExpectationError(f"{path}:{line}: every entry needs 'cases' and a 'reason'")
        patterns = raw["cases"] if isinstance(raw["cases"], list) else [raw["cases"]]
        forms = raw.get("forms") or []
        forms = [forms] if isinstance(forms, str) else forms
        if not set(forms) <= {"runtime", "initializer"}:
            raise ExpectationError(f"{path}:{line}: forms must be runtime and/or initializer")
        entries.append(Entry([str(p) for p in patterns], raw["status"], str(raw["reason"]).strip(),
                             raw.get("link"), line, forms=tuple(forms)))
    return Expectations(path, entries)


def find(backend_name: str, backend_version: str | None) -> Expectations:
    """The bundled expectations of a backend (none when no file exists)."""
    safe = backend_name.replace(":", "_").replace("/", "_")
    path = EXPECTATIONS_DIR / f"{safe}.yaml"
    return load(path, backend_version) if path.exists() else Expectations(None, [])
