"""Deciding "unsupported" for ONNX Runtime by asking it, not by reading its messages.

When a session does not build, or a session built raises while running (``decide_run``: an old release can
list what it does not implement), the failure is put to ONNX Runtime itself through small probes, each cached
for the life of the process (a backend worker asks each question at most once):

- element type: does ORT load a node-less model whose input of that type is passed straight through as the
  output (its type registration, no kernel involved)? And, at run time, can it make an OrtValue of that type?
- IR version: does ORT load a node-less float model of that IR version?
- opset import: does ORT load a node-less float model importing that (domain, version)?
- operator: does ORT build a session on the node's operator at the node's version with its plainest types
  (float for the float type parameters, uint8 for the integer ones), i.e. does it implement that version at
  all? The types come from ORT's own schema registry; no schema at all is itself the answer.
- granularity: does ORT load and run the plainest blocked model of a QuantizeLinear / DequantizeLinear whose
  node asks for blocks (1.18 lists QuantizeLinear-21 but quantizes per tensor and per axis only)?
- a non-quantization node's types: does ORT load that node alone with the element types it gets in the model
  (a graph case's Transpose of a type the release lacks), when ONNX's own schema allows them?

A failure that a refused probe explains is :class:`Unsupported`, with the probe's reason. So is ORT's own
NOT_IMPLEMENTED status (its exception class, no message text). Anything else is :class:`Rejected` (right for
an invalid model, an error for a valid one): in particular an invalid model with types, IR and opset ORT does
support. Only when no probe can be put (a schema the probe builder cannot express, say) is the message matched
against :data:`FALLBACK_FRAGMENTS`, a short list the tests check against every supported ORT release.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Sequence

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.capi import onnxruntime_pybind11_state as C

from ..blame import harness_fault
from ..types import NUMPY_NATIVE, TYPES
from .base import Rejected, Unsupported

#: ONNX element type -> numpy's own dtype, for the types numpy has (an OrtValue made from a numpy array)
NUMPY_TYPES = {t.proto: t.dtype for t in TYPES.values() if t.dtype in NUMPY_NATIVE}

#: Message fragments still read, as a fallback only, when the probes cannot be put. Each one is checked in
#: tests/test_unsupported.py against the message the installed ORT actually gives (1.31.1 and 1.32.0):
#: - "NOT_IMPLEMENTED": ORT's status code name, printed in every message of that status;
#: - "is not currently registered or supported": 1.31+ for a type without an MLDataType (complex, float6 in
#:   1.32);
#: - "Invalid tensor data type": 1.31 for an element type its protobuf does not know (float6);
#: - "Unsupported model IR version": an IR newer than ORT's (IR 14 in 1.31).
FALLBACK_FRAGMENTS = ("NOT_IMPLEMENTED", "is not currently registered or supported",
                      "Invalid tensor data type", "Unsupported model IR version")

class NoProbe(Exception):
    """A probe cannot be put (a schema the builder cannot express, a refused control model): no answer."""


#: Preferred types when a probe binds an operator's type parameter (the plainest a runtime implements).
_PLAIN = ("tensor(float)", "tensor(uint8)", "tensor(int8)", "tensor(int32)")
_NEUTRAL_IR = 8
_NEUTRAL_OPSET = ("", 1)

#: Time spent in probes by this process (seconds) and how many were put: benchmarks and the report read it.
STATS = {"probes": 0, "seconds": 0.0}


def first_line(text: str) -> str:
    """The useful part of an ORT message: its first line without the C++ source location and signature
    ("/onnxruntime_src/...model.cc:256 onnxruntime::Model::Model(...) ") that some messages carry."""
    line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), str(text).strip())
    at = line.find("/onnxruntime_src/")
    start = line.find("(", at)
    if at >= 0 and start > 0:
        depth = 0
        for k in range(start, len(line)):
            depth += {"(": 1, ")": -1}.get(line[k], 0)
            if depth == 0:
                line = line[:at] + line[k + 1:].lstrip(" :")
                break
    return line[:400]


def _session(model: onnx.ModelProto, feeds: dict[str, np.ndarray] | None = None) -> str | None:
    """None if ORT builds a CPU session on ``model`` (and runs it on ``feeds``, when given), else the first
    line of its refusal."""
    STATS["probes"] += 1
    t0 = time.perf_counter()
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    try:
        session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        if feeds is not None:
            session.run(None, feeds)
        return None
    except Exception as e:  # noqa: BLE001 - ORT raises its own classes, all Exception subclasses
        return first_line(str(e))
    finally:
        STATS["seconds"] += time.perf_counter() - t0


def _passthrough(elem: int, imports: Sequence[tuple[str, int]], ir: int) -> onnx.ModelProto:
    vi = helper.make_tensor_value_info("x", elem, [2])
    graph = helper.make_graph([], "probe", [vi], [vi])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in imports],
                             ir_version=ir)


def _type_name(elem: int) -> str:
    return (TensorProto.DataType.Name(elem).lower() if elem in TensorProto.DataType.values()
            else f"type {elem}")


@functools.cache
def type_refusal(elem: int) -> str | None:
    """Why ORT cannot hold ``elem`` tensors in a model (None if it can)."""
    why = _session(_passthrough(elem, [_NEUTRAL_OPSET], _NEUTRAL_IR))
    return None if why is None else \
        f"has no {_type_name(elem)} tensor type (probe: a node-less model passing a {_type_name(elem)} " \
        f"input through was refused: {why})"


@functools.cache
def ortvalue_refusal(elem: int) -> str | None:
    """Why ORT cannot make an OrtValue of ``elem`` (None if it can), asked the way the ort kit
    (``kits/ort.py``) makes one: from a numpy array for numpy's own types, from the ONNX element type for the
    others (an API of ORT 1.20 on: before it, ORT's Python API takes numpy element types only)."""
    STATS["probes"] += 1
    native = NUMPY_TYPES.get(elem)
    if native is None and not hasattr(C.OrtValue, "ortvalue_from_shape_and_onnx_type"):
        return (f"cannot make a {_type_name(elem)} OrtValue (probe: its Python API has no "
                "OrtValue.ortvalue_from_shape_and_onnx_type, which ONNX Runtime 1.20 added, and its "
                "ortvalue_from_shape_and_type takes numpy element types only, of which numpy has no "
                f"{_type_name(elem)})")
    try:
        if native is not None:
            ort.OrtValue.ortvalue_from_numpy(np.zeros([1], native))
        else:
            ort.OrtValue.ortvalue_from_shape_and_type([1], elem)
        return None
    except Exception as e:  # noqa: BLE001
        return f"cannot make a {_type_name(elem)} OrtValue (probe: OrtValue." \
               f"{'ortvalue_from_numpy' if native is not None else 'ortvalue_from_shape_and_type'} " \
               f"refused: {first_line(str(e))})"


@functools.cache
def ir_refusal(ir: int) -> str | None:
    why = _session(_passthrough(TensorProto.FLOAT, [_NEUTRAL_OPSET], ir))
    return (None if why is None
            else f"does not load IR version {ir} (probe: a node-less IR-{ir} model was refused: {why})")


@functools.cache
def opset_refusal(domain: str, version: int) -> str | None:
    why = _session(_passthrough(TensorProto.FLOAT, [(domain, version)], _NEUTRAL_IR))
    name = domain or "ai.onnx"
    return None if why is None else \
        f"does not load opset {name} {version} (probe: a node-less model importing it was refused: {why})"


@functools.cache
def _schemas() -> dict[tuple[str, str], list]:
    out: dict[tuple[str, str], list] = {}
    for s in C.get_all_operator_schema():
        out.setdefault((s.domain, s.name), []).append(s)
    return out


def _elem(type_str: str) -> int:
    return TensorProto.DataType.Value(type_str[len("tensor("):-1].upper())


@functools.cache
def op_refusal(domain: str, op: str, opset: int) -> str | None:
    """Why ORT does not implement ``domain::op`` at opset ``opset`` with any types (None if it builds a
    session on it with its plainest types). Asks ORT's schema registry which version applies and which types
    it takes."""
    name = f"{domain or 'ai.onnx'}::{op}"
    schemas = [s for s in _schemas().get((domain, op), []) if s.since_version <= opset]
    if not schemas:
        return f"has no schema for {name} at opset {opset} (probe: ORT's operator schema registry)"
    schema = max(schemas, key=lambda s: s.since_version)
    allowed = {t.type_param_str: t.allowed_type_strs for t in schema.type_constraints}
    bind = {p: next((t for t in _PLAIN if t in types), types[0]) for p, types in allowed.items() if types}

    def info(param, n: int):  # noqa: ANN001 - an ORT FormalParameter
        return helper.make_tensor_value_info(param.name or f"p{n}",
                                             _elem(bind.get(param.typeStr, param.typeStr)),
                                             [2] if n == 0 else [])

    try:
        inputs = [info(p, n) for n, p in enumerate(schema.inputs) if "Variadic" not in str(p.option)]
        outputs = [info(p, 1) for p in schema.outputs if "Variadic" not in str(p.option)]
        for o in outputs:
            o.type.tensor_type.ClearField("shape")
        node = helper.make_node(op, [i.name for i in inputs], [o.name for o in outputs], domain=domain)
        imports = [(domain, opset)] + ([] if domain == "" else [("", 21)])
        model = helper.make_model(helper.make_graph([node], "probe", inputs, outputs),
                                  opset_imports=[helper.make_opsetid(d, v) for d, v in imports],
                                  ir_version=_NEUTRAL_IR)
    except (KeyError, ValueError, IndexError) as e:  # a schema this builder cannot express: no answer
        raise NoProbe(f"cannot build a probe for {name}-{schema.since_version}: {e}") from None
    required = sorted(a.name for a in schema.attributes.values() if a.required)
    if required:  # a node without them is an invalid model, whose refusal says nothing of the operator
        raise NoProbe(f"cannot build a probe for {name}-{schema.since_version}: it requires the attributes "
                      f"{', '.join(required)}")
    why = _session(model)
    if why is not None and any(f in why for f in ("ShapeInferenceError", "INVALID_GRAPH")):
        # (the probe's own model refused as invalid: MatMulInteger's rank-0 inputs, Max with its variadic
        # inputs left out; ORT says NOT_IMPLEMENTED for an operator it has no kernel for)
        raise NoProbe(f"cannot build a probe for {name}-{schema.since_version}: its model was refused as "
                      f"invalid ({why})")
    plain = ", ".join(f"{p}={t[7:-1]}" for p, t in sorted(bind.items()))
    return None if why is None else \
        f"does not implement {name}-{schema.since_version} (probe: a {op} model with {plain} was refused: " \
        f"{why})"


def model_types(model: onnx.ModelProto) -> list[int]:
    """Every tensor element type the model's main graph declares (inputs, outputs, value_info, initializers,
    Constant values), in first-seen order."""
    g = model.graph
    seen: dict[int, None] = {}
    for vi in (*g.input, *g.output, *g.value_info):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            seen[vi.type.tensor_type.elem_type] = None
    for t in g.initializer:
        seen[t.data_type] = None
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                seen[a.t.data_type] = None
    return list(seen)


@functools.cache
def _control() -> str | None:
    """The probes' common ground: a node-less float model at the neutral IR version and opset must load, or a
    refusal of a probe could be about that ground rather than what it asks (then no probe is trusted)."""
    return _session(_passthrough(TensorProto.FLOAT, [_NEUTRAL_OPSET], _NEUTRAL_IR))


#: the quantization operators, whose types a node probe leaves to the operator's own refusal (a type ORT lacks
#: there is its NOT_IMPLEMENTED, or a finding)
_QUANTIZATION_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"})
_BLOCKED = {"QuantizeLinear": (TensorProto.FLOAT, TensorProto.UINT8),
            "DequantizeLinear": (TensorProto.UINT8, TensorProto.FLOAT)}


@functools.cache
def blocked_refusal(op: str, opset: int) -> str | None:
    """Why ORT does not quantize blockwise with ai.onnx ``op`` at ``opset`` (None if it does): a release can
    list the version (1.18 lists QuantizeLinear-21) and still implement only its per-tensor and per-axis
    granularities. Asked with the plainest blocked model: x [2, 4] (float for a QuantizeLinear, uint8 for a
    DequantizeLinear), a [2, 2] scale and uint8 zero point, axis 1, block_size 2, loaded and run."""
    x_type, y_type = _BLOCKED[op]
    consts = [numpy_helper.from_array(np.ones([2, 2], np.float32), "s"),
              numpy_helper.from_array(np.zeros([2, 2], np.uint8), "z")]
    node = helper.make_node(op, ["x", "s", "z"], ["y"], axis=1, block_size=2)
    imports = [helper.make_opsetid("", opset)]
    model = helper.make_model(
        helper.make_graph([node], "probe", [helper.make_tensor_value_info("x", x_type, [2, 4])],
                          [helper.make_tensor_value_info("y", y_type, [2, 4])], consts),
        opset_imports=imports, ir_version=helper.find_min_ir_version_for(imports))
    x = np.zeros([2, 4], np.float32 if x_type == TensorProto.FLOAT else np.uint8)
    why = _session(model, {"x": x})
    return None if why is None else \
        f"does not implement blocked quantization in {op}-{opset} (probe: a plain blocked {op} model, x " \
        f"[2,4], a [2,2] scale, block_size 2, was refused: {why})"


def _node_types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """Every value's type in ``model``, as onnx's shape inference gives it."""
    inferred = onnx.shape_inference.infer_shapes(model)
    g = inferred.graph
    types = {vi.name: vi.type for vi in (*g.input, *g.output, *g.value_info)}
    for t in g.initializer:
        types.setdefault(t.name, helper.make_tensor_type_proto(t.data_type, list(t.dims)))
    return types


@functools.cache
def node_type_refusal(node_bytes: bytes, opset: tuple[tuple[str, int], ...], inputs: tuple[bytes, ...],
                      outs: tuple[bytes, ...]) -> str | None:
    """Why ORT does not implement a (non-quantization) node for the element types it gets in a model (None if
    it does, or if ONNX's own schema does not allow those types: then refusing is right): the node alone,
    its inputs (``inputs``: their serialized TypeProtos, ``outs`` its outputs') graph inputs, loaded."""
    node = onnx.NodeProto.FromString(node_bytes)
    types = [onnx.TypeProto.FromString(t) for t in inputs]
    domain = node.domain if node.domain != "ai.onnx" else ""
    version = dict(opset).get(domain)
    try:
        schema = onnx.defs.get_schema(node.op_type, version or 1, domain)
    except onnx.defs.SchemaError:
        return None
    allowed = {tc.type_param_str: set(tc.allowed_type_strs) for tc in schema.type_constraints}
    names = [f"tensor({_type_name(t.tensor_type.elem_type)})" for t in types]
    # (the types of the inputs given, in order: an optional input left out has no type and no formal here)
    for formal, name in zip(schema.inputs, names, strict=False):
        if name not in allowed.get(formal.type_str, {name}):
            return None  # ONNX does not allow it: the model is invalid, and refusing it is right
    graph_inputs = list({n: helper.make_value_info(n, t)
                         for n, t in zip([n for n in node.input if n], types, strict=True)}.values())
    outputs = [helper.make_value_info(n, onnx.TypeProto.FromString(t)) for n, t in zip(node.output, outs,
                                                                                         strict=True)]
    imports = [helper.make_opsetid(d, v) for d, v in opset]
    model = helper.make_model(helper.make_graph([node], "probe", graph_inputs, outputs),
                              opset_imports=imports, ir_version=helper.find_min_ir_version_for(imports))
    why = _session(model)
    return None if why is None else \
        f"does not implement {node.op_type}-{schema.since_version} for {', '.join(dict.fromkeys(names))} " \
        f"(probe: the node alone, with the types it gets in the model, was refused: {why})"


def _node_refusals(model: onnx.ModelProto, imports: dict[str, int]) -> str | None:
    """What a node needs beyond its operator version: blocked quantization, and a non-quantization node's
    element types (a graph case's Transpose of float8, say)."""
    types: dict[str, onnx.TypeProto] | None = None
    opset = tuple(sorted(imports.items()))
    for node in model.graph.node:
        domain = node.domain if node.domain != "ai.onnx" else ""
        if domain == "" and node.op_type in _BLOCKED and \
                any(a.name == "block_size" and a.i > 0 for a in node.attribute):
            if (why := blocked_refusal(node.op_type, imports[""])) is not None:
                return why
        elif domain in ("", "com.microsoft") and node.op_type not in _QUANTIZATION_OPS:
            types = _node_types(model) if types is None else types
            if not all(n in types for n in (*node.input, *node.output) if n):
                continue
            ins = tuple(types[n].SerializeToString() for n in node.input if n)
            outs = tuple(types[n].SerializeToString() for n in node.output)
            if (why := node_type_refusal(node.SerializeToString(), opset, ins, outs)) is not None:
                return why
    return None


def _unsupported_by_probe(model: onnx.ModelProto, custom_ops: bool) -> str | None:
    if (why := _control()) is not None:
        raise NoProbe(f"the probes' control model was refused: {why}")
    for elem in model_types(model):
        if (why := type_refusal(elem)) is not None:
            return why
    if (why := ir_refusal(model.ir_version)) is not None:
        return why
    imports = {o.domain if o.domain != "ai.onnx" else "": o.version for o in model.opset_import}
    for domain, version in imports.items():
        if (why := opset_refusal(domain, version)) is not None:
            return why
    for node in model.graph.node:
        domain = node.domain if node.domain != "ai.onnx" else ""
        if domain not in imports or (custom_ops and (domain, node.op_type) not in _schemas()):
            continue  # a custom-op library's operators are not in ORT's registry: no probe for them
        if (why := op_refusal(domain, node.op_type, imports[domain])) is not None:
            return why
    return _node_refusals(model, imports)


def decide(model: onnx.ModelProto, error: Exception, *, custom_ops: bool = False) -> Exception:
    """:class:`Unsupported` or :class:`Rejected` for ``error``, raised by ORT while building a session on
    ``model``. ``custom_ops``: custom-op libraries are registered (their operators are not in ORT's schema
    registry, so no operator probe is put for an operator it does not list)."""
    text = str(error)
    prefix = f"ONNX Runtime {ort.__version__} "
    if type(error).__name__ == "NotImplemented":  # ORT's NOT_IMPLEMENTED status: its own "no kernel for this"
        return Unsupported(first_line(text))
    try:
        why = _unsupported_by_probe(model, custom_ops)
    except Exception as e:  # a probe that cannot be put gives no answer: fall back to the message
        if harness_fault(e):  # (a mistake in the probes' own code is the tool's fault, never an answer)
            raise
        why = None
        if any(f in text for f in FALLBACK_FRAGMENTS):
            return Unsupported(first_line(text) + " (message-text fallback: a probe could not be put)")
    if why is not None:
        return Unsupported(prefix + why)
    return Rejected(first_line(text))


def decide_run(model: onnx.ModelProto, *, custom_ops: bool = False) -> Unsupported | None:
    """:class:`Unsupported` when a probe explains why ORT, having built a session on ``model``, raised while
    running it (a granularity it lists but does not implement, say); None: the error is the backend's."""
    try:
        why = _unsupported_by_probe(model, custom_ops)
    except Exception as e:  # a probe that cannot be put gives no answer: the error stands
        if harness_fault(e):  # (a mistake in the probes' own code is the tool's fault, never an answer)
            raise
        return None
    return None if why is None else Unsupported(f"ONNX Runtime {ort.__version__} {why}")


def feed_refusal(elems: Iterable[int]) -> str | None:
    """Why one of the feeds' element types cannot be handed to ORT at run time (None if every one can)."""
    for elem in elems:
        if (why := ortvalue_refusal(elem)) is not None:
            return f"ONNX Runtime {ort.__version__} {why}"
    return None
