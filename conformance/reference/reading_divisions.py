"""The division readings of the ambiguity catalogue, and the node every reading is computed on.

An entry about the division (division-precision, mixed-precision-operands, int32-precision,
int32-input-division, e8m0-precision) gives each of its other readings as a :data:`Division`: the precision
and how ``x / y_scale`` is carried out; the rest of the quantization is the kernel's
(:func:`.quantize.quantize` with that division), so a division reading also combines with the readings of what
follows it (:mod:`.readings`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import cast

import numpy as np

from ..ambiguities import catalogue
from ..opspecs import AI_ONNX, MS, OpSpec
from ..types import TYPES, ElementType, by_dtype
from . import arith
from . import granularity as gran
from .ops import SPEC, Plan
from .quantize import divide as kernel_divide
from .quantize import quantize

Outputs = tuple[np.ndarray, ...]
DivideFn = Callable[[np.ndarray, np.ndarray, ElementType], np.ndarray]
Division = tuple[ElementType, DivideFn]  # a reading of the division: its precision and how it divides

NARROW = ("float16", "bfloat16")
F32, INT32, U8 = TYPES["float"], TYPES["int32"], TYPES["uint8"]


@dataclass
class Node:
    """A node and what every reading needs of it: its inputs, the kernel's plan and outputs."""

    spec: OpSpec
    x: np.ndarray
    scale: np.ndarray | None
    zp: np.ndarray | None
    attrs: dict[str, int]
    plan: Plan | None
    outputs: Outputs

    @property
    def out(self) -> ElementType:
        assert self.plan is not None
        return self.plan.outputs[0]

    def broadcast(self) -> tuple[np.ndarray, np.ndarray | None]:
        """Scale and zero point shaped like x."""
        assert self.plan is not None and self.plan.granularity is not None and self.scale is not None
        g = self.plan.granularity
        s = np.broadcast_to(gran.broadcast(self.scale, self.x.shape, g), self.x.shape)
        z = (None if self.zp is None
             else np.broadcast_to(gran.broadcast(self.zp, self.x.shape, g), self.x.shape))
        return s, z

    def quantize(self, *, precision: ElementType | None = None, saturate: bool | None = None,
                 divide: Callable[[np.ndarray, np.ndarray, ElementType],
                                  np.ndarray] = kernel_divide) -> Outputs:
        """The kernel's quantization with one step replaced."""
        p = self.plan
        assert (p is not None and p.granularity is not None and p.precision is not None
                and self.scale is not None)
        return (quantize(self.x, self.scale, self.zp, out=p.outputs[0], granularity=p.granularity,
                         precision=precision or p.precision,
                         saturate=p.saturate if saturate is None else saturate,
                         steps=SPEC if divide is kernel_divide else replace(SPEC, divide=divide)),)

    def quotient(self, division: Division | None = None) -> np.ndarray:
        """``x / y_scale`` element by element (float64), as the kernel computes it or by ``division``."""
        s, _ = self.broadcast()
        assert self.plan is not None and self.plan.precision is not None
        p, divide = division or (self.plan.precision, kernel_divide)
        return arith.to_float64(np.asarray(divide(self.x, s, p)))


def q_int(n: Node) -> bool:
    return n.spec.name.endswith("QuantizeLinear") and "Dequantize" not in n.spec.name and n.out.is_integer


# --- divisions
# -----------------------------------------------------------------------------------------------

def _exact_quotient_rounded(x: np.ndarray, s: np.ndarray, p: ElementType) -> np.ndarray:
    """The exact quotient rounded once to ``p``. float64 division of the exact operands (at most 31
    significant bits each) is within 2**-53 relative of the quotient, while a quotient that is not a midpoint
    of ``p`` (at most 25 bits) is at least 2**-56 away from one relatively; so rounding the float64 quotient
    to ``p`` is the correct rounding of the exact quotient."""
    with np.errstate(all="ignore"):
        return arith.to_float64(arith.to_precision(arith.to_float64(x) / arith.to_float64(s), p))


def _exact(x: np.ndarray, s: np.ndarray, p: ElementType) -> np.ndarray:
    with np.errstate(all="ignore"):
        return cast(np.ndarray, arith.to_float64(x) / arith.to_float64(s))


def _float32_operands(x: np.ndarray, s: np.ndarray, p: ElementType) -> np.ndarray:
    with np.errstate(all="ignore"):
        return cast(np.ndarray, np.divide(arith.to_precision(x, F32), arith.to_precision(s, F32)))


def _truncation(x: np.ndarray, s: np.ndarray, p: ElementType) -> np.ndarray:
    with np.errstate(all="ignore"):
        # exact: |x|, |s| < 2**31
        return cast(np.ndarray, np.trunc(arith.to_float64(x) / arith.to_float64(s)))


def _division_precision(n: Node) -> dict[str, Division] | None:
    if n.spec.name != "QuantizeLinear" or n.scale is None:
        return None
    if not (n.spec.domain == MS or (n.spec.domain == AI_ONNX and n.spec.version in (19, 21))):
        return None
    if by_dtype(n.scale.dtype).name not in NARROW:
        return None
    return {"float32": (F32, kernel_divide)}


def _mixed_precision(n: Node) -> dict[str, Division] | None:
    if n.spec.domain != AI_ONNX or n.spec.name != "QuantizeLinear" or n.spec.version < 23 or n.scale is None:
        return None
    assert n.plan is not None and n.plan.precision is not None
    p = n.plan.precision
    if p is INT32 or (by_dtype(n.x.dtype) is p and by_dtype(n.scale.dtype) is p):
        return None
    return {"exact-quotient": (p, _exact_quotient_rounded)}


def _int32_precision(n: Node) -> dict[str, Division] | None:
    if n.spec.domain != AI_ONNX or n.spec.name != "QuantizeLinear" or n.spec.version < 19 or n.scale is None:
        return None
    assert n.plan is not None
    if n.plan.precision is not INT32:
        return None
    found: dict[str, Division] = {}
    if n.spec.version in (19, 21):
        # Only where the text names no precision: from version 23 "The type of `y_scale` determines the
        # precision of the division operation", int32 here, which a float32 division is not.
        found["float32"] = (F32, _float32_operands)
    # integer division needs integers
    if by_dtype(n.x.dtype).is_integer and by_dtype(n.scale.dtype).is_integer:
        found["truncation"] = (INT32, _truncation)
    return found


def _int32_input_division(n: Node) -> dict[str, Division] | None:
    if n.spec.domain != AI_ONNX or n.spec.name != "QuantizeLinear" or n.spec.version not in (10, 13):
        return None
    if by_dtype(n.x.dtype) is not INT32:
        return None
    return {"exact-quotient": (F32, _exact_quotient_rounded), "exact": (F32, _exact)}


def _e8m0_precision(n: Node) -> dict[str, Division] | None:
    if (n.spec.domain != AI_ONNX or n.spec.name != "QuantizeLinear" or n.scale is None
        or n.attrs.get("precision")):
        return None
    if by_dtype(n.scale.dtype).name != "float8e8m0":
        return None
    return {"x-type": (by_dtype(n.x.dtype), kernel_divide)}


#: Entries about the division: each gives its other readings as divisions (the kernel's reading is the
#: kernel's).
DIVISIONS: dict[str, Callable[[Node], dict[str, Division] | None]] = {
    "division-precision": _division_precision,
    "mixed-precision-operands": _mixed_precision,
    "int32-precision": _int32_precision,
    "int32-input-division": _int32_input_division,
    "e8m0-precision": _e8m0_precision,
}


def division_entry(amb: str) -> Callable[[Node], dict[str, Outputs | None] | None]:
    def compute(n: Node) -> dict[str, Outputs | None] | None:
        found = DIVISIONS[amb](n)
        if found is None:
            return None
        kernel = catalogue()[amb].kernel_reading
        return {kernel: n.outputs,
                **{name: n.quantize(precision=p, divide=d) for name, (p, d) in found.items()}}
    return compute
