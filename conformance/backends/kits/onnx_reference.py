"""How qdq-conformance's ``onnx-reference`` backend runs a model: ``onnx.reference.ReferenceEvaluator``, its
warnings silenced. This module is the backend's run path, and every ``onnx-reference`` repro script holds it
verbatim: it imports nothing but numpy and onnx."""

import warnings

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator


def evaluator(model: onnx.ModelProto) -> ReferenceEvaluator:
    """The evaluator of ``model`` (where onnx.reference checks the model and picks its kernels)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ReferenceEvaluator(model)


def run(ev: ReferenceEvaluator, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Every output of ``ev`` on ``feeds``, in the graph's output order."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [np.asarray(o) for o in ev.run(None, dict(feeds))]
