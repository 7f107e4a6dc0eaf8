"""``qdq-conformance cases --from-model MODEL ... --out DIR``, and the first step of ``run --model``: a
model's own quantization nodes made into case files of the corpus's schema, every node accounted for.

Exit status (the first that applies, as ``check``'s): 2 an input could not be read (one line each; the other
models are still converted) or ``--out`` cannot be written; 1 a configuration's cases could not be made (this
tool's fault, said as such); 3 no case was made (no model holds a quantization node the checker knows, or none
could become a case); 0 cases written.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from .cachedir import cache_root
from .checker.check_cmd import MAX_MESSAGE, expand, one_line
from .generators.frommodel.convert import NO_CASE, Conversion, convert
from .generators.frommodel.output import ACCOUNTING, OutFolderError, write

EXIT = {2: "an input could not be read (or a folder holds no *.onnx file), or --out cannot be written",
        1: "a configuration's cases could not be made (a problem of this tool, said as such)",
        3: "no case was made: no model holds a quantization node the checker knows, or none could become a "
           "case",
        0: "cases written"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from-model", nargs="+", required=True, metavar="MODEL", dest="models",
                   help="ONNX model file(s), or folders searched recursively for *.onnx files (external data "
                        "is read only for the scales and zero points, and the slices of weights the graph "
                        "cases keep)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help=f"output folder: new, empty, or written by an earlier cases --from-model (its "
                        f"{ACCOUNTING} lists the files replaced); anything else is refused")


def _inputs(names: list[str]) -> tuple[list[Path], list[tuple[str, str]]]:
    paths: list[Path] = []
    problems: list[tuple[str, str]] = []
    for name, problem in expand(names):
        if problem is None:
            paths.append(Path(name))
        else:
            problems.append((name, problem))
    return paths, problems


def make(names: list[str], out: Path) -> tuple[int, Conversion | None]:
    """Convert the models into ``out`` and print what was made; the exit status and the conversion."""
    paths, unreadable = _inputs(names)
    try:
        conv = convert(paths)
    except Exception as e:  # noqa: BLE001 - a defect of this tool: one line, never a traceback
        print(one_line(f"error: internal error while making cases ({type(e).__name__}: {e}); please report "
                       "it with the model", MAX_MESSAGE), file=sys.stderr)
        return 1, None
    unreadable += conv.unreadable
    for path, msg in unreadable:
        print(one_line(f"{path}: cannot make cases: {msg}", MAX_MESSAGE), file=sys.stderr)
    made = any(c.templates for c in conv.configurations)
    if made:
        try:
            written = write(conv, out)
        except OutFolderError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2, conv
        except OSError as e:
            print(f"error: --out {out}: cannot write: {e.strerror or e}", file=sys.stderr)
            return 2, conv
    for m in conv.models:
        why = ", ".join(f"{n} {r}" for r, n in m.reasons.most_common())
        print(f"{m.path}: {m.nodes} quantization nodes: {m.in_cases} in cases, {m.nodes - m.in_cases} not"
              + (f" ({why})" if why else ""))
    for conf in conv.configurations:
        for problem in conf.problems if conf.failed else ():
            print(one_line(f"error: {conf.text()}: {NO_CASE}: {problem}", MAX_MESSAGE), file=sys.stderr)
    for skipped in conv.skipped:
        if skipped.reason == NO_CASE:
            print(one_line(f"error: {skipped.ref.text()}: {NO_CASE}: {skipped.detail}", MAX_MESSAGE),
                  file=sys.stderr)
    for pattern in conv.graphs:
        if pattern.problem.startswith("internal error"):
            print(one_line(f"error: graph {pattern.text}: {pattern.problem}", MAX_MESSAGE), file=sys.stderr)
    if made:
        configs = sum(1 for c in conv.configurations if c.templates)
        templates = sum(len(c.templates) for c in conv.configurations)
        cases = sum(c.cases for c in conv.configurations)
        graphs = sum(g.cases for g in conv.graphs)
        print(f"wrote {configs} configurations ({templates} templates, {cases} cases) and {graphs} graph "
              f"cases in {len(written)} files to {out}; {out / ACCOUNTING} accounts for every node")
    print(conv.summary())
    failed = any(c.failed for c in conv.configurations) or any(s.reason == NO_CASE for s in conv.skipped)
    status = 2 if unreadable else 1 if failed else 0 if made else 3
    if status == 3:
        print("NOTHING MADE: no quantization node could become a case (exit status 3)", file=sys.stderr)
    return status, conv


def run_cases(args: argparse.Namespace) -> int:
    """Write conformance cases made from models' own quantization nodes (``cases --from-model``)."""
    return make(args.models, Path(args.out))[0]


def model_cases_dir(names: list[str]) -> Path:
    """Where ``run --model`` writes the cases of these models: a folder of the cache named by the models'
    paths, sizes and modification times (written afresh by each run)."""
    h = hashlib.sha1()
    for name in names:
        p = Path(name).resolve()
        try:
            st = p.stat()
            h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        except OSError:
            h.update(f"{p}\0".encode())
    return cache_root() / "from-model" / h.hexdigest()[:16]
