"""The iree backend: its markers against the installed IREE (each one must still match a refusal of the
installed compiler), batches that hold failing cases, the cache, and batched outputs equal to a case compiled
on its own. The parts that need no IREE (the batch's fallbacks, the sub-byte packing) run everywhere."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
import pytest

pytest.importorskip("iree.runtime", reason="the iree extra is not installed")  # (the kit imports it)

from qdq_conformance.backends import iree_build  # noqa: E402
from qdq_conformance.backends.base import Rejected, Unsupported  # noqa: E402
from qdq_conformance.backends.kits.iree import pack4 as _pack4  # noqa: E402
from qdq_conformance.backends.kits.iree import unpack4 as _unpack4  # noqa: E402
from qdq_conformance.modelbuild import single_node_model  # noqa: E402
from qdq_conformance.types import by_dtype  # noqa: E402

Case = tuple[onnx.ModelProto, dict[str, np.ndarray]]


def _q(x: np.ndarray, version: int, zp: np.ndarray, scale: np.ndarray | None = None) -> Case:
    """QuantizeLinear with every input fed at run time: the model and its feeds."""
    scale = np.array(0.5, np.float32) if scale is None else scale
    inputs = [("x", x), ("y_scale", scale), ("y_zero_point", zp)]
    model = single_node_model("ai.onnx", "QuantizeLinear", version, inputs,
                              [("y", by_dtype(zp.dtype).proto, list(x.shape))])
    return model, dict(inputs)


def _dq(x: np.ndarray, version: int, scale: np.ndarray | None = None) -> Case:
    scale = np.array(0.5, np.float32) if scale is None else scale
    inputs = [("x", x), ("x_scale", scale)]
    model = single_node_model("ai.onnx", "DequantizeLinear", version, inputs,
                              [("y", by_dtype(scale.dtype).proto, list(x.shape))])
    return model, dict(inputs)


X = np.array([-3.0, -1.25, 0.0, 0.75, 1.25, 300.0, 1000.0, -1000.0], np.float32)


# --- no IREE needed
# -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [ml_dtypes.int4, ml_dtypes.uint4])
@pytest.mark.parametrize("n", [0, 1, 5, 8])
def test_four_bit_arrays_pack_low_nibble_first_and_back(dtype, n):
    a = (np.arange(n) % 8).astype(dtype)
    raw = _pack4(a)
    assert len(raw) == (n + 1) // 2
    if n >= 2:
        assert raw[0] == (int(a[0].view(np.uint8)) & 0xF) | ((int(a[1].view(np.uint8)) & 0xF) << 4)
    assert np.array_equal(_unpack4(raw, n, np.dtype(dtype)), a)


def _slots(n: int) -> list[iree_build.Slot]:
    return [iree_build.Slot(k, ["!torch.vtensor<[1],f32>"], ["!torch.vtensor<[1],f32>"],
                            f"  func.func private @c{k}(%arg0: !torch.vtensor<[1],f32>) -> "
                            "!torch.vtensor<[1],f32> {\n    return %arg0 : !torch.vtensor<[1],f32>\n  }",
                            (1,)) for k in range(n)]


def _fake(crash: set[int], named: set[int]):
    """A compiler that crashes (no line named) while a case of ``crash`` is in the module, and reports an
    error at the line of each case of ``named``."""
    calls = []

    def compiler(text: str, timeout: float) -> subprocess.CompletedProcess:
        present = {int(line.split("@c")[1].split("(")[0]) for line in text.splitlines()
                   if line.startswith("  func.func private @c")}
        calls.append(sorted(present))
        lines = text.splitlines()
        errors = [f"<stdin>:{n + 2}:5: error: bad case {k}" for n, line in enumerate(lines)
                  for k in present & named if line.startswith(f"  func.func private @c{k}(")]
        if present & crash:
            return subprocess.CompletedProcess([], -11, b"", b"Please report issues")
        if errors:
            return subprocess.CompletedProcess([], 1, b"", "\n".join(errors).encode())
        return subprocess.CompletedProcess([], 0, b"module:" + ",".join(map(str, sorted(present))).encode(),
                                           b"")
    compiler.calls = calls
    return compiler


def test_a_case_the_compiler_names_leaves_the_batch_and_the_rest_compiles_as_one_module():
    compiler = _fake(crash=set(), named={2, 5})
    built = iree_build.compile_batch(_slots(8), 60, compiler)
    assert set(built.refused) == {2, 5} and built.refused[2].message == "bad case 2"
    assert [positions for _, positions in built.modules] == [[0, 1, 3, 4, 6, 7]]


def test_a_crash_no_line_names_splits_the_batch_down_to_the_case_that_causes_it():
    compiler = _fake(crash={6}, named=set())
    built = iree_build.compile_batch(_slots(8), 60, compiler)
    assert set(built.refused) == {6}
    assert "exited with status -11" in built.refused[6].message
    assert sorted(p for _, positions in built.modules for p in positions) == [0, 1, 2, 3, 4, 5, 7]
    assert len(compiler.calls) <= 8  # (halves, not one compile per case)


def test_the_slots_constants_follow_the_batch_module_in_one_resource_section():
    text = ('module {\n  func.func private @c0() {\n    return\n  }\n}\n\n{-#\n  dialect_resources: {\n'
            '    builtin: {\n      s: "0x08000000CDCC4C3D",\n      z_1: "0x0800000000"\n    }\n  }\n#-}\n')
    body, blobs = iree_build.split_module(text)
    assert body == "  func.func private @c0() {\n    return\n  }" and blobs == ['s: "0x08000000CDCC4C3D"',
                                                                          'z_1: "0x0800000000"']
    slots = _slots(2)
    slots[1].resources = blobs
    module = iree_build.module_text(slots)
    assert module.count("{-#") == 1 and module.index("{-#") > module.index("func.func @batch")
    assert '      s: "0x08000000CDCC4C3D",\n      z_1: "0x0800000000"\n    }' in module
    assert module_lines_of_functions(module) == module_lines_of_functions(iree_build.module_text(_slots(2)))
    with pytest.raises(ValueError, match="resource the batch cannot hold"):
        iree_build.split_module(text.replace("builtin: {", "other: {"))


def module_lines_of_functions(text: str) -> list[int]:
    return [n for n, line in enumerate(text.splitlines()) if line.startswith("  func.func")]


def test_a_batch_out_of_time_refuses_nothing_it_did_not_compile():
    built = iree_build.compile_batch(_slots(3), 0.5, _fake(crash=set(), named=set()))
    assert built.modules == [] and {r.stage for r in built.refused.values()} == {"budget"}


# --- the installed IREE
# -------------------------------------------------------------------------------------------

iree_backend = pytest.importorskip("qdq_conformance.backends.iree_backend")
pytest.importorskip("iree.compiler")
pytest.importorskip("iree.runtime")


@pytest.fixture
def backend(tmp_path, monkeypatch):
    monkeypatch.setenv("QDQ_CACHE_DIR", str(tmp_path))
    return iree_backend.IreeBackend()


def _refusal(backend, case: Case) -> Exception | None:
    try:
        backend.run(*case)
    except (Unsupported, Rejected) as e:
        return e
    return None


def _marker(e: Exception | None) -> str | None:
    m = iree_backend.MARKERS.match(str(e)) if e is not None else None
    return m.fragment if m else None


# one model per marker that the installed IREE refuses with it: a marker that no longer matches fails here
MARKER_CASES = {
    "Unknown ONNX tensor element type": lambda: _dq(np.zeros(4, ml_dtypes.float4_e2m1fn), 23),
    "failed to legalize operation 'torch.operator'": lambda: _q(X, 21, np.array(0, np.uint16)),
    "unimplemented:": lambda: _q(np.array([1, 2, 300], np.int32), 24, np.array(0, ml_dtypes.float8_e5m2)),
}


@pytest.mark.parametrize("marker", sorted(MARKER_CASES))
def test_each_marker_still_matches_a_refusal_of_the_installed_iree(backend, marker):
    got = _refusal(backend, MARKER_CASES[marker]())
    assert isinstance(got, Unsupported) and _marker(got) == marker, got
    assert str(got).endswith("]") and "[unsupported: iree says" in str(got)


def test_every_marker_has_a_test_and_a_run_reports_the_ones_no_refusal_matched():
    from qdq_conformance.backends.markers import MarkerWatch
    from qdq_conformance.backends.registry import MARKERS

    assert MARKERS["iree"] is iree_backend.MARKERS
    assert {m.fragment for m in iree_backend.MARKERS.markers} == set(MARKER_CASES)
    watch = MarkerWatch(iree_backend.MARKERS)
    watch.see(str(iree_backend.classify("compile", "failed to legalize operation 'torch.operator' ...",
                                        "3.13.0")),
              "runtime")
    stale = watch.stale(["runtime"])
    assert len(stale) == 2 and all("stale marker of the iree backend" in s for s in stale)
    assert not any("torch.operator" in s for s in stale)


def test_a_compile_failure_no_marker_explains_is_a_rejection(backend):
    x = np.array([1, 2, 300], np.int32)  # int32 x (QuantizeLinear 21 allows it): IREE's verifier refuses it
    got = _refusal(backend, _q(x, 21, np.array(0, np.int8)))
    assert isinstance(got, Rejected) and _marker(got) is None, got


def test_batched_outputs_equal_each_case_compiled_on_its_own(backend, tmp_path, monkeypatch):
    items = [_q(X, v, np.array(z, t)) for v in (13, 21) for z, t in ((3, np.uint8), (-2, np.int8))]
    items.append(_dq(np.arange(-4, 4, dtype=np.int8), 21, np.array(0.25, np.float32)))
    backend.prepare(items)
    assert backend.stats["batch_calls"] == 1
    batched = [backend.run(m, f) for m, f in items]
    monkeypatch.setenv("QDQ_CACHE_DIR", str(tmp_path / "alone"))
    alone = iree_backend.IreeBackend()
    for (m, f), got in zip(items, batched, strict=True):
        assert [a.tobytes() for a in alone.run(m, f)] == [a.tobytes() for a in got]
    assert alone.stats["compiles"] == len(items)  # (each on its own: no batch)
    assert batched[0][0].tolist() == [0, 1, 3, 5, 5, 255, 255, 0]  # (2.5 ties to even; saturated)


def test_models_with_initializers_share_a_batch_each_with_its_own_constants(backend):
    """The importer turns initializers into resource blobs after its module (graph cases have them): two
    models whose constants share names compile into one module and each gives its own answer."""
    from onnx import helper, numpy_helper

    def model(scale: float) -> Case:
        node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
        x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3])
        y = helper.make_tensor_value_info("y", onnx.TensorProto.UINT8, [3])
        graph = helper.make_graph([node], "g", [x], [y],
                                  initializer=[numpy_helper.from_array(np.array(scale, np.float32), "s"),
                                               numpy_helper.from_array(np.array(1, np.uint8), "z")])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        return m, {"x": np.array([0.0, 1.0, 2.0], np.float32)}

    items = [model(0.5), model(0.25)]
    backend.prepare(items)
    assert backend.stats["compiles"] == 1 and backend.stats["batch_calls"] == 1
    assert [backend.run(*i)[0].tolist() for i in items] == [[1, 3, 5], [1, 5, 9]]


def test_a_case_that_fails_to_compile_does_not_sink_its_batch_and_the_cache_remembers_both(backend):
    items = [_q(X, 21, np.array(0, np.int8)), _q(np.array([1, 2, 300], np.int32), 21, np.array(0, np.int8))]
    backend.prepare(items)
    assert backend.run(*items[0])[0].tolist() == [-6, -2, 0, 2, 2, 127, 127, -128]
    with pytest.raises(Rejected):
        backend.run(*items[1])
    again = iree_backend.IreeBackend()  # (the same cache directory)
    again.prepare(items)
    assert again.stats["compiles"] == 0
    assert again.run(*items[0])[0].tolist() == [-6, -2, 0, 2, 2, 127, 127, -128]
    with pytest.raises(Rejected):
        again.run(*items[1])


def test_float8_saturate_is_ignored_by_iree_3_13(backend):
    """What expectations/iree.yaml records: 1000 to float8e4m3fn with saturate=1 gives NaN, not 448."""
    y = backend.run(*_q(X, 21, np.array(0, ml_dtypes.float8_e4m3fn), np.array(1.0, np.float32)))[0]
    assert y.dtype == ml_dtypes.float8_e4m3fn
    if backend.version == "3.13.0":
        assert np.isnan(float(y[6]))


def test_the_repro_runs_the_case_on_iree_alone(backend, tmp_path):
    from qdq_conformance.runner.repro import model_code

    model, values = _q(X, 21, np.array(3, np.uint8))
    script = tmp_path / "repro.py"
    script.write_text(backend.repro(model_code(model, values), ["y"]))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert (out.stdout.replace("[", " ").replace("]", " ").split()
            == ["y", "uint8", "0", "1", "3", "5", "5", "255", "255", "0"])
