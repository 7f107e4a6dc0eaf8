"""The public compliance table: several results files summarised as Markdown.

Per backend and operator version: passed / failed (failed, error, crashed, timeout, invalid-accepted) /
unsupported / implementation-defined; then, per backend, its most important findings in a sentence each: the
expectation entries covering the most failing cases (their reasons are written for people), or, for failures no
entry explains, the most frequent messages.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from qdq_conformance.runner.results import read

FAILING = ("failed", "error", "crashed", "timeout", "invalid-accepted")


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


def _findings(cases: list[dict[str, Any]], top: int) -> list[str]:
    by_reason: Counter = Counter()
    unexplained: Counter = Counter()
    for c in cases:
        if c["status"] not in FAILING:
            continue
        e = c.get("expectation")
        if e and e.get("reason"):
            by_reason[_summary(e["reason"])] += 1
        else:
            msg = re.sub(r"\b\d+\b", "N", (c.get("message") or "").splitlines()[0] if c.get("message") else "")
            unexplained[f"{c.get('operator')}: {msg[:160]}"] += 1
    lines = [f"{md(text)} ({n} cases)" for text, n in by_reason.most_common(top)]
    lines += [f"Not yet explained by an expectation entry: {md(text)} ({n} cases)"
              for text, n in unexplained.most_common(max(0, top - len(lines)) or 2)]
    return lines


def render_markdown(results: list[tuple[dict[str, Any], list[dict[str, Any]], Any]], top: int = 6,
                    command: str = "") -> str:
    out = ["# ONNX Q/DQ compliance table", ""]
    if command:
        out += [f"Regenerate with `{command}`.", ""]
    out += ["Counts are cases (each case in the graph forms run). *failed* includes error, crashed, timeout and "
            "invalid-accepted; *impl.-def.* cases depend on an entry of the ambiguity catalogue and passed by "
            "following one of its catalogued readings (one that follows none is failed).", ""]
    out += ["| backend | version | forms | passed | failed | unsupported | impl.-def. | score |",
            "|---|---|---|---:|---:|---:|---:|---:|"]
    for head, cases, _ in results:
        cnt = Counter(c["status"] for c in cases)
        bad = sum(cnt[s] for s in FAILING)
        judged = cnt["passed"] + bad
        score = f"{100 * cnt['passed'] / judged:.1f}%" if judged else "-"
        forms = ",".join(sorted({c.get("form") or "" for c in cases}))
        out.append(f"| {md(head.get('backend'))} | {md(head.get('backend_version'))} | {md(forms)} | {cnt['passed']} | {bad} | "
                   f"{cnt['unsupported']} | {cnt['implementation-defined']} | {score} |")
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
            cnt = t.get(key)
            cells.append("-" if not cnt else f"{cnt['passed']} / {sum(cnt[s] for s in FAILING)} / "
                                             f"{cnt['unsupported']}")
        out.append(f"| {md(key)} | " + " | ".join(cells) + " |")
    out.append("")
    out += ["## Findings", ""]
    for head, cases, _ in results:
        out.append(f"### {md(head.get('backend'))} {md(head.get('backend_version'))}")
        out.append("")
        found = _findings(cases, top)
        out += [f"- {line}" for line in found] or ["- No failing case."]
        out.append("")
    return "\n".join(out)


def render_files(paths: list[Path], out: Path, command: str = "") -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_markdown([read(p) for p in paths], command=command) + "\n", encoding="utf-8")
    return out
