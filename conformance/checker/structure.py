"""The structural rules on one node (QDQ002-QDQ011, QDQ013): every problem, each blamed on the input that is
wrong.

The reference kernel's plans (:data:`conformance.reference.ops.PLANS`) stop at the first problem. To report
every one, the node is planned again after each problem with the part at fault set right (a type the version
does not allow replaced by one it does, a rejected attribute left out), until the plan goes through or only a
granularity problem is left. Shapes are then judged apart from types: the scale against x first, with the zero
point given the scale's shape, then the zero point against the scale. When the scale does not fit x but the
zero point's shape does, the scale is the input blamed (QDQ005), not the zero point (QDQ006).

An input whose type or shape is not known (onnx shape inference failed, or the graph does not say) gets a
stand-in that fits, so the rest of the node is still checked; nothing is reported about a stand-in, and a note
(QDQ020) says what was not checked. Stand-in arrays are zero-strided views: no memory is taken whatever the
shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from onnx import TensorProto

from ..errors import SpecViolation
from ..opspecs import OpSpec
from ..reference import granularity as gran
from ..reference.ops import PLANS, Plan, check_attributes
from ..rules import RULES
from ..types import TYPES, ElementType, by_proto
from .standins import Shape, fill, known, stand_in
from .tensor_facts import Facts, Site
from .tensors import MAX_ELEMENTS

#: Rules about the scale's and zero point's shapes against x and the attributes.
GRANULARITY_RULES = frozenset({"QDQ005", "QDQ006", "QDQ007", "QDQ008"})
#: Attributes the granularity depends on.
GRANULARITY_ATTRS = ("axis", "block_size")
T = TypeVar("T")


@dataclass(frozen=True)
class Finding:
    rule: str
    message: str
    input: str | None = None

    @property
    def severity(self) -> str:
        return RULES[self.rule].severity


@dataclass
class Outcome:
    """The plan (None when even a repaired node cannot be planned), the findings, and whether the plan's
    output types are the node's own (no input type or attribute behind them was replaced or made up)."""

    plan: Plan | None = None
    findings: list[Finding] = field(default_factory=list)
    outputs_trusted: bool = True


def type_name(elem: int) -> str:
    try:
        return by_proto(elem).name
    except KeyError:
        return TensorProto.DataType.Name(elem).lower() if elem in TensorProto.DataType.values() else str(elem)


def _partner_type(spec: OpSpec, k: int, types: list[ElementType | None]) -> ElementType:
    """A type input ``k`` may take: the one another input sharing its type parameter has, else the first its
    parameter allows."""
    param = spec.inputs[k].param
    allowed = spec.allowed(param)
    for j, formal in enumerate(spec.inputs):
        t = types[j] if j < len(types) else None
        if j != k and formal.param == param and t is not None and t.name in allowed:
            return t
    return TYPES[allowed[0]]


def _attempt(step: Callable[[], T]) -> tuple[T | None, SpecViolation | None]:
    try:
        return step(), None
    except SpecViolation as e:
        return None, e


def _is_granularity(e: SpecViolation) -> bool:
    return e.rule in GRANULARITY_RULES or (e.input in GRANULARITY_ATTRS and e.rule in ("QDQ009", "QDQ010"))


class _Node:
    """One node's inputs as the checker knows them, and the stand-ins it plans with."""

    def __init__(self, spec: OpSpec, site: Site, attrs: dict[str, int], bad_attrs: set[str]) -> None:
        self.spec = spec
        self.site = site
        self.attrs = attrs
        self.bad_attrs = bad_attrs
        self.findings: list[Finding] = []
        self.names: list[str] = []
        self.facts: list[Facts | None] = []
        self.types: list[ElementType | None] = []
        self.made_up: set[str] = set()  # formal names whose type is a stand-in's
        self.unknown_type: list[str] = []

    def add(self, rule: str, message: str, input_name: str | None = None) -> None:
        self.findings.append(Finding(rule, message, input_name))

    # --- what is known about each input ---------------------------------------------------------------------

    def read_inputs(self) -> bool:
        """Facts and types of every formal input; False when the node cannot be mapped onto the formals."""
        spec, site = self.spec, self.site
        names = list(site.node.input)
        while names and not names[-1]:
            names.pop()
        if len(names) > len(spec.inputs):
            self.add("QDQ011", f"{len(names)} inputs given, at most {len(spec.inputs)} allowed")
            return False
        self.names = names + [""] * (len(spec.inputs) - len(names))
        for formal, name in zip(spec.inputs, self.names, strict=True):
            f = site.scope.get(name) if name else None
            if not name and not formal.optional:
                self.add("QDQ011", "required input is missing", formal.name)
                self.made_up.add(formal.name)
            elif name and f is None and not site.scope.is_defined(name):
                self.add("QDQ011",
                         f"{formal.name} ({name!r}) is not defined: no initializer, graph input, node "
                                   "output or enclosing graph has that name", formal.name)
                self.made_up.add(formal.name)
            elif name and (f is None or f.elem is None):
                self.unknown_type.append(formal.name)
                self.made_up.add(formal.name)
            self.facts.append(f if name else None)
            self.types.append(self._known_type(formal.name, formal.param, f))
        for k, formal in enumerate(spec.inputs):
            if formal.name in self.made_up and (self.names[k] or not formal.optional):
                self.types[k] = _partner_type(spec, k, self.types)
        if self.unknown_type:
            formals = [f.name for f in spec.inputs]
            listed = ", ".join(f"{n} ({self.names[formals.index(n)]!r})" for n in self.unknown_type)
            no_shape = all(self.facts[formals.index(n)] is None for n in self.unknown_type)
            what = "type and shape" if no_shape else "type"
            self.add("QDQ020", f"the {what} of {listed} could not be determined; the rules on "
                               f"{'it' if len(self.unknown_type) == 1 else 'them'} were not checked, the "
                               "others were", self.unknown_type[0])
        return True

    def _known_type(self, formal: str, param: str, f: Facts | None) -> ElementType | None:
        if f is None or f.elem is None:
            return None
        try:
            return by_proto(f.elem)
        except KeyError:
            self.add("QDQ002", f"type {type_name(f.elem)} is not allowed (allowed: "
                               f"{', '.join(self.spec.allowed(param))})", formal)
            self.made_up.add(formal)
            return None

    # --- shapes ---------------------------------------------------------------------------------------------

    def shapes(self) -> tuple[list[Shape], bool]:
        """The stand-ins' shapes (the zero point given the scale's), and whether the granularity can be
        judged."""
        spec = self.spec
        count = len(spec.inputs)
        flat: list[Shape] = [()] * count
        if spec.name == "DynamicQuantizeLinear" or count < 2:
            return flat, False
        x_f, s_f = self.facts[0], self.facts[1]
        scale = known(s_f.shape) if s_f is not None else None
        unknown = [spec.inputs[k].name for k, f in enumerate(self.facts[:3]) if f is not None and k > 0 and
                   known(f.shape) is None]
        if scale is None:
            if unknown:
                self.add("QDQ020",
                         f"the shape of {', '.join(unknown)} could not be determined; granularity, axis "
                                   "and block_size were not checked", unknown[0])
            return flat, False
        x_shape = x_f.shape if x_f is not None else None
        made = fill(x_shape, scale, self.attrs)
        if made is None:
            self.add("QDQ020",
                     f"the rank of x could not be determined and axis {self.attrs.get('axis')} is beyond "
                               "any plausible one; granularity, axis and block_size were not checked",
                     spec.inputs[0].name)
            return flat, False
        filled, note = made
        if x_shape is None and x_f is not None:
            self.add("QDQ020",
                     "the shape of x could not be determined; the scale's and zero point's shapes were "
                               "checked against the attributes and each other, not against x",
                     spec.inputs[0].name)
        elif note:
            self.add("QDQ020", note, "block_size")
        if unknown:
            self.add("QDQ020",
                     f"the shape of {', '.join(unknown)} could not be determined; it was not compared "
                               "with the scale's", unknown[0])
        for name, shape in ((spec.inputs[0].name, filled), (spec.inputs[1].name, scale)):
            if math.prod(shape) > MAX_ELEMENTS:
                self.add("QDQ020",
                         f"the shape of {name} {list(shape)} is too large to check; granularity, axis "
                                   "and block_size were not checked", name)
                return flat, False
        flat[0], flat[1] = filled, scale
        if count > 2:
            flat[2] = scale
        return flat, True

    def zero_point_shape(self) -> Shape | None:
        """The zero point's shape when it is known and differs from the scale's (a scalar and a one-element
        tensor read alike: ambiguity catalogue scalar-one-element-shapes)."""
        if len(self.spec.inputs) < 3 or self.facts[2] is None or self.facts[1] is None:
            return None
        z, s = known(self.facts[2].shape), known(self.facts[1].shape)
        if z is None or s is None or z == s or (math.prod(z) == 1 >= len(z) and math.prod(s) == 1 >= len(s)):
            return None
        return z

    # --- planning -------------------------------------------------------------------------------------------

    def arrays(self, shapes: list[Shape]) -> list[np.ndarray | None]:
        return [None if t is None or (not name and self.spec.inputs[k].optional) else stand_in(t, shapes[k])
                for k, (t, name) in enumerate(zip(self.types, self.names, strict=True))]

    def plan(self, shapes: list[Shape], attrs: dict[str, int]) -> Plan:
        return PLANS[(self.spec.domain, self.spec.name)](self.spec, self.arrays(shapes), attrs)

    def repair(self, e: SpecViolation, attrs: dict[str, int]) -> bool:
        """Set right what ``e`` is about; False when that cannot be done."""
        formals = [f.name for f in self.spec.inputs]
        if e.input in formals and e.rule in ("QDQ002", "QDQ003"):
            k = formals.index(e.input)
            fixed = _partner_type(self.spec, k, self.types)
            if self.types[k] is fixed:
                return False
            self.types[k] = fixed
            return True
        if e.input is not None and e.input in attrs:
            del attrs[e.input]
            return True
        if e.rule == "QDQ013" and "output_dtype" in self.spec.attributes and "output_dtype" not in attrs:
            attrs["output_dtype"] = TYPES[self.spec.allowed(self.spec.outputs[0].param)[0]].proto
            return True
        return False


def check(spec: OpSpec, site: Site, attrs: dict[str, int], bad_attrs: set[str]) -> Outcome:
    """Every structural rule on one node. ``attrs``: its int attributes; ``bad_attrs``: attributes already
    reported (a wrong attribute type) or not known (a function's attribute reference), left out of the
    plan."""
    node = _Node(spec, site, dict(attrs), bad_attrs)
    if not node.read_inputs():
        return Outcome(None, node.findings, False)
    _attribute_rules(node)
    shapes, judged = node.shapes()
    plan_attrs = dict(node.attrs)
    if not judged or bad_attrs & set(GRANULARITY_ATTRS):
        for a in GRANULARITY_ATTRS:
            plan_attrs.pop(a, None)
        shapes = [()] * len(shapes)
    trusted = not ({f.name for f in spec.inputs[1:]} & node.made_up)
    plan, failed = None, None
    for _ in range(2 * len(spec.inputs) + len(plan_attrs) + 2):
        plan, problem = _attempt(lambda: node.plan(shapes, plan_attrs))
        if problem is None:
            break
        if _is_granularity(problem):
            failed = problem
            break
        if problem.input not in node.made_up:
            node.add(problem.rule, problem.detail, problem.input)
        trusted = False
        if not node.repair(problem, plan_attrs):
            return Outcome(None, node.findings, False)
    if judged and not bad_attrs & set(GRANULARITY_ATTRS):
        plan = _granularity(node, shapes, plan_attrs, failed) or plan
    else:
        _granularity_unjudged(node, shapes, plan_attrs, judged)
    if plan is None:
        # the output types do not depend on the granularity: plan again per tensor for the later rules
        flat_attrs = {k: v for k, v in plan_attrs.items() if k not in GRANULARITY_ATTRS}
        plan, _ = _attempt(lambda: node.plan([()] * len(shapes), flat_attrs))
    return Outcome(plan, node.findings, trusted and plan is not None)


def _attribute_rules(node: _Node) -> None:
    """The rules on each attribute alone; an attribute that breaks one is reported and left out of the
    plan."""
    for name in list(node.attrs):
        try:
            check_attributes(node.spec, {name: node.attrs[name]})
        except SpecViolation as e:
            node.add(e.rule, e.detail, e.input)
            del node.attrs[name]


def _granularity_unjudged(node: _Node, shapes: list[Shape], plan_attrs: dict[str, int],
                          judged: bool) -> None:
    """The granularity rules that still hold when the granularity itself cannot be judged (unknown shapes, or
    an attribute already reported): the zero point's shape against the scale's, and a negative block_size."""
    spec = node.spec
    if judged and node.zero_point_shape() is not None:
        _zero_point_differs(node, shapes, plan_attrs)
    if node.attrs.get("block_size", 0) < 0:  # a rule on the attribute alone: judged whatever the shapes
        _, negative = _attempt(lambda: gran.resolve(spec, (), (), None, node.attrs, spec.inputs[1].name))
        if negative is not None:
            node.add(negative.rule, negative.detail, negative.input)


def _zero_point_differs(node: _Node, shapes: list[Shape], attrs: dict[str, int]) -> None:
    """QDQ006, in the kernel's words."""
    z = node.zero_point_shape()
    assert z is not None
    merged = check_attributes(node.spec, {k: v for k, v in attrs.items() if k not in GRANULARITY_ATTRS})
    try:
        gran.resolve(node.spec, shapes[0], shapes[1], z, merged, node.spec.inputs[1].name)
    except SpecViolation as e:
        if e.rule == "QDQ006":
            node.add(e.rule, e.detail, e.input)
            return
    node.add("QDQ006", f"zero point shape {list(z)} differs from scale shape {list(shapes[1])}",
             node.spec.inputs[2].name)


def _granularity(node: _Node, shapes: list[Shape], attrs: dict[str, int],
                 failed: SpecViolation | None) -> Plan | None:
    """The scale against x (``failed``: what the plan said, the zero point given the scale's shape), then the
    zero point against the scale, or the scale blamed when only the zero point's shape fits x (then the plan
    made with the zero point's shape is returned)."""
    z = node.zero_point_shape()
    if failed is None:
        if z is not None:
            _zero_point_differs(node, shapes, attrs)
        return None
    if z is not None and failed.rule in ("QDQ005", "QDQ008"):
        trial = [shapes[0], z, z]
        plan, z_failed = _attempt(lambda: node.plan(trial, attrs))
        if z_failed is None:
            scale_name = node.spec.inputs[1].name
            node.add("QDQ005",
                     f"{failed.detail}; the zero point's shape {list(z)} fits x {list(shapes[0])}, so the "
                               f"scale's shape {list(shapes[1])} is the one that is wrong", scale_name)
            return plan  # (the output types do not depend on the shapes)
    node.add(failed.rule, failed.detail, failed.input)
    if z is not None:
        _zero_point_differs(node, shapes, attrs)
    return None
