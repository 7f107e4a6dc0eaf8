"""How a backend's worker process, and every process it starts, dies with its case or with the run.

A worker runs in a folder of its own (its log, and the ``TMPDIR`` of everything it runs) under a *keeper*
(Linux): the process the pytest process starts forks the worker and then only waits. The keeper is a child
subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so every process the backend starts stays in the keeper's tree,
even one that starts a session or a process group of its own (``setsid``, a daemon that double-forks): when
its parent dies it is handed to the keeper, not to init. Every descendant is found by walking that tree
(``/proc``), frozen (SIGSTOP, so none forks behind the walk) and killed (:func:`kill_tree`). It outlives the
run in no way the run ends:

- the pytest process ends normally or is stopped by SIGINT / SIGTERM / SIGHUP, or a case times out: it stops
  the worker and kills the keeper's tree (``IsolatedBackend.close`` / ``_discard``), and removes the worker's
  folder;
- the worker exits or crashes (a segfault in the backend): the keeper kills what is left of its tree and exits
  as the worker did (the same exit status, or killed by the same signal);
- the pytest process is killed (SIGKILL, a crash): the kernel sends the keeper the parent-death signal
  (``prctl(PR_SET_PDEATHSIG)``), and the keeper, which runs no backend code, kills its tree and removes the
  folder; the worker, too, notices (a watchdog thread, end-of-file on its pipe) and dies with its process
  group.

Elsewhere (no ``/proc``, no subreaper) there is no keeper: the worker runs in a process group of its own,
which is killed with it, and a process that leaves that group is beyond reach.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterable
from multiprocessing.connection import Connection
from typing import NoReturn

#: how often a worker's watchdog thread checks that the pytest process still lives
WATCH_EVERY = 0.2
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
#: seconds :func:`kill_tree` waits at most for the processes it froze to stop (one in uninterruptible sleep
#: may not), before it kills them all as they are
_FREEZE_PATIENCE = 2.0


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def set_parent_death_signal(signum: int) -> bool:
    """Ask the kernel to send ``signum`` to this process when its parent dies (Linux; False elsewhere)."""
    return _prctl(_PR_SET_PDEATHSIG, signum)


def set_child_subreaper() -> bool:
    """Make this process the one its orphaned descendants are handed to (Linux 3.4+; False elsewhere)."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def processes() -> dict[int, tuple[int, int, str]]:
    """Every process: pid -> (parent pid, process group, state letter), read from /proc (Linux; {}
    elsewhere)."""
    table: dict[int, tuple[int, int, str]] = {}
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
            if len(fields) > 2:
                table[int(name)] = (int(fields[1]), int(fields[2]), fields[0].decode("ascii", "replace"))
    return table


def group_members(pgid: int) -> list[int]:
    """The processes of process group ``pgid`` (Linux: read from /proc; [] elsewhere)."""
    return [pid for pid, (_, group, _) in processes().items() if group == pgid]


def descendants(root: int, table: dict[int, tuple[int, int, str]] | None = None) -> list[int]:
    """The living (not zombie) descendants of ``root``, parents before their children (Linux; []
    elsewhere)."""
    table = processes() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        if table[pid][2] not in ("Z", "X"):
            out.append(pid)
        todo += children.get(pid, ())
    return out


def kill_tree(root: int, include_root: bool = True) -> None:
    """SIGKILL every descendant of ``root`` and every member of its process group (and ``root`` itself with
    ``include_root``, last). Each is frozen (SIGSTOP) as it is found, and the tree is walked again until it
    holds nothing new, every process found has stopped (a stop is not immediate: it may still fork) and two
    walks in a row agree (``/proc`` is read one process at a time, not at one instant); then all of them are
    killed. ``root`` should be a child subreaper (:func:`set_child_subreaper`, the keeper), so that nothing
    leaves its tree while it is walked."""
    me = os.getpid()
    frozen: set[int] = set()
    quiet = 0
    deadline = time.monotonic() + _FREEZE_PATIENCE
    while quiet < 2 and time.monotonic() < deadline:
        table = processes()
        tree = [*descendants(root, table),
                *(p for p, (_, g, st) in table.items() if g == root and st not in "ZX")]
        found = [p for p in tree if p not in frozen and p not in (me, root)]
        moving = [p for p in frozen if p in table and table[p][2] not in "tTZX"]  # (not stopped yet)
        if found:
            _signal_all(found, signal.SIGSTOP)
            frozen.update(found)
        quiet = 0 if found or moving else quiet + 1
        time.sleep(0.002)
    _signal_all(frozen, signal.SIGKILL)
    if include_root:
        kill_group(root)
        _signal_all([root], signal.SIGKILL)


def kill_group(pgid: int) -> None:
    """SIGKILL every process of group ``pgid`` (nothing when the group is gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pgid, signal.SIGKILL)


def remove(path: str | None) -> None:
    if path:
        shutil.rmtree(path, ignore_errors=True)


class WorkerGuard:
    """Installed by a worker as it starts: it dies, with its process group, when the pytest process is gone.

    ``folder`` is removed when the worker dies because its parent is gone (otherwise the parent still reads
    its log and removes it itself)."""

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
        """Kill this worker's descendants and the rest of its process group, remove its folder if the parent
        is gone, and exit."""
        if not self._dying.acquire(blocking=False):
            return  # (the other path is at it)
        me = os.getpid()
        try:
            pgid = os.getpgid(0)
        except OSError:
            pgid = me
        kill_tree(me, include_root=False)  # (its descendants, and its process group when it leads one)
        if self.orphaned():
            remove(self.folder)
        if pgid == me and not sys.platform.startswith("linux"):
            kill_group(pgid)  # (no /proc to list the group: this kills the worker too)
        os._exit(1)


def _signal_all(pids: Iterable[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)


def _reap_children(patience: float) -> None:
    """Wait for this process's children (those just killed) for up to ``patience`` seconds."""
    deadline = time.monotonic() + patience
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if time.monotonic() > deadline:
                return
            time.sleep(0.005)


def keep(parent_pid: int, folder: str | None, close: Iterable[Connection] = ()) -> None:
    """Split this process (a new worker process, before it creates its backend) into a keeper and the worker:
    returns in the worker; the keeper never returns (see the module's docstring). ``close``: what the keeper
    closes (its copy of the worker's pipe, so that the pytest process sees end-of-file when the worker dies).
    Nothing happens where there is no child subreaper (the worker is then this process)."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # (the parent does the same right after the start: whoever is first)
    if not set_child_subreaper():
        return
    try:
        worker = os.fork()
    except OSError:
        return
    if worker == 0:
        return
    try:
        for obj in close:
            with contextlib.suppress(OSError):
                obj.close()
        _keeper(worker, parent_pid, folder)
    finally:
        os._exit(1)  # (never back into the worker's code, whatever happened)


def _keeper(worker: int, parent_pid: int, folder: str | None) -> NoReturn:
    me = os.getpid()

    def clear(signum: int = 0, frame: object = None) -> NoReturn:
        kill_tree(me, include_root=False)
        _reap_children(2.0)
        if os.getppid() != parent_pid:  # the pytest process is gone: nobody else removes the folder
            remove(folder)
        os._exit(1)

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (Ctrl-C is the pytest process's business)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, clear)
    set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != parent_pid:
        clear()
    status = 0
    while True:
        try:
            pid, status = os.waitpid(-1, 0)  # (orphans handed to the keeper are reaped here too)
        except ChildProcessError:
            break
        if pid == worker:
            break
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # (from here on it only clears up and exits)
    _reap_children(0.0)  # (orphans that have exited since: their own orphans are handed over by now)
    kill_tree(me, include_root=False)
    _reap_children(2.0)
    if os.getppid() != parent_pid:
        remove(folder)
    _exit_as(status)


def _exit_as(status: int) -> NoReturn:
    """Exit as the worker did: killed by the same signal (without a core dump), or with the same status."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        faulthandler.disable()
        import resource  # (POSIX only, as the keeper is)

        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with contextlib.suppress(ValueError, OSError, RuntimeError):
            signal.signal(signum, signal.SIG_DFL)
        with contextlib.suppress(ValueError, OSError):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        os.kill(os.getpid(), signum)
        time.sleep(1)  # (a signal whose default is not to end the process: exit below)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)
