"""A case as Python that a backend's repro script runs: the model exactly as the run gave it to the backend
(its serialized bytes: graph inputs stay graph inputs, initializers stay initializers) and the inputs it was
fed, each as the bytes of a TensorProto, so that no value or element type is rewritten on the way. The model's
text (``onnx.printer``) and each input's values are comments, for a reader.
"""

from __future__ import annotations

import base64

import numpy as np
import onnx
from onnx import numpy_helper

from ..reference.graph_oracle import tensor_value

#: a comment line of the model's text or of an input's values is cut here; the model's text after this many
#: lines (a big initializer)
COMMENT_WIDTH = 110
COMMENT_LINES = 40


def _bytes_code(data: bytes, indent: str = "    ") -> str:
    """``base64.b64decode(...)`` of ``data``, its text in lines of at most 100 characters."""
    text = base64.b64encode(data).decode("ascii")
    parts = [text[i:i + 96] for i in range(0, len(text), 96)] or [""]
    return "base64.b64decode(\n" + "\n".join(f'{indent}    "{p}"' for p in parts) + ")"


def _shown(a: np.ndarray) -> str:
    text = " ".join(np.array2string(np.asarray(a), threshold=16, max_line_width=10**6).split())
    return text if len(text) < 80 else text[:76] + " ..."


def model_code(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> str:
    """Python that defines ``model`` (the onnx.ModelProto the backend was given) and ``feeds`` (its graph
    inputs by name, as the run fed them)."""
    lines = ["import base64", "", "import numpy as np", "import onnx", "from onnx import numpy_helper", "",
             "# the model (onnx.printer's text):"]
    try:
        text = onnx.printer.to_text(model).splitlines()
    except Exception:  # noqa: BLE001 - the text is for a reader; the bytes below are the model
        text = ["(onnx.printer cannot print this model)"]
    shown = [ln.rstrip()[:COMMENT_WIDTH - 4] for ln in text if ln.strip()]
    if len(shown) > COMMENT_LINES:
        shown = shown[:COMMENT_LINES] + [f"... ({len(shown) - COMMENT_LINES} more lines)"]
    lines += [f"#   {ln}" for ln in shown]
    data = model.SerializeToString(deterministic=True)
    lines.append(f"model = onnx.load_model_from_string({_bytes_code(data)})")
    lines.append("feeds = {  # the graph inputs, fed at run time")
    for name, value in feeds.items():
        a = np.asarray(value)
        proto = numpy_helper.from_array(a, name).SerializeToString()
        lines.append(f"    # {name}: {a.dtype}{list(a.shape)} = {_shown(a)}")
        lines.append(f"    {name!r}: numpy_helper.to_array(onnx.load_tensor_from_string("
                     f"{_bytes_code(proto, '        ')})),")
    lines.append("}")
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
