"""A short, self-contained Python reproduction of one case, for a vendor's bug report.

It rebuilds the single-node model with onnx.helper, every input an initializer holding the exact bytes of the
case (so no exotic-type feeding is needed), and runs it with the backend's own API.
"""

from __future__ import annotations

import numpy as np
import onnx

from ..types import NUMPY_NATIVE, by_dtype


def array_code(a: np.ndarray) -> str:
    t = by_dtype(a.dtype)
    dtype = f"np.{t.dtype.name}" if t.dtype in NUMPY_NATIVE else f"ml_dtypes.{t.dtype.name}"
    raw = np.ascontiguousarray(a).view(np.uint8).tobytes().hex()
    return f"np.frombuffer(bytes.fromhex({raw!r}), np.uint8).view({dtype}).reshape({list(a.shape)!r})"


def model_code(model: onnx.ModelProto, values: dict[str, np.ndarray]) -> str:
    """Python that defines ``model``: the node of ``model`` with every input an initializer."""
    node = next(n for n in model.graph.node if n.op_type != "Constant")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    lines = ["import ml_dtypes", "import numpy as np", "import onnx", "from onnx import helper, numpy_helper", ""]
    lines.append("inputs = {")
    for name in node.input:
        if name:
            lines.append(f"    {name!r}: {array_code(values[name])},")
    lines.append("}")
    outs = ", ".join(f"helper.make_tensor_value_info({o.name!r}, {o.type.tensor_type.elem_type}, None)"
                     for o in model.graph.output)
    opsets = ", ".join(f"helper.make_opsetid({o.domain!r}, {o.version})" for o in model.opset_import)
    lines += [
        f"node = helper.make_node({node.op_type!r}, {list(node.input)!r}, {list(node.output)!r}, "
        f"domain={node.domain!r}{''.join(f', {k}={v!r}' for k, v in sorted(attrs.items()))})",
        f"graph = helper.make_graph([node], 'repro', [], [{outs}],",
        "                          initializer=[numpy_helper.from_array(v, k) for k, v in inputs.items()])",
        f"model = helper.make_model(graph, opset_imports=[{opsets}])",
        f"model.ir_version = {model.ir_version}",
    ]
    return "\n".join(lines)


def values_of(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    from ..types import from_tensor_proto

    values = {i.name: from_tensor_proto(i) for i in model.graph.initializer}
    values.update(feeds)
    return values
