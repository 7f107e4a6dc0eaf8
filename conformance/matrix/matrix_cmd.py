"""Run the corpus on several releases of one backend (ort, openvino), each in its own environment, and write
the history table: findings as rows, releases as columns, each finding's first bad and first good release."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..domain import BOTH, FORMS
from ..reports import release_table as history
from ..results import Results, ResultsError
from ..results import kept as archive
from ..results.merge import load_run
from ..runner.expectations import ExpectationError
from . import expectations_writer
from .environments import EnvironmentMaker, UvEnvironments, requirement_of
from .releases import Distribution, ReleaseError, distribution, expand, index_versions
from .runs import ReleaseRun, results_name, run_release

#: exit statuses
EXIT = {0: "every release's run exited 0 (with --write-expectations: the file was written)",
        1: "a release's run did not exit 0 (a failure no expectation entry explains, a stale entry under "
           "--strict-expectations, nothing tested ...: the table says which)",
        2: "usage: --versions names no release, a results file cannot be read",
        4: "a release's environment cannot be made (no uv, a release the index does not offer for this "
           "Python, no network), or its run ran another version"}

HISTORY_DIR = "docs/results/history"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", required=True, metavar="NAME", help="ort or openvino")
    p.add_argument("--versions", required=True, metavar="SPEC",
                   help="releases: 1.20.1,1.24.4,1.32.0 (floor: the newest patch of the oldest minor release "
                        "this tool supports; newest: the newest release), or a PEP 440 range ('>=1.24', "
                        "'>=1.20,<1.30'): the newest patch of each minor release in it that the package "
                        "index offers")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="where each release's results file and log, and the table (matrix.html, matrix.md) "
                        "go (default: out/matrix/BACKEND)")
    p.add_argument("--reuse", action="store_true",
                   help="keep a release's results file in --out when it exists (the release is not run "
                        "again)")
    p.add_argument("--keep", metavar="DIR", nargs="?", const=HISTORY_DIR, default=None,
                   help="also keep each release's results, gzipped, only the case-forms some release fails "
                        f"(the table's source: `qdq-conformance compliance` reads them; default DIR: "
                        f"{HISTORY_DIR})")
    p.add_argument("--expectations", metavar="PATH", default=None,
                   help="the expectation file every release runs with (default: the backend's bundled one; "
                        "'none': none)")
    p.add_argument("--write-expectations", action="store_true",
                   help="rewrite the expectation file from the runs: its measured list, each entry's "
                        "releases (a range where they are consecutive), and an entry for each failure no "
                        "entry explains (whole runs only: no -k, -m or --shard)")
    p.add_argument("--form", choices=(*FORMS, BOTH), default=BOTH, help="graph form(s) (default: both)")
    p.add_argument("--shard", metavar="K/N", help="run only shard K of N of each release's cases")
    p.add_argument("-n", "--workers", default="auto", metavar="N", help="backend worker processes per run")
    p.add_argument("-k", dest="keyword", metavar="EXPRESSION", help="pytest's -k on each release's run")
    p.add_argument("-m", dest="markexpr", metavar="MARKEXPR", help="pytest's -m on each release's run")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, help="extra pytest arguments, after --")


def run_args(args: argparse.Namespace) -> list[str]:
    """The pytest arguments of each release's run."""
    out = [f"--form={args.form}", "--workers", str(args.workers)]
    for flag, value in (("--shard", args.shard), ("-k", args.keyword), ("-m", args.markexpr),
                        ("--expectations", args.expectations)):
        if value:
            out += [flag, value]
    extra = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    return out + list(extra)


def run(args: argparse.Namespace, maker: EnvironmentMaker | None = None,
        dist: Distribution | None = None, available: list[str] | None = None) -> int:
    """Run the corpus on each release of ``--versions`` in its own environment and write the history table.
    ``maker``, ``dist`` and ``available`` replace the environments, the backend's package and the index's
    releases (the self-test's fake releases)."""
    try:
        dist = dist or distribution(args.backend)
        versions = expand(args.versions, lambda: available if available is not None
                          else index_versions(dist.package), floor=requirement_of(dist.package))
    except ReleaseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.write_expectations and (args.shard or args.keyword or args.markexpr):
        print("error: --write-expectations needs whole runs (no --shard, -k or -m)", file=sys.stderr)
        return 2
    out = Path(args.out or f"out/matrix/{dist.backend}")
    maker = maker or UvEnvironments()
    print(f"matrix: {dist.backend} on {len(versions)} release(s): {', '.join(versions)}", flush=True)
    done: list[ReleaseRun] = []
    for version in versions:
        reused = out / results_name(dist.backend, version)
        if args.reuse and reused.exists():
            print(f"{dist.backend} {version}: reusing {reused}", flush=True)
            continue
        try:
            start = time.monotonic()
            env = maker.make(dist, version)
        except ReleaseError as e:
            print(f"error: {e}", file=sys.stderr)
            return 4
        print(f"{dist.backend} {version}: environment {env.description} ready in "
              f"{time.monotonic() - start:.1f} s; running", flush=True)
        r = run_release(dist.backend, version, env, out, run_args(args))
        done.append(r)
        print(f"{dist.backend} {version}: exit {r.exitstatus}, {r.seconds:.0f} s ({r.cpu_seconds:.0f} s of "
              f"CPU); {r.problem or r.results}", flush=True)
        if r.problem:
            print(f"error: {dist.backend} {version}: {r.problem}", file=sys.stderr)
            return 4
    try:
        runs = [_load(out / results_name(dist.backend, v), v) for v in versions]
    except (ResultsError, ReleaseError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 4 if isinstance(e, ReleaseError) else 2
    table = history.history(runs)
    page, text = history.write(table, out / "matrix.html")
    print(history.markdown(table), end="")
    print(f"wrote {page} and {text}")
    if args.keep:
        cases = {case for row in table.rows for case in row.cases}
        for v, one in zip(versions, runs, strict=True):
            dest = archive.kept_path(Path(args.keep), results_name(dist.backend, v).removesuffix(".jsonl"))
            archive.keep_subset(one, dest, cases, f"the case-forms failing on some release of the matrix "
                                                f"{', '.join(versions)}")
        print(f"kept {len(runs)} release(s) in {args.keep}")
    if args.write_expectations:
        try:
            path = expectations_writer.write(dist.backend, args.expectations, runs)
        except ExpectationError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"wrote {path}")
        return 0
    return _verdict(table)


def _load(path: Path, version: str) -> Results:
    run = load_run([path])
    ran = str(run[0].get("backend_version"))
    error = run[2].get("error") if run[2] else None
    if error:  # the backend could not be created there
        raise ReleaseError(f"{path}: {error}")
    if ran != version:
        raise ReleaseError(f"{path}: ran version {ran}, not {version}: its environment does not hold the "
                           "release")
    return run


def _verdict(table: history.History) -> int:
    """0 when every release's run exited 0; else one line per release that did not."""
    bad = [r for r in table.releases if r.exitstatus != 0]
    for r in bad:
        print(f"{table.backend} {r.version}: exit {r.exitstatus}: {r.failing} failing case-form(s), "
              f"{'?' if r.new_failures is None else r.new_failures} not explained by an expectation entry, "
              f"{len(r.stale)} stale entr{'y' if len(r.stale) == 1 else 'ies'}, {r.harness_errors} harness "
              "error(s)", file=sys.stderr)
    for r in table.releases:
        for s in r.stale:
            print(f"{table.backend} {r.version}: stale expectation entry at line {s.get('line')} "
                  f"({', '.join((s.get('cases') or [])[:3])})")
    return 1 if bad else 0
