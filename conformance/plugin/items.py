"""Collection: a case file (or an exported suite) -> one item per (case, graph form)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ..runner.outcome import FAILING, Outcome, classify
from ..runner.repro import model_code, values_of
from .state import STATE


class CaseFailure(Exception):
    """A case that did not conform; carries everything repr_failure shows."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.message)
        self.outcome = outcome


class UnexpectedOutcome(Exception):
    """Under --strict-expectations: a case that ended other than its expectation says."""


def marker_names(case: Any, form: str) -> list[str]:
    meta = case.metadata()
    names = [meta["operator"].lower(), meta["domain"].replace(".", "_"), f"v{meta['version']}",
             meta["granularity"].replace("-", "_"), "family_" + meta["family"].replace("-", "_"),
             meta["status"].replace("-", "_"), form]
    for io in meta["inputs"][:2]:
        if io["element_type"]:
            names.append(("x_" if io["formal"] == "x" else "scale_") + io["element_type"])
    if meta["outputs"] and meta["outputs"][0]["element_type"]:
        names.append("y_" + meta["outputs"][0]["element_type"])
    return names


_MARKS: dict[str, pytest.MarkDecorator] = {}


def _mark(name: str) -> pytest.MarkDecorator:
    """One MarkDecorator per name (pytest's by-name lookup is the slow part of add_marker for 50,000 items)."""
    mark = _MARKS.get(name)
    if mark is None:
        mark = _MARKS[name] = getattr(pytest.mark, name)
    return mark


class CaseItem(pytest.Item):
    def __init__(self, *, case: Any, form: str, line: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.form = form
        self.line = line
        for name in marker_names(case, form):
            self.add_marker(_mark(name))
        meta = case.metadata()
        self.extra_keyword_matches.update({meta["family"], meta["status"], meta["operator"]})

    def runtest(self) -> None:
        state = self.config.stash[STATE]
        case = self.case
        model = case.model(self.form)
        feeds = case.feeds(self.form)
        t0 = time.perf_counter()
        raw = state.backend().run(model, feeds)
        outcome = classify(raw, status=case.status, expected=case.expected, ulp=case.ulp)
        outcome.seconds = time.perf_counter() - t0
        entry = None if case.status == "implementation-defined" else state.expectations.lookup(case.id, self.form)
        self.user_properties.append(("qdq", _record(case, self.form, outcome, entry, state, model, feeds)))
        if outcome.status == "unsupported":
            pytest.skip(f"unsupported by {state.backend_name}: {outcome.message}")
        if entry is not None and state.strict and outcome.status in FAILING and outcome.status != entry.status:
            raise UnexpectedOutcome(f"expected {entry.status} ({entry.reason}), got {outcome.status}: "
                                    f"{outcome.message}")
        if outcome.status in FAILING:
            raise CaseFailure(outcome)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailure):
            return _describe(self, excinfo.value.outcome)
        if isinstance(excinfo.value, UnexpectedOutcome):
            return f"{self.case.id} [{self.form}]: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, max(self.line - 1, 0), f"{self.case.id} [{self.form}]"


class LoadErrorItem(pytest.Item):
    """A case file that could not be loaded: one failing item, the rest of the run goes on."""

    def __init__(self, *, error: Exception, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise self.error

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return f"case file error: {excinfo.value}"

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, getattr(self.error, "line", 1) or 1, f"load {self.path.name}"


class CaseFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        from generators.cache import load_file_cached
        from generators.loader import CaseFileError

        cfg = self.config
        tier = cfg.getoption("qdq_tier")
        tiers = ("default", "large") if tier == "all" else (tier,)
        forms = forms_of(cfg)
        try:
            cases = load_file_cached(self.path, tiers)
        except CaseFileError as e:
            yield LoadErrorItem.from_parent(self, name="load", error=e)
            return
        for case in cases:
            if case.tier not in tiers:
                continue
            for form in forms:
                yield CaseItem.from_parent(self, name=f"{case.id}[{form}]", case=case, form=form, line=case.line)


class SuiteFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        from ..runner.suite import load_suite

        forms = forms_of(self.config)
        _, cases = load_suite(self.path.parent)
        for case in cases:
            if case.form in forms:
                yield CaseItem.from_parent(self, name=f"{case.id}[{case.form}]", case=case, form=case.form)


def forms_of(cfg: pytest.Config) -> tuple[str, ...]:
    form = cfg.getoption("qdq_form")
    return ("runtime", "initializer") if form == "both" else (form,)


def _preview(a: np.ndarray | None, limit: int = 64) -> dict[str, Any] | None:
    if a is None:
        return None
    from ..types import by_dtype, code_of

    flat = a.reshape(-1)[:limit]
    t = by_dtype(a.dtype)
    values = [str(v) for v in (flat.astype(np.float64) if t.is_float else flat.astype(np.int64)).tolist()]
    return {"type": t.name, "shape": list(a.shape), "values": values,
            "codes": [int(c) for c in code_of(flat)], "truncated": a.size > limit}


def _record(case: Any, form: str, outcome: Outcome, entry: Any, state: Any, model: Any,
            feeds: dict[str, np.ndarray]) -> dict[str, Any]:
    meta = case.metadata()
    rec: dict[str, Any] = {
        "type": "case", "id": case.id, "form": form, "status": outcome.status,
        "duration": round(outcome.seconds, 6), "message": outcome.message[:2000],
        "backend": state.backend_name, "backend_version": state.backend_version,
        **{k: meta[k] for k in ("operator", "domain", "version", "family", "granularity", "attributes",
                                "ambiguity", "rule", "comparison")},
        "case_status": meta["status"],
        "types": {io["formal"]: io["element_type"] for io in meta["inputs"]}
        | {"y": meta["outputs"][0]["element_type"] if meta["outputs"] else None},
        "spec": _spec_text(case),
        "behaviour": outcome.behaviour,
        "expectation": None if entry is None else {"status": entry.status, "reason": entry.reason,
                                                   "link": entry.link, "line": entry.line},
        **outcome.summary(),
    }
    if outcome.status not in ("passed", "unsupported") or meta["status"] == "implementation-defined":
        values = values_of(model, feeds)
        rec["inputs"] = {k: _preview(v) for k, v in values.items()}
        rec["expected"] = [_preview(e) for e in (case.expected or [])]
        rec["actual"] = [_preview(a) for a in (outcome.actual or [])]
        if outcome.status in FAILING or (outcome.mismatches and meta["status"] == "implementation-defined"):
            rec["repro"] = _repro(state, model, values)
    return rec


def _spec_text(case: Any) -> dict[str, Any]:
    clause = getattr(case, "clause", None)
    if clause is not None:
        return {"operator": clause.operator, "versions": clause.versions, "text": clause.text}
    return dict(case.template.get("spec", {}))


def _repro(state: Any, model: Any, values: dict[str, np.ndarray]) -> str:
    from ..backends.registry import create

    code = model_code(model, values)
    names = [o.name for o in model.graph.output]
    try:
        backend = create(state.backend_spec, state.backend_options)
        return backend.repro(code, names)
    except Exception:  # a backend that cannot be built here still gets the model
        return code


def _describe(item: CaseItem, outcome: Outcome) -> str:
    rec = dict(item.user_properties).get("qdq", {})
    case = item.case
    spec = rec.get("spec", {})
    lines = [f"{case.id} [{item.form}] on {rec.get('backend')} {rec.get('backend_version')}: {outcome.status}",
             f"spec ({spec.get('operator')} {spec.get('versions')}): \"{spec.get('text')}\"",
             f"case: {rec.get('case_status')}, comparison {rec.get('comparison')}, attributes "
             f"{rec.get('attributes')}", f"message: {outcome.message[:1500]}"]
    for name, p in (rec.get("inputs") or {}).items():
        if p:
            lines.append(f"input {name} ({p['type']}, shape {p['shape']}): {_fmt(p)}")
    for k, (e, a) in enumerate(zip(rec.get("expected") or [], rec.get("actual") or [], strict=False)):
        if e and a:
            lines.append(f"expected output {k} ({e['type']}, shape {e['shape']}): {_fmt(e)}")
            lines.append(f"actual   output {k} ({a['type']}, shape {a['shape']}): {_fmt(a)}")
    for k, m in outcome.mismatches:
        lines.append(f"output {k}: {m}")
        if outcome.actual is not None and case.expected is not None and m.indices:
            exp, act = case.expected[k], outcome.actual[k]
            for idx in m.indices[:5]:
                try:
                    lines.append(f"    at {idx}: expected {exp[idx]!r}, actual {act[idx]!r}")
                except (IndexError, TypeError):
                    break
    if rec.get("repro"):
        lines += ["repro (paste into a bug report):", *("    " + ln for ln in rec["repro"].splitlines())]
    return "\n".join(lines)


def _fmt(p: dict[str, Any]) -> str:
    return "[" + ", ".join(p["values"]) + (", ...]" if p["truncated"] else "]")
