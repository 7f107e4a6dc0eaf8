"""A node configuration's shapes made concrete and small, its scale and zero point sliced with their
structure.

- Unknown (symbolic) dimensions become :data:`SYMBOLIC`; the others are capped at one size for all, the
largest that keeps x within a budget (:data:`PER_TENSOR_BUDGET` elements per tensor; :data:`ROW_BUDGET` per
channel or block row), so a [1, 64, 56, 56] activation is tested as [1, 6, 6, 6]. A per-tensor x smaller than
  :data:`MIN_ELEMENTS` grows along its last dimension so that the boundary recipes' values fit.
- Per axis: up to :data:`CHANNELS` channels, evenly spaced, with the first, the last and those holding the
  smallest and largest scale and zero point; each channel keeps its own scale and zero point.
- Blocked: the first two and the last two blocks along the axis (the last one keeps its length, so a partial
  last block stays partial) and up to :data:`ROWS` indices along each other dimension; the block size is the
  model's.
- An invalid node keeps its shapes (they are what is wrong), made concrete only.
Every change is said in :attr:`Concrete.notes`, which the case's ``source.concrete`` quotes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .node_configs import NodeConfig

SYMBOLIC = 2
PER_TENSOR_BUDGET = 256
MIN_ELEMENTS = 64
ROW_BUDGET = 64
CHANNELS = 16
ROWS = 8
#: an invalid node's x may not be larger than this (its shapes cannot be cut)
INVALID_MAX = 1 << 20
INVALID_PARAMETERS = 1 << 14


class TooLarge(Exception):
    """The node's tensors cannot be cut without changing what the case is about."""


@dataclass
class Concrete:
    x_shape: tuple[int, ...]
    scale: np.ndarray | None
    zero_point: np.ndarray | None
    notes: list[str] = field(default_factory=list)


def shape_text(dims: tuple[int | None, ...] | None) -> str:
    if dims is None:
        return "unknown rank"
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def capped(dims: list[int], budget: int) -> list[int]:
    """Every dimension capped at the largest common size whose product stays within ``budget``."""
    if math.prod(dims) <= budget:
        return dims
    lo, hi = 1, max(dims)  # (the product grows with the cap: the largest cap within the budget, or 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if math.prod(min(d, mid) for d in dims) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return [min(d, lo) for d in dims]


def _known(dims: tuple[int | None, ...], notes: list[str]) -> list[int]:
    if any(d is None for d in dims):
        notes.append(f"unknown dimensions of x {shape_text(dims)} as {SYMBOLIC}")
    return [SYMBOLIC if d is None else d for d in dims]


def _said(before: tuple[int | None, ...] | None, after: tuple[int, ...], notes: list[str]) -> None:
    if before is None or tuple(before) != after:
        notes.append(f"x {shape_text(before)} tested as {list(after)}")


def spread(n: int, cap: int, must: list[int]) -> list[int]:
    """Up to ``cap`` indices of ``range(n)``, evenly spaced, the first, the last and ``must`` among them."""
    if n <= cap:
        return list(range(n))
    spaced = {int(round(v)) for v in np.linspace(0, n - 1, cap)}
    return sorted(spaced | set(must))


def extremes(*arrays: np.ndarray | None) -> list[int]:
    out: list[int] = []
    for a in arrays:
        if a is not None and a.size:
            flat = np.abs(a.reshape(-1))
            out += [int(np.argmin(flat)), int(np.argmax(flat))]
    return out


def concrete(cfg: NodeConfig) -> Concrete:
    """The case's x shape, scale and zero point for ``cfg`` (raises TooLarge for an invalid node too large to
    hold as it is)."""
    notes: list[str] = []
    if cfg.rule is not None:
        return _invalid(cfg, notes)
    if cfg.granularity == "per-axis":
        return _per_axis(cfg, notes)
    if cfg.granularity == "blocked":
        return _blocked(cfg, notes)
    if cfg.x_shape is None:
        notes.append("x's rank is unknown: a rank-1 x")
        dims = [MIN_ELEMENTS]
    else:
        dims = capped(_known(cfg.x_shape, notes), PER_TENSOR_BUDGET)
    if dims and 0 < math.prod(dims) < MIN_ELEMENTS:
        dims[-1] = -(-MIN_ELEMENTS * dims[-1] // math.prod(dims))
    _said(cfg.x_shape, tuple(dims), notes)
    return Concrete(tuple(dims), cfg.scale_values, cfg.zero_point_values, notes)


def _invalid(cfg: NodeConfig, notes: list[str]) -> Concrete:
    dims = tuple(_known(cfg.x_shape, notes)) if cfg.x_shape is not None else None
    if dims is None:
        scale_shape = () if cfg.scale_values is None else cfg.scale_values.shape
        dims = scale_shape if len(scale_shape) > 1 else (MIN_ELEMENTS,)
        notes.append(f"x's rank is unknown: x {list(dims)}")
    if math.prod(dims) > INVALID_MAX:
        raise TooLarge(f"x {list(dims)} is too large for an invalid case, which keeps its shapes")
    for what, a in (("scale", cfg.scale_values), ("zero point", cfg.zero_point_values)):
        if a is not None and a.size > INVALID_PARAMETERS:
            raise TooLarge(f"the {what} ({a.size} values) is too large for an invalid case, which keeps its "
                           "shapes")
    return Concrete(dims, cfg.scale_values, cfg.zero_point_values, notes)


def _per_axis(cfg: NodeConfig, notes: list[str]) -> Concrete:
    assert cfg.scale_values is not None
    axis = cfg.axis_norm()
    c = int(cfg.scale_values.shape[0])
    model = cfg.x_shape if cfg.x_shape is not None else None
    if model is None or axis is None:
        model = (c,)
        axis = 0
        notes.append("x's rank is unknown: a rank-1 x along the scale")
    others = capped(_known(tuple(d for k, d in enumerate(model) if k != axis), notes), ROW_BUDGET)
    cap = min(64, max(CHANNELS, (4 * ROW_BUDGET) // max(1, math.prod(others))))
    idx = spread(c, cap, extremes(cfg.scale_values, cfg.zero_point_values))
    if len(idx) < c:
        notes.append(f"{len(idx)} of {c} channels (indices {listed(idx)}: evenly spaced, with the smallest "
                     "and largest |scale| and zero point)")
    dims = (*others[:axis], len(idx), *others[axis:])
    _said(cfg.x_shape, dims, notes)
    zp = cfg.zero_point_values[idx] if cfg.zero_point_values is not None else None
    return Concrete(dims, cfg.scale_values[idx], zp, notes)


def _blocked(cfg: NodeConfig, notes: list[str]) -> Concrete:
    assert cfg.scale_values is not None and cfg.block_size is not None
    scale = cfg.scale_values
    axis = cfg.axis_norm()
    assert axis is not None and cfg.x_shape is not None
    bs, si = cfg.block_size, int(scale.shape[axis])
    di = cfg.x_shape[axis]
    if di is None:
        di = si * bs
        notes.append(f"x's unknown dimension {axis} as {si} whole blocks of {bs}")
    blocks = list(range(si)) if si <= 4 else [0, 1, si - 2, si - 1]
    last = di - (si - 1) * bs if blocks[-1] == si - 1 else bs
    sels: list[list[int]] = []
    dims: list[int] = []
    for k, n in enumerate(scale.shape):
        if k == axis:
            sels.append(blocks)
            dims.append((len(blocks) - 1) * bs + last)
            continue
        sel = spread(int(n), ROWS, [])
        sels.append(sel)
        dims.append(len(sel))
        if len(sel) < n:
            notes.append(f"{len(sel)} of {n} indices along axis {k} ({listed(sel)})")
    if len(blocks) < si:
        notes.append(f"{len(blocks)} of {si} blocks along axis {axis} (blocks {listed(blocks)}; the last "
                     f"{'keeps its partial length ' + str(last) if last != bs else 'is whole'})")
    _said(cfg.x_shape, tuple(dims), notes)
    grid = np.ix_(*sels)
    zp = cfg.zero_point_values[grid] if cfg.zero_point_values is not None else None
    return Concrete(tuple(dims), scale[grid], zp, notes)


def listed(idx: list[int], shown: int = 8) -> str:
    text = ", ".join(map(str, idx[:shown]))
    return text + (f", ... {idx[-1]}" if len(idx) > shown else "")
