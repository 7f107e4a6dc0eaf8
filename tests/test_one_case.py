"""From a finding to the fix (issue 31): ``qdq-conformance show`` (from a results file, from a fresh run,
``--repro`` that asserts), a run that selects one case collects only what the selection can match, pytest's
habits through ``qdq-conformance run``, the selection in the results header, ``diff`` warnings and ``findings
--fail-on``, and ``fuzz`` judging against the bundled expectations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from qdq_conformance.cli import main
from qdq_conformance.reports.casepage import marks, param_index, rows, strip_tool_frames
from qdq_conformance.results import CaseRecord, ExpectationRecord, header

from .results_files import entry, record, write

ROOT = Path(__file__).resolve().parents[1]
#: a case ONNX Runtime 1.32.0 fails (expected: ort.yaml), 4 of 51 float8 elements (saturate=0 beyond 464)
ORT_CASE = "quantizelinear-21-bnd-range-float-float-float8e4m3fn-outdtype-saturate0"


def _cli(*args: str, env: dict[str, str] | None = None,
         timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "qdq_conformance.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def _preview(t: str, values: list[str], codes: list[int], shape: list[int] | None = None) -> dict[str, Any]:
    return {"type": t, "shape": shape or [len(codes)], "values": values, "codes": codes, "truncated": False}


def failed_record(case_id: str = "quantizelinear-21-demo-float-float8e4m3fn", form: str = "runtime",
                  expectation: ExpectationRecord | None = None, repro: str | None = None) -> CaseRecord:
    """A float8e4m3fn output of 4 elements: [0] equal, [1] NaN vs NaN of another code (equal by class), [2]
    NaN expected and 448 returned (differs, explained), [3] equal; x float32 0.1 written at float64 precision;
    a per-axis scale of 2 on axis 1 of a [2, 2] x."""
    return record(
        case_id, "failed", form=form,
        message="output 0: values differ: 1 of 4 elements differ, first at [1, 0]",
        duration=0.01, operator="QuantizeLinear", domain="ai.onnx", version=21, family="boundary-range",
        granularity="per-axis", attributes={"axis": 1, "saturate": 0},
        types={"x": "float", "y_scale": "float", "y": "float8e4m3fn"}, case_status="normative",
        comparison="exact", spec={"operator": "QuantizeLinear", "versions": "21-28", "text": "saturate"},
        expectation=expectation, repro=repro,
        inputs={"x": _preview("float", ["0.10000000149011612", "1.0", "48.0", "2.0"],
                              [0x3DCCCCCD, 0x3F800000, 0x42400000, 0x40000000], [2, 2]),
                "y_scale": _preview("float", ["0.5", "0.25"], [0x3F000000, 0x3E800000])},
        expected=[_preview("float8e4m3fn", ["0.0", "nan", "nan", "2.0"], [0x00, 0x7F, 0x7F, 0x40], [2, 2])],
        actual=[_preview("float8e4m3fn", ["0.0", "nan", "448.0", "2.0"], [0x00, 0xFF, 0x7E, 0x40],
                         [2, 2])],
        mismatches=[{"output": 0, "reason": "values differ", "count": 1, "total": 4,
                     "first_indices": [[1, 0]], "max_ulp": None,
                     "explained": [[2, "between 448|480, beyond max 448, above the saturate=0 "
                                       "threshold 464"]]}])


def write_run(path: Path, records: list[CaseRecord], backend: str = "demo", version: str = "1.0",
              selection: dict[str, Any] | None = None) -> Path:
    """A finished run of ``records`` on ``backend`` ``version`` (each record says it ran there)."""
    for r in records:
        r["backend"], r["backend_version"] = backend, version
    return write(path, records, header(backend, version, {"selection": selection or {}}),
                 {"counts": {}, "duration_s": 1.0})


# -- the case table: the verdict's comparison, NaN by class, the type's own precision
# ---------------------------

def test_case_rows_mark_what_the_verdict_marks_at_the_types_precision():
    rec = failed_record()
    assert marks(rec) == [[2]]  # NaN vs NaN of another code is no mismatch; 448 for NaN is
    table = rows(rec)
    assert [r["differs"] for r in table] == [False, False, True, False]
    assert table[0]["x"] == "0.1"  # float32 at float32's shortest, not 0.10000000149011612
    assert [r["scale"] for r in table] == ["0.5", "0.25", "0.5", "0.25"]  # per-axis on axis 1 of [2, 2]
    assert (table[2]["expected"] == "nan" and table[2]["actual"] == "448.0"
            and table[2]["actual_code"] == "0x7e")
    assert table[2]["why"].startswith("between 448|480") and not table[1]["why"]
    assert param_index(5, [2, 6], [2, 2], {"axis": 1, "block_size": 3}) == 1  # blocked: row 0, block 1
    assert param_index(5, [2, 6], [], {}) == 0


def test_a_backend_traceback_keeps_its_frames_not_the_tools():
    own = str(ROOT / "conformance" / "runner" / "execute.py")
    message = ("error: Fail: boom\nTraceback (most recent call last):\n"
               f'  File "{own}", line 107, in call_backend\n    returned = backend.run(model, feeds)\n'
               '  File "/usr/lib/python3/site-packages/onnxruntime/capi/session.py", line 470, in invoke\n'
               "    result = sess.run(...)")
    out = strip_tool_frames(message)
    assert "onnxruntime/capi/session.py" in out and "sess.run" in out
    assert own not in out and "call_backend" not in out and "backend.run(model" not in out


# -- show
# ---------------------------------------------------------------------------------------------------------

def test_show_from_a_results_file(tmp_path, capsys):
    rec = failed_record(expectation=entry("failed", 7, "NaN for 480"))
    path = write_run(tmp_path / "r.jsonl", [rec])
    assert main(["show", rec["id"], str(path)]) == 0
    out = capsys.readouterr().out
    assert ('spec (QuantizeLinear 21-28): "saturate"' in out
            and "expectation: line 7: failed: NaN for 480" in out)
    marked = [line for line in out.splitlines() if line.startswith("  *")]
    assert len(marked) == 1 and "448.0" in marked[0] and "0x7e" in marked[0] and "beyond max 448" in marked[0]
    assert main(["show", "no-such-case", str(path)]) == 2
    assert "no case no-such-case" in capsys.readouterr().err


def test_show_repro_asserts(tmp_path, capsys):
    """The script prints expected vs actual and exits 1 on a mismatch, 0 when the outputs match (NaN by
    class)."""
    for actual, status in (([0x00, 0xFF, 0x7E, 0x40], 1), ([0x00, 0xFF, 0x7F, 0x40], 0)):
        # (a backend's repro: raw codes)
        repro = f"import numpy as np\nprint('y', np.array({actual}, np.uint8))\n"
        rec = failed_record(repro=repro)
        path = write_run(tmp_path / "r.jsonl", [rec])
        script = tmp_path / f"repro{status}.py"
        assert main(["show", rec["id"], str(path), "--repro", str(script)]) == 0
        capsys.readouterr()
        p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
        assert p.returncode == status, p.stdout + p.stderr
        assert ("1 element(s) differ" if status else "the outputs match the spec") in p.stdout
        assert ("expected 0x7f, actual 0x7e" in p.stdout if status
                else "expected 0x7f, actual 0xff" in p.stdout)


def test_show_without_a_file_runs_the_case_and_its_repro_fails_on_the_backend(tmp_path, shared_expansions):
    pytest.importorskip("onnxruntime")
    script = tmp_path / "repro.py"
    p = _cli("show", ORT_CASE, "--backend", "ort", "--form", "runtime", "--repro", str(script),
             env={"QDQ_CACHE_DIR": str(shared_expansions(tmp_path / "cache"))})
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"{ORT_CASE} [runtime] on ort" in p.stdout and "expectation: line" in p.stdout
    assert sum(line.startswith("  *") for line in p.stdout.splitlines()) == 4  # 4 of 51 elements differ
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "4 element(s) differ" in r.stdout, r.stdout + r.stderr
    assert _cli("show", "no-such-case-anywhere", "--backend", "ort").returncode == 2


# -- selection, pytest habits, the header
# ------------------------------------------------------------------------

def _collected(*args: str, env: dict[str, str] | None = None) -> list[str]:
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--backend=oracle",
                        "--workers", "1", "--collect-only", "-q", *args], cwd=ROOT, capture_output=True,
                       text=True, timeout=900, env={**os.environ, **(env or {})})
    assert p.returncode in (0, 5), p.stdout + p.stderr
    return sorted(line for line in p.stdout.splitlines() if "::" in line)


@pytest.mark.parametrize("selection", [("-k", "quantizelinear-21-ties-float and not int16"),
                                       ("-m", "v23 and per_axis and y_int4")])
def test_collecting_only_the_files_a_selection_can_match_selects_what_pytest_selects(selection):
    narrowed = _collected(*selection)
    assert narrowed and narrowed == _collected(*selection, env={"QDQ_COLLECT_ALL": "1"})


def test_run_takes_pytest_habits_and_records_the_selection(tmp_path, shared_expansions):
    cache = shared_expansions(tmp_path / "cache")  # (a folder of its own: pytest's cache is looked for there)
    env = {"QDQ_CACHE_DIR": str(cache), "QDQ_CORPUS_CACHE": os.environ.get("QDQ_CORPUS_CACHE", "1")}
    results = tmp_path / "r.jsonl"
    p = _cli("run", "--backend", "oracle", "-k", "quantizelinear-21-ties-float-int8", "-x", "--maxfail",
             "2", "--form", "runtime", "--results", str(results), env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "(a subset of the corpus: -k quantizelinear-21-ties-float-int8, --form runtime)" in p.stdout
    head = json.loads(results.read_text().splitlines()[0])
    assert head["selection"] == {"-k": "quantizelinear-21-ties-float-int8", "--form": "runtime"}
    # the cache plugin is on, its cache under the project's cache directory
    assert (cache / "pytest").is_dir()
    for habit in ("--lf", "--sw"):
        p = _cli("run", "--backend", "oracle", "-k", "quantizelinear-21-ties-float-int8", habit, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
    p = _cli("run", "--backend", "oracle", "--no-such-option", env=env)
    assert p.returncode == 2 and "put pytest arguments after --" in p.stderr


# -- diff and findings
# ---------------------------------------------------------------------------------------------

def _rec(k: int, status: str, expected: bool = False) -> CaseRecord:
    rec = failed_record(f"quantizelinear-21-demo-{k}")
    rec["status"] = status
    if expected:
        rec["expectation"] = entry(status, 3, "known")
    return rec


def test_diff_warns_of_other_backends_and_selections_and_separates_expected_failures(tmp_path, capsys):
    old = write_run(tmp_path / "old.jsonl", [_rec(0, "passed"), _rec(1, "passed")], backend="a", version="1")
    new = write_run(tmp_path / "new.jsonl", [_rec(0, "failed", expected=True), _rec(1, "passed")],
                    backend="b", version="1", selection={"-k": "demo"})
    assert main(["diff", str(old), str(new)]) == 0  # a failure an expectation says is no regression
    out = capsys.readouterr().out
    assert "WARNING: the runs are of different backends (a and b)" in out
    assert "WARNING: the runs selected different cases (the whole corpus and -k demo)" in out
    assert "0 regressed, 1 now failing (expected)" in out
    new2 = write_run(tmp_path / "new2.jsonl", [_rec(0, "failed"), _rec(1, "passed")], backend="a",
                     version="2")
    assert main(["diff", str(old), str(new2)]) == 1
    out = capsys.readouterr().out
    assert "1 regressed, 0 now failing (expected)" in out and "the backend versions differ (1 and 2)" in out


def test_findings_fail_on_new_and_every_view_says_subset(tmp_path, capsys):
    known = write_run(tmp_path / "k.jsonl", [_rec(0, "failed", expected=True)], selection={"-m": "v21"})
    fresh = write_run(tmp_path / "f.jsonl", [_rec(0, "failed")])
    assert main(["findings", str(known), "--fail-on", "new"]) == 0
    out = capsys.readouterr().out
    assert "Subset of the corpus (-m v21)" in out
    # the plain sentence, then the raw one
    assert "In boundary-range cases, for an input between 448|480" in out
    assert main(["findings", str(fresh), "--fail-on", "new"]) == 1
    assert main(["findings", str(fresh)]) == 0
    capsys.readouterr()
    assert main(["findings", str(known), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["subset"] == "-m v21"


# -- fuzz
# --------------------------------------------------------------------------------------------------------

def test_fuzz_reports_a_deviation_the_expectations_record_as_known(tmp_path):
    """The planted bug (the zero point added twice) is recorded by an expectation entry of the backend, on
    corpus cases that fail with its root cause: the fuzzed finding is known, not new (exit 0); the table fits
    100 columns and names the finding as ``findings`` does on the fuzz run's results."""
    exp = tmp_path / "planted.yaml"
    # (corpus cases by name: a glob such as quantizelinear-21-*-float-uint8* would also name the fuzzed
    # examples, quantizelinear-21-fuzz-<key>-float-uint8-x1, which are then expected failures and never
    # findings)
    exp.write_text("backend: planted-zp-twice\nentries:\n  - cases: "
                   "['quantizelinear-21-bnd-ties-float-uint8']\n    status: failed\n    reason: the zero "
                   "point is added twice\n", encoding="utf-8")
    out = tmp_path / "out"
    p = _cli("fuzz", "--backend", "python:tests.fuzz_backends:planted", "--ops", "QuantizeLinear",
             "--versions", "21", "--types", "float/float/uint8", "--examples", "150", "--seed", "0", "--out",
             str(out), "--expectations", str(exp), "--no-database", env={"COLUMNS": "300"})
    assert p.returncode == 0, p.stdout + p.stderr
    found = json.loads((out / "findings.json").read_text())
    row = found["findings"][0]
    assert row["known"]["line"] == 3 and row["known"]["case"].startswith("quantizelinear-21-")
    assert found["summary"]["new_findings"] == 0 and found["summary"]["known_findings"] == 1
    table = p.stdout.split("fuzz planted-zp-twice")[0]
    assert "known:3" in table and max(len(line) for line in table.splitlines()) <= 100
    f = subprocess.run([sys.executable, "-m", "qdq_conformance.cli", "findings", str(out / "results.jsonl"),
                        "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert row["root_cause_id"] in [x["id"] for x in json.loads(f.stdout)["findings"]]
