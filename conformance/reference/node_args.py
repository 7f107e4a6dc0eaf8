"""A graph node's inputs and attributes as the graph ops of the oracle read them (``graph_oracle.py``, the
exact ops, the compute ops): required inputs, and attributes of the types ONNX gives them (INT, INTS, FLOAT,
STRING)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: a node's attributes: INT, INTS, FLOAT, FLOATS and STRING values
Attrs = dict[str, int | float | str | list[int] | list[float]]
Inputs = list[np.ndarray | None]
#: an op of the graph registry on exact inputs: its outputs
Kernel = Callable[[Inputs, Attrs], list[np.ndarray]]


def need(inputs: Inputs, k: int) -> np.ndarray:
    """Input ``k`` (ValueError when it is missing)."""
    v = inputs[k] if k < len(inputs) else None
    if v is None:
        raise ValueError(f"input {k} is required")
    return v


def optional(inputs: Inputs, k: int) -> np.ndarray | None:
    return inputs[k] if k < len(inputs) else None


def ints(attrs: Attrs, key: str, default: list[int] | None = None) -> list[int]:
    """An INTS attribute (an INT is read as a list of one)."""
    v = attrs.get(key, default)
    if v is None:
        raise ValueError(f"attribute {key} is required")
    if isinstance(v, str) or (isinstance(v, list) and not all(isinstance(i, int) for i in v)) or \
            isinstance(v, float):
        raise ValueError(f"attribute {key} must be integers, got {v!r}")
    return [int(i) for i in v] if isinstance(v, list) else [int(v)]


def integer(attrs: Attrs, key: str, default: int) -> int:
    """An INT attribute."""
    v = attrs.get(key, default)
    if not isinstance(v, int):
        raise ValueError(f"attribute {key} must be one integer, got {v!r}")
    return int(v)


def real(attrs: Attrs, key: str, default: float) -> np.float32:
    """A FLOAT attribute, as the float32 ONNX stores (an integer written in a case file is its float)."""
    v = attrs.get(key, default)
    if isinstance(v, (str, list)):
        raise ValueError(f"attribute {key} must be a number, got {v!r}")
    out: np.float32 = np.float32(float(v))
    return out


def text(attrs: Attrs, key: str, default: str, allowed: tuple[str, ...]) -> str:
    """A STRING attribute, one of ``allowed`` (what the oracle computes: ValueError names the rest)."""
    v = attrs.get(key, default)
    if not isinstance(v, str):
        raise ValueError(f"attribute {key} must be text, got {v!r}")
    if v not in allowed:
        raise ValueError(f"attribute {key}={v!r}: the oracle computes {', '.join(allowed)}")
    return v


def float32(x: np.ndarray, what: str) -> np.ndarray:
    """``x`` when it is float32 (a compute op of a graph case takes DequantizeLinear's float32 outputs);
    ValueError otherwise."""
    if x.dtype != np.float32:
        raise ValueError(f"{what} must be float32 (a DequantizeLinear output), got {x.dtype}")
    if not np.isfinite(x).all():
        raise ArithmeticError(f"{what} holds a NaN or an infinity (no interval bounds a compute op on it)")
    return x


def axis_of(axis: int, rank: int) -> int:
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        raise ValueError(f"axis {axis} outside [-{rank}, {rank - 1}]")
    return a
