"""Sigmoid and Softmax: exp in float32, whose accuracy the spec does not state, within a stated budget.

Ambiguity catalogue: `exp-accuracy`. The kernel's reading (``budget``): exp within :data:`EXP_ULP` units of
``2**-24`` relative; Sigmoid within :data:`SIGMOID_REL` relative plus :data:`SIGMOID_ABS` absolute; a result
whose exact value is a float32 (exp(0) = 1, sigmoid(0) = 1/2, the softmax of n equal values with n a power of
two: 1/n) is that value, as every evaluation with less than one ulp of error gives it.

The real results are computed in float64 (numpy's exp: within a few float64 ulps, ``2**-50`` relative is
added for it and the float64 operations around it), then :func:`.interval.from_real` rounds the interval out.
"""

from __future__ import annotations

import numpy as np

from .interval import U32, Interval, from_real, gamma
from .node_args import Attrs, Inputs, axis_of, float32, integer, need

#: exp's error budget in units of 2**-24, relative (ONNX Runtime's MLAS exp measured: 1.2)
EXP_ULP = 4
#: Sigmoid's budget: relative (exp's, then 1 + e and the reciprocal: two roundings) ...
SIGMOID_REL = (EXP_ULP + 4) * U32
#: ... plus absolute, for direct approximations of the logistic (ONNX Runtime's MLAS: 2.5 * 2**-24 measured)
SIGMOID_ABS = 2.0**-22
#: the oracle's own float64 evaluation of exp and the few operations around it, relative
_OWN = 2.0**-50


def sigmoid(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    """ONNX Sigmoid: "produces one output data (Tensor<T>) where the sigmoid function, y = 1 / (1 + exp(-x)),
    is applied to the tensor elementwise." Within ``SIGMOID_REL * r + SIGMOID_ABS`` of the real r;
    sigmoid(0) = 1/2 exactly."""
    x = float32(need(inputs, 0), "Sigmoid's X").astype(np.float64)
    r = 1.0 / (1.0 + np.exp(-x))
    bound = (SIGMOID_REL + _OWN) * r + SIGMOID_ABS
    return [from_real(np.where(x == 0, 0.5, r), np.where(x == 0, 0.0, bound * (1 + 2.0**-48)))]


def softmax(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    """ONNX Softmax (13): "Softmax(input, axis) = Exp(input) / ReduceSum(Exp(input), axis=axis,
    keepdims=1)"; axis: "The axis along which Softmax will be performed" (default -1).

    A float32 evaluation computes ``t_i = x_i - max(x)`` (one rounding: exp's argument off by ``|t_i| u``, so
    exp off by a factor ``exp(|t_i| u)``), ``a_i = exp(t_i)`` within the budget, so ``|a_i / exp(t_i) - 1| <=
    theta_i = (1 + EXP_ULP u) exp(|t_i| u) - 1``; their sum (n - 1 roundings of positive terms:
    ``gamma_{n-1}``) and the quotient (a division, or a reciprocal and a product: ``(1 + u)**2``). So ``y_i /
    r_i`` lies within ``(1 + theta_i)(1 + u)**2 / ((1 - theta_max)(1 - gamma_{n-1}))`` of 1 (the bound on the
    other side is smaller); underflowing exps add ``(n + 2) 2**-150``. An evaluation that does not subtract
    the maximum has no argument error: inside the bound too. All n values equal with n a power of two: 1/n
    exactly."""
    x = float32(need(inputs, 0), "Softmax's X").astype(np.float64)
    axis = axis_of(integer(attrs, "axis", -1), x.ndim)
    n = x.shape[axis]
    t = x - x.max(axis=axis, keepdims=True)
    e = np.exp(t)
    r = e / e.sum(axis=axis, keepdims=True)
    theta = (1 + EXP_ULP * U32) * np.exp(np.abs(t) * U32 * (1 + 2.0**-40)) - 1
    theta_max = theta.max(axis=axis, keepdims=True)
    rho = (1 + theta) * (1 + U32) ** 2 / ((1 - theta_max) * (1 - gamma(max(n - 1, 0)))) - 1
    bound = ((rho + (n + 4) * _OWN) * r + (n + 2) * 2.0**-150) * (1 + 2.0**-48)
    equal = (t == 0).all(axis=axis, keepdims=True) & (np.frexp(float(n))[0] == 0.5)
    r = np.where(equal, 1.0 / n, r)
    return [from_real(r, np.where(equal, 0.0, bound))]
