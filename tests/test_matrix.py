"""``qdq-conformance matrix`` end to end on fake releases (no network): a test backend whose behaviour differs
per release (``tests.fake_backends.Versioned``), each release "installed" by an environment maker that only
sets ``$QDQ_TEST_RELEASE``; the history table's first bad / first good, the kept subsets, and the expectation
file written by version range then checked on every release."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from qdq_conformance import compliance_cmd
from qdq_conformance.cli import build_parser
from qdq_conformance.matrix import matrix_cmd as matrix_cli
from qdq_conformance.matrix.environments import Environment
from qdq_conformance.matrix.releases import Distribution, ReleaseError, expand, newest_of_each_minor
from qdq_conformance.reports import release_table as history
from qdq_conformance.results import header
from qdq_conformance.results.merge import load_run
from qdq_conformance.runner.expectations import load

from .results_files import record

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "tests" / "data" / "runner_cases"
FAKE = Distribution("python:tests.fake_backends:versioned", "versioned-fake")
OFFERED = ["2.0.1", "2.0.0", "1.5.0", "1.0.2", "1.0.1", "0.9.0", "2.1.0rc1"]


class FakeReleases:
    """Each release's "environment": this Python, the release in ``$QDQ_TEST_RELEASE``."""

    def __init__(self) -> None:
        self.made: list[str] = []

    def make(self, dist, version):
        self.made.append(version)
        path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        return Environment(sys.executable, {"QDQ_TEST_RELEASE": version, "PYTHONPATH": path},
                           f"fake release {version}")


def _matrix(tmp_path, *extra, maker=None):
    args = build_parser().parse_args(["matrix", "--backend", "versioned", "--versions", ">=1.0",
                                      "--out", str(tmp_path / "out"), "-n", "1", "--form", "runtime",
                                      *extra, "--", "--cases", str(SMALL), "-p", "no:cacheprovider"])
    return matrix_cli.run(args, maker=maker or FakeReleases(), dist=FAKE, available=OFFERED)


def test_a_range_is_the_newest_patch_of_each_minor_release_a_list_as_given():
    assert expand(">=1.0", lambda: OFFERED) == ["1.0.2", "1.5.0", "2.0.1"]
    assert expand(">=1.0,<2", lambda: OFFERED) == ["1.0.2", "1.5.0"]
    assert expand("2.0.0, 1.0.1", lambda: OFFERED) == ["1.0.1", "2.0.0"]
    assert newest_of_each_minor(["1.16.3", "1.16.10", "1.17.0"]) == ["1.16.10", "1.17.0"]
    # floor: the newest patch of the oldest minor release the tool's requirement allows; newest: the newest
    assert expand("floor,newest", lambda: OFFERED, floor=">=1.0") == ["1.0.2", "2.0.1"]
    assert expand("floor", lambda: OFFERED, floor=">=1.5") == ["1.5.0"]
    for bad, said in (("3.0.0", "not offered"), (">=5", "no release in that range"),
                      ("soon", "not a release"),
                      (">=1.0,,latest", "not a list of releases nor a PEP 440 range")):
        with pytest.raises(ReleaseError, match=said):
            expand(bad, lambda: OFFERED)


def test_matrix_on_three_fake_releases_writes_first_bad_and_first_good(tmp_path, capsys):
    maker = FakeReleases()
    assert _matrix(tmp_path, "--keep", str(tmp_path / "kept"), maker=maker) == 1  # no expectations: failures
    assert maker.made == ["1.0.2", "1.5.0", "2.0.1"]
    out = tmp_path / "out"
    runs = [load_run([out / f"python_tests.fake_backends_versioned-{v}.jsonl"]) for v in maker.made]
    assert [r[0]["backend_version"] for r in runs] == maker.made
    h = history.history(runs)
    assert [r.version for r in h.releases] == maker.made
    rows = {("basic" if "off by one" in r.description or "basic" in r.description else "huge"): r
            for r in h.rows}
    off = next(r for r in h.rows if any("basic" in c for c, _ in r.cases))
    huge = next(r for r in h.rows if any("saturation-huge" in c for c, _ in r.cases))
    assert len(rows) == 2 == len(h.rows)
    assert (off.first_bad, off.since_first, off.first_good) == ("1.0.2", True, "2.0.1")
    assert off.cells == [history.BAD, history.BAD, history.GOOD]
    assert (huge.first_bad, huge.since_first, huge.first_good) == ("1.5.0", False, None)
    assert huge.cells == [history.GOOD, history.BAD, history.BAD]  # reworded per release: one row
    text = (out / "matrix.md").read_text()
    assert f"| {off.id}: " in text and "| &lt;= 1.0.2 | 2.0.1 |" in text
    assert "| 1.5.0 | (still fails) |" in text
    page = (out / "matrix.html").read_text()
    assert off.id in page and "<th>2.0.1</th>" in page
    # the kept subsets give the same table, from the case-forms some release fails only
    kept = sorted((tmp_path / "kept").glob("*.jsonl.gz"))
    assert len(kept) == 3
    again = history.history([load_run([p]) for p in kept])
    assert [(r.id, r.cells, r.first_bad, r.first_good) for r in again.rows] == \
        [(r.id, r.cells, r.first_bad, r.first_good) for r in h.rows]
    assert [r.counts for r in again.releases] == [r.counts for r in h.releases]
    assert sum(len(load_run([p])[1]) for p in kept) < sum(len(r[1]) for r in runs)
    assert "exit 1" in capsys.readouterr().err
    # the compliance page's history section, from the kept files
    section = compliance_cmd.histories(tmp_path / "kept")
    assert section.startswith("## python_tests.fake_backends_versioned across releases\n")
    assert f"| {off.id}: " in section and "| &lt;= 1.0.2 | 2.0.1 | 2 | 2 | ok |" in section


def test_matrix_writes_expectations_by_range_and_each_release_then_exits_0(tmp_path, capsys):
    exp = tmp_path / "versioned.yaml"
    exp.write_text("# hand-written header comment\nbackend: versioned\nmeasured: [\"1.0.2\"]\nentries:\n"
                   "  - cases: \"quantizelinear-13-basic-*-int8*\"\n    status: failed\n"
                   "    reason: off by one, by hand\n"
                   "  - cases: \"quantizelinear-13-nothing-*\"\n    status: failed\n    reason: stale\n")
    assert _matrix(tmp_path, "--expectations", str(exp), "--write-expectations") == 0
    text = exp.read_text()
    assert text.startswith("# hand-written header comment\n")
    assert 'measured: ["1.0.2", "1.5.0", "2.0.1"]' in text
    assert "off by one, by hand" in text and "reason: stale" not in text  # kept, and removed
    e = load(exp, "2.0.1")
    assert [x.reason for x in e.entries if "by hand" in x.reason] == []  # fixed in 2.0.1
    basic = next(x for x in load(exp, "1.0.2").entries if "by hand" in x.reason)
    assert basic.measured == ("1.0.2", "1.5.0") and 'measured: "<2.0.1"' in text
    new = [x for x in e.entries if x.reason.startswith(matrix_cli.expectations_writer.MARK)]
    assert len(new) == 1 and new[0].status == "error" and new[0].measured == ("1.5.0", "2.0.1")
    assert 'measured: ">=1.5.0"' in text
    # checked: every release's run with the written file exits 0
    assert _matrix(tmp_path, "--expectations", str(exp)) == 0


def _rec(case_id, status, message=""):
    return record(case_id, status, message=message, operator="QuantizeLinear", domain="ai.onnx", version=21,
                  family="f", granularity="per-tensor", types={"x": "float", "y_scale": "float", "y": "int8"})


def _run(version, *records):
    head = {**header("b", version), "started": "2026-11-28T00:00:00"}
    return head, list(records), {"counts": {}, "exitstatus": 0}


def test_a_finding_gone_because_its_cases_are_unsupported_or_fail_otherwise_is_not_fixed():
    """First good is a release on which the finding's cases pass: not one that declines them, nor one on
    which they fail under another signature."""
    h = history.history([
        _run("1.0", _rec("a", "crashed"), _rec("b", "crashed"), _rec("c", "passed")),
        _run("2.0", _rec("a", "unsupported"), _rec("b", "timeout"), _rec("c", "passed")),
        _run("3.0", _rec("a", "unsupported"), _rec("b", "passed"), _rec("c", "timeout")),
    ])
    crash, timeout = (next(r for r in h.rows if r.key[4] == s) for s in ("crashed", "timeout"))
    assert crash.cells == [history.BAD, history.OTHER, history.GOOD]  # b passes on 3.0
    assert (crash.first_bad, crash.first_good) == ("1.0", "3.0")
    assert timeout.cells == [history.GOOD, history.BAD, history.BAD]
    assert (timeout.first_bad, timeout.first_good) == ("2.0", None)
    only_a = history.history([_run("1.0", _rec("a", "crashed")), _run("2.0", _rec("a", "unsupported"))])
    assert only_a.rows[0].cells == [history.BAD, history.UNSUPPORTED] and only_a.rows[0].first_good is None
    assert history.first_good_text(only_a.rows[0]) == "(not judged since)"


def test_written_entries_name_cases_by_globs_that_take_only_theirs():
    from qdq_conformance.matrix.expectations_writer import compress

    universe = {"q-21-a-x", "q-21-a-y", "q-21-b-x", "q-21-b-y-z", "q-22-a-x", "q-21-c-f16-f", "q-21-d-f16-f",
                "q-21-d-f32-f"}
    assert compress({"q-21-a-x", "q-21-a-y", "q-21-b-y-z"}, universe) == ["q-21-a-*", "q-21-b-y-z"]
    assert compress({"q-21-a-x", "q-21-a-y"} | {"q-21-c-f16-f", "q-21-d-f16-f"}, universe) == \
        ["q-21-*-f16-f", "q-21-a-*"]  # first and last parts kept
    assert compress({"q-21-a-x", "q-21-a-y", "q-21-b-x"}, universe) in (["q-21-*-x", "q-21-a-y"],
                                                                         ["q-21-a-*", "q-21-b-x"])
    assert compress({"q-21-a-x", "q-21-b-x"}, universe) == ["q-21-*-x"]
    # (every glob of these takes another id too)
    assert compress({"q-21-a-y", "q-21-d-f16-f"}, universe) == ["q-21-a-y", "q-21-d-f16-f"]
    assert compress({"q-21-a-x", "q-22-a-x"}, universe) == ["q-21-a-x", "q-22-a-x"]  # never q-*


def test_a_broad_entry_is_not_widened_to_a_release_a_narrow_entry_explains(tmp_path):
    """On 2.0 the mixed-types deviation is fixed (mixed-a passes) while mixed-precision16 still errs, as the
    narrow entry in force on every release says: the broad entry ahead of it, which also matches
    mixed-precision16, must stay at 1.0 (widened to 2.0, mixed-a would pass against it there)."""
    from qdq_conformance.matrix.expectations_writer import write

    exp = tmp_path / "b.yaml"
    exp.write_text('backend: b\nmeasured: ["1.0", "2.0"]\nentries:\n'
                   '  - cases: "quantizelinear-21-mixed-*"\n    status: error\n    measured: ["1.0"]\n'
                   '    reason: broad, mixed types\n'
                   '  - cases: "quantizelinear-21-mixed-precision16"\n    status: error\n'
                   '    reason: narrow, precision 16\n')
    runs = [_run("1.0", _rec("quantizelinear-21-mixed-a", "error"),
                 _rec("quantizelinear-21-mixed-precision16", "error")),
            _run("2.0", _rec("quantizelinear-21-mixed-a", "passed"),
                 _rec("quantizelinear-21-mixed-precision16", "error"))]
    write("b", str(exp), runs)
    assert [x.reason for x in load(exp, "2.0").entries] == ["narrow, precision 16"]
    assert [x.reason for x in load(exp, "1.0").entries][:1] == ["broad, mixed types"]  # (first, as before)
