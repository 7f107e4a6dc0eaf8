"""The case-file templates of one node configuration: the corpus's own schema, recipes and status rules.

Each configuration gets one template per value recipe that applies to its kind of node (the corpus's
boundary-derived recipes placed through the node's own scale and zero point: ties, range edges and specials
for QuantizeLinear; the output type's critical codes, every code and the scale-rounding codes for
DequantizeLinear; seeded values for DynamicQuantizeLinear), all with the node's operator version, types, zero
point, granularity, attributes and concrete shapes (:mod:`.shapes`). Status: normative, which the corpus's
status policy turns into implementation-defined where a catalogued reading changes the answer; a validity
question the node raises is named as the corpus's files name it (``status.declared_entry``); an invalid node
is an invalid case naming the rule the kernel refuses it by.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from qdq_conformance.domain import CaseStatus, SourceText
from qdq_conformance.types import TYPES

from ..status import declared_entry
from ..values import literals
from .clauses import clause, rule_clause
from .node_configs import NodeConfig, NodeRef
from .shapes import Concrete

#: nodes a case's ``source`` lists (the rest are counted: ``more_nodes``; all of them are in the accounting)
LISTED = 20

#: per kind of node: (template suffix, family, x's value source, what it is, in words)
RECIPES: dict[str, tuple[tuple[str, str, dict[str, Any], str], ...]] = {
    "Q": (("ties", "boundary-ties", {"recipe": "boundary-ties"},
           "ties of the target type, one ULP either side"),
          ("range", "boundary-range", {"recipe": "boundary-range"},
           "the target's bounds, one past them and the overflow thresholds"),
          ("specials", "boundary-specials", {"recipe": "boundary-specials"},
           "infinities, NaN, the largest x and signed zeros among ties, on every position"),
          ("random", "random", {"random": {"seed": 1, "span": 1.2}},
           "seeded values over the target's range")),
    "DQ": (("codes", "boundary-dq", {"recipe": "boundary-dq-codes"},
            "the codes critical for the output type"),
           ("all-codes", "all-codes", {"recipe": "all-codes"}, "every code of x"),
           ("scale-rounding", "boundary-dq", {"recipe": "boundary-dq-scale-rounding"},
            "codes where rounding the scale to the output type first changes the product")),
    "DQL": (("mixed", "dynamic", {"random": {"seed": 1, "low": -2.5, "high": 6.5}},
             "seeded values of both signs"),
            ("positive", "dynamic", {"recipe": "positive"}, "positive values only")),
}
_INT32_CODES = ("extremes", "int32-extremes", {"recipe": "int32-extremes"}, "int32's extremes and neighbours")


def config_id(cfg: NodeConfig) -> str:
    """A stable id of the configuration (the templates' ids start with it)."""
    return "m" + hashlib.sha1(repr(cfg.key()).encode()).hexdigest()[:8]


def config_text(cfg: NodeConfig) -> str:
    """The configuration in words: ``DequantizeLinear-21 uint4 -> float, blocked (axis 0 of rank 2, block_size
    32), zero point given``."""
    s = cfg.spec
    name = s.name if s.domain == "ai.onnx" else f"{s.domain} {s.name}"
    types = f"{cfg.x} -> {cfg.y}" + (f" (scale {cfg.scale})" if cfg.scale and cfg.scale not in (cfg.x, cfg.y)
                                     else "")
    gran = cfg.granularity
    if gran in ("per-axis", "blocked"):
        written = "axis not written" if cfg.axis is None else f"axis written {cfg.axis}"
        gran += f" (axis {cfg.axis_norm()} of rank {cfg.rank}, {written}"
        gran += f", block_size {cfg.block_size})" if gran.startswith("blocked") else ")"
    others = ", ".join(f"{k}={v}" for k, v in sorted(cfg.attrs.items()) if k not in ("axis", "block_size"))
    zp = {"given": "zero point given", "omitted": "no zero point",
          "output_dtype": "no zero point (output_dtype)"}
    zero = cfg.zero_point_values is not None and bool((cfg.zero_point_values == 0).all())
    negative = cfg.scale_values is not None and bool((cfg.scale_values < 0).any())
    text = (f"{name}-{s.version} {types}, {gran}, {zp[cfg.zero_point]}{' (all 0)' if zero else ''}"
            + (", negative scales" if negative else "") + (f", {others}" if others else ""))
    return text + (f"; invalid: {cfg.rule}" if cfg.rule else "")


def source(refs: list[NodeRef], notes: list[str]) -> SourceText:
    out: SourceText = {"kind": "model", "models": sorted({r.model for r in refs}),
                       "nodes": [r.text() for r in refs[:LISTED]]}
    if len(refs) > LISTED:
        out["more_nodes"] = len(refs) - LISTED
    if notes:
        out["concrete"] = "; ".join(notes)
    return out


def _values(a: np.ndarray, type_name: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"values": literals(a.reshape(-1)), "shape": list(a.shape)}
    if type_name is not None:
        out["type"] = type_name
    return out


def _granularity(cfg: NodeConfig) -> dict[str, Any]:
    g: dict[str, Any] = {"kind": cfg.granularity}
    if cfg.granularity in ("per-axis", "blocked"):
        if cfg.axis is None:
            g["axis_attribute"] = "omitted"
        else:
            g["axes"] = [cfg.axis_norm()]
            g["axis_attribute"] = cfg.spelling()
        if cfg.granularity == "blocked":
            g["block_size"] = cfg.block_size
    return g


def _attributes(cfg: NodeConfig) -> dict[str, int]:
    gran = ("axis", "block_size") if cfg.granularity in ("per-axis", "blocked") and cfg.rule is None else ()
    return {k: v for k, v in sorted(cfg.attrs.items()) if k not in gran}


def _common(cfg: NodeConfig, c: Concrete, refs: list[NodeRef]) -> dict[str, Any]:
    s = cfg.spec
    data: dict[str, Any] = {"operator": s.name, "domain": s.domain, "versions": [s.version]}
    if cfg.kind == "DQL":
        data["types"] = {"x": cfg.x, "y": cfg.y}
    else:
        data["types"] = {"x": cfg.x, "scale": cfg.scale, "y": cfg.y}
        data["zero_point"] = cfg.zero_point
    data["shape"] = list(c.x_shape)
    if cfg.kind != "DQL":
        data["granularity"] = _granularity(cfg)
    attrs = _attributes(cfg)
    if attrs:
        data["attributes"] = attrs
    return data


def _inputs(cfg: NodeConfig, c: Concrete, x: dict[str, Any]) -> dict[str, Any]:
    inputs: dict[str, Any] = {"x": dict(x)}
    if c.scale is not None:
        inputs["scale"] = _values(c.scale)
    if c.zero_point is not None:
        inputs["zero_point"] = _values(c.zero_point, cfg.zero_point_type if cfg.rule else None)
    return inputs


def templates(cfg: NodeConfig, c: Concrete, refs: list[NodeRef]) -> list[dict[str, object]]:
    """The templates of one configuration (``cfg`` its first node, ``refs`` every node that has it)."""
    cid = config_id(cfg)
    src = source(refs, [*cfg.notes, *c.notes])
    used = (f"{len(refs)} nodes of {', '.join(src['models'])} use it" if len(refs) > 1
            else f"1 node of {src['models'][0]} uses it")
    if cfg.rule is not None:
        s = cfg.spec
        data = {"id": f"{cid}-invalid",
                "description": f"{config_text(cfg)}, as {used}: {cfg.problem}",
                "spec": rule_clause(s.domain, s.name, s.version, cfg.rule), **_common(cfg, c, refs),
                "family": "invalid", "status": CaseStatus.INVALID.value, "rule": cfg.rule}
        data["types"] = {"literal": True, **data["types"]}
        data["inputs"] = _inputs(cfg, c, {"random": {"seed": 1}})
        data.pop("granularity", None)
        data["source"] = src
        return [_ordered(data)]
    entry = declared_entry(cfg.spec.domain, cfg.spec.name, cfg.spec.version, c.x_shape,
                           None if c.scale is None else c.scale.shape,
                           None if c.zero_point is None else c.zero_point.shape, cfg.attrs)
    out = []
    recipes = RECIPES[cfg.kind]
    if cfg.kind == "DQ" and TYPES[cfg.x].bits > 16:
        recipes = (recipes[0], _INT32_CODES)
    for suffix, family, x, what in recipes:
        s = cfg.spec
        clause_family = "int32-extremes" if family == "all-codes" and TYPES[cfg.x].bits > 16 else family
        data = {"id": f"{cid}-{suffix}", "description": f"{config_text(cfg)}, as {used}; x: {what}.",
                "spec": clause(s.domain, s.name, s.version, cfg.kind, clause_family, cfg.granularity),
                **_common(cfg, c, refs), "family": family, "status": CaseStatus.NORMATIVE.value,
                "inputs": _inputs(cfg, c, x), "source": src}
        if entry is not None:
            data["status"], data["ambiguity"] = CaseStatus.IMPLEMENTATION_DEFINED.value, entry
        out.append(_ordered(data))
    return out


#: the order of a template's keys in the file (as the corpus's files write them)
_ORDER = ("id", "description", "spec", "operator", "domain", "versions", "family", "status", "ambiguity",
          "rule", "types", "zero_point", "shape", "granularity", "attributes", "inputs", "source")


def _ordered(data: dict[str, Any]) -> dict[str, object]:
    return {k: data[k] for k in _ORDER if k in data}
