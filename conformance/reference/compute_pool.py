"""AveragePool and GlobalAveragePool: a sum of the window's values divided by a count, judged by an interval.

A legitimate float32 evaluation sums the n values of a window in any order (n - 1 additions), then divides by
the count once, or multiplies by its rounded reciprocal (two roundings), or scales each value first: a term's
path holds at most n + 1 roundings, so ``|computed - r| <= gamma_{n+1} * sum |x_i| / count``
(:mod:`.interval`), plus ``2**-150`` for each division or product that rounds into the subnormal range (at
most n + 1). A count that is a power of two divides exactly, so where the window's partial sums are float32
values (the exactness lemma) and so are the quotients (the sum's and each value's) the average is exact:
exact cases with ties come from power-of-two windows.
"""

from __future__ import annotations

import math

import numpy as np

from .interval import ETA32, U64, Interval, exact_sums, from_real, gamma, valuation
from .node_args import Attrs, Inputs, float32, integer, ints, need, text
from .sliding import windows


def _average(win: np.ndarray, counts: np.ndarray) -> Interval:
    """The average of each window (``win``: (..., K1 ... Kn) with NaN where a pad is not counted), divided by
    ``counts``."""
    flat = win.reshape(*win.shape[:counts.ndim], math.prod(win.shape[counts.ndim:]))  # (-1 fails when empty)
    terms = np.where(np.isnan(flat), 0.0, flat)
    n = terms.shape[-1]
    total = np.abs(terms).sum(axis=-1)
    r = terms.sum(axis=-1) / counts
    # (a power-of-two count 2**j divides exactly, unless a quotient leaves float32's range: the sum's, or, in
    # the form that scales each value by 1/count first, a term's, whose valuation k - j must stay >= -149)
    power, j = np.frexp(counts)
    k = np.minimum(valuation(terms).min(axis=-1, initial=2**30), 2**30)
    exact = (power == 0.5) & exact_sums(terms, total) & (r.astype(np.float32).astype(np.float64) == r) & \
        ((k >= 2**30) | (k - (j - 1) >= -149))
    # the float32 evaluation's bound (n - 1 additions, a division or a product by 1/count and that
    # reciprocal: n + 1 relative roundings; up to n + 1 divisions or products rounding into the subnormal
    # range, 2**-150 each: the sum's, or each value's in the form that scales first), the oracle's float64 sum
    # (n - 1 roundings) and its division (one)
    bound = (gamma(n + 1) * total / counts + (n + 1) * ETA32 * (1 + gamma(n + 1))
             + gamma(max(n - 1, 0), U64) * total / counts + np.abs(r) * U64) * (1 + 2.0**-48)
    return from_real(r, np.where(exact, 0.0, np.nextafter(bound, np.inf)))


def average_pool(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    """ONNX AveragePool: "average pooling consisting of computing the average on all values of a subset of the
    input tensor according to the kernel size and downsampling the data into the output tensor Y";
    ``count_include_pad``: "Whether include pad pixels when calculating values for the edges. Default is 0,
    doesn't count include pad." Explicit pads (or VALID), ``ceil_mode`` 0; dilations from opset 19."""
    x = float32(need(inputs, 0), "AveragePool's X")
    kernel = ints(attrs, "kernel_shape")
    n = len(kernel)
    text(attrs, "auto_pad", "NOTSET", ("NOTSET", "VALID"))
    if integer(attrs, "ceil_mode", 0):
        raise ValueError("AveragePool: the oracle computes ceil_mode 0")
    pads = ints(attrs, "pads", [0] * 2 * n) if attrs.get("auto_pad", "NOTSET") == "NOTSET" else [0] * 2 * n
    strides, dilations = ints(attrs, "strides", [1] * n), ints(attrs, "dilations", [1] * n)
    win = windows(x.astype(np.float64), kernel, strides, pads, dilations, fill=np.nan)
    out_shape = win.shape[:2 + n]
    if integer(attrs, "count_include_pad", 0):
        counts = np.full(out_shape, float(np.prod(kernel)))
        win = np.where(np.isnan(win), 0.0, win)
    else:
        counts = (~np.isnan(win)).sum(axis=tuple(range(len(out_shape), win.ndim))).astype(np.float64)
        if (counts == 0).any():
            raise ValueError("AveragePool: a window of padding only")
    return [_average(win, counts)]


def global_average_pool(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    """ONNX GlobalAveragePool: "applies average pooling across the values in the same channel. This is
    equivalent to AveragePool with kernel size equal to the spatial dimension of input tensor." """
    x = float32(need(inputs, 0), "GlobalAveragePool's X")
    if x.ndim < 3:
        raise ValueError("GlobalAveragePool: X must be (N x C x D1 ...)")
    win = x.astype(np.float64).reshape(*x.shape[:2], *([1] * (x.ndim - 2)), math.prod(x.shape[2:]))
    counts = np.full(win.shape[:-1], float(win.shape[-1]))
    return [_average(win, counts)]
