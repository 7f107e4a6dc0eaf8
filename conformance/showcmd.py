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

from .compare import rule_interval, rule_ulp
from .domain import BOTH, FORMS, Tier, tiers_of
from .generators.cache import load_file_cached
from .plugin.options import RUN_FLAGS
from .plugin.selection import case_index
from .reports.casepage import render_text
from .resources import cases_dir
from .results import CaseRecord, ResultsError
from .results.merge import load_run
from .types import TYPES, bit_patterns, by_dtype, by_name, code_of

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
        got = fresh(args.case, args.backend, args.form, args.expectations, args.cases)
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


def fresh(case_id: str, backend: str, form: str, expectations: str | None, folder: str | None
          ) -> list[CaseRecord] | None:
    """The records of a run of ``case_id`` alone (pytest's output on stderr: stdout is the case's)."""
    with tempfile.TemporaryDirectory(prefix="qdq-show-") as tmp:
        out = Path(tmp) / "show.jsonl"
        # (no cache plugin: a look at one case leaves --lf's record of the last run as it was)
        args = [f"--backend={backend}", f"--form={form}", f"--results={out}", *RUN_FLAGS, "-p",
                "no:cacheprovider", "-k", case_id, "--workers", "1"]
        args += [f"--expectations={expectations}"] if expectations else []
        args += [f"--cases={folder}"] if folder else []
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


#: one output as the repro script checks it: type, shape, bit codes, and (an interval output) the codes of
#: each element's lowest and highest acceptable value
Output = tuple[str, list[int], list[int], "list[int] | None", "list[int] | None"]


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


def _narrow_values(types: set[str]) -> dict[str, list[str]]:
    """The value of every code of each narrow float type in ``types``, as ``float.hex`` text (an interval's
    bounds compare by value)."""
    narrow = [by_name(t) for t in sorted(types) if t in TYPES and TYPES[t].is_float and TYPES[t].bits <= 8]
    return {t.name: [float(v).hex() for v in bit_patterns(t).astype(np.float64)] for t in narrow}


def _nan_codes(types: set[str]) -> dict[str, list[int]]:
    """The NaN codes of each narrow float type in ``types`` (float4/6/8: the script looks them up; a wider
    float's NaNs it tells from the value)."""
    narrow = [by_name(t) for t in sorted(types) if t in TYPES and TYPES[t].is_float and TYPES[t].bits <= 8]
    return {t.name: [int(c) for c in np.flatnonzero(np.isnan(bit_patterns(t).astype(np.float32)))]
            for t in narrow}


def repro_script(rec: CaseRecord, folder: str | None = None) -> str:
    """A script that runs the backend on the case (the record's repro) and asserts its outputs, bit for bit
    (any NaN matching any NaN, within the case's ULP bound, within an ``interval`` case's acceptable values),
    against the spec's; it prints expected vs actual."""
    code = rec.get("repro")
    if not code:
        raise ValueError(f"the record of {rec['id']} [{rec.get('form')}] has no repro (only a case that did "
                         "not pass has one)")
    expected = _full_expected(rec, folder)
    partial = expected is None
    if expected is None:  # (a case no longer in the corpus: the record's preview, its first elements)
        expected = [(p["type"], p["shape"], p["codes"], p.get("low"), p.get("high"))
                    for p in rec.get("expected") or [] if p]
    types = {t for t, _, _, _, _ in expected}
    ulp = rule_ulp(rec.get("comparison"))
    rule = (f"ULP bound {ulp}" if not rule_interval(rec.get("comparison")) else
            "an interval case: an element passes within its lowest and highest acceptable values")
    header = (f"# {rec['id']} [{rec.get('form')}] on {rec.get('backend')} {rec.get('backend_version')}, "
              "written by `qdq-conformance show --repro`.\n# Runs the backend, then compares its outputs "
              f"with the spec's (bit patterns; any NaN matches any NaN; {rule}); exit status 1 when "
              "they differ.\n"
              + ("# (the case is not in this corpus: only the first elements the results file kept are "
                 "compared)\n"
                 if partial else ""))
    clause = rec.get("spec")
    spec = " ".join(str((clause.get("text") if clause else None) or "").split())
    return (header + f"# spec: {spec[:300]}\n" + _PRELUDE.format(
        expected=repr(expected), nan_codes=repr(_nan_codes(types)), narrow=repr(_narrow_values(types)),
        bits=repr({t: TYPES[t].bits for t in sorted(types) if t in TYPES}),
        floats=repr(sorted(t for t in types if t in TYPES and TYPES[t].is_float)), ulp=ulp)
        + "\n# --- the backend's repro ---\n" + code.rstrip() + "\n" + _CHECK)


_PRELUDE = '''
import builtins
import sys

import numpy as np

EXPECTED = {expected}  # (type, shape, bit codes, low codes, high codes) of each output the spec gives
NAN_CODES = {nan_codes}  # the NaN codes of the narrow float types
NARROW = {narrow}  # the value of every code of the narrow float types (float.hex)
BITS = {bits}
FLOATS = {floats}
ULP = {ulp}
_outputs = []


def print(*args, **kwargs):  # the backend's repro prints its outputs: keep the arrays
    for a in args:
        if isinstance(a, np.ndarray):
            _outputs.append(a)
        elif isinstance(a, (list, tuple)) and a and all(isinstance(v, np.ndarray) for v in a):
            _outputs.extend(a)
'''

_CHECK = '''

def _codes(a, name, n):
    """Bit codes of an output array (raw codes as some backends give narrow types; packed 4-bit unpacked)."""
    bits = BITS.get(name, 8 * a.dtype.itemsize)
    raw = np.ascontiguousarray(a).reshape(-1)
    if bits <= 4 and raw.size * 2 in (n, n + 1) and raw.dtype.itemsize == 1:
        b = raw.view(np.uint8)
        raw = np.stack([b & 15, b >> 4], axis=1).reshape(-1)[:n]
    width = max(1, raw.dtype.itemsize)
    c = raw.view("u%d" % width).astype(np.uint64)
    return (c & ((1 << bits) - 1)).tolist()


def _wide(code, name):
    """The value of a float32 / float16 / bfloat16 code."""
    if BITS[name] == 32:
        return np.array([code], np.uint32).view(np.float32)[0]
    if name == "float16":
        return np.array([code], np.uint16).view(np.float16)[0]
    return np.array([code << 16], np.uint32).view(np.float32)[0]  # bfloat16


def _nan(code, name):
    if name not in FLOATS:
        return False
    if name in NAN_CODES:
        return code in NAN_CODES[name]
    return bool(np.isnan(_wide(code, name)))


def _finite(code, name):
    return bool(np.isfinite(_wide(code, name)))


def _value(code, name):
    """The value of a code (an interval's ends compare by value)."""
    if name in NARROW:
        return float.fromhex(NARROW[name][code])
    if name in FLOATS:
        return float(_wide(code, name))
    bits = BITS.get(name, 8)
    signed = name.startswith("int")
    return code - (1 << bits) if signed and code >> (bits - 1) else code


def _within(code, lo, hi, name):
    if lo == hi:
        return code == lo or (_nan(code, name) and _nan(lo, name))
    if _nan(code, name):
        return False
    return _value(lo, name) <= _value(code, name) <= _value(hi, name)


def _ordered(code, bits):
    sign = 1 << (bits - 1)
    return -(code & (sign - 1)) if code & sign else code


bad = 0
if len(_outputs) < len(EXPECTED):
    builtins.print(f"the backend gave {len(_outputs)} output(s), the spec {len(EXPECTED)}")
    sys.exit(1)
for k, (name, shape, want, low, high) in enumerate(EXPECTED):
    got = _codes(_outputs[k], name, len(want))
    builtins.print(f"output {k} ({name}, shape {shape}): expected code vs actual code")
    for j, w in enumerate(want):
        g = got[j] if j < len(got) else None
        same = g == w or (g is not None and _nan(g, name) and _nan(w, name))
        if not same and g is not None and ULP and name in FLOATS and BITS[name] >= 16:
            same = _finite(g, name) and _finite(w, name) and \
                abs(_ordered(g, BITS[name]) - _ordered(w, BITS[name])) <= ULP
        interval = ""
        if low is not None and high is not None and j < len(low):
            same = g is not None and _within(g, low[j], high[j], name)
            if low[j] != high[j]:
                interval = f" (acceptable 0x{low[j]:x} .. 0x{high[j]:x})"
        if not same:
            bad += 1
        if not same or j < 16:
            builtins.print(f"  {'*' if not same else ' '} [{j}] expected 0x{w:x}{interval}, actual "
                           + ("-" if g is None else f"0x{g:x}"))
builtins.print(f"{bad} element(s) differ" if bad else "the outputs match the spec")
sys.exit(1 if bad else 0)
'''
