"""Expectation files: exact ids and globs, per-form entries, errors that name the line; entries recorded per
backend version, the newest-recorded fallback and how it is said; stale entries and new failures."""

from __future__ import annotations

import re

import pytest

from qdq_conformance import cpu as cpu_mod
from qdq_conformance.results.tally import needs_attention, summary_lines
from qdq_conformance.runner import expectations as expectations_mod
from qdq_conformance.runner.expectations import (
    ExpectationError,
    Expectations,
    Tracker,
    find,
    load,
    resolve,
    version_key,
)


def _write(tmp_path, body, head="measured: ['1.2.3']\n"):
    p = tmp_path / "e.yaml"
    p.write_text("backend: x\n" + head + "entries:\n" + body)
    return p


def test_exact_ids_globs_and_forms(tmp_path):
    p = _write(tmp_path, """
  - cases: ["quantizelinear-21-a", "quantizelinear-2[3-5]-b-*"]
    status: failed
    reason: r1
  - cases: dequantizelinear-21-c
    status: error
    forms: [initializer]
    reason: r2
""")
    e = load(p, "1.2.3")
    assert e.lookup("quantizelinear-21-a").reason == "r1"
    assert e.lookup("quantizelinear-21-a-longer") is None  # an exact id is not a prefix
    assert e.lookup("quantizelinear-24-b-x").reason == "r1" and e.lookup("quantizelinear-26-b-x") is None
    assert e.lookup("dequantizelinear-21-c", "initializer").reason == "r2"
    assert e.lookup("dequantizelinear-21-c", "runtime") is None
    assert load(p, "1.2.0").entries == []  # older than every recorded version: no expectations


def test_the_first_matching_entry_wins_whatever_its_kind(tmp_path):
    """Entries are looked up through an index (exact ids in a dict, globs in one regex); the answer must be
    the first entry in file order that matches, as a scan of the entries gives."""
    p = _write(tmp_path, """
  - cases: "q-*-x"
    status: failed
    forms: [runtime]
    reason: glob-runtime
  - cases: ["q-1-x", "q-2-y"]
    status: error
    reason: exact
  - cases: "q-?-*"
    status: crashed
    reason: glob-any
  - cases: "q-2-y"
    status: timeout
    reason: shadowed
""")
    e = load(p, "1.2.3")
    for case_id in ("q-1-x", "q-2-y", "q-3-x", "q-3-z", "q-12-x", "r-1-x", "q-2-y-z"):
        for form in (None, "runtime", "initializer"):
            scan = next((x for x in e.entries if x.matches(case_id, form)), None)
            assert e.lookup(case_id, form) is scan, (case_id, form)
    assert e.lookup("q-1-x", "runtime").reason == "glob-runtime"
    assert e.lookup("q-1-x", "initializer").reason == "exact"
    assert e.lookup("q-3-z", "initializer").reason == "glob-any"
    assert e.lookup("q-12-x", "initializer") is None


@pytest.mark.parametrize("body, message, line", [
    ("  - cases: a\n    status: failed\n    reason: r\n    forms: [both]\n", "forms must be", 7),
    ("  - cases: a\n    status: fine\n    reason: r\n", "status must be", 5),
    ("  - cases: a\n    status: failed\n", "needs 'cases' and a 'reason'", 4),
    ("  - cases: a\n    status: failed\n    reason: r\n    typo: 1\n", "unknown key", 7),
    ("  - cases: a\n    status: failed\n    reason: r\n    cpu: avx512f\n", "cpu must map processor features",
     7),
    ("  - cases: a\n    status: failed\n    reason: r\n    cpu: {avx512f: 1}\n",
     "cpu must map processor features", 7),
    ("  - cases: a\n    status: failed\n    reason: r\n    cpu: {AVX-512: true}\n", "cpu must map processor",
     7),
    ("  - cases: a\n    status: failed\n    reason: r\n    cpu: {}\n", "cpu must map processor features", 7),
    ("  - cases: [a, 3]\n    status: failed\n    reason: r\n", "cases must be case-id patterns", 4),
])
def test_bad_entries_name_their_line(tmp_path, body, message, line):
    """One line naming the file, the line of the key that is wrong (of the entry when a key is missing), its
    key path and the problem: the expectation-file schema, as the loader applies it."""
    with pytest.raises(ExpectationError, match=message) as info:
        load(_write(tmp_path, body), "1.2.3")
    assert f"e.yaml:{line}: entries[0]" in str(info.value) and "\n" not in str(info.value)


def test_the_schema_and_the_registries_share_their_vocabularies():
    from qdq_conformance.domain import EXPECTABLE, FORMS
    from qdq_conformance.generators.file_schemas import expectation_schema

    entry = expectation_schema()["$defs"]["entry"]["properties"]
    assert set(entry["status"]["enum"]) == set(EXPECTABLE)
    assert set(entry["forms"]["oneOf"][0]["enum"]) == set(FORMS)


def test_every_bundled_expectation_file_follows_the_schema():
    from qdq_conformance.generators.file_schemas import check_document, expectation_schema
    from qdq_conformance.generators.loader import EXPECTATION_FILE, load_yaml
    from qdq_conformance.resources import expectations_dir

    files = sorted(expectations_dir().glob("*.yaml"))
    assert len(files) >= 5
    for path in files:
        check_document(load_yaml(path, limits=EXPECTATION_FILE), expectation_schema(), path)


def test_a_thousand_exact_ids_stay_fast(tmp_path):
    ids = [f"quantizelinear-21-case-{k}" for k in range(5000)]
    p = _write(tmp_path, "  - cases:\n" + "".join(f"      - {i}\n" for i in ids) +
               "    status: failed\n    reason: many\n")
    e = load(p, "1.2.3")
    assert all(e.lookup(i) is not None for i in ids[::50]) and e.lookup("quantizelinear-21-case-x") is None


# --- versions
# -----------------------------------------------------------------------------------------------------

VERSIONED = """
  - cases: "q-fixed-in-2"
    status: failed
    reason: fixed in 2.0
    measured: ["1.2.3"]
  - cases: "q-everywhere"
    status: error
    reason: on every recorded version
  - cases: "q-new-in-2"
    status: failed
    reason: appeared in 2.0
    measured: "2.0.0"
"""


def _versioned(tmp_path):
    return _write(tmp_path, VERSIONED, head="measured: ['1.2.3', '2.0.0']\n")


def test_version_order_is_pep440_like():
    ordered = ["0.9", "1.2.dev1", "1.2rc1", "1.2", "1.2.0.post1", "1.2.1", "1.10.0", "1.10.0+ort1.31.1",
               "1.10.0+ort1.32.0", "2026.4.1"]
    assert sorted(ordered, key=version_key) == ordered
    assert version_key("1.2") == version_key("1.2.0") and version_key("v1.2.0") == version_key("1.2")
    assert (version_key("unknown") is None and version_key("not installed") is None
            and version_key(None) is None)


@pytest.mark.parametrize("running, applied, mode", [
    ("1.2.3", "1.2.3", "exact"), ("2.0", "2.0.0", "exact"),
    ("2.1.0", "2.0.0", "newer"), ("2.0.1.dev3", "2.0.0", "newer"),
    ("1.5.0", "1.2.3", "between"), ("2.0.0rc1", "1.2.3", "between"),
    ("1.2.2", None, "older"), ("unknown", "2.0.0", "unknown"), (None, "2.0.0", "unknown"),
])
def test_which_recorded_version_a_run_is_judged_against(running, applied, mode):
    assert resolve(["2.0.0", "1.2.3"], running) == (applied, mode)
    assert resolve([], running) == (None, "unversioned")


def test_entries_in_force_follow_their_measured_versions(tmp_path):
    p = _versioned(tmp_path)

    def reasons(version):
        return [e.reason for e in load(p, version).entries]

    assert reasons("1.2.3") == ["fixed in 2.0", "on every recorded version"]
    assert reasons("2.0.0") == ["on every recorded version", "appeared in 2.0"]
    assert reasons("1.4") == reasons("1.2.3")  # between: the nearest older recorded version
    assert reasons("3.0") == reasons("2.0.0")  # newer: the newest recorded version
    assert reasons("1.0") == []  # older than everything recorded: nothing applies
    e = load(p, "2.0.0")
    assert e.lookup("q-fixed-in-2") is None and e.lookup("q-new-in-2").reason == "appeared in 2.0"
    a = e.applicability
    assert ((a.applied, a.mode, a.in_force, a.total, a.recorded)
            == ("2.0.0", "exact", 2, 3, ("1.2.3", "2.0.0")))


def test_an_entry_measured_on_a_range_holds_on_the_files_versions_within_it(tmp_path):
    """``measured: ">=1.17,<1.20"`` (PEP 440): the entry holds on the recorded versions the range takes, and a
    release between two recorded ones is judged as the older one is."""
    p = _write(tmp_path, """
  - cases: "q-fixed-in-1.20"
    status: failed
    reason: broken until 1.20
    measured: "<1.20"
  - cases: "q-broke-in-1.18"
    status: error
    reason: broken from 1.18 on
    measured: ">=1.18.1"
  - cases: "q-only-1.18-and-1.19"
    status: error
    reason: two releases
    measured: ">=1.18,<1.20,!=1.18.0"
""", head="measured: ['1.17.3', '1.18.1', '1.19.2', '1.20.1', '1.21.0']\n")

    def reasons(version):
        return [e.reason for e in load(p, version).entries]

    assert reasons("1.17.3") == ["broken until 1.20"]
    assert reasons("1.18.1") == ["broken until 1.20", "broken from 1.18 on", "two releases"]
    assert reasons("1.19.2") == reasons("1.18.1")
    assert reasons("1.20.1") == ["broken from 1.18 on"] == reasons("1.22.0")  # newer: the newest recorded
    assert reasons("1.19.0") == reasons("1.18.1")  # between: the nearest older recorded release
    e = load(p, "1.20.1")
    assert [x.measured for x in e.entries] == [("1.18.1", "1.19.2", "1.20.1", "1.21.0")]


@pytest.mark.parametrize(("features", "reasons", "other"), [
    (frozenset({"avx512f", "avx2"}), ["anywhere", "with avx512f"], 2),
    (frozenset({"avx2"}), ["anywhere", "without avx512f", "without avx512f and with avx2"], 1),
    (frozenset(), ["anywhere", "without avx512f"], 2),
])
def test_entries_recorded_for_a_processor_hold_only_on_one_like_it(tmp_path, monkeypatch, features, reasons,
                                                                   other):
    """An entry with ``cpu`` is in force only where the processor's features are as it says; the applicability
    names the features the file's entries name and counts the entries left out for this processor."""
    monkeypatch.setattr(expectations_mod, "cpu_features", lambda: features)
    p = _write(tmp_path, "  - cases: a\n    status: failed\n    reason: anywhere\n"
                         "  - cases: b\n    status: failed\n    reason: with avx512f\n    cpu: {avx512f: "
                         "true}\n  - cases: b\n    status: error\n    reason: without avx512f\n    cpu: "
                         "{avx512f: false}\n  - cases: c\n    status: error\n    reason: without avx512f and "
                         "with avx2\n    cpu: {avx512f: false, avx2: true}\n")
    e = load(p, "1.2.3")
    assert [x.reason for x in e.entries] == reasons
    a = e.applicability
    assert a is not None and a.other_cpu == other
    assert dict(a.cpu) == {"avx2": "avx2" in features, "avx512f": "avx512f" in features}
    status = e.status()
    assert status["cpu"] == dict(a.cpu) and status["other_cpu"] == a.other_cpu
    line = summary_lines(status, None)[0]
    assert "this processor: avx2 " + ("yes" if "avx2" in features else "no") in line
    assert f"({other} entries recorded for another processor not in force)" in line


def test_the_processor_features_are_read_from_the_system(tmp_path, monkeypatch):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: X\nflags\t\t: fpu sse2 avx2 avx512f\n\nprocessor\t: 1\n")
    monkeypatch.setattr(cpu_mod, "CPUINFO", info)
    cpu_mod.cpu_features.cache_clear()
    try:
        assert cpu_mod.cpu_features() == frozenset({"fpu", "sse2", "avx2", "avx512f"})
        cpu_mod.cpu_features.cache_clear()
        monkeypatch.setattr(cpu_mod, "CPUINFO", tmp_path / "missing")
        assert cpu_mod.cpu_features() == frozenset()
    finally:
        cpu_mod.cpu_features.cache_clear()


def test_a_file_without_versions_applies_whatever_the_version(tmp_path):
    p = _write(tmp_path, "  - cases: a\n    status: failed\n    reason: r\n", head="")
    for version in ("0.1", "99", "unknown"):
        e = load(p, version)
        assert len(e.entries) == 1 and e.applicability.mode == "unversioned"


@pytest.mark.parametrize("head, body, message", [
    ("versions: '1.2.*'\n", "  - cases: a\n    status: failed\n    reason: r\n", "replaced by 'measured'"),
    ("measured: ['1.2.3']\n", "  - cases: a\n    status: failed\n    reason: r\n    measured: ['1.3']\n",
     "names a version the file's measured list"),
    ("measured: ['1.2.3']\n", "  - cases: a\n    status: failed\n    reason: r\n    measured: ['latest']\n",
     "measured must list backend versions"),
    ("measured: [soon]\n", "  - cases: a\n    status: failed\n    reason: r\n", "measured must list"),
    ("measured: ['1.2.3']\n", "  - cases: a\n    status: failed\n    reason: r\n    measured: '>=2'\n",
     "takes none of the file's measured versions"),
    ("", "  - cases: a\n    status: failed\n    reason: r\n    measured: '<2'\n",
     "a range needs the file to list them"),
    ("measured: '>=1.2'\n", "  - cases: a\n    status: failed\n    reason: r\n", "measured must list"),
])
def test_bad_versions_are_one_line_errors(tmp_path, head, body, message):
    with pytest.raises(ExpectationError, match=message) as info:
        load(_write(tmp_path, body, head=head), "1.2.3")
    assert "\n" not in str(info.value)


def test_newer_version_applies_the_newest_entries_and_says_so(tmp_path):
    e = load(_versioned(tmp_path), "2.1.0", "x")
    status = e.status()
    assert needs_attention(status)
    text = summary_lines(status, None)[0]
    assert "EXPECTATIONS NOT RECORDED FOR x 2.1.0" in text and "newer than every version" in text
    assert "the 2 entries recorded for the newest, 2.0.0, are applied" in text and "1.2.3, 2.0.0" in text


@pytest.mark.parametrize("version, words", [
    ("1.0", "older than every version"), ("1.5", "nearest older version, 1.2.3"),
    ("unknown", "not comparable")])
def test_unrecorded_versions_are_said_clearly(tmp_path, version, words):
    status = load(_versioned(tmp_path), version, "x").status()
    assert needs_attention(status) and words in summary_lines(status, None)[0]
    assert "EXPECTATIONS NOT RECORDED FOR x" in summary_lines(status, None)[0]


def test_a_recorded_version_is_not_shouted(tmp_path):
    status = load(_versioned(tmp_path), "1.2.3", "x").status()
    assert not needs_attention(status)
    assert summary_lines(status, None) == [
        f"expectations: {tmp_path / 'e.yaml'}, 2 of 3 entries in force, recorded for x 1.2.3 (recorded "
        "versions: 1.2.3, 2.0.0)"]


def test_stale_entries_held_entries_and_new_failures(tmp_path):
    p = _write(tmp_path, """
  - cases: "held-*"
    status: failed
    reason: r
  - cases: "fixed-*"
    status: failed
    reason: r
  - cases: "gone"
    status: error
    reason: r
  - cases: "other-*"
    status: error
    reason: r
  - cases: "old"
    status: failed
    reason: r
    measured: ["1.0"]
  - cases: "runtime-only"
    status: failed
    forms: [runtime]
    reason: r
""", head="measured: ['1.0', '2.0']\n")
    e = load(p, "2.0")
    assert [x.line for x in e.entries] == [5, 8, 11, 14, 21]  # "old" (measured on 1.0 only) is not in force
    lines = {x.patterns[0]: x.line for x in e.entries}
    # held-*: one case as recorded, one fixed; fixed-*: every case passes or is unsupported; other-*: another
    # failing status; gone and runtime-only: no case matched.
    tracker = Tracker()
    for status, entry, expected in [("failed", "held-*", "failed"), ("passed", "held-*", "failed"),
                                    ("passed", "fixed-*", "failed"), ("unsupported", "fixed-*", "failed"),
                                    ("crashed", "other-*", "error")]:
        tracker.note(f"{entry}1", "runtime", status, expected, lines[entry])
    # 1 failed as recorded (held-*), 1 crashed where error was recorded, 3 failures no entry covers
    for status, n in {"failed": 1, "error": 2, "passed": 7, "unsupported": 3}.items():
        for i in range(n):
            tracker.note(f"new-{status}-{i}", "runtime", status, None, None)
    assert tracker.counts == {"failed": 2, "crashed": 1, "error": 2, "passed": 9, "unsupported": 4}
    stale = tracker.stale(e, subset=False, forms={"runtime", "initializer"})
    assert [(x.patterns[0], why) for x, why in stale] == [
        ("fixed-*", "its cases pass or are unsupported now"), ("gone", "matches no collected case"),
        ("runtime-only", "matches no collected case")]
    assert ([x.patterns[0] for x, _ in tracker.stale(e, subset=False, forms={"initializer"})]
            == ["fixed-*", "gone"])
    assert [x.patterns[0] for x, _ in tracker.stale(e, subset=True, forms={"runtime"})] == ["fixed-*"]
    fixed = Tracker()
    fixed.note("fixed-1", "runtime", "passed", "failed", lines["fixed-*"])
    assert [x.patterns[0] for x, _ in fixed.stale(e, True, ["runtime"])] == ["fixed-*"]
    assert fixed.stale(e, True, ["runtime"])[0][1] == "all its cases pass now"
    tally = tracker.tally(e, stale=3)
    assert tally == {"in_force": 5, "held": 1, "stale": 3, "changed": 1, "new_failures": 4,
                     "unexpected_passes": 2, "harness_errors": 0}
    text = summary_lines(e.status(), tally)[1]
    assert (text
            == ("of the 5 entries in force: 1 held, 3 stale, 1 ended in another failing status; 4 failing "
                "case(s) are new (no entry, or another status), 2 case(s) passed against their entry"))


def test_no_expectations_file_is_said_too(tmp_path):
    e = find("no-such-backend", "1.0")
    assert (e.entries == []
            and summary_lines(e.status(), None) == ["expectations: none for no-such-backend 1.0"])
    assert summary_lines(Expectations().status("ort", "1.32.0"), {"in_force": 0, "held": 0, "stale": 0,
                                                                   "changed": 0, "new_failures": 3,
                                                                   "unexpected_passes": 0})[1] == \
        "3 failing case(s), none covered by an expectation"


@pytest.mark.parametrize("name", ["ort", "onnx-reference", "openvino", "quark", "tvm"])
def test_bundled_files_record_their_versions(name):
    e = find(name, "unknown")
    a = e.applicability
    assert a.recorded and a.mode == "unknown" and a.in_force > 0
    assert all(len(x.reason) > 40 for x in e.entries)


def _results_file(path, status, tally):
    from qdq_conformance.results import header

    from .results_files import entry, record, write

    head = header("x", "2.1.0", {"expectations": status and status.get("path")}
                  | ({"expectations_status": status} if status else {}))
    case = record("q-new-in-2", "failed", operator="QuantizeLinear", domain="ai.onnx", version=21,
                  types={"x": "float", "y": "int8"}, case_status="normative",
                  expectation=entry("failed", 12, "appeared in 2.0"))
    return write(path, [case], head, {"counts": {"failed": 1}, **({"expectations": tally} if tally else {})})


def test_report_header_says_which_version_the_expectations_were_recorded_for(tmp_path):
    from qdq_conformance.reports.render import render_files

    e = load(_versioned(tmp_path), "2.1.0", "x")
    tracker = Tracker()
    tracker.note("q-new-in-2", "runtime", "failed", "failed", 12)
    tally = tracker.tally(e, stale=1)
    html = render_files([_results_file(tmp_path / "r.jsonl", e.status(), tally)],
                        tmp_path / "r.html").read_text()
    banner = re.search(r'<p class="attention" id="expectations-attention">(.*?)</p>', html, re.S)
    assert banner is not None
    text = banner.group(1).replace("<br>", "\n")
    assert "EXPECTATIONS NOT RECORDED FOR x 2.1.0: it is newer than every version" in text
    assert "the 2 entries recorded for the newest, 2.0.0, are applied" in text
    assert "of the 2 entries in force: 1 held, 1 stale; 0 failing case(s) are new" in text
    assert "EXPECTATIONS NOT RECORDED" in re.search(r'id="expectations-status">(.*?)</td>', html,
                                                    re.S).group(1)
    # a recorded version: the meta table says it, without the banner
    e = load(_versioned(tmp_path), "2.0.0", "x")
    html = render_files([_results_file(tmp_path / "r.jsonl", e.status(), None)],
                        tmp_path / "r.html").read_text()
    assert 'id="expectations-attention"' not in html
    assert "2 of 3 entries in force, recorded for x 2.0.0" in html
    # a results file written before versions were recorded still names its file
    html = render_files([_results_file(tmp_path / "r.jsonl", None, None)], tmp_path / "r.html").read_text()
    assert 'id="expectations-attention"' not in html and 'id="expectations-status">none' in html


def test_a_run_on_a_newer_version_says_so_on_the_terminal_and_in_the_results(tmp_path):
    """End to end: the bundled-style file records an older version of the backend than the one that runs; the
    run applies the newest recorded entries and says so in its summary, and the results file keeps it."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    exp = tmp_path / "exp.yaml"
    exp.write_text("backend: oracle\nmeasured: ['0.0.1']\nentries:\n"
                   "  - cases: 'quantizelinear-13-basic-float-int8'\n    status: failed\n    reason: once "
                   "broken\n")
    res = tmp_path / "r.jsonl"
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--cases",
                        str(root / "tests" / "data" / "runner_cases"), "--backend=oracle", "--form",
                        "runtime", "--expectations", str(exp), "--results", str(res)],
                       cwd=root, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:]
    assert "EXPECTATIONS NOT RECORDED FOR oracle" in p.stdout and "newest, 0.0.1, are applied" in p.stdout
    assert "of the 1 entries in force: 0 held, 1 stale; 0 failing case(s) are new" in p.stdout
    lines = [json.loads(x) for x in res.read_text().splitlines()]
    assert lines[0]["expectations_status"]["mode"] == "newer"
    assert lines[0]["expectations_status"]["applied"] == "0.0.1"
    assert lines[-1]["expectations"] == {"in_force": 1, "held": 0, "stale": 1, "changed": 0,
                                         "new_failures": 0, "unexpected_passes": 1, "harness_errors": 0}
