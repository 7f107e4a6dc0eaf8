"""How a backend's worker process, and every process it starts, dies with its case or with the run.

A worker runs in a process group of its own (so the pytest process can kill a worker together with whatever the
backend started, a ``command:`` runner say, when a case times out or the run ends), in a folder of its own (its
log, and the ``TMPDIR`` of everything it runs). It outlives the run in no way the run ends:

- the pytest process ends normally or is stopped by SIGINT / SIGTERM / SIGHUP: it stops and kills every worker's
  group, and removes the workers' folders (``IsolatedBackend.close``);
- the pytest process is killed (SIGKILL, a crash): the kernel sends each worker the parent-death signal
  (``prctl(PR_SET_PDEATHSIG)``, Linux), and a watchdog thread notices the parent is gone; a worker idle between
  cases sees end-of-file on its pipe (it closes the parent's copies of the pipes it inherited at the fork). Either
  way the worker kills the other members of its process group, removes its folder and exits.

Left: a backend's process that leaves the worker's process group (``setsid``), and a worker whose backend is stuck
in native code that holds the GIL when the pytest process is killed (neither the signal handler nor the watchdog
thread can run; on the run's normal and interrupted ends the worker is killed from outside, so this concerns
SIGKILL of the pytest process only).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterable

#: how often a worker's watchdog thread checks that the pytest process still lives
WATCH_EVERY = 0.2
_PR_SET_PDEATHSIG = 1


def set_parent_death_signal(signum: int) -> bool:
    """Ask the kernel to send ``signum`` to this process when its parent dies (Linux; False elsewhere)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def group_members(pgid: int) -> list[int]:
    """The processes of process group ``pgid`` (Linux: read from /proc; [] elsewhere)."""
    members = []
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    stat = fh.read()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2:].split()  # (the command name may hold spaces and parentheses)
            if len(fields) > 2 and int(fields[2]) == pgid:
                members.append(int(name))
    return members


def kill_group(pgid: int) -> None:
    """SIGKILL every process of group ``pgid`` (nothing when the group is gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pgid, signal.SIGKILL)


def remove(path: str | None) -> None:
    if path:
        shutil.rmtree(path, ignore_errors=True)


class WorkerGuard:
    """Installed by a worker as it starts: it dies, with its process group, when the pytest process is gone.

    ``folder`` is removed when the worker dies because its parent is gone (otherwise the parent still reads its
    log and removes it itself)."""

    def __init__(self, parent_pid: int, folder: str | None) -> None:
        self.parent_pid = parent_pid
        self.folder = folder
        self._dying = threading.Lock()

    def install(self) -> None:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)  # (the parent does the same right after the start: whoever is first)
        # Ctrl-C is the pytest process's business: it stops the run and then the workers.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, self._on_signal)
        set_parent_death_signal(signal.SIGTERM)
        if self.orphaned():  # the parent died before the kernel was asked
            self.die()
        threading.Thread(target=self._watch, name="qdq-worker-watchdog", daemon=True).start()

    def orphaned(self) -> bool:
        return os.getppid() != self.parent_pid

    def _on_signal(self, signum: int, frame: object) -> None:
        self.die()

    def _watch(self) -> None:
        while not self.orphaned():
            time.sleep(WATCH_EVERY)
        self.die()

    def die_when_orphaned(self, patience: float = 2.0) -> None:
        """Die once the parent is gone (it is exiting: then the folder goes too), or after ``patience`` s."""
        deadline = time.monotonic() + patience
        while not self.orphaned() and time.monotonic() < deadline:
            time.sleep(0.02)
        self.die()

    def die(self) -> None:
        """Kill the rest of this worker's process group, remove its folder if the parent is gone, and exit."""
        if not self._dying.acquire(blocking=False):
            return  # (the other path is at it)
        me = os.getpid()
        try:
            pgid = os.getpgid(0)
        except OSError:
            pgid = me
        for _ in range(3):  # (a member may have started another process while the first ones were killed)
            others = [p for p in group_members(pgid) if p != me] if pgid == me else []
            if not others:
                break
            _kill_all(others)
        if self.orphaned():
            remove(self.folder)
        if pgid == me and not sys.platform.startswith("linux"):
            kill_group(pgid)  # (no /proc to list the group: this kills the worker too)
        os._exit(1)


def _kill_all(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
