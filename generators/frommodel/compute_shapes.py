"""How small the graph case of a compute node can be while keeping its meaning, and which of the model's
weights it keeps.

Each rule takes the node's inputs as :class:`Operand` (a quantized activation, a DequantizeLinear of a
constant weight, a float activation, a small constant, an omitted input) with the model's shapes, and the
node's attributes; it gives a :class:`Shrunk`: each runtime input's shape, the indices kept of each weight
along each of its dimensions, the constants and attributes as the case holds them, and notes saying what
changed.

- Conv: up to :data:`OUT_CHANNELS` output channels (evenly spaced, with the smallest and largest |scale| and
  zero point of per-channel weights) and the first :data:`IN_CHANNELS` input channels; a grouped or depthwise
  Conv keeps up to :data:`GROUPS` of its groups (``group`` becomes their number), each with two of its output
  channels and its first input channels; the whole kernel, strides, pads and dilations; each spatial size a
  few windows long (at most the model's).
- MatMul / Gemm with constant weights: up to :data:`OUT_CHANNELS` output columns (as Conv's channels), K cut
  to :data:`K_CAP`, or for weights blocked along K the first two and last two blocks (a partial last block
  stays partial); up to :data:`ROWS` rows of A; transA / transB, alpha and beta kept. Two activations: small
  M, K, N.
- elementwise (Add, Mul, LeakyRelu, Sigmoid, Softmax): the broadcast output capped at
  :data:`~.shapes.PER_TENSOR_BUDGET` elements, every input cut alike (a dimension of 1 stays 1).
- AveragePool (and MaxPool): N 1, up to 3 channels, each spatial size a few windows; GlobalAveragePool: up
  to 3 channels and :data:`~.shapes.ROW_BUDGET` elements per channel.
- Resize: N 1, up to 2 channels, spatial sizes up to 4; scales kept; sizes scaled with the input where the
  model's ratio is a whole number; an empty roi written as an omitted input.
A node whose meaning these rules cannot keep raises :class:`Refused` with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .modelgraph import Attrs, int_list
from .node_configs import NodeConfig
from .shapes import PER_TENSOR_BUDGET, ROW_BUDGET, SYMBOLIC, capped, extremes, listed, shape_text, spread

OUT_CHANNELS = 8
IN_CHANNELS = 4
GROUPS = 4
K_CAP = 32
ROWS = 4
#: elements along K that blocked weights keep (four blocks when they fit, else the first and the last)
BLOCKED_K = 256


class Refused(Exception):
    """The node's case cannot keep its meaning at a small size, or the oracle does not compute it (why)."""


@dataclass
class Operand:
    """One input of the compute node: ``act`` (a per-tensor DequantizeLinear of a runtime tensor), ``weight``
    (a DequantizeLinear of a constant), ``float`` (a float runtime tensor), ``const`` (a small constant) or
    ``absent``."""

    kind: str
    dims: tuple[int | None, ...] | None = None
    cfg: NodeConfig | None = None
    value: np.ndarray | None = None


@dataclass
class Shrunk:
    shapes: dict[int, tuple[int, ...]] = field(default_factory=dict)  # runtime inputs
    picks: dict[int, list[list[int]]] = field(default_factory=dict)  # weights: indices kept per dimension
    consts: dict[int, np.ndarray] = field(default_factory=dict)
    dropped: set[int] = field(default_factory=set)  # constants written as omitted inputs
    attrs: Attrs = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def said(self, i: int, op: Operand, what: str = "x") -> None:
        new = self.shapes.get(i) or tuple(len(p) for p in self.picks.get(i, []))
        if op.dims is None or tuple(op.dims) != new:
            self.notes.append(f"{what} {shape_text(op.dims)} tested as {list(new)}")


def _weight_dims(op: Operand, what: str) -> tuple[int, ...]:
    if op.kind != "weight":
        raise Refused(f"{what} is not a DequantizeLinear of a constant")
    if op.dims is None or any(d is None for d in op.dims):
        raise Refused(f"{what}' shape is not known")
    return tuple(int(d) for d in op.dims if d is not None)


def blocks(n: int, block_size: int) -> list[int]:
    """Indices of whole blocks along ``n``: the first two and the last two (a partial last block stays
    partial), or the first and the last where four blocks would be longer than :data:`BLOCKED_K`."""
    count = -(-n // block_size)
    keep = (list(range(count)) if count <= 2 else [0, count - 1] if 4 * block_size > BLOCKED_K
            else list(range(count)) if count <= 4 else [0, 1, count - 2, count - 1])
    return [i for b in keep for i in range(b * block_size, min(n, (b + 1) * block_size))]


def along(op: Operand, axis: int, n: int, cap: int, prefix: bool) -> list[int]:
    """The indices a weight keeps along ``axis`` (``n`` long): whole blocks where its DequantizeLinear is
    blocked along it, evenly spaced with the extremes of per-axis parameters along it, else the first ``cap``
    (``prefix``) or ``cap`` evenly spaced."""
    cfg = op.cfg
    if cfg is not None and cfg.axis_norm() == axis and cfg.granularity == "blocked":
        assert cfg.block_size is not None
        return blocks(n, cfg.block_size)
    if cfg is not None and cfg.axis_norm() == axis and cfg.granularity == "per-axis":
        return spread(n, cap, extremes(cfg.scale_values, cfg.zero_point_values))
    return list(range(min(n, cap))) if prefix else spread(n, cap, [])


def _explicit_pads(attrs: Attrs, op: str) -> None:
    pad = attrs.get("auto_pad", "NOTSET")
    if pad not in ("NOTSET", "VALID"):
        raise Refused(f"{op} auto_pad {pad}: the oracle computes explicit pads only")


def _spatial(dims: tuple[int | None, ...] | None, kernel: list[int], attrs: Attrs) -> list[int]:
    """Each spatial size a few windows long: the window's span plus two strides (at most the model's)."""
    n = len(kernel)
    strides = int_list(attrs, "strides", [1] * n)
    dil = int_list(attrs, "dilations", [1] * n)
    model = list(dims[2:]) if dims is not None and len(dims) == 2 + n else [None] * n
    out = []
    for k, s, d, m in zip(kernel, strides, dil, model, strict=True):
        want = (k - 1) * d + 1 + 2 * s
        out.append(want if m is None else min(m, want))
    return out


def conv(ops: list[Operand], attrs: Attrs) -> Shrunk:
    x, w = ops[0], ops[1]
    wd = _weight_dims(w, "Conv's weights")
    _explicit_pads(attrs, "Conv")
    assert w.cfg is not None
    if w.cfg.granularity == "blocked":
        raise Refused("Conv weights quantized in blocks")
    m_all, cg, *kernel = wd
    g = int_list(attrs, "group", [1])[0]
    mg = m_all // g
    out = Shrunk(attrs=dict(attrs))
    if g == 1:
        outs, groups, per = along(w, 0, m_all, OUT_CHANNELS, prefix=False), [0], m_all
    else:
        scale = w.cfg.scale_values if w.cfg.granularity == "per-axis" else None
        groups = spread(g, GROUPS, [c // mg for c in extremes(scale)])
        per = min(mg, 2)
        outs = [gi * mg + j for gi in groups for j in range(per)]
        out.attrs["group"] = len(groups)
        out.notes.append(f"group {g} as {len(groups)} (groups {listed(groups)}, each with "
                         f"{min(cg, IN_CHANNELS)} of its {cg} input and {per} of its {mg} output channels)")
    ins = list(range(min(cg, IN_CHANNELS)))
    out.shapes[0] = (1, len(groups) * len(ins), *_spatial(x.dims, kernel, attrs))
    out.picks[1] = [outs, ins, *[list(range(k)) for k in kernel]]
    out.said(0, x)
    out.notes.append(f"weights {list(wd)} as {[len(outs), len(ins), *kernel]} (output channels "
                     f"{listed(outs)}; input channels {listed(ins)})")
    if len(ops) > 2 and ops[2].kind != "absent":
        out.picks[2] = _vector(ops[2], outs, m_all, "Conv's bias")
    return out


def _vector(op: Operand, kept: list[int], n: int, what: str) -> list[list[int]]:
    """A bias's picks: the kept channels of an [n] bias, all of a one-element one."""
    dims = _weight_dims(op, what)
    if dims == (n,) and n > 1:
        return [kept]
    if math.prod(dims) == 1:
        return [list(range(d)) for d in dims]
    raise Refused(f"{what} of shape {list(dims)}")


def _rows(d: int | None) -> int:
    return ROWS if d is None else min(d, ROWS)


def _lead(dims: tuple[int | None, ...]) -> list[int]:
    """Batch dimensions cut to 2 (a dimension of 1 stays 1)."""
    return [1 if d == 1 else 2 if d is None else min(d, 2) for d in dims]


def matmul(ops: list[Operand], attrs: Attrs) -> Shrunk:
    a, b = ops
    if a.dims is None or b.dims is None or len(a.dims) < 1 or len(b.dims) < 2:
        raise Refused("MatMul of an unknown or one-dimensional shape")
    out = Shrunk(attrs=dict(attrs))
    if b.kind == "weight" and a.kind in ("act", "float"):
        bd = _weight_dims(b, "MatMul's B")
        r = len(bd)
        cols = along(b, r - 1, bd[-1], OUT_CHANNELS, prefix=False)
        ks = along(b, r - 2, bd[-2], K_CAP, prefix=True)
        out.picks[1] = [list(range(min(d, 2))) for d in bd[:-2]] + [ks, cols]
        rows = [] if len(a.dims) == 1 else [*_lead(a.dims[:-2]), _rows(a.dims[-2])]
        out.shapes[0] = (*rows, len(ks))
        out.notes.append(f"B {list(bd)} as {[len(p) for p in out.picks[1]]} (columns {listed(cols)}; K "
                         f"{listed(ks)})")
    elif a.kind in ("act", "float") and b.kind in ("act", "float"):
        k = a.dims[-1] if a.dims[-1] is not None else b.dims[-2]
        kk = 8 if k is None else min(k, 16)
        out.shapes[0] = (*_lead(a.dims[:-2]), *([_rows(a.dims[-2])] if len(a.dims) > 1 else []), kk)
        out.shapes[1] = (*_lead(b.dims[:-2]), kk, _rows(b.dims[-1]))
        out.said(1, b, "B")
    else:
        raise Refused("MatMul whose A is a constant")
    out.said(0, a, "A")
    return out


def gemm(ops: list[Operand], attrs: Attrs) -> Shrunk:
    a, b = ops[0], ops[1]
    bd = _weight_dims(b, "Gemm's B")
    if len(bd) != 2 or a.kind not in ("act", "float"):
        raise Refused("Gemm whose B is not a 2-D constant or whose A is not an activation")
    ta, tb = int_list(attrs, "transA", [0])[0], int_list(attrs, "transB", [0])[0]
    n_axis = 0 if tb else 1
    cols = along(b, n_axis, bd[n_axis], OUT_CHANNELS, prefix=False)
    ks = along(b, 1 - n_axis, bd[1 - n_axis], K_CAP, prefix=True)
    out = Shrunk(attrs=dict(attrs))
    out.picks[1] = [cols, ks] if tb else [ks, cols]
    m_model = a.dims[1 if ta else 0] if a.dims is not None and len(a.dims) == 2 else None
    m = _rows(m_model)
    out.shapes[0] = (len(ks), m) if ta else (m, len(ks))
    out.said(0, a, "A")
    out.notes.append(f"B {list(bd)} as {[len(p) for p in out.picks[1]]} (columns {listed(cols)}; K "
                     f"{listed(ks)})")
    if len(ops) > 2 and ops[2].kind != "absent":
        c = ops[2]
        cd = _weight_dims(c, "Gemm's C")
        if len(cd) == 2:
            out.picks[2] = [list(range(1 if cd[0] == 1 else m)), [0] if cd[1] == 1 else cols]
        else:
            out.picks[2] = _vector(c, cols, bd[n_axis], "Gemm's C")
    return out


def _broadcast(ops: list[Operand]) -> list[int]:
    """The broadcast output shape of the present inputs (an unknown dimension as SYMBOLIC)."""
    rank = max(len(o.dims or ()) for o in ops)
    out = []
    for j in range(rank):
        ds = [o.dims[len(o.dims) - rank + j] for o in ops
              if o.dims is not None and len(o.dims) - rank + j >= 0]
        known = [d for d in ds if d is not None and d != 1]
        out.append(max(known) if known else SYMBOLIC if None in ds else 1)
    return out


def elementwise(ops: list[Operand], attrs: Attrs) -> Shrunk:
    present = [(i, o) for i, o in enumerate(ops) if o.kind != "absent"]
    if any(o.dims is None for _, o in present):
        raise Refused("an input of unknown rank")
    cap = capped(_broadcast([o for _, o in present]), PER_TENSOR_BUDGET)
    out = Shrunk(attrs=dict(attrs))
    for i, o in present:
        assert o.dims is not None
        new = [1 if d == 1 else cap[len(cap) - len(o.dims) + j] for j, d in enumerate(o.dims)]
        if o.kind == "weight":
            out.picks[i] = [list(range(n)) for n in new]
        elif o.kind == "const":
            assert o.value is not None
            out.consts[i] = o.value[tuple(slice(0, n) for n in new)]
            continue
        else:
            out.shapes[i] = tuple(new)
        out.said(i, o, "x" if len(present) == 1 else f"input {i}")
    return out


def pooled(dims: tuple[int | None, ...] | None, attrs: Attrs) -> tuple[int, ...]:
    """A pooling input: N 1, up to 3 channels, each spatial size a few windows long (at most the model's)."""
    kernel = int_list(attrs, "kernel_shape", [])
    channels = 3 if dims is None or len(dims) < 2 or dims[1] is None else min(dims[1], 3)
    return (1, channels, *_spatial(dims, kernel, attrs))


def average_pool(ops: list[Operand], attrs: Attrs) -> Shrunk:
    _explicit_pads(attrs, "AveragePool")
    if int_list(attrs, "ceil_mode", [0])[0]:
        raise Refused("AveragePool ceil_mode 1: the oracle computes floor mode only")
    out = Shrunk(shapes={0: pooled(ops[0].dims, attrs)}, attrs=dict(attrs))
    out.said(0, ops[0])
    return out


def global_average_pool(ops: list[Operand], attrs: Attrs) -> Shrunk:
    dims = ops[0].dims
    if dims is None or len(dims) < 3:
        raise Refused("GlobalAveragePool of unknown rank")
    spatial = capped([SYMBOLIC if d is None else d for d in dims[2:]], ROW_BUDGET)
    out = Shrunk(shapes={0: (1, 3 if dims[1] is None else min(dims[1], 3), *spatial)}, attrs=dict(attrs))
    out.said(0, ops[0])
    return out


def resize(ops: list[Operand], attrs: Attrs) -> Shrunk:
    x = ops[0]
    if x.dims is None or len(x.dims) < 3:
        raise Refused("Resize of an input of unknown rank")
    new = (1, 2 if x.dims[1] is None else min(x.dims[1], 2),
           *[4 if d is None else min(d, 4) for d in x.dims[2:]])
    out = Shrunk(attrs=dict(attrs))
    for i, o in enumerate(ops[1:], 1):
        if o.kind == "const" and o.value is not None and o.value.size == 0:
            out.dropped.add(i)  # (an empty roi or scales: the same as an omitted input)
        elif o.kind == "const" and i == 3:
            new = _sizes(x.dims, new, o.value, out)
        elif o.kind == "const":
            assert o.value is not None
            out.consts[i] = o.value
        elif o.kind != "absent":
            raise Refused(f"Resize input {i} is not a constant")
    out.shapes[0] = new
    out.said(0, x)
    return out


def _sizes(dims: tuple[int | None, ...], new: tuple[int, ...], sizes: np.ndarray | None,
           out: Shrunk) -> tuple[int, ...]:
    """Resize's sizes for the smaller input, where the model's ratio is a whole number (or the model's own
    sizes where its input is small)."""
    assert sizes is not None
    want = [int(v) for v in sizes.reshape(-1)]
    if None not in dims and len(want) == len(dims):
        model = [int(d) for d in dims if d is not None]
        if all(w % d == 0 for w, d in zip(want, model, strict=True)):
            out.consts[3] = np.array([n * w // d for n, w, d in zip(new, want, model, strict=True)], np.int64)
            return new
        if math.prod(model) <= PER_TENSOR_BUDGET:
            out.consts[3] = sizes
            return tuple(model)
    raise Refused(f"Resize to sizes {want} of an input {shape_text(dims)}: no smaller input keeps the ratio")


#: a compute op's rule (the ops a graph case may hold and :mod:`.compute` makes patterns of)
RULES: dict[str, Callable[[list[Operand], Attrs], Shrunk]] = {
    "Conv": conv, "MatMul": matmul, "Gemm": gemm, "Add": elementwise, "Mul": elementwise,
    "LeakyRelu": elementwise, "Sigmoid": elementwise, "Softmax": elementwise, "AveragePool": average_pool,
    "GlobalAveragePool": global_average_pool, "Resize": resize,
}


def parameters(cfg: NodeConfig, picks: list[list[int]]) -> tuple[np.ndarray, np.ndarray | None, str | None]:
    """A weight's scale and zero point for the indices it keeps: the same per tensor, the kept channels per
    axis, the kept blocks (and the kept indices along the other dimensions) when blocked; and a note when they
    are written otherwise than the model writes them (a one-element [1] scale with a scalar zero point, whose
    reading the ambiguity catalogue holds, is written as a scalar)."""
    s, z = cfg.scale_values, cfg.zero_point_values
    assert s is not None
    axis = cfg.axis_norm()
    if cfg.granularity == "per-axis" and axis is not None:
        return s[picks[axis]], None if z is None else z[picks[axis]], None
    if cfg.granularity == "blocked" and axis is not None and cfg.block_size:
        bs = cfg.block_size
        kept = sorted({i // bs for i in picks[axis]})
        d = int(s.shape[axis]) * bs if cfg.x_shape is None else cfg.x_shape[axis] or int(s.shape[axis]) * bs
        if picks[axis] != [i for b in kept for i in range(b * bs, min(d, (b + 1) * bs))]:
            raise Refused("a slice that cuts a block")
        grid = np.ix_(*[kept if k == axis else p for k, p in enumerate(picks)])
        return s[grid], None if z is None else z[grid], None
    if s.shape == (1,) and z is not None and z.shape == ():
        return s.reshape(()), z, ("the scale [1] written as a scalar, as its scalar zero point (a "
                                  "one-element scale with a scalar zero point is catalogued: "
                                  "scalar-one-element-shapes)")
    return s, z, None
