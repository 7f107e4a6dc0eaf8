"""The ambiguity catalogue (``conformance/data/ambiguities.yaml``), loaded as data, and a reading of one of
its entries: :class:`Reading` (a reading's answer for one case) and its key ``entry:reading``, formatted by
:func:`reading_key` and read back by :meth:`ReadingKey.parse`, the one place either is done (the results
records' ``reading`` and ``readings``, the manifest, the messages and the reports all use them)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import numpy as np
import yaml

from .resources import data_dir

#: between an entry's id and a reading's name in a key (a reading's name may hold one itself: the kernel's
#: combinations of two entries' readings are named ``reading+other-entry:other-reading``)
SEPARATOR = ":"


def reading_key(ambiguity: str, name: str) -> str:
    """The key ``entry:reading`` of reading ``name`` of catalogue entry ``ambiguity``."""
    return f"{ambiguity}{SEPARATOR}{name}"


class ReadingKey(NamedTuple):
    """A reading named by its key: the catalogue entry and the reading's name."""

    ambiguity: str
    name: str

    def __str__(self) -> str:
        return reading_key(self.ambiguity, self.name)

    @classmethod
    def parse(cls, key: str) -> ReadingKey:
        """The entry and name of key ``entry:reading`` (split at the first separator: an entry's id holds
        none, a combined reading's name may); ValueError when either part is missing."""
        ambiguity, sep, name = key.partition(SEPARATOR)
        if not sep or not ambiguity or not name:
            raise ValueError(f"not a reading key (entry{SEPARATOR}reading): {key!r}")
        return cls(ambiguity, name)


@dataclass(frozen=True)
class Reading:
    """One catalogued reading's answer for one case (``reference.readings`` computes them)."""

    ambiguity: str
    name: str
    #: the outputs under this reading; None: under it the model is rejected (invalid, or it fails)
    outputs: tuple[np.ndarray, ...] | None
    #: per output, the mask of the elements the reading constrains (None: all of them)
    judged: tuple[np.ndarray | None, ...] | None = None

    @property
    def key(self) -> str:
        """``entry:reading``."""
        return reading_key(self.ambiguity, self.name)


@dataclass(frozen=True)
class Ambiguity:
    id: str
    operators: tuple[str, ...]
    spec: str
    question: str
    readings: dict[str, str]  # reading name -> what it does, in catalogue order
    kernel_reading: str  # the name of the reading the reference kernel follows
    kernel: str
    #: reading name -> the words of the operator's text that permit it, quoted as they stand
    quotes: dict[str, str]

    def concerns(self, domain: str, op: str, version: int) -> bool:
        """Is ``op`` of ``domain`` at ``version`` one of the entry's operators?"""
        return any((domain, op) == (d, name) and version in versions
                   for d, name, versions in map(operator_versions, self.operators))


def operator_versions(ref: str) -> tuple[str, str, range]:
    """An entry's operator, "[domain ]Op lo[-hi]" ("QuantizeLinear 10-28", "com.microsoft QuantizeLinear 1"):
    its domain (ai.onnx when none is written), its name and its versions."""
    *domain, name, versions = ref.split()
    low, _, high = versions.partition("-")
    return (domain[0] if domain else "ai.onnx"), name, range(int(low), int(high or low) + 1)


_FIELDS = {"id", "operators", "spec", "question", "readings", "kernel_reading", "kernel"}
_READING_FIELDS = {"does", "text"}


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
        if SEPARATOR in str(e["id"]):
            raise ValueError(f"ambiguities.yaml entry {e['id']}: an id holds no {SEPARATOR!r} (a reading's "
                             f"key is entry{SEPARATOR}reading)")
        if not isinstance(e["readings"], dict) or e["kernel_reading"] not in e["readings"] or not all(
                isinstance(r, dict) and set(r) == _READING_FIELDS for r in e["readings"].values()):
            raise ValueError(f"ambiguities.yaml entry {e['id']}: readings must map names to {{does, text}} "
                             "(what the reading does, the words of the text that permit it), and "
                             "kernel_reading must name one of them")
        readings = {str(k): str(v["does"]) for k, v in e["readings"].items()}
        quotes = {str(k): str(v["text"]) for k, v in e["readings"].items()}
        out[e["id"]] = Ambiguity(e["id"], tuple(e["operators"]), e["spec"], e["question"], readings,
                                 str(e["kernel_reading"]), e["kernel"], quotes)
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
        "Each entry quotes the spec sentence, asks the question the text leaves open and names the "
        "readings an",
        "implementation may follow. A case whose answer changes under another reading is "
        "*implementation-defined*:",
        "it carries every reading's outputs, and a backend passes it by following one of them (the results "
        "record",
        "names which). The reference kernel's own reading is marked **kernel**; it is a choice, not the "
        "truth.",
        "Each reading quotes the words of the operator's text that permit it; a behaviour no words permit is "
        "no reading",
        "(a backend that follows it fails the case), however many backends show it.",
        "",
        "| entry | operators | question |",
        "| --- | --- | --- |",
    ]
    entries = list(catalogue().values())
    lines += [f"| [`{a.id}`](#{a.id}) | {', '.join(a.operators)} | {_cell(a.question)} |" for a in entries]
    for a in entries:
        lines += ["", f"## {a.id}", "", f"Operators: {', '.join(a.operators)}.", "", f"> {a.spec}", "",
                  f"**Question.** {a.question}", "", "| reading | what it does | the words that permit it |",
                  "| --- | --- | --- |"]
        lines += [f"| `{reading_key(a.id, name)}`{' (**kernel**)' if name == a.kernel_reading else ''} | "
                  f"{_cell(text)} | {_cell(a.quotes[name])} |" for name, text in a.readings.items()]
        lines += ["", f"The kernel: {a.kernel}."]
    return "\n".join(lines) + "\n"
