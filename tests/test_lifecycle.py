"""A run and its processes end together, however the run ends: SIGINT, SIGTERM and SIGHUP stop it within
seconds with its finished results on disk and an interrupted summary; after SIGKILL no worker, and nothing a
backend started, is left; a case's timeout kills what the backend started for it; a backend that crashes while
it is being created is one line and a results file that says so. Processes that leave the worker's process
group and session (``setsid``, double-forked daemons, a child that keeps forking, started by a case or by the
factory) die with the run however it ends: normally, at a case's crash or timeout, a factory that never
returns, SIGTERM, SIGKILL. Temporary folders go with them.

Each run is a subprocess with a marker in its environment (inherited by its workers and everything they start)
and in the command lines of the backend's own children; "no process left" means no process carries the marker.
Waits poll with generous limits (a loaded 2-core machine), never fixed sleeps."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto

from qdq_conformance.cli import main
from qdq_conformance.modelbuild import single_node_model
from qdq_conformance.plugin.terminal import INTERRUPTED
from qdq_conformance.results import read

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "data" / "runner_cases"
SLOW = "python:tests.fake_backends:slow"
LIMIT = 120.0  # seconds: far beyond what any step takes on an idle machine

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _marked(marker: str) -> list[int]:
    """Processes whose environment or command line holds ``marker`` (this one excepted)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        for part in ("environ", "cmdline"):
            try:
                with open(f"/proc/{name}/{part}", "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(int(name))
                        break
            except OSError:
                pass
    return found


def _until(predicate, limit: float = LIMIT, what: str = "") -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {limit:g} s: {what}")
        time.sleep(0.05)


def _case_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b'"type": "case"')
    except OSError:
        return 0


class Run:
    """``qdq-conformance run`` on the small case folder, in a subprocess of its own."""

    def __init__(self, tmp_path: Path, backend: str, *extra: str, seconds: str = "0.5") -> None:
        self.marker = "qdq-lifecycle-" + uuid.uuid4().hex
        self.tmp = tmp_path / "tmp"
        self.tmp.mkdir()
        self.results = tmp_path / "r.jsonl"
        env = dict(os.environ, QDQ_TEST_MARKER=self.marker, TMPDIR=str(self.tmp),
                   QDQ_TEST_CASE_SECONDS=seconds)
        cmd = [sys.executable, "-m", "qdq_conformance.cli", "run", "--backend", backend, "--cases",
               str(CASES), "--results", str(self.results), *extra]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.output = ""

    def wait(self) -> int:
        try:
            out, _ = self.proc.communicate(timeout=LIMIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        self.output = out.decode("utf-8", "replace")
        return self.proc.returncode

    def assert_nothing_left(self) -> None:
        _until(lambda: not _marked(self.marker), what=f"processes of the run left: {_marked(self.marker)}")
        _until(lambda: not any(self.tmp.iterdir()), what=f"left in TMPDIR: {sorted(os.listdir(self.tmp))}")

    def kill_leftovers(self) -> None:
        for pid in _marked(self.marker):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def run(tmp_path):
    runs: list[Run] = []

    def start(*args, **kwargs) -> Run:
        runs.append(Run(tmp_path, *args, **kwargs))
        return runs[-1]

    yield start
    for r in runs:  # (a failed test leaves nothing behind either)
        if r.proc.poll() is None:
            r.proc.kill()
            r.proc.wait()
        r.kill_leftovers()


def _started(r: Run, cases: int = 2, processes: int = 4) -> int:
    """Wait until the run has ``cases`` results on disk and ``processes`` of its own (itself, its workers, a
    backend's child); the number of results on disk."""
    _until(lambda: _case_lines(r.results) >= cases, what="the first results")
    _until(lambda: len(_marked(r.marker)) >= processes, what="the workers and their children")
    return _case_lines(r.results)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_stops_the_run_keeping_its_results(run, sig, capsys):
    r = run(SLOW, "--workers", "2")
    on_disk = _started(r)
    sent = time.monotonic()
    r.proc.send_signal(getattr(signal, sig))
    code = r.wait()
    took = time.monotonic() - sent
    assert code == 2, r.output[-3000:]
    assert took < 30, took  # about a second on an idle machine (the rest of the corpus would take 4 s more)
    assert f"interrupted by {sig}" in r.output and "Traceback" not in r.output
    assert "FAILED" not in r.output and "KeyboardInterrupt" not in r.output
    assert r.output.rstrip().splitlines()[-1] == f"exit status 2: {INTERRUPTED}"
    r.assert_nothing_left()
    head, cases, summary = read(r.results)
    assert head["backend"] == "slow" and len(cases) >= on_disk
    assert len(cases) < 16  # it did stop
    # no case blamed for the signal
    assert {c["status"] for c in cases} <= {"passed", "implementation-defined"}
    assert summary is not None and summary["interrupted"] is True and summary["signal"] == sig
    assert summary["exitstatus"] == 2
    # ... and the regression gate knows it is incomplete
    capsys.readouterr()
    assert main(["diff", str(r.results), str(r.results)]) == 1
    assert f"INCOMPLETE: the new run was interrupted ({sig})" in capsys.readouterr().out


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_while_a_suite_is_collected_stops_the_run(tmp_path, sig):
    """Issue 38: a signal that arrives while the run is still collecting (reading the whole default export
    took many minutes) ends the run within seconds, as interrupted. pytest's Exit, raised there, was caught by
    the collector it interrupted as an error of that file or folder, and collection went on."""
    suite = tmp_path / "suite.tar.gz"
    assert main(["generate", "--cases", str(CASES), "--out", str(suite)]) == 0
    started, results = tmp_path / "collecting", tmp_path / "r.jsonl"
    cmd = [sys.executable, "-m", "qdq_conformance.cli", "run", "--backend", "onnx-reference", "--suite",
           str(suite), "--results", str(results), "--", "-p", "tests.slow_suite"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, QDQ_TEST_COLLECTING=str(started)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _until(started.exists, what="the suite's collection")
        sent = time.monotonic()
        proc.send_signal(getattr(signal, sig))
        out = proc.communicate(timeout=LIMIT)[0].decode("utf-8", "replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 2, out[-3000:]
    assert time.monotonic() - sent < 30  # (the reading would have gone on for two minutes)
    assert f"interrupted by {sig}" in out and "Traceback" not in out and "error" not in out, out[-3000:]
    assert out.rstrip().splitlines()[-1] == f"exit status 2: {INTERRUPTED}"
    head, cases, summary = read(results)
    assert cases == [] and summary is not None and summary["interrupted"] is True and summary["signal"] == sig


def test_sigkill_of_the_run_leaves_no_process_and_no_folder(run):
    r = run(SLOW, "--workers", "2")
    on_disk = _started(r)
    r.proc.send_signal(signal.SIGKILL)
    assert r.wait() == -signal.SIGKILL
    r.assert_nothing_left()  # the workers saw their parent die, and took the backend's children with them
    head, cases, summary = read(r.results)
    assert len(cases) >= on_disk and summary is None  # what was on disk stays; no summary: incomplete


def test_a_report_is_written_for_an_interrupted_run(run, tmp_path):
    report = tmp_path / "report.html"
    r = run(SLOW, "--workers", "1", "--report", str(report))
    _started(r, cases=1, processes=3)
    r.proc.send_signal(signal.SIGTERM)
    assert r.wait() == 2
    assert report.stat().st_size > 1000 and read(r.results)[2]["interrupted"]
    r.assert_nothing_left()


def test_an_interrupted_run_does_not_call_an_expectation_entry_stale(run, tmp_path):
    """Issue 38: a run stopped by a signal did not reach every case, so an entry matching none of the cases it
    reached is not stale for that: the run says it did not check, in the terminal, the results and the
    report."""
    exp = tmp_path / "exp.yaml"
    exp.write_text("backend: slow\nentries:\n  - cases: 'quantizelinear-13-basic-*'\n    status: failed\n"
                   "    reason: a case the run reaches late, or never\n")
    report = tmp_path / "report.html"
    r = run(SLOW, "--workers", "1", "--expectations", str(exp), "--report", str(report))
    _started(r, cases=1, processes=3)
    r.proc.send_signal(signal.SIGINT)
    assert r.wait() == 2
    assert "stale expectation" not in r.output and "matches no collected case" not in r.output
    assert "stale entries not checked (the run was interrupted;" in r.output, r.output[-2000:]
    summary = read(r.results)[2]
    assert summary["stale_expectations"] == [] and summary["stale_unchecked"] == "was interrupted"
    assert "Stale entries were not checked: the run was interrupted" in report.read_text()
    r.assert_nothing_left()


def test_a_backend_that_crashes_while_being_created_is_one_line_and_a_results_file(run):
    r = run("python:tests.fake_backends:crash_on_build")
    assert r.wait() == 4
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "died while it was being created" in lines[0] and "SIGSEGV" in lines[0], lines
    head, cases, summary = read(r.results)
    assert cases == [] and "SIGSEGV" in summary["error"] and summary["exitstatus"] == 4
    assert head["backend"] == "python:tests.fake_backends:crash_on_build"
    r.assert_nothing_left()


def test_a_timeout_kills_what_the_backend_started_for_the_case(tmp_path, monkeypatch):
    """A ``command:`` runner that hangs, with a child of its own: both die at the case's timeout (not at the
    end of the run), and the case's temporary folder goes with them."""
    from qdq_conformance.runner.isolation import IsolatedBackend

    marker = "qdq-lifecycle-" + uuid.uuid4().hex
    runner = ROOT / "tests" / "data" / "hanging_runner.py"
    b = IsolatedBackend(f"command:{sys.executable} {runner} {marker}", timeout=1)
    feeds = {"x": np.array([1.0], np.float32), "s": np.array(1, np.float32)}
    model = single_node_model("ai.onnx", "QuantizeLinear", 13, list(feeds.items()),
                              [("y", TensorProto.UINT8, [1])])
    try:
        b.start()
        worker = b._proc.pid
        raw = b.run(model, feeds)
        assert raw.kind == "timeout"
        _until(lambda: not _marked(marker), what="the runner and its child")
        assert not os.path.exists(f"/proc/{worker}")
        tmp = Path(b.folder) / "tmp"
        assert not tmp.exists() or not any(tmp.iterdir())  # the case's folder went with them
    finally:
        b.close()
    assert not os.path.exists(b.folder)  # its log and temporary folder


def test_a_lost_case_is_recorded_without_a_backend_in_this_process(monkeypatch):
    """The record (and repro) of a case whose worker crashed are written from the templates the worker
    sent."""
    from qdq_conformance.backends import registry
    from qdq_conformance.generators.cache import load_file_cached
    from qdq_conformance.runner.execute import FileRef
    from qdq_conformance.runner.pool import CasePool

    here, real = os.getpid(), registry.create

    def create(*args, **kwargs):
        assert os.getpid() != here, "a backend was created in the pytest process"
        return real(*args, **kwargs)

    monkeypatch.setattr(registry, "create", create)
    path = (CASES / "small.yaml").resolve()
    cases = load_file_cached(path, ("default",))
    index = next(i for i, c in enumerate(cases) if c.id == "quantizelinear-13-ties-near-bounds-float-int8")
    pool = CasePool("python:tests.fake_backends:make", {}, timeout=10)
    try:
        pool.start()
        got = pool.get(FileRef(str(path), ("default",), index, cases[index].id), "runtime")
    finally:
        pool.close()
    rec = json.loads(got.record)
    assert got.status == "crashed" and rec["status"] == "crashed" and "SIGSEGV" in rec["message"]
    repro = rec["repro"]  # the oracle's own repro, for this model
    assert ("= QuantizeLinear (" in repro  # (its model's text)
            and "import run_any\nfor name, value in zip(['" in repro and "run_any(model, feeds)" in repro)
    assert "__qdq_conformance" not in repro


# --- processes that leave the worker's process group and session
# ----------------------------------------------

FAKE = "python:tests.fake_backends:"
#: backend (tests/fake_backends.py), extra options, exit status: every case leaves a process in a session of
#: its own
ESCAPING = [
    ("setsid_child", [], 0),  # a direct child, left running
    ("setsid_daemon", [], 0),  # a double-forked daemon: an orphan
    ("setsid_forker", [], 0),  # a child that keeps forking children into sessions of their own
    ("setsid_then_crash", [], 1),  # a daemon, then the worker segfaults: every case crashed
    ("setsid_then_hang", ["--case-timeout", "2"], 1),  # a child, then the case hangs: every case times out
    ("setsid_at_create", [], 0),  # the factory leaves a daemon, then every case a child
]


@pytest.mark.parametrize(("backend", "extra", "status"), ESCAPING, ids=[b for b, _, _ in ESCAPING])
def test_processes_that_leave_the_session_die_with_the_run(run, backend, extra, status):
    r = run(FAKE + backend, "--workers", "2", *extra, "--", "-k", "basic or nan-integer")
    assert r.wait() == status, r.output[-3000:]
    _, cases, summary = read(r.results)
    assert len(cases) == 10 and summary is not None, r.output[-2000:]
    if backend == "setsid_then_crash":
        assert {c["status"] for c in cases} == {"crashed"} and "SIGSEGV" in cases[0]["message"]
    if backend == "setsid_then_hang":
        assert {c["status"] for c in cases} == {"timeout"}
    r.assert_nothing_left()


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_a_signal_or_sigkill_leaves_no_setsid_process(run, sig):
    """Stopped (SIGTERM) or killed outright (SIGKILL: the keepers get the parent-death signal), the run leaves
    none of the processes its backend put in sessions of their own."""
    r = run(FAKE + "setsid_then_hang", "--workers", "2", "--case-timeout", "600")
    _until(lambda: len(_marked(r.marker)) >= 7,
           what="the run, 2 keepers, 2 workers and their escaped children")
    r.proc.send_signal(getattr(signal, sig))
    assert r.wait() == (2 if sig == "SIGTERM" else -signal.SIGKILL), r.output[-3000:]
    r.assert_nothing_left()


def test_a_factory_that_never_returns_leaves_nothing(run):
    """It starts a daemon of its own, then sleeps: the run ends at --backend-timeout with one line, and
    neither the worker nor the daemon is left."""
    backend = FAKE + "setsid_then_sleeps_forever"
    r = run(backend, "--backend-timeout", "3")
    assert r.wait() == 4
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "was not created within 3 s (--backend-timeout" in lines[0], lines
    r.assert_nothing_left()
