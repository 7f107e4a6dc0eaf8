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
    readings: dict[str, str]  # reading name -> text, in catalogue order
    kernel_reading: str  # the name of the reading the reference kernel follows
    kernel: str


_FIELDS = {"id", "operators", "spec", "question", "readings", "kernel_reading", "kernel"}


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
        if not isinstance(e["readings"], dict) or e["kernel_reading"] not in e["readings"]:
            raise ValueError(f"ambiguities.yaml entry {e['id']}: readings must map names to texts, and "
                             f"kernel_reading must name one of them")
        out[e["id"]] = Ambiguity(e["id"], tuple(e["operators"]), e["spec"], e["question"],
                                 {str(k): str(v) for k, v in e["readings"].items()}, str(e["kernel_reading"]),
                                 e["kernel"])
    return out
