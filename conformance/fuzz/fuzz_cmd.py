"""``qdq-conformance fuzz``: the command line (arguments, progress line, final table, exit status)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from .. import opspecs
from ..backends.names import help_text as backend_names
from ..cachedir import cache_root
from ..domain import BOTH, FORMS, TEMPLATE_GRANULARITIES, Form, forms_of
from ..install import install_hint
from ..progress import duration
from ..results import ResultsError, header
from ..runner import expectations as expectations_mod
from ..runner.isolation import BackendStartError
from ..runner.pool import CasePool
from . import fuzz_output as export
from . import known
from .search import Executor, Search

EXIT = {0: "no new finding: every example passed, was unsupported or implementation-defined, or failed as an "
           "expectation says",
        1: "new findings: at least one example failed unexpectedly in a way neither an expectation entry "
           "records (a corpus case that entry covers failing with the same root cause) nor, with "
           "--corpus-results or --judge, a failing case of the corpus exposes (each finding kept as a case "
           "file under --out)",
        2: "interrupted (Ctrl-C: what was found so far is kept), or bad arguments (no operator version "
           "matches --ops / --versions / --types, a bad --budget), or --out, --corpus-results or --judge "
           "cannot be used",
        4: "the backend cannot be created, or its expectation file cannot be read"}


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``10m``, ``1h``, ``1m30s`` -> seconds (argparse's type)."""
    m = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", text)
    if not text.strip() or m is None or not any(m.groups()):
        raise argparse.ArgumentTypeError(f"expected a duration such as 90s, 10m or 1h, got {text!r}")
    h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    total = h * 3600 + mi * 60 + s
    if total <= 0:
        raise argparse.ArgumentTypeError("the budget must be more than 0 seconds")
    return total


def _positive(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number, 1 or more, got {text!r}")
    return int(text)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", metavar="NAME",
                   help="backend to fuzz, as for run: " + backend_names())
    p.add_argument("--budget", type=parse_duration, default=None, metavar="DURATION",
                   help="time for the search, e.g. 90s, 10m, 1h (default: 10m, or none with --examples); the "
                        "shrinking of a finding may run up to a minute past it")
    p.add_argument("--examples", type=_positive, default=None, metavar="N",
                   help="stop after N distinct examples (with a seed, the same N gives the same findings)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default: %(default)s)")
    p.add_argument("--ops", nargs="+", default=[], metavar="OP",
                   help="operators to fuzz: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, "
                        "com.microsoft::QuantizeLinear, ... (default: every one)")
    p.add_argument("--versions", nargs="+", type=int, default=[], metavar="V",
                   help="operator versions to fuzz (default: every one)")
    p.add_argument("--types", nargs="+", default=[], metavar="X/SCALE/Y",
                   help="glob patterns on the type combination, e.g. 'float/float/uint8' or '*/float8*' "
                        "(x/y for DynamicQuantizeLinear; default: every allowed one)")
    p.add_argument("--granularity", nargs="+", default=[], metavar="KIND",
                   choices=TEMPLATE_GRANULARITIES,
                   help="granularities to draw (default: every one the version has)")
    p.add_argument("--form", choices=(*FORMS, BOTH), default=Form.RUNTIME.value,
                   help="graph form(s) each example runs in (default: %(default)s)")
    p.add_argument("--out", default="fuzz-out", metavar="DIR",
                   help="where findings, case files and results go (default: %(default)s/)")
    p.add_argument("--expectations", default=None, metavar="PATH|none",
                   help="expectation file (default: the backend's bundled one); a failure it expects is no "
                        "finding")
    p.add_argument("--case-timeout", type=float, default=30.0, metavar="S",
                   help="per-example limit in the backend's worker (default: %(default)s s)")
    p.add_argument("--corpus-results", nargs="+", default=[], metavar="PATH",
                   help="results files of corpus runs of the same backend (one per graph form, say): each "
                        "finding is marked as exposed by the corpus (a failing case with the same root "
                        "cause: the signature qdq-conformance findings groups by, numbers in messages "
                        "masked) or NEW")
    p.add_argument("--judge", default=None, metavar="DIR",
                   help="run nothing: judge the findings of an earlier run's --out DIR against "
                        "--corpus-results again (after cases were added to the corpus, say), rewrite its "
                        "findings.json, print the table")
    p.add_argument("--no-database", action="store_true",
                   help="neither read nor write the Hypothesis database (<cache>/fuzz/hypothesis)")


def _progress(search: Any, start: float, budget: float | None, total: int | None) -> str:
    parts = [f"fuzz: {search.tried:,}" + (f"/{total:,}" if total else "") + " examples",
             f"{len(search.findings)} finding(s)"]
    if budget is not None:
        parts.append(f"{duration(max(0.0, budget - (time.monotonic() - start)))} left")
    return ", ".join(parts)


def _config_digest(args: argparse.Namespace, forms: tuple[str, ...]) -> str:
    return json.dumps({"backend": args.backend, "ops": sorted(args.ops), "versions": sorted(args.versions),
                       "types": sorted(args.types), "granularity": sorted(args.granularity), "forms": forms},
                      sort_keys=True)


def run(args: argparse.Namespace) -> int:
    if args.judge is not None:
        return _judge(Path(args.judge), args.corpus_results, export)
    if not args.backend:
        print("error: the following arguments are required: --backend", file=sys.stderr)
        return 2
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        print(f"error: qdq-conformance fuzz needs Hypothesis: {install_hint('fuzz')}", file=sys.stderr)
        return 2
    from .strategies import (  # imports Hypothesis, an optional dependency (the fuzz extra)
        combinations,
        spec_keys,
    )

    keys = spec_keys(args.ops, args.versions)
    keys = [k for k in keys if combinations(opspecs.get(*k), args.types)]
    if not keys:
        print("error: no operator version matches --ops / --versions / --types (see qdq-conformance specs)",
              file=sys.stderr)
        return 2
    forms = forms_of(args.form)
    budget = args.budget if args.budget is not None else (None if args.examples else 600.0)
    out = Path(args.out)
    corpus: dict[tuple[str, ...], Any] | None = None
    if args.corpus_results:
        try:
            corpus = export.corpus_index([Path(p) for p in args.corpus_results])
        except ResultsError as e:
            print(f"error: --corpus-results: {e}", file=sys.stderr)
            return 2
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "cases").mkdir(exist_ok=True)
        for old in (out / "cases").glob("fuzz-*.yaml"):  # the folder holds this run's findings only
            old.unlink()
    except OSError as e:
        print(f"error: --out {out}: {e.strerror or e}", file=sys.stderr)
        return 2
    pool = CasePool(args.backend, {}, args.case_timeout, size=1)
    try:
        pool.start()
    except BackendStartError as e:
        print(f"error: {e}", file=sys.stderr)
        return 4
    try:
        try:
            if args.expectations == "none":
                exp = expectations_mod.Expectations()
            elif args.expectations:
                exp = expectations_mod.load(Path(args.expectations), pool.version, pool.name)
            else:
                exp = expectations_mod.find(pool.name, pool.version)
        except expectations_mod.ExpectationError as e:
            print(f"error: --expectations: {e}", file=sys.stderr)
            return 4
        pool.set_expectations(str(exp.path) if exp.path else None)
        return _search(args, pool, keys, forms, budget, out, corpus, exp, cache_root(), export, Executor,
                       Search, header)
    finally:
        pool.close()


def _judge(out: Path, corpus_results: list[str], export: Any) -> int:
    if not corpus_results:
        print("error: --judge needs --corpus-results", file=sys.stderr)
        return 2
    try:
        corpus = export.corpus_index([Path(p) for p in corpus_results])
    except ResultsError as e:
        print(f"error: --corpus-results: {e}", file=sys.stderr)
        return 2
    try:
        rows, summary = export.rejudge(out, corpus)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"error: --judge {out}: not the --out folder of a fuzz run ({type(e).__name__}: {e})",
              file=sys.stderr)
        return 2
    print(export.table(rows))
    print(f"fuzz {summary.get('backend')} {summary.get('backend_version')}: {summary['findings']} distinct "
          f"finding(s), {summary['root_causes']} root cause(s); {summary.get('known_findings') or 0} known "
          "(an expectation entry records it); new (no expectation records it, no failing case of the corpus "
          f"exposes it): {summary['new_findings']} finding(s), {summary['new_root_causes']} root cause(s)")
    return 1 if summary["new_findings"] else 0


def _search(args: argparse.Namespace, pool: Any, keys: list[tuple[str, str, int]], forms: tuple[str, ...],
            budget: float | None, out: Path, corpus: dict[tuple[str, ...], Any] | None, exp: Any, cache: Path,
            export: Any, executor_cls: Any, search_cls: Any, header: Any) -> int:
    start = time.monotonic()
    tty = sys.stderr.isatty()
    last = [0.0]

    def progress(search: Any) -> None:
        now = time.monotonic()
        if tty and now - last[0] >= 0.2:
            last[0] = now
            print("\r" + _progress(search, start, budget, args.examples) + "\x1b[K", end="", file=sys.stderr,
                  flush=True)

    database = None if args.no_database else cache / "fuzz" / "hypothesis"
    search = search_cls(executor_cls(pool, forms), keys, tuple(args.types), tuple(args.granularity),
                        seed=args.seed, examples=args.examples,
                        deadline=None if budget is None else start + budget,
                        shrink_deadline=None if budget is None else start + budget + min(60.0, 0.1 * budget),
                        database=database, config=_config_digest(args, forms), on_progress=progress)
    interrupted = False
    try:
        search.run()
    except KeyboardInterrupt:
        interrupted = True
    if tty:
        print("\r\x1b[K", end="", file=sys.stderr)
    elapsed = time.monotonic() - start
    rows = []
    for f in sorted(search.findings.values(), key=lambda f: (-f.hits, f.signature)):
        if f.description is None or f.case is None:
            continue
        row = export.write_finding(out, f, pool.name, pool.version)
        if row["case_file_problem"]:
            print(f"warning: {row['case_file']} does not load back as its case: {row['case_file_problem']}",
                  file=sys.stderr)
        rows.append(row)
    if not interrupted:  # (a deviation the bundled expectations record is known, not new: known.py)
        known.known(rows, pool, exp)
    export.finding_ids(rows, search.executor.records_in_order())
    counts = export.judge(rows, corpus)
    stats = {"backend": pool.name, "backend_version": pool.version, "seed": args.seed,
             "examples_tried": search.tried, "examples_rejected": search.rejected,
             "backend_calls": search.executor.calls, **counts,
             "seconds": round(elapsed, 1), "interrupted": interrupted, "forms": list(forms),
             "ops": args.ops, "versions": args.versions, "types": args.types, "granularity": args.granularity,
             "expectations": str(exp.path) if exp.path else None}
    (out / "findings.json").write_text(json.dumps({"summary": stats, "findings": rows}, indent=1) + "\n",
                                       encoding="utf-8")
    head = header(pool.name, pool.version,
                  {"fuzz": {k: stats[k] for k in ("seed", "forms", "ops", "versions")},
                   "expectations": stats["expectations"],
                   "expectations_status": exp.status(pool.name, pool.version),
                   "forms": list(forms)})
    n = export.write_results(out / "results.jsonl", head, search.executor.records_in_order(),
                             {"duration_s": round(elapsed, 1), "fuzz": stats, "interrupted": interrupted})
    print(export.table(rows))
    new = (f" ({counts['root_causes']} root cause(s); {counts['known_findings']} known: an expectation entry "
           "records it; new (no expectation records it"
           + (", no failing case of the corpus exposes it" if corpus
               is not None else "")
           + f"): {counts['new_findings']} finding(s), {counts['new_root_causes']} root cause(s))")
    print(f"fuzz {pool.name} {pool.version}: {search.tried:,} examples tried ({search.rejected:,} rejected, "
          f"{search.executor.calls:,} backend calls), {len(rows)} distinct finding(s){new}, "
          f"{duration(elapsed)}; case files in {out / 'cases'}, results ({n:,} records) in "
          f"{out / 'results.jsonl'}")
    if interrupted:
        return 2
    return 1 if counts["new_findings"] else 0
