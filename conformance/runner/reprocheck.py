"""The script ``show --repro`` (and ``repro-check``) writes: a case's repro (the backend's own run of the
case, the record's ``repro``) between a prelude that keeps the outputs it prints and a check that compares
them with the spec's, bit for bit (any NaN matching any NaN, within the case's ULP bound, within an
``interval`` case's acceptable values: ``compare.py``'s rule, written out so that the script runs without this
package; tests/test_compare_agreement.py holds it to that rule). Exit status 1 when they differ, when a model
the spec forbids runs (a ``must-reject`` case), or (Python's own) when the backend raises; 0 when the outputs
are the spec's.
"""

from __future__ import annotations

import numpy as np

from ..compare import MUST_REJECT, rule_interval, rule_ulp
from ..results import CaseRecord
from ..types import TYPES, bit_patterns, by_name

#: (element type name, shape, bit codes, lowest and highest acceptable codes of an interval case or None) of
#: one output the spec gives
Expected = tuple[str, list[int], list[int], "list[int] | None", "list[int] | None"]


def _nan_codes(types: set[str]) -> dict[str, list[int]]:
    """The NaN codes of each narrow float type in ``types`` (float4/6/8: the script looks them up; a wider
    float's NaNs it tells from the value)."""
    narrow = [by_name(t) for t in sorted(types) if t in TYPES and TYPES[t].is_float and TYPES[t].bits <= 8]
    return {t.name: [int(c) for c in np.flatnonzero(np.isnan(bit_patterns(t).astype(np.float32)))]
            for t in narrow}


def _narrow_values(types: set[str]) -> dict[str, list[str]]:
    """The value of every code of each narrow float type in ``types``, as ``float.hex`` text (an interval's
    bounds compare by value)."""
    narrow = [by_name(t) for t in sorted(types) if t in TYPES and TYPES[t].is_float and TYPES[t].bits <= 8]
    return {t.name: [float(v).hex() for v in bit_patterns(t).astype(np.float64)] for t in narrow}


def checking_script(rec: CaseRecord, expected: list[Expected], partial: bool = False,
                    writer: str = "qdq-conformance show --repro") -> str:
    """The record's repro with the check around it; ``expected``: the spec's outputs (``partial``: only the
    first elements the record kept, the case being out of the corpus); ``writer``: who wrote it, for its
    first line. ValueError when the record has no repro (a case that passed)."""
    code = rec.get("repro")
    if not code:
        raise ValueError(f"the record of {rec['id']} [{rec.get('form')}] has no repro (only a case that did "
                         "not pass has one)")
    types = {t for t, _, _, _, _ in expected}
    ulp = rule_ulp(rec.get("comparison"))
    reject = rec.get("comparison") == MUST_REJECT
    rule = (f"ULP bound {ulp}" if not rule_interval(rec.get("comparison")) else
            "an interval case: an element passes within its lowest and highest acceptable values")
    what = (f"exit status 1 when it runs: the model breaks {rec.get('rule') or 'a rule of the spec'}, so a "
            "conforming backend rejects it" if reject else
            f"compares its outputs with the spec's (bit patterns; any NaN matches any NaN; {rule}); "
            "exit status 1 when they differ")
    header = (f"# {rec['id']} [{rec.get('form')}] on {rec.get('backend')} {rec.get('backend_version')}, "
              f"written by `{writer}`.\n# Runs the backend as the run did, then {what}.\n"
              + ("# (the case is not in this corpus: only the first elements the results file kept are "
                 "compared)\n" if partial else ""))
    clause = rec.get("spec")
    spec = " ".join(str((clause.get("text") if clause else None) or "").split())
    return (header + f"# spec: {spec[:300]}\n" + _PRELUDE.format(
        expected=repr(expected), nan_codes=repr(_nan_codes(types)), narrow=repr(_narrow_values(types)),
        bits=repr({t: TYPES[t].bits for t in sorted(types) if t in TYPES}),
        floats=repr(sorted(t for t in types if t in TYPES and TYPES[t].is_float)), ulp=ulp,
        must_reject=repr(rec.get("rule") or "a rule of the spec") if reject else None)
        + "\n# --- the backend's repro ---\n" + code.rstrip() + "\n" + _CHECK)


_PRELUDE = '''
import builtins
import sys

import numpy as np

EXPECTED = {expected}  # (type, shape, bit codes, low codes, high codes) of each output the spec gives
NAN_CODES = {nan_codes}  # the NaN codes of the narrow float types
NARROW = {narrow}  # the value of every code of the narrow float types (float.hex)
BITS = {bits}
FLOATS = {floats}
ULP = {ulp}
MUST_REJECT = {must_reject}  # the rule a model breaks when the spec forbids it (the backend must refuse it)
_outputs = []


def print(*args, **kwargs):  # the backend's repro prints its outputs: keep the arrays
    for a in args:
        if isinstance(a, np.ndarray):
            _outputs.append(a)
        elif isinstance(a, (list, tuple)) and a and all(isinstance(v, np.ndarray) for v in a):
            _outputs.extend(a)
'''

_CHECK = '''

def _codes(a, name, n):
    """Bit codes of an output array (raw codes as some backends give narrow types; packed 4-bit unpacked)."""
    bits = BITS.get(name, 8 * a.dtype.itemsize)
    raw = np.ascontiguousarray(a).reshape(-1)
    if bits <= 4 and raw.size * 2 in (n, n + 1) and raw.dtype.itemsize == 1:
        b = raw.view(np.uint8)
        raw = np.stack([b & 15, b >> 4], axis=1).reshape(-1)[:n]
    width = max(1, raw.dtype.itemsize)
    c = raw.view("u%d" % width).astype(np.uint64)
    return (c & ((1 << bits) - 1)).tolist()


def _wide(code, name):
    """The value of a float32 / float16 / bfloat16 code."""
    if BITS[name] == 32:
        return np.array([code], np.uint32).view(np.float32)[0]
    if name == "float16":
        return np.array([code], np.uint16).view(np.float16)[0]
    return np.array([code << 16], np.uint32).view(np.float32)[0]  # bfloat16


def _nan(code, name):
    if name not in FLOATS:
        return False
    if name in NAN_CODES:
        return code in NAN_CODES[name]
    return bool(np.isnan(_wide(code, name)))


def _finite(code, name):
    return bool(np.isfinite(_wide(code, name)))


def _value(code, name):
    """The value of a code (an interval's ends compare by value)."""
    if name in NARROW:
        return float.fromhex(NARROW[name][code])
    if name in FLOATS:
        return float(_wide(code, name))
    bits = BITS.get(name, 8)
    signed = name.startswith("int")
    return code - (1 << bits) if signed and code >> (bits - 1) else code


def _within(code, lo, hi, name):
    if lo == hi:
        return code == lo or (_nan(code, name) and _nan(lo, name))
    if _nan(code, name):
        return False
    return _value(lo, name) <= _value(code, name) <= _value(hi, name)


def _ordered(code, bits):
    sign = 1 << (bits - 1)
    return -(code & (sign - 1)) if code & sign else code


bad = 0
if MUST_REJECT:
    builtins.print(f"the backend ran a model the spec forbids ({MUST_REJECT}): it must reject it")
    sys.exit(1)
if len(_outputs) < len(EXPECTED):
    builtins.print(f"the backend gave {len(_outputs)} output(s), the spec {len(EXPECTED)}")
    sys.exit(1)
for k, (name, shape, want, low, high) in enumerate(EXPECTED):
    got = _codes(_outputs[k], name, len(want))
    builtins.print(f"output {k} ({name}, shape {shape}): expected code vs actual code")
    if len(got) != len(want):
        bad += 1
        builtins.print(f"  the backend's output {k} has {len(got)} element(s), the spec's {len(want)}")
    for j, w in enumerate(want):
        g = got[j] if j < len(got) else None
        same = g == w or (g is not None and _nan(g, name) and _nan(w, name))
        if not same and g is not None and ULP and name in FLOATS and BITS[name] >= 16:
            same = _finite(g, name) and _finite(w, name) and \
                abs(_ordered(g, BITS[name]) - _ordered(w, BITS[name])) <= ULP
        interval = ""
        if low is not None and high is not None and j < len(low):
            same = g is not None and _within(g, low[j], high[j], name)
            if low[j] != high[j]:
                interval = f" (acceptable 0x{low[j]:x} .. 0x{high[j]:x})"
        if not same:
            bad += 1
        if not same or j < 16:
            builtins.print(f"  {'*' if not same else ' '} [{j}] expected 0x{w:x}{interval}, actual "
                           + ("-" if g is None else f"0x{g:x}"))
builtins.print(f"{bad} element(s) differ" if bad else "the outputs match the spec")
sys.exit(1 if bad else 0)
'''
