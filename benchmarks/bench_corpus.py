"""Corpus generation and export: case count, time and size, and how cost grows with the number of cases.

Runs, side by side in one process: expansion alone (load + validate + oracle), export of half of the case
files, and export of the whole default corpus; prints seconds, cases, bytes written, and the cost per case
of the half and the whole (equal per-case costs mean linear growth). `generate` runs with its default (one
worker per core) and with one worker. Target (issue 3): the default corpus
generates and exports in <= 60 s on 2 cores and fits in <= 100 MB.

    python benchmarks/bench_corpus.py [--dir DIR] [--form runtime|both]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from qdq_conformance.generators.corpus import case_files, load
from qdq_conformance.generators.export import export
from qdq_conformance.generators.parallel import generate


def _bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=None, help="where to write (default: a temporary folder)")
    ap.add_argument("--form", choices=("runtime", "both"), default="runtime")
    args = ap.parse_args()
    forms = ("runtime", "initializer") if args.form == "both" else ("runtime",)
    base = Path(args.dir or tempfile.mkdtemp(prefix="qdq-bench-"))
    files = case_files()

    t0 = time.perf_counter()
    corpus = load(files)
    t_expand = time.perf_counter() - t0
    print(f"expand only: {len(corpus.cases)} cases from {len(files)} files in {t_expand:.1f} s")

    # What a user runs: `qdq-conformance generate`, expansion and export together, with its default of one
    # worker per core, and with one worker beside it.
    for label, jobs in (("default jobs", None), ("-j 1", 1)):
        out = base / f"generate-{jobs}"
        t0 = time.perf_counter()
        manifest, errors = generate(files, out, forms, jobs=jobs)
        t_total = time.perf_counter() - t0
        assert not errors, errors
        size = _bytes(out)
        print(f"generate ({label}, expand + export): {manifest['case_count']} cases, {t_total:.1f} s, "
              f"{size / 1e6:.1f} MB")
    rows = []
    # Linearity: the same mix of cases (every second one) against all of them, export only.
    for label, subset in (("half", corpus.cases[::2]), ("all", corpus.cases)):
        out = base / label
        t0 = time.perf_counter()
        manifest = export(subset, out, forms)
        dt = time.perf_counter() - t0
        rows.append((label, manifest["case_count"], dt, _bytes(out)))
    print(f"{'export':8} {'cases':>7} {'seconds':>8} {'MB':>7} {'ms/case':>8}   (forms: {', '.join(forms)})")
    for label, n, dt, size in rows:
        print(f"{label:8} {n:7} {dt:8.1f} {size / 1e6:7.1f} {1000 * dt / n:8.2f}")
    (_, n1, t1, _), (_, n2, t2, _) = rows
    print(f"export cost per case, all / half: {(t2 / n2) / (t1 / n1):.2f} (1.0 = linear)")
    # Deleted only now: on a disk mounted with `discard`, deleting a large tree slows the writes that follow.
    if args.dir is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
