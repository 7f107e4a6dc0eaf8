"""A concrete case: one operator version, one type combination, concrete inputs and the oracle's outputs."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import onnx
from onnx import TensorProto

from qdq_conformance import opspecs
from qdq_conformance.ambiguities import Reading
from qdq_conformance.compare import rule_text
from qdq_conformance.domain import FORMS, CaseMetadata, CaseStatus, Form, SourceText, SpecText
from qdq_conformance.modelbuild import single_node_model
from qdq_conformance.types import by_dtype, by_proto

from .labels import labels


@dataclass
class Clause:
    operator: str
    versions: str
    text: str


class TemplateSource(TypedDict):
    file: str  # the case file's name
    line: int
    template: str  # the template's id


class TemplateMetadata(TypedDict):
    """What every case of a template shares (a suite manifest's ``templates``)."""

    description: str
    spec: SpecText
    source: TemplateSource


class FromTemplate:
    """What a case made from a template of a case file says of its source, for single-node and graph cases
    alike: the template's key, what its cases share, and the case's own metadata (computed once)."""

    file: str
    template: str
    line: int
    description: str
    #: a case generated from a model's nodes: the models and nodes behind it (the template's ``source``)
    source: SourceText | None

    def spec_text(self) -> SpecText:
        raise NotImplementedError

    def _metadata(self) -> CaseMetadata:
        raise NotImplementedError

    def template_key(self) -> str:
        return f"{os.path.basename(self.file)}#{self.template}"

    def template_metadata(self) -> TemplateMetadata:
        """What every case of the template shares: description, the spec clause, where it is defined."""
        return {"description": self.description,
                "spec": self.spec_text(),
                "source": {"file": Path(self.file).name, "line": self.line, "template": self.template}}

    def output_bounds(self) -> list[tuple[np.ndarray, np.ndarray] | None] | None:
        """Per output, the interval of acceptable values (None: exact), or None when the case compares every
        output exactly (or within its ULP bound): only a graph case around a compute op has intervals."""
        return None

    def metadata(self) -> CaseMetadata:
        """This case for non-Python consumers (JSON-ready); shared text lives under its template key."""
        cached = self.__dict__.get("_metadata")
        if cached is None:
            cached = self.__dict__["_metadata"] = self._metadata()
            if self.source:
                cached["source"] = self.source
        return cached


@dataclass
class ConcreteCase(FromTemplate):
    id: str
    template: str
    file: str
    line: int
    description: str
    clause: Clause
    domain: str
    op: str
    version: int
    family: str
    status: str  # a CaseStatus: normative | implementation-defined | invalid
    granularity: str
    inputs: list[tuple[str, np.ndarray | None]]  # formal input names, in order
    attrs: dict[str, int]
    output_names: list[str]
    output_types: list[int]
    expected: list[np.ndarray] | None  # None for an invalid case
    types: dict[str, str] = field(default_factory=dict)
    ambiguity: str | None = None
    #: implementation-defined: every catalogued reading's answer (the kernel's included), named
    readings: list[Reading] = field(default_factory=list)
    rule: str | None = None
    ulp: int = 0
    ulp_why: str | None = None
    tier: str = "default"
    #: granularity detail for coverage: rank, axis attribute, block variant, zero-point mode
    detail: dict[str, Any] = field(default_factory=dict)
    source: SourceText | None = None

    @property
    def comparison(self) -> str:
        return rule_text(self.ulp, must_reject=self.status == CaseStatus.INVALID)

    def model(self, form: str = Form.RUNTIME) -> onnx.ModelProto:
        """The single-node model; ``initializer`` makes every input but x an initializer (every input, x too,
        when x is the only one, as for DynamicQuantizeLinear), which lets a runtime constant-fold."""
        kept = self.__dict__.get("_model_bytes")
        if kept is not None and form in kept:
            return onnx.load_model_from_string(kept[form])  # a fresh message: callers may change it
        return self._build(form)

    def prepare(self) -> None:
        """Compute once what every run needs (metadata, both models, serialized), to keep with the case in the
        corpus cache: parsing a stored model is several times cheaper than building it."""
        self.metadata()
        self.__dict__["_model_bytes"] = {form: self._build(form).SerializeToString() for form in FORMS}

    def _build(self, form: str) -> onnx.ModelProto:
        if form not in FORMS:
            raise ValueError(f"unknown graph form {form!r}; known: {', '.join(FORMS)}")
        inits = self._initializer_names() if form == Form.INITIALIZER else []
        x_shape = list(self.inputs[0][1].shape) if self.inputs[0][1] is not None else None
        # y like x; DQL's y_scale, y_zero_point scalars
        shapes = [x_shape] + [[] for _ in self.output_names[1:]]
        outputs = [(n, t, s) for n, t, s in zip(self.output_names, self.output_types, shapes, strict=True)]
        return single_node_model(self.domain, self.op, self.version, self.inputs, outputs, self.attrs,
                                 initializers=inits, name=self.id, doc=f"onnx-qdq-conformance case {self.id}")

    def _initializer_names(self) -> list[str]:
        present = [n for n, v in self.inputs if v is not None]
        return present if len(present) == 1 else present[1:]

    def feeds(self, form: str = Form.RUNTIME) -> dict[str, np.ndarray]:
        skip = set(self._initializer_names()) if form == Form.INITIALIZER else set()
        return {n: v for n, v in self.inputs if v is not None and n not in skip}

    def x_labels(self, indices: list[tuple[int, ...]]) -> list[str] | None:
        """Which boundary x sits on at each multi-index (``tie 110.5, quotient inexact``), recomputed from the
        final inputs for the few elements a failure reports (generators/labels.py)."""
        return labels(self.domain, self.op, self.version, [a for _, a in self.inputs], self.attrs, indices)

    def spec_text(self) -> SpecText:
        """The spec clause the case checks."""
        return {"operator": self.clause.operator, "versions": self.clause.versions, "text": self.clause.text}

    def _metadata(self) -> CaseMetadata:
        spec = opspecs.get(self.domain, self.op, self.version)
        return {
            "id": self.id,
            "template": self.template_key(),
            "operator": self.op,
            "domain": self.domain,
            "version": self.version,
            "family": self.family,
            "granularity": self.granularity,
            "variant": dict(sorted(self.detail.items())),
            "status": self.status,
            "ambiguity": self.ambiguity,
            "readings": [r.key for r in self.readings],
            "rule": self.rule,
            "comparison": self.comparison,
            "ulp_why": self.ulp_why,
            "tier": self.tier,
            "attributes": dict(sorted(self.attrs.items())),
            "inputs": [
                {"name": n, "formal": f.name,
                 "element_type": by_dtype(v.dtype).name if v is not None else None,
                 "shape": list(v.shape) if v is not None else None}
                for (n, v), f in zip(self.inputs, spec.inputs, strict=False)
            ],
            "outputs": [
                {"name": n, "element_type": _type_name(t),
                 "shape": list(e.shape) if self.expected is not None and (e := self.expected[k]) is not None
                 else None}
                for k, (n, t) in enumerate(zip(self.output_names, self.output_types, strict=True))
            ],
        }


def _type_name(proto: int) -> str:
    try:
        return by_proto(proto).name
    except KeyError:
        return TensorProto.DataType.Name(proto).lower()
