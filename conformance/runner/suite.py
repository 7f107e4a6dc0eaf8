"""Cases read back from an exported suite folder (``pytest --suite DIR``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ..domain import CaseStatus
from ..types import from_tensor_proto


def _tensor(path: Path) -> np.ndarray:
    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return from_tensor_proto(t)


@dataclass
class SuiteCase:
    """One case of an exported suite, in one form (folder): a :class:`qdq_conformance.domain.Case`."""

    meta: dict[str, Any]
    template: dict[str, Any]
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
        comp = self.meta.get("comparison", "exact")
        return int(comp.split("<=")[1]) if comp.startswith("ulp<=") else 0

    def model(self, form: str | None = None) -> onnx.ModelProto:
        return onnx.load(str(self.folder / "model.onnx"))

    def feeds(self, form: str | None = None) -> dict[str, np.ndarray]:
        model = self.model()
        data = self.folder / "test_data_set_0"
        return {inp.name: _tensor(data / f"input_{k}.pb") for k, inp in enumerate(model.graph.input)}

    @property
    def expected(self) -> list[np.ndarray] | None:
        if self.status == CaseStatus.INVALID:
            return None
        data = self.folder / "test_data_set_0"
        return [_tensor(data / f"output_{k}.pb") for k in range(len(self.meta["outputs"]))]

    @property
    def readings(self) -> Sequence[Any]:
        """None: an exported suite carries no catalogued readings (an implementation-defined case is recorded,
        not judged)."""
        return ()

    def metadata(self) -> dict[str, Any]:
        return self.meta

    def spec_text(self) -> dict[str, Any]:
        """The spec clause the case checks (its template's)."""
        return dict(self.template.get("spec", {}))


def load_suite(root: Path) -> tuple[dict[str, Any], list[SuiteCase]]:
    """The manifest and cases of an exported suite. ValueError when the manifest names a case folder outside
    the suite (an absolute path, ``..``, a link leading out): nothing outside ``root`` is ever read."""
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    top = root.resolve()
    cases = []
    for entry in manifest["cases"]:
        template = manifest.get("templates", {}).get(entry.get("template", ""), {})
        for form, folder in sorted(entry["folders"].items()):
            path = root / str(folder)
            if not path.resolve().is_relative_to(top):
                raise ValueError(f"case {entry.get('id')!r}: folder {folder!r} is outside the suite")
            cases.append(SuiteCase(entry, template, path, form))
    return manifest, cases
