"""``qdq-conformance check``: the models (files, and folders searched for ``*.onnx``), text or JSON output and
the exit status (:data:`EXIT`)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from ..rules import RULES
from . import ModelReport, Unreadable, check_file

SEVERITIES = ("error", "warning", "note")
#: The exit statuses, most severe first (the first that applies is the one returned).
EXIT = {2: "an input could not be read (or a folder holds no *.onnx file)",
        1: "at least one error",
        3: "nothing was checked: no model holds a quantization node the checker knows",
        0: "clean (warnings and notes allowed)"}
#: the longest message an unreadable input's line quotes (a hostile file can make one huge)
MAX_MESSAGE = 1000
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("models", nargs="*", metavar="MODEL",
                   help="ONNX model file(s), or folders searched recursively for "
                   "*.onnx files (external data is read only for the scales and zero points a rule needs)")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    p.add_argument("--rules", action="store_true",
                   help="list every rule (id, severity, summary, spec sentence)")
    p.add_argument("--no-notes", action="store_true", help="hide notes (what could not be determined)")


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` printable on one line: control characters escaped, undecodable bytes of a file name (surrogate
    escapes) shown as backslash escapes; cut to ``limit`` characters with ``...``."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    text = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
    return text if limit is None or len(text) <= limit else text[:limit - 3] + "..."


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def expand(names: list[str]) -> Iterator[tuple[str, str | None]]:
    """Each model to check, as (path, None), or (path, why it cannot be checked): a file as given, a folder's
    ``*.onnx`` files (any case) in sorted order, searched recursively without following links to folders."""
    for name in names:
        try:
            is_dir = os.path.isdir(name)
        except ValueError:  # a NUL in the name: read_model says so
            is_dir = False
        if not is_dir:
            yield name, None
            continue
        found: list[str] = []
        problems: list[tuple[str, str]] = []

        def refused(e: OSError) -> None:
            problems.append((e.filename or name, f"cannot list this folder ({e.strerror})"))  # noqa: B023

        for root, dirs, files in os.walk(name, onerror=refused):
            dirs.sort()
            found += [os.path.join(root, f) for f in sorted(files) if f.lower().endswith(".onnx")]
        yield from problems
        if not found and not problems:
            yield name, "is a directory with no *.onnx file (searched recursively)"
        yield from ((f, None) for f in found)


def _status(unreadable: int, errors: int, nodes: int) -> int:
    return 2 if unreadable else 1 if errors else 3 if nodes == 0 else 0


def run(args: argparse.Namespace) -> int:
    if args.rules:
        for r in RULES.values():
            print(f"{r.id}  {r.severity:7}  {r.summary}\n                  spec: {r.spec}")
        return 0
    if not args.models:
        if args.json:
            print(json.dumps({"models": [], "unreadable": [], "error": "give at least one MODEL (or --rules)",
                              "summary": {"models": 0, "exit_status": 2}}, indent=1))
        print("error: give at least one MODEL (or --rules)", file=sys.stderr)
        return 2
    reports: list[ModelReport] = []
    unreadable: list[tuple[str, str]] = []
    for name, problem in expand(args.models):
        if problem is not None:
            unreadable.append((name, problem))
            continue
        try:
            reports.append(check_file(Path(name)))
        except Unreadable as e:
            unreadable.append((name, one_line(str(e), MAX_MESSAGE)))
        except Exception as e:  # noqa: BLE001 - a checker bug must not hide the other models' findings
            unreadable.append((name, one_line(f"internal error in the checker ({type(e).__name__}: {e}); "
                                              "please report it with the model", MAX_MESSAGE)))
    shown = [f for r in reports for f in r.findings if not (args.no_notes and f.severity == "note")]
    counts = {s: sum(r.count(s) for r in reports) for s in SEVERITIES}
    nodes = sum(r.nodes_checked for r in reports)
    not_checked = sum(r.nodes_not_checked for r in reports)
    status = _status(len(unreadable), counts["error"], nodes)
    if args.json:
        doc = {"models": [{"path": r.path, "nodes_checked": r.nodes_checked,
                           "nodes_not_checked": r.nodes_not_checked,
                           "findings": [f.to_json() for f in r.findings
                                        if not (args.no_notes and f.severity == "note")]} for r in reports],
               "unreadable": [{"path": p, "error": msg} for p, msg in unreadable],
               "summary": {"models": len(reports), "nodes_checked": nodes, "nodes_not_checked": not_checked,
                           **counts, "unreadable": len(unreadable), "exit_status": status,
                           "exit_meaning": EXIT[status]}}
        print(json.dumps(doc, indent=1))
        return status
    for f in shown:
        print(one_line(f.line()))
    for p, msg in unreadable:
        print(one_line(f"{p}: cannot check: {msg}"), file=sys.stderr)
    more = f" ({not_checked} more not checked: an operator the checker does not know)" if not_checked else ""
    summary = (f"{_plural(len(reports), 'model')}, {_plural(nodes, 'quantization node')}{more}: "
               f"{_plural(counts['error'], 'error')}, {_plural(counts['warning'], 'warning')}, "
               f"{_plural(counts['note'], 'note')}")
    if unreadable:
        summary += f"; {len(unreadable)} unreadable"
    print(summary)
    if status == 3:
        print("NOTHING CHECKED: no model holds a quantization node the checker knows (exit status 3)",
              file=sys.stderr)
    return status
