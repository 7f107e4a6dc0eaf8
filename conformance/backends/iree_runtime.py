"""IREE's runtime half of the ``iree`` backend: a compiled module's ``@batch`` function called with every
slot's inputs, on the ``local-sync`` HAL driver (the calling thread runs the kernels: no thread pool, no
process of its own, and the same arithmetic whichever core count).

Arrays go in and come out through the kit's conversions (``kits/iree.py``: raw bytes in a buffer view of the
matching ``HalElementType``, int4 / uint4 packed two to a byte, low nibble first). A slot whose case is not
being run gets zeros of its input types.
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

#: Signature of one slot: (ONNX element type, shape) of each input, then of each output.
Signature = tuple[list[tuple[int, list[int]]], list[tuple[int, list[int]]]]


class Runtime:
    """One HAL device and the modules loaded on it (the most recent ``keep``, by key)."""

    def __init__(self, keep: int = 32) -> None:
        from .kits import iree as kit  # (the iree extra: the kit imports IREE)

        rt = kit.rt
        self.kit = kit
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
        t = by_proto(elem)
        if t.name not in self.kit.HAL_TYPES:
            raise NotApplicable(f"IREE's runtime has no element type for {t.name}")
        return self.kit.to_view(self.device, array, elem)

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
                out[k] = [self.kit.from_view(results.get_as_object(n + i, rt.HalBufferView), elem)
                          for i, (elem, _) in enumerate(outputs)]
            n += len(outputs)
        return out


def signature(model: onnx.ModelProto) -> Signature:
    """The element types and shapes of a model's inputs (those the importer makes arguments) and outputs (an
    unknown dimension counts as 1): the kit's (imported here: it imports IREE)."""
    from .kits import iree as kit  # (the iree extra: the kit imports IREE)

    return kit.signature(model)
