"""The mutation score: every mutant run over the corpus's normative cases until one gives a wrong value.

A case kills a mutant when a real run (``qdq-conformance run --backend mutant:ID --expectations none``) gives
a wrong value on it: the verdict comes from the runner's own
:func:`~qdq_conformance.runner.execute.call_backend` and :func:`~qdq_conformance.runner.outcome.classify`,
with the case's status, expected outputs and comparison rule, and no expectations. A kill is the outcome
``failed`` on a normative case, and nothing else: a mutant that refuses a valid model (``error``) has shown
no wrong value (a backend taking the same shortcut without the kernel's shape checks would compute one), so
the scan notes the first such refusal and goes on. An implementation-defined case is never a failure.
Invalid cases are scanned only for a mutant whose shortcut is to accept what the spec refuses
(``Mutant.accepts_invalid``): for it, ``invalid-accepted`` is the kill. The scan stops at the first kill
(the corpus order: case files by name, cases in file order); a surviving mutant has been run on every case it
is judged on.

Graph forms: the mutants change the kernel's arithmetic, which reads initializers and fed inputs alike
(:func:`qdq_conformance.reference.model.bind`), so the runtime form decides; ``forms`` can add the other.
"""

from __future__ import annotations

import multiprocessing
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from ..cpu import usable_cores
from ..domain import Case, CaseStatus, Form, RunStatus
from ..reference.ops import SPEC
from ..runner.execute import call_backend
from ..runner.outcome import classify
from .mutant import Mutant, MutantBackend


@dataclass
class Verdict:
    mutant: str
    status: str  # killed | surviving | equivalent | reading (not killed, as expected) | broken (cannot patch)
    case: str | None = None  # the first normative case that failed the mutant
    form: str | None = None
    outcome: str | None = None  # the killing case's status: failed (invalid-accepted for accepts_invalid)
    message: str = ""
    cases_run: int = 0
    seconds: float = 0.0
    #: valid cases the mutant refused (outcome error: no wrong value, so no kill), and the first of them
    refused: int = 0
    first_refused: str | None = None

    @property
    def killed(self) -> bool:
        return self.case is not None

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


#: The outcomes that kill: a wrong value on a valid model; for a mutant that accepts what it must refuse, a
#: model the spec makes invalid run without complaint.
KILLS = frozenset({RunStatus.FAILED.value})
KILLS_ACCEPTING = frozenset({RunStatus.FAILED.value, RunStatus.INVALID_ACCEPTED.value})

#: The normative and invalid cases of the run, set once per process (inherited by forked workers).
_CASES: list[Any] = []
_MODELS: dict[tuple[int, str], Any] = {}
_MUTANTS: dict[str, Mutant] = {}


def _model(k: int, form: str) -> Any:
    key = (k, form)
    if key not in _MODELS:  # parsed once per process: mutants never change a model
        _MODELS[key] = _CASES[k].model(form)
    return _MODELS[key]


def judge(m: Mutant, forms: Sequence[str] = (Form.RUNTIME.value,)) -> Verdict:
    """Run mutant ``m`` over the normative cases (and the invalid ones, for a mutant that accepts what it must
    refuse) in ``forms`` until one kills it (:data:`KILLS`)."""
    t0 = time.perf_counter()
    try:
        backend = MutantBackend(m)
    except (AttributeError, KeyError, TypeError) as e:  # e.g. a step the kernel's Steps no longer has
        return Verdict(m.id, "broken", message=f"cannot build the mutant's steps: {type(e).__name__}: {e}")
    kills = KILLS_ACCEPTING if m.accepts_invalid else KILLS
    judged = (CaseStatus.NORMATIVE, CaseStatus.INVALID) if m.accepts_invalid else (CaseStatus.NORMATIVE,)
    v = Verdict(m.id, {"defect": "surviving"}.get(m.kind, m.kind))
    for form in forms:
        for k, case in enumerate(_CASES):
            if case.status not in judged:
                continue
            outcome = _left_alone(m, k, form)  # (a rewrite that changes nothing: the kernel's own run)
            if outcome is None:
                outcome = _classify(case, call_backend(backend, _model(k, form), case.feeds(form)))
            v.cases_run += 1
            if outcome.status in kills:
                message = outcome.message.splitlines()[0][:300] if outcome.message else ""
                v.status, v.case, v.form, v.outcome = "killed", case.id, form, outcome.status
                v.message = message
                break
            if outcome.status == RunStatus.ERROR and case.status == CaseStatus.NORMATIVE:
                v.refused += 1
                v.first_refused = v.first_refused or case.id
        if v.killed:
            break
    v.seconds = time.perf_counter() - t0
    return v


def _classify(case: Any, raw: Any) -> Any:
    return classify(raw, case_status=case.status, expected=case.expected, ulp=case.ulp,
                    bounds=case.output_bounds())


#: the kernel itself, as a backend: what a rewrite mutant runs when its rewrite changes nothing
_KERNEL = Mutant("kernel", "none", "none", lambda: SPEC, equivalent="the kernel itself")
#: per (case, form), the serialized model and the outcome of the kernel's own run of it, once per process
_SERIALIZED: dict[tuple[int, str], bytes] = {}
_KERNEL_OUTCOMES: dict[tuple[int, str], Any] = {}


def _left_alone(m: Mutant, k: int, form: str) -> Any:
    """The outcome of rewrite mutant ``m`` on case ``k`` when its rewrite leaves the model and feeds as they
    are (the same bytes, the same arrays): then the mutant runs exactly the kernel's computation (its steps
    are the kernel's, ``rewrite_mutant``), whose outcome is computed once per case, not once per mutant. None
    when ``m`` is no such mutant or its rewrite changes the case (it is then run as any other)."""
    if m.rewrite is None or m.steps() is not SPEC:
        return None
    key = (k, form)
    model, feeds = _model(k, form), _CASES[k].feeds(form)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    rewritten, new_feeds = m.rewrite(copy, dict(feeds))
    if key not in _SERIALIZED:
        _SERIALIZED[key] = model.SerializeToString()
    if rewritten.SerializeToString() != _SERIALIZED[key] or not _same_feeds(new_feeds, feeds):
        return None
    if key not in _KERNEL_OUTCOMES:
        _KERNEL_OUTCOMES[key] = _classify(_CASES[k], call_backend(MutantBackend(_KERNEL), model, feeds))
    return _KERNEL_OUTCOMES[key]


def _same_feeds(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same feeds: the same names, each the very same array (a rewrite that leaves the feeds alone hands
    them back; one that makes new arrays is run as any other)."""
    return a.keys() == b.keys() and all(a[n] is b[n] for n in a)


def _judge_by_id(args: tuple[str, tuple[str, ...]]) -> Verdict:
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # a mutant's overflows are its own business
        warnings.simplefilter("ignore")
        return judge(_MUTANTS[args[0]], args[1])


def score(cases: Iterable[Case], mutants: Sequence[Mutant], *, forms: Sequence[str] = (Form.RUNTIME.value,),
          jobs: int | None = None, progress: Callable[[Verdict], None] | None = None) -> list[Verdict]:
    """Verdicts for ``mutants`` (in their order) over the normative ones of ``cases`` (and the invalid ones,
    for a mutant that accepts what it must refuse).

    ``jobs`` processes judge mutants side by side (default: the usable cores, at most 4; forked, so they share
    the loaded corpus); ``progress`` is called with each verdict as it arrives.
    """
    _CASES[:] = [c for c in cases if c.status in (CaseStatus.NORMATIVE, CaseStatus.INVALID)]
    _MODELS.clear()
    _SERIALIZED.clear()
    _KERNEL_OUTCOMES.clear()
    _MUTANTS.clear()
    _MUTANTS.update((m.id, m) for m in mutants)
    jobs = min(jobs or min(usable_cores(), 4), max(len(mutants), 1))
    # The mutants no case should kill scan every case: hand them out first, so the workers finish together.
    work = [(m.id, tuple(forms)) for m in sorted(mutants, key=lambda m: m.kind == "defect")]
    verdicts: dict[str, Verdict] = {}
    if jobs > 1 and "fork" in multiprocessing.get_all_start_methods():
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for v in pool.imap_unordered(_judge_by_id, work):
                verdicts[v.mutant] = v
                if progress:
                    progress(v)
    else:
        for item in work:
            v = _judge_by_id(item)
            verdicts[v.mutant] = v
            if progress:
                progress(v)
    return [verdicts[m.id] for m in mutants]
