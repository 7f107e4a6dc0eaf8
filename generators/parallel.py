"""Generating and exporting the corpus with one worker process per core, one case file at a time.

Each worker expands a case file and writes its cases into a staging folder of its own inside ``out``, or,
for an archive, compresses them into a part of it (``suite_archive.py``: one gzip member) in a staging folder
beside ``out``; the parent gathers the results in file order, refuses a file that repeats a case id an earlier
file produced (naming both), then replaces what a previous generate made in ``out`` (the folders its manifest
lists, nothing else) with the staged cases and writes the manifest; an archive is its manifest, README and
license, then the parts in file order, renamed over ``out``. The files (an archive's uncompressed bytes) are
those of a single-process run; nothing is written outside ``out`` (and, while it runs, the staging folder).

A worker expands its file through the expansion cache (``cache.py``), as a run's collection does: a file a run
or a generate expanded before is read, not expanded again.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import NamedTuple

from qdq_conformance.cpu import usable_cores
from qdq_conformance.errors import one_line

from .cache import load_file_cached
from .case import TemplateMetadata
from .corpus import claim_ids
from .export import (
    STAGING,
    TOP_FILES,
    build_manifest,
    check_archive_out,
    corpus_hash,
    owned_folders,
    remove,
    replace_folders,
    write_archive,
    write_cases,
    write_top_files,
)
from .loader import CaseFileError
from .suite_archive import PartWriter, top_folder
from .suite_layout import Manifest, ManifestEntry, Selection


class _Claim(NamedTuple):
    """What the id check needs of a case (the parent never holds the cases themselves)."""

    id: str
    line: int
    template: str


_Result = tuple[list[ManifestEntry], dict[str, TemplateMetadata], "str | None", list[_Claim]]


def _job(path: str, staging: str, forms: Sequence[str], tiers: Sequence[str],
         select: Sequence[str], root: str | None) -> _Result:
    """Expand one case file and write its cases: into the folder ``staging``, or (``root``: an archive's top
    folder) as the archive part ``staging``."""
    try:
        loaded = load_file_cached(Path(path), tiers)  # (a run's collection and generate share expansions)
        cases = [c for c in loaded if c.tier in tiers and
                 (not select or any(fnmatch.fnmatchcase(c.id, p) for p in select))]
        if root is None:
            Path(staging).mkdir()
            entries, templates = write_cases(cases, Path(staging), forms)
        else:
            with open(staging, "wb") as fh:
                part = PartWriter(fh)
                entries, templates = write_cases(cases, root, forms, files=part)
                part.close()
    except CaseFileError as e:
        return [], {}, str(e), []
    except Exception as e:  # a generator defect or a full disk costs this file only, in one line
        return [], {}, one_line(f"{path}: internal error while generating: {type(e).__name__}: {e}", 1200), []
    return entries, templates, None, [_Claim(c.id, c.line, c.template) for c in loaded]


def generate(files: Sequence[Path], out: Path, forms: Sequence[str], tiers: Sequence[str] = ("default",),
             select: Sequence[str] = (), jobs: int | None = None,
             progress: Callable[[int, int], None] | None = None,
             archive: bool = False) -> tuple[Manifest, list[str]]:
    """Expand and export every case file into ``out``, a folder or (``archive``) a .tar.gz file; returns
    (manifest, errors). ``jobs``: worker processes (default: one per core the process may use). Raises
    OutFolderError (before writing anything) when ``out`` holds anything a previous generate did not make.
    When no case is selected, ``out`` keeps what it held."""
    jobs = jobs or usable_cores()
    if archive:
        check_archive_out(out)
        old: list[str] = []
        staging = out.parent / f"{out.name}{STAGING}"  # (beside it: the archive is renamed into place)
    else:
        old = owned_folders(out)
        staging = out / STAGING
    remove(staging)  # (left by a generate that was killed)
    staging.mkdir(parents=True)
    try:
        root = top_folder(out) if archive else None
        results = _run_jobs(files, staging, forms, tiers, select, jobs, progress, root)
        entries: list[ManifestEntry] = []
        templates: dict[str, TemplateMetadata] = {}
        errors: list[str] = []
        moves: list[tuple[str | Path, str]] = []
        claimed: dict[str, tuple[str, int]] = {}
        refused: set[int] = set()
        for k, path in enumerate(files):  # in file order: the earlier file keeps a repeated id
            e, t, err, claims = results[k]
            if err is None:
                try:
                    claim_ids(claimed, path, claims)
                except CaseFileError as dup:
                    err = str(dup)
                    refused.add(k)
            if err is not None:
                errors.append(err)
                continue
            entries.extend(e)
            templates.update(t)
            moves += [(f"{staging}/{k}/{name}", name) for entry in e for name in entry["folders"].values()]
        selection: Selection = {"patterns": list(select), "tiers": list(tiers),
                                "complete": not select and not errors}
        manifest = build_manifest(entries, templates, forms, selection, corpus_hash(files))
        if not entries:
            return manifest, errors
        if archive:
            parts = [staging / str(k) for k in range(len(files))
                     if results[k][0] and results[k][2] is None and k not in refused]
            write_archive(out, manifest, parts, staging)
            return manifest, errors
        write_top_files(staging, manifest)
        moves += [(staging / name, name) for name in TOP_FILES]  # (the manifest last: it says what is there)
        replace_folders(out, moves, old)
        return manifest, errors
    finally:
        remove(staging)


def _run_jobs(files: Sequence[Path], staging: Path, forms: Sequence[str], tiers: Sequence[str],
              select: Sequence[str], jobs: int, progress: Callable[[int, int], None] | None,
              root: str | None) -> dict[int, _Result]:
    def size(k: int) -> int:
        try:
            return files[k].stat().st_size
        except OSError:
            return 0

    # Largest files first, so that the last job to start is a short one.
    order = sorted(range(len(files)), key=lambda k: -size(k))
    results: dict[int, _Result] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_job, str(files[k]), str(staging / str(k)), tuple(forms), tuple(tiers),
                               tuple(select), root): k for k in order}
        for n, fut in enumerate(as_completed(futures), 1):
            results[futures[fut]] = fut.result()
            if progress is not None:
                progress(n, len(futures))
    return results
