"""Running a backend in a worker process, so that a segfault, an abort or a hang costs one case.

The worker builds the backend once and then serves: a model and its feeds (pickled arrays) in, the outputs (or a
decline / an error) out; or references to corpus cases in, finished results out (see ``execute`` and ``pool``).
A worker that dies, or runs one case for more than ``timeout`` seconds (its beacon tells which case and since
when), is discarded and replaced on the next request. A worker's start-up (creating the backend, loading a
case file for the first time) is timed by ``create_timeout`` and never counted against a case.

Whatever a backend prints (native libraries write to the process's stdout / stderr) goes to a log file of the
worker, not the terminal: a run needs no output capturing, and when a worker crashes, the end of its log is
part of the crash message. A worker runs under a keeper process, in a folder of its own, and dies with its case
or with the run however the run ends, with every process its backend started (see ``lifecycle``). Creating the
backend has its own time limit (``create_timeout``, ``--backend-timeout``): a factory that never returns is a
BackendStartError (a usage error of the run), not a hang.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import multiprocessing as mp
import os
import signal
import sys
import tempfile
import threading
import time
import weakref
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import onnx

from ..backends.base import BackendUnavailable
from ..backends.registry import create
from . import execute, lifecycle
from .expectations import for_file
from .outputs import RawResult, exception_text, printable
from .repro import TemplateRepro, templates_of

if TYPE_CHECKING:
    from multiprocessing.context import ForkContext, SpawnContext

#: how much lower the workers' scheduling priority is than the pytest process's
WORKER_NICENESS = 5


#: the pytest process's ends of its workers' pipes: a forked worker closes its copies, so that each worker sees
#: end-of-file when the pytest process is gone (and not only when every sibling forked after it is gone too)
_PARENT_ENDS: weakref.WeakSet[Connection] = weakref.WeakSet()


#: a beacon's "case" when the worker runs nothing, when it runs a ("run", ...) request, and when it gets ready
#: for its cases (loads a case file or the expectations: a new worker's start-up, within --backend-timeout)
IDLE, DIRECT, SETUP = -1, -2, -3


class Beacon:
    """What a worker is running right now, in memory shared with the parent: the case's ticket and when it
    started. A worker sends its results a few at a time, so when it dies or hangs, the beacon (not the order of
    its answers) tells which case it was on; and the per-case timeout counts from that case's own start."""

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
    """How a worker process starts: forked where that is safe (Linux, and no thread in this process that a fork
    could leave holding a lock), which spares it importing numpy, onnx and the runner again; spawned otherwise
    (and always when ``QDQ_WORKER_START=spawn``)."""
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


def _serve(conn: Connection, spec: str, options: dict[str, Any], log_path: str | None = None,
           expectations_path: str | None = None, beacon: Beacon | None = None, parent_pid: int | None = None,
           folder: str | None = None, timeout: float = 60.0) -> None:
    """The worker's loop. Messages: ("run", model bytes, feeds) -> ("raw", RawResult); ("load", source) preloads
    a case file; ("cases", [(ticket, case ref, form), ...]) -> ("results", [(ticket, CaseResult), ...]) messages
    that answer every case in order, a few at a time (a backend with ``prepare`` is first handed them all: see
    ``execute.prepare_cases``; its beacon shows the first case meanwhile); ("expectations", path or None) names
    the expectations file the records refer to; ("stop",). The beacon always shows the case being run. The first
    message is ("hello", name, version, repro templates, {"batch": cases the backend likes to be handed at once})
    or ("fatal", why)."""
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
    for end in list(_PARENT_ENDS):  # (inherited at the fork: ours, and our siblings')
        end.close()
    if folder:  # whatever the backend creates in a temporary folder goes into the worker's own
        tmp = os.path.join(folder, "tmp")
        os.makedirs(tmp, exist_ok=True)
        os.environ["TMPDIR"] = tempfile.tempdir = tmp
    if log_path:
        _redirect_output(log_path)
    # A forked worker inherits pytest's faulthandler, which would print a crash's Python traceback to the terminal
    # (and push the backend's own last words out of the log's tail): the crash message names the case instead.
    faulthandler.disable()
    # This process becomes the worker's keeper, which kills whatever the backend leaves behind (setsid included)
    # however the worker ends; the worker goes on here, in the keeper's child (lifecycle.py).
    lifecycle.keep(parent_pid or os.getppid(), folder, close=(conn,))
    guard = lifecycle.WorkerGuard(os.getppid(), folder)
    guard.install()
    with contextlib.suppress(OSError, AttributeError):
        # Workers run ahead of the pytest process, which reports each item in turn and so sets the pace of a
        # run: on a busy machine it gets the CPU first.
        os.nice(WORKER_NICENESS)
    return guard


def _open_backend(conn: Connection, spec: str, options: dict[str, Any]) -> Any:
    """The backend, announced with the "hello" message; None (after a "fatal" message) when it cannot be made."""
    try:
        backend = create(spec, options)
        if not callable(getattr(backend, "run", None)):
            raise TypeError(f"the factory returned a {type(backend).__name__}, which has no run(model, feeds) method")
        # (the records and the expectations want text, whatever a third-party backend holds)
        backend_name, backend_version = str(getattr(backend, "name", spec)), str(getattr(backend, "version", "unknown"))
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


def _load(sources: execute.Sources, files: list[tuple[str, tuple[str, ...]]], beacon: Beacon) -> None:
    """Load case files (each once) under the beacon's SETUP, each file within --backend-timeout: what a new
    worker (a replacement, say) does before its first case of a file, never counted against that case."""
    for source in files:
        beacon.begin(SETUP)
        with contextlib.suppress(Exception):  # a file that does not load fails its cases, one by one
            sources.load(source)


def _run_cases(conn: Connection, backend: Any, cases: list[tuple[int, Any, str]], sources: execute.Sources,
               expectations: Any, beacon: Beacon, timeout: float) -> None:
    """Answer a "cases" message: every case in order, sent a few at a time (``FLUSH_AFTER``), each shown in the
    beacon while it runs (a backend with ``prepare`` is first handed them all)."""
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


class Lost(Exception):
    """The worker died (``kind`` crashed) or overran (``kind`` timeout) and was discarded."""

    def __init__(self, kind: str, message: str, seconds: float, ticket: int = IDLE) -> None:
        super().__init__(message)
        self.kind, self.message, self.seconds = kind, message, seconds
        self.ticket = ticket  # the case the worker was running (its beacon), IDLE when it ran none


class BackendStartError(Exception):
    pass


class IsolatedBackend:
    """A backend in a replaceable worker process (under a keeper, in a folder of its own: ``lifecycle``)."""

    def __init__(self, spec: str, options: dict[str, Any] | None = None, timeout: float = 60.0,
                 expectations_path: str | None = None, create_timeout: float | None = None) -> None:
        self.spec = spec
        self.options = dict(options or {})
        self.timeout = timeout
        self.create_timeout = create_timeout or timeout  # (--backend-timeout, by default --case-timeout)
        self.expectations_path = expectations_path
        self.name = spec
        self.version = "unknown"
        self._proc: Any = None
        self._conn: Connection | None = None
        self._starting: tuple[Any, Connection] | None = None
        self.beacon = Beacon()
        self.restarts = 0
        self.repro: TemplateRepro | None = None  # the backend's repro writer, from its worker's templates
        self.batch = 0  # how many cases the backend likes to be handed at once (0: no preference)
        self.folder = tempfile.mkdtemp(prefix="qdq-worker-")  # its log; the TMPDIR of everything it runs
        self.log_path = os.path.join(self.folder, "worker.log")
        weakref.finalize(self, lifecycle.remove, self.folder)  # (also at exit, however this process exits)

    def log_tail(self, lines: int = 8) -> str:
        """The last lines the worker printed (where a crashing native library says why)."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(max(0, os.path.getsize(self.log_path) - 4096))
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return printable("\n".join(text.strip().splitlines()[-lines:]))

    def spawn(self) -> None:
        """Start the worker process without waiting for it (``start`` waits): several start side by side."""
        if self._starting is not None or (self._proc is not None and self._proc.is_alive()):
            return
        parent, child = mp.Pipe()
        _PARENT_ENDS.add(parent)
        with contextlib.suppress(OSError):  # each worker's log starts empty
            os.makedirs(self.folder, exist_ok=True)
            open(self.log_path, "wb").close()
        ctx: ForkContext | SpawnContext = mp.get_context("fork") if start_method() == "fork" else \
            mp.get_context("spawn")
        if ctx.get_start_method() == "fork":  # (nothing buffered here may be written twice)
            sys.stdout.flush()
            sys.stderr.flush()
        self.beacon = Beacon()
        proc = ctx.Process(target=_serve, daemon=True, args=(child, self.spec, self.options, self.log_path,
                                                              self.expectations_path, self.beacon, os.getpid(),
                                                              self.folder, self.timeout))
        proc.start()
        assert proc.pid is not None  # (a started process has one)
        with contextlib.suppress(OSError):  # (the worker does the same as it starts: whoever is first)
            os.setpgid(proc.pid, proc.pid)
        child.close()
        self._starting = (proc, parent)

    def _handshake(self) -> None:
        assert self._starting is not None
        proc, parent = self._starting
        self._starting = None
        limit = self.create_timeout
        if not parent.poll(limit):
            self._stop(proc, parent, 0)
            raise BackendStartError(f"backend {self.spec!r} was not created within {limit:g} s (--backend-timeout, by "
                                    "default --case-timeout); its worker was killed")
        try:
            hello = parent.recv()
        except EOFError:
            self._stop(proc, parent, 5)
            tail = self.log_tail(1)
            raise BackendStartError(f"backend {self.spec!r} died while it was being created "
                                    f"({_how(proc.exitcode)})" + (f": {tail}" if tail else "")) from None
        if hello[0] == "fatal":
            self._stop(proc, parent, 5)
            raise BackendStartError(f"backend {self.spec!r} could not be created: {hello[1]}")
        _, self.name, self.version, templates, wishes = hello
        self.repro = TemplateRepro(templates)
        self.batch = int(wishes.get("batch") or 0)
        self._proc, self._conn = proc, parent

    def start(self) -> None:
        if self._proc is None or not self._proc.is_alive():
            self._proc, self._conn = None, None
            self.spawn()
        if self._starting is not None:
            self._handshake()

    @staticmethod
    def _stop(proc: Any, conn: Connection | None, wait_s: float) -> None:
        """Let the worker exit for up to ``wait_s`` seconds, then kill its keeper's tree (with whatever the backend
        started), and reap it. The group is killed before the worker is reaped: its id cannot be reused until
        then."""
        if wait_s > 0 and proc.is_alive():
            wait([proc.sentinel], wait_s)
        if proc.pid is not None:
            # the keeper's tree (the worker and whatever the backend started, setsid or not) and its group, whose id
            # is its pid
            lifecycle.kill_tree(proc.pid)
        with contextlib.suppress(OSError, ValueError):
            proc.kill()
        proc.join(5)
        if conn is not None:
            conn.close()

    def _discard(self, wait_s: float = 0.0) -> None:
        if self._proc is not None:
            self._stop(self._proc, self._conn, wait_s)
        elif self._conn is not None:
            self._conn.close()
        self._proc, self._conn = None, None
        self.restarts += 1
        lifecycle.remove(os.path.join(self.folder, "tmp"))  # what the lost case left in its temporary folder

    def send(self, msg: tuple[Any, ...], restart: bool = True) -> None:
        """Send to the worker, starting one if there is none. With ``restart=False`` a worker found dead is not
        replaced here (it still owes answers: ``receive`` reports its death against the case it died on)."""
        if not restart and self._proc is not None and not self._proc.is_alive():
            return
        self.start()
        assert self._conn is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
            self._conn.send(msg)

    def receive(self) -> Any:
        """The worker's next message; raises Lost when the worker dies, or runs one case for more than
        ``timeout`` s, or loads one case file for more than ``create_timeout`` s (SETUP: its start-up, not a
        case's time), or runs nothing and sends nothing for ``timeout`` s. The worker is then discarded with
        its processes (the next ``send`` starts a new one); Lost.ticket is the case its beacon showed."""
        t0 = idle_since = time.perf_counter()
        conn = self._conn
        ticket = IDLE
        try:
            if conn is None:
                raise EOFError
            while not conn.poll(min(self.timeout, 0.5)):
                ticket, running = self.beacon.read()
                now = time.perf_counter()
                if ticket != IDLE:
                    idle_since = now
                limit = self.create_timeout if ticket == SETUP else self.timeout
                if running > limit or now - idle_since > limit:
                    self._discard()
                    what = "the worker was not ready (loading a case file)" if ticket == SETUP else \
                        "no answer"
                    raise Lost("timeout", f"{what} within {limit:g} s; the worker was killed and replaced",
                               running or now - idle_since, ticket)
            return conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
            ticket, running = self.beacon.read()
            proc = self._proc
            self._discard(wait_s=5)
            tail = self.log_tail()
            raise Lost("crashed", f"the backend's worker process {_how(proc.exitcode if proc else None)}; it was "
                       "replaced" + (f"\nits last output:\n{tail}" if tail else ""),
                       running or time.perf_counter() - t0, ticket) from None

    def run(self, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> RawResult:
        """Run one model in the worker (arrays travel pickled: numpy and ml_dtypes dtypes pickle as themselves)."""
        t0 = time.perf_counter()
        self.send(("run", model.SerializeToString(), {k: np.asarray(v) for k, v in feeds.items()}))
        try:
            reply = self.receive()
        except Lost as lost:
            return RawResult(lost.kind, message=lost.message, seconds=lost.seconds)
        raw: RawResult = reply[1]
        raw.seconds = time.perf_counter() - t0
        return raw

    def ask_to_stop(self) -> None:
        """Tell the worker to stop after its current case (``close`` waits for it)."""
        if self._starting is not None:
            self._proc, self._conn = self._starting
            self._starting = None
        if self._conn is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                self._conn.send(("stop",))

    def close(self, wait_s: float = 2.0) -> None:
        """Stop the worker (killed, with every process it started, after ``wait_s`` seconds; at once with 0) and remove
        its folder."""
        self.ask_to_stop()
        if self._proc is not None:
            self._stop(self._proc, self._conn, wait_s)
        self._proc, self._conn = None, None
        lifecycle.remove(self.folder)


def _how(code: int | None) -> str:
    """How a worker process ended, from its exit code."""
    if code is not None and code < 0:
        try:
            return f"killed by signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"
