"""How qdq-conformance's ``tvm`` backend runs a model: Apache TVM's Relax ONNX importer
(``from_onnx(model, keep_params_in_input=False)``), ``tvm.compile`` for the target (``llvm``), the Relax
virtual machine on the CPU; each input goes in as a ``tvm.runtime.Tensor`` copy of the array, each output
comes back as an array of its ONNX element type. This module is the backend's run path, and every ``tvm``
repro script holds it verbatim: it imports nothing but numpy, onnx and TVM."""

import numpy as np
import onnx
import tvm
from onnx import helper
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx


def machine(model: onnx.ModelProto, target: str = "llvm") -> relax.VirtualMachine:
    """``model`` imported by Relax and compiled for ``target``, in a virtual machine on the CPU."""
    return relax.VirtualMachine(tvm.compile(from_onnx(model, keep_params_in_input=False), target=target),
                                tvm.cpu())


def tensor(value: np.ndarray) -> "tvm.runtime.Tensor":
    """A TVM tensor on the CPU holding a copy of ``value``."""
    value = np.asarray(value, order="C")  # (keeps 0-d arrays 0-d)
    out = tvm.runtime.empty(value.shape, str(value.dtype), tvm.cpu())
    out.copyfrom(value)
    return out


def arguments(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list["tvm.runtime.Tensor"]:
    """The graph inputs, in the graph's order, as TVM tensors."""
    return [tensor(feeds[inp.name]) for inp in model.graph.input]


def to_array(value: "tvm.runtime.Tensor") -> np.ndarray:
    """A TVM tensor's elements as an array of their ONNX element type (TVM spells float8 types its own way,
    and ``numpy()`` may widen them)."""
    a = value.numpy()
    dtype = str(value.dtype)
    for name, elem in onnx.TensorProto.DataType.items():
        if elem == onnx.TensorProto.UNDEFINED or name in ("STRING", "COMPLEX64", "COMPLEX128"):
            continue
        try:
            want = np.dtype(helper.tensor_dtype_to_np_dtype(elem))
        except (KeyError, TypeError, ValueError):
            continue
        if want == a.dtype or dtype in (name.lower(), str(want)):
            return a.astype(want) if a.dtype != want else a
    return a


def run(vm: relax.VirtualMachine, args: list["tvm.runtime.Tensor"]) -> list[np.ndarray]:
    """The outputs of the machine's ``main`` on ``args``."""
    out = vm["main"](*args)
    outs = list(out) if isinstance(out, (list, tuple)) or type(out).__name__ == "Array" else [out]
    return [to_array(o) for o in outs]
