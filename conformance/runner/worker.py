"""The worker process of an isolated backend (:mod:`.isolation`): its setup, its loop, and the beacon that
shows the parent which case it is running.

The worker builds the backend once and then serves: a model and its feeds (pickled arrays) in, the outputs (or
a decline / an error) out; or references to corpus cases in, finished results out (see ``execute`` and
``pool``). Whatever a backend prints goes to the worker's log file; the worker runs under a keeper process, in
a folder of its own (see ``lifecycle``).
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import multiprocessing as mp
import os
import sys
import tempfile
import threading
import time
import weakref
from multiprocessing.connection import Connection
from typing import Any, Literal

import onnx

from ..backends.base import BackendUnavailable
from ..backends.registry import BackendOptions, create
from . import execute, lifecycle
from .expectations import for_file
from .outputs import exception_text
from .repro import templates_of

#: how much lower the workers' scheduling priority is than the pytest process's
WORKER_NICENESS = 5


#: the pytest process's ends of its workers' pipes: a forked worker closes its copies, so that each worker
#: sees end-of-file when the pytest process is gone (and not only when every sibling forked after it is gone
#: too)
PARENT_ENDS: weakref.WeakSet[Connection] = weakref.WeakSet()


#: a beacon's "case" when the worker runs nothing, when it runs a ("run", ...) request, and when it gets ready
#: for its cases (loads a case file or the expectations: a new worker's start-up, within --backend-timeout)
IDLE, DIRECT, SETUP = -1, -2, -3


class Beacon:
    """What a worker is running right now, in memory shared with the parent: the case's ticket and when it
    started. A worker sends its results a few at a time, so when it dies or hangs, the beacon (not the order
    of its answers) tells which case it was on; and the per-case timeout counts from that case's own start."""

    def __init__(self) -> None:
        self._cell = mp.RawArray(ctypes.c_double, 2)  # [started (time.monotonic), ticket]
        self._cell[1] = IDLE

    def begin(self, ticket: int) -> None:
        self._cell[0] = time.monotonic()
        self._cell[1] = ticket  # written last: a reader never pairs a new ticket with an old start

    def end(self) -> None:
        self._cell[1] = IDLE

    def read(self) -> tuple[int, float]:
        """(ticket, seconds it has been running); (IDLE, 0.0) when nothing runs."""
        ticket = int(self._cell[1])
        started = self._cell[0]
        if ticket == IDLE or int(self._cell[1]) != ticket:  # (it moved on while being read: not stuck)
            return IDLE, 0.0
        return ticket, max(0.0, time.monotonic() - started)


def start_method() -> Literal["fork", "spawn"]:
    """How a worker process starts: forked where that is safe (Linux, and no thread in this process that a
    fork could leave holding a lock), which spares it importing numpy, onnx and the runner again; spawned
    otherwise (and always when ``QDQ_WORKER_START=spawn``)."""
    wanted = os.environ.get("QDQ_WORKER_START", "")
    if wanted == "spawn":
        return "spawn"
    if wanted == "fork":
        return "fork"
    if sys.platform == "linux" and "fork" in mp.get_all_start_methods() and threading.active_count() == 1:
        return "fork"
    return "spawn"


def _redirect_output(log_path: str) -> None:
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


#: a worker sends the results it holds once the oldest has waited this long (or its batch of cases is done)
FLUSH_AFTER = 0.05


def serve(conn: Connection, spec: str, options: BackendOptions, log_path: str | None = None,
           expectations_path: str | None = None, beacon: Beacon | None = None, parent_pid: int | None = None,
           folder: str | None = None, timeout: float = 60.0) -> None:
    """The worker's loop. Messages: ("run", model bytes, feeds) -> ("raw", RawResult); ("load", source)
    preloads a case file; ("cases", [(ticket, case ref, form), ...]) -> ("results", [(ticket, CaseResult),
    ...]) messages that answer every case in order, a few at a time (a backend with ``prepare`` is first
    handed them all: see ``execute.prepare_cases``; its beacon shows the first case meanwhile);
    ("expectations", path or None) names the expectations file the records refer to; ("stop",). The beacon
    always shows the case being run. The first message is ("hello", name, version, repro templates, {"batch":
    cases the backend likes to be handed at once}) or ("fatal", why)."""
    guard = _settle(conn, parent_pid, folder, log_path)
    backend = _open_backend(conn, spec, options)
    if backend is None:
        return
    sources = execute.Sources()
    expectations = None
    beacon = beacon or Beacon()
    while True:
        try:
            msg = conn.recv()
        except EOFError:  # the pytest process is gone or going (or gave up on this worker, and kills it)
            guard.die_when_orphaned()
            return
        kind = msg[0]
        if kind == "stop":
            return
        if kind == "run":
            beacon.begin(DIRECT)
            raw = execute.call_backend(backend, onnx.load_model_from_string(msg[1]), msg[2], contained=True)
            beacon.end()
            conn.send(("raw", raw))
        elif kind == "expectations":
            expectations_path, expectations = msg[1], None
        elif kind == "load":
            _load(sources, [msg[1]], beacon)
            beacon.end()
        elif kind == "cases":
            beacon.begin(SETUP)  # (no case's clock runs while the worker gets ready: see _load)
            if expectations is None:
                expectations = for_file(expectations_path, backend.version)
            _load(sources, [ref.source for _, ref, _ in msg[1] if isinstance(ref, execute.FileRef)], beacon)
            _run_cases(conn, backend, msg[1], sources, expectations, beacon, timeout)
            beacon.end()


def _settle(conn: Connection, parent_pid: int | None, folder: str | None,
            log_path: str | None) -> lifecycle.WorkerGuard:
    """The worker's process set up: the parent's pipe ends closed, its own temporary folder, its output to the
    log, no inherited faulthandler, its keeper and guard, a lower priority."""
    for end in list(PARENT_ENDS):  # (inherited at the fork: ours, and our siblings')
        end.close()
    if folder:  # whatever the backend creates in a temporary folder goes into the worker's own
        tmp = os.path.join(folder, "tmp")
        os.makedirs(tmp, exist_ok=True)
        os.environ["TMPDIR"] = tempfile.tempdir = tmp
    if log_path:
        _redirect_output(log_path)
    # A forked worker inherits pytest's faulthandler, which would print a crash's Python traceback to the
    # terminal (and push the backend's own last words out of the log's tail): the crash message names the case
    # instead.
    faulthandler.disable()
    # This process becomes the worker's keeper, which kills whatever the backend leaves behind (setsid
    # included) however the worker ends; the worker goes on here, in the keeper's child (lifecycle.py).
    lifecycle.keep(parent_pid or os.getppid(), folder, close=(conn,))
    guard = lifecycle.WorkerGuard(os.getppid(), folder)
    guard.install()
    with contextlib.suppress(OSError, AttributeError):
        # Workers run ahead of the pytest process, which reports each item in turn and so sets the pace of a
        # run: on a busy machine it gets the CPU first.
        os.nice(WORKER_NICENESS)
    return guard


def _open_backend(conn: Connection, spec: str, options: BackendOptions) -> Any:
    """The backend, announced with the "hello" message; None (after a "fatal" message) when it cannot be
    made."""
    try:
        backend = create(spec, options)
        if not callable(getattr(backend, "run", None)):
            raise TypeError(f"the factory returned a {type(backend).__name__}, which has no run(model, "
                            "feeds) method")
        # (the records and the expectations want text, whatever a third-party backend holds)
        backend_name, backend_version = str(getattr(backend, "name", spec)), str(getattr(backend, "version",
                                                                                         "unknown"))
        templates = templates_of(backend)
        batch = int(getattr(backend, "batch", 0) or 0) if callable(getattr(backend, "prepare", None)) else 0
    except BackendUnavailable as e:  # (its message says it all: a missing package and how to install it, say)
        conn.send(("fatal", exception_text(e, 2000)))
        return None
    except Exception as e:
        conn.send(("fatal", f"{type(e).__name__}: {exception_text(e, 2000)}"))
        return None
    conn.send(("hello", backend_name, backend_version, templates, {"batch": batch}))
    return backend


def _load(sources: execute.Sources, files: list[execute.Source], beacon: Beacon) -> None:
    """Load case files (each once) under the beacon's SETUP, each file within --backend-timeout: what a new
    worker (a replacement, say) does before its first case of a file, never counted against that case."""
    for source in files:
        beacon.begin(SETUP)
        with contextlib.suppress(Exception):  # a file that does not load fails its cases, one by one
            sources.load(source)


def _run_cases(conn: Connection, backend: Any, cases: list[tuple[int, Any, str]], sources: execute.Sources,
               expectations: Any, beacon: Beacon, timeout: float) -> None:
    """Answer a "cases" message: every case in order, sent a few at a time (``FLUSH_AFTER``), each shown in
    the beacon while it runs (a backend with ``prepare`` is first handed them all)."""
    held: list[tuple[int, Any]] = []
    since = 0.0
    if cases:
        beacon.begin(cases[0][0])
        execute.prepare_cases(backend, [(ref, form) for _, ref, form in cases], sources, timeout)
        beacon.end()
    for ticket, ref, form in cases:
        beacon.begin(ticket)
        held.append((ticket, execute.run_case(backend, ref, form, sources, expectations)))
        beacon.end()
        since = since or time.monotonic()
        if time.monotonic() - since >= FLUSH_AFTER:
            conn.send(("results", held))
            held, since = [], 0.0
    if held:
        conn.send(("results", held))
