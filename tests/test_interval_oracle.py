"""The interval oracle (issue 36, point 1): every legitimate float32 evaluation lands inside its interval, the
interval contains the exact rational result, exact cases (ties included) have one acceptable code, widths are
small enough to catch a one-code error away from ties, and the int32 accumulator limits hold.

The legitimate evaluations are simulated exactly (``float32_orders``: fractions, one correct rounding per
operation): sequential, reversed, FMA, pairwise, blocked SIMD-like, float64 accumulation, a fused integer
kernel's single rounding."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qdq_conformance.reference import compute_resize
from qdq_conformance.reference.compute_exp import sigmoid, softmax
from qdq_conformance.reference.compute_linear import conv, gemm, matmul, matmul_integer
from qdq_conformance.reference.compute_pointwise import add, leaky_relu, mul
from qdq_conformance.reference.compute_pool import average_pool, global_average_pool
from qdq_conformance.reference.compute_resize import resize
from qdq_conformance.reference.interval import Interval, exact_sums, from_real, gamma, sum_bound, valuation

from .float32_orders import ORDERS, exact, f32

F32 = np.float32


def _inside(iv: Interval, index: tuple[int, ...], value: Fraction) -> bool:
    return Fraction(float(iv.low[index])) <= value <= Fraction(float(iv.high[index]))


# --- the bound's arithmetic
# ---------------------------------------------------------------------------------------

def test_gamma_is_the_lemmas_bound_rounded_up():
    for m in (1, 2, 7, 100, 4096):
        g = Fraction(gamma(m))
        want = Fraction(m, 2**24) / (1 - Fraction(m, 2**24))
        assert want <= g <= want * (1 + Fraction(1, 2**50))
    assert gamma(0) == 0.0
    with pytest.raises(ArithmeticError):
        gamma(2**23)


def test_valuation_and_the_exactness_lemma():
    t = np.array([0.75, -0.125, 3.0, 0.0, 2.0**-149, 2.0**100])
    assert valuation(t).tolist()[:3] == [-2, -3, 0] and valuation(t)[4] == -149 and valuation(t)[5] == 100
    assert valuation(t)[3] >= 2**30  # (zero constrains nothing)
    terms = np.array([[0.5, 0.25, -0.125], [2.0**24, 1.0, 0.0], [2.0**23, 1.0, 0.0]])
    total = np.abs(terms).sum(axis=-1)
    # 2**24 + 1 is no float32: that sum's partial sums are not all representable
    assert exact_sums(terms, total).tolist() == [True, False, True]


def test_from_real_rounds_outward_and_a_zero_end_accepts_either_sign():
    iv = from_real(np.array([0.1, 1.0, 0.0]), np.array([1e-7, 0.0, 0.0]))
    assert iv.low[0] < F32(0.1) < iv.high[0]
    assert Fraction(float(iv.low[0])) <= Fraction(0.1) - Fraction(1e-7) < Fraction(0.1) + Fraction(1e-7) <= \
        Fraction(float(iv.high[0]))
    assert iv.low[1] == iv.high[1] == 1.0
    assert np.signbit(iv.low[2]) and not np.signbit(iv.high[2]) and not np.signbit(iv.value[2])
    # a zero bound on a value that is no float32 still spans the two floats around it (never a false exact)
    iv = from_real(np.array([0.1]), np.array([0.0]))
    assert iv.low[0] < iv.high[0]


# --- dot products: every order inside, the exact value inside, exact cases single
# -------------------------------------------------------------------------------

_DYADIC = st.integers(-40, 40).map(lambda k: k / 8)  # small multiples of 1/8: exact cases
_DECIMAL = st.floats(-3.0, 3.0, allow_nan=False, width=32)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 24).flatmap(lambda n: st.tuples(
    st.lists(st.one_of(_DYADIC, _DECIMAL), min_size=n, max_size=n),
    st.lists(st.one_of(_DYADIC, _DECIMAL), min_size=n, max_size=n))))
def test_every_float32_order_of_a_dot_product_is_inside_its_interval(ab):
    a = np.array(ab[0], F32).reshape(1, -1)
    b = np.array(ab[1], F32).reshape(-1, 1)
    (iv,) = matmul([a, b], {})
    fa, fb = exact(a), exact(b)
    r = sum((x * w for x, w in zip(fa, fb, strict=True)), Fraction(0))
    assert _inside(iv, (0, 0), r), "the exact rational result"
    got = {name: order(fa, fb) for name, order in ORDERS.items()}
    for name, v in got.items():
        assert _inside(iv, (0, 0), v), (name, float(v), iv.low, iv.high)
    if iv.is_exact():  # an exact case: every order gives the one value, and it is r
        assert all(v == r for v in got.values()) and Fraction(float(iv.value[0, 0])) == r


@settings(max_examples=60, deadline=None)
@given(st.lists(_DYADIC, min_size=1, max_size=30), st.lists(_DYADIC, min_size=1, max_size=30))
def test_small_dyadic_dot_products_are_exact(xs, ws):
    n = min(len(xs), len(ws))
    (iv,) = matmul([np.array(xs[:n], F32).reshape(1, -1), np.array(ws[:n], F32).reshape(-1, 1)], {})
    r = sum((Fraction(x) * Fraction(w) for x, w in zip(xs[:n], ws[:n], strict=True)), Fraction(0))
    assert iv.single().all() and Fraction(float(iv.value[0, 0])) == r


def test_the_bound_is_gamma_n_times_the_sum_of_magnitudes():
    rng = np.random.default_rng(3)
    terms = rng.standard_normal((50, 16)) * 0.1
    r, b = sum_bound(terms, roundings=16, products=16)
    total = np.abs(terms).sum(axis=-1)
    assert (b >= gamma(16) * total).all() and (b <= 1.01 * gamma(16) * total + 1e-30).all()


# --- QuantizeLinear over the interval: exact ties, one code away from ties
# -------------------------------------------------------------------------------

def _q(v: np.ndarray, scale: float, zp: int) -> np.ndarray:
    """The kernel's QuantizeLinear (uint8)."""
    from qdq_conformance.reference import evaluate

    return evaluate("ai.onnx", "QuantizeLinear", 21, [v.astype(F32), np.array(scale, F32),
                                                       np.array(zp, np.uint8)])[0]


def test_an_exact_tie_has_one_code_round_half_to_even():
    # 0.5 * (1 + 2) * 0.25 ... a sum of 1.25 over y_scale 0.5 is 2.5: a tie, code 2 (even), never 3
    a = np.array([[0.5, 1.0]], F32)
    b = np.array([[1.0], [0.75]], F32)
    (iv,) = matmul([a, b], {})
    assert iv.is_exact() and float(iv.value[0, 0]) == 1.25
    q = iv.map(lambda v: _q(v, 0.5, 0))
    assert q.is_exact() and int(q.value[0, 0]) == 2


def test_away_from_ties_the_codes_are_one_and_near_ties_at_most_two():
    """Realistic scales (K = 64): an element whose exact x / y_scale is 0.01 or more from a rounding boundary
    has exactly one acceptable code, so a kernel one code off there is caught; no element has three."""
    rng = np.random.default_rng(11)
    a = ((rng.integers(0, 256, (32, 64)) - 119) * F32(0.0213)).astype(F32)
    w = ((rng.integers(-127, 128, (64, 16))) * F32(0.0071)).astype(F32)
    (iv,) = matmul([a, w], {})
    ys = 0.0877
    q = iv.map(lambda v: _q(v, ys, 128))
    r = np.asarray(exact(a), dtype=object).reshape(32, 64) @ \
        np.asarray(exact(w), dtype=object).reshape(64, 16)
    quotient = np.vectorize(lambda v: float(v / Fraction(float(F32(ys)))))(r)
    far = np.abs(quotient - np.floor(quotient) - 0.5) >= 0.01
    width = q.high.astype(int) - q.low.astype(int)
    assert (width[far] == 0).all() and width.max() <= 1
    assert width.sum() < width.size // 10


# --- int32 limits
# ------------------------------------------------------------------------------------------------------

def test_matmulinteger_at_the_int32_limits():
    a = np.full((1, 2), 255, np.uint8)
    big = np.array([[127], [127]], np.int8)
    # (255 - 0) * (127 - (-128)) * K just below 2**31 and beyond
    k = (2**31 - 1) // (255 * 255)
    a = np.full((1, k), 255, np.uint8)
    b = np.full((k, 1), 127, np.int8)
    (iv,) = matmul_integer([a, b, np.array(0, np.uint8), np.array(-128, np.int8)], {})
    assert int(iv.value[0, 0]) == 255 * 255 * k <= 2**31 - 1 and iv.value.dtype == np.int32
    a2 = np.full((1, k + 1), 255, np.uint8)
    b2 = np.full((k + 1, 1), 127, np.int8)
    with pytest.raises(ArithmeticError, match="beyond int32"):
        matmul_integer([a2, b2, np.array(0, np.uint8), np.array(-128, np.int8)], {})
    del big


def test_a_conv_bias_at_the_int32_limits_keeps_the_exact_result_inside():
    """The bias dequantized from int32 extremes (its float32 a rounding of (2**31 - 1) * scale) with products:
    every order inside, the exact value inside."""
    x = np.array([[[[3.0, -2.5], [1.25, 0.5]]]], F32)
    w = np.array([[[[0.75, -0.25], [2.0, 1.5]]]], F32)
    for code in (2**31 - 1, -(2**31)):
        bias = np.array([F32(code) * F32(2.0**-20)], F32)
        (iv,) = conv([x, w, bias], {"kernel_shape": [2, 2]})
        fa = [*exact(x), Fraction(1)]
        fb = [*exact(w), Fraction(float(bias[0]))]
        r = sum((p * q for p, q in zip(fa, fb, strict=True)), Fraction(0))
        assert _inside(iv, (0, 0, 0, 0), r)
        for name, order in ORDERS.items():
            assert _inside(iv, (0, 0, 0, 0), order(fa, fb)), name


# --- Conv, Gemm, pooling, elementwise, exp, Resize: against a direct exact computation
# -------------------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([(1, 1, 0, 1), (2, 1, 1, 1), (1, 2, 1, 1), (1, 1, 2, 2)]),
       st.booleans())
def test_conv_against_a_direct_exact_convolution(seed, config, decimal):
    group, stride, pad, dilation = config
    rng = np.random.default_rng(seed)
    c, m = 2 * group, 2 * group
    x = rng.integers(-8, 8, (1, c, 5, 5)).astype(F32) * F32(0.0213 if decimal else 0.5)
    w = rng.integers(-8, 8, (m, c // group, 3, 3)).astype(F32) * F32(0.0071 if decimal else 0.25)
    b = rng.integers(-50, 50, (m,)).astype(F32) * F32(0.125)
    attrs = {"kernel_shape": [3, 3], "group": group, "strides": [stride] * 2, "pads": [pad] * 4,
             "dilations": [dilation] * 2}
    (iv,) = conv([x.astype(F32), w.astype(F32), b], attrs)
    xp = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    cg = c // group
    for mo in range(m):
        g = mo // (m // group)
        for i in range(iv.value.shape[2]):
            for j in range(iv.value.shape[3]):
                patch = xp[0, g * cg:(g + 1) * cg, i * stride:i * stride + 3 * dilation:dilation,
                           j * stride:j * stride + 3 * dilation:dilation]
                fa, fb = [*exact(patch), Fraction(1)], [*exact(w[mo]), Fraction(float(b[mo]))]
                r = sum((p * q for p, q in zip(fa, fb, strict=True)), Fraction(0))
                assert _inside(iv, (0, mo, i, j), r)
                for order in (ORDERS["sequential"], ORDERS["blocked"], ORDERS["pairwise"]):
                    assert _inside(iv, (0, mo, i, j), order(fa, fb))
                if not decimal:
                    assert Fraction(float(iv.low[0, mo, i, j])) == Fraction(float(iv.high[0, mo, i, j])) == r


def test_gemm_alpha_beta_and_transposes():
    rng = np.random.default_rng(5)
    a = rng.integers(-8, 8, (4, 3)).astype(F32) * F32(0.5)
    b = rng.integers(-8, 8, (5, 4)).astype(F32) * F32(0.25)
    c = rng.integers(-8, 8, (5,)).astype(F32) * F32(0.125)
    for alpha, beta in ((0.5, 2.0), (0.3, 1.0)):
        (iv,) = gemm([a, b, c], {"transA": 1, "transB": 1, "alpha": alpha, "beta": beta})
        for i in range(3):
            for j in range(5):
                r = Fraction(float(F32(alpha))) * sum((Fraction(float(a[k, i])) * Fraction(float(b[j, k]))
                                                      for k in range(4)), Fraction(0)) \
                    + Fraction(float(F32(beta))) * Fraction(float(c[j]))
                assert _inside(iv, (i, j), r)
                # alpha applied first to A (one more rounding per product), then the sum, then beta * C
                fa = [f32(Fraction(float(F32(alpha))) * Fraction(float(a[k, i]))) for k in range(4)]
                s = ORDERS["fma"](fa, [Fraction(float(b[j, k])) for k in range(4)])
                v = f32(s + f32(Fraction(float(F32(beta))) * Fraction(float(c[j]))))
                assert _inside(iv, (i, j), v)
        if alpha == 0.5:  # powers of two: every sum exact (a zero's sign left free)
            assert iv.single().all()


def test_average_pools_divide_by_their_count_and_powers_of_two_are_exact():
    x = np.arange(1, 17, dtype=F32).reshape(1, 1, 4, 4) * F32(0.5)
    (iv,) = average_pool([x], {"kernel_shape": [2, 2], "strides": [2, 2]})
    assert iv.is_exact() and iv.value[0, 0, 0, 0] == F32((0.5 + 1.0 + 2.5 + 3.0) / 4)
    (iv,) = average_pool([x], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})  # counts 4, 6, 9
    (iv1,) = average_pool([x], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1})
    corner = [Fraction(float(v)) for v in (x[0, 0, 0, 0], x[0, 0, 0, 1], x[0, 0, 1, 0], x[0, 0, 1, 1])]
    assert _inside(iv, (0, 0, 0, 0), sum(corner) / 4) and _inside(iv1, (0, 0, 0, 0), sum(corner) / 9)
    # the reciprocal form: the rounded sum times the rounded 1/9, two more roundings
    s = Fraction(0)
    for v in corner:
        s = f32(s + v)
    assert _inside(iv1, (0, 0, 0, 0), f32(s * f32(Fraction(1, 9))))
    (g,) = global_average_pool([x], {})
    assert g.is_exact() and g.value.shape == (1, 1, 1, 1) and float(g.value.reshape(())) == 4.25


@pytest.mark.parametrize("unit", [2.0**-147, 2.0**-148, 2.0**-149])
def test_subnormal_averages_and_resizes_keep_every_float32_form_inside(unit):
    """With subnormal values a division or product rounds by up to half the smallest subnormal (2**-150), not
    relatively: the forms a float32 kernel may take (sum then divide, times the rounded reciprocal, each value
    scaled by 1/count first; the lerp a + w (b - a) and the weighted sum) all land inside, and an average
    is called exact only where every form gives it."""
    codes = np.array([3, -1, 5, 6, -3, 2, 1, -5, 1, 1, 1, 1], F32)
    x = (codes * F32(unit)).astype(F32).reshape(1, 1, 3, 4)
    (iv,) = average_pool([x], {"kernel_shape": [2, 2], "strides": [1, 2]})
    for h in range(2):
        for w in range(2):
            vals = [Fraction(float(v)) for v in x[0, 0, h:h + 2, 2 * w:2 * w + 2].reshape(-1)]
            s = Fraction(0)
            for v in vals:
                s = f32(s + v)
            first = Fraction(0)
            for v in vals:
                first = f32(first + f32(v * Fraction(1, 4)))
            for v in (f32(s / 4), f32(s * f32(Fraction(1, 4))), first):
                assert _inside(iv, (0, 0, h, w), v), (unit, h, w, v)
    # four equal units: the sum divided is exactly one unit; each scaled by 1/4 first is a quarter unit, a
    # float32 value only from 2**-147 (2**-149), else a tie to 0 (2**-150) or below: exact from 2**-147 only
    (ones,) = average_pool([x[:, :, 2:, :]], {"kernel_shape": [1, 4]})
    assert ones.is_exact() == (unit >= 2.0**-147)
    assert _inside(ones, (0, 0, 0, 0), Fraction(0)) == (unit < 2.0**-147)
    (iv,) = resize([x, None, np.array([1, 1, 1, 2], F32)], {"mode": "linear"})
    for h in range(3):
        row = [Fraction(float(v)) for v in x[0, 0, h]]
        for j in range(8):
            c = min(max(Fraction(2 * j + 1, 4) - Fraction(1, 2), Fraction(0)), Fraction(3))
            i0 = int(c)
            i1, wt = min(i0 + 1, 3), c - i0
            a, b = row[i0], row[i1]
            lerp = f32(a + f32(wt * f32(b - a)))
            weighted = f32(f32((1 - wt) * a) + f32(wt * b))
            # (ONNX Runtime's form: a clamped axis weighted 0.5 and 0.5 on the same pixel, one product a term)
            pair = f32(f32((1 - wt) / 2 * a) + f32(wt / 2 * b))
            half = f32(pair + pair)
            for v in (lerp, weighted, half):
                assert _inside(iv, (0, 0, h, j), v), (unit, h, j, v)


def test_add_mul_leakyrelu_are_one_correctly_rounded_operation():
    a = np.array([0.1, -0.3, 1e-3], F32)
    b = np.array([0.2], F32)
    for fn, op in ((add, lambda p, q: p + q), (mul, lambda p, q: p * q)):
        (iv,) = fn([a, b], {})
        assert iv.is_exact()
        assert [Fraction(float(v)) for v in iv.value] == [f32(op(Fraction(float(p)), Fraction(float(b[0]))))
                                                          for p in a]
    (iv,) = leaky_relu([a], {"alpha": 0.1})
    assert iv.is_exact()
    assert Fraction(float(iv.value[1])) == f32(Fraction(float(F32(0.1))) * Fraction(float(a[1])))


def test_sigmoid_and_softmax_hold_float32_formulas_and_their_exact_points():
    x = np.linspace(-12, 12, 97).astype(F32)
    (iv,) = sigmoid([x], {})
    direct = (F32(1) / (F32(1) + np.exp(-x))).astype(F32)  # float32 exp, a sum and a reciprocal
    tanh_form = (F32(0.5) * np.tanh(F32(0.5) * x) + F32(0.5)).astype(F32)
    for v in (direct, tanh_form):
        assert ((iv.low <= v) & (v <= iv.high)).all()
    assert iv.low[48] == iv.high[48] == 0.5  # sigmoid(0) = 1/2 exactly (the catalogue's reading)
    rows = np.array([[0.7, 0.7, 0.7, 0.7], [-3.0, 0.0, 2.5, 8.0], [0.0, -16.0, -16.5, 1.0]], F32)
    (iv,) = softmax([rows], {"axis": -1})
    e = np.exp(rows - rows.max(axis=-1, keepdims=True))
    for v in (e / e.sum(axis=-1, keepdims=True), e * (F32(1) / e.sum(axis=-1, keepdims=True)),
              np.exp(rows) / np.exp(rows).sum(axis=-1, keepdims=True)):
        v = v.astype(F32)
        assert ((iv.low <= v) & (v <= iv.high)).all()
    assert (iv.low[0] == 0.25).all() and (iv.high[0] == 0.25).all()  # four equal values: 1/4 exactly
    assert not iv.single()[1].any()


def test_resize_nearest_ties_follow_the_mode_and_linear_stays_inside():
    x = np.arange(4, dtype=F32).reshape(1, 1, 1, 4)
    scales = np.array([1, 1, 1, 2], F32)
    picks = {}
    for mode in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
        attrs = {"coordinate_transformation_mode": "asymmetric", "nearest_mode": mode}
        (iv,) = resize([x, None, scales], attrs)
        assert iv.is_exact()
        picks[mode] = iv.value.reshape(-1).tolist()
    # x_original = i / 2: the odd outputs sit halfway between two pixels
    assert picks["round_prefer_floor"] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert picks["round_prefer_ceil"] == [0, 1, 1, 2, 2, 3, 3, 3]
    assert picks["ceil"] == picks["round_prefer_ceil"] and picks["floor"] == picks["round_prefer_floor"]
    y = np.array([[[[0.5, -1.25, 2.0], [3.0, 0.25, -0.75]]]], F32)
    (iv,) = resize([y, None, None, np.array([1, 1, 3, 7], np.int64)],
                   {"mode": "linear", "coordinate_transformation_mode": "half_pixel"})
    # a float32 evaluation: coordinates in float32, the lerp form a + w (b - a) along each axis
    for i in range(3):
        for j in range(7):
            ch = min(max((F32(i) + F32(0.5)) / (F32(3) / F32(2)) - F32(0.5), F32(0)), F32(1))
            cw = min(max((F32(j) + F32(0.5)) / (F32(7) / F32(3)) - F32(0.5), F32(0)), F32(2))
            h0, w0 = int(np.floor(ch)), int(np.floor(cw))
            h1, w1 = min(h0 + 1, 1), min(w0 + 1, 2)
            wh, ww = F32(ch - F32(h0)), F32(cw - F32(w0))
            top = F32(y[0, 0, h0, w0] + ww * F32(y[0, 0, h0, w1] - y[0, 0, h0, w0]))
            bottom = F32(y[0, 0, h1, w0] + ww * F32(y[0, 0, h1, w1] - y[0, 0, h1, w0]))
            v = F32(top + wh * F32(bottom - top))
            assert iv.low[0, 0, i, j] <= v <= iv.high[0, 0, i, j], (i, j)



def _nearest_fraction(v: Fraction, mode: str) -> int:
    """ONNX's nearest_mode of an exact number, by its definition (in fractions, apart from the kernel)."""
    if mode == "floor":
        return math.floor(v)
    if mode == "ceil":
        return math.ceil(v)
    half = Fraction(1, 2)
    return math.ceil(v - half) if mode == "round_prefer_floor" else math.floor(v + half)


@pytest.mark.parametrize("mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
def test_resize_picks_on_and_next_to_a_step_are_the_fractions_picks(mode):
    """nearest_mode's index of x_original +- eps, computed in integers from the float64 offset, is the exact
    one: coordinates on a whole number or a half, one float64 step either side of it, between two steps."""
    rng = np.random.default_rng(3)
    for den in (1, 2, 3, 4095, 2**19, 999_983):
        num = rng.integers(-2**22, 2**22, 64)
        base = num / den
        target = np.floor(2 * base + rng.integers(-2, 3, 64)) / 2  # a step near each coordinate
        on = target - base
        for off in (on, np.nextafter(on, np.inf), np.nextafter(on, -np.inf), on + 0.25, on - 0.375,
                    np.ldexp(on, -40), -np.abs(on) * 3.0**-30):
            want = [_nearest_fraction(Fraction(int(n), den) + Fraction(float(o)), mode)
                    for n, o in zip(num, off, strict=True)]
            got = compute_resize._nearest_moved(num.astype(object), den, off, mode)
            assert got.tolist() == want
            assert compute_resize._nearest_exactly(num.astype(object), den, mode).tolist() == \
                [_nearest_fraction(Fraction(int(n), den), mode) for n in num]


def test_a_negative_scale_puts_the_codes_back_in_order():
    iv = from_real(np.array([1.2]), np.array([0.2]))
    q = iv.map(lambda v: _q_signed(v, -0.5))
    assert int(q.low[0]) <= int(q.value[0]) <= int(q.high[0]) and int(q.high[0]) - int(q.low[0]) == 1


def _q_signed(v: np.ndarray, scale: float) -> np.ndarray:
    from qdq_conformance.reference import evaluate

    return evaluate("ai.onnx", "QuantizeLinear", 21, [v.astype(F32), np.array(scale, F32),
                                                       np.array(0, np.int8)])[0]


def test_align_corners_products_past_2_24_are_not_exact():
    """align_corners with a power-of-two ratio ((8191 - 1) / (4096 - 1) = 2) is exact only while the text's
    x_resized * (length_original - 1) is a float32 integer: past 2**24 that product rounds, and a float32
    evaluation (ONNX Runtime's: 2050.500244 for 2050.5) picks the other neighbour of a tie, which the
    interval takes."""
    x = np.arange(4096, dtype=F32).reshape(1, 1, 1, 4096)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "align_corners",
             "nearest_mode": "round_prefer_floor"}
    (iv,) = resize([x, None, None, np.array([1, 1, 1, 8191], np.int64)], attrs)
    assert not iv.is_exact()
    i = np.arange(8191, dtype=F32)
    coordinate = (i * F32(4095)).astype(F32) / F32(8190)  # the text's order, each step rounded in float32
    picks = np.ceil(coordinate - F32(0.5)).astype(np.int64)  # round_prefer_floor: round half down
    got = x[0, 0, 0, picks]
    assert ((iv.low[0, 0, 0] <= got) & (got <= iv.high[0, 0, 0])).all()
    assert (got != iv.value[0, 0, 0]).sum() > 0  # (it does differ from the exact picks somewhere)
    small = resize([x[..., :2048], None, None, np.array([1, 1, 1, 4095], np.int64)], attrs)[0]
    assert small.is_exact()  # (4094 * 2047 < 2**24)
