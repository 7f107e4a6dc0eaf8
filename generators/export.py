"""Exporting concrete cases as a suite a vendor runs: ONNX's backend-test layout by kind of case
(``suite_layout.py``), ``manifest.json`` for non-Python consumers, a README and the license.

The same corpus exported twice gives identical bytes: cases are written in id order, data is seeded, the
manifest is sorted, the README says nothing that changes from one run to the next.

``generate`` owns what it made: the case folders its manifest lists, the kind folders, the README, the license
and the manifest. Into a folder it made before, it replaces exactly those (:func:`owned_folders`,
:func:`replace_folders`); a non-empty folder it did not make is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import cast

import numpy as np
import onnx

from qdq_conformance import __version__
from qdq_conformance.domain import FORMS

from . import suite_archive
from . import suite_layout as layout
from .case import ConcreteCase, TemplateMetadata
from .suite_readme import LICENSE, README, license_text, readme

MANIFEST_VERSION = 3
#: the files generate writes beside the kind folders (owned, and replaced, like the case folders)
TOP_FILES = (README, LICENSE, layout.MANIFEST)


def corpus_hash(paths: Iterable[Path | str]) -> str:
    """sha256 over the case files a suite comes from: each file's name and bytes, in name order."""
    h = hashlib.sha256()
    for path in sorted({Path(p) for p in paths}, key=lambda p: (p.name, str(p))):
        try:
            data = path.read_bytes()
        except OSError:  # (a case file that cannot be read is an error of its own, said by generate)
            data = b"unreadable"
        h.update(f"{path.name}\0{len(data)}\0".encode() + data)
    return h.hexdigest()


def write_cases(cases: Sequence[ConcreteCase], out: str | Path, forms: Sequence[str] = FORMS,
                progress: Callable[[int], None] | None = None, files: layout.Sink | None = None
                ) -> tuple[list[layout.ManifestEntry], dict[str, TemplateMetadata]]:
    """Write cases under ``out`` (in their kind folders): into that folder, or into ``files`` (an archive's
    part, whose members' names start with ``out``); return their manifest entries and the templates they came
    from."""
    for form in forms:
        if form not in FORMS:
            raise ValueError(f"unknown graph form {form!r}; known: {', '.join(FORMS)}")
    if files is None:
        layout.make_kind_folders(Path(out))
        files = layout.Files()
    entries = []
    templates: dict[str, TemplateMetadata] = {}
    for case in cases:
        entry = cast(layout.ManifestEntry, dict(case.metadata()))  # a copy: the case keeps its own
        entry["kind"] = layout.kind_of(case)
        entry["folders"] = {form: layout.write_case(out, case, form, files) for form in forms}
        entry["tolerance"] = layout.tolerance(case)
        entry["reading_files"] = layout.reading_files(case)
        entry["onnx_runner_blind_to"] = layout.onnx_runner_blind_to(case)
        entry["bound_files"] = layout.bound_files(case)
        entries.append(entry)
        key = case.template_key()
        if key not in templates:
            templates[key] = case.template_metadata()
        if progress is not None:
            progress(len(forms))
    return entries, templates


def build_manifest(entries: list[layout.ManifestEntry], templates: dict[str, TemplateMetadata],
                   forms: Sequence[str], selection: layout.Selection | None = None,
                   corpus_sha256: str = "") -> layout.Manifest:
    """The manifest: what the suite is and was made from, which folder is which, and every case.
    ``selection``: the id patterns and tiers asked for, and whether the suite holds every case of the corpus
    it was made from (``complete``: a run of it may then call an expectation entry that matches none of its
    cases stale, as a run of the whole corpus does)."""
    entries = sorted(entries, key=lambda e: e["id"])
    kinds: dict[str, int] = {k: 0 for k in layout.KINDS}
    for e in entries:
        kinds[e["kind"]] += 1
    sel: layout.Selection = {"patterns": [], "tiers": ["default"], "complete": True, **(selection or {})}
    return {
        "manifest_version": MANIFEST_VERSION,
        "suite": "onnx-qdq-conformance",
        "suite_version": __version__,
        "onnx_version": onnx.__version__,
        "corpus_sha256": corpus_sha256,
        "generated_with": {"python": sys.version.split()[0], "numpy": np.__version__,
                           "platform": platform.system().lower()},
        "forms": list(forms),
        "selection": sel,
        "kinds": {k: {**v, "cases": kinds[k]} for k, v in layout.KINDS.items()},
        "files": list(TOP_FILES),
        "case_count": len(entries),
        "templates": dict(sorted(templates.items())),
        "cases": entries,
    }


def encode_manifest(manifest: layout.Manifest) -> bytes:
    return (json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n").encode()


def write_top_files(out: Path, manifest: layout.Manifest) -> None:
    """The README, the license and the manifest, beside the kind folders."""
    (out / README).write_text(readme(manifest), encoding="utf-8")
    (out / LICENSE).write_text(license_text(), encoding="utf-8")
    (out / layout.MANIFEST).write_bytes(encode_manifest(manifest))


def write_archive(out: Path, manifest: layout.Manifest, parts: Sequence[Path], staging: Path) -> None:
    """The suite archive ``out``: its manifest, README and license, then the cases of ``parts`` (each a gzip
    member of tar blocks, ``suite_archive.PartWriter``), in order, then the archive's end; written in
    ``staging`` (on the same file system), then renamed over ``out``."""
    root = suite_archive.top_folder(out)
    made = staging / "archive"
    with open(made, "wb") as fh:
        top = suite_archive.PartWriter(fh)
        top.write(f"{root}/{layout.MANIFEST}", encode_manifest(manifest))  # (first: a reader stops there)
        top.write(f"{root}/{README}", readme(manifest).encode("utf-8"))
        top.write(f"{root}/{LICENSE}", license_text().encode("utf-8"))
        for folder in (root, *(f"{root}/{kind}" for kind in layout.KINDS)):  # (as a folder has them all)
            top.folder(folder)
        top.close()
        for part in parts:
            with open(part, "rb") as src:
                shutil.copyfileobj(src, fh, 1 << 20)
        suite_archive.PartWriter(fh).close(end=True)
    os.replace(made, out)


def export(cases: Sequence[ConcreteCase], out: Path, forms: Sequence[str] = FORMS,
           progress: Callable[[int, int], None] | None = None) -> layout.Manifest:
    """Write every case in every form, with the manifest, README and license: into the folder ``out`` (new or
    empty; ``generate`` replaces an earlier suite), or into the archive ``out`` when it is named ``.tar.gz``
    (in one process: ``generate`` writes the parts in many); returns the manifest."""
    done = [0]
    total = len(cases) * len(forms)

    def step(n: int) -> None:
        done[0] += n
        if progress is not None:
            progress(done[0], total)

    archive = suite_archive.is_archive(out)
    staging = out.parent / f"{out.name}{STAGING}" if archive else out
    staging.mkdir(parents=True, exist_ok=True)
    try:
        if archive:
            with open(staging / "part", "wb") as fh:
                part = suite_archive.PartWriter(fh)
                entries, templates = write_cases(cases, suite_archive.top_folder(out), forms, step, part)
                part.close()
        else:
            entries, templates = write_cases(cases, out, forms, step)
        manifest = build_manifest(entries, templates, forms, {"complete": False},
                                  corpus_hash(c.file for c in cases))
        if archive:
            write_archive(out, manifest, [staging / "part"], staging)
        else:
            write_top_files(out, manifest)
    finally:
        if archive:
            remove(staging)
    return manifest


#: where generate writes inside --out before the cases move into place (removed when it ends)
STAGING = ".qdq-generate-staging"
#: a case folder of an earlier layout (manifest_version 1: no kind folders), still replaced
_OLD_FOLDER = re.compile(r"test_[a-z0-9][a-z0-9_-]*")


class OutFolderError(Exception):
    """An output folder or archive generate must not write: one line naming it and why."""


def check_archive_out(out: Path) -> None:
    """OutFolderError unless ``out`` is absent or an archive a previous generate wrote (its first member a
    manifest.json of one): generate never replaces what it did not make."""
    if not out.exists() and not out.is_symlink():
        return
    if not out.is_file():
        raise OutFolderError(f"{out}: exists and is not a file (an archive's --out names a file)")
    stream = suite_archive.members(out)
    try:
        name, data = next(stream)
        ok = name.endswith("/" + layout.MANIFEST) and _manifest_folders(json.loads(data)) is not None
    except (StopIteration, ValueError, RecursionError):
        ok = False
    finally:
        stream.close()
    if not ok:
        raise OutFolderError(f"{out}: exists and is not a suite archive qdq-conformance generate wrote; not "
                             "replaced")


def owned_folders(out: Path) -> list[str]:
    """What a previous generate made in ``out``: the case folders its manifest.json lists and the files beside
    them ([] when ``out`` is missing or empty). Raises OutFolderError when ``out`` is not a folder, or holds
    anything without a manifest generate wrote: generate never replaces what it did not make."""
    if not out.exists() and not out.is_symlink():
        return []
    if not out.is_dir():
        raise OutFolderError(f"{out}: exists and is not a folder")
    try:
        if not [p for p in out.iterdir() if p.name != STAGING]:
            return []
        data = json.loads((out / layout.MANIFEST).read_bytes())
    except (OSError, ValueError, RecursionError):
        data = None
    names = _manifest_folders(data)
    if names is None:
        raise OutFolderError(f"{out}: not empty, and not made by qdq-conformance generate (no manifest.json "
                             "of one); choose a new or empty folder")
    return names


def _case_folder(name: str) -> bool:
    return bool(layout.FOLDER.fullmatch(name) or _OLD_FOLDER.fullmatch(name))


def _manifest_folders(data: object) -> list[str] | None:
    if not isinstance(data, dict) or data.get("suite") != "onnx-qdq-conformance" or \
            not isinstance(data.get("cases"), list):
        return None
    names = []
    for entry in data["cases"]:
        folders = entry.get("folders") if isinstance(entry, dict) else None
        if not isinstance(folders, dict):
            return None
        for name in folders.values():
            if not isinstance(name, str) or not _case_folder(name):
                return None
            names.append(name)
    files = data.get("files", [])
    if not isinstance(files, list):
        return None
    names += [f for f in files if f in TOP_FILES and f != layout.MANIFEST]
    return names


def remove(path: Path) -> None:
    """Remove a file, a link (never what it points to) or a folder, if there."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _check_kind_folders(out: Path, names: Iterable[str]) -> None:
    """Every kind folder ``names`` go into is a real folder inside ``out`` (or absent), never a link leading
    elsewhere."""
    root = out.resolve()
    for kind in sorted({n.partition("/")[0] for n in names if n not in TOP_FILES}):
        place = out / kind
        if place.is_symlink() or (place.exists() and (not place.is_dir() or place.resolve() != root / kind)):
            raise OutFolderError(f"{place}: exists and is not a folder generate made; not replaced")


def replace_folders(out: Path, moves: Sequence[tuple[str | Path, str]], old: Sequence[str]) -> None:
    """Remove what a previous generate made in ``out`` (``old``: case folders and files) and its manifest,
    then move each staged folder or file (``moves``: staged path, name relative to ``out``) into place; a name
    in the way that generate did not make is an OutFolderError, raised before anything is removed."""
    owned = {*old, layout.MANIFEST}  # (``old`` comes from a manifest generate wrote, or ``out`` held nothing)
    names = [name for _, name in moves]
    for name in names:
        if name not in TOP_FILES and not layout.FOLDER.fullmatch(name):
            raise OutFolderError(f"{out / name}: not a case folder name")
    _check_kind_folders(out, names)
    top = os.fspath(out)
    # (a folder generate made before may hold anything beside its cases: look, one name at a time; a new or
    # empty one cannot have anything in the way, and 30,000 looks are seconds on a busy disk)
    if any(True for p in out.iterdir() if p.name != STAGING):
        for name in names:
            if name not in owned and os.path.lexists(f"{top}/{name}"):
                raise OutFolderError(f"{out / name}: exists and was not made by qdq-conformance generate; "
                                     "not replaced")
    for name in old:
        remove(out / name)
    remove(out / layout.MANIFEST)
    layout.make_kind_folders(out)
    for staged, name in moves:
        os.replace(staged, f"{top}/{name}")
