"""How a corpus run ends early: stopped by a signal, or a backend that cannot even be created.

SIGINT (Ctrl-C), SIGTERM and SIGHUP stop the run at once, wherever it is (collecting, waiting for a case):
pytest ends the session as interrupted (exit status 2), the backend's workers are killed with whatever they
started, the results finished so far are written with a summary line ``"interrupted": true, "signal":
"SIGTERM"`` (so ``qdq-conformance diff`` treats the run as incomplete), and the report is written when asked.
A signal that arrives while the run is already ending is ignored. No case is ever recorded as failed because
of a signal.

A backend that cannot be created (it raises, or its worker dies while creating it) ends the run before the
first case with one line and pytest's usage-error status 4; the results file, when one is asked for, holds the
header and a summary whose ``"error"`` says why (never an empty file).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from ..results import ResultsWriter, header
from .distributed import is_worker
from .state import STATE

SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class Stopped(KeyboardInterrupt):
    """A signal that arrived while the run was collecting. pytest's ``Exit`` would not do there: every
    collector catches it as an error of the file or folder it was collecting (as the runner's own collectors
    catch any Exception, so that a broken case file costs that file only), and collection went on, a whole
    export's for many minutes; a KeyboardInterrupt is the one exception pytest lets through collection, and it
    ends the session as interrupted."""


class StopOnSignal:
    """A pytest plugin, registered for the length of a corpus run (not in a pytest-xdist worker, whose
    controller decides): it turns SIGINT, SIGTERM and SIGHUP into pytest's ``Exit`` (:class:`Stopped` while
    collecting) and marks the results."""

    def __init__(self) -> None:
        self.signal: str | None = None
        self.finishing = False
        self.collecting = False
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # (only the main thread may set signal handlers; pytest runs a session in it)
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._on_signal)

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.signal is not None or self.finishing:
            return  # the run is already ending: it ends as it would have
        self.signal = signal.Signals(signum).name
        message = (f"interrupted by {self.signal}: the results finished so far are kept, and the run is "
                   "marked as interrupted")
        if self.collecting:
            raise Stopped(message)
        pytest.exit(message, returncode=pytest.ExitCode.INTERRUPTED)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> Generator[None, object, object]:
        self.collecting = True
        try:
            return (yield)
        finally:
            self.collecting = False

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """The terminal shows our exit's message and nothing else: keep only the handler's frames of its
        traceback (formatting the whole traceback, the place the signal arrived, took a second on a busy
        machine)."""
        if self.signal is not None and len(excinfo.traceback) > 2:
            excinfo.traceback = excinfo.traceback[-2:]  # (the last one, pytest.exit's, is hidden)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Before the runner's own session end (which closes the workers, writes the summary and the report):
        from here on a signal changes nothing; an interrupted run's workers are killed at once."""
        self.finishing = True
        state = session.config.stash.get(STATE, None)
        if state is None or exitstatus != pytest.ExitCode.INTERRUPTED:
            return
        if state.pool is not None:
            state.pool.close(wait_s=0)
        if state.results is not None:
            state.results.summary_extra.update({"interrupted": True, "signal": self.signal or "SIGINT"})

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.restore()


def install(config: pytest.Config) -> None:
    """Register the plugin for this run (in the process that writes the results)."""
    if is_worker(config):
        return
    plugin = StopOnSignal()
    config.pluginmanager.register(plugin, "qdq-conformance-stopping")
    plugin.install()


def record_failed_start(path: Path | None, spec: str, message: str) -> None:
    """The results file of a run whose backend could not be created: the header and a summary saying why."""
    if path is None:
        return
    try:
        writer = ResultsWriter(path)
    except OSError:
        return  # (the usage error says what went wrong; an unwritable results file is not the news here)
    writer.close({"counts": {}, "error": message, "exitstatus": int(pytest.ExitCode.USAGE_ERROR),
                  "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "duration_s": 0.0},
                 header(spec, "unknown"))
