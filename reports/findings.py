"""Failing cases grouped into findings: one finding per signature, the rows of a report's first screen.

A signature is what a person reading the failures would call "the same problem". For wrong values (status failed,
values differ) it is the operator (any version), the type pattern (the class of the quantized side's element type
and whether a zero point is given), granularity, graph form (``both`` when a case fails the same way in both
forms), the kind of mismatch (the other end of the range, off by one, NaN, ...) and the message with its
case-specific parts masked (numbers, type names, node names, source paths, tracebacks). For a backend's own error
(error, crashed, timeout, outputs of the wrong kind, an invalid model accepted) its masked message says what the
problem is: the signature is the operator, graph form, status, the rule an invalid model breaks and the masked
message. What is not in the signature a finding spans and lists: versions, concrete types, families,
granularities. The report, the scoreboard, the compliance table and ``qdq-conformance findings`` all group with
:func:`group`.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from qdq_conformance.domain import BOTH, FAILING, FORMS, RunStatus
from qdq_conformance.results import CaseRecord, expectation_of, is_expected
from qdq_conformance.rules import RULES
from qdq_conformance.types import TYPES, ElementType

from .casepage import first_explained, marks

#: formal input / output names in the order findings list their types
_ROLES = ("x", "x_scale", "y_scale", "scale", "x_zero_point", "y_zero_point", "zero_point", "y")
_TYPE_NAME = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(sorted(TYPES, key=len, reverse=True)) + r")(?![A-Za-z0-9_])")
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"'[A-Za-z0-9_.]+(?:-[A-Za-z0-9_.]+){2,}'"), "'<name>'"),  # node / case names
    (re.compile(r"(?:[A-Za-z]:)?(?:[/\\][\w.+-]+)+\.(?:cc|cpp|cxx|h|hpp|c|py)\b(?::\d+)?"), "<source>"),
    (re.compile(r"\[with [^\]]*\]"), "[with ...]"),  # C++ template arguments (one per element type)
    (re.compile(r"0x[0-9a-fA-F]+"), "N"),
    (re.compile(r"(?<![A-Za-z_])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"), "N"),
    (re.compile(r"(?<![\w:])[A-Za-z_:]*?(?:float|int)N\w*", re.IGNORECASE), "<type>"),  # FloatNENMNFN, intN_t
    (re.compile(r"\b-?(?:inf|nan|infinity)\b", re.IGNORECASE), "N"),
    (re.compile(r"\[[N,()\s\[\].]*\]"), "[N]"),  # index lists and shapes of any length
)
_TRACEBACK = re.compile(r"\s*Traceback \(most recent call last\)")
_FREE_NUMBER = re.compile(r"(?<![A-Za-z0-9_])\d+")  # digits the number mask masks (not those of int8, FLOAT16, _9)
_RUNNER_WORDS = re.compile(r"^(?:rejected a valid model|rejected|error|crashed|timeout): ")


def type_class(name: str | None) -> str:
    """The class of an element type that a type pattern keeps (the concrete type is spanned)."""
    t: ElementType | None = TYPES.get(name or "")
    if t is None:
        return name or "-"
    if t.is_float:
        return {32: "float", 16: "16-bit float", 8: "float8"}.get(t.bits, "float4/6")
    return "sub-byte integer" if t.is_sub_byte else "integer"


def quantized_role(operator: str | None) -> str:
    """The formal of the quantized side: ``x`` of a DequantizeLinear, ``y`` of a QuantizeLinear."""
    return "x" if "Dequantize" in (operator or "") else "y"


def type_pattern(rec: CaseRecord) -> str:
    """``y integer, zero point``: the quantized side's type class, and whether a zero point is given."""
    types = rec.get("types") or {}
    role = quantized_role(rec.get("operator"))
    return f"{role} {type_class(types.get(role))}" + (", zero point" if _has_zero_point(types) else "")


def _has_zero_point(types: dict[str, Any]) -> bool:
    return any(k.endswith("zero_point") and v for k, v in types.items())


def first_part(message: str) -> str:
    """A message without the traceback a backend's error may carry, its whitespace collapsed."""
    return " ".join(_TRACEBACK.split(message or "", maxsplit=1)[0].split())


def mask(rec: CaseRecord) -> str:
    """The message with what differs between cases of one problem masked: numbers, names, the runner's own words
    around a backend's error (``rejected a valid model: ...``, ``error: ...; no catalogued reading rejects this
    model``, which depend on the case's status, not on the problem); a long one keeps its start and its end."""
    m = first_part(rec.get("message") or "").replace(rec["id"], "<case>")
    # the numbers the masks below turn into N, as 0: messages that differ only in them share one masking
    return _mask_text(_FREE_NUMBER.sub("0", m))


@lru_cache(maxsize=4096)
def _mask_text(m: str) -> str:
    m = _RUNNER_WORDS.sub("", m.split("; no catalogued reading rejects this model")[0])
    m = _TYPE_NAME.sub(lambda t: f"<{type_class(t.group(1))}>", m)
    for pattern, repl in _MASKS:
        m = pattern.sub(repl, m)
    return m if len(m) <= 400 else f"{m[:250]} … {m[-150:]}"


def _number(text: object) -> float | None:
    try:
        return float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _element_kind(t: ElementType, e: float, a: float) -> str:
    if t.is_integer:
        bounds = {t.int_min, t.int_max}
        if e in bounds and a in bounds:
            return "wrong saturation bound"
        return "off by one" if abs(e - a) == 1 else "other values"
    if math.isnan(e) != math.isnan(a):
        return "NaN"
    return "infinity" if math.isinf(e) or math.isinf(a) else "other values"


#: the kind a case gets when its elements differ in several ways: the first of these it shows; and how it reads
_KIND_ORDER = ("wrong saturation bound", "NaN", "infinity", "other values", "off by one")
KIND_TEXT = {"wrong saturation bound": "values differ: the other end of the range", "off by one": "values differ by one",
             "NaN": "values differ: NaN where a number is expected, or the reverse",
             "infinity": "values differ at an infinity", "other values": "values differ"}


def mismatch_kind(rec: CaseRecord) -> str:
    """How a failed case's values differ, from the previews of its mismatching outputs: ``wrong saturation
    bound`` (one end of the range for the other), ``NaN``, ``infinity``, ``off by one`` (every differing element),
    ``other values``; ``""`` for other statuses and mismatches that are not about values."""
    if rec.get("status") != "failed":
        return ""
    kinds: set[str] = set()
    expected, actual = rec.get("expected") or [], rec.get("actual") or []
    differing = marks(rec)  # (by the verdict's comparison: NaN by class, ULP bound)
    for m in rec.get("mismatches") or ():
        if m.get("reason") != "values differ":
            continue
        k = m.get("output") or 0
        e = expected[k] if k < len(expected) else None
        a = actual[k] if k < len(actual) else None
        t = TYPES.get(e.get("type") or "") if e else None
        if not e or not a or t is None:
            kinds.add("other values")
            continue
        ev, av = e.get("values") or (), a.get("values") or ()
        for j in differing[k] if k < len(differing) else ():  # (over the elements both previews hold)
            x = _number(ev[j]) if j < len(ev) else None
            y = _number(av[j]) if j < len(av) else None
            kinds.add("other values" if x is None or y is None else _element_kind(t, x, y))
            if _KIND_ORDER[0] in kinds:
                return _KIND_ORDER[0]
        if not kinds:  # the differing elements are beyond the preview
            kinds.add("other values")
    return next((k for k in _KIND_ORDER if k in kinds), "")


def signature(rec: CaseRecord, form: str) -> tuple[str, ...]:
    """(operator, type pattern, granularity, form, status, kind of mismatch, masked message); ``*`` where a
    backend's own error message stands for the problem (see the module's text)."""
    op, kind = f"{rec.get('domain')}::{rec.get('operator')}", mismatch_kind(rec)
    if rec.get("operator") == GRAPH:  # a graph case: grouped by its defect (rewrite or node) and family
        return (op, f"{GRAPH} {rec.get('defect') or '-'}", str(rec.get("family") or "-"), form, rec["status"], kind,
                mask(rec))
    if kind:
        return (op, type_pattern(rec), str(rec.get("granularity") or "-"), form, rec["status"], kind, mask(rec))
    rule = f"rule {rec.get('rule')}: " if rec["status"] == RunStatus.INVALID_ACCEPTED and rec.get("rule") else ""
    return (op, "*", "*", form, rec["status"], "", rule + mask(rec))


@dataclass
class Finding:
    key: tuple[str, ...]  # (operator, type pattern, granularity, form, status, kind, masked message): signature()
    count: int = 0
    expected: int = 0
    versions: set[Any] = field(default_factory=set)
    types: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    spans: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))  # family, ... -> counts
    cases: list[tuple[str, str]] = field(default_factory=list)  # (id, form) of every case-form
    example: dict[str, Any] = field(default_factory=dict)  # id, form, message, rule, repro of one case
    entries: dict[int, dict[str, Any]] = field(default_factory=dict)  # expectation line -> entry, case-forms
    operator: str = field(init=False)  # the key's parts a finding's text uses
    form: str = field(init=False)
    status: str = field(init=False)
    kind: str = field(init=False)

    @property
    def id(self) -> str:
        """Stable across runs and versions: the same signature gives the same id."""
        return "F" + hashlib.sha1("\x1f".join(self.key).encode("utf-8")).hexdigest()[:8]

    def __post_init__(self) -> None:
        self.operator, _, _, self.form, self.status, self.kind, _ = self.key

    @property
    def defect(self) -> str | None:
        """A graph finding's defect: ``rewrite`` (the backend's optimizer changes values; node by node it is
        right) or ``node`` (a node is wrong on its own); None for a single-node finding."""
        return self.key[1].split(" ", 1)[1] if self.key[1].startswith(f"{GRAPH} ") else None

    @property
    def new(self) -> int:
        return self.count - self.expected

    @property
    def state(self) -> str:
        """``new`` (no case expected), ``expected`` (every case), or ``partly expected``."""
        return "expected" if not self.new else "new" if not self.expected else "partly expected"

    def add(self, rec: CaseRecord, n_forms: int, forms: Iterable[str]) -> None:
        self.count += n_forms
        self.versions.add(rec.get("version"))
        types = rec.get("types") or {}
        for role, t in types.items():
            if t:
                self.types[role].add(t)
        for what, value in (("type class", type_class(types.get(quantized_role(rec.get("operator"))))),
                            ("zero point", "with" if _has_zero_point(types) else "without"),
                            ("granularity", rec.get("granularity")), ("family", rec.get("family"))):
            self.spans[what][str(value or "-")] += n_forms
        self.cases += [(rec["id"], f) for f in forms]
        if is_expected(rec):
            self.expected += n_forms
            e = expectation_of(rec)
            entry = self.entries.setdefault(e.get("line") or 0, {"line": e.get("line"), "reason": e.get("reason"),
                                                                  "link": e.get("link"), "cases": 0})
            entry["cases"] += n_forms
        if not self.example:
            self.example = {"id": rec["id"], "form": rec.get("form"), "message": first_part(rec.get("message") or ""),
                            "rule": rec.get("rule"), "repro": rec.get("repro"), "plain": plain(rec)}

    def what(self) -> str:
        """What goes wrong, in a line: the kind of mismatch, or the status and the example's message."""
        msg = self.example.get("message", "")
        if self.kind:
            text = KIND_TEXT.get(self.kind, self.kind)
            return f"{msg.split('; against ')[0]}; {text}" if msg.startswith("matches none") else text
        rule = self.example.get("rule")
        if self.status == RunStatus.INVALID_ACCEPTED and rule:
            summary = RULES[rule].summary if rule in RULES else ""
            msg = f"{msg} (it breaks {rule}{': ' + summary if summary else ''})"
        msg, no_reading, _ = msg.partition("; no catalogued reading rejects this model")
        note = " (no catalogued reading allows rejecting it)" if no_reading else ""
        return shorten(msg if msg.startswith(self.status) else f"{self.status}: {msg}", 180 - len(note)) + note

    def span_text(self, what: str, limit: int = 4) -> str:
        """``per-tensor, blocked``: the values of a spanned field, most frequent first (at most ``limit``)."""
        names = [n for n, _ in self.spans[what].most_common()]
        more = f" and {len(names) - limit} more" if len(names) > limit else ""
        return ", ".join(names[:limit]) + more

    def where(self) -> str:
        """Type pattern; granularity; families; graph forms (what the finding spans that its line names)."""
        role = quantized_role(self.operator)
        zp = self.spans["zero point"]
        zp_text = ", with and without zero point" if len(zp) > 1 else ", zero point" if "with" in zp else ""
        family = f"famil{'y' if len(self.spans['family']) == 1 else 'ies'} {self.span_text('family')}"
        if self.defect is not None:
            said = DEFECT_TEXT.get(self.defect, "not attributed")
            return f"graph, {said}; {family}; {forms_text(self.form)}"
        return f"{role} {self.span_text('type class')}{zp_text}; {self.span_text('granularity')}; {family}; " \
               f"{forms_text(self.form)}"

    def description(self, known: dict[str, list[Any]] | None = None) -> str:
        """One line: operator versions, where (types, granularity, families, forms), what goes wrong."""
        domain, _, op = self.operator.rpartition("::")
        name = op if domain in ("ai.onnx", "") else f"{domain} {op}"
        return f"{name} {self.version_span(known)} ({self.where()}): {self.what()}"

    def version_span(self, known: dict[str, list[Any]] | None = None) -> str:
        return span(self.versions, (known or {}).get(self.operator))

    def types_text(self) -> str:
        """``x float, float16; y_scale float; y int8, uint8`` (a zero point's types when they differ from the
        quantized side's)."""
        order = {r: k for k, r in enumerate(_ROLES)}
        quantized = self.types.get(quantized_role(self.operator))
        return "; ".join(f"{role} {', '.join(sorted(ts, key=_type_order))}"
                         for role, ts in sorted(self.types.items(), key=lambda kv: (order.get(kv[0], 99), kv[0]))
                         if not (role.endswith("zero_point") and ts == quantized))

    def to_json(self, known: dict[str, list[Any]] | None = None) -> dict[str, Any]:
        return {"id": self.id, "state": self.state, "count": self.count, "expected": self.expected, "new": self.new,
                "description": self.description(known), "what": self.what(), "operator": self.operator,
                "versions": sorted(self.versions, key=_version_order), "version_span": self.version_span(known),
                "types": {r: sorted(ts, key=_type_order) for r, ts in self.types.items()},
                "type_pattern": self.key[1], "spans": {k: dict(v.most_common()) for k, v in self.spans.items()},
                "form": self.form, "status": self.status, "kind": self.kind, "signature": list(self.key),
                "defect": self.defect,
                "example": self.example, "expectations": sorted(self.entries.values(), key=lambda e: -e["cases"])}


#: a graph case's ``operator`` in its record
GRAPH = "graph"
#: what a graph finding's defect means, for the reader
DEFECT_TEXT = {"rewrite": "rewrite: the backend's own node-by-node run gives the expected values, its optimizer "
                          "changes them",
               "node": "node: a node is wrong on its own (node by node the values differ too)"}

_TYPE_ORDER = {name: k for k, name in enumerate(TYPES)}


def _type_order(name: str) -> tuple[int, str]:
    return (_TYPE_ORDER.get(name, len(_TYPE_ORDER)), name)


def _version_order(v: Any) -> tuple[int, str]:
    return (v, "") if isinstance(v, int) else (10**6, str(v))


def forms_text(form: str) -> str:
    return "both forms" if form == BOTH else f"{form} form"


def shorten(text: str, limit: int, middle: bool = True) -> str:
    """``text`` in at most about ``limit`` characters, cut at word boundaries, an ellipsis for what is left out:
    its start and its end (``middle``: where a backend's error says what went wrong, after its boilerplate), or
    its start."""
    if len(text) <= limit:
        return text
    if not middle:
        cut = text[: limit - 1]
        return (cut[: cut.rfind(" ")] if " " in cut[limit // 2:] else cut).rstrip(" ,;:") + " …"
    head, tail = text[: limit // 3], text[-(limit - limit // 3 - 3):]
    head = head[: head.rfind(" ")] if " " in head[limit // 6:] else head
    tail = tail[tail.find(" ") + 1:] if " " in tail[: limit // 4] else tail
    return f"{head.rstrip(' ,;:')} … {tail}"


def span(versions: Iterable[Any], known: list[Any] | None = None) -> str:
    """``19, 21, 23-25``: versions, runs of consecutive ``known`` versions (those the run has) collapsed."""
    vs = sorted(set(versions), key=_version_order)
    order = sorted(set(known or vs) | set(vs), key=_version_order)
    runs: list[list[Any]] = []
    for v in vs:
        if runs and isinstance(v, int) and isinstance(runs[-1][-1], int) and \
                order.index(v) == order.index(runs[-1][-1]) + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def known_versions(cases: Iterable[CaseRecord]) -> dict[str, list[Any]]:
    """Per operator, the versions the run has (for :func:`span`)."""
    out: dict[str, set[Any]] = defaultdict(set)
    for c in cases:
        out[f"{c.get('domain')}::{c.get('operator')}"].add(c.get("version"))
    return {k: sorted(v, key=_version_order) for k, v in out.items()}


def sort_key(f: Finding) -> tuple[int, int, str]:
    """New (unexpected) findings first, then by count."""
    return (0 if f.new else 1, -f.count, "\x1f".join(f.key))


_BOTH_FORMS = sorted(FORMS)


def group(cases: Iterable[CaseRecord]) -> list[Finding]:
    """Every failing case-form in exactly one finding (so the counts add up to the failing case-forms), sorted by
    :func:`sort_key`. A case that fails with one signature in both graph forms counts twice under form ``both``."""
    by_id: dict[str, list[CaseRecord]] = defaultdict(list)
    for c in cases:
        if c["status"] in FAILING:
            by_id[c["id"]].append(c)
    findings: dict[tuple[str, ...], Finding] = {}
    for recs in by_id.values():
        keys = [signature(r, "") for r in recs]  # the form is key[3]
        forms = sorted({r.get("form") or "-" for r in recs})
        if len(recs) == 2 and keys[0] == keys[1] and forms == _BOTH_FORMS and \
                _entry_line(recs[0]) == _entry_line(recs[1]):
            key = (*keys[0][:3], BOTH, *keys[0][4:])
            findings.setdefault(key, Finding(key)).add(recs[0], 2, forms)
            continue
        for r, k in zip(recs, keys, strict=True):
            key = (*k[:3], r.get("form") or "-", *k[4:])
            findings.setdefault(key, Finding(key)).add(r, 1, [r.get("form") or "-"])
    return sorted(findings.values(), key=sort_key)


_VERBS = {RunStatus.ERROR: "fails with an error", RunStatus.CRASHED: "crashes",
          RunStatus.TIMEOUT: "does not finish within the time limit"}
#: a C++ function signature an error starts with (``Status ns::Op<T>::Compute(Ctx*) const [with T = ...]``)
_SIGNATURE = re.compile(r"^[\w:<>,*& ]*::[\w:<>,*& ]*\([^)]*\)\s*(?:const)?\s*(?:\[with [^\]]*\])?\s*")
_STATUS_MESSAGE = re.compile(r"Status Message:\s*(?:\S+\.(?:cc|cpp|h|py):\d+\s+(?:\S+\s+)?)?")


def gist(message: str) -> str:
    """What a backend's error says, without its boilerplate (ONNX Runtime's ``[ONNXRuntimeError] : 1 : FAIL :
    Non-zero status ... Status Message: <source>:<line> <function>``), in at most about 160 characters."""
    text = first_part(message)
    text = _RUNNER_WORDS.sub("", text)
    parts = _STATUS_MESSAGE.split(text, maxsplit=1)
    text = parts[-1] if len(parts) > 1 else re.sub(r"^.*?\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*\w+\s*:\s*", "", text)
    text = text.split("; no catalogued reading rejects this model")[0]
    text = _SIGNATURE.sub("", text, count=1)
    condition, false, after = text.partition(" was false.")
    if false:
        text = after.strip() or f"its check {condition.strip()} failed"
    return shorten(text.strip(), 160, middle=False)


def plain(rec: CaseRecord) -> str:
    """One plain sentence of what goes wrong in a failing case, from its per-element explanations and its family
    (never from an expectation file's reason), for a finding's first line."""
    family = rec.get("family") or "these"
    status = rec["status"]
    first = first_explained(rec) if rec.get("actual") else None
    counts = [(m.get("count"), m.get("total")) for m in rec.get("mismatches") or () if m.get("count")]
    share = f" ({counts[0][0]} of {counts[0][1]} elements)" if counts else ""
    if first is not None:
        expected, actual, why = first
        where = f"for an input {why}" if why else "for some inputs"
        return (f"In {family} cases, {where}, the backend returns {actual} where the spec gives {expected}"
                f"{share}.")
    if status == RunStatus.INVALID_ACCEPTED:
        rule = rec.get("rule")
        summary = RULES[rule].summary if rule in RULES else "a model the spec forbids"
        return f"In {family} cases, the backend runs a model the spec forbids ({rule}: {summary}) instead of " \
               "rejecting it."
    if status in _VERBS:
        said = gist(rec.get("message") or "")
        return f"In {family} cases, the backend {_VERBS[RunStatus(status)]}" + (f": {said}" if said else "") + \
            ("" if said.endswith(".") else ".")
    said = gist(rec.get("message") or "")
    return f"In {family} cases, the backend's outputs differ from the spec's" + (f": {said}" if said else "") + "."


def _entry_line(rec: CaseRecord) -> int | None:
    return expectation_of(rec).get("line") if is_expected(rec) else None


def index(findings: list[Finding]) -> dict[tuple[str, str], int]:
    """(case id, form) -> the position of its finding in ``findings``."""
    return {case: k for k, f in enumerate(findings) for case in f.cases}
