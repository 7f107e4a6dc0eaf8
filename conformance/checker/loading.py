"""Reading a model for the checker without loading tensor data it does not need.

The model file must be a regular file (a FIFO or a device is refused before it is opened) of at most 2 GiB,
the protobuf limit. It is parsed without its external data: external tensors stay references (location,
offset, length), checked here for their file's kind and size only; the few tensors whose values a rule needs
(scales, zero points) are read later, one by one, in bounded chunks (:mod:`.tensors`). Every tensor's type,
dims and data size, every declared shape, and every opset import (the main graph's and each local function's)
are checked before any rule runs. Anything that makes the model unreadable raises :class:`Unreadable` with a
one-line message.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import onnx
import onnx.defs
from google.protobuf.message import DecodeError
from onnx import AttributeProto, TensorProto

from ..opspecs import AI_ONNX, OPERATORS, normalize_domain
from .model_errors import Unreadable
from .tensors import MAX_ELEMENTS, check_tensor, file_kind

__all__ = ["Unreadable", "check_external_data", "check_opsets", "check_shapes", "read_model"]

#: A protobuf message cannot be larger.
MAX_MODEL_BYTES = 2**31


def _graph_tensors(g: onnx.GraphProto) -> Iterator[TensorProto]:
    yield from g.initializer
    yield from _node_tensors(g.node)


def _node_tensors(nodes) -> Iterator[TensorProto]:  # noqa: ANN001 - repeated NodeProto
    for n in nodes:
        for a in n.attribute:
            if a.type == AttributeProto.TENSOR:
                yield a.t
            yield from a.tensors
            if a.type == AttributeProto.GRAPH:
                yield from _graph_tensors(a.g)
            for sub in a.graphs:
                yield from _graph_tensors(sub)


def _all_tensors(model: onnx.ModelProto) -> Iterator[TensorProto]:
    yield from _graph_tensors(model.graph)
    for f in model.functions:
        yield from _node_tensors(f.node)


def check_external_data(model: onnx.ModelProto, base_dir: Path) -> None:
    """Every tensor's type, dims and data agree; every external tensor's file is a regular file inside the
    model's folder and long enough."""
    sizes: dict[Path, int] = {}
    for t in _all_tensors(model):
        check_tensor(t, base_dir, sizes)


def _value_infos(g: onnx.GraphProto, where: str) -> Iterator[tuple[str, onnx.ValueInfoProto]]:
    for kind, infos in (("graph input", g.input), ("graph output", g.output), ("value_info", g.value_info)):
        for vi in infos:
            yield f"{where}{kind} {vi.name!r}", vi
    for n in g.node:
        for a in n.attribute:
            subs = [a.g] if a.type == AttributeProto.GRAPH else list(a.graphs)
            for sub in subs:
                yield from _value_infos(sub, f"node {n.name!r}'s subgraph {a.name}: ")


def check_shapes(model: onnx.ModelProto) -> None:
    """Declared tensor shapes describe a plausible number of elements."""
    infos = list(_value_infos(model.graph, ""))
    for f in model.functions:
        infos += [(f"function {normalize_domain(f.domain)}::{f.name}: value_info {vi.name!r}", vi)
                  for vi in getattr(f, "value_info", [])]
    for what, vi in infos:
        if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            continue
        # a negative dimension is read as unknown (some exporters write -1 for one)
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim
                if d.HasField("dim_value") and d.dim_value >= 0]
        total = 1
        for d in dims:
            total *= d
        if total > MAX_ELEMENTS:
            raise Unreadable(f"{what}: its shape {dims} is too large for any tensor (a corrupt header?)")


def _check_imports(imports, who: str) -> None:  # noqa: ANN001 - repeated OperatorSetIdProto
    newest = onnx.defs.onnx_opset_version()
    ours = {d for d, _ in OPERATORS}
    for imp in imports:
        domain = normalize_domain(imp.domain)
        if domain == AI_ONNX and imp.version > newest:
            raise Unreadable(f"{who} imports ai.onnx opset {imp.version}, which is newer than the installed "
                             f"onnx {onnx.__version__} knows (it defines opsets up to {newest})")
        if domain in ours and imp.version < 1:
            raise Unreadable(f"{who} imports {domain} opset {imp.version}, which does not exist")


def check_opsets(model: onnx.ModelProto) -> None:
    """Opset imports the checker can interpret, the model's and every local function's: ai.onnx no newer than
    the installed onnx knows, and no version below 1 for a domain the checker covers."""
    _check_imports(model.opset_import, "model")
    for f in model.functions:
        _check_imports(f.opset_import, f"function {normalize_domain(f.domain)}::{f.name}")


def _read(path: Path) -> bytes:
    """The whole of a regular file of at most :data:`MAX_MODEL_BYTES`, never opening anything else."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise Unreadable(f"cannot read: {e.strerror}") from None
    except ValueError as e:
        raise Unreadable(f"cannot read: {e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise Unreadable("is a directory, not a model file")
    if not stat.S_ISREG(st.st_mode):
        raise Unreadable(f"not a regular file ({file_kind(st.st_mode)}); it was not opened")
    if st.st_size > MAX_MODEL_BYTES:
        raise Unreadable(f"model file is {st.st_size} bytes; a protobuf model is at most 2 GiB (larger "
                         "tensors belong in external data)")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise Unreadable("not a regular file (it changed while it was opened)")
            return fh.read(MAX_MODEL_BYTES + 1)
    except OSError as e:
        raise Unreadable(f"cannot read: {e.strerror}") from None


def read_model(path: Path) -> onnx.ModelProto:
    """Parse ``path`` (no external data loaded) and check that it can be interpreted."""
    data = _read(path)
    if not data:
        raise Unreadable("empty file")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError, RecursionError) as e:
        raise Unreadable(f"not an ONNX model (protobuf could not be parsed: "
                         f"{' '.join(str(e).split()) or type(e).__name__})") from None
    if not model.HasField("graph") or model.ir_version <= 0:
        raise Unreadable("not an ONNX model (no graph or no IR version; truncated or another kind of file?)")
    check_opsets(model)
    check_shapes(model)
    check_external_data(model, path.parent)
    return model
