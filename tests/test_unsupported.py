"""ONNX Runtime's "unsupported" versus "rejected" is decided by asking ONNX Runtime (cached probes), not by
its wording. Run with every supported ORT release (1.31.1 and 1.32.0 word a missing float6 type
differently)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from qdq_conformance.backends import ort_probe
from qdq_conformance.backends.base import Rejected, Unsupported
from qdq_conformance.backends.registry import create
from qdq_conformance.modelbuild import single_node_model
from qdq_conformance.types import by_dtype


def _dq(x: np.ndarray, version: int, scale: np.ndarray | None = None, out: type = np.float32,
        attrs: dict | None = None) -> onnx.ModelProto:
    scale = np.array(1, np.float32) if scale is None else scale
    inputs = [("x", x), ("x_scale", scale), ("x_zero_point", np.zeros((), x.dtype))]
    return single_node_model("ai.onnx", "DequantizeLinear", version, inputs,
                             [("y", by_dtype(np.dtype(out)).proto, list(x.shape))], attrs or {},
                             initializers=())


def _outcome(model: onnx.ModelProto) -> Exception | None:
    """What the ort backend makes of ``model`` (None: it ran)."""
    x = np.zeros(2, np.uint8)
    try:
        create("ort").run(model, {i.name: x for i in model.graph.input})
    except (Unsupported, Rejected) as e:
        return e
    except Exception:  # noqa: BLE001 - it built a session; the zero feeds are not the point here
        return None
    return None


def _passthrough(elem: int, ir: int = 8) -> onnx.ModelProto:
    vi = helper.make_tensor_value_info("x", elem, [2])
    return helper.make_model(helper.make_graph([], "g", [vi], [vi]),
                             opset_imports=[helper.make_opsetid("", 1)], ir_version=ir)


def _ort_error(model: onnx.ModelProto) -> Exception | None:
    try:
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001
        return e
    return None


@pytest.mark.parametrize("dtype,name",
                         [(ml_dtypes.float6_e3m2fn, "float6e3m2"), (ml_dtypes.float6_e2m3fn, "float6e2m3")])
def test_a_float6_model_is_unsupported_with_the_probes_reason(dtype, name):
    model = _dq(np.zeros(2, dtype), 28)
    if ort_probe.type_refusal(by_dtype(np.dtype(dtype)).proto) is None:  # a release that holds float6
        assert not isinstance(_outcome(model), Rejected)
        return
    got = _outcome(model)
    assert isinstance(got, Unsupported), got
    assert str(got).startswith(f"ONNX Runtime {ort.__version__} has no {name} tensor type (probe: "), got


def test_an_opset28_ir14_model_is_unsupported_never_rejected():
    model = _dq(np.zeros(2, np.uint8), 28)
    assert model.ir_version == 14
    got = _outcome(model)
    assert not isinstance(got, Rejected), got
    if ort_probe.ir_refusal(14) is not None:  # 1.31: IR 14 is newer than it reads
        assert isinstance(got, Unsupported)
        assert str(got).startswith(f"ONNX Runtime {ort.__version__} does not load IR version 14 "
                                   "(probe: "), got
        assert "Unsupported model IR version: 14" in str(got)


def test_a_valid_model_of_supported_types_that_ort_refuses_stays_rejected():
    """DequantizeLinear 23, float4e2m1 x, float16 scale, output_dtype FLOAT16: valid, every type and the opset
    are ORT's, yet it fails on a cast it inserts itself (expectations/ort.yaml): an error, not unsupported."""
    model = _dq(np.zeros(2, ml_dtypes.float4_e2m1fn), 23, np.array(1, np.float16), np.float16,
                {"output_dtype": TensorProto.FLOAT16})
    got = _outcome(model)
    assert got is None or isinstance(got, Rejected), got


def test_an_invalid_model_of_types_ort_supports_is_rejected():
    model = _dq(np.zeros(2, np.int16), 19)  # int16 x: allowed from version 21 only
    assert ort_probe.type_refusal(TensorProto.INT16) is None
    got = _outcome(model)
    assert isinstance(got, Rejected), got
    assert "probe" not in str(got)


def test_the_probes_accept_what_ort_implements_and_name_what_it_does_not():
    assert (ort_probe.type_refusal(TensorProto.FLOAT) is None
            and ort_probe.type_refusal(TensorProto.INT4) is None)
    assert ort_probe.ir_refusal(8) is None and ort_probe.opset_refusal("", 21) is None
    assert "does not load IR version 99" in ort_probe.ir_refusal(99)
    assert "does not load opset ai.onnx 999" in ort_probe.opset_refusal("", 999)
    assert "has no schema for ai.onnx::NoSuchOp" in ort_probe.op_refusal("", "NoSuchOp", 21)
    assert ort_probe.ortvalue_refusal(TensorProto.UINT4) is None
    assert "cannot make a complex64 OrtValue" in ort_probe.ortvalue_refusal(TensorProto.COMPLEX64)


def test_the_operator_probe_builds_every_quantization_op_version_that_has_a_cpu_kernel():
    """The probe's plain-type model is right wherever ORT registers a CPU kernel (so its refusal means
    ORT's)."""
    from onnxruntime.capi import onnxruntime_pybind11_state as C

    versions = {(k.domain, k.op_name, k.version_range[0]) for k in C.get_all_opkernel_def()
                if k.provider == "CPUExecutionProvider"
                and k.op_name in ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear")}
    assert len(versions) >= 10
    for domain, op, version in sorted(versions):
        assert ort_probe.op_refusal(domain, op, version) is None, (domain, op, version)


def test_no_operator_probe_without_its_required_attributes():
    """A plain node of an operator with a required attribute (AveragePool's kernel_shape) is an invalid model:
    its refusal says nothing of the operator, so the probe gives no answer (it once called DQ -> AveragePool
    with dilations -> Q "unsupported", where ORT's QLinearAveragePool fusion refuses a valid model)."""
    with pytest.raises(ort_probe.NoProbe, match="requires the attributes kernel_shape"):
        ort_probe.op_refusal("", "AveragePool", 19)
    assert ort_probe.op_refusal("", "Relu", 14) is None


def test_no_operator_probe_from_a_refusal_of_its_own_model():
    """The probe's plain node gives its first input shape [2] and the others none, and leaves variadic
    inputs out: MatMulInteger's shape inference refuses that ("Input tensors of wrong rank"), and Max with no
    input is an invalid graph. Neither says anything of the operator (the first once called valid
    MatMulInteger graphs ORT refuses "unsupported": per-row and batched zero points)."""
    for op in ("MatMulInteger", "MatMul", "Max"):
        with pytest.raises(ort_probe.NoProbe, match="its model was refused as invalid"):
            ort_probe.op_refusal("", op, 13)


def test_probes_are_cached_per_process():
    model = _dq(np.zeros(2, ml_dtypes.float6_e3m2fn), 28)
    _outcome(model)
    before = dict(ort_probe.STATS)
    _outcome(model)
    assert ort_probe.STATS["probes"] == before["probes"]


#: One model per fallback fragment, each giving that message in every supported ORT release.
_FRAGMENT_TRIGGERS = {
    "is not currently registered or supported": _passthrough(TensorProto.COMPLEX64),
    "Invalid tensor data type": _passthrough(99),
    "Unsupported model IR version": _passthrough(TensorProto.FLOAT, ir=99),
    "NOT_IMPLEMENTED": helper.make_model(helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.UINT2, [2])],
        [helper.make_tensor_value_info("y", TensorProto.UINT2, [2])]),
                                         opset_imports=[helper.make_opsetid("", 25)],
        ir_version=11),
}


def test_every_fallback_fragment_matches_the_message_of_the_installed_ort(monkeypatch):
    assert set(_FRAGMENT_TRIGGERS) == set(ort_probe.FALLBACK_FRAGMENTS)

    def no_probe(*_a, **_k):
        raise RuntimeError("probe unavailable")

    monkeypatch.setattr(ort_probe, "_unsupported_by_probe", no_probe)
    for fragment, model in _FRAGMENT_TRIGGERS.items():
        error = _ort_error(model)
        assert error is not None, f"ORT {ort.__version__} now loads the trigger of {fragment!r}: find another"
        assert fragment in str(error), (fragment, str(error))
        assert isinstance(ort_probe.decide(model, error), Unsupported)
    invalid = _dq(np.zeros(2, np.int16), 19)
    assert isinstance(ort_probe.decide(invalid, _ort_error(invalid)), Rejected)


def test_first_line_drops_the_cpp_location():
    text = ("[ONNXRuntimeError] : 1 : FAIL : /onnxruntime_src/onnxruntime/core/graph/model.cc:256 "
            "onnxruntime::Model::Model(onnx::ModelProto&&, const onnxruntime::ModelOptions&) Unsupported "
            "model IR version: 14, max supported IR version: 13\nmore")
    assert (ort_probe.first_line(text)
            == ("[ONNXRuntimeError] : 1 : FAIL : Unsupported model IR version: 14, max "
                "supported IR version: 13"))


def test_onnx_reference_unsupported_comes_from_its_operator_registry():
    backend = create("onnx-reference")
    x = np.zeros(2, np.uint8)
    feeds = {"x": x, "x_scale": np.array(1, np.float32), "x_zero_point": np.zeros((), np.uint8)}
    with pytest.raises(Unsupported,
                       match=r"has no implementation of DequantizeLinear for opset 13 \(probe: "):
        backend.run(_dq(x, 13), feeds)
    assert backend.run(_dq(x, 19), feeds)[0].dtype == np.float32


def test_openvino_unsupported_operator_comes_from_its_frontend():
    pytest.importorskip("openvino")
    x = np.zeros(2, np.uint8)
    inputs = [("x", x), ("x_scale", np.array(1, np.float32)), ("x_zero_point", np.zeros((), np.uint8))]
    model = single_node_model("com.amd.quark", "ExtendedDequantizeLinear", 1, inputs,
                              [("y", TensorProto.FLOAT, [2])], {}, initializers=())
    with pytest.raises(Unsupported,
                       match=r"no conversion rule for com\.amd\.quark\.ExtendedDequantizeLinear \(probe: "):
        create("openvino").run(model, dict(inputs))


def test_no_probe_is_trusted_when_their_control_model_is_refused(monkeypatch):
    """If ORT stopped loading the probes' neutral ground (IR 8, ai.onnx 1), every probe would refuse: then the
    decision falls back to the message fragments instead of calling everything unsupported."""
    monkeypatch.setattr(ort_probe, "_control", lambda: "refused")
    invalid = _dq(np.zeros(2, np.int16), 19)
    assert isinstance(ort_probe.decide(invalid, _ort_error(invalid)), Rejected)
    complex64 = _passthrough(TensorProto.COMPLEX64)
    got = ort_probe.decide(complex64, _ort_error(complex64))
    assert isinstance(got, Unsupported) and "message-text fallback" in str(got)


def test_onnx_backend_module_declines_through_skiptest_and_ort_probes():
    """onnxruntime.backend refuses an opset newer than ORT with unittest.SkipTest (onnx.backend's "not
    supported"), and its ORT errors are decided by the same probes as the ort backend."""
    backend = create("onnx-backend:onnxruntime.backend")
    x = np.zeros(2, np.uint8)
    feeds = {"x": x, "x_scale": np.array(1, np.float32), "x_zero_point": np.zeros((), np.uint8)}
    with pytest.raises(Rejected):
        backend.run(_dq(np.zeros(2, np.int16), 19), {**feeds, "x": np.zeros(2, np.int16),
                                                      "x_zero_point": np.zeros((), np.int16)})
    try:
        backend.run(_dq(x, 28), feeds)  # IR 14 / opset 28: skipped by 1.31, not implemented by 1.32
    except (Unsupported, Rejected) as e:
        assert isinstance(e, Unsupported), e
