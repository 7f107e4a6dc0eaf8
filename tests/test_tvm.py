"""The tvm backend against the installed Apache TVM (the ``tvm`` extra, which .ci/run installs): a rank-0
input and a sub-byte type it declines, and its repro: the script a report hands a TVM developer runs the
case on TVM alone and prints what the backend returned, for a case TVM gets wrong (expectations/tvm.yaml:
DequantizeLinear with an int32 x subtracts in int32 and wraps).

Without TVM installed the tests are skipped, except under CI (``CI`` or ``QDQ_REQUIRE_TVM`` set), where that
is a failure."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from qdq_conformance.backends.base import Backend, Unsupported
from qdq_conformance.backends.registry import create
from qdq_conformance.modelbuild import single_node_model
from qdq_conformance.runner.repro import model_code, values_of
from qdq_conformance.types import by_dtype

from .test_backends_more import EXOTIC, _dq_model


@pytest.fixture(scope="module")
def tvm() -> Backend:
    if importlib.util.find_spec("tvm") is None:
        message = "Apache TVM is not installed (pip install -e '.[tvm]')"
        if os.environ.get("CI") or os.environ.get("QDQ_REQUIRE_TVM"):
            pytest.fail(message)
        pytest.skip(message)
    return create("tvm")


def test_tvm_takes_rank0_inputs_and_declines_sub_byte(tvm):
    x = np.array(7, np.uint8)
    feeds = {"x": x, "x_scale": np.array(1, np.float32), "x_zero_point": np.zeros((), np.uint8)}
    got = tvm.run(_dq_model(x), feeds)[0]
    assert got.shape == () and got == np.float32(7)
    with pytest.raises(Unsupported, match="does not exchange uint4"):
        tvm.run(_dq_model(EXOTIC["uint4"]), {})


def test_the_repro_runs_the_case_on_tvm_alone(tvm, tmp_path):
    """y = (x - x_zero_point) * x_scale = (-2147483648 - 2147483647) * 0.5, -2147483648 in float32; TVM wraps
    the int32 difference to 1 and gives 0.5. The repro (every input an initializer) prints the same."""
    x, zp = np.array([-2147483648, 0, 5], np.int32), np.array(2147483647, np.int32)
    inputs = [("x", x), ("x_scale", np.array(0.5, np.float32)), ("x_zero_point", zp)]
    model = single_node_model("ai.onnx", "DequantizeLinear", 21, inputs,
                              [("y", by_dtype(np.dtype(np.float32)).proto, [3])])
    got = tvm.run(model, dict(inputs))[0]
    assert got[0] == np.float32(0.5)  # (the spec: -2147483648; still TVM 0.27's answer?)
    script = tmp_path / "repro.py"
    script.write_text(tvm.repro(model_code(model, values_of(model, dict(inputs))), ["y"]))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    name, dtype, values = out.stdout.split(None, 2)  # (as every repro prints an output: name, type, values)
    assert (name, dtype) == ("y", "float32")
    printed = [float(v) for v in values.replace("[", " ").replace("]", " ").split()]
    assert printed == [float(f"{v:.7e}") for v in got]  # (as numpy prints float32: 8 digits)
