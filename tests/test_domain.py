"""The shared vocabulary (conformance/domain.py) and the results-record schema (results/): the enums are
the strings files hold, both kinds of case satisfy the Case protocol, and what a record holds is what the
schema names."""

from __future__ import annotations

import json
from typing import get_type_hints

import pytest

from qdq_conformance.domain import (
    EXPECTABLE,
    FAILING,
    FORMS,
    JUDGED,
    TEMPLATE_GRANULARITIES,
    Case,
    CaseStatus,
    Form,
    GranularityKind,
    RunStatus,
    Tier,
    forms_of,
    tiers_of,
)
from qdq_conformance.generators.corpus import load_file
from qdq_conformance.generators.export import export
from qdq_conformance.generators.file_schemas import schema
from qdq_conformance.opspecs import all_specs
from qdq_conformance.resources import cases_dir
from qdq_conformance.results import FIELDS, KEYS, CaseRecord, encode_record
from qdq_conformance.runner import record
from qdq_conformance.runner.expectations import Expectation
from qdq_conformance.runner.outcome import classify
from qdq_conformance.runner.outputs import RawResult
from qdq_conformance.runner.suite import load_suite


def test_members_are_the_strings_files_hold():
    assert RunStatus.FAILED == "failed" and RunStatus.INVALID_ACCEPTED == "invalid-accepted"
    assert json.dumps({"status": RunStatus.PASSED}) == '{"status": "passed"}'
    assert f"{Form.INITIALIZER}" == str(Form.INITIALIZER) == "initializer"
    assert {RunStatus.ERROR: 1}.get("error") == 1 and "error" in FAILING
    assert (FORMS == ("runtime", "initializer") and forms_of("both") == FORMS
            and forms_of("runtime") == ("runtime",))
    assert (tiers_of("all") == ("default", "large") and tiers_of("large") == ("large",)
            and Tier.DEFAULT == "default")
    assert CaseStatus.values() == ("normative", "implementation-defined", "invalid")
    assert {"failed", "error", "crashed", "timeout", "invalid-accepted"} == FAILING
    assert set(JUDGED) == FAILING | {"passed"} and FAILING | {"unsupported"} == EXPECTABLE
    # (plain, for YAML and xdist)
    assert all(type(s) is str for s in (*FAILING, *JUDGED, *EXPECTABLE, *FORMS))


@pytest.fixture(scope="module")
def cases():
    return load_file(cases_dir() / "dynamic_quantize_linear.yaml")[:3]


def test_both_kinds_of_case_are_a_case(cases, tmp_path):
    export(cases, tmp_path)
    _, suite_cases = load_suite(tmp_path)
    for case in (*cases, *suite_cases):
        assert isinstance(case, Case)
        assert case.spec_text()["text"] and list(case.readings) is not None


def test_a_record_holds_only_what_the_schema_names(cases):
    names = set(get_type_hints(CaseRecord))
    assert set(FIELDS["case"]) <= names
    case = cases[0]
    entry = Expectation("failed", "a reason", None, 7)
    for raw in (RawResult("ok", list(case.expected)), RawResult("error", message="boom")):
        outcome = classify(raw, case_status=case.status, expected=case.expected, ulp=case.ulp,
                           readings=case.readings)
        rec = record.build(case, "runtime", outcome, entry, ("x", "1"), None, case.feeds("runtime"), None)
        assert KEYS["case"].required <= set(rec) <= names, set(rec) ^ names
        assert rec["expectation"] == {"status": "failed", "reason": "a reason", "link": None, "line": 7}
        assert type(rec["status"]) is str
        encode_record(rec)  # (the writer takes it)


def test_the_case_schema_and_the_specs_granularities_are_the_enums():
    """One source for the granularity vocabulary: a case file's kinds are the enum's and per-tensor-1d, and
    every operator version's granularities are members of the enum."""
    assert schema()["$defs"]["granularity"]["properties"]["kind"]["enum"] == list(TEMPLATE_GRANULARITIES)
    assert set(TEMPLATE_GRANULARITIES) > set(GranularityKind.values())
    assert {g for spec in all_specs() for g in spec.granularities} == set(GranularityKind.values())
