"""Test backends: the oracle, except on chosen cases where they crash, abort, hang, decline or lie."""

from __future__ import annotations

import ctypes
import os
import time

import numpy as np

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
            return [np.zeros([d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim],
                             np.float32)]
        if "saturation-huge" in name:
            raise Unsupported("saturation is not implemented here")
        outputs = super().run(model, feeds)
        if "basic" in name and "-int8" in name:
            outputs = [o.copy() for o in outputs]
            outputs[0].reshape(-1)[0] ^= 1  # off by one bit
        return outputs


def make(**options):
    return Misbehaving()


def slow_to_start(**options):
    """Misbehaving in a worker whose start-up is slow, as on a busy machine: creating the backend takes
    ``QDQ_TEST_CREATE_SECONDS`` (default 2), and loading each case file in that worker (a cold cache, a big
    file) ``QDQ_TEST_LOAD_SECONDS`` (by default the same): the worker's own work before a case, which no
    case's time limit may count."""
    from qdq_conformance.runner import execute

    seconds = float(os.environ.get("QDQ_TEST_CREATE_SECONDS", "2"))
    load_seconds = float(os.environ.get("QDQ_TEST_LOAD_SECONDS", seconds))
    load = execute.load_file_cached

    def slow_load(path, tiers, shard=None):
        time.sleep(load_seconds)
        return load(path, tiers, shard)

    time.sleep(seconds)
    execute.load_file_cached = slow_load  # (in the worker process only: the factory runs there)
    return Misbehaving()


def hangs_when_replaced(**options):
    """Misbehaving in the first worker; the factory of any later worker (a replacement) never returns: the
    file ``QDQ_TEST_CREATED`` notes the first creation."""
    path = os.environ["QDQ_TEST_CREATED"]
    if os.path.exists(path):
        time.sleep(3600)
    open(path, "w").close()
    return Misbehaving()


class Slow(OracleBackend):
    """The oracle, but every case takes ``QDQ_TEST_CASE_SECONDS`` (default 0.5) while a child process of its
    own runs (as a ``command:`` runner would), in a temporary folder: what a run must clean up when it is
    stopped."""

    name = "slow"
    version = "0.0-test"

    def run(self, model, feeds):
        import subprocess
        import sys
        import tempfile

        seconds = float(os.environ.get("QDQ_TEST_CASE_SECONDS", "0.5"))
        with tempfile.TemporaryDirectory(prefix="qdq-slow-") as tmp:
            marker = os.environ.get("QDQ_TEST_MARKER", "")  # (in its command line: tests find it by that)
            child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(600)  # {marker}"],
                                     cwd=tmp)
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


class BreaksReportFolder(OracleBackend):
    """The oracle, which replaces the folder ``QDQ_TEST_REPORT_DIR`` with a file while the cases run: a report
    that could be written when the run started, and cannot be when it ends."""

    name = "breaks-report-folder"
    version = "0.0-test"

    def run(self, model, feeds):
        folder = os.environ["QDQ_TEST_REPORT_DIR"]
        if os.path.isdir(folder):
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
            with open(folder, "w") as f:
                f.write("not a folder any more")
        return super().run(model, feeds)


def breaks_report_folder(**options):
    return BreaksReportFolder()


def crash_on_build(**options):
    ctypes.string_at(0)  # a backend whose construction segfaults


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("this message cannot be printed")


class _NotAnException(BaseException):
    """Raised by a backend: not an Exception, not SystemExit, not KeyboardInterrupt."""


#: terminal escapes, a NUL and invalid UTF-8: what a broken native library may print or put in a message
GARBAGE = b"\x1b[2J\x1b[31mGARBAGE-MARK\x00\xff\xfe\r\n"


def _huge(outputs):
    return [np.zeros(50_000_000, np.int8)] + outputs[1:]  # 50 MB for a 16-element output


def _mutate_inputs(backend, model, feeds):
    for value in feeds.values():  # (what a runtime that converts in place does to the arrays it is handed)
        value.reshape(-1).view(np.uint8)[:] = 0x7F
    outputs = OracleBackend.run(backend, model, feeds)
    return [o.astype(np.float64) for o in outputs]  # fails: the record then holds inputs, expected and repro


def _mutate_model(backend, model, feeds):
    outputs = OracleBackend.run(backend, model, feeds)
    for init in model.graph.initializer:
        init.raw_data = b"\x00" * len(init.raw_data)
    model.graph.node[0].op_type = "Identity"
    return [o.astype(np.float64) for o in outputs]


def _print_garbage(backend, model, feeds):
    import sys

    os.write(1, GARBAGE)
    os.write(2, GARBAGE)
    print(GARBAGE.decode("latin-1"))
    print(GARBAGE.decode("latin-1"), file=sys.stderr)
    return OracleBackend.run(backend, model, feeds)


def _garbage_then_abort(backend, model, feeds):
    os.write(2, GARBAGE * 3)
    os.abort()


def _raise(make):
    def run(backend, model, feeds):
        raise make()

    return run


def _returns(make_outputs):
    def run(backend, model, feeds):
        return make_outputs(OracleBackend.run(backend, model, feeds))

    return run


#: misbehaviour -> run(backend, model, feeds); a case whose template id is a key gets that misbehaviour
HOSTILE = {
    "wrong-dtype": _returns(lambda out: [o.astype(np.float64) for o in out]),
    "object-array": _returns(lambda out: [o.astype(object) for o in out]),
    "wrong-shape": _returns(lambda out: [o.reshape(-1)[:-1] for o in out]),
    "list-output": _returns(lambda out: [o.tolist() for o in out]),
    "none-output": _returns(lambda out: [None for _ in out]),
    "returns-none": _returns(lambda out: None),
    "fewer-outputs": _returns(lambda out: []),
    "extra-outputs": _returns(lambda out: out + out),
    "returns-string": _returns(lambda out: "y = [1, 2, 3]"),
    "single-array": _returns(lambda out: out[0]),
    "huge-output": _returns(_huge),
    "unprintable-error": _raise(_Unprintable),
    "huge-error": _raise(lambda: RuntimeError("\x1b[2J" + "x" * 1_000_000)),
    "system-exit": _raise(lambda: SystemExit(3)),
    "keyboard-interrupt": _raise(KeyboardInterrupt),
    "base-exception": _raise(lambda: _NotAnException("not an Exception")),
    "mutates-inputs": _mutate_inputs,
    "mutates-model": _mutate_model,
    "prints-garbage": _print_garbage,
    "garbage-then-abort": _garbage_then_abort,
}


class Hostile(OracleBackend):
    """The oracle, misbehaving as HOSTILE[mode] says: ``mode`` fixed, or (None) the template id of each case,
    read from the model's graph name (``quantizelinear-13-wrong-dtype-float-int8`` -> ``wrong-dtype``)."""

    name = "hostile"
    version = "0.0-test"

    def __init__(self, mode: str | None = None) -> None:
        super().__init__()
        self.mode = mode

    def run(self, model, feeds):
        mode = self.mode or next((m for m in HOSTILE if f"-{m}-" in model.graph.name), None)
        if mode is None:
            return super().run(model, feeds)
        return HOSTILE[mode](self, model, feeds)


def hostile(**options):
    """``python:tests.fake_backends:hostile``: each case misbehaves as its template id says."""
    return Hostile()


def _single(mode):
    def factory(**options):
        return Hostile(mode)

    factory.__doc__ = f"``python:tests.fake_backends:{mode.replace('-', '_')}``: every case {mode}"
    return factory


# one backend per misbehaviour, every case misbehaving alike: python:tests.fake_backends:wrong_dtype, ...
globals().update({mode.replace("-", "_"): _single(mode) for mode in HOSTILE})


def not_a_backend(**options):
    """A factory that returns something without a run method."""
    return {"name": "dict"}


class Batching(OracleBackend):
    """The oracle, handed its cases in batches (``prepare``, as IREE is): it appends the size of each batch
    and its time budget to the file ``$QDQ_TEST_BATCH_LOG``."""

    name = "batching"
    version = "0.0-test"
    batch = 5

    def prepare(self, items, budget):
        with open(os.environ["QDQ_TEST_BATCH_LOG"], "a") as fh:
            fh.write(f"{len(items)} {budget:g}\n")


def batching(**options):
    return Batching()


# --- backends whose processes leave the worker's session, and factories that hang or crash
# -------------------

def _escape(how: str) -> None:
    """Start a process that leaves the worker's process group and session (``start_new_session``), with an
    empty environment (so only its command line carries ``QDQ_TEST_MARKER``, by which tests find it):
    ``child``, a direct child left running; ``daemon``, a daemon that double-forks, whose parent exits at once
    (so it is handed to the nearest subreaper, or to init); ``forker``, a child that keeps forking (20
    children, each in a session of its own, one every 20 ms) while the run tries to kill it."""
    import subprocess
    import sys

    marker = os.environ.get("QDQ_TEST_MARKER", "")
    if how == "child":
        code = f"import time; time.sleep(600)  # {marker}"
    elif how == "forker":
        code = ("import os, time\nfor _ in range(20):\n    if os.fork() == 0:\n        os.setsid()\n"
                f"        time.sleep(600)  # {marker}\n        os._exit(0)\n    "
                "time.sleep(0.02)\ntime.sleep(600)\n")
    else:
        code = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                f"        time.sleep(600)  # {marker}\n    os._exit(0)\nos._exit(0)\n")
    child = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, env={},
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if how == "daemon":
        child.wait()  # (its parent is gone: the daemon is an orphan)
    else:
        _ESCAPED.append(child)  # (kept referenced: no ResourceWarning, no wait)


_ESCAPED: list = []


class Escaping(OracleBackend):
    """The oracle, but every case first starts a process that leaves the worker's session (``_escape``), and
    then (``then``) answers, crashes (segfault) or hangs."""

    name = "escaping"
    version = "0.0-test"

    def __init__(self, how: str, then: str = "answer") -> None:
        super().__init__()
        self.how, self.then = how, then

    def run(self, model, feeds):
        _escape(self.how)
        if self.then == "crash":
            ctypes.string_at(0)
        if self.then == "hang":
            time.sleep(3600)
        return super().run(model, feeds)


def setsid_child(**options):
    """Every case leaves a direct child running in a session of its own."""
    return Escaping("child")


def setsid_daemon(**options):
    """Every case leaves a double-forked daemon (an orphan in a session of its own)."""
    return Escaping("daemon")


def setsid_forker(**options):
    """Every case leaves a child that keeps forking children into sessions of their own."""
    return Escaping("forker")


def setsid_then_crash(**options):
    """Every case starts a daemon in a session of its own, then the worker segfaults."""
    return Escaping("daemon", "crash")


def setsid_then_hang(**options):
    """Every case starts a child in a session of its own, then hangs (the case times out)."""
    return Escaping("child", "hang")


def setsid_at_create(**options):
    """The factory leaves a daemon in a session of its own, then returns the oracle."""
    _escape("daemon")
    return Escaping("child")


def sleeps_forever(**options):
    """A factory that never returns."""
    time.sleep(3600)


def setsid_then_sleeps_forever(**options):
    """A factory that starts a daemon in a session of its own, then never returns."""
    _escape("daemon")
    time.sleep(3600)


def unavailable(**options):
    """A factory that says its backend cannot be created here."""
    from qdq_conformance.backends.base import BackendUnavailable

    raise BackendUnavailable("fakevendor-runtime is not installed; pip install fakevendor-runtime")


class DeclinesEverything(OracleBackend):
    """Every case unsupported, invalid ones included (NotApplicable: the adapter hands nothing over): a run
    that tests nothing."""

    name = "declines-everything"
    version = "0.0-test"

    def run(self, model, feeds):
        from qdq_conformance.backends.base import NotApplicable

        raise NotApplicable("this adapter hands nothing over")


def declines_everything(**options):
    return DeclinesEverything()


def ort_with_a_faulty_adapter(**options):
    """ONNX Runtime through this tool's own adapter, with a fault injected into the adapter's code (the
    worker's copy of its kit, ``backends/kits/ort.py``), as an API an old release lacks makes one: every uint8
    tensor goes through the OrtValue path, whose size computation then raises AttributeError in the kit
    itself. int8 cases run as ever."""
    import math
    import types

    from qdq_conformance.backends.builtin import OrtBackend
    from qdq_conformance.backends.kits import ort as ort_kit

    uint8 = np.dtype(np.uint8)
    ort_kit.NATIVE = frozenset(t for t in ort_kit.NATIVE if t != uint8)
    ort_kit.NATIVE_NAMES = frozenset(t for t in ort_kit.NATIVE_NAMES if t != "tensor(uint8)")
    ort_kit.math = types.SimpleNamespace(ceil=math.ceil)  # type: ignore[assignment]  # (no prod: packed_size raises)
    return OrtBackend()


def ort_older_than_the_floor(**options):
    """The ort backend on an onnxruntime that says it is 1.15.1, below the floor."""
    import onnxruntime

    from qdq_conformance.backends.builtin import OrtBackend

    onnxruntime.__version__ = "1.15.1"
    return OrtBackend()


class Versioned(OracleBackend):
    """A backend with releases (``$QDQ_TEST_RELEASE``, default 1.0), as ``matrix`` runs them: 1.x gets the
    int8 ``basic`` cases off by one bit (fixed in 2.0); from 1.5 on it raises on the ``saturation-huge``
    cases, with the release in its words (the same finding on every release)."""

    name = "versioned"

    def __init__(self) -> None:
        super().__init__()
        self.version = os.environ.get("QDQ_TEST_RELEASE", "1.0")

    def run(self, model, feeds):
        name = model.graph.name
        release = tuple(int(p) for p in self.version.split("."))
        if "saturation-huge" in name and release >= (1, 5):
            raise RuntimeError(f"versioned {self.version}: huge values are refused since release "
                               f"{self.version}")
        outputs = super().run(model, feeds)
        if "basic" in name and "-int8" in name and release < (2,):
            outputs = [o.copy() for o in outputs]
            outputs[0].reshape(-1)[0] ^= 1  # off by one bit
        return outputs


def versioned(**options):
    return Versioned()
