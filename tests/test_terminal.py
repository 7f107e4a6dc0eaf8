"""A corpus run on the terminal (conformance/plugin/terminal.py): the progress line on a terminal, no letters
off one, the run's summary as the last lines, and what the exit statuses mean."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from qdq_conformance.plugin.terminal import EXIT_STATUS
from qdq_conformance.progress import Progress, duration

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "data" / "runner_cases"
FAKE = "python:tests.fake_backends:make"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _env() -> dict[str, str]:
    """No CI variables (pytest prints differently on CI) and no forced width."""
    return {k: v for k, v in os.environ.items() if k not in ("CI", "BUILD_NUMBER", "COLUMNS", "LINES")}


def run_cli(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "qdq_conformance.cli", "run", "--cases", str(CASES), "--results",
           str(tmp / "r.jsonl"), *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=_env())


def run_in_pty(cmd: list[str], columns: int = 160) -> tuple[int, str]:
    """``cmd`` with a pseudo-terminal as its stdin, stdout and stderr: what a person at a terminal sees."""
    import fcntl
    import select
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    p = subprocess.Popen(cmd, cwd=ROOT, stdin=slave, stdout=slave, stderr=slave, close_fds=True, env=_env())
    os.close(slave)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 600)
            if not ready:
                p.kill()
                break
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other side closed
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        p.wait(timeout=60)
    return p.returncode, b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory):
    """The misbehaving backend (failures, crashes, an invalid model run), off a terminal, through the CLI."""
    tmp = tmp_path_factory.mktemp("failing")
    exp = tmp / "exp.yaml"
    exp.write_text("backend: misbehaving\nentries:\n"
                   "  - cases: 'quantizelinear-21-basic-float-int8'\n    status: failed\n    reason: off by "
                   "one\n  - cases: 'quantizelinear-13-basic-float-uint8'\n    status: failed\n    reason: "
                   "was broken\n")
    p = run_cli("--backend", FAKE, "--case-timeout", "3", "--expectations", str(exp), tmp=tmp)
    return p, tmp


def test_summary_comes_last_in_the_projects_words(failing_run):
    p, tmp = failing_run
    lines = p.stdout.rstrip().splitlines()
    assert p.returncode == 1, p.stdout[-3000:]
    head = max(i for i, ln in enumerate(lines) if ln.startswith("=") and "qdq-conformance: misbehaving" in ln)
    # pytest's final line first
    assert re.match(r"\d+ failed, .* in [\d.]+s", lines[head - 1]), lines[head - 1]
    summary = "\n".join(lines[head:])
    # counts per status, in the project's statuses, expected (an expectation says so) vs unexpected
    assert re.search(r"^  failed +4 +\(2 expected, 2 unexpected\)$", summary, re.M), summary
    assert re.search(r"^  passed +4 +\(2 though an expectation says they fail\)$", summary, re.M), summary
    assert re.search(r"^  crashed +2 +\(2 unexpected\)$", summary, re.M), summary
    assert re.search(r"^  invalid-accepted +2 +\(2 unexpected\)$", summary, re.M), summary
    assert re.search(r"^  unsupported +2$", summary, re.M) and re.search(r"^  implementation-defined +2$",
                                                                         summary, re.M), summary
    assert "skipped" not in summary
    assert ("quantizelinear-13-ties-near-bounds-float-int8 [runtime]: crashed: the backend's worker "
            "process") in summary
    assert f"results: {tmp / 'r.jsonl'}" in summary
    assert lines[-1] == "exit status 1: 6 unexpected failure(s)"


def test_no_letters_and_one_line_failures_off_a_terminal(failing_run):
    p, _ = failing_run
    out = p.stdout
    assert not re.search(r"^[.sFxXE]+$", out, re.M), out[:2000]  # no dots, no letters
    assert out.startswith("qdq-conformance: running 16 case(s) against misbehaving 0.0-test")
    # --tb=no (RUN_FLAGS): one line per failure in pytest's list, no FAILURES section with full descriptions
    assert "= FAILURES =" not in out and "repro (paste into a bug report)" not in out
    assert sum(ln.startswith("FAILED ") for ln in out.splitlines()) == 6
    assert len(out.splitlines()) < 40


def test_one_line_failure_in_the_short_summary_and_junit(tmp_path):
    junit = tmp_path / "j.xml"
    env = {**_env(), "COLUMNS": "300"}
    cmd = [sys.executable, "-m", "qdq_conformance.cli", "run", "--backend", FAKE, "--cases", str(CASES), "--",
           "-k", "basic-float-int8", f"--junitxml={junit}"]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 1
    assert ("::quantizelinear-13-basic-float-int8[runtime] - failed: output 0: values differ: 1 of 16 "
            "elements differ") in p.stdout, p.stdout
    xml = junit.read_text()
    assert 'failures="4"' in xml and xml.count('<failure message="failed: output 0: values differ') == 4


def test_progress_line_on_a_terminal():
    cmd = [sys.executable, "-m", "qdq_conformance.cli", "run", "--backend", "oracle", "--cases",
           str(CASES)]
    code, raw = run_in_pty(cmd)
    assert code == 0, raw[-3000:]
    out = ANSI.sub("", raw)
    redraws = re.findall(r"\roracle \[[#.]+\] (\d+)/16 ", out)
    assert redraws[0] == "0" and redraws[-1] == "16", out[:3000]  # redrawn in place, from 0 to the end
    assert "16/16" in out and "in " in out.split("16/16", 1)[1].splitlines()[0]
    assert not re.search(r"^[.sFxXE]+\r?$", out, re.M)  # no dots
    lines = [ln for ln in out.replace("\r\n", "\n").split("\n") if ln.strip()]
    assert lines[-1] == f"exit status 0: {EXIT_STATUS[0]}"
    head = next(i for i, ln in enumerate(lines) if ln.startswith("=") and "qdq-conformance: oracle" in ln)
    assert re.match(r"\d+ passed.* in [\d.]+s", lines[head - 1]), lines[head - 1]  # pytest's line first


def test_pytest_plugin_keeps_verbose_lines_and_stops_on_x(tmp_path):
    """`pytest --backend` is still pytest: -v keeps its line per test (no progress line), -x stops, and the
    summary says so and comes last."""
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--cases", str(CASES)]
    p = subprocess.run([*base, f"--backend={FAKE}", "-v", "-k", "basic-float"], cwd=ROOT, capture_output=True,
                       text=True, timeout=600, env=_env())
    assert "PASSED" in p.stdout and "FAILED" in p.stdout and "unexpected failures," not in p.stdout
    p = subprocess.run([*base, f"--backend={FAKE}", "-x", "-k", "basic-float"], cwd=ROOT, capture_output=True,
                       text=True, timeout=600, env=_env())
    lines = p.stdout.rstrip().splitlines()
    assert p.returncode == 1 and "stopping after 1 failures" in p.stdout
    assert lines[-1] == "exit status 1: 1 unexpected failure(s)"


def test_exit_status_meanings_are_documented(tmp_path):
    assert set(EXIT_STATUS) >= {int(c) for c in pytest.ExitCode}
    help_text = subprocess.run([sys.executable, "-m", "qdq_conformance.cli", "run", "--help"],
                               capture_output=True, text=True, timeout=120, env=_env()).stdout
    help_text = " ".join(help_text.split())
    vendors = (ROOT / "docs" / "vendors.md").read_text()
    for code, meaning in EXIT_STATUS.items():
        assert f" {code} {meaning}" in help_text
        assert f"| {code} | {meaning} |" in vendors
    p = run_cli("--backend", "oracle", "--", "-k", "no-such-case", tmp=tmp_path)
    assert p.returncode == 5 and p.stdout.rstrip().splitlines()[-1] == f"exit status 5: {EXIT_STATUS[5]}"


def test_progress_text():
    prog = Progress("ort", enabled=False)
    prog.start -= 10  # ten seconds in
    line = prog.text(250, 1000, "3 unexpected failures")
    assert line.startswith("ort [#######.......................] 250/1,000 25/s eta ")
    assert line.endswith(", 3 unexpected failures") and "eta 30s" in line
    assert prog.text(1000, 1000, width=0) == "ort 1,000/1,000 100/s in 10s"
    assert [duration(s) for s in (5, 65, 3725)] == ["5s", "1m05s", "1h02m"]
