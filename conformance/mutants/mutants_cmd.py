"""``qdq-conformance mutants``: run the corpus against every mutant and print the mutation score."""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import time
from pathlib import Path
from typing import TypedDict

from ..domain import BOTH, FORMS, CaseStatus, Form, forms_of
from ..generators.cache import load_file_cached
from ..generators.case import ConcreteCase
from ..generators.corpus import CASES_DIR, case_files
from ..generators.loader import CaseFileError
from ..progress import duration
from . import REGISTRY, names
from .mutant import Mutant
from .score import Verdict, score

EXIT = {0: "every mutant that should be killed was killed, and no equivalent or catalogued-reading mutant "
           "was",
        1: "a mutant survived, a mutant shown equivalent (or a catalogued reading) was killed, or a mutant's "
           "steps could not be built",
        2: "bad arguments, or a case file could not be loaded"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cases", metavar="DIR", help="folder of case files (default: the bundled corpus)")
    p.add_argument("--only", nargs="+", metavar="NAME", default=[],
                   help="mutant ids or glob patterns to run (default: every mutant)")
    p.add_argument("--json", action="store_true", help="print the verdicts as JSON instead of a table")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="processes judging mutants side by side (default: the usable cores, at most 4)")
    p.add_argument("--form", choices=(*FORMS, BOTH), default=Form.RUNTIME.value,
                   help="graph form(s) of each case (default: %(default)s; the mutants change arithmetic, "
                        "which the kernel does alike for fed inputs and initializers)")
    p.add_argument("--list", action="store_true", help="list the mutants (id, kind, shortcut) and exit")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when a mutant survives")


def select(patterns: list[str]) -> list[Mutant]:
    """The mutants whose id matches one of ``patterns`` (all when empty), in the zoo's order."""
    if not patterns:
        return [REGISTRY[n] for n in names()]
    unknown = [p for p in patterns if not any(fnmatch.fnmatchcase(n, p) for n in REGISTRY)]
    if unknown:
        raise ValueError(f"--only: no mutant matches {', '.join(unknown)} (see qdq-conformance mutants "
                         "--list)")
    return [REGISTRY[n] for n in names() if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


def load_cases(root: Path | None) -> tuple[list[ConcreteCase], list[str]]:
    """The default-tier cases of every case file under ``root`` (the runner's cached expansion), and
    errors."""
    cases: list[ConcreteCase] = []
    errors: list[str] = []
    for path in case_files(root or CASES_DIR):
        try:
            cases += [c for c in load_file_cached(path, ("default",)) if c.tier == "default"]
        except CaseFileError as e:
            errors.append(str(e))
    return cases, errors


class Summary(TypedDict):
    """The mutation score of a run of the zoo (``--json``'s ``summary``)."""

    mutants: int
    counted: int  # the defects (equivalent mutants and catalogued readings are not counted)
    killed: int
    surviving: list[str]
    equivalent: list[str]
    readings: list[str]
    contradictions: list[str]  # documented as not a defect, yet a normative case killed it
    broken: list[str]
    score: float


def summary(verdicts: list[Verdict], kinds: dict[str, str]) -> Summary:
    counted = [v for v in verdicts if kinds[v.mutant] == "defect"]
    killed = [v for v in counted if v.killed]
    return {"mutants": len(verdicts), "counted": len(counted), "killed": len(killed),
            "surviving": [v.mutant for v in counted if not v.killed and v.status != "broken"],
            "equivalent": [v.mutant for v in verdicts if kinds[v.mutant] == "equivalent"],
            "readings": [v.mutant for v in verdicts if kinds[v.mutant] == "reading"],
            "contradictions": [v.mutant for v in verdicts if kinds[v.mutant] != "defect" and v.killed],
            "broken": [v.mutant for v in verdicts if v.status == "broken"],
            "score": len(killed) / len(counted) if counted else 1.0}


def _line(v: Verdict, m: Mutant) -> str:
    if v.status == "broken":
        return f"{'BROKEN':10} {m.id:36} {v.message}"
    if v.killed:
        tag = "KILLED?!" if m.kind != "defect" else "killed"
        return f"{tag:10} {m.id:36} by {v.case} ({v.form}: {v.outcome})"
    tag = {"equivalent": "equivalent", "reading": "reading"}.get(m.kind, "SURVIVING")
    why = (m.reading or "") if m.kind == "reading" else ("" if m.kind == "equivalent" else m.shortcut)
    if v.refused:  # refusals are no kill (no wrong value), but say them
        why += f" (refused {v.refused} valid case(s), first {v.first_refused}: not a kill)"
    return f"{tag:10} {m.id:36} {why}"


def run(args: argparse.Namespace) -> int:
    try:
        mutants = select(args.only)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.list:
        for m in mutants:
            print(f"{m.id:36} {m.kind:10} {m.shortcut}")
        return 0
    t0 = time.monotonic()
    cases, errors = load_cases(Path(args.cases) if args.cases else None)
    for err in errors:
        print(f"error: {err}", file=sys.stderr)
    if not cases:
        print("error: no case loaded", file=sys.stderr)
        return 2
    loaded = time.monotonic() - t0
    forms = forms_of(args.form)
    done: list[str] = []

    def progress(v: Verdict) -> None:
        done.append(v.mutant)
        if sys.stderr.isatty():
            print(f"\r[{len(done)}/{len(mutants)}] {v.mutant}: {v.status}\x1b[K", end="", file=sys.stderr,
                  flush=True)

    verdicts = score(cases, mutants, forms=forms, jobs=args.jobs, progress=progress)
    if sys.stderr.isatty():
        print("\r\x1b[K", end="", file=sys.stderr)
    kinds = {m.id: m.kind for m in mutants}
    s = summary(verdicts, kinds)
    elapsed = time.monotonic() - t0
    normative = sum(1 for c in cases if c.status == CaseStatus.NORMATIVE)
    if args.json:
        print(json.dumps({"summary": {**s, "seconds": round(elapsed, 1), "normative_cases": normative},
                          "verdicts": [{**v.as_dict(), "kind": kinds[v.mutant],
                                        "shortcut": REGISTRY[v.mutant].shortcut,
                                        "violates": REGISTRY[v.mutant].violates} for v in verdicts]},
                         indent=1))
    else:
        for v in verdicts:
            print(_line(v, REGISTRY[v.mutant]))
        print(f"mutation score: {s['killed']}/{s['counted']} killed ({100 * s['score']:.1f}%), "
              f"{len(s['surviving'])} surviving; not counted: {len(s['equivalent'])} equivalent, "
              f"{len(s['readings'])} catalogued reading(s); {normative:,} normative cases, "
              f"{duration(elapsed)} (corpus loaded in {duration(loaded)})")
        for mid in s["contradictions"]:
            print(f"error: {mid} is documented as {kinds[mid]} but a normative case killed it",
                  file=sys.stderr)
    if errors:
        return 2
    return 0 if args.exit_zero or not (s["surviving"] or s["contradictions"] or s["broken"]) else 1
