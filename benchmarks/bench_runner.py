"""The runner's cost against a bare loop, measured side by side in one run.

Bare loop: every default-tier case in both graph forms, models serialized beforehand, each loaded into an ONNX
Runtime session and run once (exotic types through OrtValue, as the runner must), in one process.
Runner: ``pytest --backend=ort`` on the same cases, as ``qdq-conformance run`` runs it, with the corpus cache
already filled, as after a first run (collection, backend
worker processes on every core, comparison, expectations and the results file included); ``--xdist N`` also
times the same run under pytest-xdist with N workers.
Target (issue 4): runner <= 1.5x the bare loop on 2 cores.

    python benchmarks/bench_runner.py [--rounds N] [--xdist N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def prepare() -> list[tuple[Any, Any]]:
    from qdq_conformance.generators.corpus import load

    corpus = load()
    return [(case.model(form), case.feeds(form)) for case in corpus.cases for form in ("runtime", "initializer")]


def bare_loop(prepared: list[tuple[Any, Any]]) -> float:
    from qdq_conformance.backends.ort_io import run_session, session

    t0 = time.perf_counter()
    for model, feeds in prepared:
        try:
            run_session(session(model), feeds)
        except Exception:  # noqa: S112 - a failing model still counts as loaded and tried
            continue
    return time.perf_counter() - t0


def runner(xdist: int = 0) -> tuple[float, str]:
    with tempfile.TemporaryDirectory() as tmp:
        from qdq_conformance.plugin.options import RUN_FLAGS

        cmd = [sys.executable, "-m", "pytest", "--backend=ort", *RUN_FLAGS, "--tb=no",  # as `qdq-conformance run`
               "--results", os.path.join(tmp, "r.jsonl")] + (["-n", str(xdist)] if xdist else [])
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        dt = time.perf_counter() - t0
    return dt, p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr[-300:]


def warm_cache() -> None:
    """Expand the corpus into its cache once (the bare loop also builds its models before its clock starts)."""
    subprocess.run([sys.executable, "-m", "pytest", "--backend=ort", "--collect-only", "-q", "-p", "no:cacheprovider"],
                   cwd=ROOT, capture_output=True, text=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, metavar="N",
                    help="alternate bare loop and runner N times (ABBA order) and report every ratio and their "
                         "median: this machine's speed drifts by up to 30%% between minutes (default 3)")
    ap.add_argument("--xdist", type=int, default=0, metavar="N", help="also time the run with pytest-xdist -n N")
    args = ap.parse_args()
    warm_cache()
    prepared = prepare()
    ratios = []
    for k in range(max(1, args.rounds)):
        if k % 2 == 0:
            t_bare = bare_loop(prepared)
            t_run, tail = runner()
        else:
            t_run, tail = runner()
            t_bare = bare_loop(prepared)
        ratios.append(t_run / t_bare)
        print(f"round {k + 1}: bare loop (1 process) {len(prepared)} model runs in {t_bare:.1f} s; "
              f"runner (pytest --backend=ort, {os.cpu_count()} cores) {t_run:.1f} s [{tail}]; "
              f"ratio {ratios[-1]:.2f}", flush=True)
    print(f"runner / bare loop: {statistics.median(ratios):.2f} (median of {len(ratios)}; "
          f"range {min(ratios):.2f}-{max(ratios):.2f}; target <= 1.5)")
    if args.xdist:
        t_bare = bare_loop(prepared)
        t_x, tail = runner(args.xdist)
        print(f"runner under pytest-xdist -n {args.xdist}: {t_x:.1f} s against a bare loop of {t_bare:.1f} s "
              f"({t_x / t_bare:.2f}x)   [{tail}]")


if __name__ == "__main__":
    main()
