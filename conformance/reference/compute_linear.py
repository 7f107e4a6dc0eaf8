"""Conv, MatMul, Gemm (dot products in float32, judged by an interval) and MatMulInteger (exact integers).

Each float op builds the exact products of every output element (float32 x float32 is exact in float64) and
hands them to :func:`.interval.sum_bound`: the sum's float64 value and the bound of :mod:`.interval` (a dot
product of n terms: ``gamma_n * sum |terms|``, 0 where every partial sum of every order is a float32 value).
"""

from __future__ import annotations

import numpy as np

from .interval import Interval, from_real, sum_bound
from .node_args import Attrs, Inputs, float32, integer, ints, need, optional, real, text
from .sliding import windows


def _explicit_pads(attrs: Attrs, n: int) -> list[int]:
    text(attrs, "auto_pad", "NOTSET", ("NOTSET", "VALID"))
    return ints(attrs, "pads", [0] * 2 * n) if attrs.get("auto_pad", "NOTSET") == "NOTSET" else [0] * 2 * n


def conv(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    """ONNX Conv: "The convolution operator consumes an input tensor and a filter, and computes the output."
    X is (N x C x D1 ... Dn), W (M x C/group x k1 ... kn), B (M); ``group``: "number of groups input channels
    and output channels are divided into"; ``pads`` "for padding at the beginning and ending along each
    spatial axis" (the padded values are 0); ``strides``, ``dilations``. Each output element is a dot product
    of C/group * k1 * ... * kn products, plus the bias: n + 1 terms whose paths hold at most n + 1 roundings
    (n + 1 terms without B: n)."""
    x, w = float32(need(inputs, 0), "Conv's X"), float32(need(inputs, 1), "Conv's W")
    b = optional(inputs, 2)
    n = x.ndim - 2
    kernel = ints(attrs, "kernel_shape", list(w.shape[2:]))
    group = integer(attrs, "group", 1)
    if n < 1 or w.ndim != x.ndim or kernel != list(w.shape[2:]) or group < 1 or x.shape[1] % group or \
            w.shape[0] % group or w.shape[1] * group != x.shape[1]:
        raise ValueError(f"Conv: X {list(x.shape)}, W {list(w.shape)}, group {group}, kernel_shape {kernel} "
                         "do not fit")
    win = windows(x.astype(np.float64), kernel, ints(attrs, "strides", [1] * n), _explicit_pads(attrs, n),
                  ints(attrs, "dilations", [1] * n))
    cg, mg = x.shape[1] // group, w.shape[0] // group
    out_spatial = win.shape[2:2 + n]
    parts = []
    for g in range(group):
        xg = win[:, g * cg:(g + 1) * cg]  # (N, Cg, O..., K...)
        xg = np.moveaxis(xg, 1, 1 + n).reshape(x.shape[0], *out_spatial, -1)  # (N, O..., Cg*K)
        wg = w[g * mg:(g + 1) * mg].astype(np.float64).reshape(mg, -1)  # (Mg, Cg*K)
        parts.append(xg[:, None] * wg.reshape(mg, *([1] * n), -1)[None])  # (N, Mg, O..., L)
    terms = np.concatenate(parts, axis=1)
    length = terms.shape[-1]
    if b is not None:
        bias = float32(b, "Conv's B").astype(np.float64)
        if bias.shape != (w.shape[0],):
            raise ValueError(f"Conv: B has shape {list(bias.shape)}, expected [{w.shape[0]}]")
        terms = np.concatenate([terms, np.broadcast_to(bias.reshape(1, -1, *([1] * n), 1),
                                                       (*terms.shape[:-1], 1))], axis=-1)
    r, bound = sum_bound(terms, roundings=terms.shape[-1], products=length)
    return [from_real(r, bound)]


def _matmul_terms(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    """numpy.matmul's products, shape (..., M, N, K), and the result's shape (1-D operands promoted and
    their axis removed after, as numpy.matmul does)."""
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("MatMul: operands of rank 0")
    shape = np.matmul(np.zeros(a.shape, np.int8), np.zeros(b.shape, np.int8)).shape
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"MatMul: shapes {list(a.shape)} and {list(b.shape)} do not fit")
    terms = a2[..., :, None, :] * np.swapaxes(b2, -1, -2)[..., None, :, :]
    return terms, shape


def matmul(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    """ONNX MatMul: "Matrix product that behaves like numpy.matmul" (batched and broadcast; a 1-D operand
    promoted). Each output element is a dot product of K products: K roundings on a path."""
    a = float32(need(inputs, 0), "MatMul's A").astype(np.float64)
    b = float32(need(inputs, 1), "MatMul's B").astype(np.float64)
    terms, shape = _matmul_terms(a, b)
    r, bound = sum_bound(terms, roundings=terms.shape[-1], products=terms.shape[-1])
    return [from_real(r.reshape(shape), bound.reshape(shape))]


def _power_of_two(v: np.float32) -> bool:
    m, _ = np.frexp(np.float64(v))
    return abs(float(m)) == 0.5


def gemm(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    """ONNX Gemm: "Compute Y = alpha * A' * B' + beta * C, where input tensor A has shape (M, K) or (K, M),
    input tensor B has shape (K, N) or (N, K), input tensor C is broadcastable to shape (M, N) ... A will be
    transposed before doing the computation if attribute transA is non-zero, same for B and transB."
    Terms alpha * A'_ik * B'_kj and beta * C_ij: a path holds the product, alpha's multiplication (wherever an
    evaluation applies it: to A, to the products, to the sum) and K additions (C's included), K + 2
    roundings. alpha and beta powers of two multiply exactly, so the exactness lemma holds on those terms;
    other values leave the float64 terms rounded once (their error added)."""
    a = float32(need(inputs, 0), "Gemm's A").astype(np.float64)
    b = float32(need(inputs, 1), "Gemm's B").astype(np.float64)
    c = optional(inputs, 2)
    alpha, beta = real(attrs, "alpha", 1.0), real(attrs, "beta", 1.0)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError("Gemm: A and B must be 2-D")
    a = a.T if integer(attrs, "transA", 0) else a
    b = b.T if integer(attrs, "transB", 0) else b
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"Gemm: A' {list(a.shape)} and B' {list(b.shape)} do not fit")
    exact = _power_of_two(alpha) and (c is None or _power_of_two(beta) or float(beta) == 0)
    terms = float(alpha) * (a[:, None, :] * b.T[None, :, :])  # (M, N, K)
    if c is not None:
        cc = float(beta) * np.broadcast_to(float32(c, "Gemm's C").astype(np.float64), terms.shape[:2])
        terms = np.concatenate([terms, cc[..., None]], axis=-1)
    r, bound = sum_bound(terms, roundings=a.shape[1] + 2, products=2 * a.shape[1], exact_terms=exact,
                         term_error=0.0 if exact else 2.0**-53)
    return [from_real(r, bound)]


#: MatMulInteger's operand types
_INT8 = (np.dtype(np.int8), np.dtype(np.uint8))


def _zero_point(zp: np.ndarray | None, operand: np.ndarray, axis: int, name: str) -> np.ndarray:
    """A zero point as MatMulInteger's text lists them: a scalar; for a 2-D operand "an M element vector"
    along the rows of A (axis -2) or "an N element vector" along the columns of B (axis -1); for an N-D
    operand "shape [D1, D2, M, 1]" (A) or "[D1, D2, 1, N]" (B). Ambiguity catalogue:
    `matmulinteger-vector-zero-point` (a 1-D zero point for an N-D operand, which the text does not list: the
    kernel does not judge it). A one-element zero point of higher rank than its operand fits no form either
    (per tensor, the output is the product's; broadcast as numpy does, it gains axes): refused."""
    if zp is None:
        return np.zeros((), np.int64)
    if zp.dtype != operand.dtype:
        raise ValueError(f"MatMulInteger: {name} must be of its operand's type")
    z = zp.astype(np.int64)
    if z.size == 1 and z.ndim <= operand.ndim:
        return z.reshape(())
    if operand.ndim == 2 and z.ndim == 1 and z.shape[0] == operand.shape[axis]:
        return z.reshape(-1, 1) if axis == -2 else z.reshape(1, -1)
    if operand.ndim > 2 and z.ndim == 1:
        raise ValueError(f"MatMulInteger: a 1-D {name} for a {operand.ndim}-D operand (the text lists "
                         "[D1, D2, M, 1] and [D1, D2, 1, N]: matmulinteger-vector-zero-point)")
    batched = list(operand.shape)
    batched[-1 if axis == -2 else -2] = 1
    if operand.ndim > 2 and list(z.shape) == batched:
        return z
    raise ValueError(f"MatMulInteger: {name} of shape {list(zp.shape)} fits no axis")


def matmul_integer(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    """ONNX MatMulInteger: "Matrix product that behaves like numpy.matmul. The production MUST never overflow.
    The accumulation may overflow if and only if in 32 bits." a_zero_point: "Zero point tensor for input 'A'.
    It's optional and default value is 0. It could be a scalar or N-D tensor. Scalar refers to per tensor
    quantization whereas N-D refers to per row quantization." (b_zero_point likewise, per column.) Integers,
    exact; an accumulation beyond int32 (which the spec leaves to the implementation) is refused."""
    a, b = need(inputs, 0), need(inputs, 1)
    if a.dtype not in _INT8 or b.dtype not in _INT8:
        raise ValueError("MatMulInteger: A and B must be int8 or uint8")
    a64 = a.astype(np.int64) - _zero_point(optional(inputs, 2), a, -2, "a_zero_point")
    b64 = b.astype(np.int64) - _zero_point(optional(inputs, 3), b, -1, "b_zero_point")
    y = np.matmul(a64, b64)
    if (y < -(2**31)).any() or (y >= 2**31).any():
        raise ArithmeticError("MatMulInteger: an accumulation beyond int32 (the spec lets it overflow)")
    return [Interval.exact(y.astype(np.int32))]
