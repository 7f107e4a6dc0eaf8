"""Backend worker processes that run the corpus ahead of pytest.

pytest runs one item at a time; its own bookkeeping per item costs about as much as ONNX Runtime takes for a
case. So the workers do not wait to be asked: given the run order (the plan), they are handed cases a few at a
time, run them (model, backend, comparison, record) and queue the finished results, while the pytest process
reports the previous items. An item then only collects its result.

A case stays isolated: a worker runs its cases one after the other and its beacon (shared memory) shows the
one it is on, so when it dies or runs one case past the timeout, that case is recorded as crashed or timeout,
the worker is replaced and its other unanswered cases are handed to the new one. (A worker sends its results a
few at a time, which saves the pytest process a wake-up per case; results that died with it are simply
computed again.) A case that is not in the plan, or asked for out of order (pytest-xdist decides the order in
its workers), is run when asked.

The record of a case whose worker crashed or hung is written here, with the backend's repro made from the
templates its worker sent (no backend is ever created in the pytest process); a worker that cannot be started
again costs the cases handed to it, each recorded as crashed with the reason.
"""

from __future__ import annotations

import itertools
import time
from collections import deque

from ..backends.registry import BackendOptions
from ..results.files import encode_record
from ..results.records import case_record
from .execute import CaseRef, CaseResult, FileRef, Source, Sources, finish
from .expectations import Expectations, for_file
from .isolation import BackendStartError, IsolatedBackend, Lost
from .outcome import Outcome
from .outputs import RawResult
from .repro import TemplateRepro

Ticket = int


class CasePool:
    def __init__(self, spec: str, options: BackendOptions, timeout: float, size: int = 1,
                 expectations_path: str | None = None, window: int = 24, chunk: int = 8,
                 create_timeout: float | None = None) -> None:
        self.workers = [IsolatedBackend(spec, options, timeout, expectations_path, create_timeout)
                        for _ in range(max(1, size))]
        self.window, self.chunk = window, chunk
        self._plan: list[tuple[CaseRef, str]] = []
        self._cursor = 0  # the next plan position to hand out
        self._planned: dict[int, Ticket] = {}  # plan position -> ticket, handed out and not yet collected
        self._owner: dict[Ticket, int] = {}  # ticket -> worker
        self._queues: list[deque[tuple[Ticket, CaseRef, str]]] = [deque() for _ in self.workers]
        self._done: dict[Ticket, CaseResult] = {}
        self._tickets = itertools.count()
        self.expectations_path = expectations_path
        self._sources: Sources | None = None  # case files, loaded here only to record a lost case
        self._expectations: Expectations | None = None

    @property
    def name(self) -> str:
        return self.workers[0].name

    @property
    def version(self) -> str:
        return self.workers[0].version

    @property
    def repro(self) -> TemplateRepro | None:
        """The backend's repro writer (from its worker's templates)."""
        return self.workers[0].repro

    @property
    def restarts(self) -> int:
        return sum(w.restarts for w in self.workers)

    def start(self) -> None:
        """Start every worker side by side; raises BackendStartError when the backend cannot be created."""
        try:
            for w in self.workers:
                w.spawn()
            for w in self.workers:
                w.start()
            batch = max(w.batch for w in self.workers)
            if batch:  # a backend that compiles the cases it is handed as one batch (IREE): hand it that many
                self.chunk, self.window = batch, max(self.window, batch)
        except BaseException:
            self.close(wait_s=0)
            raise

    def set_expectations(self, path: str | None) -> None:
        """The expectations file whose entries the records name (the workers load it themselves)."""
        self.expectations_path, self._expectations = path, None
        for w in self.workers:
            w.expectations_path = path
            w.send(("expectations", path))

    def preload(self, source: Source) -> None:
        """Let every worker load a case file now (while pytest is still collecting)."""
        for w in self.workers:
            w.send(("load", source))

    def plan(self, order: list[tuple[CaseRef, str]]) -> None:
        """The cases in the order they will be asked for; position k is asked for as ``get(...,
        position=k)``."""
        self._plan = list(order)
        self._cursor = 0
        self._planned.clear()

    def get(self, ref: CaseRef, form: str, position: int | None = None) -> CaseResult:
        """The result of a case (crashed / timeout when its worker was lost)."""
        ticket = self._planned.pop(position, None) if position is not None else None
        if ticket is None:
            if position is not None and position >= self._cursor and self._plan_matches(position, ref, form):
                self._cursor = position  # asked ahead of the plan: skip to it
                self._top_up(force=True)
                ticket = self._planned.pop(position)
            else:
                ticket = next(self._tickets)
                self._hand_out(self._least_busy(), [(ticket, ref, form)])
        self._top_up()
        while ticket not in self._done:  # (it may have arrived while an earlier case was awaited)
            self._receive(self._owner[ticket])
        return self._done.pop(ticket)

    def _plan_matches(self, position: int, ref: CaseRef, form: str) -> bool:
        return position < len(self._plan) and self._plan[position] == (ref, form)

    def _least_busy(self) -> int:
        return min(range(len(self.workers)), key=lambda k: len(self._queues[k]))

    def _top_up(self, force: bool = False) -> None:
        while self._cursor < len(self._plan):
            k = self._least_busy()
            if len(self._queues[k]) >= self.window and not force:
                return
            force = False
            batch = []
            for position in range(self._cursor, min(self._cursor + self.chunk, len(self._plan))):
                ticket = next(self._tickets)
                self._planned[position] = ticket
                ref, form = self._plan[position]
                batch.append((ticket, ref, form))
            self._cursor += len(batch)
            self._hand_out(k, batch)

    def _hand_out(self, k: int, batch: list[tuple[Ticket, CaseRef, str]]) -> None:
        owed = bool(self._queues[k])  # a worker that died owing answers is replaced by _receive, not here
        for ticket, _, _ in batch:
            self._owner[ticket] = k
        self._queues[k].extend(batch)
        try:
            self.workers[k].send(("cases", batch), restart=not owed)
        except BackendStartError as e:  # every case it owes is lost: the next batch tries a new worker again
            queue = list(self._queues[k])
            self._queues[k].clear()
            for ticket, ref, form in queue:
                del self._owner[ticket]
                self._done[ticket] = self._record_lost(ref, form, RawResult(
                    "crashed", message=f"the backend's worker could not be started again: {e}"))

    def _receive(self, k: int) -> None:
        queue = self._queues[k]
        try:
            msg = self.workers[k].receive()
        except Lost as lost:
            # The worker's beacon names the case it died or hung on; when it ran none (it died between cases),
            # the blame goes to the first case it had not answered, which it was about to run.
            owed = [t for t, _, _ in queue]
            ticket = lost.ticket if lost.ticket in owed else owed[0]
            del self._owner[ticket]
            ref, form = next((r, f) for t, r, f in queue if t == ticket)
            self._done[ticket] = self._record_lost(ref, form, RawResult(lost.kind, message=lost.message,
                                                                        seconds=lost.seconds))
            rest = [entry for entry in queue if entry[0] != ticket]  # (their results died with the worker)
            queue.clear()
            if rest:
                self._hand_out(k, rest)  # to the replacement worker
            return
        for ticket, result in msg[1]:  # ("results", [...]): answers in the order the cases were handed out
            head, _, _ = queue.popleft()
            assert head == ticket, (head, ticket)
            del self._owner[ticket]
            self._done[ticket] = result

    def _record_lost(self, ref: CaseRef, form: str, raw: RawResult) -> CaseResult:
        """The record of a case whose worker crashed or hung (or could not be started)."""
        backend = (self.name, self.version)
        try:
            if self._sources is None:
                self._sources = Sources()
            if self._expectations is None:
                self._expectations = for_file(self.expectations_path, self.version)
            case = self._sources.resolve(ref)
            return finish(case, form, raw, self._expectations.expected(case.id, form), backend, self.repro)
        except Exception as e:  # (the case file changed since collection, say): the record says which case
            message = (f"{raw.kind}: {raw.message} (and it could not be recorded in full: "
                       f"{type(e).__name__}: {e})")
            case_id = ref.case_id if isinstance(ref, FileRef) else getattr(ref.case, "id", "?")
            rec = case_record(case_id, form, raw.kind, message, backend)
            return CaseResult(raw.kind, message, encode_record(rec), None, Outcome(raw.kind, message))

    def close(self, wait_s: float = 2.0) -> None:
        """Stop every worker: each may finish its current case within ``wait_s`` seconds (all together), then
        it is killed with every process it started (at once with 0); their folders are removed."""
        for w in self.workers:
            w.ask_to_stop()
        deadline = time.monotonic() + wait_s
        for w in self.workers:
            w.close(max(0.0, deadline - time.monotonic()))
