"""The checker's loader under arbitrary input (Hypothesis): random bytes, byte-level mutations of a valid
model and structural mutations (a tensor's type, dims, data or storage, an attribute, an opset, an operator, a
node's inputs, a declared shape) end in a report or in :class:`Unreadable` with a one-line message, never in
another exception. Bounded examples: the three tests take seconds."""

from __future__ import annotations

import tempfile
from pathlib import Path

import onnx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import AttributeProto, TensorProto, helper

from qdq_conformance.checker import Unreadable, check_file

from .test_hostile_models import GOOD, SCALE, _model


def _check_bytes(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        path.write_bytes(data)
        (Path(tmp) / "s.bin").write_bytes(SCALE.tobytes())
        try:
            check_file(path)
        except Unreadable as e:
            assert "\n" not in str(e) and str(e)


_FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)


@_FUZZ
@given(st.binary(max_size=600))
def test_arbitrary_bytes_never_raise_another_exception(data):
    _check_bytes(data)


ATTRIBUTE_TYPES = list(AttributeProto.AttributeType.values())


def _mutated(m: onnx.ModelProto, draw: st.DrawFn) -> onnx.ModelProto:
    """A structural mutation: a tensor's type, dims, data or storage; an attribute; an opset; an input
    name."""
    small = st.integers(-(2**63), 2**63 - 1) | st.integers(-3, 40)
    t = draw(st.sampled_from(list(m.graph.initializer)))
    kinds = ["type", "dims", "raw", "external", "attr", "opset", "input", "value_info", "operator"]
    kind = draw(st.sampled_from(kinds))
    if kind == "type":
        t.data_type = draw(st.integers(0, 40))
    elif kind == "dims":
        del t.dims[:]
        t.dims.extend(draw(st.lists(small, max_size=3)))
    elif kind == "raw":
        t.raw_data = draw(st.binary(max_size=40))
    elif kind == "external":
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        keys = st.sampled_from(["location", "offset", "length", "checksum", ""])
        values = st.sampled_from(["s.bin", "../s.bin", "/dev/zero", ".", "-1", "0", "16", "8", "x",
                                  str(2**64)])
        for key, value in draw(st.lists(st.tuples(keys, values), max_size=4)):
            t.external_data.add(key=key, value=value)
    elif kind == "attr":
        node = draw(st.sampled_from(list(m.graph.node)))
        name = draw(st.sampled_from(["axis", "block_size", "saturate", "output_dtype", "precision"]))
        value = draw(small | st.floats(allow_nan=True) | st.text(max_size=3) | st.lists(st.integers(-2, 2)))
        node.attribute.append(helper.make_attribute(name, value) if value != [] else
                              AttributeProto(name=name, type=draw(st.sampled_from(ATTRIBUTE_TYPES))))
    elif kind == "opset":
        m.opset_import.add(domain=draw(st.sampled_from(["", "ai.onnx", "com.microsoft"])),
                           version=draw(small))
    elif kind == "operator":
        node = draw(st.sampled_from(list(m.graph.node)))
        node.domain = draw(st.sampled_from(["", "ai.onnx", "com.microsoft", "com.amd.quark"]))
        node.op_type = draw(st.sampled_from(["QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                                             "ExtendedQuantizeLinear", "ExtendedDequantizeLinear"]))
        m.opset_import.add(domain=node.domain, version=draw(st.integers(-1, 30)))
    elif kind == "input":
        node = draw(st.sampled_from(list(m.graph.node)))
        keep = draw(st.integers(0, 4))
        names = [*node.input, "", "x", "nowhere", "q"][:keep]
        del node.input[:]
        node.input.extend(names)
    else:
        dims = m.graph.input[0].type.tensor_type.shape.dim
        dims[draw(st.integers(0, 1))].dim_value = draw(small)
    return m


@_FUZZ
@given(st.data())
def test_mutated_models_never_raise_another_exception(data):
    m = _model()
    for _ in range(data.draw(st.integers(1, 3))):
        m = _mutated(m, data.draw)
    _check_bytes(m.SerializeToString())


@_FUZZ
@given(st.data())
def test_byte_mutated_models_never_raise_another_exception(data):
    raw = bytearray(GOOD)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        op = data.draw(st.sampled_from(["flip", "cut", "insert", "truncate"]))
        if op == "flip":
            raw[at] ^= data.draw(st.integers(1, 255))
        elif op == "cut":
            del raw[at:at + data.draw(st.integers(1, 8))]
        elif op == "insert":
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=8))
        else:
            del raw[at:]
        if not raw:
            break
    _check_bytes(bytes(raw))
