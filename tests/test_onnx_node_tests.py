"""ONNX's own node tests for these operators, reproduced bit for bit at every version where the model is
valid.

ONNX tests only the newest version; here the same model is re-targeted to every earlier opset of its operator
and must give the same expected outputs wherever the kernel accepts it (a version where the model's types or
attributes are not allowed raises SpecViolation, which is checked to be a type / attribute / shape rule).
"""

from __future__ import annotations

import copy

from qdq_conformance import opspecs
from qdq_conformance.compare import compare
from qdq_conformance.errors import SpecViolation
from qdq_conformance.reference import run

from .conftest import as_array

# Rules that legitimately make an ONNX test model invalid at an older version.
_OLDER_VERSION_RULES = {"QDQ002", "QDQ005", "QDQ009"}


def _retarget(model, version):
    m = copy.deepcopy(model)
    for imp in m.opset_import:
        if imp.domain in ("", "ai.onnx"):
            imp.version = version
    return m


def test_collects_every_onnx_qdq_node_test(onnx_node_cases):
    names = {c.name for c in onnx_node_cases}
    # The families ONNX 1.23 ships; a missing one means the collection silently broke.
    for expected in ("test_quantizelinear", "test_dequantizelinear_e4m3fn", "test_quantizelinear_int2",
                     "test_dequantizelinear_blocked", "test_dynamicquantizelinear",
                     "test_quantizelinear_float4e2m1"):
        assert expected in names
    assert len(onnx_node_cases) >= 25


def test_kernel_reproduces_onnx_node_tests_at_every_valid_version(onnx_node_cases):
    checked = 0
    failures = []
    for case in onnx_node_cases:
        node = case.model.graph.node[0]
        valid_versions = []
        for version in opspecs.versions("", node.op_type):
            model = _retarget(case.model, version)
            for inputs, outputs in case.data_sets:
                feeds = {i.name: as_array(a) for i, a in zip(model.graph.input, inputs, strict=False)}
                try:
                    got = run(model, feeds)
                except SpecViolation as e:
                    assert e.rule in _OLDER_VERSION_RULES, f"{case.name}@{version}: {e}"
                    break
                valid_versions.append(version)
                for k, (exp, act) in enumerate(zip(outputs, got, strict=True)):
                    mismatch = compare(as_array(exp), act)
                    if mismatch:
                        failures.append(f"{case.name}@{version} output {k}: {mismatch}")
                    checked += 1
        newest = opspecs.versions("", node.op_type)[-1]
        assert newest in valid_versions, f"{case.name} is rejected at the newest version {newest}"
    assert not failures, "\n".join(failures)
    assert checked > 60
