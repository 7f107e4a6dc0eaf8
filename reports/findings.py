"""Failing cases grouped into findings: one finding per signature, the rows of a report's first screen.

A signature (:mod:`.signature`) is what a person reading the failures would call "the same problem". What is
not in the signature a finding spans and lists: versions, concrete types, families, granularities. The report,
the scoreboard, the compliance table and ``qdq-conformance findings`` all group with :func:`group`; a
finding's first line is the plain sentence of one of its cases (:mod:`.wording`).
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from qdq_conformance.domain import BOTH, FAILING, FORMS, RunStatus
from qdq_conformance.results import CaseRecord, Standing, expectation_of, standing_of
from qdq_conformance.rules import RULES
from qdq_conformance.types import TYPES

from .signature import GRAPH, KIND_TEXT, first_part, has_zero_point, quantized_role, signature, type_class
from .wording import nodes_text, plain, shorten

#: formal input / output names in the order findings list their types
_ROLES = ("x", "x_scale", "y_scale", "scale", "x_zero_point", "y_zero_point", "zero_point", "y")


@dataclass
class Finding:
    # (operator, type pattern, granularity, form, status, kind, masked message): signature()
    key: tuple[str, ...]
    count: int = 0
    expected: int = 0
    versions: set[Any] = field(default_factory=set)
    types: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    # family, ... -> counts
    spans: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    cases: list[tuple[str, str]] = field(default_factory=list)  # (id, form) of every case-form
    example: dict[str, Any] = field(default_factory=dict)  # id, form, message, rule, repro of one case
    entries: dict[int, dict[str, Any]] = field(default_factory=dict)  # expectation line -> entry, case-forms
    # cases made from a model: the model nodes behind them (``source``), and how many more they stand for
    nodes: dict[str, None] = field(default_factory=dict)
    more_nodes: int = 0
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
                            ("zero point", "with" if has_zero_point(types) else "without"),
                            ("granularity", rec.get("granularity")), ("family", rec.get("family"))):
            self.spans[what][str(value or "-")] += n_forms
        self.cases += [(rec["id"], f) for f in forms]
        source = rec.get("source")
        if source:
            self.nodes.update(dict.fromkeys(source.get("nodes") or ()))
            self.more_nodes = max(self.more_nodes, source.get("more_nodes") or 0)
        if standing_of(rec) is Standing.EXPECTED:
            self.expected += n_forms
            e = expectation_of(rec)
            entry = self.entries.setdefault(e.get("line") or 0,
                                            {"line": e.get("line"), "reason": e.get("reason"),
                                              "link": e.get("link"), "cases": 0})
            entry["cases"] += n_forms
        if not self.example:
            self.example = {"id": rec["id"], "form": rec.get("form"),
                            "message": first_part(rec.get("message") or ""), "rule": rec.get("rule"),
                            "repro": rec.get("repro"), "plain": plain(rec)}

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
        return shorten(msg if msg.startswith(self.status) else f"{self.status}: {msg}",
                       180 - len(note)) + note

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
        return f"{role} {self.span_text('type class')}{zp_text}; {self.span_text('granularity')}; " \
               f"{family}; {forms_text(self.form)}"

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
                         for role,
                         ts in sorted(self.types.items(), key=lambda kv: (order.get(kv[0], 99), kv[0]))
                         if not (role.endswith("zero_point") and ts == quantized))

    def nodes_text(self) -> str:
        """The model nodes behind the finding's cases ("" when none was made from a model)."""
        return nodes_text(list(self.nodes), self.more_nodes) if self.nodes else ""

    def to_json(self, known: dict[str, list[Any]] | None = None) -> dict[str, Any]:
        return {"id": self.id, "state": self.state, "count": self.count, "expected": self.expected,
                "new": self.new, "description": self.description(known), "what": self.what(),
                "operator": self.operator, "versions": sorted(self.versions, key=_version_order),
                "version_span": self.version_span(known),
                "types": {r: sorted(ts, key=_type_order) for r, ts in self.types.items()},
                "type_pattern": self.key[1],
                "spans": {k: dict(v.most_common()) for k, v in self.spans.items()}, "form": self.form,
                "status": self.status, "kind": self.kind, "signature": list(self.key), "defect": self.defect,
                "example": self.example, "model_nodes": list(self.nodes), "more_model_nodes": self.more_nodes,
                "expectations": sorted(self.entries.values(), key=lambda e: -e["cases"])}


#: what a graph finding's defect means, for the reader
DEFECT_TEXT = {"rewrite": "rewrite: the backend's own node-by-node run gives the expected values, its "
                          "optimizer changes them",
               "node": "node: a node is wrong on its own (node by node the values differ too)"}

_TYPE_ORDER = {name: k for k, name in enumerate(TYPES)}


def _type_order(name: str) -> tuple[int, str]:
    return (_TYPE_ORDER.get(name, len(_TYPE_ORDER)), name)


def _version_order(v: Any) -> tuple[int, str]:
    return (v, "") if isinstance(v, int) else (10**6, str(v))


def forms_text(form: str) -> str:
    return "both forms" if form == BOTH else f"{form} form"


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
    """Every failing case-form in exactly one finding (so the counts add up to the failing case-forms), sorted
    by :func:`sort_key`. A case that fails with one signature in both graph forms counts twice under form
    ``both``."""
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


def _entry_line(rec: CaseRecord) -> int | None:
    return expectation_of(rec).get("line") if standing_of(rec) is Standing.EXPECTED else None


def index(findings: list[Finding]) -> dict[tuple[str, str], int]:
    """(case id, form) -> the position of its finding in ``findings``."""
    return {case: k for k, f in enumerate(findings) for case in f.cases}
