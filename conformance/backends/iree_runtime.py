"""IREE's runtime half of the ``iree`` backend: a compiled module's ``@batch`` function called with every
slot's inputs, on the ``local-sync`` HAL driver (the calling thread runs the kernels: no thread pool, no
process of its own, and the same arithmetic whichever core count).

Arrays go in and come out as raw bytes in a buffer view of the matching ``HalElementType``: float8 and
bfloat16 through their ml_dtypes bytes, int4 / uint4 packed two to a byte, low nibble first (the order IREE's
sub-byte element types use). A slot whose case is not being run gets zeros of its input types.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import onnx

import numpy as np

from ..types import by_proto
from .base import NotApplicable

#: ONNX type name -> HalElementType attribute
HAL_TYPES = {
    "float": "FLOAT_32", "float16": "FLOAT_16", "bfloat16": "BFLOAT_16", "double": "FLOAT_64",
    "int8": "SINT_8", "uint8": "UINT_8", "int16": "SINT_16", "uint16": "UINT_16", "int32": "SINT_32",
    "uint32": "UINT_32", "int64": "SINT_64", "uint64": "UINT_64", "int4": "SINT_4", "uint4": "UINT_4",
    "float8e4m3fn": "FLOAT_8_E4M3_FN", "float8e4m3fnuz": "FLOAT_8_E4M3_FNUZ", "float8e5m2": "FLOAT_8_E5M2",
    "float8e5m2fnuz": "FLOAT_8_E5M2_FNUZ", "bool": "BOOL_8",
}

#: Signature of one slot: (ONNX element type, shape) of each input, then of each output.
Signature = tuple[list[tuple[int, list[int]]], list[tuple[int, list[int]]]]


def _pack4(a: np.ndarray) -> bytes:
    codes = a.reshape(-1).view(np.uint8) & 0x0F
    if codes.size % 2:
        codes = np.append(codes, np.uint8(0))
    return (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8).tobytes()


def _unpack4(raw: bytes, count: int, dtype: np.dtype) -> np.ndarray:
    b = np.frombuffer(raw, np.uint8)
    codes = np.empty(b.size * 2, np.uint8)
    codes[0::2], codes[1::2] = b & 0x0F, b >> 4
    return codes[:count].view(dtype)


class Runtime:
    """One HAL device and the modules loaded on it (the most recent ``keep``, by key)."""

    def __init__(self, keep: int = 32) -> None:
        import iree.runtime as rt  # (the iree extra)

        self._rt = rt
        self.config = rt.Config("local-sync")
        self.device = self.config.device
        self._hal = rt.create_hal_module(self.config.vm_instance, self.device)
        self._loaded: OrderedDict[str, tuple[Any, Any]] = OrderedDict()
        self._keep = keep

    def _module(self, key: str, data: bytes) -> tuple[Any, Any]:
        got = self._loaded.pop(key, None)
        if got is None:
            rt = self._rt
            vm = rt.VmModule.copy_buffer(self.config.vm_instance, data)
            got = (rt.VmContext(self.config.vm_instance, modules=[self._hal, vm]),
                   vm.lookup_function("batch"))
        self._loaded[key] = got
        while len(self._loaded) > self._keep:
            self._loaded.popitem(last=False)
        return got

    def _view(self, array: np.ndarray, elem: int) -> Any:
        rt = self._rt
        t = by_proto(elem)
        if t.name not in HAL_TYPES:
            raise NotApplicable(f"IREE's runtime has no element type for {t.name}")
        kind = getattr(rt.HalElementType, HAL_TYPES[t.name])
        # (keeps a 0-d array 0-d, as ascontiguousarray does not)
        a = np.array(array, dtype=t.dtype, order="C")
        raw = _pack4(a) if t.bits == 4 else a.reshape(-1).view(np.uint8).tobytes()
        usage = rt.BufferUsage.DEFAULT | rt.BufferUsage.MAPPING
        buf = self.device.allocator.allocate_buffer(rt.MemoryType.DEVICE_LOCAL | rt.MemoryType.HOST_VISIBLE,
                                                    usage, max(1, len(raw)))
        if raw:
            mapped = buf.map().asarray([len(raw)], np.dtype(np.uint8))
            mapped[:] = np.frombuffer(raw, np.uint8)
        return rt.HalBufferView(buf, list(a.shape), kind)

    def _array(self, view: Any, elem: int) -> np.ndarray:
        t = by_proto(elem)
        shape = list(view.shape)
        count = int(np.prod(shape)) if shape else 1
        raw = bytes(view.map().asarray([view.byte_length], np.dtype(np.uint8)).tobytes())
        if t.bits == 4:
            return _unpack4(raw, count, t.dtype).reshape(shape)
        return np.frombuffer(raw, np.uint8)[:count * t.dtype.itemsize].view(t.dtype).reshape(shape).copy()

    def call(self, key: str, data: bytes, signatures: Sequence[Signature],
             feeds: dict[int, Sequence[np.ndarray]]) -> dict[int, list[np.ndarray]]:
        """Call the module's ``@batch`` once: slot k gets ``feeds[k]`` (zeros when absent); the outputs of the
        slots in ``feeds``."""
        rt = self._rt
        context, function = self._module(key, data)
        args = rt.VmVariantList(sum(len(s[0]) for s in signatures))
        for k, (inputs, _) in enumerate(signatures):
            given = feeds.get(k)
            for i, (elem, shape) in enumerate(inputs):
                value = given[i] if given is not None else np.zeros(shape, by_proto(elem).dtype)
                args.push_ref(self._view(value, elem))
        total = sum(len(s[1]) for s in signatures)
        results = rt.VmVariantList(total)
        context.invoke(function, args, results)
        out: dict[int, list[np.ndarray]] = {}
        n = 0
        for k, (_, outputs) in enumerate(signatures):
            if k in feeds:
                out[k] = [self._array(results.get_as_object(n + i, rt.HalBufferView), elem)
                          for i, (elem, _) in enumerate(outputs)]
            n += len(outputs)
        return out


def signature(model: onnx.ModelProto) -> Signature:
    """The element types and shapes of a model's inputs (those the importer makes arguments) and outputs (an
    unknown dimension counts as 1)."""
    def one(vi: onnx.ValueInfoProto) -> tuple[int, list[int]]:
        tt = vi.type.tensor_type
        return tt.elem_type, [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]

    held = {t.name for t in model.graph.initializer}  # (the importer leaves initialized inputs out too)
    return [one(v) for v in model.graph.input if v.name not in held], [one(v) for v in model.graph.output]
