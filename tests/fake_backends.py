"""Test backends: the oracle, except on chosen cases where they crash, abort, hang, decline or lie."""

from __future__ import annotations

import ctypes
import os
import time

from qdq_conformance.backends.base import Unsupported
from qdq_conformance.backends.builtin import OracleBackend


class Misbehaving(OracleBackend):
    """Behaves like the oracle unless the model's graph name (the case id) contains a trigger word."""

    name = "misbehaving"
    version = "0.0-test"

    def run(self, model, feeds):
        name = model.graph.name
        if "ties-near-bounds" in name and "-int8" in name:
            ctypes.string_at(0)  # segfault
        if "signed-zero" in name and "uint8" in name:
            os.write(2, b"fatal: the native library gives up here\n")  # as a C library would, on fd 2
            os.abort()
        if "saturation-inf" in name and "uint8" in name:
            time.sleep(3600)
        if "block-size" in name:
            import numpy as np

            return [np.zeros([d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim], np.float32)]
        if "saturation-huge" in name:
            raise Unsupported("saturation is not implemented here")
        outputs = super().run(model, feeds)
        if "basic" in name and "-int8" in name:
            outputs = [o.copy() for o in outputs]
            outputs[0].reshape(-1)[0] ^= 1  # off by one bit
        return outputs


def make(**options):
    return Misbehaving()


class Slow(OracleBackend):
    """The oracle, but every case takes ``QDQ_TEST_CASE_SECONDS`` (default 0.5) while a child process of its own
    runs (as a ``command:`` runner would), in a temporary folder: what a run must clean up when it is stopped."""

    name = "slow"
    version = "0.0-test"

    def run(self, model, feeds):
        import subprocess
        import sys
        import tempfile

        seconds = float(os.environ.get("QDQ_TEST_CASE_SECONDS", "0.5"))
        with tempfile.TemporaryDirectory(prefix="qdq-slow-") as tmp:
            marker = os.environ.get("QDQ_TEST_MARKER", "")  # (in its command line: tests find it by that)
            child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(600)  # {marker}"], cwd=tmp)
            try:
                child.wait(seconds)
            except subprocess.TimeoutExpired:
                pass
            finally:
                child.kill()
                child.wait()
        return super().run(model, feeds)


def slow(**options):
    return Slow()


def crash_on_build(**options):
    ctypes.string_at(0)  # a backend whose construction segfaults
