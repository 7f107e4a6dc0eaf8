"""Other readings of ambiguity-catalogue entries, to tell when a case's answer depends on one.

The corpus generator runs these on every normative case; where another reading gives a different answer for
that case's inputs, the case is implementation-defined (naming the entry), never normative by accident.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import TensorProto

from ..compare import compare
from ..opspecs import AI_ONNX, MS, get
from ..types import TYPES, by_dtype
from . import arith, evaluate
from . import granularity as gran

_NARROW = ("float16", "bfloat16")


def _widened_dq(domain: str, version: int, inputs: Sequence[np.ndarray | None], attrs: dict[str, int],
                out_name: str) -> list[np.ndarray]:
    """dq-precision, widened reading: exact (x - x_zero_point) * x_scale rounded once to the output type."""
    spec = get(domain, "DequantizeLinear", version)
    x, scale = inputs[0], inputs[1]
    zp = inputs[2] if len(inputs) > 2 else None
    assert x is not None and scale is not None
    merged = {**spec.attributes, **attrs}
    g = gran.resolve(spec, x.shape, scale.shape, None if zp is None else zp.shape, merged, "x_scale")
    d = arith.to_float64(x)
    if zp is not None:
        d = d - arith.to_float64(gran.broadcast(zp, x.shape, g))
    out = TYPES[out_name]
    with np.errstate(all="ignore"):
        prod = d * arith.to_float64(gran.broadcast(scale, x.shape, g))
    return [arith.cast_float(arith.round_to(prod, out), out).reshape(x.shape)]


def alternatives(domain: str, op: str, version: int, inputs: Sequence[np.ndarray | None],
                 attrs: dict[str, int], outputs: Sequence[np.ndarray]) -> list[tuple[str, list[np.ndarray]]]:
    """(ambiguity id, outputs) for every applicable other reading that changes the answer."""
    found: list[tuple[str, list[np.ndarray]]] = []
    x = inputs[0]
    scale = inputs[1] if len(inputs) > 1 else None
    if x is None or scale is None or op not in ("QuantizeLinear", "DequantizeLinear"):
        return found
    xt, st = by_dtype(x.dtype), by_dtype(scale.dtype)
    try:
        if op == "DequantizeLinear" and (domain == MS or version >= 19):
            out = by_dtype(outputs[0].dtype).name
            if out in _NARROW:
                alt = _widened_dq(domain, version, inputs, attrs, out)
                if compare(outputs[0], alt[0]) is not None:
                    found.append(("dq-precision", alt))
        if op == "QuantizeLinear":
            q_attrs = {k: v for k, v in attrs.items() if k != "axis" or domain != MS}
            if domain == MS and "axis" in attrs:
                q_attrs["axis"] = attrs["axis"]
            if (domain == MS or (domain == AI_ONNX and version in (19, 21))) and st.name in _NARROW:
                alt = evaluate(AI_ONNX, "QuantizeLinear", 23, inputs, {**q_attrs, "precision": TensorProto.FLOAT})
                if compare(outputs[0], alt[0]) is not None:
                    found.append(("division-precision", alt))
            if domain == AI_ONNX and version >= 23:
                p = by_dtype(np.zeros((), TYPES[_precision_name(attrs, st)].dtype).dtype)
                wider = xt.name == "int32" or (xt.bits > p.bits and xt.is_float) or \
                    (xt.name in _NARROW and p.name in _NARROW and xt is not p)
                if wider and p.name != "int32":
                    alt = evaluate(AI_ONNX, "QuantizeLinear", version, inputs,
                                   {**attrs, "precision": TensorProto.INT32})
                    if compare(outputs[0], alt[0]) is not None:
                        found.append(("mixed-precision-operands", alt))
    except Exception:  # an alternative reading the kernel cannot express is no evidence either way
        return found
    return found


def _precision_name(attrs: dict[str, int], scale_type: object) -> str:
    from ..types import by_proto

    if attrs.get("precision"):
        return by_proto(int(attrs["precision"])).name
    name = getattr(scale_type, "name", "float")
    return "float" if name == "float8e8m0" else name
