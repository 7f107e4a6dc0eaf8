"""Reading a model for the checker without loading tensor data it does not need.

The model is parsed with ``load_external_data=False``: external tensors stay references (location, offset,
length). Only their files' existence and size are checked here; the few tensors whose values a rule needs (scales,
zero points) are read later, one by one. Anything that makes the model unreadable raises :class:`Unreadable`
with a one-line message.
"""

from __future__ import annotations

import os
from pathlib import Path

import onnx
import onnx.defs
from google.protobuf.message import DecodeError
from onnx import TensorProto

from ..opspecs import AI_ONNX, OPERATORS


class Unreadable(Exception):
    """The input could not be read as an ONNX model (the checker's exit status 2)."""


def _external_info(t: TensorProto) -> dict[str, str]:
    return {e.key: e.value for e in t.external_data}


def _all_tensors(model: onnx.ModelProto):  # noqa: ANN202 - Iterator[TensorProto]
    def graph_tensors(g: onnx.GraphProto):  # noqa: ANN202
        yield from g.initializer
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    yield a.t
                yield from a.tensors
                if a.type == onnx.AttributeProto.GRAPH:
                    yield from graph_tensors(a.g)
                for sub in a.graphs:
                    yield from graph_tensors(sub)

    yield from graph_tensors(model.graph)
    for f in model.functions:
        for n in f.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    yield a.t


def check_external_data(model: onnx.ModelProto, base_dir: Path) -> None:
    """Every external tensor's file exists, stays inside the model's folder, and is long enough."""
    sizes: dict[Path, int] = {}
    for t in _all_tensors(model):
        if t.data_location != TensorProto.EXTERNAL:
            continue
        info = _external_info(t)
        location = info.get("location")
        if not location:
            raise Unreadable(f"tensor {t.name!r} is stored externally but names no location")
        path = (base_dir / location).resolve()
        if os.path.isabs(location) or base_dir.resolve() not in path.parents:
            raise Unreadable(f"tensor {t.name!r}: external data location {location!r} is outside the model's folder")
        if path not in sizes:
            try:
                sizes[path] = path.stat().st_size
            except OSError as e:
                raise Unreadable(f"tensor {t.name!r}: external data file {location!r} cannot be read "
                                 f"({e.strerror})") from None
        offset = int(info.get("offset", 0) or 0)
        length = info.get("length")
        if length is not None and offset + int(length) > sizes[path]:
            raise Unreadable(f"tensor {t.name!r}: external data file {location!r} has {sizes[path]} bytes, "
                             f"the tensor needs bytes {offset}..{offset + int(length)}")


def check_opsets(model: onnx.ModelProto) -> None:
    """Opset imports the checker can interpret: ai.onnx no newer than the installed onnx knows."""
    newest = onnx.defs.onnx_opset_version()
    ours = {d for d, _ in OPERATORS}
    for imp in model.opset_import:
        domain = imp.domain or AI_ONNX
        if domain == AI_ONNX and imp.version > newest:
            raise Unreadable(f"model imports ai.onnx opset {imp.version}; the installed onnx "
                             f"{onnx.__version__} defines opsets up to {newest}")
        if domain in ours and imp.version < 1:
            raise Unreadable(f"model imports {domain} opset {imp.version}, which does not exist")


def read_model(path: Path) -> onnx.ModelProto:
    """Parse ``path`` (no external data loaded) and check that it can be interpreted."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise Unreadable("is a directory, not a model file") from None
    except OSError as e:
        raise Unreadable(f"cannot read: {e.strerror}") from None
    if not data:
        raise Unreadable("empty file")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as e:
        raise Unreadable(f"not an ONNX model (protobuf could not be parsed: {str(e) or type(e).__name__})") from None
    if not model.HasField("graph") or model.ir_version <= 0:
        raise Unreadable("not an ONNX model (no graph or no IR version; truncated or another kind of file?)")
    check_opsets(model)
    check_external_data(model, path.parent)
    return model
