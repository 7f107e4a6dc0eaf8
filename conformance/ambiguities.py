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


#: where the rendered catalogue is kept in a checkout (``qdq-conformance ambiguities --markdown``)
SPEC_NOTES = "docs/spec-notes.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    """The catalogue as the Markdown page ``docs/spec-notes.md`` (rendered, never edited by hand)."""
    lines = [
        "# Spec notes: where the operator text is silent or ambiguous",
        "",
        "<!-- Rendered from conformance/data/ambiguities.yaml by `qdq-conformance ambiguities --markdown`;",
        "     edit the catalogue, not this page (tests/test_ambiguities.py checks they agree). -->",
        "",
        "Each entry quotes the spec sentence, asks the question the text leaves open and names the readings an",
        "implementation may follow. A case whose answer changes under another reading is *implementation-defined*:",
        "it carries every reading's outputs, and a backend passes it by following one of them (the results record",
        "names which). The reference kernel's own reading is marked **kernel**; it is a choice, not the truth.",
        "",
        "| entry | operators | question |",
        "| --- | --- | --- |",
    ]
    entries = list(catalogue().values())
    lines += [f"| [`{a.id}`](#{a.id}) | {', '.join(a.operators)} | {_cell(a.question)} |" for a in entries]
    for a in entries:
        lines += ["", f"## {a.id}", "", f"Operators: {', '.join(a.operators)}.", "", f"> {a.spec}", "",
                  f"**Question.** {a.question}", "", "| reading | what it does |", "| --- | --- |"]
        lines += [f"| `{a.id}:{name}`{' (**kernel**)' if name == a.kernel_reading else ''} | {_cell(text)} |"
                  for name, text in a.readings.items()]
        lines += ["", f"The kernel: {a.kernel}."]
    return "\n".join(lines) + "\n"
