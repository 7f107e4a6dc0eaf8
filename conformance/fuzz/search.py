"""The search: Hypothesis draws case descriptions, the runner's worker pool runs them, failures are grouped by
a signature and each group shrunk to one minimal example.

How Hypothesis is driven (one ``@given`` test, run programmatically in rounds):

- A round is a Hypothesis run of at most ``CHUNK`` examples with a seed derived from ``--seed`` and the
  round's number. Signatures already found count as passing (their hits are counted), so the search goes on
  past them.
- The first example of a round whose signature is new raises an exception of a class made for that signature
  (Hypothesis tells bugs apart by exception class): generation stops there, Hypothesis shrinks the example
  while it *still fails with that signature* (any other outcome counts as passing while shrinking), and its
  final replay is kept as the finding's minimal example. The round is then run again with the same seed (the
  examples before that point replay from this run's cache, without running the backend again) and goes on past
  it.
- Hits are counted once per distinct example, outside shrinking. The Hypothesis database lives in the
  project's cache directory (``<cache>/fuzz/hypothesis``, keyed by backend, operators, versions and forms); a
  run first replays what it holds (the minimal examples of earlier runs), so a second run starts from what the
  first found.

Every backend call goes through :class:`qdq_conformance.runner.pool.CasePool` (a worker process; a crash or a
hang costs one example, recorded as crashed or timeout) and is classified, recorded and looked up in the
expectations exactly as a corpus case is (``runner.execute.run_case``). An implementation-defined case is
judged against its catalogued readings as in the corpus: following one is not a finding.
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from ..domain import FAILING
from ..generators.case import ConcreteCase
from ..opspecs import PER_TENSOR
from ..results import CaseRecord, decode_record
from ..runner.execute import CaseResult, ObjRef
from ..runner.outcome import Structural
from ..runner.pool import CasePool
from .describe import Description, NotACase, build

#: examples per Hypothesis round
CHUNK = 100


@dataclass
class Finding:
    signature: str
    parts: dict[str, str]
    hits: int = 0
    first: int = 0  # the search example that first hit it (1-based; 0: only while shrinking or replaying)
    description: Description | None = None  # the minimal example
    case: ConcreteCase | None = None
    form: str = ""
    record: CaseRecord = field(default_factory=lambda: cast(CaseRecord, {}))  # (set with the example)


@dataclass
class Ran:
    status: str
    finding: str | None  # the signature, when the example is an unexpected failure
    parts: dict[str, str] | None
    form: str
    record: str
    expected: bool = False


def _x_class(case: ConcreteCase, index: tuple[int, ...]) -> str:
    x = case.inputs[0][1]
    if x is None:  # (x is never optional; a case without it has no element to classify)
        return "x"
    try:
        v = float(np.asarray(x[index] if index else x, dtype=np.float64))
    except (IndexError, TypeError, ValueError):
        return "x"
    if np.isnan(v):
        return "x=nan"
    if np.isinf(v):
        return "x=inf"
    return "x finite"


def signature_parts(case: ConcreteCase, form: str, result: CaseResult) -> dict[str, str]:
    """What tells two failures apart: operator version, type pattern, zero-point mode, granularity (and
    whether the axis is the default one), attributes, graph form and the kind of mismatch."""
    attrs = {k: v for k, v in case.attrs.items() if k not in ("axis", "block_size", "output_dtype")}
    gran = case.granularity + ("-default-axis" if case.granularity != PER_TENSOR and "axis" not in case.attrs
                               and case.detail.get("rank") else "")
    kind = result.status
    outcome = result.outcome
    if result.status == "failed" and outcome is not None:
        if outcome.mismatches and isinstance(outcome.mismatches[0][1], Structural):
            kind += ": wrong output type, shape or count"
        elif outcome.mismatches and outcome.mismatches[0][0] > 0:
            # (DynamicQuantizeLinear's y_scale, y_zero_point)
            k = outcome.mismatches[0][0]
            kind += f": values of {case.output_names[k] if k < len(case.output_names) else f'output {k}'}"
        elif outcome.mismatches and outcome.mismatches[0][1].indices:
            kind += f": values ({_x_class(case, tuple(outcome.mismatches[0][1].indices[0]))})"
        else:
            kind += ": values"
    elif result.status == "error" and result.message.startswith("rejected a valid model"):
        kind += ": rejected a valid model"
    elif result.status == "error":
        kind += ": raised"
    return {"operator": f"{case.domain}::{case.op}-{case.version}",
            "types": "/".join(v for v in (case.types.get("x"), case.types.get("scale"), case.types.get("y"))
                              if v),
            "zero_point": str(case.detail.get("zero_point", "given")), "granularity": gran,
            "attributes": ",".join(f"{k}={v}" for k, v in sorted(attrs.items())) or "-", "form": form,
            "mismatch": kind}


def signature_of(parts: dict[str, str]) -> str:
    return " | ".join(parts[k]
                      for k in ("operator", "types", "zero_point", "granularity", "attributes", "form",
                                "mismatch"))


class Executor:
    """Runs descriptions on the backend's worker pool, each (description, form) once per run."""

    def __init__(self, pool: CasePool, forms: Sequence[str]) -> None:
        self.pool = pool
        self.forms = tuple(forms)
        self.cases: dict[str, ConcreteCase] = {}
        self.ran: dict[str, Ran | None] = {}  # description key -> its first unexpected failure (None: none)
        self.records: dict[tuple[str, str], str] = {}
        self.calls = 0
        self.expected_failures = 0  # failures an expectation says (no finding)

    def records_in_order(self) -> list[str]:
        """The results record of every (example, form) run, in the order they ran."""
        return list(self.records.values())

    def case(self, d: Description) -> ConcreteCase:
        key = d.key
        if key not in self.cases:
            self.cases[key] = build(d)  # (NotACase propagates)
        return self.cases[key]

    def run(self, d: Description) -> Ran | None:
        key = d.key
        if key in self.ran:
            return self.ran[key]
        case = self.case(d)
        found: Ran | None = None
        for form in self.forms:
            result = self.pool.get(ObjRef(case), form)
            self.calls += 1
            self.records[(key, form)] = result.record
            if result.status not in FAILING or found is not None:
                continue
            expected = result.entry is not None and result.entry.status == result.status
            if expected:
                self.expected_failures += 1
                continue
            parts = signature_parts(case, form, result)
            found = Ran(result.status, signature_of(parts), parts, form, result.record)
        self.ran[key] = found
        return found


class _Stop(Exception):
    """Internal: the time budget ran out."""


@dataclass
class Search:
    executor: Executor
    keys: Sequence[tuple[str, str, int]]
    types: Sequence[str] = ()
    granularities: Sequence[str] = ()
    seed: int = 0
    examples: int | None = None  # search examples (None: until the deadline)
    deadline: float | None = None  # time.monotonic() at which the search stops
    database: Path | None = None
    config: str = ""  # what the database key depends on (backend, ops, versions, forms)
    shrink_deadline: float | None = None  # time.monotonic() after which shrinking stops
    #: with a time budget, the seconds one finding's shrinking may take (the search goes on after it)
    shrink_limit: float = 30.0
    on_progress: Callable[[Search], None] | None = None
    findings: dict[str, Finding] = field(default_factory=dict)
    tried: int = 0  # distinct search examples run
    rejected: int = 0
    _counted: set[str] = field(default_factory=set)
    _classes: dict[str, type] = field(default_factory=dict)

    # -- one example ---------------------------------------------------------------------------------------
    def _exception(self, sig: str) -> type:
        cls = self._classes.get(sig)
        if cls is None:
            name = "Finding_" + hashlib.sha256(sig.encode()).hexdigest()[:12]
            cls = self._classes[sig] = type(name, (AssertionError,), {})
        return cls

    def _time_up(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def _example(self, d: Description, mode: dict[str, Any]) -> None:
        # Hypothesis is an optional dependency (the fuzz extra): imported where a search runs
        from hypothesis import reject
        from hypothesis.control import current_build_context

        final = current_build_context().is_final
        searching = mode["target"] is None and mode["search"]
        if searching and not final and d.key not in self._counted and (self._time_up() or self._full()):
            return  # out of budget: the rest of the round passes without running
        if not searching and not final and mode["search"] and self.shrink_deadline is not None and (
                time.monotonic() >= self.shrink_deadline
                or time.monotonic() - mode.get("shrink_started", time.monotonic()) > self.shrink_limit):
            return  # shrinking past its time: what is left of it passes, so it ends
        try:
            ran = self.executor.run(d)
        except NotACase:
            if searching and not final:
                self.rejected += 1
            reject()
        sig = ran.finding if ran is not None else None
        if searching and not final and d.key not in self._counted:
            self._counted.add(d.key)
            self.tried += 1
            if sig is not None and sig in self.findings:
                self.findings[sig].hits += 1
            if self.on_progress:
                self.on_progress(self)
        if sig is None or ran is None:
            return
        if final:  # Hypothesis's last replay: the minimal example of this signature
            f = self.findings.setdefault(sig, Finding(sig, dict(ran.parts or {})))
            f.description, f.case, f.form = d, self.executor.case(d), ran.form
            f.record = decode_record(ran.record)
            f.hits = max(f.hits, 1)
        if mode["target"] is None and sig not in self.findings:
            mode["target"] = sig
            mode["shrink_started"] = time.monotonic()
            if searching:
                self.findings[sig] = Finding(sig, dict(ran.parts or {}), hits=1, first=self.tried,
                                             description=d, case=self.executor.case(d), form=ran.form,
                                             record=decode_record(ran.record))
        if sig == mode["target"] or (mode["replay"] and sig in mode["replay"]):
            raise self._exception(sig)()

    def _full(self) -> bool:
        return self.examples is not None and self.tried >= self.examples

    # -- rounds --------------------------------------------------------------------------------------------
    def _given(self, max_examples: int, seed: int, phases: tuple[Any, ...], mode: dict[str, Any]) -> bool:
        """One Hypothesis run; True when it found (and shrank) a new signature."""
        # (Hypothesis, optional: see _example; the strategies import it too)
        from hypothesis import HealthCheck, Verbosity, given, settings
        from hypothesis.database import DirectoryBasedExampleDatabase

        from .strategies import descriptions  # (imports Hypothesis, optional)

        def fuzz_example(d: Description) -> None:
            self._example(d, mode)

        fuzz_example._hypothesis_internal_add_digest = self.config.encode()  # type: ignore[attr-defined]
        db = DirectoryBasedExampleDatabase(str(self.database)) if self.database is not None else None
        test = (settings(max_examples=max_examples, deadline=None, database=db, phases=phases,
                                    derandomize=False, report_multiple_bugs=bool(mode["replay"]),
                                    suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
                                    print_blob=False)(given(descriptions(list(self.keys), tuple(self.types),
                                                                         tuple(self.granularities)))(fuzz_example)))
        # What @seed(seed) does, without the database=None it also sets: the seed makes the search
        # reproducible, the database carries what was found from one run to the next.
        test._hypothesis_internal_use_seed = seed  # type: ignore[attr-defined]
        from hypothesis.errors import (  # (Hypothesis, optional: see _example)
            HypothesisException,
            Unsatisfiable,
        )
        from hypothesis.reporting import with_reporter  # (Hypothesis, optional)

        try:
            with with_reporter(lambda _: None):
                test()
        except Unsatisfiable:  # every example of the round was rejected
            return False
        except Exception as e:  # a finding (or several: an ExceptionGroup), or Hypothesis's Flaky
            if isinstance(e, HypothesisException) and "Flaky" not in type(e).__name__:
                raise
            return True
        return False

    def replay_database(self) -> None:
        """Replay what the database holds (the minimal examples of earlier runs); each still failing is a
        finding."""
        from hypothesis import Phase  # (Hypothesis, optional: see _example)

        if self.database is None:
            return
        mode: dict[str, Any] = {"target": None, "search": False, "replay": _AnySignature()}
        self._given(10_000, self.seed, (Phase.reuse,), mode)

    def run(self) -> None:
        from hypothesis import Phase  # (Hypothesis, optional: see _example)

        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            self.replay_database()
            round_ = 0
            while not self._time_up() and not self._full():
                mode: dict[str, Any] = {"target": None, "search": True, "replay": None}
                before = self.tried
                found = self._given(CHUNK, self.seed * 100_003 + round_, (Phase.generate, Phase.shrink), mode)
                if found:
                    continue  # the same round again: it goes on past the signature just shrunk
                # nothing new in this round (the space is exhausted, or all rejected)
                if self.tried == before:
                    round_ += 1
                    if round_ > 10_000:
                        break
                    continue
                round_ += 1


class _AnySignature:
    """Replay mode: every failing signature raises (so Hypothesis keeps each database entry that still
    fails)."""

    def __contains__(self, sig: object) -> bool:
        return True
