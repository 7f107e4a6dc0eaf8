"""A fuzzed case as plain data, and the corpus's own case built from it.

A :class:`Description` holds everything a case needs as literals (operator version, types, zero-point mode,
granularity, shapes, attributes, values). :func:`template` writes it as a case-file template (the dict a YAML
case file holds, with literal ``values``), and :func:`build` expands that template with the corpus's own code
(``generators.expand``): the oracle's outputs, the readings classifier and the status decision are exactly
those of a case file, and a finding written back as YAML is the same case.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..domain import PER_TENSOR_1D, CaseStatus, JSONValue
from ..generators.case import ConcreteCase
from ..generators.expand import expand
from ..generators.file_schemas import validate
from ..generators.loader import CaseFileError
from ..generators.template import Template
from ..generators.values import literal, literals
from ..opspecs import BLOCKED, PER_AXIS

#: A general clause per operator kind, for the template's ``spec`` (the finding's description says what
#: broke).
CLAUSES = {
    "Q": "The linear quantization operator: y = saturate((x / y_scale) + y_zero_point), rounding to nearest "
         "even; per-tensor, per-axis or blocked scale and zero point.",
    "DQ": "The linear dequantization operator: y = (x - x_zero_point) * x_scale; per-tensor, per-axis or "
          "blocked scale and zero point.",
    "DQL": "y_scale = (max(x) - min(x)) / (qmax - qmin), y_zero_point = cast(saturate(round(qmin - min(x) / "
           "y_scale))), y = saturate(round(x / y_scale) + y_zero_point), with 0 included in the range of x.",
}


def kind_of(op: str) -> str:
    return "DQL" if op == "DynamicQuantizeLinear" else "DQ" if "Dequantize" in op else "Q"


@dataclass(frozen=True)
class Description:
    domain: str
    op: str
    version: int
    types: tuple[str, ...]  # (x, scale, y); DynamicQuantizeLinear: (x, y)
    zero_point: str  # given | omitted | output_dtype
    granularity: str  # per-tensor | per-tensor-1d | per-axis | blocked
    x_shape: tuple[int, ...]
    scale_shape: tuple[int, ...] = ()
    axis: int | None = None  # None: the attribute is omitted (the default axis)
    block_size: int | None = None
    attributes: tuple[tuple[str, int], ...] = ()  # saturate, ...
    x: tuple[float, ...] = ()
    scale: tuple[float, ...] = ()
    zero_point_values: tuple[float, ...] | None = None

    @property
    def kind(self) -> str:
        return kind_of(self.op)

    @property
    def key(self) -> str:
        """A stable digest of everything the case holds (its template id and the run's cache key)."""
        data = asdict(self)
        text = json.dumps(data, sort_keys=True, default=str, allow_nan=True)
        return hashlib.sha256(text.encode()).hexdigest()[:10]

    @property
    def distinct_values(self) -> int:
        return len({literal(v) for v in self.x})


def declared_ambiguity(d: Description) -> str | None:
    """The catalogue entry a corpus case of this kind names (``ambiguity:``): the entries the kernel applies
    only to a case that declares them (``reference.readings``), so that a fuzzed case is
    implementation-defined exactly where the corpus's own cases are: a DynamicQuantizeLinear x with NaN or an
    infinity, or whose range overflows (dql-nan, as the corpus's nan, inf and huge-range cases), an empty one
    (dql-empty); a one-element 1-D scale at version 10 (v10-one-element-scale) and in com.microsoft without
    axis (ms-one-element-no-axis)."""
    if d.kind == "DQL":
        x = np.asarray(d.x, dtype=np.float32)
        if not x.size:
            return "dql-empty"
        if not np.isfinite(x).all():
            return "dql-nan"
        with np.errstate(all="ignore"):
            span = np.float32(max(0.0, float(x.max()))) - np.float32(min(0.0, float(x.min())))
        return None if np.isfinite(span) else "dql-nan"
    if d.granularity == PER_TENSOR_1D:
        if d.domain == "ai.onnx" and d.version == 10:
            return "v10-one-element-scale"
        if d.domain == "com.microsoft":
            return "ms-one-element-no-axis"
    return None


def template(d: Description, template_id: str | None = None,
             description: str | None = None) -> dict[str, JSONValue]:
    """The case-file template (plain data, valid against cases/case.schema.json) of ``d``."""
    kind = d.kind
    tid = template_id or f"fuzz-{d.key}"
    data: dict[str, Any] = {
        "id": tid,
        "description": description or f"A fuzzed {d.op}-{d.version} case (qdq-conformance fuzz).",
        "spec": {"operator": d.op, "versions": str(d.version), "text": CLAUSES[kind]},
        "operator": d.op, "domain": d.domain, "versions": [d.version], "family": "random",
        "status": CaseStatus.NORMATIVE.value,
    }
    ambiguity = declared_ambiguity(d)
    if ambiguity:
        data["status"], data["ambiguity"] = CaseStatus.IMPLEMENTATION_DEFINED.value, ambiguity
    if kind == "DQL":
        data["types"] = {"x": d.types[0], "y": d.types[1]}
    else:
        data["types"] = {"x": d.types[0], "scale": d.types[1], "y": d.types[2]}
        data["zero_point"] = d.zero_point
    rank = len(d.x_shape)
    g: dict[str, Any] = {"kind": d.granularity}
    if d.granularity in (PER_AXIS, BLOCKED):
        g["ranks"] = [rank]
        if d.axis is None:
            g["axis_attribute"] = "omitted"
        else:
            g["axes"] = [d.axis % rank]
            g["axis_attribute"] = "negative" if d.axis < 0 else "positive"
        if d.granularity == BLOCKED:
            g["blocks"] = ["low"]
    else:
        data["shape"] = list(d.x_shape)
    data["granularity"] = g
    attrs = dict(d.attributes)
    if d.block_size is not None:
        attrs["block_size"] = d.block_size
    if attrs:
        data["attributes"] = dict(sorted(attrs.items()))
    inputs: dict[str, Any] = {"x": {"values": literals(d.x), "shape": list(d.x_shape)}}
    if kind != "DQL":
        inputs["scale"] = {"values": literals(d.scale), "shape": list(d.scale_shape)}
        if d.zero_point == "given" and d.zero_point_values is not None:
            inputs["zero_point"] = {"values": literals(d.zero_point_values), "shape": list(d.scale_shape)}
    data["inputs"] = inputs
    return data


class NotACase(Exception):
    """The description is no valid case (the oracle or the case builder refuses it): Hypothesis rejects it."""


def build(d: Description, file: str = "<fuzz>", data: dict[str, JSONValue] | None = None) -> ConcreteCase:
    """The corpus's ConcreteCase for ``d`` (raises NotACase when the corpus's own code refuses the
    template)."""
    data = data if data is not None else template(d)
    try:
        validate({"cases": [data]}, file)
        cases = expand(Template(data, file))
    except CaseFileError as e:
        raise NotACase(str(e)) from None
    if len(cases) != 1:
        raise NotACase(f"the template expands to {len(cases)} cases, not one")
    return cases[0]


def size(d: Description) -> int:
    return int(np.prod(d.x_shape)) if d.x_shape else 1
