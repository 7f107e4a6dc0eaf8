"""A template: one case-file entry before expansion, with the file it came from (for errors naming file, line
and key)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qdq_conformance import opspecs

from .loader import CaseFileError, line_of


@dataclass
class Template:
    data: dict[str, Any]
    file: str

    def line(self, key: str | None = None) -> int:
        return line_of(self.data, key) or 1

    def error(self, key: str, message: str) -> CaseFileError:
        top = key.split(".", 1)[0]  # (the line of ``inputs`` for ``inputs.x.shape``)
        return CaseFileError(self.file, self.line(top if top in self.data else None),
                             f"{self.data['id']}.{key}"
                             if key else self.data["id"], message)

    @property
    def domain(self) -> str:
        if "domain" in self.data:
            return self.data["domain"]
        return opspecs.QUARK if self.data["operator"].startswith("Extended") else opspecs.AI_ONNX
