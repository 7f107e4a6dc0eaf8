"""The vocabulary every stage shares: graph forms, shards, size tiers, a case's status, a run's status, and
the :class:`Case` protocol the runner and the plugin handle cases through.

This module is at the bottom of the import graph (it imports nothing of the package), next to the element
types (``types.py``) and the operator specs (``opspecs.py``). The enums are ``str`` enums: a member equals,
hashes and prints as its value, so records, YAML files and command-line options keep their plain strings
(``RunStatus.FAILED == "failed"``; ``json.dumps`` writes ``"failed"``).

Two vocabularies are both called "status" in files, and are two types here:

- :class:`CaseStatus`, what the corpus says of a case (``status:`` in a case file, ``case_status`` in a
  results record): normative, implementation-defined, invalid;
- :class:`RunStatus`, how a case ended on a backend (``status`` in a results record, and in an expectation
  entry): passed, failed, error, crashed, timeout, invalid-accepted, unsupported, implementation-defined, and
  harness-error (an exception in this tool's own code: never the backend's, never a finding).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import Enum
from typing import TYPE_CHECKING, Protocol, TypedDict, Union, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    import onnx

    from .ambiguities import Reading


class StrEnum(str, Enum):
    """A ``str`` enum that formats as its value (``enum.StrEnum`` from Python 3.11, here for 3.10 too)."""

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """Every member's value, in definition order."""
        return tuple(m.value for m in cls)


class Form(StrEnum):
    """How a case's single-node model is built: every input a graph input (``runtime``), or every input but x
    an initializer (``initializer``, which lets a runtime constant-fold)."""

    RUNTIME = "runtime"
    INITIALIZER = "initializer"


class GranularityKind(StrEnum):
    """The quantization granularities, which the scale's shape selects (QuantizeLinear 21: "There are three
    supported quantization granularities, determined by the shape of `y_scale`")."""

    PER_TENSOR = "per-tensor"
    PER_AXIS = "per-axis"
    BLOCKED = "blocked"


#: a case template's per-tensor variant with a one-element 1-D scale (per-tensor to the kernel; a case file's
#: and the fuzzer's granularity choice, not a granularity of the spec)
PER_TENSOR_1D = "per-tensor-1d"
#: the granularity kinds a case file (cases/case.schema.json) and ``qdq-conformance fuzz --granularity``
#: accept
TEMPLATE_GRANULARITIES: tuple[str, ...] = (GranularityKind.PER_TENSOR.value, PER_TENSOR_1D,
                                           GranularityKind.PER_AXIS.value, GranularityKind.BLOCKED.value)


#: every graph form, in the order runs and exports list them
FORMS: tuple[str, ...] = Form.values()
#: the ``--form`` choice that selects every form
BOTH = "both"


def forms_of(choice: str) -> tuple[str, ...]:
    """The forms a ``--form`` choice (``runtime``, ``initializer`` or ``both``) selects."""
    return FORMS if choice == BOTH else (choice,)


_SHARD = re.compile(r"([0-9]{1,6})/([0-9]{1,6})")


def parse_shard(value: str) -> tuple[int, int]:
    """A shard, ``"K/N"`` (``--shard``, and the ``shard`` field of a results header), as (K, N) with
    1 <= K <= N; ValueError with a one-line reason otherwise. (Which cases a shard holds:
    ``sharding.py``.)"""
    m = _SHARD.fullmatch(value.strip())
    if not m:
        raise ValueError(f"expected K/N (e.g. 1/3), got {value!r}")
    k, n = int(m.group(1)), int(m.group(2))
    if not 1 <= k <= n:
        raise ValueError(f"expected 1 <= K <= N, got {k}/{n}")
    return k, n


class Tier(StrEnum):
    """A case template's size tier (``tier:`` in a case file): ``large`` holds cases of a million elements and
    more, run only when asked for."""

    DEFAULT = "default"
    LARGE = "large"


#: the ``--tier`` choice that selects every tier
ALL_TIERS = "all"


def tiers_of(choice: str) -> tuple[str, ...]:
    """The tiers a ``--tier`` choice (``default``, ``large`` or ``all``) selects."""
    return Tier.values() if choice == ALL_TIERS else (choice,)


class CaseStatus(StrEnum):
    """What the corpus says of a case: the spec decides its answer (normative), the answer depends on an entry
    of the ambiguity catalogue (implementation-defined), or its model must be rejected (invalid)."""

    NORMATIVE = "normative"
    IMPLEMENTATION_DEFINED = "implementation-defined"
    INVALID = "invalid"


class RunStatus(StrEnum):
    """How a case ended on a backend (see ``runner/outcome.py`` for what each means)."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    INVALID_ACCEPTED = "invalid-accepted"
    UNSUPPORTED = "unsupported"
    IMPLEMENTATION_DEFINED = "implementation-defined"
    #: this tool's own code raised while running the case (``blame.harness_fault``): nothing is known of the
    #: backend; the run exits 3 saying the fault is the tool's
    HARNESS_ERROR = "harness-error"


# The collections below hold the plain values (a report's template or a YAML dump gets plain strings).
#: the run statuses that are failures (of the backend, or of the run when no expectation covers them), in the
#: order summaries list them
FAILING_ORDER: tuple[str, ...] = tuple(s.value for s in (RunStatus.FAILED, RunStatus.ERROR, RunStatus.CRASHED,
                                                           RunStatus.TIMEOUT, RunStatus.INVALID_ACCEPTED))
FAILING: frozenset[str] = frozenset(FAILING_ORDER)
#: run statuses in which the backend's answer was judged against the spec (a pass rate's denominator)
JUDGED: tuple[str, ...] = (RunStatus.PASSED.value, *FAILING_ORDER)
#: the statuses an expectation entry may record: the failing ones, and unsupported
EXPECTABLE: frozenset[str] = FAILING | {RunStatus.UNSUPPORTED.value}
#: the statuses that are this tool's fault, not the backend's: counted apart, never failing, judged, expected
#: or a finding; any of them makes a run exit 3
HARNESS: frozenset[str] = frozenset({RunStatus.HARNESS_ERROR.value})


#: A JSON value whose shape is left open (a case's variant, what a fuzz run adds to a results header).
JSONValue = Union[None, bool, int, float, str, list["JSONValue"], dict[str, "JSONValue"]]  # noqa: UP007


class ClauseText(TypedDict):
    """A spec clause a case checks: the operator, its versions the clause holds for, the sentence."""

    operator: str
    versions: str
    text: str


class SpecText(ClauseText, total=False):
    """What a case cites (``Case.spec_text``, a record's ``spec``): its clause, and a graph case's every
    clause."""

    clauses: list[ClauseText]


class SourceText(TypedDict, total=False):
    """Where a case generated from a model comes from (a case file's ``source``: ``qdq-conformance cases
    --from-model``): the models, the quantization nodes its configuration stands for (``MODEL: node K
    'NAME'``; ``more_nodes`` not listed), and what was made concrete or sliced."""

    kind: str  # "model"
    models: list[str]
    nodes: list[str]
    more_nodes: int
    concrete: str


class InputMetadata(TypedDict):
    """One input of a case: its name in the model, the operator's formal input, element type and shape (None:
    an optional input left out)."""

    name: str
    formal: str
    element_type: str | None
    shape: list[int] | None


class OutputMetadata(TypedDict):
    name: str
    element_type: str
    shape: list[int] | None


class NodeMetadata(TypedDict):
    """One node of a graph case."""

    op: str
    domain: str
    name: str
    inputs: list[str]
    outputs: list[str]


class GraphMetadata(TypedDict):
    nodes: list[NodeMetadata]
    operators: list[str]  # the distinct ops, in node order


class CaseMetadata(TypedDict, total=False):
    """A case for non-Python consumers (``Case.metadata``; JSON-ready): what a record copies its fields from
    and a suite's manifest lists for each case."""

    id: str
    template: str  # the template's key, "file#id"
    operator: str  # "graph" for a graph case
    domain: str
    version: int  # the operator's version; a graph case's opset
    family: str
    granularity: str
    variant: dict[str, JSONValue]
    status: str  # a CaseStatus value
    ambiguity: str | None
    readings: list[str]  # the catalogued readings ("entry:reading")
    rule: str | None
    comparison: str  # exact, ulp<=N, interval, must-reject
    ulp_why: str | None
    interval_why: str | None  # a graph case judged by an interval: why
    tier: str
    attributes: dict[str, int]
    graph: GraphMetadata  # (a graph case)
    source: SourceText  # (a case generated from a model's nodes)
    inputs: list[InputMetadata]
    outputs: list[OutputMetadata]


@runtime_checkable
class Case(Protocol):
    """One case as the runner, the plugin and the results records see it: a corpus case
    (``generators.case.ConcreteCase``) or an exported suite's (``runner.suite.SuiteCase``).

    ``status`` is a :class:`CaseStatus` value; ``expected`` the oracle's outputs (None for an invalid case);
    ``ulp`` the comparison's tolerance in units in the last place (0: exact); ``output_bounds()`` per output
    the (low, high) interval of acceptable values of the ``interval`` rule, or None; ``metadata()`` the
    JSON-ready description a record copies its fields from; ``readings`` an implementation-defined case's
    catalogued readings (:class:`~qdq_conformance.ambiguities.Reading`; empty when the case carries none)."""

    @property
    def id(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def ulp(self) -> int: ...

    @property
    def expected(self) -> list[np.ndarray] | None: ...

    @property
    def readings(self) -> Sequence[Reading]: ...

    def output_bounds(self) -> list[tuple[np.ndarray, np.ndarray] | None] | None: ...

    def model(self, form: str = ...) -> onnx.ModelProto: ...

    def feeds(self, form: str = ...) -> dict[str, np.ndarray]: ...

    def metadata(self) -> CaseMetadata: ...

    def spec_text(self) -> SpecText: ...
