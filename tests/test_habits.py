"""pytest's habits and a run's words after it (issue 38): ``--lf``, ``--ff`` and ``--sw`` with their state in
this tool's cache, keyed by corpus, backend and selection; stale expectations said only by a complete run of
the corpus; a results file in a folder that does not exist refused; ``diff`` warning on other optimization
levels and backend options, and linking only to a report that exists.

Each run is ``qdq-conformance run`` in a subprocess, from a folder that is not the case folder's (as a vendor
runs the installed corpus), on the small case folder with a backend that fails its int8 ``basic`` cases.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from qdq_conformance.cli import main
from qdq_conformance.results import header

from .results_files import record, write

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "data" / "runner_cases"
FAKE = "python:tests.fake_backends:make"
#: the misbehaving backend's int8 "basic" cases fail (off by one bit), its uint8 ones pass: 8 case-forms
BASIC = "basic"


def _run(tmp: Path, *args: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QDQ_CACHE_DIR": str(cache or tmp / "cache"), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "qdq_conformance.cli", "run", "--backend", FAKE, "--cases",
                           str(CASES), "--workers", "1", *args], cwd=tmp, env=env, capture_output=True,
                          text=True, timeout=600)


def _records(path: Path) -> tuple[dict[str, Any], list[tuple[str, str, str]], dict[str, Any]]:
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    cases = [(x["id"], x["form"], x["status"]) for x in lines if x["type"] == "case"]
    return lines[0], cases, lines[-1]


def test_lf_reruns_the_last_failures_of_its_own_selection(tmp_path):
    first = _run(tmp_path, "-k", BASIC, "--results", str(tmp_path / "a.jsonl"))
    assert first.returncode == 1, first.stdout[-2000:]
    failed = {(i, f) for i, f, s in _records(tmp_path / "a.jsonl")[1] if s == "failed"}
    assert len(failed) == 4
    # another selection on the same backend in between: it keeps its own state
    other = _run(tmp_path, "-k", "basic and v21 and uint8", "--results", str(tmp_path / "b.jsonl"))
    assert other.returncode == 0, other.stdout[-2000:]
    again = _run(tmp_path, "-k", BASIC, "--lf", "--results", str(tmp_path / "c.jsonl"))
    head, cases, summary = _records(tmp_path / "c.jsonl")
    assert {(i, f) for i, f, _ in cases} == failed, again.stdout[-2000:]
    assert head["selection"].get("--lf") is True and "rerun previous 4 failure(s)" in again.stdout
    # the other selection with --lf: none of its cases failed, so every one runs (pytest's --lfnf all)
    none_failed = _run(tmp_path, "-k", "basic and v21 and uint8", "--lf", "--results",
                       str(tmp_path / "d.jsonl"))
    head, cases, _ = _records(tmp_path / "d.jsonl")
    assert len(cases) == 2 and "--lf" not in (head.get("selection") or {}), none_failed.stdout[-2000:]
    assert "no previously failed case-form of this selection" in none_failed.stdout


def test_ff_runs_the_last_failures_first(tmp_path):
    assert _run(tmp_path, "-k", BASIC).returncode == 1
    p = _run(tmp_path, "-k", BASIC, "--ff", "--results", str(tmp_path / "r.jsonl"))
    _, cases, _ = _records(tmp_path / "r.jsonl")
    assert [s for _, _, s in cases] == ["failed"] * 4 + ["passed"] * 4, p.stdout[-2000:]


def test_sw_stops_at_the_first_failure_and_resumes_there(tmp_path):
    p = _run(tmp_path, "-k", BASIC, "--sw", "--results", str(tmp_path / "a.jsonl"))
    _, cases, summary = _records(tmp_path / "a.jsonl")
    assert p.returncode == 1 and cases[-1][2] == "failed", p.stdout[-2000:]  # (exit 1 as -x, not interrupted)
    assert "interrupted" not in summary and "interrupted" not in p.stdout.splitlines()[-1]
    assert "the next --sw run starts there" in p.stdout
    stopped, passed_before = cases[-1][:2], len(cases) - 1
    p = _run(tmp_path, "-k", BASIC, "--sw", "--results", str(tmp_path / "b.jsonl"))
    head, cases, _ = _records(tmp_path / "b.jsonl")
    assert cases[0][:2] == stopped and len(cases) == 1, p.stdout[-2000:]  # (it still fails: it stops again)
    if passed_before:  # (the cases that passed before it are left out, and the header says so)
        assert head["selection"]["--sw"] == f"from {stopped[0]} [{stopped[1]}]"
    p = _run(tmp_path, "-k", BASIC, "--sw-reset", "--results", str(tmp_path / "c.jsonl"))
    first = _records(tmp_path / "a.jsonl")[1][0][:2]
    assert _records(tmp_path / "c.jsonl")[1][0][:2] == first, p.stdout[-2000:]  # (from the first case again)


def _expectations(tmp: Path) -> Path:
    path = tmp / "exp.yaml"
    path.write_text("backend: misbehaving\nentries:\n"
                    "  - cases: 'quantizelinear-*-basic-float-int8'\n    status: failed\n"
                    "    reason: off by one\n"
                    "  - cases: 'quantizelinear-*-basic-float-uint8'\n    status: failed\n"
                    "    reason: fixed since\n"
                    "  - cases: 'no-such-case-*'\n    status: failed\n    reason: gone\n")
    return path


def test_a_selected_run_does_not_check_stale_expectations(tmp_path):
    """A -k run says it did not check which entries are stale (its uint8 entry's cases passing there says
    nothing of the cases it did not run)."""
    p = _run(tmp_path, "-k", BASIC, "--expectations", str(_expectations(tmp_path)), "--results",
             str(tmp_path / "r.jsonl"))
    assert p.returncode == 0, p.stdout[-2000:]
    assert "stale expectation" not in p.stdout and "stale entries not checked (the run is a subset of the " \
        "corpus: -k basic;" in p.stdout
    _, _, summary = _records(tmp_path / "r.jsonl")
    assert summary["stale_expectations"] == [] and summary["expectations"]["stale"] is None
    assert summary["stale_unchecked"] == "is a subset of the corpus: -k basic"


def test_a_complete_run_checks_stale_expectations(tmp_path):
    exp = tmp_path / "exp.yaml"
    exp.write_text("backend: oracle\nentries:\n  - cases: 'no-such-case-*'\n    status: failed\n"
                   "    reason: gone\n")
    env = {**os.environ, "QDQ_CACHE_DIR": str(tmp_path / "cache")}
    p = subprocess.run([sys.executable, "-m", "qdq_conformance.cli", "run", "--backend", "oracle",
                        "--cases", str(CASES), "--expectations", str(exp)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0 and "1 stale expectation(s):" in p.stdout and "matches no collected case" in \
        p.stdout, p.stdout[-2000:]


def test_results_in_a_folder_that_does_not_exist_are_refused(tmp_path):
    missing = Path("/") / f"qdq-missing-{uuid.uuid4().hex[:8]}"
    try:
        p = _run(tmp_path, "-k", BASIC, "--results", str(missing / "r.jsonl"))
        assert p.returncode == 4 and not missing.exists(), p.stdout[-2000:] + p.stderr[-2000:]
        assert p.stderr.strip().splitlines() == [f"ERROR: --results {missing}/r.jsonl: no such directory: "
                                                 f"{missing} (make it first)"]
    finally:
        if missing.exists():
            for f in missing.iterdir():
                f.unlink()
            missing.rmdir()


def _results(path: Path, **extra: Any) -> Path:
    head = header("ort", "1.32.0", {"selection": {}, **extra})
    return write(path, [record("quantizelinear-21-x", "passed", backend=("ort", "1.32.0"))], head=head)


def test_diff_warns_when_the_runs_used_other_settings(tmp_path, capsys):
    old = _results(tmp_path / "old.jsonl", optimization="onnxruntime graph optimization level all")
    new = _results(tmp_path / "new.jsonl", optimization="onnxruntime graph optimization level disable",
                   backend_options={"session.disable_quant_qdq": "1"})
    assert main(["diff", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "WARNING: the runs used different optimization (onnxruntime graph optimization level all and " \
        "onnxruntime graph optimization level disable)" in out
    assert "WARNING: the runs used different backend options (none and session.disable_quant_qdq=1)" in out


def test_the_diff_page_links_to_a_report_only_when_there_is_one(tmp_path, capsys):
    old = _results(tmp_path / "old.jsonl")
    new = _results(tmp_path / "new.jsonl")
    page = tmp_path / "pages" / "diff.html"
    page.parent.mkdir()
    assert main(["diff", str(old), str(new), "-o", str(page)]) == 0
    html = page.read_text()
    assert 'data-report=""' in html and "Case ids are not links" in html
    (tmp_path / "new.html").write_text("<html></html>")  # the report run --report writes next to new.jsonl
    assert main(["diff", str(old), str(new), "-o", str(page)]) == 0
    assert 'data-report="../new.html"' in page.read_text()
    capsys.readouterr()


@pytest.mark.parametrize("command", [["report", "-o"], ["diff", "-o"]])
def test_an_output_page_in_a_folder_that_does_not_exist_is_refused(tmp_path, capsys, command):
    res = _results(tmp_path / "r.jsonl")
    out = tmp_path / "no" / "such" / "page.html"
    files = [str(res)] * (2 if command[0] == "diff" else 1)
    assert main([command[0], *files, command[1], str(out)]) == 2
    assert f"no such directory: {tmp_path / 'no'}" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()
