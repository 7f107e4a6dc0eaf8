"""Generating and exporting the corpus with one worker process per core, one case file at a time.

Each worker expands a case file and writes its cases; the parent gathers the manifest entries, checks that
ids are unique across files and writes the manifest. Output is identical to a single-process run.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from .corpus import load_file
from .export import write_cases, write_manifest
from .loader import CaseFileError


def _job(path: str, out: str, forms: Sequence[str], tiers: Sequence[str], select: Sequence[str]
         ) -> tuple[list[dict[str, Any]], dict[str, Any], str | None]:
    try:
        cases = [c for c in load_file(Path(path), tiers) if c.tier in tiers and
                 (not select or any(fnmatch.fnmatchcase(c.id, p) for p in select))]
    except CaseFileError as e:
        return [], {}, str(e)
    entries, templates = write_cases(cases, Path(out), forms)
    return entries, templates, None


def _cores() -> int:
    """The cores this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def generate(files: Sequence[Path], out: Path, forms: Sequence[str], tiers: Sequence[str] = ("default",),
             select: Sequence[str] = (), jobs: int | None = None,
             progress: Callable[[int, int], None] | None = None) -> tuple[dict[str, Any], list[str]]:
    """Expand and export every case file; returns (manifest, errors). ``jobs``: worker processes (default: one
    per core the process may use)."""
    jobs = jobs or _cores()
    out.mkdir(parents=True, exist_ok=True)
    entries: list[dict[str, Any]] = []
    templates: dict[str, Any] = {}
    errors: list[str] = []
    # Largest files first, so that the last job to start is a short one.
    ordered = sorted(files, key=lambda p: -p.stat().st_size)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_job, str(p), str(out), tuple(forms), tuple(tiers), tuple(select)) for p in ordered]
        for k, fut in enumerate(as_completed(futures), 1):
            e, t, err = fut.result()
            entries.extend(e)
            templates.update(t)
            if err:
                errors.append(err)
            if progress is not None:
                progress(k, len(futures))
    seen: dict[str, str] = {}
    for e in entries:
        if e["id"] in seen:
            errors.append(f"case id {e['id']} is produced by both {seen[e['id']]} and {e['template']}")
        seen[e["id"]] = e["template"]
    return write_manifest(out, entries, templates, forms), errors
