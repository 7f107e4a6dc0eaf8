"""A backend that compiles in batches (``prepare``, the ``batch`` it likes, as IREE does) is handed the cases
of each batch before they run. End to end with a test backend (tests/fake_backends.py: Batching)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess, list[dict], list[str]]:
    log, res = tmp_path / "batches.log", tmp_path / "r.jsonl"
    env = {**os.environ, "QDQ_TEST_BATCH_LOG": str(log)}
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--cases",
                        str(ROOT / "tests" / "data" / "runner_cases"),
                        "--backend=python:tests.fake_backends:batching", "--workers", "1", "--case-timeout",
                        "50", "--results", str(res), *extra],
                       cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    lines = [json.loads(x) for x in res.read_text().splitlines()] if res.exists() else []
    return p, lines, log.read_text().splitlines() if log.exists() else []


def test_the_worker_hands_a_batching_backend_each_batch_before_running_it(tmp_path):
    p, lines, batches = _run(tmp_path)
    cases = [r for r in lines if r.get("type") == "case"]
    assert p.returncode == 0, p.stdout[-3000:]
    sizes = [int(b.split()[0]) for b in batches]
    # (the backend's batch: 5 cases at a time)
    assert sizes and max(sizes) == 5 and sum(sizes) == len(cases) > 5
    assert {b.split()[1] for b in batches} == {"30"}  # its time budget: 0.6 of the case time limit
