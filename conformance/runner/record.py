"""One results-file record per (case, form): what ran, how it ended, and for anything but a plain pass the
inputs, expected and actual values (previews with their bit patterns) and, for a failure, a repro."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx

from ..compare import Bounds, differs, rule_ulp
from ..domain import FAILING, Case, CaseStatus, RunStatus
from ..results.records import CaseRecord, PreviewRecord, case_record
from ..types import by_dtype, code_of, texts
from .expectations import Expectation
from .outcome import Outcome
from .outputs import registered
from .repro import model_code, values_of

#: elements of an array a record keeps (its preview)
PREVIEW = 64


def preview(a: object, limit: int = PREVIEW, bounds: Bounds | None = None) -> PreviewRecord | None:
    """The first ``limit`` values of an array and their bit patterns (None for what is not an array: the
    message says what came back instead); with ``bounds``, the bit patterns of those elements' lowest and
    highest acceptable values too (``low``, ``high``)."""
    if not isinstance(a, np.ndarray):
        return None
    flat = a.reshape(-1)[:limit] if a.flags.c_contiguous else np.asarray(a.flat[:limit])
    if not registered(a.dtype):  # a plain numpy array a backend returned (float64 for an int8 output, say)
        codes = (flat.view(f"u{a.itemsize}").tolist() if a.dtype.kind in "biuf" and a.itemsize in (1, 2, 4, 8)
                 else [])
        return {"type": str(a.dtype), "shape": list(a.shape), "values": [str(v) for v in flat.tolist()],
                "codes": [int(c) for c in codes], "truncated": a.size > limit}
    t = by_dtype(a.dtype)
    values = texts(flat)  # at the type's own precision (float32 0.1 is "0.1", not float64's digits)
    out: PreviewRecord = {"type": t.name, "shape": list(a.shape), "values": values,
                          "codes": [int(c) for c in code_of(flat)], "truncated": a.size > limit}
    if bounds is not None:
        out["low"], out["high"] = ([int(c) for c in code_of(b.reshape(-1)[:limit])] for b in bounds)
    return out


def build(case: Case, form: str, outcome: Outcome, entry: Expectation | None, backend: tuple[str, str],
          model: onnx.ModelProto | None, feeds: dict[str, np.ndarray],
          repro: Callable[[str, list[str]], str] | None) -> CaseRecord:
    """The record of ``case`` in ``form`` on ``backend`` (name, version); ``repro(model_code, output_names)``
    is the backend's own repro script, or None to give the model code alone; ``model``: the case's model in
    ``form`` (None: built when the record needs it)."""
    meta = case.metadata()
    rec = case_record(case.id, form, outcome.status, outcome.message, backend)
    rec.update({
        "duration": round(outcome.seconds, 6),
        "operator": meta["operator"], "domain": meta["domain"], "version": meta["version"],
        "family": meta["family"], "granularity": meta["granularity"], "attributes": meta["attributes"],
        "ambiguity": meta["ambiguity"], "rule": meta["rule"], "comparison": meta["comparison"],
        "case_status": meta["status"],
        "types": {io["formal"]: io["element_type"] for io in meta["inputs"]}
        | {"y": meta["outputs"][0]["element_type"] if meta["outputs"] else None},
        "spec": case.spec_text(),
        "behaviour": outcome.behaviour,
        "reading": outcome.reading,
        "expectation": None if entry is None else entry.as_record(),
        "mismatches": outcome.mismatch_records(),
    })
    # a graph case: its template (file#id), which findings and the compliance table name
    if meta.get("graph"):
        rec["template"] = meta["template"]
    if meta.get("interval_why"):
        rec["interval_why"] = meta.get("interval_why")
    # a case generated from a model: the model's nodes behind it, which findings and the report name
    if meta.get("source"):
        rec["source"] = meta["source"]
    _label_mismatches(case, rec, outcome.actual)
    implementation_defined = meta["status"] == CaseStatus.IMPLEMENTATION_DEFINED
    if outcome.status not in (RunStatus.PASSED, RunStatus.UNSUPPORTED) or implementation_defined:
        if model is None:
            model = case.model(form)
        values = values_of(model, feeds)
        rec["inputs"] = {k: preview(v) for k, v in values.items()}
        bounds = case.output_bounds() or []
        rec["expected"] = [preview(e, bounds=bounds[k] if k < len(bounds) else None)
                           for k, e in enumerate(case.expected or [])]
        rec["actual"] = [preview(a) for a in (outcome.actual or [])]
        if outcome.status in FAILING and case.readings:  # what each catalogued reading gives
            rec["readings"] = {r.key: None if r.outputs is None else [preview(o) for o in r.outputs]
                               for r in case.readings}
        if outcome.status in FAILING or (outcome.mismatches and implementation_defined):
            code = model_code(model, feeds)
            try:
                rec["repro"] = repro(code, [o.name for o in model.graph.output]) if repro else code
            except Exception:  # a backend that cannot write its repro still gets the model
                rec["repro"] = code
    return rec


def _label_mismatches(case: Case, rec: CaseRecord, actual: list[Any] | None) -> None:
    """Each mismatch's first indices get the boundary their x element sits on (``labels``, aligned); and every
    element of the output's preview that differs (by the verdict's comparison, :func:`compare.differs`) its
    own (``explained``: [flat index, label] pairs), the report's case table's explanation column."""
    x_labels = getattr(case, "x_labels", None)
    if x_labels is None:
        return
    ulp = rule_ulp(rec.get("comparison"))
    every = case.output_bounds() or []
    for m in rec.get("mismatches") or ():
        try:  # labels are a help for the reader, never a reason to lose the record
            if m.get("first_indices"):
                got = x_labels([tuple(i) for i in m["first_indices"]])
                if got:
                    m["labels"] = got
            k = m.get("output") or 0
            if m.get("reason") != "values differ" or not actual or case.expected is None:
                continue
            e, a = case.expected[k], actual[k]
            b = every[k] if k < len(every) else None
            bounds = None if b is None else (b[0].reshape(-1)[:PREVIEW], b[1].reshape(-1)[:PREVIEW])
            bad = np.flatnonzero(differs(e.reshape(-1)[:PREVIEW], a.reshape(-1)[:PREVIEW], ulp, bounds))
            if bad.size:
                where = [tuple(int(i) for i in np.unravel_index(j, e.shape)) if e.ndim else () for j in bad]
                labels = x_labels(where)
                if labels:
                    m["explained"] = [[int(j), text] for j, text in zip(bad, labels, strict=False)]
        except Exception:
            continue

