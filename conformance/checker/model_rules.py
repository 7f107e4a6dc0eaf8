"""The rules on a whole model (QDQ021-QDQ025): node order, the IR version against the opsets and the element
types the model uses, quantization operators the checker does not know, and negative dimensions.

Each rule is reported at most once per graph (QDQ021), per model (QDQ022, QDQ023, QDQ025) or per operator
(QDQ024),
with a count and the first place it applies, so a model with a thousand offending nodes still reads in a few
lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import onnx
from onnx import AttributeProto, TensorProto, helper

from ..opspecs import AI_ONNX, import_table, import_version, normalize_domain
from .tensor_facts import Site

#: The IR version that added each element type (onnx.proto, "Version" comments); older types are in every IR
#: version a model can carry.
TYPE_IR: dict[int, int] = {TensorProto.BFLOAT16: 4}
TYPE_IR.update({getattr(TensorProto, name): ir for name, ir in (
    ("FLOAT8E4M3FN", 9), ("FLOAT8E4M3FNUZ", 9), ("FLOAT8E5M2", 9), ("FLOAT8E5M2FNUZ", 9), ("UINT4", 10),
    ("INT4", 10), ("FLOAT4E2M1", 11), ("FLOAT8E8M0", 12), ("UINT2", 13), ("INT2", 13), ("FLOAT6E2M3", 14),
    ("FLOAT6E3M2", 14)) if hasattr(TensorProto, name)})
#: Domains whose every operator quantizes or dequantizes; elsewhere an operator whose name says it does.
QUANTIZATION_DOMAINS = frozenset({"com.amd.quark", "com.vai.quantize"})
_QUANTIZATION_NAME = re.compile(r"quantiz", re.IGNORECASE)
#: Integer attributes that hold an element type: (operator or None for any, attribute).
_TYPE_ATTRIBUTES = {(None, "output_dtype"), ("Cast", "to"), (None, "dtype")}
_TYPE_ATTRIBUTE_NAMES = frozenset(name for _, name in _TYPE_ATTRIBUTES)
#: How many places a finding names before "and N more".
SHOWN = 3


@dataclass(frozen=True)
class ModelFinding:
    rule: str
    message: str
    graph: str = "main"
    node_index: int | None = None
    node_name: str = ""
    domain: str = ""
    operator: str = ""
    version: int | None = None


def _type_name(elem: int) -> str:
    return TensorProto.DataType.Name(elem).lower()


def _listed(places: list[str]) -> str:
    shown = ", ".join(places[:SHOWN])
    return shown + (f" and {len(places) - SHOWN} more" if len(places) > SHOWN else "")


# --- QDQ021: topological order
# ----------------------------------------------------------------------------------


_GRAPH_TYPES = (AttributeProto.GRAPH, AttributeProto.GRAPHS)


def _subgraphs(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    for a in node.attribute:
        if a.type not in _GRAPH_TYPES:
            continue
        subs = [a.g] if a.type == AttributeProto.GRAPH else list(a.graphs)
        for j, sub in enumerate(subs):
            yield a.name + (f"[{j}]" if len(subs) > 1 else ""), sub


@dataclass(frozen=True)
class _Enclosing:
    """A graph around a subgraph, at the node holding it: its later nodes' outputs are not yet computed."""

    path: str
    nodes: list[onnx.NodeProto]
    produced: dict[str, int]
    at: int

    def later(self, name: str) -> str | None:
        j = self.produced.get(name, -1)
        return f"{self.path}'s node {j} {self.nodes[j].name!r}" if j >= self.at else None


def _order(nodes: Iterable[onnx.NodeProto], path: str, seen: set[str], enclosing: tuple[_Enclosing, ...],
           opsets: dict[str, int]) -> Iterator[ModelFinding]:
    """QDQ021 for one graph: a node input that a later node of this graph (or, in a subgraph, a later node of
    an enclosing graph) produces. ``seen``: the names defined so far."""
    nodes = list(nodes)
    outputs = [list(n.output) for n in nodes]
    produced: dict[str, int] = {}
    for k, outs in enumerate(outputs):
        for out in outs:
            if out:
                produced.setdefault(out, k)
    seen = set(seen)
    bad: list[tuple[int, onnx.NodeProto, str, str]] = []
    for k, n in enumerate(nodes):
        for name in n.input:
            if not name or name in seen:
                continue
            if produced.get(name, -1) >= k:
                j = produced[name]
                bad.append((k, n, name, f"node {j} {nodes[j].name!r} ({nodes[j].op_type})"))
                break
            outer = next((d for d in (e.later(name) for e in enclosing) if d), None)
            if outer:
                bad.append((k, n, name, outer))
                break
        if any(a.type in _GRAPH_TYPES for a in n.attribute):
            here = (*enclosing, _Enclosing(path, nodes, produced, k))
            for label, sub in _subgraphs(n):
                defined = seen | {i.name for i in sub.input} | {t.name for t in sub.initializer}
                yield from _order(sub.node, f"{path}/node {k} {n.name!r}.{label}", defined, here, opsets)
        seen.update(outputs[k])
    if bad:
        k, n, name, producer = bad[0]
        more = f" ({len(bad)} nodes read a tensor produced after them)" if len(bad) > 1 else ""
        yield ModelFinding("QDQ021", f"input {name!r} is produced later, by {producer}{more}", path, k,
                           n.name, normalize_domain(n.domain), n.op_type, import_version(opsets, n.domain))


def order(model: onnx.ModelProto) -> Iterator[ModelFinding]:
    g = model.graph
    defined = {i.name for i in g.input} | {t.name for t in g.initializer} | \
        {t.values.name for t in g.sparse_initializer}
    opsets = import_table(model.opset_import)
    yield from _order(g.node, "main", defined, (), opsets)
    for f in model.functions:
        yield from _order(f.node, f"function {normalize_domain(f.domain)}::{f.name}", set(f.input), (),
                          import_table(f.opset_import) or opsets)


# --- QDQ022, QDQ023: the IR version
# -----------------------------------------------------------------------------


def _release_for(domain: str, version: int) -> tuple[str, int] | None:
    """The first onnx release (name, IR version) that defines ``version`` of ai.onnx or ai.onnx.ml."""
    column = {AI_ONNX: 2, "ai.onnx.ml": 3}.get(domain)
    if column is None:
        return None
    for row in helper.VERSION_TABLE:
        if int(row[column]) >= version:
            return str(row[0]), int(row[1])
    return None


def ir_for_opsets(model: onnx.ModelProto) -> Iterator[ModelFinding]:
    """QDQ022: an opset import (the model's or a local function's) newer than the model's IR version."""
    imports = [(imp, "model") for imp in model.opset_import]
    imports += [(imp, f"function {normalize_domain(f.domain)}::{f.name}") for f in model.functions
                for imp in f.opset_import]
    worst: tuple[int, str] | None = None
    for imp, who in imports:
        domain = normalize_domain(imp.domain)
        release = _release_for(domain, imp.version)
        if release is not None and release[1] > model.ir_version and (worst is None or release[1] > worst[0]):
            worst = (release[1],
                     f"the {who} imports {domain} opset {imp.version}, which came with IR version "
                                 f"{release[1]} (onnx {release[0]})")
    if worst is not None:
        yield ModelFinding("QDQ022", f"IR version {model.ir_version} is older than its opsets: {worst[1]}")


def _type_elems(t: onnx.TypeProto) -> Iterator[int]:
    which = t.WhichOneof("value")
    if which in ("tensor_type", "sparse_tensor_type"):
        yield getattr(t, which).elem_type
    elif which in ("sequence_type", "optional_type"):
        yield from _type_elems(getattr(t, which).elem_type)
    elif which == "map_type":
        yield t.map_type.key_type
        yield from _type_elems(t.map_type.value_type)


def _graph_types(g: onnx.GraphProto, where: str, ir: int) -> Iterator[tuple[int, str]]:
    """The element types newer than IR version ``ir`` that ``g`` uses, and where."""
    for t in g.initializer:
        if TYPE_IR.get(t.data_type, 0) > ir:
            yield t.data_type, f"{where}initializer {t.name!r}"
    for sp in g.sparse_initializer:
        if TYPE_IR.get(sp.values.data_type, 0) > ir:
            yield sp.values.data_type, f"{where}sparse initializer {sp.values.name!r}"
    for kind, infos in (("graph input", g.input), ("graph output", g.output), ("value_info", g.value_info)):
        for vi in infos:
            for elem in _type_elems(vi.type):
                if TYPE_IR.get(elem, 0) > ir:
                    yield elem, f"{where}{kind} {vi.name!r}"
    yield from _node_types(g.node, where, ir)


def _node_types(nodes: Iterable[onnx.NodeProto], where: str, ir: int) -> Iterator[tuple[int, str]]:
    for k, n in enumerate(nodes):
        for a in n.attribute:
            if a.type == AttributeProto.TENSOR:
                elems = [a.t.data_type]
            elif a.type == AttributeProto.TENSORS:
                elems = [t.data_type for t in a.tensors]
            elif a.type == AttributeProto.INT and a.name in _TYPE_ATTRIBUTE_NAMES and \
                    ((n.op_type, a.name) in _TYPE_ATTRIBUTES or (None, a.name) in _TYPE_ATTRIBUTES):
                elems = [int(a.i)]
            else:
                continue
            yield from ((e, f"{where}node {k} {n.name!r} attribute {a.name}") for e in elems
                        if TYPE_IR.get(e, 0) > ir)
        for label, sub in _subgraphs(n):
            yield from _graph_types(sub, f"{where}node {k} {n.name!r}'s {label}: ", ir)


def ir_for_types(model: onnx.ModelProto) -> Iterator[ModelFinding]:
    """QDQ023: element types the model's IR version does not have."""
    places: dict[int, list[str]] = {}
    ir = model.ir_version
    found = list(_graph_types(model.graph, "", ir))
    for f in model.functions:
        where = f"function {normalize_domain(f.domain)}::{f.name}: "
        found += list(_node_types(f.node, where, ir))
        found += [(e, f"{where}value_info {vi.name!r}") for vi in getattr(f, "value_info", [])
                  for e in _type_elems(vi.type) if TYPE_IR.get(e, 0) > ir]
    for elem, where in found:
        places.setdefault(elem, []).append(where)
    if not places:
        return
    types = ", ".join(f"{_type_name(e)} (IR {TYPE_IR[e]})"
                      for e in sorted(places, key=lambda e: (TYPE_IR[e], e)))
    used = [w for e in places for w in places[e]]
    yield ModelFinding("QDQ023", f"IR version {model.ir_version} has no {types}; used by {_listed(used)}")


# --- QDQ025: negative dimensions
# --------------------------------------------------------------------------------


def _shape_text(dims: Iterable[onnx.TensorShapeProto.Dimension]) -> str:
    return "[" + ", ".join(str(d.dim_value) if d.HasField("dim_value") else d.dim_param or "?"
                           for d in dims) + "]"


def _negative_dims(g: onnx.GraphProto, where: str) -> Iterator[str]:
    """Where ``g`` (and its subgraphs) declares a shape with a dimension below 0."""
    for kind, infos in (("graph input", g.input), ("graph output", g.output), ("value_info", g.value_info)):
        for vi in infos:
            shape = vi.type.tensor_type.shape if vi.type.HasField("tensor_type") else None
            if shape is not None and any(d.HasField("dim_value") and d.dim_value < 0 for d in shape.dim):
                yield f"{where}{kind} {vi.name!r} {_shape_text(shape.dim)}"
    for t in g.initializer:
        if any(d < 0 for d in t.dims):
            yield f"{where}initializer {t.name!r} {list(t.dims)}"
    for k, n in enumerate(g.node):
        for label, sub in _subgraphs(n):
            yield from _negative_dims(sub, f"{where}node {k} {n.name!r}'s {label}: ")


def negative_dimensions(model: onnx.ModelProto) -> Iterator[ModelFinding]:
    """QDQ025: declared shapes with a dimension below 0 (graph inputs, outputs, value_info, initializers)."""
    places = list(_negative_dims(model.graph, ""))
    if places:
        yield ModelFinding("QDQ025", f"a shape has a negative dimension: {_listed(places)}")


# --- QDQ024: quantization operators the checker does not know
# ---------------------------------------------------


def is_quantization(site: Site, local_functions: set[tuple[str, str]]) -> bool:
    """A node of a quantization domain, or one whose operator's name says it quantizes, that is not a call of
    the model's own function (whose body is checked node by node)."""
    domain = normalize_domain(site.node.domain)
    if (domain, site.node.op_type) in local_functions:
        return False
    op = site.node.op_type  # (bytes when the file's string is not UTF-8)
    name = op.decode("utf-8", "backslashreplace") if isinstance(op, bytes) else op
    return domain in QUANTIZATION_DOMAINS or bool(_QUANTIZATION_NAME.search(name))


def unknown_operators(sites: list[Site]) -> Iterator[ModelFinding]:
    """QDQ024: one note per operator, with how many nodes use it and the first."""
    by_op: dict[tuple[str, str], list[Site]] = {}
    for site in sites:
        by_op.setdefault((normalize_domain(site.node.domain), site.node.op_type), []).append(site)
    for (domain, op), group in by_op.items():
        first = group[0]
        count = f"{len(group)} nodes" if len(group) > 1 else "1 node"
        yield ModelFinding("QDQ024",
                           f"{domain}::{op} is not an operator the checker knows; {count} not checked",
                           first.graph, first.index, first.node.name, domain, op,
                           import_version(first.opsets, first.node.domain))
