"""Every place that says "this element differs" says what the verdict says (issue 30, point 2).

For a table of (type, expected codes, actual codes, ULP bound) with what the comparison must decide element by
element -- NaN payload and sign variants, -0 against +0, float8 NaN / infinity encodings, float4 and float8
signed zeros, bfloat16 / float16 / float32 within and beyond a ULP bound, a NaN or an infinity one code from
the other -- the judge (``runner.outcome.classify``, normative and implementation-defined), the report's
case page (``reports.casepage.page_data``: the rows it marks), ``show`` (its text marks and the ``--repro``
script, run), ``findings`` (a failure's mismatch kind), the fuzzer's signature
(``fuzz.search.signature_parts``) and the generators' "this reading changes the answer"
(``generators.status.changes_answer``) agree with the table.
"""

from __future__ import annotations

import contextlib
import io
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from qdq_conformance.ambiguities import Reading
from qdq_conformance.compare import (
    differing_codes,
    differs,
    from_codes,
    outside_by,
    rule_interval,
    rule_text,
    rule_ulp,
)
from qdq_conformance.domain import CaseStatus, RunStatus
from qdq_conformance.fuzz.search import signature_parts
from qdq_conformance.generators.status import changes_answer
from qdq_conformance.reports.casepage import page_data, render_text
from qdq_conformance.reports.signature import mismatch_kind
from qdq_conformance.runner.execute import CaseResult
from qdq_conformance.runner.outcome import Outcome, classify
from qdq_conformance.runner.outputs import RawResult
from qdq_conformance.runner.record import preview
from qdq_conformance.show_cmd import repro_script

F32_NAN, F32_INF, F32_ONE, F32_MAX = 0x7FC00000, 0x7F800000, 0x3F800000, 0x7F7FFFFF

#: (type, expected codes, actual codes, ULP bound, the elements that differ)
TABLE: list[tuple[str, list[int], list[int], int, list[int]]] = [
    # NaN by class: payload and sign are no difference; a NaN against a number, an infinity or a zero is
    ("float", [F32_NAN, F32_NAN, F32_NAN, F32_ONE], [0x7FC00001, 0xFFC00000, 0x7F800001, F32_ONE], 0, []),
    ("float", [F32_NAN, F32_INF, 0, F32_ONE], [F32_ONE, F32_NAN, F32_NAN, F32_ONE], 0, [0, 1, 2]),
    ("float16", [0x7E00, 0x7E00, 0x3C00], [0x7E01, 0xFE00, 0x7C00], 0, [2]),
    ("bfloat16", [0x7FC0, 0x7FC0, 0x3F80], [0xFFC1, 0x7F81, 0x3F80], 0, []),
    # -0 against +0: exact compares bit patterns
    ("float", [0x80000000, 0, 0x80000000], [0, 0x80000000, 0x80000000], 0, [0, 1]),
    ("float16", [0x8000], [0x0000], 0, [0]),
    ("float4e2m1", [0x8, 0x0, 0x1, 0x7], [0x0, 0x0, 0x1, 0xF], 0, [0, 3]),
    ("float8e4m3fn", [0x80, 0x00], [0x00, 0x00], 0, [0]),
    # float8 NaN and infinity encodings
    ("float8e4m3fn", [0x7F, 0xFF, 0x7E, 0x7F], [0xFF, 0x7F, 0x7F, 0x7E], 0, [2, 3]),
    ("float8e5m2", [0x7D, 0x7E, 0xFF, 0x7C, 0xFC, 0x7C], [0x7E, 0xFD, 0x7D, 0x7C, 0x7C, 0x7D], 0, [4, 5]),
    ("float8e4m3fnuz", [0x80, 0x80, 0x00], [0x80, 0x00, 0x80], 0, [1, 2]),
    ("float8e5m2fnuz", [0x80, 0x7F], [0x80, 0x7E], 0, [1]),
    ("float8e8m0", [0xFF, 0xFF, 0x7F], [0xFF, 0x7F, 0x80], 0, [1, 2]),
    # integers: bit for bit
    ("int8", [0x80, 0x7F, 0x00], [0x7F, 0x7F, 0x01], 0, [0, 2]),
    ("int4", [0x8, 0x7], [0x8, 0xF], 0, [1]),
    # ULP-bounded floats: finite values within the bound match, across zero too; an infinity or a NaN never
    # is within a bound of another code
    ("float", [F32_ONE, F32_ONE, F32_ONE, 0x80000000, 0x00000001],
     [F32_ONE + 2, F32_ONE + 3, F32_ONE - 2, 0, 0x80000001], 2, [1]),
    ("float", [F32_INF, F32_MAX, F32_NAN, F32_INF], [0x7F800001, F32_INF, 0x7FC00001, F32_INF], 1, [0, 1]),
    ("float16", [0x3C00, 0x3C00, 0x7BFF], [0x3C01, 0x3C02, 0x7C00], 1, [1, 2]),
    ("bfloat16", [0x3F80, 0x3F80, 0x7F7F, 0x7F80], [0x3F7F, 0x3F82, 0x7F80, 0x7F81], 1, [1, 2, 3]),
    ("bfloat16", [0x3F80], [0x3F81], 0, [0]),
    # no bound below 16 bits: a float8 one code apart differs whatever the bound
    ("float8e4m3fn", [0x38], [0x39], 3, [0]),
]

IDS = [f"{t}-{'-'.join(f'{c:x}' for c in a)}-ulp{u}" for t, _, a, u, _ in TABLE]


def _arrays(type_name: str, expected: list[int], actual: list[int]) -> tuple[np.ndarray, np.ndarray]:
    return from_codes(type_name, expected), from_codes(type_name, actual)


def _record(e: np.ndarray, a: np.ndarray, ulp: int, outcome: Outcome) -> dict[str, Any]:
    """The results record's fields every view reads, as runner.record writes them."""
    return {"id": "agreement-case", "form": "runtime", "status": str(outcome.status), "backend": "fake",
            "backend_version": "0", "case_status": CaseStatus.NORMATIVE.value, "comparison": rule_text(ulp),
            "message": outcome.message, "expected": [preview(e)], "actual": [preview(a)],
            "mismatches": outcome.mismatch_records(), "inputs": {},
            "repro": _printing(a)}


def _printing(a: np.ndarray) -> str:
    """A backend's repro that prints ``a`` (rebuilt from its bit codes)."""
    dtype = f"np.{a.dtype.name}" if hasattr(np, a.dtype.name) else f"ml_dtypes.{a.dtype.name}"
    return (f"import numpy as np\nimport ml_dtypes\nprint(np.array({_codes(a)}, np.uint32)"
            f".astype(np.uint{a.dtype.itemsize * 8}).view({dtype}))\n")


def _codes(a: np.ndarray) -> list[int]:
    p = preview(a)
    assert p is not None
    return p["codes"]


def _repro_marks(rec: dict[str, Any]) -> tuple[int, list[int]]:
    """Run the ``show --repro`` script of the record (no backend: its repro prints the actual array): its exit
    status and the elements it stars."""
    script = repro_script(rec, folder="/nonexistent")  # (no corpus case: it checks the record's preview)
    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out):
        try:
            exec(compile(script, "<repro>", "exec"), {"__name__": "__main__"})
        except SystemExit as e:
            code = int(e.code or 0)
    starred = [int(line.split("[")[1].split("]")[0]) for line in out.getvalue().splitlines()
               if line.startswith("  * [")]
    return code, starred


@pytest.mark.parametrize(("type_name", "expected", "actual", "ulp", "want"), TABLE, ids=IDS)
def test_every_view_says_what_the_verdict_says(type_name: str, expected: list[int], actual: list[int],
                                               ulp: int, want: list[int]) -> None:
    e, a = _arrays(type_name, expected, actual)
    assert [int(j) for j in np.flatnonzero(differs(e, a, ulp))] == want  # the comparison itself

    # the judge, a normative case
    outcome = classify(RawResult("ok", [a]), case_status=CaseStatus.NORMATIVE, expected=[e], ulp=ulp)
    assert outcome.status == (RunStatus.FAILED if want else RunStatus.PASSED)
    if want:
        ((_, m),) = outcome.mismatches
        assert [i[0] for i in m.indices] == want and m.count == len(want)
    # the judge, an implementation-defined case whose one reading is the expected outputs
    reading = Reading("nan-to-integer", "zero-point", (e,))
    judged = classify(RawResult("ok", [a]), case_status=CaseStatus.IMPLEMENTATION_DEFINED, expected=[e],
                      ulp=ulp, readings=[reading])
    assert judged.status == (RunStatus.FAILED if want else RunStatus.IMPLEMENTATION_DEFINED)
    assert judged.reading == (None if want else "nan-to-integer:zero-point")
    # the generators: does a reading with the actual values change the kernel's answer (exact, as readings
    # are compared)
    if ulp == 0:
        assert changes_answer(Reading("nan-to-integer", "lower-bound", (a,)), [e]) == bool(want)

    rec = _record(e, a, ulp, outcome)
    # the previews' comparison, the report's case page and show's text
    assert differing_codes(type_name, expected, type_name, actual, rule_ulp(rec["comparison"])) == want
    (table,) = page_data(rec)["table"]
    assert [j for j, row in enumerate(table) if row[8]] == want
    shown = [int(line.split()[1]) for line in render_text(rec).splitlines() if line.startswith("  * ")]
    assert shown == want
    # show --repro's own check, run
    code, starred = _repro_marks(rec)
    assert (code, starred) == (1 if want else 0, want)
    # findings and the fuzzer classify failures only, with the judge's mismatches
    assert bool(mismatch_kind(rec)) == bool(want)  # type: ignore[arg-type]
    case = SimpleNamespace(attrs={}, granularity="per-tensor", detail={}, output_names=["y"],
                           inputs=[("x", np.zeros(len(expected)))], domain="ai.onnx", op="QuantizeLinear",
                           version=21, types={})
    result = CaseResult(str(outcome.status), outcome.message, "", outcome=outcome)
    kind = signature_parts(case, "runtime", result)["mismatch"]  # type: ignore[arg-type]
    assert kind == ("failed: values (x finite)" if want else "passed")


def test_findings_kind_reads_the_verdicts_differing_elements() -> None:
    """A failure's kind comes from the elements the verdict marks: a NaN whose payload alone changed is not
    one of them; a case whose only differing element is one code off reads as such."""
    e, a = _arrays("int8", [1, 5], [2, 5])
    outcome = classify(RawResult("ok", [a]), case_status=CaseStatus.NORMATIVE, expected=[e])
    assert mismatch_kind(_record(e, a, 0, outcome)) == "off by one"  # type: ignore[arg-type]
    e, a = _arrays("float", [F32_NAN, F32_ONE], [0xFFC00001, F32_INF])
    outcome = classify(RawResult("ok", [a]), case_status=CaseStatus.NORMATIVE, expected=[e])
    rec = _record(e, a, 0, outcome)
    assert [j for j, row in enumerate(page_data(rec)["table"][0]) if row[8]] == [1]
    assert mismatch_kind(rec) == "infinity"  # type: ignore[arg-type]


def test_the_rule_text_round_trips() -> None:
    assert [rule_text(0), rule_text(3), rule_text(2, must_reject=True)] == ["exact", "ulp<=3", "must-reject"]
    assert [rule_ulp(rule_text(n)) for n in (0, 1, 7)] == [0, 1, 7]
    assert [rule_ulp(t) for t in (None, "", "must-reject", "ulp<=x", "ulp<=-1")] == [0, 0, 0, 0, 0]


# --- the interval rule (issue 36): every view judges an element within its acceptable values
# ---------------------------------------------------------------------------------------------

#: (type, expected codes, low codes, high codes, actual codes, the elements outside)
INTERVALS: list[tuple[str, list[int], list[int], list[int], list[int], list[int]]] = [
    # uint8 codes: 2 and 3 acceptable at [0]; one code at [1] (bit for bit); [2] one below, [3] one above
    ("uint8", [2, 7, 5, 9], [2, 7, 5, 8], [3, 7, 6, 9], [3, 7, 4, 10], [2, 3]),
    # int8: the order of values, not of codes (-1 is 0xff): [-2, -1] holds -1 and -2, not 0 or 1
    ("int8", [0xFE, 0xFE, 0xFE, 0x01], [0xFE, 0xFE, 0xFE, 0xFF], [0xFF, 0xFF, 0xFF, 0x01],
     [0xFF, 0x00, 0xFE, 0x80], [1, 3]),
    # float32: inside the interval, at its ends, a zero end accepting either sign, a NaN never
    ("float", [F32_ONE, F32_ONE, 0, F32_ONE], [F32_ONE - 2, F32_ONE - 2, 0x80000000, F32_ONE - 2],
     [F32_ONE + 1, F32_ONE + 1, 0, F32_ONE + 1], [F32_ONE - 2, F32_ONE + 2, 0x80000000, F32_NAN], [1, 3]),
    # a single acceptable float zero compares bit for bit
    ("float", [0, 0x3F000000], [0, 0x3F000000], [0, 0x3F000000], [0x80000000, 0x3F000000], [0]),
]


@pytest.mark.parametrize(("type_name", "expected", "low", "high", "actual", "want"), INTERVALS,
                         ids=[f"interval-{t}-{k}" for k, (t, *_) in enumerate(INTERVALS)])
def test_every_view_judges_an_interval_as_the_verdict(type_name: str, expected: list[int], low: list[int],
                                                      high: list[int], actual: list[int],
                                                      want: list[int]) -> None:
    e, a = _arrays(type_name, expected, actual)
    bounds = (from_codes(type_name, low), from_codes(type_name, high))
    assert [int(j) for j in np.flatnonzero(differs(e, a, bounds=bounds))] == want
    outcome = classify(RawResult("ok", [a]), case_status=CaseStatus.NORMATIVE, expected=[e], bounds=[bounds])
    assert outcome.status == (RunStatus.FAILED if want else RunStatus.PASSED)
    if want:
        ((_, m),) = outcome.mismatches
        assert [i[0] for i in m.indices] == want and "outside the acceptable values" in str(m)
    rec = _record(e, a, 0, outcome)
    rec["comparison"] = rule_text(0, interval=True)
    rec["expected"] = [preview(e, bounds=bounds)]
    assert rec["expected"][0]["low"] == low and rec["expected"][0]["high"] == high
    assert differing_codes(type_name, expected, type_name, actual, 0, (low, high)) == want
    data = page_data(rec)
    (table,) = data["table"]
    assert data["acceptable"] and [j for j, row in enumerate(table) if row[8]] == want
    assert all(row[10] for row in table)  # every row says what is acceptable ...
    far = outside_by(bounds, a)  # ... and where an actual value outside it falls (by value: no signed zero)
    assert [j for j, row in enumerate(table) if "above" in row[10] or "below" in row[10]] == \
        [j for j in want if far[j] == far[j] and far[j] != 0]
    text = render_text(rec)
    assert [int(line.split()[1]) for line in text.splitlines() if line.startswith("  * ")] == want
    assert "acceptable" in text
    code, starred = _repro_marks(rec)
    assert (code, starred) == (1 if want else 0, want)
    assert bool(mismatch_kind(rec)) == bool(want)  # type: ignore[arg-type]


def test_the_interval_rule_text_round_trips() -> None:
    assert rule_text(0, interval=True) == "interval" and rule_interval("interval")
    assert not rule_interval("exact") and rule_ulp("interval") == 0
