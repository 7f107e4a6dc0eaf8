"""ONNX Runtime's floor (the oldest release the tool runs on, measured: docs/backends.md) and what an old
release lacks: said by pyproject.toml and the backend alike, and asked of ONNX Runtime, not read from its
messages."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import tomllib
from onnx import TensorProto, helper

from qdq_conformance.backends import ort_probe
from qdq_conformance.backends.base import Unsupported
from qdq_conformance.backends.builtin import ORT_FLOOR, below_floor, version_tuple
from qdq_conformance.backends.kits import ort as ort_kit
from qdq_conformance.types import TYPES, bit_patterns, code_of

ROOT = Path(__file__).resolve().parents[1]


def test_pyproject_says_the_floor_the_backend_enforces():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    spec = next(d for d in deps if re.match(r"onnxruntime\b", d))
    assert spec == f"onnxruntime>={'.'.join(map(str, ORT_FLOOR))}", spec
    assert below_floor(ort.__version__) is None
    floor = ".".join(map(str, ORT_FLOOR))
    assert below_floor(f"{floor}.0") is None and below_floor(f"{ORT_FLOOR[0]}.{ORT_FLOOR[1] - 1}.9")
    assert version_tuple("1.20.0.dev20240101+cu12") == (1, 20, 0)


def test_tensor_sizes_are_computed_as_ort_lays_tensors_out():
    """``OrtValue.tensor_size_in_bytes`` arrived in 1.23: the size comes from shape and type, and agrees with
    ONNX's packing and with ORT's own count where it has one."""
    for t in TYPES.values():
        if t.name in ("float6e2m3", "float6e3m2") or t.dtype in ort_kit.NATIVE:
            continue
        for shape in ([], [1], [3], [2, 3], [5, 1]):
            value = ort.OrtValue.ortvalue_from_shape_and_type(shape, t.proto)
            size = ort_kit.packed_size(t.proto, shape)
            if hasattr(value, "tensor_size_in_bytes"):
                assert size == value.tensor_size_in_bytes(), (t.name, shape)
            codes = bit_patterns(t)
            array = np.resize(codes, shape) if shape else codes[min(1, len(codes) - 1)].reshape(())
            back = ort_kit.from_ortvalue(ort_kit.to_ortvalue(array))
            assert back.shape == array.shape, (t.name, shape)
            assert np.array_equal(code_of(back), code_of(array)), (t.name, shape)


def test_a_granularity_listed_but_not_implemented_is_unsupported(monkeypatch):
    """ORT 1.18 lists QuantizeLinear-21 and runs it per tensor and per axis, not blockwise: asked with the
    plainest blocked model (here the run of that probe is made to fail as 1.18's does)."""
    ort_probe.blocked_refusal.cache_clear()
    assert ort_probe.blocked_refusal("QuantizeLinear", 21) is None  # (the installed release implements it)
    run = ort_probe._session

    def as_118(model, feeds=None):
        if feeds is not None:
            return "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : scale must be 1D tensor with size 4"
        return run(model)

    monkeypatch.setattr(ort_probe, "_session", as_118)
    ort_probe.blocked_refusal.cache_clear()
    model = helper.make_model(helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=1, block_size=2)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 4])],
        [onnx.numpy_helper.from_array(np.ones([2, 2], np.float32), "s")]),
        opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    try:
        decided = ort_probe.decide_run(model)
    finally:
        ort_probe.blocked_refusal.cache_clear()
    assert isinstance(decided, Unsupported)
    assert "does not implement blocked quantization in QuantizeLinear-21" in str(decided)


def test_a_type_a_graphs_other_node_lacks_is_unsupported_and_one_onnx_forbids_is_not():
    """A graph case's Transpose of a type ONNX allows and the release lacks (float4e2m1 at opset 23 here;
    float8 in 1.17) is unsupported with the probe's reason, whatever the refusal's words; a type ONNX's own
    schema forbids leaves the refusal a rejection."""
    def graph(elem: int, opset: int) -> onnx.ModelProto:
        nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
                 helper.make_node("Transpose", ["q"], ["t"], perm=[1, 0]),
                 helper.make_node("DequantizeLinear", ["t", "s", "z"], ["y"])]
        z = helper.make_tensor("z", elem, [], [0])
        return helper.make_model(helper.make_graph(
            nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])],
            [onnx.numpy_helper.from_array(np.ones([], np.float32), "s"), z]),
            opset_imports=[helper.make_opsetid("", opset)], ir_version=helper.find_min_ir_version_for(
                [helper.make_opsetid("", opset)]))
    said = ort_probe.decide(graph(TensorProto.FLOAT4E2M1, 23), RuntimeError("any words at all"))
    assert isinstance(said, Unsupported)
    assert "does not implement Transpose-23 for tensor(float4e2m1)" in str(said)
    # Transpose-13 (opset 19) does not allow float8: ONNX forbids it, so refusing it is no lack of the backend
    assert ort_probe._node_refusals(graph(TensorProto.FLOAT8E4M3FN, 19), {"": 19}) is None


def test_the_ortvalue_probe_asks_the_way_values_are_made():
    """Before 1.20 an OrtValue is made from numpy types only: the probe makes numpy's own types from a numpy
    array (a float feed is never "unsupported"), and says the API is missing for the others."""
    ort_probe.ortvalue_refusal.cache_clear()
    assert ort_probe.ortvalue_refusal(TensorProto.FLOAT) is None
    assert ort_probe.ortvalue_refusal(TensorProto.FLOAT8E4M3FN) is None  # (1.20 on)
