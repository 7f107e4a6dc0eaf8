"""One case from start to record, as a backend's worker process runs it.

The worker is handed a small reference to a case (a case file and an index, or an exported suite's case),
builds the model, runs the backend, classifies what it did against the case's rule, looks the case up in the
expectations and writes the results-file record. The pytest process only receives the finished result, so the
work of a case runs in parallel with pytest's own bookkeeping of the previous ones.
"""

from __future__ import annotations

import gc
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, cast

import numpy as np
import onnx

from ..backends.base import Backend, NotApplicable, Rejected, Unsupported
from ..blame import harness_fault
from ..domain import FAILING, HARNESS, Case, RunStatus
from ..generators.cache import load_file_cached
from ..generators.graph_case import GraphCase
from ..results.files import decode_record, encode_record
from ..results.records import case_record
from ..sharding import Shard
from . import record as record_mod
from .attribution import attribute
from .expectations import Expectation, Expectations
from .outcome import Outcome, classify
from .outputs import RawResult, exception_text, printable, take

#: statuses whose Outcome (mismatches, actual values) the pytest process needs to describe the failure
_DESCRIBED = FAILING | HARNESS | {RunStatus.IMPLEMENTATION_DEFINED}


#: a case file as a run loads it: its path, and the tiers and shard (K, N; None: all) it is expanded for
Source = tuple[str, tuple[str, ...], Shard | None]


@dataclass(frozen=True)
class FileRef:
    """Case ``index`` of a case file expanded for ``tiers`` and ``shard`` (the same list the collector
    saw)."""

    path: str
    tiers: tuple[str, ...]
    index: int
    case_id: str
    shard: Shard | None = None

    @property
    def source(self) -> Source:
        return (self.path, self.tiers, self.shard)


@dataclass(frozen=True)
class ObjRef:
    """A case that travels whole (an exported suite's case: a few paths and its metadata)."""

    case: Case


CaseRef = FileRef | ObjRef


class CaseNote(TypedDict):
    """What the run's tally needs of a case that ran (:meth:`CaseResult.note`)."""

    id: str
    form: str
    status: str
    expected: str | None  # the status its expectation entry records
    line: int | None  # ... and the entry's line
    reason: str | None  # a refusal's message


@dataclass
class CaseResult:
    status: str
    message: str
    record: str  # the results-file line (JSON)
    entry: Expectation | None = None
    outcome: Outcome | None = None  # for failures and implementation-defined cases: what repr_failure shows

    def note(self, case_id: str, form: str) -> CaseNote:
        """What the run's tally needs, small enough to travel with every report (pytest-xdist included)."""
        return {"id": case_id, "form": form, "status": self.status,
                "expected": None if self.entry is None else self.entry.status,
                "line": None if self.entry is None else self.entry.line,
                # (a refusal's reason: which message markers a run's refusals matched, markers.MarkerWatch)
                "reason": self.message[:1000] if self.status == RunStatus.UNSUPPORTED else None}


class Sources:
    """The case files a worker has loaded, each once."""

    def __init__(self) -> None:
        self._files: dict[Source, Sequence[Case]] = {}

    def load(self, source: Source) -> Sequence[Case]:
        cases = self._files.get(source)
        if cases is None:
            loaded: Sequence[Case] = load_file_cached(Path(source[0]), source[1], source[2])
            cases = self._files[source] = loaded
            # The cases live as long as the worker: keep them out of every later garbage collection.
            gc.collect()
            gc.freeze()
        return cases

    def resolve(self, ref: CaseRef) -> Case:
        if isinstance(ref, ObjRef):
            return ref.case
        cases = self.load(ref.source)
        case = cases[ref.index] if ref.index < len(cases) else None
        if case is None or case.id != ref.case_id:
            raise LookupError(f"{ref.path} changed since collection: case {ref.index} is no longer "
                              f"{ref.case_id}")
        return case


def call_backend(backend: Backend, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray],
                 contained: bool = False) -> RawResult:
    """Run ``backend`` once; its declines and errors become the RawResult kinds. The backend gets copies of
    the feeds: one that writes into its inputs (in place, in native code) changes neither the case nor its
    record. An exception this tool's own code raised (an adapter's bug: ``blame.harness_fault``) is a
    ``harness-error``, never the backend's ``error``. ``contained``: this is a worker process, where even
    SystemExit and KeyboardInterrupt come from the backend (the worker ignores SIGINT, and SIGTERM ends it
    without an exception)."""
    t0 = time.perf_counter()
    try:
        returned = backend.run(model, {k: np.array(v) for k, v in feeds.items()})
        outputs, instead = take(returned)
        return RawResult("ok", outputs, seconds=time.perf_counter() - t0, returned=instead)
    except NotApplicable as e:
        kind, message = "not-applicable", exception_text(e)
    except Unsupported as e:
        kind, message = "unsupported", exception_text(e)
    except Rejected as e:
        kind, message = "rejected", exception_text(e)
    except Exception as e:
        where = harness_fault(e)
        kind = RunStatus.HARNESS_ERROR.value if where else "error"
        said = f" (raised by this tool's own code, {where}: the fault is the tool's, not the backend's)" \
            if where else ""
        message = f"{type(e).__name__}: {exception_text(e)}{said}\n{_trace(e)}"
    except BaseException as e:
        if not contained:
            raise
        said = exception_text(e)
        kind, message = "error", ("the backend raised "
                                  f"{type(e).__name__}{': ' + said if said else ''}\n{_trace(e)}")
    return RawResult(kind, message=message, seconds=time.perf_counter() - t0)


def _trace(e: BaseException, limit: int = 6) -> str:
    """The innermost ``limit`` frames of ``e``'s traceback, as Python prints them but without the column
    carets: computing them re-parses every source line, most of what printing a traceback costs."""
    frames = traceback.extract_tb(e.__traceback__)[-limit:]
    lines = ["Traceback (most recent call last):"]
    for f in frames:
        lines.append(f'  File "{f.filename}", line {f.lineno}, in {f.name}')
        if f.line:
            lines.append(f"    {f.line.strip()}")
    return printable("\n".join(lines))


def finish(case: Case, form: str, raw: RawResult, entry: Expectation | None, backend: tuple[str, str],
           repro: Callable[[str, list[str]], str] | None = None, model: onnx.ModelProto | None = None,
           feeds: dict[str, np.ndarray] | None = None, names: Sequence[str] = ()) -> CaseResult:
    """Classify ``raw`` against the case's rule and write its record (``model`` and ``feeds``: the case's,
    when already at hand and unchanged; ``names``: its output names)."""
    outcome = classify(raw, case_status=case.status, expected=case.expected, ulp=case.ulp,
                       readings=case.readings, names=names, bounds=case.output_bounds())
    rec = record_mod.build(case, form, outcome, entry, backend, model,
                           feeds if feeds is not None else case.feeds(form), repro)
    kept = outcome if outcome.status in _DESCRIBED else None
    if kept is not None and kept.actual:
        # The pytest process shows the values at the first mismatching indices only: the other outputs (a huge
        # one of the wrong shape, say) need not travel.
        needed = {k for k, m in kept.mismatches if m.indices}
        kept.actual = [a if k in needed else None for k, a in enumerate(kept.actual)]
    return CaseResult(outcome.status, outcome.message, encode_record(rec), entry, kept)


#: the share of the per-case time limit a backend's ``prepare`` may take for a batch
PREPARE_SHARE = 0.6


def prepare_cases(backend: Backend, refs: Sequence[tuple[CaseRef, str]], sources: Sources,
                  timeout: float) -> None:
    """Hand a backend that compiles in batches (one with ``prepare(items, budget)``, IREE's) the models and
    feeds of the cases it is about to run, before they run one by one; never raises (a case whose preparation
    failed is simply run on its own)."""
    prepare = getattr(backend, "prepare", None)
    if prepare is None:
        return
    items = []
    for ref, form in refs:
        try:
            case = sources.resolve(ref)
            items.append((case.model(form), case.feeds(form)))
        except Exception:  # noqa: BLE001 - run_case says what is wrong with this case
            continue
    try:
        if items:
            prepare(items, PREPARE_SHARE * timeout)
    except Exception:  # noqa: BLE001 - a backend's batch failed as a whole: each case runs (and fails) on its own
        pass


#: the statuses of a graph case whose defect the node-by-node run attributes (attribution.py)
_ATTRIBUTED = frozenset({RunStatus.FAILED.value, RunStatus.ERROR.value})


def _attribute(result: CaseResult, case: Case, form: str, backend: Backend) -> None:
    """Add to a failing graph case's record whether the backend's own node-by-node run gives the expected
    outputs (``defect``: rewrite) or not (node), and why (``defect_why``)."""
    try:
        # (a graph case: run_case asks is_graph, which only GraphCase has)
        defect, why = attribute(cast(GraphCase, case), form, backend,
                                lambda b, m, f: call_backend(b, m, f, contained=True))
    except Exception as e:  # the attribution is a help for the reader: never the reason to lose the record
        defect, why = None, f"node-by-node run failed: {type(e).__name__}: {exception_text(e)}"
    rec = decode_record(result.record)
    rec["defect"], rec["defect_why"] = defect, why
    result.record = encode_record(rec)
    result.message = f"{result.message} [{defect}: {why}]" if defect else result.message
    if result.outcome is not None:
        result.outcome.message = result.message


def run_case(backend: Backend, ref: CaseRef, form: str, sources: Sources,
             expectations: Expectations) -> CaseResult:
    """Everything about one case, in the worker; never raises."""
    case: Case | None = None
    try:
        case = sources.resolve(ref)
        model, feeds = case.model(form), case.feeds(form)
        names = getattr(case, "output_names", None) or [o.name for o in model.graph.output]
        raw = call_backend(backend, model, feeds, contained=True)
        # (the record builds the model again when it needs it: the backend may have changed the one it was
        # given)
        result = finish(case, form, raw, expectations.expected(case.id, form),
                        (backend.name, backend.version), getattr(backend, "repro", None), None, feeds, names)
        if getattr(case, "is_graph", False) and result.status in _ATTRIBUTED:
            _attribute(result, case, form, backend)
        return result
    except Exception as e:  # the harness itself failed on this case: the tool's fault, this case only
        message = (f"the runner could not run this case (the fault is the tool's, not the backend's): "
                   f"{type(e).__name__}: {exception_text(e)}\n{_trace(e)}")
        outcome = Outcome(RunStatus.HARNESS_ERROR, message)
        try:
            if case is None:
                raise LookupError(message)
            rec = record_mod.build(case, form, outcome, None, (backend.name, backend.version), None,
                                   case.feeds(form), None)
        except Exception:  # not even the case could be read: the record says which one, and why
            case_id = ref.case_id if isinstance(ref, FileRef) else getattr(ref.case, "id", "?")
            rec = case_record(case_id, form, outcome.status, message, (backend.name, backend.version))
        return CaseResult(outcome.status, message, encode_record(rec), None, outcome)
