"""Granularity and shape variants of a template: x shape, scale shape, axis / block_size attributes, label."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import cast

from qdq_conformance import opspecs
from qdq_conformance.domain import PER_TENSOR_1D

from .template import Template

#: x dimensions by position, for per-axis and blocked shapes (distinct, so a wrong axis shows as a refused
#: scale shape).
DIMS = (2, 3, 4, 5, 6)
#: the length of every dimension with ``dims: equal``: a wrong axis is as long as the right one, so an
#: implementation that reads it computes wrong values instead of refusing the scale's shape
EQUAL = 3

#: Blocked variants: (Di, Si, block_size). Valid range is [ceil(Di/Si), ceil(Di/(Si-1)) - 1].
BLOCKS = {
    "low": (9, 2, 5),      # range [5, 8], lowest, partial last block (5 + 4)
    "high": (9, 2, 8),     # range [5, 8], highest, partial last block (8 + 1)
    "exact": (8, 2, 4),    # range [4, 7], no partial block
    "partial": (7, 3, 3),  # range [3, 3], blocks 3 + 3 + 1
    "single": (5, 1, 5),   # one block along the axis (Si = 1)
    # Toolchains' weight blocks (ORT's MatMul 4-bit quantizer, NNCF, Quark): two whole blocks of 32, 64, 128.
    "b32": (64, 2, 32),
    "b64": (128, 2, 64),
    "b128": (256, 2, 128),
}


@dataclass(frozen=True)
class GVar:
    kind: str  # per-tensor | per-axis | blocked
    x_shape: tuple[int, ...] | None  # None: the length of the values, 1-D
    scale_shape: tuple[int, ...]
    attrs: dict[str, int] = field(default_factory=dict)
    labels: tuple[str, ...] = ()
    detail: tuple[tuple[str, object], ...] = ()


def _supports(spec: opspecs.OpSpec, kind: str) -> bool:
    """Whether the version allows the template's granularity (``per-tensor-1d``: a one-element 1-D scale,
    which every version takes as per-tensor)."""
    return kind == PER_TENSOR_1D or kind in spec.granularities


def _axes(sel: object, rank: int, sign: str) -> list[int]:
    if sel in (None, "all"):
        axes = list(range(rank))
    elif sel == "last":
        axes = [rank - 1]
    elif sel == "first":
        axes = [0]
    else:
        axes = [a % rank for a in cast("list[int]", sel) if -rank <= a < rank]  # a list of axes
    if sign == "negative":
        return [a - rank for a in axes]
    if sign == "both":
        return [v for a in axes for v in (a, a - rank)]
    return axes


def variants(tpl: Template, spec: opspecs.OpSpec, kind: str) -> Iterator[GVar]:
    g = tpl.data.get("granularity", {"kind": opspecs.PER_TENSOR})
    gk = g["kind"]
    if kind == "DQL" and gk != opspecs.PER_TENSOR:
        raise tpl.error("granularity", "DynamicQuantizeLinear is per-tensor only")
    if not _supports(spec, gk):
        return
    shape = tpl.data.get("shape")
    if gk in (opspecs.PER_TENSOR, PER_TENSOR_1D):
        scale_shape = () if gk == opspecs.PER_TENSOR else (1,)
        label = "" if gk == opspecs.PER_TENSOR else "scale1d"
        if isinstance(shape, dict):
            for n in shape["sizes"]:
                yield GVar(opspecs.PER_TENSOR, (n,), scale_shape, {}, (label, f"n{n}"),
                           (("scale_rank", len(scale_shape)),))
        else:
            x_shape = tuple(shape) if shape is not None else None
            shape_label = "x" + "x".join(map(str, x_shape)) if x_shape is not None else ""
            yield GVar(opspecs.PER_TENSOR, x_shape, scale_shape, {}, (label, shape_label),
                       (("scale_rank", len(scale_shape)),))
        return
    sign = g.get("axis_attribute", "positive")
    if isinstance(shape, list):  # an explicit x shape (a model's node, made concrete): the axes on it
        yield from _explicit(tpl, gk, g, tuple(shape), sign)
        return
    ranks = g.get("ranks", [2])
    equal = g.get("dims") == "equal"
    for rank in ranks:
        if sign == "omitted":  # no axis attribute: the default axis, 1
            axes: list[int | None] = [None] if rank >= 2 else []
        elif sign == "all":  # written positive, written negative, and left out
            axes = [*_axes(g.get("axes"), rank, "both"), *([None] if rank >= 2 else [])]
        else:
            axes = list(_axes(g.get("axes"), rank, sign))
        for axis in axes:
            yield from _layout(gk, rank, axis, equal, g.get("blocks", ["low", "high"]))


def _explicit(tpl: Template, gk: str, g: dict[str, object], dims: tuple[int, ...],
              sign: str) -> Iterator[GVar]:
    """Per-axis and blocked variants on the template's own x ``shape`` (``granularity.axes`` on it, or no axis
    attribute: the default axis 1), blocks of ``granularity.block_size``: the node configuration of a model
    (``qdq-conformance cases --from-model``), with its own dimensions."""
    rank = len(dims)
    if "ranks" in g:
        raise tpl.error("granularity.ranks", "ranks and an explicit shape exclude each other (the shape's "
                        "length is the rank)")
    block = g.get("block_size")
    if gk == opspecs.BLOCKED and not isinstance(block, int):
        raise tpl.error("granularity", "a blocked granularity on an explicit shape needs block_size")
    if gk == opspecs.PER_AXIS and block is not None:
        raise tpl.error("granularity.block_size", "block_size is for a blocked granularity")
    omitted = sign == "omitted"
    axes = [1] if omitted else _axes(g.get("axes"), rank, sign) if rank else []
    if not axes or (omitted and rank < 2):
        raise tpl.error("granularity", f"no axis of the shape {list(dims)} fits the granularity")
    shape_label = "x" + "x".join(map(str, dims))
    for axis in axes:
        a = axis % rank
        ax_label = "axisdefault" if omitted else f"axis{axis}" if axis >= 0 else f"axism{-axis}"
        attrs = {} if omitted else {"axis": axis}
        if gk == opspecs.PER_AXIS:
            yield GVar(opspecs.PER_AXIS, dims, (dims[a],), attrs, (f"{ax_label}-r{rank}", shape_label),
                       (("rank", rank), ("axis", axis if not omitted else 1)))
            continue
        assert isinstance(block, int)
        sshape = tuple(-(-d // block) if i == a else d for i, d in enumerate(dims))
        yield GVar(opspecs.BLOCKED, dims, sshape, {**attrs, "block_size": block},
                   (f"blocked-bs{block}-{ax_label}-r{rank}", shape_label),
                   (("rank", rank), ("axis", axis if not omitted else 1), ("block", f"bs{block}")))


def _layout(gk: str, rank: int, axis: int | None, equal: bool, blocks: list[str]) -> Iterator[GVar]:
    """The per-axis variant, or the blocked variants, of one rank and axis attribute (None: left out, the
    default axis 1); ``equal``: every dimension as long (:data:`EQUAL`, or the block variant's Di)."""
    a = 1 if axis is None else axis % rank
    attrs = {} if axis is None else {"axis": axis}
    ax_label = "axisdefault" if axis is None else f"axis{axis}" if axis >= 0 else f"axism{-axis}"
    eq_label, eq_detail = ("-eqdims", (("dims", "equal"),)) if equal else ("", ())
    if gk == opspecs.PER_AXIS:
        dims = (EQUAL,) * rank if equal else DIMS[:rank]
        yield GVar(opspecs.PER_AXIS, dims, (dims[a],), attrs, (f"{ax_label}-r{rank}{eq_label}",),
                   (("rank", rank), ("axis", 1 if axis is None else axis), *eq_detail))
        return
    for block in blocks:
        di, si, bs = BLOCKS[block]
        dims = (di,) * rank if equal else tuple(di if i == a else d for i, d in enumerate(DIMS[:rank]))
        sshape = tuple(si if i == a else d for i, d in enumerate(dims))
        yield GVar(opspecs.BLOCKED, dims, sshape, {**attrs, "block_size": bs},
                   (f"blocked-{block}-{ax_label}-r{rank}{eq_label}",),
                   (("rank", rank), ("axis", 1 if axis is None else axis), ("block", block), *eq_detail))
