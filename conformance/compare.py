"""Comparing a backend's output with the oracle's: bit for bit, NaN by class, optional ULP bound for floats,
or an interval per element.

The one comparison: the verdict (``runner.outcome``, which the fuzzer's and the mutant zoo's verdicts are),
the oracle's self-checks (``generators``), a reading that changes the answer (``generators.status``), the
records' explained elements, and the marks of the report's case page, ``show`` and ``findings`` (from a
record's previews: :func:`differing_codes`) all decide with :func:`compare` / :func:`differs`. A case's rule
is written as text (``exact``, ``ulp<=N``, ``interval``, ``must-reject``) by :func:`rule_text`, read back by
:func:`rule_ulp` and :func:`rule_interval`. Under ``interval`` (a graph case around a compute op: the oracle
gives, per element, the lowest and highest value a legitimate float32 evaluation can lead to), an element
whose two bounds are one bit pattern compares bit for bit as under ``exact``; any other passes when its value
lies within the bounds (by value: a NaN never does); :func:`outside_by` says where a value falls. (``show
--repro`` writes a script that runs without this package: its check is this comparison written out again, and
tests/test_compare_agreement.py holds the two to the same verdicts.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .types import bit_patterns, by_dtype, by_name, code_of


@dataclass
class Mismatch:
    """Why ``actual`` differs from ``expected``; ``indices`` are the first mismatching multi-indices."""

    reason: str
    count: int = 0
    total: int = 0
    indices: list[tuple[int, ...]] = field(default_factory=list)
    max_ulp: int | None = None
    interval: bool = False  # judged against the acceptable interval of each element

    def __str__(self) -> str:
        s = self.reason
        if self.count:
            s += (f": {self.count} of {self.total} elements "
                  f"{'outside the acceptable values' if self.interval else 'differ'}, first at "
                  f"{format_indices(self.indices[:5])}")
        if self.max_ulp is not None:
            s += f", max ULP distance {self.max_ulp}"
        return s


def format_indices(indices: list[tuple[int, ...]]) -> str:
    """``[4], [7]`` for elements 4 and 7 of a 1-D output, ``[1, 2]`` for row 1, column 2 of a 2-D one."""
    return ", ".join("[" + ", ".join(str(i) for i in index) + "]" for index in indices)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in units in the last place between same-typed float arrays (NaNs compare as 0 apart)."""
    t = by_dtype(a.dtype)
    bits = t.bits

    def ordered(x: np.ndarray) -> np.ndarray:
        c = code_of(x).astype(np.int64)
        sign = 1 << (bits - 1)
        return np.where(c & sign, -(c & (sign - 1)), c)

    d = np.abs(ordered(a) - ordered(b))
    both_nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    return np.where(both_nan, 0, d)


#: an output's acceptable interval: (low, high), arrays of the output's type and shape
Bounds = tuple[np.ndarray, np.ndarray]


def compare(expected: np.ndarray, actual: np.ndarray, ulp: int = 0, bounds: Bounds | None = None
            ) -> Mismatch | None:
    """None when ``actual`` matches ``expected`` under the rule; else a :class:`Mismatch`.

    Integer, float8, float4 and float6 elements compare by bit pattern; float32 / float16 / bfloat16 by bit
    pattern too unless ``ulp`` > 0 allows that many units in the last place. Any NaN matches any NaN. With
    ``bounds`` (the ``interval`` rule), an element passes within its bounds (:func:`differs`).
    """
    if expected.dtype != actual.dtype:
        return Mismatch(f"element type differs: expected {by_dtype(expected.dtype).name}, got "
                        f"{_type_name(actual.dtype)}")
    if expected.shape != actual.shape:
        return Mismatch(f"shape differs: expected {list(expected.shape)}, got {list(actual.shape)}")
    t = by_dtype(expected.dtype)
    same = ~differs(expected, actual, ulp, bounds)
    max_ulp = None
    if t.is_float and bounds is None:
        if ulp > 0 and t.bits >= 16:
            dist = ulp_distance(expected, actual)
            max_ulp = int(dist.max()) if dist.size else 0
        elif not same.all():
            dist = ulp_distance(expected, actual)
            max_ulp = int(dist[~same].max())
    if same.all():
        return None
    bad = np.argwhere(~same)
    return Mismatch("values differ", int(bad.shape[0]), int(same.size),
                    [tuple(int(i) for i in row) for row in bad[:10]], max_ulp, interval=bounds is not None)


def _values(a: np.ndarray) -> np.ndarray:
    """The elements' values as float64 (exact for every registry type), NaN where a float element is NaN."""
    if a.dtype.kind in "iub":
        return a.astype(np.float64)
    with np.errstate(invalid="ignore"):
        return a.astype(np.float32).astype(np.float64)


def differs(expected: np.ndarray, actual: np.ndarray, ulp: int = 0, bounds: Bounds | None = None
            ) -> np.ndarray:
    """Element by element, whether ``actual`` differs from ``expected`` (same type and shape) under the rule
    :func:`compare` applies: bit patterns, any NaN matching any NaN (and nothing else), and for 16- and 32-bit
    floats two finite values up to ``ulp`` units in the last place apart (an infinity or a NaN is never within
    a bound of anything but itself: the code after the largest finite value is infinity, the next ones NaNs).
    The report's case page marks its rows with it, so its marks are the verdict's.

    With ``bounds`` (low, high): an element whose low and high are one bit pattern is compared with it as
    above; any other matches when ``low <= actual <= high`` by value (a NaN never does: the oracle gives
    intervals of numbers only). A float interval's zero end accepts either sign of zero."""
    if bounds is not None:
        low, high = bounds
        single = code_of(low) == code_of(high)
        exact = ~differs(low, actual)
        a = _values(actual)
        with np.errstate(invalid="ignore"):
            inside = (_values(low) <= a) & (a <= _values(high))
        return ~np.where(single, exact, inside)
    t = by_dtype(expected.dtype)
    same = code_of(expected) == code_of(actual)
    if t.is_float:
        e32, a32 = expected.astype(np.float32), actual.astype(np.float32)
        same |= np.isnan(e32) & np.isnan(a32)
        if ulp > 0 and t.bits >= 16:
            same |= np.isfinite(e32) & np.isfinite(a32) & (ulp_distance(expected, actual) <= ulp)
    return ~same


def outside_by(bounds: Bounds, actual: np.ndarray) -> np.ndarray:
    """Per element, how far ``actual`` lies outside its interval, by value: negative below ``low``, positive
    above ``high``, 0 within (NaN for a NaN). For an integer output that is a number of codes."""
    low, high = (_values(b) for b in bounds)
    a = _values(actual)
    with np.errstate(invalid="ignore"):
        return np.where(a < low, a - low, np.where(a > high, a - high, np.where(np.isnan(a), np.nan, 0.0)))


def differing_codes(expected_type: str, expected_codes: Sequence[int], actual_type: str,
                    actual_codes: Sequence[int], ulp: int = 0,
                    bound_codes: tuple[Sequence[int], Sequence[int]] | None = None) -> list[int]:
    """The flat indices at which the elements of two previews (type name and bit codes, as a results file
    keeps them) differ under :func:`differs`, over the elements both hold; ``bound_codes``: the codes of the
    expected preview's low and high ends (the ``interval`` rule). Codes of a type that is not one of the
    registry's, or of two different types, are compared as codes (a structural mismatch says the rest)."""
    n = min(len(expected_codes), len(actual_codes))
    if bound_codes is not None:
        n = min(n, len(bound_codes[0]), len(bound_codes[1]))
    if expected_type == actual_type:
        try:
            e = from_codes(expected_type, list(expected_codes[:n]))
            a = from_codes(actual_type, list(actual_codes[:n]))
            bounds = None if bound_codes is None else (from_codes(expected_type, list(bound_codes[0][:n])),
                                                       from_codes(expected_type, list(bound_codes[1][:n])))
        except (KeyError, ValueError, IndexError, TypeError, OverflowError):
            pass
        else:
            return [int(j) for j in np.flatnonzero(differs(e, a, ulp, bounds))]
    return [j for j in range(n) if expected_codes[j] != actual_codes[j]]


#: the rule of a case that must be rejected (no outputs to compare)
MUST_REJECT = "must-reject"
EXACT = "exact"
#: the rule of a case judged against an interval per element (a graph case around a compute op)
INTERVAL = "interval"
_ULP_RULE = "ulp<="


def rule_text(ulp: int, must_reject: bool = False, interval: bool = False) -> str:
    """A case's comparison rule as records and manifests write it: ``exact``, ``ulp<=N``, ``interval``,
    ``must-reject``."""
    if must_reject:
        return MUST_REJECT
    return INTERVAL if interval else f"{_ULP_RULE}{ulp}" if ulp > 0 else EXACT


def rule_interval(text: object) -> bool:
    """Whether the rule text is ``interval``."""
    return str(text or "") == INTERVAL


def rule_ulp(text: object) -> int:
    """N of the rule ``ulp<=N``; 0 (exact) for any other text, None included."""
    rule = str(text or "")
    n = rule[len(_ULP_RULE):]
    return int(n) if rule.startswith(_ULP_RULE) and n.isdigit() else 0


def from_codes(type_name: str, codes: list[int]) -> np.ndarray:
    """The array of ``type_name`` elements whose bit patterns are ``codes`` (a results file's previews keep
    them)."""
    t = by_name(type_name)
    c = np.asarray(codes, dtype=np.uint32)
    if t.bits <= 16:
        return bit_patterns(t)[c]
    return c.view(t.dtype) if t.bits == 32 else c.astype(np.uint64).view(t.dtype)


def _type_name(dtype: np.dtype) -> str:
    try:
        return by_dtype(dtype).name
    except KeyError:
        return str(dtype)


def relative_tolerance(expected: Sequence[np.ndarray], ulp: int) -> tuple[float, float]:
    """The smallest (rtol, atol) under which ``|actual - e| <= atol + rtol * |e|`` (numpy's ``isclose``,
    which ONNX's backend-test runner applies with the ``rtol`` and ``atol`` of a test folder's ``data.json``)
    accepts every value within ``ulp`` units in the last place of each finite expected float element: rtol
    from the non-zero elements, atol from the zeros. (0.0, 0.0) when ``ulp`` is 0 (exact) or no element is
    such a float.
    A relative tolerance accepts more than the bound near the top of a binade: this function gives the
    tightest one that rejects nothing the bound allows, not an equivalent of it."""
    rtol = atol = 0.0
    if ulp <= 0:
        return rtol, atol
    for e in expected:
        t = by_dtype(e.dtype)
        if not t.is_float or t.bits < 16 or not e.size:
            continue
        flat = e.reshape(-1)
        e64 = flat.astype(np.float64)
        finite = np.isfinite(e64)
        sign = np.int64(1) << (t.bits - 1)
        codes = code_of(flat).astype(np.int64)
        ordered = np.where(codes & sign, -(codes & (sign - 1)), codes)
        for step in (ulp, -ulp):
            moved = ordered + step
            back = np.where(moved < 0, (-moved) | sign, moved) & ((np.int64(1) << t.bits) - 1)
            unsigned = np.dtype(f"u{t.bits // 8}")
            with np.errstate(invalid="ignore"):  # (a NaN's neighbour code may be a signalling NaN)
                neighbour = back.astype(unsigned).view(flat.dtype).astype(np.float64)
            ok = finite & np.isfinite(neighbour)
            distance = np.abs(neighbour - e64)
            zero = ok & (e64 == 0)
            nonzero = ok & (e64 != 0)
            if zero.any():
                atol = max(atol, float(distance[zero].max()))
            if nonzero.any():
                rtol = max(rtol, float((distance[nonzero] / np.abs(e64[nonzero])).max()))
    # (one float64 step up each: isclose's own rounding of rtol * |e| must not reject what the bound allows)
    return (float(np.nextafter(rtol, np.inf)) if rtol else 0.0,
            float(np.nextafter(atol, np.inf)) if atol else 0.0)
