from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest

from qdq_conformance.types import from_tensor_proto


def as_array(value: object) -> np.ndarray:
    """ONNX's node-test data sets hold arrays or TensorProtos (for exotic types)."""
    if isinstance(value, onnx.TensorProto):
        return from_tensor_proto(value)
    return np.asarray(value)


@pytest.fixture(scope="session")
def onnx_node_cases():
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    ops = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"}
    return [c for c in cases if len(c.model.graph.node) == 1 and c.model.graph.node[0].op_type in ops]


@pytest.fixture(scope="session")
def corpus():
    """The default corpus, expanded once per test session: through the expansion cache, which the other
    processes of the session (pytest-xdist workers, the commands the tests run) read too."""
    from qdq_conformance.generators.cache import load_file_cached
    from qdq_conformance.generators.corpus import load

    return load(loader=load_file_cached)
