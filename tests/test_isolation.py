"""A backend that segfaults, aborts or hangs costs one case; the worker is replaced and the run goes on."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from qdq_conformance.modelbuild import single_node_model
from qdq_conformance.runner.isolation import IsolatedBackend

FEEDS = {"x": np.array([1, 2.5], np.float32), "s": np.array(1, np.float32), "z": np.array(0, np.uint8)}


def _model(name):
    return single_node_model("ai.onnx", "QuantizeLinear", 13, [(k, v) for k, v in FEEDS.items()],
                             [("y", TensorProto.UINT8, [2])], name=name)


def test_crash_abort_and_hang_each_cost_one_case():
    b = IsolatedBackend("python:tests.fake_backends:make", timeout=3)
    try:
        assert b.run(_model("quantizelinear-13-ok-uint8"), FEEDS).kind == "ok"
        r = b.run(_model("quantizelinear-13-ties-near-bounds-float-int8"), FEEDS)
        assert r.kind == "crashed" and "signal 11" in r.message
        assert b.run(_model("quantizelinear-13-ok-uint8"), FEEDS).outputs[0].tolist() == [1, 2]
        r = b.run(_model("quantizelinear-13-signed-zero-float-uint8"), FEEDS)
        assert r.kind == "crashed" and "signal 6" in r.message
        assert "its last output:\nfatal: the native library gives up here" in r.message
        r = b.run(_model("quantizelinear-13-saturation-inf-float-uint8"), FEEDS)
        assert r.kind == "timeout" and 2.5 < r.seconds < 30
        r = b.run(_model("quantizelinear-13-saturation-huge-float-uint8"), FEEDS)
        assert r.kind == "unsupported" and "not implemented" in r.message
        assert b.run(_model("quantizelinear-13-ok-uint8"), FEEDS).kind == "ok"
        assert b.restarts == 3
    finally:
        b.close()


def test_unknown_backend_fails_to_start_with_a_clear_message():
    b = IsolatedBackend("no-such-backend", timeout=5)
    try:
        b.start()
    except Exception as e:
        assert "unknown backend 'no-such-backend'" in str(e) and "ort" in str(e)
    else:
        raise AssertionError("expected a start error")
