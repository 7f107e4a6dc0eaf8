"""Cases read back from an exported suite (``pytest --suite SUITE``: its .tar.gz or its folder), judged as the
corpus's are.

A :class:`SuiteCase` is a :class:`qdq_conformance.domain.Case` with the same data as the corpus case it was
exported from: its status, comparison rule, the rule an invalid case breaks, the kernel's outputs and, for an
implementation-defined case, every catalogued reading's outputs (with the elements each constrains), so that
``runner.outcome.classify`` gives it the same status, reading and mismatches. The suite's layout is
``generators/suite_layout.py``'s; this module follows the paths ``manifest.json`` records. An archive
(``generators/suite_archive.py``) is read once, from start to end, and each case keeps its folder's bytes
(:class:`MemoryFiles`), which travel with it to the backend's workers; a folder's case reads its files when it
runs (:class:`FolderFiles`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import onnx
from onnx import numpy_helper

from ..ambiguities import Reading
from ..compare import rule_ulp
from ..domain import CaseMetadata, CaseStatus, SpecText
from ..generators.case import TemplateMetadata
from ..generators.labels import labels
from ..generators.suite_archive import is_archive, members
from ..generators.suite_layout import (
    DATA_SET,
    EXPECTED,
    FOLDER,
    MANIFEST,
    MODEL,
    Manifest,
    ManifestEntry,
    input_file,
    output_file,
    tensor_of,
)
from ..types import from_tensor_proto

#: the manifest layout this reader knows (generators/export.py's MANIFEST_VERSION)
MANIFEST_VERSION = 3


class SuiteError(ValueError):
    """A suite this version cannot read: one line saying why."""


class FolderFiles:
    """A case folder's files, read from the folder as they are needed (a suite exported as a folder)."""

    def __init__(self, folder: Path, top: Path) -> None:
        self.folder = folder
        self.top = top  # (the suite's folder, resolved)

    def read(self, relative: str) -> bytes:
        path = self.folder / relative
        if not path.resolve().is_relative_to(self.top):
            raise SuiteError(f"{self.folder / relative}: outside the suite (a link leading out?)")
        return path.read_bytes()


class MemoryFiles:
    """A case folder's files, read from a suite archive with the rest (the case carries its bytes to the
    backend's workers)."""

    def __init__(self, where: str, files: dict[str, bytes]) -> None:
        self.where = where
        self.files = files

    def read(self, relative: str) -> bytes:
        try:
            return self.files[relative]
        except KeyError:
            raise SuiteError(f"{self.where}: no {relative} in the archive") from None


CaseFiles = FolderFiles | MemoryFiles


@dataclass
class SuiteCase:
    """One case of an exported suite, in one form (folder): a :class:`qdq_conformance.domain.Case`."""

    meta: ManifestEntry
    template: TemplateMetadata
    files: CaseFiles
    form: str

    @property
    def id(self) -> str:
        return self.meta["id"]

    @property
    def status(self) -> str:
        return self.meta["status"]

    @property
    def ulp(self) -> int:
        return rule_ulp(self.meta.get("comparison"))

    def model(self, form: str | None = None) -> onnx.ModelProto:
        return onnx.load_model_from_string(self.files.read(MODEL))

    def feeds(self, form: str | None = None) -> dict[str, np.ndarray]:
        model = self.model()
        return {inp.name: self._tensor(f"{DATA_SET}/{input_file(k)}")
                for k, inp in enumerate(model.graph.input)}

    def _tensor(self, relative: str) -> np.ndarray:
        return tensor_of(self.files.read(relative))

    def _mask(self, relative: str) -> np.ndarray:
        """A reading's ``judged_K.pb``: a bool tensor (not an element type of the quantization operators)."""
        t = onnx.TensorProto()
        t.ParseFromString(self.files.read(relative))
        return np.asarray(numpy_helper.to_array(t), dtype=bool)

    def output_bounds(self) -> list[tuple[np.ndarray, np.ndarray] | None] | None:
        """An ``interval`` case's per-output (low, high), read from its ``bounds/`` files; None for any other
        case."""
        files = self.meta.get("bound_files") or []
        if not any(f is not None for f in files):
            return None
        return [None if f is None else (self._tensor(f["low"]), self._tensor(f["high"])) for f in files]

    def _outputs(self, where: str) -> list[np.ndarray]:
        return [self._tensor(f"{where}/{output_file(k)}") for k in range(len(self.meta["outputs"]))]

    @property
    def expected(self) -> list[np.ndarray] | None:
        """The reference kernel's outputs (None for an invalid case)."""
        if self.status == CaseStatus.INVALID:
            return None
        if self.status == CaseStatus.IMPLEMENTATION_DEFINED:
            return self._outputs(EXPECTED)
        return self._outputs(DATA_SET)

    @property
    def readings(self) -> Sequence[Reading]:
        """An implementation-defined case's catalogued readings, in the order the corpus case holds them (the
        kernel's first); empty for the other statuses."""
        if self.status != CaseStatus.IMPLEMENTATION_DEFINED:
            return ()
        out = []
        for r in self.meta["reading_files"]:
            if r["outputs"] is None:
                out.append(Reading(r["ambiguity"], r["name"], None))
                continue
            where = r["outputs"]
            judged = None if r.get("judged") is None else tuple(
                self._mask(f"{where}/judged_{k}.pb") if constrained else None
                for k, constrained in enumerate(r["judged"]))
            out.append(Reading(r["ambiguity"], r["name"], tuple(self._outputs(where)), judged))
        return out

    def input_values(self) -> list[np.ndarray | None]:
        """Every formal input's value, in order (None for an omitted optional one): graph inputs and
        initializers."""
        model = self.model()
        values = {t.name: from_tensor_proto(t) for t in model.graph.initializer} | self.feeds()
        return [values.get(io["name"]) if io["element_type"] else None for io in self.meta["inputs"]]

    def x_labels(self, indices: list[tuple[int, ...]]) -> list[str] | None:
        """Which boundary x sits on at each multi-index, as for the corpus case (generators/labels.py)."""
        m = self.meta
        if "graph" in m:  # (a graph case's corpus twin labels nothing either)
            return None
        return labels(m["domain"], m["operator"], m["version"], self.input_values(), m["attributes"], indices)

    def metadata(self) -> CaseMetadata:
        return self.meta

    def spec_text(self) -> SpecText:
        """The spec clause the case checks (its template's)."""
        return cast(SpecText, dict(self.template.get("spec", {})))


def load_suite(root: Path) -> tuple[Manifest, list[SuiteCase]]:
    """The manifest and cases of an exported suite: a folder, or an archive (``.tar.gz``, read once from start
    to end; its cases carry their bytes). SuiteError when the manifest is of another layout, or names a case
    folder that is not one of the layout's (an absolute path, ``..``): nothing outside ``root`` is ever read
    (a read through a link leading out of a folder is refused when the case runs: :class:`FolderFiles`)."""
    if is_archive(root) and not root.is_dir():
        data, folders = _read_archive(root)
    else:
        data, folders = (root / MANIFEST).read_bytes(), None
    manifest = json.loads(data.decode("utf-8"))
    version = manifest.get("manifest_version") if isinstance(manifest, dict) else None
    if version != MANIFEST_VERSION:
        raise SuiteError(f"manifest_version {version!r}, this reader knows {MANIFEST_VERSION}: export the "
                         "suite again with this version's qdq-conformance generate (an older export carries "
                         "no catalogued readings or acceptable intervals, so some of its cases cannot be "
                         "judged)")
    top = root.resolve()
    templates = manifest.get("templates", {})
    cases = []
    for entry in manifest["cases"]:
        template = templates.get(entry.get("template", ""), {})
        for form, folder in sorted(entry["folders"].items()):
            if not isinstance(folder, str) or not FOLDER.fullmatch(folder):  # (a kind folder, then test_<id>)
                raise SuiteError(f"case {entry.get('id')!r}: folder {folder!r} is outside the suite")
            files: CaseFiles
            if folders is None:
                files = FolderFiles(root / folder, top)
            else:
                files = MemoryFiles(f"{root}: {folder}", folders.get(folder, {}))
            cases.append(SuiteCase(entry, template, files, form))
    return manifest, cases


def _read_archive(path: Path) -> tuple[bytes, dict[str, dict[str, bytes]]]:
    """An archive's manifest, and every case folder's files (folder -> its path inside it -> bytes), the
    folders named as the manifest names them (relative to the folder that holds the manifest)."""
    manifest: bytes | None = None
    prefix = ""
    before: list[tuple[str, bytes]] = []  # (members ahead of the manifest: none in an archive generate wrote)
    folders: dict[str, dict[str, bytes]] = {}
    for name, data in members(path):
        if manifest is None:
            found = _manifest_prefix([name])
            if found is None:
                before.append((name, data))
                continue
            manifest, prefix = data, found
            for earlier, earlier_data in before:
                _place(folders, prefix, earlier, earlier_data)
            before.clear()
            continue
        _place(folders, prefix, name, data)
    if manifest is None:
        raise SuiteError(f"{path}: no manifest.json in the archive (at its top, or in its one top folder)")
    return manifest, folders


def _place(folders: dict[str, dict[str, bytes]], prefix: str, name: str, data: bytes) -> None:
    if not name.startswith(prefix):
        return
    kind, _, rest = name[len(prefix):].partition("/")
    test, _, inside = rest.partition("/")
    if inside:  # (the names inside a folder are the same few in every folder: kept once)
        folders.setdefault(f"{kind}/{test}", {})[sys.intern(inside)] = data


def _manifest_prefix(names: Iterable[str]) -> str | None:
    """Where an archive's suite is: "" (its manifest at the top) or "NAME/" (in one top folder)."""
    for name in names:
        if name == MANIFEST or (name.endswith("/" + MANIFEST) and name.count("/") == 1):
            return name[:-len(MANIFEST)]
    return None


def read_manifest(root: Path) -> bytes:
    """An exported suite's manifest.json: a folder's, or an archive's (read up to its manifest: the first
    member of an archive generate wrote). OSError or SuiteError when there is none."""
    if not (is_archive(root) and not root.is_dir()):
        return (root / MANIFEST).read_bytes()
    stream = members(root)
    try:
        for name, data in stream:
            if _manifest_prefix([name]) is not None:
                return data
    finally:
        stream.close()
    raise SuiteError(f"{root}: no manifest.json in the archive")


def scope(root: Path) -> tuple[bool, tuple[str, ...]]:
    """(whether the suite holds every case of the corpus it was made from, its graph forms), from its manifest
    ((False, ()) when it cannot be read). A run of a part of the corpus calls stale only the expectation
    entries its cases could match, as a ``-k`` run of the corpus does; an entry for a form the suite lacks is
    never stale."""
    try:
        manifest = json.loads(read_manifest(root))
        selection, forms = manifest.get("selection"), manifest.get("forms")
        complete = isinstance(selection, dict) and selection.get("complete") is True
        return complete, tuple(f for f in forms if isinstance(f, str)) if isinstance(forms, list) else ()
    except (OSError, ValueError, AttributeError, TypeError, RecursionError):
        return False, ()
