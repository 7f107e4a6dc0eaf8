"""Running a backend in a worker process, so that a segfault, an abort or a hang costs one case.

The worker (:mod:`.worker`: its setup and loop) builds the backend once and then serves: a model and its feeds
(pickled arrays) in, the outputs (or a decline / an error) out; or references to corpus cases in, finished
results out (see ``execute`` and ``pool``). A worker that dies, or runs one case for more than ``timeout``
seconds (its beacon tells which case and since when), is discarded and replaced on the next request. A
worker's start-up (creating the backend, loading a case file for the first time) is timed by
``create_timeout`` and never counted against a case.

Whatever a backend prints (native libraries write to the process's stdout / stderr) goes to a log file of the
worker, not the terminal: a run needs no output capturing, and when a worker crashes, the end of its log is
part of the crash message. A worker runs under a keeper process, in a folder of its own, and dies with its
case or with the run however the run ends, with every process its backend started (see ``lifecycle``).
Creating the backend has its own time limit (``create_timeout``, ``--backend-timeout``): a factory that never
returns is a BackendStartError (a usage error of the run), not a hang.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import sys
import tempfile
import time
import weakref
from collections.abc import Mapping
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from . import lifecycle
from .outputs import RawResult, printable
from .repro import TemplateRepro
from .worker import IDLE, PARENT_ENDS, SETUP, Beacon, serve, start_method

if TYPE_CHECKING:
    from multiprocessing.context import ForkContext, SpawnContext


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

    def __init__(self, spec: str, options: Mapping[str, Any] | None = None, timeout: float = 60.0,
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
        PARENT_ENDS.add(parent)
        with contextlib.suppress(OSError):  # each worker's log starts empty
            os.makedirs(self.folder, exist_ok=True)
            open(self.log_path, "wb").close()
        ctx: ForkContext | SpawnContext = mp.get_context("fork") if start_method() == "fork" else \
            mp.get_context("spawn")
        if ctx.get_start_method() == "fork":  # (nothing buffered here may be written twice)
            sys.stdout.flush()
            sys.stderr.flush()
        self.beacon = Beacon()
        proc = ctx.Process(target=serve, daemon=True, args=(child, self.spec, self.options, self.log_path,
                                                              self.expectations_path, self.beacon,
                                                            os.getpid(),
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
            raise BackendStartError(f"backend {self.spec!r} was not created within {limit:g} s "
                                    "(--backend-timeout, by default --case-timeout); its worker was killed")
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
        """Let the worker exit for up to ``wait_s`` seconds, then kill its keeper's tree (with whatever the
        backend started), and reap it. The group is killed before the worker is reaped: its id cannot be
        reused until then."""
        if wait_s > 0 and proc.is_alive():
            wait([proc.sentinel], wait_s)
        if proc.pid is not None:
            # the keeper's tree (the worker and whatever the backend started, setsid or not) and its group,
            # whose id is its pid
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
        """Send to the worker, starting one if there is none. With ``restart=False`` a worker found dead is
        not replaced here (it still owes answers: ``receive`` reports its death against the case it died
        on)."""
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
            raise Lost("crashed",
                       f"the backend's worker process {_how(proc.exitcode if proc else None)}; it was "
                       "replaced" + (f"\nits last output:\n{tail}" if tail else ""),
                       running or time.perf_counter() - t0, ticket) from None

    def run(self, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> RawResult:
        """Run one model in the worker (arrays travel pickled: numpy and ml_dtypes dtypes pickle as
        themselves)."""
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
        """Stop the worker (killed, with every process it started, after ``wait_s`` seconds; at once with 0)
        and remove its folder."""
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
