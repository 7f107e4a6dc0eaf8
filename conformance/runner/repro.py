"""A short, self-contained Python reproduction of one case, for a vendor's bug report.

It rebuilds the single-node model with onnx.helper, every input an initializer holding the exact bytes of the
case (so no exotic-type feeding is needed), and runs it with the backend's own API.
"""

from __future__ import annotations

import numpy as np
import onnx

from ..reference.graph import tensor_value
from ..types import NUMPY_NATIVE, by_dtype


def array_code(a: np.ndarray) -> str:
    if a.dtype == np.int64:  # a graph case's shapes and indices
        return f"np.array({a.tolist()!r}, np.int64)"
    t = by_dtype(a.dtype)
    dtype = f"np.{t.dtype.name}" if t.dtype in NUMPY_NATIVE else f"ml_dtypes.{t.dtype.name}"
    raw = np.ascontiguousarray(a).view(np.uint8).tobytes().hex()
    return f"np.frombuffer(bytes.fromhex({raw!r}), np.uint8).view({dtype}).reshape({list(a.shape)!r})"


def model_code(model: onnx.ModelProto, values: dict[str, np.ndarray]) -> str:
    """Python that defines ``model``: its nodes (one for a single-node case, several for a graph case) with
    every input an initializer."""
    nodes = [n for n in model.graph.node if n.op_type != "Constant"]
    lines = ["import ml_dtypes", "import numpy as np", "import onnx", "from onnx import helper, numpy_helper",
             ""]
    lines.append("inputs = {")
    for name in dict.fromkeys(i for n in nodes for i in n.input):
        if name and name in values:
            lines.append(f"    {name!r}: {array_code(values[name])},")
    lines.append("}")
    outs = ", ".join(f"helper.make_tensor_value_info({o.name!r}, {o.type.tensor_type.elem_type}, None)"
                     for o in model.graph.output)
    opsets = ", ".join(f"helper.make_opsetid({o.domain!r}, {o.version})" for o in model.opset_import)
    made = []
    for k, node in enumerate(nodes):
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        name = "node" if len(nodes) == 1 else f"node{k}"
        made.append(name)
        lines.append(f"{name} = helper.make_node({node.op_type!r}, {list(node.input)!r}, "
                     f"{list(node.output)!r}, "
                     f"domain={node.domain!r}{''.join(f', {k}={v!r}' for k, v in sorted(attrs.items()))})")
    lines += [
        f"graph = helper.make_graph([{', '.join(made)}], 'repro', [], [{outs}],",
        "                          initializer=[numpy_helper.from_array(v, k) for k, v in inputs.items()])",
        f"model = helper.make_model(graph, opset_imports=[{opsets}])",
        f"model.ir_version = {model.ir_version}",
    ]
    return "\n".join(lines)


def values_of(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    values = {i.name: tensor_value(i) for i in model.graph.initializer}
    values.update(feeds)
    return values


#: stand-ins a backend's ``repro`` is called with once, in its worker, to make a template of its repro script
CODE_MARK = "__qdq_conformance_model_code__"
MAX_OUTPUTS = 4


def _output_mark(k: int) -> str:
    return f"__qdq_conformance_output_{k}__"


def templates_of(backend: object) -> dict[int, str]:
    """The backend's repro script with stand-ins for the model code and the output names, per number of
    outputs: made in the backend's worker, so that the pytest process writes the repro of a case whose worker
    crashed or hung without ever creating a backend (see :class:`TemplateRepro`)."""
    repro = getattr(backend, "repro", None)
    templates: dict[int, str] = {}
    if repro is None:
        return templates
    for n in range(1, MAX_OUTPUTS + 1):
        try:
            text = repro(CODE_MARK, [_output_mark(k) for k in range(n)])
        except Exception:  # a backend that cannot write its repro: the record gets the model code alone
            continue
        if isinstance(text, str) and text.count(CODE_MARK) == 1:
            templates[n] = text
    return templates


class TemplateRepro:
    """A backend's ``repro(model_code, output_names)``, from the templates its worker made (picklable, and
    needing no backend). Raises LookupError when there is no template for that many outputs (the record then
    holds the model code alone)."""

    def __init__(self, templates: dict[int, str]) -> None:
        self.templates = dict(templates)

    def __call__(self, model_code: str, output_names: list[str]) -> str:
        text = self.templates.get(len(output_names))
        if text is None:
            raise LookupError(f"no repro template for {len(output_names)} outputs")
        for k, name in enumerate(output_names):
            mark = _output_mark(k)
            text = text.replace(repr(mark), repr(name)).replace(mark, name)
        return text.replace(CODE_MARK, model_code)
