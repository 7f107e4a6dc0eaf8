"""A model's quantization nodes as node configurations: what a case needs of each node, or why it cannot have
one.

The checker has walked the model (``check_model(..., keep_nodes=True)``: every quantization node, its scope of
what is known about each tensor, the operator version it resolved to, its findings). Here each node becomes a
:class:`NodeConfig`: operator version, element types, zero point (given, omitted, or left to
``output_dtype``), granularity (per tensor, a one-element ``[1]`` scale, per axis, blocked), the axis as
written, the block size, the other attributes as written, x's shape as the model declares it (unknown
dimensions None), and the node's own scale and zero-point values (read from the initializer or Constant,
external data included, in bounded reads). A node the spec refuses keeps its rule (the first error the kernel
raises on it too). A node that cannot become a case is a :class:`Skipped` with the reason: an operator the
checker does not know, a parameter computed at run time, a type no case can hold, a problem the kernel does
not see on a single node (a declared output type).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from onnx import AttributeProto

from qdq_conformance.checker import CheckedNode, NodeFinding
from qdq_conformance.checker.standins import fill, known, zeros
from qdq_conformance.checker.tensor_facts import Facts
from qdq_conformance.checker.tensors import Unreadable
from qdq_conformance.errors import SpecViolation
from qdq_conformance.opspecs import OpSpec, normalize_domain
from qdq_conformance.reference.ops import PLANS
from qdq_conformance.types import TYPES, ElementType, by_proto

#: the largest scale or zero point read (bytes): real ones are far smaller; a larger one is a reason
MAX_PARAMETER_BYTES = 64 << 20
#: the kernel's rules a single-node case can break (an invalid case names one)
KERNEL_RULES = frozenset(f"QDQ{k:03d}" for k in range(1, 14))


@dataclass(frozen=True)
class NodeRef:
    """One node of one model, as the accounting and a case's ``source`` name it."""

    model: str
    graph: str
    index: int
    name: str
    operator: str  # domain::op-version (version ? when unresolved)

    def text(self) -> str:
        where = "" if self.graph == "main" else f" in {self.graph}"
        return f"{self.model}: node {self.index} {self.name!r}{where}"


@dataclass
class NodeConfig:
    """What a case needs of one quantization node (see the module's docstring)."""

    ref: NodeRef
    spec: OpSpec
    kind: str  # Q, DQ or DQL
    x: str
    scale: str | None
    y: str
    zero_point: str  # given | omitted | output_dtype
    zero_point_type: str | None
    granularity: str  # per-tensor | per-tensor-1d | per-axis | blocked
    axis: int | None  # as written (None: no axis attribute)
    block_size: int | None
    attrs: dict[str, int]  # every int attribute as written
    x_shape: tuple[int | None, ...] | None  # as declared (None: unknown rank)
    scale_values: np.ndarray | None = None  # float64, the scale's shape
    zero_point_values: np.ndarray | None = None
    rule: str | None = None  # an invalid node: the rule the kernel names
    problem: str = ""  # ... and the checker's message
    notes: list[str] = field(default_factory=list)  # what was assumed

    @property
    def rank(self) -> int | None:
        return None if self.x_shape is None else len(self.x_shape)

    def axis_norm(self) -> int | None:
        """The axis the granularity runs along (the default 1 when not written), normalized."""
        if self.granularity not in ("per-axis", "blocked") or self.rank is None:
            return None
        a = 1 if self.axis is None else self.axis
        return a % self.rank if -self.rank <= a < self.rank else a

    def spelling(self) -> str:
        return "omitted" if self.axis is None else "negative" if self.axis < 0 else "positive"

    def key(self) -> tuple[object, ...]:
        """The configuration: nodes with the same key make the same cases (their values aside)."""
        s = self.spec
        shapes: tuple[object, ...] = ()
        if self.granularity in ("per-axis", "blocked"):
            shapes = (self.rank, self.axis_norm(), self.spelling(), self.block_size)
        elif self.axis is not None:
            shapes = ("axis written",)
        others = tuple(sorted((k, v) for k, v in self.attrs.items() if k not in ("axis", "block_size")))
        values = (bool(self.scale_values is not None and (self.scale_values < 0).any()),
                  bool(self.zero_point_values is not None and (self.zero_point_values == 0).all()))
        if self.rule is not None:
            return ("invalid", s.domain, s.name, s.version, self.rule, self.x, self.scale, self.y,
                    self.zero_point_type, self.granularity, self.rank, self.axis, self.block_size, others,
                    None if self.scale_values is None else self.scale_values.shape,
                    None if self.zero_point_values is None else self.zero_point_values.shape)
        return (s.domain, s.name, s.version, self.x, self.scale, self.y, self.zero_point,
                self.zero_point_type, self.granularity, *shapes, others, *values)


@dataclass(frozen=True)
class Skipped:
    ref: NodeRef
    reason: str  # why the node is in no case, as the summary counts it
    detail: str = ""


def node_ref(c: CheckedNode, model: str) -> NodeRef:
    site = c.site
    version = c.spec.version if c.spec else "?"
    op = f"{normalize_domain(site.node.domain)}::{site.node.op_type}-{version}"
    return NodeRef(model, site.graph, site.index, site.node.name, op)


def _int_attrs(c: CheckedNode) -> dict[str, int]:
    return {a.name: int(a.i) for a in c.site.node.attribute if a.type == AttributeProto.INT}


def _type(facts: Facts | None) -> ElementType | None:
    if facts is None or facts.elem is None:
        return None
    try:
        return by_proto(facts.elem)
    except KeyError:
        return None


def _values(facts: Facts, base_dir: Path, what: str) -> np.ndarray:
    """A constant's values as float64 in its own shape (raises LookupError with the reason when too large)."""
    if facts.nbytes() > MAX_PARAMETER_BYTES:
        raise LookupError(f"the {what} holds {facts.nbytes()} bytes (more than "
                          f"{MAX_PARAMETER_BYTES >> 20} MiB are not read)")
    chunks = [np.asarray(c).astype(np.float64) for c in facts.values(base_dir) or ()]
    flat = np.concatenate(chunks) if chunks else np.zeros(0)
    shape = tuple(int(d) for d in facts.tensor.dims) if facts.tensor is not None else ()
    return flat.reshape(shape)


def _guess_x(kind: str, scale: ElementType | None, zp: ElementType | None) -> ElementType | None:
    """x's type where the model does not say: a QuantizeLinear's x as its scale (the type they share at
    every version), a DequantizeLinear's as its zero point (the type they must share)."""
    return (scale if scale is not None and not scale.is_integer else TYPES["float"]) if kind == "Q" else zp


def read_node(c: CheckedNode, model: str, base_dir: Path) -> NodeConfig | Skipped:
    """The configuration of one quantization node the checker walked, or why it has none."""
    ref = node_ref(c, model)
    node = c.site.node
    if not c.known:
        return Skipped(ref, "an operator the checker does not know",
                       f"{normalize_domain(node.domain)}::{node.op_type}")
    if c.spec is None:
        first = next((f for f in c.findings if f.rule == "QDQ001"), None)
        return Skipped(ref, "an operator version the spec does not define", first.message if first else "")
    spec = c.spec
    kind = "DQL" if spec.name == "DynamicQuantizeLinear" else "DQ" if "Dequantize" in spec.name else "Q"
    errors = [f for f in c.findings if f.severity == "error"]
    beyond = [f for f in errors if f.rule not in KERNEL_RULES]
    if beyond:
        return Skipped(ref, "a problem no single-node case can hold",
                       f"{beyond[0].rule}: {beyond[0].message}")
    names = [*node.input, "", "", ""]
    scope = c.site.scope
    x_f = scope.get(names[0]) if names[0] else None
    s_f = scope.get(names[1]) if names[1] else None
    z_f = scope.get(names[2]) if names[2] else None
    notes: list[str] = []
    scale_values = zp_values = None
    if kind != "DQL":
        for facts, formal, name in ((s_f, spec.inputs[1].name, names[1]),
                                    (z_f, spec.inputs[2].name, names[2])):
            if name and (facts is None or facts.tensor is None):
                return Skipped(ref, "a parameter computed at run time",
                               f"{formal} ({name!r}) is not a constant of the model")
        assert s_f is not None
        try:
            scale_values = _values(s_f, base_dir, spec.inputs[1].name)
            zp_values = _values(z_f, base_dir, spec.inputs[2].name) if z_f is not None else None
        except (LookupError, Unreadable) as e:
            return Skipped(ref, "a parameter too large to read", str(e))
    scale_t, zp_t = _type(s_f), _type(z_f)
    x_t = _type(x_f)
    if x_t is None and x_f is not None and x_f.elem is not None:
        return Skipped(ref, "a type no case can hold", f"x's type {x_f.elem} is not one the corpus has")
    for facts, t in ((s_f, scale_t), (z_f, zp_t)):
        if facts is not None and facts.elem is not None and t is None:
            return Skipped(ref, "a type no case can hold", f"type {facts.elem} is not one the corpus has")
    if x_t is None:
        x_t = TYPES["float"] if kind == "DQL" else _guess_x(kind, scale_t, zp_t)
        if x_t is None:
            return Skipped(ref, "a type the model does not give", "x's type could not be determined")
        notes.append(f"x's type is not given by the model: taken as {x_t.name}")
    attrs = _int_attrs(c)
    x_shape = x_f.shape if x_f is not None else None
    cfg = NodeConfig(ref, spec, kind, x_t.name, scale_t.name if scale_t else None, "", "given" if z_f else
                     "omitted", zp_t.name if zp_t else None, "per-tensor", attrs.get("axis"),
                     attrs.get("block_size"), attrs, x_shape, scale_values, zp_values, notes=notes)
    return _plan(cfg, errors)


def _standin_shape(cfg: NodeConfig) -> tuple[int, ...]:
    """x's shape with unknown dimensions filled as the scale implies (the checker's stand-in)."""
    scale_shape = () if cfg.scale_values is None else cfg.scale_values.shape
    made = fill(cfg.x_shape, scale_shape, cfg.attrs)
    if made is None:
        return known(cfg.x_shape) or (1,)
    return made[0]


def _plan(cfg: NodeConfig, errors: list[NodeFinding]) -> NodeConfig | Skipped:
    """Output type and granularity from the kernel's own plan (a refusal: the rule an invalid case breaks)."""
    spec = cfg.spec
    x_shape = _standin_shape(cfg)
    if math.prod(x_shape) > 2**40:
        x_shape = tuple(min(d, 1 << 10) for d in x_shape)
    inputs: list[np.ndarray | None] = [zeros(TYPES[cfg.x].dtype, x_shape)]
    if cfg.kind != "DQL":
        assert cfg.scale is not None and cfg.scale_values is not None
        inputs.append(zeros(TYPES[cfg.scale].dtype, cfg.scale_values.shape))
        zp = cfg.zero_point_values
        inputs.append(None if zp is None or cfg.zero_point_type is None
                      else zeros(TYPES[cfg.zero_point_type].dtype, zp.shape))
    while inputs and inputs[-1] is None:
        inputs.pop()
    try:
        plan = PLANS[(spec.domain, spec.name)](spec, inputs, cfg.attrs)
    except SpecViolation as e:
        cfg.rule = e.rule
        cfg.problem = errors[0].message if errors else e.detail
        cfg.y = cfg.scale or cfg.x if cfg.kind == "DQ" else cfg.zero_point_type or "uint8"
        if e.rule not in KERNEL_RULES:
            return Skipped(cfg.ref, "a problem no single-node case can hold", str(e))
        return cfg
    if errors:
        return Skipped(cfg.ref, "a problem no single-node case can hold",
                       f"{errors[0].rule}: {errors[0].message} (the kernel accepts the node as a case would "
                       "hold it)")
    cfg.y = plan.outputs[0].name
    if cfg.kind == "Q" and cfg.zero_point == "omitted" and cfg.attrs.get("output_dtype"):
        cfg.zero_point = "output_dtype"
    g = plan.granularity
    if g is not None and g.kind != "per-tensor":
        cfg.granularity = g.kind
    elif cfg.scale_values is not None and cfg.scale_values.shape == (1,):
        cfg.granularity = "per-tensor-1d"
    return cfg
