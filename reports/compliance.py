"""The public compliance table: several results files summarised as Markdown.

Per backend and operator version: passed / failed (failed, error, crashed, timeout, invalid-accepted) /
unsupported / implementation-defined; then, per backend, its findings: the failing cases grouped by signature
as the report groups them (``findings.group``), under the expectation entries that explain them (their reasons
are written for people, the entries covering the most failing cases first), then the findings no entry
explains.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Final

from qdq_conformance.domain import FAILING, HARNESS, RunStatus
from qdq_conformance.results import CaseRecord, Header, Results
from qdq_conformance.results.merge import load_runs

from .findings import Finding, group, known_versions


def md(text: object) -> str:
    """Text from a results file made inert in Markdown: no raw HTML, no table cell breaks, no links."""
    s = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([|\[\]\\])", r"\\\1", s)


def _summary(text: str, limit: int = 700) -> str:
    """The reason whole when it is short; else its sentences up to ``limit`` characters."""
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text
    cut = 0
    for m in re.finditer(r"(?<=[a-z0-9)\"'])[.!?](?=\s+[A-Z(\"])", text):
        if m.end() > limit:
            break
        cut = m.end()
    return text[:cut] if cut >= 120 else text[: limit - 3].rstrip() + "..."


def _findings(cases: list[CaseRecord], top: int, per_entry: int = 3) -> list[str]:
    """Per backend: the expectation entries covering the most failing case-forms, each with its reason
    (written for people) and the findings (:func:`findings.group`) it explains; then the findings no entry
    explains."""
    found = group(cases)
    known = known_versions(cases)
    by_entry: dict[Any, list[Finding]] = defaultdict(list)
    reasons: dict[Any, str] = {}
    for f in found:
        if f.entries:
            main = max(f.entries.values(), key=lambda e: e["cases"])  # a finding sits under its main entry
            by_entry[main["line"]].append(f)
            reasons[main["line"]] = main.get("reason") or ""
    entries = sorted(by_entry.items(), key=lambda kv: -sum(f.expected for f in kv[1]))
    lines = []
    for line, fs in entries[:top]:
        lines.append(f"{md(_summary(reasons[line]))} ({sum(f.expected for f in fs)} cases)")
        lines += [f"  - {md(f.description(known))} ({f.expected} cases)" for f in fs[:per_entry]]
        if len(fs) > per_entry:
            rest = fs[per_entry:]
            lines.append(f"  - and {len(rest)} more finding{'s' * (len(rest) != 1)} "
                         f"({sum(f.expected for f in rest)} cases)")
    if len(entries) > top:
        rest_fs = [f for _, fs in entries[top:] for f in fs]
        n, more = len(entries) - top, sum(f.expected for f in rest_fs)
        lines.append(f"{n} more expectation entr{'y explains' if n == 1 else 'ies explain'} {more} more "
                     f"case{'s' * (more != 1)} ({len(rest_fs)} finding{'s' * (len(rest_fs) != 1)}).")
    new = [f for f in found if f.new]
    lines += [f"Not yet explained by an expectation entry: {md(f.description(known))} ({f.new} cases)"
              for f in new[: max(2, top - len(entries))]]
    if len(new) > max(2, top - len(entries)):
        lines.append(f"... and {len(new) - max(2, top - len(entries))} more findings no entry explains "
                     "(`qdq-conformance findings RESULTS` lists them).")
    return lines


def render_markdown(results: list[Results], top: int = 6,
                    command: str = "", appendix: str = "") -> str:
    out = ["# ONNX Q/DQ compliance table", ""]
    if command:
        out += [f"Regenerate with `{command}`.", ""]
    out += ["Counts are cases (each case in the graph forms run). *failed* includes error, crashed, timeout "
            "and invalid-accepted; *impl.-def.* cases depend on an entry of the ambiguity catalogue and "
            "passed by following one of its catalogued readings (one that follows none is failed).", ""]
    out += ["| backend | version | results of | forms | passed | failed | unsupported | impl.-def. | score |",
            "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for head, cases, _ in results:
        cnt = Counter(c["status"] for c in cases)
        bad = sum(cnt[s] for s in FAILING)
        judged = cnt[RunStatus.PASSED] + bad
        score = f"{100 * cnt['passed'] / judged:.1f}%" if judged else "-"
        forms = ",".join(sorted({c.get("form") or "" for c in cases}))
        if head.get("shard"):  # a run of one shard: its counts are of that shard only
            forms += f" (shard {head['shard']})"
        out.append(f"| {md(head.get('backend'))} | {md(head.get('backend_version'))} | {md(run_date(head))} "
                   f"| {md(forms)} | {cnt['passed']} | {bad} | {cnt['unsupported']} | "
                   f"{cnt['implementation-defined']} | {score} |")
    out.append("")
    harness = [(head, n) for head, cases, _ in results
               if (n := sum(1 for c in cases if c["status"] in HARNESS))]
    if harness:  # the tool's own fault: in no column of the backend's results
        out += ["HARNESS ERRORS (qdq-conformance's own code raised: the fault is the tool's, not the "
                "backend's; in no column above): "
                + ", ".join(f"{md(h.get('backend'))} {md(h.get('backend_version'))}: {n} case-forms"
                            for h, n in harness) + ".", ""]
    kept = [h for h, _, _ in results if h.get(KEPT)]
    if kept:
        out += [f"{', '.join(md(h.get('backend')) for h in kept)}: not run when this table was regenerated "
                "(not installed on that machine, or left to its kept results with --from-kept); "
                + ("its row and column come" if len(kept) == 1 else "their rows and columns come")
                + f" from the kept results of the date shown ({md(', '.join(str(h[KEPT]) for h in kept))})."]
        out += [f"{md(h.get('backend'))}'s kept results are reconstructed: {md(h['reconstructed'])}."
                for h in kept if h.get("reconstructed")]
        out.append("")
    keys = sorted({f"{c.get('domain')}::{c.get('operator')}-{c.get('version')}" for _, cases, _ in results
                   for c in cases})
    out += ["## Per operator version (passed / failed / unsupported)", ""]
    out.append("| operator version | " + " | ".join(md(h.get("backend", "?")) for h, _, _ in results) + " |")
    out.append("|---|" + "---|" * len(results))
    tables = []
    for _, cases, _ in results:
        t: dict[str, Counter] = defaultdict(Counter)
        for c in cases:
            t[f"{c.get('domain')}::{c.get('operator')}-{c.get('version')}"][c["status"]] += 1
        tables.append(t)
    for key in keys:
        cells = []
        for t in tables:
            row = t.get(key)
            cells.append("-" if not row else f"{row['passed']} / {sum(row[s] for s in FAILING)} / "
                                             f"{row['unsupported']}")
        out.append(f"| {md(key)} | " + " | ".join(cells) + " |")
    out.append("")
    out += ["## Findings", "",
            f"What each backend's run finds, grouped by signature: [{FINDINGS_PAGE}]({FINDINGS_PAGE}).", ""]
    if appendix:
        out += [appendix.rstrip("\n"), ""]
    return "\n".join(out)


def render_findings(results: list[Results], top: int = 6, command: str = "") -> str:
    """The page ``docs/findings.md``: each backend's findings with the version and date of the run they come
    from (generated with the compliance table from the same results files, never edited by hand)."""
    out = ["# What each backend's run finds", ""]
    if command:
        out += [f"<!-- Generated by `{command}` from results files; do not edit by hand. -->", ""]
    out += ["Failing case-forms grouped into findings (one per signature, as `qdq-conformance findings` and "
            "the report group them), under the expectation entries that explain them. The counts per "
            f"operator version are in [{COMPLIANCE_PAGE}]({COMPLIANCE_PAGE}).", ""]
    out += _graph_section(results)
    for head, cases, _ in results:
        out.append(f"## {md(head.get('backend'))} {md(head.get('backend_version'))}")
        out.append("")
        forms = ",".join(sorted({c.get("form") or "" for c in cases}))
        out.append(f"Results of {md(run_date(head))}"  # (run_date marks kept results)
                   + f", graph forms {md(forms)}, onnx "
                     f"{md(head.get('onnx_version') or head.get('onnx') or '?')}.")
        out.append("")
        found = _findings(cases, top)
        out += [line if line.startswith("  - ") else f"- {line}" for line in found] or ["- No failing case."]
        out.append("")
    return "\n".join(out)


def _graph_section(results: list[Results]) -> list[str]:
    """Graph cases per backend: failing templates by defect (``rewrite``: the backend's optimizer changes
    values its own node-by-node run gets right; ``node``: a node is wrong on its own), each with one case
    id."""
    rows = []
    for head, cases, _ in results:
        graph = [c for c in cases if c.get("operator") == "graph"]
        if not graph:
            continue
        bad: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
        for c in graph:
            if c["status"] in FAILING:
                bad[(str(c.get("defect") or "-"), _template(c))].append((c["id"], str(c.get("form"))))
        passed = sum(c["status"] == RunStatus.PASSED for c in graph)
        rows.append(f"- **{md(head.get('backend'))} {md(head.get('backend_version'))}**"
                    f"{' (' + md(head['optimization']) + ')' if head.get('optimization') else ''}: {passed} "
                    f"of {len(graph)} graph case-forms pass; "
                    + (", ".join(f"{d}: {sum(1 for k in bad if k[0] == d)} template(s)"
                                 for d in ("rewrite", "node")
                                 if any(k[0] == d for k in bad)) or "no failing graph case"))
        rows += [f"  - {md(defect)}: {md(tpl)} ({len(ids)} case-forms, e.g. `{ids[0][0]}`, {md(ids[0][1])} "
                 "form)"
                 for (defect, tpl), ids in sorted(bad.items())]
    if not rows:
        return []
    return ["## Graph cases: rewrite or node", "",
            "A failing graph case is a *rewrite* when the backend's own node-by-node run of the graph (each "
            "node its own model, outputs fed forward) gives the expected values, and a *node* defect "
            "otherwise.",
            "", *rows, ""]


def _template(rec: CaseRecord) -> str:
    """A graph case's template id (``requant-chain-coarser``), from its record."""
    return str(rec.get("template") or rec["id"]).rpartition("#")[2]


#: The header key :func:`load_marked` sets on a run read from a kept results file: the file it came from.
KEPT: Final = "kept_results"


def run_date(head: Header) -> str:
    """The day a run started (its header's ``started``), marked when it comes from kept results."""
    day = str(head.get("started") or "?")[:10]
    return f"{day} (kept)" if head.get(KEPT) else day


def load_marked(paths: list[Path], kept: list[Path]) -> list[Results]:
    """The runs of ``paths``; those read from ``kept`` (a backend that could not run here) marked
    :data:`KEPT`."""
    runs = load_runs(paths)
    for path, (head, _, _) in zip(paths, runs, strict=True):
        if path in kept:
            head[KEPT] = str(path)
    return runs


#: the two pages the compliance command writes, side by side
COMPLIANCE_PAGE = "compliance.md"
FINDINGS_PAGE = "findings.md"


def write(results: list[Results], out: Path, command: str = "", appendix: str = "") -> Path:
    """The compliance table at ``out`` (``appendix``: Markdown after it, the history of a backend's releases)
    and the findings page beside it (``findings.md``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_markdown(results, command=command, appendix=appendix) + "\n", encoding="utf-8")
    (out.parent / FINDINGS_PAGE).write_text(render_findings(results, command=command) + "\n",
                                            encoding="utf-8")
    return out


def render_files(paths: list[Path], out: Path, command: str = "") -> Path:
    return write(load_runs(paths), out, command)
