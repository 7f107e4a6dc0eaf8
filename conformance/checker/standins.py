"""Stand-ins for what a model does not say about a node's inputs, so that the rest of the node is still
checked: arrays of a type and shape (zero-strided: no memory is taken whatever the shape), and an x shape made
up from the scale's where x's dimensions or rank are unknown.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..types import ElementType

Shape = tuple[int, ...]


def stand_in(t: ElementType, shape: Shape) -> np.ndarray:
    return zeros(t.dtype, shape)


@lru_cache(maxsize=1024)
def zeros(dtype: np.dtype, shape: Shape) -> np.ndarray:
    """A read-only zero-strided array (shared: a node is planned several times, most nodes alike)."""
    return np.broadcast_to(np.zeros((), dtype=dtype), shape)


def known(shape: tuple[int | None, ...] | None) -> Shape | None:
    return None if shape is None or None in shape else tuple(int(d) for d in shape if d is not None)


#: The highest rank made up for an x of unknown rank (an axis beyond it is not judged).
MAX_MADE_UP_RANK = 64


def fill(x: tuple[int | None, ...] | None, scale: Shape, attrs: dict[str, int]) -> tuple[Shape, str] | None:
    """x's shape with unknown dimensions (or an unknown rank: the smallest the scale and axis fit) replaced by
    what the scale's shape implies, so that the scale fits there; a note when the block_size range then cannot
    be checked. None when x's rank is unknown and the axis asks for an absurd one."""
    block = attrs.get("block_size", 0)
    given = attrs.get("axis", 1)
    if x is None:
        rank = len(scale) if block > 0 or len(scale) != 1 else max(given + 1, -given, 1)
        if rank > MAX_MADE_UP_RANK:
            return None
        x = (None,) * max(rank, 1)
    rank = len(x)
    axis = given % rank if rank and -rank <= given < rank else None
    out: list[int] = []
    note = ""
    for d, v in enumerate(x):
        if v is not None:
            out.append(v)
        elif len(scale) == rank and rank > 1 and block > 0:
            if d == axis:
                out.append(block * scale[d])
                note = (f"x's dimension {d} is unknown, so block_size {block} was not checked against its "
                        "range")
            else:
                out.append(scale[d])
        elif len(scale) == 1 and (d == axis or rank == 1):
            out.append(scale[0])
        else:
            out.append(1)
    return tuple(out), note
