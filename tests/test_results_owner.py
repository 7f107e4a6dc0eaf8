"""The results file has one owner, ``qdq_conformance.results`` (with ``tests/test_layers.py``, which fails on
a module elsewhere that encodes JSON or gzip for what is not on its list):

- the report page's script reads each case under the record's own names: the short names of its embedded
  data are ``results.compact``'s, derived from the record's keys, and the page expands them with the table it
  embeds; the script never decides how a case stands against its entry (``results.standing`` does, and the
  data carries the answer);
- the tests make records through the writer (``tests/results_files.py``): only the tests of hostile input
  write a record's lines by hand.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_type_hints

from qdq_conformance.reports import render
from qdq_conformance.resources import templates_dir
from qdq_conformance.results import CaseRecord
from qdq_conformance.results.compact import short_names

TESTS = Path(__file__).parent
#: the test modules that write records by hand, on purpose: what another tool, an older format or a broken
#: disk writes
HOSTILE = {"test_results_input.py", "test_hostile_runner.py", "test_hostile_inputs.py", "test_lifecycle.py",
           "test_results_owner.py"}


def _script() -> str:
    text = (templates_dir() / "report.html.j2").read_text(encoding="utf-8")
    return text[text.index('qdqUnpack("data"'):]


def test_the_short_names_are_derived_from_the_record_and_unique():
    names = short_names(("standing", "finding", "details"))
    assert list(names)[:len(get_type_hints(CaseRecord))] == list(get_type_hints(CaseRecord))
    assert len(set(names.values())) == len(names)
    assert all(name.startswith(short) for name, short in names.items())
    assert names == render.NAMES


def test_the_page_reads_cases_by_the_records_own_names():
    script = _script()
    read = set(re.findall(r"\br\.([A-Za-z_]\w*)", script))
    assert read <= set(render.NAMES), read - set(render.NAMES)
    assert {"id", "status", "standing", "expectation"} <= read
    short_only = set(render.NAMES.values()) - set(render.NAMES)
    assert not read & short_only


def test_the_page_does_not_decide_how_a_case_stands():
    script = _script()
    # (what the page once did: a case's status against its entry's, or "passed" against a failing entry)
    assert not re.search(r"expectation\.status\s*[!=]==|[!=]==\s*r\.expectation\.status", script)
    assert "r.standing" in script


def _hand_made_records(path: Path) -> list[int]:
    """Lines of dict literals with ``"type": "case"`` (or header, summary): a record written by hand."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if (isinstance(k, ast.Constant) and k.value == "type" and isinstance(v, ast.Constant)
                        and v.value in ("case", "header", "summary")):
                    lines.append(node.lineno)
    return lines


def test_tests_make_records_through_the_writer():
    found = {p.name: lines for p in sorted(TESTS.glob("*.py"))
             if p.name not in HOSTILE and (lines := _hand_made_records(p))}
    assert found == {}, "make records with tests/results_files.py (results.case_record, ResultsWriter)"
    probe = {"type": "case", "id": "a"}  # (this file is on the list: the finder finds this one)
    assert probe and _hand_made_records(Path(__file__))
