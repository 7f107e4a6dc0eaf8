"""Which part of a backend a failing graph case blames: its optimizer's rewrite, or a node.

The backend runs the same graph node by node: each node as a model of its own (the case's form: its parameters
initializers or graph inputs as in the graph), its inputs the backend's own outputs of the earlier nodes. When
that run gives the case's expected outputs (within the case's intervals, for an ``interval`` case), the whole
graph's run differed only because the backend rewrote the graph (``rewrite``); otherwise a node is wrong on
its own (``node``), and the first node whose outputs differ from the oracle's is named: each node's outputs
are compared with the oracle's for the same node on the same inputs (the backend's own earlier outputs),
within that node's interval for a compute op. A node the backend cannot be handed alone (unsupported there: an
element type an old release's API cannot feed, say) leaves the defect unattributed (None), with the reason.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx

from ..backends.base import Backend
from ..compare import compare
from ..generators.graph_case import GraphCase
from ..reference.graph_oracle import Interval, Step, run_graph, run_node
from .outputs import RawResult

REWRITE, NODE = "rewrite", "node"
#: the values of a record's ``defect``
DEFECTS: tuple[str, ...] = (REWRITE, NODE)


#: runs one model on a backend: ``call(backend, model, feeds)``
Call = Callable[[Backend, onnx.ModelProto, dict[str, np.ndarray]], RawResult]


def _oracle(case: GraphCase, form: str, step: Step, values: dict[str, np.ndarray]) -> dict[str, Interval]:
    """The oracle's outputs of ``step``'s node on the inputs the backend's node-by-node run gives it (its own
    earlier outputs); {} when the oracle cannot compute the node on them (the comparison then falls back to
    the oracle's own run)."""
    node = case.nodes[step.index]
    known = {**dict(case.constants), **dict(case.params), **values}
    try:
        args = [known.get(name) if name else None for name in node.inputs]
        out = run_node(case.model(form), step.node, args)
    except Exception:  # noqa: BLE001 - the backend's values may be anything: the oracle's own run stands
        return {}
    return {name: iv for name, iv in zip(node.outputs, out, strict=False) if name}


#: what a node run alone can end in that says nothing of the node: it was not run
_NOT_RUN = frozenset({"unsupported", "not-applicable", "harness-error"})


def attribute(case: GraphCase, form: str, backend: Backend, call: Call) -> tuple[str | None, str]:
    """(``rewrite``, ``node`` or None when no node-by-node run could be made, a sentence saying why) for
    graph case ``case`` that failed in ``form`` on ``backend``; ``call(backend, model, feeds)`` runs one model
    and gives a ``RawResult``."""
    oracle: list[Step] = []
    run_graph(case.model(form), case.feeds(form), oracle)
    values: dict[str, np.ndarray] = dict(case.feeds(form))
    first_wrong = None
    produced = {o for n in case.nodes for o in n.outputs}
    for step in oracle:
        node = case.nodes[step.index]
        extra = [(name, values[name]) for name in node.inputs if name in produced]
        outs = [(name, out) for name, out in zip(node.outputs, step.outputs, strict=False) if name]
        model = case.build(form, nodes=[node], outputs=outs, extra_inputs=extra)
        feeds = {n: values[n] for n in (i.name for i in model.graph.input)}
        raw = call(backend, model, feeds)
        if raw.kind != "ok" or raw.outputs is None or len(raw.outputs) < len(outs):
            said = (raw.message or raw.kind).splitlines()[0][:200] if raw.message else raw.kind
            if raw.kind in _NOT_RUN:
                return None, (f"not attributed: node {node.name} ({node.op}) cannot be run alone "
                              f"({raw.kind}: {said})")
            return NODE, f"node by node, node {node.name} ({node.op}) does not run alone: {said}"
        oracle_here = _oracle(case, form, step, values)
        for (name, want), got in zip(outs, raw.outputs, strict=False):
            values[name] = np.asarray(got)
            iv = oracle_here.get(name)
            bounds = None if iv is None or iv.is_exact() else (iv.low, iv.high)
            if iv is not None:
                want = iv.value
            if first_wrong is None and compare(want, np.asarray(got), bounds=bounds) is not None:
                first_wrong = node
    final = [values.get(o) for o in case.output_names]
    every = case.output_bounds() or []
    # (the whole graph's outputs under the verdict's rule, the case's ULP bound and intervals included)
    if all(v is not None and compare(e, v, case.ulp, every[k] if k < len(every) else None) is None
           for k, (e, v) in enumerate(zip(case.expected, final, strict=True))):
        return REWRITE, ("node by node the backend gives the expected outputs: its run of the whole graph "
                         "(a rewrite of it) changes them")
    where = f"node {first_wrong.name} ({first_wrong.op}) differs from the oracle first" if first_wrong else \
        "the outputs differ"
    return NODE, f"node by node the backend's outputs differ too: {where}"
