"""How qdq-conformance's ``tinygrad`` backend runs a model: tinygrad's ONNX frontend
(``tinygrad.nn.onnx.OnnxRunner``) on its CPU device (``DEV=CPU`` unless set; it compiles every kernel with
clang), the model read from a file, unchanged. This module is the backend's run path, and every ``tinygrad``
repro script holds it verbatim: it imports nothing but numpy, onnx and tinygrad."""

import os
import tempfile

os.environ.setdefault("DEV", "CPU")  # (read once, when tinygrad is imported)

import numpy as np  # noqa: E402 - (after the environment tinygrad reads at import)
import onnx  # noqa: E402
from tinygrad.nn.onnx import OnnxRunner  # noqa: E402


def runner(model: onnx.ModelProto) -> OnnxRunner:
    """tinygrad's runner of ``model`` (its frontend parses the file with its own protobuf reader)."""
    with tempfile.TemporaryDirectory(prefix="qdq-tinygrad-") as tmp:
        path = os.path.join(tmp, "model.onnx")
        onnx.save(model, path)
        return OnnxRunner(path)


def run(program: OnnxRunner, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs, in the graph's order, of ``program`` on ``feeds``."""
    out = program({k: np.asarray(v) for k, v in feeds.items()})
    return [out[o.name].numpy() for o in model.graph.output]
