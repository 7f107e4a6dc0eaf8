"""``qdq-conformance show ID [RESULTS]``: one case in full, from a results file or from a fresh run of that
case; ``--repro PATH`` writes a self-contained script that runs the backend and asserts its outputs against
the spec's.

Without a results file the case runs as ``qdq-conformance run --backend NAME -k ID`` would run it (its
expectation looked up, every graph form asked for), into a temporary results file, whose records are then
shown: the run collects only the case file that holds ID (``plugin/selection.py``), so the first line comes
within seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from .domain import BOTH, FORMS, Tier, tiers_of
from .generators.cache import load_file_cached
from .plugin.options import RUN_FLAGS
from .plugin.selection import case_index
from .reports.casepage import render_text
from .resources import cases_dir
from .results import CaseRecord, ResultsError
from .results.merge import load_run
from .runner.reprocheck import Expected, checking_script
from .types import by_dtype, code_of

EXIT = {0: "shown (with --repro: the script written)",
        1: "a fresh run of the case did not produce its record",
        2: "no such case, or a results file that cannot be read, or no --backend for a fresh run"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("case", metavar="ID", help="the case id (as in the report, findings and results files)")
    p.add_argument("results", nargs="*", metavar="RESULTS", help="results file(s) of a run (its shard files "
                   "too); none: run the case now (--backend)")
    p.add_argument("--form", choices=(*FORMS, BOTH), default=BOTH,
                   help="graph form(s) to show (default: both)")
    p.add_argument("--backend", metavar="NAME",
                   help="without RESULTS: the backend to run the case on (as for run)")
    p.add_argument("--expectations", metavar="PATH",
                   help="without RESULTS: the expectation file (as for run)")
    p.add_argument("--backend-option", action="append", metavar="KEY=VALUE",
                   help="without RESULTS: a setting for the backend, repeatable (as for run)")
    p.add_argument("--cases", metavar="DIR", help="folder of case files (default: the repository's cases/)")
    p.add_argument("--repro", metavar="PATH",
                   help="also write a self-contained script that runs the backend on "
                   "the case and exits 1 when its outputs differ from the spec's (expected vs actual "
                   "printed)")


def run(args: argparse.Namespace) -> int:
    forms = FORMS if args.form == BOTH else (args.form,)
    if args.results:
        try:
            _, cases, _ = load_run([Path(p) for p in args.results])
        except ResultsError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        records = [c.copy() for c in cases if c["id"] == args.case and (c.get("form") or "") in forms]
        if not records:
            near = sorted({c["id"] for c in cases if args.case in c["id"]})[:5]
            print(f"error: no case {args.case} ({'/'.join(forms)}) in {', '.join(args.results)}"
                  + (f"; ids containing it: {', '.join(near)}" if near else ""), file=sys.stderr)
            return 2
    else:
        if not args.backend:
            print("error: give a results file, or --backend NAME to run the case now", file=sys.stderr)
            return 2
        if find_case(args.case, args.cases) is None:
            print(f"error: no case {args.case} in {args.cases or cases_dir()}", file=sys.stderr)
            return 2
        got = fresh(args.case, args.backend, args.form, args.expectations, args.cases, args.backend_option)
        if got is None:
            return 1
        records = [c for c in got if c["id"] == args.case and (c.get("form") or "") in forms]
        if not records:
            print(f"error: the run of {args.case} on {args.backend} wrote no record of it", file=sys.stderr)
            return 1
    print("\n\n".join(render_text(r) for r in records))
    if args.repro:
        rec = next((r for r in records if r.get("repro")), records[0])
        path = Path(args.repro)
        try:
            path.write_text(repro_script(rec, args.cases), encoding="utf-8")
        except (OSError, ValueError) as e:
            print(f"error: --repro {path}: {getattr(e, 'strerror', None) or e}", file=sys.stderr)
            return 2
        print(f"\nwrote {path} (python {path}: exit status 0 when the outputs match the spec's, 1 when not)")
    return 0


def find_case(case_id: str, folder: str | None = None) -> tuple[Path, int] | None:
    """(case file, position) of ``case_id`` in the corpus, from the selection index (cheap once cached)."""
    for path in sorted(Path(folder or cases_dir()).glob("*.yaml")):
        index = case_index(path, tiers_of(Tier.DEFAULT.value)) or []
        for k, (cid, _, _) in enumerate(index):
            if cid == case_id:
                return path, k
    return None


def fresh(case_id: str, backend: str, form: str, expectations: str | None, folder: str | None,
          backend_options: list[str] | None = None) -> list[CaseRecord] | None:
    """The records of a run of ``case_id`` alone (pytest's output on stderr: stdout is the case's)."""
    with tempfile.TemporaryDirectory(prefix="qdq-show-") as tmp:
        out = Path(tmp) / "show.jsonl"
        # (no cache plugin: a look at one case leaves --lf's record of the last run as it was)
        args = [f"--backend={backend}", f"--form={form}", f"--results={out}", *RUN_FLAGS, "-p",
                "no:cacheprovider", "-k", case_id, "--workers", "1"]
        args += [f"--expectations={expectations}"] if expectations else []
        args += [f"--cases={folder}"] if folder else []
        args += [f"--backend-option={option}" for option in backend_options or ()]
        with contextlib.redirect_stdout(sys.stderr):
            code = pytest.main(args)
        if code not in (0, 1) or not out.exists():
            print(f"error: running {case_id} on {backend} failed (pytest exit status {int(code)})",
                  file=sys.stderr)
            return None
        try:
            _, cases, _ = load_run([out])
        except ResultsError as e:
            print(f"error: {e}", file=sys.stderr)
            return None
        return [c.copy() for c in cases]


#: one output as the repro script checks it (``runner/reprocheck.py``)
Output = Expected


def _codes(a: np.ndarray) -> list[int]:
    return [int(c) for c in code_of(a).reshape(-1)]


def _full_expected(rec: CaseRecord, folder: str | None) -> list[Output] | None:
    """The spec's outputs of the case in full (type, shape, codes, and an interval's low and high codes),
    from the corpus; None when not found there."""
    where = find_case(rec["id"], folder)
    if where is None:
        return None
    cases = [c for c in load_file_cached(where[0], tiers_of(Tier.DEFAULT.value)) if c.id == rec["id"]]
    if not cases or cases[0].expected is None:
        return None
    bounds = cases[0].output_bounds() or []
    out: list[Output] = []
    for k, e in enumerate(cases[0].expected):
        b = bounds[k] if k < len(bounds) else None
        out.append((by_dtype(e.dtype).name, list(e.shape), _codes(e), None if b is None else _codes(b[0]),
                    None if b is None else _codes(b[1])))
    return out


def repro_script(rec: CaseRecord, folder: str | None = None) -> str:
    """A script that runs the backend on the case (the record's repro) and asserts its outputs, bit for bit
    (any NaN matching any NaN, within the case's ULP bound, within an ``interval`` case's acceptable values),
    against the spec's, the whole outputs taken from the corpus (``runner/reprocheck.py``); it prints expected
    vs actual."""
    expected = _full_expected(rec, folder)
    if expected is None:  # (a case no longer in the corpus: the record's preview, its first elements)
        kept = [(p["type"], p["shape"], p["codes"], p.get("low"), p.get("high"))
                for p in rec.get("expected") or [] if p]
        return checking_script(rec, kept, partial=True)
    return checking_script(rec, expected)
