"""The commands that read results files: ``report``, ``findings`` and ``diff`` (their arguments, what they
print, their exit statuses).

Each takes a run as one results file or as the N shard files of one run (``--shard K/N``), merged by
:mod:`qdq_conformance.results.merge` (the rules: there). A file that cannot be read, or files that do not form
the runs asked for, is exit status 2 and one line naming the files, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..results import Results, ResultsError, unwritable
from ..results.merge import incomplete, load_run, load_runs
from . import diff, overview, render

SHARDS = ("Shard files (--shard K/N) of one backend are merged into one run: they must share the backend "
          "version and N and give each shard once, else exit status 2; a missing shard is reported (the "
          "verdict says the run is incomplete), not refused.")
INCOMPLETE = ("A run that is incomplete (a file without its summary line, malformed lines skipped, a run "
              "interrupted or stopped before its first case, a shard missing) is said in one line on stderr "
              "per reason (warning: FILE: incomplete: ...)")


def _count(text: str) -> int:
    """A whole number, 0 or more (argparse's type)."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number, 0 or more, got {text!r}")
    return int(text)


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _paths(names: list[str] | None) -> list[Path]:
    return [Path(n) for n in names or []]


def _warn_incomplete(*runs: Results | None) -> None:
    """One line on stderr per reason a run read is incomplete (``merge.incomplete``)."""
    for run in runs:
        for line in incomplete(run) if run is not None else ():
            print(f"warning: {line}", file=sys.stderr)


def run_report(args: argparse.Namespace) -> int:
    """Render results files as an HTML report (one run: its verdict and findings first) or a scoreboard
    (several backends: each backend's findings, the cases where they disagree)."""
    why = unwritable(Path(args.output))
    if why:
        return _error(f"-o {args.output}: {why}")
    try:
        runs = load_runs(_paths(args.results))
        if args.baseline and len(runs) > 1:
            return _error("--baseline goes with one run (a report), not several (a scoreboard)")
        baseline = load_run(_paths(args.baseline)) if args.baseline else None
        _warn_incomplete(*runs, baseline)
        out = render.render(runs, Path(args.output), baseline, ", ".join(args.baseline or []))
    except ResultsError as e:
        return _error(str(e))
    except OSError as e:
        return _error(f"cannot write {args.output}: {e.strerror or e}")
    print(f"wrote {out}")
    return 0


def run_findings(args: argparse.Namespace) -> int:
    """``qdq-conformance findings``."""
    try:
        results = load_run(_paths(args.results))
        baseline = load_run(_paths(args.baseline)) if args.baseline else None
    except ResultsError as e:
        return _error(str(e))
    _warn_incomplete(results, baseline)
    ov = overview.overview(results, baseline, ", ".join(args.baseline or []))
    if args.json:
        print(json.dumps(overview.to_json(results[0], ov), indent=1, default=str))
    else:
        print(overview.render_text(results[0], ov, limit=args.limit, repro=args.repro))
    if args.fail_on != "never" and ov.harness_errors:  # (cases the tool failed on are not known to pass)
        return 1
    if args.fail_on == "new":
        # new: a finding with a case no expectation entry covers, or (with --baseline) one the baseline lacks
        appeared = {f.key for f in ov.since.appeared} if ov.since else set()
        return 1 if any(f.new or f.key in appeared for f in ov.findings) else 0
    if args.fail_on == "any":
        return 1 if ov.findings else 0
    return 0


def run_diff(args: argparse.Namespace) -> int:
    """Compare two runs: cases that regressed, were fixed, changed, appeared or disappeared."""
    if args.files and (args.old or args.new) or not args.files and not (args.old and args.new):
        return _error("give OLD NEW (one results file each), or --old FILE... --new FILE... (the shard files "
                      "of each run)")
    if args.files and len(args.files) != 2:
        return _error(f"OLD NEW are two results files, got {len(args.files)} (the shard files of a run go "
                      "after --old / --new)")
    old, new = ([f] for f in args.files) if args.files else (args.old, args.new)
    why = unwritable(Path(args.output)) if args.output else None
    if why:
        return _error(f"-o {args.output}: {why}")
    try:
        old_run, new_run = load_run(_paths(old)), load_run(_paths(new))
    except ResultsError as e:
        return _error(str(e))
    _warn_incomplete(old_run, new_run)
    d = diff.diff_records(old_run, new_run)
    print(diff.render_text(d, limit=args.limit or 10**9, accepted=args.allow_incomplete))
    if args.output:
        try:
            report = args.report or _report_next_to(Path(new[-1]), Path(args.output))
            print(f"wrote {diff.render_html(d, Path(args.output), report)}")
        except OSError as e:
            return _error(f"cannot write {args.output}: {e.strerror or e}")
    if args.exit_zero:
        return 0
    if d.counts()["regressed"] or d.counts()[diff.HARNESS_ERROR] or d.empty():
        return 1
    return 1 if d.incomplete() and not args.allow_incomplete else 0


REPORT_HELP = (run_report.__doc__ or "").strip()
REPORT_DESCRIPTION = (REPORT_HELP + " " + SHARDS
                      + " Unsharded files are runs of their own, several of one backend "
                      "included. " + INCOMPLETE
                      + " and marked INCOMPLETE on the report's first screen. Exit status "
                      "2 (one line naming the file and the line, or the files) when a file cannot be read or "
                      "is not a results file, the shard files do not form one run, or the output cannot be "
                      "written.")
FINDINGS_HELP = "Group a run's failing cases into findings (one per signature) and print them."
FINDINGS_DESCRIPTION = (FINDINGS_HELP + " " + " ".join(overview.DESCRIPTION.split()) + " " + SHARDS + " "
                        + INCOMPLETE
                        + ". Exit status 0 (1 with --fail-on when a finding it names is there), or 2 "
                        "(one line) when a file cannot be read or is not a results file, or the files are "
                        "not one run.")
DIFF_HELP = (run_diff.__doc__ or "").strip()
DIFF_DESCRIPTION = (DIFF_HELP
                    + " A run: OLD / NEW (one results file each), or --old / --new followed by the shard "
                    "files of each run. " + SHARDS + " " + INCOMPLETE
                    + ". Harness errors of the new run (this tool's own code raised: its fault, not the "
                    "backend's) are listed apart. Exit status 1 when a case regressed (it "
                    "was not a failure and now is, and no expectation entry of the new run says so: those "
                    "are listed as now failing (expected)), the new run holds a harness error, the new run "
                    "is empty, or either run is "
                    "incomplete (unless --allow-incomplete); 2 (one line) when a file cannot be read or is "
                    "not a results file, the files are not one run each, or -o cannot be written.")


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    """``report``'s arguments."""
    p.add_argument("results", nargs="+", metavar="RESULTS", help="results file(s) written by --results")
    p.add_argument("-o", "--output", required=True, metavar="PATH", help="HTML file to write")
    p.add_argument("--baseline", nargs="+", action="extend", metavar="OLD",
                   help="an earlier run (a results file, "
                   "or its shard files): the report says what changed since (cases that regressed, were "
                   "fixed, changed; findings new, gone, grown); with one run only")


def add_findings_arguments(p: argparse.ArgumentParser) -> None:
    """``findings``' arguments."""
    p.add_argument("results", nargs="+", metavar="RESULTS", help="results file written by --results, or the "
                   "shard files of one run")
    p.add_argument("--json", action="store_true", help="print JSON (every finding, with its example's repro)")
    p.add_argument("--baseline", nargs="+", action="extend", metavar="OLD",
                   help="an earlier run (a results file, "
                   "or its shard files): mark the findings new since it and list those gone")
    p.add_argument("--repro", action="store_true", help="print each example case's repro script")
    p.add_argument("--limit", type=_count, default=50, metavar="N",
                   help="findings printed (default: %(default)s; 0: all; --json prints all)")
    p.add_argument("--fail-on", choices=("never", "new", "any"), default="never",
                   help="exit 1 when a finding is new (some of its cases no expectation entry covers, or, "
                        "with --baseline, the baseline did not have it), or when there is any finding, and "
                        "with either when the run holds a harness error "
                        "(default: %(default)s: exit 0), for a CI gate")


def add_diff_arguments(p: argparse.ArgumentParser) -> None:
    """``diff``'s arguments."""
    p.add_argument("files", nargs="*", metavar="OLD NEW",
                   help="results files of the earlier and the later run")
    p.add_argument("--old", nargs="+", action="extend", metavar="FILE", help="the earlier run's shard files")
    p.add_argument("--new", nargs="+", action="extend", metavar="FILE", help="the later run's shard files")
    p.add_argument("-o", "--output", metavar="PATH", help="also write the diff as an HTML page")
    p.add_argument("--limit", type=_count, default=50, metavar="N",
                   help="cases listed per category in the text output (default: %(default)s; 0: all)")
    p.add_argument("--report", metavar="URL", help="the new run's HTML report, which -o's cases link to "
                   "(REPORT#case=ID&form=F; default: the report next to the new results file, named as "
                   "--report names it, when there is one; else the cases are not links)")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when cases regressed")
    p.add_argument("--allow-incomplete", action="store_true",
                   help="an incomplete run (either side) does not fail "
                   "the gate by itself; regressions among the cases it holds, and an empty new run, still do")


def _report_next_to(results: Path, page: Path) -> str:
    """The new run's report as ``run --report`` writes it next to its results file (``r.jsonl``: ``r.html``),
    as a link from ``page``'s folder; "" when there is none (the page then links nowhere)."""
    report = results.with_suffix(".html")
    if not report.is_file():
        return ""
    return Path(os.path.relpath(report.resolve(), page.resolve().parent)).as_posix()
