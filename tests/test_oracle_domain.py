"""The reference kernel at the edges of what it computes: empty batches of the pooling ops, a one-element
MatMulInteger zero point of another rank, and Resize align_corners coordinates whose products reach 2**24.
Each test fails on the kernel before the change it pins (docs/mutants.md, the re-run's open mutants)."""

from __future__ import annotations

import numpy as np
import pytest

from qdq_conformance.reference import compute_resize
from qdq_conformance.reference.compute_linear import matmul_integer
from qdq_conformance.reference.compute_pool import average_pool, global_average_pool


@pytest.mark.parametrize("shape", [(0, 2, 3), (0, 2, 0), (0, 1, 2, 0)])
def test_global_average_pool_of_an_empty_batch_is_empty(shape):
    """No output element, whatever an average over the spatial axes (empty or not) would be."""
    out = global_average_pool([np.zeros(shape, np.float32)], {})[0]
    assert out.value.shape == shape[:2] + (1,) * (len(shape) - 2) and out.is_exact()


@pytest.mark.parametrize("include", [0, 1])
def test_average_pool_of_an_empty_batch_is_empty(include):
    attrs = {"kernel_shape": [2], "pads": [1, 1], "count_include_pad": include}
    out = average_pool([np.zeros((0, 2, 5), np.float32)], attrs)[0]
    assert out.value.shape == (0, 2, 6)


def test_an_average_of_no_values_with_an_output_is_still_refused():
    with pytest.raises(ArithmeticError):
        global_average_pool([np.zeros((1, 1, 0), np.float32)], {})


def test_a_one_element_zero_point_of_higher_rank_than_its_operand_is_refused():
    """Per tensor the output is the product's [M, N]; broadcast as numpy does, it gains an axis: the text
    lists neither, so the kernel gives no answer. Of the operand's rank or lower, both agree: per tensor."""
    a = np.arange(6, dtype=np.int8).reshape(2, 3)
    b = np.arange(12, dtype=np.int8).reshape(3, 4)
    want = matmul_integer([a, b, np.array(1, np.int8)], {})[0].value
    for shape in [(1,), (1, 1)]:
        got = matmul_integer([a, b, np.ones(shape, np.int8)], {})[0].value
        assert got.shape == (2, 4) and (got == want).all()
    with pytest.raises(ValueError, match="fits no axis"):
        matmul_integer([a, b, np.ones((1, 1, 1), np.int8)], {})


@pytest.mark.parametrize(("l_in", "l_out", "exact"), [
    (2049, 8193, True),   # products up to 8192 * 2048 = 2**24: float32 values, ratio 4
    (4097, 4097, True),   # 4096 * 4096 = 2**24, ratio 1
    (4096, 8191, False),  # 8190 * 4095 > 2**24, odd products round
    (92, 186_369, False),  # ratio 2**11, products i * 91 pass 2**24 at odd values
    (186_369, 92, True),  # ratio 2**-11: every product 2**11 * 91 * i has at most 14 significant bits
])
def test_align_corners_is_exact_where_every_product_is_a_float32_value(l_in, l_out, exact):
    """x_resized * (length_original - 1) / (length_resized - 1) with a power-of-two ratio of lengths: exact in
    every form exactly when each product is a float32 value (not when it stays below 2**24)."""
    axis = compute_resize._axis(l_in, l_out, compute_resize.Fraction(l_out, l_in), "align_corners")
    products = np.arange(l_out, dtype=np.float64) * (l_in - 1)
    assert (products.astype(np.float32) == products).all() == exact
    assert (not axis.eps.any()) == exact
