"""A run must not go green having tested nothing: a backend that cannot be imported or created (a package not
installed, a library not built, a factory that raises or never returns) ends the run before its first case
with exit status 4 and one line naming the backend; a run in which every case was unsupported says so in
capitals and exits 5 unless --allow-all-unsupported. Each case: the exit status, and the one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qdq_conformance.install import install_hint
from qdq_conformance.results import read

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "tests" / "data" / "runner_cases"
FAKE = "python:tests.fake_backends:"


def _run(tmp_path: Path, backend: str, *extra: str, env: dict[str, str] | None = None,
         results: bool = True) -> tuple[subprocess.CompletedProcess[str], list[str], float]:
    """``qdq-conformance run`` on the small case folder: the process, its non-empty output lines, seconds."""
    args = ["--results", str(tmp_path / "r.jsonl")] if results else []
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "qdq_conformance.cli", "run", "--backend", backend, "--cases",
                        str(SMALL), *args, *extra], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "COLUMNS": "300", **(env or {})})
    return p, [ln for ln in (p.stdout + p.stderr).splitlines() if ln.strip()], time.monotonic() - t0


def _hidden(tmp_path: Path, *modules: str) -> dict[str, str]:
    """An environment in which ``import MODULE`` fails as if it were not installed (installed or not)."""
    shim = tmp_path / "hide"
    for module in modules:
        (shim / module).mkdir(parents=True)
        (shim / module
         / "__init__.py").write_text(f"raise ModuleNotFoundError(\"No module named '{module}'\")\n")
    return {"PYTHONPATH": os.pathsep.join([str(shim), str(ROOT), os.environ.get("PYTHONPATH", "")])}


#: backend, how to make it unavailable (None: as it is), the one line (after "--backend=NAME: backend 'NAME'")
UNAVAILABLE: list[tuple[str, str | None, str]] = [
    # (the line that installs the extra where this install came from: tests/test_install_lines.py)
    ("openvino", "openvino",
     " could not be created: openvino cannot be imported (No module named 'openvino'); "
     + install_hint("openvino")),
    ("tvm", "tvm",
     " could not be created: tvm cannot be imported (No module named 'tvm'); Apache TVM: "
     + install_hint("tvm")),
    ("iree", "iree",
     " could not be created: iree.compiler cannot be imported (No module named 'iree'); "
     + install_hint("iree")),
    ("quark", None, " could not be created: AMD Quark's custom-op library is not built: run `qdq-conformance "
                    "build-quark` once"),
    (FAKE + "unavailable", None, " could not be created: fakevendor-runtime is not installed; pip install "
                                 "fakevendor-runtime"),
    (FAKE + "ort_older_than_the_floor", None,
     " could not be created: onnxruntime 1.15.1 is older than 1.16, the oldest release qdq-conformance runs "
     "on (the lowest it runs without a harness error); pip install 'onnxruntime>=1.16'"),
    (FAKE + "not_a_backend", None,
     " could not be created: TypeError: the factory returned a dict, which has no "
                                   "run(model, feeds) method"),
]


@pytest.mark.parametrize(("backend", "hide", "line"), UNAVAILABLE, ids=[b for b, _, _ in UNAVAILABLE])
def test_a_backend_that_cannot_be_created_is_a_usage_error_before_any_case(tmp_path, backend, hide, line):
    env = {**(_hidden(tmp_path, hide) if hide else {}), "QDQ_CACHE_DIR": str(tmp_path / "cache"),
           "QDQ_QUARK_LIBRARY": ""}
    p, lines, _ = _run(tmp_path, backend, env=env)
    assert p.returncode == 4, lines
    assert len(lines) == 1 and lines[0].startswith(f"ERROR: --backend={backend}: backend {backend!r}"), lines
    assert line in lines[0] and "Traceback" not in lines[0], lines
    head, cases, summary = read(tmp_path / "r.jsonl")  # the header and a summary that says why; no case
    assert (cases == [] and summary is not None and summary["exitstatus"] == 4
            and line.strip() in summary["error"])


@pytest.mark.parametrize(("extra", "seconds"),
                         [(["--case-timeout", "2"], 2), (["--backend-timeout", "1"], 1)])
def test_a_factory_that_never_returns_is_a_usage_error_within_its_time_limit(tmp_path, extra, seconds):
    backend = FAKE + "sleeps_forever"
    p, lines, took = _run(tmp_path, backend, *extra)
    assert p.returncode == 4, lines
    assert lines == [f"ERROR: --backend={backend}: backend {backend!r} was not created within {seconds} s "
                     "(--backend-timeout, by default --case-timeout); its worker was killed"], lines
    assert took < 60, took  # (the factory sleeps an hour)
    assert read(tmp_path / "r.jsonl")[2]["exitstatus"] == 4


@pytest.mark.parametrize("value", ["nan", "0", "-1", "inf"])
def test_a_backend_timeout_out_of_range_is_one_usage_error_line(tmp_path, value):
    p, lines, _ = _run(tmp_path, "oracle", "--backend-timeout", value, results=False)
    assert p.returncode == 4 and len(lines) == 1, lines
    assert ("--backend-timeout: expected a positive number of seconds, got "
            f"{float(value):g}") in lines[0], lines


CAPITALS = "NOTHING WAS TESTED: ALL 16 CASE(S) WERE UNSUPPORTED by declines-everything 0.0-test"


def test_a_run_in_which_every_case_was_unsupported_exits_5_and_says_so(tmp_path):
    p, lines, _ = _run(tmp_path, FAKE + "declines_everything")
    assert p.returncode == 5, lines[-5:]
    assert any(ln.startswith(CAPITALS) for ln in lines), lines[-8:]
    assert (lines[-1]
            == ("exit status 5: nothing tested: every case that ran was unsupported (--allow-all-unsupported "
                "accepts that)")), lines[-1]
    _, cases, summary = read(tmp_path / "r.jsonl")
    assert len(cases) == 16 and {c["status"] for c in cases} == {"unsupported"}
    assert summary["exitstatus"] == 5 and summary["all_unsupported"] is True


def test_allow_all_unsupported_exits_0_and_still_says_so(tmp_path):
    p, lines, _ = _run(tmp_path, FAKE + "declines_everything", "--allow-all-unsupported")
    assert p.returncode == 0, lines[-5:]
    assert any(ln.startswith(CAPITALS) and ln.endswith("--allow-all-unsupported: exit status 0")
               for ln in lines)
    assert read(tmp_path / "r.jsonl")[2]["exitstatus"] == 0


def test_a_run_with_one_judged_case_is_not_nothing_tested(tmp_path):
    """Misbehaving declines saturation-huge (unsupported) and passes nan-integer: the run tested something."""
    p, lines, _ = _run(tmp_path, FAKE + "make", "--", "-k", "saturation-huge or nan-integer")
    counts = read(tmp_path / "r.jsonl")[2]["counts"]
    assert counts.get("unsupported") and len(counts) > 1, counts
    assert p.returncode == 0 and not any("NOTHING WAS TESTED" in ln for ln in lines), lines[-5:]


def test_run_help_documents_the_exit_statuses_and_options():
    p = subprocess.run([sys.executable, "-m", "qdq_conformance.cli", "run", "--help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "120"})
    text = " ".join(p.stdout.split())
    assert p.returncode == 0
    for needle in ("--backend-timeout SECONDS", "--allow-all-unsupported", "4 usage error:",
                   "a backend that cannot be created (its package not installed, its factory raising, or "
                   "taking longer than --backend-timeout)", "5 nothing tested: no case selected",
                   "or every case that ran was unsupported by the backend",
                   "3 the fault is this tool's: an exception in qdq-conformance's own code while running a "
                   "case"):
        assert needle in text, needle


def test_results_header_of_an_unavailable_backend_names_it(tmp_path):
    env = _hidden(tmp_path, "openvino")
    p, _, _ = _run(tmp_path, "openvino", env=env)
    head = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert p.returncode == 4 and head["backend"] == "openvino"
