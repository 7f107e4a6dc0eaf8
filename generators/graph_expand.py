"""Expanding graph-case templates (``graphs:`` in a case file) into :class:`GraphCase`s.

A template names its values (``inputs``: always graph inputs; ``params``: graph inputs in the runtime form,
initializers in the initializer form; ``constants``: always initializers), its nodes and its outputs. ``vary``
gives lists of values for placeholders: every combination is a case, ``$NAME`` replaced in every string of the
template (a string that is the placeholder alone takes the value itself, a number or a list). ``opsets`` lists
the ai.onnx opsets the graph is built for; a combination whose quantization node the spec does not allow at an
opset (an unknown version, a type or attribute the version lacks) is left out.

The structure is checked before anything runs, each problem one line naming the file, the node's line and the
node: an op outside the schema's list (the schema), a tensor produced twice, an input nothing produces
(dangling), a cycle, a bound that must be constant but is not. The expected outputs are the oracle's
composition (``reference.graph.run_graph``); a node it cannot compute (shapes that do not compose, a
quantization rule broken) is refused naming that node. A graph case is normative: a quantization node whose
answer a catalogued reading would change is refused too (choose other values).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import onnx
from onnx import helper

from qdq_conformance import opspecs
from qdq_conformance.compare import compare
from qdq_conformance.domain import CaseStatus, Form
from qdq_conformance.errors import CaseFileError, SpecViolation
from qdq_conformance.reference.graph_oracle import (
    COMPUTE_OPS,
    CONSTANTS,
    INDEX_TYPE,
    MIN_OPSET,
    QUANT_OPS,
    GraphError,
    Step,
    order,
    run_graph_bounded,
)
from qdq_conformance.types import by_dtype, by_name

from .case import Clause
from .graph_case import GRAPH_CLAUSE, GraphCase, GraphNode
from .graph_intervals import describe_bounds, tie_ops, typed_attributes
from .limits import check_cases, check_elements, check_id
from .loader import line_of
from .status import catalogue_readings, decide
from .template import Template
from .values import ZP_RECIPES, parse_literal, to_type, zero_point_value

_PLACEHOLDER = re.compile(r"\$([A-Za-z][A-Za-z0-9_]*)(?:\.([A-Za-z][A-Za-z0-9_]*))?")
#: rules that mean "this combination does not exist at this opset" (left out), not "this template is wrong"
_ABSENT = frozenset({"QDQ001", "QDQ002", "QDQ009"})


class _Skip(Exception):
    pass


def _lookup(m: re.Match[str], env: dict[str, Any]) -> tuple[bool, Any]:
    """(found, value) of a placeholder ``$NAME`` or ``$NAME.KEY`` (a key of a value that is a mapping: the
    values that go together, such as a weight scale and its bias scale)."""
    name, key = m.group(1), m.group(2)
    if name not in env:
        return False, None
    v = env[name]
    if key is None:
        return True, v
    if not isinstance(v, dict) or key not in v:
        return False, None
    return True, v[key]


def _substitute(value: Any, env: dict[str, Any]) -> Any:
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole:
            found, v = _lookup(whole, env)
            if found:
                return v

        def text(m: re.Match[str]) -> str:
            found, v = _lookup(m, env)
            return str(v) if found else m.group(0)
        return _PLACEHOLDER.sub(text, value)
    if isinstance(value, list):
        return [_substitute(v, env) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, env) for k, v in value.items()}
    return value


def _variants(tpl: Template) -> list[dict[str, Any]]:
    vary = tpl.data.get("vary", {})
    keys = list(vary)
    lists = [vary[k] if isinstance(vary[k], list) else [vary[k]] for k in keys]
    count = 1
    for v in lists:
        count *= len(v)
    check_cases(tpl, count * len(tpl.data["opsets"]))
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*lists)]


def _array(tpl: Template, key: str, src: dict[str, Any]) -> np.ndarray:
    shape_src = src.get("shape")
    if shape_src is not None and not (isinstance(shape_src, list) and all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape_src)):
        raise tpl.error(key, f"shape must be a list of non-negative integers, got {shape_src!r}")
    if src["type"] == INDEX_TYPE:  # shapes, axes, indices: integers as given
        if "values" not in src:
            raise tpl.error(key, f"an {INDEX_TYPE} tensor takes values, not a recipe")
        try:
            raw = parse_literal(src["values"])
        except ValueError as e:
            raise tpl.error(key, str(e)) from None
        if not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw)) or np.any(np.abs(raw) > 2**62):
            raise tpl.error(key, f"{INDEX_TYPE} values must be integers")
        arr = raw.astype(np.int64)
        return arr.reshape(shape_src if shape_src is not None else (() if not isinstance(src["values"], list)
                                                                    else arr.shape))
    try:
        t = by_name(str(src["type"]))
    except KeyError:
        raise tpl.error(key, f"unknown element type {src['type']!r}") from None
    try:
        if "random" in src:
            raw = _seeded(src["random"], t, src.get("shape"))
        elif "recipe" in src:
            name = src["recipe"]
            if name not in ZP_RECIPES:
                raise ValueError(f"recipe {name!r} is not one of {', '.join(ZP_RECIPES)}")
            v = zero_point_value(name, t)
            if v is None:
                raise _Skip()
            raw = np.asarray(v, np.float64)
        else:
            raw = parse_literal(src["values"])
            if not isinstance(src["values"], list):
                raw = raw.reshape(())
        shape = tuple(src["shape"]) if "shape" in src else raw.shape
        check_elements(tpl, key, shape)
        n = int(np.prod(shape)) if shape else 1
        flat = raw.reshape(-1)
        arr = to_type(np.resize(flat, n) if flat.size and flat.size != n else flat, t)
        return arr.reshape(shape)
    except _Skip:
        raise
    except ValueError as e:
        raise tpl.error(key, str(e)) from None


def _seeded(spec: dict[str, Any], t: Any, shape: Any) -> np.ndarray:
    """``random: {seed, low, high, step}``: seeded uniform values on the grid ``low + k * step`` within
    [low, high] (an integer type: its codes, by default its whole range; a float type: ``step`` 0 or left out
    for uniform reals), as many as ``shape`` holds."""
    if not isinstance(shape, list):
        raise ValueError("random values need a shape")
    n = int(np.prod(shape)) if shape else 1
    rng = np.random.default_rng(int(spec["seed"]))
    low = spec.get("low", t.int_min if t.is_integer else None)
    high = spec.get("high", t.int_max if t.is_integer else None)
    if low is None or high is None or float(low) > float(high):
        raise ValueError("random values of a float type need low <= high")
    step = float(spec.get("step", 1 if t.is_integer else 0))
    if step < 0:
        raise ValueError("random: step must be positive")
    if step == 0:
        return rng.uniform(float(low), float(high), n)
    count = int(np.floor((float(high) - float(low)) / step + 1e-9)) + 1
    return float(low) + step * rng.integers(0, count, n).astype(np.float64)


def _node_error(tpl: Template, node: GraphNode, message: str) -> CaseFileError:
    return CaseFileError(tpl.file, node.line or tpl.line(), f"{tpl.data['id']}.nodes[{node.name}]",
                         f"node {node.name} ({node.op}): {message}")


def _nodes(tpl: Template, raw: list[dict[str, Any]], lines: list[int]) -> list[GraphNode]:
    nodes = []
    for k, (n, line) in enumerate(zip(raw, lines, strict=True)):
        attrs = dict(n.get("attributes", {}))
        nodes.append(GraphNode(n["op"], [str(i) for i in n["inputs"]], [str(o) for o in n["outputs"]],
                               attrs, str(n.get("name", f"n{k}_{n['op'].lower()}")), n.get("domain", ""),
                               line))
    names = [g.name for g in nodes]
    for g in nodes:
        if names.count(g.name) > 1:
            raise _node_error(tpl, g, "the node name is used twice")
        for key, v in g.attrs.items():
            if isinstance(v, bool) or not isinstance(v, (int, float, str)) and not (
                    isinstance(v, list) and all(isinstance(i, (int, float)) and not isinstance(i, bool)
                                                for i in v)):
                raise _node_error(tpl, g, f"attribute {key}: a number, a text or a list of numbers, "
                                          f"got {v!r}")
        if g.domain and g.op not in QUANT_OPS:
            raise _node_error(tpl, g, f"only quantization ops take a domain ({g.op} is ai.onnx's)")
    return nodes


def _check_structure(tpl: Template, nodes: list[GraphNode], values: dict[str, str],
                     outputs: list[str]) -> None:
    """Duplicate and dangling names, cycles, constant bounds; one line naming the node."""
    protos = [helper.make_node(n.op, n.inputs, n.outputs) for n in nodes]
    try:
        order(protos, set(values))
    except GraphError as e:
        raise _node_error(tpl, nodes[e.node or 0], str(e)) from None
    produced = {o for n in nodes for o in n.outputs}
    for n in nodes:
        for k in CONSTANTS.get(n.op, ()):
            if k < len(n.inputs) and n.inputs[k] and values.get(n.inputs[k]) != "constants":
                raise _node_error(tpl, n,
                                  f"input {k} ({n.inputs[k]!r}) must be one of the template's constants "
                                  "(a bound the graph stays exact with)")
    for o in outputs:
        if o not in produced:
            raise CaseFileError(tpl.file, tpl.line("outputs"), f"{tpl.data['id']}.outputs",
                                f"graph output {o!r} is produced by no node")


def _is_normative(tpl: Template, case_id: str, nodes: list[GraphNode], model: onnx.ModelProto,
                  steps: list[Step]) -> None:
    """Refuse a graph whose quantization node a catalogued reading answers otherwise."""
    for s in steps:
        n = nodes[s.index]
        if n.op not in QUANT_OPS:
            continue
        domain = opspecs.normalize_domain(n.domain)
        opset = opspecs.import_version(opspecs.import_table(model.opset_import), n.domain)
        assert opset is not None
        spec = opspecs.resolve(domain, n.op, opset)
        args = list(s.inputs)
        while args and args[-1] is None:
            args.pop()
        ints = {k: v for k, v in n.attrs.items() if isinstance(v, int)}
        found = catalogue_readings(spec.domain, spec.name, spec.version, args, ints, s.outputs, None)
        status, entry, _ = decide(CaseStatus.NORMATIVE.value, None, found, s.outputs)
        if status != CaseStatus.NORMATIVE:
            raise _node_error(tpl, n,
                              f"{case_id}: its answer depends on the ambiguity-catalogue entry {entry} "
                              "(a graph case is normative: choose values the spec decides)")


def _build(tpl: Template, env: dict[str, Any], opset: int, data: dict[str, Any]) -> GraphCase:
    values: dict[str, str] = {}
    arrays: dict[str, list[tuple[str, np.ndarray]]] = {"inputs": [], "params": [], "constants": []}
    for part in arrays:
        for name, src in data.get(part, {}).items():
            if name in values:
                raise tpl.error(f"{part}.{name}",
                                f"tensor {name!r} is also one of the template's {values[name]}")
            values[name] = part
            arrays[part].append((name, _array(tpl, f"{part}.{name}", src)))
    raw_nodes = data["nodes"]
    nodes = _nodes(tpl, raw_nodes, [line_of(n) or tpl.line("nodes") for n in tpl.data["nodes"]])
    for n in nodes:
        try:
            n.attrs = typed_attributes(n.op, n.domain, opset, n.attrs)
        except ValueError as e:
            raise _node_error(tpl, n, str(e)) from None
    outputs = [str(o) for o in data["outputs"]]
    _check_structure(tpl, nodes, values, outputs)
    case_id = _graph_case_id(tpl, env, opset)
    clauses = [Clause(c.get("operator", "?"), str(c.get("versions", "")), c["text"]) for c in data["spec"]]
    case = GraphCase(id=case_id, template=tpl.data["id"], file=tpl.file, line=tpl.line(),
                     description=data["description"], clauses=[*clauses, GRAPH_CLAUSE], family=data["family"],
                     opset=opset, nodes=nodes, inputs=arrays["inputs"], params=arrays["params"],
                     constants=arrays["constants"], output_names=outputs, expected=[], variant=dict(env),
                     tier=data.get("tier", "default"), source=data.get("source"))
    model = case.build(Form.INITIALIZER.value, outputs=[(o, np.zeros(0, np.float32)) for o in outputs])
    steps: list[Step] = []
    try:
        bounded = run_graph_bounded(model, case.feeds(Form.INITIALIZER.value), steps)
    except SpecViolation as e:
        bad = next((n for n in nodes if n.op == e.op and n.name not in {nodes[s.index].name for s in steps}),
                   nodes[0])
        if e.rule in _ABSENT:
            raise _Skip() from None
        raise _node_error(tpl, bad, f"{case_id}: the oracle refuses it: {e}") from None
    except GraphError as e:
        node = nodes[e.node] if e.node is not None else nodes[0]
        raise _node_error(tpl, node, f"{case_id}: {e}") from None
    case.expected = [iv.value for iv in bounded]
    case.bounds = [None if iv.is_exact() else (iv.low, iv.high) for iv in bounded]
    case.bounds = case.bounds if any(b is not None for b in case.bounds) else []
    case.interval_why = describe_bounds(nodes, outputs, bounded)
    case.ties = tie_ops(nodes, steps)
    case.exact_ops = [] if case.bounds else list(dict.fromkeys(n.op for n in nodes if n.op in COMPUTE_OPS))
    _is_normative(tpl, case_id, nodes, model, steps)
    if "expected" in data:
        _golden(tpl, case)
    return case


def _graph_case_id(tpl: Template, env: dict[str, Any], opset: int) -> str:
    """The id of the case of the template's placeholder values ``env`` at ``opset`` (CaseFileError when it is
    too long)."""
    parts = [f"graph-{tpl.data['id']}", *(_id_part(k, v, tpl.data["vary"]) for k, v in env.items()),
             f"o{opset}"]
    case_id = "-".join(p for p in parts if p)
    check_id(tpl, case_id)
    return case_id


def _id_part(key: str, v: Any, vary: dict[str, Any]) -> str:
    """A placeholder's value in a case id: a scalar as itself (``-`` as m, ``.`` as p), a mapping by its
    ``id`` key when it has one, another list or mapping by its position in the template's list (``x2``: the
    second value of X)."""
    if isinstance(v, dict) and isinstance(v.get("id"), (str, int)) and not isinstance(v.get("id"), bool):
        v = v["id"]
    elif isinstance(v, (list, dict)):
        return f"{key.lower()}{vary[key].index(v) + 1}"
    return re.sub(r"[^a-z0-9]+", "", str(v).lower().replace("-", "m").replace(".", "p"))


def _golden(tpl: Template, case: GraphCase) -> None:
    for name, got in zip(case.output_names, case.expected, strict=True):
        if name not in tpl.data["expected"]:
            continue
        try:
            golden = to_type(parse_literal(tpl.data["expected"][name]), _type_of(got)).reshape(got.shape)
        except ValueError as e:
            raise tpl.error("expected", f"{name}: {e}") from None
        k = case.output_names.index(name)
        bounds = case.bounds[k] if case.bounds else None
        mismatch = compare(got, golden, bounds=bounds) if bounds is not None else compare(golden, got)
        if mismatch:
            raise tpl.error("expected", f"{case.id}: golden {name} disagrees with the oracle's composition: "
                            f"{mismatch}; it gives {got.reshape(-1).tolist()}")


def _type_of(a: np.ndarray) -> Any:
    return by_dtype(a.dtype)


def _candidates(tpl: Template) -> Iterator[tuple[dict[str, Any], int]]:
    for env in _variants(tpl):
        for opset in tpl.data["opsets"]:
            yield env, opset


def expand_graph(tpl: Template, keep: Callable[[str], bool] | None = None) -> list[GraphCase]:
    """Every concrete case of one graph template (CaseFileError for a malformed or inconsistent one); with
    ``keep``, only the cases whose id it keeps are built (``expand.expand``)."""
    newest = onnx.defs.onnx_opset_version()
    for opset in tpl.data["opsets"]:
        if not MIN_OPSET <= opset <= newest:
            raise tpl.error("opsets",
                            f"opset {opset} outside [{MIN_OPSET}, {newest}] (graph cases use the ops' "
                            f"opset-{MIN_OPSET} forms; onnx {onnx.__version__} knows up to {newest})")
    cases = []
    left: list[tuple[dict[str, Any], int]] = []  # (the candidates ``keep`` leaves out)
    for env, opset in _candidates(tpl):
        if keep is not None and not keep(_graph_case_id(tpl, env, opset)):
            left.append((env, opset))
            continue
        try:
            cases.append(_build_one(tpl, env, opset))
        except _Skip:
            continue
    if not cases and not any(_builds(tpl, env, opset) for env, opset in left):
        raise tpl.error("opsets",
                        "the template expands to no case (a quantization node the spec allows at none "
                        "of its opsets?)")
    return cases


def _build_one(tpl: Template, env: dict[str, Any], opset: int) -> GraphCase:
    return _build(tpl, env, opset, _substitute({k: v for k, v in tpl.data.items() if k != "vary"}, env))


def _builds(tpl: Template, env: dict[str, Any], opset: int) -> bool:
    """Whether the candidate gives a case (whether the template expands to one at all)."""
    try:
        _build_one(tpl, env, opset)
    except _Skip:
        return False
    return True
