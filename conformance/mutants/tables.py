"""Mutants of the compute ops' arithmetic: Sigmoid and Softmax from coarse tables, as a fused kernel might
take them instead of computing exp.

Each replaces one compute op's oracle in the kernel's steps (``Steps.compute``, :mod:`..reference.steps`):
the op computes the shortcut's value (one value, no interval), and QuantizeLinear quantizes it. The spec's
exp has no stated accuracy (ambiguity catalogue: exp-accuracy, whose readings all stay within a few ulp); a
table read at the nearest of 256 points is off by far more than any reading allows.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from onnx import helper

from ..reference.interval import Interval
from ..reference.node_args import Attrs, Inputs, axis_of, float32, integer, need
from ..reference.ops import SPEC
from ..reference.steps import Steps
from .fused import GRAPH, graph_witness
from .mutant import F32, U8, GraphWitness, a, mutant

#: the tables' grid: 256 points, 1/16 apart (Sigmoid: [-8, 8); Softmax's exp: [-16, 0])
STEP = 1.0 / 16


def _coarse_sigmoid(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    x = float32(need(inputs, 0), "Sigmoid's X").astype(np.float64)
    grid = -8.0 + np.clip(np.rint((x + 8.0) / STEP), 0, 255) * STEP
    return [Interval.exact((1.0 / (1.0 + np.exp(-grid))).astype(np.float32))]


def _coarse_softmax(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    x = float32(need(inputs, 0), "Softmax's X").astype(np.float64)
    axis = axis_of(integer(attrs, "axis", -1), x.ndim)
    t = x - x.max(axis=axis, keepdims=True)
    e = np.exp(np.clip(np.rint(t / STEP), -256, 0) * STEP)
    return [Interval.exact((e / e.sum(axis=axis, keepdims=True)).astype(np.float32))]


def _witness(op: str, x: np.ndarray, note: str) -> GraphWitness:
    nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["d"]),
             helper.make_node(op, ["d"], ["s"]),
             helper.make_node("QuantizeLinear", ["s", "ys", "yz"], ["y"])]
    return graph_witness(nodes, {"xs": a(2.0**-5, F32), "xz": a(128, U8), "ys": a(2.0**-8, F32),
                                 "yz": a(0, U8)}, {"x": x}, note)


@mutant("sigmoid-coarse-table",
        "computes Sigmoid from a table of 256 values 1/16 apart over [-8, 8), read at the nearest point",
        f"{GRAPH} Sigmoid: y = 1 / (1 + exp(-x)), applied to the tensor elementwise.",
        witness=lambda: _witness("Sigmoid", a([129, 160], U8),
                                 "x 1/32: the table's nearest point is 0 (1/2, code 128), sigmoid is code "
                                 "130"))
def _sigmoid_table() -> Steps:
    return replace(SPEC, compute={**SPEC.compute, "Sigmoid": _coarse_sigmoid})


@mutant("softmax-coarse-exp",
        "computes Softmax's exp(x - max) from a table of 256 values 1/16 apart over [-16, 0], read at the "
        "nearest point", f"{GRAPH} Softmax(input, axis) = Exp(input) / ReduceSum(Exp(input), axis=axis, "
        "keepdims=1)", witness=lambda: _witness("Softmax", a([128, 129], U8),
                                                "exp(-1/32) read as exp(0): 1/2 and 1/2, not codes 126 and "
                                                "130"))
def _softmax_table() -> Steps:
    return replace(SPEC, compute={**SPEC.compute, "Softmax": _coarse_softmax})
