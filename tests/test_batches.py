"""A backend that compiles in batches (``prepare``, the ``batch`` it likes, as IREE does) is handed the cases of
each batch before they run; a backend's message markers that decided no decline of a whole run are reported
stale, as stale expectations are. End to end with a test backend (tests/fake_backends.py: Batching)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from qdq_conformance.backends.base import MARKER, marker_tag
from qdq_conformance.runner.expectations import Tracker

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess, list[dict], list[str]]:
    log, res = tmp_path / "batches.log", tmp_path / "r.jsonl"
    env = {**os.environ, "QDQ_TEST_BATCH_LOG": str(log)}
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--cases",
                        str(ROOT / "tests" / "data" / "runner_cases"), "--backend=python:tests.fake_backends:batching",
                        "--workers", "1", "--case-timeout", "50", "--results", str(res), *extra],
                       cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    lines = [json.loads(x) for x in res.read_text().splitlines()] if res.exists() else []
    return p, lines, log.read_text().splitlines() if log.exists() else []


def test_the_worker_hands_a_batching_backend_each_batch_before_running_it(tmp_path):
    p, lines, batches = _run(tmp_path)
    cases = [r for r in lines if r.get("type") == "case"]
    assert p.returncode == 0, p.stdout[-3000:]
    sizes = [int(b.split()[0]) for b in batches]
    assert sizes and max(sizes) == 5 and sum(sizes) == len(cases) > 5  # (the backend's batch: 5 cases at a time)
    assert {b.split()[1] for b in batches} == {"30"}  # its time budget: 0.6 of the case time limit


def test_a_marker_that_decided_nothing_in_a_whole_run_is_reported_stale(tmp_path):
    p, lines, _ = _run(tmp_path)
    assert "stale marker batching:never-seen" in p.stdout and "batching:huge" not in p.stdout, p.stdout[-3000:]
    assert lines[-1]["stale_markers"] == ["never-seen"]
    assert any("[batching marker: huge]" in r.get("message", "") for r in lines if r.get("type") == "case")


def test_a_subset_run_calls_no_marker_stale(tmp_path):
    p, lines, _ = _run(tmp_path, "-k", "basic")
    assert "stale marker" not in p.stdout and lines[-1]["stale_markers"] == []


def test_markers_are_read_from_a_decline_and_counted_by_the_tracker():
    message = "not implemented here " + marker_tag("iree", "no-conversion")
    assert MARKER.search(message).groups() == ("iree", "no-conversion")
    tracker = Tracker()
    tracker.note("a", "runtime", "unsupported", None, None, "no-conversion")
    assert tracker.stale_markers(["no-conversion", "element-type"], subset=False) == ["element-type"]
    assert tracker.stale_markers(["element-type"], subset=True) == []
