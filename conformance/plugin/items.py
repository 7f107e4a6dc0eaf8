"""Collection: a case file (or an exported suite) -> one item per (case, graph form)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any, cast

import pytest

from .. import domain
from ..compare import format_indices
from ..domain import FAILING, HARNESS, Case, RunStatus
from ..errors import CaseFileError
from ..generators.cache import load_file_cached
from ..generators.corpus import claim_ids
from ..results.files import decode_record, encode_record
from ..results.records import CaseRecord, case_record
from ..runner.execute import CaseRef, FileRef, ObjRef
from ..runner.outcome import Outcome
from ..runner.suite import load_suite
from . import selection
from .selection import marker_names
from .state import STATE


class CaseFailure(Exception):
    """A case that did not conform; carries everything repr_failure shows."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.message)
        self.outcome = outcome


class HarnessFailure(Exception):
    """This tool's own code raised while running the case (``harness-error``): the item fails, never as an
    expected failure (an expectation's xfail marker only takes :class:`CaseFailure`), and the run exits 3."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.message)
        self.outcome = outcome


class UnexpectedOutcome(Exception):
    """Under --strict-expectations: a case that ended other than its expectation says."""


#: --tb styles under which a failing case is described in one line (a corpus run's: its every detail and repro
#: are in the results file and the report, and thousands of full descriptions cost pytest's summary minutes)
ONE_LINE_STYLES = ("no", "line")


def headline(outcome: Outcome) -> str:
    """A failing case in one line: its status and the first line of its message."""
    first = outcome.message.strip().split("\n", 1)[0]
    return f"{outcome.status}: {first[:300]}" + ("..." if len(first) > 300 else "")


_MARKS: dict[str, pytest.MarkDecorator] = {}


def _mark(name: str) -> pytest.MarkDecorator:
    """One ``pytest.mark.NAME`` per name (pytest's by-name lookup is the slow part of add_marker for 50,000
    items)."""
    mark = _MARKS.get(name)
    if mark is None:
        mark = _MARKS[name] = getattr(pytest.mark, name)
    return mark


def marks_of(case: Case, form: str) -> list[pytest.MarkDecorator]:
    return [_mark(name) for name in marker_names(case, form)]


class CaseItem(pytest.Item):
    def __init__(self, *, case: Case, form: str, ref: CaseRef, line: int = 0,
                 marks: list[pytest.MarkDecorator] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.form = form
        self.ref = ref
        self.line = line
        self.position: int | None = None  # in the run order handed to the backend's workers
        for mark in marks if marks is not None else marks_of(case, form):
            self.add_marker(mark)
        #: the markers the runner gave this item (its selectors, then an expectation's xfail): more means
        #: markers from elsewhere, which give the item pytest's full protocol (fastpath.py)
        self.runner_marks = len(self.own_markers)
        # the runner's xfail marker (a failing expectation), if any
        self.xfail_mark: pytest.Mark | None = None
        meta = case.metadata()
        self.extra_keyword_matches.update({meta["family"], meta["status"], meta["operator"]})

    def runtest(self) -> None:
        state = self.config.stash[STATE]
        got = state.backend().get(self.ref, self.form, self.position)
        self.user_properties.append(("qdq", got.record))
        self.user_properties.append(("qdq_outcome", got.note(self.case.id, self.form)))
        if got.status == RunStatus.UNSUPPORTED:
            pytest.skip(f"unsupported by {state.backend_name}: {got.message}")
        if got.status in HARNESS:
            raise HarnessFailure(got.outcome or Outcome(got.status, got.message))
        entry = got.entry
        if entry is not None and state.strict and got.status in FAILING and got.status != entry.status:
            raise UnexpectedOutcome(f"expected {entry.status} ({entry.reason}), got {got.status}: "
                                    f"{got.message}")
        if got.status in FAILING:
            raise CaseFailure(got.outcome or Outcome(got.status, got.message))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: str | None = None) -> Any:  # (str or pytest's TerminalRepr, not in its namespace)
        if isinstance(excinfo.value, (CaseFailure, HarnessFailure)):
            if self.config.getoption("tbstyle", "auto") in ONE_LINE_STYLES:
                return headline(excinfo.value.outcome)
            return _describe(self, excinfo.value.outcome)
        if isinstance(excinfo.value, UnexpectedOutcome):
            return f"{self.case.id} [{self.form}]: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, max(self.line - 1, 0), f"{self.case.id} [{self.form}]"

    @cached_property
    def location(self) -> tuple[str, int | None, str]:
        """pytest's ``location``, whose path part (relative to the rootdir) pytest computes for the first item
        of a file and the others reuse."""
        parent = self.parent
        rel = getattr(parent, "item_relpath", None)
        if rel is None:
            rel = super().location[0]
            if isinstance(parent, (CaseFile, SuiteFile)):
                parent.item_relpath = rel
        _, line, domain = self.reportinfo()
        return rel, line, domain


#: case id -> (file, line) of every case collected so far in the session: a file that repeats one is a load
#: error
CLAIMED_IDS = pytest.StashKey[dict[str, tuple[str, int]]]()
#: the graph form a case file's load error is recorded under (a results file's records are (id, form) pairs)
LOAD_FORM = "load"


def load_error_record(path: Path, error: Exception, backend: tuple[str, str]) -> CaseRecord:
    """A case file that could not be loaded, as a results-file record: an ``error`` whose id names the file
    and whose message is the one-line error (file, line, key, problem), so the report lists it among the
    cases."""
    return case_record(f"case-file:{path.name}", LOAD_FORM, "error", str(error), backend, file=str(path),
                       line=getattr(error, "line", None), duration=0.0, domain="case-file",
                       operator=path.name, version=LOAD_FORM, case_status="load-error")


class LoadErrorItem(pytest.Item):
    """A case file that could not be loaded: one failing item, the rest of the run goes on. Selection (-k, -m)
    never deselects it (hooks.py), and the results file records it as an error naming the file and the
    problem."""

    def __init__(self, *, error: Exception, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        state = self.config.stash.get(STATE, None)
        if state is not None:
            rec = load_error_record(self.path, self.error, (state.backend_name, state.backend_version))
            self.user_properties.append(("qdq", encode_record(rec)))
            self.user_properties.append(("qdq_outcome",
                                         {"id": rec["id"], "form": LOAD_FORM, "status": "error",
                                          "expected": None, "line": None}))
        raise self.error

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: str | None = None) -> str:
        return f"case file error: {excinfo.value}"

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, getattr(self.error, "line", 1) or 1, f"load {self.path.name}"


class CaseFile(pytest.File):
    item_relpath: str | None = None  # its items' path in their ``location``

    def collect(self) -> Iterator[pytest.Item]:
        cfg = self.config
        tier = cfg.getoption("qdq_tier")
        tiers = domain.tiers_of(tier)
        forms = forms_of(cfg)
        shard = cfg.getoption("qdq_shard", None)
        part = domain.parse_shard(shard) if shard else None  # (only the shard's cases are made items of)
        try:
            cases = load_file_cached(self.path, tiers, part)
            # ids unique across the files (the same id is in the same shard: a shard sees each repeat)
            claim_ids(cfg.stash.setdefault(CLAIMED_IDS, {}), self.path, cases)
        except CaseFileError as e:
            yield LoadErrorItem.from_parent(self, name="load", error=e)
            return
        except Exception as e:  # a loader defect still costs this file only, in one line
            error = CaseFileError(self.path, None, "",
                                  f"internal error while loading: {type(e).__name__}: {e}")
            yield LoadErrorItem.from_parent(self, name="load", error=error)
            return
        state = cfg.stash.get(STATE, None)
        source = (str(self.path), tuple(tiers), part)
        if state is not None and state.pool is not None:
            state.pool.preload(source)  # the backend's workers load the file while pytest goes on collecting
        only = selection.chosen(cfg, self.path)  # (-k / -m: the items they can select; None: all)
        for index, case in enumerate(cases):
            if case.tier not in tiers:
                continue
            ref = FileRef(source[0], source[1], index, case.id, part)
            shared = marks_of(case, forms[0])[1:]  # every mark but the form's (the first)
            for form in forms:
                if only is not None and (case.id, form) not in only:
                    continue
                yield CaseItem.from_parent(self, name=f"{case.id}[{form}]", case=case, form=form, ref=ref,
                                           line=case.line, marks=[_mark(form), *shared])


class SuiteFile(pytest.File):
    item_relpath: str | None = None

    def collect(self) -> Iterator[pytest.Item]:
        forms = forms_of(self.config)
        try:
            _, cases = load_suite(Path(self.config.getoption("qdq_suite")))
        except Exception as e:  # a broken suite is one error item too, never the end of the run
            error = CaseFileError(self.path, None, "", f"cannot read the suite: {type(e).__name__}: {e}")
            yield LoadErrorItem.from_parent(self, name="load", error=error)
            return
        shared: dict[str, list[pytest.MarkDecorator]] = {}  # (a case's marks but its form's, made once)
        for case in cases:
            if case.form in forms:
                marks = shared.get(case.id)
                if marks is None:
                    shared.clear()
                    marks = shared[case.id] = marks_of(case, case.form)[1:]
                yield CaseItem.from_parent(self, name=f"{case.id}[{case.form}]", case=case, form=case.form,
                                           ref=ObjRef(case), marks=[_mark(case.form), *marks])


def forms_of(cfg: pytest.Config) -> tuple[str, ...]:
    return domain.forms_of(cfg.getoption("qdq_form"))


def _describe(item: CaseItem, outcome: Outcome) -> str:
    text = dict(item.user_properties).get("qdq")
    rec = cast(dict[str, Any], decode_record(text)) if isinstance(text, str) else {}
    case = item.case
    spec = rec.get("spec", {})
    lines = [f"{case.id} [{item.form}] on {rec.get('backend')} {rec.get('backend_version')}: "
             f"{outcome.status}",
             f"spec ({spec.get('operator')} {spec.get('versions')}): \"{spec.get('text')}\"",
             f"case: {rec.get('case_status')}, comparison {rec.get('comparison')}, attributes "
             f"{rec.get('attributes')}", f"message: {outcome.message[:1500]}"]
    for name, p in (rec.get("inputs") or {}).items():
        if p:
            lines.append(f"input {name} ({p['type']}, shape {p['shape']}): {_fmt(p)}")
    for k, (e, a) in enumerate(zip(rec.get("expected") or [], rec.get("actual") or [], strict=False)):
        if e and a:
            lines.append(f"expected output {k} ({e['type']}, shape {e['shape']}): {_fmt(e)}")
            lines.append(f"actual   output {k} ({a['type']}, shape {a['shape']}): {_fmt(a)}")
    labelled = {k: m.get("labels") or [] for k, m in ((m["output"], m) for m in rec.get("mismatches") or ())}
    for k, m in outcome.mismatches:
        lines.append(f"output {k}: {m}")
        if outcome.actual is not None and case.expected is not None and m.indices:
            exp, act = case.expected[k], outcome.actual[k]
            for j, idx in enumerate(m.indices[:5]):
                label = labelled.get(k, [])
                where = f"  [{label[j]}]" if j < len(label) else ""
                try:
                    lines.append(f"    at {format_indices([idx])}: expected {exp[idx]!r}, actual "
                                 f"{act[idx]!r}{where}")
                except (IndexError, TypeError):
                    break
    if rec.get("repro"):
        lines += ["repro (paste into a bug report):", *("    " + ln for ln in rec["repro"].splitlines())]
    return "\n".join(lines)


def _fmt(p: dict[str, Any]) -> str:
    return "[" + ", ".join(p["values"]) + (", ...]" if p["truncated"] else "]")
