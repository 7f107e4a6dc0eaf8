"""Backends with one planted bug, for ``qdq-conformance fuzz``'s tests: the oracle, except where the bug
is."""

from __future__ import annotations

import numpy as np
import onnx

from qdq_conformance.backends.builtin import OracleBackend


class ZeroPointTwice(OracleBackend):
    """ai.onnx QuantizeLinear from float to uint8 with a zero point input and a scalar scale adds the zero
    point twice (then saturates) for finite x; everything else is the oracle's."""

    name = "planted-zp-twice"
    version = "0.0-test"

    def run(self, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        outputs = super().run(model, feeds)
        node = model.graph.node[-1]
        if node.op_type != "QuantizeLinear" or node.domain not in ("", "ai.onnx") or len(node.input) < 3 \
                or not node.input[2]:
            return outputs
        values = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
        values.update(feeds)
        x, scale, zp = (values[n] for n in node.input[:3])
        y = outputs[0]
        if y.dtype != np.uint8 or np.ndim(scale) != 0 or x.dtype != np.float32 or scale.dtype != np.float32:
            return outputs
        # (where x is finite: NaN and the infinities stay as the oracle has them, so the bug is one finding)
        return [np.where(np.isfinite(x), np.clip(y.astype(np.int64) + int(zp), 0, 255), y).astype(np.uint8)]


def planted(**options: object) -> ZeroPointTwice:
    return ZeroPointTwice()


class PerAxisPlusOne(OracleBackend):
    """ai.onnx DequantizeLinear with a 1-D scale (per-axis, or per-tensor given as [1]) adds 1 to every output
    element; everything else is the oracle's. Any per-axis case fails, whatever its shape: the fuzzer must
    shrink the shape, the scale and the zero point together down to the smallest valid per-axis case."""

    name = "planted-per-axis-plus-one"
    version = "0.0-test"

    def run(self, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        outputs = super().run(model, feeds)
        node = model.graph.node[-1]
        if node.op_type != "DequantizeLinear" or node.domain not in ("", "ai.onnx"):
            return outputs
        values = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
        values.update(feeds)
        if np.ndim(values[node.input[1]]) != 1:
            return outputs
        return [(outputs[0] + 1).astype(outputs[0].dtype), *outputs[1:]]


def per_axis(**options: object) -> PerAxisPlusOne:
    return PerAxisPlusOne()
