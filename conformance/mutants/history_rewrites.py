"""Graph-rewrite mutants from ONNX Runtime's release history: fusions whose checks were wrong in a release.

- A Relu in front of a QuantizeLinear is redundant when the quantization clips at zero anyway: when the zero
  point is the target's lowest code. A check that reads a 16-bit zero point of 0 as that lowest code (right
  for uint16, wrong for int16, whose 0 is mid-range) drops a Relu the values need.
- A DequantizeLinear -> QuantizeLinear pair with the same scale and zero point gives the codes back only when
  the dequantized value is exact in the DequantizeLinear's output type: with a float16 scale (legal since
  opset 19) and 16-bit codes it is not, so removing the pair changes codes.
- A QuantizeLinear -> DequantizeLinear pair whose scales differ in float type (float for Q, float16 for DQ:
  the float16 scale is the float one rounded) is not one shared scale: a pass that gives the DequantizeLinear
  the QuantizeLinear's scale changes its output's type and values (ONNX Runtime failed to create sessions on
  such pairs for several releases).
"""

from __future__ import annotations

import onnx
from onnx import helper

from .mutant import F16, F32, I16, GraphWitness, a, rewrite_mutant
from .rewrites import DQ_SENTENCE, GRAPH, Q_SENTENCE, Feeds, _equal, _fed, _identity, _model, _prune, _value

RELU = "Relu: y = max(0, x)."
SIXTEEN_BIT = ("int16", "uint16")


def _quantize_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """Every QuantizeLinear, ai.onnx's and com.microsoft's."""
    return [n for n in model.graph.node
            if n.op_type == "QuantizeLinear" and n.domain in ("", "ai.onnx", "com.microsoft")]


def _relu_q16() -> GraphWitness:
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "s", "z"], ["y"])]
    x = a([-1.0, 0.5], F32)
    return GraphWitness(_model(nodes, {"s": a(0.01, F32), "z": a(0, I16)}, x), {"x": x},
                        "int16 zero point 0: Relu makes -1 zero (code 0), not code -100")


@rewrite_mutant("relu-q-16bit-zero-point-as-lowest",
                "drops a Relu in front of a QuantizeLinear with a 16-bit target and zero point 0, taking 0 "
                "for the target's lowest code (right for uint16, not for int16)",
                f"{GRAPH} {RELU} {Q_SENTENCE}", witness=_relu_q16)
def _relu_q16_dropped(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    changed = False
    for q in _quantize_nodes(model):
        relu = _fed(model.graph, q, 0, "Relu")
        zp = _value(model, feeds, q.input[2]) if len(q.input) > 2 and q.input[2] else None
        if relu is None or zp is None or zp.dtype.name not in SIXTEEN_BIT or zp.any():
            continue
        q.input[0] = relu.input[0]
        changed = True
    if changed:
        _prune(model.graph)
    return model, feeds


def _chain16() -> GraphWitness:
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["d"]),
             helper.make_node("QuantizeLinear", ["d", "s", "z"], ["y"])]
    x = a([2047], I16)
    return GraphWitness(_model(nodes, {"s": a(0.01, F16), "z": a(0, I16)}, x, opset=23), {"x": x},
                        "int16 2047 * float16 0.01 rounds in float16 to 20.453125: 2046 comes back")


@rewrite_mutant("remove-dq-q-pair",
                "removes a DequantizeLinear -> QuantizeLinear pair with the same scale and zero point, as "
                "if it gave the codes back (it does only where the dequantized value is exact in the output "
                "type)",
                f"{GRAPH} {DQ_SENTENCE} The output type also determines the precision of the multiplication "
                f"operation. {Q_SENTENCE}", witness=_chain16)
def _remove_dq_q(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    changed = False
    g = model.graph
    for q in _quantize_nodes(model):
        dq = _fed(g, q, 0, "DequantizeLinear")
        if dq is None or len(dq.input) != len(q.input) or not all(
                _same_value(model, feeds, dq.input[k], q.input[k]) for k in range(1, len(q.input))):
            continue
        _identity(g, q, dq.input[0])
        changed = True
    if changed:
        _prune(g)
    return model, feeds


def _same_value(model: onnx.ModelProto, feeds: Feeds, left: str, right: str) -> bool:
    return left == right or _equal(_value(model, feeds, left), _value(model, feeds, right))


def _mixed_pair() -> GraphWitness:
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s16", "z"], ["y"])]
    x = a([1.0], F32)
    return GraphWitness(_model(nodes, {"s": a(0.1, F32), "s16": a(0.1, F16), "z": a(0, I16)}, x),
                        {"x": x}, "code 10 times float16 0.1 (0.0999755859375) is float16 1.0, not float 1.0")


@rewrite_mutant("qdq-pair-shares-q-scale",
                "gives a DequantizeLinear fed by a QuantizeLinear the QuantizeLinear's scale when the two "
                "agree once rounded to the DequantizeLinear scale's type (float and float16: one shared "
                "scale), so its output has the QuantizeLinear scale's type and values",
                f"{GRAPH} {DQ_SENTENCE} `x_scale` still determines the output type.", witness=_mixed_pair)
def _share_scale(model: onnx.ModelProto, feeds: Feeds) -> tuple[onnx.ModelProto, Feeds]:
    for dq in [n for n in model.graph.node if n.op_type == "DequantizeLinear"]:
        q = _fed(model.graph, dq, 0, "QuantizeLinear")
        if q is None or len(dq.input) < 2 or len(q.input) < 2 or dq.input[1] == q.input[1]:
            continue
        qs, ds = _value(model, feeds, q.input[1]), _value(model, feeds, dq.input[1])
        if qs is None or ds is None or qs.dtype == ds.dtype or qs.shape != ds.shape:
            continue
        if _equal(qs.astype(ds.dtype), ds):
            dq.input[1] = q.input[1]
    return model, feeds
