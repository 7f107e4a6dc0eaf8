"""What a fuzz run leaves in ``--out``: findings kept as regression cases, and a results file.

- ``cases/fuzz-<key>.yaml``: one case file per finding, its minimal example with literal values (valid against
  cases/case.schema.json), the spec clause, a description naming the mismatch, and the oracle's outputs as
  golden ``expected`` values. ``qdq-conformance run --backend NAME --cases OUT/cases`` fails on the backend
  that produced it and passes on the oracle (``--backend oracle``).
- ``findings/<case id>/``: the model and its inputs and expected outputs (ONNX backend-test layout,
  ``model.onnx``, ``test_data_set_0/input_K.pb``, ``output_K.pb``), ``repro.py`` (standalone, the backend's
  own API) and ``record.json`` (the results record of the failure).
- ``findings.json``: every finding (signature, hits, minimal example, files, its root cause and whether a
  failing case of the corpus exposes it: :func:`judge`).
- ``results.jsonl``: the results of every example tried, in the runner's format (``report`` and ``diff`` read
  it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import yaml

from ..generators.corpus import load_file
from ..generators.suite_layout import test_name, write_folder
from ..generators.values import literals
from ..reports.findings import FAILING, group
from ..reports.findings import Finding as Group
from ..reports.signature import signature
from ..results import (
    CaseRecord,
    Header,
    JSONValue,
    ResultsWriter,
    Standing,
    Summary,
    decode_record,
    encode_record,
    expectation_of,
    read,
    standing_of,
)
from .describe import template
from .search import Finding

SCHEMA_LINE = "# yaml-language-server: $schema=https://onnx-qdq-conformance/case.schema.json\n"


def _golden(values: Any) -> list[Any]:
    return literals(tuple(float(v) for v in values.astype("float64").reshape(-1))) if values.size else []


def mismatch_text(f: Finding) -> str:
    rec = f.record
    message = " ".join(str(rec.get("message") or "").split())
    if len(message) > 400:
        message = message[:400] + "..."
    return (f"{rec.get('status', f.parts.get('mismatch', ''))}: {message}" if message
            else str(rec.get("status")))


class KnownEntry(TypedDict):
    """The expectation entry that records a finding (``known.known``), and the corpus case that shows it."""

    line: int
    status: str
    reason: str
    case: str
    form: str


class FindingRow(TypedDict, total=False):
    """What ``findings.json`` says of one finding (:func:`write_finding`), judged (:func:`judge`,
    ``known.known``, :func:`finding_ids`)."""

    signature: str
    parts: dict[str, str]
    hits: int
    first_example: int
    case_id: str
    form: str
    status: str | None
    message: str | None
    shape: list[int]
    elements: int
    distinct_x_values: int
    case_file: str
    folder: str
    model: str
    repro: str | None
    case_file_problem: str | None
    root_cause: list[str]
    root_cause_id: str
    in_corpus: bool | None  # a failing corpus case exposes its root cause (None: no corpus results given)
    corpus_case: str | None
    corpus_expected: str | None
    new: bool
    known: KnownEntry | None


class Judged(TypedDict):
    """The counts of a run's findings once judged."""

    findings: int
    root_causes: int
    known_findings: int
    new_findings: int
    new_root_causes: int


def case_document(f: Finding, backend: str, version: str) -> dict[str, JSONValue]:
    """The case file of finding ``f`` (plain data)."""
    assert f.description is not None and f.case is not None
    d = f.description
    text = (f"Found by qdq-conformance fuzz on {backend} {version} ({f.form} graph form), shrunk to a "
            f"minimal example; {backend} gave {mismatch_text(f)}")
    data = template(d, template_id=f"fuzz-{d.key}", description=text)
    if f.case.expected is not None:
        names = ("y", "y_scale", "y_zero_point")
        data["expected"] = {names[k]: _golden(e) for k, e in enumerate(f.case.expected)}
    return {"description": f"qdq-conformance fuzz finding: {f.signature}", "cases": [data]}


def write_case_file(path: Path, f: Finding, backend: str, version: str) -> Path:
    doc = case_document(f, backend, version)
    header = (SCHEMA_LINE
              + f"# Kept by `qdq-conformance fuzz --backend {backend}`: {f.hits} hit(s) of this signature."
              "\n# It fails on that backend and passes on the oracle (qdq-conformance run --backend "
              "reference).\n")
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=110, allow_unicode=False)
    path.write_text(header + text, encoding="utf-8")
    return path


def check_case_file(path: Path, case_id: str) -> None:
    """Load the written file with the corpus's loader: it must give exactly the finding's case."""
    cases = load_file(path)
    if [c.id for c in cases] != [case_id]:
        raise RuntimeError(f"{path}: expands to {[c.id for c in cases]}, not {case_id}")


def write_finding(out: Path, f: Finding, backend: str, version: str) -> FindingRow:
    """Write one finding's case file and folder; what findings.json says of it."""
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
    data_folder = test_name(f.case, f.form)
    write_folder(folder / data_folder, f.case, f.form)
    repro = f.record.get("repro")
    if repro:
        (folder / "repro.py").write_text(str(repro) + "\n", encoding="utf-8")
    (folder / "record.json").write_text(encode_record(f.record, indent=1) + "\n", encoding="utf-8")
    d = f.description
    return {"signature": f.signature, "parts": f.parts, "hits": f.hits, "first_example": f.first,
            "case_id": f.case.id, "form": f.form, "status": f.record.get("status"),
            "message": f.record.get("message"), "shape": list(d.x_shape), "elements": math.prod(d.x_shape),
            "distinct_x_values": d.distinct_values, "case_file": str(case_file.relative_to(out)),
            "folder": str(folder.relative_to(out)),
            "model": str((folder / data_folder / "model.onnx").relative_to(out)),
            "repro": str((folder / "repro.py").relative_to(out)) if repro else None,
            "case_file_problem": problem, "root_cause": list(root_cause(f.record))}


def root_cause(record: CaseRecord) -> tuple[str, ...]:
    """A failure's root cause: the signature ``qdq-conformance findings`` and the report group failing cases
    by (``reports/findings.py``: operator, type pattern, granularity, graph form, status, kind of mismatch,
    and the message with its numbers, names and types masked), so that a fuzzed example and a corpus case that
    fail for one reason share it, whatever their versions, concrete types and values."""
    return signature(record, str(record.get("form") or "-"))


@dataclass
class Exposed:
    """A corpus case that exposes a root cause: the first one read, how many do, and whether an expectation
    entry covers it (its reason)."""

    case: str
    cases: int = 1
    expected: str | None = None


def corpus_index(paths: Sequence[Path]) -> dict[tuple[str, ...], Exposed]:
    """The root causes of the failing cases of corpus runs' results files (expected by an expectation or not),
    each with its first case; raises :class:`qdq_conformance.results.ResultsError` on a file that cannot
    be read."""
    out: dict[tuple[str, ...], Exposed] = {}
    for path in paths:
        _, records, _ = read(path)
        for rec in records:
            if rec.get("status") not in FAILING:
                continue
            key = root_cause(rec)
            reason = expectation_of(rec).get("reason") if standing_of(rec) is Standing.EXPECTED else None
            if key in out:
                out[key].cases += 1
                out[key].expected = out[key].expected or reason
            else:
                out[key] = Exposed(str(rec.get("id")), 1, reason)
    return out


def judge(rows: Sequence[FindingRow], corpus: dict[tuple[str, ...], Exposed] | None) -> Judged:
    """Mark each finding row (``write_finding``'s) with its root cause and whether a failing
    corpus case exposes it (``in_corpus``: True, False, or None without corpus results); the counts."""
    causes: dict[tuple[str, ...], bool] = {}
    for row in rows:
        key = tuple(row["root_cause"])
        row["root_cause"] = list(key)
        row.setdefault("root_cause_id", Group(key).id)
        hit = None if corpus is None else corpus.get(key)
        row["in_corpus"] = None if corpus is None else hit is not None
        row["corpus_case"] = hit.case if hit else None
        row["corpus_expected"] = hit.expected if hit else None
        # new: neither a deviation the expectations record (known.py) nor one a failing corpus case exposes
        row["new"] = not row.get("known") and not row["in_corpus"]
        causes[key] = causes.get(key, False) or row["new"]
    return {"findings": len(rows), "root_causes": len(causes),
            "known_findings": sum(bool(r.get("known")) for r in rows),
            "new_findings": sum(r["new"] for r in rows),
            "new_root_causes": sum(causes.values())}


def finding_ids(rows: Sequence[FindingRow], records: Iterable[str]) -> None:
    """Each row's ``root_cause_id``: the id ``qdq-conformance findings`` gives its example's finding when it
    reads the fuzz run's results file (a case failing alike in both forms is one finding of form ``both``
    there)."""
    where: dict[tuple[str, str], str] = {}
    for g in group([decode_record(line) for line in records]):
        for case in g.cases:
            where[case] = g.id
    for row in rows:
        got = where.get((str(row.get("case_id")), str(row.get("form"))))
        if got:
            row["root_cause_id"] = got


def rejudge(out: Path, corpus: dict[tuple[str, ...], Exposed]
            ) -> tuple[list[FindingRow], dict[str, JSONValue]]:
    """Judge an earlier run's findings (``out/findings.json``) against corpus results again (after cases were
    added to the corpus, say); rewrites findings.json. Raises OSError / ValueError / KeyError on a folder that
    is not a fuzz run's."""
    path = out / "findings.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = data["findings"]
    for row in rows:
        if not row.get("root_cause"):  # (written before root causes were recorded: from the finding's record)
            row["root_cause"] = list(root_cause(decode_record((out / row["folder"]
                                                              / "record.json").read_bytes())))
    counts = judge(rows, corpus)
    data["summary"].update(counts)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return rows, data["summary"]


def write_results(path: Path, head: Header, records: Iterable[str], summary: Summary) -> int:
    writer = ResultsWriter(path)
    counts: dict[str, int] = {}
    for line in records:
        writer.write_line(line, head)
        status = decode_record(line)["status"]
        counts[status] = counts.get(status, 0) + 1
    writer.close({"counts": dict(sorted(counts.items())), **summary}, head)
    return writer.count


def table(rows: Sequence[FindingRow], width: int = 100) -> str:
    """The final table of findings, within ``width`` columns: per finding a line (its number, hits, its
    finding id as ``qdq-conformance findings`` names it, how it is judged, operator, types, granularity, form,
    shape), then what goes wrong. Judged: ``known`` (an expectation entry records it, its line), ``corpus`` (a
    failing corpus case exposes it), ``NEW``."""
    if not rows:
        return "no finding"
    lines = [f"{'#':>3} {'hits':>5} {'finding':9} {'judged':11} {'operator':26} {'types':24} "
             f"{'granularity':11}"]
    for k, r in enumerate(rows, 1):
        p = r["parts"]
        known = r.get("known")
        judged = f"known:{known['line']}" if known else "corpus" if r.get("in_corpus") else "NEW"
        shape = "x".join(map(str, r["shape"])) or "scalar"
        lines.append(f"{k:>3} {r['hits']:>5} {r.get('root_cause_id') or '-':9} {judged:11} "
                     f"{_cut(p['operator'], 26):26} {_cut(p['types'], 24):24} "
                     f"{_cut(p['granularity'], 11)}"[:width])
        detail = f"{p['mismatch']}; {p['form']} form, zero point {p['zero_point']}, attributes " \
                 f"{p['attributes']}, shape {shape}"
        lines.append("      " + _cut(detail, width - 6))
        if known:
            lines.append("      " + _cut(f"recorded by expectation line {known['line']} (corpus case "
                                         f"{known['case']}): {known['reason']}", width - 6))
    return "\n".join(lines)


def _cut(text: str, n: int) -> str:
    text = str(text)
    return text if len(text) <= n else text[: n - 1] + "…"
