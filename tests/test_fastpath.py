"""The runner's one shortcut through pytest (``conformance/plugin/fastpath.py``) reports what pytest's own
protocol reports, report by report, under the oldest pytest the project supports and under the installed one.

Each run is a corpus run of ``tests/data/runner_cases`` against a misbehaving backend (failures, a crash, an
unsupported case, an accepted invalid model), with expectations that turn failures into xfail, pass against
one (xpass, or ``[XPASS(strict)]``), name the wrong status, and a conftest-style skip marker on one item. The
same run with a foreign marker on every item (``--probe-full``: pytest's full protocol) must end the same:
every report's outcome, expected-failure reason and longrepr, pytest's final line, the JUnit XML, the results
file, and where ``-x`` / ``--maxfail`` stop.

The oldest pytest (the floor of the package's ``pytest>=...`` requirement, latest patch release) is installed
with pip into a temporary folder put first on ``PYTHONPATH``. Without the network the test is skipped, except
under CI (the ``CI`` or ``QDQ_REQUIRE_OLDEST_PYTEST`` environment variable set), where that is a failure.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "data" / "runner_cases"
FAKE = "python:tests.fake_backends:make"
EXPECTATIONS = (
    "backend: misbehaving\nentries:\n"
    "  - cases: 'quantizelinear-*-basic-float-int8'\n    status: failed\n    reason: off by one\n"
    "  - cases: 'quantizelinear-13-basic-float-uint8'\n    status: failed\n    reason: was broken once\n"
    "  - cases: 'quantizelinear-13-ties-near-bounds-*'\n    status: error\n    reason: wrong status\n")
#: (pytest arguments, whether the run goes to its end) per scenario
SCENARIOS = {
    "expectations": (["-k", "not nan and not signed", "-rA"], True),
    "strict-maxfail": (["--strict-expectations", "--maxfail=2", "-rA"], False),
    "exitfirst": (["-x", "--form", "runtime"], False),
}


def corpus_run(tmp_path: Path, env: dict[str, str], mode: str, args: list[str]) -> dict[str, object]:
    exp = tmp_path / "exp.yaml"
    exp.write_text(EXPECTATIONS)
    junit, results, dump = (tmp_path / f"{mode}.{ext}" for ext in ("xml", "jsonl", "json"))
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--cases", str(CASES),
           f"--backend={FAKE}", "--expectations", str(exp), "-p", "tests.protocol_probe", "--probe-reports",
           str(dump), "--probe-skip", "saturation-huge-float-int8[initializer]", f"--junitxml={junit}",
           "--results", str(results), *args, *(["--probe-full"] if mode == "full" else [])]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    lines = p.stdout.splitlines()
    probe = [ln for ln in lines if ln.startswith("probe: ")]
    assert len(probe) == 2, p.stdout[-3000:] + p.stderr[-3000:]
    k = max(i for i, ln in enumerate(lines) if ln.startswith("=") and "qdq-conformance:" in ln)
    records = [json.loads(x) for x in results.read_text().splitlines()]
    return {
        "exit": p.returncode,
        "final line": lines[k - 1].strip("= ").split(" in ")[0],  # (without the duration)
        "reports": json.loads(dump.read_text()),
        "junit": sorted(_junit(junit)),
        "results": sorted((r["id"], r["form"], r["status"]) for r in records if r["type"] == "case"),
        "unexpected": [ln for ln in lines if ln.startswith(("FAILED", "XPASS", "XFAIL", "ERROR"))],
        "probe": probe,
    }


def _junit(path: Path) -> list[tuple[str, list[tuple[str, str]]]]:
    out = []
    for tc in ET.parse(path).getroot().iter("testcase"):
        kids = sorted((k.tag, k.get("message") or "") for k in tc if k.tag in ("failure", "error", "skipped"))
        out.append((tc.get("name") or "", kids))
    return out


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_shortcut_reports_what_pytests_protocol_reports(tmp_path, which_pytest, scenario):
    env, version = which_pytest
    args, to_the_end = SCENARIOS[scenario]
    seen = {mode: corpus_run(tmp_path, env, mode, args) for mode in ("fast", "full")}
    fast, full = seen["fast"], seen["full"]
    assert fast["probe"][1] == full["probe"][1] == f"probe: pytest {version}"
    # the shortcut ran (no per-phase hook for any corpus item but the marker-skipped one), the full protocol
    # did not
    assert fast["probe"][0].startswith("probe: setup hooks 0, "), fast["probe"]
    assert not full["probe"][0].startswith("probe: setup hooks 0, "), full["probe"]
    assert "locations differ 0, gc on True" in fast["probe"][0]
    for key in ("exit", "final line", "reports", "junit", "results", "unexpected"):
        assert fast[key] == full[key], (key, version)
    outcomes = {(r[1], r[2], r[3] is not None) for r in fast["reports"]}
    assert fast["exit"] == 1
    if to_the_end:  # every kind of report: xfailed, xpassed, skipped by a marker (no record), failed
        assert {("call", "skipped", True), ("call", "passed", True), ("setup", "skipped", False),
                ("call", "failed", False)} <= outcomes, outcomes
        assert (len(fast["results"]) == 13 and "xfailed" in fast["final line"]
                and "xpassed" in fast["final line"])
    else:  # -x / --maxfail stopped the run early, at the same item
        assert len(fast["results"]) < 13, fast["results"]
    if scenario == "strict-maxfail":
        assert any("[XPASS(strict)]" in r[4] for r in fast["reports"]) or len(fast["results"]) < 13


#: pytest internals the plugin once leaned on, each with what replaced it (see the modules' docstrings)
UNDOCUMENTED = {
    "known_args_namespace": "pytest_load_initial_conftests' args, changed in place",
    "config.args =": "the corpus folder added to the arguments",
    "own_markers.extend": "Node.add_marker",
    "own_markers.append": "Node.add_marker",
    "pytest.TestReport(": "the pytest_runtest_makereport hook",
    "config.option.": "config.getoption",
    "testscollected": "pytest_collection_finish / pytest-xdist's pytest_xdist_node_collection_finished",
    ".location.func": "super().location",
    "import _pytest": "the pytest namespace",
    "from _pytest": "the pytest namespace",
    "wasxfail": "pytest_report_teststatus's category; only the shortcut writes it",
    '"workerinput"': "distributed.is_worker",
    '"numprocesses"': "distributed.is_controller",
}


def test_only_the_shortcut_module_relies_on_pytest_beyond_its_documented_api():
    plugin = ROOT / "conformance" / "plugin"
    found = []
    for path in sorted(plugin.glob("*.py")):
        allowed = {"fastpath.py": {"wasxfail"},
                   "distributed.py": {'"workerinput"', '"numprocesses"'}}.get(path.name, set())
        code = "\n".join(ln.split("#")[0] for ln in path.read_text().splitlines())
        found += [(path.name, name) for name in UNDOCUMENTED if name not in allowed and name in code]
    assert found == [], [(f, n, UNDOCUMENTED[n]) for f, n in found]
