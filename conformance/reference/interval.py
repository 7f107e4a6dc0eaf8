"""The interval oracle: what a legitimate float32 evaluation of a compute op may give, as an interval.

ONNX defines DQ -> OP -> Q as: dequantize (exact, the kernel's), OP in floating point, quantize (round half to
even, saturate). The spec fixes neither OP's evaluation order (summation order, FMA or not, blocked or
pairwise accumulation, wider accumulators) nor the accuracy of ``exp``, so one expected float32 value is too
strict and a tolerance too lax. A compute op of the oracle therefore gives an :class:`Interval`: the real
result r (exactly, or in float64 with a proven error), widened by a stated bound b on how far a legitimate
float32 evaluation can be from r, outward-rounded to float32 endpoints. Every op after it that is monotone
element by element (the data-movement and selection ops, DequantizeLinear and QuantizeLinear, whichever the
scale's sign) maps the two endpoints: QuantizeLinear turns the interval into the contiguous *set of acceptable
codes*. One code: the element is exact, ties included; two or more: each passes.

The bounds (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., section 2.2 and Lemma 3.1; the
same derivation as TOSA's verify library for DOT_PRODUCT):

- Standard model of float32 arithmetic, round to nearest: ``fl(a op b) = (a op b)(1 + d) + e`` with
  ``|d| <= u = 2**-24``, ``|e| <= 2**-150`` and ``d * e = 0``; ``e = 0`` for an addition or subtraction (the
  exact sum of two float32 values is a multiple of ``2**-149``, so it is exact wherever it is subnormal). A
  wider intermediate (float64 accumulation, an FMA's unrounded product) rounds with a smaller ``|d|``, and an
  FMA rounds a product and a sum once: both fit the model with fewer factors.
- Lemma 3.1: a product of m factors ``(1 + d_j)^(+-1)`` with ``|d_j| <= u`` is ``1 + t`` with
  ``|t| <= gamma_m = m u / (1 - m u)``.
- :func:`sum_bound`, a sum of n terms ``t_i``, each a product of at most p float32 values: any evaluation
  builds a binary tree of additions over the computed terms, in any order or blocking. Term i sees one
  rounding per multiplication on its path (at most p - 1) and one per addition above it (at most n - 1), so
  the computed sum is ``sum_i t_i (1 + theta_i) + sum_k e_k (1 + theta'_k)`` with ``|theta_i| <= gamma_m``,
  ``m = n + p - 2`` (the ``roundings`` argument), and at most one ``e_k`` per multiplication. Hence
  ``|computed - r| <= gamma_m * sum_i |t_i| + (#multiplications) * 2**-150 * (1 + gamma_m)``.
- **Exactness.** If every term is an integer multiple of ``2**k`` (k >= -149) and
  ``sum_i |t_i| <= 2**(k+24)``, then every partial sum of every subset of the terms (every intermediate of
  every order, the products themselves included) is an integer multiple of ``2**k`` of magnitude at most
  ``2**(k+24)``: a float32 value.
  Every rounding is then exact and every evaluation gives r: the bound is 0. This is how exact cases with
  real ties arise (power-of-two scales, small magnitudes). :func:`exact_sums` decides it from the terms'
  binary valuations.
- The oracle's own arithmetic: terms that are products of two float32 values are exact in float64 (48
  significant bits, exponents far inside float64's range); their float64 sum carries at most
  ``gamma_{n-1}(2**-53) * sum |t_i|``, which the bound adds (it is 0 in the exact case, whose partial sums are
  float32 and so float64 values). Every float64 operation computing the bound is covered by a final
  ``(1 + 2**-48)`` factor and an outward step.

Ops whose float32 result is unique (a single IEEE addition or multiplication, a cast from an integer) give a
degenerate interval: that one float. Ops on transcendental functions state an ulp budget
(:mod:`.compute_exp`; ambiguity catalogue: `exp-accuracy`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..compare import differs

#: unit roundoff of float32 and float64, round to nearest
U32 = 2.0**-24
U64 = 2.0**-53
#: the absolute error of one float32 rounding in the subnormal range (half the smallest subnormal)
ETA32 = 2.0**-150
#: float32's largest finite value
F32_MAX = float(np.finfo(np.float32).max)
#: the safety factor covering the float64 operations that compute a bound (a few roundings of 2**-53 each)
_MARGIN = 1.0 + 2.0**-48


def gamma(m: int, u: float = U32) -> float:
    """``gamma_m = m u / (1 - m u)`` (Higham, Lemma 3.1), rounded up to a float64; ``m u < 1`` required."""
    if m <= 0:
        return 0.0
    if m * u >= 0.5:
        raise ArithmeticError(f"gamma_{m}: {m} roundings of {u} leave no bound")
    exact = Fraction(m) * Fraction(u) / (1 - Fraction(m) * Fraction(u))
    g = float(exact)
    return g if Fraction(g) >= exact else float(np.nextafter(g, np.inf))


@dataclass(frozen=True)
class Interval:
    """A tensor the oracle knows up to an interval: ``value`` (the representative: the float32 nearest the
    real result, or what the next ops make of it), ``low`` and ``high`` (same type and shape;
    ``low <= value <= high`` by value, element by element). An exact tensor has all three the same."""

    value: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @classmethod
    def exact(cls, a: np.ndarray) -> Interval:
        return cls(a, a, a)

    def is_exact(self) -> bool:
        """Whether every element has one acceptable value (low and high the same bit pattern)."""
        return self.low is self.high or not bool(differs(self.low, self.high).any())

    def single(self) -> np.ndarray:
        """Per element, whether it has one acceptable value by value (a zero of either sign is one value)."""
        if self.low is self.high:
            return np.ones(self.value.shape, bool)
        return np.asarray(_numbers(self.low) == _numbers(self.high))

    def map(self, fn: object) -> Interval:
        """The interval through ``fn``, a function monotone element by element (non-decreasing or
        non-increasing per element, as DequantizeLinear and QuantizeLinear are with a negative scale): the
        endpoints' images, put back in order."""
        assert callable(fn)
        if self.is_exact():
            return Interval.exact(fn(self.value))
        a, b = fn(self.low), fn(self.high)
        low, high = ordered(a, b)
        return Interval(fn(self.value), low, high)


def _numbers(a: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        f = a.astype(np.float64) if a.dtype.kind in "iub" else a.astype(np.float32).astype(np.float64)
    if np.isnan(f).any():
        raise ArithmeticError("a NaN in an interval (no order: the oracle cannot bound it)")
    return f


def ordered(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(element-wise smaller, element-wise larger) of two same-typed arrays, by value."""
    fa, fb = _numbers(a), _numbers(b)
    return np.where(fa <= fb, a, b).astype(a.dtype), np.where(fa <= fb, b, a).astype(a.dtype)


def down32(x: np.ndarray) -> np.ndarray:
    """The largest float32 at most ``x`` (float64), element by element."""
    with np.errstate(over="ignore"):  # (beyond float32's range: its infinity, and the step from its largest)
        f = x.astype(np.float32)
        return np.where(f.astype(np.float64) > x, np.nextafter(f, np.float32(-np.inf)), f).astype(np.float32)


def up32(x: np.ndarray) -> np.ndarray:
    """The smallest float32 at least ``x`` (float64), element by element."""
    with np.errstate(over="ignore"):  # (beyond float32's range: its infinity, and the step from its largest)
        f = x.astype(np.float32)
        return np.where(f.astype(np.float64) < x, np.nextafter(f, np.float32(np.inf)), f).astype(np.float32)


def from_real(r: np.ndarray, bound: np.ndarray | float) -> Interval:
    """The float32 interval ``[r - bound, r + bound]``, outward rounded; ``value`` is the float32 nearest r.

    ``bound`` 0 means r is exactly the (unique) float32 result. A zero endpoint of a float result accepts
    either sign of zero (``low`` -0, ``high`` +0): the sign of an exact zero depends on the order of the
    evaluation (IEEE gives +0 for ``a + (-a)``, -0 for ``-0 + -0``) and on fused integer kernels, which give
    +0. ArithmeticError when r is not finite or the interval reaches beyond float32's range.
    """
    r = np.asarray(r, np.float64)
    b = np.broadcast_to(np.asarray(bound, np.float64), r.shape)
    if not np.isfinite(r).all() or not np.isfinite(b).all() or (b < 0).any():
        raise ArithmeticError("a compute op's result is not finite")
    if (np.abs(r) + b > F32_MAX).any():
        raise ArithmeticError("a compute op's result reaches beyond float32's range")
    wide = b > 0
    lo64 = np.where(wide, np.nextafter(r - b, -np.inf), r)
    hi64 = np.where(wide, np.nextafter(r + b, np.inf), r)
    low, high = down32(lo64), up32(hi64)
    low = np.where(low == 0, np.float32(-0.0), low).astype(np.float32)
    high = np.where(high == 0, np.float32(0.0), high).astype(np.float32)
    value = r.astype(np.float32)
    value = np.where(value == 0, np.float32(0.0), value).astype(np.float32)
    return Interval(value, low, high)


def valuation(t: np.ndarray) -> np.ndarray:
    """The binary valuation of each element of ``t`` (float64): the largest k with t a multiple of ``2**k``;
    a large number (``2**30``) for 0, which constrains nothing."""
    m, e = np.frexp(np.abs(t))  # |t| = m * 2**e, m in [0.5, 1)
    mant = (m * 2.0**53).astype(np.int64)  # exact: float64 has 53 significant bits
    low_bit = (mant & -mant).astype(np.float64)
    _, tz = np.frexp(low_bit)  # low_bit = 2**(tz - 1)
    return np.where(t == 0, 2**30, e.astype(np.int64) - 53 + tz.astype(np.int64) - 1)


def exact_sums(terms: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Per sum over the last axis of ``terms`` (exact float64 values), whether every partial sum of every
    subset is a float32 value: every term an integer multiple of ``2**k`` (k >= -149, its smallest valuation)
    and ``total`` (the sum of the terms' magnitudes) at most ``2**(k + 24)``, the module's exactness
    lemma."""
    if terms.shape[-1] == 0:
        return np.ones(terms.shape[:-1], bool)
    k = valuation(terms).min(axis=-1)
    zero = k >= 2**30
    k = np.minimum(k, 1000)
    limit = np.ldexp(1.0, np.clip(k + 24, -1000, 1000).astype(np.int32))
    return np.asarray(zero | ((k >= -149) & (k + 24 <= 127) & (total <= limit)))


def sum_bound(terms: np.ndarray, *, roundings: int, products: int, exact_terms: bool = True,
              term_error: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(r, bound) for the sums over the last axis of ``terms`` (float64): r their float64 sum, bound how far a
    legitimate float32 evaluation can be from it (0 where :func:`exact_sums` proves every evaluation exact).

    ``roundings``: the largest number of float32 roundings on one term's path (the module's m: n - 1 additions
    plus the multiplications in a term); ``products``: how many multiplications may round into the subnormal
    range (each adds ``2**-150``). ``exact_terms``: the terms are the exact products (products of two float32
    values); otherwise each carries a float64 relative error ``term_error`` and no evaluation is claimed
    exact."""
    n = terms.shape[-1]
    r = terms.sum(axis=-1)
    total = np.abs(terms).sum(axis=-1)
    g64 = gamma(max(n - 1, 0), U64)
    own = (g64 + term_error * (1 + g64)) * total * (1 + g64)  # the oracle's float64 sum, and its terms
    bound = (gamma(roundings) * total * (1 + g64) + products * ETA32 * (1 + gamma(roundings)) + own) * _MARGIN
    bound = np.nextafter(bound, np.inf)
    if exact_terms and term_error == 0:
        bound = np.where(exact_sums(terms, total), 0.0, bound)
    return r, bound
