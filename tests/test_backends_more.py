"""The OpenVINO, AMD Quark and TVM adapters: exotic-type I/O, declining with a reason when unavailable."""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
import pytest

from qdq_conformance.backends.base import BackendUnavailable, Unsupported
from qdq_conformance.backends.registry import create
from qdq_conformance.modelbuild import single_node_model
from qdq_conformance.reference import run as oracle
from qdq_conformance.types import by_dtype


def _dq_model(x: np.ndarray, version: int = 21):
    inputs = [("x", x), ("x_scale", np.array(1, np.float32)), ("x_zero_point", np.zeros((), x.dtype))]
    return single_node_model("ai.onnx", "DequantizeLinear", version, inputs,
                             [("y", by_dtype(np.dtype(np.float32)).proto, list(x.shape))], {},
                             initializers=())


def _q_model(x: np.ndarray, zp: np.ndarray, version: int = 21):
    inputs = [("x", x), ("y_scale", np.array(1, np.float32)), ("y_zero_point", zp)]
    return single_node_model("ai.onnx", "QuantizeLinear", version, inputs,
                             [("y", by_dtype(zp.dtype).proto, list(x.shape))], {}, initializers=())


EXOTIC = {
    "uint4": np.arange(16).astype(ml_dtypes.uint4).reshape(2, 8)[:, :7].copy(),  # odd length: packing edge
    "int4": np.arange(-8, 8).astype(ml_dtypes.int4)[:15].copy(),
    "float8e4m3fn": np.array([0.5, -3, 448, -0.0], ml_dtypes.float8_e4m3fn),
    "float8e5m2": np.array([0.5, -3, 57344], ml_dtypes.float8_e5m2),
    "scalar-uint8": np.array(7, np.uint8),
}


def _roundtrip(backend, name):
    x = EXOTIC[name]
    feeds = {"x": x, "x_scale": np.array(1, np.float32), "x_zero_point": np.zeros((), x.dtype)}
    model = _dq_model(x)
    got = backend.run(model, feeds)[0]
    assert got.shape == x.shape and np.array_equal(got, oracle(model, feeds)[0]), (name, got)
    y = np.asarray(x.astype(np.float32))
    zp = np.zeros((), x.dtype)
    qmodel = _q_model(y, zp)
    qfeeds = {"x": y, "y_scale": np.array(1, np.float32), "y_zero_point": zp}
    got = backend.run(qmodel, qfeeds)[0]
    assert got.dtype == x.dtype and got.shape == x.shape
    assert np.array_equal(got.view(np.uint8) if got.dtype.itemsize == 1 else got,
                          x.view(np.uint8) if x.dtype.itemsize == 1 else x), (name, got)


@pytest.mark.parametrize("name", sorted(EXOTIC))
def test_ort_exchanges_exotic_and_rank0_tensors_exactly(name):
    _roundtrip(create("ort"), name)


@pytest.mark.parametrize("name", sorted(EXOTIC))
def test_openvino_exchanges_exotic_and_rank0_tensors_exactly(name):
    pytest.importorskip("openvino")
    _roundtrip(create("openvino"), name)


def test_openvino_declines_types_it_has_no_element_type_for():
    pytest.importorskip("openvino")
    x = np.array([1, 2], ml_dtypes.float8_e4m3fnuz)
    with pytest.raises(Unsupported, match="no element type for float8e4m3fnuz"):
        create("openvino").run(_dq_model(x), {"x": x, "x_scale": np.array(1, np.float32),
                                              "x_zero_point": np.zeros((), x.dtype)})


def test_an_older_openvino_without_an_element_type_declines_it(monkeypatch):
    """OpenVINO 2025.4 has no ``Type.u2``: the backend is still made (``matrix`` runs that release) and a
    uint2 case is unsupported, naming the release."""
    ov = pytest.importorskip("openvino")
    real = ov.Type

    class OlderType:  # openvino.Type as a release without u2 has it
        def __getattr__(self, name):
            if name == "u2":
                raise AttributeError(name)
            return getattr(real, name)

    monkeypatch.setattr(ov, "Type", OlderType())
    backend = create("openvino")
    x = np.array([1, 2, 3], ml_dtypes.uint2)
    with pytest.raises(Unsupported, match=f"OpenVINO {backend.version} has no element type for uint2"):
        backend.run(_dq_model(x), {"x": x, "x_scale": np.array(1, np.float32),
                                   "x_zero_point": np.zeros((), x.dtype)})


def test_missing_packages_make_the_backend_unavailable_with_the_fix(monkeypatch):
    """Not a backend that declines every case (a run that tests nothing and exits 0): one that cannot be
    created, which the runner turns into a usage error before the first case (tests/test_backend_start.py)."""
    monkeypatch.setitem(sys.modules, "openvino", None)  # import openvino -> ImportError
    monkeypatch.setitem(sys.modules, "tvm", None)
    for name, hint in (("openvino", "[openvino]"), ("tvm", "[tvm]")):
        with pytest.raises(BackendUnavailable, match=rf"^{name} cannot be imported \(.*pip install .*"
                                                     + hint.replace("[", r"\[").replace("]", r"\]")):
            create(name)


def test_quark_without_its_library_is_unavailable_and_says_how_to_build(monkeypatch, tmp_path):
    monkeypatch.setenv("QDQ_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("QDQ_QUARK_LIBRARY", raising=False)
    with pytest.raises(BackendUnavailable, match="not built: run `qdq-conformance build-quark` once"):
        create("quark")


def test_quark_build_reports_a_missing_compiler(monkeypatch, tmp_path):
    from qdq_conformance.backends.quark import BuildError, build

    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    src = tmp_path / "custom_ops"
    (src / "src").mkdir(parents=True)
    with pytest.raises(BuildError, match="lacks custom_op_library.cc"):
        build(src, log=lambda *_: None)


def test_a_case_the_adapter_cannot_hand_over_is_unsupported_even_when_invalid():
    """Declining for the adapter's own reasons (a missing package, another domain) says nothing about the
    backend: an invalid case stays unsupported instead of counting as rejected."""
    from qdq_conformance.runner.outcome import classify
    from qdq_conformance.runner.outputs import RawResult

    assert classify(RawResult("not-applicable", message="quark only"), case_status="invalid", expected=None,
                    ulp=0).status == "unsupported"
    assert classify(RawResult("unsupported", message="NOT_IMPLEMENTED"), case_status="invalid", expected=None,
                    ulp=0).status == "passed"  # the backend itself refused to run the model
    assert classify(RawResult("not-applicable", message="x"), case_status="implementation-defined",
                    expected=None, ulp=0).status == "unsupported"


def test_every_help_lists_every_builtin_backend():
    """One list of names (backends/names.py): the registry builds exactly those, and run's, fuzz's and
    compliance's help texts name each one."""
    import subprocess
    import sys

    from qdq_conformance.backends.names import BUILTIN_NAMES
    from qdq_conformance.backends.registry import BUILTIN

    assert set(BUILTIN) == set(BUILTIN_NAMES)
    for command in (["run"], ["fuzz"], ["compliance"]):
        text = " ".join(subprocess.run([sys.executable, "-m", "qdq_conformance.cli", *command, "--help"],
                                       capture_output=True, text=True, timeout=120,
                                       check=True).stdout.split())
        text = text.replace("- ", "-")  # (argparse wraps lines at hyphens)
        missing = [n for n in BUILTIN_NAMES if n != "oracle" and n not in text]
        assert not missing, (command, missing)
