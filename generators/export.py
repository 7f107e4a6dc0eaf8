"""Exporting concrete cases in ONNX's backend-test layout, plus a manifest for non-Python consumers.

    DIR/test_<id>[_initializer]/model.onnx
    DIR/test_<id>[_initializer]/test_data_set_0/input_K.pb, output_K.pb
    DIR/manifest.json

The layout is what ``onnx.backend.test.loader.load_model_tests`` and ONNX Runtime's ``onnx_test_runner`` read.
Invalid cases (models a backend must reject) have inputs but no outputs. The same corpus exported twice gives
identical bytes: cases are written in id order, data is seeded, the manifest is sorted.

``generate`` owns what it made: the case folders its manifest lists. Into a folder it made before, it replaces
exactly those (:func:`owned_folders`, :func:`replace_folders`); a non-empty folder it did not make is refused.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from qdq_conformance import __version__
from qdq_conformance.domain import FORMS, Form
from qdq_conformance.types import to_tensor_proto

from .case import ConcreteCase

MANIFEST_VERSION = 1


def folder_name(case: ConcreteCase, form: str) -> str:
    return f"test_{case.id}" if form == Form.RUNTIME else f"test_{case.id}_{form}"


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def write_case(root: Path, case: ConcreteCase, form: str) -> str:
    """Write one case in one graph form; return its folder's name."""
    folder = root / folder_name(case, form)
    if folder.resolve().parent != root.resolve():  # ids are a-z, 0-9 and '-'; never write outside the root
        raise ValueError(f"case id {case.id[:80]!r} does not name a folder inside {root}")
    data_dir = folder / "test_data_set_0"
    data_dir.mkdir(parents=True, exist_ok=True)
    model = case.model(form)
    _write(folder / "model.onnx", model.SerializeToString(deterministic=True))
    feeds = case.feeds(form)
    for k, inp in enumerate(model.graph.input):
        _write(data_dir / f"input_{k}.pb", to_tensor_proto(feeds[inp.name], inp.name).SerializeToString(
            deterministic=True))
    if case.expected is not None:
        for k, (name, value) in enumerate(zip(case.output_names, case.expected, strict=True)):
            _write(data_dir / f"output_{k}.pb", to_tensor_proto(np.asarray(value), name).SerializeToString(
                deterministic=True))
    return folder.name


def write_cases(cases: Sequence[ConcreteCase], out: Path, forms: Sequence[str] = FORMS,
                progress: Callable[[int], None] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Write cases; return their manifest entries and the templates they came from."""
    for form in forms:
        if form not in FORMS:
            raise ValueError(f"unknown graph form {form!r}; known: {', '.join(FORMS)}")
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    templates: dict[str, Any] = {}
    for case in cases:
        entry = dict(case.metadata())  # a copy: the case keeps its own
        entry["folders"] = {form: write_case(out, case, form) for form in forms}
        entries.append(entry)
        templates.setdefault(case.template_key(), case.template_metadata())
        if progress is not None:
            progress(len(forms))
    return entries, templates


def build_manifest(entries: list[dict[str, Any]], templates: dict[str, Any], forms: Sequence[str]) -> dict[str, Any]:
    entries = sorted(entries, key=lambda e: e["id"])
    return {
        "manifest_version": MANIFEST_VERSION,
        "suite": "onnx-qdq-conformance",
        "suite_version": __version__,
        "onnx_version": onnx.__version__,
        "generated_with": {"python": sys.version.split()[0], "numpy": np.__version__,
                           "platform": platform.system().lower()},
        "forms": list(forms),
        "case_count": len(entries),
        "templates": dict(sorted(templates.items())),
        "cases": entries,
    }


def write_manifest(out: Path, entries: list[dict[str, Any]], templates: dict[str, Any],
                   forms: Sequence[str]) -> dict[str, Any]:
    manifest = build_manifest(entries, templates, forms)
    (out / "manifest.json").write_text(json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n",
                                       encoding="utf-8")
    return manifest


def export(cases: Sequence[ConcreteCase], out: Path, forms: Sequence[str] = FORMS,
           progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Write every case in every form under ``out`` and ``out/manifest.json``; returns the manifest."""
    done = [0]
    total = len(cases) * len(forms)

    def step(n: int) -> None:
        done[0] += n
        if progress is not None:
            progress(done[0], total)

    entries, templates = write_cases(cases, out, forms, step)
    return write_manifest(out, entries, templates, forms)


#: where generate writes inside --out before the cases move into place (removed when it ends)
STAGING = ".qdq-generate-staging"
_FOLDER = re.compile(r"test_[a-z0-9][a-z0-9_-]*")


class OutFolderError(Exception):
    """An output folder generate must not write: one line naming the folder and why."""


def owned_folders(out: Path) -> list[str]:
    """The case folders a previous generate made in ``out`` (those its manifest.json lists; [] when ``out`` is
    missing or empty). Raises OutFolderError when ``out`` is not a folder, or holds anything without a manifest
    generate wrote: generate never replaces what it did not make."""
    if not out.exists() and not out.is_symlink():
        return []
    if not out.is_dir():
        raise OutFolderError(f"{out}: exists and is not a folder")
    try:
        if not [p for p in out.iterdir() if p.name != STAGING]:
            return []
        data = json.loads((out / "manifest.json").read_bytes())
    except (OSError, ValueError, RecursionError):
        data = None
    names = _manifest_folders(data)
    if names is None:
        raise OutFolderError(f"{out}: not empty, and not made by qdq-conformance generate (no manifest.json of "
                             "one); choose a new or empty folder")
    return names


def _manifest_folders(data: Any) -> list[str] | None:
    if not isinstance(data, dict) or data.get("suite") != "onnx-qdq-conformance" or \
            not isinstance(data.get("cases"), list):
        return None
    names = []
    for entry in data["cases"]:
        folders = entry.get("folders") if isinstance(entry, dict) else None
        if not isinstance(folders, dict):
            return None
        for name in folders.values():
            if not isinstance(name, str) or not _FOLDER.fullmatch(name):
                return None
            names.append(name)
    return names


def remove(path: Path) -> None:
    """Remove a file, a link (never what it points to) or a folder, if there."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def replace_folders(out: Path, moves: Sequence[tuple[Path, str]], old: Sequence[str]) -> None:
    """Remove the case folders a previous generate made in ``out`` (``old``) and its manifest, then move each
    staged folder (``moves``: staged path, name) into ``out``; a name in the way that generate did not make is
    an OutFolderError, raised before anything is removed."""
    owned = set(old)
    root = out.resolve()
    for _, name in moves:
        target = out / name
        if not _FOLDER.fullmatch(name) or target.resolve().parent != root:
            raise OutFolderError(f"{target}: not a case folder name")
        if name not in owned and (target.exists() or target.is_symlink()):
            raise OutFolderError(f"{target}: exists and was not made by qdq-conformance generate; not replaced")
    for name in old:
        remove(out / name)
    remove(out / "manifest.json")
    for staged, name in moves:
        os.replace(staged, out / name)
