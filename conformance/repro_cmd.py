"""``qdq-conformance repro-check RESULTS...``: do the findings' repro scripts fail as the run did?

A finding is only as good as the script a vendor is handed for it. For each finding of the run (grouped as
``findings`` groups them), a sample of its failing case-forms (one per template or family and graph form, up
to ``--per-finding``) gets the script ``show --repro`` writes (the backend's own run of the case, as the run
ran it, and the check against the spec's outputs), run in a fresh Python process. A script *reproduces* its
case when it ends as the run did: outputs that differ (exit status 1, "N element(s) differ") for a case that
failed, a model the spec forbids running for an invalid one accepted, the backend's exception or a crash for
a case that errored or crashed. A case that timed out is not run again (listed as not run). Exit status 0 when
every script reproduces its case (or the run has no finding), 1 when one does not (each named), 2 when a
results file cannot be read or none of its findings has a repro.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .cpu import usable_cores
from .domain import RunStatus
from .reports.findings import Finding, group
from .results import CaseRecord, ResultsError
from .results.merge import load_run
from .show_cmd import repro_script

EXIT = {0: "every script run failed as its case did in the run (or the run has no finding)",
        1: "a script did not reproduce its case (named, with what it printed)",
        2: "a results file cannot be read, or none of its findings has a repro to run"}


@dataclass
class Verdict:
    """One script run: its finding and case-form, how the run ended, how the script ended."""

    finding: str
    id: str
    form: str
    status: str
    returncode: int | None  # None: not run
    said: str  # the script's last line (or why it was not run)
    reproduced: bool | None  # None: not run

    def line(self) -> str:
        how = ("not run" if self.reproduced is None else "reproduces" if self.reproduced
               else "DOES NOT REPRODUCE")
        code = "" if self.returncode is None else f"exit status {self.returncode}: "
        return f"{self.finding} {self.id} [{self.form}] ({self.status}): {how} ({code}{self.said})"


def sample(findings: Sequence[Finding], records: dict[tuple[str, str], CaseRecord],
           per_finding: int) -> list[tuple[Finding, CaseRecord]]:
    """Per finding, its first case-form and then one of each other template (a graph case's) or family and
    graph form, at most ``per_finding`` (0: no limit)."""
    out = []
    for f in findings:
        seen: set[tuple[str, str]] = set()
        for key in f.cases:
            rec = records.get(key)
            if rec is None or not rec.get("repro"):
                continue
            kind = (str(rec.get("template") or rec.get("family") or ""), key[1])
            if kind in seen:
                continue
            seen.add(kind)
            out.append((f, rec))
            if per_finding and len(seen) >= per_finding:
                break
    return out


def reproduces(status: str, returncode: int, output: str) -> bool:
    """Whether a script that ended with ``returncode``, printing ``output``, ended as its case did in the
    run (``status``)."""
    if status == RunStatus.FAILED or status == RunStatus.IMPLEMENTATION_DEFINED:
        return returncode == 1 and ("element(s) differ" in output or "output(s), the spec" in output)
    if status == RunStatus.INVALID_ACCEPTED:
        return returncode == 1 and "it must reject it" in output
    # error or crashed: the backend's own exception, or the process killed by a signal
    return returncode != 0 and "ModuleNotFoundError" not in output


def _last(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else "no output")[:200]


def run_one(finding: Finding, rec: CaseRecord, folder: Path, timeout: float,
            cases: str | None = None) -> Verdict:
    """Write the case's script into ``folder`` and run it in a fresh Python."""
    status = str(rec["status"])
    form = str(rec.get("form") or "")
    if status == RunStatus.TIMEOUT:
        return Verdict(finding.id, rec["id"], form, status, None, "the run timed out: not run again", None)
    path = folder / f"{finding.id}-{rec['id']}-{form}.py"
    try:
        path.write_text(repro_script(rec, cases), encoding="utf-8")
        done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, errors="replace",
                              timeout=timeout, cwd=folder)
    except subprocess.TimeoutExpired:
        return Verdict(finding.id, rec["id"], form, status, None, f"no end within {timeout:g} s", False)
    except (OSError, ValueError) as e:
        return Verdict(finding.id, rec["id"], form, status, None, f"not written: {e}", False)
    output = done.stdout + done.stderr
    return Verdict(finding.id, rec["id"], form, status, done.returncode, _last(output),
                   reproduces(status, done.returncode, output))


def check(cases: Sequence[CaseRecord], per_finding: int = 2, jobs: int = 1, timeout: float = 300.0,
          folder: str | None = None, say: Callable[[str], None] | None = None,
          limit: int = 0) -> list[Verdict]:
    """The verdicts of the sampled scripts of every finding of ``cases`` (a run's records); ``limit``: at most
    that many scripts (0: no limit), the findings taken in ``findings``' order (new ones first, then the
    biggest)."""
    findings = group(cases)
    records = {(c["id"], str(c.get("form") or "")): c for c in cases}
    chosen = sample(findings, records, per_finding)
    if limit:
        chosen = chosen[:limit]
    with tempfile.TemporaryDirectory(prefix="qdq-repro-check-") as tmp, \
            ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(run_one, f, rec, Path(tmp), timeout, folder) for f, rec in chosen]
        verdicts = []
        for future in futures:
            verdicts.append(future.result())
            if say is not None:
                say(verdicts[-1].line())
    return verdicts


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", nargs="+", metavar="RESULTS", help="results file(s) of a run (its shard files "
                   "too)")
    p.add_argument("--per-finding", type=int, default=2, metavar="N",
                   help="scripts per finding: one per template or family and graph form, at most N (0: every "
                   "one; default: 2)")
    p.add_argument("--limit", type=int, default=0, metavar="N",
                   help="at most N scripts in all: the findings in the order findings lists them, new ones "
                   "first, then the biggest (default: 0, no limit)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="scripts run at once (default: the usable cores)")
    p.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                   help="time limit of one script (default: 300)")
    p.add_argument("--cases", metavar="DIR", help="folder of case files the run used (default: the "
                   "repository's cases/): the spec's outputs in full come from there")


def run(args: argparse.Namespace) -> int:
    try:
        _, cases, _ = load_run([Path(p) for p in args.results])
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    verdicts = check(cases, args.per_finding, args.jobs or usable_cores(), args.timeout, args.cases,
                     say=lambda line: print(line, flush=True), limit=args.limit)
    ran = [v for v in verdicts if v.reproduced is not None]
    if not verdicts and not group(cases):
        print(f"no finding in {', '.join(args.results)}: nothing to reproduce")
        return 0
    if not ran:
        print(f"error: no finding of {', '.join(args.results)} has a repro to run", file=sys.stderr)
        return 2
    failed = [v for v in ran if not v.reproduced]
    findings = len({v.finding for v in verdicts})
    left = len(group(cases)) - findings
    skipped = f"; {len(verdicts) - len(ran)} not run (timed out)" if len(verdicts) > len(ran) else ""
    print(f"{len(ran)} script(s) run for {findings} finding(s): {len(ran) - len(failed)} failed as their "
          f"case did in the run, {len(failed)} did not{skipped}"
          + (f"; {left} finding(s) not tried (--limit {args.limit})" if left and args.limit else ""))
    return 1 if failed else 0
