"""How qdq-conformance's ``tract`` backend runs a model: tract (Sonos, Rust) loads the model from a file,
``into_model().into_runnable()``, and runs it on the graph inputs in the graph's order. ``RUST_BACKTRACE=0``
before tract is imported: with a backtrace asked for, every refusal costs about 0.25 s. This module is the
backend's run path, and every ``tract`` repro script holds it verbatim: it imports nothing but numpy, onnx and
tract."""

import os
import tempfile

os.environ["RUST_BACKTRACE"] = "0"
os.environ["RUST_LIB_BACKTRACE"] = "0"

import numpy as np  # noqa: E402 - (after the environment tract reads when its library loads)
import onnx  # noqa: E402
import tract  # noqa: E402


def runnable(model: onnx.ModelProto) -> "tract.Runnable":
    """``model`` (written to a temporary file, unchanged) loaded and made runnable by tract."""
    with tempfile.TemporaryDirectory(prefix="qdq-tract-") as tmp:
        path = os.path.join(tmp, "model.onnx")
        onnx.save(model, path)
        return tract.onnx().load(path).into_model().into_runnable()


def run(program: "tract.Runnable", model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The outputs of ``program`` on ``feeds``, given in the order of the model's graph inputs."""
    outs = program.run([np.asarray(feeds[i.name]) for i in model.graph.input])
    return [o.to_numpy() for o in outs]
