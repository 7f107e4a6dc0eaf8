"""Boundary-derived inputs (generators/boundaries.py, dq_boundaries.py, labels.py): every boundary really is
one (the oracle answers differently on either side of it), labels say where an element sits, and they survive
into the results record and the failure text."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qdq_conformance import opspecs
from qdq_conformance.generators import boundaries as bnd
from qdq_conformance.generators.boundaries import SCALE_RECIPES, TARGETS, overflow_threshold, realize
from qdq_conformance.generators.expand import Template, expand
from qdq_conformance.generators.file_schemas import schema
from qdq_conformance.generators.labels import labels
from qdq_conformance.generators.values import X_RECIPES, ZP_RECIPES, Ctx, to_type
from qdq_conformance.reference import evaluate
from qdq_conformance.reference.arith import F32, round_to
from qdq_conformance.types import TYPES

ROOT = Path(__file__).resolve().parents[1]
F = TYPES["float"]


def test_schema_recipe_vocabulary_is_the_registries():
    enum = schema()["$defs"]["value"]["properties"]["recipe"]["enum"]
    assert set(enum) == set(X_RECIPES) | set(TARGETS) | set(SCALE_RECIPES) | set(ZP_RECIPES)
    assert len(enum) == len(set(enum))


def _quantize(x: np.ndarray, scale: float, y: str, version: int = 25, saturate: int = 1) -> np.ndarray:
    zp = to_type(np.array([0.0]), TYPES[y]).reshape(())
    attrs = {} if TYPES[y].is_integer else {"saturate": saturate}
    return evaluate("ai.onnx", "QuantizeLinear", version, [x, to_type(np.array([scale]), F).reshape(()), zp],
                    attrs)[0]


@pytest.mark.parametrize("y", ["int8", "uint8", "int4", "uint2", "int16"])
def test_integer_ties_are_boundaries_with_inexact_quotients(y):
    ctx = Ctx("Q", F, F, TYPES[y], 0.1, 0.0)
    t = TARGETS["boundary-ties"](ctx)
    s = to_type(np.array([0.1]), F).reshape(())
    x = realize(t, F, s, None, F32, (len(t.r),))
    out = _quantize(x, 0.1, y).astype(np.int64)
    lab = labels("ai.onnx", "QuantizeLinear", 25, [x, s, to_type(np.array([0.0]), TYPES[y]).reshape(())], {},
                 [(i,) for i in range(x.size)])
    assert lab is not None
    checked = 0
    for k in range(0, len(t.r), 3):  # each tie: -1 ULP, on it, +1 ULP
        below, on, above = lab[k:k + 3]
        if not (below.endswith("-1ulp") or "-1ulp," in below) or "+1ulp" not in above:
            continue  # x's type could not land one ULP away: the label says where it is instead
        lo, hi = TYPES[y].int_min, TYPES[y].int_max
        tie = t.r[k]
        if lo <= tie - 0.5 and tie + 0.5 <= hi:  # inside the range: the two sides round apart
            assert out[k] != out[k + 2], (y, tie, below, above)
            checked += 1
        if on.startswith("tie ") and "ulp" not in on.split(",")[0]:
            assert out[k + 1] % 2 == 0 or out[k + 1] in (lo, hi), (y, tie, on)  # ties to even
    assert checked >= 2
    assert any("quotient inexact" in s for s in lab)


@pytest.mark.parametrize("y", ["float8e4m3fn", "float8e5m2"])
def test_saturate0_threshold_is_a_boundary(y):
    t = TYPES[y]
    thr = overflow_threshold(t)
    x = np.array([thr, thr], np.float32)
    below = np.nextafter(x, -np.inf).astype(np.float32)
    above = np.nextafter(x, np.inf).astype(np.float32)
    out_below = _quantize(below, 1.0, y, saturate=0).astype(np.float32)
    out_above = _quantize(above, 1.0, y, saturate=0).astype(np.float32)
    assert out_below[0] == t.max_finite
    assert not np.isfinite(out_above[0])
    assert _quantize(above, 1.0, y, saturate=1).astype(np.float32)[0] == t.max_finite
    lab = labels("ai.onnx", "QuantizeLinear", 25, [above, np.array(1.0, np.float32),
                                                   to_type(np.array([0.0]), t).reshape(())], {"saturate": 0},
                 [(0,)])
    assert lab is not None and f"saturate=0 threshold {thr:g}" in lab[0] and y in lab[0]


def test_float_ties_round_apart_and_name_double_rounding():
    y = TYPES["float8e4m3fn"]
    ctx = Ctx("Q", F, F, y, 1.0, 0.0)
    t = TARGETS["boundary-ties"](ctx)
    s = np.array(1.0, np.float32)
    x = realize(t, F, s, None, F32, (len(t.r),))
    q = x.astype(np.float64)
    for k in range(0, len(t.r), 3):
        assert round_to(q[k:k + 1], y)[0] != round_to(q[k + 2:k + 3], y)[0]  # either side of a tie
    lab = labels("ai.onnx", "QuantizeLinear", 25, [x, s, to_type(np.array([0.0]), y).reshape(())], {},
                 [(i,) for i in range(x.size)])
    assert lab is not None and any("rounds otherwise through float16" in s for s in lab)


def test_specials_fall_on_every_axis_position_and_the_last_element():
    spec = opspecs.get("ai.onnx", "QuantizeLinear", 25)
    ctx = Ctx("Q", F, F, TYPES["int4"], 0.1, 3.0)
    for n in (7, 8, 9, 15, 16, 17, 31, 32, 33):
        scale = to_type(np.array([0.1]), F).reshape(())
        x = bnd.place("boundary-specials", ctx, spec, (n,), scale, None, {})
        assert x is not None and not np.isfinite(x[-1]) or abs(float(x[-1])) in (0.0, float(F.max_finite))
    x = bnd.place("boundary-specials", ctx, spec, (2, 3, 4), to_type(np.full(3, 0.1), F), None, {"axis": 1})
    assert x is not None
    a = np.abs(x.astype(np.float64))
    special = np.isinf(a) | (a == float(F.max_finite)) | (a == 0)
    for axis in range(3):
        moved = np.moveaxis(special, axis, 0)
        for pos in (0, x.shape[axis] // 2, x.shape[axis] - 1):
            assert np.any(moved[pos]), (axis, pos)
    assert np.isinf(a).sum() >= 2


def test_dequantize_codes_find_ties_and_float32_double_rounding():
    from qdq_conformance.generators.dq_boundaries import critical_codes

    ctx = Ctx("DQ", TYPES["int16"], TYPES["float16"], TYPES["float16"], float(np.float16(0.1)), -32768.0)
    r = critical_codes(ctx)
    assert r is not None
    codes = np.array(r.values)
    x = codes.astype(np.int16)
    s = np.array(0.1, np.float16)
    lab = labels("ai.onnx", "DequantizeLinear", 25, [x, s, np.array(-32768, np.int16)], {},
                 [(i,) for i in range(x.size)])
    assert lab is not None
    assert any("outside int16" in s for s in lab)
    assert any("rounds otherwise through float" in s for s in lab)
    big = critical_codes(Ctx("DQ", TYPES["int16"], TYPES["float16"], TYPES["float16"], 3.0, 0.0))
    assert big is not None
    xb = np.array(big.values).astype(np.int16)
    lab = labels("ai.onnx", "DequantizeLinear", 25, [xb, np.array(3.0, np.float16), np.array(0, np.int16)],
                 {}, [(i,) for i in range(xb.size)])
    assert lab is not None and any("product overflows float16" in s for s in lab)


def test_case_files_expand_and_stay_normative_where_no_ambiguity_applies():
    from qdq_conformance.generators.loader import load_yaml
    from qdq_conformance.resources import cases_dir

    doc = load_yaml(cases_dir() / "quantize_boundaries.yaml")
    tpl = next(t for t in doc["cases"] if t["id"] == "bnd-ties")
    cases = expand(Template(tpl, "quantize_boundaries.yaml"))
    plain = [c for c in cases if c.types["x"] == "float" and c.types["scale"] == "float"]
    assert plain and all(c.status == "normative" for c in plain)
    c = next(c for c in plain if c.id == "quantizelinear-21-bnd-ties-float-int8")
    got = c.x_labels([(0,), (1,), (2,)])
    assert got is not None and got[1].startswith("tie -128.5") and "quotient inexact" in got[1]


def test_labels_reach_the_results_record_and_the_failure_text(tmp_path):
    case_dir = tmp_path / "cases"
    case_dir.mkdir()
    (case_dir / "b.yaml").write_text((ROOT / "cases" / "quantize_boundaries.yaml").read_text().split(
        "\n  - id: bnd-ties-float")[0] + "\n")
    res = tmp_path / "r.jsonl"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--cases", str(case_dir),
           "--backend=python:tests.boundary_backends:make", "--form", "runtime", "--results", str(res),
           "-k", "quantizelinear-21-bnd-ties-float-int8", "-q"]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-2000:]
    assert "[tie " in p.stdout and "quotient inexact" in p.stdout, p.stdout[-3000:]
    recs = [json.loads(x) for x in res.read_text().splitlines()]
    failed = [r for r in recs if r.get("type") == "case" and r["status"] == "failed"]
    assert failed and all(m.get("labels") for r in failed for m in r["mismatches"])
    m = failed[0]["mismatches"][0]
    assert len(m["labels"]) == len(m["first_indices"]) and m["labels"][0].startswith("tie ")
