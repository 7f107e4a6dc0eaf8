"""tinygrad (``pip install tinygrad``): its ONNX frontend (``tinygrad.nn.onnx.OnnxRunner``) on tinygrad's CPU
device, which compiles every kernel with clang (``$CC``, else ``clang`` on PATH: Debian's ``clang`` package).

tinygrad's frontend reads the model file with its own protobuf parser and maps ONNX element types through its
``OnnxDataType`` table (no float8, no 4-bit or 2-bit types). The adapter exchanges numpy's own types only: a
graph input or output of bfloat16, float8, 4-bit or 2-bit type is not applicable (the adapter's limit). The
model is written to a temporary file, unchanged.

Unsupported or rejected: the frontend's own "no implementation" is ``NotImplementedError`` (an operator or a
version it does not have); beyond that, a few message markers (:data:`MARKERS`), each tested on the installed
release (tests/test_new_backends.py) and reported by a whole run that none of its refusals matched. Any other
exception while loading is a rejection; while running, an error of the case.

Environment set here, before tinygrad is imported: ``DEV=CPU`` and ``CACHEDB`` in this suite's cache folder
(``$QDQ_CACHE_DIR/tinygrad/cache.db``: compiled kernels are kept between runs), unless already set.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from importlib import metadata

import numpy as np
import onnx

from ..cachedir import cache_root
from . import kits
from .base import BackendUnavailable, NotApplicable, Rejected, Unsupported
from .markers import Marker, MarkerSet, exotic_io

#: Fragments of tinygrad's messages that say it does not implement what the model needs (besides
#: NotImplementedError). Each is tested on the installed tinygrad (tests/test_new_backends.py).
MARKERS = MarkerSet("tinygrad", (
    Marker("is not a valid OnnxDataType", "an element type its frontend's OnnxDataType table does not list"),
    Marker("is not a valid Domain", "an operator domain its frontend does not know (com.amd.quark)"),
    Marker("no fmt dtype for", "a bfloat16 initializer (tinygrad cannot load one from the model)"),
    Marker("unexpected keyword argument", "an attribute its operator does not implement (DequantizeLinear's "
           "output_dtype)"),
))


class ClangMissing(BackendUnavailable):
    """tinygrad's CPU device has no C compiler to build its kernels with."""


def _message(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:500]


def set_environment() -> None:
    """``DEV`` and ``CACHEDB`` unless set: before anything imports tinygrad, which reads them once, at import
    (the factory's availability check imports it, so it calls this first)."""
    os.environ.setdefault("DEV", "CPU")
    os.environ.setdefault("CACHEDB", str(cache_root() / "tinygrad" / "cache.db"))


class TinygradBackend:
    name = "tinygrad"

    def __init__(self) -> None:
        set_environment()
        # optional (the tinygrad extra), after the environment above: its kit imports tinygrad
        from .kits import tinygrad as kit

        compiler = os.environ.get("CC") or "clang"
        if shutil.which(compiler) is None:
            raise ClangMissing(f"tinygrad's CPU device compiles its kernels with {compiler!r}, which is not "
                               "on PATH (Debian / Ubuntu: apt-get install clang; or set CC)")
        self.kit = kit
        self.version = metadata.version("tinygrad")

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        exotic = exotic_io(model)
        if exotic:
            raise NotApplicable(f"this adapter exchanges numpy's own types with tinygrad; {exotic} is not "
                                "one")
        try:
            program = self.kit.runner(model)
        except NotImplementedError as e:
            raise Unsupported(_message(e)) from None
        except Exception as e:  # noqa: BLE001 - the frontend's parser raises many types
            text = _message(e)
            why = MARKERS.reason(text)
            raise (Unsupported(why) if why else Rejected(text)) from None
        try:
            return self.kit.run(program, model, dict(feeds))
        except NotImplementedError as e:
            raise Unsupported(_message(e)) from None
        except Exception as e:  # noqa: BLE001 - a marker says unsupported; anything else is an error of the case
            why = MARKERS.reason(_message(e))
            if why:
                raise Unsupported(why) from None
            raise

    def repro(self, model_code: str, output_names: list[str]) -> str:
        return kits.script(self.kit, model_code, ["outputs = run(runner(model), model, feeds)"], output_names)
