"""Cases read back from an exported suite folder (``pytest --suite DIR``), judged as the corpus's are.

A :class:`SuiteCase` is a :class:`qdq_conformance.domain.Case` with the same data as the corpus case it was
exported from: its status, comparison rule, the rule an invalid case breaks, the kernel's outputs and, for an
implementation-defined case, every catalogued reading's outputs (with the elements each constrains), so that
``runner.outcome.classify`` gives it the same status, reading and mismatches. The suite's layout is
``generators/suite_layout.py``'s; this module follows the paths ``manifest.json`` records.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
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
from ..generators.suite_layout import (
    DATA_SET,
    EXPECTED,
    MANIFEST,
    MODEL,
    Manifest,
    ManifestEntry,
    input_file,
    output_file,
    read_tensor,
)
from ..types import from_tensor_proto

#: the manifest layout this reader knows (generators/export.py's MANIFEST_VERSION)
MANIFEST_VERSION = 3


def _mask(path: Path) -> np.ndarray:
    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return np.asarray(numpy_helper.to_array(t), dtype=bool)


@dataclass
class SuiteCase:
    """One case of an exported suite, in one form (folder): a :class:`qdq_conformance.domain.Case`."""

    meta: ManifestEntry
    template: TemplateMetadata
    folder: Path
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
        return onnx.load(str(self.folder / MODEL))

    def feeds(self, form: str | None = None) -> dict[str, np.ndarray]:
        model = self.model()
        data = self.folder / DATA_SET
        return {inp.name: read_tensor(data / input_file(k)) for k, inp in enumerate(model.graph.input)}

    def output_bounds(self) -> list[tuple[np.ndarray, np.ndarray] | None] | None:
        """An ``interval`` case's per-output (low, high), read from its ``bounds/`` files; None for any other
        case."""
        files = self.meta.get("bound_files") or []
        if not any(f is not None for f in files):
            return None
        return [None if f is None else
                (read_tensor(self._inside(f["low"])), read_tensor(self._inside(f["high"]))) for f in files]

    def _outputs(self, where: Path) -> list[np.ndarray]:
        return [read_tensor(where / output_file(k)) for k in range(len(self.meta["outputs"]))]

    @property
    def expected(self) -> list[np.ndarray] | None:
        """The reference kernel's outputs (None for an invalid case)."""
        if self.status == CaseStatus.INVALID:
            return None
        if self.status == CaseStatus.IMPLEMENTATION_DEFINED:
            return self._outputs(self.folder / EXPECTED)
        return self._outputs(self.folder / DATA_SET)

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
            where = self._inside(r["outputs"])
            judged = None if r.get("judged") is None else tuple(
                _mask(where / f"judged_{k}.pb") if constrained else None
                for k, constrained in enumerate(r["judged"]))
            out.append(Reading(r["ambiguity"], r["name"], tuple(self._outputs(where)), judged))
        return out

    def _inside(self, relative: str) -> Path:
        path = self.folder / relative
        if not path.resolve().is_relative_to(self.folder.resolve()):
            raise ValueError(f"case {self.id!r}: {relative!r} is outside its folder")
        return path

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


class SuiteError(ValueError):
    """A suite folder this version cannot read: one line saying why."""


def load_suite(root: Path) -> tuple[Manifest, list[SuiteCase]]:
    """The manifest and cases of an exported suite. SuiteError when the manifest is of another layout, or
    names a case folder outside the suite (an absolute path, ``..``, a link leading out): nothing outside
    ``root`` is ever read."""
    manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    version = manifest.get("manifest_version") if isinstance(manifest, dict) else None
    if version != MANIFEST_VERSION:
        raise SuiteError(f"manifest_version {version!r}, this reader knows {MANIFEST_VERSION}: export the "
                         "suite again with this version's qdq-conformance generate (an older export carries "
                         "no catalogued readings or acceptable intervals, so some of its cases cannot be "
                         "judged)")
    top = root.resolve()
    cases = []
    for entry in manifest["cases"]:
        template = manifest.get("templates", {}).get(entry.get("template", ""), {})
        for form, folder in sorted(entry["folders"].items()):
            path = root / str(folder)
            if not path.resolve().is_relative_to(top):
                raise SuiteError(f"case {entry.get('id')!r}: folder {folder!r} is outside the suite")
            cases.append(SuiteCase(entry, template, path, form))
    return manifest, cases


def scope(root: Path) -> tuple[bool, tuple[str, ...]]:
    """(whether the suite holds every case of the corpus it was made from, its graph forms), from its manifest
    ((False, ()) when it cannot be read). A run of a part of the corpus calls stale only the expectation
    entries its cases could match, as a ``-k`` run of the corpus does; an entry for a form the suite lacks is
    never stale."""
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        selection, forms = manifest.get("selection"), manifest.get("forms")
        complete = isinstance(selection, dict) and selection.get("complete") is True
        return complete, tuple(f for f in forms if isinstance(f, str)) if isinstance(forms, list) else ()
    except (OSError, ValueError, AttributeError, TypeError, RecursionError):
        return False, ()
