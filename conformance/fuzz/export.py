"""What a fuzz run leaves in ``--out``: findings kept as regression cases, and a results file.

- ``cases/fuzz-<key>.yaml``: one case file per finding, its minimal example with literal values (valid against
  cases/case.schema.json), the spec clause, a description naming the mismatch, and the oracle's outputs as golden
  ``expected`` values. ``qdq-conformance run --backend NAME --cases OUT/cases`` fails on the backend that
  produced it and passes on the oracle (``--backend reference``).
- ``findings/<case id>/``: the model and its inputs and expected outputs (ONNX backend-test layout,
  ``model.onnx``, ``test_data_set_0/input_K.pb``, ``output_K.pb``), ``repro.py`` (standalone, the backend's own
  API) and ``record.json`` (the results record of the failure).
- ``findings.json``: every finding (signature, hits, minimal example, files, whether the corpus exposes it).
- ``results.jsonl``: the results of every example tried, in the runner's format (``report`` and ``diff`` read it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from .describe import template
from .search import Finding

SCHEMA_LINE = "# yaml-language-server: $schema=https://onnx-qdq-conformance/case.schema.json\n"


def _golden(values: Any) -> list[Any]:
    from .describe import literals

    return literals(tuple(float(v) for v in values.astype("float64").reshape(-1))) if values.size else []


def mismatch_text(f: Finding) -> str:
    rec = f.record
    message = " ".join(str(rec.get("message") or "").split())
    if len(message) > 400:
        message = message[:400] + "..."
    return f"{rec.get('status', f.parts.get('mismatch', ''))}: {message}" if message else str(rec.get("status"))


def case_document(f: Finding, backend: str, version: str) -> dict[str, Any]:
    """The case file of finding ``f`` (plain data)."""
    assert f.description is not None and f.case is not None
    d = f.description
    text = (f"Found by qdq-conformance fuzz on {backend} {version} ({f.form} graph form), shrunk to a minimal "
            f"example; {backend} gave {mismatch_text(f)}")
    data = template(d, template_id=f"fuzz-{d.key}", description=text)
    if f.case.expected is not None:
        names = ("y", "y_scale", "y_zero_point")
        data["expected"] = {names[k]: _golden(e) for k, e in enumerate(f.case.expected)}
    return {"description": f"qdq-conformance fuzz finding: {f.signature}", "cases": [data]}


def write_case_file(path: Path, f: Finding, backend: str, version: str) -> Path:
    doc = case_document(f, backend, version)
    header = (SCHEMA_LINE + f"# Kept by `qdq-conformance fuzz --backend {backend}`: {f.hits} hit(s) of this signature."
              "\n# It fails on that backend and passes on the oracle (qdq-conformance run --backend reference).\n")
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=110, allow_unicode=False)
    path.write_text(header + text, encoding="utf-8")
    return path


def check_case_file(path: Path, case_id: str) -> None:
    """Load the written file with the corpus's loader: it must give exactly the finding's case."""
    from qdq_conformance.generators.corpus import load_file

    cases = load_file(path)
    if [c.id for c in cases] != [case_id]:
        raise RuntimeError(f"{path}: expands to {[c.id for c in cases]}, not {case_id}")


def write_finding(out: Path, f: Finding, backend: str, version: str) -> dict[str, Any]:
    """Write one finding's case file and folder; what findings.json says of it."""
    from qdq_conformance.generators.export import write_case

    assert f.description is not None and f.case is not None
    cases_dir = out / "cases"
    cases_dir.mkdir(parents=True, exist_ok=True)
    case_file = write_case_file(cases_dir / f"fuzz-{f.description.key}.yaml", f, backend, version)
    problem = None
    try:
        check_case_file(case_file, f.case.id)
    except Exception as e:  # (never expected) the finding's other files are still worth having: say so
        problem = f"{type(e).__name__}: {e}"
    folder = out / "findings" / f.case.id
    folder.mkdir(parents=True, exist_ok=True)
    data_folder = write_case(folder, f.case, f.form)
    repro = f.record.get("repro")
    if repro:
        (folder / "repro.py").write_text(str(repro) + "\n", encoding="utf-8")
    (folder / "record.json").write_text(json.dumps(f.record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    d = f.description
    return {"signature": f.signature, "parts": f.parts, "hits": f.hits, "first_example": f.first,
            "case_id": f.case.id, "form": f.form, "status": f.record.get("status"), "message": f.record.get("message"),
            "shape": list(d.x_shape), "elements": math.prod(d.x_shape), "distinct_x_values": d.distinct_values,
            "case_file": str(case_file.relative_to(out)), "folder": str(folder.relative_to(out)),
            "model": str((folder / data_folder / "model.onnx").relative_to(out)),
            "repro": str((folder / "repro.py").relative_to(out)) if repro else None, "case_file_problem": problem}


def zero_point_mode(case_id: str) -> str:
    parts = case_id.split("-")
    return "omitted" if "nozp" in parts else "output_dtype" if "outdtype" in parts else "given"


def coarse(operator: str, types: str, zero_point: str, granularity: str, form: str, status: str) -> tuple[str, ...]:
    return (operator, types, zero_point, granularity, form, status)


def corpus_signatures(path: Path) -> set[tuple[str, ...]]:
    """What a corpus run's results file exposes: (operator version, type pattern, zero-point mode, granularity,
    form, status) of each of its failing cases, expected by an expectation or not."""
    from ..runner.outcome import FAILING
    from ..runner.results import read

    _, records, _ = read(path)
    out = set()
    for r in records:
        if r.get("status") not in FAILING:
            continue
        t = r.get("types") or {}
        types = "/".join(str(t[k]) for k in ("x", "x_scale", "y_scale", "y") if t.get(k))
        if r.get("operator") == "DynamicQuantizeLinear":
            types = "/".join(str(t[k]) for k in ("x", "y") if t.get(k))
        out.add(coarse(f"{r.get('domain')}::{r.get('operator')}-{r.get('version')}", types,
                       zero_point_mode(str(r.get("id"))), str(r.get("granularity")), str(r.get("form")),
                       str(r.get("status"))))
    return out


def finding_coarse(parts: dict[str, str]) -> tuple[str, ...]:
    return coarse(parts["operator"], parts["types"], parts["zero_point"],
                  parts["granularity"].replace("-default-axis", ""), parts["form"], parts["mismatch"].split(":", 1)[0])


def write_results(path: Path, head: dict[str, Any], records: Iterable[str], summary: dict[str, Any]) -> int:
    from ..runner.results import ResultsWriter

    writer = ResultsWriter(path)
    counts: dict[str, int] = {}
    for line in records:
        writer.write_line(line, head)
        status = json.loads(line).get("status", "?")
        counts[status] = counts.get(status, 0) + 1
    writer.close({"counts": dict(sorted(counts.items())), **summary}, head)
    return writer.count


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The final table of findings (one line each)."""
    if not rows:
        return "no finding"
    lines = [f"{'#':>3} {'hits':>5}  {'operator':34} {'types':36} {'zp':12} {'granularity':24} {'attrs':11} "
             f"{'form':11} {'shape':10} {'corpus':7} mismatch"]
    for k, r in enumerate(rows, 1):
        p = r["parts"]
        corpus = {True: "yes", False: "NEW", None: "?"}[r.get("in_corpus")]
        shape = "x".join(map(str, r["shape"])) or "scalar"
        lines.append(f"{k:>3} {r['hits']:>5}  {p['operator']:34} {p['types']:36} {p['zero_point']:12} "
                     f"{p['granularity']:24} {p['attributes']:11} {p['form']:11} {shape:10} {corpus:7} "
                     f"{p['mismatch']}")
    return "\n".join(lines)
