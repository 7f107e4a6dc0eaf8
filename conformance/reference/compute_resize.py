"""Resize, modes ``nearest`` and ``linear``, judged by an interval.

The coordinate transformation is computed exactly per axis (integer numerators over one denominator, numpy
arrays). A float32 evaluation computes it with roundings unless every step is exact (a power-of-two scale,
small coordinates): then its error ``eps`` is 0, otherwise ``eps = 8 u ((|x_resized| + 1) max(1, 1/scale) +
|x_original| + 1)`` (a handful of roundings of values at most that large, whatever form the formula takes: a
division by the scale or a product by its reciprocal, the scale itself rounded from sizes).

- ``nearest``: the input index is a non-decreasing step function of x_original, so the indices a float32
  evaluation may pick are those of ``[x - eps, x + eps]``: one index (exact: a selection) unless x_original
  lies within eps of a step. The element's interval is the smallest and largest value over the candidates.
- ``linear``: the N-linear interpolation of the 2**d neighbours (x_original clamped to ``[0, length - 1]``,
  as ONNX's reference pads with the edge values). With exact coordinates a term ``x_c * prod_d c_d``
  (``c_d`` the weight ``w_d`` or ``1 - w_d``) sees at most ``m = 3 d + 2**d`` roundings in any form (products
  of weights, ``1 - w``, differences ``b - a`` of the lerp form ``a + w (b - a)``, the additions), each term
  bounded by ``|x_c|``: ``gamma_m * sum_c |x_c|``. A coordinate off by eps moves y by at most
  ``eps * L_d`` per axis, L_d the largest difference of neighbours along that axis (y is piecewise linear in
  each coordinate). A multiplication may round into the subnormal range: ``2**-150`` each, at most one per
  weighted axis on each term (an evaluation may also split up to two axes that do not move 0.5 and 0.5 on
  one pixel at a clamped edge, as ONNX Runtime does). Exact when every coordinate is exact, every product of
  a value, one weight per moving axis and 0.5 per split axis a multiple of ``2**-149``, every
  weight, ``1 - w`` and value a multiple of ``2**K`` and ``2**(d+1) max |x_c| <= 2**(K + 24)`` (every
  intermediate of every form is such a multiple, at most that large: the exactness lemma of
  :mod:`.interval`).
"""

from __future__ import annotations

import itertools
import operator
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from .interval import ETA32, U32, U64, Interval, from_real, gamma, ordered, valuation
from .node_args import Attrs, Inputs, float32, integer, need, optional, text

_MODES = ("nearest", "linear")
_COORDINATES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _power_of_two(v: Fraction) -> bool:
    return v > 0 and v.numerator & (v.numerator - 1) == 0 and v.denominator & (v.denominator - 1) == 0


def _coordinates(mode: str, scale: Fraction, l_in: int, l_out: int) -> tuple[np.ndarray, int]:
    """ONNX's coordinate_transformation_mode, exactly: half_pixel "x_original = (x_resized + 0.5) / scale -
    0.5"; pytorch_half_pixel "length_resized > 1 ? (x_resized + 0.5) / scale - 0.5 : 0"; align_corners
    "x_original = x_resized * (length_original - 1) / (length_resized - 1)"; asymmetric "x_original =
    x_resized / scale"; half_pixel_symmetric is half_pixel when the output length is length * scale (its
    adjustment is then 1).

    Every x_original of the axis as ``numerators / denominator`` (the denominator > 0), the numerators Python
    integers (an object array: exact whatever the lengths)."""
    p, q = scale.numerator, scale.denominator
    i = np.arange(l_out).astype(object)
    if mode == "align_corners":
        return i * (l_in - 1), l_out - 1
    if mode == "asymmetric":  # i / (p / q)
        return i * q, p
    return (2 * i + 1) * q - p, 2 * p  # (i + 1/2) / (p / q) - 1/2


def _real(numerators: np.ndarray, denominator: int) -> np.ndarray:
    """Each ``numerator / denominator`` correctly rounded to float64 (Python's division of integers)."""
    return np.asarray(numerators / denominator, np.float64)


class _Axis(NamedTuple):
    """One axis of the resize: x_original = ``numerators / denominator`` exactly, each coordinate's float32
    error bound ``eps`` (float64) and the input length."""
    numerators: np.ndarray
    denominator: int
    eps: np.ndarray
    length: int


def _axis(l_in: int, l_out: int, scale: Fraction, mode: str) -> _Axis:
    """Per output coordinate of one axis: x_original exactly and its float32 error bound eps (0 for all when
    every coordinate is exact in float32)."""
    if l_in == 1:  # (every coordinate clamps to the one index, whatever the transformation)
        return _Axis(np.zeros(l_out, np.int64), 1, np.zeros(l_out), l_in)
    if mode == "align_corners" and l_out == 1 or mode == "pytorch_half_pixel" and l_out == 1:
        raise ValueError(f"{mode} with an output length 1 (ONNX's text and its reference differ)")
    # (align_corners: exact in every form when (length_resized - 1) / (length_original - 1) is a power of two
    # and every product x_resized * (length_original - 1), the numerators, is a float32 value: the division
    # by length_resized - 1, or the product by the ratio of lengths, is then a power of two's)
    divisor = Fraction(l_out - 1, l_in - 1) if mode == "align_corners" else scale
    numerators, denominator = _coordinates(mode, scale, l_in, l_out)
    exact = _power_of_two(divisor) and l_out < 2**20 and l_in < 2**20 and \
        (mode != "align_corners" or bool((numerators.astype(np.float32) == numerators).all()))
    if exact:
        eps = np.zeros(l_out)
    else:
        resized = np.arange(1, l_out + 1, dtype=np.float64)  # x_resized + 1
        eps = 8 * U32 * (resized * max(1.0, float(1 / scale)) + np.abs(_real(numerators, denominator)) + 1)
    return _Axis(numerators, denominator, eps, l_in)


def _plan(x: np.ndarray, inputs: Inputs, attrs: Attrs) -> list[_Axis]:
    """Per axis: the coordinates, their errors and the input length."""
    roi, scales, sizes = optional(inputs, 1), optional(inputs, 2), optional(inputs, 3)
    if "axes" in attrs or integer(attrs, "antialias", 0) or integer(attrs, "exclude_outside", 0) or \
            text(attrs, "keep_aspect_ratio_policy", "stretch", ("stretch",)) != "stretch":
        raise ValueError("the oracle computes every axis resized, antialias 0, exclude_outside 0")
    if roi is not None and roi.size:
        raise ValueError("roi is only read by tf_crop_and_resize, which the oracle does not compute")
    mode = text(attrs, "coordinate_transformation_mode", "half_pixel", _COORDINATES)
    have_scales = scales is not None and scales.size > 0
    if have_scales == (sizes is not None and sizes.size > 0):
        raise ValueError("exactly one of scales and sizes")
    plan = []
    for d, l_in in enumerate(x.shape):
        if have_scales:
            assert scales is not None
            if scales.dtype != np.float32 or scales.shape != (x.ndim,):
                raise ValueError("scales must be float32, one per axis")
            scale = Fraction(float(scales[d]))
            l_out = l_in * scale
            if l_out.denominator != 1 or scale <= 0:
                raise ValueError("length * scale must be a whole number (otherwise the spec's "
                                 "'scale = length_resized / length_original' is not the given scale)")
            l_out_int = int(l_out)
        else:
            assert sizes is not None
            if sizes.shape != (x.ndim,):
                raise ValueError("sizes must hold one length per axis")
            l_out_int = int(sizes[d])
            scale = Fraction(l_out_int, l_in)
        if l_out_int < 1:
            raise ValueError("an output length below 1")
        plan.append(_axis(l_in, l_out_int, scale, mode))
    return plan


def _gather(x: np.ndarray, index: list[np.ndarray]) -> np.ndarray:
    return np.asarray(x[np.ix_(*index)])


def _nearest_exactly(numerators: np.ndarray, denominator: int, mode: str) -> np.ndarray:
    """ONNX's nearest_mode of every ``numerator / denominator`` (denominator > 0), in integer arithmetic:
    "round_prefer_floor" (round half down), "round_prefer_ceil" (round half up), "floor", "ceil"."""
    n, d = numerators, denominator
    if mode == "floor":
        return n // d
    if mode == "ceil":
        return -(-n // d)
    # round_prefer_floor: -floor(-(v - 1/2)) = -floor((d - 2 n) / 2 d); round_prefer_ceil:
    # floor((2 n + d) / 2 d)
    return -((d - 2 * n) // (2 * d)) if mode == "round_prefer_floor" else (2 * n + d) // (2 * d)


def _nearest_moved(numerators: np.ndarray, denominator: int, offset: np.ndarray, mode: str) -> np.ndarray:
    """:func:`_nearest_exactly` of every ``numerator / denominator + offset``, each offset a float64 taken as
    the exact number it is: ``whole * 2**(exponent - 53)``, brought over the axis's smallest power of two."""
    mantissa, exponent = np.frexp(offset)
    whole = np.ldexp(mantissa, 53).astype(np.int64).astype(object)  # |mantissa| in [0.5, 1): 53 bits
    low = int(exponent.min())
    shifted = whole * 2 ** (exponent - low).astype(object)  # offset = shifted / 2**(53 - low)
    unit = 2 ** (53 - low)
    return _nearest_exactly(numerators * unit + shifted * denominator, denominator * unit, mode)


def _nearest_resize(x: np.ndarray, plan: list[_Axis], mode: str) -> Interval:
    lows, highs, picks = [], [], []
    for numerators, denominator, eps, l_in in plan:
        def pick(index: np.ndarray, limit: int = l_in) -> np.ndarray:
            # (each index clamped to [0, l_in - 1], and an integer: operator.index refuses a float)
            clamped = np.minimum(np.maximum(index, 0), limit - 1)
            return np.fromiter(map(operator.index, clamped), np.int64, len(clamped))
        exact = pick(_nearest_exactly(numerators, denominator, mode))
        picks.append(exact)
        if not eps.any():
            lows.append(exact)
            highs.append(exact)
            continue
        lows.append(pick(_nearest_moved(numerators, denominator, -eps, mode)))
        highs.append(pick(_nearest_moved(numerators, denominator, eps, mode)))
    if any((hi - lo > 1).any() for lo, hi in zip(lows, highs, strict=True)):
        raise ArithmeticError("a coordinate's error spans more than two input indices")
    value = _gather(x, picks)
    if all((lo == hi).all() for lo, hi in zip(lows, highs, strict=True)):
        return Interval.exact(value)
    low = high = value
    for choice in itertools.product((0, 1), repeat=x.ndim):
        got = _gather(x, [(lows if c == 0 else highs)[d] for d, c in enumerate(choice)])
        low, _ = ordered(low, got)
        _, high = ordered(high, got)
    return Interval(value, low, high)


def _linear_resize(x: np.ndarray, plan: list[_Axis]) -> Interval:
    x64 = x.astype(np.float64)
    index0: list[np.ndarray] = []
    index1: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    epss: list[np.ndarray] = []
    moving = 0
    lipschitz = 0.0
    for d, (numerators, denominator, eps, l_in) in enumerate(plan):
        # x_original clamped to [0, l_in - 1]: its floor i0 and weight x - i0 (0 where it clamps)
        floor = numerators // denominator
        inside = np.asarray((floor >= 0) & (floor < l_in - 1), bool)
        rest = numerators - floor * denominator  # (x_original - floor) * denominator, in [0, denominator)
        i0 = np.asarray(np.minimum(np.maximum(floor, 0), l_in - 1), np.int64)
        index0.append(i0)
        index1.append(np.minimum(i0 + 1, l_in - 1))
        weights.append(np.where(inside, _real(rest, denominator), 0.0))
        epss.append(eps)
        moving += bool((inside & np.asarray(rest != 0, bool)).any()) or bool(eps.any())
        if l_in > 1 and eps.any():
            step = np.abs(np.diff(x64, axis=d)).max()
            lipschitz += float(step) * float(eps.max())
    rank = x.ndim
    r = np.zeros([len(w) for w in weights])
    total = np.zeros_like(r)
    corners = []
    # (an axis of length 1 has one neighbour: its second corner repeats the first with weight 0, adding 0)
    for choice in itertools.product(*[(0, 1) if axis.length > 1 else (0,) for axis in plan]):
        vals = _gather(x64, [(index0 if c == 0 else index1)[d] for d, c in enumerate(choice)])
        coef = np.ones_like(r)
        slack = np.ones_like(r)
        for d, c in enumerate(choice):
            w = weights[d] if c else 1 - weights[d]
            shape = [1] * rank
            shape[d] = -1
            coef = coef * w.reshape(shape)
            slack = slack * np.minimum(1.0, w + epss[d]).reshape(shape)
        r += coef * vals
        total += np.abs(vals) * slack
        corners.append(vals)
    m = 3 * moving + 2**moving
    own = 4 * (rank + 1) * U64 * total
    # (a multiplication by a weight may round into the subnormal range, 2**-150 each: at most one per weighted
    # axis on each term; an evaluation weights the moving axes and may split up to two more 0.5 and 0.5 on
    # the same pixel at a clamped edge, as ONNX Runtime's 2-D and 3-D kernels do on the innermost axes, exact
    # in the normal range; additions are exact there)
    split = min(2, rank - moving)
    underflow = (moving + split) * 2 ** (moving + split) * ETA32 * (1 + gamma(m))
    bound = np.nextafter((gamma(m) * total + underflow + lipschitz + own) * (1 + 2.0**-48), np.inf)
    if not any(e.any() for e in epss):  # every coordinate exact in float32: the exactness lemma
        stack = np.stack(corners, axis=-1)
        atoms = np.concatenate([np.concatenate([w, 1 - w]) for w in weights])
        k = valuation(stack).min(axis=-1) + sum(int(valuation(np.concatenate([w, 1 - w])).min())
                                                for w in weights)
        # (the subnormal edge: a term's product may also carry a 0.5 for each split axis, ONNX Runtime's
        # weights of a clamped edge; a power of two, it leaves the magnitude test alone)
        k_low = k - split
        biggest = np.abs(stack).max(axis=-1)
        exact = (valuation(atoms).min() >= -24) & (k_low >= -149) & \
            (2.0 ** (moving + 1) * biggest <= np.ldexp(1.0, np.clip(k + 24, -1000, 1000).astype(np.int32)))
        exact |= biggest == 0
        bound = np.where(exact, 0.0, bound)
    return from_real(r, bound)


def resize(inputs: Inputs, attrs: Attrs) -> list[Interval]:
    """ONNX Resize: "Resize the input tensor. In general, it calculates every value in the output tensor as a
    weighted average of neighborhood (a.k.a. sampling locations) in the input tensor." mode: "nearest"
    (default) and "linear" ("linear interpolation for 1D tensor and N-linear interpolation for N-D tensor");
    nearest_mode: "round_prefer_floor" (default, as known as round half down), "round_prefer_ceil" (as known
    as round half up), "floor", "ceil"; the coordinate transformations of :func:`_coordinate`;
    "output_dimension = floor(input_dimension * (roi_end - roi_start) * scale)" when sizes are not given."""
    x = float32(need(inputs, 0), "Resize's X")
    mode = text(attrs, "mode", "nearest", _MODES)
    plan = _plan(x, inputs, attrs)
    if mode == "nearest":
        return [_nearest_resize(x, plan, text(attrs, "nearest_mode", "round_prefer_floor", _NEAREST))]
    return [_linear_resize(x, plan)]
