"""Legitimate float32 evaluations of a dot product, simulated exactly (fractions, one correct rounding per
operation): the interval oracle's self-tests check that every one lands inside its interval."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np

F32_MAX = Fraction(float(np.finfo(np.float32).max))


def _round(x: Fraction, mantissa: int, min_exp: int) -> Fraction:
    """``x`` rounded to nearest, ties to even, in a binary format of ``mantissa`` significant bits whose
    smallest normal exponent is ``min_exp`` (gradual underflow)."""
    if x == 0:
        return Fraction(0)
    sign = -1 if x < 0 else 1
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, min_exp)
    quantum = Fraction(2) ** (e - mantissa + 1)
    q, r = divmod(a, quantum)
    if r * 2 > quantum or (r * 2 == quantum and q % 2 == 1):
        q += 1
    return sign * q * quantum


def f32(x: Fraction) -> Fraction:
    """The float32 nearest ``x`` (as a fraction); OverflowError beyond float32's range."""
    v = _round(x, 24, -126)
    if abs(v) > F32_MAX:
        raise OverflowError("beyond float32")
    return v


def f64(x: Fraction) -> Fraction:
    return _round(x, 53, -1022)


def exact(values: np.ndarray) -> list[Fraction]:
    return [Fraction(float(v)) for v in np.asarray(values, np.float64).reshape(-1)]


Order = Callable[[Sequence[Fraction], Sequence[Fraction]], Fraction]


def sequential(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
    s = Fraction(0)
    for x, w in zip(a, b, strict=True):
        s = f32(s + f32(x * w))
    return s


def reverse(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
    return sequential(list(reversed(a)), list(reversed(b)))


def fma(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
    s = Fraction(0)
    for x, w in zip(a, b, strict=True):
        s = f32(x * w + s)
    return s


def pairwise(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
    terms = [f32(x * w) for x, w in zip(a, b, strict=True)]
    while len(terms) > 1:
        terms = [f32(terms[k] + terms[k + 1]) if k + 1 < len(terms) else terms[k]
                 for k in range(0, len(terms), 2)]
    return terms[0] if terms else Fraction(0)


def blocked(a: Sequence[Fraction], b: Sequence[Fraction], size: int = 4) -> Fraction:
    """Blocks of ``size`` accumulated with FMA, then the blocks' sums added in order (what SIMD kernels
    do)."""
    sums = [fma(a[k:k + size], b[k:k + size]) for k in range(0, len(a), size)]
    s = Fraction(0)
    for v in sums:
        s = f32(s + v)
    return s


def wide(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
    """float64 accumulation of exact products, rounded to float32 once at the end."""
    s = Fraction(0)
    for x, w in zip(a, b, strict=True):
        s = f64(s + x * w)
    return f32(s)


def integer(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
    """The exact sum rounded once (a fused integer kernel with an exact requantization)."""
    return f32(sum((x * w for x, w in zip(a, b, strict=True)), Fraction(0)))


ORDERS: dict[str, Order] = {"sequential": sequential, "reverse": reverse, "fma": fma, "pairwise": pairwise,
                            "blocked": blocked, "wide": wide, "integer": integer}
