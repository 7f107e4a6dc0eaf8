"""A harness error (an exception raised in this tool's own code while a case runs) is never the backend's: its
own status, counted apart, never a finding; the run exits 3 with one line that says the fault is the tool's.
Whose an exception is comes from where it was raised (``blame.harness_fault``), never from its wording."""

from __future__ import annotations

import json
import subprocess
import sys

import onnx
import pytest
from onnx import TensorProto, helper

from qdq_conformance import blame
from qdq_conformance.backends.kits import ort as ort_kit
from qdq_conformance.domain import RunStatus
from qdq_conformance.results import read
from qdq_conformance.results.tally import tally
from qdq_conformance.runner import execute
from qdq_conformance.runner.expectations import Expectations, Tracker, load
from qdq_conformance.runner.outcome import classify

from .test_runner import CASES, ROOT, read_results, run_pytest

FAULTY = "python:tests.fake_backends:ort_with_a_faulty_adapter"


def _raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception is what is judged
        return e
    raise AssertionError("did not raise")


def test_blame_follows_the_frames_not_the_words():
    # this tool's own code (the ort kit) raising AttributeError, as an API an old release lacks would make it
    own = _raised(lambda: ort_kit.from_ortvalue(None))  # type: ignore[arg-type]
    assert isinstance(own, AttributeError)
    assert blame.harness_fault(own) and "kits/ort.py" in blame.harness_fault(own)
    # the same class and words raised by someone else's code (a backend, a third-party adapter) is theirs
    def backend_code():
        raise AttributeError(str(own))
    assert blame.harness_fault(_raised(backend_code)) is None
    # ONNX Runtime refusing a model, called from this tool's adapter: ORT's exception, ORT's fault
    bad = helper.make_model(helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["y"])], "g",
                                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])]))
    refused = _raised(lambda: ort_kit.session(bad))
    assert blame.harness_fault(refused) is None
    # numpy, onnx and the standard library are passed over: a bad call of them from our code is ours
    bad_call = _raised(lambda: ort_kit.packed_size(None, [2]))  # type: ignore[arg-type]  # (protobuf: neutral)
    assert blame.harness_fault(bad_call)
    # an adapter's RuntimeError is how it says "the backend failed": the backend's
    assert blame.harness_fault(RuntimeError("tract failed at run time")) is None


def test_call_backend_makes_a_harness_error_of_the_adapters_own_fault(monkeypatch):
    class Adapter:
        name, version = "ort", "x"

        def run(self, model, feeds):
            return ort_kit.from_ortvalue(None)  # type: ignore[arg-type]  # (a bug: this tool's own code raises)

    raw = execute.call_backend(Adapter(), onnx.ModelProto(), {})
    assert raw.kind == RunStatus.HARNESS_ERROR and "the fault is the tool's" in raw.message
    # whatever the case says (an invalid model "rejected" by an exception is no pass here)
    for status in ("normative", "invalid", "implementation-defined"):
        assert classify(raw, case_status=status, expected=None).status == RunStatus.HARNESS_ERROR


def test_a_fault_in_the_harness_while_recording_is_a_harness_error(monkeypatch):
    """run_case's own failures (building the model, classifying, writing the record) are the tool's."""
    from qdq_conformance.backends.builtin import OracleBackend
    from qdq_conformance.runner import record

    sources = execute.Sources()
    ref = execute.FileRef(str(CASES / "small.yaml"), ("default",), 0, sources.load(
        (str(CASES / "small.yaml"), ("default",), None))[0].id)
    monkeypatch.setattr(record, "build", lambda *a, **k: {}["no such key"])
    got = execute.run_case(OracleBackend(), ref, "runtime", sources, Expectations())
    assert got.status == RunStatus.HARNESS_ERROR and "the fault is the tool's" in got.message
    assert json.loads(got.record)["status"] == RunStatus.HARNESS_ERROR


def test_harness_errors_are_counted_apart_from_failures(tmp_path):
    cases = [{"status": "harness-error"}, {"status": "failed"}, {"status": "passed"}]
    t = tally(cases, 0, 0)  # type: ignore[arg-type]
    assert t["harness_errors"] == 1 and t["new_failures"] == 1
    # an entry whose only case the tool failed on is not stale: nothing is known of it
    exp = tmp_path / "e.yaml"
    exp.write_text("backend: demo\nentries:\n  - cases: ['a-*']\n    status: failed\n    reason: known\n")
    entries = load(exp, "1.0", "demo")
    tracker = Tracker()
    tracker.note("a-1", "runtime", "harness-error", "failed", entries.entries[0].line)
    assert tracker.stale(entries, subset=False, forms=["runtime"]) == [] and not tracker.surprises


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory):
    res = tmp_path_factory.mktemp("faulty") / "r.jsonl"
    p = run_pytest(f"--backend={FAULTY}", "--expectations=none", "--results", str(res), "-q")
    return p, res


def test_a_fault_injected_into_the_tools_code_is_a_harness_error_and_exits_3(faulty_run):
    p, res = faulty_run
    assert p.returncode == 3, p.stdout[-3000:]
    _, cases, summary = read_results(res)
    status = {(c["id"], c["form"]): c["status"] for c in cases}
    uint8 = {k: s for k, s in status.items() if "uint8" in k[0]}
    assert uint8 and set(uint8.values()) == {"harness-error"}  # the invalid uint8 case too: never "rejected"
    assert {s for k, s in status.items() if k not in uint8} <= {"passed", "implementation-defined", "failed"}
    assert summary["counts"]["harness-error"] == len(uint8) and summary["exitstatus"] == 3
    assert summary["expectations"]["harness_errors"] == len(uint8)
    harness = next(c for c in cases if c["status"] == "harness-error")
    assert "kits/ort.py" in harness["message"] and "the fault is the tool's" in harness["message"]
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("HARNESS ERROR")]
    assert len(lines) == 1 and "the fault is the tool's, not ort" in lines[0], p.stdout[-3000:]
    assert "exit status 3: the fault is qdq-conformance's" in p.stdout


def test_no_finding_is_made_of_a_harness_error(faulty_run, tmp_path):
    _, res = faulty_run
    from qdq_conformance.reports.findings import group

    _, cases, _ = read(res)
    assert not [c for f in group(cases) for c in f.cases if "uint8" in c[0]]
    cmd = [sys.executable, "-m", "qdq_conformance.cli"]
    p = subprocess.run([*cmd, "findings", str(res)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0 and "HARNESS ERRORS" in p.stdout and "the fault is the tool's" in p.stdout
    p = subprocess.run([*cmd, "findings", str(res), "--fail-on", "new"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert p.returncode == 1
    clean = tmp_path / "clean.jsonl"
    assert run_pytest("--backend=ort", "--expectations=none", "--results", str(clean), "-q").returncode != 3
    p = subprocess.run([*cmd, "diff", str(clean), str(res)], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert p.returncode == 1 and "HARNESS ERRORS" in p.stdout, p.stdout
    assert "HARNESS-ERROR (" in p.stdout and "REGRESSED" not in p.stdout
    report = tmp_path / "r.html"
    p = subprocess.run([*cmd, "report", str(res), "-o", str(report)], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert p.returncode == 0 and 'id="harness"' in report.read_text()

