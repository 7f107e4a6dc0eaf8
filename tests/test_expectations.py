"""Expectation files: exact ids and globs, per-form entries, errors that name the line."""

from __future__ import annotations

import pytest

from qdq_conformance.runner.expectations import ExpectationError, load


def _write(tmp_path, body):
    p = tmp_path / "e.yaml"
    p.write_text("backend: x\nversions: '1.2.*'\nentries:\n" + body)
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
    assert load(p, "2.0").entries == []  # another version: no expectations


def test_the_first_matching_entry_wins_whatever_its_kind(tmp_path):
    """Entries are looked up through an index (exact ids in a dict, globs in one regex); the answer must be the
    first entry in file order that matches, as a scan of the entries gives."""
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


@pytest.mark.parametrize("body, message", [
    ("  - cases: a\n    status: failed\n    reason: r\n    forms: [both]\n", "forms must be"),
    ("  - cases: a\n    status: fine\n    reason: r\n", "status must be"),
    ("  - cases: a\n    status: failed\n", "needs 'cases' and a 'reason'"),
    ("  - cases: a\n    status: failed\n    reason: r\n    typo: 1\n", "unknown key"),
])
def test_bad_entries_name_their_line(tmp_path, body, message):
    with pytest.raises(ExpectationError, match=message) as info:
        load(_write(tmp_path, body), "1.2.3")
    assert ":4:" in str(info.value)


def test_a_thousand_exact_ids_stay_fast(tmp_path):
    ids = [f"quantizelinear-21-case-{k}" for k in range(5000)]
    p = _write(tmp_path, "  - cases:\n" + "".join(f"      - {i}\n" for i in ids) +
               "    status: failed\n    reason: many\n")
    e = load(p, "1.2.3")
    assert all(e.lookup(i) is not None for i in ids[::50]) and e.lookup("quantizelinear-21-case-x") is None
