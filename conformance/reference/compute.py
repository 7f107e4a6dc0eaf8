"""The compute ops a graph case may hold between DequantizeLinear and QuantizeLinear, and their oracles.

ONNX defines DQ -> OP -> Q as dequantize, OP in floating point, quantize. Each op here takes exact inputs (the
DequantizeLinear outputs, constants) and gives an :class:`.interval.Interval` per output: what a legitimate
float32 evaluation may give (:mod:`.interval` states the bounds and their proofs; each op's module derives its
own). :data:`COMPUTE_OPS` is their registry: with the quantization ops and the exact ops it is the case
schema's vocabulary of graph ops (a test checks they agree).
"""

from __future__ import annotations

from .compute_exp import sigmoid, softmax
from .compute_linear import conv, gemm, matmul, matmul_integer
from .compute_pointwise import add, cast, leaky_relu, mul
from .compute_pool import average_pool, global_average_pool
from .compute_resize import resize
from .steps import ComputeKernel

#: every compute op a graph may hold (ai.onnx, opset 13 and later), with its interval oracle
COMPUTE_OPS: dict[str, ComputeKernel] = {
    "Conv": conv,
    "MatMul": matmul,
    "Gemm": gemm,
    "MatMulInteger": matmul_integer,
    "Add": add,
    "Mul": mul,
    "LeakyRelu": leaky_relu,
    "Cast": cast,
    "AveragePool": average_pool,
    "GlobalAveragePool": global_average_pool,
    "Sigmoid": sigmoid,
    "Softmax": softmax,
    "Resize": resize,
}
#: the compute ops whose every output element is one correctly rounded operation on its inputs' elements:
#: monotone in each input (rounding is monotone), so an input with more than one acceptable value (an earlier
#: compute op's interval) passes through them by its ends (``graph_oracle.py``)
ROUNDED_ONCE: frozenset[str] = frozenset({"Add", "Mul", "LeakyRelu", "Cast"})
#: the compute ops' inputs that must be constants (initializers): Resize's roi, scales and sizes
COMPUTE_CONSTANT_INPUTS: dict[str, tuple[int, ...]] = {"Resize": (1, 2, 3)}
