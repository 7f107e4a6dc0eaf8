"""The readings of the ambiguity catalogue (``conformance/data/ambiguities.yaml``), computed for one node.

For a node and its inputs, :func:`readings` returns, for every catalogue entry whose question arises there,
the outputs under each of the entry's readings that can be computed (the kernel's own reading included, by
name): the kernel computes readings, it does not decide a case's status. The corpus generator keeps the
entries whose readings change the answer and makes such a case implementation-defined; the runner then passes
a backend that follows one of them (naming it) and fails one that follows none.

A reading is one of:
- outputs, every element constrained;
- outputs with a mask of the constrained elements, for a reading that leaves some elements free (``any``: a
  NaN quotient may quantize to any code, so only the other elements are judged);
- a rejection (``outputs`` None): the reading says the model is invalid, or fails.
Readings the catalogue describes but does not define precisely enough to compute are listed in
:data:`NOT_COMPUTED`, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np

from ..ambiguities import Reading, reading_key
from ..ambiguities import catalogue as _catalogue
from ..compare import compare
from ..opspecs import AI_ONNX, MS, QUARK, get
from ..types import by_dtype
from . import arith
from . import granularity as gran
from .dequantize import multiply
from .ops import plan_dequantize_linear, plan_quantize_linear
from .reading_divisions import DIVISIONS, F32, INT32, NARROW, Node, Outputs, division_entry, q_int
from .reading_dynamic import dql_empty, dql_judged, dql_nan, dql_zero

#: (entry, reading) pairs the catalogue names but does not define precisely enough to compute.
NOT_COMPUTED = {
    ("e8m0-precision", "e8m0"): "the catalogue does not say how a quotient rounds to a power of two",
    ("precision-values", "floats-and-int32"): "a model the kernel accepts is valid under every reading: the "
    "question is only about the models it rejects (invalid cases)",
    ("precision-values", "t2"): "concerns which models are valid, not the answer of a valid one",
    ("precision-values", "any-type"): "concerns which models are valid, not the answer of a valid one",
    ("matmulinteger-vector-zero-point", "broadcast"): "a compute op's question (which graphs are valid), "
    "never a node's outputs: the oracle refuses such a graph, so no case holds it",
    ("matmulinteger-vector-zero-point", "invalid"): "a compute op's question (which graphs are valid), "
    "never a node's outputs: the oracle refuses such a graph, so no case holds it",
    ("exp-accuracy", "budget"): "a compute op's interval, not a node's outputs: compute_exp.py widens "
    "Sigmoid's and Softmax's real result by the budget (exact where the exact result is a float32)",
    ("exp-accuracy", "correctly-rounded"): "inside the budget's interval: a backend following it passes",
    ("exp-accuracy", "budget-everywhere"): "differs from the kernel's reading only where the exact result is "
    "a float32 (sigmoid(0), 1/n): there it widens the interval to the budget, which the graph cases' "
    "descriptions name",
}

# --- zero points
# ---------------------------------------------------------------------------------------------

def _float_zero_point(n: Node) -> dict[str, Outputs] | None:
    if n.spec.domain != AI_ONNX or n.spec.version < 19 or n.zp is None or n.scale is None:
        return None
    if "Dequantize" in n.spec.name:
        differences = _fzp_differences(n)
        if differences is None:
            return None
        return {"exact": n.outputs, **{name: _literal(n, d) for name, d in differences.items()}}
    if n.out.is_integer:
        return None
    return _float_zero_point_q(n, n.quotient(), n.outputs)


def _float_zero_point_q(n: Node, q: np.ndarray, base: Outputs) -> dict[str, Outputs] | None:
    """QuantizeLinear to a float target, from the quotient ``q`` (``base``: the outputs of that division)."""
    _, z = n.broadcast()
    assert z is not None and n.plan is not None
    z64, out, sat = arith.to_float64(z), n.out, n.plan.saturate

    def enc(v: np.ndarray) -> Outputs:
        return (arith.encode_float(arith.round_to(v, out), out, sat).reshape(n.x.shape),)

    with np.errstate(invalid="ignore"):
        return {"exact": base, "zero-unused": enc(np.where(z64 == 0, q, q + z64)),
                "two-roundings": enc(arith.round_to(q, out) + z64)}


def _fzp_differences(n: Node) -> dict[str, np.ndarray] | None:
    """DequantizeLinear with a float x: ``x - x_zero_point`` under float-zero-point's other readings."""
    if n.spec.domain != AI_ONNX or n.spec.version < 19 or n.zp is None or by_dtype(n.x.dtype).is_integer:
        return None
    _, z = n.broadcast()
    assert z is not None
    x64, z64 = arith.to_float64(n.x), arith.to_float64(z)
    with np.errstate(invalid="ignore"):
        return {"zero-unused": np.where(z64 == 0, x64, x64 - z64)}


def _int32_differences(n: Node) -> dict[str, np.ndarray] | None:
    if "Dequantize" not in n.spec.name or by_dtype(n.x.dtype) is not INT32 or n.zp is None or not n.zp.any():
        return None
    return {"ignored": arith.to_float64(n.x)}


def _literal(n: Node, d64: np.ndarray) -> Outputs:
    """The kernel's product (dq-precision: literal) of the difference ``d64`` and the scale."""
    s, _ = n.broadcast()
    return (multiply(d64, arith.to_precision(s, n.out), n.out).reshape(n.x.shape),)


def _int32_zero_point(n: Node) -> dict[str, Outputs | None] | None:
    differences = _int32_differences(n)
    if differences is None:
        return None
    return {"subtracted": n.outputs, "ignored": _literal(n, differences["ignored"]), "invalid": None}


def _dq_products(n: Node, d: np.ndarray) -> dict[str, Outputs] | None:
    """dq-precision's other readings of the product of the difference ``d`` (float64) and the scale."""
    if "Dequantize" not in n.spec.name or not (n.spec.domain == MS or n.spec.version >= 19):
        return None
    if n.spec.domain == QUARK or n.out.name not in NARROW:
        return None
    s, _ = n.broadcast()
    with np.errstate(all="ignore"):
        widened = arith.round_to(d * arith.to_float64(s), n.out)
        f32 = arith.to_float64(arith.to_precision(d, F32) * arith.to_precision(s, F32))
    found: dict[str, Outputs] = {"widened": (arith.cast_float(widened, n.out).reshape(n.x.shape),)}
    if n.spec.domain == MS or n.spec.version == 19:
        # Only where the text names no precision for the product: from version 21 "The output type also
        # determines the precision of the multiplication operation", which a float32 product is not.
        found["float32"] = (arith.cast_float(arith.round_to(f32, n.out), n.out).reshape(n.x.shape),)
    return found


def _dq_precision(n: Node) -> dict[str, Outputs] | None:
    if "Dequantize" not in n.spec.name:
        return None
    _, z = n.broadcast()
    with np.errstate(invalid="ignore"):  # float8 x inf minus a zero point inf is NaN, as in the kernel
        d = arith.to_float64(n.x) - (0 if z is None else arith.to_float64(z))
    products = _dq_products(n, d)
    return None if products is None else {"literal": n.outputs, **products}


def _dq_combinations(n: Node) -> list[Reading]:
    """dq-precision's other products of the differences under the zero-point entries' other readings."""
    out: list[Reading] = []
    for amb, differences in (("float-zero-point", _fzp_differences(n)),
                             ("int32-zero-point", _int32_differences(n))):
        for d_name, d in (differences or {}).items():
            for p_name, outs in (_dq_products(n, d) or {}).items():
                out.append(Reading("dq-precision", f"{p_name}+{reading_key(amb, d_name)}", outs))
    return out


# --- NaN
# -----------------------------------------------------------------------------------------------------

def _replace(base: Outputs, where: np.ndarray, value: np.ndarray | float) -> Outputs:
    y = base[0].copy()
    y[where] = np.broadcast_to(np.asarray(value), y.shape)[where].astype(y.dtype)
    return (y,) + base[1:]


def _nan_to_integer(n: Node) -> dict[str, Outputs] | None:
    if n.spec.name == "DynamicQuantizeLinear" or not q_int(n):
        return None
    return _nan_to_integer_q(n, n.quotient(), n.outputs)


def _nan_to_integer_q(n: Node, q: np.ndarray, base: Outputs) -> dict[str, Outputs] | None:
    nan = np.isnan(q)
    if not nan.any():
        return None
    t = n.out
    assert t.int_min is not None and t.int_max is not None
    return {"zero-point": base, "zero": _replace(base, nan, 0), "lower-bound": _replace(base, nan, t.int_min),
            "upper-bound": _replace(base, nan, t.int_max), "any": base}


def _nan_free(n: Node, ambiguity: str) -> np.ndarray | None:
    """The elements a NaN reading leaves free (None when there are none)."""
    if ambiguity == "nan-to-integer" and n.spec.name != "DynamicQuantizeLinear" and q_int(n):
        nan = np.isnan(n.quotient())
    elif ambiguity == "nan-to-nanless-float":
        _, z = n.broadcast()
        nan = np.isnan(n.quotient() + (0 if z is None else arith.to_float64(z)))
    else:
        return None
    return nan if nan.any() else None


def _nan_to_nanless_float(n: Node) -> dict[str, Outputs] | None:
    if n.spec.name != "QuantizeLinear" or n.scale is None or n.out.is_integer or n.out.has_nan:
        return None
    nan = _nan_free(n, "nan-to-nanless-float")
    if nan is None:
        return None
    return {"max-finite": n.outputs, "negative-zero": _replace(n.outputs, nan, -0.0), "any": n.outputs}


# --- other entries
# -------------------------------------------------------------------------------------------

def _quark_float_saturation(n: Node) -> dict[str, Outputs] | None:
    if n.spec.domain != QUARK or "Dequantize" in n.spec.name or n.out.name not in NARROW:
        return None
    return {"saturate": n.outputs, "inf": n.quantize(saturate=False)}


def _validity(kernel: str) -> Callable[[Node], dict[str, Outputs | None]]:
    """An entry whose other reading makes the model invalid."""
    return lambda n: {kernel: n.outputs, "invalid": None}


def _block_size_si_1(n: Node) -> dict[str, Outputs | None] | None:
    g = n.plan.granularity if n.plan is not None else None
    if g is None or g.kind != gran.BLOCKED or g.axis is None or n.scale is None or n.scale.shape[g.axis] != 1:
        return None
    equal = n.outputs if g.block_size == n.x.shape[g.axis] else None
    return {"no-upper-bound": n.outputs, "equal-di": equal, "invalid": None}


def _block_size_empty_axis(n: Node) -> dict[str, Outputs | None] | None:
    g = n.plan.granularity if n.plan is not None else None
    if g is None or g.kind != gran.BLOCKED or g.axis is None or n.x.shape[g.axis] != 0:
        return None
    return {"any-block-size": n.outputs, "invalid": None}


#: Every entry's readings, by catalogue id: a function of the node giving each reading's outputs (None for a
#: rejection), or None when the entry's question does not arise for the node. Validity entries are computed
#: only for a case that names them (their question is about which models are valid, which the case's shape
#: decides).
COMPUTED: dict[str, Callable[[Node], Mapping[str, Outputs | None] | None]] = {
    "nan-to-integer": _nan_to_integer,
    "division-precision": division_entry("division-precision"),
    "mixed-precision-operands": division_entry("mixed-precision-operands"),
    "int32-precision": division_entry("int32-precision"),
    "int32-input-division": division_entry("int32-input-division"),
    "e8m0-precision": division_entry("e8m0-precision"),
    "float-zero-point": _float_zero_point,
    "int32-zero-point": _int32_zero_point,
    "dq-precision": _dq_precision,
    "nan-to-nanless-float": _nan_to_nanless_float,
    "quark-float-saturation": _quark_float_saturation,
    "dql-nan": dql_nan,
    "dql-zero": dql_zero,
    "dql-empty": dql_empty,
    "block-size-si-1": _block_size_si_1,
    "block-size-empty-axis": _block_size_empty_axis,
    "v10-one-element-scale": _validity(gran.PER_TENSOR),
    "one-element-scale": _validity(gran.PER_TENSOR),
    "rank1-axis": _validity(gran.PER_AXIS),
    "ms-default-output": _validity("uint8"),
    "scalar-one-element-shapes": _validity(gran.PER_TENSOR),
    "ms-one-element-no-axis": _validity(gran.PER_TENSOR),
    "quark-dq-zero-point-type": lambda n: {"x-type": n.outputs, "float": None},
    "precision-values": lambda n: None,  # see NOT_COMPUTED
    "exp-accuracy": lambda n: None,  # (the compute ops' question, never a node's: see NOT_COMPUTED)
    "matmulinteger-vector-zero-point": lambda n: None,  # (likewise)
}
#: entries whose question no input value raises (validity, and DynamicQuantizeLinear's input-wide questions):
#: computed only when asked for (a case names them)
_ON_REQUEST = {"v10-one-element-scale", "one-element-scale", "rank1-axis", "ms-default-output",
                  "scalar-one-element-shapes", "ms-one-element-no-axis", "quark-dq-zero-point-type",
                  "block-size-si-1", "block-size-empty-axis", "dql-nan", "dql-empty"}


def _fzp_applies(n: Node) -> bool:
    return n.spec.domain == AI_ONNX and n.spec.version >= 19 and n.zp is not None and not n.out.is_integer


#: Entries about what follows the division, computed from a quotient and the outputs of that division.
_AFTER_DIVISION: dict[str, tuple[Callable[[Node], bool],
                                 Callable[[Node, np.ndarray, Outputs], dict[str, Outputs] | None]]] = {
    "float-zero-point": (_fzp_applies, _float_zero_point_q),
    "nan-to-integer": (q_int, _nan_to_integer_q),
}


def _combinations(n: Node) -> list[Reading]:
    """A backend may follow another reading of the division and another reading of what follows it at once
    (ONNX Runtime divides float16 in float32 and ignores a float8 zero point): every such pair, named
    ``<division reading>+<entry>:<reading>`` under the division's entry."""
    out: list[Reading] = []
    if "Dequantize" in n.spec.name:
        return _dq_combinations(n)
    if n.spec.name == "DynamicQuantizeLinear":
        return out
    for d_amb, divisions_of in DIVISIONS.items():
        divisions = divisions_of(n)
        for a_amb, (applies, after_of) in _AFTER_DIVISION.items():
            if not divisions or not applies(n):
                continue
            for d_name, division in divisions.items():
                q = n.quotient(division)
                after = after_of(n, q, n.quantize(precision=division[0], divide=division[1]))
                for a_name, outs in (after or {}).items():
                    if a_name == _catalogue()[a_amb].kernel_reading:
                        continue
                    judged = (~np.isnan(q),) + (None,) * (len(outs) - 1) if a_name == "any" else None
                    out.append(Reading(d_amb, f"{d_name}+{reading_key(a_amb, a_name)}", outs, judged))
    return out


def _node(domain: str, op: str, version: int, inputs: Sequence[np.ndarray | None], attrs: dict[str, int],
          outputs: Sequence[np.ndarray]) -> Node:
    spec = get(domain, op, version)
    x = inputs[0]
    assert x is not None
    scale = inputs[1] if len(inputs) > 1 else None
    zp = inputs[2] if len(inputs) > 2 else None
    plan = None
    if op != "DynamicQuantizeLinear":
        planner = plan_dequantize_linear if "Dequantize" in op else plan_quantize_linear
        plan = planner(spec, list(inputs), attrs)
    return Node(spec, x, scale, zp, dict(attrs), plan, tuple(outputs))


def readings(domain: str, op: str, version: int, inputs: Sequence[np.ndarray | None], attrs: dict[str, int],
             outputs: Sequence[np.ndarray], asked: Collection[str] = ()) -> list[Reading]:
    """Every computable reading of every catalogue entry whose question arises for this node, the kernel's
    reading of each entry first (entries no input value raises, such as validity questions, only when in
    ``asked``)."""
    node = _node(domain, op, version, inputs, attrs, outputs)
    found: list[Reading] = []
    for amb, fn in COMPUTED.items():
        if amb in _ON_REQUEST and amb not in asked:
            continue
        computed = fn(node)
        if computed is None:
            continue
        entry = _catalogue()[amb]
        order = [entry.kernel_reading] + [r for r in entry.readings if r != entry.kernel_reading]
        # (with another entry's reading: "a+entry:b")
        order += [name for name in computed if name not in order]
        free = _nan_free(node, amb)
        for name in order:
            if name not in computed:
                continue
            out = computed[name]
            judged = None
            if name == "any" and free is not None and out is not None:
                judged = (~free,) + (None,) * (len(out) - 1)
            elif op == "DynamicQuantizeLinear" and out is not None:
                judged = dql_judged(node.x, out[1])
            found.append(Reading(amb, name, None if out is None else tuple(out), judged))
    found += [r for r in _combinations(node) if not any(
        o.outputs is not None and o.judged is None and r.judged is None
        and len(o.outputs) == len(r.outputs or ())
        and all(compare(a, b) is None for a, b in zip(o.outputs, r.outputs or (), strict=True))
        for o in found)]
    return found


def kernel_reading(op: str, x: np.ndarray, outputs: Sequence[np.ndarray], ambiguity: str) -> Reading:
    """The kernel's own reading of ``ambiguity``, standing alone: the kernel's ``outputs`` for a node ``x``
    where the entry's question does not arise."""
    judged = dql_judged(x, outputs[1]) if op == "DynamicQuantizeLinear" else None
    return Reading(ambiguity, _catalogue()[ambiguity].kernel_reading, tuple(outputs), judged)

