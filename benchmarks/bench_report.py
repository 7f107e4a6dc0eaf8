"""HTML report at scale: size, render time, and time until usable in headless Chromium.

Writes a synthetic results file (mixed statuses; every non-passed case carries full details and a repro, as a
real run's do), renders it, opens it in Chromium and measures, side by side in one run: render time, page
ready (data decoded, first table drawn), a status filter, and a free-text search. Target (issue 5): a
10,000-case report stays under 10 MB and is usable within 2 seconds. Optionally renders a real results file
too.

    python benchmarks/bench_report.py [--cases 10000] [--results out/ci-ort.jsonl]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's tests/ (browser driver, data)

from qdq_conformance.reports.render import render_files  # noqa: E402
from tests.browser import Browser, find_chromium  # noqa: E402
from tests.test_report_browser import write_results  # noqa: E402


def _measure(exe: str, page: Path) -> tuple[float, float, float]:
    with Browser(exe) as b:
        start = time.monotonic()
        b.open(page)
        b.wait_for("document.body.dataset.ready === '1'")
        ready = time.monotonic() - start
        t = time.monotonic()
        b.eval("var s = document.getElementById('fstatus'); s.value = 'failed'; s.dispatchEvent(new "
               "Event('input'))")
        filt = time.monotonic() - t
        t = time.monotonic()
        b.eval("var q = document.getElementById('q'); q.value = 'int4'; q.dispatchEvent(new Event('input'))")
        search = time.monotonic() - t
    return ready, filt, search


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--results", type=Path, action="append", default=[],
                    help="also measure a real results file")
    args = ap.parse_args()
    exe = find_chromium()
    with tempfile.TemporaryDirectory() as tmp:
        inputs = [(f"synthetic {args.cases} cases", Path(tmp) / "synthetic.jsonl")]
        write_results(inputs[0][1], args.cases)
        inputs += [(str(p), p) for p in args.results]
        print(f"{'report':40} {'results MB':>10} {'html MB':>8} {'render s':>9} {'ready s':>8} "
              f"{'filter s':>9} {'search s':>9}")
        for label, res in inputs:
            t = time.perf_counter()
            page = render_files([res], Path(tmp) / "r.html")
            render = time.perf_counter() - t
            timings = _measure(exe, page) if exe else (float("nan"),) * 3
            print(f"{label[:40]:40} {res.stat().st_size / 1e6:10.1f} {page.stat().st_size / 1e6:8.2f} "
                  f"{render:9.2f} {timings[0]:8.2f} {timings[1]:9.3f} {timings[2]:9.3f}")
    if not exe:
        print("no chromium on PATH: browser timings not measured (apt-get install chromium)")


if __name__ == "__main__":
    main()
