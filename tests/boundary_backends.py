"""A test backend with one real shortcut: QuantizeLinear adds the zero point before rounding
(``round(x / y_scale + y_zero_point)``), which moves ties by one when the zero point is odd."""

from __future__ import annotations

import numpy as np

from qdq_conformance.backends.builtin import OracleBackend
from qdq_conformance.types import by_dtype


class ZeroPointFirst(OracleBackend):
    name = "zero-point-first"
    version = "0.0-test"

    def run(self, model, feeds):
        node = model.graph.node[0]
        if node.op_type != "QuantizeLinear" or len(node.input) < 3:
            return super().run(model, feeds)
        x, s, z = (feeds[n] for n in node.input)
        t = by_dtype(z.dtype)
        with np.errstate(all="ignore"):
            q = x.astype(np.float32) / s.astype(np.float32) + z.astype(np.float32)
        y = np.clip(np.rint(q), t.int_min, t.int_max)
        return [y.astype(t.dtype)]


def make(**options):
    return ZeroPointFirst()
