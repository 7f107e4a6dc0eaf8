"""The ambiguity catalogue (``conformance/data/ambiguities.yaml``), loaded as data."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import yaml

from .resources import data_dir


@dataclass(frozen=True)
class Ambiguity:
    id: str
    operators: tuple[str, ...]
    spec: str
    question: str
    readings: tuple[str, ...]
    kernel: str


_FIELDS = {"id", "operators", "spec", "question", "readings", "kernel"}


@cache
def catalogue() -> dict[str, Ambiguity]:
    """Every entry, by id."""
    text = (data_dir() / "ambiguities.yaml").read_text(encoding="utf-8")
    entries = yaml.safe_load(text)
    out: dict[str, Ambiguity] = {}
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or set(e) != _FIELDS:
            raise ValueError(f"ambiguities.yaml entry {i}: keys must be exactly {sorted(_FIELDS)}")
        if e["id"] in out:
            raise ValueError(f"ambiguities.yaml: duplicate id {e['id']!r}")
        out[e["id"]] = Ambiguity(e["id"], tuple(e["operators"]), e["spec"], e["question"],
                                 tuple(e["readings"]), e["kernel"])
    return out
