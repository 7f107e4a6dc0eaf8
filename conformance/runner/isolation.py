"""Running a backend in a worker process, so that a segfault, an abort or a hang costs one case.

The worker builds the backend once and then serves cases: model bytes and the feeds (pickled arrays) in, the
outputs (or a decline / an error) out. The parent waits at most ``timeout`` seconds per
case; a worker that dies or overruns is killed and replaced on the next case.

Whatever a backend prints (native libraries write to the process's stdout / stderr) goes to a log file of the
worker, not the terminal: a run needs no output capturing, and when a worker crashes, the end of its log is
part of the crash message.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import onnx


@dataclass
class RawResult:
    kind: str  # ok | unsupported | not-applicable | rejected | error | crashed | timeout
    outputs: list[np.ndarray] = field(default_factory=list)
    message: str = ""
    seconds: float = 0.0




def _redirect_output(log_path: str) -> None:
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _serve(conn: Connection, spec: str, options: dict[str, Any], log_path: str | None = None) -> None:
    from ..backends.base import NotApplicable, Rejected, Unsupported
    from ..backends.registry import create

    if log_path:
        _redirect_output(log_path)

    try:
        backend = create(spec, options)
    except Exception as e:
        conn.send(("fatal", f"{type(e).__name__}: {e}"))
        return
    conn.send(("hello", backend.name, backend.version))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg[0] == "stop":
            return
        _, model_bytes, feeds = msg
        try:
            model = onnx.load_model_from_string(model_bytes)
            outputs = backend.run(model, feeds)
            conn.send(("ok", [np.asarray(o) for o in outputs]))
        except NotApplicable as e:
            conn.send(("not-applicable", str(e)))
        except Unsupported as e:
            conn.send(("unsupported", str(e)))
        except Rejected as e:
            conn.send(("rejected", str(e)))
        except Exception as e:
            conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"))


class BackendStartError(Exception):
    pass


class IsolatedBackend:
    """A backend in a replaceable worker process."""

    def __init__(self, spec: str, options: dict[str, Any] | None = None, timeout: float = 60.0) -> None:
        self.spec = spec
        self.options = dict(options or {})
        self.timeout = timeout
        self.name = spec
        self.version = "unknown"
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._conn: Connection | None = None
        self.restarts = 0
        fd, self.log_path = tempfile.mkstemp(prefix="qdq-worker-", suffix=".log")
        os.close(fd)

    def log_tail(self, lines: int = 8) -> str:
        """The last lines the worker printed (where a crashing native library says why)."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(max(0, os.path.getsize(self.log_path) - 4096))
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        with contextlib.suppress(OSError):  # each worker's log starts empty
            open(self.log_path, "wb").close()
        proc = self._ctx.Process(target=_serve, args=(child, self.spec, self.options, self.log_path), daemon=True)
        proc.start()
        child.close()
        if not parent.poll(max(self.timeout, 120.0)):
            proc.kill()
            raise BackendStartError(f"backend {self.spec!r} did not start within {max(self.timeout, 120.0)} s")
        try:
            hello = parent.recv()
        except EOFError:
            raise BackendStartError(f"backend {self.spec!r} died while starting (exit {proc.exitcode})") from None
        if hello[0] == "fatal":
            proc.join(5)
            raise BackendStartError(f"backend {self.spec!r} could not be created: {hello[1]}")
        _, self.name, self.version = hello
        self._proc, self._conn = proc, parent

    def start(self) -> None:
        if self._proc is None or not self._proc.is_alive():
            self._start()

    def _discard(self) -> None:
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(5)
        self._proc, self._conn = None, None
        self.restarts += 1

    def run(self, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> RawResult:
        self.start()
        assert self._conn is not None
        t0 = time.perf_counter()
        try:
            # Arrays travel pickled (numpy and ml_dtypes dtypes pickle as themselves, one element per item).
            self._conn.send(("run", model.SerializeToString(), {k: np.asarray(v) for k, v in feeds.items()}))
            if not self._conn.poll(self.timeout):
                self._discard()
                return RawResult("timeout", message=f"no answer within {self.timeout:g} s; the worker was "
                                 "killed and replaced", seconds=time.perf_counter() - t0)
            reply = self._conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
            proc = self._proc
            if proc is not None:
                proc.join(5)
            code = proc.exitcode if proc is not None else None
            self._discard()
            how = f"killed by signal {-code}" if code is not None and code < 0 else f"exited with status {code}"
            tail = self.log_tail()
            return RawResult("crashed", message=f"the backend's worker process {how}; it was replaced"
                             + (f"\nits last output:\n{tail}" if tail else ""), seconds=time.perf_counter() - t0)
        seconds = time.perf_counter() - t0
        if reply[0] == "ok":
            return RawResult("ok", list(reply[1]), seconds=seconds)
        return RawResult(reply[0], message=reply[1], seconds=seconds)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.log_path)
        if self._conn is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                self._conn.send(("stop",))
        if self._proc is not None:
            self._proc.join(2)
            if self._proc.is_alive():
                self._proc.kill()
        self._proc, self._conn = None, None
