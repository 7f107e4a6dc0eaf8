"""Regenerate the README's report screenshots (docs/report-ort.png, docs/report-ort-case.png) from a real run.

    qdq-conformance run --backend ort --results ort.jsonl      # a few minutes
    python docs/make_screenshots.py ort.jsonl [--out docs] [--width 1280]

The report is rendered from the results file and opened in headless Chromium (tests/browser.py) at --width px;
before each screenshot the layout is checked as the tests check it (nothing wider than the page; no header, plain
sentence or number broken across lines: tests/browser.py's SPLIT_WORDS_JS), and a violation is an error (exit 1).
Screenshots: the first screen (verdict, findings); then the example of the first finding about wrong values, opened
through the report's own deep link (report.html#case=ID&form=F), scrolled to its table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # (tests.browser: the project's Chromium driver)

from qdq_conformance.reports.render import render_files  # noqa: E402
from tests.browser import SPLIT_WORDS_JS, Browser, find_chromium  # noqa: E402


def check_layout(b: Browser) -> list[str]:
    problems = list(b.eval(SPLIT_WORDS_JS))
    if b.eval("document.documentElement.scrollWidth") > b.eval("document.documentElement.clientWidth"):
        problems.append("the page scrolls sideways")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", help="results file of a real run")
    ap.add_argument("--out", default=str(ROOT / "docs"), help="folder of the PNGs (default: docs/)")
    ap.add_argument("--width", type=int, default=1280)
    args = ap.parse_args()
    exe = find_chromium()
    if exe is None:
        print("error: no chromium on PATH", file=sys.stderr)
        return 2
    out = Path(args.out)
    with tempfile.TemporaryDirectory() as tmp:
        page = render_files([Path(args.results)], Path(tmp) / "report.html")
        with Browser(exe, width=args.width, height=900) as b:
            b.open(page)
            b.wait_for("document.body.dataset.ready === '1'", timeout=120)
            problems = check_layout(b)
            b.screenshot(out / "report-ort.png")
            link = b.eval("var rows = [...document.querySelectorAll('#findings tbody tr')];"
                          "var row = rows.find(tr => (tr.querySelector('.plain') || tr).textContent"
                          ".indexOf(' returns ') >= 0) || rows[0];"
                          "row ? row.querySelector('a[data-open]').getAttribute('href') : ''")
            if link:
                b.open(page, link.lstrip("#"))
                b.wait_for("document.querySelector('#cases tr.detail') !== null", timeout=120)
                b.eval("var t = document.querySelector('#cases tr.detail table.elements') || "
                       "document.querySelector('#cases tr.detail'); t.scrollIntoView({block: 'start'})")
                problems += check_layout(b)
                b.screenshot(out / "report-ort-case.png")
    for p in problems:
        print(f"layout: {p}", file=sys.stderr)
    print(f"wrote {out / 'report-ort.png'}" + (f" and {out / 'report-ort-case.png'}" if link else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
