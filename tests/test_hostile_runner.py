"""Hostile input to the runner and to the commands that read its results: each one ends as one line (a case's
one-line message, or one usage-error line) with a documented exit status, never a traceback, and nothing is
lost.

- Misbehaving backends (``tests.fake_backends.HOSTILE``: wrong element type, shape or count of outputs, None,
  a list, an object array, a huge output, exceptions of every kind, inputs and models changed in place,
  garbage printed): one run of a case file with a template per misbehaviour; each case fails (or errs, or
  crashes) with a message saying what was expected and what came back, and the rest of the run goes on.
- Bad options of ``run``: exit status 4 and one line, before any case runs.
- Bad arguments of ``report``, ``diff`` and ``build-quark``: one line, exit status 2 (1 for ``build-quark``).
- Property tests: arbitrary bytes and arbitrary JSON lines given to the results reader end in a ResultsError
  or in records that ``report`` (against a baseline too), ``findings``, ``diff`` and the compliance table
  render without an exception.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qdq_conformance.cli import main
from qdq_conformance.results import (
    FIELDS,
    FORMAT,
    KEYS,
    Number,
    Obj,
    ResultsError,
    Spec,
    check,
    encode_record,
    header,
    read,
    valid,
)
from qdq_conformance.results.records import case_record
from tests.fake_backends import GARBAGE, HOSTILE

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "tests" / "data" / "runner_cases"
TEMPLATE = """\
  - id: {mode}
    description: The backend misbehaves ({mode}).
    spec: {{text: "y = saturate((x / y_scale) + y_zero_point)"}}
    operator: QuantizeLinear
    versions: [13]
    family: basic
    status: normative
    types: {{x: float, y: [int8]}}
    inputs:
      x: {{random: {{seed: 1}}}}
"""
EXPECTED_Y = "int8 [16]"

#: misbehaviour -> (status of its case, the case's one-line message)
BACKENDS: dict[str, tuple[str, str]] = {
    "wrong-dtype": ("failed", f"output y: expected {EXPECTED_Y}, got float64 [16]"),
    "object-array": ("failed", f"output y: expected {EXPECTED_Y}, got object [16]"),
    "wrong-shape": ("failed", f"output y: expected {EXPECTED_Y}, got int8 [15]"),
    "list-output": ("failed", f"output y: expected {EXPECTED_Y}, got a list, not an array"),
    "none-output": ("failed", f"output y: expected {EXPECTED_Y}, got None"),
    "returns-none": ("failed", f"expected 1 output (y: {EXPECTED_Y}), got None"),
    "fewer-outputs": ("failed", f"expected 1 output (y: {EXPECTED_Y}), got 0"),
    "extra-outputs": ("failed", f"expected 1 output (y: {EXPECTED_Y}), got 2 (int8 [16], int8 [16])"),
    "returns-string": ("failed", f"expected 1 output (y: {EXPECTED_Y}), got a str, not a list of outputs"),
    "single-array": ("failed", f"expected 1 output (y: {EXPECTED_Y}), got a single array (int8 [16]), not a "
                               "list of outputs"),
    "huge-output": ("failed", f"output y: expected {EXPECTED_Y}, got int8 [50000000]"),
    "unprintable-error": ("error", "_Unprintable: <the _Unprintable's message cannot be printed>"),
    "huge-error": ("error", "RuntimeError: \\x1b[2Jxxxx"),
    "system-exit": ("error", "the backend raised SystemExit: 3"),
    "keyboard-interrupt": ("error", "the backend raised KeyboardInterrupt"),
    "base-exception": ("error", "the backend raised _NotAnException: not an Exception"),
    "mutates-inputs": ("failed", f"output y: expected {EXPECTED_Y}, got float64 [16]"),
    "mutates-model": ("failed", f"output y: expected {EXPECTED_Y}, got float64 [16]"),
    "prints-garbage": ("passed", ""),
    "garbage-then-abort": ("crashed",
                           "the backend's worker process killed by signal 6 (SIGABRT); it was replaced"),
}


def _cli(*args: str, env: dict[str, str] | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``qdq-conformance ARGS`` in a subprocess (from the repository, so that ``tests.fake_backends``
    imports)."""
    return subprocess.run([sys.executable, "-m", "qdq_conformance.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "COLUMNS": "400", **(env or {})})


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str],
                                                                   dict[tuple[str, str], dict[str, Any]]]:
    """One run of a case per misbehaviour, in both graph forms, against ``tests.fake_backends:hostile``."""
    folder = tmp_path_factory.mktemp("hostile")
    cases = folder / "cases"
    cases.mkdir()
    (cases / "hostile.yaml").write_text("cases:\n" + "".join(TEMPLATE.format(mode=m) for m in HOSTILE))
    results = folder / "r.jsonl"
    p = _cli("run", "--backend", "python:tests.fake_backends:hostile", "--cases", str(cases), "--results",
             str(results), "--expectations", "none", "--workers", "2", "--case-timeout", "60")
    _, records, summary = read(results)
    assert summary is not None and summary["exitstatus"] == 1
    return p, {(r["id"], r["form"]): r for r in records}


def test_every_misbehaviour_has_a_case():
    assert set(BACKENDS) == set(HOSTILE)


@pytest.mark.parametrize("mode", list(BACKENDS))
def test_a_misbehaving_backend_costs_its_case_one_line(hostile_run, mode):
    p, records = hostile_run
    status, message = BACKENDS[mode]
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    case_id = f"quantizelinear-13-{mode}-float-int8"
    for form in ("runtime", "initializer"):
        rec = records[(case_id, form)]
        assert rec["status"] == status, rec["message"][:500]
        assert rec["message"].split("\n", 1)[0].startswith(message), rec["message"][:500]
        if status != "passed":  # pytest's one line for the item
            line = next(ln for ln in p.stdout.splitlines() if f"::{case_id}[{form}] - " in ln)
            assert line.split(" - ", 1)[1].startswith(f"{status}: {message}"[:300]), line
    assert "Traceback" not in p.stdout + p.stderr and "INTERNALERROR" not in p.stdout + p.stderr
    assert "GARBAGE-MARK" not in p.stdout + p.stderr and "\x1b" not in p.stdout + p.stderr


def test_inputs_changed_by_the_backend_are_recorded_as_they_were(hostile_run):
    """The backend overwrote every input it was handed (and, in the other case, the model's initializers): the
    record's inputs, expected values and repro are still the case's own."""
    _, records = hostile_run
    untouched = records[("quantizelinear-13-wrong-dtype-float-int8", "runtime")]
    for mode in ("mutates-inputs", "mutates-model"):
        for form in ("runtime", "initializer"):
            rec = records[(f"quantizelinear-13-{mode}-float-int8", form)]
            assert rec["inputs"] == untouched["inputs"], (mode, form)
            assert rec["expected"] == untouched["expected"]
            # (the repro's case: its model's text, and its feeds as the case has them)
            code = rec["repro"].split("\nfrom qdq_conformance.reference import run_any", 1)[0]
            scope: dict = {}
            exec(code, scope)  # noqa: S102 - the code this project writes
            assert "= QuantizeLinear (" in rec["repro"] and scope["feeds"]
            for name, value in scope["feeds"].items():
                assert value.reshape(-1).view(f"u{value.itemsize}").tolist()[:64] == \
                    untouched["inputs"][name]["codes"], (mode, form, name)
    mutated = records[("quantizelinear-13-mutates-inputs-float-int8", "runtime")]["actual"][0]
    # (what the backend saw was changed)
    assert mutated["type"] == "float64" and mutated["values"][0] == "127.0"


def test_a_huge_wrong_output_keeps_the_record_small(hostile_run):
    _, records = hostile_run
    rec = records[("quantizelinear-13-huge-output-float-int8", "runtime")]
    assert rec["actual"][0]["shape"] == [50_000_000] and rec["actual"][0]["truncated"]
    assert len(json.dumps(rec)) < 20_000
    assert len(records[("quantizelinear-13-huge-error-float-int8", "runtime")]["message"]) <= 2000


def test_what_a_crashing_backend_printed_is_made_printable(hostile_run):
    _, records = hostile_run
    message = records[("quantizelinear-13-garbage-then-abort-float-int8", "runtime")]["message"]
    assert "its last output:" in message and "GARBAGE-MARK" in message
    assert "\x1b" not in message and "\x00" not in message and "\\x1b[2J" in message
    assert GARBAGE.startswith(b"\x1b")


#: (run options, the one usage-error line); every one is exit status 4 before any case runs
BAD_OPTIONS: list[tuple[list[str], str]] = [
    (["--expectations", "/nonexistent/missing.yaml"],
     "--expectations /nonexistent/missing.yaml: no such file"),
    (["--expectations", "{tmp}"], "--expectations {tmp}: is a directory"),
    (["--expectations", "{tmp}/binary.yaml"], "{tmp}/binary.yaml:1: not UTF-8 text (byte 0xff at offset 1)"),
    (["--expectations", "{tmp}/entries.yaml"],
     "{tmp}/entries.yaml:1: entries[0]: must be an object, got int 1"),
    (["--results", "/proc/x.jsonl"], "--results /proc/x.jsonl: cannot write: "),
    (["--results", "{tmp}"], "--results {tmp}: is a directory"),
    (["--results", "{tmp}/binary.yaml/r.jsonl"], "--results {tmp}/binary.yaml/r.jsonl: cannot write: "
                                                 "{tmp}/binary.yaml is not a directory"),
    (["--report", "{tmp}"], "--report {tmp}: is a directory"),
    (["--report", "/proc/x.html"], "--report /proc/x.html: cannot write: "),
    (["--report", "{tmp}/same", "--results", "{tmp}/same"],
     "--report {tmp}/same: the same file as --results"),
    (["--case-timeout", "nan"], "--case-timeout: expected a positive number of seconds, got nan"),
    (["--case-timeout", "0"], "--case-timeout: expected a positive number of seconds, got 0"),
    (["--workers", "100000"], "--workers: at most "),
    (["--cases", "{tmp}/empty"], "--cases {tmp}/empty: no case file (*.yaml) in it"),
    (["--cases", "/nonexistent/cases"], "--cases /nonexistent/cases: no such directory"),
    (["--cases", "{tmp}/binary.yaml"], "--cases {tmp}/binary.yaml: not a directory"),
    (["--suite", "{tmp}/empty"], "--suite {tmp}/empty: no manifest.json in it (not a suite `qdq-conformance "
                                 "generate` wrote)"),
    (["--suite", "{tmp}/binary.yaml"], "--suite {tmp}/binary.yaml: not a directory (nor a .tar.gz)"),
    (["--suite", "{tmp}/missing.tar.gz"], "--suite {tmp}/missing.tar.gz: no such file"),
    (["--backend", "command:/nonexistent/runner --device cpu"],
     "command:/nonexistent/runner --device cpu: /nonexistent/runner: no such file"),
    (["--backend", "python:tests.fake_backends:not_a_backend"],
     "could not be created: TypeError: the factory returned a dict, which has no run(model, feeds) method"),
]


@pytest.mark.parametrize(("options", "line"), BAD_OPTIONS, ids=[" ".join(o) for o, _ in BAD_OPTIONS])
def test_bad_run_options_are_one_usage_error_line(tmp_path, options, line):
    (tmp_path / "binary.yaml").write_bytes(b"\x00\xff\xfe garbage")
    (tmp_path / "entries.yaml").write_text("entries: [1, 2]\n")
    (tmp_path / "empty").mkdir()
    args = [o.replace("{tmp}", str(tmp_path)) for o in options]
    backend = [] if "--backend" in args else ["--backend", "oracle"]
    p = _cli("run", *backend, "--cases", str(SMALL), *args, timeout=120)
    lines = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.strip()]
    assert p.returncode == 4, lines
    assert len(lines) == 1 and line.replace("{tmp}", str(tmp_path)) in lines[0], lines
    assert not (tmp_path / "same").exists() and "Traceback" not in lines[0]


def test_a_run_in_which_no_case_ran_calls_no_expectation_stale(tmp_path):
    """A case folder whose only case is of the large tier, run at the default tier: nothing is collected (exit
    status 5), and that says nothing about the expectation entries, which a run of nothing did not reach."""
    folder = tmp_path / "cases"
    folder.mkdir()
    text = (SMALL / "small.yaml").read_text().split("  - id: saturation-huge")[0]
    (folder
     / "large.yaml").write_text(text.replace("    family: basic\n", "    family: basic\n    tier: large\n"))
    entries = tmp_path / "exp.yaml"
    entries.write_text("backend: oracle\nentries:\n  - cases: 'quantizelinear-*'\n    status: failed\n"
                       "    reason: a reason\n")
    p = _cli("run", "--backend", "oracle", "--cases", str(folder), "--expectations", str(entries),
             timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 5, out[-2000:]
    assert "no case ran" in out and "stale expectation" not in out, out[-2000:]
    assert "stale entries not checked (the run ran no case;" in out, out[-2000:]


def test_a_report_that_cannot_be_written_at_the_end_is_one_line_not_a_traceback(tmp_path):
    """--report's folder is writable when the run starts (so no usage error then) and gone when it ends: the
    run says so in one line, keeps its results, and exits 4 (usage error) rather than 0."""
    folder = tmp_path / "out"
    folder.mkdir()
    p = _cli("run", "--backend", "python:tests.fake_backends:breaks_report_folder", "--cases", str(SMALL),
             "--results", str(tmp_path / "r.jsonl"), "--report", str(folder / "r.html"), "--", "-k", "basic",
             env={"QDQ_TEST_REPORT_DIR": str(folder)}, timeout=180)
    out = p.stdout + p.stderr
    assert p.returncode == 4, out[-2000:]
    assert "Traceback" not in out
    assert f"--report {folder / 'r.html'}: not written: " in out
    assert "exit status 4: usage error" in out
    assert '"type": "summary"' in (tmp_path / "r.jsonl").read_text().splitlines()[-1]


def _results(tmp_path: Path, name: str, *records: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in (header("fake", "1.0"), *records,
                                                            {"type": "summary", "counts": {}})))
    return path


#: a record as the runner writes it; the files below change one field of it, as another tool might
CASE = json.loads(encode_record(case_record("a", "runtime", "failed", "m", ("fake", "1.0"))))


def _argv(tmp_path: Path, argv: list[str]) -> list[str]:
    ok = _results(tmp_path, "ok.jsonl", CASE)
    (tmp_path / "dir").mkdir()
    (tmp_path / "binary.jsonl").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (tmp_path / "not-a-zip.whl").write_bytes(b"PK\x03\x04 cut short")
    _results(tmp_path, "types.jsonl", {**CASE, "types": ["int8"]})
    _results(tmp_path, "expectation.jsonl",
             {**CASE, "expectation": {"line": [3], "status": "failed", "reason": "r", "link": None}})
    _results(tmp_path, "preview.jsonl", {**CASE, "actual": [{"type": "int8", "shape": [1], "values": ["1"],
                                                             "codes": [None], "truncated": False}]})
    _results(tmp_path, "huge-number.jsonl", {**CASE, "duration": 10**400})
    return [a.replace("{ok}", str(ok)).replace("{tmp}", str(tmp_path)) for a in argv]


#: (command line, exit status, the one line on stderr)
BAD_COMMANDS: list[tuple[list[str], int, str]] = [
    (["report", "{tmp}/missing.jsonl", "-o", "{tmp}/r.html"], 2, "missing.jsonl: cannot read: No such file"),
    (["report", "{tmp}/dir", "-o", "{tmp}/r.html"], 2, "{tmp}/dir: cannot read: Is a directory"),
    (["report", "{tmp}/binary.jsonl", "-o", "{tmp}/r.html"], 2, "binary.jsonl:1: not a JSON line"),
    (["report", "{tmp}/types.jsonl", "-o", "{tmp}/r.html"], 2,
     "types.jsonl:2: types must be an object, not a list"),
    (["report", "{tmp}/expectation.jsonl", "-o", "{tmp}/r.html"], 2,
     "expectation.jsonl:2: expectation.line must be a whole number, not a list"),
    (["report", "{tmp}/preview.jsonl", "-o", "{tmp}/r.html"], 2,
     'preview.jsonl:2: actual[0].codes[0] must not be null'),
    (["report", "{tmp}/huge-number.jsonl", "-o", "{tmp}/r.html"], 2,
     "huge-number.jsonl:2: duration must be a number a float can hold"),
    (["report", "{ok}", "-o", "{tmp}/dir"], 2, "-o {tmp}/dir: is a directory"),
    (["report", "{ok}", "-o", "/proc/x/r.html"], 2, "-o /proc/x/r.html: no such directory: /proc/x"),
    (["report", "{ok}", "{ok}", "-o", "{tmp}/binary.jsonl/board.html"], 2, "binary.jsonl is not a directory"),
    (["diff", "{ok}", "{tmp}/missing.jsonl"], 2, "missing.jsonl: cannot read: No such file"),
    (["diff", "{tmp}/dir", "{ok}"], 2, "{tmp}/dir: cannot read: Is a directory"),
    (["diff", "{ok}", "{tmp}/types.jsonl"], 2, "types.jsonl:2: types must be an object"),
    (["diff", "{ok}", "{ok}", "-o", "{tmp}/dir"], 2, "-o {tmp}/dir: is a directory"),
    (["diff", "{ok}", "{ok}", "-o", "/proc/x/d.html"], 2, "-o /proc/x/d.html: no such directory: /proc/x"),
    (["build-quark", "--source", "{tmp}/missing"], 1, "{tmp}/missing: no such file or folder"),
    (["build-quark", "--source", "{tmp}/not-a-zip.whl"], 1,
     "{tmp}/not-a-zip.whl: not a wheel (a zip archive)"),
    (["build-quark", "--source", "{tmp}/binary.jsonl"], 1, "binary.jsonl: neither a folder nor a .whl"),
    (["build-quark", "--source", "{tmp}/dir"], 1, "{tmp}/dir lacks custom_op_library.cc"),
]


@pytest.mark.parametrize(("argv", "status", "line"), BAD_COMMANDS,
                         ids=[" ".join(a) for a, _, _ in BAD_COMMANDS])
def test_bad_report_diff_and_build_arguments_are_one_line(tmp_path, capsys, monkeypatch, argv, status, line):
    monkeypatch.setenv("QDQ_CACHE_DIR", str(tmp_path / "cache"))
    assert main(_argv(tmp_path, argv)) == status
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert line.replace("{tmp}", str(tmp_path)) in lines[0], lines
    assert not (tmp_path / "r.html").exists() and "Traceback" not in out + err


def _quark_sources(tmp_path: Path) -> Path:
    from qdq_conformance.backends.quark import SOURCES

    src = tmp_path / "custom_ops"
    for name in SOURCES:
        (src / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (src / "src" / name).write_text("garbage {\n")
    return src


@pytest.mark.parametrize(("cxx", "line"), [("{tmp}/no-such-compiler", "{tmp}/no-such-compiler: No such file"),
                                           ("false", "false failed (exit status 1)")])
def test_build_quark_with_a_missing_or_failing_compiler_is_one_line(tmp_path, capsys, monkeypatch, cxx, line):
    monkeypatch.setenv("QDQ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CXX", cxx.replace("{tmp}", str(tmp_path)))
    assert main(["build-quark", "--source", str(_quark_sources(tmp_path))]) == 1
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and line.replace("{tmp}", str(tmp_path)) in err[0], err


def test_build_quark_with_an_unwritable_cache_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QDQ_CACHE_DIR", "/proc/no-cache-here")
    monkeypatch.setenv("CXX", "true")
    assert main(["build-quark", "--source", str(_quark_sources(tmp_path))]) == 1
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "/proc/no-cache-here" in err[0], err


# --- property tests: the results reader and what reads its records
# -------------------------------------------

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                  max_size=3), max_leaves=6)
_FIELDS = ("id", "status", "form", "message", "operator", "domain", "version", "granularity", "types",
           "expectation", "behaviour", "reading", "case_status", "ambiguity", "duration", "mismatches",
           "inputs", "expected", "actual", "readings", "repro", "line", "reason", "link", "codes", "values",
           "shape", "backend", "backend_version", "expectations_status", "recorded", "mode", "path",
           "in_force", "expectations", "new_failures", "held", "duration_s", "stale_expectations",
           "interrupted", "error", "y")
#: JSON values whose objects use the records' own field names, so that nested records get exercised too
_FIELDED = st.recursive(st.none() | st.booleans() | st.integers() | st.sampled_from([10**400, -(10**400)])
                        | st.floats() | st.text(max_size=6),
                        lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.sampled_from(_FIELDS), inner, max_size=4), max_leaves=8)
#: a record with every key a case record has (as the writer makes one), then any of them changed, or added
_RECORD = st.builds(lambda changed: {**CASE, **changed},
                    st.fixed_dictionaries({"type": st.sampled_from(["case", "summary", "header", "other"]),
                                           "id": st.text(max_size=4),
                                           "status": st.sampled_from(["passed", "failed",
                                                                      "implementation-defined", "x"])},
                                          optional={k: _FIELDED for k in _FIELDS[2:]}))
_HEADER = st.builds(lambda changed: {**header("fake", "1.0"), **changed},
                    st.fixed_dictionaries({"type": st.just("header"), "format": st.just(FORMAT)},
                                          optional={k: _FIELDED for k in _FIELDS[2:]}))
_LINE = _RECORD.map(json.dumps) | _JSON.map(json.dumps) | st.text(max_size=20)


def _read_or_results_error(path: Path) -> Any:
    try:
        return read(path)
    except ResultsError as e:
        assert str(e).startswith(str(path)) and "\n" not in str(e)
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes_are_read_or_refused_cleanly(tmp_path, data):
    path = tmp_path / "bytes.jsonl"
    path.write_bytes(data)
    _read_or_results_error(path)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(head=_HEADER | _JSON, lines=st.lists(_LINE, max_size=5), cut=st.booleans())
def test_arbitrary_json_lines_are_refused_cleanly_or_rendered(tmp_path, head, lines, cut):
    from qdq_conformance.reports.compliance import render_findings, render_markdown
    from qdq_conformance.reports.diff import diff_records, render_html, render_text
    from qdq_conformance.reports.render import render

    path = tmp_path / "results.jsonl"
    text = "\n".join([json.dumps(head), *lines])
    path.write_text(text if cut else text + "\n", encoding="utf-8")
    got = _read_or_results_error(path)
    if got is None:
        return
    render([got], tmp_path / "report.html")
    render([got, got], tmp_path / "board.html")
    d = diff_records(got, got)
    render_text(d)
    render_html(d, tmp_path / "diff.html")
    render_markdown([got])
    render_findings([got])
    from qdq_conformance.reports.overview import overview
    from qdq_conformance.reports.overview import render_text as findings_text
    from qdq_conformance.reports.overview import to_json as findings_json

    ov = overview(got, got)
    findings_text(got[0], ov, repro=True)
    json.dumps(findings_json(got[0], ov), default=str)
    render([got], tmp_path / "since.html", baseline=got)


_LEAF = st.none() | st.booleans() | st.integers() | st.sampled_from([10**400, 2**1023, -(2**1023) + 1]) \
    | st.floats() | st.text(max_size=4) | st.just([]) | st.just({})
_RIGHT_LEAF = {str: st.text(max_size=4), int: st.integers(), bool: st.booleans(), dict: st.just({}),
               list: st.just([])}


def _right(spec: Spec) -> st.SearchStrategy[Any]:
    """Values that follow ``spec`` (its objects with any of their own fields, its lists of its elements)."""
    if isinstance(spec, tuple):
        return st.one_of([_RIGHT_LEAF[t] for t in spec])
    if isinstance(spec, Number):
        return st.floats() | st.integers(-(2**1000), 2**1000)
    if isinstance(spec, Obj):  # (the keys it must have, each null where the schema gives it no type)
        fields, required = FIELDS[spec.kind], KEYS[spec.kind].required
        return st.fixed_dictionaries({key: _right(fields[key]) if key in fields else st.none()
                                      for key in required},
                                     optional={key: _right(sub) for key, sub in fields.items()
                                               if key not in required})
    inner = _right(spec.spec) | st.none() if spec.nullable else _right(spec.spec)
    if spec.container is dict:
        return st.dictionaries(st.text(max_size=2), inner, max_size=3)
    return st.lists(inner, max_size=3)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value (the value itself included)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return [path] + [p for k, v in items for p in _paths(v, (*path, k))]


#: every field's spec, and every kind of object whole (a record, a preview, a mismatch ...)
_SPECS = [spec for fields in FIELDS.values() for spec in fields.values()] + [Obj(kind) for kind in FIELDS]


@settings(max_examples=1000, deadline=None)
@given(data=st.data())
def test_the_fast_field_check_agrees_with_the_one_that_names_the_problem(data):
    """``valid`` (the compiled pass over every record) and ``check`` (which says what is wrong) are two
    readings of one schema: they accept and refuse the same values. Each example is a value that follows a
    spec, with at most one place in it replaced by any JSON value: where a shortcut in one of the two would
    show."""
    spec = data.draw(st.sampled_from(_SPECS))
    value = data.draw(_right(spec))
    if data.draw(st.booleans()):
        where = data.draw(st.sampled_from(_paths(value)))
        leaf = data.draw(_LEAF)
        if not where:
            value = leaf
        else:
            parent = value
            for k in where[:-1]:
                parent = parent[k]
            parent[where[-1]] = leaf
    if value is None:
        return
    try:
        check(value, spec, "value")
        checked = True
    except ResultsError:
        checked = False
    assert valid(value, spec) is checked, (spec, value)


@pytest.mark.parametrize("kind", sorted(FIELDS))
def test_every_field_of_the_wrong_json_type_is_refused_by_both_checks(kind):
    """Field by field: an object with one field of a JSON type its spec does not allow is refused by ``valid``
    and by ``check`` (which names the field), whichever field it is."""
    samples = ["text", 7, 2.5, True, [], {}, [None], {"k": None}]
    base = dict.fromkeys(KEYS[kind].required)  # (every key it must have, null)
    assert valid(base, Obj(kind))
    for key, spec in FIELDS[kind].items():
        for wrong in samples:
            try:
                check(wrong, spec, key)
                continue  # (a value this field allows)
            except ResultsError:
                pass
            assert not valid({**base, key: wrong}, Obj(kind)), (kind, key, wrong)
            with pytest.raises(ResultsError, match=rf"^{kind}\.{key}"):
                check({**base, key: wrong}, Obj(kind), kind)
